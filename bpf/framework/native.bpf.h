/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The native backend's entries: the patched kernel's hook runs
 * xps_native_tcp / xps_native_udp on in-order payload and datagrams.
 * Part of xps_framework.bpf.c.
 */
#ifndef __XPS_FW_NATIVE_BPF_H
#define __XPS_FW_NATIVE_BPF_H

/*
 * The patched kernel's word on a TCP run's connection, SERVE_SK_* (patch
 * "bpf: Tell serve programs the connection's state").  Weak, as every kfunc
 * here (libbpf resolves the object's externs for every program), and
 * called only where libxps found it in the kernel's BTF: a kernel of the
 * series from before it has the bits in struct tcp_sock only.
 */
extern __u32 bpf_serve_state(struct __sk_buff *s) __ksym __weak;
const volatile __u32 xps_state_kfunc;

/* The connection's SERVE_SK_* bits; SERVE_SK_LOST when the kernel has none. */
static __always_inline __u8 native_state(struct __sk_buff *skb,
					 struct tcp_sock___xps *tp)
{
	if (xps_state_kfunc)
		return bpf_serve_state(skb);
	if (bpf_core_field_exists(tp->serve_state))
		return tp->serve_state;
	return SERVE_SK_LOST;
}

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
	/*
	 * The hook runs with softirqs off: a run here interrupts none, and
	 * is not preempted (but on PREEMPT_RT)
	 */
	run = run_begin(&nested, softirq_runs_whole() ? XPS_RUN_WHOLE : 0);
	if (!run) {
		/* only a stale flag gets here */
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
			__u8 st = native_state(skb, tp);

			/*
			 * The hook handed the owner bytes the program
			 * did not see, at any time before this run (bytes
			 * from before the program, unreadable frags), or
			 * this run is of urgent data (seen, but it
			 * may leave the stream the owner reads): unseen,
			 * counted then, and again at every run, as more
			 * may have gone since (docs/coherence.md).
			 */
			if (st & SERVE_SK_LOST) {
				xps__lose_count(conn, XPS_LOST_HOOK);
				count_unseen(conn);
			}
			run->write_seq = tp->write_seq;
			run->may_consume = !(st & (SERVE_SK_SEE_ONLY |
						   SERVE_SK_LOST)) &&
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

/* ---- UDP: the sockets the native hook runs on --------------------------- */

/*
 * The patched kernel's opt-in for UDP sockets (patch 0011).  Weak: libbpf
 * resolves the object's externs for every program, and other kernels have
 * none (xps_udp_enroll is loaded on the native backend only).
 */
extern int bpf_serve_udp_enroll(struct sock___xps *sk, int on) __ksym __weak;

struct seq_file;

struct bpf_iter_meta___xps {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_iter__udp___xps {
	struct bpf_iter_meta___xps *meta;
	struct sock___xps *udp_sk;
} __attribute__((preserve_access_index));

struct udp_served {
	__u16 port;	/* a socket's local port */
	__u16 served;	/* a UDP predicate could match a datagram to it */
};

/* Whether a UDP predicate could match a datagram to @u->port. */
static long udp_pred_serves(struct bpf_map *map,
			    const struct xps_pred_key *key,
			    const struct xps_pred_value *val,
			    struct udp_served *u)
{
	if (key->proto != IPPROTO_UDP ||
	    ((key->mask & XPS_PRED_LPORT) && key->lport != u->port))
		return 0;
	u->served = 1;
	return 1;	/* stop */
}

/*
 * The patched kernel runs the UDP hook only on sockets that opted in
 * (UDP_SERVE), and a service's sockets are not libxps's to setsockopt() on:
 * libxps runs this iterator over the namespace's UDP sockets when it
 * creates a UDP context and whenever a daemon reconnects to its service
 * (which may have opened its sockets anew).  It enrolls every socket whose
 * local port a UDP predicate could match; addresses and families are not
 * compared (a socket on the wildcard address receives a predicate's
 * address), and a socket enrolled one context too many only pays a run
 * that passes.  One line per socket enrolled, for the caller to count.
 * Enrolling is never undone here: a socket a service opted in itself
 * stays so.
 */
SEC("iter/udp")
int xps_udp_enroll(struct bpf_iter__udp___xps *ctx)
{
	struct sock___xps *sk = ctx->udp_sk;
	struct udp_served u = {};

	if (!sk)
		return 0;
	u.port = sk->__sk_common.skc_num;
	if (!u.port)
		return 0;
	bpf_for_each_map_elem(&xps_preds, udp_pred_serves, &u, 0);
	if (!u.served || bpf_serve_udp_enroll(sk, 1))
		return 0;
	BPF_SEQ_PRINTF(ctx->meta->seq, "%u\n", u.port);
	return 0;
}

#endif /* __XPS_FW_NATIVE_BPF_H */
