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
 * xps_stage_copy() that also folds the bytes it stores into @h: copy @n
 * (<= XPS_STAGE_CHUNK) bytes of @src to @dst at @at and return the seal
 * continued from @h over them, or ~@h when they do not fit (so that the
 * seal cannot match).  Each word is loaded once, then stored and hashed:
 * what is hashed is what was copied, however @src changes meanwhile.  A
 * global function, verified once.  The index masks and the "idx >" and
 * "i >" tests only reassure the verifier; the fit check makes them no-ops.  @dst and @src are map values (xps_ld64()).
 */
__attribute__((noinline))
__u64 xps_stage_copy_sum(struct xps_stage *dst, __u32 at,
			 const struct xps_stage_chunk *src, __u32 n, __u64 h)
{
	__u64 w, w1, w2, w3;
	__u32 i, j, idx;
	__u8 c;

	if (!dst || !src || n > XPS_STAGE_CHUNK || at > XPS_STAGE_SIZE ||
	    at + n > XPS_STAGE_SIZE)
		return ~h;
	/* 32 bytes a step: one bounds check for four words */
	for (i = 0; i < XPS_STAGE_CHUNK; i += 32) {
		if (i + 32 > n)
			break;
		idx = (at + i) & (XPS_STAGE_SIZE - 1);
		if (idx > XPS_STAGE_SIZE - 32)
			return ~h;
		w = xps_ld64(&src->b[i & (XPS_STAGE_CHUNK - 32)]);
		w1 = xps_ld64(&src->b[(i & (XPS_STAGE_CHUNK - 32)) + 8]);
		w2 = xps_ld64(&src->b[(i & (XPS_STAGE_CHUNK - 32)) + 16]);
		w3 = xps_ld64(&src->b[(i & (XPS_STAGE_CHUNK - 32)) + 24]);
		xps_st64(&dst->b[idx], w);
		xps_st64(&dst->b[idx + 8], w1);
		xps_st64(&dst->b[idx + 16], w2);
		xps_st64(&dst->b[idx + 24], w3);
		h = xps_kv_mix(h, w);
		h = xps_kv_mix(h, w1);
		h = xps_kv_mix(h, w2);
		h = xps_kv_mix(h, w3);
	}
	for (j = 0; j < 3; j++, i += 8) {
		if (i + 8 > n)
			break;
		idx = (at + i) & (XPS_STAGE_SIZE - 1);
		if (idx > XPS_STAGE_SIZE - 8 || i > XPS_STAGE_CHUNK - 8)
			return ~h;
		w = xps_ld64(&src->b[i]);
		xps_st64(&dst->b[idx], w);
		h = xps_kv_mix(h, w);
	}
	if (i < n) {
		w = 0;
		for (j = 0; j < 8; j++) {
			if (i + j >= n)
				break;
			c = *(const volatile __u8 *)
				&src->b[(i + j) & (XPS_STAGE_CHUNK - 1)];
			dst->b[(at + i + j) & (XPS_STAGE_SIZE - 1)] = c;
			w |= (__u64)c << (8 * j);
		}
		h = xps_kv_mix(h, w);
	}
	return h;
}

#endif
