// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xpsctl stats: show, keys, watch, reset. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <xps/kvcache.h>

#include "cmd.h"
#include "codec.h"
#include "out.h"

struct show_args {
	const char *only;	/* one context, or NULL for all */
	int found;
	int err;
};

/* What -o prometheus makes of the counters (avg_ns it leaves to a query). */
#define VERDICT_METRIC(v) {						\
	.name = "xps_handler_verdicts_total", .type = "counter",	\
	.help = "Handler runs by their verdict: tx (answered from the kernel), " \
		"drop, pass (given to the service's socket) or reset; every " \
		"run has exactly one.",					\
	.label = "verdict", .label_value = v }

static const struct out_metric m_runs = {
	.name = "xps_handler_runs_total", .type = "counter",
	.help = "Messages the context's handler ran on.",
};
static const struct out_metric m_tx = VERDICT_METRIC("tx");
static const struct out_metric m_drop = VERDICT_METRIC("drop");
static const struct out_metric m_pass = VERDICT_METRIC("pass");
static const struct out_metric m_reset = VERDICT_METRIC("reset");
static const struct out_metric m_errors = {
	.name = "xps_handler_errors_total", .type = "counter",
	.help = "Handler runs where something went wrong (the message was then "
		"passed, or dropped when it could no longer be).",
};
static const struct out_metric m_run_seconds = {
	.name = "xps_handler_run_seconds_total", .type = "counter",
	.help = "Time spent in the framework and the handler, summed over runs.",
	.ns_as_seconds = true,
};

static void print_stats(const struct xps_ctx_info *info, __u32 slot)
{
	const char *base = strrchr(info->obj_path, '/');
	char handler[XPS_OBJ_PATH_LEN];
	struct xps_handler_stats st;
	struct xps_context *ctx;
	size_t len;

	(void)slot;
	ctx = xps_context__open(info->name);
	if (!ctx || xps_context__stats(ctx, &st))
		memset(&st, 0, sizeof(st));
	xps_context__close(ctx);
	/* the object's name: kv for .../kv.bpf.o (a comp context has none) */
	snprintf(handler, sizeof(handler), "%s", base ? base + 1 : info->obj_path);
	len = strlen(handler);
	if (len > 6 && !strcmp(handler + len - 6, ".bpf.o"))
		handler[len - 6] = '\0';
	out_begin_object(NULL);
	out_label("name", "context", info->name);
	if (handler[0])
		out_label("handler", "handler", handler);
	out_label_u64("port", "port", info->pred.lport);
	out_label("proto", "proto", proto_name(info->pred.proto));
	out_label("backend", "backend", xps_backend__name(info->backend));
	out_metric("runs", st.runs, &m_runs);
	out_metric("tx", st.tx, &m_tx);
	out_metric("drop", st.drop, &m_drop);
	out_metric("pass", st.pass, &m_pass);
	out_metric("reset", st.reset, &m_reset);
	out_metric("errors", st.errors, &m_errors);
	out_u64("avg_ns", st.runs ? st.run_ns / st.runs : 0);
	out_metric("run_ns", st.run_ns, &m_run_seconds);
	out_end_object();
}

static int show_one(const struct xps_ctx_info *info, __u32 slot, void *data)
{
	struct show_args *a = data;

	if (a->only && strcmp(a->only, info->name))
		return 0;
	a->found++;
	print_stats(info, slot);
	return 0;
}

static int show(const char *only)
{
	struct show_args a = { .only = only };
	int err;

	if (only) {
		struct xps_context *ctx = open_ctx(only);

		if (!ctx)
			return 1;
		xps_context__close(ctx);
	}
	out_begin_array(NULL);
	err = xps_context__for_each(show_one, &a);
	out_end_array();
	if (err < 0)
		return lib_err("stats", err);
	return 0;
}

static int do_show(int argc, char **argv)
{
	if (argc > 1) {
		p_err("usage: xpsctl [-o prometheus] stats show [NAME]");
		return 1;
	}
	return show(argc ? argv[0] : NULL);
}

struct key_stat {
	__u8 *key;
	__u64 count;
};

struct keys_args {
	struct key_stat *v;
	size_t n, cap;
	__u32 key_size;
};

static int collect(const void *key, __u32 key_size, __u64 count, void *data)
{
	struct keys_args *a = data;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct key_stat *v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n].key = malloc(key_size);
	if (!a->v[a->n].key)
		return -ENOMEM;
	memcpy(a->v[a->n].key, key, key_size);
	a->v[a->n].count = count;
	a->key_size = key_size;
	a->n++;
	return 0;
}

static int by_count(const void *x, const void *y)
{
	const struct key_stat *a = x, *b = y;

	return a->count < b->count ? 1 : a->count > b->count ? -1 : 0;
}

static int do_keys(int argc, char **argv)
{
	struct keys_args a = {};
	struct xps_context *ctx;
	struct codec c = {};
	const char *name, *v;
	void *kv_val = NULL;
	__u32 top = 0;
	size_t i;
	int err, ret = 0;

	if (argc < 1) {
		p_err("usage: xpsctl stats keys NAME [--top K]");
		return 1;
	}
	name = argv[0];
	argc--;
	argv++;
	while (argc > 0) {
		if (!strcmp(argv[0], "--top") || !strcmp(argv[0], "top")) {
			if (next_arg(&argc, &argv, "--top", &v) ||
			    parse_u32(v, "--top", 1u << 30, &top))
				return 1;
		} else {
			p_err("unknown option '%s'", argv[0]);
			return 1;
		}
	}
	ctx = open_ctx(name);
	if (!ctx)
		return 1;
	err = xps_context__keystats_for_each(ctx, collect, &a);
	if (err) {
		ret = lib_err("stats keys", err);
		goto out;
	}
	if (xps_context__data_fd(ctx) >= 0)
		codec_init(&c, xps_context__data_fd(ctx), 0);
	if (c.kvhash)
		kv_val = calloc(1, sizeof(struct xps_kv_value));
	qsort(a.v, a.n, sizeof(*a.v), by_count);
	out_begin_array(NULL);
	for (i = 0; i < a.n && (!top || i < top); i++) {
		char text[1024];

		if (c.kvhash && c.size == a.key_size && kv_val &&
		    !bpf_map_lookup_elem(xps_context__data_fd(ctx),
					 a.v[i].key, kv_val))
			/* kv-cache: counted by hash, named by the value */
			codec_kv_key(kv_val, text, sizeof(text));
		else if (c.size == a.key_size)
			codec_decode(&c, a.v[i].key, text, sizeof(text));
		else
			snprintf(text, sizeof(text), "?");
		out_begin_object(NULL);
		out_str("key", text);
		out_u64("count", a.v[i].count);
		out_end_object();
	}
	out_end_array();
out:
	for (i = 0; i < a.n; i++)
		free(a.v[i].key);
	free(a.v);
	free(kv_val);
	codec_free(&c);
	xps_context__close(ctx);
	return ret;
}

static volatile int stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int do_watch(int argc, char **argv)
{
	const char *only = NULL, *v;
	__u32 count = 0, i;
	struct timespec ts = { 1, 0 };

	while (argc > 0) {
		if (!strcmp(argv[0], "--count") || !strcmp(argv[0], "count")) {
			if (next_arg(&argc, &argv, "--count", &v) ||
			    parse_u32(v, "--count", 1u << 30, &count))
				return 1;
		} else if (argv[0][0] != '-' && !only) {
			only = argv[0];
			argc--;
			argv++;
		} else {
			p_err("usage: xpsctl stats watch [NAME] [--count N]");
			return 1;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (i = 0; !stop && (!count || i < count); i++) {
		if (i)
			nanosleep(&ts, NULL);
		if (stop)
			break;
		if (out_format == OUT_TEXT && isatty(STDOUT_FILENO))
			fputs("\033[H\033[2J", stdout);
		else if (out_format == OUT_TEXT && i)
			putchar('\n');
		if (show(only))
			return 1;
		fflush(stdout);
	}
	return 0;
}

static int do_reset_stats(int argc, char **argv)
{
	struct xps_context *ctx;
	int err;

	if (argc != 1) {
		p_err("usage: xpsctl stats reset NAME");
		return 1;
	}
	ctx = open_ctx(argv[0]);
	if (!ctx)
		return 1;
	err = xps_context__stats_reset(ctx);
	xps_context__close(ctx);
	if (err)
		return lib_err("stats reset", err);
	out_begin_object(NULL);
	out_str("reset", argv[0]);
	out_end_object();
	return 0;
}

static const char usage[] =
"Usage: xpsctl [-j|-p|-o prometheus] stats show [NAME]\n"
"       xpsctl stats keys NAME [--top K]\n"
"       xpsctl stats watch [NAME] [--count N]\n"
"       xpsctl stats reset NAME\n"
"\n"
"The counters of each context (or of NAME): runs, and how each run ended:\n"
"tx (answered from the kernel), drop, pass (to the server's socket) or\n"
"reset; errors (runs where something went wrong); avg_ns and run_ns (time\n"
"in the framework and the handler).\n"
"\n"
"Commands:\n"
"  show       the counters once; with -o prometheus, in the Prometheus text\n"
"             format for node-exporter's textfile collector\n"
"  keys       accesses per data-map key, most accessed first\n"
"  watch      show, once a second\n"
"  reset      zero NAME's counters and key statistics\n"
"\n"
"Options:\n"
"  --top K             keys: only the K most accessed\n"
"  --count N           watch: N times, then stop (default: until interrupted)\n"
"  -h, --help          this text\n"
"\n"
"Example:\n"
"  xpsctl -j stats show cache\n"
"  xpsctl stats keys cache --top 10\n"
"  xpsctl -o prometheus stats show > xps.prom.tmp && mv xps.prom.tmp xps.prom\n"
"\n"
"See xpsctl(8).\n";

static int do_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return print_usage(usage);
}

int do_stats(int argc, char **argv)
{
	static const struct cmd cmds[] = {
		{ "show", do_show, CMD_PROMETHEUS },
		{ "keys", do_keys, 0 },
		{ "watch", do_watch, 0 },
		{ "reset", do_reset_stats, 0 },
		{ "help", do_help, 0 },
		{ NULL, NULL, 0 },
	};

	return dispatch(cmds, argc, argv, "stats");
}
