/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Minimal test harness: named checks, a PASS/FAIL line per test, a summary,
 * and a non-zero exit status when anything failed.  Parsers always get an
 * XPS_SCRATCH-byte buffer, as in a handler.
 */
#ifndef __XPS_TEST_HARNESS_H
#define __XPS_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int h_tests, h_failed, h_cur_failed;
static const char *h_cur;

static void h_begin(const char *name)
{
	h_cur = name;
	h_cur_failed = 0;
	h_tests++;
}

static void h_end(void)
{
	printf("%s %s\n", h_cur_failed ? "FAIL" : "PASS", h_cur);
	if (h_cur_failed)
		h_failed++;
}

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			if (h_cur_failed++ < 5) {			\
				printf("  %s:%d: %s: ", __FILE__,	\
				       __LINE__, h_cur);		\
				printf(__VA_ARGS__);			\
				printf("\n");				\
			}						\
		}							\
	} while (0)

static int h_summary(const char *suite)
{
	printf("%s: %d tests, %d failed\n", suite, h_tests, h_failed);
	return h_failed ? 1 : 0;
}

/* Copy n bytes to buf at off; the rest of the buffer is @fill. */
static __attribute__((unused)) void h_load(__u8 *buf, size_t off, const void *req, size_t n, int fill)
{
	memset(buf, fill, XPS_SCRATCH);
	if (off + n > XPS_SCRATCH)
		n = XPS_SCRATCH - off;
	memcpy(buf + off, req, n);
}

#endif /* __XPS_TEST_HARNESS_H */
