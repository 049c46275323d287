// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Host tests of bpf/proto/http.bpf.h: fixtures, splits, pipelines, the
 * Date formatter and the error responses nginx 1.22.1 sends. */
#include <stddef.h>
#include <time.h>
#include "http.bpf.h"
#include "harness.h"
#include "http_fixtures.h"
#include "http_ref.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static __u8 buf[XPS_SCRATCH];

static int complete(int k)
{
	return k == XPS_REQ_SERVE || k == XPS_REQ_HARMLESS;
}

static void check_one(const struct hfx *f, __u32 off, int fill)
{
	struct xps_http_req r;
	__u32 len = off + f->req_n;
	int k;

	h_load(buf, off, f->req, f->req_n, fill);
	k = xps_http_parse(buf, len, off, &r);
	CHECK(k == f->kind && (int)r.kind == k, "kind %d want %d (flags %#x)", k, f->kind, r.flags);
	CHECK((r.flags & f->flags) == f->flags, "flags %#x lack %#x", r.flags, f->flags);
	CHECK(!(r.flags & f->noflags), "flags %#x have %#x", r.flags, f->noflags);
	if (f->req_len != ANY)
		CHECK(r.req_len == f->req_len, "req_len %u want %u", r.req_len, f->req_len);
	CHECK(!strncmp((const char *)r.method, f->method, XPS_HTTP_METHOD_MAX),
	      "method '%.16s' want '%s'", r.method, f->method);
	if (f->minor >= 0)
		CHECK(r.http_minor == f->minor, "minor %u", r.http_minor);
	if (complete(k))
		CHECK(r.head_len && r.head_len <= len - off && r.req_len <= len - off,
		      "lengths %u/%u in %u", r.head_len, r.req_len, len - off);
}

static void test_fixtures(void)
{
	char name[160];
	size_t i;

	for (i = 0; i < N(http_fx); i++) {
		snprintf(name, sizeof(name), "http fixture: %s", http_fx[i].desc);
		h_begin(name);
		check_one(&http_fx[i], 0, 0);
		check_one(&http_fx[i], 300, 0xa5);
		check_one(&http_fx[i], 3, '\n');
		h_end();
	}
}

/* A complete request cut anywhere is INCOMPLETE; once the method is
 * whole it is reported. */
static void test_split(void)
{
	char name[160];
	size_t i, cut;

	for (i = 0; i < N(http_fx); i++) {
		struct xps_http_req full, r;
		__u32 total;

		h_load(buf, 0, http_fx[i].req, http_fx[i].req_n, 0);
		if (!complete(xps_http_parse(buf, http_fx[i].req_n, 0, &full)))
			continue;
		total = full.req_len ? full.req_len : full.head_len;
		snprintf(name, sizeof(name), "http split: %s", http_fx[i].desc);
		h_begin(name);
		for (cut = 0; cut < total; cut++) {
			int k;

			h_load(buf, 0, http_fx[i].req, cut, 0x5a);
			k = xps_http_parse(buf, cut, 0, &r);
			CHECK(k == XPS_REQ_INCOMPLETE, "prefix %zu of %u: kind %d", cut, total, k);
			if (r.method_span.len)
				CHECK(!memcmp(r.method, full.method, sizeof(r.method)),
				      "prefix %zu: method differs", cut);
		}
		h_end();
	}
}

static void test_pipeline(void)
{
	static const char two[] =
		"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
		"GET /b HTTP/1.1\r\nHost: x\r\n\r\n"
		"\r\nDELETE /c HTTP/1.1\r\nHost: x\r\n\r\n";
	struct xps_http_req r;
	__u32 off = 0, len = sizeof(two) - 1;
	static const char *want[] = { "POST", "GET", "DELETE" };
	int i;

	h_begin("http pipeline: three requests, body and leading CRLF");
	h_load(buf, 0, two, len, 0);
	for (i = 0; i < 3; i++) {
		CHECK(xps_http_parse(buf, len, off, &r) == XPS_REQ_SERVE, "request %d kind %u", i, r.kind);
		CHECK(!strcmp((const char *)r.method, want[i]), "request %d method %s", i, r.method);
		off += r.req_len;
	}
	CHECK(off == len, "walked %u of %u", off, len);
	h_end();
}

static void test_date(void)
{
	__u8 d[XPS_HTTP_DATE_LEN];
	char want[64];
	unsigned seed = 3;
	time_t t;
	int i;

	h_begin("http date: IMF-fixdate matches strftime for 100000 instants");
	for (i = 0; i < 100000; i++) {
		struct tm tm;

		seed = seed * 1103515245 + 12345;
		t = (time_t)(seed % 4102444800u);	/* 1970..2100 */
		if (i < 3)
			t = (time_t[]){ 0, 951782400, 1795376429 }[i];
		gmtime_r(&t, &tm);
		strftime(want, sizeof(want), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		xps_http_fmt_date(d, (__u64)t);
		CHECK(!memcmp(d, want, XPS_HTTP_DATE_LEN), "%ld: %.29s want %s", (long)t, d, want);
	}
	h_end();
}

/* The encoder reads 64 bytes of server token (http_state.server). */
static const char srv_full[64] = "nginx/1.22.1", srv_short[64] = "nginx";

static void test_encoder(void)
{
	static __u8 out[XPS_SCRATCH];
	const __u8 *date405 = (const __u8 *)"Sat, 21 Nov 2026 19:40:29 GMT";
	const __u8 *date403 = (const __u8 *)"Sat, 21 Nov 2026 19:40:30 GMT";
	__u32 n, hl;

	h_begin("http encode: byte-identical to nginx 1.22.1's 405 and 403");
	n = xps_http_encode_error(out, 405, (const __u8 *)srv_full, 12, date405, 1, 0);
	CHECK(n == sizeof(http_405_ref) - 1 && !memcmp(out, http_405_ref, n),
	      "405: %u bytes:\n%.*s", n, (int)n, out);
	n = xps_http_encode_error(out, 403, (const __u8 *)srv_short, 5, date403, 1, 0);
	CHECK(n == sizeof(http_403_ref) - 1 && !memcmp(out, http_403_ref, n),
	      "403: %u bytes:\n%.*s", n, (int)n, out);
	hl = (__u32)(strstr(http_405_ref, "\r\n\r\n") - http_405_ref) + 4;
	n = xps_http_encode_error(out, 405, (const __u8 *)srv_full, 12, date405, 1, 1);
	CHECK(n == hl && !memcmp(out, http_405_ref, n), "HEAD: %u bytes", n);
	n = xps_http_encode_error(out, 405, (const __u8 *)srv_full, 12, date405, 0, 1);
	CHECK(n == hl - 5 && strstr((char *)out, "Connection: close\r\n\r\n"), "close");
	CHECK(!xps_http_encode_error(out, 418, (const __u8 *)srv_short, 5, date405, 1, 0), "unknown status");
	h_end();
}

static void test_hostile(void)
{
	static __u8 a[XPS_SCRATCH], b[XPS_SCRATCH];
	struct xps_http_req ra, rb;
	unsigned seed = 11;
	int it;

	h_begin("http hostile: random and mutated requests");
	for (it = 0; it < 20000; it++) {
		const struct hfx *f = &http_fx[it % N(http_fx)];
		__u32 len = f->req_n, i;

		memset(a, 0, sizeof(a));
		memcpy(a, f->req, len);
		for (i = 0; i < 3; i++) {
			seed = seed * 1103515245 + 12345;
			if (len)
				a[(seed >> 8) % len] = (__u8)(seed >> 20);
		}
		memcpy(b, a, len);
		memset(b + len, '\n', XPS_SCRATCH - len);
		xps_http_parse(a, len, 0, &ra);
		xps_http_parse(b, len, 0, &rb);
		CHECK(!memcmp(&ra, &rb, offsetof(struct xps_http_req, ws)), "iteration %d depends on bytes past len", it);
		if (complete(ra.kind))
			CHECK(ra.head_len && ra.head_len <= len && ra.req_len <= len,
			      "iteration %d: %u/%u of %u", it, ra.head_len, ra.req_len, len);
	}
	h_end();
}

/* The word-scanning parser and the byte-at-a-time reference agree on
 * everything a caller sees. */
_Static_assert(sizeof(struct xps_http_req) == sizeof(struct ref_http_req),
	       "reference result layout");

static int diff_one(__u8 *a, __u32 len, __u32 off)
{
	struct xps_http_req r;
	struct ref_http_req q;

	xps_http_parse(a, len, off, &r);
	ref_http_parse(a, len, off, &q);
	return memcmp(&r, &q, offsetof(struct xps_http_req, ws));
}

/* Pieces requests are made of, ordinary and not. */
static const char *const pieces[] = {
	"POST", "GET", "HEAD", " ", "  ", "/", "/index.html", "/a/./b", "/%41",
	"?q=1", " HTTP/1.1", " HTTP/1.0", " HTTP/1.2", " HTTP/2.0", "\r\n",
	"\n", "\r", "\r\r\n", "Host", "host", "HOST", ":", ": ", " :",
	"10.0.2.15:17720", "example.com", "ex ample", "x_y", "Content-Length",
	"content-length", "Content-Type", "text/plain", "256", "0", " 12 ",
	"1 2", "99999999999", "Connection", "close", "keep-alive", "Keep-Alive",
	"Upgrade, close", "User-Agent", "Mozilla/5.0 (MSIE 6.0)", "Chrome/1",
	"wrk", "Transfer-Encoding", "chunked", "Expect", "100-continue",
	"X-Long-Header-Name-Here", "Accept", "*/*", "\t", "\x80\xff", "a",
	"\x00", "ABCDEFGHIJKLMNOPQRSTUVWXYZ-abcdefghijklmnopqrstuvwxyz-0123456789",
	"value with spaces and ; , = \" ' ( ) punctuation ~ ` | { }",
};

/* Cases the word scans treat apart, each at every length. */
static const char *const ref_cases[] = {
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length:5\r\ncontent-length: 5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5 5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length:  05\r\n\r\nhello",
	"POST / HTTP/1.1\r\nContent-Length: 12345678901\r\nHost: a.b\r\n\r\n",
	"POST / HTTP/1.1\r\nContent-Length: 123456789012345678901234567890\r\nHost: a.b\r\n\r\n",
	"POST / HTTP/1.1\r\nConnection: keep-alive\r\nUser-Agent: Mozilla MSIE 6\r\nHost: h\r\n\r\n",
	"POST / HTTP/1.1\r\nUser-Agent: MSIE 6\r\nHost: h\r\n\r\n",
	"POST / HTTP/1.1\r\nUser-Agent:Chrome/1\r\nHost: h\r\n\r\n",
	"GET / HTTP/1.0\r\nConnection:  Keep-Alive\r\n\r\n",
	"GET / HTTP/1.0\r\nConnection: close\r\n\r\n",
	"GET / HTTP/1.0\r\nConnection:close\r\n\r\n",
	"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: 10.0.2.15:17720\r\nHost: 10.0.2.15:17720\r\n\r\n",
	"POST / HTTP/1.1\r\nHost:  \r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a b\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: ab/cd.example\r\n\r\n",
	"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: h\r\n\r\n",
	"POST / HTTP/1.1\r\nExpect: 100-continue\r\nHost: h\r\n\r\n",
	"POST / HTTP/1.1\r\nXHost: h\r\nHost: h\r\n\r\n",
	"POST / HTTP/1.1\r\nHost-: h\r\nHost: h\r\n\r\n",
	"POST / HTTP/1.1\r\nContent-Lengthy: 5\r\nHost: h\r\n\r\n",
	"POST / HTTP/1.1\r\n:\r\nHost: h\r\n\r\n",
	"POST / HTTP/1.1\r\nHost\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\nA: b\rc\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\nAbcdefgh: b\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\nAbcdefg: b\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\nAbcdefghijklmnop:\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\n Folded: b\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\n\r\r\n",
	"POST / HTTP/1.1\r\nHost: h\n\r\n",
	"POST / HTTP/1.1\r\nHost: h\r\n\n",
	"POST /  HTTP/1.1\r\nHost: h\r\n\r\n",
	"POST  / HTTP/1.1\r\nHost: h\r\n\r\n",
	"POST /. HTTP/1.1\r\nHost: h\r\n\r\n",
	"POST / HTTP/1.1\r\r\nHost: h\r\n\r\n",
	"POST / HTTP/1.1 \r\nHost: h\r\n\r\n",
	"POST / HTTP/1.0\r\n\r\n",
	"POST / HTTP/1.0\n\n",
	"POST /x/y/z?abc=def HTTP/1.1\r\nHost: h\r\n\r\n",
	"POST /abcdef/./x HTTP/1.1\r\nHost: h\r\n\r\n",
	"POST /abcdefg/.x HTTP/1.1\r\nHost: h\r\n\r\n",
	"POST /abcdef/.. HTTP/1.1\r\nHost: h\r\n\r\n",
	"POST /~user/!$&'()*+,;=:@_-.txt?a=b/c HTTP/1.1\r\nHost: h\r\n\r\n",
	"POST /a\"b<c>d[e]f^g`h{i|j}k\\l%m#n HTTP/1.1\r\nHost: h\r\n\r\n",
	"POST /\x7f\x80\xff HTTP/1.1\r\nHost: h\r\n\r\n",
};

static void test_reference(void)
{
	static __u8 a[XPS_SCRATCH];
	char name[160];
	unsigned seed = 7;
	size_t i;
	__u32 n, off, len;
	int it, bad = 0;

	for (i = 0; i < N(http_fx); i++) {
		const struct hfx *f = &http_fx[i];

		snprintf(name, sizeof(name), "http reference: %s, every prefix",
			 f->desc);
		h_begin(name);
		for (off = 0; off < 12; off += 11)
			for (n = 0; n <= f->req_n && off + n <= XPS_SCRATCH; n++) {
				memset(a, off ? 0xa5 : 0, sizeof(a));
				memcpy(a + off, f->req, n);
				CHECK(!diff_one(a, off + n, off), "%u bytes at %u differ", n, off);
			}
		h_end();
	}

	h_begin("http reference: word-scan cases, every prefix, every offset to 9");
	for (i = 0; i < N(ref_cases); i++) {
		__u32 rn = strlen(ref_cases[i]);

		for (off = 0; off < 10; off++)
			for (n = 0; n <= rn; n++) {
				memset(a, off & 1 ? '\n' : 0, sizeof(a));
				memcpy(a + off, ref_cases[i], n);
				CHECK(!diff_one(a, off + n, off), "case %zu, %u bytes at %u differ", i, n, off);
			}
	}
	h_end();

	h_begin("http reference: 300,000 requests built from pieces and mutated");
	for (it = 0; it < 300000 && bad < 5; it++) {
		len = 0;
		off = it % 3 ? 0 : (seed >> 4) % 40;
		memset(a, it & 1 ? 0 : '\n', sizeof(a));
		len = off;
		if (it % 4) {
			/* a request that is mostly plain */
			static const char *const heads[] = {
				"POST / HTTP/1.1\r\nHost: 10.0.2.15:17720\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nxxxx",
				"GET /a/b?c HTTP/1.0\r\nUser-Agent: wrk\r\nConnection: keep-alive\r\nX-Long-Header-Name-Here: some rather long value of 40 bytes\r\n\r\n",
				"HEAD / HTTP/1.1\nhost: x\nAccept: */*\n\n",
			};
			const char *h = heads[it % 3];

			memcpy(a + len, h, strlen(h));
			len += strlen(h);
		}
		for (i = 0; i < (size_t)(it % 4 ? 2 : 24); i++) {
			const char *pc;
			__u32 at, pl;

			seed = seed * 1103515245 + 12345;
			pc = pieces[(seed >> 8) % N(pieces)];
			pl = strlen(pc) + (pc[0] == 0);
			if (len + pl > XPS_SCRATCH)
				break;
			/* append, or overwrite somewhere */
			at = (seed >> 20) % 3 || len == off ? len :
			     off + (seed >> 12) % (len - off);
			memcpy(a + at, pc, pl);
			if (at + pl > len)
				len = at + pl;
		}
		for (i = 0; i < (size_t)(it % 7 == 0); i++) {
			seed = seed * 1103515245 + 12345;
			if (len > off)
				a[off + (seed >> 8) % (len - off)] = (__u8)(seed >> 20);
		}
		if (diff_one(a, len, off)) {
			bad++;
			CHECK(0, "iteration %d differs: %.*s", it, (int)(len - off), a + off);
		}
		/* and every prefix of a few */
		for (n = off; it % 64 == 0 && n < len; n++)
			CHECK(!diff_one(a, n, off), "iteration %d, %u bytes differ", it, n - off);
	}
	h_end();
}

int main(void)
{
	test_reference();
	test_fixtures();
	test_split();
	test_pipeline();
	test_date();
	test_encoder();
	test_hostile();
	return h_summary("test_http");
}
