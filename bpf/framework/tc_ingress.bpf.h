/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stock UDP backend's entry, xps_tc_ingress on every interface's
 * ingress: UDP handlers run on the whole frame; while the sockmap backend
 * drains, TCP connections leave the sockhash here.  Part of
 * xps_framework.bpf.c.
 */
#ifndef __XPS_FW_TC_INGRESS_BPF_H
#define __XPS_FW_TC_INGRESS_BPF_H

/*
 * Draining: take the connection of this TCP segment out of the sockhash if
 * the service has nothing unread.  This runs before TCP sees the segment,
 * so the segment itself is queued on the plain socket path.
 */
static __always_inline void drain_tcp(struct __sk_buff *skb,
				      struct xps_config *cfg,
				      const struct xps__ip *h)
{
	struct bpf_sock_tuple tuple = {};
	struct tcp_sock___xps *tp;
	struct bpf_sock *sk;
	struct tcphdr th;
	__u64 cookie;
	__u32 tsz;

	if (bpf_ktime_get_ns() - cfg->drain_since_ns < XPS_DRAIN_GRACE_NS)
		return;
	if (bpf_skb_load_bytes(skb, h->l4, &th, sizeof(th)))
		return;
	/* only data segments: a request/response client sends one only
	 * after it got every answer it waits for
	 */
	if (h->l4_len <= th.doff * 4)
		return;
	if (h->family == AF_INET) {
		tuple.ipv4.saddr = h->v4.saddr;
		tuple.ipv4.daddr = h->v4.daddr;
		tuple.ipv4.sport = th.source;
		tuple.ipv4.dport = th.dest;
		tsz = sizeof(tuple.ipv4);
	} else {
		__builtin_memcpy(tuple.ipv6.saddr, &h->v6.saddr, 16);
		__builtin_memcpy(tuple.ipv6.daddr, &h->v6.daddr, 16);
		tuple.ipv6.sport = th.source;
		tuple.ipv6.dport = th.dest;
		tsz = sizeof(tuple.ipv6);
	}
	sk = bpf_skc_lookup_tcp(skb, &tuple, tsz, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return;
	tp = (struct tcp_sock___xps *)bpf_skc_to_tcp_sock(sk);
	if (!tp) {
		bpf_sk_release(sk);
		return;
	}
	/* TC has no bpf_get_socket_cookie() for a looked-up socket; the
	 * cookie exists: it was generated when the connection was enrolled
	 */
	cookie = ((struct sock___xps *)tp)->__sk_common.skc_cookie.counter;
	if (tp->copied_seq == tp->rcv_nxt &&
	    bpf_map_lookup_elem(&xps_conns, &cookie)) {
		bpf_map_delete_elem(&xps_sockhash, &cookie);
		bpf_map_delete_elem(&xps_conns, &cookie);
	}
	bpf_sk_release(sk);
}

SEC("tc")
int xps_tc_ingress(struct __sk_buff *skb)
{
	struct xps_pred_key key = {};
	struct xps_config *cfg;
	struct xps_run *run;
	struct xps__ip h;
	struct udphdr uh;
	__u32 ulen, l4, slot;
	int sub, nested;

	cfg = config();
	if (!cfg || cfg->backend_udp != XPS_BACKEND_TC)
		return TC_ACT_OK;
	if (xps__ip_parse(skb, &h))
		return TC_ACT_OK;
	if (h.proto == IPPROTO_TCP && (cfg->flags & XPS_CFG_DRAINING)) {
		drain_tcp(skb, cfg, &h);
		return TC_ACT_OK;
	}
	/* fragments go to the socket: only it can reassemble */
	if (h.proto != IPPROTO_UDP || h.frag)
		return TC_ACT_OK;
	key.proto = IPPROTO_UDP;
	key.family = h.family;
	if (h.family == AF_INET) {
		set_v4(key.laddr, h.v4.daddr);
		set_v4(key.raddr, h.v4.saddr);
	} else {
		__builtin_memcpy(key.laddr, &h.v6.daddr, 16);
		__builtin_memcpy(key.raddr, &h.v6.saddr, 16);
	}
	l4 = h.l4;
	if (bpf_skb_load_bytes(skb, l4, &uh, sizeof(uh)))
		return TC_ACT_OK;
	ulen = bpf_ntohs(uh.len);
	if (ulen < sizeof(uh) || l4 + ulen > skb->len)
		return TC_ACT_OK;
	key.lport = bpf_ntohs(uh.dest);
	key.rport = bpf_ntohs(uh.source);

	/* TC ingress runs in softirq, or with softirqs off */
	run = run_begin(&nested, run_how_softirq());
	if (!run)
		return TC_ACT_OK;
	if (pred_lookup(&key, &slot)) {
		xps__run_end(run);
		return TC_ACT_OK;
	}
	run->proto = IPPROTO_UDP;
	run->family = key.family;
	run->l3_off = h.l3;
	run->l4_off = l4;
	run->payload_off = l4 + sizeof(uh);
	run->payload_len = ulen - sizeof(uh);
	run->may_consume = 1;
	sub = resolve_slot(skb, run, slot);
	if (sub < 0) {
		xps__run_end(run);
		return TC_ACT_OK;
	}
	run->slot = sub;
	bpf_tail_call(skb, &xps_progs_udp, sub);
	count_only(sub, run->start_ns, 1);
	xps__run_end(run);
	return TC_ACT_OK;
}

#endif /* __XPS_FW_TC_INGRESS_BPF_H */
