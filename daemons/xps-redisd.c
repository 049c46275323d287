// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xps-redisd: keeps the Redis handler's cache filled and honest, for an
 * unmodified redis-server.
 *
 *   xps-redisd --context NAME [--redis HOST:PORT] [-v]
 *
 * It learns values from Redis's own replies: when a GET misses, the handler
 * reads the cache generation and the key's version, checks that no write
 * of the key is unanswered and asks for Redis's reply to that GET, which the
 * framework copies as it leaves (docs/coherence.md).  The filler asks
 * PTTL (a reply does not say whether the key expires) and inserts the
 * value stamped and sealed; the handler serves it only while the stamps
 * are current.  No value is fetched, so Redis's GET statistics count only
 * what clients asked.  It also decides whether the handler may serve at
 * all: only while every write Redis can receive passes through XPS (no
 * client older than the context, no unix socket, not a replica, no
 * eviction, no password); otherwise it sets REDIS_NO_SERVE and says why.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libxps.h"
#include "filler.h"
#include "resp.h"
#include <xps/redis.h>

#define logmsg(...) flog("xps-redisd: " __VA_ARGS__)

static volatile sig_atomic_t stop;
static int verbose;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* ---- serving decision ------------------------------------------------ */

struct ctx {
	struct filler f;
	struct conn redis;
	char why[400];		/* why the handler may not serve, or "" */
};

_Static_assert(offsetof(struct redis_state, cgen) == 0 &&
	       offsetof(struct redis_state, flags) == 4,
	       "a kv-cache state begins with cgen, flags (libxps_kv.h)");

static void set_no_serve(struct ctx *x, bool on)
{
	xps_kvcache__flags(x->f.kc, on ? REDIS_NO_SERVE : 0,
			   on ? 0 : REDIS_NO_SERVE);
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
	old = xps_kvcache__unseen_conns(x->f.kc);
	if (old < 0)
		return -1;
	if (old)
		snprintf(x->why, sizeof(x->why),
			 "%d connection(s) made before the context: their writes bypass XPS",
			 old);
	return 0;
}

struct redis_addr {
	struct conn *c;
	const char *host, *port;
};

static int redis_connect_cb(void *arg)
{
	struct redis_addr *a = arg;

	return resp_connect(a->c, a->host, a->port);
}

/* (Re)connect to Redis: filler_reconnect(). */
static int connect_redis(struct ctx *x, const char *host, const char *port,
			 const char *why)
{
	struct redis_addr a = { &x->redis, host, port };

	if (x->redis.fd >= 0)
		close(x->redis.fd);
	x->redis.fd = -1;
	return filler_reconnect(&x->f, REDIS_NO_SERVE, why, redis_connect_cb,
				&a, &stop);
}

/* ---- learning values from Redis's replies ------------------------------ */

/*
 * The bulk string the captured bytes begin with, "$<n>\r\n<n bytes>\r\n"
 * (replies to later requests may follow): its length, or -1 for anything
 * else (nil, an error, another type, too long, not whole).
 */
static int reply_bulk(const struct xps_kv_learned *l, void *dst, size_t cap)
{
	const char *r = (const char *)l->reply, *p = r + 1;
	size_t len = l->len, n = 0;

	if (len < 4 || r[0] != '$')
		return -1;
	while (p < r + len && *p >= '0' && *p <= '9' && n <= cap)
		n = n * 10 + (*p++ - '0');
	if (p == r + 1 || n > cap || r + len - p < 4 || p[0] != '\r' ||
	    p[1] != '\n' || (size_t)(r + len - (p + 2)) < n + 2 ||
	    p[2 + n] != '\r' || p[3 + n] != '\n')
		return -1;
	memcpy(dst, p + 2, n);
	return (int)n;
}

/*
 * GETs' replies the handler asked for (docs/coherence.md, "Learning from
 * the server's replies"), up to LEARN_BATCH at a time: each value is its
 * reply's; PTTL says whether the key expires, which a reply does not.
 * The PTTLs go out in one write of at most one segment's bytes (a command
 * split over segments makes the handler invalidate everything) and their
 * replies are read in order.  The number of replies taken (0: none now),
 * or -1 when the connection to Redis failed.
 */
#define LEARN_BATCH	8	/* 8 PTTLs of 128-byte keys: 1,200 bytes */

static int learn_batch(struct ctx *x)
{
	static struct xps_kv_learned l[LEARN_BATCH];
	static struct xps_kv_value val[LEARN_BATCH];
	char out[LEARN_BATCH * (REDIS_KEY_MAX + 32)], line[256], t;
	const char *argv[2] = { "PTTL", NULL };
	size_t lens[2] = { 4, 0 }, used = 0;
	int n = 0, taken = 0, i, k;
	long long ttl;

	while (n < LEARN_BATCH && !xps_kvcache__learn_next(x->f.kc, &l[n])) {
		taken++;
		if (x->why[0] || l[n].key.len > REDIS_KEY_MAX)
			continue;
		memset(&val[n], 0, sizeof(val[n]));
		/* only strings of up to 1 KiB: GET on other types is Redis's */
		k = reply_bulk(&l[n], val[n].v, sizeof(val[n].v));
		if (k < 0) {
			xps_kvcache__fill_skip(x->f.kc, &l[n].key);
			x->f.skipped++;
			continue;
		}
		val[n].len = k;
		argv[1] = (const char *)l[n].key.b;
		lens[1] = l[n].key.len;
		k = resp_encode(out + used, sizeof(out) - used, 2, argv, lens);
		if (k < 0)
			return -1;	/* cannot happen: sized for it */
		used += k;
		n++;
	}
	if (!n)
		return taken;
	if (write(x->redis.fd, out, used) != (ssize_t)used)
		return -1;
	for (i = 0; i < n; i++) {
		if (read_reply(&x->redis, &t, &ttl, NULL, 0, line, sizeof(line)))
			return -1;
		/* an expiring key would be served past its death */
		if (t != ':' || ttl != -1) {
			xps_kvcache__fill_skip(x->f.kc, &l[i].key);
			x->f.skipped++;
			continue;
		}
		if (xps_kvcache__learn_commit(x->f.kc, &l[i], &val[i]))
			return -1;
		x->f.fills++;
		if (verbose > 1)
			logmsg("learned %.*s (%u bytes)", (int)l[i].key.len,
			       l[i].key.b, val[i].len);
	}
	return taken;
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
	struct timespec last_check = { 0, 0 }, now;
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
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	x.redis.fd = -1;
	if (connect_redis(&x, host, port, "connecting to Redis"))
		goto out;
	logmsg("serving context '%s' for Redis at %s:%s", name, host, port);

	while (!stop) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec != last_check.tv_sec) {
			/* once a second: may the handler serve? */
			last_check = now;
			if (filler_context_gone(&x.f)) {
				logmsg("context '%s' was removed: exiting", name);
				break;
			}
			if (check_server(&x)) {
				/* closed, or an error reply (BUSY, LOADING) */
				logmsg("Redis failed a check: reconnecting");
				if (connect_redis(&x, host, port,
						  "Redis failed a check (restarted, busy or loading?)"))
					goto out;
				snprintf(last_why, sizeof(last_why), "-");
				continue;
			}
			set_no_serve(&x, x.why[0] != '\0');
			filler_status(&x.f, x.why[0] ? "degraded" : "running",
				      x.why);
			if (strcmp(x.why, last_why)) {
				if (x.why[0])
					logmsg("not serving: %s", x.why);
				else
					logmsg("serving GETs from the kernel");
				snprintf(last_why, sizeof(last_why), "%s", x.why);
			}
			if (verbose)
				logmsg("learned %llu, not cacheable %llu",
				       (unsigned long long)x.f.fills,
				       (unsigned long long)x.f.skipped);
		}
		r = learn_batch(&x);
		if (!r) {
			filler_idle(&x.f);
			continue;
		}
		filler_busy(&x.f);
		if (r < 0) {
			logmsg("lost the connection to Redis: reconnecting");
			if (connect_redis(&x, host, port,
					  "lost the connection to Redis"))
				goto out;
			snprintf(last_why, sizeof(last_why), "-");
		}
	}
	ret = 0;
out:
	/* without its filler the cache must not be trusted */
	set_no_serve(&x, true);
	filler_status(&x.f, "stopped", NULL);
	logmsg("exiting: learned %llu, not cacheable %llu",
	       (unsigned long long)x.f.fills,
	       (unsigned long long)x.f.skipped);
	if (x.redis.fd >= 0)
		close(x.redis.fd);
	filler_close(&x.f);
	return ret;
}
