// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The XPS extension framework: predicate table lookup, L7 composability and
 * dispatch to the handler by tail call, for every backend.
 *
 *  native	xps_native_tcp / xps_native_udp, run by the patched kernel's
 *		hook (SK_SKB with the BPF_XPS_* attach types set by libxps,
 *		attached by netns links)
 *  sockmap	xps_stream_verdict runs on the data of the connections
 *		xps_sockops enrolled into xps_sockhash; xps_msg_verdict puts
 *		the replies on the wire and releases answered writes;
 *		xps_tc_egress completes RESET
 *  tc		xps_tc_ingress runs UDP handlers on the interface's ingress
 *		(and takes TCP connections out of the sockhash when draining)
 *
 * Two programs run on both TCP backends, the native one included: libxps
 * attaches xps_sockops to the cgroup v2 root (a BPF_CGROUP_SOCK_OPS link)
 * and xps_tc_egress to the egress of every interface while a TCP context
 * exists.  xps_sockops records every accepted connection that matches a
 * predicate (struct xps_conn, which also holds the handlers' state of the
 * connection) and forgets it when it closes; it enrols the connection into
 * xps_sockhash on the sockmap backend only.  xps_tc_egress counts the
 * replies the service sends on it, so that a reply from the kernel never
 * overtakes or lands inside one the service still owes (docs/ordering.md),
 * and on the native backend releases the writes the service has answered
 * (docs/coherence.md).  libxps loads the programs of the backend in use
 * and these two.
 */
#define XPS__FRAMEWORK	/* all the maps of internal/maps.bpf.h */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

#include "internal/run.bpf.h"
#include "proto/reply.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Only the fields XPS reads; CO-RE relocates them against the kernel. */
struct tcp_sock___xps {
	__u32 rcv_nxt;
	__u32 copied_seq;
	__u32 write_seq;
	__u8 xps_state;		/* XPS_SK_*: the patched kernel only */
} __attribute__((preserve_access_index));

/* struct tcp_skb_cb, in sk_buff's cb[] while the skb is on a TCP queue */
struct tcp_skb_cb___xps {
	__u32 seq;
	__u32 end_seq;
	__u32 tcp_tw_isn;
	__u8 tcp_flags;
};

#define XPS_SKB_CB_SIZE	48	/* sizeof(((struct sk_buff *)0)->cb) */

struct sk_buff___xps {
	char cb[XPS_SKB_CB_SIZE];
} __attribute__((preserve_access_index));

#define XPS_TCPHDR_FIN	0x01	/* include/net/tcp.h */
/* The TCP header's 16-bit word of data offset and flags, and its checksum */
#define XPS_TCPHDR_FLAGS_OFF	12
#define XPS_TCPHDR_CSUM_OFF	offsetof(struct tcphdr, check)
#define TCP_FLAGS_AT(th)	((__u8 *)(th) + XPS_TCPHDR_FLAGS_OFF)
#define XPS_IP_FRAG_MASK	0x3fff	/* IP_MF | IP_OFFSET: a fragment */

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

struct task_struct___xps {
	unsigned int flags;
} __attribute__((preserve_access_index));

#define XPS_PF_KTHREAD 0x00200000	/* include/linux/sched.h */

/* tcp_sock starts with struct sock, which starts with sock_common */
struct sock_common___xps {
	__u16 skc_num;		/* the local port, host byte order */
	struct {
		__s64 counter;
	} skc_cookie;
} __attribute__((preserve_access_index));

struct sock___xps {
	struct sock_common___xps __sk_common;
	struct {
		int owned;
	} sk_lock;
	struct {
		int len;
	} sk_backlog;
	__u16 sk_protocol;
} __attribute__((preserve_access_index));

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
 * The run state (and the handlers' per-CPU scratch) serves one run per CPU
 * at a time, but a run can be interrupted by another on the same CPU: the
 * stock stream verdict and the native hook also run in process context
 * (backlog processing in release_sock() runs with softirqs enabled), and a
 * softirq arriving meanwhile runs the program again, on another socket or
 * the same one.  Seen under load: the inner run overwrote the outer one's
 * state and one request was answered twice, the next one never.  A run
 * that finds another under way on its CPU leaves everything alone and
 * passes its request uncounted (pass_uncounted()).  A run ends in xps__run_end(),
 * called by xps__account() for every handler verdict and by every
 * framework exit; a run started more than XPS_RUN_STALE_NS ago is over
 * whatever its flag says, so a missed clear costs passes for that long,
 * never a wrong answer.
 */
#define XPS_RUN_STALE_NS	(20 * 1000 * 1000ULL)

static __always_inline struct xps_run *run_begin(int *nested)
{
	struct xps_run *run = xps__run();
	__u64 now = bpf_ktime_get_ns();

	*nested = 0;
	if (!run)
		return NULL;
	if (run->active && now - run->start_ns < XPS_RUN_STALE_NS) {
		*nested = 1;
		return NULL;
	}
	__builtin_memset(run, 0, sizeof(*run));
	run->start_ns = now;
	run->active = 1;
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

/* Bytes go to the service without a handler's count: see xps__lose_count(). */
static __always_inline void pass_uncounted(struct xps_conn *conn)
{
	if (conn)
		xps__lose_count(conn);
}

/* ---- native backend ------------------------------------------------ */

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
		pass_uncounted(conn);
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
		pass_uncounted(conn);
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
			if (st & XPS_SK_LOST)
				xps__lose_count(conn);
			run->write_seq = tp->write_seq;
			run->may_consume = !st &&
					   conn_may_answer(conn, tp->write_seq);
		}
	}
	sub = resolve_slot(skb, run, slot);
	if (sub < 0) {
		pass_uncounted(conn);
		xps__run_end(run);
		return XPS_PASS;
	}
	run->slot = sub;
	bpf_tail_call(skb, progs, sub);
	count_only(sub, run->start_ns, 1);
	pass_uncounted(conn);
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

/* The connection's writes by key are answered too (xps_note_write_key()). */
static __always_inline void release_key_writes(struct xps_conn *conn)
{
	struct xps_wpend *wp;
	__u32 zero = 0, i, n;
	__u16 b;

	wp = bpf_map_lookup_elem(&xps_wpend, &zero);
	if (!wp)
		return;
	for (i = 0; i < XPS_CONN_WB; i++) {
		b = conn->wb[i];	/* before the count: see the note side */
		n = __sync_lock_test_and_set(&conn->wbc[i], 0);
		if (n)
			__sync_fetch_and_sub(&wp->b[b & (XPS_WPEND_BUCKETS - 1)], n);
	}
	n = __sync_lock_test_and_set(&conn->wovf, 0);
	if (n)
		__sync_fetch_and_sub(&wp->ovf, n);
}

/* ---- TCP, both backends: a service's listening socket closes -------- */

#define XPS_TCP_CLOSE	7	/* include/net/tcp_states.h */
#define XPS_TCP_LISTEN	10

struct bpf_map;

/* Mark the server of every predicate on port *@port gone. */
static long mark_gone(struct bpf_map *map, const struct xps_pred_key *key,
		      const struct xps_pred_value *val, __u16 *port)
{
	__u32 slot = val->slot, *w;

	if ((key->mask & XPS_PRED_LPORT) && key->lport != *port)
		return 0;
	w = bpf_map_lookup_elem(&xps_servers, &slot);
	if (w) {
		__sync_fetch_and_or(w, XPS_SERVER_GONE);
		__sync_fetch_and_add(w, XPS_SERVER_CLOSE_ONE);
	}
	return 0;
}

/*
 * A listening TCP socket closed (the server exited, was killed or closed
 * it): every context whose predicate could match its port, TCP or UDP (a
 * server's UDP socket goes with it), has lost its server (XPS_SERVER_GONE,
 * include/xps/abi.h), here, before the port can be bound again, whatever
 * user space is doing.  Addresses
 * and families are not compared: a listener on the wildcard address
 * serves a predicate on one of its addresses, and marking one context too
 * many only costs it a cache.  Runs at every TCP state change of the
 * host; anything but a listener's close returns at the first test.
 */
SEC("tp_btf/inet_sock_set_state")
int xps_listen_close(__u64 *ctx)
{
	struct sock___xps *sk = (void *)ctx[0];
	__u16 port;

	if ((int)ctx[1] != XPS_TCP_LISTEN || (int)ctx[2] != XPS_TCP_CLOSE)
		return 0;
	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	port = BPF_CORE_READ(sk, __sk_common.skc_num);
	bpf_for_each_map_elem(&xps_preds, mark_gone, &port, 0);
	return 0;
}

/* ---- TCP, both backends: connection records -------------------------- */

SEC("sockops")
int xps_sockops(struct bpf_sock_ops *skops)
{
	struct xps_pred_key key;
	struct xps_config *cfg;
	struct xps_conn conn = {};
	__u32 slot;
	__u64 cookie;

	switch (skops->op) {
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (skops->args[1] == BPF_TCP_CLOSE) {
			struct xps_conn *c;

			cookie = bpf_get_socket_cookie(skops);
			c = bpf_map_lookup_elem(&xps_conns, &cookie);
			cfg = config();
			/* writes that will never be answered: release them */
			if (c && cfg && c->unacked)
				__sync_fetch_and_sub(&cfg->unacked_writes,
						     c->unacked);
			if (c)
				release_key_writes(c);
			bpf_map_delete_elem(&xps_conns, &cookie);
			bpf_map_delete_elem(&xps_stash, &cookie);
		}
		return 1;
	default:
		return 1;
	}

	cfg = config();
	if (!cfg)
		return 1;

	KEY_FROM_SOCK_CTX(skops, IPPROTO_TCP, &key);
	if (pred_lookup(&key, &slot))
		return 1;

	cookie = bpf_get_socket_cookie(skops);
	conn.slot = slot;
	conn.gen = cfg->generation;
	/* the service's first byte: egress accounts for the stream from here */
	conn.eg_seq = skops->snd_nxt;
	conn.flags = XPS_CONN_EGRESS;
	if (bpf_map_update_elem(&xps_conns, &cookie, &conn, BPF_ANY)) {
		__sync_fetch_and_add(&cfg->unrecorded, 1);
		return 1;
	}
	/*
	 * The native hook needs no enrolment, but handlers keep their
	 * per-connection state here (xps_conn_state()) on both backends.
	 */
	if (cfg->backend_tcp == XPS_BACKEND_SOCKMAP &&
	    bpf_sock_hash_update(skops, &xps_sockhash, &cookie, BPF_NOEXIST)) {
		bpf_map_delete_elem(&xps_conns, &cookie);
		__sync_fetch_and_add(&cfg->unrecorded, 1);
		return 1;
	}
	/* to forget the connection when it closes */
	bpf_sock_ops_cb_flags_set(skops, BPF_SOCK_OPS_STATE_CB_FLAG);
	return 1;
}

/*
 * Whether a reply from the kernel may go out now without overtaking the
 * service: nothing but this skb is unread on the socket, and the service
 * owes nothing (conn_may_answer()).
 */
static __always_inline int sockmap_may_consume(struct __sk_buff *skb,
					       struct xps_conn *conn,
					       struct xps_run *run)
{
	struct tcp_sock___xps *tp;
	struct bpf_sock *sk = skb->sk;

	if (!sk)
		return 0;
	tp = (struct tcp_sock___xps *)bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return 0;
	run->write_seq = tp->write_seq;
	if (tp->rcv_nxt - tp->copied_seq != skb->len)
		return 0;
	/*
	 * Bytes that arrived before accept() reach this program from inside
	 * the owner's recvmsg (tcp_bpf_recvmsg_parser), which afterwards
	 * writes back a copied_seq read before the run: consuming there
	 * would leave copied_seq behind rcv_nxt for good (the owner is then
	 * woken forever and nothing is consumed again).  That is the one
	 * path where the socket is owned by the user outside backlog
	 * processing (__release_sock keeps sk_backlog.len until it is done).
	 */
	if (((struct sock___xps *)tp)->sk_lock.owned &&
	    !((struct sock___xps *)tp)->sk_backlog.len)
		return 0;
	return conn_may_answer(conn, tp->write_seq);
}

/*
 * sockmap reads whole skbs off the receive queue (tcp_read_skb()), but
 * tcp_data_queue() queues a segment that partially overlaps bytes already
 * received whole, with its old head: recvmsg() skips that head by offset,
 * sockmap does not.  A retransmission that covers a lost segment and some
 * bytes received before it would reach the service twice (a request
 * executed twice, replies out of step) and push copied_seq past rcv_nxt
 * (tcp_eat_skb() charges the skb's length).  So the verdict cuts off what
 * it has seen before (@conn->rx_seq, the first byte it has not).  The
 * skb's new bytes end at end_seq, less one for a FIN.  A cut that fails
 * (no memory to pull the bytes) leaves them, as plain sockmap does: a
 * known limit, since dropping the skb would lose bytes TCP has acked.
 * Returns the skb's length after the cut.
 */
/* bpf_skb_adjust_room() takes at most 4095 bytes a call: 17 calls > 64 KiB */
#define XPS_ADJUST_MAX	4095
#define XPS_TRIM_STEPS	17

static __always_inline __u32 sockmap_trim_seen(struct __sk_buff *skb,
					       struct xps_conn *conn)
{
	struct sk_buff___xps *kskb = bpf_cast_to_kern_ctx(skb);
	struct tcp_skb_cb___xps *cb = (void *)kskb->cb;
	__u32 end, seen, k, i;

	end = cb->end_seq - (cb->tcp_flags & XPS_TCPHDR_FIN ? 1 : 0);
	if (!(conn->flags & XPS_CONN_RX_SEQ)) {
		conn->flags |= XPS_CONN_RX_SEQ;
		conn->rx_seq = end;
		return skb->len;
	}
	seen = conn->rx_seq - (end - skb->len);
	if ((__s32)(end - conn->rx_seq) > 0)
		conn->rx_seq = end;
	if ((__s32)seen <= 0)
		return skb->len;
	for (i = 0; i < XPS_TRIM_STEPS && seen && skb->len; i++) {
		k = seen < XPS_ADJUST_MAX ? seen : XPS_ADJUST_MAX;
		if (k > skb->len)
			k = skb->len;
		if (bpf_skb_adjust_room(skb, -(__s32)k, 0, 0))
			break;
		seen -= k;
	}
	return skb->len;
}

SEC("sk_skb/stream_verdict")
int xps_stream_verdict(struct __sk_buff *skb)
{
	struct xps_config *cfg;
	struct xps_conn *conn;
	struct xps_run *run;
	__u64 cookie;
	int sub, nested;

	cfg = config();
	cookie = bpf_get_socket_cookie(skb);
	conn = cfg ? bpf_map_lookup_elem(&xps_conns, &cookie) : NULL;
	if (conn && skb->len && !sockmap_trim_seen(skb, conn)) {
		/* every byte seen before: nothing for the service either */
		return XPS__SK_DROP;
	}
	/* a bare FIN reaches the verdict as an empty skb: not a request */
	if (!skb->len)
		return XPS__SK_PASS;
	run = run_begin(&nested);
	if (nested) {
		pass_uncounted(conn);
		return XPS__SK_PASS;
	}
	if (!run)
		return XPS__SK_PASS;
	if (!conn) {
		xps__run_end(run);
		return XPS__SK_PASS;
	}
	if (conn_slot(skb, cfg, conn) < 0) {
		pass_uncounted(conn);
		xps__run_end(run);
		return XPS__SK_PASS;
	}

	run->cookie = cookie;
	run->proto = IPPROTO_TCP;
	run->family = skb->family == AF_INET ? AF_INET : AF_INET6;
	run->payload_len = skb->len;
	run->may_consume = sockmap_may_consume(skb, conn, run);
	sub = resolve_slot(skb, run, conn->slot);
	if (sub < 0) {
		pass_uncounted(conn);
		xps__run_end(run);
		return XPS__SK_PASS;
	}
	run->slot = sub;
	bpf_tail_call(skb, &xps_progs_tcp, sub);
	count_only(sub, run->start_ns, 1);
	pass_uncounted(conn);
	xps__run_end(run);
	return XPS__SK_PASS;
}

/*
 * The service writes on a connection while nothing on it is unread: it has
 * executed every request it was passed, so the writes among them are
 * answered (docs/coherence.md).  Called on the way out, before the bytes
 * reach the client; the exchange makes concurrent callers release once.
 */
static __always_inline void release_writes(struct xps_config *cfg,
					   struct xps_conn *conn,
					   struct tcp_sock___xps *tp)
{
	__u32 n;

	if (!conn->unacked || tp->copied_seq != tp->rcv_nxt)
		return;
	n = __sync_lock_test_and_set(&conn->unacked, 0);
	if (n)
		__sync_fetch_and_sub(&cfg->unacked_writes, n);
	release_key_writes(conn);
}

/*
 * Stock TCP replies on their way out (see struct xps_stash).  A
 * redirected request is sent by the psock's backlog kworker; while the
 * connection has replies stashed, what a kernel thread sends on it is that
 * request: replace it with the reply.  What the service writes (from its
 * own task) passes untouched.
 */
SEC("sk_msg")
int xps_msg_verdict(struct sk_msg_md *msg)
{
	struct task_struct___xps *task;
	struct xps_stash_slot *st;
	struct tcp_sock___xps *tp;
	struct xps_stash *stash;
	__u64 cookie;
	struct xps_config *cfg;
	struct xps_conn *conn;
	struct bpf_sock *bsk;
	__u32 size = msg->size, left, pop, n, i;
	void *d, *e;

	bsk = msg->sk;
	cfg = config();
	if (!cfg || !bsk)
		return SK_PASS;
	tp = (struct tcp_sock___xps *)bpf_skc_to_tcp_sock(bsk);
	if (!tp)
		return SK_PASS;
	cookie = ((struct sock___xps *)tp)->__sk_common.skc_cookie.counter;
	conn = bpf_map_lookup_elem(&xps_conns, &cookie);
	if (!conn)
		return SK_PASS;
	task = (struct task_struct___xps *)bpf_get_current_task_btf();
	if (!(task->flags & XPS_PF_KTHREAD)) {
		/*
		 * The service writes with nothing unread: it has executed
		 * every request it was passed, writes included.
		 */
		release_writes(cfg, conn, tp);
		return SK_PASS;	/* the service's own bytes */
	}
	/*
	 * What the kworker sends on an enrolled connection is a request
	 * redirected for its reply.  Without a reply for it (a send the
	 * kworker retries after a cut), never put the request's own bytes on
	 * the wire: drop them.
	 */
	if (conn->tx_tail == conn->tx_head)
		return SK_DROP;
	stash = bpf_map_lookup_elem(&xps_stash, &cookie);
	if (!stash)
		return SK_DROP;
	st = &stash->slot[conn->tx_tail & (XPS_STASH_SLOTS - 1)];

	/*
	 * The kworker sends a non-linear request in pieces (head, then each
	 * frag), every piece but the last with MSG_MORE (measured on 6.18).
	 * A reply put on an earlier piece is corked by that flag, and the
	 * empty pieces after it never push it: it left only when the ~200 ms
	 * zero-window probe timer fired.  So every piece is emptied and the
	 * reply goes out with the last one, which carries no MSG_MORE.
	 */
	left = st->req_left;
	pop = size < left ? size : left;
	left -= pop;
	if (left) {
		/*
		 * More pieces of this request follow.  Not for a request
		 * xps__sockmap_tx() linearized; emptying the message here
		 * would crash 6.12 (see the pop below).
		 */
		if (pop && bpf_msg_pop_data(msg, 0, pop, 0))
			return SK_DROP;
		st->req_left = left;
		return SK_PASS;
	}
	n = st->len;
	barrier_var(n);
	if (n > XPS_STOCK_REPLY_MAX)
		return SK_DROP;
	if (!n) {
		if (pop && bpf_msg_pop_data(msg, 0, pop, 0))
			return SK_DROP;
	} else {
		/* whole 64-byte blocks, the padding popped after: one loop
		 * short enough for the verifier (helpers may not write into
		 * sk_msg data)
		 */
		__u32 padded = (n + 63) & ~63u;

		if (bpf_msg_push_data(msg, 0, padded, 0) ||
		    bpf_msg_pull_data(msg, 0, padded, 0))
			return SK_DROP;
		d = (void *)(long)msg->data;
		e = (void *)(long)msg->data_end;
		for (i = 0; i < XPS_STOCK_REPLY_MAX / 64; i++) {
			__u64 *dst, *src;
			__u32 off = i * 64;

			if (off >= padded)
				break;
			if (d + off + 64 > e)
				return SK_DROP;
			dst = d + off;
			src = (__u64 *)(st->data + off);
			dst[0] = src[0];
			dst[1] = src[1];
			dst[2] = src[2];
			dst[3] = src[3];
			dst[4] = src[4];
			dst[5] = src[5];
			dst[6] = src[6];
			dst[7] = src[7];
		}
		/*
		 * The padding and the request behind the reply, in one pop
		 * after the push: the message never becomes empty, which
		 * 6.12's bpf_msg_pop_data() does not survive (it takes the
		 * data pointers of the first, pageless, element).
		 */
		if (padded - n + pop &&
		    bpf_msg_pop_data(msg, n, padded - n + pop, 0))
			return SK_DROP;
	}
	st->req_left = 0;
	conn->tx_tail++;
	/*
	 * The reply is written at write_seq: egress passes over it.  Only
	 * kernel replies may lie between what egress saw and write_seq
	 * (conn_may_answer() held when this reply was decided, and requests
	 * passed since are queued behind it).
	 */
	if (tp->write_seq - conn->eg_seq != conn->kr_bytes)
		xps__lose_count(conn);
	conn->kr_bytes += n;
	return SK_PASS;
}

/* Swap source and destination MAC and IP addresses of the packet. */
static __always_inline void swap_addrs(struct __sk_buff *skb, __u8 family,
				       __u32 l3)
{
	__u8 mac[ETH_ALEN];
	struct ethhdr eth;

	if (!bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth))) {
		__builtin_memcpy(mac, eth.h_dest, ETH_ALEN);
		__builtin_memcpy(eth.h_dest, eth.h_source, ETH_ALEN);
		__builtin_memcpy(eth.h_source, mac, ETH_ALEN);
		bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0);
	}
	if (family == AF_INET) {
		__u32 s4, d4;

		__u32 so = l3 + offsetof(struct iphdr, saddr);
		__u32 da = l3 + offsetof(struct iphdr, daddr);

		if (!bpf_skb_load_bytes(skb, so, &s4, 4) &&
		    !bpf_skb_load_bytes(skb, da, &d4, 4)) {
			bpf_skb_store_bytes(skb, so, &d4, 4, 0);
			bpf_skb_store_bytes(skb, da, &s4, 4, 0);
		}
	} else {
		__u8 s6[16], d6[16];

		if (!bpf_skb_load_bytes(skb, l3 + 8, s6, 16) &&
		    !bpf_skb_load_bytes(skb, l3 + 24, d6, 16)) {
			bpf_skb_store_bytes(skb, l3 + 8, d6, 16, 0);
			bpf_skb_store_bytes(skb, l3 + 24, s6, 16, 0);
		}
	}
}

/*
 * The native hook has no sk_msg, so answered writes are released here, on
 * segments that carry bytes the service wrote (the caller checks): a pure
 * ACK also leaves when the service has merely read a write, before
 * executing it, and a kernel reply decided before a write arrived may
 * still be leaving after the service read that write.
 */
static __always_inline void egress_release(struct __sk_buff *skb,
					   struct xps_conn *conn)
{
	struct xps_config *cfg = config();
	struct bpf_sock *bsk = skb->sk;
	struct tcp_sock___xps *tp;

	if (!cfg || cfg->backend_tcp != XPS_BACKEND_NATIVE || !bsk)
		return;
	tp = (struct tcp_sock___xps *)bpf_skc_to_tcp_sock(bsk);
	if (tp)
		release_writes(cfg, conn, tp);
}

/*
 * Counting the service's replies (docs/ordering.md).  Every segment the
 * connection sends passes here, in sequence order, before any qdisc:
 * bytes before conn->eg_seq were accounted for already (retransmissions);
 * the first conn->kr_bytes after it are replies from the kernel; the rest
 * are the service's, fed to the reply framing of the connection's
 * protocol, one byte at a time but for the data it can skip unread.
 */
#define XPS_EG_WIN	64
/* bpf_loop iterations per segment: a 64 KiB GSO segment of short values */
#define XPS_EG_STEPS	(1 << 18)

struct eg_walk {
	struct __sk_buff *skb;
	struct xps_conn *conn;
	__u32 off;		/* next skb offset to account for */
	__u32 end;
	__u32 woff;		/* next byte in win */
	__u32 wlen;		/* bytes in win */
	int lost;
	__u8 win[XPS_EG_WIN];
};

static long eg_step(__u32 i, void *ctx)
{
	struct eg_walk *w = ctx;
	struct xps_conn *conn = w->conn;
	struct xps_reply *rp = &conn->rp;
	__u32 left, k, nobody;
	int r;
	__u8 c;

	if (w->off >= w->end)
		return 1;
	left = w->end - w->off;
	if (rp->skip) {
		k = rp->skip < left ? rp->skip : left;
		rp->skip -= k;
		w->off += k;
		w->wlen = 0;
		if (rp->skip)
			return 0;
		r = xps_reply_skipped(rp);
	} else {
		if (w->woff >= w->wlen) {
			k = left < XPS_EG_WIN ? left : XPS_EG_WIN;
			barrier_var(k);
			if (k < 1 || k > XPS_EG_WIN)	/* only for the verifier */
				return 1;
			if (bpf_skb_load_bytes(w->skb, w->off, w->win, k)) {
				w->lost = 1;
				return 1;
			}
			w->wlen = k;
			w->woff = 0;
		}
		c = w->win[w->woff & (XPS_EG_WIN - 1)];
		w->woff++;
		w->off++;
		/* a reply begins that no request asked for */
		if (xps_reply_idle(rp) && conn->owed == conn->answered) {
			w->lost = 1;
			return 1;
		}
		nobody = conn->nobody >> (conn->answered & XPS_NOBODY_MASK);
		r = xps_reply_byte(rp, c, nobody & 1);
	}
	if (r == XPS_RB_ERR) {
		w->lost = 1;
		return 1;
	}
	if (r == XPS_RB_DONE)
		conn->answered++;
	return 0;
}

/*
 * The reply a handler asked for (xps_capture_reply()), when it is the
 * first reply in this segment and ends in it: the segment's service bytes
 * from its start, up to XPS_CAP_REPLY_MAX, go to the slot's capture ring;
 * user space finds where the reply ends.  Decided from what the walk
 * counted, not inside it: the walk's bpf_loop verifies only as long as
 * its state stays small.
 */
static __always_inline void capture_emit(struct __sk_buff *skb,
					 struct xps_conn *conn, __u64 cookie,
					 __u32 cap, __u32 start, __u32 end)
{
	__u32 len = end - start, slot = conn->slot, n;
	struct xps_cap_reply *rec;
	void *ring;

	ring = bpf_map_lookup_elem(&xps_caps, &slot);
	if (!ring)
		return;
	rec = bpf_ringbuf_reserve(ring, sizeof(*rec), 0);
	if (!rec)
		return;
	/*
	 * Only for the verifier: the length is read back from the record,
	 * a fresh scalar.  Used as a size straight from the offsets, it
	 * would make them precise back into the walk.
	 */
	rec->h.len = len < XPS_CAP_REPLY_MAX ? len : XPS_CAP_REPLY_MAX;
	n = *(volatile __u16 *)&rec->h.len;
	if (n < 1 || n > XPS_CAP_REPLY_MAX ||
	    bpf_skb_load_bytes(skb, start, rec->b, n)) {
		bpf_ringbuf_discard(rec, 0);
		return;
	}
	rec->h.cookie = cookie;
	rec->h.time_ns = bpf_ktime_get_ns();
	rec->h.reply = cap;
	rec->h.kind = XPS_CAP_REPLY;
	bpf_ringbuf_submit(rec, 0);
}

/*
 * Returns whether the segment carries bytes the service wrote and egress
 * had not seen (when the count is lost: whether it carries data at all).
 */
static __always_inline int egress_count(struct __sk_buff *skb,
					struct xps_conn *conn, __u64 cookie,
					const struct tcphdr *th, __u32 payload)
{
	struct eg_walk w = { .skb = skb, .conn = conn };
	__u32 seq, end, k, cap, first;
	int idle;

	if ((conn->flags & (XPS_CONN_UNCOUNTED | XPS_CONN_EGRESS)) !=
	    XPS_CONN_EGRESS)
		return 1;
	seq = bpf_ntohl(th->seq);
	end = seq + payload;
	if ((__s32)(seq - conn->eg_seq) > 0) {
		/* bytes were sent that egress never saw */
		xps__lose_count(conn);
		return 1;
	}
	if ((__s32)(end - conn->eg_seq) <= 0)
		return 0;	/* a retransmission */
	w.off = skb->len - (end - conn->eg_seq);
	w.end = skb->len;
	k = end - conn->eg_seq;
	if (k > conn->kr_bytes)
		k = conn->kr_bytes;
	conn->kr_bytes -= k;
	w.off += k;
	conn->eg_seq = end;
	if (w.off >= w.end)
		return 0;	/* nothing but kernel replies */
	first = conn->answered + 1;	/* the first reply starting here */
	idle = xps_reply_idle(&conn->rp);
	k = w.off;
	bpf_loop(XPS_EG_STEPS, eg_step, &w, 0);
	if (w.lost || w.off < w.end) {
		xps__lose_count(conn);
		return 1;
	}
	cap = conn->cap_reply;
	if (cap && cap == first && idle && (__s32)(conn->answered - cap) >= 0)
		capture_emit(skb, conn, cookie, cap, k, w.end);
	return 1;
}

/* The transport header offset of a TCP segment, 0 if it is not one. */
static __always_inline __u32 tcp_l4_off(struct __sk_buff *skb)
{
	__u32 l3 = sizeof(struct ethhdr);

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, l3, &ip, sizeof(ip)) ||
		    ip.protocol != IPPROTO_TCP)
			return 0;
		return l3 + ip.ihl * 4;
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, l3, &ip6, sizeof(ip6)) ||
		    ip6.nexthdr != IPPROTO_TCP)
			return 0;
		return l3 + sizeof(ip6);
	}
	return 0;
}

/*
 * Every segment a recorded TCP connection sends, on both backends: the
 * service's reply bytes are counted (egress_count()) and, natively,
 * answered writes released (egress_release()).
 *
 * Then RESET on the stock backend.  A stream verdict program can only pass,
 * drop or redirect, so the handler's RESET drops the request and marks the
 * connection; the next segment the socket sends (at the latest the delayed
 * ACK of that request) is turned into an RST for the client, and a mirrored
 * RST (seq = the socket's rcv_nxt, which the segment's ack_seq carries) is
 * injected on ingress so the server's socket is closed too.
 */
SEC("tc")
int xps_tc_egress(struct __sk_buff *skb)
{
	__u32 l3 = sizeof(struct ethhdr), l4, payload;
	struct xps_conn *conn;
	struct tcphdr th;
	__u16 old_flags, new_flags;
	__u64 cookie;
	__u8 family;

	cookie = bpf_get_socket_cookie(skb);
	if (!cookie)
		return TC_ACT_OK;
	conn = bpf_map_lookup_elem(&xps_conns, &cookie);
	if (!conn)
		return TC_ACT_OK;
	l4 = tcp_l4_off(skb);
	if (!l4 || bpf_skb_load_bytes(skb, l4, &th, sizeof(th)))
		return TC_ACT_OK;
	payload = skb->len - l4 - th.doff * 4;
	/* bytes the service wrote, not a bare ACK or a kernel reply
	 * (egress_release())
	 */
	if (payload && payload <= skb->len &&
	    egress_count(skb, conn, cookie, &th, payload) && conn->unacked)
		egress_release(skb, conn);
	if (!conn->reset_pending)
		return TC_ACT_OK;
	family = skb->protocol == bpf_htons(ETH_P_IP) ? AF_INET : AF_INET6;
	conn->reset_pending = 0;

	/* 16-bit word 6 of the TCP header holds data offset and flags */
	__builtin_memcpy(&old_flags, TCP_FLAGS_AT(&th), 2);

	/*
	 * Mirror: swap addresses, ports and seq/ack.  Swapping 32-bit
	 * aligned fields leaves the one's complement sums unchanged, so only
	 * the flag change needs a checksum update.
	 */
	{
		struct tcphdr m = th;

		m.source = th.dest;
		m.dest = th.source;
		m.seq = th.ack_seq;
		m.ack_seq = th.seq;
		m.fin = 0;
		m.syn = 0;
		m.psh = 0;
		m.ack = 0;
		m.urg = 0;
		m.rst = 1;
		__builtin_memcpy(&new_flags, TCP_FLAGS_AT(&m), 2);
		m.check = th.check;
		if (bpf_skb_store_bytes(skb, l4, &m, sizeof(m), 0) ||
		    bpf_l4_csum_replace(skb, l4 + XPS_TCPHDR_CSUM_OFF,
					old_flags, new_flags, 2))
			goto forward;
		swap_addrs(skb, family, l3);
		bpf_clone_redirect(skb, skb->ifindex, BPF_F_INGRESS);
		/* undo the mirror for the segment that goes to the client */
		swap_addrs(skb, family, l3);
		if (bpf_skb_load_bytes(skb, l4, &m, sizeof(m)))
			return TC_ACT_SHOT;
		th.check = m.check;
		if (bpf_skb_store_bytes(skb, l4, &th, sizeof(th), 0) ||
		    bpf_l4_csum_replace(skb, l4 + 16, new_flags, old_flags, 2))
			return TC_ACT_SHOT;
	}
forward:
	/* RST|ACK at the socket's snd_nxt: the client accepts it exactly */
	if (bpf_skb_load_bytes(skb, l4, &th, sizeof(th)))
		return TC_ACT_OK;
	__builtin_memcpy(&old_flags, TCP_FLAGS_AT(&th), 2);
	th.rst = 1;
	th.psh = 0;
	th.fin = 0;
	th.ack = 1;
	__builtin_memcpy(&new_flags, TCP_FLAGS_AT(&th), 2);
	bpf_skb_store_bytes(skb, l4 + XPS_TCPHDR_FLAGS_OFF, &new_flags, 2, 0);
	bpf_l4_csum_replace(skb, l4 + XPS_TCPHDR_CSUM_OFF, old_flags, new_flags,
			    2);
	return TC_ACT_OK;
}

/* ---- stock: TC ingress (UDP handlers, TCP drain) -------------------- */

/*
 * Draining: take the connection of this TCP segment out of the sockhash if
 * the service has nothing unread.  This runs before TCP sees the segment,
 * so the segment itself is queued on the plain socket path.
 */
static __always_inline void drain_tcp(struct __sk_buff *skb,
				      struct xps_config *cfg, __u32 l3,
				      __u32 l4, __u8 family, __u32 l4_len)
{
	struct bpf_sock_tuple tuple = {};
	struct tcp_sock___xps *tp;
	struct bpf_sock *sk;
	struct tcphdr th;
	__u64 cookie;
	__u32 tsz;

	if (bpf_ktime_get_ns() - cfg->drain_since_ns < XPS_DRAIN_GRACE_NS)
		return;
	if (bpf_skb_load_bytes(skb, l4, &th, sizeof(th)))
		return;
	/* only data segments: a request/response client sends one only
	 * after it got every answer it waits for
	 */
	if (l4_len <= th.doff * 4)
		return;
	if (family == AF_INET) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, l3, &ip, sizeof(ip)))
			return;
		tuple.ipv4.saddr = ip.saddr;
		tuple.ipv4.daddr = ip.daddr;
		tuple.ipv4.sport = th.source;
		tuple.ipv4.dport = th.dest;
		tsz = sizeof(tuple.ipv4);
	} else {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, l3, &ip6, sizeof(ip6)))
			return;
		__builtin_memcpy(tuple.ipv6.saddr, &ip6.saddr, 16);
		__builtin_memcpy(tuple.ipv6.daddr, &ip6.daddr, 16);
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
	__u32 l3 = sizeof(struct ethhdr), l4, slot;
	struct xps_pred_key key = {};
	struct xps_config *cfg;
	struct xps_run *run;
	struct udphdr uh;
	__u32 ulen;
	int sub, nested;

	cfg = config();
	if (!cfg || cfg->backend_udp != XPS_BACKEND_TC)
		return TC_ACT_OK;
	key.proto = IPPROTO_UDP;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, l3, &ip, sizeof(ip)))
			return TC_ACT_OK;
		if (ip.protocol == IPPROTO_TCP &&
		    (cfg->flags & XPS_CFG_DRAINING)) {
			l4 = ip.ihl * 4;
			drain_tcp(skb, cfg, l3, l3 + l4, AF_INET,
				  bpf_ntohs(ip.tot_len) - l4);
			return TC_ACT_OK;
		}
		if (ip.protocol != IPPROTO_UDP)
			return TC_ACT_OK;
		/* fragments go to the socket: only it can reassemble */
		if (ip.frag_off & bpf_htons(XPS_IP_FRAG_MASK))
			return TC_ACT_OK;
		key.family = AF_INET;
		set_v4(key.laddr, ip.daddr);
		set_v4(key.raddr, ip.saddr);
		l4 = l3 + ip.ihl * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, l3, &ip6, sizeof(ip6)))
			return TC_ACT_OK;
		if (ip6.nexthdr == IPPROTO_TCP &&
		    (cfg->flags & XPS_CFG_DRAINING)) {
			drain_tcp(skb, cfg, l3, l3 + sizeof(ip6), AF_INET6,
				  bpf_ntohs(ip6.payload_len));
			return TC_ACT_OK;
		}
		if (ip6.nexthdr != IPPROTO_UDP)
			return TC_ACT_OK;
		key.family = AF_INET6;
		__builtin_memcpy(key.laddr, &ip6.daddr, 16);
		__builtin_memcpy(key.raddr, &ip6.saddr, 16);
		l4 = l3 + sizeof(ip6);
	} else {
		return TC_ACT_OK;
	}
	if (bpf_skb_load_bytes(skb, l4, &uh, sizeof(uh)))
		return TC_ACT_OK;
	ulen = bpf_ntohs(uh.len);
	if (ulen < sizeof(uh) || l4 + ulen > skb->len)
		return TC_ACT_OK;
	key.lport = bpf_ntohs(uh.dest);
	key.rport = bpf_ntohs(uh.source);

	run = run_begin(&nested);
	if (!run)
		return TC_ACT_OK;
	if (pred_lookup(&key, &slot)) {
		xps__run_end(run);
		return TC_ACT_OK;
	}
	run->proto = IPPROTO_UDP;
	run->family = key.family;
	run->l3_off = l3;
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
