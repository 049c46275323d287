/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The key-value cache of the Redis and memcached handlers
 * (bpf/lib/kvcache.bpf.h), as their fillers (xps-redisd, xps-memcachedd), xpsctl and the tests
 * see it.  Plain C: compiled by clang -target bpf and by the host
 * compiler, which must agree byte for byte (the _Static_asserts below) and
 * compute the same key hash.
 *
 * One hash-map lookup per GET: the data map, the version map and the key
 * statistics are keyed by a 64-bit hash of the key's bytes (struct
 * xps_kv_hkey), not by a fixed-size zero-padded key, so the kernel's map
 * hash runs over 8 bytes.  The full key is stored in the value and
 * compared: two keys with the same hash share a slot of the data map (the
 * one not stored misses), a version (a write to one invalidates both:
 * safe) and a statistics counter.  See docs/coherence.md.
 */
#ifndef __XPS_KVCACHE_H
#define __XPS_KVCACHE_H

#include <linux/types.h>

#include <xps/abi.h>
#include <xps/kvsum.h>

#define XPS_KV_KEY_MAX		256	/* key buffer; services cap lower */
#define XPS_KV_VALUE_MAX	1024	/* longer values are never cached */

/* A key: its length and bytes (what the miss queue carries). */
struct xps_kv_key {
	__u32 len;
	__u32 pad;
	union {
		__u8 b[XPS_KV_KEY_MAX];
		__u64 w[XPS_KV_KEY_MAX / 8];	/* the hash reads words */
	};
};

/* Key of the data, version and statistics maps: the key's hash. */
struct xps_kv_hkey {
	__u64 hash;
};

/* A cached value, stamped for the coherence protocol (docs/coherence.md). */
struct xps_kv_value {
	__u32 len;			/* bytes of v */
	__u32 cgen;			/* the state's cgen when filled */
	__u64 version;			/* the key's version when filled */
	__u64 cas;			/* memcached: what gets returns */
	__u32 client_flags;		/* memcached: the item's flags */
	/*
	 * Nonzero: the value of a write the kernel saw, put here when the
	 * handler passed it and not yet acknowledged by the server (struct
	 * xps_conn_wt): never served, and not the server's value yet.  The
	 * egress step clears it when the server's reply says the write took
	 * effect.  Not sealed: the one field changed in place.
	 */
	__u32 pending;
	/*
	 * xps_kv_seal(len | (__u64)cgen << 32, version, cas,
	 * xps_kv_seal_s3(client_flags, expire_ns, expire_tai_ns), key, v)
	 * (include/xps/kvsum.h): a value whose seal does not match the copy
	 * a handler made is not served.  xps_kv_value_seal() sets it.
	 */
	__u64 sum;
	/*
	 * Expiry: 0, never.  Otherwise the value is not served once
	 * bpf_ktime_get_ns() (CLOCK_MONOTONIC) reaches expire_ns or
	 * bpf_ktime_get_tai_ns() (CLOCK_TAI, which steps with the
	 * real-time clock the server's expiry follows) reaches
	 * expire_tai_ns, whichever comes first (docs/coherence.md, "Writes
	 * committed by the kernel").  Only the kernel's write-through sets
	 * them; fills from user space never carry an expiry.
	 */
	__u64 expire_ns;
	__u64 expire_tai_ns;
	struct xps_kv_key key;		/* the whole key: compared on lookup */
	__u8 v[XPS_KV_VALUE_MAX];
};

/*
 * What a kv-cache handler tags a reply capture with (struct xps_cap_arm):
 * the key a GET missed and the stamps a fill from its reply must carry,
 * read before the handler saw no write unanswered (docs/coherence.md,
 * "Learning from the server's replies").
 */
struct xps_kv_arm {
	__u64 version;			/* the key's version */
	__u32 cgen;			/* the state's cgen */
	__u32 pad;
	struct xps_kv_key key;
};

/*
 * Write-through (docs/coherence.md, "Writes committed by the kernel"): a
 * write request's value is built and sealed by the handler when it passes
 * the write, and put in the context's data map at once with @pending set
 * (struct xps_kv_value); the connection's record (struct xps_conn_wt in
 * include/xps/abi.h) names the reply that decides it, at most
 * XPS_CONN_WT_KEYS values of one write.
 */

/*
 * The head of every kv-cache handler's state (XPS_STATE_MAP value: struct
 * redis_state, struct mc_state), shared with its filler, which maps it
 * and changes it with atomic operations only (libxps's xps_kvcache__*).
 *
 * flags: bit 0 (XPS_KV_NO_SERVE) keeps the handler from answering at
 * all; a service may define more bits below XPS_KV_STOP_GEN_SHIFT.  The
 * high 16 bits count the stops the handler itself set (a command that
 * may change who may read what, seen before the server executes it): the
 * filler lifts a stop only with a compare-and-swap against the flags it
 * read before its check began, so a check already under way when the
 * handler stopped the fast path cannot lift that stop (docs/coherence.md,
 * "Stops and leases").
 *
 * lease_ns: bpf_ktime_get_ns() (CLOCK_MONOTONIC) until which the filler
 * vouches for the cache.  The filler renews it after each check of the
 * server; a dead or stuck filler stops the fast path when it runs out.
 * 0: no filler has ever run (values put by hand, xpsctl data put), no
 * lease is in force.
 *
 * idle_pass_ns: the server closes connections idle that long (Redis
 * `timeout`, memcached `idle_timeout`), halved by the filler; the handler
 * passes a request of each connection at least that often, so that the
 * server sees it alive.  0: the server closes no idle connection.
 */
#define XPS_KV_NO_SERVE		(1U << 0)
#define XPS_KV_STOP_GEN_SHIFT	16
#define XPS_KV_STOP_GEN_ONE	(1U << XPS_KV_STOP_GEN_SHIFT)

struct xps_kv_state {
	__u32 cgen;			/* bumped for a write of every key */
	__u32 flags;			/* see above */
	__u64 lease_ns;
	__u64 idle_pass_ns;
	__u64 unseen;			/* xps_config.unseen when last looked */
};

_Static_assert(sizeof(struct xps_kv_key) == 8 + XPS_KV_KEY_MAX, "xps_kv_key layout");
_Static_assert(sizeof(struct xps_kv_hkey) == 8, "xps_kv_hkey layout");
_Static_assert(sizeof(struct xps_kv_state) == 32, "xps_kv_state layout");
_Static_assert(sizeof(struct xps_kv_arm) == 16 + 8 + XPS_KV_KEY_MAX, "xps_kv_arm layout");
_Static_assert(sizeof(struct xps_kv_value) == 56 + 8 + XPS_KV_KEY_MAX + XPS_KV_VALUE_MAX,
	       "xps_kv_value layout");

#ifndef XPS_KV_INLINE
#define XPS_KV_INLINE static inline __attribute__((always_inline, unused))
#endif

/* The bytes of word @i of a @len-byte key (little endian: the low ones). */
XPS_KV_INLINE __u64 xps_kv_word_mask(__u32 len, __u32 i)
{
	__u32 rem = len - i * 8;

	return rem >= 8 ? ~0ULL : (1ULL << (rem * 8)) - 1;
}

/*
 * The key's hash: one multiply per 8-byte word, then a final mix
 * (murmur3's fmix64).  Bytes of k->w past k->len are ignored, so neither
 * side has to zero them.  Not keyed: a client choosing colliding keys
 * only makes them miss or share a version, never read another key's
 * value (the stored key is compared).
 */
XPS_KV_INLINE __u64 xps_kv_hash_key(const struct xps_kv_key *k)
{
	__u64 h = 0x9e3779b97f4a7c15ULL ^ k->len;
	__u32 i, len = k->len;

	for (i = 0; i < XPS_KV_KEY_MAX / 8; i++) {
		if (i * 8 >= len)
			break;
		h = (h ^ (k->w[i] & xps_kv_word_mask(len, i))) *
		    0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* Whether @a and @b hold the same key (bytes past len ignored). */
XPS_KV_INLINE int xps_kv_key_eq(const struct xps_kv_key *a,
				const struct xps_kv_key *b)
{
	__u64 diff = 0;
	__u32 i, len = a->len;

	if (len != b->len || len > XPS_KV_KEY_MAX)
		return 0;
	for (i = 0; i < XPS_KV_KEY_MAX / 8; i++) {
		if (i * 8 >= len)
			break;
		diff |= (a->w[i] ^ b->w[i]) & xps_kv_word_mask(len, i);
	}
	return diff == 0;
}

#ifndef __bpf__
#include <string.h>

/* Set @k to the @len bytes at @bytes (user space). -1 if too long. */
static inline int xps_kv_key_set(struct xps_kv_key *k, const void *bytes,
				 size_t len)
{
	memset(k, 0, sizeof(*k));
	if (len > XPS_KV_KEY_MAX)
		return -1;
	k->len = len;
	memcpy(k->b, bytes, len);
	return 0;
}

static inline struct xps_kv_hkey xps_kv_hkey_of(const struct xps_kv_key *k)
{
	struct xps_kv_hkey h = { .hash = xps_kv_hash_key(k) };

	return h;
}

/* The seal of @v as it stands (its len, stamps, key and bytes). */
static inline __u64 xps_kv_value_sum(const struct xps_kv_value *v)
{
	__u32 vlen = v->len < XPS_KV_VALUE_MAX ? v->len : XPS_KV_VALUE_MAX;
	__u32 klen = v->key.len < XPS_KV_KEY_MAX ? v->key.len : XPS_KV_KEY_MAX;

	return xps_kv_seal(v->len | (__u64)v->cgen << 32, v->version, v->cas,
			   xps_kv_seal_s3(v->client_flags, v->expire_ns,
					  v->expire_tai_ns),
			   v->key.b, klen, v->v, vlen);
}

/* Seal @v: the last step of building a value, after every field is set. */
static inline void xps_kv_value_seal(struct xps_kv_value *v)
{
	v->sum = xps_kv_value_sum(v);
}
#endif

#endif /* __XPS_KVCACHE_H */
