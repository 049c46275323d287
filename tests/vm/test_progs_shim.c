// SPDX-License-Identifier: GPL-2.0
/*
 * Runs prog_tests/serve.c outside the kernel tree, as test_progs would run
 * `./test_progs -t serve`:
 *
 *   test_serve [-v] [SUBTEST...]     (default: every subtest)
 *
 * Prints the failed checks of a subtest, then "PASS name" or "FAIL name",
 * and at the end "N passed, M failed"; the exit status is 1 when anything
 * failed, a named subtest that does not exist included.  -v prints every
 * check and libbpf's warnings, -vv libbpf's debug output too.
 */
#include <stdarg.h>
#include <stdlib.h>

#include "test_progs_shim.h"

void test_serve(void);

struct test_env env;

static const char *subtest;	/* the running subtest, NULL outside one */
static bool subtest_failed, outside_failed;
static int passed, failed;

static char **filters;		/* subtests named on the command line */
static bool *matched;
static int nr_filters;

static void end_subtest(void)
{
	if (!subtest)
		return;
	printf("%s %s\n", subtest_failed ? "FAIL" : "PASS", subtest);
	if (subtest_failed)
		failed++;
	else
		passed++;
	subtest = NULL;
}

bool test__start_subtest(const char *name)
{
	int i;

	end_subtest();
	if (nr_filters) {
		for (i = 0; i < nr_filters; i++)
			if (!strcmp(filters[i], name))
				break;
		if (i == nr_filters)
			return false;
		matched[i] = true;
	}
	subtest = name;
	subtest_failed = false;
	return true;
}

void test__fail(void)
{
	if (subtest)
		subtest_failed = true;
	else
		outside_failed = true;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (env.verbosity == VERBOSE_NONE ||
	    (level == LIBBPF_DEBUG && env.verbosity < VERBOSE_VERY))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	int opt, i;

	while ((opt = getopt(argc, argv, "v")) != -1) {
		switch (opt) {
		case 'v':
			if (env.verbosity < VERBOSE_SUPER)
				env.verbosity++;
			break;
		default:
			fprintf(stderr, "usage: %s [-v] [SUBTEST...]\n", argv[0]);
			return 2;
		}
	}
	filters = argv + optind;
	nr_filters = argc - optind;
	matched = calloc(nr_filters + 1, sizeof(*matched));
	if (!matched) {
		perror("calloc");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	libbpf_set_print(libbpf_print);

	test_serve();
	end_subtest();

	if (outside_failed) {
		printf("FAIL xps: a check outside any subtest failed\n");
		failed++;
	}
	/* after a failed setup, no subtest ran: that failure says why */
	for (i = 0; i < nr_filters && !outside_failed; i++) {
		if (!matched[i]) {
			printf("FAIL %s: no such subtest\n", filters[i]);
			failed++;
		}
	}
	free(matched);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
