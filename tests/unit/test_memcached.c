// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Host tests of bpf/proto/memcached.bpf.h: fixtures, splits, pipelines,
 * key limits, hostile input, VALUE/END encoders and the UDP header. */
#include "memcached.bpf.h"
#include "kv_common.h"
#include "memcached_fixtures.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_key_limits(void)
{
	static char req[600];
	struct xps_kv_req r;
	int n;

	h_begin("memcached key length 250 served, 251 passed");
	n = snprintf(req, sizeof(req), "get %.*s\r\n", 250,
		     "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk");
	h_load(kv_buf, 0, req, n, 0);
	CHECK(xps_mc_parse(kv_buf, n, 0, &r) == XPS_REQ_SERVE && r.keys[0].len == 250, "250");
	n = snprintf(req, sizeof(req), "get %.*s\r\n", 251,
		     "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk");
	h_load(kv_buf, 0, req, n, 0);
	CHECK(xps_mc_parse(kv_buf, n, 0, &r) == XPS_REQ_HARMLESS && (r.flags & XPS_F_BADKEY), "251");
	n = snprintf(req, sizeof(req), "set %.*s 0 0 1\r\nx\r\n", 251,
		     "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk");
	h_load(kv_buf, 0, req, n, 0);
	/* CLIENT_ERROR and no data block: "x" is the next command. */
	CHECK(xps_mc_parse(kv_buf, n, 0, &r) == XPS_REQ_HARMLESS && r.req_len == (__u32)n - 3, "set 251");
	h_end();
}

static void test_encoders(void)
{
	static __u8 kbuf[XPS_SCRATCH], val[XPS_SCRATCH], out[XPS_SCRATCH];
	struct xps_span key = { 10, 1 };
	__u32 at;
	__u16 id = 0;

	h_begin("memcached encode: VALUE/END as memcached 1.6.18 prints them");
	kbuf[10] = 'k';
	memcpy(val, "abc", 3);
	at = xps_mc_encode_value(out, 0, kbuf, key, 5, val, 3, 0, 0);
	at = xps_mc_encode_end(out, at);
	CHECK(at == 23 && !memcmp(out, "VALUE k 5 3\r\nabc\r\nEND\r\n", 23), "get reply");
	at = xps_mc_encode_value(out, 0, kbuf, key, 5, val, 3, 2, 1);
	at = xps_mc_encode_end(out, at);
	CHECK(at == 25 && !memcmp(out, "VALUE k 5 3 2\r\nabc\r\nEND\r\n", 25), "gets reply");
	at = xps_mc_encode_value(out, 0, kbuf, key, 4294967295u, val, 0, 18446744073709551615ull, 1);
	CHECK(at && !memcmp(out, "VALUE k 4294967295 0 18446744073709551615\r\n\r\n", at), "max numbers");
	CHECK(!xps_mc_encode_value(out, XPS_SCRATCH - 20, kbuf, key, 0, val, 3, 0, 0), "overflow accepted");

	/* UDP: memcached answers with the request id, seq 0, count 1. */
	memcpy(kv_buf, "\x12\x34\x00\x05\x00\x01\x00\x03get f\r\n", 15);
	CHECK(xps_mc_udp_parse(kv_buf, 15, &id) == 0 && id == 0x1234, "udp parse");
	memcpy(kv_buf, "\x00\x07\x00\x00\x00\x02\x00\x00", 8);
	CHECK(xps_mc_udp_parse(kv_buf, 8, &id) == -1, "multi-datagram request accepted");
	CHECK(xps_mc_udp_parse(kv_buf, 7, &id) == -1, "short datagram accepted");
	xps_mc_udp_encode(out, 0x1234, 0, 1);
	CHECK(!memcmp(out, "\x12\x34\x00\x00\x00\x01\x00\x00", 8), "udp encode");
	h_end();
}

static __u32 mc_fast(const __u8 *buf, __u32 len, struct xps_span *key,
		     __u32 *extra_flags)
{
	int cas = 0;
	__u32 n = xps_mc_parse_get(buf, len, key, &cas);

	*extra_flags = cas ? XPS_F_CAS : 0;
	return n;
}

static const char *const mc_must[] = {
	"get key:0000000000000000000000000001\r\n",
	"gets k\r\n",
	"get \x80\xff~!\r\n",
	NULL,
};

int main(void)
{
	kv_run_table("memcached", xps_mc_parse, mc_fx, N(mc_fx));
	kv_run_split("memcached", xps_mc_parse, mc_fx, N(mc_fx));
	kv_run_pipeline("memcached", xps_mc_parse, mc_fx, N(mc_fx));
	test_key_limits();
	test_encoders();
	kv_run_hostile("memcached", xps_mc_parse, mc_fx, N(mc_fx), 7,
		       "getsetcas 0123456789-\r\n\t", 0x0a, 0);
	kv_run_fast("memcached", xps_mc_parse, mc_fast, mc_fx, N(mc_fx), mc_must,
		    "getsk \r\n\t\x7f\x00\x80\x21");
	return h_summary("test_memcached");
}
