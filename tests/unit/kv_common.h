/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Table-driven checks shared by the Redis and memcached drivers: both
 * parsers fill struct xps_kv_req.
 */
#ifndef __XPS_TEST_KV_COMMON_H
#define __XPS_TEST_KV_COMMON_H

#include "harness.h"
#include "fixture.h"

typedef int (*kv_parse_fn)(const __u8 *, __u32, __u32, struct xps_kv_req *);

static __u8 kv_buf[XPS_SCRATCH];

static int kv_complete(int kind)
{
	return kind != XPS_REQ_INCOMPLETE && kind != XPS_REQ_MALFORMED;
}

/* One fixture at @off, with the rest of the buffer filled with @fill. */
static void kv_check_one(kv_parse_fn parse, const struct fx *f, __u32 off,
			 int fill)
{
	struct xps_kv_req r;
	__u32 len = off + f->req_n;
	int k, i;

	if (len > XPS_SCRATCH)
		len = XPS_SCRATCH;
	h_load(kv_buf, off, f->req, f->req_n, fill);
	k = parse(kv_buf, len, off, &r);
	CHECK(k == f->kind && (int)r.kind == k, "kind %d want %d", k, f->kind);
	CHECK((r.flags & f->flags) == f->flags, "flags %#x lack %#x", r.flags, f->flags);
	CHECK(!(r.flags & f->noflags), "flags %#x have %#x", r.flags, f->noflags);
	if (f->flags & XPS_F_RELEXP)
		CHECK(r.num == f->num, "exptime %u want %u", r.num, f->num);
	if (f->req_len != ANY)
		CHECK(r.req_len == f->req_len, "req_len %u want %u", r.req_len, f->req_len);
	if (k == XPS_REQ_INCOMPLETE && f->hint >= 0)
		CHECK((int)r.hint == f->hint, "hint %u want %d", r.hint, f->hint);
	if (f->nkeys >= 0)
		CHECK(r.nkeys == f->nkeys, "nkeys %u want %d", r.nkeys, f->nkeys);
	for (i = 0; i < f->nkeys && i < 4 && f->keys[i]; i++) {
		size_t kl = strlen(f->keys[i]);

		CHECK(r.keys[i].len == kl && r.keys[i].off >= off &&
		      !memcmp(kv_buf + r.keys[i].off, f->keys[i], kl),
		      "key %d is '%.*s'", i, r.keys[i].len,
		      (const char *)kv_buf + (r.keys[i].off & XPS_SCRATCH_MASK));
	}
	if (kv_complete(k))
		CHECK(r.req_len > 0 && r.req_len <= len - off,
		      "complete request of %u bytes in %u", r.req_len, len - off);
}

static void kv_run_table(const char *suite, kv_parse_fn parse,
			 const struct fx *t, size_t n)
{
	char name[160];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s fixture: %s", suite, t[i].desc);
		h_begin(name);
		kv_check_one(parse, &t[i], 0, 0);
		/* Same bytes later in the buffer, and junk after len: the
		 * parser may only look at [off, len). */
		kv_check_one(parse, &t[i], 100, 0xa5);
		kv_check_one(parse, &t[i], 7, '\n');
		h_end();
	}
}

/* Every proper prefix of a complete request must be INCOMPLETE. */
static void kv_run_split(const char *suite, kv_parse_fn parse,
			 const struct fx *t, size_t n)
{
	char name[160];
	size_t i, cut;

	for (i = 0; i < n; i++) {
		struct xps_kv_req full, r;
		int k;

		h_load(kv_buf, 0, t[i].req, t[i].req_n, 0);
		k = parse(kv_buf, t[i].req_n, 0, &full);
		if (!kv_complete(k))
			continue;
		snprintf(name, sizeof(name), "%s split: %s", suite, t[i].desc);
		h_begin(name);
		for (cut = 0; cut < full.req_len; cut++) {
			h_load(kv_buf, 0, t[i].req, cut, 0x5a);
			k = parse(kv_buf, cut, 0, &r);
			CHECK(k == XPS_REQ_INCOMPLETE,
			      "prefix %zu of %u: kind %d", cut, full.req_len, k);
			if (r.hint && full.kind != XPS_REQ_SERVE &&
			    full.kind != XPS_REQ_HARMLESS)
				CHECK(r.hint == full.kind ||
				      (r.flags & XPS_F_ALL),
				      "prefix %zu: hint %u, complete kind %u",
				      cut, r.hint, full.kind);
		}
		h_end();
	}
}

/* All complete fixtures back to back: the walk finds each one. */
static void kv_run_pipeline(const char *suite, kv_parse_fn parse,
			    const struct fx *t, size_t n)
{
	static __u8 stream[XPS_SCRATCH];
	int kinds[256];
	__u32 lens[256], len = 0, off = 0;
	size_t i, m = 0;
	char name[160];

	snprintf(name, sizeof(name), "%s pipeline of complete fixtures", suite);
	h_begin(name);
	for (i = 0; i < n && m < 256; i++) {
		struct xps_kv_req r;
		int k;

		h_load(kv_buf, 0, t[i].req, t[i].req_n, 0);
		k = parse(kv_buf, t[i].req_n, 0, &r);
		if (!kv_complete(k) || len + r.req_len > XPS_SCRATCH)
			continue;
		memcpy(stream + len, t[i].req, r.req_len);
		len += r.req_len;
		kinds[m] = k;
		lens[m++] = r.req_len;
	}
	for (i = 0; i < m; i++) {
		struct xps_kv_req r;
		int k = parse(stream, len, off, &r);

		CHECK(k == kinds[i] && r.req_len == lens[i],
		      "request %zu at %u: kind %d len %u, want %d %u", i, off,
		      k, r.req_len, kinds[i], lens[i]);
		if (k != kinds[i])
			break;
		off += r.req_len;
	}
	CHECK(off == len, "walked %u of %u bytes", off, len);
	h_end();
}

/* Random and mutated input: invariants hold and nothing depends on bytes
 * past len.  Each iteration mutates a fixture; every seventh is 64 bytes
 * drawn from @alphabet.  The second buffer is padded with @pad.
 */
static void kv_run_hostile(const char *suite, kv_parse_fn parse,
			   const struct fx *fx, unsigned nfx, unsigned seed,
			   const char *alphabet, __u8 pad, int check_keys)
{
	static __u8 a[XPS_SCRATCH], b[XPS_SCRATCH];
	unsigned nalpha = strlen(alphabet);
	struct xps_kv_req ra, rb;
	char title[64];
	int it;

	snprintf(title, sizeof(title), "%s hostile: random and mutated requests", suite);
	h_begin(title);
	for (it = 0; it < 20000; it++) {
		const struct fx *f = &fx[it % nfx];
		__u32 len = f->req_n, i;

		memset(a, 0, sizeof(a));
		memcpy(a, f->req, len);
		for (i = 0; i < 3; i++) {
			seed = seed * 1103515245 + 12345;
			if (len)
				a[(seed >> 8) % len] = (__u8)(seed >> 20);
		}
		if (it % 7 == 0) {
			for (i = 0; i < 64; i++) {
				seed = seed * 1103515245 + 12345;
				a[i] = alphabet[(seed >> 16) % nalpha];
			}
			len = 64;
		}
		memcpy(b, a, len);
		memset(b + len, pad, XPS_SCRATCH - len);
		parse(a, len, 0, &ra);
		parse(b, len, 0, &rb);
		CHECK(!memcmp(&ra, &rb, offsetof(struct xps_kv_req, ws)), "iteration %d depends on bytes past len", it);
		if (kv_complete(ra.kind))
			CHECK(ra.req_len && ra.req_len <= len, "iteration %d: req_len %u of %u", it, ra.req_len, len);
		CHECK(ra.nkeys <= XPS_MAX_KEYS, "nkeys %u", ra.nkeys);
		for (i = 0; check_keys && i < ra.nkeys && kv_complete(ra.kind); i++)
			CHECK(ra.keys[i].off + ra.keys[i].len <= len, "key outside request");
	}
	h_end();
}

/*
 * A fast GET recognizer (xps_redis_parse_get(), xps_mc_parse_get()) says
 * "GET of this key, this long" for the first request of a @len-byte
 * buffer, or 0.  It must never disagree with the full parser: checked on
 * every fixture, every fixture cut short or with a byte changed, and
 * random bytes.  @must lists requests it has to recognize.
 */
typedef __u32 (*kv_fast_fn)(const __u8 *buf, __u32 len, struct xps_span *key,
			    __u32 *extra_flags);

static void kv_fast_one(kv_parse_fn parse, kv_fast_fn fast, const __u8 *buf,
			__u32 len, const char *what, __u32 *hits)
{
	struct xps_span key;
	struct xps_kv_req r;
	__u32 n, extra = 0;
	int k;

	n = fast(buf, len, &key, &extra);
	if (!n)
		return;
	(*hits)++;
	k = parse(buf, len, 0, &r);
	CHECK(k == XPS_REQ_SERVE && r.req_len == n && r.nkeys == 1 &&
	      r.keys[0].off == key.off && r.keys[0].len == key.len &&
	      r.flags == extra,
	      "%s: fast says GET of %u bytes (key %u+%u), parser says kind %d, %u bytes, %u keys, flags %#x",
	      what, n, key.off, key.len, k, r.req_len, r.nkeys, r.flags);
}

static void kv_run_fast(const char *suite, kv_parse_fn parse, kv_fast_fn fast,
			const struct fx *t, size_t nfx, const char *const *must,
			const char *alphabet)
{
	static __u8 a[XPS_SCRATCH];
	unsigned seed = 12345, nalpha = strlen(alphabet);
	__u32 hits = 0, i, it, len;
	struct xps_span key;
	char title[96];
	size_t f;

	snprintf(title, sizeof(title), "%s fast GET agrees with the parser", suite);
	h_begin(title);
	for (i = 0; must[i]; i++) {
		__u32 extra = 0;

		h_load(a, 0, must[i], strlen(must[i]), 0x5a);
		CHECK(fast(a, strlen(must[i]), &key, &extra) == strlen(must[i]),
		      "not recognized: %s", must[i]);
		kv_fast_one(parse, fast, a, strlen(must[i]), must[i], &hits);
	}
	for (f = 0; f < nfx; f++) {
		for (len = 0; len <= t[f].req_n; len++) {
			h_load(a, 0, t[f].req, len, 0x5a);
			kv_fast_one(parse, fast, a, len, t[f].desc, &hits);
		}
	}
	for (it = 0; it < 200000; it++) {
		const char *src = must[it % 3 ? 0 : 1] ? must[it % 2] : must[0];

		len = strlen(src);
		h_load(a, 0, src, len, 0);
		for (i = 0; i < 2; i++) {
			seed = seed * 1103515245 + 12345;
			a[(seed >> 8) % len] = (it & 1) ? (__u8)(seed >> 20) :
				(__u8)alphabet[(seed >> 16) % nalpha];
		}
		seed = seed * 1103515245 + 12345;
		if (it % 5 == 0)
			len -= (seed >> 8) % len;
		kv_fast_one(parse, fast, a, len, "mutated", &hits);
	}
	CHECK(hits > 1000, "only %u inputs recognized: the test proves little", hits);
	h_end();
}

#endif /* __XPS_TEST_KV_COMMON_H */
