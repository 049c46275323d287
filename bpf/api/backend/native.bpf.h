/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The native backend's send path: the patched kernel's hook runs the
 * handler on the request's skb, which the handler reads and cannot write
 * (the kernel keeps serve programs read-only); the handler gives the
 * kernel its reply (xps_reply(), the kfunc bpf_serve_reply()), or writes
 * it in place (xps_store(), xps_resize()) into a per-CPU copy of the
 * request that XPS_TX then gives the kfunc; XPS_TX makes the kernel send
 * it.  Kernels of the series older than the kfunc ran the handler on a
 * clone, which it edited in place, as the TC backend edits its datagram
 * (xps__inplace_store() and xps__inplace_resize() serve both).  Part of
 * xps.bpf.h.
 */
#ifndef __XPS_BACKEND_NATIVE_BPF_H
#define __XPS_BACKEND_NATIVE_BPF_H

#ifndef __XPS_BPF_H
#error "include xps.bpf.h, not its backends"
#endif

#include "../internal/run.bpf.h"

/*
 * The largest reply XPS_TX sends on a read-only native hook when the
 * handler wrote it in place (xps_store(), xps_resize()) or left the
 * request as it is: the TCP hook's limit, SERVE_TCP_TX_MAX.
 */
#define XPS_NATIVE_BUILD_MAX	65536

static __always_inline int xps__inplace_store(struct __sk_buff *skb,
					      struct xps_run *run, __u32 off,
					      const void *buf, __u32 len)
{
	run->rewritten = XPS__REPLY_BUILT;
	return bpf_skb_store_bytes(skb, run->payload_off + off, buf, len, 0);
}

static __always_inline int xps__inplace_resize(struct __sk_buff *skb,
					       struct xps_run *run, __u32 len)
{
	int err;

	run->rewritten = XPS__REPLY_BUILT;
	err = bpf_skb_change_tail(skb, run->payload_off + len, 0);
	if (!err)
		run->payload_len = len;
	return err;
}

/*
 * The patched kernel's kfunc: on the TCP hook it queues the reply on the
 * connection at once (one copy); on the UDP hook it builds the reply
 * datagram.  Weak: the stock backends' objects load on kernels without
 * it, where the branch that calls it is pruned (xps_backend is a
 * constant).
 */
extern int bpf_serve_reply(struct __sk_buff *s, const void *buf,
			   __u32 buf__sz) __ksym __weak;

static __always_inline int xps__native_reply(struct __sk_buff *skb,
					     struct xps_run *run,
					     const void *buf, __u32 len)
{
	int err = bpf_serve_reply(skb, buf, len);

	/* The request is intact either way: the handler cannot write it. */
	if (!err) {
		run->payload_len = len;
		run->rewritten = XPS__REPLY_GIVEN;
	}
	return err;
}

/* Whether the kernel keeps the request out of the handler's reach. */
static __always_inline int xps__native_rdonly(void)
{
	return xps_backend == XPS_BACKEND_NATIVE && xps_reply_kfunc;
}

/*
 * A reply written in place on the native hook, its length in the run's
 * payload_len; the request itself to begin with.  data[] is twice the
 * largest such reply: only for the verifier, which bounds an offset and a
 * length apart.  One per CPU, keyed by CPU (a per-CPU map's value may not
 * exceed 32 KiB): the native hook runs with softirqs off, its runs never
 * nest.  libxps makes it one entry per possible CPU on the native
 * backend; a run on a CPU without one writes no reply in place (the
 * handler passes).
 */
struct xps__native_build {
	__u8 data[2 * XPS_NATIVE_BUILD_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xps__native_build);
} xps_nat_reply SEC(".maps");

/* The run's reply in the making, the request copied in at the first write. */
static __always_inline struct xps__native_build *
xps__native_build(struct __sk_buff *skb, struct xps_run *run)
{
	struct xps__native_build *b;
	__u32 key = bpf_get_smp_processor_id(), n;

	b = bpf_map_lookup_elem(&xps_nat_reply, &key);
	if (!b)
		return NULL;
	if (run->rewritten)
		return b;
	n = run->payload_len;
	barrier_var(n);
	if (n > XPS_NATIVE_BUILD_MAX)
		return NULL;
	if (n >= 1 && bpf_skb_load_bytes(skb, run->payload_off, b->data, n))
		return NULL;
	run->rewritten = XPS__REPLY_BUILT;
	return b;
}

static __always_inline int xps__native_store(struct __sk_buff *skb,
					     struct xps_run *run, __u32 off,
					     const void *buf, __u32 len)
{
	struct xps__native_build *b = xps__native_build(skb, run);

	if (!b)
		return XPS_E2BIG;
	barrier_var(off);
	barrier_var(len);
	/* only for the verifier: data[] is twice the largest reply */
	if (off >= XPS_NATIVE_BUILD_MAX || len > XPS_NATIVE_BUILD_MAX)
		return XPS_E2BIG;
	if (off + len > run->payload_len)
		return XPS_EINVAL;
	return bpf_probe_read_kernel(b->data + off, len, buf);
}

static __always_inline int xps__native_resize(struct __sk_buff *skb,
					      struct xps_run *run, __u32 len)
{
	struct xps__native_build *b;

	if (len > XPS_NATIVE_BUILD_MAX)
		return XPS_E2BIG;
	b = xps__native_build(skb, run);
	if (!b)
		return XPS_E2BIG;
	run->payload_len = len;
	return 0;
}

/*
 * On a read-only hook, give the kernel the reply of an XPS_TX, unless
 * xps_reply() gave it already: what xps_store()/xps_resize() wrote, or
 * else the request as it is (XPS_TX sends the payload as the handler left
 * it).  0, or an error (an empty reply, the kernel's refusal), after which
 * the request, intact, is to be passed.
 */
static __always_inline int xps__native_send(struct __sk_buff *skb,
					    struct xps_run *run)
{
	struct xps__native_build *b;
	__u32 key = bpf_get_smp_processor_id(), n;

	if (!xps__native_rdonly() || run->rewritten == XPS__REPLY_GIVEN)
		return 0;
	if (!run->rewritten)
		b = xps__native_build(skb, run);
	else
		b = bpf_map_lookup_elem(&xps_nat_reply, &key);
	if (!b)
		return XPS_EINVAL;
	n = run->payload_len;
	barrier_var(n);
	/* only for the verifier: the writes kept n in bounds */
	if (n < 1 || n > XPS_NATIVE_BUILD_MAX)
		return XPS_EINVAL;
	return bpf_serve_reply(skb, b->data, n);
}

static __always_inline int xps__native_tx(struct __sk_buff *skb,
					  struct xps_run *run)
{
	/*
	 * The hook writes the reply at write_seq, where egress must pass
	 * over it (docs/ordering.md); if it cannot, it passes the request and
	 * marks the socket SERVE_SK_LOST, and this count no longer matters.
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

#endif /* __XPS_BACKEND_NATIVE_BPF_H */
