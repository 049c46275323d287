/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the cache fillers (xps-redisd, xps-memcachedd) share: the context's
 * pinned maps, the coherence protocol's commit (docs/coherence.md), the
 * check that every connection to the service is one XPS sees, logging.
 */
#ifndef __XPS_FILLER_H
#define __XPS_FILLER_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <linux/types.h>
#include <xps/kvcache.h>

#define FILLER_SKIP_SLOTS	1024
#define FILLER_SKIP_NS		(100 * 1000 * 1000ULL)

struct filler {
	const char *name;	/* the context */
	int data_fd, misses_fd, state_fd, config_fd, conns_fd, versions_fd;
	__u16 port;		/* the context's port */
	__u64 fills, rejected, skipped;
	unsigned int idle_us;	/* the next filler_idle() wait, 0: shortest */
	/*
	 * The context's state map value, mapped.  Every handler's state
	 * begins with __u32 cgen, __u32 flags; the handler updates it
	 * concurrently, so the filler uses atomic operations only (a
	 * lookup-modify-update of the whole value would undo them).
	 */
	void *state;
	unsigned int backoff_ms;	/* filler_reconnect()'s next wait */
	/* keys found not cacheable lately (filler_skipped()) */
	__u64 skip_hash[FILLER_SKIP_SLOTS];
	__u64 skip_ns[FILLER_SKIP_SLOTS];
};

/*
 * A key that was missing or not cacheable (a list, an expiry, too large)
 * is not fetched again for FILLER_SKIP_NS: every client GET of it is a
 * miss, and fetching it each time doubled the server's work for nothing.
 */
void filler_skipped(struct filler *f, const void *key, size_t n);
bool filler_recently_skipped(struct filler *f, const void *key, size_t n);

/* Set, then clear, bits of the handler state's flags word. */
void filler_flags(struct filler *f, __u32 set, __u32 clear);
/*
 * What `xpsctl service list` shows for the service: "running", or
 * "degraded" / "restarting" and why, in /run/xps/NAME.state.
 */
void filler_status(struct filler *f, const char *state, const char *why);
/*
 * (Re)connect to the server with @connect(@arg) (0 on success), backing
 * off (100 ms doubling to 5 s) until it succeeds or *@stop is set, with
 * the handler kept out (@no_serve) until the daemon's next check clears
 * it.  Whatever was cached before may be stale (the server may have
 * restarted with other data): all of it is invalidated.  0, or -1 when
 * stopped.
 */
int filler_reconnect(struct filler *f, __u32 no_serve, const char *why,
		     int (*connect)(void *arg), void *arg,
		     volatile sig_atomic_t *stop);

void flog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int filler_open(struct filler *f, const char *ctxname);
/*
 * Only the context's data map and port (every other fd -1), for handlers
 * without a cache.
 */
int filler_open_data(struct filler *f, const char *ctxname);
/* Split "HOST:PORT" (the last colon) into @host and @port; complains
 * naming @option and returns -1 when @arg is not of that form.
 */
int filler_hostport(const char *arg, const char *option, char *host,
		    size_t hostsz, char *port, size_t portsz);
/*
 * A TCP connection to HOST:PORT (the first address that accepts), with
 * TCP_NODELAY and, when @timeout_ms is not 0, that send/receive timeout
 * (connect included).  The fd, or -1 with errno set; *@gai_err is the
 * getaddrinfo() error when the name did not resolve, 0 otherwise.  Logs
 * nothing: the callers' messages differ.
 */
int filler_tcp_connect(const char *host, const char *port,
		       unsigned int timeout_ms, int *gai_err);
void filler_close(struct filler *f);
/*
 * Sleep before polling the miss queue again: FILLER_IDLE_MIN_US after a
 * miss was taken, twice as long after every empty poll up to
 * FILLER_IDLE_MAX_US, so an idle filler wakes 100 times a second instead of
 * 5,000 and a busy one still drains the queue at once.  A miss is passed to
 * the service meanwhile: waiting longer costs hits, never an answer.
 */
#define FILLER_IDLE_MIN_US	200
#define FILLER_IDLE_MAX_US	10000
void filler_idle(struct filler *f);
/* A miss was taken from the queue: the next wait is the shortest. */
static inline void filler_busy(struct filler *f)
{
	f->idle_us = 0;
}
/*
 * Start a fill of @key: its version (to stamp the value with), then the
 * check that no write is unanswered.  In this order: see docs/coherence.md.
 * Returns 1 when a write is unanswered (retry later), 0 with *version set,
 * -1 on error.
 */
int filler_begin(struct filler *f, const struct xps_kv_key *key,
		 __u64 *version);
/*
 * Insert @value (stamped with the version filler_begin() gave) for @key,
 * which it gets a copy of, and seal it (include/xps/kvcache.h).
 */
int filler_commit(struct filler *f, const struct xps_kv_key *key,
		  struct xps_kv_value *value);
/* A key popped from the miss queue, its bytes past len zeroed. */
void filler_key_clean(struct xps_kv_key *key);
/*
 * Every established TCP connection to the context's port must be one XPS
 * keeps a record of (accepted after the context existed): writes on any
 * other would bypass the handler.  Returns how many are not, or -1.
 */
int filler_unseen_connections(struct filler *f);

#endif
