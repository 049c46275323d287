/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Memcached handler: layouts shared by services/memcached/memcached.bpf.c, its filler
 * (services/memcached/xps-memcachedd.c) and the tests.  The cache itself is
 * include/xps/kvcache.h.
 */
#ifndef __XPS_MEMCACHED_H
#define __XPS_MEMCACHED_H

#include <linux/types.h>

#include <xps/kvcache.h>

#define MC_KEY_MAX		250	/* memcached's KEY_MAX_LENGTH */
#define MC_VALUE_MAX		XPS_KV_VALUE_MAX
#define MC_CACHE_ENTRIES	65536
#define MC_MISS_QUEUE		4096
#define MC_VERSIONS		262144	/* keys written; beyond: invalidate all */

enum mc_state_flags {
	MC_NO_SERVE = XPS_KV_NO_SERVE,	/* set by the filler, see its log */
};

struct mc_state {
	struct xps_kv_state kv;		/* cgen (flush_all, unparsed bytes), flags, lease */
	__u64 last_udp_write_ns;	/* bpf_ktime_get_ns() of the last UDP write */
	/*
	 * flush_all <delay>: every item stored before the deadline dies
	 * then.  Nothing is served from flush_min_ns to flush_max_ns
	 * (bpf_ktime_get_ns(); 0: no flush pending), which covers every
	 * pending deadline; the cache is invalidated at the end.
	 */
	__u64 flush_min_ns;
	__u64 flush_max_ns;
	/* CLOCK_REALTIME - CLOCK_MONOTONIC, kept by the filler (unix-time
	 * delays); 0 until it has run */
	__s64 realtime_minus_mono_ns;
};

enum mc_conn_flags {
	MC_CONN_NO_SERVE = 1 << 0,	/* malformed input: boundaries lost */
	MC_CONN_SPOKEN = 1 << 1,	/* memcached was given bytes of it */
};

_Static_assert(sizeof(struct mc_state) == 64, "mc_state layout");

#endif
