// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What one GET costs the Redis and memcached handlers, and one blocked
 * POST the HTTP method filter; and, beside them, what a request they pass
 * costs (redis-set, mc-set: a SET of the cached key; http-get: a GET
 * nginx serves; nats-hb, nats-hbs: one heartbeat of a NATS route, and
 * two in one segment, of a group with no state yet), measured with BPF_PROG_TEST_RUN (no PMU
 * needed): the handler object is loaded on its own (no context, nothing
 * pinned), one 32-byte key is cached with a 128-byte value (POST blocked
 * with 405 for the filter), and one request segment (a GET; wrk's POST of
 * bench/post.lua) runs @repeat times through the
 * entry programs of handler_cost.bpf.c.  Printed per handler: the
 * verifier's processed instructions, ns per run with and without the
 * handler, and their difference.  In a 1-vCPU guest under QEMU
 * -icount shift=0 one ns is one instruction.
 *
 *   handler_cost [-v] [-x] [-b BACKEND] [-n REPEAT] [-r ROUNDS] [-s NAME]
 *                [BPF_DIR]
 *
 * BPF_DIR holds the handler objects (default .output/bpf); the entry
 * programs are handler_cost.bpf.o beside the tool.
 *
 * The reply is checked byte for byte: a handler that stopped answering
 * would otherwise look cheap (-x skips the check, for handlers trimmed by
 * hand to see what a part costs).  -s measures only the handler NAME
 * (redis, memcached, http, redis-set, mc-set, http-get, nats-hb,
 * nats-hbs), for a profile of one.  -b 2 only loads the handlers as the
 * stock TCP backend would (enum xps_backend), for their verifier counts.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf_serve.h>
#include <xps/abi.h>

#include <xps/kvcache.h>
#include <xps/nats.h>
#include <time.h>

#include <xps/http_filter.h>
#include "proto/http.bpf.h"

#define KEY_LEN		32
#define VALUE_LEN	128
#define REQ_MAX		512	/* struct bench_req in handler_cost.bpf.c */
#define LOG_SIZE	(1 << 20)

struct bench_req {
	__u32 len;
	__u32 pad;
	__u8 b[REQ_MAX];
};

struct loaded {
	struct bpf_object *handler, *entry;
	int full, base;		/* entry program fds */
	int data;		/* the handler's data map (-1: none, NATS) */
	unsigned long verified;	/* the verifier's processed instructions */
};

static char *vlog;
static int verbose;	/* -v: the verifier's whole log on failure */
static int unchecked;
static __u32 backend;	/* -b: only verify, for this backend (2 stock TCP) */	/* -x: any reply will do (trimmed handlers) */

static int no_pins(struct bpf_object *obj)
{
	struct bpf_map *m;
	int err;

	bpf_object__for_each_map(m, obj) {
		err = bpf_map__set_pin_path(m, NULL);
		if (err)
			return err;
	}
	return 0;
}

/* Set the handler's xps_backend knob (.rodata) before load. */
static int set_backend(struct bpf_object *obj, __u32 value)
{
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	struct bpf_map *m, *ro = NULL;
	size_t size;
	char *data;
	int id, i;

	bpf_object__for_each_map(m, obj) {
		const char *n = bpf_map__name(m);
		size_t l = strlen(n);

		/* not .rodata.str1.1 and the like */
		if (bpf_map__is_internal(m) && l >= 7 &&
		    !strcmp(n + l - 7, ".rodata"))
			ro = m;
	}
	id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
	if (!ro || id < 0)
		return -ENOENT;
	sec = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(sec);
	/* libbpf 1.1 returns it const; it is writable until load */
	data = (char *)bpf_map__initial_value(ro, &size);
	for (i = 0; data && i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *var = btf__type_by_id(btf, vs->type);

		if (!strcmp(btf__name_by_offset(btf, var->name_off), "xps_backend") &&
		    vs->offset + sizeof(value) <= size) {
			memcpy(data + vs->offset, &value, sizeof(value));
			return 0;
		}
	}
	return -ENOENT;
}

static void unload(struct loaded *l)
{
	bpf_object__close(l->entry);
	bpf_object__close(l->handler);
	memset(l, 0, sizeof(*l));
}

/* The handler's processed-instruction count, from its verifier log. */
static unsigned long processed(const char *log)
{
	const char *s = strstr(log, "processed ");

	return s ? strtoul(s + 10, NULL, 10) : 0;
}

static int load(struct loaded *l, const char *path, const char *entry_path)
{
	struct bpf_program *prog, *handler = NULL;
	struct bpf_map *m;
	__u32 zero = 0;
	int fd, err;

	memset(l, 0, sizeof(*l));
	l->handler = bpf_object__open_file(path, NULL);
	if (!l->handler)
		return -errno;
	bpf_object__for_each_program(prog, l->handler)
		if (!strcmp(bpf_program__section_name(prog), "xps"))
			handler = prog;
	if (!handler) {
		fprintf(stderr, "%s: no SEC(\"xps\") program\n", path);
		return -EINVAL;
	}
	/*
	 * xps_backend keeps its default: the native backend's paths.  Loaded
	 * as a TC program, the type that has BPF_PROG_TEST_RUN on stock
	 * kernels too (sk_skb has it only on the patched kernel); the native
	 * paths call nothing TC lacks.
	 */
	bpf_program__set_type(handler, backend == 2 ? BPF_PROG_TYPE_SK_SKB :
				       BPF_PROG_TYPE_SCHED_CLS);
	if (backend == 2)
		bpf_program__set_expected_attach_type(handler,
						      BPF_SK_SKB_STREAM_VERDICT);
	vlog[0] = 0;
	bpf_program__set_log_buf(handler, vlog, LOG_SIZE);
	bpf_program__set_log_level(handler, verbose ? 5 : 4);
	err = no_pins(l->handler);
	if (!err && backend)
		err = set_backend(l->handler, backend);
	if (!err)
		err = bpf_object__load(l->handler);
	if (err) {
		fprintf(stderr, "%s: load failed: %s\n", path, strerror(-err));
		if (verbose)
			fprintf(stderr, "%s\n", vlog + (strlen(vlog) > 6000 ?
						   strlen(vlog) - 6000 : 0));
		return err;
	}
	l->verified = processed(vlog);
	l->data = bpf_object__find_map_fd_by_name(l->handler, "xps_data");
	if (backend)
		return 0;	/* verified only: no entry programs */

	l->entry = bpf_object__open_file(entry_path, NULL);
	if (!l->entry)
		return -errno;
	m = bpf_object__find_map_by_name(l->entry, "xps_run");
	fd = bpf_object__find_map_fd_by_name(l->handler, "xps_run");
	if (!m || fd < 0)
		return -ENOENT;
	err = bpf_map__reuse_fd(m, fd);
	if (!err)
		err = bpf_object__load(l->entry);
	if (err)
		return err;
	fd = bpf_program__fd(handler);
	err = bpf_map_update_elem(bpf_object__find_map_fd_by_name(l->entry,
				  "bench_handler"), &zero, &fd, BPF_ANY);
	if (err)
		return -errno;
	l->full = bpf_program__fd(bpf_object__find_program_by_name(l->entry,
								   "bench_full"));
	l->base = bpf_program__fd(bpf_object__find_program_by_name(l->entry,
								   "bench_base"));
	return 0;
}

/* The connection record the entry names (cookie 1): counted, owing nothing. */
static int install_conn(struct loaded *l)
{
	struct xps_conn c = { .flags = XPS_CONN_EGRESS };
	__u64 cookie = 1;
	int fd = bpf_object__find_map_fd_by_name(l->handler, "xps_conns");

	if (fd < 0 || bpf_map_update_elem(fd, &cookie, &c, BPF_ANY))
		return -1;
	return 0;
}

static int set_request(struct loaded *l, const char *req, __u32 n)
{
	struct bench_req r = { .len = n };
	__u32 zero = 0;

	if (n > REQ_MAX)
		return -1;
	memcpy(r.b, req, n);
	return bpf_map_update_elem(bpf_object__find_map_fd_by_name(l->entry,
				   "bench_req"), &zero, &r, BPF_ANY);
}

/* ns per run of @prog over @repeat runs; the best of @rounds. */
static int time_prog(int prog, __u32 repeat, int rounds, int pass, char *want,
		     __u32 want_len, int date_off, double *ns)
{
	static char out[4096];
	int i;

	*ns = 0;
	for (i = 0; i < rounds; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, t,
			.data_in = "________________________________",
			.data_size_in = 32,
			.data_out = out,
			.data_size_out = sizeof(out),
			.repeat = repeat,
		);

		if (bpf_prog_test_run_opts(prog, &t)) {
			fprintf(stderr, "test run: %s\n", strerror(errno));
			return -1;
		}
		/* the Date header is the clock's: not compared */
		if (want && date_off >= 0 && t.data_size_out == want_len)
			memcpy(want + date_off, out + date_off,
			       XPS_HTTP_DATE_LEN);
		if (want && !unchecked && (t.retval != XPS_TX || t.data_size_out != want_len ||
			     memcmp(out, want, want_len))) {
			fprintf(stderr, "wrong answer: verdict %u, %u bytes: %.*s\n",
				t.retval, t.data_size_out,
				(int)t.data_size_out, out);
			return -1;
		}
		if (pass && !unchecked && t.retval != XPS_PASS) {
			fprintf(stderr, "wrong answer: verdict %u, not a pass\n",
				t.retval);
			return -1;
		}
		if (!i || t.duration < *ns)
			*ns = t.duration;
	}
	return 0;
}

static void fill_bytes(char *b, __u32 n, char c)
{
	__u32 i;

	for (i = 0; i < n; i++)
		b[i] = c + i % 26;
}

/* ---- the cache both handlers share (include/xps/kvcache.h) ------- */

static int kv_fill(struct loaded *l, const char *key, const char *val)
{
	int data = l->data;
	static struct xps_kv_value v;
	struct xps_kv_hkey h;

	memset(&v, 0, sizeof(v));
	if (xps_kv_key_set(&v.key, key, KEY_LEN))
		return -1;
	v.len = VALUE_LEN;
	memcpy(v.v, val, VALUE_LEN);
	xps_kv_value_seal(&v);
	h = xps_kv_hkey_of(&v.key);
	return bpf_map_update_elem(data, &h, &v, BPF_ANY);
}

/* --------------------------------------------------------------------- */

struct service {
	const char *name;
	const char *obj;
	int (*fill)(struct loaded *l, const char *key, const char *val);
	int (*request)(char *b, const char *key);
	/* the reply; NULL: the handler passes the request (XPS_PASS) */
	int (*reply)(char *b, const char *key, const char *val);
	int date_off;		/* reply bytes of a Date header, or -1 */
};

static int redis_request(char *b, const char *key)
{
	return sprintf(b, "*2\r\n$3\r\nGET\r\n$%d\r\n%.*s\r\n", KEY_LEN,
		       KEY_LEN, key);
}

static int redis_reply(char *b, const char *key, const char *val)
{
	return sprintf(b, "$%d\r\n%.*s\r\n", VALUE_LEN, VALUE_LEN, val);
}

/*
 * A SET of the cached key: passed to Redis after the handler counted it,
 * bumped the key's version and, the first time, made a write-through
 * record (later runs find that record pending and make none).
 */
static int redis_set_request(char *b, const char *key)
{
	return sprintf(b, "*3\r\n$3\r\nSET\r\n$%d\r\n%.*s\r\n$%d\r\n%0*d\r\n",
		       KEY_LEN, KEY_LEN, key, VALUE_LEN, VALUE_LEN, 7);
}

static int mc_set_request(char *b, const char *key)
{
	return sprintf(b, "set %.*s 0 0 %d\r\n%0*d\r\n", KEY_LEN, key,
		       VALUE_LEN, VALUE_LEN, 7);
}

static int mc_request(char *b, const char *key)
{
	return sprintf(b, "get %.*s\r\n", KEY_LEN, key);
}

static int mc_reply(char *b, const char *key, const char *val)
{
	return sprintf(b, "VALUE %.*s 0 %d\r\n%.*s\r\nEND\r\n", KEY_LEN, key,
		       VALUE_LEN, VALUE_LEN, val);
}

/* ---- the HTTP method filter: POST blocked with nginx's 405 -------- */

#define HTTP_SERVER	"nginx/1.22.1"

static int http_fill(struct loaded *l, const char *key, const char *val)
{
	struct http_method_key k = { .m = "POST" };
	struct http_action a = { .status = 405 };
	struct http_state st = { .server_len = sizeof(HTTP_SERVER) - 1 };
	struct timespec tai, utc;
	__u32 zero = 0;
	int fd = bpf_object__find_map_fd_by_name(l->handler, "xps_state");

	memcpy(st.server, HTTP_SERVER, sizeof(HTTP_SERVER) - 1);
	clock_gettime(CLOCK_TAI, &tai);
	clock_gettime(CLOCK_REALTIME, &utc);
	st.tai_minus_utc_ns = (tai.tv_sec - utc.tv_sec) * 1000000000ll +
			      (tai.tv_nsec - utc.tv_nsec);
	if (fd < 0 || bpf_map_update_elem(fd, &zero, &st, BPF_ANY))
		return -1;
	return bpf_map_update_elem(l->data, &k, &a, BPF_ANY);
}

/* What wrk sends for bench/post.lua: 90 bytes of head, 256 of body. */
static int http_request(char *b, const char *key)
{
	int n = sprintf(b, "POST / HTTP/1.1\r\nHost: 10.0.2.15:17720\r\n"
			"Content-Type: text/plain\r\nContent-Length: 256\r\n\r\n");

	memset(b + n, 'x', 256);
	return n + 256;
}

/* A GET nginx serves: the filter passes it. */
static int http_get_request(char *b, const char *key)
{
	return sprintf(b, "GET / HTTP/1.1\r\nHost: 10.0.2.15:17720\r\n"
		       "User-Agent: wrk\r\n\r\n");
}

static int http_reply(char *b, const char *key, const char *val)
{
	static __u8 out[XPS_SCRATCH];
	__u8 server[64] = HTTP_SERVER, date[XPS_HTTP_DATE_LEN];
	__u32 n;

	xps_http_fmt_date(date, time(NULL));
	n = xps_http_encode_error(out, 405, server, sizeof(HTTP_SERVER) - 1,
				  date, 1, 0);
	memcpy(b, out, n);
	return n;
}

/* ---- NATS routes: heartbeats the handler passes (no state learned) -- */

#define NATS_HB_LINE	"RMSG $SYS $NRG.AE.C-R3M-Ad8kXbFk $NRG.R.5vYhzqHk 42\r\n"

static int nats_fill(struct loaded *l, const char *key, const char *val)
{
	struct xps_nats_conn c = {};
	__u64 cookie = 1;
	int fd = bpf_object__find_map_fd_by_name(l->handler, "xps_nats_conns");

	return fd < 0 ? -1 : bpf_map_update_elem(fd, &cookie, &c, BPF_ANY);
}

/* One heartbeat: 42 bytes, leader id, term 3, commit 0, pterm 3, pindex 9. */
static int nats_hb(char *b)
{
	static const __u8 ae[XPS_NATS_AE_LEN] = {
		'l', 'e', 'a', 'd', 'e', 'r', '0', '1', 3, [24] = 3, [32] = 9,
	};
	int n = sprintf(b, NATS_HB_LINE);

	memcpy(b + n, ae, sizeof(ae));
	memcpy(b + n + sizeof(ae), "\r\n", 2);
	return n + sizeof(ae) + 2;
}

static int nats_hb_request(char *b, const char *key)
{
	return nats_hb(b);
}

/* Two heartbeats in one segment: the walk frames both. */
static int nats_hbs_request(char *b, const char *key)
{
	int n = nats_hb(b);

	return n + nats_hb(b + n);
}

static const struct service services[] = {
	{ "redis", "redis.bpf.o", kv_fill, redis_request, redis_reply, -1 },
	{ "memcached", "memcached.bpf.o", kv_fill, mc_request, mc_reply, -1 },
	/* "HTTP/1.1 405 Not Allowed\r\nServer: nginx/1.22.1\r\nDate: " */
	{ "http", "http_filter.bpf.o", http_fill, http_request, http_reply,
	  26 + 8 + sizeof(HTTP_SERVER) - 1 + 8 },
	/* requests the handlers pass: what a request XPS does not answer costs */
	{ "redis-set", "redis.bpf.o", kv_fill, redis_set_request, NULL, -1 },
	{ "mc-set", "memcached.bpf.o", kv_fill, mc_set_request, NULL, -1 },
	{ "http-get", "http_filter.bpf.o", http_fill, http_get_request, NULL,
	  -1 },
	{ "nats-hb", "nats.bpf.o", nats_fill, nats_hb_request, NULL, -1 },
	{ "nats-hbs", "nats.bpf.o", nats_fill, nats_hbs_request, NULL, -1 },
};

static int measure(const struct service *s, const char *dir,
		   const char *entry, __u32 repeat, int rounds)
{
	char path[512], key[KEY_LEN], val[VALUE_LEN], req[REQ_MAX], want[1024];
	struct loaded l;
	double full, base;
	int n, w, err;

	snprintf(path, sizeof(path), "%s/%s", dir, s->obj);
	fill_bytes(key, KEY_LEN, 'a');
	fill_bytes(val, VALUE_LEN, 'A');
	n = s->request(req, key);
	w = s->reply ? s->reply(want, key, val) : 0;
	err = load(&l, path, entry);
	if (!err && backend) {
		printf("%-10s verifier %6lu insns (backend %u: verified only)\n",
		       s->name, l.verified, backend);
		unload(&l);
		return 0;
	}
	if (!err && (install_conn(&l) || s->fill(&l, key, val) ||
		     set_request(&l, req, n)))
		err = -errno ? -errno : -EIO;
	if (!err && (time_prog(l.full, repeat, rounds, !s->reply,
			       s->reply ? want : NULL, w, s->date_off, &full) ||
		     time_prog(l.base, repeat, rounds, 0, NULL, 0, -1, &base)))
		err = -EIO;
	if (!err)
		printf("%-10s verifier %6lu insns   full %8.1f ns   entry %7.1f ns   handler %8.1f ns per request\n",
		       s->name, l.verified, full, base, full - base);
	else
		fprintf(stderr, "%s: %s\n", s->name, strerror(-err));
	unload(&l);
	return err;
}

int main(int argc, char **argv)
{
	const char *dir = ".output/bpf", *only = NULL;
	char entry[4096], *slash;
	__u32 repeat = 1000000;
	int rounds = 3, opt, err = 0;
	ssize_t n;
	size_t i;

	while ((opt = getopt(argc, argv, "b:n:r:s:vx")) != -1) {
		switch (opt) {
		case 'n':
			repeat = strtoul(optarg, NULL, 0);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'v':
			verbose = 1;
			break;
		case 'b':
			backend = strtoul(optarg, NULL, 0);
			break;
		case 'x':
			unchecked = 1;
			break;
		case 's':
			only = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind > 1 || !repeat || rounds < 1)
		goto usage;
	if (optind < argc)
		dir = argv[optind];
	/* the entry object lives beside the tool */
	n = readlink("/proc/self/exe", entry, sizeof(entry) - 32);
	if (n <= 0)
		return 1;
	entry[n] = 0;
	slash = strrchr(entry, '/');
	strcpy(slash ? slash + 1 : entry, "handler_cost.bpf.o");
	vlog = calloc(1, LOG_SIZE);
	if (!vlog)
		return 1;
	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	printf("%u runs, best of %d rounds\n", repeat, rounds);
	for (i = 0; i < sizeof(services) / sizeof(services[0]); i++) {
		if (only && strcmp(only, services[i].name))
			continue;
		if (measure(&services[i], dir, entry, repeat, rounds))
			err = 1;
		if (only)
			break;
	}
	if (only && i == sizeof(services) / sizeof(services[0])) {
		fprintf(stderr, "%s: no handler '%s' (redis, memcached, http, redis-set, mc-set, http-get, nats-hb, nats-hbs)\n",
			argv[0], only);
		err = 2;
	}
	free(vlog);
	return err;
usage:
	fprintf(stderr, "usage: %s [-v] [-x] [-b BACKEND] [-n REPEAT] [-r ROUNDS] [-s NAME] [BPF_DIR]\n",
		argv[0]);
	return 2;
}
