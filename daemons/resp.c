// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A minimal blocking RESP2 client for the Redis daemons (see resp.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "resp.h"

/*
 * One command in one write: a command split over several segments is one
 * whose boundaries the handler cannot see, and it then invalidates the
 * whole cache (what it must do when in doubt).
 */
int resp_encode(char *out, size_t cap, int argc, const char **argv,
		const size_t *lens)
{
	size_t n, l;
	int i, k;

	k = snprintf(out, cap, "*%d\r\n", argc);
	if (k < 0 || (size_t)k >= cap)
		return -1;
	n = k;
	for (i = 0; i < argc; i++) {
		l = lens ? lens[i] : strlen(argv[i]);
		if (n + l + 32 > cap)
			return -1;
		n += snprintf(out + n, cap - n, "$%zu\r\n", l);
		memcpy(out + n, argv[i], l);
		n += l;
		out[n++] = '\r';
		out[n++] = '\n';
	}
	return (int)n;
}

int send_cmd(struct conn *c, int argc, const char **argv, const size_t *lens)
{
	char out[1024];
	int n = resp_encode(out, sizeof(out), argc, argv, lens);

	if (n < 0)
		return -1;
	return write(c->fd, out, n) == (ssize_t)n ? 0 : -1;
}

/*
 * A reply: type in *type ('+', '-', ':', '$', '*'), integer in *num, a bulk
 * of up to @cap bytes in @data (*num = its length, -1 for nil); arrays are
 * read with read_reply per element by the caller.
 */
int read_reply(struct conn *c, char *type, long long *num, void *data,
	       size_t cap, char *line, size_t linesz)
{
	if (read_line(c, line, linesz))
		return -1;
	*type = line[0];
	*num = 0;
	switch (line[0]) {
	case ':':
	case '*':
		*num = strtoll(line + 1, NULL, 10);
		return 0;
	case '$':
		*num = strtoll(line + 1, NULL, 10);
		if (*num < 0)
			return 0;
		if ((size_t)*num > cap) {
			/* too long to cache: skip it */
			if (read_bytes(c, NULL, *num + 2))
				return -1;
			*num = -3;
			return 0;
		}
		return read_bytes(c, data, *num) || read_bytes(c, NULL, 2);
	case '+':
	case '-':
		return 0;
	default:
		return -1;
	}
}

/*
 * Iterative, however deep the reply (COMMAND INFO nests past 8 levels):
 * a count of the elements still to read, each array adding its own.
 */
int resp_skip(struct conn *c, char type, long long num)
{
	long long left = type == '*' && num > 0 ? num : 0, n;
	char line[512], t;

	while (left-- > 0) {
		if (read_reply(c, &t, &n, NULL, 0, line, sizeof(line)))
			return -1;
		if (t != '*' || n <= 0)
			continue;
		if (n > LLONG_MAX - left)
			return -1;	/* no server sends that much */
		left += n;
	}
	return 0;
}

/* CONFIG GET <name>: the value into @out. */
int config_get(struct conn *c, const char *name, char *out, size_t sz)
{
	const char *argv[] = { "CONFIG", "GET", name };
	char line[512], t;
	long long n;

	out[0] = '\0';
	if (send_cmd(c, 3, argv, NULL) ||
	    read_reply(c, &t, &n, NULL, 0, line, sizeof(line)) || t != '*')
		return -1;
	if (n < 2)
		return 0;
	if (read_reply(c, &t, &n, NULL, 0, line, sizeof(line)) ||
	    read_reply(c, &t, &n, out, sz - 1, line, sizeof(line)))
		return -1;
	out[n > 0 ? n : 0] = '\0';
	return 0;
}
