/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The native backend's entries: the patched kernel's hook runs
 * xps_native_tcp / xps_native_udp on in-order payload and datagrams.
 * Part of xps_framework.bpf.c.
 */
#ifndef __XPS_FW_NATIVE_BPF_H
#define __XPS_FW_NATIVE_BPF_H

static __always_inline int native_run(struct __sk_buff *skb, __u8 proto,
				      void *progs)
{
	struct xps_conn *conn = NULL;
	struct tcp_sock___xps *tp;
	struct xps_pred_key key;
	struct xps_config *cfg;
	struct xps_run *run;
	__u64 cookie = 0;
	__u32 slot;
	int sub, nested;

	if (!skb->len)
		return XPS_PASS;
	cfg = config();
	if (proto == IPPROTO_TCP && cfg) {
		cookie = bpf_get_socket_cookie(skb);
		conn = bpf_map_lookup_elem(&xps_conns, &cookie);
	}
	run = run_begin(&nested);
	if (!run) {
		/* the hook runs with BH off: only a stale flag gets here */
		pass_uncounted(conn, XPS_LOST_NESTED);
		return XPS_PASS;
	}
	if (conn && cfg) {
		sub = conn_slot(skb, cfg, conn);
		run->family = skb->family == AF_INET ? AF_INET : AF_INET6;
	} else {
		key_from_skb(skb, proto, &key);
		sub = pred_lookup(&key, &slot) ? -1 : (int)slot;
		run->family = key.family;
	}
	if (sub < 0) {
		pass_uncounted(conn, XPS_LOST_NO_RUN);
		xps__run_end(run);
		return XPS_PASS;
	}
	slot = sub;
	run->proto = proto;
	run->payload_len = skb->len;
	run->cookie = cookie;
	/*
	 * The hook checked what makes consuming unsafe for the socket
	 * (unread data, urgent data, ...); what the service still owes is
	 * known here only.  A connection without a record (accepted before
	 * the context existed) cannot be counted: it stays on the slow path.
	 */
	if (proto == IPPROTO_UDP) {
		run->may_consume = 1;
	} else if (conn && skb->sk) {
		tp = (struct tcp_sock___xps *)bpf_skc_to_tcp_sock(skb->sk);
		if (tp) {
			/* the hook's word on this segment and the connection */
			__u8 st = XPS_SK_LOST;

			if (bpf_core_field_exists(tp->xps_state))
				st = tp->xps_state;
			/*
			 * The hook handed the owner bytes the program
			 * did not see, at any time before this run (bytes
			 * from before the program, unreadable frags), or
			 * this run is of urgent data (seen, but it
			 * may leave the stream the owner reads): unseen,
			 * counted then, and again at every run, as more
			 * may have gone since (docs/coherence.md).
			 */
			if (st & XPS_SK_LOST) {
				xps__lose_count(conn, XPS_LOST_HOOK);
				count_unseen(conn);
			}
			run->write_seq = tp->write_seq;
			run->may_consume = !(st & (XPS_SK_SEE_ONLY |
						   XPS_SK_LOST)) &&
					   conn_may_answer(conn, tp->write_seq);
		}
	}
	sub = resolve_slot(skb, run, slot);
	if (sub < 0) {
		pass_uncounted(conn, XPS_LOST_NO_RUN);
		xps__run_end(run);
		return XPS_PASS;
	}
	run->slot = sub;
	bpf_tail_call(skb, progs, sub);
	count_only(sub, run->start_ns, 1);
	pass_uncounted(conn, XPS_LOST_NO_RUN);
	xps__run_end(run);
	return XPS_PASS;
}

SEC("sk_skb")
int xps_native_tcp(struct __sk_buff *skb)
{
	return native_run(skb, IPPROTO_TCP, &xps_progs_tcp);
}

SEC("sk_skb")
int xps_native_udp(struct __sk_buff *skb)
{
	return native_run(skb, IPPROTO_UDP, &xps_progs_udp);
}

#endif /* __XPS_FW_NATIVE_BPF_H */
