// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * twothread_server: a TCP service whose replies are written in pieces by
 * two threads on the same connection, for tests/integration/test_ordering.py.
 *
 *   twothread_server PORT [KEY=VALUE]...
 *
 * It speaks a Redis-compatible subset (RESP2 requests, arrays of bulk
 * strings, and RESP2 replies), so the Redis handler can sit in front of it
 * with KEY in its data map:
 *
 *   GET KEY               the bulk string VALUE, for a KEY given on the
 *                         command line: what the Redis handler answers from
 *                         its data map, so the client sees the same bytes
 *                         whoever answers
 *   GET big:N:PIECES:MS   a bulk string of N bytes of 16-byte records
 *                         ("%015x,": record r at offset 16r, the last one
 *                         truncated).  The whole reply ("$N\r\n", the
 *                         bytes, "\r\n") is written as PIECES pieces of
 *                         equal length (the last one also takes the
 *                         remainder): piece j by the connection's reader
 *                         thread when j is even, by its writer thread when
 *                         j is odd, one after the other; piece PIECES / 2
 *                         is written MS milliseconds after the one before
 *   GET any other key     $-1
 *   PING                  +PONG
 *   anything else         an error reply; a malformed request closes the
 *                         connection
 *
 * Requests are answered in order, each reply whole before the next one
 * starts.  Sockets are non-blocking, waited for with poll(), with
 * TCP_NODELAY (each piece leaves when written), as with Redis.  "ready" is
 * printed once the server listens.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REQ_MAX		65536		/* longest request */
#define MAX_ARGS	8
#define BIG_MAX		(256ull << 20)

struct kv {
	const char *key;
	size_t klen;
	const char *value;
};

static struct kv *table;
static int ntable;

/* A connection: its reader thread hands pieces to its writer thread. */
struct conn {
	int fd;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const char *buf;	/* the piece to write, NULL when none */
	size_t len;
	unsigned int pause_ms;
	int result;		/* of the last piece: 0 or -1 */
	int done;		/* the writer finished the piece */
	int quit;
};

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Write all of @p, waiting with poll() while the socket is full. */
static int write_all(int fd, const char *p, size_t n)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	ssize_t w;

	while (n) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -1;
			continue;
		}
		return -1;
	}
	return 0;
}

static int write_piece(int fd, const char *p, size_t n, unsigned int pause_ms)
{
	if (pause_ms)
		sleep_ms(pause_ms);
	return write_all(fd, p, n);
}

/* The second thread: writes the pieces the reader thread hands it. */
static void *writer_thread(void *arg)
{
	struct conn *c = arg;

	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->buf && !c->quit)
			pthread_cond_wait(&c->cond, &c->lock);
		if (!c->buf)
			break;
		pthread_mutex_unlock(&c->lock);
		c->result = write_piece(c->fd, c->buf, c->len, c->pause_ms);
		pthread_mutex_lock(&c->lock);
		c->buf = NULL;
		c->done = 1;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Have the writer thread write a piece; wait until it has. */
static int hand_over(struct conn *c, const char *p, size_t n, unsigned int pause_ms)
{
	int r;

	pthread_mutex_lock(&c->lock);
	c->buf = p;
	c->len = n;
	c->pause_ms = pause_ms;
	c->done = 0;
	pthread_cond_broadcast(&c->cond);
	while (!c->done)
		pthread_cond_wait(&c->cond, &c->lock);
	r = c->result;
	pthread_mutex_unlock(&c->lock);
	return r;
}

static int big_reply(struct conn *c, size_t n, unsigned int pieces,
		     unsigned int pause_ms)
{
	size_t hlen, total, piece, off = 0, len, i;
	char *buf, rec[17], head[32];
	unsigned int j;
	int r = 0;

	hlen = (size_t)snprintf(head, sizeof(head), "$%zu\r\n", n);
	total = hlen + n + 2;
	if (pieces > total)
		pieces = (unsigned int)total;
	buf = malloc(total);
	if (!buf)
		return -1;
	memcpy(buf, head, hlen);
	for (i = 0; i < n; i += 16) {
		snprintf(rec, sizeof(rec), "%015zx,", i / 16);
		memcpy(buf + hlen + i, rec, n - i < 16 ? n - i : 16);
	}
	memcpy(buf + hlen + n, "\r\n", 2);
	piece = total / pieces;
	for (j = 0; j < pieces && !r; j++) {
		unsigned int pause = j && j == pieces / 2 ? pause_ms : 0;

		len = j == pieces - 1 ? total - off : piece;
		if (j % 2 == 0)
			r = write_piece(c->fd, buf + off, len, pause);
		else
			r = hand_over(c, buf + off, len, pause);
		off += len;
	}
	free(buf);
	return r;
}

static int bulk_reply(int fd, const char *v, size_t vlen)
{
	char head[32];
	size_t hlen = (size_t)snprintf(head, sizeof(head), "$%zu\r\n", vlen);
	char *out = malloc(hlen + vlen + 2);
	int r;

	if (!out)
		return -1;
	memcpy(out, head, hlen);
	memcpy(out + hlen, v, vlen);
	memcpy(out + hlen + vlen, "\r\n", 2);
	r = write_all(fd, out, hlen + vlen + 2);
	free(out);
	return r;
}

#define REPLY(fd, s)	write_all(fd, s, sizeof(s) - 1)

static int answer(struct conn *c, int argc, const char **argv, const size_t *argl)
{
	unsigned long long n;
	unsigned int pieces, pause_ms;
	char key[64];
	int i, used = 0;

	if (argc == 1 && argl[0] == 4 && !strncasecmp(argv[0], "PING", 4))
		return REPLY(c->fd, "+PONG\r\n");
	if (argc != 2 || argl[0] != 3 || strncasecmp(argv[0], "GET", 3))
		return REPLY(c->fd, "-ERR unknown command\r\n");
	for (i = 0; i < ntable; i++)
		if (table[i].klen == argl[1] && !memcmp(table[i].key, argv[1], argl[1]))
			return bulk_reply(c->fd, table[i].value, strlen(table[i].value));
	if (argl[1] > 4 && argl[1] < sizeof(key) && !memcmp(argv[1], "big:", 4)) {
		memcpy(key, argv[1], argl[1]);
		key[argl[1]] = '\0';
		if (sscanf(key, "big:%llu:%u:%u%n", &n, &pieces, &pause_ms, &used) == 3 &&
		    (size_t)used == argl[1] && n <= BIG_MAX && pieces >= 1)
			return big_reply(c, (size_t)n, pieces, pause_ms);
	}
	return REPLY(c->fd, "$-1\r\n");
}

/*
 * "<c><integer>\r\n" at @*at: 1 (the integer in @v, @*at past it), 0 when
 * incomplete, -1 when malformed.
 */
static int resp_int(const char *b, size_t have, size_t *at, char c, long *v)
{
	size_t i = *at;
	long x = 0;
	int digits = 0, neg = 0;

	if (i >= have)
		return 0;
	if (b[i++] != c)
		return -1;
	if (i < have && b[i] == '-') {
		neg = 1;
		i++;
	}
	for (; i < have && b[i] >= '0' && b[i] <= '9'; i++) {
		if (++digits > 9)
			return -1;
		x = x * 10 + (b[i] - '0');
	}
	if (i + 2 > have)
		return 0;
	if (!digits || b[i] != '\r' || b[i + 1] != '\n')
		return -1;
	*at = i + 2;
	*v = neg ? -x : x;
	return 1;
}

/* One request at @b: its length, 0 when incomplete, -1 when malformed. */
static long parse(const char *b, size_t have, int *argc, const char **argv,
		  size_t *argl)
{
	size_t at = 0;
	long n, len, i;
	int r;

	r = resp_int(b, have, &at, '*', &n);
	if (r <= 0)
		return r;
	if (n < 1 || n > MAX_ARGS)
		return -1;
	for (i = 0; i < n; i++) {
		r = resp_int(b, have, &at, '$', &len);
		if (r <= 0)
			return r;
		if (len < 0 || len > REQ_MAX)
			return -1;
		if (at + (size_t)len + 2 > have)
			return 0;
		if (b[at + len] != '\r' || b[at + len + 1] != '\n')
			return -1;
		argv[i] = b + at;
		argl[i] = (size_t)len;
		at += (size_t)len + 2;
	}
	*argc = (int)n;
	return (long)at;
}

/* The reader thread: one per connection. */
static void *conn_thread(void *arg)
{
	struct conn *c = arg;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	const char *argv[MAX_ARGS];
	size_t argl[MAX_ARGS], have = 0, start;
	pthread_t writer;
	char *buf;
	ssize_t n;
	long used;
	int argc = 0, ok = 1;

	buf = malloc(REQ_MAX);
	if (!buf || pthread_create(&writer, NULL, writer_thread, c)) {
		free(buf);
		close(c->fd);
		free(c);
		return NULL;
	}
	while (ok) {
		n = recv(c->fd, buf + have, REQ_MAX - have, 0);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
					break;
				continue;
			}
			break;
		}
		have += (size_t)n;
		start = 0;
		while (ok) {
			used = parse(buf + start, have - start, &argc, argv, argl);
			if (used < 0)
				ok = 0;		/* boundaries lost: close */
			if (used <= 0)
				break;
			if (answer(c, argc, argv, argl))
				ok = 0;
			start += (size_t)used;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == REQ_MAX)
			break;			/* too long a request */
	}
	pthread_mutex_lock(&c->lock);
	c->quit = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(writer, NULL);
	close(c->fd);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(buf);
	free(c);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int ls, fd, one = 1, i;
	pthread_attr_t attr;
	pthread_t t;
	char *eq;
	long port;

	if (argc < 2 || (port = strtol(argv[1], NULL, 10)) < 1 || port > 65535) {
		fprintf(stderr, "usage: %s PORT [KEY=VALUE]...\n", argv[0]);
		return 2;
	}
	ntable = argc - 2;
	table = calloc((size_t)ntable + 1, sizeof(*table));
	if (!table)
		return 1;
	for (i = 0; i < ntable; i++) {
		eq = strchr(argv[i + 2], '=');
		if (!eq || eq == argv[i + 2]) {
			fprintf(stderr, "expected KEY=VALUE, got '%s'\n", argv[i + 2]);
			return 2;
		}
		table[i].key = argv[i + 2];
		table[i].klen = (size_t)(eq - argv[i + 2]);
		table[i].value = eq + 1;
	}
	signal(SIGPIPE, SIG_IGN);
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one))) {
		perror("socket");
		return 1;
	}
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 128)) {
		perror("bind/listen");
		return 1;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct conn *c;

		fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("accept");
			return 1;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		pthread_mutex_init(&c->lock, NULL);
		pthread_cond_init(&c->cond, NULL);
		if (pthread_create(&t, &attr, conn_thread, c)) {
			close(fd);
			free(c);
		}
	}
}
