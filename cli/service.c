// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xpsctl service: one command per accelerated server.
 *
 *   xpsctl service KIND --port N [OPTIONS]
 *   xpsctl service stop NAME
 *   xpsctl service list
 *   xpsctl service help [KIND]
 *
 * A service is a context plus, where its cache must follow the server, a
 * daemon (supervise.h).  The kinds are the table svc_kinds[] (service.h):
 * options, usage, list and stop work from it.  Every context a service
 * creates is labelled (libxps's xps_context_opts.label) with its kind, so
 * that "service list" need not guess.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>

#include "cmd.h"
#include "out.h"
#include "service.h"
#include "supervise.h"

/* In this order: "xpsctl service r" is redis, as the prefix rules say. */
static const struct svc_kind *const svc_kinds[] = {
	&svc_redis,
	&svc_redis_cluster,
	&svc_memcached,
	&svc_http,
	&svc_nats,
	NULL,
};

#define USAGE_WIDTH 76
/* where an option's help starts, unless its name is longer */
#define OPT_HELP_COL 22
/* a space the usage is not wrapped at: one option's name and value */
#define NBSP '\x1f'

static const struct svc_kind *kind_by_name(const char *name)
{
	const struct svc_kind *const *k;

	for (k = svc_kinds; *k; k++)
		if (!strcmp((*k)->name, name))
			return *k;
	return NULL;
}

/* ---- the kinds' files --------------------------------------------------- */

/* Directory of this executable: handler objects and daemons sit beside it
 * in the build tree (.output/) and under PREFIX when installed. */
static const char *self_dir(void)
{
	static char dir[PATH_MAX];
	char *slash;
	ssize_t n;

	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return ".";
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return dir;
}

/*
 * A handler object by name: $XPS_BPF_DIR, the build tree, PREFIX/lib/xps/bpf
 * (lib: the objects are built for this architecture's kernel).
 */
static int find_object(const char *name, char *out, size_t sz)
{
	const char *env = getenv("XPS_BPF_DIR");
	const char *cands[3];
	char b1[PATH_MAX], b2[PATH_MAX];
	int i;

	snprintf(b1, sizeof(b1), "%s/bpf", self_dir());
	snprintf(b2, sizeof(b2), "%s/../lib/xps/bpf", self_dir());
	cands[0] = env;
	cands[1] = b1;
	cands[2] = b2;
	for (i = 0; i < 3; i++) {
		if (!cands[i])
			continue;
		snprintf(out, sz, "%s/%s.bpf.o", cands[i], name);
		if (!access(out, R_OK))
			return 0;
	}
	p_err("cannot find %s.bpf.o (set XPS_BPF_DIR)", name);
	return -1;
}

static int find_daemon(const char *name, char *out, size_t sz)
{
	snprintf(out, sz, "%s/%s", self_dir(), name);
	if (!access(out, X_OK))
		return 0;
	snprintf(out, sz, "%s/../sbin/%s", self_dir(), name);
	if (!access(out, X_OK))
		return 0;
	p_err("cannot find the %s daemon next to xpsctl", name);
	return -1;
}

/* ---- what the kinds share ------------------------------------------------- */

void svc_ctx_opts(const struct svc_setup *s, struct xps_context_opts *opts,
		  char *label, size_t label_sz, const char *name,
		  const char *share, bool main)
{
	if (main)
		snprintf(label, label_sz, SVC_LABEL_PREFIX "%s", s->kind->name);
	else
		snprintf(label, label_sz, SVC_LABEL_PREFIX "%s:%s",
			 s->kind->name, s->name);
	{
		DECLARE_XPS_OPTS(xps_context_opts, o, .name = name,
				 .share = share, .label = label);

		*opts = o;
	}
}

struct xps_context *svc_attach(const struct svc_setup *s, __u8 proto,
			       __u32 port, const char *name, const char *share,
			       bool main)
{
	struct xps_predicate p = { .proto = proto, .lport = port };
	struct xps_context_opts opts;
	char label[XPS_LABEL_LEN];
	struct xps_context *ctx;

	svc_ctx_opts(s, &opts, label, sizeof(label), name, share, main);
	ctx = xps_context__create_pred(s->obj, &p, &opts);
	if (!ctx)
		lib_err("service", -errno);
	return ctx;
}

void svc_print(const struct svc_kind *k, const char *shown, const char *name,
	       const char *owner, __u32 port, pid_t pid)
{
	char log[PATH_MAX], state[512];

	if (!owner)
		owner = name;
	if (k->health)
		k->health(owner, pid, state, sizeof(state));
	else if (k->daemon)
		supervise_state(owner, pid, state, sizeof(state));
	else
		snprintf(state, sizeof(state), "running");
	out_begin_object(NULL);
	out_str("name", name);
	out_str("service", shown ? shown : k->name);
	out_u64("port", port);
	out_str("state", state);
	out_u64("daemon_pid", pid > 0 ? pid : 0);
	if (pid > 0) {
		supervise_path(log, sizeof(log), owner, "log");
		out_str("log", log);
	}
	out_end_object();
}

/* The label of context @name: "" when it has none. */
static int ctx_label(const char *name, char *buf, size_t sz)
{
	struct xps_context *ctx = xps_context__open(name);
	int err;

	buf[0] = '\0';
	if (!ctx)
		return -errno;
	err = xps_context__label(ctx, buf, sz);
	xps_context__close(ctx);
	return err;
}

/*
 * "svc:KIND" or "svc:KIND:OWNER" into @kind and @owner ("" for a main
 * context); -1 for a label that is not a service's.
 */
static int parse_label(const char *label, char *kind, size_t ksz,
		       char *owner, size_t osz)
{
	const char *k, *colon;

	if (strncmp(label, SVC_LABEL_PREFIX, strlen(SVC_LABEL_PREFIX)))
		return -1;
	k = label + strlen(SVC_LABEL_PREFIX);
	colon = strchr(k, ':');
	snprintf(kind, ksz, "%.*s", colon ? (int)(colon - k) : (int)strlen(k), k);
	snprintf(owner, osz, "%s", colon ? colon + 1 : "");
	return kind[0] ? 0 : -1;
}

struct owned {
	const char *owner;
	char names[XPS_MAX_SLOTS][XPS_NAME_LEN];
	int n;
};

static int collect_owned(const struct xps_ctx_info *info, __u32 slot,
			 void *data)
{
	char label[XPS_LABEL_LEN], kind[XPS_LABEL_LEN], owner[XPS_LABEL_LEN];
	struct owned *o = data;

	(void)slot;
	if (info->flags & XPS_SLOT_SUB)	/* they go with their parent */
		return 0;
	if (ctx_label(info->name, label, sizeof(label)) ||
	    parse_label(label, kind, sizeof(kind), owner, sizeof(owner)) ||
	    strcmp(owner, o->owner) || o->n == XPS_MAX_SLOTS)
		return 0;
	snprintf(o->names[o->n++], XPS_NAME_LEN, "%s", info->name);
	return 0;
}

static int delete_ctx(const char *name)
{
	struct xps_context *ctx = open_ctx(name);

	if (!ctx)
		return 1;
	if (xps_context__delete(ctx))
		return lib_err("service stop", -errno);
	return 0;
}

int svc_remove(const char *name)
{
	struct owned *o;
	int i, err;

	err = delete_ctx(name);
	if (err)
		return err;
	o = calloc(1, sizeof(*o));
	if (!o) {
		p_err("out of memory");
		return 1;
	}
	o->owner = name;
	xps_context__for_each(collect_owned, o);
	for (i = 0; i < o->n && !err; i++)
		err = delete_ctx(o->names[i]);
	free(o);
	return err;
}

/* ---- options ------------------------------------------------------------- */

static int parse_opts(const struct svc_kind *k, int argc, char **argv,
		      void *args)
{
	const struct svc_opt *o;
	struct svc_list *list;
	const char *v;

	while (argc > 0) {
		for (o = k->opts; o->name; o++)
			if (!strcmp(argv[0], o->name) ||
			    (o->alias && !strcmp(argv[0], o->alias)))
				break;
		if (!o->name) {
			p_err("unknown option '%s'", argv[0]);
			return -1;
		}
		if (o->type == SVC_OPT_FLAG) {
			*(bool *)((char *)args + o->off) = true;
			argc--;
			argv++;
			continue;
		}
		if (next_arg(&argc, &argv, o->name, &v))
			return -1;
		switch (o->type) {
		case SVC_OPT_U32:
			if (parse_u32(v, o->name, o->max,
				      (__u32 *)((char *)args + o->off)))
				return -1;
			break;
		case SVC_OPT_STR:
			*(const char **)((char *)args + o->off) = v;
			break;
		case SVC_OPT_LIST:
			list = (struct svc_list *)((char *)args + o->off);
			if (list->n == SVC_LIST_MAX) {
				p_err("%s: at most %d", o->name, SVC_LIST_MAX);
				return -1;
			}
			list->v[list->n++] = v;
			break;
		case SVC_OPT_FLAG:
			break;
		}
	}
	/* a required option is a number: 0 is "not given" (a port) */
	for (o = k->opts; o->name; o++)
		if (o->required && o->type == SVC_OPT_U32 &&
		    !*(__u32 *)((char *)args + o->off)) {
			p_err("%s is required", o->name);
			return -1;
		}
	return 0;
}

/* xpsctl service KIND ...: set up the contexts, then start the daemon. */
static int start_service(const struct svc_kind *k, int argc, char **argv)
{
	struct svc_setup *s;
	const struct svc_args *common;
	void *args;
	pid_t pid = 0;
	int ret = 1;

	s = calloc(1, sizeof(*s));
	args = calloc(1, k->args_size);
	if (!s || !args) {
		p_err("out of memory");
		goto out;
	}
	if (parse_opts(k, argc, argv, args))
		goto out;
	common = args;
	s->kind = k;
	s->args = args;
	snprintf(s->name, sizeof(s->name), "%s",
		 common->name ? common->name : k->name);
	if (find_object(k->handler, s->obj, sizeof(s->obj)) ||
	    (k->daemon && find_daemon(k->daemon, s->daemon, sizeof(s->daemon))))
		goto out;
	if (k->setup(s))
		goto out;
	if (k->daemon) {
		pid = supervise_start(s->name, s->argv);
		if (pid <= 0) {
			p_err("cannot start %s", k->daemon);
			if (k->teardown)
				k->teardown(s->name);
			else
				svc_remove(s->name);
			goto out;
		}
	}
	if (k->report)
		k->report(s, pid);
	else
		svc_print(k, NULL, s->name, NULL, s->port, pid);
	ret = 0;
out:
	free(args);
	free(s);
	return ret;
}

/* ---- stop ------------------------------------------------------------------ */

/*
 * The contexts of old services carry no label: the companions they may
 * have had (memcached's NAME-udp) are known by name only.
 */
static int stop_unlabelled(const char *name)
{
	char uname[XPS_NAME_LEN];
	struct xps_context *u;

	if (delete_ctx(name))
		return 1;
	snprintf(uname, sizeof(uname), "%.27s-udp", name);
	u = xps_context__open(uname);
	if (!u)
		return 0;
	xps_context__close(u);
	return delete_ctx(uname);
}

static int do_stop(int argc, char **argv)
{
	char label[XPS_LABEL_LEN], kind[XPS_LABEL_LEN], owner[XPS_LABEL_LEN];
	const struct svc_kind *k = NULL;
	int err;

	if (argc != 1) {
		p_err("usage: xpsctl service stop NAME");
		return 1;
	}
	if (!ctx_label(argv[0], label, sizeof(label)) &&
	    !parse_label(label, kind, sizeof(kind), owner, sizeof(owner)))
		k = kind_by_name(kind);
	supervise_stop(argv[0]);
	if (!k)
		err = stop_unlabelled(argv[0]);
	else if (k->teardown)
		err = k->teardown(argv[0]);
	else
		err = svc_remove(argv[0]);
	if (err)
		return 1;
	out_begin_object(NULL);
	out_str("stopped", argv[0]);
	out_end_object();
	return 0;
}

/* ---- list ------------------------------------------------------------------ */

/*
 * A context without a label: made by an xpsctl from before services were
 * labelled (or by another program through libxps).  Its kind is guessed
 * as those versions did, from its handler's file name and, for the
 * contexts a service adds beside its own, from the suffix of their names.
 */
static void list_guessed(const struct xps_ctx_info *info)
{
	const char *base = strrchr(info->obj_path, '/');
	const struct svc_kind *const *kp, *k = NULL;
	char stem[XPS_OBJ_PATH_LEN];

	snprintf(stem, sizeof(stem), "%s", base ? base + 1 : info->obj_path);
	if (strchr(stem, '.'))
		*strchr(stem, '.') = '\0';
	for (kp = svc_kinds; *kp; kp++)
		if (!strcmp((*kp)->handler, stem))
			k = *kp;
	if (!k)
		return;
	if (!k->list_unlabelled || !k->list_unlabelled(k, info))
		svc_print(k, NULL, info->name, NULL, info->pred.lport,
			  supervise_pid(info->name));
}

static int list_one(const struct xps_ctx_info *info, __u32 slot, void *data)
{
	char label[XPS_LABEL_LEN], kind[XPS_LABEL_LEN], owner[XPS_LABEL_LEN];
	char shown[XPS_LABEL_LEN + 8];
	const struct svc_kind *k;

	(void)slot;
	(void)data;
	if (ctx_label(info->name, label, sizeof(label)))
		return 0;	/* gone since the walk began */
	if (!label[0]) {
		list_guessed(info);
		return 0;
	}
	/* another program's, or part of a service listed by its parent */
	if (parse_label(label, kind, sizeof(kind), owner, sizeof(owner)) ||
	    (info->flags & XPS_SLOT_SUB))
		return 0;
	k = kind_by_name(kind);
	if (!k) {
		p_err("context '%s' is of a service kind this xpsctl does not know: '%s'",
		      info->name, kind);
		return 0;
	}
	if (!owner[0]) {
		svc_print(k, NULL, info->name, NULL, info->pred.lport,
			  supervise_pid(info->name));
		return 0;
	}
	/* a context beside the service's own, on another protocol */
	snprintf(shown, sizeof(shown), "%s-%s", k->name,
		 proto_name(info->pred.proto));
	svc_print(k, shown, info->name, owner, info->pred.lport,
		  supervise_pid(owner));
	return 0;
}

static int do_list(int argc, char **argv)
{
	int err;

	(void)argv;
	if (argc) {
		p_err("service list takes no arguments");
		return 1;
	}
	out_begin_array(NULL);
	err = xps_context__for_each(list_one, NULL);
	out_end_array();
	return err < 0 ? lib_err("service list", err) : 0;
}

/* ---- usage, from the table ------------------------------------------------ */

/*
 * @text, wrapped at USAGE_WIDTH (never at NBSP); the first line continues
 * a line at column @col, the others start at @indent.
 */
static void print_wrapped(const char *text, int col, int indent)
{
	const char *w = text, *e;
	bool first = true;
	int len;

	while (*w) {
		e = strchr(w, ' ');
		len = e ? (int)(e - w) : (int)strlen(w);
		if (!first && col + 1 + len > USAGE_WIDTH) {
			printf("\n%*s", indent, "");
			col = indent;
		} else if (!first) {
			putchar(' ');
			col++;
		}
		for (e = w; e < w + len; e++)
			putchar(*e == NBSP ? ' ' : *e);
		col += len;
		first = false;
		w += len;
		while (*w == ' ')
			w++;
	}
	putchar('\n');
}

static void kind_usage(const struct svc_kind *k)
{
	char synopsis[1024], opt[128];
	const struct svc_opt *o;
	int width = (int)strlen("  -h, --help"), indent, n = 0;
	const char *line, *nl;

	n = snprintf(synopsis, sizeof(synopsis), "Usage: xpsctl service %s",
		     k->name);
	indent = n + 1;
	for (o = k->opts; o->name; o++) {
		snprintf(opt, sizeof(opt), "%s%s%s%s%s%s",
			 o->required ? "" : "[", o->name, o->arg ? "\x1f" : "",
			 o->arg ? o->arg : "", o->required ? "" : "]",
			 o->type == SVC_OPT_LIST ? "..." : "");
		n += snprintf(synopsis + n, sizeof(synopsis) - n, " %s", opt);
		snprintf(opt, sizeof(opt), "  %s%s%s", o->name,
			 o->arg ? " " : "", o->arg ? o->arg : "");
		if ((int)strlen(opt) > width)
			width = strlen(opt);
	}
	print_wrapped(synopsis, 0, indent);
	printf("\n%s\nOptions:\n", k->description);
	width = width + 2 > OPT_HELP_COL ? width + 2 : OPT_HELP_COL;
	for (o = k->opts; o->name; o++) {
		n = printf("  %s%s%s", o->name, o->arg ? " " : "",
			   o->arg ? o->arg : "");
		printf("%*s", width - n, "");
		print_wrapped(o->help, width, width);
	}
	printf("  -h, --help%*s", width - 12, "");
	print_wrapped("this text", width, width);
	if (k->notes)
		printf("\n%s", k->notes);
	printf("\nExample:\n");
	for (line = k->example; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			nl = line + strlen(line) - 1;
		printf("  %.*s\n", (int)(nl - line), line);
	}
}

static void overview(void)
{
	const struct svc_kind *const *k;

	printf("Usage: xpsctl service KIND --port N [OPTIONS]\n"
	       "       xpsctl service stop NAME\n"
	       "       xpsctl service list\n"
	       "       xpsctl service help [KIND]\n"
	       "\n"
	       "Accelerate an unmodified server: a context running KIND's handler on the\n"
	       "server's port plus, where the handler's cache must follow the server, a\n"
	       "daemon (its pid, log and state in " SUPERVISE_RUN_DIR "/NAME.{pid,log,state}).\n"
	       "\n"
	       "Kinds:\n");
	for (k = svc_kinds; *k; k++) {
		printf("  %-13s  ", (*k)->name);
		print_wrapped((*k)->summary, 17, 17);
	}
	printf("\n"
	       "Commands:\n"
	       "  stop NAME      stop the daemon, remove the service's contexts\n"
	       "  list           the services and their state\n"
	       "\n"
	       "Examples:\n"
	       "  xpsctl service redis --port 6379\n"
	       "  xpsctl service list\n"
	       "  xpsctl service stop redis\n"
	       "\n"
	       "'xpsctl service KIND --help' shows KIND's options; see also xpsctl(8).\n");
}

static const char stop_usage[] =
"Usage: xpsctl service stop NAME\n"
"\n"
"Stop the service's daemon (SIGTERM, SIGKILL after 5 s) and remove its\n"
"contexts: NAME, its sub-contexts and the ones it made beside NAME\n"
"(memcached's NAME-udp).\n"
"\n"
"Example:\n"
"  xpsctl service stop redis\n";

static const char list_usage[] =
"Usage: xpsctl service list\n"
"\n"
"The services: name, kind (as the service was started, stored with its\n"
"contexts), port, daemon pid, log and state:\n"
"  running              the kernel answers\n"
"  degraded: WHY        the daemon keeps the handler out, for instance while\n"
"                       connections older than the service exist\n"
"  restarting: WHY      the daemon lost the server and reconnects, backing\n"
"                       off; everything cached before is invalidated\n"
"  dead                 the daemon is gone and the handler answers nothing:\n"
"                       stop and start the service\n"
"Contexts made with 'xpsctl handler' are not services and are not listed.\n"
"\n"
"Example:\n"
"  xpsctl -p service list     (-j, -p: JSON)\n";

static int do_help(int argc, char **argv);

/* The commands; the kinds come first in the dispatch order (find()). */
static const struct cmd svc_cmds[] = {
	{ "stop", do_stop, 0 },
	{ "list", do_list, 0 },
	{ "help", do_help, 0 },
	{ NULL, NULL, 0 },
};

/* What @arg names by dispatch()'s rules, over the kinds then svc_cmds[]. */
static void find(const char *arg, const struct svc_kind **kind,
		 const struct cmd **cmd)
{
	const struct svc_kind *const *k;
	const struct cmd *c;
	int exact;

	*kind = NULL;
	*cmd = NULL;
	for (exact = 1; exact >= 0; exact--) {
		for (k = svc_kinds; *k; k++)
			if (exact ? !strcmp(arg, (*k)->name) :
				    is_prefix(arg, (*k)->name)) {
				*kind = *k;
				return;
			}
		for (c = svc_cmds; c->name; c++)
			if (exact ? !strcmp(arg, c->name) :
				    is_prefix(arg, c->name)) {
				*cmd = c;
				return;
			}
	}
}

/* The usage of what @arg names; 1 and nothing printed if nothing. */
static int usage_of(const char *arg)
{
	const struct svc_kind *k;
	const struct cmd *c;

	if (out_format == OUT_JSON) {
		p_err("help is not available in JSON mode");
		return 1;
	}
	find(arg, &k, &c);
	if (k)
		kind_usage(k);
	else if (c && c->fn == do_stop)
		fputs(stop_usage, stdout);
	else if (c && c->fn == do_list)
		fputs(list_usage, stdout);
	else if (c)
		overview();
	else {
		p_err("service help: unknown command '%s' (try 'xpsctl service help')",
		      arg);
		return 1;
	}
	return 0;
}

static int do_help(int argc, char **argv)
{
	if (argc > 1) {
		p_err("usage: xpsctl service help [KIND]");
		return 1;
	}
	return usage_of(argc ? argv[0] : "help");
}

/* "-h" or "--help" anywhere: the usage instead of the command */
static bool wants_help(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

int do_service(int argc, char **argv)
{
	const struct svc_kind *k;
	const struct cmd *c;

	if (argc < 1)
		return do_help(0, NULL);
	find(argv[0], &k, &c);
	if (!k && !c) {
		p_err("service: unknown command '%s' (try 'xpsctl service help')",
		      argv[0]);
		return 1;
	}
	/* "xpsctl service KIND ... --help": KIND's usage, nothing done */
	if (wants_help(argc - 1, argv + 1))
		return usage_of(argv[0]);
	if (k)
		return start_service(k, argc - 1, argv + 1);
	return c->fn(argc - 1, argv + 1);
}
