// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libxps API test: the paper's Table 3.2 through the library, against the
 * running kernel, under the API's names and under the paper's (aliases of
 * the same functions), and the options structs' size checks.  Usage: api_test BPF_DIR (the directory with kv.bpf.o,
 * echo.bpf.o, upper.bpf.o).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "libxps.h"
#include <xps/kv.h>
#include "libxps_kv.h"
#include <xps/redis.h>

static int failures;
static char last_warn[512];

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			failures++;					\
			printf("  FAIL %s:%d: ", __FILE__, __LINE__);	\
			printf(__VA_ARGS__);				\
			printf("\n");					\
		}							\
	} while (0)

static int quiet_print(enum libxps_print_level level, const char *fmt,
		       va_list args)
{
	if (level == LIBXPS_WARN)
		vsnprintf(last_warn, sizeof(last_warn), fmt, args);
	return 0;
}

static int bound_socket(int type, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, type, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    (type == SOCK_STREAM && listen(fd, 8))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void kv(struct kv_key *k, struct kv_value *v, const char *key,
	       const char *val)
{
	memset(k, 0, sizeof(*k));
	memset(v, 0, sizeof(*v));
	memcpy(k->k, key, strnlen(key, sizeof(k->k)));
	v->len = strlen(val);
	memcpy(v->v, val, v->len);
}

static int count_contexts(const struct xps_ctx_info *info, __u32 slot,
			  void *data)
{
	(void)info;
	(void)slot;
	(*(int *)data)++;
	return 0;
}

static int count_keys(const void *key, __u32 key_size, __u64 count, void *data)
{
	(void)key;
	(void)key_size;
	(void)count;
	(*(int *)data)++;
	return 0;
}

/*
 * A struct xps_context_opts as a caller built against a newer libxps.h
 * lays it out: this one's fields, then one it does not know.
 */
struct newer_context_opts {
	struct xps_context_opts known;
	__u64 future;
};

static void opts_checks(const char *obj_echo)
{
	struct xps_predicate p = { .proto = IPPROTO_TCP, .lport = 17253 };
	DECLARE_XPS_OPTS(xps_context_opts, plain, .name = "opts");
	struct newer_context_opts newer;
	struct xps_context_opts older;
	char label[XPS_LABEL_LEN];
	struct xps_context *c;

	printf("options: DECLARE_XPS_OPTS, older and newer callers\n");
	CHECK(plain.sz == sizeof(struct xps_context_opts) && !plain.share &&
	      !plain.label && !strcmp(plain.name, "opts"),
	      "DECLARE_XPS_OPTS sets sz and the fields given, nothing else");

	/* a newer caller that sets a field this libxps does not know */
	memset(&newer, 0, sizeof(newer));
	newer.known.sz = sizeof(newer);
	newer.known.name = "opts";
	newer.future = 1;
	last_warn[0] = '\0';
	c = xps_context__create_pred(obj_echo, &p, &newer.known);
	CHECK(!c && errno == EINVAL, "a field past the known ones is refused");
	CHECK(strstr(last_warn, "struct xps_context_opts") &&
	      strstr(last_warn, "newer"), "and says why: '%s'", last_warn);
	if (c)
		xps_context__delete(c);
	c = xps_context__create_comp_pred(&p, 0, 1, &newer.known);
	CHECK(!c && errno == EINVAL, "comp: a field past the known ones is refused");
	if (c)
		xps_context__delete(c);

	/* the same caller leaving that field zero asks for nothing new */
	newer.future = 0;
	c = xps_context__create_pred(obj_echo, &p, &newer.known);
	CHECK(c, "a larger struct with its new fields zero is taken: %s",
	      last_warn);
	if (c)
		CHECK(!xps_context__delete(c), "delete");

	/* an older caller, without .label: the label is not read */
	memset(&older, 0, sizeof(older));
	older.sz = offsetof(struct xps_context_opts, label);
	older.name = "opts";
	older.label = "beyond the caller's struct";
	c = xps_context__create_pred(obj_echo, &p, &older);
	CHECK(c && !xps_context__label(c, label, sizeof(label)) && !label[0],
	      "an older caller's struct is read up to its sz only");
	if (c)
		xps_context__delete(c);

	older.sz = sizeof(size_t) - 1;
	c = xps_context__create_pred(obj_echo, &p, &older);
	CHECK(!c && errno == EINVAL, "sz smaller than sz itself is refused");
	if (c)
		xps_context__delete(c);
}

/*
 * The paper's Table 3.2 names (and 0.1.0's others) are the same functions
 * as the new names: the same addresses, and the same results when called.
 */
static void paper_aliases(const char *obj_kv, const char *obj_echo)
{
	struct xps_context *ctx, *comp, *sub, *again;
	struct kv_key keys[2], k;
	struct kv_value vals[2], v, got;
	struct xps_predicate pred;
	struct xps_status status;
	__u32 n, ks, vs;
	__u64 count;
	int sock, usock, nkeys = 0, ncontexts = 0;

	printf("the paper's names: aliases of the API's\n");
	CHECK((void *)xps_create_context == (void *)xps_context__create &&
	      (void *)xps_create_context_pred == (void *)xps_context__create_pred &&
	      (void *)xps_update_context == (void *)xps_context__update &&
	      (void *)xps_delete_context == (void *)xps_context__delete &&
	      (void *)xps_put_data == (void *)xps_context__data_put &&
	      (void *)xps_update_data == (void *)xps_context__data_update &&
	      (void *)xps_set_data == (void *)xps_context__data_set &&
	      (void *)xps_get_data == (void *)xps_context__data_get &&
	      (void *)xps_delete_data == (void *)xps_context__data_delete &&
	      (void *)xps_put_data_batch == (void *)xps_context__data_put_batch &&
	      (void *)xps_update_data_batch == (void *)xps_context__data_update_batch &&
	      (void *)xps_delete_data_batch == (void *)xps_context__data_delete_batch &&
	      (void *)xps_data_sizes == (void *)xps_context__data_sizes &&
	      (void *)xps_get_stats == (void *)xps_context__keystats_get &&
	      (void *)xps_get_allstats == (void *)xps_context__keystats_for_each &&
	      (void *)xps_create_compcontext == (void *)xps_context__create_comp &&
	      (void *)xps_create_compcontext_pred == (void *)xps_context__create_comp_pred &&
	      (void *)xps_create_subcontext == (void *)xps_context__create_sub &&
	      (void *)xps_create_subcontext_opts == (void *)xps_context__create_sub_opts &&
	      (void *)xps_context__reset_stats == (void *)xps_context__stats_reset &&
	      (void *)xps_for_each_context == (void *)xps_context__for_each &&
	      (void *)xps_get_status == (void *)xps_framework__status &&
	      (void *)xps_purge == (void *)xps_framework__purge &&
	      (void *)xps_backend_name == (void *)xps_backend__name &&
	      (void *)xps_predicate_from_socket == (void *)xps_predicate__from_socket,
	      "every alias is the function it names");

	sock = bound_socket(SOCK_STREAM, 17254);
	usock = bound_socket(SOCK_DGRAM, 17255);
	if (sock < 0 || usock < 0) {
		CHECK(0, "bind 17254/17255: %s", strerror(errno));
		goto out;
	}
	CHECK(!xps_predicate_from_socket(sock, &pred) && pred.lport == 17254,
	      "xps_predicate_from_socket");
	ctx = xps_create_context(obj_kv, sock);
	CHECK(ctx, "xps_create_context: %s", last_warn);
	if (!ctx)
		goto out;
	CHECK(!strcmp(xps_context__name(ctx), "kv-17254"), "the same name");
	CHECK(!xps_create_context(obj_echo, sock) && errno == EEXIST,
	      "xps_create_context refuses a second context alike");
	CHECK(!xps_get_status(&status) && status.loaded && status.contexts == 1,
	      "xps_get_status: %u context(s)", status.contexts);
	CHECK(!strcmp(xps_backend_name(status.backend_tcp),
		      xps_backend__name(status.backend_tcp)), "xps_backend_name");
	CHECK(xps_for_each_context(count_contexts, &ncontexts) == 0 &&
	      ncontexts == 1, "xps_for_each_context: %d", ncontexts);

	CHECK(!xps_data_sizes(ctx, &ks, &vs) && ks == sizeof(k) &&
	      vs == sizeof(v), "xps_data_sizes");
	kv(&k, &v, "paper", "one");
	CHECK(!xps_put_data(ctx, &k, &v), "xps_put_data");
	CHECK(xps_put_data(ctx, &k, &v) == -EEXIST, "xps_put_data of an existing key");
	kv(&k, &v, "paper", "two");
	CHECK(!xps_update_data(ctx, &k, &v), "xps_update_data");
	CHECK(!xps_get_data(ctx, &k, &got) && got.len == 3 &&
	      !memcmp(got.v, "two", 3), "xps_get_data after xps_update_data");
	kv(&k, &v, "paper", "six");
	CHECK(!xps_set_data(ctx, &k, &v) &&
	      !xps_context__data_get(ctx, &k, &got) && !memcmp(got.v, "six", 3),
	      "xps_set_data, read by the new name");
	CHECK(!xps_delete_data(ctx, &k) && xps_delete_data(ctx, &k) == -ENOENT,
	      "xps_delete_data");
	kv(&keys[0], &vals[0], "pa", "1");
	kv(&keys[1], &vals[1], "pb", "2");
	n = 2;
	CHECK(!xps_put_data_batch(ctx, keys, vals, &n) && n == 2,
	      "xps_put_data_batch");
	n = 2;
	CHECK(!xps_update_data_batch(ctx, keys, vals, &n) && n == 2,
	      "xps_update_data_batch");
	CHECK(!xps_get_stats(ctx, &keys[0], &count) && count == 0,
	      "xps_get_stats");
	CHECK(xps_get_allstats(ctx, count_keys, &nkeys) == 0 && nkeys == 0,
	      "xps_get_allstats");
	CHECK(!xps_context__reset_stats(ctx), "xps_context__reset_stats");
	CHECK(!xps_update_context(ctx, obj_kv) &&
	      !xps_get_data(ctx, &keys[1], &got), "xps_update_context keeps data");
	n = 2;
	CHECK(!xps_delete_data_batch(ctx, keys, &n) && n == 2,
	      "xps_delete_data_batch");

	comp = xps_create_compcontext(usock, 0, 1);
	CHECK(comp, "xps_create_compcontext: %s", last_warn);
	if (comp) {
		DECLARE_XPS_OPTS(xps_context_opts, so, .name = "paper-sub");

		sub = xps_create_subcontext(comp, obj_echo, "e");
		CHECK(sub, "xps_create_subcontext: %s", last_warn);
		xps_context__close(sub);
		sub = xps_create_subcontext_opts(comp, obj_echo, "f", &so);
		CHECK(sub && !strcmp(xps_context__name(sub), "paper-sub"),
		      "xps_create_subcontext_opts: %s", last_warn);
		xps_context__close(sub);
		CHECK(!xps_delete_context(comp), "xps_delete_context (comp)");
	}
	CHECK(!xps_delete_context(ctx), "xps_delete_context");
	again = xps_context__open("kv-17254");
	CHECK(!again && errno == ENOENT, "gone after xps_delete_context");
	xps_context__close(again);
	CHECK(!xps_purge() && access(XPS_PIN_ROOT, F_OK) != 0, "xps_purge");
out:
	if (sock >= 0)
		close(sock);
	if (usock >= 0)
		close(usock);
}

/*
 * The kv-cache module on a Redis context: a fill's stamps, seal and
 * insert, the state's flags and generation, the miss queue, the options.
 */
/* Connect to 127.0.0.1:@port and accept on @lfd: fds[0] the client. */
static int tcp_pair(int lfd, int port, int fds[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (fds[0] < 0)
		return -1;
	if (connect(fds[0], (struct sockaddr *)&a, sizeof(a)) ||
	    (fds[1] = accept(lfd, NULL, NULL)) < 0) {
		close(fds[0]);
		return -1;
	}
	return 0;
}

/* Close both ends (those still open) of a tcp_pair(). */
static void close_pair(int fds[2])
{
	int i;

	for (i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

#define CHURN_CONNS	48

/*
 * Until killed: keep CHURN_CONNS connections to @port open, closing the
 * oldest (client first, as redis-benchmark does) and opening one more.
 */
static void churn(int lfd, int port)
{
	int pairs[CHURN_CONNS][2], i = 0, n = 0;

	for (;;) {
		if (n == CHURN_CONNS) {
			close_pair(pairs[i]);
			n--;
		}
		if (tcp_pair(lfd, port, pairs[i]))
			_exit(1);
		n++;
		i = (i + 1) % CHURN_CONNS;
	}
}

/* Forget the record XPS keeps of the connection accepted as @fd. */
static int forget_record(int fd)
{
	__u64 cookie;
	socklen_t len = sizeof(cookie);
	int conns = xps_framework__map_fd(XPS_FW_MAP_CONNS), err;

	if (conns < 0)
		return -1;
	err = getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) ||
	      bpf_map_delete_elem(conns, &cookie);
	close(conns);
	return err ? -1 : 0;
}

/* Count one more connection xps_sockops could not record. */
static int note_unrecorded(void)
{
	int fd = xps_framework__map_fd(XPS_FW_MAP_CONFIG), err;
	struct xps_config cfg;
	__u32 zero = 0;

	if (fd < 0)
		return -1;
	err = bpf_map_lookup_elem(fd, &zero, &cfg);
	if (!err) {
		cfg.unrecorded++;
		err = bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY);
	}
	close(fd);
	return err ? -1 : 0;
}

/*
 * xps_kvcache__unseen_conns(): a connection made before the context is
 * one, one made after it is not, and neither is one that closes while
 * the check runs (a client hanging up is no connection XPS missed).  A
 * check that found none is trusted until XPS fails to record one.
 */
static void unseen_checks(const char *obj_redis)
{
	struct xps_predicate p = { .proto = IPPROTO_TCP, .lport = 17258 };
	DECLARE_XPS_OPTS(xps_kvcache_opts, always, .recheck_ns = 1);
	int lfd, old[2] = { -1, -1 }, late[2] = { -1, -1 };
	int i, n, bad = 0, checks = 2000;
	struct xps_kvcache *kc = NULL, *kca = NULL;
	struct xps_context *ctx = NULL;
	pid_t pid;

	printf("kv-cache: connections XPS does not see\n");
	lfd = bound_socket(SOCK_STREAM, 17258);
	CHECK(lfd >= 0, "listen on 17258");
	if (lfd < 0)
		return;
	if (tcp_pair(lfd, 17258, old)) {
		CHECK(0, "a connection before the context");
		goto out;
	}
	ctx = xps_context__create_pred(obj_redis, &p, NULL);
	CHECK(ctx, "a Redis context: %s", last_warn);
	kc = ctx ? xps_kvcache__open(ctx, NULL) : NULL;
	kca = ctx ? xps_kvcache__open(ctx, &always) : NULL;
	CHECK(kc && kca, "xps_kvcache__open: %s", last_warn);
	if (!kc || !kca)
		goto out;
	n = xps_kvcache__unseen_conns(kc);
	CHECK(n == 1, "the connection made before the context is unseen (%d)", n);
	if (tcp_pair(lfd, 17258, late)) {
		CHECK(0, "a connection after the context");
		goto out;
	}
	n = xps_kvcache__unseen_conns(kc);
	CHECK(n == 1, "one made after it is seen (%d unseen)", n);
	close_pair(old);
	n = xps_kvcache__unseen_conns(kc);
	CHECK(n == 0, "none once it is closed (%d)", n);

	/* a clean check is trusted until a connection goes unrecorded */
	CHECK(!forget_record(late[1]), "forget a connection's record: %s",
	      strerror(errno));
	n = xps_kvcache__unseen_conns(kca);
	CHECK(n == 1, "a connection without a record is unseen (%d)", n);
	n = xps_kvcache__unseen_conns(kc);
	CHECK(n == 0, "a clean check is trusted (%d)", n);
	CHECK(!note_unrecorded(), "count an unrecorded connection");
	n = xps_kvcache__unseen_conns(kc);
	CHECK(n == 1, "not once XPS failed to record one (%d)", n);
	close_pair(late);
	n = xps_kvcache__unseen_conns(kc);
	CHECK(n == 0, "none once it is closed (%d)", n);

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		churn(lfd, 17258);
	CHECK(pid > 0, "fork: %s", strerror(errno));
	if (pid < 0)
		goto out;
	for (i = 0; i < checks; i++) {
		n = xps_kvcache__unseen_conns(kca);
		if (n)
			bad++;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK(!bad, "connections that close during the check are not unseen: "
	      "%d of %d checks counted some", bad, checks);
out:
	close_pair(old);
	close_pair(late);
	xps_kvcache__close(kca);
	xps_kvcache__close(kc);
	xps_context__delete(ctx);
	close(lfd);
}

static void kvcache_checks(const char *obj_redis, const char *obj_kv)
{
	struct xps_predicate p = { .proto = IPPROTO_TCP, .lport = 17256 };
	DECLARE_XPS_OPTS(xps_context_opts, co, .name = "kvc");
	DECLARE_XPS_OPTS(xps_kvcache_opts, ko, .skip_ns = 1000000000ULL);
	struct {
		struct xps_kvcache_opts known;
		__u64 future;
	} newer = { .known.sz = sizeof(newer), .future = 1 };
	struct xps_context *ctx, *plain;
	struct xps_kv_value val, got;
	struct xps_kv_key key, popped;
	struct xps_kv_hkey h;
	static struct xps_kv_learned learned;
	struct xps_kv_asked asked;
	struct redis_state *st;
	struct xps_kvcache *kc;
	__u32 cgen, seen;
	int err;

	printf("kv-cache: fills, state, miss queue, learning\n");
	ctx = xps_context__create_pred(obj_redis, &p, &co);
	CHECK(ctx, "a Redis context: %s", last_warn);
	if (!ctx)
		return;
	kc = xps_kvcache__open(ctx, &newer.known);
	CHECK(!kc && errno == EINVAL, "kvcache opts: a field past the known ones is refused");
	xps_kvcache__close(kc);
	kc = xps_kvcache__open(ctx, &ko);
	CHECK(kc, "xps_kvcache__open: %s", last_warn);
	if (!kc)
		goto out;
	CHECK(xps_kvcache__port(kc) == 17256, "port %u", xps_kvcache__port(kc));
	st = xps_kvcache__state(kc);
	CHECK(st != NULL, "the state is mapped");
	if (!st)
		goto out;

	xps_kvcache__flags(kc, REDIS_NO_SERVE, 0);
	CHECK(st->kv.flags & REDIS_NO_SERVE, "flags set");
	xps_kvcache__flags(kc, 0, REDIS_NO_SERVE);
	CHECK(!(st->kv.flags & REDIS_NO_SERVE), "flags cleared");
	cgen = st->kv.cgen;
	xps_kvcache__invalidate(kc);
	CHECK(st->kv.cgen == cgen + 1, "invalidate: a new generation");

	/*
	 * A stop the handler sets after a check began (xps_kv_stop(): the
	 * flag, then the generation) is not lifted by that check.
	 */
	seen = xps_kvcache__stops(kc);
	__atomic_fetch_or(&st->kv.flags, XPS_KV_NO_SERVE, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&st->kv.flags, XPS_KV_STOP_GEN_ONE, __ATOMIC_SEQ_CST);
	CHECK(xps_kvcache__lift(kc, REDIS_NO_SERVE, seen) == -EAGAIN &&
	      (st->kv.flags & REDIS_NO_SERVE),
	      "a check older than the stop lifts nothing");
	seen = xps_kvcache__stops(kc);
	CHECK(!xps_kvcache__lift(kc, REDIS_NO_SERVE, seen) &&
	      !(st->kv.flags & REDIS_NO_SERVE) &&
	      (st->kv.flags >> XPS_KV_STOP_GEN_SHIFT) ==
	      (seen >> XPS_KV_STOP_GEN_SHIFT),
	      "a check after the stop lifts it, the generation kept");
	CHECK(xps_kvcache__writes_all_pending(kc) == 0,
	      "no write of every key unanswered");
	CHECK(st->kv.lease_ns == 0, "no lease before a filler ran");
	xps_kvcache__lease(kc, 3000000000ULL);
	CHECK(st->kv.lease_ns > 3000000000ULL, "a lease");
	xps_kvcache__lease(kc, 0);
	CHECK(st->kv.lease_ns == 1, "a lease ended is not 'no lease'");
	st->kv.lease_ns = 0;
	CHECK(xps_kvcache__server_gone(kc) == 0, "a new context has its server");

	xps_kv_key_set(&key, "greeting", 8);
	memset(&val, 0xaa, sizeof(val));
	err = xps_kvcache__fill_begin(kc, &key, &val);
	CHECK(!err, "fill_begin with no write unanswered: %d", err);
	CHECK(val.cgen == st->kv.cgen && val.version == 0,
	      "stamped with the generation (%u) and version 0 (%llu)", val.cgen,
	      (unsigned long long)val.version);
	val.len = 5;
	memcpy(val.v, "hello", 5);
	val.cas = 0;
	val.client_flags = 0;
	CHECK(!xps_kvcache__fill_commit(kc, &key, &val), "fill_commit");
	h = xps_kv_hkey_of(&key);
	CHECK(!xps_context__data_get(ctx, &h, &got) && got.len == 5 &&
	      !memcmp(got.v, "hello", 5) && xps_kv_key_eq(&got.key, &key) &&
	      got.sum == xps_kv_value_sum(&got) && got.sum != 0,
	      "the value is inserted under the key's hash, sealed");
	val.len = XPS_KV_VALUE_MAX + 1;
	CHECK(xps_kvcache__fill_commit(kc, &key, &val) == -EINVAL,
	      "a value longer than the layout holds is refused");

	CHECK(xps_kvcache__miss_pop(kc, &popped) == -ENOENT, "empty miss queue");
	xps_kv_key_set(&key, "missed", 6);
	CHECK(!xps_kvcache__miss_retry(kc, &key), "miss_retry queues a key");
	memset(&popped, 0xff, sizeof(popped));
	CHECK(!xps_kvcache__miss_pop(kc, &popped) &&
	      xps_kv_key_eq(&popped, &key) && !popped.b[6] &&
	      !popped.b[XPS_KV_KEY_MAX - 1], "miss_pop: the key, cleaned");
	xps_kvcache__fill_skip(kc, &key);
	CHECK(!xps_kvcache__miss_retry(kc, &key) &&
	      xps_kvcache__miss_pop(kc, &popped) == -ENOENT,
	      "a key skipped lately is dropped from the queue");
	CHECK(xps_kvcache__unseen_conns(kc) == 0, "no connection to the port");

	/* learning: nothing asked, nothing captured yet */
	CHECK(xps_kvcache__learn_next(kc, &learned) == -ENOENT,
	      "learn_next: nothing learned");
	CHECK(xps_kvcache__asked_next(kc, &asked) == -ENOENT,
	      "asked_next: nothing asked");
	err = xps_kvcache__learn_wait(kc, 20000);
	CHECK(err == 0, "learn_wait: times out with nothing captured (%d)",
	      err);
	CHECK(xps_kvcache__learn_wait(NULL, 0) == -EINVAL &&
	      xps_kvcache__asked_next(kc, NULL) == -EINVAL &&
	      xps_kvcache__asked_next(NULL, &asked) == -EINVAL,
	      "learning calls refuse NULL");
out:
	xps_kvcache__close(kc);
	/* a handler without the kv-cache's maps has no kv-cache */
	p.lport = 17257;
	plain = xps_context__create_pred(obj_kv, &p, NULL);
	CHECK(plain, "a kv context: %s", last_warn);
	if (plain) {
		kc = xps_kvcache__open(plain, NULL);
		CHECK(!kc && errno == ENOENT, "no kv-cache on kv.bpf.o");
		xps_kvcache__close(kc);
		xps_context__delete(plain);
	}
	xps_context__delete(ctx);
}

int main(int argc, char **argv)
{
	char obj_kv[512], obj_echo[512], obj_upper[512], obj_redis[512];
	struct xps_context *ctx, *dup, *comp, *sub;
	struct kv_key keys[8], k;
	struct kv_value vals[8], v, got;
	struct xps_ctx_info info;
	struct xps_handler_stats st;
	__u32 n, ks, vs;
	__u64 count;
	int sock, usock, i, nkeys = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s BPF_DIR\n", argv[0]);
		return 2;
	}
	snprintf(obj_kv, sizeof(obj_kv), "%s/kv.bpf.o", argv[1]);
	snprintf(obj_echo, sizeof(obj_echo), "%s/echo.bpf.o", argv[1]);
	snprintf(obj_upper, sizeof(obj_upper), "%s/upper.bpf.o", argv[1]);
	snprintf(obj_redis, sizeof(obj_redis), "%s/redis.bpf.o", argv[1]);
	libxps_set_print(quiet_print);
	xps_framework__purge();

	sock = bound_socket(SOCK_STREAM, 17250);
	usock = bound_socket(SOCK_DGRAM, 17251);
	if (sock < 0 || usock < 0) {
		perror("bind");
		return 1;
	}

	printf("create_context from a socket\n");
	ctx = xps_context__create(obj_kv, sock);
	CHECK(ctx, "xps_context__create: %s (%s)", strerror(errno), last_warn);
	if (!ctx)
		return 1;
	CHECK(!strcmp(xps_context__name(ctx), "kv-17250"), "name %s",
	      xps_context__name(ctx));
	CHECK(!xps_context__info(ctx, &info) && info.pred.lport == 17250 &&
	      info.pred.proto == IPPROTO_TCP, "predicate from getsockname");

	printf("labels: kept with the context, none by default\n");
	{
		char label[XPS_LABEL_LEN], small[4], longer[XPS_LABEL_LEN + 1];
		struct xps_predicate lp = { .proto = IPPROTO_TCP, .lport = 17252 };
		DECLARE_XPS_OPTS(xps_context_opts, lo, .name = "lbl",
				 .label = "svc:test:owner");
		struct xps_context *l;

		CHECK(!xps_context__label(ctx, label, sizeof(label)) && !label[0],
		      "no label: '%s'", label);
		l = xps_context__create_pred(obj_echo, &lp, &lo);
		CHECK(l, "create with a label: %s", last_warn);
		CHECK(l && !xps_context__label(l, label, sizeof(label)) &&
		      !strcmp(label, "svc:test:owner"), "label '%s'", label);
		CHECK(l && xps_context__label(l, small, sizeof(small)) == -ENOSPC,
		      "a label larger than the buffer");
		if (l)
			CHECK(!xps_context__delete(l), "delete the labelled context");
		memset(longer, 'x', sizeof(longer) - 1);
		longer[sizeof(longer) - 1] = '\0';
		lo.label = longer;
		l = xps_context__create_pred(obj_echo, &lp, &lo);
		CHECK(!l && errno == ENAMETOOLONG, "a label too long is refused");
		if (l)
			xps_context__delete(l);
		/* the name reused without a label: no label left behind */
		lo.label = NULL;
		l = xps_context__create_pred(obj_echo, &lp, &lo);
		CHECK(l && !xps_context__label(l, label, sizeof(label)) && !label[0],
		      "the name reused: label '%s'", label);
		if (l)
			xps_context__delete(l);
	}

	printf("a second context on the same port is refused\n");
	dup = xps_context__create(obj_echo, sock);
	CHECK(!dup && errno == EEXIST, "duplicate: %p errno %d", (void *)dup, errno);
	CHECK(strstr(last_warn, "already has context 'kv-17250'"),
	      "clear message, got '%s'", last_warn);

	printf("data: put, update, delete, batch\n");
	CHECK(!xps_context__data_sizes(ctx, &ks, &vs) && ks == sizeof(k) &&
	      vs == sizeof(v), "sizes %u %u", ks, vs);
	kv(&k, &v, "alpha", "one");
	CHECK(!xps_context__data_put(ctx, &k, &v), "put");
	CHECK(xps_context__data_put(ctx, &k, &v) == -EEXIST, "put of an existing key");
	kv(&k, &v, "alpha", "two");
	CHECK(!xps_context__data_update(ctx, &k, &v), "update");
	CHECK(!xps_context__data_get(ctx, &k, &got) && got.len == 3 &&
	      !memcmp(got.v, "two", 3), "get after update");
	kv(&k, &v, "missing", "x");
	CHECK(xps_context__data_update(ctx, &k, &v) == -ENOENT, "update of a missing key");
	kv(&k, &v, "alpha", "");
	CHECK(!xps_context__data_delete(ctx, &k), "delete");
	CHECK(xps_context__data_delete(ctx, &k) == -ENOENT, "delete twice");
	for (i = 0; i < 8; i++) {
		char key[16];

		snprintf(key, sizeof(key), "batch%d", i);
		kv(&keys[i], &vals[i], key, "v");
	}
	n = 8;
	CHECK(!xps_context__data_put_batch(ctx, keys, vals, &n) && n == 8, "put batch %u", n);
	n = 8;
	CHECK(xps_context__data_put_batch(ctx, keys, vals, &n) == -EEXIST && n == 0,
	      "put batch of existing keys stops at the first: %u", n);
	n = 8;
	CHECK(!xps_context__data_update_batch(ctx, keys, vals, &n) && n == 8, "update batch");
	n = 4;
	CHECK(!xps_context__data_delete_batch(ctx, keys, &n) && n == 4, "delete batch");
	CHECK(xps_context__data_get(ctx, &keys[0], &got) == -ENOENT &&
	      !xps_context__data_get(ctx, &keys[5], &got), "batch delete removed 4 of 8");

	printf("statistics\n");
	CHECK(!xps_context__keystats_get(ctx, &keys[5], &count) && count == 0,
	      "never looked up: %llu", (unsigned long long)count);
	CHECK(xps_context__keystats_for_each(ctx, count_keys, &nkeys) == 0 && nkeys == 0,
	      "no key looked up yet: %d", nkeys);
	CHECK(!xps_context__stats(ctx, &st) && st.runs == 0, "no run yet");

	printf("update_context keeps the data map\n");
	CHECK(!xps_context__update(ctx, obj_kv), "update: %s", last_warn);
	CHECK(!xps_context__data_get(ctx, &keys[5], &got), "data kept across update");
	CHECK(xps_context__update(ctx, "/nonexistent.bpf.o") < 0, "bad object refused");
	CHECK(!xps_context__data_get(ctx, &keys[5], &got), "context intact after a failed update");

	printf("composability\n");
	comp = xps_context__create_comp(usock, 0, 2);
	CHECK(comp, "create_compcontext: %s", last_warn);
	if (comp) {
		sub = xps_context__create_sub(comp, obj_echo, "ec");
		CHECK(sub, "create_subcontext: %s", last_warn);
		dup = xps_context__create_sub(comp, obj_upper, "ec");
		CHECK(!dup && errno == EEXIST, "second sub-context for one value");
		CHECK(xps_context__create_comp(usock, 0, 9) == NULL && errno == EINVAL,
		      "length 9 refused");
		if (sub) {
			CHECK(!xps_context__info(sub, &info) &&
			      (info.flags & XPS_SLOT_SUB), "sub-context flags");
			xps_context__close(sub);
		}
		CHECK(!xps_context__delete(comp), "delete comp context");
	}

	opts_checks(obj_echo);
	kvcache_checks(obj_redis, obj_kv);
	unseen_checks(obj_redis);

	printf("delete_context\n");
	CHECK(!xps_context__delete(ctx), "delete");
	ctx = xps_context__open("kv-17250");
	CHECK(!ctx && errno == ENOENT, "gone after delete");
	CHECK(access(XPS_PIN_ROOT, F_OK) != 0, "no state left in " XPS_PIN_ROOT);

	close(sock);
	close(usock);
	paper_aliases(obj_kv, obj_echo);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
