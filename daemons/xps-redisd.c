// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xps-redisd: keeps the Redis handler's cache filled and honest, for an
 * unmodified redis-server.
 *
 *   xps-redisd --context NAME [--redis HOST:PORT] [-v]
 *
 * It takes the keys the handler missed from the context's miss queue,
 * fetches them from Redis and inserts them under the coherence protocol of
 * docs/coherence.md: a value is inserted only if no write was unanswered
 * when the write epoch was read, and removed again if the epoch moved
 * meanwhile.  It also decides whether the handler may serve at all: only
 * while every write Redis can receive passes through XPS (no client older
 * than the context, no unix socket, not a replica, no eviction, no
 * password); otherwise it sets REDIS_NO_SERVE and says why.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "libxps.h"
#include "filler.h"
#include "../bpf/redis.h"

#define logmsg(...) flog("xps-redisd: " __VA_ARGS__)

static volatile sig_atomic_t stop;
static int verbose;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* ---- a minimal RESP client ------------------------------------------- */

struct conn {
	int fd;
	char buf[65536];
	size_t len, pos;
};

static int resp_connect(struct conn *c, const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
	int one = 1, err;

	c->fd = -1;
	c->len = c->pos = 0;
	err = getaddrinfo(host, port, &hints, &ai);
	if (err) {
		logmsg("cannot resolve %s:%s: %s", host, port, gai_strerror(err));
		return -1;
	}
	for (p = ai; p; p = p->ai_next) {
		c->fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c->fd < 0)
			continue;
		if (!connect(c->fd, p->ai_addr, p->ai_addrlen))
			break;
		close(c->fd);
		c->fd = -1;
	}
	freeaddrinfo(ai);
	if (c->fd < 0) {
		logmsg("cannot connect to Redis at %s:%s: %s", host, port,
		       strerror(errno));
		return -1;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

static int fill_buf(struct conn *c)
{
	ssize_t n;

	if (c->pos == c->len)
		c->pos = c->len = 0;
	if (c->len == sizeof(c->buf)) {
		if (!c->pos)
			return -1;
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
	}
	n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
	if (n <= 0)
		return -1;
	c->len += n;
	return 0;
}

/* One line without CRLF into @line. */
static int read_line(struct conn *c, char *line, size_t sz)
{
	char *nl;

	for (;;) {
		nl = memchr(c->buf + c->pos, '\n', c->len - c->pos);
		if (nl)
			break;
		if (fill_buf(c))
			return -1;
	}
	if ((size_t)(nl - (c->buf + c->pos)) >= sz)
		return -1;
	memcpy(line, c->buf + c->pos, nl - (c->buf + c->pos));
	line[nl - (c->buf + c->pos)] = '\0';
	if (nl > c->buf + c->pos && nl[-1] == '\r')
		line[nl - (c->buf + c->pos) - 1] = '\0';
	c->pos = nl - c->buf + 1;
	return 0;
}

static int read_bytes(struct conn *c, void *dst, size_t n)
{
	size_t got = 0, k;

	while (got < n) {
		if (c->pos == c->len && fill_buf(c))
			return -1;
		k = c->len - c->pos;
		if (k > n - got)
			k = n - got;
		if (dst)
			memcpy((char *)dst + got, c->buf + c->pos, k);
		c->pos += k;
		got += k;
	}
	return 0;
}

/*
 * One command in one write: a command split over several segments is one
 * whose boundaries the handler cannot see, and it then invalidates the
 * whole cache (what it must do when in doubt).
 */
static int send_cmd(struct conn *c, int argc, const char **argv,
		    const size_t *lens)
{
	char out[1024];
	size_t n = 0, l;
	int i, k;

	k = snprintf(out, sizeof(out), "*%d\r\n", argc);
	n = k;
	for (i = 0; i < argc; i++) {
		l = lens ? lens[i] : strlen(argv[i]);
		if (n + l + 32 > sizeof(out))
			return -1;
		n += snprintf(out + n, sizeof(out) - n, "$%zu\r\n", l);
		memcpy(out + n, argv[i], l);
		n += l;
		out[n++] = '\r';
		out[n++] = '\n';
	}
	return write(c->fd, out, n) == (ssize_t)n ? 0 : -1;
}

/*
 * A reply: type in *type ('+', '-', ':', '$', '*'), integer in *num, a bulk
 * of up to @cap bytes in @data (*num = its length, -1 for nil); arrays are
 * read with read_reply per element by the caller.
 */
static int read_reply(struct conn *c, char *type, long long *num, void *data,
		      size_t cap, char *line, size_t linesz)
{
	if (read_line(c, line, linesz))
		return -1;
	*type = line[0];
	*num = 0;
	switch (line[0]) {
	case ':':
	case '*':
		*num = strtoll(line + 1, NULL, 10);
		return 0;
	case '$':
		*num = strtoll(line + 1, NULL, 10);
		if (*num < 0)
			return 0;
		if ((size_t)*num > cap) {
			/* too long to cache: skip it */
			if (read_bytes(c, NULL, *num + 2))
				return -1;
			*num = -3;
			return 0;
		}
		return read_bytes(c, data, *num) || read_bytes(c, NULL, 2);
	case '+':
	case '-':
		return 0;
	default:
		return -1;
	}
}

/* CONFIG GET <name>: the value into @out. */
static int config_get(struct conn *c, const char *name, char *out, size_t sz)
{
	const char *argv[] = { "CONFIG", "GET", name };
	char line[512], t;
	long long n;

	out[0] = '\0';
	if (send_cmd(c, 3, argv, NULL) ||
	    read_reply(c, &t, &n, NULL, 0, line, sizeof(line)) || t != '*')
		return -1;
	if (n < 2)
		return 0;
	if (read_reply(c, &t, &n, NULL, 0, line, sizeof(line)) ||
	    read_reply(c, &t, &n, out, sz - 1, line, sizeof(line)))
		return -1;
	out[n > 0 ? n : 0] = '\0';
	return 0;
}

/* ---- serving decision ------------------------------------------------ */

struct ctx {
	struct filler f;
	struct conn redis;
	char why[400];		/* why the handler may not serve, or "" */
};

static int set_no_serve(struct ctx *x, bool on)
{
	struct redis_state st;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(x->f.state_fd, &zero, &st))
		return -1;
	if (on)
		st.flags |= REDIS_NO_SERVE;
	else
		st.flags &= ~REDIS_NO_SERVE;
	return bpf_map_update_elem(x->f.state_fd, &zero, &st, BPF_ANY);
}

/*
 * Every write must reach Redis through the handler: find what could go
 * around it.  Writes @why (empty when serving is safe).
 */
static int check_server(struct ctx *x)
{
	const char *role[] = { "ROLE" };
	char v[256], line[4096], t;
	long long n;
	int old;

	x->why[0] = '\0';
	if (config_get(&x->redis, "requirepass", v, sizeof(v)))
		return -1;
	if (v[0]) {
		snprintf(x->why, sizeof(x->why), "Redis requires a password");
		return 0;
	}
	if (config_get(&x->redis, "unixsocket", v, sizeof(v)))
		return -1;
	if (v[0]) {
		snprintf(x->why, sizeof(x->why),
			 "Redis listens on a unix socket (%s): writes there bypass XPS", v);
		return 0;
	}
	if (config_get(&x->redis, "maxmemory", v, sizeof(v)))
		return -1;
	if (strcmp(v, "0")) {
		if (config_get(&x->redis, "maxmemory-policy", v, sizeof(v)))
			return -1;
		if (strcmp(v, "noeviction")) {
			snprintf(x->why, sizeof(x->why),
				 "Redis evicts keys (maxmemory-policy %s)", v);
			return 0;
		}
	}
	if (send_cmd(&x->redis, 1, role, NULL) ||
	    read_reply(&x->redis, &t, &n, NULL, 0, line, sizeof(line)) ||
	    t != '*' || n < 1)
		return -1;
	if (read_reply(&x->redis, &t, &n, v, sizeof(v) - 1, line, sizeof(line)))
		return -1;
	v[n > 0 ? n : 0] = '\0';
	/* skip the rest of the ROLE reply (shape depends on the role) */
	{
		const char *ping[] = { "PING" };

		send_cmd(&x->redis, 1, ping, NULL);
		while (!read_line(&x->redis, line, sizeof(line)))
			if (!strcmp(line, "+PONG"))
				break;
	}
	if (strcmp(v, "master")) {
		snprintf(x->why, sizeof(x->why),
			 "Redis is a %s: replicated writes bypass XPS", v);
		return 0;
	}
	/* connections XPS does not see (older than the context) */
	old = filler_unseen_connections(&x->f);
	if (old < 0)
		return -1;
	if (old)
		snprintf(x->why, sizeof(x->why),
			 "%d connection(s) made before the context: their writes bypass XPS",
			 old);
	return 0;
}

/* ---- fills ------------------------------------------------------------ */

/*
 * Fetch @k and insert it if the coherence protocol allows.  Returns 1 when
 * the fill must be retried later (a write was unanswered).
 */
static int fill_one(struct ctx *x, const struct redis_key *k)
{
	const char *argv[2] = { NULL, (const char *)k->k };
	size_t lens[2] = { 0, k->len };
	struct redis_value val = {};
	struct redis_state st;
	char line[256], t;
	long long n, ttl;
	__u32 zero = 0;
	int r;

	if (bpf_map_lookup_elem(x->f.state_fd, &zero, &st))
		return -1;
	r = filler_begin(&x->f, k, &val.version);
	if (r)
		return r;

	argv[0] = "PTTL";
	lens[0] = 4;
	if (send_cmd(&x->redis, 2, argv, lens))
		return -1;
	argv[0] = "GET";
	lens[0] = 3;
	if (send_cmd(&x->redis, 2, argv, lens))
		return -1;
	if (read_reply(&x->redis, &t, &ttl, NULL, 0, line, sizeof(line)))
		return -1;
	if (read_reply(&x->redis, &t, &n, val.v, sizeof(val.v), line,
		       sizeof(line)))
		return -1;
	/*
	 * Only strings without expiry: an expiring key would be served past
	 * its death, and GET on other types is Redis's to answer.
	 */
	if (t != '$' || n < 0 || ttl != -1) {
		x->f.skipped++;
		return 0;
	}
	val.len = n;
	val.cgen = st.cgen;
	if (filler_commit(&x->f, k, &val))
		return -1;
	if (verbose > 1)
		logmsg("filled %.*s (%u bytes)", (int)k->len, k->k, val.len);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: xps-redisd --context NAME [--redis HOST:PORT] [-v]\n"
"Fills the cache of the XPS Redis context NAME from the Redis server at\n"
"HOST:PORT (default 127.0.0.1 and the context's port) and keeps the\n"
"handler out while writes could bypass it.  Runs until SIGTERM/SIGINT.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "context", required_argument, NULL, 'c' },
		{ "redis", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char host[256] = "127.0.0.1", port[16] = "", last_why[400] = "-";
	const char *name = NULL;
	struct ctx x = {};
	struct redis_key k;
	struct timespec idle = { 0, 200000 }, last_check = { 0, 0 }, now;
	int o, r, ret = 1;

	while ((o = getopt_long(argc, argv, "c:r:vh", opts, NULL)) != -1) {
		switch (o) {
		case 'c':
			name = optarg;
			break;
		case 'r':
			if (filler_hostport(optarg, "--redis", host, sizeof(host),
					    port, sizeof(port)))
				return 2;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!name) {
		usage(stderr);
		return 2;
	}
	if (filler_open(&x.f, name))
		return 1;
	if (!port[0])
		snprintf(port, sizeof(port), "%u", x.f.port);
	if (resp_connect(&x.redis, host, port))
		return 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	logmsg("serving context '%s' for Redis at %s:%s", name, host, port);

	while (!stop) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec != last_check.tv_sec) {
			/* once a second: may the handler serve? */
			last_check = now;
			if (check_server(&x)) {
				logmsg("lost the connection to Redis");
				set_no_serve(&x, true);
				goto out;
			}
			set_no_serve(&x, x.why[0] != '\0');
			if (strcmp(x.why, last_why)) {
				if (x.why[0])
					logmsg("not serving: %s", x.why);
				else
					logmsg("serving GETs from the kernel");
				snprintf(last_why, sizeof(last_why), "%s", x.why);
			}
			if (verbose)
				logmsg("fills %llu, rejected %llu, not cacheable %llu",
				       (unsigned long long)x.f.fills,
				       (unsigned long long)x.f.rejected,
				       (unsigned long long)x.f.skipped);
		}
		if (bpf_map_lookup_and_delete_elem(x.f.misses_fd, NULL, &k)) {
			nanosleep(&idle, NULL);
			continue;
		}
		if (x.why[0] || k.len < 1 || k.len > REDIS_KEY_MAX)
			continue;
		r = fill_one(&x, &k);
		if (r < 0) {
			logmsg("lost the connection to Redis");
			set_no_serve(&x, true);
			goto out;
		}
		if (r > 0) {
			/* a write is unanswered: try again shortly */
			bpf_map_update_elem(x.f.misses_fd, NULL, &k, BPF_EXIST);
			nanosleep(&idle, NULL);
		}
	}
	ret = 0;
out:
	logmsg("exiting: fills %llu, rejected %llu, not cacheable %llu",
	       (unsigned long long)x.f.fills, (unsigned long long)x.f.rejected,
	       (unsigned long long)x.f.skipped);
	close(x.redis.fd);
	filler_close(&x.f);
	return ret;
}
