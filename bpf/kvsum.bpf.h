/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Checking a cached value's seal on the copy a handler sends: the BPF half
 * of include/xps/kvsum.h (which says why, and defines the function).
 */
#ifndef __XPS_KVSUM_BPF_H
#define __XPS_KVSUM_BPF_H

#include <xps/kvsum.h>
#include "stage.bpf.h"

/*
 * Fold the @n (<= XPS_STAGE_CHUNK) staged bytes at @at into @h; ~@h when
 * they do not fit, so that the seal cannot match.  A global function,
 * verified once.  The index masks and the "idx > XPS_STAGE_SIZE - 8" test
 * only reassure the verifier; the fit check makes them no-ops.
 */
__attribute__((noinline))
__u64 xps_kv_sum_stage(const struct xps_stage *s, __u32 at, __u32 n, __u64 h)
{
	__u32 i, j, idx;
	__u64 w;

	if (!s || n > XPS_STAGE_CHUNK || at > XPS_STAGE_SIZE ||
	    at + n > XPS_STAGE_SIZE)
		return ~h;
	for (i = 0; i < XPS_STAGE_CHUNK; i += 8) {
		if (i + 8 > n)
			break;
		idx = (at + i) & (XPS_STAGE_SIZE - 1);
		if (idx > XPS_STAGE_SIZE - 8)
			return ~h;
		h = xps_kv_mix(h, *(const __u64 *)&s->b[idx]);
	}
	if (i < n) {
		w = 0;
		for (j = 0; j < 8; j++) {
			if (i + j >= n)
				break;
			w |= (__u64)s->b[(at + i + j) & (XPS_STAGE_SIZE - 1)]
			     << (8 * j);
		}
		h = xps_kv_mix(h, w);
	}
	return h;
}

/*
 * The seal's head: stamps, then the @len bytes of a zero-padded key of at
 * most @max bytes (whole words: the padding gives the zeros the reference
 * adds; a little-endian load, as on every machine XPS runs on).
 */
#define xps_kv_seal_head(s0, s1, s2, s3, k, len, max)			\
	({								\
		__u64 __h = XPS_KV_SUM_SEED;				\
		__u32 __i;						\
									\
		__h = xps_kv_mix(__h, (s0));				\
		__h = xps_kv_mix(__h, (s1));				\
		__h = xps_kv_mix(__h, (s2));				\
		__h = xps_kv_mix(__h, (s3));				\
		for (__i = 0; __i + 8 <= (max); __i += 8) {		\
			if (__i >= (len))				\
				break;					\
			__h = xps_kv_mix(__h, *(const __u64 *)&(k)[__i]); \
		}							\
		__h;							\
	})

#endif
