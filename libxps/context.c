// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Contexts: a predicate bound to a handler (or, for composability, to a
 * table of sub-handlers), its data map and its counters.  A context lives
 * in a slot: the framework's per-slot maps hold what the data path needs,
 * xps_ctxinfo what the control plane needs, and /sys/fs/bpf/xps/ctx/<name>/
 * the handler program, its maps and the application's label.
 *
 * This file holds the handle (struct xps_context): opening one by name,
 * closing it, and reading what the context is (its record, label, maps,
 * counters); listing every context.  Creating one is create.c's job,
 * changing or deleting one update.c's.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "internal.h"

struct xps_context *ctx_handle(const char *name, __u32 slot)
{
	struct xps_context *ctx = calloc(1, sizeof(*ctx));
	char path[PATH_MAX];

	if (!ctx)
		return NULL;
	snprintf(ctx->name, sizeof(ctx->name), "%s", name);
	ctx->slot = slot;
	ctx->data_fd = ctx->keystats_fd = -1;
	if (!xps_pin_path(path, sizeof(path), name, ctx_maps[CM_DATA].pin))
		ctx->data_fd = bpf_obj_get(path);
	if (!xps_pin_path(path, sizeof(path), name, ctx_maps[CM_KEYSTATS].pin))
		ctx->keystats_fd = bpf_obj_get(path);
	return ctx;
}

struct xps_context *xps_context__open(const char *name)
{
	struct xps_context *ctx;
	struct xps_fw fw;
	int err, slot;

	if (!name)
		return libxps_err_ptr(-EINVAL);
	fw_init(&fw);
	err = fw_lock(&fw);
	if (err)
		return libxps_err_ptr(err);
	err = fw_open(&fw);
	if (err == -ENOENT)
		pr_warn("no context named '%s' (no context exists)\n", name);
	slot = err ? err : find_by_name(&fw, name, NULL);
	if (!err && slot < 0)
		pr_warn("no context named '%s'\n", name);
	fw_unlock(&fw);
	if (slot < 0)
		return libxps_err_ptr(slot);
	ctx = ctx_handle(name, slot);
	return ctx ? ctx : libxps_err_ptr(-ENOMEM);
}

void xps_context__close(struct xps_context *ctx)
{
	if (!ctx)
		return;
	if (ctx->data_fd >= 0)
		close(ctx->data_fd);
	if (ctx->keystats_fd >= 0)
		close(ctx->keystats_fd);
	free(ctx);
}

const char *xps_context__name(const struct xps_context *ctx)
{
	return ctx ? ctx->name : NULL;
}

__u32 xps_context__slot(const struct xps_context *ctx)
{
	return ctx ? ctx->slot : 0;
}

static int read_info(const struct xps_context *ctx, struct xps_ctx_info *info)
{
	int fd, err = 0;

	fd = bpf_obj_get(XPS_FW_PIN("xps_ctxinfo"));
	if (fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, &ctx->slot, info))
		err = -errno;
	else if (!info->flags || strncmp(info->name, ctx->name, XPS_NAME_LEN))
		err = -ENOENT;	/* deleted, or the slot was reused */
	close(fd);
	return err;
}

int xps_context__info(const struct xps_context *ctx, struct xps_ctx_info *info)
{
	int err;

	if (!ctx || !info)
		return libxps_err(-EINVAL);
	err = read_info(ctx, info);
	if (err == -ENOENT)
		pr_warn("context '%s' no longer exists\n", ctx->name);
	return err ? libxps_err(err) : 0;
}

int xps_context__label(const struct xps_context *ctx, char *buf, size_t sz)
{
	char path[PATH_MAX], val[XPS_LABEL_LEN];
	__u32 zero = 0;
	int fd, err;

	if (!ctx || !buf || !sz)
		return libxps_err(-EINVAL);
	buf[0] = '\0';
	err = xps_pin_path(path, sizeof(path), ctx->name, CTX_LABEL_PIN);
	if (err)
		return libxps_err(err);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : libxps_err(-errno);
	err = bpf_map_lookup_elem(fd, &zero, val) ? -errno : 0;
	close(fd);
	if (err) {
		pr_warn("cannot read the label of '%s': %s\n", ctx->name,
			strerror(-err));
		return libxps_err(err);
	}
	val[sizeof(val) - 1] = '\0';
	if (strlen(val) >= sz)
		return libxps_err(-ENOSPC);
	memcpy(buf, val, strlen(val) + 1);
	return 0;
}

int xps_context__data_fd(const struct xps_context *ctx)
{
	if (!ctx)
		return libxps_err(-EINVAL);
	return ctx->data_fd >= 0 ? ctx->data_fd : libxps_err(-ENOENT);
}

int xps_context__map_fd(const struct xps_context *ctx, enum xps_ctx_map map)
{
	char path[PATH_MAX];
	int fd, err;

	if (!ctx || (unsigned int)map >= N_CTX_MAPS)
		return libxps_err(-EINVAL);
	err = xps_pin_path(path, sizeof(path), ctx->name, ctx_maps[map].pin);
	if (err)
		return libxps_err(err);
	fd = bpf_obj_get(path);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOENT)
			pr_warn("context '%s' has no %s map\n", ctx->name,
				ctx_maps[map].pin);
		else
			pr_warn("cannot open %s: %s\n", path, strerror(-err));
		return libxps_err(err);
	}
	return fd;
}

int xps_context__stats(const struct xps_context *ctx,
		       struct xps_handler_stats *out)
{
	int ncpu = libbpf_num_possible_cpus(), fd, i, err = 0;
	struct xps_handler_stats *per;
	struct xps_ctx_info info;

	if (!ctx || !out)
		return libxps_err(-EINVAL);
	memset(out, 0, sizeof(*out));
	err = read_info(ctx, &info);
	if (err)
		return libxps_err(err);
	if (ncpu <= 0)
		return libxps_err(ncpu);
	per = calloc(ncpu, sizeof(*per));
	if (!per)
		return libxps_err(-ENOMEM);
	fd = bpf_obj_get(XPS_FW_PIN("xps_stats"));
	if (fd < 0 || bpf_map_lookup_elem(fd, &ctx->slot, per)) {
		err = -errno;
	} else {
		for (i = 0; i < ncpu; i++) {
			out->runs += per[i].runs;
			out->tx += per[i].tx;
			out->drop += per[i].drop;
			out->pass += per[i].pass;
			out->reset += per[i].reset;
			out->errors += per[i].errors;
			out->run_ns += per[i].run_ns;
			out->tx_bytes += per[i].tx_bytes;
		}
	}
	if (fd >= 0)
		close(fd);
	free(per);
	return err ? libxps_err(err) : 0;
}

int xps_context__stats_reset(struct xps_context *ctx)
{
	struct xps_fw fw;
	__u8 key[512];
	int err;

	if (!ctx)
		return libxps_err(-EINVAL);
	err = fw_lock_open(&fw);
	if (!err)
		zero_stats(&fw, ctx->slot);
	fw_unlock(&fw);
	/* key statistics: delete every entry */
	while (!err && ctx->keystats_fd >= 0 &&
	       !bpf_map_get_next_key(ctx->keystats_fd, NULL, key))
		bpf_map_delete_elem(ctx->keystats_fd, key);
	return err ? libxps_err(err) : 0;
}

int xps_context__for_each(xps_context_cb cb, void *data)
{
	struct xps_ctx_info info;
	struct xps_fw fw;
	__u32 slot;
	int err, ret = 0;

	fw_init(&fw);
	if (access(XPS_FW_PIN("xps_config"), F_OK))
		return 0;
	err = fw_open(&fw);
	if (err) {
		fw_unlock(&fw);
		return libxps_err(err);
	}
	for (slot = 0; slot < XPS_MAX_SLOTS && !ret; slot++) {
		if (bpf_map_lookup_elem(fw.ctxinfo, &slot, &info) ||
		    !info.flags)
			continue;
		ret = cb(&info, slot, data);
	}
	fw_unlock(&fw);
	return ret;
}

/* ---- the paper's Table 3.2 names and libxps 0.1.0's ------------------- */

LIBXPS_ALIAS(xps_context__reset_stats, xps_context__stats_reset);
LIBXPS_ALIAS(xps_for_each_context, xps_context__for_each);
