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

static int feed(const struct rcase *c, size_t len, size_t seg, size_t *ends,
		int max_ends)
{
	return reply_feed((const unsigned char *)c->bytes, len, seg, c->proto,
			  c->nobody, ends, max_ends, NULL);
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
	return h_summary("reply framing");
}
