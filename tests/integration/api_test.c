// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libxps API test: the paper's Table 3.2 through the library, against the
 * running kernel.  Usage: api_test BPF_DIR (the directory with kv.bpf.o,
 * echo.bpf.o, upper.bpf.o).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libxps.h"
#include <xps/kv.h>

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

static int count_keys(const void *key, __u32 key_size, __u64 count, void *data)
{
	(void)key;
	(void)key_size;
	(void)count;
	(*(int *)data)++;
	return 0;
}

int main(int argc, char **argv)
{
	char obj_kv[512], obj_echo[512], obj_upper[512];
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
	libxps_set_print(quiet_print);
	xps_purge();

	sock = bound_socket(SOCK_STREAM, 17250);
	usock = bound_socket(SOCK_DGRAM, 17251);
	if (sock < 0 || usock < 0) {
		perror("bind");
		return 1;
	}

	printf("create_context from a socket\n");
	ctx = xps_create_context(obj_kv, sock);
	CHECK(ctx, "xps_create_context: %s (%s)", strerror(errno), last_warn);
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
		struct xps_context_opts lo = { .sz = sizeof(lo), .name = "lbl",
					       .label = "svc:test:owner" };
		struct xps_context *l;

		CHECK(!xps_context__label(ctx, label, sizeof(label)) && !label[0],
		      "no label: '%s'", label);
		l = xps_create_context_pred(obj_echo, &lp, &lo);
		CHECK(l, "create with a label: %s", last_warn);
		CHECK(l && !xps_context__label(l, label, sizeof(label)) &&
		      !strcmp(label, "svc:test:owner"), "label '%s'", label);
		CHECK(l && xps_context__label(l, small, sizeof(small)) == -ENOSPC,
		      "a label larger than the buffer");
		if (l)
			CHECK(!xps_delete_context(l), "delete the labelled context");
		memset(longer, 'x', sizeof(longer) - 1);
		longer[sizeof(longer) - 1] = '\0';
		lo.label = longer;
		l = xps_create_context_pred(obj_echo, &lp, &lo);
		CHECK(!l && errno == ENAMETOOLONG, "a label too long is refused");
		if (l)
			xps_delete_context(l);
		/* the name reused without a label: no label left behind */
		lo.label = NULL;
		l = xps_create_context_pred(obj_echo, &lp, &lo);
		CHECK(l && !xps_context__label(l, label, sizeof(label)) && !label[0],
		      "the name reused: label '%s'", label);
		if (l)
			xps_delete_context(l);
	}

	printf("a second context on the same port is refused\n");
	dup = xps_create_context(obj_echo, sock);
	CHECK(!dup && errno == EEXIST, "duplicate: %p errno %d", (void *)dup, errno);
	CHECK(strstr(last_warn, "already has context 'kv-17250'"),
	      "clear message, got '%s'", last_warn);

	printf("data: put, update, delete, batch\n");
	CHECK(!xps_data_sizes(ctx, &ks, &vs) && ks == sizeof(k) &&
	      vs == sizeof(v), "sizes %u %u", ks, vs);
	kv(&k, &v, "alpha", "one");
	CHECK(!xps_put_data(ctx, &k, &v), "put");
	CHECK(xps_put_data(ctx, &k, &v) == -EEXIST, "put of an existing key");
	kv(&k, &v, "alpha", "two");
	CHECK(!xps_update_data(ctx, &k, &v), "update");
	CHECK(!xps_get_data(ctx, &k, &got) && got.len == 3 &&
	      !memcmp(got.v, "two", 3), "get after update");
	kv(&k, &v, "missing", "x");
	CHECK(xps_update_data(ctx, &k, &v) == -ENOENT, "update of a missing key");
	kv(&k, &v, "alpha", "");
	CHECK(!xps_delete_data(ctx, &k), "delete");
	CHECK(xps_delete_data(ctx, &k) == -ENOENT, "delete twice");
	for (i = 0; i < 8; i++) {
		char key[16];

		snprintf(key, sizeof(key), "batch%d", i);
		kv(&keys[i], &vals[i], key, "v");
	}
	n = 8;
	CHECK(!xps_put_data_batch(ctx, keys, vals, &n) && n == 8, "put batch %u", n);
	n = 8;
	CHECK(xps_put_data_batch(ctx, keys, vals, &n) == -EEXIST && n == 0,
	      "put batch of existing keys stops at the first: %u", n);
	n = 8;
	CHECK(!xps_update_data_batch(ctx, keys, vals, &n) && n == 8, "update batch");
	n = 4;
	CHECK(!xps_delete_data_batch(ctx, keys, &n) && n == 4, "delete batch");
	CHECK(xps_get_data(ctx, &keys[0], &got) == -ENOENT &&
	      !xps_get_data(ctx, &keys[5], &got), "batch delete removed 4 of 8");

	printf("statistics\n");
	CHECK(!xps_get_stats(ctx, &keys[5], &count) && count == 0,
	      "never looked up: %llu", (unsigned long long)count);
	CHECK(xps_get_allstats(ctx, count_keys, &nkeys) == 0 && nkeys == 0,
	      "no key looked up yet: %d", nkeys);
	CHECK(!xps_context__stats(ctx, &st) && st.runs == 0, "no run yet");

	printf("update_context keeps the data map\n");
	CHECK(!xps_update_context(ctx, obj_kv), "update: %s", last_warn);
	CHECK(!xps_get_data(ctx, &keys[5], &got), "data kept across update");
	CHECK(xps_update_context(ctx, "/nonexistent.bpf.o") < 0, "bad object refused");
	CHECK(!xps_get_data(ctx, &keys[5], &got), "context intact after a failed update");

	printf("composability\n");
	comp = xps_create_compcontext(usock, 0, 2);
	CHECK(comp, "create_compcontext: %s", last_warn);
	if (comp) {
		sub = xps_create_subcontext(comp, obj_echo, "ec");
		CHECK(sub, "create_subcontext: %s", last_warn);
		dup = xps_create_subcontext(comp, obj_upper, "ec");
		CHECK(!dup && errno == EEXIST, "second sub-context for one value");
		CHECK(xps_create_compcontext(usock, 0, 9) == NULL && errno == EINVAL,
		      "length 9 refused");
		if (sub) {
			CHECK(!xps_context__info(sub, &info) &&
			      (info.flags & XPS_SLOT_SUB), "sub-context flags");
			xps_context__close(sub);
		}
		CHECK(!xps_delete_context(comp), "delete comp context");
	}

	printf("delete_context\n");
	CHECK(!xps_delete_context(ctx), "delete");
	ctx = xps_context__open("kv-17250");
	CHECK(!ctx && errno == ENOENT, "gone after delete");
	CHECK(access(XPS_PIN_ROOT, F_OK) != 0, "no state left in " XPS_PIN_ROOT);

	close(sock);
	close(usock);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
