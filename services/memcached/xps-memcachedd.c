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
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libxps.h"
#include "daemon.h"
#include "filler.h"
#include "reader.h"
#include "memcached.h"

#define logmsg(...) daemon_log("xps-memcachedd: " __VA_ARGS__)
#define UDP_QUIET_NS 1000000000ull

static void not_cacheable(struct filler *f, const struct xps_kv_key *k)
{
	xps_kvcache__fill_skip(f->kc, k);
	f->skipped++;
}

/* Fetch @k; 1 = retry later, 0 = done (filled or not cacheable), -1 = error. */
static int fill_one(struct filler *f, struct conn *c, const struct xps_kv_key *k)
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

static int me_batch(struct conn *c, const struct xps_kv_key **k, int n,
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
static int learn_batch(struct filler *f, struct conn *c, const char *why)
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
		p->at = daemon_mono_ns();
	}
	return taken;
}

/* The second look at values learned over a second ago, a few at a time. */
static int learn_due(struct filler *f, struct conn *c)
{
	unsigned long long mcas[ME_BATCH];
	const struct xps_kv_key *k[ME_BATCH];
	int ok[ME_BATCH], n = 0, i;
	__u64 now = daemon_mono_ns();
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
static int fetch_miss(struct filler *f, struct conn *c, const char *why)
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
static int mc_check(struct conn *c, struct mc_seen *s)
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
	struct conn m;
	char line[128];
	int gai_err, fl;

	w->bol = true;
	m.len = m.pos = 0;
	m.fd = daemon_tcp_connect(host, port, 1000, &gai_err);
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

_Static_assert(offsetof(struct mc_state, kv) == 0,
	       "a kv-cache state begins with struct xps_kv_state");

static __s64 realtime_minus_mono(void)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return (r.tv_sec - m.tv_sec) * 1000000000LL + (r.tv_nsec - m.tv_nsec);
}

/* ---- the daemon ------------------------------------------------------- */

struct mcd {
	struct daemon d;
	struct filler f;
	struct mc_state *st;
	struct conn c;
	struct watch w;
	unsigned long long removed;	/* mc_seen's at the last check */
	char why[200];		/* why the handler may not serve, or "" */
	char werr[128], wlast[128];	/* why the watch is not open */
};

static int mc_connect_cb(void *arg)
{
	struct mcd *x = arg;

	return conn_connect(&x->c, x->d.host, x->d.port, "memcached");
}

/*
 * (Re)connect to memcached: filler_reconnect().  The eviction watch is
 * reopened too: memcached may have restarted.
 */
static int connect_mc(struct daemon *d, const char *why)
{
	struct mcd *x = daemon_of(d, struct mcd, d);

	watch_close(&x->w);
	conn_close(&x->c);
	return filler_reconnect(&x->f, MC_NO_SERVE, why, mc_connect_cb, x);
}

/* An eviction memcached logged: invalidate at once. */
static int mcd_poll(struct daemon *d)
{
	struct mcd *x = daemon_of(d, struct mcd, d);

	if (x->w.fd >= 0 && watch_drain(&x->f, &x->w)) {
		logmsg("the eviction watch closed: reopening it");
		watch_close(&x->w);
	}
	return DAEMON_OK;
}

/* Five times a second: may the handler serve? */
static int mcd_check(struct daemon *d)
{
	struct mcd *x = daemon_of(d, struct mcd, d);
	int unseen = xps_kvcache__unseen_conns(x->f.kc);
	__u64 last_udp_write;
	struct mc_seen seen;
	bool may_lift;
	__u32 stops;

	x->why[0] = '\0';
	/* the kernel answers nothing meanwhile */
	if (xps_kvcache__server_gone(x->f.kc))
		return daemon_lost(d, NULL, "memcached's listening socket closed");
	may_lift = filler_check_begin(&x->f, &stops);
	/* a restarted memcached has lost what the cache holds */
	if (mc_check(&x->c, &seen))
		return daemon_lost(d, NULL, "memcached does not answer");
	/*
	 * Items memcached dropped since the last check (the watch may lag
	 * by up to its logger's second, and does not see the slab mover's):
	 * an item dropped before the counters were read is counted, so the
	 * window is one check period.
	 */
	if (seen.removed != x->removed) {
		xps_kvcache__invalidate(x->f.kc);
		x->removed = seen.removed;
	}
	/* a connection the kernel serves must look alive */
	xps_kvcache__idle_pass(x->f.kc, seen.idle_timeout * 1000000000ull / 2);
	if (x->w.fd < 0 && !seen.auth) {
		if (!watch_open(&x->w, d->host, d->port, x->werr,
				sizeof(x->werr))) {
			/* evictions until now were not watched */
			xps_kvcache__invalidate(x->f.kc);
			x->werr[0] = '\0';
		}
		if (strcmp(x->werr, x->wlast)) {
			if (x->werr[0])
				logmsg("cannot watch evictions (%s): they are seen at each check only",
				       x->werr);
			else
				logmsg("watching evictions");
			snprintf(x->wlast, sizeof(x->wlast), "%s", x->werr);
		}
	}
	/* for flush_all with a unix time (see struct mc_state) */
	__atomic_store_n(&x->st->realtime_minus_mono_ns, realtime_minus_mono(),
			 __ATOMIC_RELAXED);
	last_udp_write = __atomic_load_n(&x->st->last_udp_write_ns,
					 __ATOMIC_RELAXED);
	if (seen.auth)
		snprintf(x->why, sizeof(x->why),
			 "memcached requires authentication (SASL or -Y): the kernel cannot tell which connections authenticated");
	else if (unseen < 0)
		snprintf(x->why, sizeof(x->why), "cannot list connections");
	else if (unseen)
		snprintf(x->why, sizeof(x->why),
			 "%d connection(s) made before the context: their writes bypass XPS",
			 unseen);
	else if (last_udp_write && d->now_ns - last_udp_write < UDP_QUIET_NS)
		snprintf(x->why, sizeof(x->why),
			 "a write arrived over UDP less than a second ago");
	daemon_report(d, filler_check_end(&x->f, MC_NO_SERVE, stops, may_lift,
					  x->why));
	return DAEMON_OK;
}

static int mcd_work(struct daemon *d)
{
	struct mcd *x = daemon_of(d, struct mcd, d);
	int r;

	r = x->why[0] ? 0 : learn_due(&x->f, &x->c);
	if (r >= 0)
		r = learn_batch(&x->f, &x->c, x->why) ?: r;
	if (r > 0) {
		filler_busy(&x->f);
		return DAEMON_OK;
	}
	if (!r)
		r = fetch_miss(&x->f, &x->c, x->why);
	if (r < 0)
		return daemon_lost(d, NULL, "lost the connection to memcached");
	return DAEMON_OK;
}

static int mcd_start(struct daemon *d)
{
	struct mcd *x = daemon_of(d, struct mcd, d);

	x->c.fd = -1;
	x->w.fd = -1;
	x->removed = ~0ULL;
	snprintf(x->wlast, sizeof(x->wlast), "-");
	if (filler_open(&x->f, d))
		return 1;
	x->st = xps_kvcache__state(x->f.kc);
	return 0;
}

static void mcd_finish(struct daemon *d, int status)
{
	struct mcd *x = daemon_of(d, struct mcd, d);
	struct watch *w = &x->w;

	(void)status;
	filler_stop(&x->f, MC_NO_SERVE);
	logmsg("exiting: fills %llu, rejected %llu, not cached %llu, "
	       "not cacheable %llu",
	       (unsigned long long)x->f.fills,
	       (unsigned long long)x->f.rejected,
	       (unsigned long long)x->f.uncached,
	       (unsigned long long)x->f.skipped);
	logmsg("eviction watch: %llu invalidations, lag from eviction avg %llu us, max %llu us",
	       (unsigned long long)w->bumps,
	       (unsigned long long)(w->lags ? w->lag_sum_us / w->lags : 0),
	       (unsigned long long)w->lag_max_us);
	watch_close(w);
	conn_close(&x->c);
	filler_close(&x->f);
}

static const struct daemon_ops mcd_ops = {
	.prog = "xps-memcachedd",
	.synopsis = "--context NAME [--server HOST:PORT] [-v]",
	.about =
"Fills the cache of the XPS Memcached context NAME from memcached at\n"
"HOST:PORT with the values of its own replies to the gets the kernel\n"
"missed (over UDP, fetched with mg), and keeps the handler out while\n"
"writes could bypass it (older connections, authentication, a write over\n"
"UDP in the last second).\n",
	.server = "memcached",
	.status_file = true,
	.serving = "serving gets from the kernel",
	.not_serving = "not serving",
	.check_ms = 200,
	.start = mcd_start,
	.reconnect = connect_mc,
	.first_why = "connecting to memcached",
	.poll = mcd_poll,
	.check = mcd_check,
	.work = mcd_work,
	.finish = mcd_finish,
};

int main(int argc, char **argv)
{
	static struct mcd x;	/* in .bss: memcached's replies are buffered */

	x.d.ops = &mcd_ops;
	return daemon_main(&x.d, argc, argv);
}
