// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xps-redisd: keeps the Redis handler's cache filled and honest, for an
 * unmodified redis-server.
 *
 *   xps-redisd --context NAME [--server HOST:PORT] [-v]
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
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libxps.h"
#include "daemon.h"
#include "filler.h"
#include "resp.h"
#include "redis.h"
#include "proto/redis.bpf.h"	/* the handler's command table */

#define logmsg(...) daemon_log("xps-redisd: " __VA_ARGS__)

/* ---- serving decision ------------------------------------------------ */

struct ctx {
	struct daemon d;
	struct filler f;
	struct conn redis;
	size_t seg;		/* bytes a write to Redis may carry */
	char why[400];		/* why the handler may not serve, or "" */
	char unknown[64];	/* a command Redis lists, not the handler */
};

_Static_assert(offsetof(struct redis_state, kv) == 0,
	       "a kv-cache state begins with struct xps_kv_state");

/* One field of ACL GETUSER's reply: flags, keys (a bulk or an array) */
static int acl_field(struct ctx *x, const char *name, bool *on, bool *nopass,
		     bool *allkeys)
{
	char line[512], v[512], t, *tok, *save;
	long long n, i, k;
	bool flags = !strcmp(name, "flags"), keys = !strcmp(name, "keys");

	if (read_reply(&x->redis, &t, &n, v, sizeof(v) - 1, line, sizeof(line)))
		return -1;
	if (t == '$' && keys && n >= 0) {
		v[n] = '\0';
		/* "~*", or patterns: all keys only as one of these tokens */
		for (tok = strtok_r(v, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save))
			if (!strcmp(tok, "~*") || !strcmp(tok, "%R~*") ||
			    !strcmp(tok, "%RW~*") || !strcmp(tok, "allkeys"))
				*allkeys = true;
		return 0;
	}
	if (t != '*' || (!flags && !keys))
		return resp_skip(&x->redis, t, n);
	for (i = 0; i < n; i++) {
		if (read_reply(&x->redis, &t, &k, v, sizeof(v) - 1, line,
			       sizeof(line)))
			return -1;
		if (t != '$' || k < 0) {
			if (resp_skip(&x->redis, t, k))
				return -1;
			continue;
		}
		v[k] = '\0';
		*on |= flags && !strcmp(v, "on");
		*nopass |= flags && !strcmp(v, "nopass");
		*allkeys |= !strcmp(v, "allkeys") || !strcmp(v, "~*");
	}
	return 0;
}

/*
 * The handler serves only connections that never authenticated (AUTH and
 * HELLO keep a connection out), i.e. Redis's default user: it may serve
 * while that user is enabled, needs no password, may read every key and
 * may run GET (docs/coherence.md, "Who may read what").  Writes @why
 * otherwise; -1 when the connection failed.
 */
static int check_default_user(struct ctx *x)
{
	const char *getuser[] = { "ACL", "GETUSER", "default" };
	const char *dryrun[] = { "ACL", "DRYRUN", "default", "GET", "xps" };
	bool on = false, nopass = false, allkeys = false;
	char line[512], name[64], t;
	long long n, k, i;

	if (send_cmd(&x->redis, 3, getuser, NULL) ||
	    read_reply(&x->redis, &t, &n, NULL, 0, line, sizeof(line)))
		return -1;
	if (t == '-') {
		snprintf(x->why, sizeof(x->why),
			 "Redis answered ACL GETUSER default with %.200s: who may read what is unknown",
			 line + 1);
		return 0;
	}
	if (t != '*')
		return -1;
	for (i = 0; i + 1 < n; i += 2) {
		if (read_reply(&x->redis, &t, &k, name, sizeof(name) - 1, line,
			       sizeof(line)))
			return -1;
		if (t != '$' || k < 0) {
			if (resp_skip(&x->redis, t, k))
				return -1;
			name[0] = '\0';
		} else {
			name[k] = '\0';
		}
		if (acl_field(x, name, &on, &nopass, &allkeys))
			return -1;
	}
	if (n > 0 && (n & 1) && resp_skip(&x->redis, '*', 1))
		return -1;
	if (!on || !nopass || !allkeys) {
		snprintf(x->why, sizeof(x->why),
			 "Redis's default user is %s: only some clients may read some keys",
			 !on ? "off" : !nopass ? "protected by a password" :
			 "limited to some keys");
		return 0;
	}
	if (send_cmd(&x->redis, 5, dryrun, NULL) ||
	    read_reply(&x->redis, &t, &n, line, sizeof(line) - 1, name,
		       sizeof(name)))
		return -1;
	if (t == '+' && !strcmp(name, "+OK"))
		return 0;
	if (t == '$' && n >= 0) {
		line[n] = '\0';
		snprintf(x->why, sizeof(x->why), "Redis's default user: %.200s",
			 line);
	} else {
		snprintf(x->why, sizeof(x->why),
			 "Redis cannot tell whether its default user may run GET (%.100s)",
			 name);
	}
	return 0;
}

/*
 * A module's command is not in the handler's table: it only invalidates
 * every key, yet may change who may read what (or anything else).  With
 * no module loaded, an unknown command is one Redis refuses.
 */
static int check_modules(struct ctx *x)
{
	/* INFO, not MODULE LIST: the handler takes MODULE for a change */
	const char *argv[] = { "INFO", "modules" };
	char info[4096], line[512], t, *p;
	long long n;
	int mods = 0;

	if (send_cmd(&x->redis, 2, argv, NULL) ||
	    read_reply(&x->redis, &t, &n, info, sizeof(info) - 1, line,
		       sizeof(line)))
		return -1;
	if (t != '$' || n < 0) {
		snprintf(x->why, sizeof(x->why),
			 "Redis's INFO modules could not be read: its modules are unknown");
		return 0;
	}
	info[n] = '\0';
	for (p = info; (p = strstr(p, "module:")); p++)
		mods++;
	if (mods)
		snprintf(x->why, sizeof(x->why),
			 "Redis has %d module(s) loaded: their commands may change what a GET answers",
			 mods);
	return 0;
}

/* Read one whole reply (RESP2); *nil: it was a nil. */
static int reply_drain(struct conn *c, bool *nil)
{
	char line[512], t;
	long long n;

	if (read_reply(c, &t, &n, NULL, 0, line, sizeof(line)))
		return -1;
	*nil = (t == '*' || t == '$') && n == -1;
	return resp_skip(c, t, n);
}

#define CMD_NAMES_MAX	1024
#define CMD_NAME_MAX	64

/*
 * COMMAND INFO of names[@from, @to) in one write: 1 when each is a command
 * by that name, 0 when one is not (x->unknown), -1 on failure.
 */
static int commands_callable(struct ctx *x, char (*names)[CMD_NAME_MAX],
			     int from, int to)
{
	static const char *argv[CMD_NAMES_MAX + 2] = { "COMMAND", "INFO" };
	char line[512], t;
	int i, ok = 1;
	long long n;
	bool nil;

	for (i = from; i < to; i++)
		argv[2 + i - from] = names[i];
	if (send_cmd(&x->redis, 2 + to - from, argv, NULL) ||
	    read_reply(&x->redis, &t, &n, NULL, 0, line, sizeof(line)))
		return -1;
	if (t != '*' || n != to - from)
		return resp_skip(&x->redis, t, n) ? -1 : 0;
	for (i = from; i < to; i++) {
		if (reply_drain(&x->redis, &nil))
			return -1;
		if (nil && ok) {
			ok = 0;
			snprintf(x->unknown, sizeof(x->unknown), "%s, renamed",
				 names[i]);
		}
	}
	return ok;
}

/*
 * Whether every command Redis lists (COMMAND LIST, subcommands aside) is
 * in the handler's table, looked up as the handler looks it up, and is
 * called by the name it is listed under (COMMAND LIST gives a renamed
 * command's old name, which COMMAND INFO then does not know): then a
 * command missing from the table is one Redis refuses, executing nothing,
 * and the handler need not take it for a write of every key
 * (REDIS_CMDS_KNOWN).  A command newer than the table, or one renamed
 * (rename-command), keeps that from holding.  1 when it holds, 0 when not
 * (a name in x->unknown), -1 when Redis could not be asked.
 */
static int check_commands(struct ctx *x)
{
	static char names[CMD_NAMES_MAX][CMD_NAME_MAX];
	const char *argv[] = { "COMMAND", "LIST" };
	/* the handler's packing reads a scratch buffer: one of its size */
	char name[XPS_SCRATCH], line[512], t;
	int known = 1, nn = 0, from, r;
	struct xps_words wd;
	long long n, i, len;
	size_t bytes, cap;

	if (send_cmd(&x->redis, 2, argv, NULL) ||
	    read_reply(&x->redis, &t, &n, NULL, 0, line, sizeof(line)))
		return -1;
	if (t != '*') {		/* before Redis 7.0: no COMMAND LIST */
		snprintf(x->unknown, sizeof(x->unknown), "(no COMMAND LIST)");
		return resp_skip(&x->redis, t, n) ? -1 : 0;
	}
	for (i = 0; i < n; i++) {
		if (read_reply(&x->redis, &t, &len, name, CMD_NAME_MAX - 1,
			       line, sizeof(line)))
			return -1;
		if (t != '$' || len < 0) {
			if (resp_skip(&x->redis, t, len))
				return -1;
			if (known)
				snprintf(x->unknown, sizeof(x->unknown),
					 "(a name too long)");
			known = 0;
			continue;
		}
		/* "parent|sub": a subcommand, looked up through its parent */
		if (!known || memchr(name, '|', len))
			continue;
		xps_pack_words((const __u8 *)name, 0, (__u32)len, 1, &wd);
		if (XPS__RCLASS(xps_redis_lookup(&wd)) == XPS_RC_UNKNOWN ||
		    nn == CMD_NAMES_MAX) {
			known = 0;
			snprintf(x->unknown, sizeof(x->unknown), "%.*s",
				 (int)len, name);
			continue;
		}
		memcpy(names[nn], name, len);
		names[nn++][len] = '\0';
	}
	/*
	 * COMMAND INFO of them all, in requests the handler walks whole:
	 * writes of at most x->seg bytes (one segment each) that send_cmd()
	 * can encode (into 1 KiB, with 32 bytes to spare past an argument),
	 * of fewer arguments than the handler walks (XPS_REDIS_MAX_ARGS: a
	 * longer request would lose it the connection's boundaries)
	 */
	cap = x->seg < 960 ? x->seg : 960;
	for (from = 0; known && from < nn; from = (int)i) {
		bytes = 32;
		for (i = from; i < nn && i - from < XPS_REDIS_MAX_ARGS - 8;
		     i++) {
			bytes += strlen(names[i]) + 8;
			if (bytes > cap && i > from)
				break;
		}
		r = commands_callable(x, names, from, (int)i);
		if (r <= 0)
			return r;
	}
	return known;
}

/*
 * Whether a MONITOR client is connected (flags=O in CLIENT LIST): it
 * would not see what the kernel answers.  Asked only while the handler
 * is stopped (it stops at every MONITOR it sees).
 */
static int check_monitors(struct ctx *x)
{
	static char list[4 << 20];
	const char *argv[] = { "CLIENT", "LIST" };
	char line[512], t, *p;
	long long n;

	if (send_cmd(&x->redis, 2, argv, NULL) ||
	    read_reply(&x->redis, &t, &n, list, sizeof(list) - 1, line,
		       sizeof(line)))
		return -1;
	if (t != '$' || n < 0) {
		snprintf(x->why, sizeof(x->why),
			 "Redis's client list could not be read: a MONITOR may be connected");
		return 0;
	}
	list[n] = '\0';
	for (p = list; (p = strstr(p, " flags=")); p++) {
		p += 7;
		while (*p && *p != ' ' && *p != 'O')
			p++;
		if (*p == 'O') {
			snprintf(x->why, sizeof(x->why),
				 "a MONITOR client is connected: it would not see what the kernel answers");
			return 0;
		}
	}
	return 0;
}

/*
 * Every write must reach Redis through the handler: find what could go
 * around it.  Writes @why (empty when serving is safe).
 */
static int check_server(struct ctx *x, bool check_monitors_now)
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
	if (check_default_user(x) || x->why[0])
		return x->why[0] ? 0 : -1;
	if (check_modules(x) || x->why[0])
		return x->why[0] ? 0 : -1;
	if (config_get(&x->redis, "port", v, sizeof(v)))
		return -1;
	if (strtoul(v, NULL, 10) != x->f.port) {
		snprintf(x->why, sizeof(x->why),
			 "Redis listens on port %s, not on the context's port %u: writes there bypass XPS",
			 v, x->f.port);
		return 0;
	}
	if (config_get(&x->redis, "tls-port", v, sizeof(v)))
		return -1;
	if (v[0] && strcmp(v, "0")) {
		snprintf(x->why, sizeof(x->why),
			 "Redis listens for TLS on port %s: writes there bypass XPS",
			 v);
		return 0;
	}
	/* a connection idle this long is closed: pass one of it in time */
	if (config_get(&x->redis, "timeout", v, sizeof(v)))
		return -1;
	xps_kvcache__idle_pass(x->f.kc, strtoull(v, NULL, 10) * 500000000ULL);
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
	if (old) {
		snprintf(x->why, sizeof(x->why),
			 "%d connection(s) made before the context: their writes bypass XPS",
			 old);
		return 0;
	}
	if (check_monitors_now)
		return check_monitors(x);
	return 0;
}

/* PTTLs per write stay within one segment: see learn_batch() */
#define LEARN_BYTES	2000	/* XPS_SCRATCH (2048) */

static int redis_connect_cb(void *arg)
{
	struct ctx *x = arg;
	int mss = 0;
	socklen_t len = sizeof(mss);

	if (conn_connect(&x->redis, x->d.host, x->d.port, "Redis"))
		return -1;
	/* loopback's MSS is 64 KiB; a 1500-byte MTU path's about 1,448 */
	if (getsockopt(x->redis.fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) ||
	    mss < 536)
		mss = 536;
	x->seg = (size_t)mss < LEARN_BYTES ? (size_t)mss : LEARN_BYTES;
	return 0;
}

/* (Re)connect to Redis: filler_reconnect(). */
static int connect_redis(struct daemon *d, const char *why)
{
	struct ctx *x = daemon_of(d, struct ctx, d);

	/* the server may be another one: its commands are asked again */
	xps_kvcache__flags(x->f.kc, 0, REDIS_CMDS_KNOWN);
	conn_close(&x->redis);
	return filler_reconnect(&x->f, REDIS_NO_SERVE, why, redis_connect_cb, x);
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
 * What PTTL said about a key, asked after a GET of it missed, by the
 * stamps that GET read: it holds for the value of any reply learned with
 * the same stamps.  The GET asked only once no write of the key was
 * unanswered, so every write those stamps reflect was executed before the
 * PTTL; a write executed later was seen by the handler first and changed
 * the stamps (docs/coherence.md).  Direct-mapped by the key's hash, for
 * replies that come in a later batch than their PTTL's answer: an entry
 * overwritten only costs another PTTL.
 */
#define TTL_SLOTS	1024

struct ttl_seen {
	struct xps_kv_key key;
	__u64 version;
	__u32 cgen;
	bool used;
	bool never;		/* PTTL said -1: the key never expires */
};

static struct ttl_seen ttls[TTL_SLOTS];

static struct ttl_seen *ttl_slot(const struct xps_kv_key *key)
{
	return &ttls[xps_kv_hkey_of(key).hash % TTL_SLOTS];
}

static const struct ttl_seen *ttl_find(const struct xps_kv_key *key,
				       __u64 version, __u32 cgen)
{
	const struct ttl_seen *t = ttl_slot(key);

	if (!t->used || t->version != version || t->cgen != cgen ||
	    !xps_kv_key_eq(&t->key, key))
		return NULL;
	return t;
}

static void ttl_put(const struct xps_kv_key *key, __u64 version, __u32 cgen,
		    bool never)
{
	struct ttl_seen *t = ttl_slot(key);

	t->key = *key;
	t->version = version;
	t->cgen = cgen;
	t->never = never;
	t->used = true;
}

/* Commit @l's value if PTTL said its key never expires; else skip it. */
static void learn_one(struct ctx *x, const struct xps_kv_learned *l,
		      struct xps_kv_value *val, bool never)
{
	int err;

	/* an expiring key would be served past its death */
	if (!never) {
		xps_kvcache__fill_skip(x->f.kc, &l->key);
		x->f.skipped++;
		return;
	}
	err = xps_kvcache__learn_commit(x->f.kc, l, val);
	filler_committed(&x->f, &l->key, err);
	if (!err && x->d.verbose > 1)
		logmsg("learned %.*s (%u bytes)", (int)l->key.len, l->key.b,
		       val->len);
}

/*
 * GETs' replies the handler asked for (docs/coherence.md, "Learning from
 * the server's replies"), up to LEARN_BATCH at a time: each value is its
 * reply's; PTTL says whether the key expires, which a reply does not.
 * PTTL is asked as soon as a GET misses (xps_kvcache__asked_next()), in
 * the same round trip as the PTTLs of replies already learned, so that a
 * value whose reply comes later is committed without waiting for Redis
 * again: under a 95/5 mix in the benchmark guest a missed GET's reply
 * took about 6 ms to come, a batch of PTTLs about 2 ms more, and every
 * GET of the key missed meanwhile.  The PTTLs go out in one
 * write that is one segment the handler walks whole: at most
 * XPS_MAX_REQS_PER_SEG requests in x->seg bytes (a command split over
 * segments, or a segment it cannot walk to the end, makes it invalidate
 * every key).  Their replies are read in order.  The number of replies
 * and keys taken (0: none now), or -1 when the connection to Redis
 * failed.
 */
/* bpf/proto/common.bpf.h: XPS_MAX_REQS_PER_SEG */
#define LEARN_BATCH	32
/* "*2\r\n$4\r\nPTTL\r\n$<len>\r\n<key>\r\n" */
#define PTTL_CMD(len)	(23 + (len))
/* resp_encode() wants 32 bytes to spare past an argument */
#define RESP_SLACK	32

/* Whether q[@nq] repeats a key and stamps of q[0..@nq). */
static bool queued(const struct xps_kv_asked *q, int nq)
{
	int i;

	for (i = 0; i < nq; i++)
		if (q[i].version == q[nq].version && q[i].cgen == q[nq].cgen &&
		    xps_kv_key_eq(&q[i].key, &q[nq].key))
			return true;
	return false;
}

/* Whether a PTTL of @key still fits @cap bytes after @need; counts it. */
static bool pttl_room(size_t *need, const struct xps_kv_key *key, size_t cap)
{
	if (*need + PTTL_CMD(key->len) > cap)
		return false;
	*need += PTTL_CMD(key->len);
	return true;
}

static int learn_batch(struct ctx *x)
{
	static struct xps_kv_learned l[LEARN_BATCH], held;
	static struct xps_kv_value val[LEARN_BATCH];
	static bool holding;	/* @held was taken and did not fit */
	static struct xps_kv_asked q[LEARN_BATCH];	/* PTTLs to send */
	char out[LEARN_BYTES + RESP_SLACK + 16], line[256], t;
	bool never[LEARN_BATCH];
	const char *argv[2] = { "PTTL", NULL };
	size_t lens[2] = { 4, 0 }, used = 0, need = 0;
	int n = 0, nq = 0, taken = 0, i, k;
	const struct ttl_seen *ts;
	long long ttl;

	/* replies learned: committed now if PTTL was asked already */
	while (nq < LEARN_BATCH) {
		if (holding) {
			l[n] = held;
			holding = false;
		} else if (xps_kvcache__learn_next(x->f.kc, &l[n])) {
			break;
		}
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
		ts = ttl_find(&l[n].key, l[n].version, l[n].cgen);
		if (ts) {
			learn_one(x, &l[n], &val[n], ts->never);
			continue;
		}
		if (!pttl_room(&need, &l[n].key, x->seg)) {
			held = l[n];	/* the next batch's first */
			holding = true;
			break;
		}
		q[nq].key = l[n].key;
		q[nq].version = l[n].version;
		q[nq++].cgen = l[n++].cgen;
	}
	/* keys whose GET missed, their replies still to come */
	while (nq < LEARN_BATCH && !holding &&
	       !xps_kvcache__asked_next(x->f.kc, &q[nq])) {
		taken++;
		if (x->why[0] || q[nq].key.len > REDIS_KEY_MAX ||
		    ttl_find(&q[nq].key, q[nq].version, q[nq].cgen) ||
		    queued(q, nq))
			continue;
		if (!pttl_room(&need, &q[nq].key, x->seg))
			break;	/* asked again when its reply comes */
		nq++;
	}
	if (!nq)
		return taken;
	for (i = 0; i < nq; i++) {
		argv[1] = (const char *)q[i].key.b;
		lens[1] = q[i].key.len;
		k = resp_encode(out + used, sizeof(out) - used, 2, argv, lens);
		if (k < 0)
			return -1;	/* cannot happen: PTTL_CMD() fits */
		used += k;
	}
	if (write(x->redis.fd, out, used) != (ssize_t)used)
		return -1;
	for (i = 0; i < nq; i++) {
		if (read_reply(&x->redis, &t, &ttl, NULL, 0, line, sizeof(line)))
			return -1;
		never[i] = t == ':' && ttl == -1;
		ttl_put(&q[i].key, q[i].version, q[i].cgen, never[i]);
	}
	/* q[i] was asked for l[i]: the table may hold another key there now */
	for (i = 0; i < n; i++)
		learn_one(x, &l[i], &val[i], never[i]);
	return taken;
}

/* ---- the daemon ------------------------------------------------------- */

/* Once a second: may the handler serve? */
static int redisd_check(struct daemon *d)
{
	struct ctx *x = daemon_of(d, struct ctx, d);
	bool may_lift;
	__u32 seen;

	if (xps_kvcache__server_gone(x->f.kc))
		/* the kernel answers nothing meanwhile */
		return daemon_lost(d, "Redis's listening socket closed: dropping the cache",
				   "Redis's listening socket closed (restarted?)");
	may_lift = filler_check_begin(&x->f, &seen);
	if (check_server(x, seen & REDIS_NO_SERVE))
		/* closed, or an error reply (BUSY, LOADING) */
		return daemon_lost(d, "Redis failed a check: reconnecting",
				   "Redis failed a check (restarted, busy or loading?)");
	/*
	 * Granted as a stop is lifted (docs/coherence.md): by a check that
	 * began after every server-wide change was answered, unless the
	 * handler stopped again since.  Asked again after each stop only.
	 */
	if (!x->why[0] && may_lift && !(seen & REDIS_CMDS_KNOWN)) {
		int known = check_commands(x);

		if (known < 0)
			return daemon_lost(d, "Redis failed a check: reconnecting",
					   "Redis failed a check (restarted, busy or loading?)");
		if (known)
			xps_kvcache__grant(x->f.kc, REDIS_CMDS_KNOWN, seen);
		else if (d->verbose)
			logmsg("Redis lists %s, a command the handler does not know: commands it does not know count as writes of every key",
			       x->unknown);
	}
	daemon_report(d, filler_check_end(&x->f, REDIS_NO_SERVE, seen,
					  may_lift, x->why));
	if (d->verbose)
		logmsg("learned %llu, not cacheable %llu",
		       (unsigned long long)x->f.fills,
		       (unsigned long long)x->f.skipped);
	return DAEMON_OK;
}

static int redisd_work(struct daemon *d)
{
	struct ctx *x = daemon_of(d, struct ctx, d);
	int r = learn_batch(x);

	if (!r) {
		filler_idle(&x->f);
		return DAEMON_OK;
	}
	filler_busy(&x->f);
	if (r < 0)
		return daemon_lost(d, "lost the connection to Redis: reconnecting",
				   "lost the connection to Redis");
	return DAEMON_OK;
}

static int redisd_start(struct daemon *d)
{
	struct ctx *x = daemon_of(d, struct ctx, d);

	x->redis.fd = -1;
	return filler_open(&x->f, d) ? 1 : 0;
}

static void redisd_finish(struct daemon *d, int status)
{
	struct ctx *x = daemon_of(d, struct ctx, d);

	(void)status;
	filler_stop(&x->f, REDIS_NO_SERVE);
	xps_kvcache__flags(x->f.kc, 0, REDIS_CMDS_KNOWN);
	logmsg("exiting: learned %llu, not cacheable %llu, not cached %llu",
	       (unsigned long long)x->f.fills,
	       (unsigned long long)x->f.skipped,
	       (unsigned long long)x->f.uncached);
	conn_close(&x->redis);
	filler_close(&x->f);
}

static const struct daemon_ops redisd_ops = {
	.prog = "xps-redisd",
	.synopsis = "--context NAME [--server HOST:PORT] [-v]",
	.about =
"Fills the cache of the XPS Redis context NAME from the Redis server at\n"
"HOST:PORT with the values of its own replies to the GETs the kernel\n"
"missed, and keeps the handler out while writes could bypass it (a\n"
"password, a unix socket, a replica, eviction, older clients...).\n",
	.server = "Redis",
	.redis_alias = true,
	.status_file = true,
	.serving = "serving GETs from the kernel",
	.not_serving = "not serving",
	.check_ms = 1000,
	.start = redisd_start,
	.reconnect = connect_redis,
	.first_why = "connecting to Redis",
	.check = redisd_check,
	.work = redisd_work,
	.finish = redisd_finish,
};

int main(int argc, char **argv)
{
	static struct ctx x;	/* in .bss: Redis's replies are buffered */

	x.d.ops = &redisd_ops;
	return daemon_main(&x.d, argc, argv);
}
