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
 * What a handler run decides, by the paper's names.  They are the numbers
 * of the patched kernel's serve verdicts (linux/bpf_serve.h; checked below
 * wherever that header was included first), which the native backend
 * returns as they are; the stock backends turn them into sockmap's and
 * TC's own.
 */
enum xps_verdict {
	XPS_PASS = 0,		/* the request goes to the socket */
	XPS_DROP = 1,		/* consumed, no reply */
	XPS_TX = 2,		/* consumed, answered from the kernel */
	XPS_RESET = 3,		/* the connection is reset */
};
#ifdef SERVE_VERDICT_MAX
_Static_assert((int)XPS_PASS == (int)SERVE_PASS &&
	       (int)XPS_DROP == (int)SERVE_DROP &&
	       (int)XPS_TX == (int)SERVE_TX &&
	       (int)XPS_RESET == (int)SERVE_RESET &&
	       (int)SERVE_VERDICT_MAX == (int)XPS_RESET,
	       "the XPS verdicts are the serve verdicts' numbers");
#endif

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

/*
 * Bits 8-15 of xps_slot.flags: the framing (enum xps_reply_proto) egress
 * applies to a connection of the slot from the service's first byte, for
 * protocols whose servers speak unprompted (XPS_REPLY_NATS).  Set by
 * libxps from the handler's xps_framing knob (bpf/api/xps.bpf.h); 0 for
 * request/reply protocols, whose framing the first counted request sets.
 */
#define XPS_SLOT_FRAMING_SHIFT	8
#define XPS_SLOT_FRAMING_MASK	(0xffu << XPS_SLOT_FRAMING_SHIFT)

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
 * Runs one CPU may have under way at once, one inside the other: a run in
 * process context (backlog processing, with softirqs enabled) and a
 * softirq's run that interrupts it (run_begin() in the framework).  The
 * run state and every per-CPU scratch map have one entry per level.
 */
#define XPS_RUN_LEVELS	2

/*
 * Per-CPU scratch the framework fills before tail-calling a handler; the
 * helpers in xps.bpf.h read it.  Valid only for the current run.
 */
struct xps_run {
	__u64 start_ns;
	__u64 cookie;		/* socket cookie (TCP), 0 otherwise */
	__u32 slot;
	__u32 payload_off;	/* L7 offset inside the skb */
	__u32 payload_len;
	__u32 l3_off;		/* TC: network header offset */
	__u32 l4_off;		/* TC: transport header offset */
	__u32 write_seq;	/* TCP: socket write_seq at run start */
	__u8 proto;
	__u8 family;
	__u8 may_consume;	/* 0: the service may still owe a reply */
	__u8 rewritten;		/* reply begun (XPS__REPLY_*) */
	__u8 active;		/* a run is under way in this entry (run_begin()) */
	__u8 level;		/* this entry's index, below XPS_RUN_LEVELS */
	__u8 inner;		/* entry 0: a run of level 1 is under way */
	__u8 held;		/* the run may be preempted: never stale */
	/*
	 * Requests that start in this segment, as the handler counted them
	 * (xps_request()); on PASS the connection owes that many replies.
	 */
	__u32 reqs;
	__u32 reqs_nobody;	/* bit i: request i's reply has no body (HEAD) */
	__u32 counted;		/* enum xps_count */
	__u32 task;		/* held: the pid of the task running it */
};

/* Whether the handler counted the requests of a segment (struct xps_run). */
enum xps_count {
	XPS_COUNT_NONE = 0,	/* it did not say: a PASS loses count */
	XPS_COUNT_KNOWN = 1,	/* reqs is exact */
	XPS_COUNT_LOST = 2,	/* it could not tell (malformed, too big...) */
};

/*
 * Reply framing the framework understands at egress, to count the replies
 * a service writes against the requests it was passed (docs/ordering.md).
 * A handler names its protocol with XPS_REPLY_PROTO.
 */
enum xps_reply_proto {
	XPS_REPLY_NONE = 0,	/* not countable: a PASS ends the fast path */
	XPS_REPLY_RESP = 1,	/* Redis RESP2 */
	XPS_REPLY_MEMCACHED = 2, /* memcached text protocol */
	XPS_REPLY_HTTP = 3,	/* HTTP/1.x responses */
	XPS_REPLY_CLUSTER = 4,	/* Redis Cluster bus messages */
	XPS_REPLY_LINE = 5,	/* one line ending in '\n' per reply */
	/*
	 * NATS route protocol (bpf/proto/nats.bpf.h): messages in both
	 * directions, none of them a reply to a request of the other side;
	 * framed from the first byte, never counted (docs/ordering.md).
	 */
	XPS_REPLY_NATS = 6,
};

/* Where the egress reply parser is in the service's byte stream. */
struct xps_reply {
	__u64 num;		/* number (or word) being read */
	__u64 skip;		/* bytes to pass over unread (bulk data, bodies) */
	__u32 pending;		/* per protocol: values left, line class, status */
	__u16 pos;		/* bytes of the current line or token */
	__u8 proto;		/* enum xps_reply_proto */
	__u8 st;		/* parser state */
	__u8 aux;		/* per protocol: token index, header match */
	__u8 flags;
	__u8 pad[6];
};

#define XPS_CONN_WB	4	/* write buckets a connection keeps apart */

/*
 * Write-through (docs/coherence.md, "Writes committed by the kernel"): the
 * write a kv-cache handler (bpf/lib/kvcache.bpf.h) put the values of in
 * its context's data map, pending, and what commits them.  The egress step
 * clears the values' pending marks when the service's reply number @reply
 * begins with the @expect_len bytes of @expect (Redis "+OK\r\n",
 * memcached "STORED\r\n"), and deletes them on any other reply: only an
 * entry still pending with a record's stamps, in the data map of the
 * context at @slot while xps_config.generation is @gen.  One write per
 * connection at a time; a write of several keys (MSET) has one record per
 * key.  @seq is odd while the handler writes the rest: egress commits
 * nothing from a copy it did not read whole between two even, equal
 * values of it.
 */
#define XPS_CONN_WT_KEYS	4	/* records of one write, at most */

struct xps_conn_wt {
	__u32 seq;
	__u32 reply;
	__u32 slot;
	__u32 gen;
	__u64 expect;		/* the bytes, little end first */
	__u32 expect_len;	/* 1 to 8 */
	__u32 n;		/* records, 1 to XPS_CONN_WT_KEYS */
	struct xps_conn_wt_rec {
		__u64 hash;	/* the key's (struct xps_kv_hkey) */
		__u64 version;	/* the pending value's stamps */
		__u32 cgen;
		__u32 pad;
	} rec[XPS_CONN_WT_KEYS];
};
/*
 * HTTP: replies whose request was a HEAD (no body) are told apart for the
 * next XPS_NOBODY_WINDOW outstanding replies (bits of a __u32: struct
 * xps_conn.nobody, struct xps_run.reqs_nobody); more is a lost count.
 */
#define XPS_NOBODY_WINDOW	32
#define XPS_NOBODY_MASK		(XPS_NOBODY_WINDOW - 1)

/* Per-connection state, keyed by socket cookie (both backends). */
struct xps_conn {
	__u32 slot;		/* slot the predicate table gave at @gen */
	__u32 gen;		/* xps_config.generation of that lookup */
	__u32 flags;		/* enum xps_conn_flags */
	__u32 reset_pending;	/* RESET requested, RST not yet sent */
	__u32 tx_head;		/* replies stashed (producer: stream verdict) */
	__u32 tx_tail;		/* replies sent (consumer: sk_msg) */
	__u32 unacked;		/* writes passed, not yet answered (xps_note_write) */
	struct xps_conn_hstate {
		__u32 flags;	/* the handler's, see xps_conn_state() */
		__u32 skip;	/* payload bytes still to pass unparsed */
		/*
		 * bpf_ktime_get_ns() >> 20 (about a millisecond) when the
		 * handler last passed a request here: a kv-cache that
		 * answers a connection's reads still passes one now and then,
		 * so that a server closing idle connections sees it alive
		 */
		__u32 pass_t;
		__u32 hpad;
	} hs;
	/*
	 * Reply ordering (docs/ordering.md): the kernel may answer only
	 * while @answered == @owed, the egress parser is between replies
	 * and every byte the socket was given to send up to write_seq is
	 * either accounted for at egress or a kernel reply (@kr_bytes).
	 */
	__u32 owed;		/* requests passed to the service */
	__u32 answered;		/* complete replies the service sent */
	__u32 eg_seq;		/* first stream byte egress has not seen */
	__u32 kr_bytes;		/* kernel reply bytes written at eg_seq */
	__u32 nobody;		/* HTTP: bit (n % XPS_NOBODY_WINDOW): no body */
	__u32 rx_seq;		/* stock: first byte the verdict has not seen */
	struct xps_reply rp;
	/*
	 * Reply capture (xps_capture_reply()): the number of the service's
	 * reply egress copies out for user space (the reply after which
	 * @answered equals it), 0 when none was asked for.
	 */
	__u32 cap_reply;
	/*
	 * Its writes not yet answered, by key (struct xps_wpend): the
	 * buckets it counted them in, how many in each (0: a free entry),
	 * and how many it counted as writes of every key.
	 */
	__u32 wovf;
	__u16 wb[XPS_CONN_WB];
	__u32 wbc[XPS_CONN_WB];
	/*
	 * Write-through (struct xps_conn_wt): @wt.reply while egress has
	 * not seen that reply, 0 when no write's values are pending.
	 */
	__u32 wt_reply;
	__u32 wt_pad;
	struct xps_conn_wt wt;
};

/*
 * Unanswered writes by key (xps_note_write_key() in bpf/lib/coherence.bpf.h), for
 * the handlers that learn values from the server's replies: a GET of a
 * key may be learned while no write of its bucket, and no write of every
 * key (ovf), is unanswered, where xps_config.unacked_writes would wait
 * for every write anywhere (docs/coherence.md).
 */
#define XPS_WPEND_BUCKETS	4096	/* a power of two */

struct xps_wpend {
	__u64 ovf;			/* writes of every key, unanswered */
	__u64 b[XPS_WPEND_BUCKETS];	/* by key hash % XPS_WPEND_BUCKETS */
};

/*
 * Reply capture.  A handler asks for the service's reply to a request it
 * passes (xps_capture_reply() in bpf/lib/coherence.bpf.h): its ARM record, with a
 * tag of its own, goes into the ring of its slot (xps_caps) before the
 * request reaches the service; when egress counts that reply
 * (docs/ordering.md), and it is the first reply of a segment and ends in
 * it, a REPLY record follows with the segment's service bytes from the
 * reply's start (at most XPS_CAP_REPLY_MAX): user space finds where the
 * reply ends.  User space pairs the two by cookie and reply number
 * (libxps's kv-cache learns values this way, docs/coherence.md).
 */
#define XPS_CAP_TAG_MAX		320
#define XPS_CAP_REPLY_MAX	1536
#define XPS_CAP_RING_SIZE	(1 << 20)

enum xps_cap_kind {
	XPS_CAP_ARM = 1,
	XPS_CAP_REPLY = 2,
};

struct xps_cap_hdr {
	__u64 cookie;		/* the connection */
	__u64 time_ns;		/* bpf_ktime_get_ns() when written */
	__u32 reply;		/* the reply's number on the connection */
	__u16 kind;		/* enum xps_cap_kind */
	__u16 len;		/* bytes of tag or reply */
};

struct xps_cap_arm {
	struct xps_cap_hdr h;
	__u8 tag[XPS_CAP_TAG_MAX];
};

struct xps_cap_reply {
	struct xps_cap_hdr h;
	__u8 b[XPS_CAP_REPLY_MAX];
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
	 * The framework lost count of the replies the service owes (bytes
	 * it never saw, a handler that cannot count, a reply it cannot
	 * frame): the connection stays on the slow path until it closes.
	 */
	XPS_CONN_UNCOUNTED = 1 << 0,
	/* Slot lookup said no handler: PASS without running anything. */
	XPS_CONN_NO_SLOT = 1 << 1,
	/* eg_seq is set (from snd_nxt when the connection was accepted). */
	XPS_CONN_EGRESS = 1 << 2,
	/* rx_seq is set (by the connection's first stream verdict run). */
	XPS_CONN_RX_SEQ = 1 << 3,
};

/*
 * Why connections lost count (XPS_CONN_UNCOUNTED): the index in the
 * per-CPU array xps_lost, one count per connection, under the reason it
 * lost it for (it never gets it back).  What "xpsctl status" shows.
 */
enum xps_lost_why {
	XPS_LOST_NO_COUNT,	/* a handler passed bytes it did not count */
	XPS_LOST_FRAMING,	/* a handler of another protocol's framing */
	XPS_LOST_WINDOW,	/* HTTP: too many replies owed */
	XPS_LOST_NESTED,	/* a run found another under way on its CPU */
	XPS_LOST_NO_RUN,	/* no handler ran (no slot, a failed tail call) */
	XPS_LOST_HOOK,		/* native: the hook said the socket is lost */
	XPS_LOST_EG_GAP,	/* egress: bytes sent that it never saw */
	XPS_LOST_EG_FRAME,	/* egress: a reply it cannot frame */
	XPS_LOST_STOCK_TX,	/* stock: the service wrote before a reply */
	XPS_LOST_WHY_MAX,
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
	 * data (see xps_note_write() in bpf/lib/coherence.bpf.h and docs/coherence.md):
	 * TCP write requests passed to the service and not answered yet.
	 * A filler fetches nothing while it is not 0.
	 */
	__u64 unacked_writes;
	/*
	 * Accepted TCP connections a context's predicate matched and
	 * xps_sockops could not record (xps_conns or the sockhash full):
	 * connections XPS does not see, made after the context existed.
	 */
	__u64 unrecorded;
	/*
	 * TCP segments of recorded connections passed to a service without
	 * running its handler (a nested run, a handler that cannot be
	 * reached: XPS_LOST_NESTED, XPS_LOST_NO_RUN).  Each also counts as
	 * an unanswered write of every key on its connection; a cache
	 * handler drops its whole cache at its next run after this moves
	 * (xps_kv_unseen() in bpf/lib/kvcache.bpf.h).
	 */
	__u64 unseen;
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
_Static_assert(sizeof(struct xps_cap_hdr) == 24, "xps_cap_hdr layout");
/*
 * The server behind a slot (xps_servers, one __u32 by slot): when a
 * listening TCP socket on the port of the slot's predicate closes (TCP or
 * UDP predicate: a server's UDP socket goes with it), the
 * framework sets XPS_SERVER_GONE and adds XPS_SERVER_CLOSE_ONE, in the
 * kernel, before the port can be bound again.  A handler answers nothing
 * while its slot's server is gone (xps_server_gone()): a server started
 * on the port afterwards has data of its own.  The slot's filler clears
 * the bit once it has dropped what it cached (xps_kvcache__server_back()),
 * with a compare-and-swap, so that a close that came meanwhile stays
 * seen.  The map is mappable; libxps zeroes a slot's word when it
 * creates a context there.
 */
#define XPS_SERVER_GONE		1u
#define XPS_SERVER_CLOSE_ONE	2u

_Static_assert(sizeof(struct xps_pred_key) == 40, "xps_pred_key layout");
_Static_assert(sizeof(struct xps_pred_value) == 8, "xps_pred_value layout");
_Static_assert(sizeof(struct xps_pred_masks) == 36, "xps_pred_masks layout");
_Static_assert(sizeof(struct xps_slot) == 8, "xps_slot layout");
_Static_assert(sizeof(struct xps_comp_key) == 16, "xps_comp_key layout");
_Static_assert(sizeof(struct xps_comp_value) == 8, "xps_comp_value layout");
_Static_assert(sizeof(struct xps_handler_stats) == 64, "xps_handler_stats layout");
_Static_assert(sizeof(struct xps_ctx_info) == 264, "xps_ctx_info layout");
_Static_assert(sizeof(struct xps_run) == 64, "xps_run layout");
_Static_assert(sizeof(struct xps_reply) == 32, "xps_reply layout");
_Static_assert(sizeof(struct xps_conn_wt) == 128, "xps_conn_wt layout");
_Static_assert(sizeof(struct xps_conn) == 272, "xps_conn layout");
_Static_assert(sizeof(struct xps_config) == 48, "xps_config layout");

#endif /* __XPS_ABI_H */
