/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Building a reply from pieces, for handlers whose reply is longer than
 * what the parsers' 2 KiB buffers hold: a 32 KiB staging buffer and a
 * copier that is a global subprogram (verified once).  No probe helpers:
 * bpf_probe_read_kernel() is missing for sk_skb programs on kernels built
 * without BPF tracing events, and libbpf then rewrites it into the legacy
 * bpf_probe_read(), which sk_skb may not call.
 */
#ifndef __XPS_STAGE_BPF_H
#define __XPS_STAGE_BPF_H

#define XPS_STAGE_SIZE		32768	/* a power of two, <= 32 KiB (per CPU) */
#define XPS_STAGE_CHUNK		1024	/* largest piece one call copies */

struct xps_stage {
	__u8 b[XPS_STAGE_SIZE];
};

struct xps_stage_chunk {
	__u8 b[XPS_STAGE_CHUNK];
};

/*
 * One 8-byte load or store at any byte offset of a map value.  Written
 * as *(__u64 *)&x->b[i], clang takes the alignment of the byte array (1)
 * and splits the access into eight byte loads or stores and the shifts to
 * join them, several times the instructions.  Through a void pointer it
 * emits one 8-byte access; the verifier allows unaligned access to map
 * values where the machine does it efficiently (x86-64, arm64), and never
 * to the stack, so these are for map values only.
 */
static __always_inline __u64 xps_ld64(const void *p)
{
	return *(const volatile __u64 *)p;
}

static __always_inline void xps_st64(void *p, __u64 v)
{
	*(__u64 *)p = v;
}

/*
 * Copy @n (<= XPS_STAGE_CHUNK) bytes of @src to @dst at @at, if they fit
 * (at + n <= XPS_STAGE_SIZE).  0 or -1.  Eight bytes per step (unaligned
 * stores: @at is any offset; @dst and @src are map values), then the last
 * n % 8 one by one.  The index
 * masks and the "idx > XPS_STAGE_SIZE - 8" test only reassure the
 * verifier; the fit check makes them no-ops.
 */
__attribute__((noinline))
int xps_stage_copy(struct xps_stage *dst, __u32 at,
		   const struct xps_stage_chunk *src, __u32 n)
{
	__u32 i, j, idx;

	if (!dst || !src || n > XPS_STAGE_CHUNK || at > XPS_STAGE_SIZE ||
	    at + n > XPS_STAGE_SIZE)
		return -1;
	for (i = 0; i < XPS_STAGE_CHUNK; i += 8) {
		if (i + 8 > n)
			break;
		idx = (at + i) & (XPS_STAGE_SIZE - 1);
		if (idx > XPS_STAGE_SIZE - 8)
			return -1;
		xps_st64(&dst->b[idx], xps_ld64(&src->b[i]));
	}
	for (j = 0; j < 8; j++) {
		if (i + j >= n)
			break;
		dst->b[(at + i + j) & (XPS_STAGE_SIZE - 1)] =
			src->b[(i + j) & (XPS_STAGE_CHUNK - 1)];
	}
	return 0;
}

/* Append literal bytes (up to 8) with constant-index stores. */
static __always_inline int xps_stage_lit(struct xps_stage *dst, __u32 at,
					 const char *s, __u32 n)
{
	__u32 i;

	if (n > 8 || at + n > XPS_STAGE_SIZE)
		return -1;
	for (i = 0; i < 8; i++) {
		if (i >= n)
			break;
		dst->b[(at + i) & (XPS_STAGE_SIZE - 1)] = s[i];
	}
	return 0;
}

#endif
