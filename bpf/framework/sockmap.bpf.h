/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stock TCP backend: xps_stream_verdict runs handlers on the data of
 * the connections xps_sockops enrolled into xps_sockhash, and
 * xps_msg_verdict puts the replies on the wire in place of the requests
 * redirected for them (docs/stock-backend.md).  Part of
 * xps_framework.bpf.c.
 */
#ifndef __XPS_FW_SOCKMAP_BPF_H
#define __XPS_FW_SOCKMAP_BPF_H

/*
 * Whether a reply from the kernel may go out now without overtaking the
 * service: nothing but this skb is unread on the socket, and the service
 * owes nothing (conn_may_answer()).
 */
static __always_inline int sockmap_may_consume(struct __sk_buff *skb,
					       struct xps_conn *conn,
					       struct tcp_sock___xps *tp,
					       struct xps_run *run)
{
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
	struct tcp_sock___xps *tp = NULL;
	struct xps_config *cfg;
	struct xps_conn *conn;
	struct xps_run *run;
	__u64 cookie;
	int sub, nested, how;

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
	if (skb->sk)
		tp = (struct tcp_sock___xps *)bpf_skc_to_tcp_sock(skb->sk);
	/*
	 * A socket its owner does not hold gets its segments in softirq
	 * (otherwise they wait in its backlog): this run may interrupt one
	 * in process context, and ends before it (run_begin()).  On a
	 * socket its owner holds, it runs in process context.
	 */
	how = tp && !((struct sock___xps *)tp)->sk_lock.owned ?
	      run_how_softirq() : 0;
	run = run_begin(&nested, how);
	if (nested) {
		pass_uncounted(conn, XPS_LOST_NESTED);
		return XPS__SK_PASS;
	}
	if (!run)
		return XPS__SK_PASS;
	if (!conn) {
		xps__run_end(run);
		return XPS__SK_PASS;
	}
	if (conn_slot(skb, cfg, conn) < 0) {
		pass_uncounted(conn, XPS_LOST_NO_RUN);
		xps__run_end(run);
		return XPS__SK_PASS;
	}

	run->cookie = cookie;
	run->proto = IPPROTO_TCP;
	run->family = skb->family == AF_INET ? AF_INET : AF_INET6;
	run->payload_len = skb->len;
	run->may_consume = sockmap_may_consume(skb, conn, tp, run);
	sub = resolve_slot(skb, run, conn->slot);
	if (sub < 0) {
		pass_uncounted(conn, XPS_LOST_NO_RUN);
		xps__run_end(run);
		return XPS__SK_PASS;
	}
	run->slot = sub;
	bpf_tail_call(skb, &xps_progs_tcp, sub);
	count_only(sub, run->start_ns, 1);
	pass_uncounted(conn, XPS_LOST_NO_RUN);
	xps__run_end(run);
	return XPS__SK_PASS;
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
	/*
	 * A protocol whose service writes unprompted (NATS routes) may have
	 * written since the handler decided: the reply then goes after those
	 * bytes, which is a message boundary only if egress has seen them all
	 * and its framing is between messages.  Else the reply would land
	 * inside the service's message; there is no sending nothing from
	 * here (6.12 cannot empty the message), so the send fails and the
	 * socket takes the error: a broken connection, never a corrupt one.
	 * Request/response protocols cannot get here: requests passed since
	 * the decision queue behind this one, and the service writes only to
	 * answer them.
	 */
	if (conn->rp.proto == XPS_REPLY_NATS &&
	    ((conn->flags & XPS_CONN_UNCOUNTED) ||
	     tp->write_seq - conn->eg_seq != conn->kr_bytes ||
	     !xps_reply_idle(&conn->rp))) {
		xps__lose_count(conn, XPS_LOST_STOCK_TX);
		xps_nats_count(XPS_NATS_ST_CUT);
		return SK_DROP;
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
		xps__lose_count(conn, XPS_LOST_STOCK_TX);
	conn->kr_bytes += n;
	return SK_PASS;
}

#endif /* __XPS_FW_SOCKMAP_BPF_H */
