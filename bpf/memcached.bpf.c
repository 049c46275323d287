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
#include "stage.bpf.h"
#include "kvsum.bpf.h"
#include "kv_count.bpf.h"
#include <xps/memcached.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

XPS_DATA_MAP(struct mc_key, struct mc_value, MC_CACHE_ENTRIES);
XPS_MISS_QUEUE(struct mc_key, MC_MISS_QUEUE);
XPS_STATE_MAP(struct mc_state);
XPS_VERSION_MAP(struct mc_key, MC_VERSIONS);


struct mc_scratch {
	/* the request; the tail pads key copies (verifier) */
	__u8 in[XPS_SCRATCH + MC_KEY_MAX + 8];
	__u8 hdr[XPS_SCRATCH];		/* one VALUE line, encoded */
	struct xps_stage out;			/* the reply, built */
	struct xps_kv_req req;
	struct mc_key key;
	__u8 key_pad[8];	/* zeros: the seal reads the key in words */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mc_scratch);
} mc_scratch SEC(".maps");

XPS_KV_COUNT(count_rest, struct mc_scratch, xps_mc_parse, 0);

struct walk {
	struct mc_scratch *sc;
	struct mc_state *st;
	struct xps_conn_hstate *cs;
	struct __sk_buff *skb;
	__u32 base;		/* first request byte (8 on UDP) */
	__u32 len;
	__u32 seg_len;
	__u32 off;
	__u32 out_len;
	__u32 gets;
	int udp;
	int serve;
	int done;
};

static __always_inline int set_key(struct walk *w, const struct xps_span *sp)
{
	struct mc_key *k = &w->sc->key;
	__u32 off = sp->off, len = sp->len;

	__builtin_memset(k, 0, sizeof(*k));
	barrier_var(len);
	barrier_var(off);
	if (len < 1 || len > MC_KEY_MAX || off >= XPS_SCRATCH)
		return -1;
	k->len = len;
	/* the same bytes as in sc->in, from the request itself */
	return xps_load(w->skb, off, k->k, len);
}

/* memcached's largest relative exptime; larger ones are unix times */
#define MC_REALTIME_MAXDELTA	(60ULL * 60 * 24 * 30)
/*
 * memcached kills items once its one-second clock reaches the deadline
 * minus one second (oldest_live), and that clock lags real time by up to
 * a second: the moment is only known to within [deadline - 2 s, deadline].
 * Nothing is served in that window (one more second on either side), and
 * the cache is invalidated at its end.
 */
#define MC_FLUSH_EARLY_NS	(3 * 1000000000ULL)
#define MC_FLUSH_LATE_NS	(1 * 1000000000ULL)

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
		__sync_fetch_and_add(&st->cgen, 1);
	}
	return 1;
}

static __always_inline void invalidate(struct walk *w)
{
	struct xps_kv_req *req = &w->sc->req;
	__u32 i;

	/* count the write first, then invalidate (docs/coherence.md) */
	if (w->udp)
		w->st->last_udp_write_ns = bpf_ktime_get_ns();
	xps_note_write(w->skb);
	if (req->flags & XPS_F_ALL) {
		__sync_fetch_and_add(&w->st->cgen, 1);
		if (req->flags & XPS_F_DEFERRED)	/* flush_all <delay> */
			flush_later(w->st, req->num);
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

/* Append @n (<= 1 KiB) bytes of @src to the staged reply. */
static __always_inline int stage(struct walk *w, const void *src, __u32 n)
{
	if (n && xps_stage_copy(&w->sc->out, w->out_len,
				(const struct xps_stage_chunk *)src, n))
		return -1;
	w->out_len += n;
	return 0;
}

static __always_inline int stage_lit(struct walk *w, const char *s, __u32 n)
{
	if (xps_stage_lit(&w->sc->out, w->out_len, s, n))
		return -1;
	w->out_len += n;
	return 0;
}

/*
 * One VALUE block for key i of the current request, from the cache: @v's
 * stamps as read once by the caller, its bytes as copied here, served
 * only when the copy matches the seal the filler put on it
 * (include/xps/kvsum.h).
 */
static __always_inline int stage_value(struct walk *w, __u32 i,
				       struct mc_value *v, __u32 vlen,
				       __u32 cgen, __u32 flags, __u64 cas,
				       __u64 ver, __u64 sum, int with_cas)
{
	struct xps_kv_req *req = &w->sc->req;
	__u32 h, at;

	if (i >= XPS_MAX_KEYS || vlen > MC_VALUE_MAX)
		return -1;
	h = xps_mc_encode_value_hdr(w->sc->hdr, 0, w->sc->in, req->keys[i],
				    flags, vlen, cas, with_cas);
	if (!h || stage(w, w->sc->hdr, h))
		return -1;
	at = w->out_len;
	if (stage(w, v->v, vlen))
		return -1;
	/* torn, another key's or replaced while copied: not served */
	if (xps_kv_sum_stage(&w->sc->out, at, vlen,
			     xps_kv_seal_head(vlen | (__u64)cgen << 32, ver,
					      cas, flags, w->sc->key.k,
					      w->sc->key.len, 256)) != sum)
		return -1;
	return stage_lit(w, "\r\n", 2);
}

static long walk_one(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	struct xps_kv_req *req = &w->sc->req;
	__u32 k, vlen = 0, cgen = 0, flags = 0;
	__u64 cas = 0, ver = 0, sum = 0;
	struct mc_value *v;
	int kind;

	if (w->off >= w->len) {
		w->done = 1;
		return 1;
	}
	kind = xps_mc_parse(w->sc->in, w->len, w->off, req);
	/*
	 * One reply per request but noreply ones; quit and watch end the
	 * replies the connection can count (STATE).
	 */
	if (kind == XPS_REQ_STATE)
		xps_requests_lost(w->skb);
	else if (kind != XPS_REQ_INCOMPLETE && kind != XPS_REQ_MALFORMED &&
		 (req->flags & XPS_F_NOREPLY))
		xps_requests_none(w->skb);
	else if (kind != XPS_REQ_INCOMPLETE && kind != XPS_REQ_MALFORMED)
		xps_request(w->skb, 0);
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
			if (set_key(w, &req->keys[k])) {
				w->serve = 0;
				break;
			}
			v = xps_data_lookup(&w->sc->key);
			if (v) {
				/* each read once: the seal is checked with these */
				vlen = *(volatile __u32 *)&v->len;
				cgen = *(volatile __u32 *)&v->cgen;
				flags = *(volatile __u32 *)&v->flags;
				cas = *(volatile __u64 *)&v->cas;
				ver = *(volatile __u64 *)&v->version;
				sum = *(volatile __u64 *)&v->sum;
			}
			if (!v || cgen != w->st->cgen ||
			    ver != xps_version_get(&w->sc->key)) {
				xps_note_miss(&w->sc->key);
				w->serve = 0;
				continue;
			}
			if (w->serve &&
			    stage_value(w, k, v, vlen, cgen, flags, cas, ver,
					sum, !!(req->flags & XPS_F_CAS)))
				w->serve = 0;
		}
		if (w->serve && !stage_lit(w, XPS_MC_END, XPS_MC_END_LEN))
			w->gets++;
		else
			w->serve = 0;
		break;
	case XPS_REQ_INVALIDATE:
		invalidate(w);
		w->serve = 0;
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
		break;
	case XPS_REQ_HARMLESS:
		w->serve = 0;
		break;
	case XPS_REQ_INCOMPLETE:
		w->serve = 0;
		if (req->hint != XPS_REQ_SERVE && req->hint != XPS_REQ_HARMLESS) {
			req->flags |= XPS_F_ALL;
			invalidate(w);
		}
		if (w->cs && req->req_len && w->len == w->seg_len &&
		    !(req->flags & XPS_F_TOO_BIG)) {
			w->cs->skip = w->off + req->req_len - w->len;
			if (req->flags & XPS_F_NOREPLY)
				xps_requests_none(w->skb);
			else
				xps_request(w->skb, 0);
		} else if (w->len == w->seg_len) {
			/* its head runs past the segment: the next
			 * request's start is unknown
			 */
			if (w->cs)
				w->cs->flags |= MC_CONN_NO_SERVE;
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
			w->cs->flags |= MC_CONN_NO_SERVE;
		w->serve = 0;
		w->done = 1;
		return 1;
	}
	w->off += req->req_len;
	return 0;
}

SEC("xps")
int xps_memcached(struct __sk_buff *skb)
{
	struct walk w = { .skb = skb, .serve = 1 };
	__u32 zero = 0, n, out;
	__u16 req_id = 0;

	w.sc = bpf_map_lookup_elem(&mc_scratch, &zero);
	w.st = bpf_map_lookup_elem(&xps_state, &zero);
	if (!w.sc || !w.st)
		return xps_pass(skb);
	w.cs = xps_conn_state(skb);
	w.udp = !w.cs && xps_len(skb) >= XPS_MC_UDP_HDR_LEN &&
		xps_backend != XPS_BACKEND_SOCKMAP;
	w.seg_len = xps_len(skb);

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
	/*
	 * TCP needs the connection's record to be served (state across
	 * segments); UDP is one datagram, one request.
	 */
	if ((w.cs && (w.cs->flags & MC_CONN_NO_SERVE)) ||
	    (w.st->flags & MC_NO_SERVE) || !xps_may_consume(skb) ||
	    flush_due(w.st))
		w.serve = 0;

	n = w.seg_len < XPS_SCRATCH ? w.seg_len : XPS_SCRATCH;
	barrier_var(n);
	if (n < 1 || n > XPS_SCRATCH)
		return xps_pass(skb);
	if (xps_load(skb, 0, w.sc->in, n))
		return xps_pass(skb);
	w.len = n;

	if (w.udp) {
		/* the 8-byte frame: one datagram, one request */
		if (xps_mc_udp_parse(w.sc->in, n, &req_id))
			return xps_pass(skb);
		w.off = XPS_MC_UDP_HDR_LEN;
		w.base = XPS_MC_UDP_HDR_LEN;
		w.out_len = XPS_MC_UDP_HDR_LEN;
	} else if (!w.cs) {
		w.serve = 0;	/* TCP without a record: state unknown */
	}

	bpf_loop(w.udp ? 1 : XPS_MAX_REQS_PER_SEG, walk_one, &w, 0);
	/* the last iteration may have consumed the last request */
	if (w.off >= w.len)
		w.done = 1;

	if (!w.done || w.len < w.seg_len) {
		if (!w.done || w.off < w.seg_len) {
			xps_note_write(skb);
			__sync_fetch_and_add(&w.st->cgen, 1);
			/* where the requests after the walk begin and end */
			if (xps_requests_counted(skb))
				count_rest(skb, w.sc, w.cs, w.off, w.seg_len);
			if (!xps_requests_counted(skb) && w.cs)
				w.cs->flags |= MC_CONN_NO_SERVE;
		}
		w.serve = 0;
	}
	/* memcached splits UDP replies over 1400 bytes: leave those to it */
	if (w.udp && w.out_len > 1400)
		w.serve = 0;
	if (!w.serve || !w.gets)
		return xps_pass(skb);
	if (w.udp)
		xps_mc_udp_encode(w.sc->out.b, req_id, 0, 1);

	out = w.out_len;
	barrier_var(out);
	if (out < 1 || out > XPS_STAGE_SIZE)	/* only for the verifier */
		return xps_pass(skb);
	if (xps_resize(skb, out) || xps_store(skb, 0, w.sc->out.b, out))
		return xps_pass(skb);
	return xps_tx(skb);
}
