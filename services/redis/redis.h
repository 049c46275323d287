/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Redis handler: layouts shared by services/redis/redis.bpf.c, its filler daemon
 * (services/redis/xps-redisd.c) and the tests.  The cache itself is
 * include/xps/kvcache.h.
 */
#ifndef __XPS_REDIS_H
#define __XPS_REDIS_H

#include <linux/types.h>

#include <xps/kvcache.h>

#define REDIS_KEY_MAX		128	/* longer keys are never cached */
#define REDIS_VALUE_MAX		XPS_KV_VALUE_MAX
#define REDIS_CACHE_ENTRIES	65536
#define REDIS_MISS_QUEUE	4096
#define REDIS_VERSIONS		262144	/* keys written; beyond: invalidate all */

enum redis_state_flags {
	/*
	 * Serve nothing: Redis asks for a password, evicts keys, or a
	 * server-wide change was seen; the filler clears it once it has
	 * checked the server again.
	 */
	REDIS_NO_SERVE = XPS_KV_NO_SERVE,
	/*
	 * A MONITOR was seen: the filler looks for monitors (CLIENT LIST)
	 * until none is left, and keeps REDIS_NO_SERVE meanwhile.
	 */
	REDIS_MONITOR = 1 << 1,
	/*
	 * Granted by the filler: every command Redis lists (COMMAND LIST)
	 * is in the handler's table, so a command missing from it is one
	 * Redis refuses, executing nothing.  The handler drops it at every
	 * server-wide change (MODULE LOAD among them), after its stop.
	 */
	REDIS_CMDS_KNOWN = 1 << 2,
};

struct redis_state {
	struct xps_kv_state kv;		/* cgen, flags (enum redis_state_flags), lease */
};

/* xps_conn_state() flags */
enum redis_conn_flags {
	REDIS_CONN_NO_SERVE = 1 << 0,	/* SELECT, MULTI, AUTH, HELLO... seen */
};

_Static_assert(sizeof(struct redis_state) == 32, "redis_state layout");

#endif
