// SPDX-License-Identifier: GPL-2.0
/*
 * Handler fixture tests: every request of the protocol fixture tables
 * (the *_fixtures.h tables of tests/unit) through the real Redis, memcached and HTTP
 * handlers, in the kernel, by BPF_PROG_TEST_RUN on the native backend.
 *
 *   xps_fxtest [-v] BPF_DIR FX_WRAP_OBJ
 *
 * The host unit tests prove what the parsers say about each request; here
 * the handlers' verdicts and replies are checked against what that parse
 * implies (the oracle below), through the framework's own entry program
 * (predicate table, tail call, per-connection record, statistics):
 * cached GETs answered byte for byte, misses queued for the filler, writes
 * invalidating their keys, connection state (SELECT, MULTI, malformed
 * input) stopping service on that connection only, requests split at every
 * byte offset never answered from their parts, HTTP methods answered,
 * reset or passed as configured.  Needs root and an XPS kernel (the VM).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf_serve.h>
#include <xps/abi.h>

#include "libxps.h"
#include <xps/redis.h>
#include <xps/memcached.h>
#include <xps/http_filter.h>
#include <xps/kvcache.h>
#include "redis.bpf.h"
#include "memcached.bpf.h"
#include "http.bpf.h"
#include "harness.h"
#include "redis_fixtures.h"
#include "memcached_fixtures.h"
#include "http_fixtures.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

#define PORT_REDIS	16379
#define PORT_MC		11311
#define PORT_HTTP	18080

static bool verbose;

/* The entry programs and maps of fx_wrap.bpf.o, and the framework's. */
static struct {
	struct bpf_object *obj;
	int tcp, udp, carry, cookie, conns, config;
} fx = { .tcp = -1, .udp = -1 };

struct ctxmaps {
	struct xps_context *ctx;
	int data, state, versions, misses;
};

static struct ctxmaps redis, mc, mc_udp, http;

struct out {
	__u32 retval;
	__u32 len;
	char b[XPS_STOCK_REPLY_MAX];
};

static const char *verdict(__u32 v)
{
	switch (v) {
	case XPS_PASS: return "PASS";
	case XPS_TX: return "TX";
	case XPS_DROP: return "DROP";
	case XPS_RESET: return "RESET";
	default: return "?";
	}
}

/*
 * Between two segments of a connection, the service answered everything
 * it was passed and every reply left, as the framework's egress program
 * would have seen on the hook (docs/ordering.md): the fixtures test the
 * handlers, not the ordering rule.  The dummy socket of each run has
 * write_seq 0.
 */
static void replies_left(struct xps_conn *conn)
{
	__u8 proto = conn->rp.proto;

	conn->flags |= XPS_CONN_EGRESS;
	conn->answered = conn->owed;
	conn->eg_seq = 0;
	conn->kr_bytes = 0;
	memset(&conn->rp, 0, sizeof(conn->rp));
	conn->rp.proto = proto;
}

/*
 * One request through the framework.  TCP runs install @conn as the dummy
 * socket's connection record and return the record as the run left it
 * (the handler's state, unanswered writes), as a connection would carry it
 * to its next segment.
 */
static int run(__u8 proto, __u16 port, const void *in, __u32 n,
	       struct xps_conn *conn, struct out *o)
{
	struct __sk_buff ctx = {
		.family = AF_INET,
		.remote_ip4 = htonl(0x7f000002),
		.local_ip4 = htonl(0x7f000001),
		.remote_port = htonl(40000),
		.local_port = port,
	};
	__u32 zero = 0, one = 1;
	__u64 cookie, lost0, lost1;

	LIBBPF_OPTS(bpf_test_run_opts, t,
		.data_in = in,
		.data_size_in = n,
		.data_out = o->b,
		.data_size_out = sizeof(o->b),
		.ctx_in = &ctx,
		.ctx_size_in = sizeof(ctx),
	);

	if (proto == IPPROTO_TCP) {
		replies_left(conn);
		if (bpf_map_update_elem(fx.carry, &zero, conn, BPF_ANY))
			return -errno;
	}
	if (bpf_map_lookup_elem(fx.cookie, &one, &lost0) ||
	    bpf_prog_test_run_opts(proto == IPPROTO_TCP ? fx.tcp : fx.udp, &t) ||
	    bpf_map_lookup_elem(fx.cookie, &one, &lost1))
		return -errno;
	if (lost1 != lost0) {
		errno = ENOEXEC;	/* the framework did not run */
		return -errno;
	}
	o->retval = t.retval;
	o->len = t.data_size_out;
	if (proto != IPPROTO_TCP)
		return 0;
	if (bpf_map_lookup_elem(fx.cookie, &zero, &cookie) ||
	    bpf_map_lookup_elem(fx.conns, &cookie, conn)) {
		errno = ENOENT;		/* the record vanished */
		return -errno;
	}
	bpf_map_delete_elem(fx.conns, &cookie);
	return 0;
}

/*
 * The service answered the writes the run left unanswered: what the
 * framework's egress program does on the hook.  Keeps the framework-wide
 * count right for the suites that run after this one.
 */
static void answer_writes(struct xps_conn *conn)
{
	static struct xps_wpend wp;
	struct xps_config cfg;
	__u32 zero = 0, i;
	int fd;

	if (!conn->unacked)
		return;
	if (!bpf_map_lookup_elem(fx.config, &zero, &cfg)) {
		cfg.unacked_writes -= conn->unacked;
		bpf_map_update_elem(fx.config, &zero, &cfg, BPF_ANY);
	}
	conn->unacked = 0;
	/* and by key (xps_note_write_key()) */
	fd = bpf_obj_get(XPS_PIN_ROOT "/xps_wpend");
	if (fd >= 0 && !bpf_map_lookup_elem(fd, &zero, &wp)) {
		for (i = 0; i < XPS_CONN_WB; i++)
			wp.b[conn->wb[i] & (XPS_WPEND_BUCKETS - 1)] -= conn->wbc[i];
		wp.ovf -= conn->wovf;
		bpf_map_update_elem(fd, &zero, &wp, BPF_ANY);
	}
	if (fd >= 0)
		close(fd);
	memset(conn->wbc, 0, sizeof(conn->wbc));
	conn->wovf = 0;
}

static int pinned(const char *ctx, const char *map)
{
	char path[256];

	snprintf(path, sizeof(path), XPS_PIN_ROOT "/ctx/%s/%s", ctx, map);
	return bpf_obj_get(path);
}

static int make_ctx(struct ctxmaps *m, const char *dir, const char *obj,
		    const char *name, __u8 proto, __u16 port, const char *share)
{
	struct xps_predicate p = { .proto = proto, .lport = port };
	char path[512];

	DECLARE_XPS_OPTS(xps_context_opts, o, .name = name, .share = share);
	snprintf(path, sizeof(path), "%s/%s", dir, obj);
	m->ctx = xps_context__create_pred(path, &p, &o);
	if (!m->ctx) {
		fprintf(stderr, "FAIL setup: context %s: %s\n", name,
			strerror(errno));
		return -1;
	}
	m->data = xps_context__data_fd(m->ctx);
	m->state = pinned(share ? share : name, "state");
	m->versions = pinned(share ? share : name, "versions");
	m->misses = pinned(share ? share : name, "misses");
	return 0;
}

static void clear_map(int fd, size_t key_size)
{
	char key[512], next[512];

	if (fd < 0 || key_size > sizeof(key))
		return;
	while (!bpf_map_get_next_key(fd, NULL, next)) {
		memcpy(key, next, key_size);
		if (bpf_map_delete_elem(fd, key))
			break;
	}
}

/*
 * The kv-cache's maps are keyed by the key's hash, and the value holds
 * the key (include/xps/kvcache.h): what the filler does, by hand.
 */
static __u64 version_of(int fd, const struct xps_kv_key *key)
{
	struct xps_kv_hkey h = xps_kv_hkey_of(key);
	__u64 v = 0;

	bpf_map_lookup_elem(fd, &h, &v);
	return v;
}

static int kv_set(struct xps_context *ctx, const struct xps_kv_key *key,
		  struct xps_kv_value *v)
{
	struct xps_kv_hkey h = xps_kv_hkey_of(key);

	v->key = *key;
	xps_kv_value_seal(v);
	return xps_context__data_set(ctx, &h, v);
}

/* -ENOENT also when the entry under the hash holds another key. */
static int kv_get(struct xps_context *ctx, const struct xps_kv_key *key,
		  struct xps_kv_value *v)
{
	struct xps_kv_hkey h = xps_kv_hkey_of(key);
	int err = xps_context__data_get(ctx, &h, v);

	if (!err && !xps_kv_key_eq(&v->key, key))
		err = -ENOENT;
	return err;
}

static int kv_del(struct xps_context *ctx, const struct xps_kv_key *key)
{
	struct xps_kv_hkey h = xps_kv_hkey_of(key);

	return xps_context__data_delete(ctx, &h);
}

static void drain_queue(int fd, size_t val_size)
{
	char v[512];

	if (val_size <= sizeof(v))
		while (!bpf_map_lookup_and_delete_elem(fd, NULL, v))
			;
}

/* Copy a request into a parser-sized, zero-padded buffer. */
static __u32 to_scratch(__u8 *buf, const char *req, size_t n)
{
	memset(buf, 0, XPS_SCRATCH);
	if (n > XPS_SCRATCH)
		n = XPS_SCRATCH;
	memcpy(buf, req, n);
	return (__u32)n;
}

/* ---- Redis ------------------------------------------------------------ */

static struct xps_kv_key rkey(const void *k, __u32 len)
{
	struct xps_kv_key key = { .len = len };

	memcpy(key.b, k, len);
	return key;
}

/* Cache @val for @key the way the filler does; the bulk reply in @want. */
static int redis_cache(const struct xps_kv_key *key, const char *val,
		       char *want, __u32 *want_len)
{
	struct xps_kv_value v = { .len = strlen(val) };
	struct redis_state st;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(redis.state, &zero, &st))
		return -errno;
	v.cgen = st.kv.cgen;
	v.version = version_of(redis.versions, key);
	memcpy(v.v, val, v.len);
	if (want)
		*want_len += xps_redis_encode_bulk((__u8 *)want + *want_len,
						   (const __u8 *)val, v.len);
	return kv_set(redis.ctx, key, &v);
}

static __u32 redis_cgen(void)
{
	struct redis_state st = {};
	__u32 zero = 0;

	bpf_map_lookup_elem(redis.state, &zero, &st);
	return st.kv.cgen;
}

static void redis_reset(void)
{
	struct redis_state st = {};
	__u32 zero = 0;

	clear_map(redis.data, sizeof(struct xps_kv_hkey));
	drain_queue(redis.misses, sizeof(struct xps_kv_key));
	bpf_map_lookup_elem(redis.state, &zero, &st);
	st.kv.flags = 0;
	bpf_map_update_elem(redis.state, &zero, &st, BPF_ANY);
}

/*
 * What the parse of a whole segment implies for the connection: whether
 * it can still be served afterwards (no SELECT/MULTI/AUTH..., framing
 * intact) and whether the segment holds a write.
 */
struct walk_result {
	bool servable;
	bool wrote;
	bool global;
	int first_kind;
	struct xps_kv_req first;
};

typedef int (*kv_parse_fn)(const __u8 *buf, __u32 len, __u32 off,
			   struct xps_kv_req *req);

static void kv_walk(kv_parse_fn parse, const __u8 *buf, __u32 n,
		    struct walk_result *w)
{
	struct xps_kv_req req;
	__u32 off = 0;
	int kind, i;

	memset(w, 0, sizeof(*w));
	w->servable = true;
	for (i = 0; off < n && i < 64; i++) {
		kind = parse(buf, n, off, &req);
		if (i == 0) {
			w->first_kind = kind;
			w->first = req;
		}
		switch (kind) {
		case XPS_REQ_SERVE:
		case XPS_REQ_HARMLESS:
			break;
		case XPS_REQ_INVALIDATE:
			w->wrote = true;
			break;
		case XPS_REQ_STATE:
			w->servable = false;
			if (req.nkeys || (req.flags & XPS_F_ALL))
				w->wrote = true;
			if (req.flags & XPS_F_GLOBAL)
				w->global = true;
			break;
		default:	/* INCOMPLETE, MALFORMED: framing lost */
			w->servable = false;
			return;
		}
		if (!req.req_len)
			return;
		off += req.req_len;
	}
	if (off < n)
		w->servable = false;
}

/* The handler's single-key GET: what it can answer from the cache. */
static bool redis_servable_get(const struct xps_kv_req *r)
{
	return r->nkeys == 1 && r->keys[0].len >= 1 &&
	       r->keys[0].len <= REDIS_KEY_MAX &&
	       !(r->flags & (XPS_F_BADKEY | XPS_F_QUOTED));
}

#define FOLLOW_GET "*2\r\n$3\r\nGET\r\n$8\r\nfx:after\r\n"

/*
 * A cached GET on the connection the row left behind: answered exactly
 * when the row left it servable (its writes answered by the service).
 */
static void redis_follow_up(const char *desc, struct xps_conn *conn,
			    bool servable)
{
	struct xps_kv_key key = rkey("fx:after", 8);
	static struct out o;
	char want[64];
	__u32 want_len = 0;

	answer_writes(conn);
	if (redis_cache(&key, "after-value", want, &want_len)) {
		CHECK(0, "%s: cannot cache fx:after", desc);
		return;
	}
	if (run(IPPROTO_TCP, PORT_REDIS, FOLLOW_GET, sizeof(FOLLOW_GET) - 1,
		conn, &o)) {
		CHECK(0, "%s: follow-up run: %s", desc, strerror(errno));
		return;
	}
	if (servable)
		CHECK(o.retval == XPS_TX && o.len == want_len &&
		      !memcmp(o.b, want, want_len),
		      "%s: GET after it: %s (%u bytes), want TX", desc,
		      verdict(o.retval), o.len);
	else
		CHECK(o.retval == XPS_PASS,
		      "%s: GET after it: %s, want PASS (connection not servable)",
		      desc, verdict(o.retval));
	answer_writes(conn);
}

/*
 * The Redis context's reply capture ring, as libxps's kv-cache installs
 * it, and the ARM records a run left in it.
 */
static struct {
	struct ring_buffer *rb;
	unsigned int n;
	struct xps_cap_hdr h;
	struct xps_kv_arm tag;
} arm;

static int on_arm(void *ctx, void *data, size_t size)
{
	const struct xps_cap_arm *rec = data;

	(void)ctx;
	if (size < sizeof(*rec) || rec->h.kind != XPS_CAP_ARM)
		return 0;
	if (!arm.n++) {
		arm.h = rec->h;
		memcpy(&arm.tag, rec->tag, sizeof(arm.tag));
	}
	return 0;
}

static void arm_drain(void)
{
	if (arm.rb)
		ring_buffer__consume(arm.rb);
	memset(&arm.h, 0, sizeof(arm.h));
	memset(&arm.tag, 0, sizeof(arm.tag));
	arm.n = 0;
}

static int arm_ring(const struct xps_context *ctx)
{
	__u32 slot = xps_context__slot(ctx);
	int caps, ring, err = 0;

	caps = bpf_obj_get(XPS_PIN_ROOT "/xps_caps");
	ring = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "fx_cap_ring", 0, 0,
			      XPS_CAP_RING_SIZE, NULL);
	if (caps < 0 || ring < 0 ||
	    bpf_map_update_elem(caps, &slot, &ring, BPF_ANY))
		err = -errno;
	else
		arm.rb = ring_buffer__new(ring, on_arm, NULL, NULL);
	if (!err && !arm.rb)
		err = -errno;
	if (caps >= 0)
		close(caps);
	if (ring >= 0)
		close(ring);	/* the ring buffer and xps_caps hold it */
	return err;
}

static void test_redis_fixtures(void)
{
	static __u8 buf[XPS_SCRATCH];
	static struct out o;
	char want[4096], val[64];
	struct walk_result w;
	struct xps_kv_key keys[XPS_MAX_KEYS];
	__u64 vers[XPS_MAX_KEYS];
	size_t i;
	int k;

	h_begin("redis: every fixture through the handler (verdict, reply, invalidation, connection state)");
	for (i = 0; i < N(redis_fx); i++) {
		const struct fx *f = &redis_fx[i];
		struct xps_conn conn = {};
		__u32 n = to_scratch(buf, f->req, f->req_n), want_len = 0;
		__u32 cgen0;
		bool single, tx;

		redis_reset();
		kv_walk(xps_redis_parse, buf, n, &w);
		single = w.first.req_len == n &&
			 w.first_kind != XPS_REQ_INCOMPLETE &&
			 w.first_kind != XPS_REQ_MALFORMED;
		tx = single && w.first_kind == XPS_REQ_SERVE &&
		     redis_servable_get(&w.first);
		/* cache the keys the request names, with their versions */
		for (k = 0; single && k < w.first.nkeys; k++) {
			const struct xps_span *sp = &w.first.keys[k];

			if (sp->len < 1 || sp->len > REDIS_KEY_MAX)
				continue;
			keys[k] = rkey(buf + sp->off, sp->len);
			snprintf(val, sizeof(val), "value-%zu-%d", i, k);
			if (redis_cache(&keys[k], val, tx ? want : NULL,
					&want_len))
				CHECK(0, "%s: cannot cache", f->desc);
			vers[k] = version_of(redis.versions, &keys[k]);
		}
		cgen0 = redis_cgen();
		if (run(IPPROTO_TCP, PORT_REDIS, f->req, f->req_n, &conn, &o)) {
			CHECK(0, "%s: run: %s", f->desc, strerror(errno));
			continue;
		}
		if (verbose)
			printf("  %-50s %s\n", f->desc, verdict(o.retval));
		if (tx) {
			CHECK(o.retval == XPS_TX && o.len == want_len &&
			      !memcmp(o.b, want, want_len),
			      "%s: %s (%u bytes), want TX of the cached value",
			      f->desc, verdict(o.retval), o.len);
		} else {
			CHECK(o.retval == XPS_PASS, "%s: %s, want PASS",
			      f->desc, verdict(o.retval));
			CHECK(o.len == f->req_n && !memcmp(o.b, f->req, f->req_n),
			      "%s: passed request altered", f->desc);
		}
		/* a write invalidates what it names, or everything */
		if (single && w.first_kind == XPS_REQ_INVALIDATE) {
			CHECK(conn.unacked == 1,
			      "%s: write not counted unanswered (%u)",
			      f->desc, conn.unacked);
			if (w.first.flags & XPS_F_ALL)
				CHECK(redis_cgen() != cgen0,
				      "%s: everything not invalidated", f->desc);
			for (k = 0; !(w.first.flags & XPS_F_ALL) &&
				    k < w.first.nkeys; k++) {
				struct xps_kv_value v;
				int err;

				if (w.first.keys[k].len < 1 ||
				    w.first.keys[k].len > REDIS_KEY_MAX)
					continue;
				/*
				 * gone, or the write's own value, put pending
				 * for egress to commit (write-through), which
				 * is never served
				 */
				err = kv_get(redis.ctx, &keys[k], &v);
				CHECK(err == -ENOENT || (!err && v.pending),
				      "%s: key %d still cached (%d, pending %u)",
				      f->desc, k, err, err ? 0 : v.pending);
				CHECK(version_of(redis.versions, &keys[k]) > vers[k] ||
				      redis_cgen() != cgen0,
				      "%s: key %d version not bumped", f->desc, k);
			}
		}
		if (single && (w.first_kind == XPS_REQ_SERVE ||
			       w.first_kind == XPS_REQ_HARMLESS))
			CHECK(redis_cgen() == cgen0 && !conn.unacked,
			      "%s: a read counted as a write", f->desc);
		/*
		 * A miss over TCP asks for Redis's reply, from which the
		 * filler learns the value: an ARM record with the key and
		 * the stamps, read before the unanswered writes (0 here).
		 * Nothing is queued: the miss queue is for UDP.
		 */
		if (tx) {
			struct xps_kv_key q;
			__u64 ver = version_of(redis.versions, &keys[0]);
			__u32 flags = conn.flags, owed = conn.owed;

			kv_del(redis.ctx, &keys[0]);
			arm_drain();
			conn.flags |= XPS_CONN_EGRESS;	/* its replies counted */
			if (run(IPPROTO_TCP, PORT_REDIS, f->req, f->req_n,
				&conn, &o) == 0) {
				ring_buffer__consume(arm.rb);
				CHECK(o.retval == XPS_PASS &&
				      bpf_map_lookup_and_delete_elem(redis.misses, NULL, &q),
				      "%s: miss: %s, or its key queued", f->desc,
				      verdict(o.retval));
				CHECK(arm.n == 1 && arm.h.reply == owed + 1 &&
				      arm.tag.version == ver &&
				      arm.tag.cgen == redis_cgen() &&
				      xps_kv_key_eq(&arm.tag.key, &keys[0]),
				      "%s: miss: %u ARM records (reply %u of %u, version %llu of %llu)",
				      f->desc, arm.n, arm.h.reply, owed + 1,
				      (unsigned long long)arm.tag.version,
				      (unsigned long long)ver);
			}
			conn.flags = flags;
			conn.cap_reply = 0;
		}
		redis_follow_up(f->desc, &conn, w.servable && !w.global);
	}
	redis_reset();
	h_end();
}

/* A request cut in two is never answered from either part. */
static void test_redis_splits(void)
{
	static __u8 buf[XPS_SCRATCH];
	static struct out o;
	struct walk_result w;
	unsigned tried = 0, resynced = 0;
	size_t i, cut;

	h_begin("redis: requests split at every byte offset are passed, and the stream stays in step");
	for (i = 0; i < N(redis_fx); i++) {
		const struct fx *f = &redis_fx[i];
		__u32 n = to_scratch(buf, f->req, f->req_n), wl = 0;
		char want[4096];
		struct xps_kv_key key;

		redis_reset();
		kv_walk(xps_redis_parse, buf, n, &w);
		if (w.first_kind != XPS_REQ_SERVE || w.first.req_len != n ||
		    !redis_servable_get(&w.first))
			continue;
		key = rkey(buf + w.first.keys[0].off, w.first.keys[0].len);
		if (redis_cache(&key, "split-value", want, &wl))
			CHECK(0, "%s: cannot cache", f->desc);
		for (cut = 1; cut < n; cut++) {
			struct xps_conn conn = {};

			tried++;
			if (run(IPPROTO_TCP, PORT_REDIS, f->req, cut, &conn, &o) ||
			    o.retval != XPS_PASS) {
				CHECK(0, "%s cut at %zu: first part %s",
				      f->desc, cut, verdict(o.retval));
				continue;
			}
			if (run(IPPROTO_TCP, PORT_REDIS, f->req + cut, n - cut,
				&conn, &o) || o.retval != XPS_PASS) {
				CHECK(0, "%s cut at %zu: second part %s",
				      f->desc, cut, verdict(o.retval));
				continue;
			}
			/*
			 * The whole request again: a reply must be the right
			 * one.  A first part of unknown command invalidated
			 * everything: cache the key again.
			 */
			answer_writes(&conn);
			wl = 0;
			if (redis_cache(&key, "split-value", want, &wl))
				CHECK(0, "%s: cannot cache", f->desc);
			if (run(IPPROTO_TCP, PORT_REDIS, f->req, n, &conn, &o))
				continue;
			if (o.retval == XPS_TX) {
				resynced++;
				CHECK(o.len == wl && !memcmp(o.b, want, wl),
				      "%s cut at %zu: wrong reply after", f->desc, cut);
			} else {
				CHECK(o.retval == XPS_PASS, "%s cut at %zu: %s after",
				      f->desc, cut, verdict(o.retval));
			}
		}
	}
	CHECK(tried > 100, "only %u splits tried", tried);
	CHECK(resynced > 0, "no connection served again after a split");
	if (verbose)
		printf("  %u splits, %u connections served again after\n",
		       tried, resynced);
	redis_reset();
	h_end();
}

/* Several requests in one segment: all GETs answered, or all passed. */
static void test_redis_pipeline(void)
{
	static const char gets[] =
		"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\nGET k2\r\n*2\r\n$3\r\nget\r\n$2\r\nk3\r\n";
	static const char mixed[] =
		"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$1\r\nx\r\n";
	struct xps_kv_key k1 = rkey("k1", 2), k2 = rkey("k2", 2), k3 = rkey("k3", 2);
	struct xps_conn conn = {};
	struct xps_kv_value v;
	static struct out o;
	__u32 wl = 0;
	char want[256];

	h_begin("redis: pipelined GETs in one segment answered in order; a write among them passes all");
	redis_reset();
	if (redis_cache(&k1, "one", want, &wl) ||
	    redis_cache(&k2, "two", want, &wl) ||
	    redis_cache(&k3, "three", want, &wl))
		CHECK(0, "cannot cache");
	CHECK(!run(IPPROTO_TCP, PORT_REDIS, gets, sizeof(gets) - 1, &conn, &o) &&
	      o.retval == XPS_TX && o.len == wl && !memcmp(o.b, want, wl),
	      "three GETs: %s, %u bytes", verdict(o.retval), o.len);
	CHECK(!run(IPPROTO_TCP, PORT_REDIS, mixed, sizeof(mixed) - 1, &conn, &o) &&
	      o.retval == XPS_PASS, "GET + SET: %s", verdict(o.retval));
	CHECK(kv_get(redis.ctx, &k2, &v) == -ENOENT, "SET k2 left it cached");
	CHECK(kv_get(redis.ctx, &k1, &v) == 0, "GET k1 invalidated it");
	answer_writes(&conn);
	redis_reset();
	h_end();
}

/* ---- memcached -------------------------------------------------------- */

static struct xps_kv_key mkey(const void *k, __u32 len)
{
	struct xps_kv_key key = { .len = len };

	memcpy(key.b, k, len);
	return key;
}

static int mc_cache(const struct xps_kv_key *key, const char *val, __u32 flags,
		    __u64 cas)
{
	struct xps_kv_value v = { .len = strlen(val), .client_flags = flags, .cas = cas };
	struct mc_state st;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(mc.state, &zero, &st))
		return -errno;
	v.cgen = st.kv.cgen;
	v.version = version_of(mc.versions, key);
	memcpy(v.v, val, v.len);
	return kv_set(mc.ctx, key, &v);
}

static void mc_reset(void)
{
	struct mc_state st = {};
	__u32 zero = 0;

	clear_map(mc.data, sizeof(struct xps_kv_hkey));
	drain_queue(mc.misses, sizeof(struct xps_kv_key));
	bpf_map_lookup_elem(mc.state, &zero, &st);
	st.kv.flags = 0;
	bpf_map_update_elem(mc.state, &zero, &st, BPF_ANY);
}

static bool mc_servable_get(const struct xps_kv_req *r)
{
	int k;

	if (!r->nkeys || (r->flags & XPS_F_BADKEY))
		return false;
	for (k = 0; k < r->nkeys; k++)
		if (r->keys[k].len < 1 || r->keys[k].len > MC_KEY_MAX)
			return false;
	return true;
}

#define MC_FOLLOW "get fx:after\r\n"
#define MC_FOLLOW_REPLY "VALUE fx:after 0 2\r\nok\r\nEND\r\n"

static void test_mc_fixtures(void)
{
	static __u8 buf[XPS_SCRATCH];
	static struct out o;
	char want[4096], val[64];
	struct walk_result w;
	struct xps_kv_key keys[XPS_MAX_KEYS], after = mkey("fx:after", 8);
	size_t i;
	int k;

	h_begin("memcached: every fixture through the handler (verdict, reply, invalidation, connection state)");
	for (i = 0; i < N(mc_fx); i++) {
		const struct fx *f = &mc_fx[i];
		/* memcached has read the connection's first bytes before */
		struct xps_conn conn = { .hs.flags = MC_CONN_SPOKEN };
		__u32 n = to_scratch(buf, f->req, f->req_n), wl = 0;
		bool single, tx;

		mc_reset();
		kv_walk(xps_mc_parse, buf, n, &w);
		single = w.first.req_len == n &&
			 w.first_kind != XPS_REQ_INCOMPLETE &&
			 w.first_kind != XPS_REQ_MALFORMED;
		tx = single && w.first_kind == XPS_REQ_SERVE &&
		     mc_servable_get(&w.first);
		for (k = 0; single && k < w.first.nkeys; k++) {
			const struct xps_span *sp = &w.first.keys[k];
			__u64 cas = 1000 + k;

			if (sp->len < 1 || sp->len > MC_KEY_MAX)
				continue;
			keys[k] = mkey(buf + sp->off, sp->len);
			snprintf(val, sizeof(val), "v%zu-%d", i, k);
			if (mc_cache(&keys[k], val, 7 + k, cas))
				CHECK(0, "%s: cannot cache", f->desc);
			if (!tx)
				continue;
			wl += snprintf(want + wl, sizeof(want) - wl,
				       "VALUE %.*s %d %zu", (int)sp->len,
				       (const char *)buf + sp->off, 7 + k,
				       strlen(val));
			if (w.first.flags & XPS_F_CAS)
				wl += snprintf(want + wl, sizeof(want) - wl,
					       " %llu", (unsigned long long)cas);
			wl += snprintf(want + wl, sizeof(want) - wl,
				       "\r\n%s\r\n", val);
		}
		if (tx)
			wl += snprintf(want + wl, sizeof(want) - wl, "END\r\n");
		if (run(IPPROTO_TCP, PORT_MC, f->req, f->req_n, &conn, &o)) {
			CHECK(0, "%s: run: %s", f->desc, strerror(errno));
			continue;
		}
		if (verbose)
			printf("  %-50s %s\n", f->desc, verdict(o.retval));
		if (tx)
			CHECK(o.retval == XPS_TX && o.len == wl &&
			      !memcmp(o.b, want, wl),
			      "%s: %s (%u bytes '%.*s'), want TX '%.*s'", f->desc,
			      verdict(o.retval), o.len, (int)o.len, o.b,
			      (int)wl, want);
		else
			CHECK(o.retval == XPS_PASS && o.len == f->req_n,
			      "%s: %s, want PASS", f->desc, verdict(o.retval));
		if (single && w.first_kind == XPS_REQ_INVALIDATE &&
		    !(w.first.flags & XPS_F_ALL)) {
			for (k = 0; k < w.first.nkeys; k++) {
				struct xps_kv_value v;

				if (w.first.keys[k].len < 1 ||
				    w.first.keys[k].len > MC_KEY_MAX)
					continue;
				CHECK(kv_get(mc.ctx, &keys[k], &v) == -ENOENT,
				      "%s: key %d still cached", f->desc, k);
			}
		}
		/* the connection afterwards */
		answer_writes(&conn);
		if (mc_cache(&after, "ok", 0, 1) ||
		    run(IPPROTO_TCP, PORT_MC, MC_FOLLOW, sizeof(MC_FOLLOW) - 1,
			&conn, &o)) {
			CHECK(0, "%s: follow-up failed to run", f->desc);
			continue;
		}
		if (w.servable)
			CHECK(o.retval == XPS_TX &&
			      o.len == sizeof(MC_FOLLOW_REPLY) - 1 &&
			      !memcmp(o.b, MC_FOLLOW_REPLY, o.len),
			      "%s: get after it: %s, want TX", f->desc,
			      verdict(o.retval));
		else
			CHECK(o.retval == XPS_PASS,
			      "%s: get after it: %s, want PASS", f->desc,
			      verdict(o.retval));
		answer_writes(&conn);
	}
	mc_reset();
	h_end();
}

/* UDP: the 8-byte frame, request id echoed; no connection record. */
static void test_mc_udp(void)
{
	static const char req[] = "\x12\x34\x00\x00\x00\x01\x00\x00get fx:udp\r\n";
	static const char reply[] =
		"\x12\x34\x00\x00\x00\x01\x00\x00VALUE fx:udp 3 4\r\nudp!\r\nEND\r\n";
	static const char bad[] = "\x12\x34\x00\x00\x00\x02\x00\x00get fx:udp\r\n";
	struct xps_kv_key key = mkey("fx:udp", 6);
	static struct out o;

	h_begin("memcached UDP: frame header echoed, multi-datagram requests passed");
	mc_reset();
	if (mc_cache(&key, "udp!", 3, 9))
		CHECK(0, "cannot cache");
	CHECK(!run(IPPROTO_UDP, PORT_MC, req, sizeof(req) - 1, NULL, &o) &&
	      o.retval == XPS_TX && o.len == sizeof(reply) - 1 &&
	      !memcmp(o.b, reply, o.len), "get: %s, %u bytes",
	      verdict(o.retval), o.len);
	CHECK(!run(IPPROTO_UDP, PORT_MC, bad, sizeof(bad) - 1, NULL, &o) &&
	      o.retval == XPS_PASS, "2-datagram request: %s", verdict(o.retval));
	mc_reset();
	h_end();
}

/* ---- HTTP ------------------------------------------------------------- */

static const char SERVER[] = "nginx/1.22.1";

static void test_http_fixtures(void)
{
	static __u8 buf[XPS_SCRATCH], want[XPS_SCRATCH];
	struct http_method_key post = { "POST" }, put = { "PUT" };
	struct http_action a405 = { 405 }, a444 = { 444 };
	struct http_state st = { .server_len = sizeof(SERVER) - 1 };
	struct timespec tai, utc;
	struct xps_http_req r;
	static struct out o;
	__u32 zero = 0;
	size_t i;

	h_begin("http: every fixture through the filter (405 answered as nginx, 444 reset, the rest passed)");
	memcpy(st.server, SERVER, st.server_len);
	clock_gettime(CLOCK_TAI, &tai);
	clock_gettime(CLOCK_REALTIME, &utc);
	st.tai_minus_utc_ns = (tai.tv_sec - utc.tv_sec) * 1000000000ll;
	if (bpf_map_update_elem(http.state, &zero, &st, BPF_ANY) ||
	    xps_context__data_set(http.ctx, &post, &a405) ||
	    xps_context__data_set(http.ctx, &put, &a444))
		CHECK(0, "cannot configure the filter");

	for (i = 0; i < N(http_fx); i++) {
		const struct hfx *f = &http_fx[i];
		struct xps_conn conn = {};
		__u32 n = to_scratch(buf, f->req, f->req_n), wl;
		int kind = xps_http_parse(buf, n, 0, &r);
		bool ours = kind == XPS_REQ_SERVE && r.req_len == n &&
			    !(r.flags & XPS_HTTP_F_UNMODELLED);
		bool is_post = ours && !strcmp((char *)r.method, "POST");
		bool is_put = ours && !strcmp((char *)r.method, "PUT");
		const char *date;

		if (run(IPPROTO_TCP, PORT_HTTP, f->req, f->req_n, &conn, &o)) {
			CHECK(0, "%s: run: %s", f->desc, strerror(errno));
			continue;
		}
		if (verbose)
			printf("  %-50s %s\n", f->desc, verdict(o.retval));
		if (is_put) {
			CHECK(o.retval == XPS_RESET, "%s: %s, want RESET",
			      f->desc, verdict(o.retval));
			continue;
		}
		if (!is_post) {
			CHECK(o.retval == XPS_PASS && o.len == f->req_n,
			      "%s: %s, want PASS", f->desc, verdict(o.retval));
			continue;
		}
		/* nginx's 405, with the date the handler put in */
		o.b[o.len < sizeof(o.b) ? o.len : sizeof(o.b) - 1] = '\0';
		date = strstr(o.b, "\r\nDate: ");
		if (o.retval != XPS_TX || !date) {
			CHECK(0, "%s: %s, want TX 405", f->desc,
			      verdict(o.retval));
			continue;
		}
		wl = xps_http_encode_error(want, 405, (const __u8 *)st.server,
					   st.server_len,
					   (const __u8 *)date + 8, 1, 0);
		CHECK(o.len == wl && !memcmp(o.b, want, wl),
		      "%s: reply differs from nginx's 405:\n%.*s", f->desc,
		      (int)o.len, o.b);
	}
	xps_context__data_delete(http.ctx, &post);
	xps_context__data_delete(http.ctx, &put);
	h_end();
}

/* ---- setup -------------------------------------------------------------- */

/* The framework program behind a pinned hook link, and its attach type. */
static int fw_prog(const char *link_pin, __u32 *attach_type)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	int link, fd;

	link = bpf_obj_get(link_pin);
	if (link < 0)
		return -1;
	fd = bpf_obj_get_info_by_fd(link, &info, &len) ? -1 :
	     bpf_prog_get_fd_by_id(info.prog_id);
	*attach_type = info.netns.attach_type;
	close(link);
	return fd;
}

static int set_tail(const char *map, int prog)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(bpf_object__find_map_fd_by_name(fx.obj, map),
				&zero, &prog, BPF_ANY)) {
		fprintf(stderr, "FAIL setup: %s: %s\n", map, strerror(errno));
		return -1;
	}
	return 0;
}

static int setup(const char *bpf_dir, const char *wrap)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = XPS_PIN_ROOT);
	struct bpf_program *p_tcp, *p_udp;
	__u32 at_tcp = 0, at_udp = 0;
	int tcp, udp, err;

	if (make_ctx(&redis, bpf_dir, "redis.bpf.o", "fx-redis",
		     IPPROTO_TCP, PORT_REDIS, NULL) ||
	    make_ctx(&mc, bpf_dir, "memcached.bpf.o", "fx-mc",
		     IPPROTO_TCP, PORT_MC, NULL) ||
	    make_ctx(&mc_udp, bpf_dir, "memcached.bpf.o", "fx-mc-udp",
		     IPPROTO_UDP, PORT_MC, "fx-mc") ||
	    make_ctx(&http, bpf_dir, "http_filter.bpf.o", "fx-http",
		     IPPROTO_TCP, PORT_HTTP, NULL))
		return -1;
	if (redis.state < 0 || redis.versions < 0 || redis.misses < 0 ||
	    mc.state < 0 || mc.versions < 0 || mc.misses < 0 || http.state < 0) {
		fprintf(stderr, "FAIL setup: context maps not pinned\n");
		return -1;
	}

	tcp = fw_prog(XPS_PIN_ROOT "/link_native_tcp", &at_tcp);
	udp = fw_prog(XPS_PIN_ROOT "/link_native_udp", &at_udp);
	fx.config = bpf_obj_get(XPS_PIN_ROOT "/xps_config");
	err = -1;
	if (tcp < 0 || udp < 0 || fx.config < 0) {
		fprintf(stderr, "FAIL setup: no native framework (is this an XPS kernel?)\n");
		goto out;
	}
	fx.obj = bpf_object__open_file(wrap, &oo);
	if (!fx.obj) {
		fprintf(stderr, "FAIL setup: %s: %s\n", wrap, strerror(errno));
		goto out;
	}
	p_tcp = bpf_object__find_program_by_name(fx.obj, "fx_tcp");
	p_udp = bpf_object__find_program_by_name(fx.obj, "fx_udp");
	if (!p_tcp || !p_udp ||
	    bpf_program__set_expected_attach_type(p_tcp, at_tcp) ||
	    bpf_program__set_expected_attach_type(p_udp, at_udp) ||
	    bpf_object__load(fx.obj)) {
		fprintf(stderr, "FAIL setup: loading %s: %s\n", wrap,
			strerror(errno));
		goto out;
	}
	fx.tcp = bpf_program__fd(p_tcp);
	fx.udp = bpf_program__fd(p_udp);
	fx.carry = bpf_object__find_map_fd_by_name(fx.obj, "fx_carry");
	fx.cookie = bpf_object__find_map_fd_by_name(fx.obj, "fx_cookie");
	fx.conns = bpf_object__find_map_fd_by_name(fx.obj, "xps_conns");
	if (!set_tail("fx_fw_tcp", tcp) && !set_tail("fx_fw_udp", udp))
		err = 0;
	if (!err && arm_ring(redis.ctx)) {
		fprintf(stderr, "FAIL setup: the Redis context's capture ring: %s\n",
			strerror(errno));
		err = -1;
	}
out:
	if (tcp >= 0)
		close(tcp);
	if (udp >= 0)
		close(udp);
	return err;
}

static void teardown(void)
{
	struct ctxmaps *all[] = { &mc_udp, &redis, &mc, &http };
	size_t i;

	for (i = 0; i < N(all); i++) {
		if (all[i]->ctx)
			xps_context__delete(all[i]->ctx);
		if (all[i]->state >= 0)
			close(all[i]->state);
		if (all[i]->versions >= 0)
			close(all[i]->versions);
		if (all[i]->misses >= 0)
			close(all[i]->misses);
	}
	if (fx.config >= 0)
		close(fx.config);
	ring_buffer__free(arm.rb);
	bpf_object__close(fx.obj);
}

int main(int argc, char **argv)
{
	struct ctxmaps none = { .data = -1, .state = -1, .versions = -1,
				.misses = -1 };
	int opt, err;

	while ((opt = getopt(argc, argv, "vh")) != -1) {
		switch (opt) {
		case 'v':
			verbose = true;
			break;
		default:
			fprintf(stderr, "usage: %s [-v] BPF_DIR FX_WRAP_OBJ\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: %s [-v] BPF_DIR FX_WRAP_OBJ\n", argv[0]);
		return 2;
	}
	redis = mc = mc_udp = http = none;
	fx.config = -1;
	err = setup(argv[optind], argv[optind + 1]);
	if (!err) {
		test_redis_fixtures();
		test_redis_splits();
		test_redis_pipeline();
		test_mc_fixtures();
		test_mc_udp();
		test_http_fixtures();
	}
	teardown();
	if (err)
		return 1;
	return h_summary("xps_fxtest");
}
