/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libxps's kv-cache: the user-space half of the coherence protocol of
 * docs/coherence.md, for a process that fills the cache of a context whose
 * handler is built on bpf/lib/kvcache.bpf.h (the Redis and memcached ones).
 *
 * Fills from fetches, for the misses the handler queues (over UDP; TCP
 * misses are learned from the server's replies, see
 * xps_kvcache__learn_next()):
 *
 *	kc = xps_kvcache__open(ctx, NULL);
 *	while (!xps_kvcache__miss_pop(kc, &key)) {
 *		err = xps_kvcache__fill_begin(kc, &key, &value);
 *		if (err == -EBUSY)	// a write is unanswered: later
 *			xps_kvcache__miss_retry(kc, &key);
 *		else if (!err && fetch(&key, &value) == 0)
 *			xps_kvcache__fill_commit(kc, &key, &value);
 *		else if (!err)
 *			xps_kvcache__fill_skip(kc, &key); // not cacheable
 *	}
 *
 * The handler may only serve while every write reaches the server through
 * it: xps_kvcache__unseen_conns() finds connections it cannot see, and the
 * filler keeps the handler out (a NO_SERVE flag of the handler's state,
 * xps_kvcache__flags()) while there are any.  Values are laid out and
 * sealed as include/xps/kvcache.h says.  Same conventions as libxps.h.
 */
#ifndef __XPS_LIBXPS_KV_H
#define __XPS_LIBXPS_KV_H

#include <stddef.h>
#include <linux/types.h>
#include "libxps.h"
#include <xps/kvcache.h>

#ifdef __cplusplus
extern "C" {
#endif

struct xps_kvcache;

struct xps_kvcache_opts {
	size_t sz;		/* sizeof(struct xps_kvcache_opts) */
	/*
	 * How long a key given to xps_kvcache__fill_skip() (not cacheable:
	 * missing, an expiry, too large) is dropped from the miss queue
	 * instead of fetched again, in ns; 0: 100 ms.  Every GET of such a
	 * key is a miss, and fetching it each time doubles the server's work
	 * for nothing.
	 */
	__u64 skip_ns;
	/*
	 * How long xps_kvcache__unseen_conns() trusts a check that found
	 * every connection seen, in ns, while XPS has recorded every
	 * connection it accepted since; 0: 10 s.  Each check walks the
	 * kernel's whole table of TCP connections.
	 */
	__u64 recheck_ns;
	size_t :0;
};
#define xps_kvcache_opts__last_field recheck_ns

/*
 * The kv-cache of @ctx: its handler must declare the data map, the miss
 * queue, a mappable state map and the versions map (bpf/lib/kvcache.bpf.h),
 * and the framework must be loaded.  -ENOENT (NULL + errno) otherwise.
 * Independent of @ctx once opened.
 */
LIBXPS_API struct xps_kvcache *
xps_kvcache__open(const struct xps_context *ctx,
		  const struct xps_kvcache_opts *opts);
LIBXPS_API void xps_kvcache__close(struct xps_kvcache *kc);

/* The local port of the context's predicate (the service's). */
LIBXPS_API __u16 xps_kvcache__port(const struct xps_kvcache *kc);

/*
 * The next key the handler missed, its bytes past len zeroed (a len over
 * XPS_KV_KEY_MAX becomes 0).  Keys skipped lately are dropped here.
 * -ENOENT when the queue is empty.
 */
LIBXPS_API int xps_kvcache__miss_pop(struct xps_kvcache *kc,
				     struct xps_kv_key *key);
/* Put @key back in the miss queue (after -EBUSY from fill_begin). */
LIBXPS_API int xps_kvcache__miss_retry(struct xps_kvcache *kc,
				       const struct xps_kv_key *key);

/*
 * Start a fill of @key: stamp @value with the cache generation and the
 * key's version, then check that no write is unanswered, in this order
 * (docs/coherence.md, "Why it holds").  0: fetch the value from the server
 * now, then xps_kvcache__fill_commit(); -EBUSY: a write is unanswered,
 * fetch nothing and try again later; another negative errno on failure.
 */
LIBXPS_API int xps_kvcache__fill_begin(struct xps_kvcache *kc,
				       const struct xps_kv_key *key,
				       struct xps_kv_value *value);
/*
 * Insert @value, stamped by xps_kvcache__fill_begin() and filled with what
 * the server returned (len, v, and for memcached cas and client_flags),
 * as @key's: its key is set to @key and it is sealed
 * (xps_kv_value_seal()) before the insert.
 */
LIBXPS_API int xps_kvcache__fill_commit(struct xps_kvcache *kc,
					const struct xps_kv_key *key,
					struct xps_kv_value *value);
/* @key is not cacheable now: drop its misses for a while (opts.skip_ns). */
LIBXPS_API void xps_kvcache__fill_skip(struct xps_kvcache *kc,
				       const struct xps_kv_key *key);

/*
 * Learning from the server's replies (docs/coherence.md): when a GET over
 * TCP misses, the handler reads the key's stamps, checks that no write of
 * the key is unanswered and asks for the server's reply to it; the
 * framework copies that reply as it leaves.  No fetch: the server's
 * statistics count only what clients asked.  The filler parses the
 * reply, checks what a reply does not say (an expiry) and commits the
 * value with the stamps taken at the GET:
 *
 *	while (!xps_kvcache__learn_next(kc, &l)) {
 *		if (parse(l.reply, l.len, &value) == 0 && no_expiry(&l.key))
 *			xps_kvcache__learn_commit(kc, &l, &value);
 *		else
 *			xps_kvcache__fill_skip(kc, &l.key);
 *	}
 *
 * The bytes begin with the server's answer to exactly this GET (the
 * framework counts replies, docs/ordering.md); replies to later requests
 * may follow, and the answer may be cut at XPS_CAP_REPLY_MAX bytes, so a
 * parser takes one whole reply from the start or nothing.  learn_next()
 * drops the keys skipped lately.
 */
struct xps_kv_learned {
	struct xps_kv_key key;		/* what the GET asked for */
	__u64 version;			/* the stamps its value must carry */
	__u32 cgen;
	__u32 len;			/* bytes of reply */
	__u8 reply[XPS_CAP_REPLY_MAX];	/* the server's bytes, verbatim */
};

/*
 * The next reply learned, or -ENOENT when there is none now.  A key
 * asked about again before it was taken is returned once, with the
 * stamps and reply captured last.
 */
LIBXPS_API int xps_kvcache__learn_next(struct xps_kvcache *kc,
				       struct xps_kv_learned *l);
/*
 * A GET that missed and asked for its reply, before the reply came: what
 * the filler can check about the key meanwhile (Redis's PTTL), so that
 * the value is committed as soon as its reply comes.  Anything the server
 * says about the key after the GET asked holds for the value its reply
 * brings, if the value's stamps are still the key's: a write in between
 * changes them (docs/coherence.md).
 */
struct xps_kv_asked {
	struct xps_kv_key key;
	__u64 version;			/* the stamps the GET read */
	__u32 cgen;
	__u32 pad;
};

/*
 * The next key asked about since the last call (one per key, with the
 * stamps it was asked with last), or -ENOENT when there is none now.
 * Keys are kept for it from its first call on, up to 256: one that does
 * not fit is returned by xps_kvcache__learn_next() all the same, once its
 * reply comes.
 */
LIBXPS_API int xps_kvcache__asked_next(struct xps_kvcache *kc,
				       struct xps_kv_asked *a);
/*
 * Wait up to @timeout_us for the handler to ask for or capture a reply:
 * 1 when xps_kvcache__asked_next() or xps_kvcache__learn_next() may have
 * one, 0 on timeout or a signal, or a negative errno.  A filler that
 * sleeps instead learns each value that much later, and the GETs of the
 * key miss meanwhile.
 */
LIBXPS_API int xps_kvcache__learn_wait(struct xps_kvcache *kc,
				       unsigned int timeout_us);
/*
 * Insert @value (len, v, and for memcached cas and client_flags, as the
 * filler parsed them from @l's reply) as @l's key, stamped with @l's
 * stamps and sealed (xps_kvcache__fill_commit()).
 */
LIBXPS_API int xps_kvcache__learn_commit(struct xps_kvcache *kc,
					 const struct xps_kv_learned *l,
					 struct xps_kv_value *value);

/*
 * Established TCP connections to the context's port that XPS keeps no
 * record of (accepted before the context existed, say): writes on them
 * bypass the handler.  Their number, or a negative errno.  A connection
 * accepted once the context exists is recorded, so after a check that
 * found none, the next one walks the connections again only if XPS
 * failed to record one since (struct xps_config.unrecorded) or
 * opts->recheck_ns have passed; until then it returns 0 at once.
 */
LIBXPS_API int xps_kvcache__unseen_conns(struct xps_kvcache *kc);

/*
 * The handler's state map value, mapped shared.  Every kv-cache handler's
 * state begins with struct xps_kv_state (include/xps/kvcache.h); the rest
 * is the handler's (struct redis_state, struct mc_state).  The handler
 * changes it concurrently: use atomic operations only.
 */
LIBXPS_API void *xps_kvcache__state(struct xps_kvcache *kc);
/* Set, then clear, bits of the state's flags word (atomically). */
LIBXPS_API void xps_kvcache__flags(struct xps_kvcache *kc, __u32 set,
				   __u32 clear);
/*
 * Nothing filled so far may be served any more (the server restarted,
 * say): a new cache generation.
 */
LIBXPS_API void xps_kvcache__invalidate(struct xps_kvcache *kc);

/*
 * Vouch for the cache for @ns nanoseconds from now (struct xps_kv_state
 * lease_ns): the handler answers nothing once the lease has run out, so
 * a filler that dies or hangs stops the fast path within @ns.  @ns 0
 * ends the lease at once (it never returns to "no lease": 0 in the map).
 */
LIBXPS_API void xps_kvcache__lease(struct xps_kvcache *kc, __u64 ns);
/*
 * The state's flags word now: read it before a check of the server
 * whose result may lift a stop (xps_kvcache__lift()).
 */
LIBXPS_API __u32 xps_kvcache__stops(struct xps_kvcache *kc);
/*
 * Clear @clear in the flags, unless the handler stopped the fast path
 * again since @seen was read (its stop generation moved): then a check
 * that began before that stop would lift it, and nothing changes.  0, or
 * -EAGAIN when a stop came since.
 */
LIBXPS_API int xps_kvcache__lift(struct xps_kvcache *kc, __u32 clear,
				 __u32 seen);
/*
 * Set @set in the flags, unless the handler stopped the fast path since
 * @seen was read, as xps_kvcache__lift() clears: for a property of the
 * server that a check found, which the handler withdraws at a stop.  0,
 * or -EAGAIN when a stop came since.
 */
LIBXPS_API int xps_kvcache__grant(struct xps_kvcache *kc, __u32 set,
				  __u32 seen);
/*
 * How many writes of every key (server-wide changes among them) are
 * unanswered now (struct xps_wpend ovf), or a negative errno.
 */
LIBXPS_API long long xps_kvcache__writes_all_pending(struct xps_kvcache *kc);
/*
 * The handler passes a request of each connection at least every @ns
 * (half the server's idle timeout), so the server sees it alive; 0:
 * never needed.
 */
LIBXPS_API void xps_kvcache__idle_pass(struct xps_kvcache *kc, __u64 ns);
/*
 * Whether the service's listening socket closed (XPS_SERVER_GONE,
 * include/xps/abi.h) for this context or another one on its port (a UDP
 * context sharing its cache): their handlers answer nothing until
 * xps_kvcache__server_back().  Remembers what it read.
 */
LIBXPS_API bool xps_kvcache__server_gone(struct xps_kvcache *kc);
/*
 * Everything cached before is dropped (xps_kvcache__invalidate()) and
 * the server found again: let the handlers answer, but where another
 * close came since the last xps_kvcache__server_gone() (-EAGAIN; the
 * next call sees it).
 */
LIBXPS_API int xps_kvcache__server_back(struct xps_kvcache *kc);

#ifdef __cplusplus
}
#endif

#endif /* __XPS_LIBXPS_KV_H */
