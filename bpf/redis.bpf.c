// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Redis GET from the kernel, for an unmodified redis-server.
 *
 * A segment is answered only when every request in it is a GET of a cached
 * key on a connection in a state where Redis would answer exactly what the
 * cache holds; the reply is then the concatenation of the bulk replies
 * Redis would have sent.  Anything else is passed, after every key a write
 * in the segment touches has been invalidated (and the write counted for
 * the filler's coherence check, see docs/coherence.md).
 */
#define XPS_REPLY_PROTO XPS_REPLY_RESP	/* docs/ordering.md */
#include "xps.bpf.h"
#include "proto/redis.bpf.h"
#include "stage.bpf.h"
#include "kvsum.bpf.h"
#include "kv_count.bpf.h"
#include <xps/redis.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

XPS_DATA_MAP(struct redis_key, struct redis_value, REDIS_CACHE_ENTRIES);
XPS_MISS_QUEUE(struct redis_key, REDIS_MISS_QUEUE);
XPS_STATE_MAP(struct redis_state);
XPS_VERSION_MAP(struct redis_key, REDIS_VERSIONS);


struct redis_scratch {
	/* the segment's first bytes; the tail pads key copies (verifier) */
	__u8 in[XPS_SCRATCH + REDIS_KEY_MAX];
	struct xps_stage out;			/* the reply, built */
	struct xps_kv_req req;
	struct redis_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct redis_scratch);
} redis_scratch SEC(".maps");

XPS_KV_COUNT(count_rest, struct redis_scratch, xps_redis_parse, 1);

/* State of one walk over a segment (bpf_loop callback context). */
struct walk {
	struct redis_scratch *sc;
	struct redis_state *st;
	struct xps_conn_hstate *cs;
	struct __sk_buff *skb;
	__u32 len;		/* bytes in sc->in */
	__u32 seg_len;		/* bytes in the segment */
	__u32 off;		/* next request */
	__u32 out_len;		/* reply bytes built */
	__u32 gets;		/* GETs answered from the cache */
	int serve;		/* every request so far can be answered */
	int done;
};

static __always_inline int set_key(struct walk *w, const struct xps_span *sp)
{
	struct redis_key *k = &w->sc->key;
	__u32 off = sp->off, len = sp->len;

	__builtin_memset(k, 0, sizeof(*k));
	barrier_var(len);
	barrier_var(off);
	if (len < 1 || len > REDIS_KEY_MAX || off >= XPS_SCRATCH)
		return -1;
	k->len = len;
	/* the same bytes as in sc->in, from the request itself */
	return xps_load(w->skb, off, k->k, len);
}

/* A write touches these keys (or everything): invalidate, then count it. */
static __always_inline void invalidate(struct walk *w)
{
	struct xps_kv_req *req = &w->sc->req;
	__u32 i;

	/*
	 * Count the write first, then bump the versions: a fill that reads
	 * a version after the bump then finds the write unanswered and
	 * fetches nothing; one that read it before stamps its value with
	 * the old version, which is never served again (docs/coherence.md).
	 */
	xps_note_write(w->skb);
	if (req->flags & XPS_F_ALL) {
		__sync_fetch_and_add(&w->st->cgen, 1);
	} else {
		for (i = 0; i < XPS_MAX_KEYS; i++) {
			if (i >= req->nkeys)
				break;
			/* keys that cannot be set were never cached */
			if (set_key(w, &req->keys[i]))
				continue;
			if (xps_version_bump(&w->sc->key))
				__sync_fetch_and_add(&w->st->cgen, 1);
			bpf_map_delete_elem(&xps_data, &w->sc->key);
		}
	}
}

/*
 * Append the bulk reply of @v, @vlen bytes long, to the staged reply, if
 * the copy matches @sum, the seal the filler put on it, when computed
 * from @head (the seal of the value's stamps and of the key asked for).
 */
static __always_inline int stage_bulk(struct walk *w, struct redis_value *v,
				      __u32 vlen, __u64 head, __u64 sum)
{
	__u8 hdr[XPS_REDIS_BULK_HDR_MAX];
	__u32 h, at = w->out_len, i;

	if (vlen > REDIS_VALUE_MAX || at > XPS_STAGE_SIZE)
		return -1;
	h = xps_redis_encode_bulk_hdr(hdr, vlen);
	if (at + h + vlen + 2 > XPS_STAGE_SIZE)
		return -1;
	for (i = 0; i < XPS_REDIS_BULK_HDR_MAX; i++) {
		if (i >= h)
			break;
		w->sc->out.b[(at + i) & (XPS_STAGE_SIZE - 1)] = hdr[i];
	}
	at += h;
	if (vlen && xps_stage_copy(&w->sc->out, at,
				   (const struct xps_stage_chunk *)v->v, vlen))
		return -1;
	/* torn, another key's or replaced while copied: not served */
	if (xps_kv_sum_stage(&w->sc->out, at, vlen, head) != sum)
		return -1;
	at += vlen;
	w->sc->out.b[at & (XPS_STAGE_SIZE - 1)] = '\r';
	w->sc->out.b[(at + 1) & (XPS_STAGE_SIZE - 1)] = '\n';
	w->out_len = at + 2;
	return 0;
}

static long walk_one(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	struct xps_kv_req *req = &w->sc->req;
	struct redis_value *v;
	__u32 vlen = 0, cgen = 0;
	__u64 ver = 0, sum = 0;
	int kind;

	if (w->off >= w->len) {
		w->done = 1;
		return 1;
	}
	kind = xps_redis_parse(w->sc->in, w->len, w->off, req);
	/* one reply per request, but for the ones Redis ignores */
	if (kind != XPS_REQ_INCOMPLETE && kind != XPS_REQ_MALFORMED) {
		if (req->flags & XPS_F_NOREPLY)
			xps_requests_none(w->skb);
		else
			xps_request(w->skb, 0);
	}
	switch (kind) {
	case XPS_REQ_SERVE:
		if (req->nkeys != 1 || req->keys[0].len > REDIS_KEY_MAX ||
		    (req->flags & (XPS_F_BADKEY | XPS_F_QUOTED))) {
			w->serve = 0;
			break;
		}
		if (set_key(w, &req->keys[0])) {
			w->serve = 0;
			break;
		}
		v = xps_data_lookup(&w->sc->key);
		if (v) {
			/* each stamp read once: the seal is checked with these */
			vlen = *(volatile __u32 *)&v->len;
			cgen = *(volatile __u32 *)&v->cgen;
			ver = *(volatile __u64 *)&v->version;
			sum = *(volatile __u64 *)&v->sum;
		}
		if (!v || cgen != w->st->cgen ||
		    ver != xps_version_get(&w->sc->key)) {
			xps_note_miss(&w->sc->key);
			w->serve = 0;
			break;
		}
		if (w->serve &&
		    stage_bulk(w, v, vlen,
			       xps_kv_seal_head(vlen | (__u64)cgen << 32, ver,
						0, 0, w->sc->key.k,
						w->sc->key.len, REDIS_KEY_MAX),
			       sum) == 0)
			w->gets++;
		else
			w->serve = 0;
		break;
	case XPS_REQ_INVALIDATE:
		invalidate(w);
		w->serve = 0;
		break;
	case XPS_REQ_STATE:
		if (req->nkeys || (req->flags & XPS_F_ALL))
			invalidate(w);
		if (w->cs)
			w->cs->flags |= REDIS_CONN_NO_SERVE;
		if (req->flags & XPS_F_GLOBAL)
			w->st->flags |= REDIS_NO_SERVE;
		w->serve = 0;
		break;
	case XPS_REQ_HARMLESS:
		w->serve = 0;
		break;
	case XPS_REQ_INCOMPLETE:
		/*
		 * The request continues in the next segment.  A write whose
		 * keys are not all known yet invalidates everything; the rest
		 * of a request of known length is passed unparsed.
		 */
		w->serve = 0;
		if (req->hint != XPS_REQ_SERVE && req->hint != XPS_REQ_HARMLESS) {
			req->flags |= XPS_F_ALL;
			invalidate(w);
		}
		if (w->cs && req->req_len && w->len == w->seg_len &&
		    !(req->flags & XPS_F_TOO_BIG)) {
			w->cs->skip = w->off + req->req_len - w->len;
			xps_request(w->skb, 0);
		} else if (w->len == w->seg_len) {
			/* its head runs past the segment: the next
			 * request's start is unknown
			 */
			if (w->cs)
				w->cs->flags |= REDIS_CONN_NO_SERVE;
			xps_requests_lost(w->skb);
		}
		/* else: past the scratch copy, count_rest() counts it */
		w->done = 1;
		return 1;
	default:	/* MALFORMED: boundaries lost */
		xps_requests_lost(w->skb);
		req->flags |= XPS_F_ALL;
		invalidate(w);
		if (w->cs)
			w->cs->flags |= REDIS_CONN_NO_SERVE;
		w->serve = 0;
		w->done = 1;
		return 1;
	}
	w->off += req->req_len;
	return 0;
}

SEC("xps")
int xps_redis(struct __sk_buff *skb)
{
	struct walk w = { .skb = skb, .serve = 1 };
	__u32 zero = 0, n, out;

	w.sc = bpf_map_lookup_elem(&redis_scratch, &zero);
	w.st = bpf_map_lookup_elem(&xps_state, &zero);
	if (!w.sc || !w.st)
		return xps_pass(skb);
	w.cs = xps_conn_state(skb);
	w.seg_len = xps_len(skb);

	/* the tail of a request an earlier segment started */
	if (w.cs && w.cs->skip) {
		if (w.cs->skip >= w.seg_len) {
			w.cs->skip -= w.seg_len;
			xps_requests_none(skb);
			return xps_pass(skb);
		}
		w.off = w.cs->skip;
		w.cs->skip = 0;
		w.serve = 0;
	}
	if (!w.cs || (w.cs->flags & REDIS_CONN_NO_SERVE) ||
	    (w.st->flags & REDIS_NO_SERVE) || !xps_may_consume(skb))
		w.serve = 0;

	n = w.seg_len < XPS_SCRATCH ? w.seg_len : XPS_SCRATCH;
	barrier_var(n);
	if (n < 1 || n > XPS_SCRATCH)
		return xps_pass(skb);
	if (xps_load(skb, 0, w.sc->in, n))
		return xps_pass(skb);
	w.len = n;

	bpf_loop(XPS_MAX_REQS_PER_SEG, walk_one, &w, 0);
	/* the last iteration may have consumed the last request */
	if (w.off >= w.len)
		w.done = 1;

	/* requests left unparsed may be writes: they invalidate everything */
	if (!w.done || w.len < w.seg_len) {
		if (!w.done || w.off < w.seg_len) {
			xps_note_write(skb);
			__sync_fetch_and_add(&w.st->cgen, 1);
			/* where the requests after the walk begin and end */
			if (xps_requests_counted(skb))
				count_rest(skb, w.sc, w.cs, w.off, w.seg_len);
			if (!xps_requests_counted(skb) && w.cs)
				w.cs->flags |= REDIS_CONN_NO_SERVE;
		}
		w.serve = 0;
	}
	if (!w.serve || !w.gets)
		return xps_pass(skb);

	out = w.out_len;
	barrier_var(out);
	if (out < 1 || out > XPS_STAGE_SIZE)	/* only for the verifier */
		return xps_pass(skb);
	if (xps_resize(skb, out) || xps_store(skb, 0, w.sc->out.b, out))
		return xps_pass(skb);
	return xps_tx(skb);
}
