// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Paths under the bpffs XPS directory made at run time, and pinning there:
 * the one place that knows how a context's directory and a pin's name make
 * a path (the layout is in internal.h).
 */
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "internal.h"

/*
 * @buf := XPS_PIN_ROOT/@file (no @ctx), XPS_PIN_ROOT/ctx/@ctx (no @file)
 * or XPS_PIN_ROOT/ctx/@ctx/@file.  -ENAMETOOLONG when it does not fit.
 * Names are not checked here: valid_name() guards what a context is called.
 */
int xps_pin_path(char *buf, size_t sz, const char *ctx, const char *file)
{
	int n;

	if (!ctx && !file)
		return -EINVAL;
	if (!ctx)
		n = snprintf(buf, sz, XPS_PIN_ROOT "/%s", file);
	else if (!file)
		n = snprintf(buf, sz, XPS_PIN_CTX_DIR "/%s", ctx);
	else
		n = snprintf(buf, sz, XPS_PIN_CTX_DIR "/%s/%s", ctx, file);
	return n < 0 || (size_t)n >= sz ? -ENAMETOOLONG : 0;
}

/* Make context @ctx's directory (and ctx/ above it) unless it exists. */
int xps_pin_ctx_mkdir(const char *ctx)
{
	char dir[PATH_MAX];
	int err;

	if (mkdir(XPS_PIN_CTX_DIR, 0700) && errno != EEXIST)
		return -errno;
	err = xps_pin_path(dir, sizeof(dir), ctx, NULL);
	if (err)
		return err;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Pin @fd as @file of context @ctx, replacing what was pinned there. */
int xps_pin_fd(int fd, const char *ctx, const char *file)
{
	char path[PATH_MAX];
	int err;

	err = xps_pin_path(path, sizeof(path), ctx, file);
	if (err)
		return err;
	unlink(path);
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		pr_warn("cannot pin %s: %s\n", path, strerror(-err));
		return err;
	}
	return 0;
}
