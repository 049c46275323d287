/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xps.bpf.h: the header for XPS handler authors, and all they need to read.
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
 *		if (xps_reply(skb, reply, reply_len))
 *			return xps_pass(skb);
 *		return xps_tx(skb);
 *	}
 *
 * The same object runs on every backend (the native hook for TCP and UDP,
 * the stock sockmap path for TCP, the stock TC path for UDP): libxps tells
 * the object which one before it loads it, and the verifier prunes the
 * other backends' branches.  Offsets are payload offsets, the same on every
 * backend: never touch the packet through skb->data or bpf_skb_* helpers.
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
 * The verifier must see every variable length given to xps_load(),
 * xps_store() and xps_reply() bounded to [1, size of the buffer] on the
 * very register it is passed in.  clang tends to fold such checks into
 * earlier ones; write
 *
 *	barrier_var(len);
 *	if (len < 1 || len > sizeof(buf))
 *		return xps_pass(skb);
 *
 * right before the call.
 *
 * What lies behind the functions below (not needed to write a handler):
 * internal/maps.bpf.h (the framework's maps), internal/run.bpf.h (the run
 * state and its accounting), backend/ (each backend's send path).
 */
#ifndef __XPS_BPF_H
#define __XPS_BPF_H

#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include <linux/bpf_serve.h>
#include <xps/abi.h>

#include "internal/run.bpf.h"

/*
 * Errors of the functions below, negative errno values.  Where a kernel
 * helper fails, its own negative errno comes through unchanged (e.g.
 * -EFAULT for bytes outside the payload).
 */
enum xps_err {
	/* No run under way: the program was not called by the framework. */
	XPS_ENORUN = -2,	/* -ENOENT */
	/* Too large: beyond the stock TCP reply limit
	 * (XPS_STOCK_REPLY_MAX), or every reply slot of the connection is
	 * still being sent.  PASS.
	 */
	XPS_E2BIG = -7,		/* -E2BIG */
	/* The request may not be consumed (the service still owes a reply
	 * on the connection, or bytes are unread): PASS it untouched.
	 */
	XPS_EBUSY = -16,	/* -EBUSY */
	/* A write beyond the reply's length: xps_resize() first. */
	XPS_EINVAL = -22,	/* -EINVAL */
	/* A map the call adds to is full. */
	XPS_ENOSPC = -28,	/* -ENOSPC */
};

#include "backend/native.bpf.h"
#include "backend/sockmap.bpf.h"
#include "backend/tc_udp.bpf.h"

/* ---- the run ---------------------------------------------------------- */

/* Payload length of the request (0 outside a run). */
static __always_inline __u32 xps_len(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	return run ? run->payload_len : 0;
}

/*
 * IPPROTO_TCP or IPPROTO_UDP: the protocol of the request, which is the
 * program array the framework dispatched the handler from (0 outside a
 * run).  The stock backends carry one protocol each: the verifier sees a
 * constant there.
 */
static __always_inline int xps_proto(struct __sk_buff *skb)
{
	struct xps_run *run;

	if (xps_backend == XPS_BACKEND_SOCKMAP)
		return IPPROTO_TCP;
	if (xps_backend == XPS_BACKEND_TC)
		return IPPROTO_UDP;
	run = xps__run();
	return run ? run->proto : 0;
}

/*
 * Whether a TX/DROP/RESET of this request would be honoured; when not,
 * they pass it, and xps_store()/xps_resize() fail with XPS_EBUSY.
 */
static __always_inline int xps_may_consume(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	return run && run->may_consume;
}

/* ---- payload ---------------------------------------------------------- */

/* Copy @len payload bytes at @off into @buf.  0, XPS_ENORUN or a helper's. */
static __always_inline int xps_load(struct __sk_buff *skb, __u32 off,
				    void *buf, __u32 len)
{
	struct xps_run *run = xps__run();

	if (!run)
		return XPS_ENORUN;
	return bpf_skb_load_bytes(skb, run->payload_off + off, buf, len);
}

/*
 * Write @len bytes of the reply at payload offset @off: the reply starts
 * as the request, bytes not overwritten are the request's.  0,
 * XPS_EBUSY (the handler must then PASS the untouched request),
 * XPS_E2BIG, XPS_EINVAL or a helper's.  The stock TCP backend and the
 * patched kernel build the reply apart, from a copy of the request, which
 * a later xps_pass() passes intact; on the TC backend (and the patched
 * kernels older than bpf_serve_reply()) the request itself is rewritten:
 * after the first write it is gone, and a later xps_pass() drops it and
 * counts an error.
 */
static __always_inline int xps_store(struct __sk_buff *skb, __u32 off,
				     const void *buf, __u32 len)
{
	struct xps_run *run = xps__run();

	if (!run || !run->may_consume)
		return XPS_EBUSY;
	if (xps__native_rdonly())
		return xps__native_store(skb, run, off, buf, len);
	if (xps_backend != XPS_BACKEND_SOCKMAP)
		return xps__inplace_store(skb, run, off, buf, len);
	return xps__sockmap_store(skb, run, off, buf, len);
}

/*
 * Set the payload length of the reply (grow or shrink).  Bytes a grow adds
 * are undefined until written.  0, XPS_EBUSY, XPS_E2BIG or a helper's.
 */
static __always_inline int xps_resize(struct __sk_buff *skb, __u32 len)
{
	struct xps_run *run = xps__run();

	if (!run || !run->may_consume)
		return XPS_EBUSY;
	if (xps__native_rdonly())
		return xps__native_resize(skb, run, len);
	if (xps_backend == XPS_BACKEND_SOCKMAP)
		return xps__sockmap_resize(skb, run, len);
	return xps__inplace_resize(skb, run, len);
}

/*
 * Make the @len bytes at @buf the whole reply, the usual way to answer:
 * on the native TCP hook the kernel queues them without touching the
 * request (one copy, up to SERVE_TCP_TX_MAX bytes); elsewhere this is
 * xps_resize() and xps_store().  Not to be mixed with xps_store() in one
 * run.  @buf must be writable memory (the stack, a map value; not
 * .rodata): the verifier checks a kfunc's buffer for writes too.  0,
 * XPS_EBUSY, XPS_E2BIG or a helper's or the kernel's error.
 */
static __always_inline int xps_reply(struct __sk_buff *skb, const void *buf,
				     __u32 len)
{
	struct xps_run *run = xps__run();
	int err;

	if (!run || !run->may_consume)
		return XPS_EBUSY;
	if (xps_backend == XPS_BACKEND_NATIVE && xps_reply_kfunc)
		return xps__native_reply(skb, run, buf, len);
	err = xps_resize(skb, len);
	return err ? err : xps_store(skb, 0, buf, len);
}

/* ---- counting requests (TCP, docs/ordering.md) ---------------------- */

/* xps_request() flags */
#define XPS_REQ_NOBODY	1	/* HTTP: the reply has no body (HEAD) */

/*
 * Count a request that starts in this segment and that the service
 * answers with exactly one reply (XPS_REPLY_PROTO frames it).  Call it for
 * every such request, whatever the verdict: on PASS the connection owes
 * their replies, and no reply from the kernel may go out before them.  A
 * request the service does not answer (Redis's empty array, memcached's
 * noreply) is not counted.  XPS_REQ_NOBODY: among the first
 * XPS_NOBODY_WINDOW only.
 */
static __always_inline void xps_request(struct __sk_buff *skb, __u32 flags)
{
	struct xps_run *run = xps__run();

	if (!run || run->counted == XPS_COUNT_LOST)
		return;
	if (flags & XPS_REQ_NOBODY) {
		if (run->reqs >= XPS_NOBODY_WINDOW) {
			run->counted = XPS_COUNT_LOST;
			return;
		}
		run->reqs_nobody |= 1U << (run->reqs & XPS_NOBODY_MASK);
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

/* ---- the context's maps ------------------------------------------------ */

/*
 * XPS_DATA_MAP() declares the handler's data map (the values it serves,
 * filled through xps_context__data_put() and friends) and the per-key
 * access counters behind xps_context__keystats_get().  Both belong to the
 * context: libxps pins them under /sys/fs/bpf/xps/ctx/<name>/.  A cache of
 * an unmodified server's data, kept coherent with it, is the kv-cache
 * library's (bpf/lib/kvcache.bpf.h), which declares its own maps.
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
 * Look a key up in the data map and count the access for statistics (a
 * miss is an access too): the value or NULL.
 */
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

/* Change the data map from the handler: the map helpers' results. */
#define xps_data_update(key, val) \
	bpf_map_update_elem(&xps_data, key, val, BPF_ANY)
#define xps_data_delete(key) bpf_map_delete_elem(&xps_data, key)

/*
 * XPS_STATE_MAP(): one value of handler-wide state shared with the
 * control plane, mapped by the handler's helper process, which changes it
 * only with atomic operations (the handler updates it at the same time).
 * It belongs to the context like the data map.
 */
#define XPS_STATE_MAP(value_type)					\
	struct {							\
		__uint(type, BPF_MAP_TYPE_ARRAY);			\
		__uint(max_entries, 1);					\
		__type(key, __u32);					\
		__type(value, value_type);				\
		__uint(map_flags, BPF_F_MMAPABLE);			\
	} xps_state SEC(".maps")

/*
 * XPS_SCRATCH_MAP(): per-CPU working memory too big for the stack, one
 * value for each run that may be under way on a CPU at once: a run can
 * interrupt another on its CPU (XPS_RUN_LEVELS) and must not write over
 * its scratch.  xps_scratch() finds the current run's value (or NULL);
 * never look such a map up at a fixed key.
 *
 *	struct my_scratch { __u8 buf[2048]; };
 *	XPS_SCRATCH_MAP(my_scratch_map, struct my_scratch);
 *	...
 *	struct my_scratch *sc = xps_scratch(&my_scratch_map);
 */
#define XPS_SCRATCH_MAP(name, value_type)				\
	struct {							\
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);		\
		__uint(max_entries, XPS_RUN_LEVELS);			\
		__type(key, __u32);					\
		__type(value, value_type);				\
	} name SEC(".maps")

#define xps_scratch(map)						\
	({								\
		__u32 __k = xps__level();				\
		bpf_map_lookup_elem(map, &__k);				\
	})


/* ---- the server ------------------------------------------------------- */

/*
 * Whether the service's listening socket closed since its helper last
 * vouched for it (XPS_SERVER_GONE, include/xps/abi.h): a handler that
 * answers from a copy of the server's data must then answer nothing,
 * since whatever listens on the port next has data of its own.  Set by
 * the kernel at the close; cleared by the handler's helper process.
 */
static __always_inline int xps_server_gone(void)
{
	struct xps_run *run = xps__run();
	__u32 *w;

	if (!run)
		return 1;
	w = bpf_map_lookup_elem(&xps_servers, &run->slot);
	return !w || (*(volatile __u32 *)w & XPS_SERVER_GONE);
}

/* ---- the connection ---------------------------------------------------- */

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

/* ---- verdicts: exactly one ends every run ---------------------------- */

/* Hand the request to the service's socket as if no handler were there. */
static __always_inline int xps_pass(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	if (!run)
		return xps__pass_code();
	if (run->rewritten && xps_backend != XPS_BACKEND_SOCKMAP &&
	    !xps__native_rdonly()) {
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

/*
 * Send the payload, as the handler left it, back to the client.  When it
 * cannot go out the request is passed if it is still intact (stock TCP),
 * dropped otherwise; both count an error.
 */
static __always_inline int xps_tx(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	if (!run)
		return xps__pass_code();
	if (!run->may_consume)
		return xps_pass(skb);
	if (xps_backend == XPS_BACKEND_SOCKMAP)
		return xps__sockmap_tx(skb, run);
	if (xps_backend == XPS_BACKEND_TC)
		return xps__tc_tx(skb, run);
	if (xps__native_send(skb, run)) {
		/* the request is intact: the service answers it */
		xps__owe(run);
		xps__account(run, XPS__PASS, 1);
		return xps__pass_code();
	}
	return xps__native_tx(skb, run);
}

/* TCP: reset the connection.  UDP: drop the datagram. */
static __always_inline int xps_reset(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();

	if (!run)
		return xps__pass_code();
	if (!run->may_consume)
		return xps_pass(skb);
	if (xps_backend == XPS_BACKEND_SOCKMAP)
		return xps__sockmap_reset(run);
	xps__account(run, XPS__RESET, 0);
	return xps__reset_code();
}

#endif /* __XPS_BPF_H */
