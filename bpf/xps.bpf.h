/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xps.bpf.h: the header for XPS handler authors.
 *
 * A handler is one BPF program in SEC("xps") taking the request as a
 * struct __sk_buff and returning what one of xps_tx(), xps_drop(),
 * xps_pass() or xps_reset() returns:
 *
 *	XPS_DATA_MAP(struct my_key, struct my_value, 4096);
 *
 *	SEC("xps")
 *	int my_handler(struct __sk_buff *skb)
 *	{
 *		__u8 buf[16];
 *
 *		if (xps_load(skb, 0, buf, sizeof(buf)))
 *			return xps_pass(skb);
 *		...
 *		if (xps_store(skb, 0, reply, reply_len) ||
 *		    xps_resize(skb, reply_len))
 *			return xps_pass(skb);
 *		return xps_tx(skb);
 *	}
 *
 * The same object runs on every backend: libxps sets xps_backend before it
 * loads the object, and the verifier prunes the branches of the other
 * backends, so helpers that only exist for one program type never reach it.
 * Handlers must not touch the packet through skb->data or bpf_skb_* helpers
 * directly: payload offsets differ per backend.
 *
 * A TCP handler that may TX on a connection where it also passes requests
 * names its reply framing before including this header, and counts, with
 * xps_request(), every request that starts in the segment it was given
 * (docs/ordering.md):
 *
 *	#define XPS_REPLY_PROTO XPS_REPLY_RESP
 *	#include "xps.bpf.h"
 *
 * The framework counts the replies the service writes against the
 * requests it was passed, and lets a handler answer only while the
 * service owes nothing on the connection.  A handler that does not count
 * still works: after its first PASS on a connection, that connection stays
 * on the slow path.
 *
 * The verifier must see every variable length given to xps_load() and
 * xps_store() bounded to [1, size of the buffer] on the very register it is
 * passed in.  clang tends to fold such checks into earlier ones; write
 *
 *	barrier_var(len);
 *	if (len < 1 || len > sizeof(buf))
 *		return xps_pass(skb);
 *
 * right before the call.
 */
#ifndef __XPS_BPF_H
#define __XPS_BPF_H

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include <linux/xps.h>
#include <xps/abi.h>

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif

/* sockmap verdicts (enum sk_action) */
#define XPS__SK_DROP 0
#define XPS__SK_PASS 1

#ifndef XPS_REPLY_PROTO
#define XPS_REPLY_PROTO XPS_REPLY_NONE
#endif

/* Set by libxps before load; never written at run time. */
const volatile __u32 xps_backend = XPS_BACKEND_NATIVE;

/*
 * Framework maps a handler shares.  libbpf reuses the instances the
 * framework pinned under /sys/fs/bpf/xps (pin by name), so the definitions
 * here must stay identical to the framework's.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xps_run);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_run SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct xps_handler_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, XPS_MAX_CONNS);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_sockhash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XPS_MAX_CONNS);
	__type(key, __u64);
	__type(value, struct xps_conn);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xps_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_config SEC(".maps");

/*
 * Stock TCP: per-connection reply slots (see struct xps_stash), created at
 * a connection's first reply from a zeroed template, removed at close.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XPS_MAX_CONNS);
	__type(key, __u64);
	__type(value, struct xps_stash);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_stash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xps_stash);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_stash_zero SEC(".maps");

/*
 * XPS_DATA_MAP() declares the handler's data map (the values it serves,
 * filled through xps_put_data() and friends) and the per-key access
 * counters behind xps_get_stats().  Both belong to the context: libxps pins
 * them under /sys/fs/bpf/xps/ctx/<name>/.
 */
#define XPS_DATA_MAP(key_type, value_type, entries)			\
	struct {							\
		__uint(type, BPF_MAP_TYPE_HASH);			\
		__uint(max_entries, entries);				\
		__type(key, key_type);					\
		__type(value, value_type);				\
		__uint(map_flags, BPF_F_NO_PREALLOC);			\
	} xps_data SEC(".maps");					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);		\
		__uint(max_entries, entries);				\
		__type(key, key_type);					\
		__type(value, __u64);					\
	} xps_keystats SEC(".maps")

/*
 * XPS_MISS_QUEUE(): keys the handler looked up and did not find, for a
 * filler (daemons/) to fetch from the service; the oldest are dropped when
 * it is full.  XPS_STATE_MAP(): one value of handler-wide state shared
 * with the control plane, mapped by the filler, which changes it only with
 * atomic operations (the handler updates it at the same time).  Both
 * belong to the context like the data map.
 */
#define XPS_MISS_QUEUE(key_type, entries)				\
	struct {							\
		__uint(type, BPF_MAP_TYPE_QUEUE);			\
		__uint(max_entries, entries);				\
		__type(value, key_type);				\
	} xps_misses SEC(".maps")

#define xps_note_miss(key) bpf_map_push_elem(&xps_misses, key, BPF_EXIST)

/*
 * XPS_VERSION_MAP(): per-key versions for cache coherence, written by the
 * handler only.  A write bumps its keys' versions (xps_version_bump()); a
 * filler stamps a value with the version it read before fetching it, and
 * the handler serves a value only while its stamp is the key's current
 * version (docs/coherence.md).  A key never written has version 0.
 */
#define XPS_VERSION_MAP(key_type, entries)				\
	struct {							\
		__uint(type, BPF_MAP_TYPE_HASH);			\
		__uint(max_entries, entries);				\
		__type(key, key_type);					\
		__type(value, __u64);					\
		__uint(map_flags, BPF_F_NO_PREALLOC);			\
	} xps_versions SEC(".maps")

/* 0, or -1 when the key cannot get a version (the map is full). */
#define xps_version_bump(key)						\
	({								\
		__u64 *__v = bpf_map_lookup_elem(&xps_versions, key);	\
		__u64 __one = 1;					\
		int __r = 0;						\
		if (__v)						\
			__sync_fetch_and_add(__v, 1);			\
		else if (bpf_map_update_elem(&xps_versions, key, &__one, \
					     BPF_NOEXIST))		\
			__r = -1;					\
		__r;							\
	})

#define xps_version_get(key)						\
	({								\
		__u64 *__v = bpf_map_lookup_elem(&xps_versions, key);	\
		__v ? *__v : 0;						\
	})

#define XPS_STATE_MAP(value_type)					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_ARRAY);			\
		__uint(max_entries, 1);					\
		__type(key, __u32);					\
		__type(value, value_type);				\
		__uint(map_flags, BPF_F_MMAPABLE);			\
	} xps_state SEC(".maps")

static __always_inline struct xps_run *xps__run(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xps_run, &zero);
}

/* Payload length of the request as the framework saw it. */
static __always_inline __u32 xps_len(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	return run ? run->payload_len : 0;
}

/* Copy @len payload bytes at @off into @buf.  0 or negative errno. */
static __always_inline int xps_load(struct __sk_buff *skb, __u32 off,
				    void *buf, __u32 len)
{
	struct xps_run *run = xps__run();

	if (!run)
		return -2;
	return bpf_skb_load_bytes(skb, run->payload_off + off, buf, len);
}

/*
 * Write @len bytes at payload offset @off.  Refused (-EBUSY) when the
 * request may not be consumed (slow-path work outstanding on the
 * connection): the handler must then PASS the untouched request.
 */
/*
 * Stock TCP: the slot the current reply goes to, NULL when every slot of
 * the connection still waits for the kworker.  The first write starts the
 * reply as a copy of the request, so that a handler sees the same in-place
 * semantics as on the other backends (bytes it does not overwrite are the
 * request's).
 */
static __always_inline struct xps_stash_slot *
xps__reply_begin(struct __sk_buff *skb, struct xps_run *run)
{
	struct xps_stash_slot *slot;
	struct xps_conn *conn;
	struct xps_stash *st;
	__u32 n, zero = 0;
	void *tmpl;

	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	if (!conn || conn->tx_head - conn->tx_tail >= XPS_STASH_SLOTS)
		return NULL;
	st = bpf_map_lookup_elem(&xps_stash, &run->cookie);
	if (!st) {
		tmpl = bpf_map_lookup_elem(&xps_stash_zero, &zero);
		if (!tmpl || bpf_map_update_elem(&xps_stash, &run->cookie,
						 tmpl, BPF_NOEXIST))
			return NULL;
		st = bpf_map_lookup_elem(&xps_stash, &run->cookie);
		if (!st)
			return NULL;
	}
	slot = &st->slot[conn->tx_head & (XPS_STASH_SLOTS - 1)];
	if (run->rewritten)
		return slot;
	n = run->payload_len;
	barrier_var(n);
	if (n > XPS_STOCK_REPLY_MAX)
		return NULL;
	slot->len = n;
	if (n >= 1 && bpf_skb_load_bytes(skb, 0, slot->data, n))
		return NULL;
	run->rewritten = 1;
	return slot;
}

static __always_inline int xps_store(struct __sk_buff *skb, __u32 off,
				     const void *buf, __u32 len)
{
	struct xps_run *run = xps__run();
	struct xps_stash_slot *rb;

	if (!run || !run->may_consume)
		return -16;
	if (xps_backend != XPS_BACKEND_SOCKMAP) {
		run->rewritten = 1;
		return bpf_skb_store_bytes(skb, run->payload_off + off, buf,
					   len, 0);
	}
	rb = xps__reply_begin(skb, run);
	if (!rb)
		return -7;
	barrier_var(off);
	barrier_var(len);
	/* only for the verifier: data[] is twice the largest reply */
	if (off >= XPS_STOCK_REPLY_MAX || len > XPS_STOCK_REPLY_MAX)
		return -7;
	if (off + len > rb->len)
		return -22;
	return bpf_probe_read_kernel(rb->data + off, len, buf);
}

/*
 * Set the payload length of the reply (grow or shrink).  Bytes a grow adds
 * are undefined until written.
 */
static __always_inline int xps_resize(struct __sk_buff *skb, __u32 len)
{
	struct xps_run *run = xps__run();
	struct xps_stash_slot *rb;
	int err;

	if (!run || !run->may_consume)
		return -16;
	if (xps_backend == XPS_BACKEND_SOCKMAP) {
		rb = xps__reply_begin(skb, run);
		if (!rb || len > XPS_STOCK_REPLY_MAX)
			return -7;
		rb->len = len;
		return 0;
	}
	run->rewritten = 1;
	err = bpf_skb_change_tail(skb, run->payload_off + len, 0);
	if (!err)
		run->payload_len = len;
	return err;
}

/* Whether a TX/DROP/RESET of this request would be honoured. */
static __always_inline int xps_may_consume(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	return run && run->may_consume;
}

/* xps_request() flags */
#define XPS_REQ_NOBODY	1	/* HTTP: the reply has no body (HEAD) */

/*
 * Count a request that starts in this segment and that the service
 * answers with exactly one reply (XPS_REPLY_PROTO frames it).  Call it for
 * every such request, whatever the verdict: on PASS the connection owes
 * their replies, and no reply from the kernel may go out before them.  A
 * request the service does not answer (Redis's empty array, memcached's
 * noreply) is not counted.  XPS_REQ_NOBODY: among the first 32 only.
 */
static __always_inline void xps_request(struct __sk_buff *skb, __u32 flags)
{
	struct xps_run *run = xps__run();

	if (!run || run->counted == XPS_COUNT_LOST)
		return;
	if (flags & XPS_REQ_NOBODY) {
		if (run->reqs >= 32) {
			run->counted = XPS_COUNT_LOST;
			return;
		}
		run->reqs_nobody |= 1U << (run->reqs & 31);
	}
	run->reqs++;
	run->counted = XPS_COUNT_KNOWN;
}

/* xps_request() for @n requests at once (no flags). */
static __always_inline void xps_requests(struct __sk_buff *skb, __u32 n)
{
	struct xps_run *run = xps__run();

	if (!run || run->counted == XPS_COUNT_LOST)
		return;
	run->reqs += n;
	run->counted = XPS_COUNT_KNOWN;
}

/* No request starts in this segment (it continues an earlier one). */
static __always_inline void xps_requests_none(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	if (run && run->counted == XPS_COUNT_NONE)
		run->counted = XPS_COUNT_KNOWN;
}

/* Whether the requests of this segment are counted so far. */
static __always_inline int xps_requests_counted(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	return run && run->counted != XPS_COUNT_LOST;
}

/*
 * The handler cannot tell how many requests start here (bytes it cannot
 * parse): if the segment is passed, the connection leaves the fast path.
 */
static __always_inline void xps_requests_lost(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	if (run)
		run->counted = XPS_COUNT_LOST;
}

/* Look a key up in the data map and count the access for statistics. */
#define xps_data_lookup(key)						\
	({								\
		void *__v = bpf_map_lookup_elem(&xps_data, key);	\
		__u64 *__c = bpf_map_lookup_elem(&xps_keystats, key);	\
		if (__c) {						\
			*__c += 1;					\
		} else {						\
			__u64 __one = 1;				\
			bpf_map_update_elem(&xps_keystats, key, &__one,	\
					    BPF_NOEXIST);		\
		}							\
		__v;							\
	})

#define xps_data_update(key, val) \
	bpf_map_update_elem(&xps_data, key, val, BPF_ANY)
#define xps_data_delete(key) bpf_map_delete_elem(&xps_data, key)

/*
 * A cache handler calls this for every write request it is about to pass,
 * before it bumps the versions of the keys the write touches (or the cache
 * generation).  It counts the write as unanswered, in the connection's
 * unacked and in xps_config.unacked_writes, until the service writes on
 * the connection with nothing left unread (the framework's egress
 * programs release it then) or the connection closes.  A filler reads a
 * key's version, then fetches its value only while no write is
 * unanswered, and stamps the value with that version; the handler serves
 * only values whose stamp is still current.  Counting before the bump is
 * what makes this hold (docs/coherence.md).  Not counted: UDP writes,
 * whose answers are never seen, and writes on a connection XPS has no
 * record of; the filler keeps the handler from serving after the one and
 * while the other is open (docs/coherence.md).
 */
static __always_inline void xps_note_write(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();
	struct xps_config *cfg;
	struct xps_conn *conn;
	__u32 zero = 0;

	cfg = bpf_map_lookup_elem(&xps_config, &zero);
	if (!cfg || !run)
		return;
	if (run->proto != IPPROTO_TCP)
		return;	/* the filler keeps the handler out instead */
	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	if (!conn)
		return;
	__sync_fetch_and_add(&cfg->unacked_writes, 1);
	__sync_fetch_and_add(&conn->unacked, 1);
}

/*
 * The handler's per-connection state: flags of its own and a count of
 * payload bytes still to pass without parsing (the rest of a request that
 * began in an earlier segment).  Kept with the framework's record of the
 * connection (made when it is accepted, forgotten when it closes).  NULL
 * for UDP and for connections accepted before the context existed: a
 * handler must then assume nothing about earlier segments.
 */
static __always_inline struct xps_conn_hstate *
xps_conn_state(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();
	struct xps_conn *conn;

	if (!run || run->proto != IPPROTO_TCP)
		return NULL;
	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	return conn ? &conn->hs : NULL;
}

enum xps__outcome { XPS__TX, XPS__DROP, XPS__PASS, XPS__RESET, XPS__ERROR };

/* The run is over: the CPU's run state and scratch are free again. */
static __always_inline void xps__run_end(struct xps_run *run)
{
	run->active = 0;
}

/*
 * Every handler verdict ends here: the run is over, and another may use
 * the CPU's run state and scratch (see run_begin() in the framework).
 */
static __always_inline void xps__account(struct xps_run *run, int outcome,
					 int error)
{
	struct xps_handler_stats *st;
	__u32 slot = run->slot;

	xps__run_end(run);
	st = bpf_map_lookup_elem(&xps_stats, &slot);
	if (!st)
		return;
	st->runs++;
	st->run_ns += bpf_ktime_get_ns() - run->start_ns;
	if (error)
		st->errors++;
	switch (outcome) {
	case XPS__TX:
		st->tx++;
		st->tx_bytes += run->payload_len;
		break;
	case XPS__DROP:
		st->drop++;
		break;
	case XPS__RESET:
		st->reset++;
		break;
	default:
		st->pass++;
		break;
	}
}

/*
 * Bytes reach the service that nobody counted: the framework can no longer
 * tell when the service has answered everything, so the connection stays
 * on the slow path (docs/ordering.md).  Atomic: a nested run (see
 * run_begin() in the framework) may pass on the same connection meanwhile.
 */
static __always_inline void xps__lose_count(struct xps_conn *conn)
{
	__sync_fetch_and_or(&conn->flags, XPS_CONN_UNCOUNTED);
}

/*
 * The segment goes to the service: the connection owes the replies of the
 * requests the handler counted in it.
 */
static __always_inline void xps__owe(struct xps_run *run)
{
	struct xps_conn *conn;
	__u32 i, bit;

	if (run->proto != IPPROTO_TCP)
		return;
	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	if (!conn)
		return;
	if (run->counted != XPS_COUNT_KNOWN || XPS_REPLY_PROTO == XPS_REPLY_NONE) {
		xps__lose_count(conn);
		return;
	}
	if (!run->reqs)
		return;
	/* one framing per connection (a handler swap may bring another) */
	if (conn->rp.proto != XPS_REPLY_PROTO) {
		if (conn->rp.proto) {
			xps__lose_count(conn);
			return;
		}
		conn->rp.proto = XPS_REPLY_PROTO;
	}
	if (XPS_REPLY_PROTO == XPS_REPLY_HTTP) {
		/* which replies have no body: 32 outstanding at most */
		if (conn->owed - conn->answered + run->reqs > 32) {
			xps__lose_count(conn);
			return;
		}
		for (i = 0; i < 32; i++) {
			if (i >= run->reqs)
				break;
			bit = 1U << ((conn->owed + i) & 31);
			if (run->reqs_nobody & (1U << i))
				conn->nobody |= bit;
			else
				conn->nobody &= ~bit;
		}
	}
	conn->owed += run->reqs;
}

static __always_inline int xps__pass_code(void)
{
	if (xps_backend == XPS_BACKEND_SOCKMAP)
		return XPS__SK_PASS;
	if (xps_backend == XPS_BACKEND_TC)
		return TC_ACT_OK;
	return XPS_PASS;
}

static __always_inline int xps__drop_code(void)
{
	if (xps_backend == XPS_BACKEND_SOCKMAP)
		return XPS__SK_DROP;
	if (xps_backend == XPS_BACKEND_TC)
		return TC_ACT_SHOT;
	return XPS_DROP;
}

/* Hand the request to the service's socket as if no handler were there. */
static __always_inline int xps_pass(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	if (!run)
		return xps__pass_code();
	if (run->rewritten && xps_backend != XPS_BACKEND_SOCKMAP) {
		/* The request is gone; passing the half-built reply would
		 * feed the service garbage.  Drop it and count the error.
		 */
		xps__account(run, XPS__DROP, 1);
		return xps__drop_code();
	}
	xps__owe(run);
	xps__account(run, XPS__PASS, 0);
	return xps__pass_code();
}

/* Consume the request without an answer (TCP acknowledges it). */
static __always_inline int xps_drop(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	if (!run)
		return xps__pass_code();
	if (!run->may_consume)
		return xps_pass(skb);
	xps__account(run, XPS__DROP, 0);
	return xps__drop_code();
}

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

/* Scratch for the UDP checksum, one per CPU (TC runs with BH off). */
struct xps__csum_buf {
	__u8 b[XPS__CSUM_CHUNK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xps__csum_buf);
} xps__csum_scratch SEC(".maps");

/*
 * TC backend: turn the (rewritten) request in place into the reply
 * datagram and bounce it out of the interface it came in on.  The UDP
 * checksum is recomputed over the whole reply: bpf_csum_diff takes at most
 * 512 bytes a call, so the payload goes through a per-CPU buffer in chunks.
 */
static __always_inline int xps__tc_tx(struct __sk_buff *skb,
				      struct xps_run *run)
{
	__u32 zero = 0, l3 = run->l3_off, l4 = run->l4_off;
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
	/* swap link-layer addresses */
	{
		__u8 mac[ETH_ALEN];

		__builtin_memcpy(mac, eth.h_dest, ETH_ALEN);
		__builtin_memcpy(eth.h_dest, eth.h_source, ETH_ALEN);
		__builtin_memcpy(eth.h_source, mac, ETH_ALEN);
	}
	tmp16 = uh.source;
	uh.source = uh.dest;
	uh.dest = tmp16;
	uh.len = bpf_htons(udp_len);
	uh.check = 0;

	if (run->family == AF_INET) {
		struct iphdr ip;
		__u32 a;

		if (bpf_skb_load_bytes(skb, l3, &ip, sizeof(ip)))
			return -1;
		a = ip.saddr;
		ip.saddr = ip.daddr;
		ip.daddr = a;
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
		struct in6_addr a;

		if (bpf_skb_load_bytes(skb, l3, &ip6, sizeof(ip6)))
			return -1;
		a = ip6.saddr;
		ip6.saddr = ip6.daddr;
		ip6.daddr = a;
		ip6.payload_len = bpf_htons(udp_len);
		ip6.hop_limit = 64;
		if (bpf_skb_store_bytes(skb, l3, &ip6, sizeof(ip6), 0))
			return -1;
		sum = bpf_csum_diff(0, 0, (__be32 *)&ip6.saddr, 32, 0);
		sum += bpf_htonl(udp_len) + bpf_htonl(IPPROTO_UDP);
	}
	sum += bpf_csum_diff(0, 0, (__be32 *)&uh, sizeof(uh), 0);

	cb = bpf_map_lookup_elem(&xps__csum_scratch, &zero);
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

/* Only the fields XPS reads; CO-RE relocates them against the kernel. */
struct sock___xps_snd {
	int sk_sndbuf;
	int sk_wmem_queued;
} __attribute__((preserve_access_index));

/*
 * Stock TCP: whether the socket's send buffer takes @len more bytes after
 * the replies already waiting for the kworker.  The kworker writes with
 * MSG_DONTWAIT: a reply that does not fit would be cut, and the kworker
 * would then send what is left of the request itself.  When it does not
 * fit, the service answers (PASS): it keeps its own output buffer.
 */
static __always_inline int xps__sockmap_room(struct __sk_buff *skb,
					     struct xps_conn *conn, __u32 len)
{
	struct sock___xps_snd *sk;
	struct bpf_sock *bsk = skb->sk;
	__u32 queued;

	if (!bsk)
		return 0;
	sk = (struct sock___xps_snd *)bpf_skc_to_tcp_sock(bsk);
	if (!sk)
		return 0;
	queued = sk->sk_wmem_queued +
		 (conn->tx_head - conn->tx_tail) * XPS_STOCK_REPLY_MAX;
	/* truesize overhead: a reply may take twice its length */
	return queued + 2 * len + 4096 <= (__u32)sk->sk_sndbuf;
}

/*
 * Stock TCP TX: stash the reply for the connection's sk_msg program and
 * redirect the untouched request to the socket's egress, where that
 * program swaps it for the reply.  Anything failing before the redirect
 * leaves the request intact: PASS.  Not inlined: a frame of its own keeps
 * the handler's main frame small, and the verifier's 512-byte limit on
 * the deepest call chain (the main frame, a bpf_loop() callback, the
 * parser) holds.
 */
static __noinline int xps__sockmap_tx(struct __sk_buff *skb,
				      struct xps_run *run)
{
	struct xps_stash_slot *slot;
	struct xps_conn *conn;
	int ret;

	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	/*
	 * One piece for the kworker: it sends a non-linear request as its
	 * head and then each frag, and the sk_msg program must then empty a
	 * piece entirely, which 6.12's bpf_msg_pop_data() cannot do (it
	 * dereferences the page of the emptied message).  Linear, the request
	 * is one piece, and the reply is pushed before it is popped.
	 */
	if (conn && bpf_skb_pull_data(skb, skb->len))
		conn = NULL;
	slot = conn ? xps__reply_begin(skb, run) : NULL;
	if (!slot || !slot->len || !xps__sockmap_room(skb, conn, slot->len)) {
		/* the request is intact: the service answers it */
		run->rewritten = 0;
		xps__owe(run);
		xps__account(run, XPS__PASS, conn != NULL);
		return XPS__SK_PASS;
	}
	slot->req_left = run->payload_len;
	conn->tx_head++;
	run->payload_len = slot->len;
	ret = bpf_sk_redirect_hash(skb, &xps_sockhash, &run->cookie, 0);
	/* a slot is taken: if the redirect failed, drop the request */
	xps__account(run, ret == XPS__SK_PASS ? XPS__TX : XPS__DROP,
		     ret != XPS__SK_PASS);
	return ret;
}

/* Send the payload, as the handler left it, back to the client. */
static __always_inline int xps_tx(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();
	int ret;

	if (!run)
		return xps__pass_code();
	if (!run->may_consume)
		return xps_pass(skb);
	if (xps_backend == XPS_BACKEND_SOCKMAP)
		return xps__sockmap_tx(skb, run);
	if (xps_backend == XPS_BACKEND_TC) {
		ret = xps__tc_tx(skb, run);
		if (ret != TC_ACT_REDIRECT) {
			xps__account(run, XPS__DROP, 1);
			return TC_ACT_SHOT;
		}
		xps__account(run, XPS__TX, 0);
		return ret;
	}
	/*
	 * The hook writes the reply at write_seq, where egress must pass
	 * over it (docs/ordering.md); if it cannot, it passes the request and
	 * marks the socket XPS_SK_LOST, and this count no longer matters.
	 */
	if (run->proto == IPPROTO_TCP) {
		struct xps_conn *conn;

		conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
		if (conn)
			conn->kr_bytes += run->payload_len;
	}
	xps__account(run, XPS__TX, 0);
	return XPS_TX;
}

/* TCP: reset the connection.  UDP: drop the datagram. */
static __always_inline int xps_reset(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();
	struct xps_conn *conn;

	if (!run)
		return xps__pass_code();
	if (!run->may_consume)
		return xps_pass(skb);
	if (xps_backend == XPS_BACKEND_SOCKMAP) {
		/* The stock kernel cannot reset from here: the TC egress
		 * program turns the connection's next segment (the ACK of
		 * this request) into an RST and mirrors one to the socket.
		 */
		conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
		if (!conn) {
			xps__account(run, XPS__DROP, 1);
			return XPS__SK_DROP;
		}
		conn->reset_pending = 1;
		xps__account(run, XPS__RESET, 0);
		return XPS__SK_DROP;
	}
	xps__account(run, XPS__RESET, 0);
	if (xps_backend == XPS_BACKEND_TC)
		return TC_ACT_SHOT;
	return XPS_RESET;
}

#endif /* __XPS_BPF_H */
