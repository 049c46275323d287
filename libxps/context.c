// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Contexts: a predicate bound to a handler (or, for composability, to a
 * table of sub-handlers), its data map and its counters.  A context lives
 * in a slot: the framework's per-slot maps hold what the data path needs,
 * xps_ctxinfo what the control plane needs, and /sys/fs/bpf/xps/ctx/<name>/
 * the handler program, its maps and the application's label.
 */
#include <ctype.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "internal.h"

int ctx_dir(char *buf, size_t sz, const char *name)
{
	int n = snprintf(buf, sz, XPS_PIN_ROOT "/ctx/%s", name);

	return n < 0 || (size_t)n >= sz ? -ENAMETOOLONG : 0;
}

static int valid_name(const char *name)
{
	size_t i, n = strlen(name);

	if (!n || n >= XPS_NAME_LEN)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '-' &&
		    name[i] != '_' && name[i] != '.')
			return 0;
	return name[0] != '.';
}

static void fw_init(struct xps_fw *fw)
{
	memset(fw, 0xff, sizeof(*fw));	/* every fd -1 */
}

/* ---- predicates ------------------------------------------------------ */

static void v4_mapped(__u8 *dst, const void *v4)
{
	memset(dst, 0, 10);
	dst[10] = 0xff;
	dst[11] = 0xff;
	memcpy(dst + 12, v4, 4);
}

int xps_predicate__from_socket(int sock, struct xps_predicate *pred)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int proto, type, v6only = 0;
	socklen_t olen = sizeof(int);
	static const __u8 zero[16];

	memset(pred, 0, sizeof(*pred));
	if (getsockname(sock, (struct sockaddr *)&ss, &len))
		return libxps_err(-errno);
	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &olen))
		return libxps_err(-errno);
	olen = sizeof(int);
	if (getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &proto, &olen))
		return libxps_err(-errno);
	if ((type != SOCK_STREAM || proto != IPPROTO_TCP) &&
	    (type != SOCK_DGRAM || proto != IPPROTO_UDP)) {
		pr_warn("socket %d is neither TCP nor UDP\n", sock);
		return libxps_err(-EPROTONOSUPPORT);
	}
	pred->proto = proto;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		pred->family = AF_INET;
		pred->lport = ntohs(sin->sin_port);
		if (sin->sin_addr.s_addr != htonl(INADDR_ANY)) {
			pred->has_laddr = true;
			v4_mapped(pred->laddr, &sin->sin_addr);
		}
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		pred->lport = ntohs(sin6->sin6_port);
		olen = sizeof(int);
		getsockopt(sock, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &olen);
		if (!memcmp(&sin6->sin6_addr, zero, 16)) {
			/* [::] takes IPv4 too unless IPV6_V6ONLY */
			pred->family = v6only ? AF_INET6 : AF_UNSPEC;
		} else {
			pred->has_laddr = true;
			memcpy(pred->laddr, &sin6->sin6_addr, 16);
			pred->family = IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) ?
				       AF_INET : AF_INET6;
		}
	} else {
		pr_warn("socket %d is not an IPv4 or IPv6 socket\n", sock);
		return libxps_err(-EAFNOSUPPORT);
	}
	if (!pred->lport) {
		pr_warn("socket %d is not bound to a port\n", sock);
		return libxps_err(-EINVAL);
	}
	return 0;
}

static void pred_to_key(const struct xps_predicate *p, struct xps_pred_key *k)
{
	memset(k, 0, sizeof(*k));
	k->proto = p->proto;
	k->lport = p->lport;
	k->mask = XPS_PRED_LPORT;
	if (p->family) {
		k->mask |= XPS_PRED_FAMILY;
		k->family = p->family;
	}
	if (p->has_laddr) {
		k->mask |= XPS_PRED_LADDR;
		memcpy(k->laddr, p->laddr, 16);
	}
	if (p->has_raddr) {
		k->mask |= XPS_PRED_RADDR;
		memcpy(k->raddr, p->raddr, 16);
	}
	if (p->rport) {
		k->mask |= XPS_PRED_RPORT;
		k->rport = p->rport;
	}
}

static int popcount8(__u8 v)
{
	return __builtin_popcount(v);
}

static int mask_cmp(const void *a, const void *b)
{
	__u8 x = *(const __u8 *)a, y = *(const __u8 *)b;

	/* more fields first; among equals, the higher mask value first */
	if (popcount8(x) != popcount8(y))
		return popcount8(y) - popcount8(x);
	return (int)y - (int)x;
}

/* Rebuild the sorted list of masks in use for @proto. */
static int masks_sync(struct xps_fw *fw, __u8 proto)
{
	struct xps_pred_masks pm = {};
	struct xps_ctx_info info;
	__u32 slot, i, idx = proto == IPPROTO_UDP;
	bool seen[XPS_PRED_NMASKS] = {};

	for (slot = 0; slot < XPS_MAX_SLOTS; slot++) {
		if (bpf_map_lookup_elem(fw->ctxinfo, &slot, &info) ||
		    !info.flags || (info.flags & XPS_SLOT_SUB) ||
		    info.pred.proto != proto)
			continue;
		seen[info.pred.mask & (XPS_PRED_NMASKS - 1)] = true;
	}
	for (i = 0; i < XPS_PRED_NMASKS; i++)
		if (seen[i])
			pm.masks[pm.count++] = i;
	qsort(pm.masks, pm.count, 1, mask_cmp);
	if (bpf_map_update_elem(fw->masks, &idx, &pm, BPF_ANY))
		return -errno;
	return 0;
}

static bool addr_overlap(const struct xps_pred_key *a,
			 const struct xps_pred_key *b, __u8 bit,
			 const __u8 *aa, const __u8 *ba)
{
	if (!(a->mask & bit) || !(b->mask & bit))
		return true;
	return !memcmp(aa, ba, 16);
}

/* Two predicates of the same specificity that can match the same flow. */
static bool pred_conflict(const struct xps_pred_key *a,
			  const struct xps_pred_key *b)
{
	if (a->proto != b->proto || a->lport != b->lport)
		return false;
	if ((a->mask & XPS_PRED_FAMILY) && (b->mask & XPS_PRED_FAMILY) &&
	    a->family != b->family)
		return false;
	if (!addr_overlap(a, b, XPS_PRED_LADDR, a->laddr, b->laddr))
		return false;
	if ((a->mask & XPS_PRED_RADDR) != (b->mask & XPS_PRED_RADDR) ||
	    (a->mask & XPS_PRED_RPORT) != (b->mask & XPS_PRED_RPORT))
		return false;	/* a more specific one wins: no conflict */
	if (!addr_overlap(a, b, XPS_PRED_RADDR, a->raddr, b->raddr))
		return false;
	return a->rport == b->rport;
}

/* ---- slots and names --------------------------------------------------- */

static int find_by_name(struct xps_fw *fw, const char *name,
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

static int free_slot(struct xps_fw *fw)
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

static void zero_stats(struct xps_fw *fw, __u32 slot)
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

/* ---- handler objects --------------------------------------------------- */

/*
 * Maps a handler object may declare that belong to its context: pinned
 * under ctx/<name>/<pin>, kept across updates when the layout matches.
 */
static const struct {
	const char *map;
	const char *pin;
} ctx_maps[] = {
	{ "xps_data", "data" },		/* XPS_DATA_MAP */
	{ "xps_keystats", "keystats" },	/* XPS_DATA_MAP */
	{ "xps_misses", "misses" },	/* bpf/kvcache.bpf.h */
	{ "xps_state", "state" },	/* XPS_STATE_MAP */
	{ "xps_versions", "versions" },	/* bpf/kvcache.bpf.h */
};
#define N_CTX_MAPS (sizeof(ctx_maps) / sizeof(ctx_maps[0]))
/* the application's label (struct xps_context_opts), beside them */
#define LABEL_PIN "label"
enum { CM_DATA, CM_KEYSTATS };
_Static_assert((int)XPS_CTX_MAP_DATA == (int)CM_DATA &&
	       (int)XPS_CTX_MAP_KEYSTATS == (int)CM_KEYSTATS &&
	       XPS_CTX_MAP_VERSIONS == N_CTX_MAPS - 1,
	       "enum xps_ctx_map follows ctx_maps[]");

struct loaded_handler {
	int prog_fd;
	int fds[N_CTX_MAPS];
};

static void loaded_init(struct loaded_handler *h)
{
	size_t i;

	h->prog_fd = -1;
	for (i = 0; i < N_CTX_MAPS; i++)
		h->fds[i] = -1;
}

static void loaded_close(struct loaded_handler *h)
{
	size_t i;

	if (h->prog_fd >= 0)
		close(h->prog_fd);
	for (i = 0; i < N_CTX_MAPS; i++)
		if (h->fds[i] >= 0)
			close(h->fds[i]);
	loaded_init(h);
}

/* fds of a context's pinned maps, for reuse by a new handler object */
static void ctx_map_fds(const char *name, int *fds)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	size_t i;

	for (i = 0; i < N_CTX_MAPS; i++)
		fds[i] = -1;
	if (ctx_dir(dir, sizeof(dir), name))
		return;
	for (i = 0; i < N_CTX_MAPS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, ctx_maps[i].pin);
		fds[i] = bpf_obj_get(path);
	}
}

/* Set the handler's const volatile __u32 @name (in .rodata) to @value. */
static int set_knob(struct bpf_object *obj, const char *name, __u32 value)
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
		data = malloc(size);
		if (!data)
			return -ENOMEM;
		memcpy(data, init, size);
		memcpy(data + vs->offset, &value, sizeof(value));
		err = bpf_map__set_initial_value(rodata, data, size);
		free(data);
		return err;
	}
	return -ENOENT;
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
 * Load the SEC("xps") program of @path for @backend/@proto.  The data map
 * and key statistics of an existing context are kept (@reuse_*) when the
 * new object declares them with the same layout.
 */
static int handler_load(const char *path, __u32 backend, __u8 proto,
			const int *reuse, struct loaded_handler *out)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = XPS_PIN_ROOT);
	struct bpf_program *prog, *handler = NULL;
	struct bpf_map *maps[N_CTX_MAPS];
	struct bpf_object *obj;
	enum bpf_prog_type type;
	enum bpf_attach_type attach;
	bool keep = true;
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
					    "BPF_XPS_UDP" : "BPF_XPS_TCP");
		break;
	}
	bpf_program__set_type(handler, type);
	bpf_program__set_expected_attach_type(handler, attach);
	err = set_knob(obj, "xps_backend", backend);
	if (err) {
		pr_warn("%s does not include xps.bpf.h (no xps_backend knob)\n",
			path);
		goto out;
	}
	/* the native hook's reply kfunc, where the kernel has it */
	if (backend == XPS_BACKEND_NATIVE && kernel_has_reply_kfunc()) {
		err = set_knob(obj, "xps_reply_kfunc", 1);
		if (err && err != -ENOENT)
			goto out;
	}

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
			goto out;
	}
	if (reuse && !keep && reuse[CM_DATA] >= 0)
		pr_info("%s: data map layout differs: the context starts with an empty data map\n",
			path);

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

/* Whether @fd is the data map of context @name. */
static bool maps_same(int fd, const char *name)
{
	struct bpf_map_info a = {}, b = {};
	__u32 la = sizeof(a), lb = sizeof(b);
	char dir[PATH_MAX], path[PATH_MAX + 16];
	bool same = false;
	int other;

	if (ctx_dir(dir, sizeof(dir), name))
		return false;
	snprintf(path, sizeof(path), "%s/data", dir);
	other = bpf_obj_get(path);
	if (other < 0)
		return false;
	if (!bpf_obj_get_info_by_fd(fd, &a, &la) &&
	    !bpf_obj_get_info_by_fd(other, &b, &lb))
		same = a.id == b.id;
	close(other);
	return same;
}

static int pin_fd(int fd, const char *dir, const char *file)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	unlink(path);
	if (bpf_obj_pin(fd, path)) {
		pr_warn("cannot pin %s: %s\n", path, strerror(errno));
		return -errno;
	}
	return 0;
}

static int pin_handler(const char *name, const struct loaded_handler *h)
{
	char dir[PATH_MAX];
	size_t i;
	int err;

	if (mkdir(XPS_PIN_ROOT "/ctx", 0700) && errno != EEXIST)
		return -errno;
	err = ctx_dir(dir, sizeof(dir), name);
	if (err)
		return err;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if ((err = pin_fd(h->prog_fd, dir, "prog")))
		return err;
	for (i = 0; i < N_CTX_MAPS; i++) {
		if (h->fds[i] >= 0 &&
		    (err = pin_fd(h->fds[i], dir, ctx_maps[i].pin)))
			return err;
	}
	return 0;
}

static void unpin_handler(const char *name)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	size_t i;

	if (ctx_dir(dir, sizeof(dir), name))
		return;
	snprintf(path, sizeof(path), "%s/prog", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/" LABEL_PIN, dir);
	unlink(path);
	for (i = 0; i < N_CTX_MAPS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, ctx_maps[i].pin);
		unlink(path);
	}
	rmdir(dir);
}

/*
 * The application's label: a one-entry array map of XPS_LABEL_LEN bytes
 * pinned as ctx/<name>/label, created with the context and removed with
 * its directory.  A map because bpffs holds nothing else; no program
 * reads it.  Without a label, a pin left by an older libxps that could
 * not remove the directory is removed, so that a new context never shows
 * an old one's label.
 */
static int pin_label(const char *name, const char *label)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], val[XPS_LABEL_LEN] = {};
	__u32 zero = 0;
	int fd, err;

	err = ctx_dir(dir, sizeof(dir), name);
	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/" LABEL_PIN, dir);
	unlink(path);
	if (!label)
		return 0;
	if (mkdir(XPS_PIN_ROOT "/ctx", 0700) && errno != EEXIST)
		return -errno;
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
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
		err = pin_fd(fd, dir, LABEL_PIN);
	close(fd);
	return err;
}

static struct xps_context *ctx_handle(const char *name, __u32 slot)
{
	struct xps_context *ctx = calloc(1, sizeof(*ctx));
	char dir[PATH_MAX], path[PATH_MAX + 16];

	if (!ctx)
		return NULL;
	snprintf(ctx->name, sizeof(ctx->name), "%s", name);
	ctx->slot = slot;
	ctx->data_fd = ctx->keystats_fd = -1;
	if (!ctx_dir(dir, sizeof(dir), name)) {
		snprintf(path, sizeof(path), "%s/data", dir);
		ctx->data_fd = bpf_obj_get(path);
		snprintf(path, sizeof(path), "%s/keystats", dir);
		ctx->keystats_fd = bpf_obj_get(path);
	}
	return ctx;
}

/* ---- create ---------------------------------------------------------- */

struct ctx_spec {
	const char *obj;		/* NULL for a comp context */
	const char *share;		/* context whose maps to use */
	const struct xps_predicate *pred; /* NULL for a sub-context */
	const char *name;
	const char *label;		/* NULL: none */
	__u32 flags;
	__u16 comp_offset;
	__u8 comp_len;
	__u32 parent;
	__u64 value;
	__u8 proto;
};

static void default_name(char *buf, size_t sz, const struct ctx_spec *s,
			 const struct xps_ctx_info *parent)
{
	const char *base = s->obj ? strrchr(s->obj, '/') : NULL;
	char stem[XPS_NAME_LEN];
	char *dot;

	snprintf(stem, sizeof(stem), "%s",
		 s->obj ? (base ? base + 1 : s->obj) : "comp");
	dot = strchr(stem, '.');
	if (dot)
		*dot = '\0';
	if (parent)
		snprintf(buf, sz, "%.12s-%.12s-%llx", parent->name, stem,
			 (unsigned long long)s->value);
	else
		snprintf(buf, sz, "%.20s-%u%s", stem, s->pred->lport,
			 s->pred->proto == IPPROTO_UDP ? "-udp" : "");
}

static struct xps_context *ctx_create(const struct ctx_spec *s)
{
	struct loaded_handler h;
	struct xps_ctx_info info = {}, other, parent_info;
	struct xps_slot slot_cfg = {};
	struct xps_pred_key key;
	struct xps_context *ctx = NULL;
	struct timespec now;
	struct xps_fw fw;
	bool pinned = false;
	int err, slot = -1;
	__u32 i, backend;
	int progs;

	loaded_init(&h);
	fw_init(&fw);
	err = fw_lock(&fw);
	if (err)
		return libxps_err_ptr(err);
	err = fw_ensure(&fw);
	if (!err)
		err = fw_undrain(&fw);
	if (err)
		goto out;

	if (s->flags & XPS_SLOT_SUB) {
		if (bpf_map_lookup_elem(fw.ctxinfo, &s->parent, &parent_info) ||
		    !(parent_info.flags & XPS_SLOT_COMP)) {
			pr_warn("the parent is not a composability context\n");
			err = -EINVAL;
			goto out;
		}
		info.pred = parent_info.pred;
	} else {
		pred_to_key(s->pred, &info.pred);
	}
	if (info.pred.proto != IPPROTO_TCP && info.pred.proto != IPPROTO_UDP) {
		pr_warn("protocol must be TCP or UDP\n");
		err = -EPROTONOSUPPORT;
		goto out;
	}
	if (s->name)
		snprintf(info.name, sizeof(info.name), "%s", s->name);
	else
		default_name(info.name, sizeof(info.name), s,
			     (s->flags & XPS_SLOT_SUB) ? &parent_info : NULL);
	if (!valid_name(s->name ? s->name : info.name) ||
	    (s->name && strlen(s->name) >= XPS_NAME_LEN)) {
		pr_warn("invalid context name '%s': use up to %d of [A-Za-z0-9._-]\n",
			s->name ? s->name : info.name, XPS_NAME_LEN - 1);
		err = -EINVAL;
		goto out;
	}
	if (s->label && strlen(s->label) >= XPS_LABEL_LEN) {
		pr_warn("label of '%s' too long: at most %d bytes\n", info.name,
			XPS_LABEL_LEN - 1);
		err = -ENAMETOOLONG;
		goto out;
	}
	if (find_by_name(&fw, info.name, NULL) >= 0) {
		pr_warn("a context named '%s' exists already\n", info.name);
		err = -EEXIST;
		goto out;
	}

	/* one context per port: refuse overlapping predicates */
	for (i = 0; !(s->flags & XPS_SLOT_SUB) && i < XPS_MAX_SLOTS; i++) {
		if (bpf_map_lookup_elem(fw.ctxinfo, &i, &other) ||
		    !other.flags || (other.flags & XPS_SLOT_SUB))
			continue;
		if (pred_conflict(&info.pred, &other.pred)) {
			pr_warn("port %u/%s already has context '%s'\n",
				info.pred.lport,
				info.pred.proto == IPPROTO_UDP ? "udp" : "tcp",
				other.name);
			err = -EEXIST;
			goto out;
		}
	}
	if ((s->flags & XPS_SLOT_SUB)) {
		struct xps_comp_key ck = { .slot = s->parent, .value = s->value };
		struct xps_comp_value cv;

		if (!bpf_map_lookup_elem(fw.comp, &ck, &cv)) {
			pr_warn("composability context '%s' has a sub-context for that value already\n",
				parent_info.name);
			err = -EEXIST;
			goto out;
		}
	}

	slot = free_slot(&fw);
	if (slot < 0) {
		err = slot;
		goto out;
	}
	backend = info.pred.proto == IPPROTO_UDP ? fw.backend_udp : fw.backend_tcp;
	progs = info.pred.proto == IPPROTO_UDP ? fw.progs_udp : fw.progs_tcp;

	if (s->obj) {
		int reuse[N_CTX_MAPS];
		size_t m;

		if (s->share) {
			if (find_by_name(&fw, s->share, NULL) < 0) {
				pr_warn("no context '%s' to share maps with\n",
					s->share);
				err = -ENOENT;
				goto out;
			}
			ctx_map_fds(s->share, reuse);
		}
		err = handler_load(s->obj, backend, info.pred.proto,
				   s->share ? reuse : NULL, &h);
		for (m = 0; s->share && m < N_CTX_MAPS; m++)
			if (reuse[m] >= 0)
				close(reuse[m]);
		if (!err && s->share && h.fds[CM_DATA] >= 0 &&
		    !maps_same(h.fds[CM_DATA], s->share)) {
			pr_warn("%s declares its maps unlike context '%s': cannot share them\n",
				s->obj, s->share);
			err = -EINVAL;
		}
		if (err)
			goto out;
		err = pin_handler(info.name, &h);
		pinned = true;
		if (err)
			goto out;
		if (!realpath(s->obj, info.obj_path))
			snprintf(info.obj_path, sizeof(info.obj_path), "%s",
				 s->obj);
	}
	err = pin_label(info.name, s->label);
	pinned = true;
	if (err)
		goto out;

	info.flags = s->flags | XPS_SLOT_ACTIVE;
	info.parent = s->parent;
	info.comp_value = s->value;
	info.backend = backend;
	info.owner_pid = getpid();
	clock_gettime(CLOCK_REALTIME, &now);
	info.created_ns = now.tv_sec * 1000000000ull + now.tv_nsec;

	slot_cfg.flags = info.flags;
	slot_cfg.comp_offset = s->comp_offset;
	slot_cfg.comp_len = s->comp_len;
	slot_cfg.proto = info.pred.proto;

	zero_stats(&fw, slot);
	/* a server that closed before this context is not its server */
	bpf_map_update_elem(fw.servers, &slot, &(__u32){ 0 }, BPF_ANY);
	/* handler first, then the slot, then what leads to it */
	if (h.prog_fd >= 0 &&
	    bpf_map_update_elem(progs, &slot, &h.prog_fd, BPF_ANY)) {
		err = -errno;
		pr_warn("cannot install the handler: %s\n", strerror(errno));
		goto out;
	}
	if (bpf_map_update_elem(fw.slots, &slot, &slot_cfg, BPF_ANY) ||
	    bpf_map_update_elem(fw.ctxinfo, &slot, &info, BPF_ANY)) {
		err = -errno;
		goto undo;
	}
	if (s->flags & XPS_SLOT_SUB) {
		struct xps_comp_key ck = { .slot = s->parent, .value = s->value };
		struct xps_comp_value cv = { .slot = slot };

		if (bpf_map_update_elem(fw.comp, &ck, &cv, BPF_NOEXIST)) {
			err = -errno;
			goto undo;
		}
	} else {
		struct xps_pred_value pv = { .slot = slot };

		key = info.pred;
		if (bpf_map_update_elem(fw.preds, &key, &pv, BPF_NOEXIST)) {
			err = -errno;
			pr_warn("cannot add the predicate: %s\n", strerror(errno));
			goto undo;
		}
		err = masks_sync(&fw, info.pred.proto);
		if (err)
			goto undo;
		err = fw_tc_sync(&fw);
		if (err)
			goto undo;
	}
	fw_bump_generation(&fw);
	ctx = ctx_handle(info.name, slot);
	if (!ctx)
		err = -ENOMEM;
	pr_info("context '%s' created in slot %d (%s backend)\n", info.name,
		slot, xps_backend__name(backend));
	goto out;

undo:
	if (!(s->flags & XPS_SLOT_SUB)) {
		key = info.pred;
		bpf_map_delete_elem(fw.preds, &key);
	}
	memset(&info, 0, sizeof(info));
	memset(&slot_cfg, 0, sizeof(slot_cfg));
	bpf_map_update_elem(fw.slots, &slot, &slot_cfg, BPF_ANY);
	bpf_map_update_elem(fw.ctxinfo, &slot, &info, BPF_ANY);
	bpf_map_delete_elem(progs, &slot);
	if (s->pred)
		masks_sync(&fw, s->pred->proto);
out:
	if (err && pinned)
		unpin_handler(info.name);
	loaded_close(&h);
	if (err && fw.config >= 0)
		fw_teardown_if_unused(&fw);
	fw_unlock(&fw);
	if (err) {
		free(ctx);
		return libxps_err_ptr(err);
	}
	return ctx;
}

/*
 * The caller's options into @s: refused when they set something this
 * libxps does not know (OPTS_VALID), read up to the caller's size.
 */
static int ctx_opts(const struct xps_context_opts *opts, struct ctx_spec *s)
{
	if (!OPTS_VALID(opts, xps_context_opts))
		return -EINVAL;
	s->name = OPTS_GET(opts, name, NULL);
	s->share = OPTS_GET(opts, share, NULL);
	s->label = OPTS_GET(opts, label, NULL);
	return 0;
}

struct xps_context *
xps_context__create_pred(const char *obj_file, const struct xps_predicate *pred,
			 const struct xps_context_opts *opts)
{
	struct ctx_spec s = { .obj = obj_file, .pred = pred };

	if (!obj_file || !pred || ctx_opts(opts, &s))
		return libxps_err_ptr(-EINVAL);
	if (!pred->lport) {
		pr_warn("a predicate needs a local port\n");
		return libxps_err_ptr(-EINVAL);
	}
	return ctx_create(&s);
}

struct xps_context *xps_context__create(const char *obj_file, int server_sock)
{
	struct xps_predicate pred;

	if (xps_predicate__from_socket(server_sock, &pred))
		return NULL;
	return xps_context__create_pred(obj_file, &pred, NULL);
}

struct xps_context *
xps_context__create_comp_pred(const struct xps_predicate *pred, int offset,
			      int len, const struct xps_context_opts *opts)
{
	struct ctx_spec s = { .pred = pred, .flags = XPS_SLOT_COMP };

	if (!pred || !pred->lport || offset < 0 || offset > 0xffff ||
	    len < 1 || len > XPS_COMP_MAX_LEN) {
		pr_warn("composability needs a port, an offset in [0, 65535] and a length in [1, %d]\n",
			XPS_COMP_MAX_LEN);
		return libxps_err_ptr(-EINVAL);
	}
	if (ctx_opts(opts, &s))
		return libxps_err_ptr(-EINVAL);
	if (s.share) {
		pr_warn("a composability context has no maps to share\n");
		return libxps_err_ptr(-EINVAL);
	}
	s.comp_offset = offset;
	s.comp_len = len;
	return ctx_create(&s);
}

struct xps_context *xps_context__create_comp(int server_sock, int offset,
					     int len)
{
	struct xps_predicate pred;

	if (xps_predicate__from_socket(server_sock, &pred))
		return NULL;
	return xps_context__create_comp_pred(&pred, offset, len, NULL);
}

struct xps_context *
xps_context__create_sub_opts(struct xps_context *comp, const char *obj_file,
			     const void *value,
			     const struct xps_context_opts *opts)
{
	struct ctx_spec s = { .obj = obj_file, .flags = XPS_SLOT_SUB };
	struct xps_ctx_info parent;
	__u64 v = 0;

	if (!comp || !obj_file || !value || ctx_opts(opts, &s))
		return libxps_err_ptr(-EINVAL);
	/*
	 * Sub-contexts have always ignored .share (xpsctl's redis-cluster
	 * service passes one): honouring it now would change what such a
	 * service runs on, so it stays ignored until that is decided.
	 */
	s.share = NULL;
	if (xps_context__info(comp, &parent))
		return NULL;
	if (!(parent.flags & XPS_SLOT_COMP)) {
		pr_warn("'%s' is not a composability context\n", parent.name);
		return libxps_err_ptr(-EINVAL);
	}
	/* the value is as many bytes as the comp context reads */
	{
		struct xps_fw fw;
		struct xps_slot sc;
		int err;

		fw_init(&fw);
		err = fw_lock(&fw);
		if (!err)
			err = fw_open(&fw);
		if (!err && bpf_map_lookup_elem(fw.slots, &comp->slot, &sc))
			err = -errno;
		fw_unlock(&fw);
		if (err)
			return libxps_err_ptr(err);
		memcpy(&v, value, sc.comp_len);
	}
	s.parent = comp->slot;
	s.value = v;
	return ctx_create(&s);
}

struct xps_context *xps_context__create_sub(struct xps_context *comp,
					    const char *obj_file,
					    const void *value)
{
	return xps_context__create_sub_opts(comp, obj_file, value, NULL);
}

/* ---- open, info ------------------------------------------------------ */

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
	char path[128];
	int fd, err = 0;

	snprintf(path, sizeof(path), XPS_PIN_ROOT "/xps_ctxinfo");
	fd = bpf_obj_get(path);
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
	char dir[PATH_MAX], path[PATH_MAX + 16], val[XPS_LABEL_LEN];
	__u32 zero = 0;
	int fd, err;

	if (!ctx || !buf || !sz)
		return libxps_err(-EINVAL);
	buf[0] = '\0';
	err = ctx_dir(dir, sizeof(dir), ctx->name);
	if (err)
		return libxps_err(err);
	snprintf(path, sizeof(path), "%s/" LABEL_PIN, dir);
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
	char dir[PATH_MAX], path[PATH_MAX + 16];
	int fd, err;

	if (!ctx || (unsigned int)map >= N_CTX_MAPS)
		return libxps_err(-EINVAL);
	err = ctx_dir(dir, sizeof(dir), ctx->name);
	if (err)
		return libxps_err(err);
	snprintf(path, sizeof(path), "%s/%s", dir, ctx_maps[map].pin);
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
	fd = bpf_obj_get(XPS_PIN_ROOT "/xps_stats");
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
	fw_init(&fw);
	err = fw_lock(&fw);
	if (!err)
		err = fw_open(&fw);
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
	if (access(XPS_PIN_ROOT "/xps_config", F_OK))
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

/* ---- update, delete ---------------------------------------------------- */

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
	fw_init(&fw);
	err = fw_lock(&fw);
	if (!err)
		err = fw_open(&fw);
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
	fw_init(&fw);
	err = fw_lock(&fw);
	if (!err)
		err = fw_open(&fw);
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
	if (access(XPS_PIN_ROOT "/xps_config", F_OK)) {
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
	/* even an incomplete framework (err) is removed as far as it goes */
	fw_purge(&fw);
	fw_unlock(&fw);
	return 0;
}

/* ---- the paper's Table 3.2 names and libxps 0.1.0's ------------------- */

LIBXPS_ALIAS(xps_create_context, xps_context__create);
LIBXPS_ALIAS(xps_create_context_pred, xps_context__create_pred);
LIBXPS_ALIAS(xps_update_context, xps_context__update);
LIBXPS_ALIAS(xps_delete_context, xps_context__delete);
LIBXPS_ALIAS(xps_context__reset_stats, xps_context__stats_reset);
LIBXPS_ALIAS(xps_for_each_context, xps_context__for_each);
LIBXPS_ALIAS(xps_create_compcontext, xps_context__create_comp);
LIBXPS_ALIAS(xps_create_compcontext_pred, xps_context__create_comp_pred);
LIBXPS_ALIAS(xps_create_subcontext, xps_context__create_sub);
LIBXPS_ALIAS(xps_create_subcontext_opts, xps_context__create_sub_opts);
LIBXPS_ALIAS(xps_purge, xps_framework__purge);
LIBXPS_ALIAS(xps_predicate_from_socket, xps_predicate__from_socket);
