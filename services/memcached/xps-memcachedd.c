// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xps-memcachedd: keeps the Memcached handler's cache filled, for an
 * unmodified memcached.
 *
 *   xps-memcachedd --context NAME [--server HOST:PORT] [-v]
 *
 * Values are learned from memcached's own replies to the gets that missed
 * over TCP (the handler asks the framework for them, docs/coherence.md),
 * with the meta debug command `me <key>` for what a reply does not say
 * (expiry, CAS); memcached counts neither in its statistics.  Misses over
 * UDP, whose replies are not seen, are fetched with the meta get
 * `mg <key> v f t c`, which memcached counts as a get.  Values are
 * inserted under the coherence protocol of docs/coherence.md; only items
 * without expiry are cached.
 * The handler is kept out while connections XPS does not see are open,
 * for a second after a write arrived over UDP (whose answer XPS cannot
 * see), and while memcached demands authentication.  Items memcached
 * drops on its own (evictions) invalidate the cache: its log watcher
 * (`watch evictions`) tells at once, its counters at the next check.
 * Every check renews the cache's lease: if this daemon dies or hangs, the
 * kernel stops answering within FILLER_LEASE_NS.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <stddef.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libxps.h"
#include "filler.h"
#include "memcached.h"

#define logmsg(...) flog("xps-memcachedd: " __VA_ARGS__)
#define UDP_QUIET_NS 1000000000ull

static volatile sig_atomic_t stop;
static int verbose;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct mc {
	int fd;
	char buf[8192];
	size_t len, pos;
};

static int mc_connect(struct mc *c, const char *host, const char *port)
{
	int gai_err;

	c->len = c->pos = 0;
	c->fd = filler_tcp_connect(host, port, 0, &gai_err);
	if (gai_err) {
		logmsg("cannot resolve %s:%s", host, port);
		return -1;
	}
	if (c->fd < 0) {
		logmsg("cannot connect to memcached at %s:%s: %s", host, port,
		       strerror(errno));
		return -1;
	}
	return 0;
}

static int fill_buf(struct mc *c)
{
	ssize_t n;

	if (c->pos == c->len)
		c->pos = c->len = 0;
	if (c->len == sizeof(c->buf)) {
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
		if (c->len == sizeof(c->buf))
			return -1;
	}
	n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
	if (n <= 0)
		return -1;
	c->len += n;
	return 0;
}

static int read_line(struct mc *c, char *line, size_t sz)
{
	char *nl;
	size_t n;

	while (!(nl = memchr(c->buf + c->pos, '\n', c->len - c->pos)))
		if (fill_buf(c))
			return -1;
	n = nl - (c->buf + c->pos);
	if (n && nl[-1] == '\r')
		n--;
	if (n >= sz)
		return -1;
	memcpy(line, c->buf + c->pos, n);
	line[n] = '\0';
	c->pos = nl - c->buf + 1;
	return 0;
}

static int read_bytes(struct mc *c, void *dst, size_t n)
{
	size_t got = 0, k;

	while (got < n) {
		if (c->pos == c->len && fill_buf(c))
			return -1;
		k = c->len - c->pos < n - got ? c->len - c->pos : n - got;
		if (dst)
			memcpy((char *)dst + got, c->buf + c->pos, k);
		c->pos += k;
		got += k;
	}
	return 0;
}

static void not_cacheable(struct filler *f, const struct xps_kv_key *k)
{
	xps_kvcache__fill_skip(f->kc, k);
	f->skipped++;
}

/* Fetch @k; 1 = retry later, 0 = done (filled or not cacheable), -1 = error. */
static int fill_one(struct filler *f, struct mc *c, const struct xps_kv_key *k)
{
	struct xps_kv_value val = {};
	char line[512], *p;
	long long size = -1, ttl = 0;
	unsigned long long cas = 0;
	unsigned long fl = 0;
	int r;

	r = xps_kvcache__fill_begin(f->kc, k, &val);
	if (r == -EBUSY) {
		f->rejected++;
		return 1;
	}
	if (r)
		return -1;
	if (dprintf(c->fd, "mg %.*s v f t c\r\n", (int)k->len, k->b) < 0 ||
	    read_line(c, line, sizeof(line)))
		return -1;
	if (!strncmp(line, "EN", 2)) {
		not_cacheable(f, k);
		return 0;
	}
	if (strncmp(line, "VA ", 3)) {
		logmsg("unexpected reply to mg: %.60s", line);
		not_cacheable(f, k);
		return 0;
	}
	size = strtoll(line + 3, &p, 10);
	for (p = strtok(p, " "); p; p = strtok(NULL, " ")) {
		if (*p == 'f')
			fl = strtoul(p + 1, NULL, 10);
		else if (*p == 't')
			ttl = strtoll(p + 1, NULL, 10);
		else if (*p == 'c')
			cas = strtoull(p + 1, NULL, 10);
	}
	if (size < 0 || size > MC_VALUE_MAX || ttl != -1) {
		/* too large to cache, or it expires on its own */
		if (size >= 0 && read_bytes(c, NULL, size + 2))
			return -1;
		not_cacheable(f, k);
		return 0;
	}
	if (read_bytes(c, val.v, size) || read_bytes(c, NULL, 2))
		return -1;
	val.len = size;
	val.client_flags = fl;
	val.cas = cas;
	filler_committed(f, k, xps_kvcache__fill_commit(f->kc, k, &val));
	return 0;
}

/*
 * The reply to "get <key>" or "gets <key>" the captured bytes begin with,
 * "VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\nEND\r\n" for @l's key
 * (replies to later requests may follow): 0 with the value's bytes, length
 * and flags in @val and its cas (0 without) in @cas; -1 for anything else
 * (a miss, an error, another key, too long, not whole).
 */
static int reply_value(const struct xps_kv_learned *l, struct xps_kv_value *val,
		       unsigned long long *cas)
{
	const char *r = (const char *)l->reply, *end = r + l->len, *nl, *d;
	char line[512], *tok[5], *save = NULL, *e;
	unsigned long long size;
	int n = 0;

	nl = memchr(r, '\n', l->len);
	if (!nl || nl == r || nl[-1] != '\r' ||
	    (size_t)(nl - 1 - r) >= sizeof(line))
		return -1;
	memcpy(line, r, nl - 1 - r);
	line[nl - 1 - r] = '\0';
	for (e = strtok_r(line, " ", &save); e && n < 5;
	     e = strtok_r(NULL, " ", &save))
		tok[n++] = e;
	if (e || n < 4 || strcmp(tok[0], "VALUE") ||
	    strlen(tok[1]) != l->key.len || memcmp(tok[1], l->key.b, l->key.len))
		return -1;
	errno = 0;
	val->client_flags = strtoul(tok[2], &e, 10);
	if (*e || errno)
		return -1;
	size = strtoull(tok[3], &e, 10);
	if (*e || errno || size > MC_VALUE_MAX || size > XPS_KV_VALUE_MAX)
		return -1;
	*cas = 0;
	if (n == 5) {
		*cas = strtoull(tok[4], &e, 10);
		if (*e || errno)
			return -1;
	}
	d = nl + 1;
	if ((size_t)(end - d) < size + 2 + 5 ||	/* "END\r\n" */
	    d[size] != '\r' || d[size + 1] != '\n' ||
	    memcmp(d + size + 2, "END\r\n", 5))
		return -1;
	memcpy(val->v, d, size);
	val->len = size;
	return 0;
}

/*
 * The answer to `me <key>` (meta debug, which memcached counts in no
 * statistic): 1 when the item is there with exp=-1, its CAS in *@cas; 0
 * when it is not (gone, or it expires).
 */
static int me_answer(char *line, unsigned long long *cas)
{
	long long exp = 0;
	char *p, *save = NULL;
	int seen = 0;

	if (strncmp(line, "ME ", 3))
		return 0;	/* EN: gone */
	for (p = strtok_r(line + 3, " ", &save); p;
	     p = strtok_r(NULL, " ", &save)) {
		if (!strncmp(p, "exp=", 4)) {
			exp = strtoll(p + 4, NULL, 10);
			seen |= 1;
		} else if (!strncmp(p, "cas=", 4)) {
			*cas = strtoull(p + 4, NULL, 10);
			seen |= 2;
		}
	}
	return seen == 3 && exp == -1;
}

/*
 * `me` of @n keys in one write, their answers read in order (me_answer()
 * into @ok and @cas).  The callers keep the commands within ME_BYTES, one
 * segment: a command split over segments makes the handler invalidate
 * everything.  0, or -1 when the connection failed.
 */
#define ME_BATCH	8
#define ME_BYTES	1400
#define ME_CMD(k)	(5 + (size_t)(k)->len)	/* "me <key>\r\n" */
#define ME_CMD_MAX	(5 + MC_KEY_MAX)

static int me_batch(struct mc *c, const struct xps_kv_key **k, int n,
		    int *ok, unsigned long long *cas)
{
	char out[ME_BYTES + MC_KEY_MAX + 8], line[512];
	size_t used = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (used + ME_CMD(k[i]) > sizeof(out))
			return -1;	/* the callers keep within ME_BYTES */
		used += snprintf(out + used, sizeof(out) - used, "me %.*s\r\n",
				 (int)k[i]->len, k[i]->b);
	}
	if (write(c->fd, out, used) != (ssize_t)used)
		return -1;
	for (i = 0; i < n; i++) {
		cas[i] = 0;
		if (read_line(c, line, sizeof(line)))
			return -1;
		ok[i] = me_answer(line, &cas[i]);
	}
	return 0;
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Values learned, waiting for their second look (learn_batch()), oldest
 * first.
 */
#define VERIFY_NS	1100000000ull
#define PENDING		256

struct pending {
	struct xps_kv_learned l;
	struct xps_kv_value val;
	__u64 at;
};

static struct pending pend[PENDING];
static unsigned int pend_head, pend_tail;

/*
 * Gets' replies the handler asked for (docs/coherence.md, "Learning from
 * the server's replies"), a few at a time: the value and flags are the
 * reply's; `me` says whether the item expires and its CAS.  memcached
 * 1.6.18 prints an expiring item's exp as minus the seconds it has left,
 * so exp=-1 also means "expires within a second".  When the key's version
 * says its last write was a set that never expires (bit 0,
 * bpf/lib/kvcache.bpf.h), exp=-1 is that; otherwise the value is committed
 * only after a second `me`, more than a second later, still says exp=-1
 * with the same CAS (learn_due(): an expiring item is gone by then; a
 * write meanwhile changed the key's version, which the stamps taken at
 * the get catch).  The replies taken (0: none now), or -1 when the
 * connection to memcached failed.
 */
static int learn_batch(struct filler *f, struct mc *c, const char *why)
{
	static struct xps_kv_learned l[ME_BATCH];
	static struct xps_kv_value val[ME_BATCH];
	unsigned long long cas[ME_BATCH], mcas[ME_BATCH];
	const struct xps_kv_key *k[ME_BATCH];
	int ok[ME_BATCH], n = 0, taken = 0, i;
	struct pending *p;
	size_t bytes = 0;

	while (n < ME_BATCH && bytes + ME_CMD_MAX <= ME_BYTES &&
	       !xps_kvcache__learn_next(f->kc, &l[n])) {
		taken++;
		if (why[0] || l[n].key.len > MC_KEY_MAX)
			continue;
		memset(&val[n], 0, sizeof(val[n]));
		if (reply_value(&l[n], &val[n], &cas[n])) {
			not_cacheable(f, &l[n].key);
			continue;
		}
		k[n] = &l[n].key;
		bytes += ME_CMD(k[n]);
		n++;
	}
	if (n && me_batch(c, k, n, ok, mcas))
		return -1;
	for (i = 0; i < n; i++) {
		/* it expires, or it is not the item the reply showed */
		if (!ok[i] || (cas[i] && cas[i] != mcas[i])) {
			not_cacheable(f, &l[i].key);
			continue;
		}
		val[i].cas = mcas[i];
		if (l[i].version & 1) {
			filler_committed(f, &l[i].key,
					 xps_kvcache__learn_commit(f->kc, &l[i],
								   &val[i]));
			continue;
		}
		if (pend_tail - pend_head == PENDING)
			continue;	/* a hint lost: the next miss asks again */
		p = &pend[pend_tail++ % PENDING];
		p->l = l[i];
		p->val = val[i];
		p->at = mono_ns();
	}
	return taken;
}

/* The second look at values learned over a second ago, a few at a time. */
static int learn_due(struct filler *f, struct mc *c)
{
	unsigned long long mcas[ME_BATCH];
	const struct xps_kv_key *k[ME_BATCH];
	int ok[ME_BATCH], n = 0, i;
	__u64 now = mono_ns();
	struct pending *p;
	size_t bytes = 0;

	while (n < ME_BATCH && pend_head + n != pend_tail) {
		p = &pend[(pend_head + n) % PENDING];
		if (now - p->at < VERIFY_NS ||
		    bytes + ME_CMD(&p->l.key) > ME_BYTES)
			break;
		k[n] = &p->l.key;
		bytes += ME_CMD(k[n]);
		n++;
	}
	if (n && me_batch(c, k, n, ok, mcas))
		return -1;
	for (i = 0; i < n; i++) {
		p = &pend[(pend_head + i) % PENDING];
		if (!ok[i] || mcas[i] != p->val.cas)
			not_cacheable(f, &p->l.key);
		else
			filler_committed(f, &p->l.key,
					 xps_kvcache__learn_commit(f->kc, &p->l,
								   &p->val));
	}
	pend_head += n;
	return n;
}

/*
 * The handler queues misses over UDP only, whose replies XPS does not
 * see: fetch one (fill_one()), keeping the filler's idle state.  -1 when
 * the connection to memcached failed, else 0.
 */
static int fetch_miss(struct filler *f, struct mc *c, const char *why)
{
	struct xps_kv_key k;
	int r;

	if (xps_kvcache__miss_pop(f->kc, &k)) {
		filler_idle(f);
		return 0;
	}
	filler_busy(f);
	if (why[0] || k.len < 1 || k.len > MC_KEY_MAX)
		return 0;
	r = fill_one(f, c, &k);
	if (r > 0) {
		/* a write is unanswered: try again shortly */
		xps_kvcache__miss_retry(f->kc, &k);
		filler_idle(f);
	}
	return r < 0 ? -1 : 0;
}

/*
 * What a check reads from memcached (mc_check()).
 *
 * removed: items memcached dropped while they were live, on its own:
 * evictions from an LRU's tail, and the items its slab page mover throws
 * away (no memory to rescue them to; busy ones it deletes).  The first
 * are logged to watchers too (watch_drain()); the mover's are counted
 * only.  Items that expire, and flush_all, are the handler's business.
 *
 * idle_timeout: memcached's -o idle_timeout (seconds, 0: none).
 * auth: memcached demands authentication (-Y, ASCII; -S, SASL) before
 * any command, which the handler cannot follow.
 */
struct mc_seen {
	unsigned long long removed;
	unsigned long long idle_timeout;
	bool auth;
};

/*
 * A "STAT @name @val" line of `stats` (@settings false) or of `stats
 * settings` (true; the names overlap: "evictions on" is a setting there).
 * 0, or -1 for a value that does not parse.
 */
static int mc_stat(struct mc_seen *s, bool settings, const char *name,
		   const char *val)
{
	static const char *const removed[] = {
		"evictions", "slab_reassign_evictions_nomem",
		"slab_reassign_busy_deletes",
	};
	unsigned long long *into = NULL, v;
	char *e;
	size_t i;

	if (settings) {
		if (!strcmp(name, "auth_enabled_sasl") ||
		    !strcmp(name, "auth_enabled_ascii")) {
			/* "yes" or "no"; anything else is taken as yes */
			if (strcmp(val, "no"))
				s->auth = true;
			return 0;
		}
		if (!strcmp(name, "idle_timeout"))
			into = &s->idle_timeout;
	} else {
		for (i = 0; i < sizeof(removed) / sizeof(removed[0]); i++)
			if (!strcmp(name, removed[i]))
				into = &s->removed;
	}
	if (!into)
		return 0;
	errno = 0;
	v = strtoull(val, &e, 10);
	if (errno || *e || e == val)
		return -1;
	*into += v;
	return 0;
}

/*
 * `stats`, then `stats settings` (both harmless to the handler, counted
 * by memcached in no statistic); this is also the check that memcached
 * is still there, on the same connection.  0 with @s filled, or -1 when
 * the connection failed or memcached answered something unexpected.
 * memcached with -Y answers "CLIENT_ERROR unauthenticated" (and drops
 * the rest of what it read, so the two are not sent in one write): then
 * only s->auth is set.
 */
static int mc_check(struct mc *c, struct mc_seen *s)
{
	static const char *const cmd[] = { "stats", "stats settings" };
	char line[512], *val;
	int i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < 2; i++) {
		if (dprintf(c->fd, "%s\r\n", cmd[i]) < 0)
			return -1;
		for (;;) {
			if (read_line(c, line, sizeof(line)))
				return -1;
			if (!strcmp(line, "END"))
				break;
			if (!strcmp(line, "CLIENT_ERROR unauthenticated")) {
				s->auth = true;
				return 0;
			}
			if (strncmp(line, "STAT ", 5)) {
				logmsg("unexpected reply to %s: %.60s",
				       cmd[i], line);
				return -1;
			}
			val = strchr(line + 5, ' ');
			if (!val)
				return -1;
			*val++ = '\0';
			if (mc_stat(s, i == 1, line + 5, val)) {
				logmsg("unexpected stat: %.60s %.60s",
				       line + 5, val);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * The eviction watch: a second connection on which memcached's log
 * watcher (`watch evictions`, memcached >= 1.5.19) writes a line for
 * every item it evicts, before it unlinks it, e.g.
 *   ts=1795708523.621476 gid=2 type=eviction key=key0 fetch=no ttl=-1 la=0 clsid=9 size=500
 * Lines are what its logger thread passes on, which sleeps up to a
 * second while there is nothing to log, so the mover's deletions and a
 * slow logger are bounded by the counters of the next check (mc_check())
 * instead.  Any byte that arrives invalidates every cached value (a new
 * cache generation): a value learned from a reply captured before the
 * bump carries the old generation and is never served.  A key's own
 * version is the handler's to write, so the key the line names is not
 * used, and a line memcached skipped or dropped (its buffers were full)
 * is covered by the lines still queued before it.
 */
struct watch {
	int fd;			/* -1: not open */
	bool bol;		/* the next byte read begins a line */
	__u64 bumps;		/* invalidations it caused */
	__u64 lag_max_us, lag_sum_us, lags;	/* eviction to invalidation */
};

/* Open the watch: 0, or -1 with the reason in @err. */
static int watch_open(struct watch *w, const char *host, const char *port,
		      char *err, size_t errsz)
{
	struct mc m = { .len = 0 };
	char line[128];
	int gai_err, fl;

	w->bol = true;
	m.fd = filler_tcp_connect(host, port, 1000, &gai_err);
	if (m.fd < 0) {
		snprintf(err, errsz, "cannot connect: %s",
			 gai_err ? gai_strerror(gai_err) : strerror(errno));
		return -1;
	}
	if (dprintf(m.fd, "watch evictions\r\n") < 0 ||
	    read_line(&m, line, sizeof(line))) {
		snprintf(err, errsz, "no answer to watch evictions");
		goto fail;
	}
	if (strcmp(line, "OK")) {
		/* -W: "CLIENT_ERROR watch commands not allowed" */
		snprintf(err, errsz, "memcached answers %.80s", line);
		goto fail;
	}
	/*
	 * Lines read past the OK are dropped: the caller invalidates once
	 * the watch is open (evictions before it were not watched), after
	 * them.
	 */
	fl = fcntl(m.fd, F_GETFL);
	if (fl < 0 || fcntl(m.fd, F_SETFL, fl | O_NONBLOCK)) {
		snprintf(err, errsz, "fcntl: %s", strerror(errno));
		goto fail;
	}
	w->fd = m.fd;
	return 0;
fail:
	close(m.fd);
	return -1;
}
static void watch_close(struct watch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

/*
 * From the line that begins at @p, the time from memcached's eviction
 * (its ts=, CLOCK_REALTIME) to @now_real: what the invalidation lagged.
 */
static void watch_lag(struct watch *w, const char *p, const char *end,
		      __s64 now_real)
{
	char ts[32], *e;
	size_t n = (size_t)(end - p) < sizeof(ts) - 1 ? (size_t)(end - p) :
		   sizeof(ts) - 1;
	double at;
	__s64 lag;

	memcpy(ts, p, n);
	ts[n] = '\0';
	if (strncmp(ts, "ts=", 3))
		return;
	at = strtod(ts + 3, &e);
	if (e == ts + 3 || *e != ' ')
		return;
	lag = now_real / 1000 - (__s64)(at * 1e6);
	if (lag < 0)
		lag = 0;
	w->lag_sum_us += lag;
	w->lags++;
	if ((__u64)lag > w->lag_max_us)
		w->lag_max_us = lag;
}

/*
 * Read what the watch has (it never blocks); if anything came, memcached
 * evicted something since the last read: invalidate the cache.  0, or -1
 * when the watch closed or failed.
 */
static int watch_drain(struct filler *f, struct watch *w)
{
	char buf[16384], *p;
	bool got = false, timed = false;
	struct timespec ts;
	__s64 now_real = 0;
	ssize_t n;

	for (;;) {
		n = read(w->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (!got) {
			xps_kvcache__invalidate(f->kc);
			w->bumps++;
			clock_gettime(CLOCK_REALTIME, &ts);
			now_real = ts.tv_sec * 1000000000LL + ts.tv_nsec;
			got = true;
		}
		/* the lag of the first whole line's eviction, for the log */
		if (!timed) {
			p = w->bol ? buf : memchr(buf, '\n', n);
			if (p && !w->bol)
				p++;
			if (p && p < buf + n) {
				watch_lag(w, p, buf + n, now_real);
				timed = true;
			}
		}
		w->bol = buf[n - 1] == '\n';
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
		return -1;
	return 0;
}

struct mc_addr {
	struct mc *c;
	const char *host, *port;
};

static int mc_connect_cb(void *arg)
{
	struct mc_addr *a = arg;

	return mc_connect(a->c, a->host, a->port);
}

/* (Re)connect to memcached: filler_reconnect(). */
static int connect_mc(struct filler *f, struct mc *c, const char *host,
		      const char *port, const char *why)
{
	struct mc_addr a = { c, host, port };

	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	return filler_reconnect(f, MC_NO_SERVE, why, mc_connect_cb, &a, &stop);
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: xps-memcachedd --context NAME [--server HOST:PORT] [-v]\n"
"Fills the cache of the XPS Memcached context NAME from memcached at\n"
"HOST:PORT (default 127.0.0.1 and the context's port).  Runs until\n"
"SIGTERM/SIGINT.\n");
}

_Static_assert(offsetof(struct mc_state, kv) == 0,
	       "a kv-cache state begins with struct xps_kv_state");

static __s64 realtime_minus_mono(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return (r.tv_sec - m.tv_sec) * 1000000000LL + (r.tv_nsec - m.tv_nsec);
}

/*
 * The connection to memcached failed: log it, reconnect (filler_reconnect(),
 * with backoff) and forget the last state logged.  The eviction watch is
 * reopened too: memcached may have restarted.  -1: give up.
 */
static int lost(struct filler *f, struct mc *c, struct watch *w,
		const char *host, const char *port, const char *why,
		char *last, size_t lastsz)
{
	logmsg("%s: reconnecting", why);
	watch_close(w);
	if (connect_mc(f, c, host, port, why))
		return -1;
	snprintf(last, lastsz, "-");
	return 0;
}

#define CHECK_NS	200000000ull	/* five checks a second */

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "context", required_argument, NULL, 'c' },
		{ "server", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char host[256] = "127.0.0.1", port[16] = "", why[200] = "", last[200] = "-";
	char werr[128] = "", wlast[128] = "-";
	const char *name = NULL;
	struct filler f;
	struct mc_state *st;
	struct mc c;
	struct watch w = { .fd = -1 };
	unsigned long long removed = ~0ULL;
	__u64 last_check = 0, last_udp_write;
	int o, r, ret = 1;

	while ((o = getopt_long(argc, argv, "c:s:vh", opts, NULL)) != -1) {
		switch (o) {
		case 'c':
			name = optarg;
			break;
		case 's':
			if (filler_hostport(optarg, "--server", host, sizeof(host),
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
	if (filler_open(&f, name))
		return 1;
	st = xps_kvcache__state(f.kc);
	if (!port[0])
		snprintf(port, sizeof(port), "%u", f.port);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	c.fd = -1;
	if (connect_mc(&f, &c, host, port, "connecting to memcached"))
		goto out;
	logmsg("serving context '%s' for memcached at %s:%s", name, host, port);

	while (!stop) {
		__u64 now = mono_ns();

		/* an eviction memcached logged: invalidate at once */
		if (w.fd >= 0 && watch_drain(&f, &w)) {
			logmsg("the eviction watch closed: reopening it");
			watch_close(&w);
		}
		if (now - last_check > CHECK_NS) {
			/* five times a second: may the handler serve? */
			int unseen = xps_kvcache__unseen_conns(f.kc);
			struct mc_seen seen;
			bool may_lift;
			__u32 stops;

			last_check = now;
			why[0] = '\0';
			if (filler_context_gone(&f)) {
				logmsg("context '%s' was removed: exiting", name);
				break;
			}
			/* the kernel answers nothing meanwhile */
			if (xps_kvcache__server_gone(f.kc)) {
				if (lost(&f, &c, &w, host, port,
					 "memcached's listening socket closed",
					 last, sizeof(last)))
					goto out;
				continue;
			}
			may_lift = filler_check_begin(&f, &stops);
			/* a restarted memcached has lost what the cache holds */
			if (mc_check(&c, &seen)) {
				if (lost(&f, &c, &w, host, port,
					 "memcached does not answer", last,
					 sizeof(last)))
					goto out;
				continue;
			}
			/*
			 * Items memcached dropped since the last check (the
			 * watch may lag by up to its logger's second, and
			 * does not see the slab mover's): an item dropped
			 * before the counters were read is counted, so the
			 * window is one check period.
			 */
			if (seen.removed != removed) {
				xps_kvcache__invalidate(f.kc);
				removed = seen.removed;
			}
			/* a connection the kernel serves must look alive */
			xps_kvcache__idle_pass(f.kc, seen.idle_timeout *
					       1000000000ull / 2);
			if (w.fd < 0 && !seen.auth) {
				if (!watch_open(&w, host, port, werr,
						sizeof(werr))) {
					/* evictions until now were not watched */
					xps_kvcache__invalidate(f.kc);
					werr[0] = '\0';
				}
				if (strcmp(werr, wlast)) {
					if (werr[0])
						logmsg("cannot watch evictions (%s): they are seen at each check only",
						       werr);
					else
						logmsg("watching evictions");
					snprintf(wlast, sizeof(wlast), "%s", werr);
				}
			}
			/* for flush_all with a unix time (see struct mc_state) */
			__atomic_store_n(&st->realtime_minus_mono_ns,
					 realtime_minus_mono(), __ATOMIC_RELAXED);
			last_udp_write = __atomic_load_n(&st->last_udp_write_ns,
							 __ATOMIC_RELAXED);
			if (seen.auth)
				snprintf(why, sizeof(why),
					 "memcached requires authentication (SASL or -Y): the kernel cannot tell which connections authenticated");
			else if (unseen < 0)
				snprintf(why, sizeof(why), "cannot list connections");
			else if (unseen)
				snprintf(why, sizeof(why),
					 "%d connection(s) made before the context: their writes bypass XPS",
					 unseen);
			else if (last_udp_write &&
				 now - last_udp_write < UDP_QUIET_NS)
				snprintf(why, sizeof(why),
					 "a write arrived over UDP less than a second ago");
			filler_check_end(&f, MC_NO_SERVE, stops, may_lift, why);
			filler_status(&f, why[0] ? "degraded" : "running", why);
			if (strcmp(why, last)) {
				if (why[0])
					logmsg("not serving: %s", why);
				else
					logmsg("serving gets from the kernel");
				snprintf(last, sizeof(last), "%s", why);
			}
		}
		r = why[0] ? 0 : learn_due(&f, &c);
		if (r >= 0)
			r = learn_batch(&f, &c, why) ?: r;
		if (r > 0) {
			filler_busy(&f);
			continue;
		}
		if (!r)
			r = fetch_miss(&f, &c, why);
		if (r < 0 && lost(&f, &c, &w, host, port,
				  "lost the connection to memcached", last,
				  sizeof(last)))
			goto out;
	}
	ret = 0;
out:
	/* without its filler the cache must not be trusted */
	xps_kvcache__lease(f.kc, 0);
	xps_kvcache__flags(f.kc, MC_NO_SERVE, 0);
	filler_status(&f, "stopped", NULL);
	logmsg("exiting: fills %llu, rejected %llu, not cached %llu, "
	       "not cacheable %llu",
	       (unsigned long long)f.fills, (unsigned long long)f.rejected,
	       (unsigned long long)f.uncached,
	       (unsigned long long)f.skipped);
	logmsg("eviction watch: %llu invalidations, lag from eviction avg %llu us, max %llu us",
	       (unsigned long long)w.bumps,
	       (unsigned long long)(w.lags ? w.lag_sum_us / w.lags : 0),
	       (unsigned long long)w.lag_max_us);
	watch_close(&w);
	if (c.fd >= 0)
		close(c.fd);
	filler_close(&f);
	return ret;
}
