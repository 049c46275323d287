// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Host tests of bpf/proto/redis.bpf.h: fixtures, splits, pipelines,
 * hostile input and the bulk encoder. */
#include "redis.bpf.h"
#include "kv_common.h"
#include "redis_fixtures.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_encoder(void)
{
	static __u8 val[XPS_SCRATCH], out[XPS_SCRATCH];
	static const __u32 sizes[] = { 0, 1, 9, 10, 99, 100, 999, 1000, 2000 };
	char want[XPS_SCRATCH + 32];
	__u8 hdr[XPS_REDIS_BULK_HDR_MAX];
	size_t i;
	int n, w;

	h_begin("redis encode: bulk replies as redis-server prints them");
	for (i = 0; i < XPS_SCRATCH; i++)
		val[i] = (__u8)(i * 7);
	for (i = 0; i < N(sizes); i++) {
		n = xps_redis_encode_bulk(out, val, sizes[i]);
		w = snprintf(want, sizeof(want), "$%u\r\n", sizes[i]);
		memcpy(want + w, val, sizes[i]);
		memcpy(want + w + sizes[i], "\r\n", 2);
		w += sizes[i] + 2;
		CHECK(n == w && !memcmp(out, want, w), "size %u: %d bytes", sizes[i], n);
	}
	CHECK(xps_redis_encode_bulk(out, val, XPS_SCRATCH) == -1, "oversize accepted");
	n = xps_redis_encode_bulk_hdr(hdr, 4294967295u);
	CHECK(n == 13 && !memcmp(hdr, "$4294967295\r\n", 13), "max header");
	n = xps_redis_encode_bulk_hdr(hdr, 123456789);
	CHECK(n == 12 && !memcmp(hdr, "$123456789\r\n", 12), "9-digit header");
	CHECK(!memcmp(XPS_REDIS_NIL, "$-1\r\n", XPS_REDIS_NIL_LEN), "nil");
	h_end();
}

/* Random and mutated input: invariants hold and nothing depends on bytes
 * past len. */
static void test_hostile(void)
{
	static __u8 a[XPS_SCRATCH], b[XPS_SCRATCH];
	struct xps_kv_req ra, rb;
	unsigned seed = 1;
	int it;

	h_begin("redis hostile: random and mutated requests");
	for (it = 0; it < 20000; it++) {
		const struct fx *f = &redis_fx[it % N(redis_fx)];
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
				a[i] = "*$\r\n0123456789-GETSET abc"[(seed >> 16) % 25];
			}
			len = 64;
		}
		memcpy(b, a, len);
		memset(b + len, 0xff, XPS_SCRATCH - len);
		xps_redis_parse(a, len, 0, &ra);
		xps_redis_parse(b, len, 0, &rb);
		CHECK(!memcmp(&ra, &rb, offsetof(struct xps_kv_req, ws)), "iteration %d depends on bytes past len", it);
		if (kv_complete(ra.kind))
			CHECK(ra.req_len && ra.req_len <= len, "iteration %d: req_len %u of %u", it, ra.req_len, len);
		CHECK(ra.nkeys <= XPS_MAX_KEYS, "nkeys %u", ra.nkeys);
		for (i = 0; i < ra.nkeys && kv_complete(ra.kind); i++)
			CHECK(ra.keys[i].off + ra.keys[i].len <= len, "key outside request");
	}
	h_end();
}

int main(void)
{
	kv_run_table("redis", xps_redis_parse, redis_fx, N(redis_fx));
	kv_run_split("redis", xps_redis_parse, redis_fx, N(redis_fx));
	kv_run_pipeline("redis", xps_redis_parse, redis_fx, N(redis_fx));
	test_encoder();
	test_hostile();
	return h_summary("test_redis");
}
