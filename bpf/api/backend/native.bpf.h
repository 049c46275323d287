/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The native backend's send path: the patched kernel's hook runs the
 * handler on a clone of the request's skb; the handler gives the kernel
 * its reply (xps_reply(), the kfunc bpf_serve_reply()) or edits the clone
 * in place into the reply; XPS_TX makes the kernel send it.  The TC backend
 * edits its datagram in place the same way (xps__inplace_store() and
 * xps__inplace_resize() serve both).  Part of xps.bpf.h.
 */
#ifndef __XPS_BACKEND_NATIVE_BPF_H
#define __XPS_BACKEND_NATIVE_BPF_H

#ifndef __XPS_BPF_H
#error "include xps.bpf.h, not its backends"
#endif

#include "../internal/run.bpf.h"

static __always_inline int xps__inplace_store(struct __sk_buff *skb,
					      struct xps_run *run, __u32 off,
					      const void *buf, __u32 len)
{
	run->rewritten = 1;
	return bpf_skb_store_bytes(skb, run->payload_off + off, buf, len, 0);
}

static __always_inline int xps__inplace_resize(struct __sk_buff *skb,
					       struct xps_run *run, __u32 len)
{
	int err;

	run->rewritten = 1;
	err = bpf_skb_change_tail(skb, run->payload_off + len, 0);
	if (!err)
		run->payload_len = len;
	return err;
}

/*
 * The patched kernel's kfunc: on the TCP hook it queues the reply on the
 * connection at once, leaving the request's clone alone (no reallocation
 * of its head, one copy); on the UDP hook it makes the clone's payload the
 * reply.  Weak: the stock backends' objects load on kernels without it,
 * where the branch that calls it is pruned (xps_backend is a constant).
 */
extern int bpf_serve_reply(struct __sk_buff *s, const void *buf,
			   __u32 buf__sz) __ksym __weak;

static __always_inline int xps__native_reply(struct __sk_buff *skb,
					     struct xps_run *run,
					     const void *buf, __u32 len)
{
	int err = bpf_serve_reply(skb, buf, len);

	/* The request is intact either way: the hooks run on a clone. */
	if (!err)
		run->payload_len = len;
	return err;
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
