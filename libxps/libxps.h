/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libxps: run verified eBPF handlers in the kernel's TCP/UDP receive path.
 *
 * Conventions (as in libbpf and libxdp): functions returning int return 0
 * or a negative errno; functions returning a pointer return NULL and set
 * errno.  Every failure is also described through the print hook.
 *
 * State lives under /sys/fs/bpf/xps/ (mode 0700, objects 0600), so contexts
 * outlive the process that created them and every process (xpsctl, daemons)
 * sees the same ones.  Control operations are serialised with flock() on
 * that directory.
 */
#ifndef __LIBXPS_H
#define __LIBXPS_H

#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <linux/types.h>
#include <xps/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBXPS_API __attribute__((visibility("default")))

#define XPS_PIN_ROOT "/sys/fs/bpf/xps"

enum libxps_print_level {
	LIBXPS_WARN,
	LIBXPS_INFO,
	LIBXPS_DEBUG,
};

typedef int (*libxps_print_fn_t)(enum libxps_print_level level,
				 const char *fmt, va_list args);

/* Set the print hook; returns the previous one.  NULL silences libxps. */
LIBXPS_API libxps_print_fn_t libxps_set_print(libxps_print_fn_t fn);

struct xps_context;

/*
 * A predicate: the flows a context serves.  Zero port / unset address /
 * AF_UNSPEC family are wildcards.  Addresses are in network byte order.
 */
struct xps_predicate {
	__u8 proto;		/* IPPROTO_TCP or IPPROTO_UDP */
	__u8 family;		/* AF_INET, AF_INET6 or AF_UNSPEC (any) */
	__u16 lport;		/* host byte order; 0 only with a TCP rport */
	__u16 rport;		/* host byte order, 0 = any */
	bool has_laddr;
	bool has_raddr;
	__u8 laddr[16];		/* IPv6 or v4-mapped */
	__u8 raddr[16];
};

/*
 * Options structs (every struct xps_*_opts) begin with sz, the size of the
 * struct the caller was built with, and end with the zero-width size_t
 * bit-field that rounds their size up.  Declare them with
 * DECLARE_XPS_OPTS(), which sets sz and zeroes every byte not given:
 *
 *	DECLARE_XPS_OPTS(xps_context_opts, opts, .name = "cache",
 *			 .label = "redis");
 *	ctx = xps_context__create_pred("redis.bpf.o", &pred, &opts);
 *
 * A libxps older than the caller's header refuses, with EINVAL, an opts
 * struct that sets a field it does not know (a non-zero byte past its last
 * field): it cannot honour what the caller asked for.  A newer libxps takes
 * an older caller's smaller struct and uses defaults for the rest.
 */
#define DECLARE_XPS_OPTS(TYPE, NAME, ...)				\
	struct TYPE NAME = (__builtin_memset(&NAME, 0, sizeof(NAME)),	\
			    (struct TYPE){ .sz = sizeof(struct TYPE),	\
					   __VA_ARGS__ })

struct xps_context_opts {
	size_t sz;		/* sizeof(struct xps_context_opts) */
	const char *name;	/* default: <object basename>-<port>[-udp] */
	/*
	 * Share the data map and the other per-context maps (miss queue,
	 * state, versions, key statistics) with this existing context, whose
	 * handler must declare them alike: e.g. one cache for a service's TCP
	 * and UDP ports, so that a write on either invalidates both.
	 * xps_context__create_pred() only: xps_context__create_comp_pred()
	 * refuses it (EINVAL), xps_context__create_sub_opts() ignores it.
	 */
	const char *share;
	/*
	 * A short text (at most XPS_LABEL_LEN - 1 bytes) kept with the context
	 * for the application that made it, read back by
	 * xps_context__label(): e.g. xpsctl records which kind of service a
	 * context belongs to.  libxps does not interpret it.
	 */
	const char *label;
	size_t :0;
};
#define xps_context_opts__last_field label
#define XPS_LABEL_LEN 64

/*
 * Names: xps_<object>__<verb> for what is done to an object
 * (xps_context__create, xps_context__delete), xps_<object>__<attribute>
 * for what is read from it (xps_context__name, xps_context__stats), and
 * xps_<object>__<part>_<verb> for a part of it (xps_context__data_put,
 * xps_context__keystats_get).  The objects are the context, its data map
 * (part "data") and key statistics (part "keystats"), the framework, the
 * predicate and the backend.  The paper's Table 3.2 names
 * (xps_create_context, xps_put_data, xps_get_stats, ...) are aliases of
 * these, listed at the end of this header: the same functions, exported
 * under both names.
 */

/* --- control (paper Table 3.2) -------------------------------------- */

/*
 * Create a context serving the flows of @server_sock (a bound TCP or UDP
 * socket: the predicate is its protocol, address and port) with the
 * handler in @obj_file.  Refused with EEXIST when that port already has a
 * context.
 */
LIBXPS_API struct xps_context *xps_context__create(const char *obj_file,
						   int server_sock);
/* The same for an explicit predicate (no socket needed). */
LIBXPS_API struct xps_context *
xps_context__create_pred(const char *obj_file, const struct xps_predicate *pred,
			 const struct xps_context_opts *opts);
/*
 * Replace the handler of @ctx with the one in @obj_file, atomically: every
 * request runs either the old or the new handler.  The data map is kept
 * when the new object's has the same layout.
 */
LIBXPS_API int xps_context__update(struct xps_context *ctx,
				   const char *obj_file);
/* Remove the context and every trace of it; frees @ctx. */
LIBXPS_API int xps_context__delete(struct xps_context *ctx);

/* Find an existing context by name (e.g. from another process). */
LIBXPS_API struct xps_context *xps_context__open(const char *name);
/* Release the handle only; the context stays. */
LIBXPS_API void xps_context__close(struct xps_context *ctx);

LIBXPS_API const char *xps_context__name(const struct xps_context *ctx);
/* The framework slot the context occupies (xps_context__for_each()'s). */
LIBXPS_API __u32 xps_context__slot(const struct xps_context *ctx);
LIBXPS_API int xps_context__info(const struct xps_context *ctx,
				 struct xps_ctx_info *info);
/*
 * The label the context was created with (struct xps_context_opts) into
 * @buf of @sz bytes; "" for a context created without one (or by a libxps
 * older than labels).  -ENOSPC when @sz cannot hold it.
 */
LIBXPS_API int xps_context__label(const struct xps_context *ctx, char *buf,
				  size_t sz);
/* fd of the context's data map (owned by @ctx), or -ENOENT. */
LIBXPS_API int xps_context__data_fd(const struct xps_context *ctx);

/* The maps a handler object may declare for its context (bpf/api/xps.bpf.h). */
enum xps_ctx_map {
	XPS_CTX_MAP_DATA,	/* XPS_DATA_MAP(): the values served */
	XPS_CTX_MAP_KEYSTATS,	/* XPS_DATA_MAP(): accesses per key */
	XPS_CTX_MAP_MISSES,	/* kv-cache: keys looked up, not found (UDP) */
	XPS_CTX_MAP_STATE,	/* XPS_STATE_MAP(): the handler's state */
	XPS_CTX_MAP_VERSIONS,	/* kv-cache: per-key write versions */
	XPS_CTX_MAP_CARRIES,	/* kv-cache: request heads cut by a
				 * segment's end, by connection */
};
/*
 * A new file descriptor of map @map of @ctx, which the caller closes;
 * -ENOENT when the context's handler declares no such map.  Where the
 * maps are pinned is libxps's business (docs/design.md, "Pins").
 */
LIBXPS_API int xps_context__map_fd(const struct xps_context *ctx,
				   enum xps_ctx_map map);

/* Framework maps a service's helper process may need (include/xps/abi.h). */
enum xps_fw_map {
	XPS_FW_MAP_CONFIG,	/* struct xps_config, index 0 */
	XPS_FW_MAP_CONNS,	/* struct xps_conn by socket cookie */
	XPS_FW_MAP_WPEND,	/* struct xps_wpend, index 0 */
	XPS_FW_MAP_SERVERS,	/* __u32 by slot: XPS_SERVER_GONE... */
};
/* A new file descriptor of a loaded framework's map; -ENOENT if none. */
LIBXPS_API int xps_framework__map_fd(enum xps_fw_map map);
/* Summed per-CPU handler counters. */
LIBXPS_API int xps_context__stats(const struct xps_context *ctx,
				  struct xps_handler_stats *stats);
/* Zero the handler counters and key statistics. */
LIBXPS_API int xps_context__stats_reset(struct xps_context *ctx);

/* Call @cb for every context (sub-contexts included); stops on non-zero. */
typedef int (*xps_context_cb)(const struct xps_ctx_info *info, __u32 slot,
			      void *data);
LIBXPS_API int xps_context__for_each(xps_context_cb cb, void *data);

/* --- data (paper Table 3.2) ----------------------------------------- */

/* Insert; EEXIST if the key is there. */
LIBXPS_API int xps_context__data_put(struct xps_context *ctx, const void *key,
				     const void *value);
/* Replace; ENOENT if the key is not there. */
LIBXPS_API int xps_context__data_update(struct xps_context *ctx,
					const void *key, const void *value);
/* Insert or replace. */
LIBXPS_API int xps_context__data_set(struct xps_context *ctx, const void *key,
				     const void *value);
LIBXPS_API int xps_context__data_get(struct xps_context *ctx, const void *key,
				     void *value);
LIBXPS_API int xps_context__data_delete(struct xps_context *ctx,
					const void *key);
/*
 * Batch variants: @keys and @values are arrays of *@count packed entries of
 * the map's key and value size.  On return *@count holds how many were
 * applied (all of them unless an error is returned).
 */
LIBXPS_API int xps_context__data_put_batch(struct xps_context *ctx,
					   const void *keys,
					   const void *values, __u32 *count);
LIBXPS_API int xps_context__data_update_batch(struct xps_context *ctx,
					      const void *keys,
					      const void *values,
					      __u32 *count);
LIBXPS_API int xps_context__data_delete_batch(struct xps_context *ctx,
					      const void *keys, __u32 *count);
/* Key and value sizes of the data map. */
LIBXPS_API int xps_context__data_sizes(const struct xps_context *ctx,
				       __u32 *key_size, __u32 *value_size);

/* --- statistics (paper Table 3.2) ----------------------------------- */

/* Accesses of @key by the handler (0 when never looked up). */
LIBXPS_API int xps_context__keystats_get(struct xps_context *ctx,
					 const void *key, __u64 *count);

typedef int (*xps_keystat_cb)(const void *key, __u32 key_size, __u64 count,
			      void *data);
/* Every key the handler looked up, with its access count. */
LIBXPS_API int xps_context__keystats_for_each(struct xps_context *ctx,
					      xps_keystat_cb cb, void *data);

/* --- composability (paper Table 3.2) -------------------------------- */

/*
 * A context for @server_sock that runs no handler itself but selects a
 * sub-context by the @len (1..8) payload bytes at @offset.
 */
LIBXPS_API struct xps_context *xps_context__create_comp(int server_sock,
							int offset, int len);
LIBXPS_API struct xps_context *
xps_context__create_comp_pred(const struct xps_predicate *pred, int offset,
			      int len, const struct xps_context_opts *opts);
/* Run the handler in @obj_file for messages whose value is @value. */
LIBXPS_API struct xps_context *
xps_context__create_sub(struct xps_context *comp, const char *obj_file,
			const void *value);
LIBXPS_API struct xps_context *
xps_context__create_sub_opts(struct xps_context *comp, const char *obj_file,
			     const void *value,
			     const struct xps_context_opts *opts);

/* --- system ---------------------------------------------------------- */

struct xps_status {
	__u32 backend_tcp;	/* enum xps_backend that new contexts use */
	__u32 backend_udp;
	bool native_available;	/* the running kernel has the XPS hook */
	bool loaded;		/* framework loaded */
	bool draining;		/* no TCP context, connections still enrolled */
	__u32 enrolled;		/* stock TCP connections in the sockhash */
	__u32 contexts;
	char kernel_release[65];
};

LIBXPS_API int xps_framework__status(struct xps_status *st);
/*
 * Delete every context and remove all XPS state now.  Unlike deleting the
 * last context, this does not wait for enrolled stock-backend connections
 * to drain: bytes they have in flight inside the sockhash may be lost.
 */
LIBXPS_API int xps_framework__purge(void);
/*
 * Opt the UDP sockets of this network namespace that a UDP predicate
 * serves in to the native hook: the patched kernel runs it only on
 * sockets that opted in (UDP_SERVE), and a service's sockets are its own.
 * Every socket bound to a port a UDP predicate could match is enrolled
 * (addresses are not compared).  Context creation does it; call it again
 * when the service may have opened its sockets anew (a restart): a
 * daemon does on each reconnection.  Returns how many sockets it
 * enrolled (one enrolled before counts again), 0 when no native UDP hook
 * is in use, or a negative errno.
 */
LIBXPS_API int xps_framework__enroll_udp(void);
LIBXPS_API const char *xps_backend__name(__u32 backend);
/*
 * The predicate of a bound TCP or UDP socket (a listening server's): its
 * protocol, local port and local address (none for a wildcard bind), any
 * remote end.  The family is the socket's, AF_UNSPEC for [::] without
 * IPV6_V6ONLY (it takes IPv4 too) and AF_INET for a v4-mapped address.
 * Returns -EPROTONOSUPPORT (neither TCP nor UDP), -EAFNOSUPPORT (neither
 * IPv4 nor IPv6), -EINVAL (not bound to a port) or getsockname()'s error.
 */
LIBXPS_API int xps_predicate__from_socket(int sock, struct xps_predicate *pred);

/* --- aliases ---------------------------------------------------------- */

/*
 * The paper's Table 3.2 names and the other names of libxps 0.1.0: each is
 * the function named beside it, exported under both names (the same code,
 * the same arguments and results).
 */
/* = xps_context__create */
LIBXPS_API struct xps_context *xps_create_context(const char *obj_file,
						  int server_sock);
/* = xps_context__create_pred */
LIBXPS_API struct xps_context *
xps_create_context_pred(const char *obj_file, const struct xps_predicate *pred,
			const struct xps_context_opts *opts);
/* = xps_context__update */
LIBXPS_API int xps_update_context(struct xps_context *ctx,
				  const char *obj_file);
/* = xps_context__delete */
LIBXPS_API int xps_delete_context(struct xps_context *ctx);
/* = xps_context__stats_reset */
LIBXPS_API int xps_context__reset_stats(struct xps_context *ctx);
/* = xps_context__for_each */
LIBXPS_API int xps_for_each_context(xps_context_cb cb, void *data);
/* = xps_context__data_put */
LIBXPS_API int xps_put_data(struct xps_context *ctx, const void *key,
			    const void *value);
/* = xps_context__data_update */
LIBXPS_API int xps_update_data(struct xps_context *ctx, const void *key,
			       const void *value);
/* = xps_context__data_set */
LIBXPS_API int xps_set_data(struct xps_context *ctx, const void *key,
			    const void *value);
/* = xps_context__data_get */
LIBXPS_API int xps_get_data(struct xps_context *ctx, const void *key,
			    void *value);
/* = xps_context__data_delete */
LIBXPS_API int xps_delete_data(struct xps_context *ctx, const void *key);
/* = xps_context__data_put_batch */
LIBXPS_API int xps_put_data_batch(struct xps_context *ctx, const void *keys,
				  const void *values, __u32 *count);
/* = xps_context__data_update_batch */
LIBXPS_API int xps_update_data_batch(struct xps_context *ctx,
				     const void *keys, const void *values,
				     __u32 *count);
/* = xps_context__data_delete_batch */
LIBXPS_API int xps_delete_data_batch(struct xps_context *ctx,
				     const void *keys, __u32 *count);
/* = xps_context__data_sizes */
LIBXPS_API int xps_data_sizes(const struct xps_context *ctx, __u32 *key_size,
			      __u32 *value_size);
/* = xps_context__keystats_get */
LIBXPS_API int xps_get_stats(struct xps_context *ctx, const void *key,
			     __u64 *count);
/* = xps_context__keystats_for_each */
LIBXPS_API int xps_get_allstats(struct xps_context *ctx, xps_keystat_cb cb,
				void *data);
/* = xps_context__create_comp */
LIBXPS_API struct xps_context *xps_create_compcontext(int server_sock,
						      int offset, int len);
/* = xps_context__create_comp_pred */
LIBXPS_API struct xps_context *
xps_create_compcontext_pred(const struct xps_predicate *pred, int offset,
			    int len, const struct xps_context_opts *opts);
/* = xps_context__create_sub */
LIBXPS_API struct xps_context *xps_create_subcontext(struct xps_context *comp,
						     const char *obj_file,
						     const void *value);
/* = xps_context__create_sub_opts */
LIBXPS_API struct xps_context *
xps_create_subcontext_opts(struct xps_context *comp, const char *obj_file,
			   const void *value, const struct xps_context_opts *opts);
/* = xps_framework__status */
LIBXPS_API int xps_get_status(struct xps_status *st);
/* = xps_framework__purge */
LIBXPS_API int xps_purge(void);
/* = xps_backend__name */
LIBXPS_API const char *xps_backend_name(__u32 backend);
/* = xps_predicate__from_socket */
LIBXPS_API int xps_predicate_from_socket(int sock, struct xps_predicate *pred);

#ifdef __cplusplus
}
#endif

#endif /* __LIBXPS_H */
