/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the cache fillers (xps-redisd, xps-memcachedd) share besides
 * libxps's kv-cache (libxps/libxps_kv.h, the coherence protocol):
 * talking to servers, logging, the service's status and reconnecting.
 */
#ifndef __XPS_FILLER_H
#define __XPS_FILLER_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <linux/types.h>
#include "libxps_kv.h"

struct filler {
	const char *name;	/* the context */
	struct xps_kvcache *kc;
	__u16 port;		/* the context's port */
	__u64 fills, rejected, skipped;
	__u64 uncached;		/* failed commits (filler_committed()) */
	unsigned int idle_us;	/* the next filler_idle() wait, 0: shortest */
	unsigned int backoff_ms;	/* filler_reconnect()'s next wait */
	__u32 data_id;		/* the context's data map, to tell it apart */
};

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
 * restarted with other data): all of it is invalidated, and then the
 * kernel's mark that the server's listening socket closed
 * (xps_kvcache__server_gone()) is cleared.  0, or -1 when stopped.
 */
int filler_reconnect(struct filler *f, __u32 no_serve, const char *why,
		     int (*connect)(void *arg), void *arg,
		     volatile sig_atomic_t *stop);

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
 * lease either way: the filler is alive and checking.
 */
void filler_check_end(struct filler *f, __u32 no_serve, __u32 seen,
		      bool may_lift, const char *why);

void flog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Count a commit of @key that returned @err: a failed one (a full data
 * map, say) leaves the value uncached and is logged once; it says
 * nothing about the server, whose connection is kept.
 */
void filler_committed(struct filler *f, const struct xps_kv_key *key,
		      int err);
/* The kv-cache of context @ctxname (logged when there is none). */
int filler_open(struct filler *f, const char *ctxname);
/*
 * The context filler_open() opened is gone (removed, or replaced by
 * another of the same name): the daemon has nothing left to fill and
 * must exit, not fill maps nobody reads while it talks to the server.
 */
bool filler_context_gone(struct filler *f);
/* The same for context @name whose data map had the id @data_id. */
bool filler_context_gone_id(const char *name, __u32 data_id);
/* The id of @xc's data map, which names the context for good; 0: none. */
__u32 filler_data_map_id(struct xps_context *xc);
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
