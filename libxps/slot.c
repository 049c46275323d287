// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Slots: a context's index into the framework's per-slot maps.  Finding
 * one by name (xps_ctxinfo holds the names), taking a free one, and
 * zeroing its counters.
 */
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "internal.h"

int find_by_name(struct xps_fw *fw, const char *name,
			struct xps_ctx_info *out)
{
	struct xps_ctx_info info;
	__u32 slot;

	for (slot = 0; slot < XPS_MAX_SLOTS; slot++) {
		if (bpf_map_lookup_elem(fw->ctxinfo, &slot, &info) ||
		    !info.flags)
			continue;
		if (!strncmp(info.name, name, XPS_NAME_LEN)) {
			if (out)
				*out = info;
			return slot;
		}
	}
	return -ENOENT;
}

int free_slot(struct xps_fw *fw)
{
	struct xps_ctx_info info;
	__u32 slot;

	for (slot = 0; slot < XPS_MAX_SLOTS; slot++)
		if (!bpf_map_lookup_elem(fw->ctxinfo, &slot, &info) &&
		    !info.flags)
			return slot;
	pr_warn("all %d context slots are in use\n", XPS_MAX_SLOTS);
	return -ENOSPC;
}

void zero_stats(struct xps_fw *fw, __u32 slot)
{
	int ncpu = libbpf_num_possible_cpus();
	struct xps_handler_stats *z;

	if (ncpu <= 0)
		return;
	z = calloc(ncpu, sizeof(*z));
	if (!z)
		return;
	bpf_map_update_elem(fw->stats, &slot, z, BPF_ANY);
	free(z);
}
