/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A minimal blocking RESP2 client for the Redis daemons (xps-redisd,
 * xps-clusterd): one connection (reader.h), one command at a time or
 * pipelined.
 */
#ifndef __XPS_RESP_H
#define __XPS_RESP_H

#include <stddef.h>
#include "reader.h"

/*
 * One command in one write: a command split over several segments is one
 * whose boundaries the handler cannot see, and it then invalidates the
 * whole cache (what it must do when in doubt).  @lens NULL: strlen().
 */
int send_cmd(struct conn *c, int argc, const char **argv, const size_t *lens);
/*
 * The same command's bytes into @out (@cap bytes): their number, or -1
 * when it does not fit.  For pipelines sent in one write.
 */
int resp_encode(char *out, size_t cap, int argc, const char **argv,
		const size_t *lens);
/*
 * A reply: type in *type ('+', '-', ':', '$', '*'), integer in *num, a bulk
 * of up to @cap bytes in @data (*num = its length, -1 for nil, -3 when it
 * was longer than @cap and skipped); arrays are read with read_reply per
 * element by the caller.
 */
int read_reply(struct conn *c, char *type, long long *num, void *data,
	       size_t cap, char *line, size_t linesz);
/*
 * The rest of a reply whose header read_reply() returned (@type, @num):
 * for an array, its @num elements, nested ones too (however deep); for
 * anything else nothing is left.
 */
int resp_skip(struct conn *c, char type, long long num);
/* CONFIG GET <name>: the value into @out ("" when Redis has no such name). */
int config_get(struct conn *c, const char *name, char *out, size_t sz);

#endif
