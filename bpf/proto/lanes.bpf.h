/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Eight bytes at a time ("lanes"): a byte mask holds 0x80 in each byte
 * lane where a test holds, lane 0 the byte at the lowest address
 * (little-endian loads).  Shared by the parsers' word scans and the
 * example handlers' line counting; plain C, for BPF and the host.
 */
#ifndef __XPS_PROTO_LANES_BPF_H
#define __XPS_PROTO_LANES_BPF_H

#include <linux/types.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the parsers' word scans assume little-endian loads"
#endif
#define XPS__W8(x)	(0x0101010101010101ULL * (__u8)(x))
#define XPS__W80	XPS__W8(0x80)
#define XPS__W7F	XPS__W8(0x7f)

/*
 * The 8 bytes at @p, any alignment: one load on BPF (the x86 JIT allows
 * it; the caller bounds @p for the verifier), memcpy() on the host.
 */
static inline __attribute__((always_inline, unused)) __u64
xps_lanes_load(const __u8 *p)
{
	__u64 w;

#if defined(__bpf__)
	w = *(const __u64 *)(const void *)p;
#else
	__builtin_memcpy(&w, p, 8);
#endif
	return w;
}

/* Lanes of @x that are zero, every one exact: no carry crosses a lane. */
static inline __attribute__((always_inline, unused)) __u64
xps_lanes_zero(__u64 x)
{
	return ~(((x & XPS__W7F) + XPS__W7F) | x | XPS__W7F);
}

/* Lanes before the first one set in @bad (8: none set). */
static inline __attribute__((always_inline, unused)) __u64
xps_lanes_lead(__u64 bad)
{
	__u64 low = bad & (~bad + 1);

	if (!bad)
		return 8;
	/* low >> 7 is 1 << 8j: the multiply puts j in the top byte */
	return ((low >> 7) * 0x0001020304050607ULL) >> 56;
}

#endif /* __XPS_PROTO_LANES_BPF_H */
