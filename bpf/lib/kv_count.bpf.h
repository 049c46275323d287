/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Counting the requests of a segment past what a key-value handler's walk
 * parsed (more requests than it walks, or bytes beyond its scratch copy),
 * so that the framework knows how many replies the service owes
 * (docs/ordering.md).  Only boundaries matter here: the walk already
 * invalidated everything such a segment may write.
 *
 * XPS_KV_COUNT(name, scratch type, parse function, count STATE requests)
 * defines name(skb, sc, cs, seg_off, seg_len): count the requests from
 * segment offset seg_off; sc->in and sc->req are overwritten.  A request
 * that runs past the segment leaves the rest for cs->skip; one whose head
 * the segment cut is carried to the next segment (lib/kvcache.bpf.h,
 * which must come first), which counts it.
 */
#ifndef __XPS_KV_COUNT_BPF_H
#define __XPS_KV_COUNT_BPF_H

/* Requests counted per segment at most; more: the count is lost. */
#define XPS_KV_COUNT_MAX	1024

#define XPS_KV_COUNT(name, scratch_t, parse, count_state)		\
struct name##_walk {							\
	scratch_t *sc;							\
	struct __sk_buff *skb;						\
	struct xps_conn_hstate *cs;					\
	__u32 seg_len;							\
	__u32 base;		/* segment offset of sc->in[0] */	\
	__u32 len;		/* bytes in sc->in */			\
	__u32 off;		/* next request, in sc->in */		\
	int done;							\
};									\
									\
/* Copy the segment from @at into sc->in. */				\
static __always_inline int name##_window(struct name##_walk *w, __u32 at) \
{									\
	__u32 n = w->seg_len - at;					\
									\
	if (n > XPS_SCRATCH)						\
		n = XPS_SCRATCH;					\
	barrier_var(n);							\
	if (n < 1 || n > XPS_SCRATCH)					\
		return -1;						\
	if (xps_load(w->skb, at, w->sc->in, n))				\
		return -1;						\
	w->base = at;							\
	w->len = n;							\
	w->off = 0;							\
	return 0;							\
}									\
									\
static long name##_one(__u32 i, void *ctx)				\
{									\
	struct name##_walk *w = ctx;					\
	struct xps_kv_req *req = &w->sc->req;				\
	__u32 at = w->base + w->off, end;				\
	int kind;							\
									\
	if (at >= w->seg_len) {						\
		w->done = 1;						\
		return 1;						\
	}								\
	if (w->off >= w->len && name##_window(w, at))			\
		goto lost;						\
	kind = parse(w->sc->in, w->len, w->off, req);			\
	if (kind == XPS_REQ_INCOMPLETE && !req->req_len) {		\
		/* not all of its head is in the window: move it */	\
		if (w->off && w->base + w->len < w->seg_len) {		\
			if (name##_window(w, at))			\
				goto lost;				\
			return 0;					\
		}							\
		/* its head runs past the segment: kept for the next	\
		 * one, as the walk keeps one (xps_kv_carry_save())	\
		 */							\
		if (w->cs && w->base + w->len >= w->seg_len &&		\
		    !(req->flags & XPS_F_TOO_BIG) &&			\
		    !xps_kv_carry_save(w->sc, w->off, w->seg_len - at)) { \
			w->cs->flags |= XPS_KV_CONN_CARRY;		\
			w->done = 1;					\
			return 1;					\
		}							\
		goto lost;						\
	}								\
	if (kind == XPS_REQ_MALFORMED ||				\
	    (kind == XPS_REQ_STATE && !(count_state)))			\
		goto lost;						\
	if (req->flags & XPS_F_NOREPLY)					\
		xps_requests_none(w->skb);				\
	else								\
		xps_request(w->skb, 0);					\
	end = at + req->req_len;					\
	if (end >= w->seg_len) {					\
		if (end > w->seg_len) {					\
			if (!w->cs)					\
				goto lost;				\
			w->cs->skip = end - w->seg_len;			\
		}							\
		w->done = 1;						\
		return 1;						\
	}								\
	if (end >= w->base + w->len) {					\
		/* the next request starts past the window */		\
		w->off = w->len;					\
		w->base = end - w->len;					\
		return 0;						\
	}								\
	w->off += req->req_len;						\
	return 0;							\
lost:									\
	xps_requests_lost(w->skb);					\
	w->done = 1;							\
	return 1;							\
}									\
									\
static __always_inline void name(struct __sk_buff *skb, scratch_t *sc,	\
				 struct xps_conn_hstate *cs,		\
				 __u32 seg_off, __u32 seg_len)		\
{									\
	struct name##_walk w = {					\
		.sc = sc, .skb = skb, .cs = cs, .seg_len = seg_len,	\
		.base = seg_off,					\
	};								\
									\
	bpf_loop(XPS_KV_COUNT_MAX, name##_one, &w, 0);			\
	if (!w.done)							\
		xps_requests_lost(skb);					\
}

#endif /* __XPS_KV_COUNT_BPF_H */
