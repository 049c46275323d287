/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The frame every XPS daemon runs in (xps-redisd, xps-memcachedd,
 * xps-clusterd): the common options, signals, the run loop with its
 * periodic check, reconnecting with backoff, the status file, the exit
 * status.  Nothing here knows the kv-cache: that is filler.h's.
 *
 * A daemon embeds struct daemon, fills in its ops and calls
 * daemon_main().  The run is:
 *   options -> start() -> signals -> reconnect() (if any) -> loop:
 *     poll(), every check_ms: context gone? then check(); work()
 *   -> finish().
 * Exit status: 0 stopped by SIGTERM/SIGINT or the context was removed,
 * 1 a failure (start, or stopped while reconnecting), 2 a usage error.
 */
#ifndef __XPS_DAEMON_H
#define __XPS_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <signal.h>
#include <getopt.h>
#include <linux/types.h>

struct xps_context;
struct daemon;

/* What check(), work() and poll() return to the loop. */
enum {
	DAEMON_FAIL = -1,	/* give up: finish() and exit 1 */
	DAEMON_OK = 0,
	DAEMON_AGAIN = 1,	/* reconnected: begin the next pass */
};

struct daemon_ops {
	const char *prog;	/* "xps-redisd": logs and usage */
	const char *synopsis;	/* the options after the common ones */
	const char *about;	/* what it does, for --help */
	const char *own_help;	/* its own options' lines, or NULL */
	const char *server;	/* "Redis": what --server names */
	/* its own options beside -c, -s, -v, -h; opt() says 2 for misuse */
	const struct option *opts;
	const char *shortopts;
	int (*opt)(struct daemon *d, int opt, const char *arg);
	bool server_required;	/* else 127.0.0.1 and the context's port */
	bool context_optional;	/* start() checks for it itself */
	bool redis_alias;	/* -r/--redis, the older name of --server */
	bool status_file;	/* writes /run/xps/CONTEXT.state */
	const char *serving;	/* logged when check() finds nothing wrong */
	const char *not_serving;	/* "not serving": logged before why */
	unsigned int check_ms;	/* how often check() runs */
	/* 0 to run, else the exit status (after freeing what it took) */
	int (*start)(struct daemon *d);
	/* the first connection and each after a loss: 0, -1 when stopped */
	int (*reconnect)(struct daemon *d, const char *why);
	const char *first_why;	/* the first reconnect()'s why */
	int (*poll)(struct daemon *d);		/* each pass, may be NULL */
	int (*check)(struct daemon *d);		/* every check_ms, or NULL */
	int (*work)(struct daemon *d);		/* each pass */
	void (*finish)(struct daemon *d, int status);
};

struct daemon {
	const struct daemon_ops *ops;
	const char *context;	/* -c NAME */
	char host[256], port[16];	/* -s HOST:PORT; port "" until known */
	int verbose;		/* -v, once per -v */
	__u32 data_id;		/* the context's data map (see below), 0: none */
	__u64 now_ns;		/* CLOCK_MONOTONIC at this pass's start */
	unsigned int backoff_ms;	/* daemon_reconnect()'s next wait */
	char last_why[400];	/* the state last logged, "-": none yet */
};

#define daemon_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Set by SIGTERM and SIGINT: the loop ends after the current pass. */
extern volatile sig_atomic_t daemon_stop;

/* Parse, start, run and finish @d (its ops set): the exit status. */
int daemon_main(struct daemon *d, int argc, char **argv);
void daemon_usage(const struct daemon *d, FILE *f);

/* A line on stderr, after the local time. */
void daemon_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
__u64 daemon_mono_ns(void);

/*
 * What `xpsctl service list` shows for the service: "running", or
 * "degraded" / "restarting" and why, in /run/xps/CONTEXT.state.
 */
void daemon_status(struct daemon *d, const char *state, const char *why);
/*
 * The end of a check that found @why (empty: all is well): the status
 * file says "running" or "degraded", and the log says so when it changed.
 */
void daemon_report(struct daemon *d, const char *why);
/*
 * Call @connect(@arg) (0 on success) until it succeeds or the daemon is
 * stopped, backing off 100 ms doubling to 5 s, the status file saying
 * "restarting" and @why meanwhile.  0, or -1 when stopped.
 */
int daemon_reconnect(struct daemon *d, const char *why,
		     int (*connect)(void *arg), void *arg);
/*
 * The connection was lost: log @log (NULL: "@why: reconnecting"), then
 * ops->reconnect(@why).  DAEMON_AGAIN, or DAEMON_FAIL when stopped.
 */
int daemon_lost(struct daemon *d, const char *log, const char *why);

/* The id of @xc's data map, which names the context for good; 0: none. */
__u32 daemon_data_map_id(struct xps_context *xc);
/*
 * The context is gone (removed, or replaced by another of the same name
 * whose data map is not d->data_id): nothing left to serve.
 */
bool daemon_context_gone(const struct daemon *d);
/*
 * A TCP connection to HOST:PORT (the first address that accepts), with
 * TCP_NODELAY and, when @timeout_ms is not 0, that send/receive timeout
 * (connect included).  The fd, or -1 with errno set; *@gai_err is the
 * getaddrinfo() error when the name did not resolve, 0 otherwise.  Logs
 * nothing: the callers' messages differ.
 */
int daemon_tcp_connect(const char *host, const char *port,
		       unsigned int timeout_ms, int *gai_err);
#endif
