// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A blocking connection read through a buffer (see reader.h). */
#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "daemon.h"
#include "reader.h"

int conn_connect(struct conn *c, const char *host, const char *port,
		 const char *what)
{
	int gai_err;

	c->len = c->pos = 0;
	c->fd = daemon_tcp_connect(host, port, 0, &gai_err);
	if (gai_err) {
		daemon_log("cannot resolve %s:%s: %s", host, port,
			   gai_strerror(gai_err));
		return -1;
	}
	if (c->fd < 0) {
		daemon_log("cannot connect to %s at %s:%s: %s", what, host, port,
			   strerror(errno));
		return -1;
	}
	return 0;
}

int conn_set_timeout(struct conn *c, unsigned int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -1;
	return 0;
}

void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = c->pos = 0;
}

/* More bytes into the buffer, moving what is left to its start. */
static int fill_buf(struct conn *c)
{
	ssize_t n;

	if (c->pos == c->len)
		c->pos = c->len = 0;
	if (c->len == sizeof(c->buf)) {
		if (!c->pos) {
			errno = EMSGSIZE;	/* a line longer than the buffer */
			return -1;
		}
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
	}
	n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
	if (n <= 0) {
		if (!n)
			errno = 0;
		return -1;
	}
	c->len += n;
	return 0;
}

int read_line(struct conn *c, char *line, size_t sz)
{
	char *nl;
	size_t n;

	while (!(nl = memchr(c->buf + c->pos, '\n', c->len - c->pos)))
		if (fill_buf(c))
			return -1;
	n = nl - (c->buf + c->pos);
	if (n && nl[-1] == '\r')
		n--;
	if (n >= sz) {
		errno = EMSGSIZE;
		return -1;
	}
	memcpy(line, c->buf + c->pos, n);
	line[n] = '\0';
	c->pos = nl - c->buf + 1;
	return 0;
}

int read_bytes(struct conn *c, void *dst, size_t n)
{
	size_t got = 0, k;

	while (got < n) {
		if (c->pos == c->len && fill_buf(c))
			return -1;
		k = c->len - c->pos;
		if (k > n - got)
			k = n - got;
		if (dst)
			memcpy((char *)dst + got, c->buf + c->pos, k);
		c->pos += k;
		got += k;
	}
	return 0;
}
