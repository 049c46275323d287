// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reply framing (bpf/proto/reply.bpf.h), as the framework's egress program
 * drives it: every reply must be reported complete exactly at its last
 * byte, however the stream is split into segments, and a stream the
 * parsers cannot frame must stop the count (XPS_RB_ERR) before anything is
 * reported wrongly.
 */
#include "reply_drive.h"
#include "harness.h"

struct rcase {
	const char *desc;
	int proto;
	const char *bytes;
	size_t len;		/* 0: strlen(bytes) */
	int nobody;		/* HTTP: the request was a HEAD */
	int err;		/* the stream cannot be framed */
};

/*
 * As egress feeds a stream (reply_feed()), checked against feeding every
 * byte: the same replies end at the same bytes, or both give up at the
 * same byte.
 */
static int feed(const struct rcase *c, size_t len, size_t seg, size_t *ends,
		int max_ends)
{
	size_t e1 = 0, e2 = 0, ends2[64];
	int n, n2, i;

	n = reply_feed((const unsigned char *)c->bytes, len, seg, c->proto,
		       c->nobody, ends, max_ends, &e1);
	n2 = reply_feed_how((const unsigned char *)c->bytes, len, seg,
			    c->proto, c->nobody, ends2, 64, &e2, 0);
	CHECK(n == n2 && (n >= 0 || e1 == e2),
	      "%zu bytes in segments of %zu: %d replies (error at %zu) passing over what the framing waits past, %d (%zu) byte by byte",
	      len, seg, n, e1, n2, e2);
	for (i = 0; i < n && i < n2 && i < max_ends && i < 64; i++)
		CHECK(ends[i] == ends2[i], "segments of %zu: reply %d ends at %zu, byte by byte at %zu",
		      seg, i, ends[i], ends2[i]);
	return n;
}

/* The replies of @c end exactly where the stream split at each of them. */
static void check_case(const struct rcase *c, int nreplies, const size_t *want)
{
	size_t len = c->len ? c->len : strlen(c->bytes), seg, got[64];
	int n, i;

	h_begin(c->desc);
	for (seg = 0; seg <= len; seg++) {
		n = feed(c, len, seg, got, 64);
		if (c->err) {
			CHECK(n < 0, "segments of %zu: framed (%d replies), "
			      "expected to give up", seg, n);
			continue;
		}
		CHECK(n == nreplies, "segments of %zu: %d replies, want %d",
		      seg, n, nreplies);
		for (i = 0; i < n && i < nreplies && i < 64; i++)
			CHECK(got[i] == want[i], "segments of %zu: reply %d "
			      "ended at %zu, want %zu", seg, i, got[i], want[i]);
		/* no prefix ends a reply that is not complete in it */
		if (!seg) {
			size_t pre;

			for (pre = 0; pre < len; pre++) {
				int m = feed(c, pre, 0, got, 64), k, whole = 0;

				for (k = 0; k < nreplies; k++)
					whole += want[k] <= pre;
				CHECK(m == whole, "prefix of %zu: %d replies, "
				      "want %d", pre, m, whole);
			}
		}
	}
	h_end();
}

/* A case whose replies are the concatenation of @parts. */
static void check_parts(const char *desc, int proto, int nobody,
			const char *const *parts)
{
	static char buf[8192];
	size_t ends[64], len = 0;
	int n = 0;
	struct rcase c = { desc, proto, buf, 0, nobody, 0 };

	for (; parts[n]; n++) {
		size_t l = strlen(parts[n]);

		memcpy(buf + len, parts[n], l);
		len += l;
		ends[n] = len;
	}
	buf[len] = 0;
	c.len = len;
	check_case(&c, n, ends);
}

#define PARTS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void check_err(const char *desc, int proto, const char *bytes,
		      int nobody)
{
	struct rcase c = { desc, proto, bytes, 0, nobody, 1 };

	check_case(&c, 0, NULL);
}

/*
 * NATS: xps_nats_line() reads a line eight bytes at a time; the byte
 * machine (xps_reply_byte()) frames the same bytes one at a time, and is
 * what the walk falls back to.  Over random lines the two must agree on
 * whether there is a line, where it and its message end, the operation,
 * and the arguments (here split the plain way: runs of bytes other than
 * ' ', '\t', '\r').
 */
static __u64 rng_state = 0x9e3779b97f4a7c15ULL;

static __u32 rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (__u32)(rng_state >> 16);
}

/* A line to read: random bytes, or a route message's line bent a little. */
static __u32 nats_random_line(__u8 *b)
{
	static const char alpha[] = "  \t\r\n\n0123456789RMSGPUBHLrmsgpubhl$.+|_*>";
	static const char *const ops[] = {
		"RMSG", "rmsg", "RmSg", "MSG", "PUB", "HPUB", "HMSG", "LMSG",
		"PING", "RS+", "INFO", "RMSGX", "PU", "",
	};
	static const char *const sizes[] = {
		"42", "25", "0", "007", "67108864", "67108865", "99999999999",
		"4x", "", "0000000000000000000000000000000000000000000012",
	};
	__u32 n = rng() % (XPS_NATS_LINE_MAX + 1), i, k;
	char line[512];
	int w;

	if (rng() % 3 == 0) {
		for (i = 0; i < n; i++)
			b[i] = rng() % 8 ? (__u8)alpha[rng() % (sizeof(alpha) - 1)]
					  : (__u8)rng();
		return n;
	}
	w = snprintf(line, sizeof(line), "%s%s", rng() % 8 ? "" : " ",
		     ops[rng() % (sizeof(ops) / sizeof(ops[0]))]);
	k = rng() % 6;
	for (i = 0; i < k; i++)
		w += snprintf(line + w, sizeof(line) - w, "%s$NRG.%c.%.*s",
			      rng() % 6 ? " " : (rng() % 2 ? "\t " : "  "),
			      "ARV"[rng() % 3], (int)(rng() % 40),
			      "C-R3M-Ad8kXbFk.5vYhzqHk.abcdefghijklmnopqrstuv");
	w += snprintf(line + w, sizeof(line) - w, "%s%s%s",
		      rng() % 5 ? " " : "\t",
		      sizes[rng() % (sizeof(sizes) / sizeof(sizes[0]))],
		      rng() % 6 ? "\r\n" : (rng() % 2 ? " \r\n" : "\n"));
	n = (__u32)w < XPS_NATS_LINE_MAX ? (__u32)w : XPS_NATS_LINE_MAX;
	memcpy(b, line, n);
	/* sometimes cut short, sometimes with the next message after it */
	if (rng() % 4 == 0)
		n = rng() % (n + 1);
	for (i = n; i < XPS_NATS_LINE_MAX && rng() % 2; i++)
		b[i] = (__u8)alpha[rng() % (sizeof(alpha) - 1)];
	return n;
}

static int nats_sep(__u8 c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static void check_nats_lines(int rounds)
{
	struct xps_nats_buf nb;
	int r, i;

	h_begin("nats: the line reader against the byte machine");
	for (i = 0; i < rounds; i++) {
		struct xps_reply rb = { .proto = XPS_REPLY_NATS };
		__u32 len, nl, k, s, nargs = 0, want_msg = 0;
		int res = XPS_RB_MORE, want, ok;

		/* stale bytes past len, as the walk's buffer has them */
		for (k = 0; k < XPS_NATS_LINE_MAX; k++)
			nb.b[k] = (__u8)rng();
		len = nats_random_line(nb.b);
		r = xps_nats_line(&nb, len);
		for (nl = 0; nl < len && nb.b[nl] != '\n'; nl++)
			;
		if (nl == len) {
			CHECK(r == 0, "case %d: %d for %u bytes without '\\n'",
			      i, r, len);
			continue;
		}
		for (k = 0; k <= nl; k++)
			res = xps_reply_byte(&rb, nb.b[k], 0);
		if (res == XPS_RB_ERR) {
			CHECK(r == -1, "case %d: %d, the byte machine refuses "
			      "\"%.*s\"", i, r, (int)nl, nb.b);
			continue;
		}
		want = res == XPS_RB_DONE ? XPS_NATS_OP_LINE : rb.aux;
		want_msg = nl + 1 + (res == XPS_RB_DONE ? 0 : (__u32)rb.skip);
		ok = r == 1 && nb.l.len == nl + 1 && nb.l.op == (__u32)want &&
		     nb.l.msg_len == want_msg;
		CHECK(ok, "case %d \"%.*s\": %d len %u op %u msg_len %u, "
		      "want len %u op %d msg_len %u", i, (int)nl, nb.b, r,
		      nb.l.len, nb.l.op, nb.l.msg_len, nl + 1, want, want_msg);
		if (!ok)
			continue;
		/* the arguments: every token after the one at byte 0 */
		for (k = 0; k < nl;) {
			if (nats_sep(nb.b[k])) {
				k++;
				continue;
			}
			for (s = k; k < nl && !nats_sep(nb.b[k]); k++)
				;
			if (!s)
				continue;
			if (nargs < XPS_NATS_ARGS)
				CHECK(nb.l.arg[nargs].off == s &&
				      nb.l.arg[nargs].len == k - s,
				      "case %d: argument %u at %u, %u bytes, "
				      "want %u, %u", i, nargs,
				      nb.l.arg[nargs].off,
				      nb.l.arg[nargs].len, s, k - s);
			nargs++;
		}
		CHECK(nb.l.nargs == nargs, "case %d: %u arguments, want %u",
		      i, nb.l.nargs, nargs);
	}
	h_end();
}

/*
 * xps_reply_short() against the byte machine: from a state reached by
 * feeding @prefix, @n bytes taken whole must be exactly one reply, fed
 * one at a time, and leave the same state; refused, they leave the state
 * untouched.  Returns whether they were taken.
 */
static int short_vs_bytes(int proto, const char *prefix, const __u8 *b,
			  __u32 n)
{
	struct xps_reply r = { .proto = (__u8)proto }, fed, before;
	int res = XPS_RB_MORE, whole = 1, took;
	__u64 w = 0;
	size_t i;

	for (i = 0; prefix[i]; i++) {
		if (r.skip) {
			r.skip--;
			if (!r.skip)
				xps_reply_skipped(&r);
			continue;
		}
		if (xps_reply_byte(&r, (__u8)prefix[i], 0) == XPS_RB_ERR)
			return -1;	/* not a state egress keeps */
	}
	for (i = 0; i < n; i++)
		w |= (__u64)b[i] << (i * 8);
	fed = r;
	before = r;
	for (i = 0; i < n; i++) {
		if (fed.skip) {
			whole = 0;	/* a body: not a short reply */
			break;
		}
		res = xps_reply_byte(&fed, b[i], 0);
		if (res != (i + 1 == n ? XPS_RB_DONE : XPS_RB_MORE)) {
			whole = 0;
			break;
		}
	}
	took = xps_reply_short(&r, w, n);
	if (took) {
		CHECK(whole, "%.*s after \"%s\": taken as one reply, the byte machine says %d at byte %zu",
		      (int)n, (const char *)b, prefix, res, i);
		CHECK(!memcmp(&r, &fed, sizeof(r)), "%.*s after \"%s\": a state other than the byte machine's",
		      (int)n, (const char *)b, prefix);
	} else {
		CHECK(!memcmp(&r, &before, sizeof(r)), "%.*s after \"%s\": refused, yet the state changed",
		      (int)n, (const char *)b, prefix);
	}
	return took;
}

static void check_short(int rounds)
{
	static const char *const resp_pre[] = {
		"", "+OK\r\n", "$3\r\nabc\r\n", ":5\r\n", "*2\r\n", "+O",
		"$3\r\n", "*1\r\n$1\r\n",
	};
	static const char *const mc_pre[] = {
		"", "STORED\r\n", "VALUE k 0 1\r\nx\r\nEND\r\n", "VALUE k 0 1\r\nx\r\n",
		"STO", "VA 1\r\n",
	};
	static const char alpha[] = "+-:$*\r\nOKSTREDN 01";
	__u8 b[8];
	int i, k, n, taken = 0, took;

	static const struct {
		int proto;
		const char *prefix, *bytes;
		int want;
		const char *what;
	} fixed[] = {
		{ XPS_REPLY_RESP, "", "+OK\r\n", 1, "+OK" },
		{ XPS_REPLY_RESP, ":1\r\n", ":1\r\n", 1, ":1 after :1" },
		{ XPS_REPLY_RESP, "", "-ERR x\r\n", 1, "-ERR x" },
		{ XPS_REPLY_MEMCACHED, "", "STORED\r\n", 1, "STORED" },
		{ XPS_REPLY_MEMCACHED, "STORED\r\n", "STORED\r\n", 1, "a second STORED" },
		{ XPS_REPLY_RESP, "+O", "+OK\r\n", 0, "+OK inside a reply" },
		{ XPS_REPLY_RESP, "", "+\n+\n", 0, "two replies as one" },
		{ XPS_REPLY_RESP, "*2\r\n", "+OK\r\n", 0, "an array's element" },
		{ XPS_REPLY_MEMCACHED, "VALUE k 0 1\r\nx\r\n", "STORED\r\n", 0,
		  "STORED inside a get block" },
	};

	h_begin("short replies taken whole: the acknowledgements");
	for (i = 0; i < (int)(sizeof(fixed) / sizeof(fixed[0])); i++)
		CHECK(short_vs_bytes(fixed[i].proto, fixed[i].prefix,
				     (const __u8 *)fixed[i].bytes,
				     (__u32)strlen(fixed[i].bytes)) == fixed[i].want,
		      "%s: %s", fixed[i].what, fixed[i].want ? "not taken" : "taken");
	h_end();

	h_begin("short replies taken whole: random bytes, against the byte machine");
	for (i = 0; i < rounds; i++) {
		int mc = i & 1;
		const char *pre = mc ? mc_pre[rng() % (sizeof(mc_pre) / sizeof(mc_pre[0]))]
				     : resp_pre[rng() % (sizeof(resp_pre) / sizeof(resp_pre[0]))];

		n = 2 + (int)(rng() % 7);
		for (k = 0; k < n; k++)
			b[k] = (__u8)alpha[rng() % (sizeof(alpha) - 1)];
		/* half the time, a reply's shape: first byte a type, last '\n' */
		if (!mc && (rng() & 1)) {
			b[0] = "+-:"[rng() % 3];
			b[n - 1] = '\n';
		}
		if (mc && !(rng() % 8)) {
			memcpy(b, "STORED\r\n", 8);
			n = 8;
		}
		took = short_vs_bytes(mc ? XPS_REPLY_MEMCACHED : XPS_REPLY_RESP,
				      pre, b, (__u32)n);
		taken += took > 0;
	}
	/* the random shapes must reach the fast path often */
	CHECK(taken > rounds / 20, "only %d of %d taken whole", taken, rounds);
	h_end();
}

int main(void)
{
	/* Redis */
	check_parts("resp: simple, error, integer", XPS_REPLY_RESP, 0,
		    PARTS("+OK\r\n", "-ERR unknown command 'FOO', with args "
			  "beginning with: \r\n", ":1000\r\n"));
	check_parts("resp: bulk whose data looks like replies", XPS_REPLY_RESP,
		    0, PARTS("$13\r\n+OK\r\n$-1\r\n*\r\n\r\n", "$0\r\n\r\n",
			     "$-1\r\n"));
	check_parts("resp: arrays, nested, empty, null", XPS_REPLY_RESP, 0,
		    PARTS("*3\r\n$1\r\na\r\n:5\r\n*2\r\n+x\r\n$-1\r\n",
			  "*0\r\n", "*-1\r\n", "*1\r\n*1\r\n*0\r\n"));
	check_err("resp: RESP3 map", XPS_REPLY_RESP, "%1\r\n+a\r\n+b\r\n", 0);
	check_err("resp: bad length", XPS_REPLY_RESP, "$1x\r\nab\r\n", 0);
	check_err("resp: -2 length", XPS_REPLY_RESP, "*-2\r\n", 0);

	/* memcached */
	check_parts("memcached: one-line replies", XPS_REPLY_MEMCACHED, 0,
		    PARTS("STORED\r\n", "NOT_STORED\r\n", "EXISTS\r\n",
			  "NOT_FOUND\r\n", "DELETED\r\n", "TOUCHED\r\n",
			  "OK\r\n", "ERROR\r\n",
			  "CLIENT_ERROR bad command line format\r\n",
			  "SERVER_ERROR out of memory storing object\r\n",
			  "VERSION 1.6.18\r\n", "42\r\n", "HD\r\n", "EN\r\n",
			  "MN\r\n"));
	check_parts("memcached: get blocks, data that looks like END",
		    XPS_REPLY_MEMCACHED, 0,
		    PARTS("VALUE k 0 5\r\nhello\r\nEND\r\n", "END\r\n",
			  "VALUE a 0 1\r\nx\r\nVALUE b 3 5 77\r\nEND\r\n\r\n"
			  "VALUE c 0 0\r\n\r\nEND\r\n"));
	check_parts("memcached: stats block, meta value", XPS_REPLY_MEMCACHED,
		    0, PARTS("STAT pid 1\r\nSTAT version 1.6\r\nEND\r\n",
			     "VA 2 f0\r\nhi\r\n", "VA 0\r\n\r\n"));
	check_err("memcached: a line it does not know", XPS_REPLY_MEMCACHED,
		  "key=abc exp=-1 la=1\r\nEND\r\n", 0);
	check_err("memcached: error inside a get block", XPS_REPLY_MEMCACHED,
		  "VALUE k 0 1\r\nx\r\nSERVER_ERROR out of memory\r\n", 0);
	check_err("memcached: VALUE without a size", XPS_REPLY_MEMCACHED,
		  "VALUE k 0\r\nEND\r\n", 0);

	/* HTTP */
	check_parts("http: content-length, chunked, trailers", XPS_REPLY_HTTP,
		    0, PARTS("HTTP/1.1 200 OK\r\nServer: nginx\r\n"
			     "Content-Length: 5\r\n\r\nhello",
			     "HTTP/1.1 200 OK\r\ntransfer-ENCODING: chunked\r\n"
			     "\r\n5\r\nfirst\r\n6;x=1\r\nsecond\r\n0\r\n\r\n",
			     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
			     "\r\na\r\nHTTP/1.1 2\r\n0\r\nX-T: 1\r\n\r\n",
			     "HTTP/1.1 405 Not Allowed\r\nContent-Length: 0\r\n"
			     "Connection: keep-alive\r\n\r\n"));
	check_parts("http: interim 100, 204, 304", XPS_REPLY_HTTP, 0,
		    PARTS("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created"
			  "\r\nContent-Length: 2\r\n\r\nok",
			  "HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n",
			  "HTTP/1.1 304 Not Modified\r\n\r\n"));
	check_parts("http: HEAD has no body", XPS_REPLY_HTTP, 1,
		    PARTS("HTTP/1.1 200 OK\r\nContent-Length: 615\r\n\r\n",
			  "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n"));
	/* names that begin as the two that matter, but are not them; a
	 * long reason phrase, a header with a colon in its value */
	check_parts("http: names like Content-Length, long lines", XPS_REPLY_HTTP,
		    0, PARTS("HTTP/1.1 200 Quite a Long Reason Phrase, Indeed\r\n"
			     "Content-Lenxth: 77\r\nContent-Lengths: 78\r\n"
			     "Content-Lengt: 79\r\nTransfer-Encodinx: gzip\r\n"
			     "Date: Sat, 28 Nov 2026 20:00:00 GMT\r\n"
			     "X-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
			     "Content-Length: 3\r\n\r\nabc",
			     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			     "3;name=value:with:colons\r\nabc\r\n0\r\n"
			     "X-Trailer-Long-Name: a:b:c\r\n\r\n"));
	check_err("http: body delimited by close", XPS_REPLY_HTTP,
		  "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nbody", 0);
	check_err("http: switching protocols", XPS_REPLY_HTTP,
		  "HTTP/1.1 101 Switching Protocols\r\n\r\n", 0);
	check_err("http: a coding besides chunked", XPS_REPLY_HTTP,
		  "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
		  "0\r\n\r\n", 0);
	check_err("http: not a status line", XPS_REPLY_HTTP,
		  "hello\r\n\r\n", 0);
	check_err("http: two Content-Lengths", XPS_REPLY_HTTP,
		  "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
		  "Content-Length: 1\r\n\r\nx", 0);

	/* Redis Cluster bus */
	{
		static const char m[] = "RCmb\0\0\0\x0c" "abcd" "RCmb\0\0\0\x08";
		struct rcase c = { "cluster: messages by total length",
				   XPS_REPLY_CLUSTER, m, sizeof(m) - 1, 0, 0 };
		size_t ends[] = { 12, 20 };

		check_case(&c, 2, ends);
	}
	check_err("cluster: bad signature", XPS_REPLY_CLUSTER,
		  "RCmx\1\0\0\0", 0);

	/* lines */
	check_parts("lines", XPS_REPLY_LINE, 0,
		    PARTS("S:hello\n", "\n", "value of alpha\r\n"));

	/* NATS routes: lines, and payloads their last argument sizes */
	{
		static const char m[] =
			"INFO {\"server_id\":\"x\"}\r\n"
			"RMSG $SYS $NRG.R.abc 5\r\nhe\r\nl\r\n"
			"ping\r\n"
			"RS+ $G foo.> q 1\r\n"
			"HMSG $G s + r q1 q2 2 6\r\nAB\r\n\r\n\r\n"
			"pub s 0\r\n\r\n";
		struct rcase c = { "nats: lines and payloads", XPS_REPLY_NATS,
				   m, sizeof(m) - 1, 0, 0 };
		size_t ends[] = { 24, 55, 61, 79, 112, 123 };

		check_case(&c, 6, ends);
	}
	/* NATS: one line read whole (xps_nats_line()) */
	{
		static const char hb[] =
			"RMSG $SYS $NRG.AE.S-R3M-x $NRG.R.abcd 42\r\n";
		static const char q[] =
			"RMSG $G foo + rep q1 q2 q3 q4 q5 7\r\n";
		struct xps_nats_buf nb = {};

		h_begin("nats: a heartbeat's line");
		memcpy(nb.b, hb, sizeof(hb) - 1);
		CHECK(xps_nats_line(&nb, sizeof(hb) - 1) == 1, "not a line");
		CHECK(nb.l.op == XPS_NATS_OP_RMSG && nb.l.nargs == 4 &&
		      nb.l.size == 42 && nb.l.len == sizeof(hb) - 1 &&
		      nb.l.msg_len == sizeof(hb) - 1 + 44,
		      "op %u nargs %u size %u len %u msg_len %u", nb.l.op,
		      nb.l.nargs, nb.l.size, nb.l.len, nb.l.msg_len);
		CHECK(nb.l.arg[2].off == 26 && nb.l.arg[2].len == 11,
		      "reply subject at %u, %u bytes", nb.l.arg[2].off,
		      nb.l.arg[2].len);
		CHECK(xps_nats_line(&nb, 20) == 0, "a prefix read as a line");

		h_begin("nats: more arguments than kept");
		memset(&nb, 0, sizeof(nb));
		memcpy(nb.b, q, sizeof(q) - 1);
		CHECK(xps_nats_line(&nb, sizeof(q) - 1) == 1, "not a line");
		CHECK(nb.l.nargs == 10 && nb.l.size == 7 &&
		      nb.l.msg_len == sizeof(q) - 1 + 9,
		      "nargs %u size %u msg_len %u", nb.l.nargs, nb.l.size,
		      nb.l.msg_len);
	}
	check_err("nats: payload operation without a size", XPS_REPLY_NATS,
		  "RMSG $G foo bar\r\n", 0);
	check_err("nats: payload beyond the server's limit", XPS_REPLY_NATS,
		  "MSG a 1 99999999999\r\n", 0);
	check_nats_lines(200000);
	check_short(200000);
	return h_summary("reply framing");
}
