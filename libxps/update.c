// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Changing a live context: its handler replaced in one atomic step (the
 * data map kept when the layout allows), the context deleted (a
 * composability context with its sub-contexts), every context purged.
 */
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "internal.h"

int xps_context__update(struct xps_context *ctx, const char *obj_file)
{
	struct loaded_handler h;
	struct xps_ctx_info info;
	int reuse[N_CTX_MAPS];
	struct xps_fw fw;
	int err, progs;
	size_t i;

	if (!ctx || !obj_file)
		return libxps_err(-EINVAL);
	loaded_init(&h);
	ctx_map_fds(ctx->name, reuse);
	err = fw_lock_open(&fw);
	if (err)
		goto out;
	if (bpf_map_lookup_elem(fw.ctxinfo, &ctx->slot, &info) ||
	    !info.flags || strncmp(info.name, ctx->name, XPS_NAME_LEN)) {
		pr_warn("context '%s' no longer exists\n", ctx->name);
		err = -ENOENT;
		goto out;
	}
	if (info.flags & XPS_SLOT_COMP) {
		pr_warn("'%s' is a composability context: update its sub-contexts\n",
			ctx->name);
		err = -EINVAL;
		goto out;
	}
	err = handler_load(obj_file, info.backend, info.pred.proto, reuse, &h);
	if (err)
		goto out;
	err = pin_handler(ctx->name, &h);
	if (err)
		goto out;
	progs = info.pred.proto == IPPROTO_UDP ? fw.progs_udp : fw.progs_tcp;
	/* one atomic replace: each run tail-calls the old or the new one */
	if (bpf_map_update_elem(progs, &ctx->slot, &h.prog_fd, BPF_ANY)) {
		err = -errno;
		pr_warn("cannot install the new handler: %s\n", strerror(errno));
		goto out;
	}
	if (!realpath(obj_file, info.obj_path))
		snprintf(info.obj_path, sizeof(info.obj_path), "%s", obj_file);
	bpf_map_update_elem(fw.ctxinfo, &ctx->slot, &info, BPF_ANY);
	if (ctx->data_fd >= 0)
		close(ctx->data_fd);
	ctx->data_fd = h.fds[CM_DATA] >= 0 ? dup(h.fds[CM_DATA]) : -1;
	if (ctx->keystats_fd >= 0)
		close(ctx->keystats_fd);
	ctx->keystats_fd = h.fds[CM_KEYSTATS] >= 0 ?
			   dup(h.fds[CM_KEYSTATS]) : -1;
	pr_info("context '%s' now runs %s\n", ctx->name, obj_file);
out:
	for (i = 0; i < N_CTX_MAPS; i++)
		if (reuse[i] >= 0)
			close(reuse[i]);
	loaded_close(&h);
	fw_unlock(&fw);
	return err ? libxps_err(err) : 0;
}

static int delete_slot(struct xps_fw *fw, __u32 slot)
{
	struct xps_ctx_info info, sub;
	struct xps_slot empty_slot = {};
	struct xps_ctx_info empty = {};
	struct xps_pred_key key;
	__u32 i;

	if (bpf_map_lookup_elem(fw->ctxinfo, &slot, &info) || !info.flags)
		return -ENOENT;
	if (info.flags & XPS_SLOT_COMP) {
		for (i = 0; i < XPS_MAX_SLOTS; i++)
			if (!bpf_map_lookup_elem(fw->ctxinfo, &i, &sub) &&
			    (sub.flags & XPS_SLOT_SUB) && sub.parent == slot)
				delete_slot(fw, i);
	}
	/* unlink what leads to the handler first, then the handler */
	if (info.flags & XPS_SLOT_SUB) {
		struct xps_comp_key ck = { .slot = info.parent,
					   .value = info.comp_value };

		bpf_map_delete_elem(fw->comp, &ck);
	} else {
		key = info.pred;
		bpf_map_delete_elem(fw->preds, &key);
	}
	bpf_map_update_elem(fw->slots, &slot, &empty_slot, BPF_ANY);
	bpf_map_update_elem(fw->ctxinfo, &slot, &empty, BPF_ANY);
	if (!(info.flags & XPS_SLOT_SUB))
		masks_sync(fw, info.pred.proto);
	fw_bump_generation(fw);
	bpf_map_delete_elem(info.pred.proto == IPPROTO_UDP ? fw->progs_udp :
			    fw->progs_tcp, &slot);
	zero_stats(fw, slot);
	unpin_handler(info.name);
	pr_info("context '%s' deleted\n", info.name);
	return 0;
}

int xps_context__delete(struct xps_context *ctx)
{
	struct xps_ctx_info info;
	struct xps_fw fw;
	int err;

	if (!ctx)
		return libxps_err(-EINVAL);
	err = fw_lock_open(&fw);
	if (!err) {
		if (bpf_map_lookup_elem(fw.ctxinfo, &ctx->slot, &info) ||
		    !info.flags || strncmp(info.name, ctx->name, XPS_NAME_LEN)) {
			pr_warn("context '%s' no longer exists\n", ctx->name);
			err = -ENOENT;
		} else {
			err = delete_slot(&fw, ctx->slot);
		}
	}
	if (!err) {
		fw_tc_sync(&fw);
		fw_teardown_if_unused(&fw);
	}
	fw_unlock(&fw);
	xps_context__close(ctx);
	return err ? libxps_err(err) : 0;
}

int xps_framework__purge(void)
{
	struct xps_ctx_info info;
	struct xps_fw fw;
	__u32 slot;
	int err;

	fw_init(&fw);
	err = fw_lock(&fw);
	if (err)
		return libxps_err(err);
	if (access(XPS_FW_PIN("xps_config"), F_OK)) {
		/* no framework: a context directory left is an orphan */
		unpin_all_handlers();
		rmdir(XPS_PIN_CTX_DIR);
		rmdir(XPS_PIN_ROOT);
		fw_unlock(&fw);
		return 0;
	}
	err = fw_open(&fw);
	if (!err) {
		for (slot = 0; slot < XPS_MAX_SLOTS; slot++)
			if (!bpf_map_lookup_elem(fw.ctxinfo, &slot, &info) &&
			    info.flags && !(info.flags & XPS_SLOT_SUB))
				delete_slot(&fw, slot);
	}
	/*
	 * Even an incomplete framework, or another version's (err), is
	 * removed as far as it goes, with the contexts it could not list.
	 */
	if (err)
		unpin_all_handlers();
	fw_purge(&fw);
	fw_unlock(&fw);
	return 0;
}

/* ---- the paper's Table 3.2 names and libxps 0.1.0's ------------------- */

LIBXPS_ALIAS(xps_update_context, xps_context__update);
LIBXPS_ALIAS(xps_delete_context, xps_context__delete);
LIBXPS_ALIAS(xps_purge, xps_framework__purge);
