/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of tools/testing/selftests/bpf/test_progs.h that
 * prog_tests/serve.c uses, so that the same file builds and runs here,
 * against the system's libbpf, without the kernel tree (tests/vm/run.sh).
 * Only what xps.c calls is here: add a macro when the test starts using
 * it, with test_progs' meaning (an ASSERT_* evaluates its arguments once,
 * records a failure of the running subtest, prints why, and returns
 * whether the check held).
 *
 * The runner is test_progs_shim.c: it calls test_serve() and prints PASS or
 * FAIL for each subtest and "N passed, M failed".
 */
#ifndef __TEST_PROGS_SHIM_H
#define __TEST_PROGS_SHIM_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

enum verbosity {
	VERBOSE_NONE,
	VERBOSE_NORMAL,
	VERBOSE_VERY,
	VERBOSE_SUPER,
};

struct test_env {
	enum verbosity verbosity;
};

extern struct test_env env;

bool test__start_subtest(const char *name);
void test__fail(void);

/* Prints "func:FAIL:name message" and fails the subtest when @failed. */
#define __SHIM_CHECK(failed, name, fmt, ...) ({				\
	bool ___failed = (failed);					\
	int ___errno = errno;						\
	if (___failed) {						\
		test__fail();						\
		printf("%s:FAIL:%s " fmt "\n", __func__, (name),	\
		       ##__VA_ARGS__);					\
	} else if (env.verbosity > VERBOSE_NONE) {			\
		printf("%s:PASS:%s\n", __func__, (name));		\
	}								\
	errno = ___errno;						\
	!___failed;							\
})

#define PRINT_FAIL(fmt, ...) ({						\
	test__fail();							\
	printf("%s:FAIL:%d " fmt, __func__, __LINE__, ##__VA_ARGS__);	\
})

#define ASSERT_TRUE(actual, name)					\
	__SHIM_CHECK(!(actual), (name), "unexpected %s: got FALSE", (name))

#define ASSERT_FALSE(actual, name)					\
	__SHIM_CHECK(!!(actual), (name), "unexpected %s: got TRUE", (name))

#define __SHIM_CMP(actual, expected, name, op, nop) ({			\
	typeof(actual) ___act = (actual);				\
	typeof(expected) ___exp = (expected);				\
	__SHIM_CHECK(!(___act op ___exp), (name),			\
		     "unexpected %s: actual %lld " #nop " expected %lld",\
		     (name), (long long)___act, (long long)___exp);	\
})

#define ASSERT_EQ(actual, expected, name) __SHIM_CMP(actual, expected, name, ==, !=)
#define ASSERT_NEQ(actual, expected, name) __SHIM_CMP(actual, expected, name, !=, ==)
#define ASSERT_LT(actual, expected, name) __SHIM_CMP(actual, expected, name, <, >=)
#define ASSERT_LE(actual, expected, name) __SHIM_CMP(actual, expected, name, <=, >)
#define ASSERT_GT(actual, expected, name) __SHIM_CMP(actual, expected, name, >, <=)
#define ASSERT_GE(actual, expected, name) __SHIM_CMP(actual, expected, name, >=, <)

#define ASSERT_STRNEQ(actual, expected, len, name) ({			\
	const char *___act = (actual);					\
	const char *___exp = (expected);				\
	int ___len = (len);						\
	__SHIM_CHECK(strncmp(___act, ___exp, ___len) != 0, (name),	\
		     "unexpected %s: actual '%.*s' != expected '%.*s'",	\
		     (name), ___len, ___act, ___len, ___exp);		\
})

#define ASSERT_OK(res, name) ({						\
	long long ___res = (res);					\
	__SHIM_CHECK(___res != 0, (name),				\
		     "unexpected error: %lld (errno %d)", ___res, errno);\
})

#define ASSERT_ERR(res, name) ({					\
	long long ___res = (res);					\
	__SHIM_CHECK(___res >= 0, (name),				\
		     "unexpected success: %lld", ___res);		\
})

/* libbpf 1.x returns NULL and sets errno, never an error pointer. */
#define ASSERT_OK_PTR(ptr, name) ({					\
	const void *___res = (ptr);					\
	__SHIM_CHECK(!___res, (name), "unexpected error: %d", -errno);	\
})

#define ASSERT_OK_FD(fd, name) ({					\
	int ___fd = (fd);						\
	__SHIM_CHECK(___fd < 0, (name),					\
		     "unexpected fd: %d (errno %d)", ___fd, errno);	\
})

#endif /* __TEST_PROGS_SHIM_H */
