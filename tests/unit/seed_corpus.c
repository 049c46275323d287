// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Seed corpora for the fuzzers (tests/unit/corpus/), from the fixture
 * tables: `make -C tests/unit corpus` writes them, and they are kept in
 * the tree.  Built once per protocol (SEED_REDIS, SEED_MEMCACHED,
 * SEED_HTTP, SEED_REPLY); each input is what the fuzzer reads: two bytes
 * (the request offset for the parsers; the protocol and a split point for
 * the reply framing), then the bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(SEED_REDIS)
#include "redis.bpf.h"
#include "redis_fixtures.h"
#define TABLE redis_fx
#elif defined(SEED_MEMCACHED)
#include "memcached.bpf.h"
#include "memcached_fixtures.h"
#define TABLE mc_fx
#elif defined(SEED_HTTP)
#include "http.bpf.h"
#include "http_fixtures.h"
#define TABLE http_fx
#elif defined(SEED_REPLY)
#include "reply.bpf.h"
/* replies the servers send, as the unit test has them */
static const struct { int proto; const char *b; } replies[] = {
	{ XPS_REPLY_RESP, "+OK\r\n$5\r\nhello\r\n*2\r\n$1\r\na\r\n:1\r\n$-1\r\n" },
	{ XPS_REPLY_RESP, "-ERR unknown command 'foo'\r\n*0\r\n*-1\r\n" },
	{ XPS_REPLY_MEMCACHED, "VALUE k 0 5\r\nhello\r\nEND\r\nSTORED\r\n" },
	{ XPS_REPLY_MEMCACHED, "STAT pid 1\r\nEND\r\nVA 2 f0\r\nhi\r\nHD\r\n42\r\n" },
	{ XPS_REPLY_HTTP, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" },
	{ XPS_REPLY_HTTP, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
			  "Transfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n0\r\n\r\n" },
	{ XPS_REPLY_CLUSTER, "RCmb\0\0\0\x0c" "abcd" },
	{ XPS_REPLY_LINE, "S:alpha\nvalue\n" },
};
#endif

static void put(const char *dir, unsigned i, unsigned char b0,
		unsigned char b1, const void *data, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%03u", dir, i);
	f = fopen(path, "wb");
	if (!f || fputc(b0, f) == EOF || fputc(b1, f) == EOF ||
	    fwrite(data, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	unsigned i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
#ifdef TABLE
	for (i = 0; i < sizeof(TABLE) / sizeof(TABLE[0]); i++)
		put(argv[1], i, 0, 0, TABLE[i].req, TABLE[i].req_n);
#else
	for (i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
		/* the cluster seed holds NUL bytes: its length is fixed */
		size_t n = replies[i].proto == XPS_REPLY_CLUSTER ? 12 :
			   strlen(replies[i].b);

		put(argv[1], i, (unsigned char)(replies[i].proto - 1), 7,
		    replies[i].b, n);
	}
#endif
	return 0;
}
