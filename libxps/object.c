// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Handler objects: loading the one SEC("xps") program of a handler's ELF
 * file for a backend, with its knobs set and its context's maps (those
 * of an existing context kept when their layout matches).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "internal.h"

void loaded_init(struct loaded_handler *h)
{
	size_t i;

	h->prog_fd = -1;
	h->framing = 0;
	for (i = 0; i < N_CTX_MAPS; i++)
		h->fds[i] = -1;
}

void loaded_close(struct loaded_handler *h)
{
	size_t i;

	if (h->prog_fd >= 0)
		close(h->prog_fd);
	for (i = 0; i < N_CTX_MAPS; i++)
		if (h->fds[i] >= 0)
			close(h->fds[i]);
	loaded_init(h);
}

/*
 * The handler's const volatile __u32 @name (in .rodata): set it to *@value
 * (@set), or read it into *@value.
 */
static int knob(struct bpf_object *obj, const char *name, __u32 *value,
		bool set)
{
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;
	struct bpf_map *map, *rodata = NULL;
	struct btf *btf = bpf_object__btf(obj);
	const void *init;
	size_t size;
	char *data;
	int id, i, err;

	bpf_object__for_each_map(map, obj) {
		const char *n = bpf_map__name(map);
		size_t l = strlen(n);

		if (bpf_map__is_internal(map) && l >= 7 &&
		    !strcmp(n + l - 7, ".rodata"))
			rodata = map;
	}
	if (!btf || !rodata)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	if (id < 0)
		return -ENOENT;
	sec = btf__type_by_id(btf, id);
	vs = btf_var_secinfos(sec);
	for (i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *var = btf__type_by_id(btf, vs->type);

		if (strcmp(btf__name_by_offset(btf, var->name_off), name))
			continue;
		init = bpf_map__initial_value(rodata, &size);
		if (!init || vs->offset + sizeof(__u32) > size)
			return -EINVAL;
		if (!set) {
			memcpy(value, (const char *)init + vs->offset,
			       sizeof(*value));
			return 0;
		}
		data = malloc(size);
		if (!data)
			return -ENOMEM;
		memcpy(data, init, size);
		memcpy(data + vs->offset, value, sizeof(*value));
		err = bpf_map__set_initial_value(rodata, data, size);
		free(data);
		return err;
	}
	return -ENOENT;
}

static int set_knob(struct bpf_object *obj, const char *name, __u32 value)
{
	return knob(obj, name, &value, true);
}

static bool map_compatible(int fd, struct bpf_map *m)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return false;
	return info.type == bpf_map__type(m) &&
	       info.key_size == bpf_map__key_size(m) &&
	       info.value_size == bpf_map__value_size(m) &&
	       info.max_entries == bpf_map__max_entries(m) &&
	       info.map_flags == bpf_map__map_flags(m);
}

/*
 * A read-only native hook's reply buffers (xps_nat_reply, xps.bpf.h),
 * keyed by CPU: one per possible CPU.  Objects built before them have
 * none.
 */
static int native_reply_buffers(struct bpf_object *obj)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, "xps_nat_reply");
	int ncpu;

	if (!m)
		return 0;
	ncpu = libbpf_num_possible_cpus();
	if (ncpu < 0)
		return ncpu;
	return bpf_map__set_max_entries(m, ncpu);
}

/* The program type and knobs of @handler (of @path) for @backend/@proto. */
static int handler_prepare(struct bpf_object *obj, struct bpf_program *handler,
			   const char *path, __u32 backend, __u8 proto)
{
	enum bpf_prog_type type;
	enum bpf_attach_type attach;
	int err;

	switch (backend) {
	case XPS_BACKEND_SOCKMAP:
		type = BPF_PROG_TYPE_SK_SKB;
		attach = BPF_SK_SKB_STREAM_VERDICT;
		break;
	case XPS_BACKEND_TC:
		type = BPF_PROG_TYPE_SCHED_CLS;
		attach = 0;
		break;
	default:
		type = BPF_PROG_TYPE_SK_SKB;
		attach = native_attach_type(proto == IPPROTO_UDP ?
					    "BPF_SERVE_UDP" : "BPF_SERVE_TCP");
		break;
	}
	bpf_program__set_type(handler, type);
	bpf_program__set_expected_attach_type(handler, attach);
	err = set_knob(obj, "xps_backend", backend);
	if (err) {
		pr_warn("%s does not include xps.bpf.h (no xps_backend knob)\n",
			path);
		return err;
	}
	/* the native hook's reply kfunc, where the kernel has it */
	if (backend == XPS_BACKEND_NATIVE && kernel_has_reply_kfunc()) {
		err = set_knob(obj, "xps_reply_kfunc", 1);
		if (err && err != -ENOENT)
			return err;
		err = native_reply_buffers(obj);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Find the context maps @obj (of @path) declares, into @maps; with @reuse
 * (an existing context's), make it use those instead of new ones.
 */
static int handler_keep_maps(struct bpf_object *obj, const char *path,
			     const int *reuse, struct bpf_map **maps)
{
	bool keep = true;
	size_t i;
	int err;

	/* keep the context's maps only if every one keeps its layout */
	for (i = 0; i < N_CTX_MAPS; i++) {
		maps[i] = bpf_object__find_map_by_name(obj, ctx_maps[i].map);
		if (reuse && reuse[i] >= 0 &&
		    (!maps[i] || !map_compatible(reuse[i], maps[i])))
			keep = false;
	}
	for (i = 0; reuse && keep && i < N_CTX_MAPS; i++) {
		if (maps[i] && reuse[i] >= 0 &&
		    (err = bpf_map__reuse_fd(maps[i], reuse[i])))
			return err;
	}
	if (reuse && !keep && reuse[CM_DATA] >= 0)
		pr_info("%s: data map layout differs: the context starts with an empty data map\n",
			path);
	return 0;
}

/*
 * Load the SEC("xps") program of @path for @backend/@proto.  The data map
 * and key statistics of an existing context are kept (@reuse_*) when the
 * new object declares them with the same layout.
 */
int handler_load(const char *path, __u32 backend, __u8 proto,
		 const int *reuse, struct loaded_handler *out)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = XPS_PIN_ROOT);
	struct bpf_program *prog, *handler = NULL;
	struct bpf_map *maps[N_CTX_MAPS];
	struct bpf_object *obj;
	int err, n = 0;
	size_t i;

	loaded_init(out);
	if (access(path, R_OK)) {
		err = -errno;
		pr_warn("cannot read handler object %s: %s\n", path,
			strerror(errno));
		return err;
	}
	obj = bpf_object__open_file(path, &oo);
	if (!obj) {
		err = -errno;
		pr_warn("cannot open handler object %s: %s (libbpf says why with -vv)\n",
			path, strerror(-err));
		return err;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!strcmp(bpf_program__section_name(prog), "xps")) {
			handler = prog;
			n++;
		} else {
			bpf_program__set_autoload(prog, false);
		}
	}
	if (n != 1) {
		pr_warn("%s: expected exactly one SEC(\"xps\") program, found %d\n",
			path, n);
		err = -EINVAL;
		goto out;
	}

	err = handler_prepare(obj, handler, path, backend, proto);
	if (!err)
		err = handler_keep_maps(obj, path, reuse, maps);
	/* an object built before the knob existed frames nothing early */
	if (!err && knob(obj, "xps_framing", &out->framing, false))
		out->framing = 0;
	if (err)
		goto out;

	err = bpf_object__load(obj);
	if (err) {
		pr_warn("cannot load handler %s: %s (the verifier log is shown with -v)\n",
			path, strerror(-err));
		goto out;
	}
	out->prog_fd = dup(bpf_program__fd(handler));
	if (out->prog_fd < 0)
		err = -errno;
	for (i = 0; !err && i < N_CTX_MAPS; i++) {
		if (!maps[i])
			continue;
		out->fds[i] = dup(bpf_map__fd(maps[i]));
		if (out->fds[i] < 0)
			err = -errno;
	}
	if (err)
		loaded_close(out);
out:
	bpf_object__close(obj);
	return err;
}

