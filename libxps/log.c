// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The print hook, and libbpf's messages routed through it one level down. */
#include <stdio.h>
#include <stdarg.h>
#include <bpf/libbpf.h>
#include "internal.h"

static int default_print(enum libxps_print_level level, const char *fmt,
			 va_list args)
{
	if (level > LIBXPS_WARN)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static libxps_print_fn_t print_fn = default_print;

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list args)
{
	enum libxps_print_level l;

	/* libbpf's warnings are detail of a libxps error: demote them */
	switch (level) {
	case LIBBPF_WARN:
		l = LIBXPS_INFO;
		break;
	default:
		l = LIBXPS_DEBUG;
		break;
	}
	return print_fn ? print_fn(l, fmt, args) : 0;
}

libxps_print_fn_t libxps_set_print(libxps_print_fn_t fn)
{
	libxps_print_fn_t old = print_fn;

	print_fn = fn;
	libbpf_set_print(libbpf_print);
	return old;
}

/* Route libbpf's messages through the hook (called before libbpf use). */
void libxps_route_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}

void libxps_print(enum libxps_print_level level, const char *fmt, ...)
{
	va_list args;
	int saved = errno;

	if (!print_fn)
		return;
	va_start(args, fmt);
	print_fn(level, fmt, args);
	va_end(args);
	errno = saved;
}
