/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* xpsctl's command tables and the helpers its commands share. */
#ifndef __XPSCTL_CMD_H
#define __XPSCTL_CMD_H

#include <stdbool.h>
#include <linux/types.h>
#include "libxps.h"

/*
 * The label of the contexts "xpsctl handler" makes: they are not services
 * (whose labels service.h describes), and "service list" says so.
 */
#define XPSCTL_LABEL_HANDLER "handler"

#define XPS_CTX_OPTS(var, nm)						\
	DECLARE_XPS_OPTS(xps_context_opts, var, .name = (nm),		\
			 .label = XPSCTL_LABEL_HANDLER)
#define XPS_CTX_OPTS_SHARE(var, nm, sh)					\
	DECLARE_XPS_OPTS(xps_context_opts, var, .name = (nm),		\
			 .share = (sh), .label = XPSCTL_LABEL_HANDLER)

/* the command prints -o prometheus output (an object: one of its commands) */
#define CMD_PROMETHEUS	(1u << 0)

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	unsigned int flags;
};

int dispatch(const struct cmd *cmds, int argc, char **argv, const char *what);
/* The entry @arg names, by the rules of dispatch(); NULL if none. */
const struct cmd *find_cmd(const struct cmd *cmds, const char *arg);
bool is_prefix(const char *arg, const char *full);
int next_arg(int *argc, char ***argv, const char *opt, const char **val);
int parse_u32(const char *s, const char *what, __u32 max, __u32 *out);
/*
 * Entries 0..@n-1 of the pinned per-CPU array of u64 at @path, each summed
 * over CPUs into @sums (an entry that cannot be read counts 0).  0 or a
 * negative errno.
 */
int percpu_sums(const char *path, __u64 *sums, __u32 n);
int lib_err(const char *what, int err);
/* Print a usage text on stdout; refused in JSON mode. */
int print_usage(const char *text);

/* "tcp"/"udp" of a predicate key */
const char *proto_name(__u8 proto);
/* Open NAME or report why not (returns NULL after printing the error). */
struct xps_context *open_ctx(const char *name);

int do_handler(int argc, char **argv);
int do_stats(int argc, char **argv);
int do_data(int argc, char **argv);
int do_service(int argc, char **argv);

#endif
