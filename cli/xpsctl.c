// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xpsctl: inspect and control XPS.
 *
 *   xpsctl [OPTIONS] OBJECT COMMAND [ARGS]
 *
 * Grammar as bpftool's: objects and commands match by prefix
 * ("xpsctl h l" is "xpsctl handler list"), -j/-p print JSON, and in JSON
 * mode every error is {"error": "..."} with a non-zero exit status.
 * -o prometheus is for the commands whose table entry says CMD_PROMETHEUS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "libxps.h"
#include "out.h"
#include "cmd.h"
#include "supervise.h"

static char last_lib_error[512];

/* libxps messages: warnings become the error text of a failed command */
static int print_hook(enum libxps_print_level level, const char *fmt,
		      va_list args)
{
	char msg[512];
	size_t n;

	if (level > LIBXPS_WARN && (int)level - LIBXPS_WARN > verbose)
		return 0;
	if (level > LIBXPS_WARN)	/* verifier logs are long: no buffer */
		return vfprintf(stderr, fmt, args);
	vsnprintf(msg, sizeof(msg), fmt, args);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = '\0';
	if (level == LIBXPS_WARN) {
		snprintf(last_lib_error, sizeof(last_lib_error), "%s",
			 strncmp(msg, "libxps: ", 8) ? msg : msg + 8);
		if (!verbose)
			return 0;
	}
	fprintf(stderr, "%s\n", msg);
	return 0;
}

/* Report a failed library call: its own message if it gave one. */
int lib_err(const char *what, int err)
{
	if (last_lib_error[0])
		p_err("%s: %s", what, last_lib_error);
	else
		p_err("%s: %s", what, strerror(err < 0 ? -err : err));
	last_lib_error[0] = '\0';
	return 1;
}

const char *proto_name(__u8 proto)
{
	return proto == IPPROTO_UDP ? "udp" : "tcp";
}

struct xps_context *open_ctx(const char *name)
{
	struct xps_context *ctx = xps_context__open(name);

	if (!ctx)
		lib_err(name, -errno);
	return ctx;
}

bool is_prefix(const char *arg, const char *full)
{
	return *arg && !strncmp(arg, full, strlen(arg));
}

const struct cmd *find_cmd(const struct cmd *cmds, const char *arg)
{
	const struct cmd *c;

	/* as bpftool: an exact name, else the first prefix match in order */
	for (c = cmds; c->name; c++)
		if (!strcmp(arg, c->name))
			return c;
	for (c = cmds; c->name; c++)
		if (is_prefix(arg, c->name))
			return c;
	return NULL;
}

int print_usage(const char *text)
{
	if (out_format == OUT_JSON) {
		p_err("help is not available in JSON mode");
		return 1;
	}
	fputs(text, stdout);
	return 0;
}

static bool is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int dispatch(const struct cmd *cmds, int argc, char **argv,
	     const char *what)
{
	const struct cmd *c, *found;

	/* "OBJECT --help" and "OBJECT COMMAND --help": the object's help */
	if (strcmp(what, "xpsctl") &&
	    ((argc > 0 && is_help(argv[0])) || (argc == 2 && is_help(argv[1])))) {
		for (c = cmds; c->name; c++)
			if (!strcmp(c->name, "help"))
				return c->fn(0, NULL);
	}

	if (argc < 1) {
		for (c = cmds; c->name; c++)
			if (!strcmp(c->name, "help"))
				return c->fn(argc, argv);
		p_err("%s: missing command", what);
		return 1;
	}
	found = find_cmd(cmds, argv[0]);
	if (!found) {
		/* the top level's help is 'xpsctl help', not 'xpsctl xpsctl help' */
		p_err("%s: unknown command '%s' (try 'xpsctl %s%shelp')", what,
		      argv[0], strcmp(what, "xpsctl") ? what : "",
		      strcmp(what, "xpsctl") ? " " : "");
		return 1;
	}
	/* refused before it runs: a command must not act and print nothing */
	if (out_format == OUT_PROMETHEUS && !(found->flags & CMD_PROMETHEUS)) {
		p_err("'%s%s%s' has no prometheus output (see xpsctl(8))",
		      strcmp(what, "xpsctl") ? what : "",
		      strcmp(what, "xpsctl") ? " " : "", found->name);
		return 1;
	}
	return found->fn(argc - 1, argv + 1);
}

/* Parse "--opt value" style arguments shared by the commands. */
int next_arg(int *argc, char ***argv, const char *opt, const char **val)
{
	if (*argc < 2) {
		p_err("%s needs a value", opt);
		return -1;
	}
	*val = (*argv)[1];
	*argc -= 2;
	*argv += 2;
	return 0;
}

int parse_u32(const char *s, const char *what, __u32 max, __u32 *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || end == s || v > max) {
		p_err("%s: '%s' is not a number in [0, %u]", what, s, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- status ---------------------------------------------------------- */

/* enum xps_lost_why, as "status" names the reasons */
static const char *const lost_why[XPS_LOST_WHY_MAX] = {
	[XPS_LOST_NO_COUNT] = "handler_no_count",
	[XPS_LOST_FRAMING] = "framing_changed",
	[XPS_LOST_WINDOW] = "http_window",
	[XPS_LOST_NESTED] = "nested_run",
	[XPS_LOST_NO_RUN] = "no_handler_run",
	[XPS_LOST_HOOK] = "hook_lost",
	[XPS_LOST_EG_GAP] = "egress_gap",
	[XPS_LOST_EG_FRAME] = "egress_framing",
	[XPS_LOST_STOCK_TX] = "stock_reply_late",
};

int percpu_sums(const char *path, __u64 *sums, __u32 n)
{
	int fd, cpus = libbpf_num_possible_cpus(), c, err = 0;
	__u64 *per = NULL;
	__u32 k;

	memset(sums, 0, n * sizeof(*sums));
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (cpus < 1 || !(per = calloc(cpus, sizeof(*per)))) {
		err = cpus < 1 ? cpus : -ENOMEM;
		goto out;
	}
	for (k = 0; k < n; k++) {
		if (bpf_map_lookup_elem(fd, &k, per))
			continue;
		for (c = 0; c < cpus; c++)
			sums[k] += per[c];
	}
out:
	free(per);
	close(fd);
	return err;
}

/*
 * Why connections fell back to the slow path for good (docs/ordering.md),
 * by reason, summed over CPUs: nothing when they cannot be read.
 */
static void status_lost(void)
{
	__u64 n[XPS_LOST_WHY_MAX];
	__u32 k;

	if (percpu_sums(XPS_PIN_ROOT "/xps_lost", n, XPS_LOST_WHY_MAX))
		return;
	out_begin_object("connections_lost_count");
	for (k = 0; k < XPS_LOST_WHY_MAX; k++)
		out_u64(lost_why[k], n[k]);
	out_end_object();
}

static int do_status(int argc, char **argv)
{
	struct xps_status st;
	int err;

	if (argc) {
		p_err("status takes no arguments");
		return 1;
	}
	err = xps_framework__status(&st);
	if (err)
		return lib_err("status", err);
	out_begin_object(NULL);
	out_str("backend", xps_backend__name(st.backend_tcp));
	out_str("kernel", st.kernel_release);
	out_bool("native_hook", st.native_available);
	out_bool("loaded", st.loaded);
	out_u64("contexts", st.contexts);
	if (st.backend_tcp == XPS_BACKEND_SOCKMAP) {
		out_u64("enrolled_connections", st.enrolled);
		out_bool("draining", st.draining);
	}
	if (st.loaded)
		status_lost();
	out_end_object();
	return 0;
}

/* ---- enroll ----------------------------------------------------------- */

/*
 * The patched kernel's UDP hook runs only on sockets that opted in: enroll
 * those a UDP context serves, for a service started (or restarted) after
 * its context and not watched by a daemon.
 */
static int do_enroll(int argc, char **argv)
{
	int n;

	(void)argv;
	if (argc) {
		p_err("enroll takes no arguments");
		return 1;
	}
	n = xps_framework__enroll_udp();
	if (n < 0)
		return lib_err("enroll", n);
	out_begin_object(NULL);
	out_u64("udp_sockets_enrolled", n);
	out_end_object();
	return 0;
}

/* ---- reset ------------------------------------------------------------ */

/*
 * Count a context reset removes, and stop its service's daemon if it has
 * one: a daemon outlives no context (it would fill a new one's server).
 */
static int count_and_stop(const struct xps_ctx_info *info, __u32 slot,
			  void *data)
{
	(void)slot;
	(*(int *)data)++;
	supervise_stop(info->name);
	return 0;
}

static int do_reset(int argc, char **argv)
{
	int err, n = 0;

	(void)argv;
	if (argc) {
		p_err("reset takes no arguments");
		return 1;
	}
	xps_context__for_each(count_and_stop, &n);
	err = xps_framework__purge();
	if (err)
		return lib_err("reset", err);
	out_begin_object(NULL);
	out_u64("removed", n);
	out_end_object();
	return 0;
}

static int do_help(int argc, char **argv);

static const struct cmd objects[] = {
	{ "status", do_status, 0 },
	{ "handler", do_handler, 0 },
	{ "stats", do_stats, CMD_PROMETHEUS },
	{ "data", do_data, 0 },
	{ "service", do_service, 0 },
	{ "reset", do_reset, 0 },
	{ "enroll", do_enroll, 0 },
	{ "help", do_help, 0 },
	{ NULL, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: xpsctl [OPTIONS] OBJECT COMMAND [ARGS]\n"
"\n"
"  xpsctl status\n"
"  xpsctl handler attach OBJ.bpf.o --port N [--proto tcp|udp] [--addr A]\n"
"                        [--raddr A] [--rport N] [--name NAME]\n"
"  xpsctl handler attach OBJ.bpf.o --parent COMP --value V [--name NAME]\n"
"  xpsctl handler comp --port N --offset O --len L [--proto P] [--addr A] [--name NAME]\n"
"  xpsctl handler detach NAME\n"
"  xpsctl handler update NAME OBJ.bpf.o\n"
"  xpsctl handler list\n"
"  xpsctl [-o prometheus] stats show [NAME]\n"
"  xpsctl stats keys NAME [--top K]\n"
"  xpsctl stats watch [NAME] [--count N]\n"
"  xpsctl stats reset NAME\n"
"  xpsctl data put|update|set NAME KEY VALUE\n"
"  xpsctl data get|del NAME KEY\n"
"  xpsctl data dump NAME\n"
"  xpsctl data load NAME FILE|-\n"
"  xpsctl service KIND --port N [OPTIONS]   (KIND: see 'xpsctl service help')\n"
"  xpsctl service stop NAME\n"
"  xpsctl service list\n"
"  xpsctl service help [KIND]      (or: xpsctl service KIND --help)\n"
"  xpsctl enroll                   (native UDP: the services' sockets opt in)\n"
"  xpsctl reset\n"
"\n"
"OPTIONS: -j, --json  JSON output     -p, --pretty  indented JSON\n"
"         -o, --output text|json|prometheus  output format (prometheus:\n"
"             node-exporter's textfile format, for 'stats show')\n"
"         -v, --verbose (twice: libbpf debug)  -V, --version  -h, --help\n"
"Objects and commands may be abbreviated to any unique prefix.\n"
"'xpsctl OBJECT help' (or 'xpsctl OBJECT --help') describes an object.\n"
"XPS_BACKEND=native|stock chooses the backend of the first context.\n"
"See xpsctl(8).\n");
}

static int do_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (out_format == OUT_JSON) {
		p_err("help is not available in JSON mode");
		return 1;
	}
	usage(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, ret;

	/* "+": options end at the object, like bpftool */
	while ((c = getopt_long(argc, argv, "+jpo:vVh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			out_format = OUT_JSON;
			break;
		case 'p':
			out_format = OUT_JSON;
			pretty_output = true;
			break;
		case 'o':
			if (out_parse_format(optarg, &out_format)) {
				p_err("unknown output format '%s' (text, json or prometheus)",
				      optarg);
				return 2;
			}
			break;
		case 'v':
			verbose++;
			break;
		case 'V':
			printf("xpsctl %s\n", XPS_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	libxps_set_print(print_hook);
	/* a closed reader of our output is not worth a signal death */
	signal(SIGPIPE, SIG_IGN);
	if (optind >= argc) {
		if (out_format == OUT_JSON) {
			p_err("missing object");
			return 1;
		}
		usage(stderr);
		return 2;
	}
	ret = dispatch(objects, argc - optind, argv + optind, "xpsctl");
	if (out_finish())
		ret = 1;
	fflush(stdout);
	return ret;
}
