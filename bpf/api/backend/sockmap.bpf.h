/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stock TCP backend's send path (docs/stock-backend.md).  The kernel
 * charges a rewritten request's length to copied_seq, so the reply is
 * built in the connection's reply stash (struct xps_stash), the request
 * is redirected untouched to the socket's egress, and the framework's
 * sk_msg program (xps_msg_verdict) swaps it for the reply there.  RESET
 * is completed on egress by xps_tc_egress.  Part of xps.bpf.h.
 */
#ifndef __XPS_BACKEND_SOCKMAP_BPF_H
#define __XPS_BACKEND_SOCKMAP_BPF_H

#ifndef __XPS_BPF_H
#error "include xps.bpf.h, not its backends"
#endif

#include "../internal/run.bpf.h"

/*
 * The slot the current reply goes to, NULL when every slot of the
 * connection still waits for the kworker.  The first write starts the
 * reply as a copy of the request, so that a handler sees the same
 * in-place semantics as on the other backends (bytes it does not
 * overwrite are the request's).
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
	run->rewritten = XPS__REPLY_BUILT;
	return slot;
}

static __always_inline int xps__sockmap_store(struct __sk_buff *skb,
					      struct xps_run *run, __u32 off,
					      const void *buf, __u32 len)
{
	struct xps_stash_slot *rb;

	rb = xps__reply_begin(skb, run);
	if (!rb)
		return XPS_E2BIG;
	barrier_var(off);
	barrier_var(len);
	/* only for the verifier: data[] is twice the largest reply */
	if (off >= XPS_STOCK_REPLY_MAX || len > XPS_STOCK_REPLY_MAX)
		return XPS_E2BIG;
	if (off + len > rb->len)
		return XPS_EINVAL;
	return bpf_probe_read_kernel(rb->data + off, len, buf);
}

static __always_inline int xps__sockmap_resize(struct __sk_buff *skb,
					       struct xps_run *run, __u32 len)
{
	struct xps_stash_slot *rb;

	rb = xps__reply_begin(skb, run);
	if (!rb || len > XPS_STOCK_REPLY_MAX)
		return XPS_E2BIG;
	rb->len = len;
	return 0;
}

/* Only the fields XPS reads; CO-RE relocates them against the kernel. */
struct sock___xps_snd {
	int sk_sndbuf;
	int sk_wmem_queued;
} __attribute__((preserve_access_index));

/*
 * Whether the socket's send buffer takes @len more bytes after the
 * replies already waiting for the kworker.  The kworker writes with
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
 * TX: stash the reply for the connection's sk_msg program and redirect
 * the untouched request to the socket's egress, where that program swaps
 * it for the reply.  Anything failing before the redirect leaves the
 * request intact: PASS.  Not inlined: a frame of its own keeps the
 * handler's main frame small, and the verifier's 512-byte limit on the
 * deepest call chain (the main frame, a bpf_loop() callback, the parser)
 * holds.
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

/*
 * RESET: the stock kernel cannot reset from here: the TC egress program
 * turns the connection's next segment (the ACK of this request) into an
 * RST and mirrors one to the socket.
 */
static __always_inline int xps__sockmap_reset(struct xps_run *run)
{
	struct xps_conn *conn;

	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	if (!conn) {
		xps__account(run, XPS__DROP, 1);
		return XPS__SK_DROP;
	}
	conn->reset_pending = 1;
	xps__account(run, XPS__RESET, 0);
	return XPS__SK_DROP;
}

#endif /* __XPS_BACKEND_SOCKMAP_BPF_H */
