/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The key-value cache shared by the Redis and memcached handlers, written
 * once: its maps, the lookup a GET makes, the invalidation a write makes,
 * and the parts of the segment walk that do not depend on the protocol.
 * Each service keeps its parser, its reply encoder and what its SERVE and
 * STATE requests do (services/redis/redis.bpf.c, services/memcached/memcached.bpf.c).
 *
 * Maps are keyed by the key's 64-bit hash (include/xps/kvcache.h): a GET
 * makes three lookups of 8-byte keys (value, version, access counter)
 * where it made three of a zero-padded 132- or 256-byte key.
 *
 * Coherence (docs/coherence.md): a write counts itself (xps_note_write()),
 * then bumps the version of each key it writes, or the cache generation
 * for every key, then deletes the entries.  A value is served only while
 * its stamp equals the key's version and the current cache generation,
 * the stored key equals the requested one, and the bytes copied match the
 * filler's seal.  A write whose request says what the key will hold may
 * leave a sealed value that the framework's egress step commits when the
 * server acknowledges the write (xps_kv_wt_stamp()).
 */
#ifndef __XPS_KVCACHE_BPF_H
#define __XPS_KVCACHE_BPF_H

#include <xps/kvcache.h>
#include "coherence.bpf.h"
#include "stage.bpf.h"
#include "kvsum.bpf.h"

/*
 * The context's maps (libxps pins them under /sys/fs/bpf/xps/ctx/<name>/):
 * xps_data, the values; xps_keystats, per-key accesses for
 * xps_get_stats(); xps_versions, written by the handler only (a key never
 * written has version 0, a full map invalidates everything); xps_misses,
 * keys looked up and not found, for the filler (the oldest are dropped
 * when it is full).  A service may size them before including this file.
 */
#ifndef XPS_KV_ENTRIES
#define XPS_KV_ENTRIES		65536
#endif
#ifndef XPS_KV_MISS_ENTRIES
#define XPS_KV_MISS_ENTRIES	4096
#endif
#ifndef XPS_KV_VERSION_ENTRIES
#define XPS_KV_VERSION_ENTRIES	262144	/* keys written; beyond: every key */
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XPS_KV_ENTRIES);
	__type(key, struct xps_kv_hkey);
	__type(value, struct xps_kv_value);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} xps_data SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, XPS_KV_ENTRIES);
	__type(key, struct xps_kv_hkey);
	__type(value, __u64);
} xps_keystats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XPS_KV_VERSION_ENTRIES);
	__type(key, struct xps_kv_hkey);
	__type(value, __u64);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} xps_versions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, XPS_KV_MISS_ENTRIES);
	__type(value, struct xps_kv_key);
} xps_misses SEC(".maps");

/* Global functions: verified once, whatever the caller's state. */
__attribute__((noinline))
__u64 xps_kv_hash(const struct xps_kv_key *k)
{
	if (!k)
		return 0;
	return xps_kv_hash_key(k);
}

__attribute__((noinline))
int xps_kv_same_key(const struct xps_kv_key *a, const struct xps_kv_key *b)
{
	if (!a || !b)
		return 0;
	return xps_kv_key_eq(a, b);
}

/*
 * The stamps of the value the last lookup found, each read once from its
 * map element (in the scratch: the walk's stack is full).  The element
 * may be freed and reused for another key while a handler reads it
 * (docs/coherence.md, "What is served is what was filled"), so what is
 * checked, encoded and sealed is these copies, never the element's fields
 * read again.
 */
struct xps_kv_hit {
	__u64 version;
	__u64 cas;
	__u64 sum;
	__u64 expire_ns;
	__u64 expire_tai_ns;
	__u32 len;
	__u32 cgen;
	__u32 client_flags;
	__u32 pad;
};

/*
 * What a write-through leaves (xps_kv_wt_stamp()): its value's
 * span, the reply that says it took effect, its flags and its expiry.
 */
struct xps_kv_wt_args {
	__u64 expect;			/* struct xps_conn_wt */
	__u64 expire_ns;		/* struct xps_kv_value; 0: never */
	__u64 expire_tai_ns;
	struct xps_span val;		/* in sc->in (the segment from sc->base) */
	__u32 expect_len;
	__u32 client_flags;
	__u32 pad;
};

/* Per-CPU scratch of a run (too big for the 512-byte BPF stack). */
struct xps_kv_scratch {
	struct xps_kv_req req;		/* the current parse */
	struct xps_kv_key key;		/* the current key */
	struct xps_kv_hit hit;		/* what the last lookup found */
	struct xps_kv_wt_args wt;	/* a write-through's arguments */
	/*
	 * The segment's offset of sc->in[0] once the walk moved its window
	 * (xps_kv_window()); 0 before, when a head carried from the last
	 * segment may come first (then nothing is committed from it)
	 */
	__u32 base;
	__u32 pad;
	__u8 hdr[XPS_SCRATCH];		/* memcached: one VALUE line */
	/* the segment's first bytes; the tail pads key copies (verifier) */
	__u8 in[XPS_SCRATCH + XPS_KV_KEY_MAX + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_RUN_LEVELS);
	__type(key, __u32);
	__type(value, struct xps_kv_scratch);
} xps_kv_scratch SEC(".maps");

/*
 * The reply being built, per CPU: a map of its own, as the per-CPU value
 * limit (32 KiB) leaves no room beside it in xps_kv_scratch.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_RUN_LEVELS);
	__type(key, __u32);
	__type(value, struct xps_stage);
} xps_kv_stage SEC(".maps");

/*
 * State of one walk over a segment (the bpf_loop callbacks' context, on
 * the stack: kept small, the parsers' frames come on top of it).
 */
struct xps_kv_walk {
	struct __sk_buff *skb;
	struct xps_kv_scratch *sc;
	struct xps_stage *out;		/* the reply, built (xps_kv_stage) */
	void *st;			/* the service's state (XPS_STATE_MAP) */
	__u32 *cgen;			/* the state's cache generation */
	__u64 *udp_write_ns;		/* where a UDP write notes its time */
	struct xps_conn_hstate *cs;
	struct xps_kv_hkey hk;		/* hash of sc->key */
	__u16 key_max;			/* longest key the service caches */
	__u16 conn_no_serve;		/* the service's "stop serving" flag */
	__u32 carry;			/* bytes of sc->in carried (xps_kv_load()) */
	__u32 len;			/* bytes in sc->in */
	__u32 seg_len;			/* bytes in the segment */
	__u32 off;			/* next request */
	__u32 out_len;			/* reply bytes built */
	__u32 gets;			/* GETs answered from the cache */
	__u8 serve;			/* every request so far can be answered */
	__u8 done;
	__u8 udp;
	__u8 learn;			/* a miss may arm a reply capture */
};

/*
 * A connection whose request boundaries the handler lost (a request head
 * that ran past what it could keep, bytes it could not parse): where the
 * next request starts is unknown, so its later bytes may hold any write
 * at any offset, and a parse from a wrong boundary could read a value's
 * bytes as requests and a real write as a value.  Such a connection is
 * never parsed again: each of its later segments counts as a write of
 * every key (xps_kv_skip()).  A bit of the connection's handler state
 * (struct xps_conn_hstate) that the services leave free.
 */
#define XPS_KV_CONN_ADRIFT	(1U << 15)

/*
 * A connection the service stopped executing: a request of it drew a
 * protocol error (XPS_F_CLOSES), after which the service executes nothing
 * more of it and closes it.  Its later segments are passed unparsed and
 * uncounted, and are no writes (xps_kv_skip()).  A bit of the connection's
 * handler state that the services leave free.
 */
#define XPS_KV_CONN_CLOSING	(1U << 13)

/* The walk lost the request boundaries of the segment's connection. */
static __always_inline void xps_kv_adrift(struct xps_kv_walk *w)
{
	xps_requests_lost(w->skb);
	if (w->cs)
		w->cs->flags |= w->conn_no_serve | XPS_KV_CONN_ADRIFT;
}

/*
 * Bytes the walk cannot name the writes of: an unanswered write of every
 * key (docs/coherence.md), counted before the cache generation moves.
 */
static __always_inline void xps_kv_write_all(struct xps_kv_walk *w)
{
	xps_note_write(w->skb);
	xps_note_write_all(w->skb);
	__sync_fetch_and_add(w->cgen, 1);
}

/*
 * A request head cut by the end of its segment (the length of the request
 * not known yet) is carried to the connection's next segment instead of
 * losing the connection's boundaries: its bytes are kept here, by socket
 * cookie, and the next segment is parsed after them (xps_kv_load()).  The
 * service executes the request only once it is whole, so it is counted,
 * and what it writes invalidated, when it is parsed whole.  The map is a
 * context map (XPS_CTX_MAP_CARRIES): a handler update keeps it, and a
 * head kept before the update is parsed by the new handler.  A kept head
 * that is gone (the LRU map evicted it; a handler whose map differs took
 * over) makes the connection adrift.
 */
#define XPS_KV_CARRY_MAX	256	/* <= the tail of sc->in past XPS_SCRATCH */
#define XPS_KV_CONN_CARRY	(1U << 14)	/* a head is kept (hstate flag) */

struct xps_kv_carry {
	__u32 len;
	__u32 pad;
	__u8 b[XPS_KV_CARRY_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct xps_kv_carry);
} xps_kv_carries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_RUN_LEVELS);
	__type(key, __u32);
	__type(value, struct xps_kv_carry);
} xps_kv_carry_build SEC(".maps");

_Static_assert(XPS_KV_CARRY_MAX <= XPS_KV_KEY_MAX, "sc->in's tail holds a kept head's last word");

/*
 * Keep the @n bytes of sc->in from @off (a head the segment cut) for the
 * connection's next segment.  0 when kept.  A global function: verified
 * once.
 */
__attribute__((noinline))
int xps_kv_carry_save(struct xps_kv_scratch *sc, __u32 off, __u32 n)
{
	struct xps_run *run = xps__run();
	struct xps_kv_carry *cr;
	__u32 lvl, i;

	if (!sc || !run || run->proto != IPPROTO_TCP || n < 1 ||
	    n > XPS_KV_CARRY_MAX || off > XPS_SCRATCH)
		return -1;
	lvl = run->level;
	cr = bpf_map_lookup_elem(&xps_kv_carry_build, &lvl);
	if (!cr)
		return -1;
	/* whole words: the last may read up to 7 bytes past the head,
	 * still inside sc->in (its tail)
	 */
	for (i = 0; i < XPS_KV_CARRY_MAX; i += 8) {
		if (i >= n)
			break;
		xps_st64(&cr->b[i], xps_ld64(&sc->in[off + i]));
	}
	cr->len = n;
	return bpf_map_update_elem(&xps_kv_carries, &run->cookie, cr, BPF_ANY) ?
	       -1 : 0;
}

/*
 * The head kept for this connection, into sc->in from its start: its
 * length, or -1 when it is gone.  A global function: verified once.
 */
__attribute__((noinline))
int xps_kv_carry_take(struct xps_kv_scratch *sc)
{
	struct xps_run *run = xps__run();
	struct xps_kv_carry *cr;
	__u32 i, n;

	if (!sc || !run)
		return -1;
	cr = bpf_map_lookup_elem(&xps_kv_carries, &run->cookie);
	if (!cr)
		return -1;
	n = cr->len;
	if (n < 1 || n > XPS_KV_CARRY_MAX) {
		bpf_map_delete_elem(&xps_kv_carries, &run->cookie);
		return -1;
	}
	for (i = 0; i < XPS_KV_CARRY_MAX; i += 8) {
		if (i >= n)
			break;
		xps_st64(&sc->in[i], xps_ld64(&cr->b[i]));
	}
	bpf_map_delete_elem(&xps_kv_carries, &run->cookie);
	return n;
}

/*
 * The @len bytes at @off of sc->in (a key the parser found there, which
 * may lie in a carried head, not in the segment) into sc->key.b.  0 or
 * -1.  A global function: verified once.
 */
__attribute__((noinline))
int xps_kv_key_from_in(struct xps_kv_scratch *sc, __u32 off, __u32 len)
{
	__u32 i;

	if (!sc || len < 1 || len > XPS_KV_KEY_MAX || off > XPS_SCRATCH)
		return -1;
	for (i = 0; i < XPS_KV_KEY_MAX; i += 8) {
		if (i >= len)
			break;
		/* sc->in's tail keeps this inside it */
		xps_st64(&sc->key.b[i], xps_ld64(&sc->in[off + i]));
	}
	return 0;
}

/*
 * Load the segment into sc->in (after the head carried from the last
 * one, if any): w->len bytes, w->carry of them carried.  0, or -1 to pass
 * the segment: it could not be loaded, or the carried head was gone (the
 * connection is then adrift, and the segment a write of every key).  A
 * segment after a carried head is never answered nor learned from: its
 * first request's start went to the service already.
 */
static __always_inline int xps_kv_load(struct xps_kv_walk *w)
{
	struct xps_kv_scratch *sc = w->sc;
	__u32 n, c = 0;
	int r;

	if (w->cs && (w->cs->flags & XPS_KV_CONN_CARRY)) {
		w->cs->flags &= ~XPS_KV_CONN_CARRY;
		r = xps_kv_carry_take(sc);
		if (r < 0) {
			xps_kv_write_all(w);
			xps_kv_adrift(w);
			return -1;
		}
		c = r;
		w->serve = 0;
		w->learn = 0;
	}
	barrier_var(c);
	if (c > XPS_KV_CARRY_MAX)	/* only for the verifier */
		return -1;
	barrier_var(c);
	n = w->seg_len < XPS_SCRATCH - c ? w->seg_len : XPS_SCRATCH - c;
	barrier_var(n);
	if (n < 1 || n > XPS_SCRATCH)
		return -1;
	if (xps_load(w->skb, 0, &sc->in[c], n))
		return -1;
	n += c;
	barrier_var(n);
	if (n < 1 || n > XPS_SCRATCH)	/* only for the verifier */
		return -1;
	w->len = n;
	/* one state for the verifier whether or not a head was carried */
	w->carry = xps_forget(c);
	sc->base = 0;
	return 0;
}

/*
 * The segment's offset of sc->in[w->carry] (sc->base): read from the map,
 * a value the verifier does not follow from one iteration of the walk to
 * the next.
 */
static __always_inline __u32 xps_kv_base(const struct xps_kv_walk *w)
{
	return *(volatile __u32 *)&w->sc->base;
}

/* Whether sc->in holds the segment to its end. */
static __always_inline int xps_kv_whole(const struct xps_kv_walk *w)
{
	return xps_kv_base(w) + w->len == w->seg_len + w->carry;
}

/* The segment's offset of sc->in[@off] (@off >= w->carry). */
static __always_inline __u32 xps_kv_seg_off(const struct xps_kv_walk *w,
					    __u32 off)
{
	return xps_kv_base(w) + off - w->carry;
}

/*
 * A segment longer than sc->in (the walk's window): copy the segment from
 * the byte sc->in[@off] stands for on into sc->in (@off past the window's
 * start and the @carry bytes carried, which cannot be copied again; its
 * byte within the segment's @seg_len).  The bytes now in sc->in, 0 when
 * none could be copied.  A global function: verified once.
 */
__attribute__((noinline))
__u32 xps_kv_window_load(struct __sk_buff *skb, struct xps_kv_scratch *sc,
			 __u32 off, __u32 carry, __u32 seg_len)
{
	__u32 at, n;

	if (!skb || !sc || !off || off < carry)
		return 0;
	at = sc->base + off - carry;
	if (at >= seg_len)
		return 0;
	n = seg_len - at;
	if (n > XPS_SCRATCH)
		n = XPS_SCRATCH;
	barrier_var(n);
	if (n < 1 || n > XPS_SCRATCH)	/* only for the verifier */
		return 0;
	if (xps_load(skb, at, sc->in, n))
		return 0;
	sc->base = at;
	return n;
}

/*
 * Move the window to sc->in[@off] (xps_kv_window_load()) and walk on from
 * its start.  Over TCP only.  0, or -1 when it cannot: the walk then stops
 * where it is, and what follows counts as a write of every key
 * (xps_kv_walk_end()).
 */
static __always_inline int xps_kv_window(struct xps_kv_walk *w, __u32 off)
{
	__u32 n;

	if (w->udp)
		return -1;
	n = xps_kv_window_load(w->skb, w->sc, off, w->carry, w->seg_len);
	if (n < 1 || n > XPS_SCRATCH)
		return -1;
	w->carry = xps_forget(0);
	w->off = 0;
	w->len = n;
	return 0;
}

/*
 * The walk is at the end of sc->in (w->off >= w->len): returns what a
 * callback of the walk returns, 1 (done) when the segment ends there too
 * or the window cannot move on, 0 when it moved (the next iteration
 * walks it: so the verifier meets a moved window where it meets a new
 * request, not beside every parse).
 */
static __always_inline long xps_kv_at_end(struct xps_kv_walk *w)
{
	if (xps_kv_window(w, w->off)) {
		w->done = 1;
		return 1;
	}
	return 0;
}

/*
 * Load key @sp of the current request into sc->key and hash it: the
 * bytes the parser saw, in sc->in.
 */
static __always_inline int xps_kv_set_key(struct xps_kv_walk *w,
					  const struct xps_span *sp)
{
	struct xps_kv_key *k = &w->sc->key;
	__u32 off = sp->off, len = sp->len;

	barrier_var(len);
	barrier_var(off);
	if (len < 1 || len > w->key_max || len > XPS_KV_KEY_MAX ||
	    off >= XPS_SCRATCH)
		return -1;
	k->len = len;
	if (xps_kv_key_from_in(w->sc, off, len))
		return -1;
	w->hk.hash = xps_kv_hash(k);
	return 0;
}

/*
 * Whether the handler may answer at all (struct xps_kv_state): nothing
 * stopped the fast path, the filler's lease, if one was ever taken, has
 * not run out (a dead or stuck filler stops vouching for the cache), and
 * the server's listening socket has not closed since the filler last
 * dropped the cache (xps_server_gone()).  @now: bpf_ktime_get_ns().
 */
static __always_inline int xps_kv_may_serve(const struct xps_kv_state *st,
					    __u64 now)
{
	__u64 lease = *(volatile const __u64 *)&st->lease_ns;

	if (*(volatile const __u32 *)&st->flags & XPS_KV_NO_SERVE)
		return 0;
	if (lease && now >= lease)
		return 0;
	return !xps_server_gone();
}

/*
 * Before any lookup of a run: if segments reached the service without any
 * handler seeing them since this cache last looked (xps_config.unseen,
 * moved by the framework before the service could read them), they may
 * have written anything: nothing cached before is served again.  The
 * generation is bumped before the mark is stored, so that a run that finds
 * the mark current also finds the bump.  A global function: its frame
 * stays off the handlers' call chains.
 */
__attribute__((noinline))
int xps_kv_unseen(struct xps_kv_state *st)
{
	struct xps_config *cfg;
	__u32 zero = 0;
	__u64 u;

	if (!st)
		return 0;
	cfg = bpf_map_lookup_elem(&xps_config, &zero);
	if (!cfg)
		return 0;
	u = *(volatile __u64 *)&cfg->unseen;
	if (u == *(volatile __u64 *)&st->unseen)
		return 0;
	__sync_fetch_and_add(&st->cgen, 1);
	*(volatile __u64 *)&st->unseen = u;
	return 1;
}

/*
 * Stop the fast path of every connection until the filler has checked
 * the server again, after the server answered the request that stopped
 * it (which the caller counts as a write of every key).  The stop
 * generation tells the filler that a check it began before this cannot
 * lift the stop (include/xps/kvcache.h).
 */
static __always_inline void xps_kv_stop(struct xps_kv_state *st)
{
	__sync_fetch_and_or(&st->flags, XPS_KV_NO_SERVE);
	__sync_fetch_and_add(&st->flags, XPS_KV_STOP_GEN_ONE);
}

/*
 * Whether this connection's requests must go to the server now, so that
 * a server that closes idle connections sees it alive: the last one
 * passed is idle_pass_ns old (half the server's timeout).  @now:
 * bpf_ktime_get_ns().
 */
static __always_inline int xps_kv_idle_due(const struct xps_kv_state *st,
					   const struct xps_conn_hstate *cs,
					   __u64 now)
{
	__u64 every = *(volatile const __u64 *)&st->idle_pass_ns;

	if (!every || !cs)
		return 0;
	return (__u32)((now >> 20) - cs->pass_t) >= (__u32)(every >> 20);
}

/* The segment is passed to the server: the connection is not idle there. */
static __always_inline void xps_kv_passed(struct xps_conn_hstate *cs,
					  __u64 now)
{
	if (cs)
		cs->pass_t = now >> 20;
}

/*
 * A TCP GET of sc->key missed: ask for the server's reply to it, from
 * which the filler learns the value (docs/coherence.md, "Learning from
 * the server's replies").  The stamps are read first, the unanswered
 * writes of the key second, as a filler's fill_begin does: the server
 * executes the GET after this, so a value older than an acknowledged
 * write is either never learned (the write was unanswered here) or
 * stamped stale.  Only a request of one key, on a connection the handler
 * would serve, and one per segment.  Its own subprogram: one copy for
 * every caller.
 */
_Static_assert(sizeof(struct xps_kv_arm) <= XPS_CAP_TAG_MAX, "xps_kv_arm tag");

static __noinline void xps_kv_learn(struct xps_kv_walk *w)
{
	struct xps_kv_scratch *sc = w->sc;
	struct xps_cap_arm *rec;
	struct xps_kv_arm *arm;
	__u64 version, *ver;
	__u32 cgen;

	w->learn = 0;
	if (!sc || !w->cgen || sc->req.nkeys != 1 || !w->cs ||
	    (w->cs->flags & w->conn_no_serve))
		return;
	cgen = *(volatile __u32 *)w->cgen;
	ver = bpf_map_lookup_elem(&xps_versions, &w->hk);
	version = ver ? *(volatile __u64 *)ver : 0;
	asm volatile("" ::: "memory");	/* the stamps before the writes */
	if (xps_writes_pending(w->hk.hash))
		return;
	rec = xps_capture_reply(w->skb);
	if (!rec)
		return;
	arm = (struct xps_kv_arm *)rec->tag;
	arm->version = version;
	arm->cgen = cgen;
	arm->pad = 0;
	__builtin_memcpy(&arm->key, &sc->key, sizeof(arm->key));
	rec->h.len = sizeof(*arm);
	xps_capture_submit(rec);
}

/*
 * Whether a value that expires at @expire_ns (bpf_ktime_get_ns()) and
 * @expire_tai_ns (bpf_ktime_get_tai_ns()) has expired by either clock
 * (struct xps_kv_value).  A global function, verified once.
 */
__attribute__((noinline))
int xps_kv_expired(__u64 expire_ns, __u64 expire_tai_ns)
{
	return bpf_ktime_get_ns() >= expire_ns ||
	       bpf_ktime_get_tai_ns() >= expire_tai_ns;
}

/*
 * The value cached for sc->key, or NULL: stored under the key's hash for
 * this very key, stamped with the current cache generation and the key's
 * current version (its stamps then in sc->hit).  Every lookup counts as
 * an access for xps_get_stats().  A miss over TCP may ask for the
 * server's reply (xps_kv_learn()); over UDP it is queued for the filler,
 * which fetches the value.  The bytes are checked against the seal when
 * copied (xps_kv_stage_value()).
 */
static __always_inline struct xps_kv_value *xps_kv_lookup(struct xps_kv_walk *w)
{
	struct xps_kv_value *v = bpf_map_lookup_elem(&xps_data, &w->hk);
	__u64 *n = bpf_map_lookup_elem(&xps_keystats, &w->hk), one = 1, *ver;
	struct xps_kv_hit *hit = &w->sc->hit;

	if (n)
		*n += 1;	/* per CPU; a nested run may lose one: a statistic */
	else
		bpf_map_update_elem(&xps_keystats, &w->hk, &one, BPF_NOEXIST);
	if (!v)
		goto miss;
	/* a write's value its server has not acknowledged yet */
	if (*(volatile __u32 *)&v->pending)
		goto miss;
	hit->len = *(volatile __u32 *)&v->len;
	hit->cgen = *(volatile __u32 *)&v->cgen;
	hit->version = *(volatile __u64 *)&v->version;
	hit->cas = *(volatile __u64 *)&v->cas;
	hit->client_flags = *(volatile __u32 *)&v->client_flags;
	hit->sum = *(volatile __u64 *)&v->sum;
	hit->expire_ns = *(volatile __u64 *)&v->expire_ns;
	hit->expire_tai_ns = *(volatile __u64 *)&v->expire_tai_ns;
	if (hit->cgen != *w->cgen || hit->len > XPS_KV_VALUE_MAX ||
	    !xps_kv_same_key(&w->sc->key, &v->key))
		goto miss;
	if (hit->expire_ns &&
	    xps_kv_expired(hit->expire_ns, hit->expire_tai_ns))
		goto miss;
	ver = bpf_map_lookup_elem(&xps_versions, &w->hk);
	if (hit->version != (ver ? *ver : 0))
		goto miss;
	return v;
miss:
	if (w->udp)
		bpf_map_push_elem(&xps_misses, &w->sc->key, BPF_EXIST);
	else if (w->learn)
		xps_kv_learn(w);
	return NULL;
}

/*
 * The seal's head (include/xps/kvsum.h): the stamps, then the key's
 * bytes.  Bytes of k->w past k->len are masked off, as the reference
 * zero-pads the last word.  A global function, verified once.
 */
__attribute__((noinline))
__u64 xps_kv_seal_key(const struct xps_kv_key *k, __u64 s0, __u64 s1,
		      __u64 s2, __u64 s3)
{
	__u64 h = XPS_KV_SUM_SEED;
	__u32 i, len;

	if (!k)
		return 0;
	len = k->len;
	h = xps_kv_mix(h, s0);
	h = xps_kv_mix(h, s1);
	h = xps_kv_mix(h, s2);
	h = xps_kv_mix(h, s3);
	for (i = 0; i < XPS_KV_KEY_MAX / 8; i++) {
		if (i * 8 >= len)
			break;
		h = xps_kv_mix(h, k->w[i] & xps_kv_word_mask(len, i));
	}
	return h;
}

/*
 * Append the bytes of @v, which the last lookup returned, to the staged
 * reply and check the copy against the seal the filler put on the value:
 * a copy torn by a refill, of another key's value or of a replaced one
 * does not match, and is not served (-1).  The bytes hashed are the bytes
 * stored (xps_stage_copy_sum()).
 */
static __always_inline int xps_kv_stage_value(struct xps_kv_walk *w,
					      const struct xps_kv_value *v)
{
	const struct xps_kv_hit *hit = &w->sc->hit;
	__u32 at = w->out_len, len = hit->len;
	__u64 head;

	head = xps_kv_seal_key(&w->sc->key, len | (__u64)hit->cgen << 32,
			       hit->version, hit->cas,
			       xps_kv_seal_s3(hit->client_flags, hit->expire_ns,
					      hit->expire_tai_ns));
	if (xps_stage_copy_sum(w->out, at,
			       (const struct xps_stage_chunk *)v->v, len,
			       head) != hit->sum)
		return -1;
	w->out_len = at + len;
	return 0;
}

/*
 * A key's version (docs/coherence.md): every write adds 2; bit 0 says
 * that the last write left an item that never expires, or none
 * (XPS_F_NOEXP with XPS_F_SETS, a memcached set with exptime 0: add,
 * replace and cas refused or failed keep the old item and its expiry),
 * so that a value learned under it needs
 * no wait for memcached's clock (services/memcached/xps-memcachedd.c).  The bit is
 * set only by a TCP write that was the only one unanswered: with another
 * write in flight the server may execute the two in either order, and
 * the one it executes last (an expiry, say) decides.
 */
static __always_inline __u64 xps_kv_next_version(__u64 old, int noexp)
{
	return ((old + 2) & ~1ULL) | (noexp ? 1 : 0);
}

/*
 * The bit just set stays only if this write is the only one unanswered
 * (xps_note_write() counted it): any other write bumps the version after
 * counting itself, so one that comes later clears the bit with its own
 * bump, and one counted before is seen here.  Global functions, these
 * three: each is verified once, not once per write of a walk.
 */
__attribute__((noinline))
int xps_kv_noexp_check(__u64 *ver, __u64 val)
{
	struct xps_config *cfg;
	__u32 zero = 0;

	if (!ver)
		return 0;
	cfg = bpf_map_lookup_elem(&xps_config, &zero);
	if (!cfg || *(volatile __u64 *)&cfg->unacked_writes != 1)
		__sync_val_compare_and_swap(ver, val, val & ~1ULL);
	return 0;
}

__attribute__((noinline))
int xps_kv_bump(__u64 *ver, int noexp)
{
	__u64 old = 0, new = 0;
	__u32 i;

	if (!ver)
		return 0;
	for (i = 0; i < 4; i++) {
		old = *(volatile __u64 *)ver;
		new = xps_kv_next_version(old, noexp);
		if (__sync_val_compare_and_swap(ver, old, new) == old)
			break;
	}
	if (i == 4) {
		/* contended: bump without the bit, the bit cleared first */
		__sync_fetch_and_and(ver, ~1ULL);
		__sync_fetch_and_add(ver, 2);
		return 0;
	}
	if (new & 1)
		xps_kv_noexp_check(ver, new);
	return 0;
}

__attribute__((noinline))
int xps_kv_note_key(__u64 hash)
{
	xps_note_write_key(NULL, hash);	/* the run's connection */
	return 0;
}

/*
 * A write to the key w->hk: counted by key, then its next version.  Its
 * own subprogram: its frame stays off the walk's, which the parsers'
 * frames share.
 */
static __noinline void xps_kv_new_version(struct xps_kv_walk *w)
{
	__u64 *ver, first;
	int noexp;

	if (!w || !w->sc)
		return;
	noexp = !w->udp && w->cs &&
		(w->sc->req.flags & (XPS_F_NOEXP | XPS_F_SETS)) ==
		(XPS_F_NOEXP | XPS_F_SETS);
	/* counted by key before the bump (docs/coherence.md) */
	xps_kv_note_key(w->hk.hash);
	ver = bpf_map_lookup_elem(&xps_versions, &w->hk);
	if (ver) {
		xps_kv_bump(ver, noexp);
		return;
	}
	first = xps_kv_next_version(0, noexp);
	if (bpf_map_update_elem(&xps_versions, &w->hk, &first, BPF_NOEXIST)) {
		ver = bpf_map_lookup_elem(&xps_versions, &w->hk);
		if (ver)	/* another CPU made it */
			xps_kv_bump(ver, noexp);
		else if (w->cgen)	/* no version: every key then */
			__sync_fetch_and_add(w->cgen, 1);
	} else if (first & 1) {
		ver = bpf_map_lookup_elem(&xps_versions, &w->hk);
		if (ver)
			xps_kv_noexp_check(ver, first);
	}
}

/*
 * A write touches the keys of sc->req (or every key, XPS_F_ALL): count it,
 * then make every cached value of those keys unservable
 * (docs/coherence.md), then free them.  Returns how many keys it bumped
 * (the last one left in sc->key and w->hk); 0 for every key.  A write over UDP is never seen
 * answered: its time is noted for the filler, which keeps the handler
 * out for a while after one.
 */
static __always_inline int xps_kv_invalidate(struct xps_kv_walk *w)
{
	struct xps_kv_req *req = &w->sc->req;
	__u32 i;
	int n = 0;

	if (w->udp && w->udp_write_ns)
		*w->udp_write_ns = bpf_ktime_get_ns();
	xps_note_write(w->skb);
	if (req->flags & XPS_F_ALL) {
		xps_note_write_all(w->skb);
		__sync_fetch_and_add(w->cgen, 1);
		return 0;
	}
	for (i = 0; i < XPS_MAX_KEYS; i++) {
		if (i >= req->nkeys)
			break;
		/* keys that cannot be set were never cached */
		if (xps_kv_set_key(w, &req->keys[i]))
			continue;
		xps_kv_new_version(w);
		bpf_map_delete_elem(&xps_data, &w->hk);
		n++;
	}
	return n;
}

/*
 * A write-through record being built (struct xps_conn_wt, whose head
 * record 0 carries for the write) and the value it will leave, stamped.
 */
struct xps_kv_wt_build {
	__u32 reply;			/* 0: not stamped */
	__u32 slot;
	__u32 gen;
	__u32 expect_len;
	__u64 expect;
	__u64 hash;			/* the key's (struct xps_kv_hkey) */
	struct xps_kv_value v;
};

/*
 * The write-through records being built, per CPU (too big for the stack):
 * one per key of the write, from index 0 up, XPS_CONN_WT_KEYS for each
 * level of runs (XPS_SCRATCH_MAP()).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_RUN_LEVELS * XPS_CONN_WT_KEYS);
	__type(key, __u32);
	__type(value, struct xps_kv_wt_build);
} xps_kv_wt_build SEC(".maps");

_Static_assert(XPS_KV_PAIRS <= XPS_CONN_WT_KEYS, "a record per pair");
_Static_assert((XPS_CONN_WT_KEYS & (XPS_CONN_WT_KEYS - 1)) == 0,
	       "records indexed under a mask");

/* Record @i of the current run's level, from xps__level()'s @base. */
static __always_inline struct xps_kv_wt_build *xps_kv_wt_rec(__u32 base,
							     __u32 i)
{
	__u32 k = base * XPS_CONN_WT_KEYS + (i & (XPS_CONN_WT_KEYS - 1));

	return bpf_map_lookup_elem(&xps_kv_wt_build, &k);
}

/* Forget the records being built (a write of several keys, all or none). */
static __always_inline void xps_kv_wt_drop(void)
{
	struct xps_kv_wt_build *rec;
	__u32 i, base = xps__level();

	for (i = 0; i < XPS_CONN_WT_KEYS; i++) {
		rec = xps_kv_wt_rec(base, i);
		if (rec)
			rec->reply = 0;
	}
}

/*
 * Write-through (docs/coherence.md, "Writes committed by the kernel"):
 * the write xps_kv_invalidate() just counted, of the key in sc->key (of
 * hash @hash), leaves the bytes sc->wt.val spans (in sc->in) as the
 * key's value, with sc->wt's flags (memcached; its CAS is unknown, 0) and
 * expiry, if the service answers it with the expect_len bytes of
 * sc->wt.expect (struct xps_conn_wt).  Record @idx is stamped here, in
 * the CPU's xps_kv_wt_build; xps_kv_write_through_end() seals its value
 * and puts it in the data map, pending, and the records in the
 * connection's after the walk (the seal's frames do not fit on top of the
 * walk's); the egress step commits the value when that reply leaves.
 * Only over TCP, with replies counted on the connection, no
 * other record of the connection pending, the first write of its segment
 * to pass these checks (one write per segment; egress finds the reply
 * wherever it begins; a write of several keys stamps record 0 for its
 * first key, then 1, 2... for the others, of the same request), and no
 * other write that may touch the key unanswered: every write the service
 * executes before this one was then answered before it was read, and a
 * write counted after the check bumps the version the value is stamped
 * with.  The stamps are read after the write's own bump and before the
 * check, as a fill reads them before its own.  @cgen: the state's cache
 * generation.  Returns whether the record was stamped.  A global
 * function: verified once, whatever the walk's state.
 */
__attribute__((noinline))
int xps_kv_wt_stamp(struct __sk_buff *skb, struct xps_kv_scratch *sc,
		    __u32 *cgen, __u64 hash, __u32 idx)
{
	struct xps_kv_hkey hk = { .hash = hash };
	struct xps_run *run = xps__run();
	struct xps_kv_wt_build *rec, *first;
	struct xps_kv_wt_args *a;
	struct xps_conn *conn;
	__u32 vlen, reply;
	__u64 *ver;

	/* this request's reply is number conn->owed + run->reqs */
	if (!sc || !cgen || !run || run->proto != IPPROTO_TCP || !run->reqs ||
	    idx >= XPS_CONN_WT_KEYS)
		return 0;
	a = &sc->wt;
	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	first = xps_kv_wt_rec(run->level, 0);
	rec = xps_kv_wt_rec(run->level, idx);
	if (!conn || !first || !rec ||
	    (conn->flags & (XPS_CONN_UNCOUNTED | XPS_CONN_EGRESS)) !=
	    XPS_CONN_EGRESS)
		return 0;
	reply = conn->owed + run->reqs;
	/*
	 * One write per segment: a write after the one stamped leaves it
	 * whole (its stamps, values and reply number belong together); the
	 * keys after the first of a write follow its record 0.
	 */
	if (idx ? first->reply != reply || rec->reply : first->reply != 0)
		return 0;
	/* one at a time: egress looks for one reply number */
	if (conn->wt_reply && (__s32)(conn->answered - conn->wt_reply) < 0)
		return 0;
	ver = bpf_map_lookup_elem(&xps_versions, &hk);
	if (!ver)
		return 0;	/* no version: the write was one of every key */
	rec->v.version = *(volatile __u64 *)ver;
	rec->v.cgen = *(volatile __u32 *)cgen;
	asm volatile("" ::: "memory");	/* the stamps before the writes */
	if (xps_writes_pending(hash) != 1)
		return 0;	/* another write may land after ours */
	vlen = a->val.len;
	barrier_var(vlen);
	if (vlen < 1 || vlen > XPS_KV_VALUE_MAX ||
	    xps_load(skb, sc->base + a->val.off, rec->v.v, vlen))
		return 0;
	__builtin_memcpy(&rec->v.key, &sc->key, sizeof(rec->v.key));
	rec->slot = run->slot;
	rec->gen = conn->gen;
	rec->expect = a->expect;
	rec->expect_len = a->expect_len;
	rec->hash = hash;
	rec->v.len = vlen;
	rec->v.cas = 0;		/* unknown: a gets is not answered */
	rec->v.client_flags = a->client_flags;
	rec->v.pending = 1;	/* until egress sees the write answered */
	rec->v.expire_ns = a->expire_ns;
	rec->v.expire_tai_ns = a->expire_tai_ns;
	rec->reply = reply;	/* last: the record is whole */
	return 1;
}


/*
 * After the walk: seal the values of the records xps_kv_wt_stamp()
 * stamped, if any, put them in the data map, pending (never served), and
 * hand the records to the egress step in the connection's record (struct
 * xps_conn_wt), all or none: egress clears a value's pending mark when
 * the write's reply says it took effect.  The key's entry was deleted
 * when the write was counted; a value put here is never served before
 * egress commits it, so it replaces nothing a GET could have had.  @out,
 * the staged reply, serves as scratch: a segment with a write is not
 * answered.  A global function, verified once whatever the handler's
 * state.
 */
__attribute__((noinline))
int xps_kv_write_through_end(struct xps_stage *out)
{
	struct xps_run *run = xps__run();
	struct xps_kv_wt_build *rec, *first;
	__u32 i, vlen, seq, base;
	struct xps_conn_wt_rec *r;
	struct xps_conn *conn;
	__u64 head;

	base = run ? run->level : 0;
	first = xps_kv_wt_rec(base, 0);
	if (!first || !first->reply)
		return 0;
	if (!out || !run)
		goto out;
	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	if (!conn || (conn->flags & XPS_CONN_UNCOUNTED))
		goto out;
	for (i = 0; i < XPS_CONN_WT_KEYS; i++) {
		rec = xps_kv_wt_rec(base, i);
		if (!rec || rec->reply != first->reply)
			break;
		vlen = rec->v.len;
		if (vlen < 1 || vlen > XPS_KV_VALUE_MAX)
			goto out;
		head = xps_kv_seal_key(&rec->v.key,
				       vlen | (__u64)rec->v.cgen << 32,
				       rec->v.version, 0,
				       xps_kv_seal_s3(rec->v.client_flags,
						      rec->v.expire_ns,
						      rec->v.expire_tai_ns));
		rec->v.sum = xps_stage_copy_sum(out, 0,
				(const struct xps_stage_chunk *)rec->v.v,
				vlen, head);
		/*
		 * A value put before a failure stays pending, never served,
		 * until the key is written or filled again.
		 */
		if (bpf_map_update_elem(&xps_data, &rec->hash, &rec->v,
					BPF_ANY))
			goto out;
	}
	/*
	 * The connection's record, @seq odd while it changes (struct
	 * xps_conn_wt); the previous write's was committed or abandoned
	 * (xps_kv_wt_stamp()).
	 */
	seq = __sync_fetch_and_add(&conn->wt.seq, 1);
	conn->wt.reply = first->reply;
	conn->wt.slot = first->slot;
	conn->wt.gen = first->gen;
	conn->wt.expect = first->expect;
	conn->wt.expect_len = first->expect_len;
	conn->wt.n = i;
	for (i = 0; i < XPS_CONN_WT_KEYS; i++) {
		rec = xps_kv_wt_rec(base, i);
		if (!rec || i >= conn->wt.n)
			break;
		/* the mask only for the verifier: i is below it */
		r = &conn->wt.rec[i & (XPS_CONN_WT_KEYS - 1)];
		r->hash = rec->hash;
		r->version = rec->v.version;	/* the value's own stamps */
		r->cgen = rec->v.cgen;
		r->pad = 0;
	}
	/* fetching forms: ordered both ways on every architecture */
	__sync_lock_test_and_set(&conn->wt.seq, (seq | 1) + 1);
	conn->wt_reply = first->reply;
out:
	xps_kv_wt_drop();
	return 0;
}

/* Count the request just parsed, unless the service never answers it. */
static __always_inline void xps_kv_count(struct xps_kv_walk *w)
{
	if (w->sc->req.flags & XPS_F_NOREPLY)
		xps_requests_none(w->skb);
	else
		xps_request(w->skb, 0);
}

/*
 * The walk's handling of the request kinds the services treat alike:
 * INVALIDATE, HARMLESS, INCOMPLETE and MALFORMED.  Returns what a bpf_loop
 * callback returns (1: the walk is over); w->off moves past the request
 * when it goes on.
 */
static __always_inline long xps_kv_walk_common(struct xps_kv_walk *w, int kind)
{
	struct xps_kv_req *req = &w->sc->req;
	__u32 end;

	switch (kind) {
	case XPS_REQ_INVALIDATE:
		xps_kv_invalidate(w);
		w->serve = 0;
		break;
	case XPS_REQ_HARMLESS:
		w->serve = 0;
		break;
	case XPS_REQ_INCOMPLETE:
		/*
		 * It runs past the window, not (or not known to run) past
		 * the segment, and may fit in a window: walk on with the
		 * window moved to it (not when it is at the window's start
		 * already, or began in a carried head).
		 */
		if (!xps_kv_whole(w) && req->req_len <= XPS_SCRATCH &&
		    !xps_kv_window(w, w->off))
			return 0;
		/*
		 * The request continues in the next segment, and the service
		 * executes it only then.  A write of keys all known already
		 * (the parser names them without XPS_F_ALL) invalidates
		 * those; any other write everything.  The rest of a request
		 * of known length is passed unparsed.
		 */
		w->serve = 0;
		if (!req->req_len && xps_kv_whole(w) && w->cs &&
		    !(req->flags & XPS_F_TOO_BIG) &&
		    !xps_kv_carry_save(w->sc, w->off, w->len - w->off)) {
			/* parsed again whole with the next segment */
			w->cs->flags |= XPS_KV_CONN_CARRY;
			xps_requests_none(w->skb);
			w->done = 1;
			return 1;
		}
		if (req->hint != XPS_REQ_SERVE && req->hint != XPS_REQ_HARMLESS) {
			if (req->hint != XPS_REQ_INVALIDATE || !req->nkeys)
				req->flags |= XPS_F_ALL;
			/* the end of its data was not seen */
			req->flags &= ~(XPS_F_NOEXP | XPS_F_RELEXP | XPS_F_SETS);
			xps_kv_invalidate(w);
		}
		if (w->cs && req->req_len) {
			end = xps_kv_base(w) + w->off + req->req_len - w->carry;
			if (end < w->seg_len) {
				/*
				 * Its data runs past the window, not past the
				 * segment: counted, the walk goes on after it
				 */
				if (!xps_kv_window(w, w->off + req->req_len)) {
					xps_kv_count(w);
					return 0;
				}
			} else {
				w->cs->skip = end - w->seg_len;
				xps_kv_count(w);
				/* the walk is at the segment's end */
				w->sc->base = w->seg_len + w->carry - w->len;
				w->off = w->len;
			}
		} else if (xps_kv_whole(w)) {
			/* its head runs past the segment: the next
			 * request's start is unknown
			 */
			xps_kv_adrift(w);
		}
		/* else: past the scratch copy, the count walk counts it */
		w->done = 1;
		return 1;
	default:	/* MALFORMED */
		w->serve = 0;
		w->done = 1;
		if ((req->flags & XPS_F_CLOSES) && w->cs) {
			/*
			 * Nothing of it or after it executes: no write.
			 * The requests before it were walked; their
			 * replies, the error's and the close follow.
			 */
			xps_requests_lost(w->skb);
			w->cs->flags |= w->conn_no_serve | XPS_KV_CONN_CLOSING;
			return 1;
		}
		/* boundaries lost */
		req->flags |= XPS_F_ALL;
		xps_kv_invalidate(w);
		xps_kv_adrift(w);
		return 1;
	}
	w->off += req->req_len;
	return 0;
}

/*
 * Before the walk: 1 when the segment must be passed unparsed.  Either
 * its connection is adrift (XPS_KV_CONN_ADRIFT: the segment counts as a
 * write of every key, and its requests as lost), or the service executes
 * nothing more of it (XPS_KV_CONN_CLOSING: its requests are lost, and are
 * no writes), or the whole segment is
 * the rest of a request an earlier segment started (nothing starts here);
 * where that rest ends inside the segment, the walk starts after it.
 */
static __always_inline int xps_kv_skip(struct xps_kv_walk *w)
{
	if (!w->cs)
		return 0;
	if (w->cs->flags & (XPS_KV_CONN_ADRIFT | XPS_KV_CONN_CLOSING)) {
		if (w->cs->flags & XPS_KV_CONN_ADRIFT)
			xps_kv_write_all(w);
		xps_requests_lost(w->skb);
		return 1;
	}
	if (!w->cs->skip)
		return 0;
	if (w->cs->skip >= w->seg_len) {
		w->cs->skip -= w->seg_len;
		xps_requests_none(w->skb);
		return 1;
	}
	w->off = w->cs->skip;
	w->cs->skip = 0;
	w->serve = 0;
	return 0;
}

/*
 * After the walk: requests it did not parse (more than it walks, or
 * bytes past the scratch copy) may be writes, so they invalidate
 * everything; @count_rest (XPS_KV_COUNT()) counts them.  Whether the
 * segment may still be answered is left in w->serve.
 */
#define xps_kv_walk_end(w, count_rest, sc)				\
	do {								\
		/* the last iteration may have consumed the last request */ \
		if ((w)->off >= (w)->len)				\
			(w)->done = 1;					\
		if ((!(w)->done || !xps_kv_whole(w)) &&			\
		    !((w)->cs && ((w)->cs->flags & XPS_KV_CONN_CLOSING))) { \
			if (!(w)->done ||				\
			    xps_kv_base(w) + (w)->off <		\
			    (w)->seg_len + (w)->carry) {		\
				xps_kv_write_all(w);			\
				if ((w)->off < (w)->carry)		\
					xps_requests_lost((w)->skb);	\
				else if (xps_requests_counted((w)->skb)) \
					count_rest((w)->skb, sc, (w)->cs, \
						   xps_kv_seg_off(w, (w)->off), \
						   (w)->seg_len);	\
				if (!xps_requests_counted((w)->skb))	\
					xps_kv_adrift(w);		\
			}						\
			(w)->serve = 0;					\
		}							\
	} while (0)

#endif /* __XPS_KVCACHE_BPF_H */
