// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The daemons' RESP2 reader (daemons/resp.c) on replies written into a
 * socket pair: resp_skip() takes a whole reply however deep, and the next
 * reply reads from where it ended.
 */
#include <stdarg.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/types.h>
#include "common.bpf.h"	/* XPS_SCRATCH, for the harness */

#include "harness.h"
#include "daemon.h"
#include "resp.h"

/* reader.c connects and logs through daemon.c: not used, or to stderr */
int daemon_tcp_connect(const char *host, const char *port,
		       unsigned int timeout_ms, int *gai_err)
{
	return -1;
}

/* reader.c logs through the daemon's log; here, to stderr */
void daemon_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static struct conn c;
static int peer = -1;

static void feed(const char *s)
{
	size_t n = strlen(s);

	if (write(peer, s, n) != (ssize_t)n)
		CHECK(0, "short write into the socket pair");
}

/* The first line of the next reply is "+NEXT", read with read_reply(). */
static void check_next(const char *what)
{
	char line[64], t;
	long long n;

	CHECK(!read_reply(&c, &t, &n, NULL, 0, line, sizeof(line)) &&
	      t == '+' && !strcmp(line, "+NEXT"),
	      "%s: the next reply is not where the skipped one ended", what);
}

/* @reply read whole: its first line by read_reply(), the rest skipped. */
static int skip_reply(const char *reply)
{
	char line[64], t;
	long long n;

	feed(reply);
	feed("+NEXT\r\n");
	if (read_reply(&c, &t, &n, NULL, 0, line, sizeof(line)))
		return -1;
	return resp_skip(&c, t, n);
}

static void test_flat(void)
{
	h_begin("resp_skip: a flat array, a bulk, a nil, an integer");
	CHECK(!skip_reply("*3\r\n$3\r\nabc\r\n:12\r\n$-1\r\n"), "skip");
	check_next("flat array");
	CHECK(!skip_reply("$5\r\nhello\r\n"), "skip a bulk");
	check_next("bulk");
	CHECK(!skip_reply("*-1\r\n"), "skip a nil array");
	check_next("nil array");
	CHECK(!skip_reply("*0\r\n"), "skip an empty array");
	check_next("empty array");
	h_end();
}

/* COMMAND INFO's replies nest past 8 levels: the reader has no limit. */
static void test_deep(void)
{
	char buf[512] = "";
	int i;

	h_begin("resp_skip: an array nested 12 deep, with siblings at each level");
	for (i = 0; i < 12; i++)
		strcat(buf, "*2\r\n:1\r\n");
	strcat(buf, "$2\r\nok\r\n");
	CHECK(!skip_reply(buf), "skip");
	check_next("nested array");
	h_end();
}

static void test_truncated(void)
{
	char line[64], t;
	long long n;

	h_begin("resp_skip: a reply cut by the peer's close fails");
	feed("*3\r\n:1\r\n");
	shutdown(peer, SHUT_WR);
	CHECK(!read_reply(&c, &t, &n, NULL, 0, line, sizeof(line)) && t == '*' &&
	      n == 3, "header");
	CHECK(resp_skip(&c, t, n) == -1, "a cut reply is not skipped whole");
	h_end();
}

int main(void)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("socketpair");
		return 1;
	}
	c.fd = sv[0];
	peer = sv[1];
	test_flat();
	test_deep();
	test_truncated();
	close(sv[0]);
	close(sv[1]);
	return h_summary("resp");
}
