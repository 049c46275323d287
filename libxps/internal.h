/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* libxps internals: shared between the library's source files only. */
#ifndef __LIBXPS_INTERNAL_H
#define __LIBXPS_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include "libxps.h"

#define LIBXPS_HIDDEN __attribute__((visibility("hidden")))

LIBXPS_HIDDEN void libxps_print(enum libxps_print_level level,
				const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

LIBXPS_HIDDEN void libxps_route_libbpf(void);

#define pr_warn(fmt, ...) libxps_print(LIBXPS_WARN, "libxps: " fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...) libxps_print(LIBXPS_INFO, "libxps: " fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...) libxps_print(LIBXPS_DEBUG, "libxps: " fmt, ##__VA_ARGS__)

/* fds of the framework's pinned maps, opened for one operation */
struct xps_fw {
	int lock_fd;		/* flock()ed XPS_PIN_ROOT */
	int config;
	int preds;
	int masks;
	int slots;
	int ctxinfo;
	int comp;
	int progs_tcp;
	int progs_udp;
	int stats;
	int sockhash;
	int conns;
	int tcifs;
	int servers;
	__u32 backend_tcp;
	__u32 backend_udp;
};

struct xps_context {
	char name[XPS_NAME_LEN];
	__u32 slot;
	int data_fd;		/* -1 when the handler declares no data map */
	int keystats_fd;
};

/* framework.c */
LIBXPS_HIDDEN int fw_lock(struct xps_fw *fw);
LIBXPS_HIDDEN void fw_unlock(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_ensure(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_open(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_teardown_if_unused(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_undrain(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_purge(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_tc_sync(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_bump_generation(struct xps_fw *fw);
LIBXPS_HIDDEN int detect_backends(__u32 *tcp, __u32 *udp, bool *native);
LIBXPS_HIDDEN int native_attach_type(const char *name);
LIBXPS_HIDDEN bool kernel_has_reply_kfunc(void);

/* context.c */
LIBXPS_HIDDEN int ctx_dir(char *buf, size_t sz, const char *name);

/*
 * Options structs (libxps.h, DECLARE_XPS_OPTS): the caller's struct is
 * opts->sz bytes, which may be fewer than this libxps knows (an older
 * caller: the fields it lacks take their defaults) or more (a newer one:
 * the fields this libxps lacks must be zero, or it would silently ignore
 * what the caller asked for).
 */
#define OPTS_END(TYPE)							\
	(offsetof(struct TYPE, TYPE##__last_field) +			\
	 sizeof(((struct TYPE *)0)->TYPE##__last_field))

LIBXPS_HIDDEN bool libxps_opts_valid(const void *opts, size_t known,
				     const char *type);

/* NULL, or a struct TYPE this libxps can honour (logs why not). */
#define OPTS_VALID(opts, TYPE)						\
	libxps_opts_valid((opts), OPTS_END(TYPE), #TYPE)

/* Whether the caller's opts (of its own size, opts->sz) has @field. */
#define OPTS_HAS(opts, field)						\
	((opts) && (opts)->sz >= offsetof(typeof(*(opts)), field) +	\
				  sizeof((opts)->field))

/* @field of the caller's opts, or @dflt when it has none. */
#define OPTS_GET(opts, field, dflt)					\
	(OPTS_HAS(opts, field) ? (opts)->field : (dflt))

/* Export @other as another name of @target, defined in the same file. */
#define LIBXPS_ALIAS(other, target)					\
	__typeof__(target) other __attribute__((alias(#target)))

static inline int libxps_err(int err)
{
	errno = err < 0 ? -err : err;
	return err < 0 ? err : -err;
}

static inline void *libxps_err_ptr(int err)
{
	errno = err < 0 ? -err : err;
	return NULL;
}

#endif
