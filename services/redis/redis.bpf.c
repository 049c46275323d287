// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Redis GET from the kernel, for an unmodified redis-server.
 *
 * A segment is answered only when every request in it is a GET of a cached
 * key on a connection in a state where Redis would answer exactly what the
 * cache holds; the reply is then the concatenation of the bulk replies
 * Redis would have sent.  Anything else is passed, after every key a write
 * in the segment touches has been invalidated (and the write counted for
 * the filler's coherence check, see docs/coherence.md).  The cache is
 * bpf/lib/kvcache.bpf.h; this file is the protocol.
 */
#define XPS_REPLY_PROTO XPS_REPLY_RESP	/* docs/ordering.md */
#include "xps.bpf.h"
#include "proto/redis.bpf.h"
#include "lib/kv_count.bpf.h"
#include "redis.h"
#define XPS_KV_ENTRIES		REDIS_CACHE_ENTRIES
#define XPS_KV_MISS_ENTRIES	REDIS_MISS_QUEUE
#define XPS_KV_VERSION_ENTRIES	REDIS_VERSIONS
#include "lib/kvcache.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

XPS_STATE_MAP(struct redis_state);

XPS_KV_COUNT(count_rest, struct xps_kv_scratch, xps_redis_parse, 1);

/* A GET the cache may answer: one key Redis reads literally. */
static __always_inline int servable_get(const struct xps_kv_req *req)
{
	return req->nkeys == 1 && req->keys[0].len <= REDIS_KEY_MAX &&
	       !(req->flags & (XPS_F_BADKEY | XPS_F_QUOTED));
}

/*
 * Append the bulk reply of @v, which the last lookup returned, to the
 * staged reply, its bytes checked against the filler's seal as copied.
 */
static __always_inline int stage_bulk(struct xps_kv_walk *w,
				      const struct xps_kv_value *v)
{
	struct xps_stage *out = w->out;
	__u8 hdr[XPS_REDIS_BULK_HDR_MAX];
	__u32 h, at = w->out_len, vlen = w->sc->hit.len, i;

	if (vlen > REDIS_VALUE_MAX || at > XPS_STAGE_SIZE)
		return -1;
	h = xps_redis_encode_bulk_hdr(hdr, vlen);
	if (at + h + vlen + 2 > XPS_STAGE_SIZE)
		return -1;
	for (i = 0; i < XPS_REDIS_BULK_HDR_MAX; i++) {
		if (i >= h)
			break;
		out->b[(at + i) & (XPS_STAGE_SIZE - 1)] = hdr[i];
	}
	w->out_len = at + h;
	if (xps_kv_stage_value(w, v))
		return -1;
	at = w->out_len;
	out->b[at & (XPS_STAGE_SIZE - 1)] = '\r';
	out->b[(at + 1) & (XPS_STAGE_SIZE - 1)] = '\n';
	w->out_len = at + 2;
	return 0;
}

/*
 * The requests a walk meets most, known without the general parser's
 * argument walk and number parser: a GET of a key the cache may hold
 * (xps_redis_parse_get()) or a plain SET (xps_redis_parse_set()) at @off
 * of sc->in, sc->req left as xps_redis_parse() would leave it.  Returns
 * the request's length, 0 when the parser must decide.  A global
 * function, verified once (inlined in the walk's callback, it took the
 * verifier past its limit).
 */
__attribute__((noinline))
__u32 xps_redis_fast_at(struct xps_kv_scratch *sc, __u32 len, __u32 off)
{
	struct xps_kv_req *req;
	__u32 n;

	if (!sc || off >= XPS_SCRATCH - 1)
		return 0;
	req = &sc->req;
	/* the argument count tells which one it may be */
	switch (sc->in[off + 1]) {
	case '2':
		n = xps_redis_parse_get(sc->in, len, off, &req->keys[0]);
		if (!n || req->keys[0].len > REDIS_KEY_MAX)
			return 0;
		req->kind = XPS_REQ_SERVE;
		req->flags = 0;
		req->req_len = n;
		req->nkeys = 1;
		return n;
	case '3':
		return xps_redis_parse_set(sc->in, len, off, req);
	}
	return 0;
}

/* Whether the 2 bytes at @o of @in are @c0 @c1, in any case. */
static __always_inline int word2(const __u8 *in, __u32 o, char c0, char c1)
{
	return (in[o] | 0x20) == c0 && (in[o + 1] | 0x20) == c1;
}

/*
 * Whether @opt is NX or XX, in any case: the SET conditions that answer
 * +OK when the key was set and nil when it was not.
 */
static __always_inline int nx_xx(const struct xps_kv_scratch *sc,
				 struct xps_span opt)
{
	__u32 o = opt.off;

	/* so that clang tests the register it indexes with */
	XPS__HIDE(o);
	if (opt.len != 2 || o > XPS_SCRATCH - 8)
		return 0;
	return (sc->in[o + 1] | 0x20) == 'x' &&
	       ((sc->in[o] | 0x20) == 'n' || (sc->in[o] | 0x20) == 'x');
}

#define REDIS_TTL_NONE	(~0ULL)
/* With a Unix time in ns (below 2^62): an absolute deadline (EXAT, PXAT) */
#define REDIS_TTL_AT	(1ULL << 63)

/*
 * Whether the request just parsed into sc->req is a write the kernel may
 * commit (xps_redis_write_through()), in RESP:
 *  - "SET <key> <value>", "SET <key> <value> NX|XX", "GETSET <key>
 *    <value>" and "SET <key> <value> GET": no expiry (REDIS_TTL_NONE);
 *  - "SET <key> <value> EX|PX <n>", "SETEX <key> <n> <value>", "PSETEX
 *    <key> <n> <value>": its time to live, in ns, n of 1 to 13 digits as
 *    Redis reads a number (no sign, no leading zero), up to 4 * 10^9 s;
 *  - "SET <key> <value> EXAT|PXAT <n>": the Unix time n (seconds or
 *    milliseconds, up to 4 * 10^9 s) in ns, with REDIS_TTL_AT set;
 *  - either SET with NX or XX before or after its time option;
 * 0 otherwise.  It leaves in sc->wt the value's span and the bytes the
 * reply of a write that took effect begins with: "+OK\r\n", or "$" for
 * the two that answer with the old value (a bulk string, or nil when there
 * was none; an error, or a key of another type, is "-...").  A global
 * function: verified once, whatever the walk's state (its loop, in line,
 * took the handler past the verifier's limit).
 */
__attribute__((noinline))
__u64 xps_redis_set_ttl(struct xps_kv_scratch *sc)
{
	struct xps_span topt, num;
	const struct xps_kv_req *req;
	struct xps_kv_wt_args *a;
	__u64 v = 0, unit, ok = 0, at = 0;
	__u32 o, n, i;
	__u8 c;

	if (!sc)
		return 0;
	req = &sc->req;
	a = &sc->wt;
	o = req->name.off;
	n = req->name.len;
	if (req->nkeys != 1 || !req->val.len || o > XPS_SCRATCH - 8 ||
	    req->keys[0].len > REDIS_KEY_MAX ||
	    (req->flags & (XPS_F_ALL | XPS_F_BADKEY | XPS_F_QUOTED)))
		return 0;
	a->val = req->val;
	num = req->opt[1];
	__builtin_memcpy(&ok, "+OK\r\n", 5);
	a->expect = ok;
	a->expect_len = 5;
	if (n == 6 && req->argc == 3 && (sc->in[o] | 0x20) == 'g' &&
	    word2(sc->in, o + 1, 'e', 't') && word2(sc->in, o + 3, 's', 'e') &&
	    (sc->in[o + 5] | 0x20) == 't') {
		a->expect = '$';
		a->expect_len = 1;
		return REDIS_TTL_NONE;
	}
	if (n == 3 && (sc->in[o] | 0x20) == 's' && word2(sc->in, o + 1, 'e', 't')) {
		if (req->argc == 3)
			return REDIS_TTL_NONE;
		if (req->argc == 4) {
			/*
			 * SET <key> <value> GET|NX|XX: the value is argument
			 * 2, the option argument 3 (in req->val)
			 */
			o = req->val.off;
			/* so that clang tests the register it indexes with */
			XPS__HIDE(o);
			if (o > XPS_SCRATCH - 8 || !req->opt[1].len)
				return 0;
			a->val = req->opt[1];
			if (req->val.len == 3 && (sc->in[o] | 0x20) == 'g' &&
			    word2(sc->in, o + 1, 'e', 't')) {
				a->expect = '$';
				a->expect_len = 1;
				return REDIS_TTL_NONE;
			}
			/*
			 * NX, XX: +OK when the key was set (to the value, with
			 * no expiry: NX made it, XX dropped its time to live),
			 * nil when the condition was not met
			 */
			return nx_xx(sc, req->val) ? REDIS_TTL_NONE : 0;
		}
		topt = req->opt[0];
		if (req->argc == 6) {
			/* NX|XX <time option> <n>, <time option> <n> NX|XX */
			if (nx_xx(sc, req->opt[0])) {
				topt = req->opt[1];
				num = req->opt[2];
			} else if (!nx_xx(sc, req->opt[2])) {
				return 0;
			}
		} else if (req->argc != 5) {
			return 0;
		}
		o = topt.off;
		if (o > XPS_SCRATCH - 8)
			return 0;
		if (topt.len == 4) {
			/* EXAT, PXAT */
			if (!word2(sc->in, o + 2, 'a', 't'))
				return 0;
			at = REDIS_TTL_AT;
		} else if (topt.len != 2) {
			return 0;
		}
		if (word2(sc->in, o, 'e', 'x'))
			unit = 1000000000ULL;
		else if (word2(sc->in, o, 'p', 'x'))
			unit = 1000000ULL;
		else
			return 0;
	} else if (n == 5 && req->argc == 4 && (sc->in[o] | 0x20) == 's' &&
		   word2(sc->in, o + 1, 'e', 't') &&
		   word2(sc->in, o + 3, 'e', 'x')) {
		unit = 1000000000ULL;
	} else if (n == 6 && req->argc == 4 && (sc->in[o] | 0x20) == 'p' &&
		   word2(sc->in, o + 1, 's', 'e') &&
		   word2(sc->in, o + 3, 't', 'e') &&
		   (sc->in[o + 5] | 0x20) == 'x') {
		unit = 1000000ULL;
	} else {
		return 0;
	}
	o = num.off;
	n = num.len;
	/* so that clang tests the register it indexes with */
	XPS__HIDE(o);
	if (n < 1 || n > 13 || o >= XPS_SCRATCH || sc->in[o] == '0')
		return 0;
	for (i = 0; i < 13; i++) {
		if (i >= n)
			break;
		c = sc->in[(o + i) & (XPS_SCRATCH - 1)];
		if (c < '0' || c > '9')
			return 0;
		v = v * 10 + (c - '0');
	}
	/*
	 * At most 4 * 10^9 s or 4 * 10^12 ms (as a Unix time, 2096): below
	 * 2^62 ns, no overflow, clear of REDIS_TTL_AT.
	 */
	if (v > (unit == 1000000ULL ? 4000000000000ULL : 4000000000ULL))
		return 0;
	v *= unit;
	if (at)
		return v | at;
	return v > 2000000ULL ? v : 0;
}

/*
 * A write of the walk, counted and invalidated (xps_kv_invalidate()
 * bumped its one key, left in sc->key and of hash @hash), on a
 * connection the handler may serve: if xps_redis_set_ttl() accepts it,
 * committed by the kernel when Redis's reply says it took effect: the
 * value is the request's, with no expiry (SET and GETSET clear any), one
 * its time to live from now (xps_kv_wt_stamp()) or a Unix time.  A time
 * to live is taken from the handler's clocks before Redis executes the
 * write, less a millisecond for Redis's millisecond clock; a Unix time is
 * a deadline on the TAI clock.  Either falls no later than Redis's
 * (docs/coherence.md).  Returns whether it stamped the write's record.
 * A global function, verified once, whatever the walk's state.
 */
__attribute__((noinline))
int xps_redis_write_through(struct __sk_buff *skb, struct xps_kv_scratch *sc,
			    __u32 *cgen, __u64 hash)
{
	struct xps_kv_wt_args *a;
	__u64 ttl;

	if (!sc)
		return 0;
	ttl = xps_redis_set_ttl(sc);
	if (!ttl)
		return 0;
	a = &sc->wt;
	a->client_flags = 0;
	a->expire_ns = 0;
	a->expire_tai_ns = 0;
	if (ttl == REDIS_TTL_NONE) {
		/* no expiry */
	} else if (ttl & REDIS_TTL_AT) {
		/*
		 * A Unix time: the TAI clock, real time plus an offset the
		 * kernel never lets be negative, reaches it no later than
		 * Redis's real-time clock does (docs/coherence.md); the
		 * monotonic clock cannot tell it.
		 */
		a->expire_ns = ~0ULL;
		a->expire_tai_ns = ttl & ~REDIS_TTL_AT;
	} else {
		ttl -= 1000000ULL;	/* Redis's clock: whole milliseconds */
		a->expire_ns = bpf_ktime_get_ns() + ttl;
		a->expire_tai_ns = bpf_ktime_get_tai_ns() + ttl;
	}
	return xps_kv_wt_stamp(skb, sc, cgen, hash, 0);
}

/*
 * An MSET or MSETNX of up to XPS_KV_PAIRS keys in RESP (sc->req, just
 * parsed, counted and invalidated, each key bumped), on a connection the
 * handler may serve: committed by the kernel, all keys or none, when
 * Redis answers that it set them ("+OK"; MSETNX ":1", and ":0" when a key
 * existed and it set none), each key to its value with no expiry (both
 * drop any time to live, as SET does).  One record per key, stamped as a
 * SET's (xps_kv_wt_stamp()) after the bumps of all of them: a key given
 * twice, or two keys of one bucket of unanswered writes, leave two
 * writes pending and commit nothing.  Returns whether the records were
 * stamped.  A global function, verified once, whatever the walk's state.
 */
__attribute__((noinline))
int xps_redis_mset_through(struct __sk_buff *skb, struct xps_kv_scratch *sc,
			   __u32 *cgen)
{
	const struct xps_kv_req *req;
	struct xps_kv_wt_args *a;
	struct xps_span k;
	__u32 o, n, i;
	__u64 ok = 0;

	if (!sc)
		return 0;
	req = &sc->req;
	a = &sc->wt;
	o = req->name.off;
	n = req->name.len;
	/* so that clang tests the register it indexes with */
	XPS__HIDE(o);
	if (!req->nkeys || req->nkeys > XPS_KV_PAIRS ||
	    req->argc != 1 + 2 * req->nkeys || o > XPS_SCRATCH - 8 ||
	    (req->flags & (XPS_F_ALL | XPS_F_BADKEY | XPS_F_QUOTED)))
		return 0;
	if ((n != 4 && n != 6) || (sc->in[o] | 0x20) != 'm' ||
	    !word2(sc->in, o + 1, 's', 'e') || (sc->in[o + 3] | 0x20) != 't')
		return 0;
	if (n == 6) {
		if (!word2(sc->in, o + 4, 'n', 'x'))
			return 0;
		__builtin_memcpy(&ok, ":1\r\n", 4);
		a->expect_len = 4;
	} else {
		__builtin_memcpy(&ok, "+OK\r\n", 5);
		a->expect_len = 5;
	}
	a->expect = ok;
	a->client_flags = 0;
	a->expire_ns = 0;
	a->expire_tai_ns = 0;
	for (i = 0; i < XPS_KV_PAIRS; i++) {
		if (i >= req->nkeys)
			break;
		k = req->keys[i];
		a->val = req->mval[i];
		if (k.len < 1 || k.len > REDIS_KEY_MAX)
			goto drop;
		sc->key.len = k.len;
		if (xps_kv_key_from_in(sc, k.off, k.len) ||
		    !xps_kv_wt_stamp(skb, sc, cgen, xps_kv_hash(&sc->key), i))
			goto drop;
	}
	return 1;
drop:
	/* record 0 is this write's once it was stamped, not before */
	if (i)
		xps_kv_wt_drop();
	return 0;
}

/*
 * A command missing from the handler's table is one Redis refuses,
 * executing nothing, once the filler has found every command this Redis
 * lists in the table (REDIS_CMDS_KNOWN) and while the server it asked is
 * the one listening: not a write, then (docs/coherence.md, "Commands
 * Redis does not know").  Returns the request's kind.
 */
static __always_inline int unknown_refused(struct xps_kv_walk *w, int kind)
{
	struct xps_kv_req *req = &w->sc->req;
	struct redis_state *st = w->st;

	if (!(req->flags & XPS_F_UNKNOWN) ||
	    !(*(volatile __u32 *)&st->kv.flags & REDIS_CMDS_KNOWN) ||
	    xps_server_gone())
		return kind;
	req->flags &= ~(XPS_F_ALL | XPS_F_UNKNOWN);
	req->hint = XPS_REQ_HARMLESS;
	return kind == XPS_REQ_INVALIDATE ? XPS_REQ_HARMLESS : kind;
}

static long walk_one(__u32 i, void *ctx)
{
	struct xps_kv_walk *w = ctx;
	struct xps_kv_req *req = &w->sc->req;
	struct redis_state *st = w->st;
	struct xps_kv_value *v;
	__u32 n;
	int kind;

	/* past the window: the segment's end, or the window moves on */
	if (w->off >= w->len)
		return xps_kv_at_end(w);
	/* a GET or a plain SET: what the parser would say, sooner */
	if (xps_redis_fast_at(w->sc, w->len, w->off)) {
		kind = req->kind;
	} else {
		kind = xps_redis_parse(w->sc->in, w->len, w->off, req);
		kind = unknown_refused(w, kind);
	}
	/* one reply per request, but for the ones Redis ignores */
	if (kind != XPS_REQ_INCOMPLETE && kind != XPS_REQ_MALFORMED)
		xps_kv_count(w);
	switch (kind) {
	case XPS_REQ_SERVE:
		if (!servable_get(req) || xps_kv_set_key(w, &req->keys[0])) {
			w->serve = 0;
			break;
		}
		v = xps_kv_lookup(w);
		if (v && w->serve && stage_bulk(w, v) == 0)
			w->gets++;
		else
			w->serve = 0;
		break;
	case XPS_REQ_INVALIDATE:
		/* how many keys it bumped; the last one left in sc->key */
		n = xps_kv_invalidate(w);
		/* a SET (of one key) or else an MSET, committed by egress */
		if (n && n == req->nkeys && w->learn &&
		    !xps_redis_write_through(w->skb, w->sc, w->cgen,
					     w->hk.hash))
			xps_redis_mset_through(w->skb, w->sc, w->cgen);
		w->serve = 0;
		break;
	case XPS_REQ_STATE:
		/*
		 * A server-wide change (ACL SETUSER, CONFIG SET, MONITOR,
		 * CLIENT PAUSE...) also counts as a write of every key: the
		 * filler lifts the stop only after it was answered.
		 */
		if (req->flags & XPS_F_GLOBAL)
			req->flags |= XPS_F_ALL;
		if (req->nkeys || (req->flags & XPS_F_ALL))
			xps_kv_invalidate(w);
		if (w->cs)
			w->cs->flags |= REDIS_CONN_NO_SERVE;
		if (req->flags & XPS_F_GLOBAL) {
			xps_kv_stop(&st->kv);
			/* after the stop: a grant must see it (redis.h) */
			__sync_fetch_and_and(&st->kv.flags, ~REDIS_CMDS_KNOWN);
		}
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
 * The common case, a segment that is one GET: no walk.  The request is
 * counted.  Returns the reply's length when it is staged, 0 to pass (a
 * miss).  Its own subprogram: its frames stay off the walk's stack.
 */
static __noinline __u32 serve_one(struct xps_kv_walk *w)
{
	struct xps_kv_value *v;

	xps_request(w->skb, 0);
	if (xps_kv_set_key(w, &w->sc->req.keys[0]))
		return 0;
	v = xps_kv_lookup(w);
	if (!v || stage_bulk(w, v))
		return 0;
	return w->out_len;
}

SEC("xps")
int xps_redis(struct __sk_buff *skb)
{
	struct xps_kv_walk w = {
		.skb = skb, .serve = 1, .key_max = REDIS_KEY_MAX,
		.conn_no_serve = REDIS_CONN_NO_SERVE,
	};
	struct xps_kv_scratch *sc;
	struct redis_state *st;
	__u32 zero = 0, n, out;
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
	w.cs = xps_conn_state(skb);
	w.seg_len = xps_len(skb);

	now = bpf_ktime_get_ns();
	/* the tail of a request an earlier segment started */
	if (xps_kv_skip(&w)) {
		xps_kv_passed(w.cs, now);
		return xps_pass(skb);
	}
	if (!w.cs || (w.cs->flags & REDIS_CONN_NO_SERVE) ||
	    !xps_kv_may_serve(&st->kv, now))
		w.serve = 0;
	/* a miss may teach the filler the value, where a GET may be served */
	w.learn = w.serve;
	if (!xps_may_consume(skb) || xps_kv_idle_due(&st->kv, w.cs, now))
		w.serve = 0;

	if (xps_kv_load(&w)) {
		xps_kv_passed(w.cs, now);
		return xps_pass(skb);
	}
	n = w.len;

	/* the common case: the segment is one GET (see serve_one()) */
	if (w.serve &&
	    xps_redis_parse_get(sc->in, n, 0, &sc->req.keys[0]) == w.seg_len &&
	    sc->req.keys[0].len <= REDIS_KEY_MAX) {
		sc->req.nkeys = 1;
		w.gets = serve_one(&w) ? 1 : 0;
	} else {
		bpf_loop(XPS_MAX_REQS_PER_SEG, walk_one, &w, 0);
		xps_kv_walk_end(&w, count_rest, sc);
		xps_kv_write_through_end(w.out);
	}
	if (!w.serve || !w.gets) {
		xps_kv_passed(w.cs, now);
		return xps_pass(skb);
	}

	out = w.out_len;
	barrier_var(out);
	if (out < 1 || out > XPS_STAGE_SIZE)	/* only for the verifier */
		return xps_pass(skb);
	if (xps_reply(skb, w.out->b, out))
		return xps_pass(skb);
	return xps_tx(skb);
}
