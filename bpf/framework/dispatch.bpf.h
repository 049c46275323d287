/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * From a packet or a connection to the handler that runs on it: the
 * predicate table (most specific match), composability, the run state
 * and the connection's slot and reply count.  Every backend's entry
 * uses these.  Part of xps_framework.bpf.c.
 */
#ifndef __XPS_FW_DISPATCH_BPF_H
#define __XPS_FW_DISPATCH_BPF_H

static __always_inline struct xps_config *config(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xps_config, &zero);
}

/*
 * Read a ctx field with a load of its own.  Without volatile clang may
 * form a pointer into the ctx (e.g. &ctx->local_ip6[0]) and load through
 * it, which the verifier rejects ("dereference of modified ctx ptr").
 */
#define CTX_READ(x) (*(volatile __typeof__(x) *)&(x))

static __always_inline void set_v4(__u8 *dst, __u32 addr_be)
{
	__builtin_memset(dst, 0, 10);
	dst[10] = 0xff;
	dst[11] = 0xff;
	__builtin_memcpy(dst + 12, &addr_be, 4);
}

static __always_inline int is_v4_mapped(const __u32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff);
}

/*
 * Most specific match: try the masks in use, most specific first (libxps
 * keeps them sorted), and stop at the first hit.
 */
static __always_inline int pred_lookup(const struct xps_pred_key *full,
				       __u32 *slot)
{
	__u32 idx = full->proto == IPPROTO_UDP;
	struct xps_pred_masks *masks;
	struct xps_pred_value *val;
	struct xps_pred_key key;
	int i;

	masks = bpf_map_lookup_elem(&xps_masks, &idx);
	if (!masks)
		return -1;
	for (i = 0; i < XPS_PRED_NMASKS; i++) {
		__u8 m;

		if (i >= masks->count)
			break;
		m = masks->masks[i];
		__builtin_memset(&key, 0, sizeof(key));
		key.proto = full->proto;
		key.mask = m;
		if (m & XPS_PRED_FAMILY)
			key.family = full->family;
		if (m & XPS_PRED_LPORT)
			key.lport = full->lport;
		if (m & XPS_PRED_RPORT)
			key.rport = full->rport;
		if (m & XPS_PRED_LADDR)
			__builtin_memcpy(key.laddr, full->laddr, 16);
		if (m & XPS_PRED_RADDR)
			__builtin_memcpy(key.raddr, full->raddr, 16);
		val = bpf_map_lookup_elem(&xps_preds, &key);
		if (val) {
			*slot = val->slot;
			return 0;
		}
	}
	return -1;
}

/*
 * The predicate key of a connection, from a context that describes its
 * socket: struct __sk_buff (sk_skb) and struct bpf_sock_ops name the fields
 * alike.  A macro, because the two are different types.
 */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RPORT_SHIFT 16	/* the kernel shifts the big-endian port up */
#else
#define RPORT_SHIFT 0
#endif
#define KEY_FROM_SOCK_CTX(ctx, proto_, k)				\
	do {								\
		__u32 __l[4], __r[4];					\
									\
		__builtin_memset((k), 0, sizeof(*(k)));			\
		(k)->proto = (proto_);					\
		(k)->lport = (ctx)->local_port;				\
		(k)->rport = bpf_ntohs((__u16)((ctx)->remote_port >>	\
					       RPORT_SHIFT));		\
		if ((ctx)->family == AF_INET) {				\
			(k)->family = AF_INET;				\
			set_v4((k)->laddr, (ctx)->local_ip4);		\
			set_v4((k)->raddr, (ctx)->remote_ip4);		\
			break;						\
		}							\
		__l[0] = CTX_READ((ctx)->local_ip6[0]);			\
		__l[1] = CTX_READ((ctx)->local_ip6[1]);			\
		__l[2] = CTX_READ((ctx)->local_ip6[2]);			\
		__l[3] = CTX_READ((ctx)->local_ip6[3]);			\
		__r[0] = CTX_READ((ctx)->remote_ip6[0]);		\
		__r[1] = CTX_READ((ctx)->remote_ip6[1]);		\
		__r[2] = CTX_READ((ctx)->remote_ip6[2]);		\
		__r[3] = CTX_READ((ctx)->remote_ip6[3]);		\
		/* v4-mapped traffic on a dual-stack socket is IPv4 */	\
		(k)->family = is_v4_mapped(__r) ? AF_INET : AF_INET6;	\
		__builtin_memcpy((k)->laddr, __l, 16);			\
		__builtin_memcpy((k)->raddr, __r, 16);			\
	} while (0)

static __always_inline void key_from_skb(struct __sk_buff *skb, __u8 proto,
					 struct xps_pred_key *k)
{
	KEY_FROM_SOCK_CTX(skb, proto, k);
}

static __always_inline void count_only(__u32 slot, __u64 start, int error)
{
	struct xps_handler_stats *st = bpf_map_lookup_elem(&xps_stats, &slot);

	if (!st)
		return;
	st->runs++;
	st->pass++;
	st->run_ns += bpf_ktime_get_ns() - start;
	if (error)
		st->errors++;
}

/*
 * Resolve composability: a COMP slot selects its sub-context by the value
 * of comp_len payload bytes at comp_offset.  Returns the slot to run, or -1
 * to pass (counted on the comp context).
 */
static __always_inline int resolve_slot(struct __sk_buff *skb,
					struct xps_run *run, __u32 slot)
{
	struct xps_comp_value *sub;
	struct xps_comp_key ck = {};
	struct xps_slot *s;
	__u8 v[XPS_COMP_MAX_LEN] = {};
	__u32 len, i;

	s = bpf_map_lookup_elem(&xps_slots, &slot);
	if (!s || !(s->flags & XPS_SLOT_ACTIVE))
		return -1;
	if (!(s->flags & XPS_SLOT_COMP))
		return slot;

	len = s->comp_len;
	if (len < 1 || len > XPS_COMP_MAX_LEN ||
	    s->comp_offset + len > run->payload_len) {
		/* no value at the offset yet: not a message boundary */
		count_only(slot, run->start_ns, 0);
		return -1;
	}
	/* a constant size for the verifier; extra bytes are zeroed below */
	if (bpf_skb_load_bytes(skb, run->payload_off + s->comp_offset, v,
			       len) < 0) {
		count_only(slot, run->start_ns, 1);
		return -1;
	}
	/* the value is the len bytes as they appear on the wire */
	for (i = 0; i < XPS_COMP_MAX_LEN; i++)
		if (i >= len)
			v[i] = 0;
	__builtin_memcpy(&ck.value, v, sizeof(ck.value));
	ck.slot = slot;
	sub = bpf_map_lookup_elem(&xps_comp, &ck);
	if (!sub) {
		count_only(slot, run->start_ns, 0);
		return -1;
	}
	return sub->slot;
}

/*
 * The run state (and the handlers' per-CPU scratch) is per CPU, but a run
 * can be interrupted by another on the same CPU: the stock stream verdict
 * also runs in process context (backlog processing in release_sock() runs
 * with softirqs enabled), and a softirq arriving meanwhile runs the
 * program again, on another socket (the first one's segments go to its
 * backlog while it is owned).  Under load with writes, a connection's
 * segments reach the verdict from backlog processing often enough that
 * passing the interrupting run uncounted lost most connections' counts
 * within seconds.  So the state has a level for each: a run finding
 * entry 0 busy takes entry 1 and marks entry 0 (xps_run.inner) until it
 * ends, and the handler API and scratch follow the innermost run
 * (xps__run(), xps__level()).
 *
 * That holds only while the interrupting run finishes before the other
 * goes on, which a softirq does (it is not preempted, and softirqs do not
 * nest); a run in process context can be preempted by a task running the
 * program in turn.  So only a caller that knows it runs in softirq
 * (XPS_RUN_SOFTIRQ) may take level 1: the stock verdict on a socket its
 * owner does not hold, the TC ingress program.  A run that cannot have a
 * level of its own leaves everything alone and passes its request
 * uncounted (pass_uncounted()).
 *
 * A run ends in xps__run_end(), called by xps__account() for every
 * handler verdict and by every framework exit.  A run that cannot be
 * preempted (XPS_RUN_WHOLE: softirq, or softirqs off) and started more
 * than XPS_RUN_STALE_NS ago is over whatever its flag says, so a missed
 * clear costs passes for that long.  A run that may be preempted (in
 * process context) is held: it may be off its CPU for any time, and
 * taking its entry over would answer its request with another's state.
 * Its entry is taken over only by a later run of the same task, which
 * cannot be inside a run of its own in process context: its clear was
 * missed.  Otherwise a missed clear costs its CPU's process-context runs
 * their count until then (a handler that returns without a verdict
 * breaks the API's contract).
 */
#define XPS_RUN_STALE_NS	(20 * 1000 * 1000ULL)

/* How a run may start (run_begin()). */
#define XPS_RUN_WHOLE	1	/* nothing preempts it */
#define XPS_RUN_SOFTIRQ	2	/* it may interrupt a run in process context */

/* How a run known to be in softirq starts: whole but on PREEMPT_RT. */
static __always_inline int run_how_softirq(void)
{
	return softirq_runs_whole() ? XPS_RUN_WHOLE | XPS_RUN_SOFTIRQ : 0;
}

/* Whether the run of entry @run is still under way. */
static __always_inline int run_busy(struct xps_run *run, __u64 now,
				    __u32 task)
{
	if (!run->active)
		return 0;
	if (run->held)
		return run->task != task;
	return now - run->start_ns < XPS_RUN_STALE_NS;
}

static __always_inline struct xps_run *run_begin(int *nested, int how)
{
	__u32 zero = 0, one = 1, task = 0;
	struct xps_run *run, *outer;
	__u64 now = bpf_ktime_get_ns();

	*nested = 0;
	if (!(how & XPS_RUN_WHOLE))
		task = (__u32)bpf_get_current_pid_tgid();
	outer = bpf_map_lookup_elem(&xps_run, &zero);
	if (!outer)
		return NULL;
	if (!run_busy(outer, now, task)) {
		/* also forgets a stale inner run */
		__builtin_memset(outer, 0, sizeof(*outer));
		outer->start_ns = now;
		outer->active = 1;
		outer->held = !(how & XPS_RUN_WHOLE);
		outer->task = task;
		return outer;
	}
	run = bpf_map_lookup_elem(&xps_run, &one);
	if (!run || !(how & XPS_RUN_SOFTIRQ) ||
	    (outer->inner && run_busy(run, now, task))) {
		*nested = 1;
		return NULL;
	}
	__builtin_memset(run, 0, sizeof(*run));
	run->start_ns = now;
	run->active = 1;
	run->level = 1;
	outer->inner = 1;
	return run;
}

/*
 * The slot of a recorded connection: resolved when it was accepted
 * (xps_sockops()) and again only after a control-plane change, so a run
 * pays no predicate lookup.  -1: no context matches it.
 */
static __always_inline int conn_slot(struct __sk_buff *skb,
				     struct xps_config *cfg,
				     struct xps_conn *conn)
{
	struct xps_pred_key key;
	__u32 slot;

	if (conn->gen != cfg->generation) {
		key_from_skb(skb, IPPROTO_TCP, &key);
		if (pred_lookup(&key, &slot)) {
			conn->flags |= XPS_CONN_NO_SLOT;
		} else {
			conn->flags &= ~XPS_CONN_NO_SLOT;
			conn->slot = slot;
		}
		conn->gen = cfg->generation;
	}
	return conn->flags & XPS_CONN_NO_SLOT ? -1 : (int)conn->slot;
}

/*
 * Whether a reply from the kernel may go out on @conn now without
 * overtaking, or landing inside, a reply the service owes
 * (docs/ordering.md): the service has completely answered every request
 * it was passed, and every byte it gave the socket to send (up to
 * @write_seq) has been seen at egress, but for kernel replies.
 */
static __always_inline int conn_may_answer(struct xps_conn *conn,
					   __u32 write_seq)
{
	if ((conn->flags & (XPS_CONN_UNCOUNTED | XPS_CONN_EGRESS)) !=
	    XPS_CONN_EGRESS)
		return 0;
	return conn->owed == conn->answered && xps_reply_idle(&conn->rp) &&
	       write_seq - conn->eg_seq == conn->kr_bytes;
}

/*
 * Bytes reach the service that no handler saw: since they may hold a
 * write of anything, they count as an unanswered write of every key on
 * @conn (as xps_note_write() and xps_note_write_all() count one, released
 * the same way) and move xps_config.unseen, after which a cache handler
 * serves nothing it cached before (docs/coherence.md).
 */
static __always_inline void count_unseen(struct xps_conn *conn)
{
	struct xps_config *cfg;
	struct xps_wpend *wp;
	__u32 zero = 0;

	cfg = bpf_map_lookup_elem(&xps_config, &zero);
	wp = bpf_map_lookup_elem(&xps_wpend, &zero);
	if (!cfg || !wp)
		return;
	__sync_fetch_and_add(&cfg->unacked_writes, 1);
	__sync_fetch_and_add(&conn->unacked, 1);
	__sync_fetch_and_add(&wp->ovf, 1);
	__sync_fetch_and_add(&conn->wovf, 1);
	__sync_fetch_and_add(&cfg->unseen, 1);
}

/*
 * Bytes go to the service without the handler having seen them: the
 * connection loses its count (xps__lose_count()) and they count as
 * unseen (count_unseen()), before the service can read them.
 */
static __always_inline void pass_uncounted(struct xps_conn *conn, __u32 why)
{
	if (!conn)
		return;
	xps__lose_count(conn, why);
	count_unseen(conn);
}

#endif /* __XPS_FW_DISPATCH_BPF_H */
