/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * NATS routes, both directions (docs/nats.md): the walk that frames a
 * route's bytes message by message, reads every protocol line it can
 * whole, and keeps the heartbeat state of include/xps/nats.h.  Included
 * by the NATS handler (the bytes a server receives) and by the
 * framework's egress step (the bytes it sends).  The includer defines
 * XPS_NATS_LOAD(skb, off, dst, len) first: xps_load() in a handler,
 * bpf_skb_load_bytes() at egress; and XPS_NATS_SCRATCH_KEY, its entry of
 * the per-CPU scratch: the run's level in a handler (xps__level()),
 * XPS_RUN_LEVELS at egress, which can interrupt a run (a softirq's
 * transmit during backlog processing) but not another egress step (the
 * transmit path runs with softirqs off).
 */
#ifndef __XPS_LIB_NATS_BPF_H
#define __XPS_LIB_NATS_BPF_H

#include "proto/nats.bpf.h"
#include <xps/nats.h>

/* Per-CPU scratch: the line being read and, for the handler, a reply. */
#define XPS_NATS_WIN		64
/* Heartbeats of one segment the handler answers together, at most. */
#define XPS_NATS_BATCH		4

struct xps_nats_scratch {
	struct xps_nats_buf in;
	struct xps_nats_buf out;
	struct xps_nats_hb hb;
	__u8 win[XPS_NATS_WIN];	/* the walk's bytes, off the stack */
	/* the handler's answers to a segment of several heartbeats (room
	 * for one more answer's copy, and a power of two: the length is
	 * masked for the verifier), and the keys of their states */
	__u8 batch[512];
	__u64 keys[XPS_NATS_BATCH];
};
_Static_assert((XPS_NATS_BATCH + 1) * XPS_NATS_REPLY_MAX <= 512,
	       "the batch's answers fit");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_RUN_LEVELS + 1);
	__type(key, __u32);
	__type(value, struct xps_nats_scratch);
} xps_nats_scratch SEC(".maps");

static __always_inline void xps_nats_count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&xps_nats_stats, &stat);

	if (v)
		*v += 1;
}

/* Every group's heartbeat state is dropped (a message XPS cannot read). */
static __always_inline void xps_nats_epoch_bump(void)
{
	__u32 zero = 0;
	__u64 *e = bpf_map_lookup_elem(&xps_nats_epoch, &zero);

	if (e)
		__sync_fetch_and_add(e, 1);
	xps_nats_count(XPS_NATS_ST_EPOCHS);
}

static __always_inline __u64 xps_nats_epoch_now(void)
{
	__u32 zero = 0;
	__u64 *e = bpf_map_lookup_elem(&xps_nats_epoch, &zero);

	return e ? *e : 0;
}

/* A stamp no group had before. */
static __always_inline __u64 xps_nats_fresh(void)
{
	__u32 one = 1;
	__u64 *e = bpf_map_lookup_elem(&xps_nats_epoch, &one);

	return e ? __sync_fetch_and_add(e, 1) + 1 : 0;
}

/* Any traffic of @group but its plain heartbeats: its states are dropped. */
static __always_inline void xps_nats_group_bump(__u64 group)
{
	__u64 s = xps_nats_fresh();

	if (!s || bpf_map_update_elem(&xps_nats_groups, &group, &s, BPF_ANY))
		xps_nats_epoch_bump();
	xps_nats_count(XPS_NATS_ST_BUMPS);
}

/* The group's stamp, made if it has none; 0 if none can be kept. */
static __always_inline __u64 xps_nats_group_stamp(__u64 group)
{
	__u64 *g = bpf_map_lookup_elem(&xps_nats_groups, &group);
	__u64 s;

	if (g)
		return *g;
	s = xps_nats_fresh();
	if (!s || bpf_map_update_elem(&xps_nats_groups, &group, &s,
				      BPF_NOEXIST))
		return 0;
	return s;
}

#define XPS_NATS_PFX_NRG	"$NRG."
#define XPS_NATS_PFX_AE		"$NRG.AE."
#define XPS_NATS_PFX_V		"$NRG.V."
#define XPS_NATS_PFX_P		"$NRG.P."
#define XPS_NATS_PFX_RP		"$NRG.RP."
#define XPS_NATS_PFX_R		"$NRG.R."
#define XPS_NATS_META		"$NRG.AE._meta_"
#define XPS__NATS_IS(nb, i, s, exact)					\
	xps_nats_arg_is((nb), (i), XPS_PACK(s, 0), XPS_PACK(s, 1),	\
			sizeof(s) - 1, (exact))

/*
 * The @n bytes at @ao of @a are those at @bo of @b; both buffers hold
 * XPS_NATS_LINE_MAX bytes (a line, a heartbeat).
 */
static __always_inline int xps_nats_same_span(const __u8 *a, __u32 ao,
					      const __u8 *b, __u32 bo,
					      __u32 n)
{
	__u32 i;

	_Static_assert(XPS_NATS_HB_MAX == XPS_NATS_LINE_MAX, "one mask");
	for (i = 0; i < XPS_NATS_LINE_MAX; i++) {
		if (i >= n)
			break;
		if (a[(ao + i) & (XPS_NATS_LINE_MAX - 1)] !=
		    b[(bo + i) & (XPS_NATS_LINE_MAX - 1)])
			return 0;
	}
	return 1;
}

/*
 * @n bytes (a multiple of 8) of a message to @dst, zero from byte @len
 * on: what follows the message in @src is not part of it.  Both buffers
 * are 8-byte aligned.
 */
static __always_inline void xps_nats_copy_msg(__u8 *dst, const __u8 *src,
					      __u32 len, __u32 n)
{
	const __u64 *s = (const __u64 *)(const void *)src;
	__u64 *d = (__u64 *)(void *)dst, w;
	__u32 j;

	for (j = 0; j < n / 8; j++) {
		w = s[j];
		if (j * 8 >= len)
			w = 0;
		else if (len - j * 8 < 8)
			w &= XPS__NATS_LOW(len - j * 8);
		d[j] = w;
	}
}

/* Hash of the line's account (argument 0) and argument @i from @from. */
static __always_inline __u64 xps_nats_key(const struct xps_nats_buf *nb,
					  __u32 i, __u32 from)
{
	return xps_nats_hash(nb, i, from, xps_nats_hash(nb, 0, 0,
							XPS_NATS_HASH_SEED));
}

/*
 * The group a $NRG subject (argument 1) names, by its prefix: 1 and
 * *@group for AE, V, P and RP; 0 for a reply ($NRG.R.); -1 for anything
 * else under $NRG (catch-up inboxes, kinds 2.9 does not send).
 */
static __always_inline int xps_nats_group_of(const struct xps_nats_buf *nb,
					     __u64 *group)
{
	__u32 from;

	if (XPS__NATS_IS(nb, 1, XPS_NATS_PFX_R, 0))
		return 0;
	if (XPS__NATS_IS(nb, 1, XPS_NATS_PFX_AE, 0))
		from = sizeof(XPS_NATS_PFX_AE) - 1;
	else if (XPS__NATS_IS(nb, 1, XPS_NATS_PFX_RP, 0))
		from = sizeof(XPS_NATS_PFX_RP) - 1;
	else if (XPS__NATS_IS(nb, 1, XPS_NATS_PFX_V, 0))
		from = sizeof(XPS_NATS_PFX_V) - 1;
	else if (XPS__NATS_IS(nb, 1, XPS_NATS_PFX_P, 0))
		from = sizeof(XPS_NATS_PFX_P) - 1;
	else
		return -1;
	*group = xps_nats_key(nb, 1, from);
	return 1;
}

/*
 * Whether the whole message in nb (@len bytes of it were loaded) is a
 * plain heartbeat a follower may be answered for: RMSG <account>
 * $NRG.AE.<group> $NRG.R.<inbox> 42, not the meta group's, zero entries,
 * CRLF after the 42 bytes.
 */
static __always_inline int xps_nats_is_heartbeat(const struct xps_nats_buf *nb,
						 __u32 len)
{
	const struct xps_nats_line *l = &nb->l;
	__u32 p;

	if (l->op != XPS_NATS_OP_RMSG || l->nargs != 4 ||
	    l->size != XPS_NATS_AE_LEN || l->msg_len != len ||
	    len > XPS_NATS_HB_MAX)
		return 0;
	if (!XPS__NATS_IS(nb, 1, XPS_NATS_PFX_AE, 0) ||
	    XPS__NATS_IS(nb, 1, XPS_NATS_META, 1) ||
	    !XPS__NATS_IS(nb, 2, XPS_NATS_PFX_R, 0))
		return 0;
	p = l->len;
	if (p > XPS_NATS_HB_MAX - XPS_NATS_AE_LEN - 2)
		return 0;
	/* the entry count (u16 at 40) is zero; the message ends in CRLF */
	return nb->b[(p + 40) & (XPS_NATS_LINE_MAX - 1)] == 0 &&
	       nb->b[(p + 41) & (XPS_NATS_LINE_MAX - 1)] == 0 &&
	       nb->b[(p + 42) & (XPS_NATS_LINE_MAX - 1)] == '\r' &&
	       nb->b[(p + 43) & (XPS_NATS_LINE_MAX - 1)] == '\n';
}

/*
 * Whether the whole message in nb (@len bytes of it were loaded) is a
 * follower's success answer to an append: RMSG <account> $NRG.R.<inbox>
 * 25, success (the last of the 25 bytes), CRLF after them.
 */
static __always_inline int xps_nats_is_ack(const struct xps_nats_buf *nb,
					   __u32 len)
{
	const struct xps_nats_line *l = &nb->l;
	__u32 p;

	if (l->op != XPS_NATS_OP_RMSG || l->nargs != 3 ||
	    l->size != XPS_NATS_AR_LEN || l->msg_len != len ||
	    len > XPS_NATS_REPLY_MAX || !XPS__NATS_IS(nb, 1, XPS_NATS_PFX_R, 0))
		return 0;
	p = l->len;
	if (p > XPS_NATS_REPLY_MAX - XPS_NATS_AR_LEN - 2)
		return 0;
	return nb->b[(p + 24) & (XPS_NATS_LINE_MAX - 1)] == 1 &&
	       nb->b[(p + 25) & (XPS_NATS_LINE_MAX - 1)] == '\r' &&
	       nb->b[(p + 26) & (XPS_NATS_LINE_MAX - 1)] == '\n';
}

/*
 * On a leader: a follower's answer goes to the server.  The route's last
 * answer of the group becomes it, with nothing dropped after it, when it
 * is whole in nb and a success; otherwise nothing is to be dropped until
 * the next one.
 */
static __always_inline void xps_nats_ack_passed(const struct xps_nats_buf *nb,
						__u64 cookie, __u64 now,
						int whole)
{
	struct xps_nats_hb_key key = { .cookie = cookie };
	struct xps_nats_scratch *sc;
	struct xps_nats_ack *a;
	__u32 sidx = XPS_NATS_SCRATCH_KEY, len = nb->l.msg_len;

	key.inbox = xps_nats_key(nb, 1, 0);
	a = bpf_map_lookup_elem(&xps_nats_acks, &key);
	if (!whole || !xps_nats_is_ack(nb, len)) {
		if (a)
			a->len = 0;
		return;
	}
	if (!a) {
		/*
		 * A zero value from the scratch's heartbeat room (free
		 * here): one on the stack would take the egress step's
		 * call chain past 512 bytes.
		 */
		sc = bpf_map_lookup_elem(&xps_nats_scratch, &sidx);
		if (!sc)
			return;
		_Static_assert(sizeof(struct xps_nats_ack) <=
			       sizeof(struct xps_nats_hb), "ack from hb");
		__builtin_memset(&sc->hb, 0, sizeof(struct xps_nats_ack));
		if (bpf_map_update_elem(&xps_nats_acks, &key, &sc->hb,
					BPF_NOEXIST))
			return;
		a = bpf_map_lookup_elem(&xps_nats_acks, &key);
		if (!a)
			return;
	}
	_Static_assert(XPS_NATS_REPLY_MAX <= XPS_NATS_LINE_MAX, "msg from nb");
	xps_nats_copy_msg(a->msg, nb->b, len, XPS_NATS_REPLY_MAX);
	a->len = len;
	a->dropped = 0;
	a->passed_ns = now;
}

/*
 * A heartbeat of @group (xps_nats_group_of()) goes to the server: its
 * state now waits for the server's answer (xps_nats_learn()).  nb holds
 * the whole message.
 */
static __always_inline void xps_nats_passed(const struct xps_nats_buf *nb,
					    __u64 cookie, __u64 now,
					    __u64 group)
{
	struct xps_nats_hb_key key = { .cookie = cookie };
	struct xps_nats_scratch *sc;
	struct xps_nats_hb *e;
	__u32 sidx = XPS_NATS_SCRATCH_KEY, len = nb->l.msg_len;
	__u64 gstamp, epoch;

	key.inbox = xps_nats_key(nb, 2, 0);
	gstamp = xps_nats_group_stamp(group);
	epoch = xps_nats_epoch_now();
	xps_nats_count(XPS_NATS_ST_PASSED);
	e = bpf_map_lookup_elem(&xps_nats_hbs, &key);
	if (!e) {
		sc = bpf_map_lookup_elem(&xps_nats_scratch, &sidx);
		if (!sc)
			return;
		__builtin_memset(&sc->hb, 0, sizeof(sc->hb));
		if (bpf_map_update_elem(&xps_nats_hbs, &key, &sc->hb,
					BPF_NOEXIST))
			return;
		e = bpf_map_lookup_elem(&xps_nats_hbs, &key);
		if (!e)
			return;
	}
	/* answers that never came (a reply egress could not read) */
	if (e->outstanding && now - e->seen_ns > XPS_NATS_FRESH_NS)
		e->outstanding = 0;
	e->state = XPS_NATS_HB_PASSED;
	/* atomic: egress takes the server's answers off it meanwhile */
	__sync_fetch_and_add(&e->outstanding, 1);
	e->seen_ns = now;
	e->group = group;
	e->gstamp = gstamp;
	e->epoch = epoch;
	_Static_assert(XPS_NATS_HB_MAX <= XPS_NATS_LINE_MAX, "hb from nb");
	xps_nats_copy_msg(e->hb, nb->b, len, XPS_NATS_HB_MAX);
	e->hb_len = len;
	e->inbox_off = nb->l.arg[2].off;
	e->inbox_len = nb->l.arg[2].len;
}

/*
 * Egress: the server's answer on the route, RMSG <account>
 * $NRG.R.<inbox> [<reply>] <size>, whole in nb when @whole.  The state of
 * the heartbeat it answers learns it if it is the answer to the last one
 * passed, came within XPS_NATS_ANSWER_NS, and is what the kernel may
 * repeat: 25 bytes, success, the heartbeat's pterm and pindex, no reply
 * subject.  Anything else leaves the state with nothing to repeat.
 */
static __always_inline void xps_nats_learn(const struct xps_nats_buf *nb,
					   __u64 cookie, __u64 now, int whole)
{
	const struct xps_nats_line *l = &nb->l;
	struct xps_nats_hb_key key = { .cookie = cookie };
	struct xps_nats_hb *e;
	__u32 p, q, n;

	key.inbox = xps_nats_key(nb, 1, 0);
	e = bpf_map_lookup_elem(&xps_nats_hbs, &key);
	if (!e)
		return;
	/* the same reply subject as the heartbeat's, byte for byte */
	n = e->inbox_len;
	if (l->arg[1].len != n ||
	    !xps_nats_same_span(nb->b, l->arg[1].off, e->hb, e->inbox_off, n))
		return;
	if (e->state != XPS_NATS_HB_PASSED || !e->outstanding) {
		e->state = XPS_NATS_HB_DEAD;
		return;
	}
	if (__sync_fetch_and_add(&e->outstanding, -1) != 1)
		return;		/* the answer to an earlier heartbeat */
	e->state = XPS_NATS_HB_DEAD;
	if (!whole || l->nargs != 3 || l->size != XPS_NATS_AR_LEN ||
	    l->msg_len > XPS_NATS_REPLY_MAX || now - e->seen_ns >
	    XPS_NATS_ANSWER_NS)
		return;
	p = l->len;		/* the answer's 25 bytes */
	q = e->hb_len - XPS_NATS_AE_LEN - 2 + 24;	/* the heartbeat's pterm */
	if (p > XPS_NATS_LINE_MAX - XPS_NATS_AR_LEN - 2 ||
	    q > XPS_NATS_HB_MAX - 16 ||
	    nb->b[(p + 24) & (XPS_NATS_LINE_MAX - 1)] != 1)
		return;
	if (!xps_nats_same_span(nb->b, p, e->hb, q, 16))
		return;
	__builtin_memcpy(e->reply, nb->b, XPS_NATS_REPLY_MAX);
	e->reply_len = l->msg_len;
	e->answered_ns = now;
	barrier();
	e->state = XPS_NATS_HB_ANSWERED;
	xps_nats_count(XPS_NATS_ST_LEARNED);
}

#define XPS_NATS_SEEN_EGRESS	1	/* the server sent it */
#define XPS_NATS_SEEN_WHOLE	2	/* the whole message is in nb */

/*
 * One protocol line, read whole into nb (and the whole message with
 * XPS_NATS_SEEN_WHOLE): what it changes in the heartbeat state
 * (docs/nats.md).  A global function: verified once, on its own.
 */
XPS_GLOBAL int xps_nats_line_seen(const struct xps_nats_buf *nb, __u64 cookie,
				  __u64 now, __u32 how)
{
	int egress = how & XPS_NATS_SEEN_EGRESS;
	int whole = !!(how & XPS_NATS_SEEN_WHOLE);
	__u64 group = 0;
	int g;

	if (!nb)
		return 0;
	if (nb->l.op == XPS_NATS_OP_LINE || nb->l.nargs < 2 ||
	    !XPS__NATS_IS(nb, 1, XPS_NATS_PFX_NRG, 0))
		return 0;
	if (nb->l.op != XPS_NATS_OP_RMSG) {
		xps_nats_epoch_bump();	/* Raft never sends these */
		return 0;
	}
	g = xps_nats_group_of(nb, &group);
	if (g < 0) {
		xps_nats_epoch_bump();
		return 0;
	}
	if (g == 0) {
		/* an answer: the server's (egress) is learned */
		if (egress)
			xps_nats_learn(nb, cookie, now, whole);
		else
			xps_nats_ack_passed(nb, cookie, now, whole);
		return 0;
	}
	if (!egress && whole && xps_nats_is_heartbeat(nb, nb->l.msg_len)) {
		xps_nats_passed(nb, cookie, now, group);
		return 0;
	}
	xps_nats_group_bump(group);
	return 0;
}

/*
 * The walk over a route's bytes [off, end): message by message while the
 * framing is between messages (each line read whole and handed to
 * xps_nats_line_seen()), payloads passed over unread, and a line that
 * does not fit what was loaded fed byte by byte (every group's state is
 * dropped then: XPS did not read it).
 */
#define XPS_NATS_STEPS		(1 << 17)

struct xps_nats_walk {
	struct __sk_buff *skb;
	struct xps_reply *rp;
	struct xps_nats_buf *nb;
	__u8 *win;		/* XPS_NATS_WIN bytes of the scratch */
	__u64 cookie;
	__u64 now;
	__u32 off;
	__u32 end;
	__u32 how;		/* XPS_NATS_SEEN_EGRESS or 0 */
	__u32 woff;		/* next byte in win */
	__u32 wlen;		/* bytes in win */
	int lost;
};

static long xps_nats_step(__u32 i, void *ctx)
{
	struct xps_nats_walk *w = ctx;
	struct xps_reply *rp = w->rp;
	struct xps_nats_buf *nb = w->nb;
	__u32 left, k, n;
	int r;

	if (w->off >= w->end)
		return 1;
	left = w->end - w->off;
	if (rp->skip) {
		k = rp->skip < left ? rp->skip : left;
		rp->skip -= k;
		w->off += k;
		w->wlen = 0;
		if (!rp->skip)
			xps_reply_skipped(rp);
		return 0;
	}
	if (xps_reply_idle(rp)) {
		n = left < XPS_NATS_LINE_MAX ? left : XPS_NATS_LINE_MAX;
		barrier_var(n);
		if (n < 1 || n > XPS_NATS_LINE_MAX)	/* only for the verifier */
			return 1;
		if (XPS_NATS_LOAD(w->skb, w->off, nb->b, n)) {
			w->lost = 1;
			return 1;
		}
		w->wlen = 0;
		r = xps_nats_line(nb, n);
		if (r < 0) {
			w->lost = 1;
			return 1;
		}
		if (r > 0) {
			k = nb->l.msg_len;
			xps_nats_line_seen(nb, w->cookie, w->now,
					   w->how | (k <= n ?
						     XPS_NATS_SEEN_WHOLE : 0));
			if (k <= left) {
				w->off += k;
				return 0;
			}
			/* the payload goes on past the segment */
			w->off += nb->l.len;
			rp->skip = k - nb->l.len;
			return 0;
		}
		xps_nats_epoch_bump();
	}
	if (w->woff >= w->wlen) {
		k = left < XPS_NATS_WIN ? left : XPS_NATS_WIN;
		barrier_var(k);
		if (k < 1 || k > XPS_NATS_WIN)		/* only for the verifier */
			return 1;
		if (XPS_NATS_LOAD(w->skb, w->off, w->win, k)) {
			w->lost = 1;
			return 1;
		}
		w->wlen = k;
		w->woff = 0;
	}
	r = xps_reply_byte(rp, w->win[w->woff & (XPS_NATS_WIN - 1)], 0);
	w->woff++;
	w->off++;
	if (r == XPS_RB_ERR) {
		w->lost = 1;
		return 1;
	}
	if (xps_reply_idle(rp))
		w->wlen = 0;	/* the next message is read as a line */
	return 0;
}

/* Walk [off, end); returns 0, or -1 when the stream cannot be framed. */
static __always_inline int xps_nats_walk(struct __sk_buff *skb,
					 struct xps_reply *rp, __u64 cookie,
					 __u32 off, __u32 end, __u32 how)
{
	struct xps_nats_walk w = {
		.skb = skb, .rp = rp, .cookie = cookie, .off = off,
		.end = end, .how = how,
	};
	__u32 sidx = XPS_NATS_SCRATCH_KEY;
	struct xps_nats_scratch *sc;

	sc = bpf_map_lookup_elem(&xps_nats_scratch, &sidx);
	if (!sc)
		return -1;
	w.nb = &sc->in;
	w.win = sc->win;
	w.now = bpf_ktime_get_ns();
	bpf_loop(XPS_NATS_STEPS, xps_nats_step, &w, 0);
	return w.lost || w.off < w.end ? -1 : 0;
}

#endif /* __XPS_LIB_NATS_BPF_H */
