/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Packet headers as TC sees them (an Ethernet frame): the one walk from
 * the frame to its transport header, and the one way to swap a header's
 * source and destination.  Used by the framework's TC programs and the
 * stock UDP backend's send path (backend/tc_udp.bpf.h); never by a
 * handler directly.
 */
#ifndef __XPS_INTERNAL_PACKET_BPF_H
#define __XPS_INTERNAL_PACKET_BPF_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "run.bpf.h"

#define XPS__IP_FRAG_MASK	0x3fff	/* IP_MF | IP_OFFSET: a fragment */

/* An IPv4 or IPv6 packet behind the frame's Ethernet header. */
struct xps__ip {
	__u32 l3;		/* offset of the network header */
	__u32 l4;		/* offset of the transport header */
	__u32 l4_len;		/* transport header and payload, as IP says */
	__u8 family;		/* AF_INET or AF_INET6 */
	__u8 proto;		/* the transport header's IPPROTO_* */
	__u8 frag;		/* an IPv4 fragment: only the socket reassembles */
	union {
		struct {
			__be32 saddr, daddr;
		} v4;
		struct {
			struct in6_addr saddr, daddr;
		} v6;
	};
};

/*
 * Walk the frame to its transport header (no IPv6 extension headers: the
 * protocol is the next header's).  0, or -1 when it is neither IPv4 nor
 * IPv6 or is too short.
 */
static __always_inline int xps__ip_parse(struct __sk_buff *skb,
					 struct xps__ip *h)
{
	h->l3 = sizeof(struct ethhdr);
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, h->l3, &ip, sizeof(ip)))
			return -1;
		h->family = AF_INET;
		h->proto = ip.protocol;
		h->frag = !!(ip.frag_off & bpf_htons(XPS__IP_FRAG_MASK));
		h->l4 = h->l3 + ip.ihl * 4;
		h->l4_len = bpf_ntohs(ip.tot_len) - ip.ihl * 4;
		h->v4.saddr = ip.saddr;
		h->v4.daddr = ip.daddr;
		return 0;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, h->l3, &ip6, sizeof(ip6)))
			return -1;
		h->family = AF_INET6;
		h->proto = ip6.nexthdr;
		h->frag = 0;
		h->l4 = h->l3 + sizeof(ip6);
		h->l4_len = bpf_ntohs(ip6.payload_len);
		h->v6.saddr = ip6.saddr;
		h->v6.daddr = ip6.daddr;
		return 0;
	}
	return -1;
}

/*
 * Swap source and destination of a header.  Swapping whole 32-bit words
 * leaves every one's complement sum over them unchanged: no checksum
 * needs updating for the swap itself.
 */
static __always_inline void xps__swap_eth(struct ethhdr *eth)
{
	__u8 mac[ETH_ALEN];

	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
}

static __always_inline void xps__swap_ip4(struct iphdr *ip)
{
	__be32 a = ip->saddr;

	ip->saddr = ip->daddr;
	ip->daddr = a;
}

static __always_inline void xps__swap_ip6(struct ipv6hdr *ip6)
{
	struct in6_addr a = ip6->saddr;

	ip6->saddr = ip6->daddr;
	ip6->daddr = a;
}

#endif /* __XPS_INTERNAL_PACKET_BPF_H */
