// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The fillers' own part: logging, connecting to servers and reconnecting,
 * the status file.  The cache itself is libxps's (xps_kvcache__*).
 */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <bpf/bpf.h>
#include <linux/tcp.h>

#include "libxps.h"
#include "filler.h"

void flog(const char *fmt, ...)
{
	char ts[32];
	time_t t = time(NULL);
	va_list ap;

	strftime(ts, sizeof(ts), "%F %T", localtime(&t));
	fprintf(stderr, "%s: ", ts);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void filler_committed(struct filler *f, const struct xps_kv_key *key,
		      int err)
{
	if (!err) {
		f->fills++;
		return;
	}
	if (!f->uncached++)
		flog("%s: cannot cache %.*s: %s (logged once)", f->name,
		     (int)key->len, key->b, strerror(-err));
}

int filler_tcp_connect(const char *host, const char *port,
		       unsigned int timeout_ms, int *gai_err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	int fd = -1, one = 1, err;

	*gai_err = getaddrinfo(host, port, &hints, &ai);
	if (*gai_err)
		return -1;
	for (p = ai; p; p = p->ai_next) {
		fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (timeout_ms) {
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		}
		if (!connect(fd, p->ai_addr, p->ai_addrlen))
			break;
		err = errno;
		close(fd);
		errno = err;
		fd = -1;
	}
	err = errno;
	freeaddrinfo(ai);
	errno = err;
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int filler_hostport(const char *arg, const char *option, char *host,
		    size_t hostsz, char *port, size_t portsz)
{
	const char *colon = strrchr(arg, ':');

	if (!colon || colon == arg) {
		fprintf(stderr, "%s: expected HOST:PORT\n", option);
		return -1;
	}
	/* [v6]:port */
	if (arg[0] == '[' && colon[-1] == ']')
		snprintf(host, hostsz, "%.*s", (int)(colon - arg - 2), arg + 1);
	else
		snprintf(host, hostsz, "%.*s", (int)(colon - arg), arg);
	snprintf(port, portsz, "%s", colon + 1);
	return 0;
}

__u32 filler_data_map_id(struct xps_context *xc)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = xps_context__data_fd(xc);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.id;
}

bool filler_context_gone_id(const char *name, __u32 data_id)
{
	struct xps_context *xc = xps_context__open(name);
	__u32 id;

	if (!xc)
		return errno == ENOENT;
	id = filler_data_map_id(xc);
	xps_context__close(xc);
	return id && data_id && id != data_id;
}

bool filler_context_gone(struct filler *f)
{
	return filler_context_gone_id(f->name, f->data_id);
}

int filler_open(struct filler *f, const char *ctxname)
{
	struct xps_context *xc;

	memset(f, 0, sizeof(*f));
	f->name = ctxname;
	xc = xps_context__open(ctxname);
	if (!xc) {
		flog("no context '%s'", ctxname);
		return -1;
	}
	f->data_id = filler_data_map_id(xc);
	f->kc = xps_kvcache__open(xc, NULL);
	xps_context__close(xc);
	if (!f->kc) {
		flog("context '%s' has no kv-cache to fill: %s", ctxname,
		     strerror(errno));
		return -1;
	}
	f->port = xps_kvcache__port(f->kc);
	return 0;
}

void filler_status(struct filler *f, const char *state, const char *why)
{
	char path[256], tmp[272];
	FILE *fp;

	snprintf(path, sizeof(path), "/run/xps/%s.state", f->name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fp = fopen(tmp, "w");
	if (!fp)
		return;
	if (why && why[0])
		fprintf(fp, "%s: %s\n", state, why);
	else
		fprintf(fp, "%s\n", state);
	if (fclose(fp) || rename(tmp, path))
		unlink(tmp);
}

static void filler_backoff(struct filler *f, volatile sig_atomic_t *stop)
{
	struct timespec ts;
	unsigned int i;

	f->backoff_ms = f->backoff_ms ? f->backoff_ms * 2 : 100;
	if (f->backoff_ms > 5000)
		f->backoff_ms = 5000;
	/* in 100 ms steps, so that a signal is answered quickly */
	for (i = 0; i < f->backoff_ms / 100 && !*stop; i++) {
		ts.tv_sec = 0;
		ts.tv_nsec = 100 * 1000 * 1000;
		nanosleep(&ts, NULL);
	}
}

int filler_reconnect(struct filler *f, __u32 no_serve, const char *why,
		     int (*connect)(void *arg), void *arg,
		     volatile sig_atomic_t *stop)
{
	bool gone;

	xps_kvcache__flags(f->kc, no_serve, 0);
	while (!*stop) {
		filler_status(f, "restarting", why);
		/* a close after this read is seen by the next check */
		gone = xps_kvcache__server_gone(f->kc);
		if (!connect(arg)) {
			xps_kvcache__invalidate(f->kc);
			if (gone)
				xps_kvcache__server_back(f->kc);
			f->backoff_ms = 0;
			return 0;
		}
		filler_backoff(f, stop);
	}
	return -1;
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

void filler_check_end(struct filler *f, __u32 no_serve, __u32 seen,
		      bool may_lift, const char *why)
{
	xps_kvcache__lease(f->kc, FILLER_LEASE_NS);
	if (why && why[0]) {
		xps_kvcache__flags(f->kc, no_serve, 0);
		return;
	}
	/* else a stop stays until a check that may lift it */
	if (may_lift)
		xps_kvcache__lift(f->kc, no_serve, seen);
}
