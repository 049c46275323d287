// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Memcached get/gets from the kernel, for an unmodified memcached, over TCP
 * and UDP.  As for Redis (redis.bpf.c): a TCP segment is answered only when
 * every request in it is a get/gets whose keys are all cached; a UDP
 * datagram holds one request.  Writes invalidate before they reach
 * memcached and are counted for the filler (docs/coherence.md).
 */
#define XPS_REPLY_PROTO XPS_REPLY_MEMCACHED	/* docs/ordering.md */
#include "xps.bpf.h"
#include "proto/memcached.bpf.h"
#include "lib/kv_count.bpf.h"
#include "memcached.h"
#define XPS_KV_ENTRIES		MC_CACHE_ENTRIES
#define XPS_KV_MISS_ENTRIES	MC_MISS_QUEUE
#define XPS_KV_VERSION_ENTRIES	MC_VERSIONS
#include "lib/kvcache.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

XPS_STATE_MAP(struct mc_state);

XPS_KV_COUNT(count_rest, struct xps_kv_scratch, xps_mc_parse, 0);

/* memcached's largest relative exptime; larger ones are unix times */
#define MC_REALTIME_MAXDELTA	((__u64)XPS_MC_REALTIME_MAXDELTA)
/*
 * A set with a relative exptime E is committed with a deadline E less
 * this after the handler saw it: memcached's one-second clock lags real
 * time by up to a second (as for flush_all above), so the item dies no
 * earlier than E - 1 s after memcached stored it, which is after the
 * handler saw it; one more second to spare.  Sets with E of 2 s or less
 * are not committed.
 */
#define MC_EXPIRE_EARLY_NS	(2 * 1000000000ULL)
/*
 * memcached kills items once its one-second clock reaches the deadline
 * minus one second (oldest_live), and that clock lags real time by up to
 * a second: the moment is only known to within [deadline - 2 s, deadline].
 * Nothing is served in that window (one more second on either side), and
 * the cache is invalidated at its end.
 */
#define MC_FLUSH_EARLY_NS	(3 * 1000000000ULL)
#define MC_FLUSH_LATE_NS	(1 * 1000000000ULL)
#define MC_UDP_QUIET_NS		1000000000ULL	/* xps-memcachedd's UDP_QUIET_NS */

/*
 * flush_all <delay>: widen the window in which nothing is served (see
 * struct mc_state).  Two runs on other CPUs may race here; min and max
 * make either order safe.
 */
static __always_inline void flush_later(struct mc_state *st, __u32 delay)
{
	__u64 now = bpf_ktime_get_ns(), at = now;
	__s64 off = st->realtime_minus_mono_ns, unix_ns;

	if (delay > MC_REALTIME_MAXDELTA) {
		unix_ns = (__s64)delay * 1000000000LL - off;
		/* without the filler's clock offset: at once */
		if (off && unix_ns > (__s64)now)
			at = unix_ns;
	} else {
		at = now + delay * 1000000000ULL;
	}
	if (!st->flush_min_ns || at - MC_FLUSH_EARLY_NS < st->flush_min_ns)
		st->flush_min_ns = at > now + MC_FLUSH_EARLY_NS ?
				   at - MC_FLUSH_EARLY_NS : now;
	if (at + MC_FLUSH_LATE_NS > st->flush_max_ns)
		st->flush_max_ns = at + MC_FLUSH_LATE_NS;
}

/*
 * Whether a delayed flush_all forbids serving now.  The run that finds
 * the window over invalidates the cache (cgen): values filled before
 * carry the old cgen and are never served.
 */
static __always_inline int flush_due(struct mc_state *st)
{
	__u64 min = st->flush_min_ns, now;

	if (!min)
		return 0;
	now = bpf_ktime_get_ns();
	if (now < min)
		return 0;
	if (now >= st->flush_max_ns &&
	    __sync_val_compare_and_swap(&st->flush_min_ns, min, 0) == min) {
		st->flush_max_ns = 0;
		__sync_fetch_and_add(&st->kv.cgen, 1);
	}
	return 1;
}

/* A write: the cache's invalidation, and what only memcached needs. */
/* xps_kv_invalidate(), and a delayed flush_all noted; its return value. */
static __always_inline int invalidate(struct xps_kv_walk *w)
{
	struct mc_state *st = w->st;
	int n = xps_kv_invalidate(w);

	if ((w->sc->req.flags & (XPS_F_ALL | XPS_F_DEFERRED)) ==
	    (XPS_F_ALL | XPS_F_DEFERRED))	/* flush_all <delay> */
		flush_later(st, w->sc->req.num);
	return n;
}

/* Append @n (<= 1 KiB) bytes of @src to the staged reply. */
static __always_inline int stage(struct xps_kv_walk *w, const void *src,
				 __u32 n)
{
	if (n && xps_stage_copy(w->out, w->out_len,
				(const struct xps_stage_chunk *)src, n))
		return -1;
	w->out_len += n;
	return 0;
}

static __always_inline int stage_lit(struct xps_kv_walk *w, const char *s,
				     __u32 n)
{
	if (xps_stage_lit(w->out, w->out_len, s, n))
		return -1;
	w->out_len += n;
	return 0;
}

/*
 * One VALUE block for key i of the current request, from @v, which the
 * last lookup returned: the line from the stamps it read once, the bytes
 * checked against the filler's seal as copied.
 */
static __always_inline int stage_value(struct xps_kv_walk *w, __u32 i,
				       const struct xps_kv_value *v)
{
	struct xps_kv_scratch *sc = w->sc;
	const struct xps_kv_hit *hit = &sc->hit;
	__u32 h;

	if (i >= XPS_MAX_KEYS || hit->len > MC_VALUE_MAX)
		return -1;
	/* a value the kernel committed has no CAS it knows: gets passes */
	if ((sc->req.flags & XPS_F_CAS) && !hit->cas)
		return -1;
	h = xps_mc_encode_value_hdr(sc->hdr, 0, sc->in, sc->req.keys[i],
				    hit->client_flags, hit->len, hit->cas,
				    !!(sc->req.flags & XPS_F_CAS));
	if (!h || stage(w, sc->hdr, h) || xps_kv_stage_value(w, v))
		return -1;
	return stage_lit(w, "\r\n", 2);
}

/*
 * A set (add, replace, cas) of one key with exptime 0 (XPS_F_NOEXP) or a
 * relative one above MC_EXPIRE_EARLY_NS (XPS_F_RELEXP) whose data block
 * ends in CRLF here, not noreply, on a connection the handler may serve
 * (w->learn, which the handler clears within a second of a write over
 * UDP): if memcached answers STORED, the item is the data block with the
 * request's flags and no expiry, or that expiry (xps_kv_wt_stamp()).
 */
static __always_inline int plain_set(const struct xps_kv_walk *w)
{
	const struct xps_kv_req *req = &w->sc->req;
	__u32 f = req->flags & (XPS_F_NOEXP | XPS_F_RELEXP | XPS_F_NOREPLY |
				XPS_F_ALL);

	return w->learn && req->nkeys == 1 &&
	       (f == XPS_F_NOEXP ||
		(f == XPS_F_RELEXP &&
		 req->num * 1000000000ULL > MC_EXPIRE_EARLY_NS));
}

/*
 * A write: invalidated, and committed by the kernel when memcached stores
 * it (plain_set()).  Its own subprogram: its frame stays off the walk's,
 * which the parser's frames share.
 */
static __noinline void mc_write(struct xps_kv_walk *w)
{
	const struct xps_mc_line *ln;
	__u64 stored = 0, flags = 0, ttl;
	struct xps_kv_wt_args *a;
	__u32 i, s, e;

	if (!w || !w->sc)
		return;
	/* 1: one key bumped, left in sc->key */
	if (invalidate(w) != 1 || !plain_set(w))
		return;
	/*
	 * The flags: token 2 of the line the parse just tokenized, one to
	 * ten digits and below 2^32 (XPS_F_NOEXP or XPS_F_RELEXP says every
	 * number of the line was read whole).
	 */
	ln = XPS__MCLINE(&w->sc->req);
	s = ln->t.s[2];
	e = ln->t.e[2];
	for (i = 0; i < 10; i++) {
		if (s + i >= e || s + i >= XPS_SCRATCH)
			break;
		flags = flags * 10 + (w->sc->in[s + i] - '0');
	}
	/* the data block: from the line's end to the request's CRLF */
	s = ln->nl + 1;
	e = w->off + w->sc->req.req_len - 2;
	if (s > e || e > XPS_SCRATCH)
		return;
	a = &w->sc->wt;
	a->val.off = s;
	a->val.len = e - s;
	__builtin_memcpy(&stored, "STORED\r\n", 8);
	a->expect = stored;
	a->expect_len = 8;
	a->client_flags = (__u32)flags;
	a->expire_ns = 0;
	a->expire_tai_ns = 0;
	if (w->sc->req.flags & XPS_F_RELEXP) {
		/*
		 * Both clocks, as Redis's expiries: memcached's clock is
		 * CLOCK_MONOTONIC, or real time where it was built without
		 * one, and TAI steps with real time (docs/coherence.md).
		 */
		ttl = w->sc->req.num * 1000000000ULL - MC_EXPIRE_EARLY_NS;
		a->expire_ns = bpf_ktime_get_ns() + ttl;
		a->expire_tai_ns = bpf_ktime_get_tai_ns() + ttl;
	}
	xps_kv_wt_stamp(w->skb, w->sc, w->cgen, w->hk.hash, 0);
}

static long walk_one(__u32 i, void *ctx)
{
	struct xps_kv_walk *w = ctx;
	struct xps_kv_req *req = &w->sc->req;
	struct xps_kv_value *v;
	__u32 k;
	int kind;

	/* past the window: the segment's end, or the window moves on */
	if (w->off >= w->len)
		return xps_kv_at_end(w);
	kind = xps_mc_parse(w->sc->in, w->len, w->off, req);
	/*
	 * One reply per request but noreply ones; quit and watch end the
	 * replies the connection can count (STATE).
	 */
	if (kind == XPS_REQ_STATE)
		xps_requests_lost(w->skb);
	else if (kind != XPS_REQ_INCOMPLETE && kind != XPS_REQ_MALFORMED)
		xps_kv_count(w);
	switch (kind) {
	case XPS_REQ_SERVE:
		if (!req->nkeys || req->nkeys > XPS_MAX_KEYS ||
		    (req->flags & (XPS_F_BADKEY | XPS_F_ALL))) {
			w->serve = 0;
			break;
		}
		for (k = 0; k < XPS_MAX_KEYS; k++) {
			if (k >= req->nkeys)
				break;
			if (xps_kv_set_key(w, &req->keys[k])) {
				w->serve = 0;
				break;
			}
			v = xps_kv_lookup(w);
			if (!v)
				w->serve = 0;
			else if (w->serve && stage_value(w, k, v))
				w->serve = 0;
		}
		if (w->serve && !stage_lit(w, XPS_MC_END, XPS_MC_END_LEN))
			w->gets++;
		else
			w->serve = 0;
		break;
	case XPS_REQ_INVALIDATE:
		w->serve = 0;
		mc_write(w);
		break;
	case XPS_REQ_STATE:
		/*
		 * quit, watch: memcached answers nothing on this connection
		 * after them, so neither may the kernel.
		 */
		if (req->nkeys || (req->flags & XPS_F_ALL))
			invalidate(w);
		if (w->cs)
			w->cs->flags |= MC_CONN_NO_SERVE;
		w->serve = 0;
		w->learn = 0;
		break;
	default:
		return xps_kv_walk_common(w, kind);
	}
	w->off += req->req_len;
	return 0;
}

/*
 * The common case, a TCP segment or a UDP datagram that is one get/gets
 * of one key: no walk.  The request is counted.  Returns the reply's
 * length when it is staged, 0 to pass (a miss).  Its own subprogram: its
 * frames stay off the walk's stack.
 */
static __noinline __u32 serve_one(struct xps_kv_walk *w)
{
	struct xps_kv_value *v;

	xps_request(w->skb, 0);
	if (xps_kv_set_key(w, &w->sc->req.keys[0]))
		return 0;
	v = xps_kv_lookup(w);
	if (!v || stage_value(w, 0, v) ||
	    stage_lit(w, XPS_MC_END, XPS_MC_END_LEN))
		return 0;
	return w->out_len;
}

/*
 * Pass the segment to memcached: the connection has spoken to it (its
 * protocol is fixed) and is not idle there.
 */
static __always_inline int mc_pass(struct xps_kv_walk *w, __u64 now)
{
	if (w->cs)
		w->cs->flags |= MC_CONN_SPOKEN;
	xps_kv_passed(w->cs, now);
	return xps_pass(w->skb);
}

SEC("xps")
int xps_memcached(struct __sk_buff *skb)
{
	struct xps_kv_walk w = {
		.skb = skb, .serve = 1, .key_max = MC_KEY_MAX,
		.conn_no_serve = MC_CONN_NO_SERVE,
	};
	struct xps_kv_scratch *sc;
	struct mc_state *st;
	__u32 zero = 0, n, out;
	__u16 req_id = 0;
	int cas = 0;
	__u64 now;

	sc = xps_scratch(&xps_kv_scratch);
	st = bpf_map_lookup_elem(&xps_state, &zero);
	w.out = xps_scratch(&xps_kv_stage);
	if (!sc || !st || !w.out)
		return xps_pass(skb);
	w.sc = sc;
	w.st = st;
	w.cgen = &st->kv.cgen;
	xps_kv_unseen(&st->kv);
	w.udp_write_ns = &st->last_udp_write_ns;
	/*
	 * UDP never has connection state: deciding both on the protocol
	 * keeps the verifier from walking a datagram with a record.
	 */
	if (xps_proto(skb) == IPPROTO_UDP)
		w.udp = xps_len(skb) >= XPS_MC_UDP_HDR_LEN;
	else
		w.cs = xps_conn_state(skb);
	w.seg_len = xps_len(skb);

	now = bpf_ktime_get_ns();
	if (xps_kv_skip(&w))
		return mc_pass(&w, now);
	/*
	 * TCP needs the connection's record to be served (state across
	 * segments); UDP is one datagram, one request.
	 */
	if ((w.cs && (w.cs->flags & MC_CONN_NO_SERVE)) ||
	    !xps_kv_may_serve(&st->kv, now) || flush_due(st))
		w.serve = 0;
	/*
	 * A TCP miss may teach the filler the value where a get may be
	 * served, and a set may be committed (plain_set()); neither within
	 * a second of a write over UDP, which is never seen answered (the
	 * filler assumes memcached has executed it by then).
	 */
	w.learn = w.serve && w.cs &&
		  now - *(volatile __u64 *)&st->last_udp_write_ns >=
		  MC_UDP_QUIET_NS;
	/*
	 * memcached picks a connection's protocol (text or binary) from the
	 * first byte it reads: its first bytes must be the client's first,
	 * so a connection's first segment is always passed.
	 */
	if (!xps_may_consume(skb) || xps_kv_idle_due(&st->kv, w.cs, now) ||
	    (w.cs && !(w.cs->flags & MC_CONN_SPOKEN)))
		w.serve = 0;

	if (xps_kv_load(&w))
		return mc_pass(&w, now);
	n = w.len;

	if (w.udp) {
		/* the 8-byte frame: one datagram, one request */
		if (xps_mc_udp_parse(sc->in, n, &req_id))
			return mc_pass(&w, now);
		w.off = XPS_MC_UDP_HDR_LEN;
		w.out_len = XPS_MC_UDP_HDR_LEN;
		/* the common case: the datagram is one get (see serve_one()) */
		if (w.serve && n == w.seg_len && n > XPS_MC_UDP_HDR_LEN &&
		    xps_mc_parse_get(sc->in + XPS_MC_UDP_HDR_LEN,
				     n - XPS_MC_UDP_HDR_LEN, &sc->req.keys[0],
				     &cas) == n - XPS_MC_UDP_HDR_LEN) {
			/* offsets in sc->in are the datagram's */
			sc->req.keys[0].off += XPS_MC_UDP_HDR_LEN;
			sc->req.flags = cas ? XPS_F_CAS : 0;
			sc->req.nkeys = 1;
			if (!serve_one(&w))
				return mc_pass(&w, now);
			w.gets = 1;
		}
	} else if (!w.cs) {
		w.serve = 0;	/* TCP without a record: state unknown */
	} else if (w.serve && n == w.seg_len &&
		   xps_mc_parse_get(sc->in, n, &sc->req.keys[0], &cas) == n) {
		/* the common case: the segment is one get (see serve_one()) */
		sc->req.flags = cas ? XPS_F_CAS : 0;
		sc->req.nkeys = 1;
		if (!serve_one(&w))
			return mc_pass(&w, now);
		w.gets = 1;
	}

	if (!w.gets) {
		bpf_loop(w.udp ? 1 : XPS_MAX_REQS_PER_SEG, walk_one, &w, 0);
		xps_kv_walk_end(&w, count_rest, sc);
		xps_kv_write_through_end(w.out);
	}
	/* memcached splits UDP replies over 1400 bytes: leave those to it */
	if (w.udp && w.out_len > 1400)
		w.serve = 0;
	if (!w.serve || !w.gets)
		return mc_pass(&w, now);
	if (w.udp)
		xps_mc_udp_encode(w.out->b, req_id, 0, 1);

	out = w.out_len;
	barrier_var(out);
	if (out < 1 || out > XPS_STAGE_SIZE)	/* only for the verifier */
		return mc_pass(&w, now);
	if (xps_reply(skb, w.out->b, out))
		return mc_pass(&w, now);
	return xps_tx(skb);
}
