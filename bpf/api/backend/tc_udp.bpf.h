/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stock UDP backend's send path: TC ingress runs the handler on the
 * whole frame, which it edits in place (backend/native.bpf.h's
 * xps__inplace_*()); TX turns the frame into the reply datagram and
 * bounces it out of the interface it came in on.  Part of xps.bpf.h.
 */
#ifndef __XPS_BACKEND_TC_UDP_BPF_H
#define __XPS_BACKEND_TC_UDP_BPF_H

#ifndef __XPS_BPF_H
#error "include xps.bpf.h, not its backends"
#endif

#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

#include "../internal/run.bpf.h"
#include "../internal/packet.bpf.h"

/* Fold a 32-bit one's complement sum into the 16-bit checksum. */
static __always_inline __u16 xps__csum_fold(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

#define XPS__CSUM_CHUNK 512
#define XPS__CSUM_CHUNKS 4

/* Scratch for the UDP checksum, per CPU and level of runs (run.bpf.h). */
struct xps__csum_buf {
	__u8 b[XPS__CSUM_CHUNK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_RUN_LEVELS);
	__type(key, __u32);
	__type(value, struct xps__csum_buf);
} xps__csum_scratch SEC(".maps");

/*
 * Turn the (rewritten) request in place into the reply datagram and
 * bounce it out of the interface it came in on: TC_ACT_REDIRECT, or -1.
 * The UDP checksum is recomputed over the whole reply: bpf_csum_diff
 * takes at most 512 bytes a call, so the payload goes through a per-CPU
 * buffer in chunks.
 */
static __always_inline int xps__tc_bounce(struct __sk_buff *skb,
					  struct xps_run *run)
{
	__u32 lvl = run->level, l3 = run->l3_off, l4 = run->l4_off;
	__u32 udp_len = sizeof(struct udphdr) + run->payload_len;
	struct xps__csum_buf *cb;
	struct ethhdr eth;
	struct udphdr uh;
	__u64 sum = 0;
	__u16 tmp16;
	int i;

	if (bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth)) ||
	    bpf_skb_load_bytes(skb, l4, &uh, sizeof(uh)))
		return -1;
	xps__swap_eth(&eth);
	tmp16 = uh.source;
	uh.source = uh.dest;
	uh.dest = tmp16;
	uh.len = bpf_htons(udp_len);
	uh.check = 0;

	if (run->family == AF_INET) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, l3, &ip, sizeof(ip)))
			return -1;
		xps__swap_ip4(&ip);
		ip.tot_len = bpf_htons(l4 - l3 + udp_len);
		ip.ttl = 64;
		ip.check = 0;
		sum = bpf_csum_diff(0, 0, (__be32 *)&ip, sizeof(ip), 0);
		ip.check = xps__csum_fold(sum);
		if (bpf_skb_store_bytes(skb, l3, &ip, sizeof(ip), 0))
			return -1;
		/* pseudo header: addresses, protocol, UDP length */
		sum = (__u64)ip.saddr + ip.daddr +
		      bpf_htons(IPPROTO_UDP) + bpf_htons(udp_len);
	} else {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, l3, &ip6, sizeof(ip6)))
			return -1;
		xps__swap_ip6(&ip6);
		ip6.payload_len = bpf_htons(udp_len);
		ip6.hop_limit = 64;
		if (bpf_skb_store_bytes(skb, l3, &ip6, sizeof(ip6), 0))
			return -1;
		sum = bpf_csum_diff(0, 0, (__be32 *)&ip6.saddr, 32, 0);
		sum += bpf_htonl(udp_len) + bpf_htonl(IPPROTO_UDP);
	}
	sum += bpf_csum_diff(0, 0, (__be32 *)&uh, sizeof(uh), 0);

	cb = bpf_map_lookup_elem(&xps__csum_scratch, &lvl);
	if (!cb)
		return -1;
	for (i = 0; i < XPS__CSUM_CHUNKS; i++) {
		__u32 off = i * XPS__CSUM_CHUNK;
		__u32 n;

		if (off >= run->payload_len)
			break;
		n = run->payload_len - off;
		/* zero the tail so an odd length sums as if padded */
		__builtin_memset(cb->b, 0, sizeof(cb->b));
		barrier_var(n);
		if (n > XPS__CSUM_CHUNK)
			n = XPS__CSUM_CHUNK;
		barrier_var(n);
		if (n < 1 || n > XPS__CSUM_CHUNK)
			return -1; /* only for the verifier: n is in [1, 512] */
		if (bpf_skb_load_bytes(skb, run->payload_off + off, cb->b, n))
			return -1;
		sum += bpf_csum_diff(0, 0, (__be32 *)cb->b,
				     XPS__CSUM_CHUNK, 0);
	}
	if (run->payload_len > XPS__CSUM_CHUNK * XPS__CSUM_CHUNKS)
		return -1;
	uh.check = xps__csum_fold(sum);
	if (!uh.check)
		uh.check = 0xffff;
	if (bpf_skb_store_bytes(skb, l4, &uh, sizeof(uh), 0) ||
	    bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0))
		return -1;
	return bpf_redirect(skb->ifindex, 0);
}

/* TX: a reply that cannot be bounced is dropped (the request is gone). */
static __always_inline int xps__tc_tx(struct __sk_buff *skb,
				      struct xps_run *run)
{
	int ret = xps__tc_bounce(skb, run);

	if (ret != TC_ACT_REDIRECT) {
		xps__account(run, XPS__DROP, 1);
		return TC_ACT_SHOT;
	}
	xps__account(run, XPS__TX, 0);
	return ret;
}

#endif /* __XPS_BACKEND_TC_UDP_BPF_H */
