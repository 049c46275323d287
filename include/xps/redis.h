/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Redis handler: layouts shared by bpf/redis.bpf.c, its filler daemon
 * (daemons/xps-redisd.c) and the tests.
 */
#ifndef __XPS_REDIS_H
#define __XPS_REDIS_H

#include <linux/types.h>

#define REDIS_KEY_MAX		128	/* longer keys are never cached */
#define REDIS_VALUE_MAX		1024	/* longer values are never cached */
#define REDIS_CACHE_ENTRIES	65536
#define REDIS_MISS_QUEUE	4096
#define REDIS_VERSIONS		262144	/* keys written; beyond: invalidate all */

struct redis_key {
	__u32 len;
	__u8 k[REDIS_KEY_MAX];		/* zero-padded */
};

struct redis_value {
	__u32 len;
	__u32 cgen;			/* redis_state.cgen when filled */
	__u64 version;			/* the key's version when filled */
	/*
	 * xps_kv_seal(len | (__u64)cgen << 32, version, 0, 0, key, v):
	 * a value whose seal does not match is not served
	 * (include/xps/kvsum.h)
	 */
	__u64 sum;
	__u8 v[REDIS_VALUE_MAX];
};

enum redis_state_flags {
	/*
	 * Serve nothing: Redis asks for a password, evicts keys, or a
	 * server-wide change was seen; the filler clears it once it has
	 * checked the server again.
	 */
	REDIS_NO_SERVE = 1 << 0,
};

struct redis_state {
	__u32 cgen;			/* bumped by FLUSHALL and friends */
	__u32 flags;			/* enum redis_state_flags */
};

/* xps_conn_state() flags */
enum redis_conn_flags {
	REDIS_CONN_NO_SERVE = 1 << 0,	/* SELECT, MULTI, AUTH, HELLO... seen */
};

_Static_assert(sizeof(struct redis_key) == 132, "redis_key layout");
_Static_assert(sizeof(struct redis_value) == 1048, "redis_value layout");
_Static_assert(sizeof(struct redis_state) == 8, "redis_state layout");

#endif
