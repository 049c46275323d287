/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The seal of a cached value (docs/coherence.md, "What is served is what
 * was filled").
 *
 * A handler reads a cached value in place, in the map element a lookup
 * returned.  Hash map elements are reused as soon as they are freed
 * (bpf_mem_alloc keeps a per-CPU free list), so while a handler copies a
 * value the filler may replace it, and the element may already hold
 * another key's value: the copy can be torn, another key's or stale.
 * The filler therefore seals every value: a 64-bit hash over the stamps,
 * the key and the value bytes.  The handler computes the same hash over
 * the copy it is about to send, with the key it was asked for and the
 * stamps it checked, and serves the copy only when the two agree.
 *
 * This file is the reference, used by the fillers and the tests; the
 * handlers' BPF code (bpf/lib/kvsum.bpf.h) computes the same function.
 * Words are 8 bytes in the machine's order; a last partial word is
 * assembled little-end first and zero-padded.
 */
#ifndef __XPS_KVSUM_H
#define __XPS_KVSUM_H

#include <linux/types.h>

#define XPS_KV_SUM_SEED		0x6a09e667f3bcc908ULL

static inline __u64 xps_kv_mix(__u64 h, __u64 w)
{
	h ^= w;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

/*
 * The seal's fourth stamp: the item's client flags, and its expiry
 * folded in when it has one, so that a value without an expiry is sealed
 * as before the expiry existed.
 */
static inline __u64 xps_kv_seal_s3(__u32 client_flags, __u64 expire_ns,
				   __u64 expire_tai_ns)
{
	if (!expire_ns && !expire_tai_ns)
		return client_flags;
	return client_flags ^ xps_kv_mix(xps_kv_mix(XPS_KV_SUM_SEED, expire_ns),
					 expire_tai_ns);
}

#ifndef __bpf__
#include <string.h>

/* Fold @n bytes at @p into @h. */
static inline __u64 xps_kv_sum_bytes(__u64 h, const void *p, __u32 n)
{
	const __u8 *b = p;
	__u64 w;
	__u32 i, j;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, b + i, 8);
		h = xps_kv_mix(h, w);
	}
	if (i < n) {
		w = 0;
		for (j = 0; i + j < n; j++)
			w |= (__u64)b[i + j] << (8 * j);
		h = xps_kv_mix(h, w);
	}
	return h;
}

/*
 * The seal: @s0 to @s3, the value's stamps and attributes, are folded in
 * first (each service's header says which), then the key, then the value.
 */
static inline __u64 xps_kv_seal(__u64 s0, __u64 s1, __u64 s2, __u64 s3,
				const void *key, __u32 klen,
				const void *val, __u32 vlen)
{
	__u64 h = XPS_KV_SUM_SEED;

	h = xps_kv_mix(h, s0);
	h = xps_kv_mix(h, s1);
	h = xps_kv_mix(h, s2);
	h = xps_kv_mix(h, s3);
	h = xps_kv_sum_bytes(h, key, klen);
	return xps_kv_sum_bytes(h, val, vlen);
}
#endif /* !__bpf__ */

#endif
