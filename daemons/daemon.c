// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The daemons' frame (see daemon.h): options, signals, the run loop,
 * reconnecting, the status file, logging.
 */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <bpf/bpf.h>
#include <linux/tcp.h>

#include "libxps.h"
#include "daemon.h"

volatile sig_atomic_t daemon_stop;

void daemon_log(const char *fmt, ...)
{
	char ts[32];
	time_t t = time(NULL);
	va_list ap;

	strftime(ts, sizeof(ts), "%F %T", localtime(&t));
	fprintf(stderr, "%s: ", ts);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

__u64 daemon_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int daemon_tcp_connect(const char *host, const char *port,
		       unsigned int timeout_ms, int *gai_err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *p;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	int fd = -1, one = 1, err;

	*gai_err = getaddrinfo(host, port, &hints, &ai);
	if (*gai_err)
		return -1;
	for (p = ai; p; p = p->ai_next) {
		fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (timeout_ms) {
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		}
		if (!connect(fd, p->ai_addr, p->ai_addrlen))
			break;
		err = errno;
		close(fd);
		errno = err;
		fd = -1;
	}
	err = errno;
	freeaddrinfo(ai);
	errno = err;
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/*
 * Split "HOST:PORT" (the last colon) into d->host and d->port; complains
 * naming @option and returns -1 when @arg is not of that form.
 */
static int parse_hostport(struct daemon *d, const char *arg,
			  const char *option)
{
	const char *colon = strrchr(arg, ':');

	if (!colon || colon == arg) {
		fprintf(stderr, "%s: expected HOST:PORT\n", option);
		return -1;
	}
	/* [v6]:port */
	if (arg[0] == '[' && colon[-1] == ']')
		snprintf(d->host, sizeof(d->host), "%.*s",
			 (int)(colon - arg - 2), arg + 1);
	else
		snprintf(d->host, sizeof(d->host), "%.*s", (int)(colon - arg),
			 arg);
	snprintf(d->port, sizeof(d->port), "%s", colon + 1);
	return 0;
}

__u32 daemon_data_map_id(struct xps_context *xc)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = xps_context__data_fd(xc);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.id;
}

bool daemon_context_gone(const struct daemon *d)
{
	struct xps_context *xc = xps_context__open(d->context);
	__u32 id;

	if (!xc)
		return errno == ENOENT;
	id = daemon_data_map_id(xc);
	xps_context__close(xc);
	return id && d->data_id && id != d->data_id;
}

void daemon_status(struct daemon *d, const char *state, const char *why)
{
	char path[256], tmp[272];
	FILE *fp;

	if (!d->ops->status_file)
		return;
	snprintf(path, sizeof(path), "/run/xps/%s.state", d->context);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fp = fopen(tmp, "w");
	if (!fp)
		return;
	if (why && why[0])
		fprintf(fp, "%s: %s\n", state, why);
	else
		fprintf(fp, "%s\n", state);
	if (fclose(fp) || rename(tmp, path))
		unlink(tmp);
}

void daemon_report(struct daemon *d, const char *why)
{
	daemon_status(d, why[0] ? "degraded" : "running", why);
	if (!strcmp(why, d->last_why))
		return;
	if (why[0])
		daemon_log("%s: %s: %s", d->ops->prog, d->ops->not_serving, why);
	else
		daemon_log("%s: %s", d->ops->prog, d->ops->serving);
	snprintf(d->last_why, sizeof(d->last_why), "%s", why);
}

static void daemon_backoff(struct daemon *d)
{
	struct timespec ts;
	unsigned int i;

	d->backoff_ms = d->backoff_ms ? d->backoff_ms * 2 : 100;
	if (d->backoff_ms > 5000)
		d->backoff_ms = 5000;
	/* in 100 ms steps, so that a signal is answered quickly */
	for (i = 0; i < d->backoff_ms / 100 && !daemon_stop; i++) {
		ts.tv_sec = 0;
		ts.tv_nsec = 100 * 1000 * 1000;
		nanosleep(&ts, NULL);
	}
}

int daemon_reconnect(struct daemon *d, const char *why,
		     int (*connect)(void *arg), void *arg)
{
	while (!daemon_stop) {
		daemon_status(d, "restarting", why);
		if (!connect(arg)) {
			d->backoff_ms = 0;
			return 0;
		}
		daemon_backoff(d);
	}
	return -1;
}

int daemon_lost(struct daemon *d, const char *log, const char *why)
{
	if (log)
		daemon_log("%s: %s", d->ops->prog, log);
	else
		daemon_log("%s: %s: reconnecting", d->ops->prog, why);
	if (d->ops->reconnect(d, why))
		return DAEMON_FAIL;
	snprintf(d->last_why, sizeof(d->last_why), "-");
	return DAEMON_AGAIN;
}

void daemon_usage(const struct daemon *d, FILE *f)
{
	const struct daemon_ops *o = d->ops;

	fprintf(f, "Usage: %s %s\n%s\n", o->prog, o->synopsis, o->about);
	fprintf(f,
"Options:\n"
"  -c, --context NAME      the XPS context to serve%s\n"
"  -s, --server HOST:PORT  where %s listens%s\n"
"%s"
"  -v, --verbose           log more (twice: more still)\n"
"  -h, --help              print this help and exit\n",
		o->context_optional ? " (not with --check)" : " (required)",
		o->server, o->server_required ? " (required)" :
		"\n                          (default: 127.0.0.1 and the context's port)",
		o->redis_alias ? "  -r, --redis HOST:PORT   the older name of --server\n" : "");
	if (o->own_help)
		fputs(o->own_help, f);
	fprintf(f,
"Runs until SIGTERM or SIGINT, or until the context is removed (exit 0);\n"
"exits 1 on a failure, 2 on a usage error.  See %s(8).\n", o->prog);
}

static void on_signal(int sig)
{
	(void)sig;
	daemon_stop = 1;
}

#define DAEMON_MAX_OPTS	16

/* The options into @d: -1 to run, else the exit status. */
static int parse(struct daemon *d, int argc, char **argv)
{
	static const struct option common[] = {
		{ "context", required_argument, NULL, 'c' },
		{ "server", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
	};
	static const struct option redis = {
		"redis", required_argument, NULL, 'r'
	};
	const struct daemon_ops *o = d->ops;
	struct option opts[DAEMON_MAX_OPTS + 1] = {};
	char shortopts[64];
	int n = 0, i, opt, err;

	for (i = 0; i < (int)(sizeof(common) / sizeof(common[0])); i++)
		opts[n++] = common[i];
	if (o->redis_alias)
		opts[n++] = redis;
	for (i = 0; o->opts && o->opts[i].name && n < DAEMON_MAX_OPTS; i++)
		opts[n++] = o->opts[i];
	snprintf(shortopts, sizeof(shortopts), "c:s:vh%s%s",
		 o->redis_alias ? "r:" : "", o->shortopts ? o->shortopts : "");
	while ((opt = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			d->context = optarg;
			break;
		case 'r':
		case 's':
			if (parse_hostport(d, optarg, opt == 'r' ? "--redis" :
					   "--server"))
				return 2;
			break;
		case 'v':
			d->verbose++;
			break;
		case 'h':
			daemon_usage(d, stdout);
			return 0;
		case '?':
			daemon_usage(d, stderr);
			return 2;
		default:
			err = o->opt ? o->opt(d, opt, optarg) : 2;
			if (err) {
				if (!o->opt)
					daemon_usage(d, stderr);
				return err;
			}
		}
	}
	if ((!d->context && !o->context_optional) ||
	    (o->server_required && !d->host[0])) {
		daemon_usage(d, stderr);
		return 2;
	}
	if (!d->host[0])
		snprintf(d->host, sizeof(d->host), "127.0.0.1");
	return -1;
}

static int run(struct daemon *d)
{
	const struct daemon_ops *o = d->ops;
	__u64 last_check = 0;
	int r;

	if (o->reconnect) {
		if (o->reconnect(d, o->first_why))
			return 1;
		daemon_log("%s: serving context '%s' for %s at %s:%s", o->prog,
			   d->context, o->server, d->host, d->port);
	}
	while (!daemon_stop) {
		d->now_ns = daemon_mono_ns();
		r = o->poll ? o->poll(d) : DAEMON_OK;
		if (r == DAEMON_FAIL)
			return 1;
		if (d->now_ns - last_check >= o->check_ms * 1000000ull) {
			last_check = d->now_ns;
			if (daemon_context_gone(d)) {
				daemon_log("%s: context '%s' was removed: exiting",
					   o->prog, d->context);
				return 0;
			}
			r = o->check ? o->check(d) : DAEMON_OK;
			if (r == DAEMON_FAIL)
				return 1;
			if (r == DAEMON_AGAIN)
				continue;
		}
		if (o->work(d) == DAEMON_FAIL)
			return 1;
	}
	return 0;
}

int daemon_main(struct daemon *d, int argc, char **argv)
{
	int ret;

	snprintf(d->last_why, sizeof(d->last_why), "-");
	ret = parse(d, argc, argv);
	if (ret >= 0)
		return ret;
	ret = d->ops->start(d);
	if (ret)
		return ret;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	ret = run(d);
	d->ops->finish(d, ret);
	return ret;
}
