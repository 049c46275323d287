// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <bpf/bpf.h>

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

/* A map of @xc (or of the framework when @xc is NULL); -1 logged. */
static int open_map(struct xps_context *xc, int which)
{
	int fd = xc ? xps_context__map_fd(xc, which) :
		      xps_framework__map_fd(which);

	if (fd < 0)
		flog("cannot open a map of '%s': %s",
		     xc ? xps_context__name(xc) : "the framework",
		     strerror(-fd));
	return fd < 0 ? -1 : fd;
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

static int filler_open_maps(struct filler *f, const char *ctxname, int all)
{
	struct xps_context *xc;
	struct xps_ctx_info info;

	memset(f, 0, sizeof(*f));
	f->data_fd = f->misses_fd = f->state_fd = f->config_fd = f->conns_fd = -1;
	f->versions_fd = -1;
	f->name = ctxname;
	xc = xps_context__open(ctxname);
	if (!xc || xps_context__info(xc, &info)) {
		flog("no context '%s'", ctxname);
		xps_context__close(xc);
		return -1;
	}
	f->port = info.pred.lport;
	f->data_fd = open_map(xc, XPS_CTX_MAP_DATA);
	if (all) {
		f->misses_fd = open_map(xc, XPS_CTX_MAP_MISSES);
		f->state_fd = open_map(xc, XPS_CTX_MAP_STATE);
		f->versions_fd = open_map(xc, XPS_CTX_MAP_VERSIONS);
		f->config_fd = open_map(NULL, XPS_FW_MAP_CONFIG);
		f->conns_fd = open_map(NULL, XPS_FW_MAP_CONNS);
	}
	xps_context__close(xc);
	if (f->data_fd < 0 || (all && (f->misses_fd < 0 || f->state_fd < 0 ||
				       f->config_fd < 0 || f->conns_fd < 0 ||
				       f->versions_fd < 0))) {
		filler_close(f);
		return -1;
	}
	return 0;
}

int filler_open_data(struct filler *f, const char *ctxname)
{
	return filler_open_maps(f, ctxname, 0);
}

int filler_open(struct filler *f, const char *ctxname)
{
	if (filler_open_maps(f, ctxname, 1))
		return -1;
	f->state = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
			MAP_SHARED, f->state_fd, 0);
	if (f->state == MAP_FAILED) {
		flog("cannot map the state of '%s': %s (a handler built "
		     "before its state map was mappable?)", ctxname,
		     strerror(errno));
		f->state = NULL;
		filler_close(f);
		return -1;
	}
	return 0;
}

static __u64 key_hash(const void *key, size_t n)
{
	const unsigned char *p = key;
	__u64 h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h | 1;	/* 0 marks an empty slot */
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void filler_skipped(struct filler *f, const void *key, size_t n)
{
	__u64 h = key_hash(key, n);

	f->skip_hash[h % FILLER_SKIP_SLOTS] = h;
	f->skip_ns[h % FILLER_SKIP_SLOTS] = now_ns();
	f->skipped++;
}

bool filler_recently_skipped(struct filler *f, const void *key, size_t n)
{
	__u64 h = key_hash(key, n);

	return f->skip_hash[h % FILLER_SKIP_SLOTS] == h &&
	       now_ns() - f->skip_ns[h % FILLER_SKIP_SLOTS] < FILLER_SKIP_NS;
}

/* Nothing cached so far may be served (the server restarted, say). */
static void filler_invalidate_all(struct filler *f)
{
	/* every handler state begins with the cache generation */
	__atomic_fetch_add((__u32 *)f->state, 1, __ATOMIC_SEQ_CST);
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
	filler_flags(f, no_serve, 0);
	while (!*stop) {
		filler_status(f, "restarting", why);
		if (!connect(arg)) {
			filler_invalidate_all(f);
			f->backoff_ms = 0;
			return 0;
		}
		filler_backoff(f, stop);
	}
	return -1;
}

void filler_flags(struct filler *f, __u32 set, __u32 clear)
{
	__u32 *flags = (__u32 *)f->state + 1;

	if (set)
		__atomic_fetch_or(flags, set, __ATOMIC_SEQ_CST);
	if (clear)
		__atomic_fetch_and(flags, ~clear, __ATOMIC_SEQ_CST);
}

void filler_close(struct filler *f)
{
	int *fds[] = { &f->data_fd, &f->misses_fd, &f->state_fd,
		       &f->config_fd, &f->conns_fd, &f->versions_fd };
	size_t i;

	if (f->state)
		munmap(f->state, sysconf(_SC_PAGESIZE));
	f->state = NULL;
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
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
	ts.tv_sec = 0;
	ts.tv_nsec = f->idle_us * 1000L;
	nanosleep(&ts, NULL);
}

static int read_config(struct filler *f, struct xps_config *cfg)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(f->config_fd, &zero, cfg);
}

void filler_key_clean(struct xps_kv_key *key)
{
	if (key->len > XPS_KV_KEY_MAX)
		key->len = 0;
	memset(key->b + key->len, 0, XPS_KV_KEY_MAX - key->len);
	key->pad = 0;
}

int filler_begin(struct filler *f, const struct xps_kv_key *key,
		 __u64 *version)
{
	struct xps_kv_hkey h = xps_kv_hkey_of(key);
	struct xps_config cfg;

	/* a key never written has no entry: version 0 */
	if (bpf_map_lookup_elem(f->versions_fd, &h, version)) {
		if (errno != ENOENT)
			return -1;
		*version = 0;
	}
	if (read_config(f, &cfg))
		return -1;
	if (cfg.unacked_writes) {
		f->rejected++;
		return 1;
	}
	return 0;
}

int filler_commit(struct filler *f, const struct xps_kv_key *key,
		  struct xps_kv_value *value)
{
	struct xps_kv_hkey h = xps_kv_hkey_of(key);

	value->key = *key;
	xps_kv_value_seal(value);	/* last: every field is set */
	if (bpf_map_update_elem(f->data_fd, &h, value, BPF_ANY))
		return -1;
	f->fills++;
	return 0;
}

/* One sock_diag dump of established TCP sockets of @family. */
static int unseen_family(struct filler *f, int family)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg = {
		.nlh = { .nlmsg_len = sizeof(msg),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.req = { .sdiag_family = family, .sdiag_protocol = IPPROTO_TCP,
			 .idiag_states = 1 << 1 /* TCP_ESTABLISHED */ },
	};
	struct xps_conn conn;
	char buf[16384];
	int fd, unseen = 0, done = 0;
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -1;
	if (send(fd, &msg, sizeof(msg), 0) < 0) {
		close(fd);
		return -1;
	}
	while (!done && (n = recv(fd, buf, sizeof(buf), 0)) > 0) {
		struct nlmsghdr *h;

		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n);
		     h = NLMSG_NEXT(h, n)) {
			struct inet_diag_msg *m = NLMSG_DATA(h);
			__u64 cookie;

			if (h->nlmsg_type == NLMSG_DONE ||
			    h->nlmsg_type == NLMSG_ERROR) {
				done = 1;
				break;
			}
			if (ntohs(m->id.idiag_sport) != f->port)
				continue;
			cookie = (__u64)m->id.idiag_cookie[1] << 32 |
				 m->id.idiag_cookie[0];
			if (bpf_map_lookup_elem(f->conns_fd, &cookie, &conn))
				unseen++;
		}
	}
	close(fd);
	return unseen;
}

int filler_unseen_connections(struct filler *f)
{
	int a = unseen_family(f, AF_INET), b = unseen_family(f, AF_INET6);

	if (a < 0 || b < 0)
		return -1;
	return a + b;
}
