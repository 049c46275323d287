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
 * global function, verified once.  @dst and @src are map values
 * (xps_ld64()).
 *
 * @at past XPS_STAGE_SIZE - XPS_STAGE_CHUNK is refused, even where the
 * bytes would fit: the verifier then knows that every store of the loop
 * lands in @dst, from @at and the step's offset alone, and the loop needs
 * no index mask or bounds test per step (a reply whose last value starts
 * in the stage's last KiB is passed).  43 BPF instructions per 32 bytes,
 * where the masked loop took about 60.
 */
__attribute__((noinline))
__u64 xps_stage_copy_sum(struct xps_stage *dst, __u32 at,
			 const struct xps_stage_chunk *src, __u32 n, __u64 h)
{
	__u64 w, w1, w2, w3;
	__u32 i, j;
	__u8 *d;
	__u8 c;

	if (!dst || !src || n > XPS_STAGE_CHUNK ||
	    at > XPS_STAGE_SIZE - XPS_STAGE_CHUNK)
		return ~h;
	d = &dst->b[at];
	/* 32 bytes a step; i is a constant in each step the verifier sees */
	for (i = 0; i < XPS_STAGE_CHUNK; i += 32) {
		if (i + 32 > n)
			break;
		w = xps_ld64(&src->b[i]);
		w1 = xps_ld64(&src->b[i + 8]);
		w2 = xps_ld64(&src->b[i + 16]);
		w3 = xps_ld64(&src->b[i + 24]);
		xps_st64(d + i, w);
		xps_st64(d + i + 8, w1);
		xps_st64(d + i + 16, w2);
		xps_st64(d + i + 24, w3);
		h = xps_kv_mix(h, w);
		h = xps_kv_mix(h, w1);
		h = xps_kv_mix(h, w2);
		h = xps_kv_mix(h, w3);
	}
	for (j = 0; j < 3; j++, i += 8) {
		if (i + 8 > n || i > XPS_STAGE_CHUNK - 8)
			break;
		w = xps_ld64(&src->b[i]);
		xps_st64(d + i, w);
		h = xps_kv_mix(h, w);
	}
	if (i < n) {
		w = 0;
		for (j = 0; j < 8; j++) {
			if (i + j >= n || i + j >= XPS_STAGE_CHUNK)
				break;
			c = *(const volatile __u8 *)&src->b[i + j];
			d[i + j] = c;
			w |= (__u64)c << (8 * j);
		}
		h = xps_kv_mix(h, w);
	}
	return h;
}

#endif
