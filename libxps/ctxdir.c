// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A context's directory in bpffs, XPS_PIN_ROOT/ctx/<name>/: its handler's
 * program and maps pinned there (and removed), the maps a new handler
 * object keeps or shares, and the application's label.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "internal.h"

const struct ctx_map_name ctx_maps[N_CTX_MAPS] = {
	[XPS_CTX_MAP_DATA] = { "xps_data", "data" },		/* XPS_DATA_MAP */
	[XPS_CTX_MAP_KEYSTATS] = { "xps_keystats", "keystats" }, /* XPS_DATA_MAP */
	[XPS_CTX_MAP_MISSES] = { "xps_misses", "misses" },	/* bpf/lib/kvcache.bpf.h */
	[XPS_CTX_MAP_STATE] = { "xps_state", "state" },	/* XPS_STATE_MAP */
	[XPS_CTX_MAP_VERSIONS] = { "xps_versions", "versions" }, /* bpf/lib/kvcache.bpf.h */
	/* kept across a handler update: a head carried over it stays */
	[XPS_CTX_MAP_CARRIES] = { "xps_kv_carries", "carries" }, /* bpf/lib/kvcache.bpf.h */
};

/* fds of a context's pinned maps, for reuse by a new handler object */
void ctx_map_fds(const char *name, int *fds)
{
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < N_CTX_MAPS; i++)
		fds[i] = xps_pin_path(path, sizeof(path), name, ctx_maps[i].pin) ?
			 -1 : bpf_obj_get(path);
}

/* Whether @fd is the data map of context @name. */
bool maps_same(int fd, const char *name)
{
	struct bpf_map_info a = {}, b = {};
	__u32 la = sizeof(a), lb = sizeof(b);
	char path[PATH_MAX];
	bool same = false;
	int other;

	if (xps_pin_path(path, sizeof(path), name, ctx_maps[CM_DATA].pin))
		return false;
	other = bpf_obj_get(path);
	if (other < 0)
		return false;
	if (!bpf_obj_get_info_by_fd(fd, &a, &la) &&
	    !bpf_obj_get_info_by_fd(other, &b, &lb))
		same = a.id == b.id;
	close(other);
	return same;
}

int pin_handler(const char *name, const struct loaded_handler *h)
{
	size_t i;
	int err;

	err = xps_pin_ctx_mkdir(name);
	if (err)
		return err;
	if ((err = xps_pin_fd(h->prog_fd, name, "prog")))
		return err;
	for (i = 0; i < N_CTX_MAPS; i++) {
		if (h->fds[i] >= 0 &&
		    (err = xps_pin_fd(h->fds[i], name, ctx_maps[i].pin)))
			return err;
	}
	return 0;
}

static void unpin_one(const char *name, const char *file)
{
	char path[PATH_MAX];

	if (!xps_pin_path(path, sizeof(path), name, file))
		unlink(path);
}

void unpin_handler(const char *name)
{
	char dir[PATH_MAX];
	size_t i;

	if (xps_pin_path(dir, sizeof(dir), name, NULL))
		return;
	unpin_one(name, "prog");
	unpin_one(name, CTX_LABEL_PIN);
	for (i = 0; i < N_CTX_MAPS; i++)
		unpin_one(name, ctx_maps[i].pin);
	rmdir(dir);
}

/*
 * Every context directory under XPS_PIN_CTX_DIR, whatever the framework's
 * state says: for a framework libxps cannot open (another version's), whose
 * slots it cannot list.
 */
void unpin_all_handlers(void)
{
	struct dirent *e;
	DIR *d = opendir(XPS_PIN_CTX_DIR);

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			unpin_handler(e->d_name);
	closedir(d);
}

/*
 * The application's label: a one-entry array map of XPS_LABEL_LEN bytes
 * pinned as ctx/<name>/label, created with the context and removed with
 * its directory.  A map because bpffs holds nothing else; no program
 * reads it.  Without a label, a pin left by an older libxps that could
 * not remove the directory is removed, so that a new context never shows
 * an old one's label.
 */
int pin_label(const char *name, const char *label)
{
	char path[PATH_MAX], val[XPS_LABEL_LEN] = {};
	__u32 zero = 0;
	int fd, err;

	err = xps_pin_path(path, sizeof(path), name, CTX_LABEL_PIN);
	if (err)
		return err;
	unlink(path);
	if (!label)
		return 0;
	err = xps_pin_ctx_mkdir(name);
	if (err)
		return err;
	snprintf(val, sizeof(val), "%s", label);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xps_label", sizeof(zero),
			    sizeof(val), 1, NULL);
	if (fd < 0) {
		err = -errno;
		pr_warn("cannot create the label map: %s\n", strerror(-err));
		return err;
	}
	if (bpf_map_update_elem(fd, &zero, val, BPF_ANY))
		err = -errno;
	else
		err = xps_pin_fd(fd, name, CTX_LABEL_PIN);
	close(fd);
	return err;
}
