/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Layouts shared by the XPS extension framework (bpf/), handler objects and
 * libxps.  Plain C with fixed-width types so that clang -target bpf and the
 * host compiler agree byte for byte; every layout is pinned by the
 * _Static_asserts at the end of this file.
 */
#ifndef __XPS_ABI_H
#define __XPS_ABI_H

#include <linux/types.h>

/* Number of handler slots: contexts and sub-contexts share this space. */
#define XPS_MAX_SLOTS		64
/* Predicate table entries (5-tuple keys with wildcards). */
#define XPS_MAX_PREDICATES	1024
/* Composability map entries (L7 value -> sub-handler). */
#define XPS_MAX_COMP		1024
/* Connections the stock TCP backend tracks at once. */
#define XPS_MAX_CONNS		65536
/* Largest L7 value a composability context may select on. */
#define XPS_COMP_MAX_LEN	8
#define XPS_NAME_LEN		32
#define XPS_OBJ_PATH_LEN	160

/* Backends.  A handler object is told which one runs it (xps_backend). */
enum xps_backend {
	XPS_BACKEND_NATIVE = 1,		/* patched kernel hook */
	XPS_BACKEND_SOCKMAP = 2,	/* stock TCP: sockhash stream verdict */
	XPS_BACKEND_TC = 3,		/* stock UDP: TC ingress, reply bounced */
};

/*
 * Predicate key.  Addresses are IPv6; IPv4 is stored v4-mapped
 * (::ffff:a.b.c.d).  Fields whose bit is clear in @mask are wildcards and
 * are zero in the key; the framework tries the masks in use from the most
 * specific to the least specific, so the most specific match wins.
 */
enum xps_pred_field {
	XPS_PRED_LPORT = 1 << 0,
	XPS_PRED_LADDR = 1 << 1,
	XPS_PRED_FAMILY = 1 << 2,
	XPS_PRED_RADDR = 1 << 3,
	XPS_PRED_RPORT = 1 << 4,
	XPS_PRED_ALL = (1 << 5) - 1,
};
#define XPS_PRED_NMASKS 32

struct xps_pred_key {
	__u8 proto;		/* IPPROTO_TCP or IPPROTO_UDP, never wild */
	__u8 family;		/* AF_INET or AF_INET6 */
	__u8 mask;		/* enum xps_pred_field bits */
	__u8 pad;
	__u16 lport;		/* host byte order */
	__u16 rport;		/* host byte order */
	__u8 laddr[16];
	__u8 raddr[16];
};

struct xps_pred_value {
	__u32 slot;
	__u32 pad;
};

/* Masks in use, most specific first.  One entry (index 0) per protocol. */
struct xps_pred_masks {
	__u32 count;
	__u8 masks[XPS_PRED_NMASKS];
};

enum xps_slot_flags {
	XPS_SLOT_ACTIVE = 1 << 0,	/* handler installed, predicate live */
	XPS_SLOT_COMP = 1 << 1,		/* composability context, no handler */
	XPS_SLOT_SUB = 1 << 2,		/* sub-context of a comp context */
};

/* Per-slot configuration read by the framework on every run. */
struct xps_slot {
	__u32 flags;
	__u16 comp_offset;	/* XPS_SLOT_COMP: where the L7 value starts */
	__u8 comp_len;		/* XPS_SLOT_COMP: its length, 1..8 */
	__u8 proto;
};

struct xps_comp_key {
	__u32 slot;		/* the composability context */
	__u32 pad;
	__u64 value;		/* comp_len payload bytes, zero-extended */
};

struct xps_comp_value {
	__u32 slot;		/* the sub-context */
	__u32 pad;
};

/* Per-CPU, per-slot handler counters (PERCPU_ARRAY indexed by slot). */
struct xps_handler_stats {
	__u64 runs;
	__u64 tx;
	__u64 drop;
	__u64 pass;
	__u64 reset;
	__u64 errors;
	__u64 run_ns;		/* framework + handler time, summed */
	__u64 tx_bytes;
};

/*
 * What the control plane knows about a slot, kept in a map so that every
 * process (xpsctl, daemons) sees the same contexts.
 */
struct xps_ctx_info {
	char name[XPS_NAME_LEN];
	char obj_path[XPS_OBJ_PATH_LEN];
	__u32 flags;		/* enum xps_slot_flags */
	__u32 parent;		/* XPS_SLOT_SUB: the comp context's slot */
	__u64 comp_value;	/* XPS_SLOT_SUB: the value it answers */
	__u32 backend;		/* enum xps_backend */
	__u32 owner_pid;	/* process that created the context */
	__u64 created_ns;	/* CLOCK_REALTIME */
	struct xps_pred_key pred;
};

/*
 * Per-CPU scratch the framework fills before tail-calling a handler; the
 * helpers in xps.bpf.h read it.  Valid only for the current run.
 */
struct xps_run {
	__u64 start_ns;
	__u64 cookie;		/* socket cookie (TCP stock), 0 otherwise */
	__u32 slot;
	__u32 payload_off;	/* L7 offset inside the skb */
	__u32 payload_len;
	__u32 l3_off;		/* TC: network header offset */
	__u32 l4_off;		/* TC: transport header offset */
	__u32 write_seq;	/* TCP stock: socket write_seq at run start */
	__u8 proto;
	__u8 family;
	__u8 may_consume;	/* 0: slow-path work may be outstanding */
	__u8 rewritten;		/* payload changed: PASS is no longer allowed */
	__u32 active;		/* a run is under way on this CPU (run_begin()) */
};

/* Stock TCP backend: per-connection state, keyed by socket cookie. */
struct xps_conn {
	__u32 slot;		/* slot the predicate table gave at @gen */
	__u32 gen;		/* xps_config.generation of that lookup */
	__u32 flags;		/* enum xps_conn_flags */
	__u32 pass_write_seq;	/* write_seq when the last PASS happened */
	__u32 reset_pending;	/* RESET requested, RST not yet sent */
	__u32 tx_head;		/* replies stashed (producer: stream verdict) */
	__u32 tx_tail;		/* replies sent (consumer: sk_msg) */
	__u32 unacked;		/* writes passed, not yet answered (xps_note_write) */
	struct xps_conn_hstate {
		__u32 flags;	/* the handler's, see xps_conn_state() */
		__u32 skip;	/* payload bytes still to pass unparsed */
	} hs;
};

/*
 * Stock TCP replies.  sockmap charges a redirected skb to copied_seq with
 * its length after the program ran (tcp_eat_skb), so the request is
 * redirected unchanged and the sk_msg program replaces it on the way out
 * (sent by the psock's kworker, which tells it from the service's own
 * writes) with the reply the handler built in the connection's next slot.
 * Slots are used in order (xps_conn tx_head/tx_tail); when all are waiting
 * for the kworker, the handler passes.
 */
#define XPS_STOCK_REPLY_MAX	16384
#define XPS_STASH_SLOTS		2	/* a power of two */

struct xps_stash_slot {
	__u32 len;		/* reply length */
	__u32 req_left;		/* request bytes the kworker has still to send */
	__u8 data[2 * XPS_STOCK_REPLY_MAX]; /* 2x: offsets stay in bounds */
};

struct xps_stash {
	struct xps_stash_slot slot[XPS_STASH_SLOTS];
};

enum xps_conn_flags {
	/*
	 * A PASS happened and the service has not both read everything and
	 * written since: a reply from the kernel could overtake its answer.
	 */
	XPS_CONN_SLOW_PENDING = 1 << 0,
	/* Slot lookup said no handler: PASS without running anything. */
	XPS_CONN_NO_SLOT = 1 << 1,
};

/* Framework-wide knobs, ARRAY index 0. */
struct xps_config {
	__u32 backend_tcp;	/* enum xps_backend */
	__u32 backend_udp;
	__u32 generation;	/* bumped on every predicate/slot change */
	__u32 flags;		/* enum xps_config_flags */
	__u64 drain_since_ns;	/* XPS_CFG_DRAINING: bpf_ktime_get_ns() base */
	/*
	 * Cache coherence for handlers that serve a copy of the service's
	 * data (see xps_note_write() in xps.bpf.h and docs/coherence.md):
	 * every write request passed bumps write_epoch and counts as
	 * unacked until the service answers it.
	 */
	__u64 write_epoch;
	__u64 unacked_writes;
};

enum xps_config_flags {
	XPS_CFG_TC_INGRESS = 1 << 0,	/* stock UDP programs attached */
	XPS_CFG_TC_EGRESS = 1 << 1,	/* stock TCP RESET completion attached */
	/*
	 * Stock TCP: no TCP context is left but connections are still in the
	 * sockhash.  Removing a socket from a sockhash frees what its psock
	 * holds (passed bytes not yet read, replies not yet sent), so TC
	 * ingress removes each connection at its next data segment, once the
	 * service has read everything and the last reply had time to leave.
	 */
	XPS_CFG_DRAINING = 1 << 2,
};

/* How long after draining starts connections begin to leave the sockhash. */
#define XPS_DRAIN_GRACE_NS	(200 * 1000 * 1000ULL)

/* Stock backend: interfaces the TC programs were attached to. */
#define XPS_MAX_TC_IFS 64

enum xps_tc_if_flags {
	XPS_TCIF_INGRESS = 1 << 0,	/* xps_tc_ingress attached */
	XPS_TCIF_EGRESS = 1 << 1,	/* xps_tc_egress attached */
	XPS_TCIF_OWN_QDISC = 1 << 2,	/* libxps created the clsact qdisc */
};

struct xps_tc_if {
	__u32 ifindex;
	__u32 flags;
};

_Static_assert(sizeof(struct xps_stash_slot) == 8 + 2 * XPS_STOCK_REPLY_MAX,
	       "xps_stash_slot layout");
_Static_assert(sizeof(struct xps_tc_if) == 8, "xps_tc_if layout");
_Static_assert(sizeof(struct xps_pred_key) == 40, "xps_pred_key layout");
_Static_assert(sizeof(struct xps_pred_value) == 8, "xps_pred_value layout");
_Static_assert(sizeof(struct xps_pred_masks) == 36, "xps_pred_masks layout");
_Static_assert(sizeof(struct xps_slot) == 8, "xps_slot layout");
_Static_assert(sizeof(struct xps_comp_key) == 16, "xps_comp_key layout");
_Static_assert(sizeof(struct xps_comp_value) == 8, "xps_comp_value layout");
_Static_assert(sizeof(struct xps_handler_stats) == 64, "xps_handler_stats layout");
_Static_assert(sizeof(struct xps_ctx_info) == 264, "xps_ctx_info layout");
_Static_assert(sizeof(struct xps_run) == 48, "xps_run layout");
_Static_assert(sizeof(struct xps_conn) == 40, "xps_conn layout");
_Static_assert(sizeof(struct xps_config) == 40, "xps_config layout");

#endif /* __XPS_ABI_H */
