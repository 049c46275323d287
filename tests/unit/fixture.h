/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fixture row shared by the protocol tables: request bytes and what the
 * parser must say about the first request in them.  Strings carry explicit
 * lengths (sizeof - 1) so that NUL bytes can be part of a request.
 */
#ifndef __XPS_TEST_FIXTURE_H
#define __XPS_TEST_FIXTURE_H

#include <stddef.h>

struct fx {
	const char *desc;
	const char *req;
	size_t req_n;
	int kind;		/* enum xps_req_kind */
	unsigned flags;		/* flags that must be set */
	unsigned noflags;	/* flags that must be clear */
	unsigned req_len;	/* ~0u: do not check */
	int hint;		/* INCOMPLETE only; -1: do not check */
	int nkeys;		/* -1: do not check */
	const char *keys[4];	/* expected keys, in order */
};

#define S(s)		s, sizeof(s) - 1
#define ANY		(~0u)

#endif /* __XPS_TEST_FIXTURE_H */
