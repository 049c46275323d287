/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A blocking connection read through a buffer, by lines or by counts of
 * bytes: what the daemons' clients (resp.c for Redis, xps-memcachedd's
 * text protocol) read their servers' replies with.  It knows no protocol.
 *
 * Limits, one set for every daemon: the buffer holds READER_BUF bytes, so
 * a line (CRLF included) must fit in it; a line must also fit the
 * caller's @sz with its '\0' (a CR before the LF is not counted).  A line
 * over either limit is an overflow: -1 with errno EMSGSIZE, nothing
 * consumed, which the callers take for a failed connection.  The end of
 * the connection or a read error: -1 with errno from read() (0 at EOF).
 */
#ifndef __XPS_READER_H
#define __XPS_READER_H

#include <stddef.h>

#define READER_BUF	65536

struct conn {
	int fd;			/* -1: not connected */
	char buf[READER_BUF];
	size_t len, pos;	/* buf[pos..len) is read and not taken */
};

/*
 * Connect to @host:@port with TCP_NODELAY.  0, or -1 after logging why,
 * naming the server as @what ("Redis").
 */
int conn_connect(struct conn *c, const char *host, const char *port,
		 const char *what);
/* Receive and send timeouts (SO_RCVTIMEO/SO_SNDTIMEO) of @ms. */
int conn_set_timeout(struct conn *c, unsigned int ms);
/* Close (when open) and forget what was buffered. */
void conn_close(struct conn *c);
/* One line without its LF or CRLF into @line (@sz bytes with the '\0'). */
int read_line(struct conn *c, char *line, size_t sz);
/* @n bytes into @dst (NULL: skip them). */
int read_bytes(struct conn *c, void *dst, size_t n);

#endif
