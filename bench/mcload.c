// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A closed-loop memcached get load generator for the benchmarks: C clients
 * (TCP connections or UDP sockets), each with one request outstanding, over
 * a keyspace of K keys, for S seconds.  Prints CSV:
 *   requests,seconds,throughput,p50_ms,p99_ms,errors
 *
 *   mcload HOST PORT tcp|udp CLIENTS KEYS SECONDS
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

#define MAXC 1024
#define BUCKETS 100000		/* 1 us buckets up to 100 ms */

static __uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

struct client {
	int fd;
	__uint64_t sent;
	char buf[8192];
	size_t len;
	unsigned short rid;
};

static unsigned long hist[BUCKETS + 1];

static int send_req(struct client *c, int udp, unsigned keys)
{
	char req[64];
	int n, hdr = udp ? 8 : 0;

	c->rid++;
	if (udp) {
		req[0] = c->rid >> 8;
		req[1] = c->rid & 0xff;
		memset(req + 2, 0, 6);
		req[5] = 1;
	}
	n = snprintf(req + hdr, sizeof(req) - hdr, "get key:%u\r\n",
		     (unsigned)(random() % keys));
	c->len = 0;
	c->sent = now_ns();
	return send(c->fd, req, n + hdr, 0) == n + hdr ? 0 : -1;
}

/* A whole reply: TCP ends with END\r\n, a UDP datagram is one reply. */
static int reply_done(struct client *c, int udp)
{
	if (udp)
		return c->len >= 8 + 5;
	return c->len >= 5 && !memcmp(c->buf + c->len - 5, "END\r\n", 5);
}

int main(int argc, char **argv)
{
	static struct client cl[MAXC];
	static struct pollfd pfd[MAXC];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	unsigned long total = 0, errors = 0, seen = 0;
	unsigned nc, keys, secs, i;
	__uint64_t end, t0;
	double p50 = 0, p99 = 0;
	int udp, one = 1;

	if (argc != 7) {
		fprintf(stderr, "usage: %s HOST PORT tcp|udp CLIENTS KEYS SECONDS\n",
			argv[0]);
		return 2;
	}
	inet_pton(AF_INET, argv[1], &sa.sin_addr);
	sa.sin_port = htons(atoi(argv[2]));
	udp = !strcmp(argv[3], "udp");
	nc = atoi(argv[4]);
	keys = atoi(argv[5]);
	secs = atoi(argv[6]);
	if (nc < 1 || nc > MAXC || !keys || !secs) {
		fprintf(stderr, "bad arguments\n");
		return 2;
	}
	for (i = 0; i < nc; i++) {
		cl[i].fd = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
		if (cl[i].fd < 0 || connect(cl[i].fd, (struct sockaddr *)&sa,
					    sizeof(sa))) {
			perror("connect");
			return 1;
		}
		if (!udp)
			setsockopt(cl[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pfd[i].fd = cl[i].fd;
		pfd[i].events = POLLIN;
	}
	usleep(100000);	/* let the server accept before the first request */
	for (i = 0; i < nc; i++)
		if (send_req(&cl[i], udp, keys))
			errors++;
	t0 = now_ns();
	end = t0 + secs * 1000000000ull;
	while (now_ns() < end) {
		int n = poll(pfd, nc, 100);

		for (i = 0; n > 0 && i < nc; i++) {
			struct client *c = &cl[i];
			ssize_t r;

			if (!(pfd[i].revents & POLLIN))
				continue;
			r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
			if (r <= 0) {
				errors++;
				continue;
			}
			c->len += r;
			if (!reply_done(c, udp) && c->len < sizeof(c->buf))
				continue;
			{
				__uint64_t us = (now_ns() - c->sent) / 1000;

				hist[us > BUCKETS ? BUCKETS : us]++;
			}
			total++;
			if (send_req(c, udp, keys))
				errors++;
		}
		/* a lost UDP datagram: ask again after a second */
		if (udp) {
			__uint64_t t = now_ns();

			for (i = 0; i < nc; i++)
				if (t - cl[i].sent > 1000000000ull) {
					errors++;
					send_req(&cl[i], udp, keys);
				}
		}
	}
	for (i = 0; i <= BUCKETS; i++) {
		seen += hist[i];
		if (!p50 && seen * 2 >= total)
			p50 = i / 1000.0;
		if (!p99 && seen * 100 >= total * 99) {
			p99 = i / 1000.0;
			break;
		}
	}
	printf("%lu,%.3f,%.1f,%.3f,%.3f,%lu\n", total, (now_ns() - t0) / 1e9,
	       total / ((now_ns() - t0) / 1e9), p50, p99, errors);
	return 0;
}
