/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* libxps internals: shared between the library's source files only. */
#ifndef __LIBXPS_INTERNAL_H
#define __LIBXPS_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <string.h>
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
LIBXPS_HIDDEN int fw_lock_open(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_teardown_if_unused(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_undrain(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_purge(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_tc_sync(struct xps_fw *fw);
LIBXPS_HIDDEN int fw_bump_generation(struct xps_fw *fw);
LIBXPS_HIDDEN int detect_backends(__u32 *tcp, __u32 *udp, bool *native);
LIBXPS_HIDDEN int native_attach_type(const char *name);
LIBXPS_HIDDEN bool kernel_has_reply_kfunc(void);

/*
 * The bpffs layout.  Every path under XPS_PIN_ROOT is made here: by
 * XPS_FW_PIN() for a name known when compiling, by xps_pin_path()
 * (pins.c) for one known when running.
 *
 *   XPS_PIN_ROOT/                the lock (fw_lock() flocks the directory)
 *   XPS_PIN_ROOT/xps_<map>       the framework's maps, pinned by libbpf by
 *                                name (open with pin_root_path XPS_PIN_ROOT)
 *   XPS_PIN_ROOT/prog_*, link_*  the framework's programs and links
 *   XPS_PIN_ROOT/ctx/<name>/     a context: prog, its maps (ctx_maps[]) and
 *                                its label (CTX_LABEL_PIN)
 */
#define XPS_FW_PIN(file)	XPS_PIN_ROOT "/" file
#define XPS_PIN_CTX_DIR		XPS_FW_PIN("ctx")

/* pins.c */
LIBXPS_HIDDEN int xps_pin_path(char *buf, size_t sz, const char *ctx,
			       const char *file);
LIBXPS_HIDDEN int xps_pin_ctx_mkdir(const char *ctx);
LIBXPS_HIDDEN int xps_pin_fd(int fd, const char *ctx, const char *file);

static inline void fw_init(struct xps_fw *fw)
{
	memset(fw, 0xff, sizeof(*fw));	/* every fd -1 */
}

/* predicate.c */
LIBXPS_HIDDEN void pred_to_key(const struct xps_predicate *p,
			       struct xps_pred_key *k);
LIBXPS_HIDDEN int masks_sync(struct xps_fw *fw, __u8 proto);
LIBXPS_HIDDEN bool pred_conflict(const struct xps_pred_key *a,
				 const struct xps_pred_key *b);

/* slot.c */
LIBXPS_HIDDEN int find_by_name(struct xps_fw *fw, const char *name,
			       struct xps_ctx_info *out);
LIBXPS_HIDDEN int free_slot(struct xps_fw *fw);
LIBXPS_HIDDEN void zero_stats(struct xps_fw *fw, __u32 slot);

/*
 * Maps a handler object may declare that belong to its context: pinned
 * under ctx/<name>/<pin>, kept across updates when the layout matches
 * (ctxdir.c).  Indexed by enum xps_ctx_map.
 */
struct ctx_map_name {
	const char *map;	/* its name in the handler object */
	const char *pin;	/* its pin in the context's directory */
};
#define N_CTX_MAPS	(XPS_CTX_MAP_CARRIES + 1)
#define CM_DATA		XPS_CTX_MAP_DATA
#define CM_KEYSTATS	XPS_CTX_MAP_KEYSTATS
LIBXPS_HIDDEN extern const struct ctx_map_name ctx_maps[N_CTX_MAPS];
/* the application's label (struct xps_context_opts), beside them */
#define CTX_LABEL_PIN	"label"

/* A handler object loaded (object.c): its program and context maps. */
struct loaded_handler {
	int prog_fd;
	int fds[N_CTX_MAPS];
	__u32 framing;		/* its xps_framing knob (XPS_SLOT_FRAMING_MASK) */
};

/* object.c */
LIBXPS_HIDDEN void loaded_init(struct loaded_handler *h);
LIBXPS_HIDDEN void loaded_close(struct loaded_handler *h);
LIBXPS_HIDDEN int handler_load(const char *path, __u32 backend, __u8 proto,
			       const int *reuse, struct loaded_handler *out);

/* ctxdir.c */
LIBXPS_HIDDEN void ctx_map_fds(const char *name, int *fds);
LIBXPS_HIDDEN bool maps_same(int fd, const char *name);
LIBXPS_HIDDEN int pin_handler(const char *name,
			      const struct loaded_handler *h);
LIBXPS_HIDDEN void unpin_handler(const char *name);
LIBXPS_HIDDEN void unpin_all_handlers(void);
LIBXPS_HIDDEN int pin_label(const char *name, const char *label);

/* context.c */
LIBXPS_HIDDEN struct xps_context *ctx_handle(const char *name, __u32 slot);

/* sockdiag.c: established TCP sockets of @family on @port not in xps_conns */
LIBXPS_HIDDEN int sockdiag_unseen(int conns_fd, __u16 port, int family);

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
