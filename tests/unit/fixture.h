/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fixture row shared by the protocol tables: request bytes and what the
 * parser must say about the first request in them.  Rows name their fields
 * (designated initialisers); a field left out is 0, so req_len, hint and
 * nkeys, whose "do not check" is not 0, are always written out.  Requests
 * carry explicit lengths (REQ()) so that NUL bytes can be part of one.
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
	unsigned req_len;	/* ANY: do not check */
	int hint;		/* kind the prefix proves; checked for
				 * INCOMPLETE only; -1: do not check */
	int nkeys;		/* -1: do not check */
	const char *keys[4];	/* expected keys, in order, up to the first
				 * NULL (a binary key is left out) */
	unsigned num;		/* with XPS_F_RELEXP in flags: the exptime */
};

/* .req and .req_n of a string literal, NUL bytes included */
#define REQ(s)		.req = s, .req_n = sizeof(s) - 1
#define ANY		(~0u)

#endif /* __XPS_TEST_FIXTURE_H */
