/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the cache fillers (xps-redisd, xps-memcachedd) share on top of
 * the daemons' frame (daemon.h) and libxps's kv-cache (libxps/libxps_kv.h,
 * the coherence protocol): opening the cache, reconnecting to the server
 * without trusting what was cached, the checks' lease and stops, the
 * pace of the miss queue.  A daemon without a kv-cache needs none of it.
 */
#ifndef __XPS_FILLER_H
#define __XPS_FILLER_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "libxps_kv.h"
#include "daemon.h"

struct filler {
	struct daemon *d;	/* the daemon it fills for */
	struct xps_kvcache *kc;
	__u16 port;		/* the context's port */
	__u64 fills, rejected, skipped;
	__u64 uncached;		/* failed commits (filler_committed()) */
	unsigned int idle_us;	/* the next filler_idle() wait, 0: shortest */
};

/*
 * (Re)connect to the server with @connect(@arg) (0 on success), backing
 * off (daemon_reconnect()) until it succeeds or the daemon is stopped,
 * with the handler kept out (@no_serve) until the daemon's next check clears
 * it.  Whatever was cached before may be stale (the server may have
 * restarted with other data): all of it is invalidated, and then the
 * kernel's mark that the server's listening socket closed
 * (xps_kvcache__server_gone()) is cleared.  0, or -1 when stopped.
 */
int filler_reconnect(struct filler *f, __u32 no_serve, const char *why,
		     int (*connect)(void *arg), void *arg);

/*
 * The cache's lease (struct xps_kv_state): the handler answers nothing
 * once it has run out, so a filler that dies or hangs stops the fast
 * path within FILLER_LEASE_NS.  A check renews it once a second.
 */
#define FILLER_LEASE_NS		(3 * 1000000000ULL)
/* How long a check waits for server-wide changes to be answered. */
#define FILLER_PENDING_WAIT_MS	200

/*
 * A check of the server begins.  *@seen is the state's flags now; true
 * when the check may lift a stop the handler set: every server-wide
 * change it stopped for (counted as a write of every key) was answered
 * by the server, so that the check sees the server after the change.
 * Waits up to FILLER_PENDING_WAIT_MS for that.
 */
bool filler_check_begin(struct filler *f, __u32 *seen);
/*
 * The check that began with filler_check_begin(@seen, @may_lift) ended
 * and found @why (empty: the handler may serve): serving resumes only if
 * the check may lift a stop and the handler set none since @seen
 * (xps_kvcache__lift()); else @no_serve stays or is set.  Renews the
 * lease either way: the filler is alive and checking.  Returns what the
 * daemon reports (daemon_report()): @why; else "" once the handler may
 * serve (@no_serve clear), so that the daemon says "serving" only then;
 * else why the stop stays.
 */
const char *filler_check_end(struct filler *f, __u32 no_serve, __u32 seen,
			     bool may_lift, const char *why);


/*
 * Count a commit of @key that returned @err: a failed one (a full data
 * map, say) leaves the value uncached and is logged once; it says
 * nothing about the server, whose connection is kept.
 */
void filler_committed(struct filler *f, const struct xps_kv_key *key,
		      int err);
/*
 * The kv-cache of @d's context (logged when there is none); d->data_id
 * and, when --server gave none, d->port (the context's) are set too.
 */
int filler_open(struct filler *f, struct daemon *d);
/*
 * The filler stops: without it the cache must not be trusted (the
 * handler kept out by @no_serve, the lease ended, the status "stopped").
 */
void filler_stop(struct filler *f, __u32 no_serve);
void filler_close(struct filler *f);
/*
 * Sleep before polling the miss queue again: FILLER_IDLE_MIN_US after a
 * miss was taken, twice as long after every empty poll up to
 * FILLER_IDLE_MAX_US, so an idle filler wakes 100 times a second instead of
 * 5,000 and a busy one still drains the queue at once.  A miss is passed to
 * the service meanwhile: waiting longer costs hits, never an answer.  A
 * reply the handler captured (xps_kvcache__learn_wait()) ends the wait.
 */
#define FILLER_IDLE_MIN_US	200
#define FILLER_IDLE_MAX_US	10000
void filler_idle(struct filler *f);
/* A miss was taken from the queue: the next wait is the shortest. */
static inline void filler_busy(struct filler *f)
{
	f->idle_us = 0;
}
#endif
