/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kinds of service of "xpsctl service": one struct svc_kind each, in
 * the table of service.c.  A kind's entry says everything xpsctl knows of
 * it (handler, daemon, options and their help, what to set up, how to
 * tell its health); its code lives in services/FOLDER/service.c, with the
 * rest of the service.  A new kind is a new folder, its entry in
 * svc_kinds[], its paragraph in
 * docs/xpsctl.8 and its line in contrib/bash-completion/xpsctl (which
 * tests/integration/test_xpsctl.py compares with the usage): option
 * parsing, the usage, "service list" and "service stop" follow from the
 * entry.
 */
#ifndef __XPSCTL_SERVICE_H
#define __XPSCTL_SERVICE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "libxps.h"

enum svc_opt_type {
	SVC_OPT_U32,		/* a number in [0, max] */
	SVC_OPT_STR,		/* a string */
	SVC_OPT_FLAG,		/* no value: sets a bool */
	SVC_OPT_LIST,		/* a string, repeatable: struct svc_list */
};

#define SVC_LIST_MAX 16

struct svc_list {
	const char *v[SVC_LIST_MAX];
	int n;
};

/* An option of a kind: parsed into the kind's arguments at @off. */
struct svc_opt {
	const char *name;	/* "--port" */
	const char *alias;	/* bpftool style ("port"), or NULL */
	const char *arg;	/* the value in the usage ("N"); NULL: a flag */
	enum svc_opt_type type;
	size_t off;		/* offsetof() in the kind's arguments */
	__u32 max;		/* SVC_OPT_U32: the largest value */
	bool required;
	const char *help;	/* one paragraph, wrapped when printed */
};

/* Every kind's arguments start with these (its options set them). */
struct svc_args {
	__u32 port;		/* the server's port */
	const char *name;	/* NULL: the kind's name */
};

#define SVC_OPT_PORT(args_type, help_text)					\
	{ .name = "--port", .alias = "port", .arg = "N",		\
	  .type = SVC_OPT_U32, .off = offsetof(args_type, common.port),	\
	  .max = 65535, .required = true, .help = (help_text) }
#define SVC_OPT_NAME(args_type, help_text)					\
	{ .name = "--name", .alias = "name", .arg = "NAME",		\
	  .type = SVC_OPT_STR, .off = offsetof(args_type, common.name),	\
	  .help = (help_text) }

#define SVC_ARGV_MAX 16

/* One "xpsctl service KIND ...": what setup() works with and fills in. */
struct svc_setup {
	const struct svc_kind *kind;
	const void *args;		/* the kind's, parsed */
	char name[XPS_NAME_LEN];	/* the service's main context */
	char obj[PATH_MAX];		/* the kind's handler object */
	char daemon[PATH_MAX];		/* the kind's daemon, "" if none */
	/* set by setup(): */
	__u32 port;			/* the main context's port */
	char *argv[SVC_ARGV_MAX];	/* the daemon's command line */
	char scratch[4][320];		/* room for argv's strings */
};

struct svc_kind {
	const char *name;		/* xpsctl service NAME */
	const char *summary;		/* one line for "service help" */
	const char *handler;		/* its object: HANDLER.bpf.o */
	const char *daemon;		/* its daemon's file name, or NULL */
	const struct svc_opt *opts;	/* ended by { NULL } */
	size_t args_size;		/* its arguments' struct */
	const char *description;	/* the usage's text before Options */
	const char *notes;		/* after Options, or NULL */
	const char *example;		/* shell lines */
	/*
	 * Check the configuration, then create the contexts (with
	 * svc_ctx_opts()) and fill in ->port and, with a daemon, ->argv.
	 * On failure, print why and leave nothing behind.  The daemon is
	 * started by the caller.
	 */
	int (*setup)(struct svc_setup *s);
	/* Print what was started; NULL: svc_print() of the main context. */
	void (*report)(const struct svc_setup *s, pid_t pid);
	/*
	 * Remove service @name once its daemon is stopped; NULL:
	 * svc_remove(), which removes its main context and every context
	 * labelled as its own.
	 */
	int (*teardown)(const char *name);
	/* Its state in a line; NULL: the daemon's (supervise_state()). */
	void (*health)(const char *name, pid_t pid, char *buf, size_t n);
	/*
	 * "service list" of a context without a label whose handler is this
	 * kind's (made by an xpsctl from before services were labelled):
	 * print the service it belongs to as those versions named it, or
	 * nothing if it is not the service's main context, and return
	 * true; false (or NULL): svc_print() of the context by its own name.
	 */
	bool (*list_unlabelled)(const struct svc_kind *k,
				const struct xps_ctx_info *info);
};

/* The contexts' label: "svc:KIND" for the main one, "svc:KIND:OWNER" for
 * those it owns; set through opts made with svc_ctx_opts(). */
#define SVC_LABEL_PREFIX "svc:"

/*
 * Opts for a context of service @s: named @name, sharing @share's maps
 * (or NULL), labelled as the main context (@main) or one of its own.
 */
void svc_ctx_opts(const struct svc_setup *s, struct xps_context_opts *opts,
		  char *label, size_t label_sz, const char *name,
		  const char *share, bool main);
/* A context on @port/@proto running the kind's handler. */
struct xps_context *svc_attach(const struct svc_setup *s, __u8 proto,
			       __u32 port, const char *name, const char *share,
			       bool main);
/*
 * Find where the server of TCP @port listens (or take @given), into @buf,
 * and connect once: -1, with the reason, when nothing answers there.
 */
int svc_server_reachable(const char *what, const char *option,
			 const char *given, __u32 port, char *buf, size_t n);
/*
 * One row of "service list": context @name of a service of kind @k, shown
 * as @shown (NULL: @k's name), on @port; @owner (NULL: @name) is the
 * service whose daemon (@pid, 0 if none) serves it.
 */
void svc_print(const struct svc_kind *k, const char *shown, const char *name,
	       const char *owner, __u32 port, pid_t pid);
int svc_remove(const char *name);

extern const struct svc_kind svc_redis, svc_redis_cluster, svc_memcached, svc_nats,
	svc_http;

#endif
