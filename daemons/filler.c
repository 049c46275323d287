// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The fillers' own part (see filler.h): the cache they fill, reconnecting
 * without trusting it, the checks' lease and stops, the miss queue's
 * pace.  The cache itself is libxps's (xps_kvcache__*).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "libxps.h"
#include "filler.h"

void filler_committed(struct filler *f, const struct xps_kv_key *key,
		      int err)
{
	if (!err) {
		f->fills++;
		return;
	}
	if (!f->uncached++)
		daemon_log("%s: cannot cache %.*s: %s (logged once)",
			   f->d->context,
		     (int)key->len, key->b, strerror(-err));
}

int filler_open(struct filler *f, struct daemon *d)
{
	struct xps_context *xc;

	memset(f, 0, sizeof(*f));
	f->d = d;
	xc = xps_context__open(d->context);
	if (!xc) {
		daemon_log("no context '%s'", d->context);
		return -1;
	}
	d->data_id = daemon_data_map_id(xc);
	f->kc = xps_kvcache__open(xc, NULL);
	xps_context__close(xc);
	if (!f->kc) {
		daemon_log("context '%s' has no kv-cache to fill: %s",
			   d->context, strerror(errno));
		return -1;
	}
	f->port = xps_kvcache__port(f->kc);
	if (!d->port[0])
		snprintf(d->port, sizeof(d->port), "%u", f->port);
	return 0;
}

struct filler_connect {
	struct filler *f;
	int (*connect)(void *arg);
	void *arg;
};

/* One attempt of filler_reconnect(). */
static int filler_connect_once(void *arg)
{
	struct filler_connect *c = arg;
	bool gone;

	/* a close after this read is seen by the next check */
	gone = xps_kvcache__server_gone(c->f->kc);
	if (c->connect(c->arg))
		return -1;
	/* a server that restarted has new sockets: the native UDP hook runs
	 * only on sockets enrolled (xps_framework__enroll_udp())
	 */
	xps_framework__enroll_udp();
	xps_kvcache__invalidate(c->f->kc);
	if (gone)
		xps_kvcache__server_back(c->f->kc);
	return 0;
}

int filler_reconnect(struct filler *f, __u32 no_serve, const char *why,
		     int (*connect)(void *arg), void *arg)
{
	struct filler_connect c = { f, connect, arg };

	xps_kvcache__flags(f->kc, no_serve, 0);
	return daemon_reconnect(f->d, why, filler_connect_once, &c);
}

void filler_stop(struct filler *f, __u32 no_serve)
{
	xps_kvcache__flags(f->kc, no_serve, 0);
	xps_kvcache__lease(f->kc, 0);
	daemon_status(f->d, "stopped", NULL);
}

void filler_close(struct filler *f)
{
	xps_kvcache__close(f->kc);
	f->kc = NULL;
}

void filler_idle(struct filler *f)
{
	struct timespec ts;

	if (!f->idle_us)
		f->idle_us = FILLER_IDLE_MIN_US;
	else if (f->idle_us < FILLER_IDLE_MAX_US / 2)
		f->idle_us *= 2;
	else
		f->idle_us = FILLER_IDLE_MAX_US;
	/* a capture ends the wait: its GET's key misses until learned */
	if (f->kc && xps_kvcache__learn_wait(f->kc, f->idle_us) >= 0)
		return;
	ts.tv_sec = 0;
	ts.tv_nsec = f->idle_us * 1000L;
	nanosleep(&ts, NULL);
}

bool filler_check_begin(struct filler *f, __u32 *seen)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	long long pending;
	int waited;

	/* the flags first, the unanswered changes second */
	*seen = xps_kvcache__stops(f->kc);
	if (!(*seen & XPS_KV_NO_SERVE))
		return true;	/* nothing to lift: no wait */
	for (waited = 0;; waited += 5) {
		pending = xps_kvcache__writes_all_pending(f->kc);
		if (!pending)
			return true;
		if (pending < 0 || waited >= FILLER_PENDING_WAIT_MS)
			return false;
		nanosleep(&ts, NULL);
	}
}

const char *filler_check_end(struct filler *f, __u32 no_serve, __u32 seen,
			     bool may_lift, const char *why)
{
	xps_kvcache__lease(f->kc, FILLER_LEASE_NS);
	if (why && why[0]) {
		xps_kvcache__flags(f->kc, no_serve, 0);
		return why;
	}
	/* a stop stays until a check that may lift it */
	if ((seen & no_serve) &&
	    !(may_lift && !xps_kvcache__lift(f->kc, no_serve, seen)))
		return "waiting for writes in flight to be answered";
	return "";
}
