// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NATS JetStream Raft heartbeats answered on a follower's routes, for an
 * unmodified nats-server 2.9 (docs/nats.md).
 *
 * Every byte a route brings the server is framed, message by message
 * (lib/nats.bpf.h), and every other message of a Raft group drops what is
 * known of the group.  A segment is answered only when it is one whole
 * plain heartbeat (42 bytes, no entries, not the meta group's) equal,
 * byte for byte, to the previous heartbeat of its group on this route,
 * which the server itself answered (success, the same pterm and pindex,
 * 25 bytes, no reply subject) within XPS_NATS_ANSWER_NS, at most
 * XPS_NATS_FRESH_NS ago, on a route it wrote on within XPS_NATS_TX_NS,
 * and the kernel did not answer that previous one: the server sees at
 * least every other heartbeat.  The answer is the server's own, replayed.
 * On the groups the server leads, a follower's answer identical to its
 * previous one, which the server had less than XPS_NATS_DUP_NS ago, is
 * dropped, never two in a row.  Everything else goes to the server
 * untouched.
 */
#define XPS_REPLY_PROTO XPS_REPLY_NATS	/* docs/ordering.md */
#include "xps.bpf.h"

#define XPS_NATS_LOAD(skb, off, dst, n) xps_load((skb), (off), (dst), (n))
#define XPS_NATS_SCRATCH_KEY xps__level()
#include "lib/nats.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

_Static_assert(XPS_NATS_REPLY_MAX <= XPS_STOCK_REPLY_MAX,
	       "an answer must fit a stock-backend reply slot");

/* The two buffers hold the same @n bytes (a constant), 8 at a time. */
static __always_inline int same_bytes(const __u8 *a, const __u8 *b, __u32 n)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;
	__u32 i;

	for (i = 0; i < n / 8; i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

/*
 * The answer copied into sc->out is the server's answer to this very
 * heartbeat (sc->in): RMSG, the account, the heartbeat's reply subject as
 * its subject, 25 bytes, success, the heartbeat's pterm and pindex.
 * Checked on the copy, whatever became of the state it came from.
 */
static __always_inline int answer_fits(struct xps_nats_scratch *sc, __u32 len)
{
	struct xps_nats_line *h = &sc->in.l, *a = &sc->out.l;
	__u32 n, p, q;

	if (xps_nats_line(&sc->out, len) != 1 || a->op != XPS_NATS_OP_RMSG ||
	    a->nargs != 3 || a->size != XPS_NATS_AR_LEN || a->msg_len != len)
		return 0;
	/* its subject is the heartbeat's reply subject, its account the same */
	n = h->arg[2].len;
	if (a->arg[1].len != n || a->arg[0].len != h->arg[0].len ||
	    !xps_nats_same_span(sc->out.b, a->arg[1].off, sc->in.b,
				h->arg[2].off, n) ||
	    !xps_nats_same_span(sc->out.b, a->arg[0].off, sc->in.b,
				h->arg[0].off, h->arg[0].len))
		return 0;
	/* success, and the heartbeat's pterm, then pindex */
	p = a->len;
	q = h->len + 24;
	return sc->out.b[(p + 24) & (XPS_NATS_LINE_MAX - 1)] == 1 &&
	       xps_nats_same_span(sc->out.b, p, sc->in.b, q, 16);
}

/*
 * The segment is one whole message at a message boundary of the route's
 * incoming stream, of at most XPS_NATS_LINE_MAX bytes: it is read into
 * sc->in (zero past it), once for what the handler decides and, on a
 * pass, for what the walk would have seen.
 */
static __always_inline int one_message(struct __sk_buff *skb,
				       struct xps_nats_scratch *sc,
				       struct xps_nats_conn *nc, __u32 len)
{
	if (len > XPS_NATS_LINE_MAX || !xps_reply_idle(&nc->rx))
		return 0;
	__builtin_memset(sc->in.b, 0, sizeof(sc->in.b));
	barrier_var(len);
	if (len < 1 || len > XPS_NATS_LINE_MAX)	/* only for the verifier */
		return 0;
	return !xps_load(skb, 0, sc->in.b, len) &&
	       xps_nats_line(&sc->in, len) == 1 && sc->in.l.msg_len == len;
}

/*
 * The plain heartbeat in sc->in, whose state's key is @inbox
 * (xps_nats_key() of its reply subject), may be answered with the server's
 * last answer to the same bytes: returns the answer's length in sc->out,
 * 0 if not.
 */
static __always_inline __u32 answerable(struct xps_nats_scratch *sc,
					struct xps_nats_conn *nc, __u64 cookie,
					__u64 inbox, __u32 len)
{
	struct xps_nats_hb_key key = { .cookie = cookie, .inbox = inbox };
	struct xps_nats_hb *e;
	__u64 now, *g;
	__u32 n;

	e = bpf_map_lookup_elem(&xps_nats_hbs, &key);
	if (!e || e->state != XPS_NATS_HB_ANSWERED || e->outstanding ||
	    e->hb_len != len || !same_bytes(e->hb, sc->in.b, XPS_NATS_HB_MAX))
		return 0;
	now = bpf_ktime_get_ns();
	if (now - e->answered_ns > XPS_NATS_FRESH_NS ||
	    now - nc->tx_ns > XPS_NATS_TX_NS ||
	    e->epoch != xps_nats_epoch_now())
		return 0;
	g = bpf_map_lookup_elem(&xps_nats_groups, &e->group);
	if (!g || *g != e->gstamp)
		return 0;
	n = e->reply_len;
	__builtin_memcpy(sc->out.b, e->reply, XPS_NATS_REPLY_MAX);
	barrier();
	if (e->state != XPS_NATS_HB_ANSWERED || n < 1 ||
	    n > XPS_NATS_REPLY_MAX || !answer_fits(sc, n))
		return 0;
	return n;
}

/*
 * On a leader: the follower's success answer in sc->in is byte for byte
 * the previous answer of the group on this route, which went to the
 * server less than XPS_NATS_DUP_NS ago and was not followed by a drop.
 * The server learns nothing from it that the previous one did not tell it
 * (docs/nats.md): it may be dropped.
 */
static __always_inline int droppable(struct xps_nats_scratch *sc,
				     __u64 cookie, __u32 len)
{
	struct xps_nats_hb_key key = { .cookie = cookie };
	struct xps_nats_ack *a;

	key.inbox = xps_nats_key(&sc->in, 1, 0);
	a = bpf_map_lookup_elem(&xps_nats_acks, &key);
	if (!a || a->dropped || a->len != len ||
	    bpf_ktime_get_ns() - a->passed_ns >= XPS_NATS_DUP_NS ||
	    !same_bytes(a->msg, sc->in.b, XPS_NATS_REPLY_MAX))
		return 0;
	/*
	 * Before the verdict: a drop that becomes a pass leaves the next one
	 * to the server.
	 */
	a->dropped = 1;
	return 1;
}

/*
 * A segment of several whole messages, every one a plain heartbeat the
 * kernel may answer (answerable()), of as many groups: the answers, in
 * the heartbeats' order, are one reply.  The leader batches its writes,
 * so at a thousand groups most heartbeats come so (docs/nats.md).
 */
struct nats_batch {
	__u64 cookie;
	__u32 off;		/* the next message */
	__u32 len;		/* the segment's */
	__u32 out;		/* answer bytes in sc->batch */
	__u32 k;		/* heartbeats answered, keys in sc->keys */
	int ok;
};

/*
 * The message at b->off: its answer appended to sc->batch, or b->ok
 * cleared.  1: stop.  A global function: verified once (in the loop's
 * callback, the answer's offset would keep the verifier's states from
 * converging).
 */
__attribute__((noinline))
int nats_batch_one(struct __sk_buff *skb, struct xps_nats_scratch *sc,
		   struct xps_nats_conn *nc, struct nats_batch *b)
{
	__u32 m, ml, a, j, out;
	__u64 key;

	if (!skb || !sc || !nc || !b)
		return 1;
	if (b->off >= b->len)
		return 1;
	b->ok = 0;		/* until this message is answerable */
	if (b->k >= XPS_NATS_BATCH)
		return 1;
	m = b->len - b->off;
	if (m > XPS_NATS_LINE_MAX)
		m = XPS_NATS_LINE_MAX;
	barrier_var(m);
	if (m < 1 || m > XPS_NATS_LINE_MAX)	/* only for the verifier */
		return 1;
	if (xps_load(skb, b->off, sc->in.b, m) ||
	    xps_nats_line(&sc->in, m) != 1)
		return 1;
	ml = sc->in.l.msg_len;
	if (ml > m || !xps_nats_is_heartbeat(&sc->in, ml))
		return 1;
	/* what follows the message is not part of it (answerable()) */
	xps_nats_copy_msg(sc->in.b, sc->in.b, ml, XPS_NATS_LINE_MAX);
	key = xps_nats_key(&sc->in, 2, 0);
	/* a group twice: the second would be answered two in a row */
	for (j = 0; j < XPS_NATS_BATCH; j++)
		if (j < b->k && sc->keys[j] == key)
			return 1;
	a = answerable(sc, nc, b->cookie, key, ml);
	out = b->out;
	barrier_var(out);
	if (a < 1 || a > XPS_NATS_REPLY_MAX ||
	    out > (XPS_NATS_BATCH - 1) * XPS_NATS_REPLY_MAX)
		return 1;
	__builtin_memcpy(&sc->batch[out], sc->out.b, XPS_NATS_REPLY_MAX);
	sc->keys[b->k & (XPS_NATS_BATCH - 1)] = key;
	b->k++;
	b->out = out + a;
	b->off += ml;
	b->ok = 1;
	return 0;
}

struct nats_batch_loop {
	struct __sk_buff *skb;
	struct xps_nats_scratch *sc;
	struct xps_nats_conn *nc;
	struct nats_batch *b;
};

static long batch_step(__u32 i, void *ctx)
{
	struct nats_batch_loop *l = ctx;

	return nats_batch_one(l->skb, l->sc, l->nc, l->b) ? 1 : 0;
}

/*
 * The answers to the whole segment in sc->batch: their length, or 0;
 * *k of them.
 */
static __always_inline __u32 answer_batch(struct __sk_buff *skb,
					  struct xps_nats_scratch *sc,
					  struct xps_nats_conn *nc,
					  __u64 cookie, __u32 len, __u32 *k)
{
	struct nats_batch b = { .cookie = cookie, .len = len, .ok = 1 };
	struct nats_batch_loop l = { .skb = skb, .sc = sc, .nc = nc, .b = &b };

	if (len > XPS_NATS_BATCH * XPS_NATS_HB_MAX || !xps_reply_idle(&nc->rx))
		return 0;
	bpf_loop(XPS_NATS_BATCH + 1, batch_step, &l, 0);
	*k = b.k;
	return b.ok && b.off == len && b.k >= 2 ? b.out : 0;
}

/*
 * Before the verdict: the states of the @k heartbeats answered (keys in
 * sc->keys).  Should the send fail and a heartbeat reach the server after
 * all, its answer finds the state not waiting for one and leaves nothing
 * to repeat.
 */
static __always_inline void answered(struct xps_nats_scratch *sc,
				     __u64 cookie, __u32 k)
{
	struct xps_nats_hb_key key = { .cookie = cookie };
	struct xps_nats_hb *e;
	__u32 j;

	for (j = 0; j < XPS_NATS_BATCH; j++) {
		if (j >= k)
			break;
		key.inbox = sc->keys[j];
		e = bpf_map_lookup_elem(&xps_nats_hbs, &key);
		if (e)
			e->state = XPS_NATS_HB_KERNEL;
		xps_nats_count(XPS_NATS_ST_ANSWERED);
	}
}

SEC("xps")
int xps_nats(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();
	struct xps_nats_scratch *sc;
	struct xps_nats_conn *nc;
	__u32 len, n, k = 0;
	__u64 cookie;

	len = xps_len(skb);
	sc = xps_scratch(&xps_nats_scratch);
	if (!run || !sc || xps_proto(skb) != IPPROTO_TCP)
		goto lost;
	cookie = run->cookie;
	nc = bpf_map_lookup_elem(&xps_nats_conns, &cookie);
	if (!nc || (nc->flags & XPS_NATS_CONN_LOST))
		goto lost;
	/* none of the server's messages answers this route's messages */
	xps_requests_none(skb);

	if (one_message(skb, sc, nc, len)) {
		if (xps_nats_is_heartbeat(&sc->in, len)) {
			sc->keys[0] = xps_nats_key(&sc->in, 2, 0);
			n = answerable(sc, nc, cookie, sc->keys[0], len);
			barrier_var(n);
			if (n >= 1 && n <= XPS_NATS_REPLY_MAX &&
			    xps_may_consume(skb) &&
			    !xps_reply(skb, sc->out.b, n)) {
				answered(sc, cookie, 1);
				return xps_tx(skb);
			}
		} else if (xps_nats_is_ack(&sc->in, len) &&
			   xps_may_consume(skb) &&
			   droppable(sc, cookie, len)) {
			xps_nats_count(XPS_NATS_ST_DROPPED);
			return xps_drop(skb);
		}
		/* passed whole: the framing stays between messages */
		xps_nats_line_seen(&sc->in, cookie, bpf_ktime_get_ns(),
				   XPS_NATS_SEEN_WHOLE);
		return xps_pass(skb);
	}
	n = answer_batch(skb, sc, nc, cookie, len, &k);
	if (n >= 1 && n <= XPS_NATS_BATCH * XPS_NATS_REPLY_MAX &&
	    xps_may_consume(skb)) {
		/*
		 * A no-op mask, hidden from clang, on the register the reply
		 * takes: only for the verifier (6.12 loses the bound above).
		 */
		XPS__HIDE(n);
		n &= sizeof(sc->batch) - 1;
		if (n >= 1 && !xps_reply(skb, sc->batch, n)) {
			answered(sc, cookie, k);
			xps_nats_count(XPS_NATS_ST_BATCHES);
			return xps_tx(skb);
		}
	}
	if (xps_nats_walk(skb, &nc->rx, cookie, 0, len, 0)) {
		nc->flags |= XPS_NATS_CONN_LOST;
		xps_nats_epoch_bump();
	}
	return xps_pass(skb);
lost:
	xps_requests_lost(skb);
	return xps_pass(skb);
}
