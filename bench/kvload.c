// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A closed-loop key-value load generator for the benchmarks: C clients (TCP
 * connections or UDP sockets), each with one request outstanding, over a
 * keyspace of K keys, for S seconds.  Each request is a GET with probability
 * GET_PCT percent, otherwise a SET of a VALUE_SIZE-byte value, so GETs and
 * SETs of a mix run side by side for the same time (two redis-benchmark
 * processes do not: they end at different moments).  Prints one CSV line
 * per request type that was sent:
 *   type,requests,seconds,throughput,p50_ms,p99_ms,errors
 *
 *   kvload HOST PORT memcached-tcp|memcached-udp|redis CLIENTS KEYS SECONDS
 *          [GET_PCT [VALUE_SIZE]]
 *
 * Keys are those the benchmarks preload: memcached "key:N", Redis
 * "key:%012d" (redis-benchmark's -r form).  Memcached is GET only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXC		1024
#define BUCKETS		100000		/* 1 us buckets up to 100 ms */
#define VALUE_MAX	4096

enum proto { MC_TCP, MC_UDP, REDIS };
enum kind { GET, SET, NKINDS };

static const char *kind_name[NKINDS] = { "GET", "SET" };

struct client {
	int fd;
	enum kind kind;
	__uint64_t sent;
	char buf[8192];
	size_t len;
	unsigned short rid;
};

struct stats {
	unsigned long hist[BUCKETS + 1];
	unsigned long total, errors;
};

static struct stats st[NKINDS];
static char value[VALUE_MAX + 1];
static char req[VALUE_MAX + 128];

static __uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int send_req(struct client *c, enum proto p, unsigned int keys,
		    unsigned int get_pct, unsigned int vsize)
{
	unsigned int key = random() % keys;
	int n, hdr = p == MC_UDP ? 8 : 0;

	c->kind = (unsigned int)(random() % 100) < get_pct ? GET : SET;
	c->rid++;
	if (p == MC_UDP) {
		req[0] = c->rid >> 8;
		req[1] = c->rid & 0xff;
		memset(req + 2, 0, 6);
		req[5] = 1;
	}
	if (p != REDIS)
		n = snprintf(req + hdr, sizeof(req) - hdr, "get key:%u\r\n", key);
	else if (c->kind == GET)
		n = snprintf(req, sizeof(req),
			     "*2\r\n$3\r\nGET\r\n$16\r\nkey:%012u\r\n", key);
	else
		n = snprintf(req, sizeof(req),
			     "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012u\r\n$%u\r\n%s\r\n",
			     key, vsize, value);
	c->len = 0;
	c->sent = now_ns();
	return send(c->fd, req, n + hdr, 0) == n + hdr ? 0 : -1;
}

/*
 * 1 when the buffer holds a whole reply: memcached TCP ends with END\r\n, a
 * UDP datagram is one reply, Redis a simple line or a bulk string; -1 when
 * it cannot be a reply.
 */
static int reply_done(const struct client *c, enum proto p)
{
	const char *eol;
	long n;

	if (p == MC_UDP)
		return c->len >= 8 + 5;
	if (p == MC_TCP)
		return c->len >= 5 && !memcmp(c->buf + c->len - 5, "END\r\n", 5);
	eol = memmem(c->buf, c->len, "\r\n", 2);
	if (!eol)
		return 0;
	if (c->buf[0] == '+' || c->buf[0] == ':')
		return 1;
	if (c->buf[0] != '$')
		return -1;		/* an error reply, or not RESP */
	n = strtol(c->buf + 1, NULL, 10);
	if (n < 0)
		return 1;		/* nil */
	return c->len >= (size_t)(eol - c->buf) + 2 + n + 2;
}

static void percentiles(const struct stats *s, double *p50, double *p99)
{
	unsigned long seen = 0;
	unsigned int i;

	*p50 = *p99 = 0;
	for (i = 0; i <= BUCKETS; i++) {
		seen += s->hist[i];
		if (!*p50 && seen * 2 >= s->total)
			*p50 = i / 1000.0;
		if (seen * 100 >= s->total * 99) {
			*p99 = i / 1000.0;
			break;
		}
	}
}

static int usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s HOST PORT memcached-tcp|memcached-udp|redis CLIENTS KEYS SECONDS [GET_PCT [VALUE_SIZE]]\n"
		"  closed-loop GET (and, for redis, SET) load; one CSV line per type:\n"
		"  type,requests,seconds,throughput,p50_ms,p99_ms,errors\n", prog);
	return 2;
}

int main(int argc, char **argv)
{
	static struct client cl[MAXC];
	static struct pollfd pfd[MAXC];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	unsigned int nc, keys, secs, get_pct = 100, vsize = 128, i;
	unsigned long unmatched = 0;
	__uint64_t end, t0;
	double secs_run;
	enum proto p;
	int one = 1, ret = 1;

	if (argc < 7 || argc > 9)
		return usage(argv[0]);
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "kvload: %s: not an IPv4 address\n", argv[1]);
		return 2;
	}
	sa.sin_port = htons(atoi(argv[2]));
	if (!strcmp(argv[3], "memcached-tcp"))
		p = MC_TCP;
	else if (!strcmp(argv[3], "memcached-udp"))
		p = MC_UDP;
	else if (!strcmp(argv[3], "redis"))
		p = REDIS;
	else
		return usage(argv[0]);
	nc = atoi(argv[4]);
	keys = atoi(argv[5]);
	secs = atoi(argv[6]);
	if (argc > 7)
		get_pct = atoi(argv[7]);
	if (argc > 8)
		vsize = atoi(argv[8]);
	if (nc < 1 || nc > MAXC || !keys || !secs || get_pct > 100 ||
	    vsize > VALUE_MAX || (p != REDIS && get_pct != 100)) {
		fprintf(stderr, "kvload: bad arguments (CLIENTS 1..%d, KEYS and SECONDS > 0, GET_PCT 0..100 and 100 for memcached, VALUE_SIZE <= %d)\n",
			MAXC, VALUE_MAX);
		return 2;
	}
	memset(value, 'x', vsize);
	for (i = 0; i < nc; i++)
		cl[i].fd = -1;
	for (i = 0; i < nc; i++) {
		cl[i].fd = socket(AF_INET, p == MC_UDP ? SOCK_DGRAM : SOCK_STREAM, 0);
		if (cl[i].fd < 0 || connect(cl[i].fd, (struct sockaddr *)&sa,
					    sizeof(sa))) {
			fprintf(stderr, "kvload: connect %s:%s: %s\n", argv[1],
				argv[2], strerror(errno));
			goto out;
		}
		if (p != MC_UDP)
			setsockopt(cl[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pfd[i].fd = cl[i].fd;
		pfd[i].events = POLLIN;
	}
	usleep(100000);	/* let the server accept before the first request */
	for (i = 0; i < nc; i++)
		if (send_req(&cl[i], p, keys, get_pct, vsize))
			st[cl[i].kind].errors++;
	t0 = now_ns();
	end = t0 + secs * 1000000000ull;
	while (now_ns() < end) {
		int n = poll(pfd, nc, 100);

		for (i = 0; n > 0 && i < nc; i++) {
			struct client *c = &cl[i];
			__uint64_t us;
			ssize_t r;
			int done;

			if (!(pfd[i].revents & POLLIN))
				continue;
			r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
			if (r <= 0) {
				st[c->kind].errors++;
				continue;
			}
			c->len += r;
			done = reply_done(c, p);
			if (done < 0) {
				unmatched++;
				st[c->kind].errors++;
			} else if (!done && c->len < sizeof(c->buf)) {
				continue;
			}
			us = (now_ns() - c->sent) / 1000;
			st[c->kind].hist[us > BUCKETS ? BUCKETS : us]++;
			st[c->kind].total++;
			if (send_req(c, p, keys, get_pct, vsize))
				st[c->kind].errors++;
		}
		/* a lost UDP datagram: ask again after a second */
		if (p == MC_UDP) {
			__uint64_t t = now_ns();

			for (i = 0; i < nc; i++)
				if (t - cl[i].sent > 1000000000ull) {
					st[cl[i].kind].errors++;
					send_req(&cl[i], p, keys, get_pct, vsize);
				}
		}
	}
	secs_run = (now_ns() - t0) / 1e9;
	for (i = 0; i < NKINDS; i++) {
		double p50, p99;

		if (!st[i].total && !st[i].errors)
			continue;
		percentiles(&st[i], &p50, &p99);
		printf("%s,%lu,%.3f,%.1f,%.3f,%.3f,%lu\n", kind_name[i], st[i].total,
		       secs_run, st[i].total / secs_run, p50, p99, st[i].errors);
	}
	if (unmatched)
		fprintf(stderr, "kvload: %lu replies were not the expected kind\n",
			unmatched);
	ret = 0;
out:
	for (i = 0; i < nc; i++)
		if (cl[i].fd >= 0)
			close(cl[i].fd);
	return ret;
}
