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

/* The spans a write-through needs: a write of 3 or 5 arguments. */
static void test_value_span(void)
{
	static const struct {
		const char *req;
		const char *val;	/* NULL: no span */
	} cases[] = {
		{ "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n", "hello" },
		{ "*3\r\n$3\r\nset\r\n$1\r\nk\r\n$0\r\n\r\n", "" },
		{ "SET k plain\r\n", NULL },	/* inline: two spans kept */
		{ "SET k \"quoted\"\r\n", NULL },
		{ "*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nEX\r\n$1\r\n9\r\n", "v" },
		/* four arguments: argument 3, SETEX's value (of a SET of
		 * four, the handler reads it as GET, NX or XX and takes the
		 * value from opt[1], xps_redis_set_ttl()) */
		{ "*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n", "NX" },
		{ "*4\r\n$5\r\nSETEX\r\n$1\r\nk\r\n$1\r\n9\r\n$5\r\nhello\r\n", "hello" },
		{ "*4\r\n$6\r\npsetex\r\n$1\r\nk\r\n$1\r\n9\r\n$2\r\nhi\r\n", "hi" },
		{ "*3\r\n$6\r\nGETSET\r\n$1\r\nk\r\n$1\r\nv\r\n", "v" },
		/* six: arguments 3, 4 and 5 in opt[0..2] */
		{ "*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nsix\r\n$2\r\nNX\r\n$2\r\nEX\r\n$1\r\n9\r\n", "six" },
		{ "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", NULL },
		/* seven: no spans */
		{ "*7\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nEX\r\n$1\r\n9\r\n$3\r\nGET\r\n", NULL },
		{ "*3\r\n$5\r\nLPUSH\r\n$1\r\nk\r\n$1\r\nv\r\n", "v" },
	};
	struct xps_kv_req r;
	size_t i, n;

	h_begin("redis parse: the value and option spans of a SET, SETEX, PSETEX");
	for (i = 0; i < N(cases); i++) {
		n = strlen(cases[i].req);
		memset(kv_buf, 0, sizeof(kv_buf));
		memcpy(kv_buf, cases[i].req, n);
		xps_redis_parse(kv_buf, n, 0, &r);
		if (!cases[i].val) {
			CHECK(r.val.len == 0, "case %zu: a span of %u bytes", i, r.val.len);
			continue;
		}
		CHECK(r.val.len == strlen(cases[i].val) &&
		      !memcmp(kv_buf + r.val.off, cases[i].val, r.val.len),
		      "case %zu: span %u+%u", i, r.val.off, r.val.len);
		/* five arguments: the option and its number too */
		if (r.argc == 5)
			CHECK(r.opt[0].len == 2 && !memcmp(kv_buf + r.opt[0].off, "EX", 2) &&
			      r.opt[1].len == 1 && kv_buf[r.opt[1].off] == '9',
			      "case %zu: option spans", i);
		/* six: the three options */
		if (r.argc == 6)
			CHECK(r.opt[0].len == 2 && !memcmp(kv_buf + r.opt[0].off, "NX", 2) &&
			      r.opt[1].len == 2 && !memcmp(kv_buf + r.opt[1].off, "EX", 2) &&
			      r.opt[2].len == 1 && kv_buf[r.opt[2].off] == '9',
			      "case %zu: option spans", i);
		/* four: the time to live of SETEX, PSETEX */
		if (r.argc == 4)
			CHECK(r.opt[0].len == 0 && r.opt[1].len == 1 &&
			      kv_buf[r.opt[1].off] == (i == 5 ? 'v' : '9'),
			      "case %zu: the time to live's span", i);
	}
	h_end();
}

/* The values of an MSET, MSETNX: arguments 2, 4, 6, 8 in mval[]. */
static void test_pair_spans(void)
{
	static const struct {
		const char *req;
		const char *vals[XPS_KV_PAIRS];	/* NULL: no span */
	} cases[] = {
		{ "*3\r\n$4\r\nMSET\r\n$1\r\na\r\n$2\r\nv1\r\n", { "v1" } },
		{ "*5\r\n$4\r\nmset\r\n$1\r\na\r\n$2\r\nv1\r\n$1\r\nb\r\n$0\r\n\r\n",
		  { "v1", "" } },
		{ "*7\r\n$6\r\nMSETNX\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
		  "$1\r\nc\r\n$3\r\nccc\r\n", { "1", "2", "ccc" } },
		{ "*9\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
		  "$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$4\r\nfour\r\n", { "1", "2", "3", "four" } },
		/* five pairs: more than a write-through takes */
		{ "*11\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
		  "$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n4\r\n$1\r\ne\r\n$1\r\n5\r\n", { NULL } },
		/* an even count of arguments: an error for Redis */
		{ "*4\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n", { NULL } },
		{ "MSET a 1 b 2\r\n", { NULL } },	/* inline */
		{ "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", { NULL } },
	};
	struct xps_kv_req r;
	size_t i, j, n;
	const char *v;

	h_begin("redis parse: the value spans of an MSET, MSETNX");
	for (i = 0; i < N(cases); i++) {
		n = strlen(cases[i].req);
		memset(kv_buf, 0, sizeof(kv_buf));
		memcpy(kv_buf, cases[i].req, n);
		xps_redis_parse(kv_buf, n, 0, &r);
		for (j = 0; j < XPS_KV_PAIRS; j++) {
			v = cases[i].vals[j];
			if (!v) {
				CHECK(r.mval[j].len == 0, "case %zu, value %zu: a span of %u bytes",
				      i, j, r.mval[j].len);
				continue;
			}
			CHECK(r.mval[j].len == strlen(v) &&
			      !memcmp(kv_buf + r.mval[j].off, v, r.mval[j].len),
			      "case %zu, value %zu: span %u+%u", i, j, r.mval[j].off,
			      r.mval[j].len);
		}
	}
	h_end();
}

static __u32 redis_fast(const __u8 *buf, __u32 len, struct xps_span *key,
			__u32 *extra_flags)
{
	*extra_flags = 0;
	return xps_redis_parse_get(buf, len, 0, key);
}

static const char *const redis_must[] = {
	"*2\r\n$3\r\nGET\r\n$32\r\nkey:0000000000000000000000000001\r\n",
	"*2\r\n$3\r\nget\r\n$1\r\nk\r\n",
	"*2\r\n$3\r\ngEt\r\n$128\r\n"
	"0123456789012345678901234567890123456789012345678901234567890123"
	"0123456789012345678901234567890123456789012345678901234567890123\r\n",
	NULL,
};

/*
 * The fast SET recognizer (xps_redis_parse_set()) must leave the request
 * exactly as the parser does, every field but the work area, whenever it
 * recognizes one: checked on every fixture cut at every length, on SETs it
 * must know, and on mutations of them at every offset.
 */
static const char *const redis_set_must[] = {
	"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nhello\r\n",
	"*3\r\n$3\r\nset\r\n$1\r\nk\r\n$0\r\n\r\n",
	"*3\r\n$3\r\nsEt\r\n$16\r\nkey:000000000042\r\n$10\r\n0123\r\n6789\r\n",
	NULL,
};

/* Requests it must leave to the parser (some of which Redis refuses). */
static const char *const redis_set_never[] = {
	"*3\r\n$3\r\nSET\r\n$03\r\nkey\r\n$5\r\nhello\r\n",
	"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$05\r\nhello\r\n",
	"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$00\r\n\r\n",
	"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$5\r\nhello\r\n",
	"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$-1\r\n",
	"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\rXhello\r\n",
	"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nhello\rX",
	"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nhello\r\n",	/* cut */
	"*3\r\n$3\r\nSEX\r\n$3\r\nkey\r\n$5\r\nhello\r\n",
	"*4\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nhello\r\n$2\r\nNX\r\n",
	NULL,
};

static void fast_set_one(const __u8 *buf, __u32 len, const char *what,
			 __u32 *hits)
{
	struct xps_kv_req f, r;
	__u32 n;
	int k;

	memset(&f, 0xa5, sizeof(f));
	n = xps_redis_parse_set(buf, len, 0, &f);
	if (!n)
		return;
	(*hits)++;
	memset(&r, 0x5a, sizeof(r));
	k = xps_redis_parse(buf, len, 0, &r);
	CHECK(k == XPS_REQ_INVALIDATE && r.req_len == n &&
	      !memcmp(&f, &r, offsetof(struct xps_kv_req, ws)),
	      "%s: fast says SET of %u bytes (key %u+%u, value %u+%u), parser says kind %d, %u bytes, key %u+%u, value %u+%u, flags %#x",
	      what, n, f.keys[0].off, f.keys[0].len, f.val.off, f.val.len, k,
	      r.req_len, r.keys[0].off, r.keys[0].len, r.val.off, r.val.len,
	      r.flags);
}

static void test_fast_set(void)
{
	static const char alphabet[] = "*$\r\n0123456789SETset \x00\x80";
	static const char get[] = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
	static __u8 a[XPS_SCRATCH];
	unsigned seed = 4242;
	__u32 hits = 0, i, it, len, vlen;
	char big[1300];
	size_t f;

	h_begin("redis fast SET agrees with the parser");
	for (i = 0; redis_set_must[i]; i++) {
		len = strlen(redis_set_must[i]);
		h_load(a, 0, redis_set_must[i], len, 0x5a);
		CHECK(xps_redis_parse_set(a, len, 0, &(struct xps_kv_req){}) == len,
		      "not recognized: %s", redis_set_must[i]);
		fast_set_one(a, len, redis_set_must[i], &hits);
		/* at an offset, as a pipeline's later request */
		h_load(a, 0, get, strlen(get), 0x5a);
		memcpy(a + strlen(get), redis_set_must[i], len);
		CHECK(xps_redis_parse_set(a, strlen(get) + len, strlen(get),
					  &(struct xps_kv_req){}) == len,
		      "not recognized after a GET: %s", redis_set_must[i]);
	}
	for (i = 0; redis_set_never[i]; i++) {
		len = strlen(redis_set_never[i]) - (i == 7);
		h_load(a, 0, redis_set_never[i], len, 0x5a);
		CHECK(!xps_redis_parse_set(a, len, 0, &(struct xps_kv_req){}),
		      "recognized: %s", redis_set_never[i]);
	}
	/* a key of 1000 bytes: four digits */
	len = snprintf(big, sizeof(big), "*3\r\n$3\r\nSET\r\n$1000\r\n");
	memset(big + len, 'k', 1000);
	memcpy(big + len + 1000, "\r\n$1\r\nv\r\n", 9);
	len += 1009;
	h_load(a, 0, big, len, 0x5a);
	CHECK(!xps_redis_parse_set(a, len, 0, &(struct xps_kv_req){}),
	      "a key of 1000 bytes recognized");
	/* values of every length class, up to four digits */
	for (vlen = 0; vlen < 1200; vlen += vlen < 12 ? 1 : 97) {
		int n = snprintf(big, sizeof(big), "*3\r\n$3\r\nSET\r\n$2\r\nkk\r\n$%u\r\n", vlen);

		memset(big + n, 'v', vlen);
		memcpy(big + n + vlen, "\r\n", 2);
		len = n + vlen + 2;
		h_load(a, 0, big, len, 0x5a);
		CHECK(xps_redis_parse_set(a, len, 0, &(struct xps_kv_req){}) == len,
		      "a value of %u bytes not recognized", vlen);
		fast_set_one(a, len, "value length", &hits);
		/* cut short: never a SET */
		CHECK(!xps_redis_parse_set(a, len - 1, 0, &(struct xps_kv_req){}),
		      "a value of %u bytes cut short recognized", vlen);
	}
	for (f = 0; f < N(redis_fx); f++) {
		for (len = 0; len <= redis_fx[f].req_n; len++) {
			h_load(a, 0, redis_fx[f].req, len, 0x5a);
			fast_set_one(a, len, redis_fx[f].desc, &hits);
		}
	}
	for (it = 0; it < 200000; it++) {
		const char *src = redis_set_must[it % 3];

		len = strlen(src);
		h_load(a, 0, src, len, 0);
		for (i = 0; i < 2; i++) {
			seed = seed * 1103515245 + 12345;
			a[(seed >> 8) % len] = (it & 1) ? (__u8)(seed >> 20) :
				(__u8)alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
		}
		seed = seed * 1103515245 + 12345;
		if (it % 5 == 0)
			len -= (seed >> 8) % len;
		fast_set_one(a, len, "mutated", &hits);
	}
	CHECK(hits > 1000, "only %u inputs recognized: the test proves little", hits);
	h_end();
}

int main(void)
{
	kv_run_table("redis", xps_redis_parse, redis_fx, N(redis_fx));
	kv_run_split("redis", xps_redis_parse, redis_fx, N(redis_fx));
	kv_run_pipeline("redis", xps_redis_parse, redis_fx, N(redis_fx));
	test_encoder();
	test_value_span();
	test_pair_spans();
	kv_run_hostile("redis", xps_redis_parse, redis_fx, N(redis_fx), 1,
		       "*$\r\n0123456789-GETSET abc", 0xff, 1);
	kv_run_fast("redis", xps_redis_parse, redis_fast, redis_fx, N(redis_fx),
		    redis_must, "*$\r\n0123456789GETget \x00\x80");
	test_fast_set();
	return h_summary("test_redis");
}
