// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Data operations on a context's data map and its per-key statistics.
 * These go straight to the map: no lock, no framework state, so a daemon
 * can push values at the rate the map allows.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "internal.h"

static int data_fd(const struct xps_context *ctx)
{
	if (!ctx)
		return -EINVAL;
	if (ctx->data_fd < 0) {
		pr_warn("context '%s' has no data map (its handler declares no XPS_DATA_MAP)\n",
			ctx->name);
		return -ENOENT;
	}
	return ctx->data_fd;
}

int xps_context__data_sizes(const struct xps_context *ctx, __u32 *key_size,
			    __u32 *value_size)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = data_fd(ctx);

	if (fd < 0)
		return libxps_err(fd);
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return libxps_err(-errno);
	if (key_size)
		*key_size = info.key_size;
	if (value_size)
		*value_size = info.value_size;
	return 0;
}

static int data_op(struct xps_context *ctx, const void *key,
		   const void *value, __u64 flags)
{
	int fd = data_fd(ctx);

	if (fd < 0)
		return libxps_err(fd);
	if (!key || !value)
		return libxps_err(-EINVAL);
	if (bpf_map_update_elem(fd, key, value, flags))
		return libxps_err(-errno);
	return 0;
}

int xps_context__data_put(struct xps_context *ctx, const void *key,
			  const void *value)
{
	return data_op(ctx, key, value, BPF_NOEXIST);
}

int xps_context__data_update(struct xps_context *ctx, const void *key,
			     const void *value)
{
	return data_op(ctx, key, value, BPF_EXIST);
}

int xps_context__data_set(struct xps_context *ctx, const void *key,
			  const void *value)
{
	return data_op(ctx, key, value, BPF_ANY);
}

int xps_context__data_get(struct xps_context *ctx, const void *key,
			  void *value)
{
	int fd = data_fd(ctx);

	if (fd < 0)
		return libxps_err(fd);
	if (!key || !value)
		return libxps_err(-EINVAL);
	if (bpf_map_lookup_elem(fd, key, value))
		return libxps_err(-errno);
	return 0;
}

int xps_context__data_delete(struct xps_context *ctx, const void *key)
{
	int fd = data_fd(ctx);

	if (fd < 0)
		return libxps_err(fd);
	if (!key)
		return libxps_err(-EINVAL);
	if (bpf_map_delete_elem(fd, key))
		return libxps_err(-errno);
	return 0;
}

/*
 * Batches go through BPF_MAP_UPDATE_BATCH where the semantics match
 * (insert-or-replace has no batch flag for NOEXIST/EXIST), element by
 * element otherwise, stopping at the first failure.
 */
static int data_batch(struct xps_context *ctx, const void *keys,
		      const void *values, __u32 *count, __u64 flags, bool del)
{
	__u32 ks, vs, i, n;
	int err;

	if (!count || !keys || (!del && !values))
		return libxps_err(-EINVAL);
	err = xps_context__data_sizes(ctx, &ks, &vs);
	if (err)
		return err;
	n = *count;
	*count = 0;
	for (i = 0; i < n; i++) {
		const char *k = (const char *)keys + (size_t)i * ks;

		if (del)
			err = xps_context__data_delete(ctx, k);
		else
			err = data_op(ctx, k, (const char *)values +
				      (size_t)i * vs, flags);
		if (err)
			return err;
		(*count)++;
	}
	return 0;
}

int xps_context__data_put_batch(struct xps_context *ctx, const void *keys,
				const void *values, __u32 *count)
{
	return data_batch(ctx, keys, values, count, BPF_NOEXIST, false);
}

int xps_context__data_update_batch(struct xps_context *ctx,
				   const void *keys, const void *values,
				   __u32 *count)
{
	return data_batch(ctx, keys, values, count, BPF_EXIST, false);
}

int xps_context__data_delete_batch(struct xps_context *ctx,
				   const void *keys, __u32 *count)
{
	return data_batch(ctx, keys, NULL, count, 0, true);
}

/* Sum one per-CPU key statistics value. */
static int keystat_sum(int fd, const void *key, __u64 *count)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	__u64 *per;

	*count = 0;
	if (ncpu <= 0)
		return ncpu;
	per = calloc(ncpu, sizeof(*per));
	if (!per)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, key, per)) {
		int err = -errno;

		free(per);
		return err == -ENOENT ? 0 : err;
	}
	for (i = 0; i < ncpu; i++)
		*count += per[i];
	free(per);
	return 0;
}

int xps_context__keystats_get(struct xps_context *ctx, const void *key,
			      __u64 *count)
{
	int err;

	if (!ctx || !key || !count)
		return libxps_err(-EINVAL);
	if (ctx->keystats_fd < 0) {
		pr_warn("context '%s' keeps no key statistics\n", ctx->name);
		return libxps_err(-ENOENT);
	}
	err = keystat_sum(ctx->keystats_fd, key, count);
	return err ? libxps_err(err) : 0;
}

int xps_context__keystats_for_each(struct xps_context *ctx, xps_keystat_cb cb,
				   void *data)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	void *key = NULL, *next = NULL;
	__u64 count;
	int err = 0, ret;

	if (!ctx || !cb)
		return libxps_err(-EINVAL);
	if (ctx->keystats_fd < 0) {
		pr_warn("context '%s' keeps no key statistics\n", ctx->name);
		return libxps_err(-ENOENT);
	}
	if (bpf_obj_get_info_by_fd(ctx->keystats_fd, &info, &len))
		return libxps_err(-errno);
	key = calloc(1, info.key_size);
	next = calloc(1, info.key_size);
	if (!key || !next) {
		err = -ENOMEM;
		goto out;
	}
	if (bpf_map_get_next_key(ctx->keystats_fd, NULL, next))
		goto out;	/* empty */
	do {
		memcpy(key, next, info.key_size);
		err = keystat_sum(ctx->keystats_fd, key, &count);
		if (err)
			break;
		ret = cb(key, info.key_size, count, data);
		if (ret) {
			err = ret;
			break;
		}
	} while (!bpf_map_get_next_key(ctx->keystats_fd, key, next));
out:
	free(key);
	free(next);
	return err < 0 ? libxps_err(err) : err;
}

/* ---- the paper's Table 3.2 names and libxps 0.1.0's ------------------- */

LIBXPS_ALIAS(xps_put_data, xps_context__data_put);
LIBXPS_ALIAS(xps_update_data, xps_context__data_update);
LIBXPS_ALIAS(xps_set_data, xps_context__data_set);
LIBXPS_ALIAS(xps_get_data, xps_context__data_get);
LIBXPS_ALIAS(xps_delete_data, xps_context__data_delete);
LIBXPS_ALIAS(xps_put_data_batch, xps_context__data_put_batch);
LIBXPS_ALIAS(xps_update_data_batch, xps_context__data_update_batch);
LIBXPS_ALIAS(xps_delete_data_batch, xps_context__data_delete_batch);
LIBXPS_ALIAS(xps_data_sizes, xps_context__data_sizes);
LIBXPS_ALIAS(xps_get_stats, xps_context__keystats_get);
LIBXPS_ALIAS(xps_get_allstats, xps_context__keystats_for_each);
