// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Creating a context: a predicate bound to a handler, a composability
 * context (a table of sub-handlers keyed by request bytes) or one of its
 * sub-contexts.  ctx_create() is the one path all of them take, in named
 * steps under the framework's lock; the public functions check and
 * translate their arguments into a struct ctx_spec.
 */
#include <ctype.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "internal.h"

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

/* What the steps of ctx_create() share. */
struct ctx_build {
	const struct ctx_spec *s;
	struct xps_fw fw;
	struct xps_ctx_info info;	/* the new context, as it is filled */
	struct xps_ctx_info parent;	/* a sub-context's comp context */
	struct xps_slot slot_cfg;
	struct loaded_handler h;
	int slot;
	int progs;			/* the prog array of info.pred.proto */
	bool pinned;			/* ctx/<name>/ may hold pins of ours */
};

/* The predicate (a sub-context's is its parent's), name and label. */
static int ctx_identify(struct ctx_build *b)
{
	const struct ctx_spec *s = b->s;
	struct xps_ctx_info *info = &b->info;

	if (s->flags & XPS_SLOT_SUB) {
		if (bpf_map_lookup_elem(b->fw.ctxinfo, &s->parent, &b->parent) ||
		    !(b->parent.flags & XPS_SLOT_COMP)) {
			pr_warn("the parent is not a composability context\n");
			return -EINVAL;
		}
		info->pred = b->parent.pred;
	} else {
		pred_to_key(s->pred, &info->pred);
	}
	if (info->pred.proto != IPPROTO_TCP && info->pred.proto != IPPROTO_UDP) {
		pr_warn("protocol must be TCP or UDP\n");
		return -EPROTONOSUPPORT;
	}
	if (s->name)
		snprintf(info->name, sizeof(info->name), "%s", s->name);
	else
		default_name(info->name, sizeof(info->name), s,
			     (s->flags & XPS_SLOT_SUB) ? &b->parent : NULL);
	if (!valid_name(s->name ? s->name : info->name) ||
	    (s->name && strlen(s->name) >= XPS_NAME_LEN)) {
		pr_warn("invalid context name '%s': use up to %d of [A-Za-z0-9._-]\n",
			s->name ? s->name : info->name, XPS_NAME_LEN - 1);
		return -EINVAL;
	}
	if (s->label && strlen(s->label) >= XPS_LABEL_LEN) {
		pr_warn("label of '%s' too long: at most %d bytes\n", info->name,
			XPS_LABEL_LEN - 1);
		return -ENAMETOOLONG;
	}
	return 0;
}

/*
 * Refuse what would clash with a context that exists: its name, a
 * predicate that can match the same flows (one context per port), a
 * sub-context for the same value.
 */
static int ctx_check_unique(struct ctx_build *b)
{
	const struct ctx_spec *s = b->s;
	const struct xps_pred_key *pred = &b->info.pred;
	struct xps_ctx_info other;
	__u32 i;

	if (find_by_name(&b->fw, b->info.name, NULL) >= 0) {
		pr_warn("a context named '%s' exists already\n", b->info.name);
		return -EEXIST;
	}
	for (i = 0; !(s->flags & XPS_SLOT_SUB) && i < XPS_MAX_SLOTS; i++) {
		if (bpf_map_lookup_elem(b->fw.ctxinfo, &i, &other) ||
		    !other.flags || (other.flags & XPS_SLOT_SUB))
			continue;
		if (pred_conflict(pred, &other.pred)) {
			pr_warn("port %u/%s already has context '%s'\n",
				pred->lport,
				pred->proto == IPPROTO_UDP ? "udp" : "tcp",
				other.name);
			return -EEXIST;
		}
	}
	if (s->flags & XPS_SLOT_SUB) {
		struct xps_comp_key ck = { .slot = s->parent, .value = s->value };
		struct xps_comp_value cv;

		if (!bpf_map_lookup_elem(b->fw.comp, &ck, &cv)) {
			pr_warn("composability context '%s' has a sub-context for that value already\n",
				b->parent.name);
			return -EEXIST;
		}
	}
	return 0;
}

/* A free slot, and the backend and prog array of the context's protocol. */
static int ctx_take_slot(struct ctx_build *b)
{
	bool udp = b->info.pred.proto == IPPROTO_UDP;

	b->slot = free_slot(&b->fw);
	if (b->slot < 0)
		return b->slot;
	b->info.backend = udp ? b->fw.backend_udp : b->fw.backend_tcp;
	b->progs = udp ? b->fw.progs_udp : b->fw.progs_tcp;
	return 0;
}

/* Load the handler object, with the maps of s->share if asked. */
static int ctx_load_handler(struct ctx_build *b)
{
	const struct ctx_spec *s = b->s;
	int reuse[N_CTX_MAPS];
	size_t m;
	int err;

	if (s->share) {
		if (find_by_name(&b->fw, s->share, NULL) < 0) {
			pr_warn("no context '%s' to share maps with\n", s->share);
			return -ENOENT;
		}
		ctx_map_fds(s->share, reuse);
	}
	err = handler_load(s->obj, b->info.backend, b->info.pred.proto,
			   s->share ? reuse : NULL, &b->h);
	for (m = 0; s->share && m < N_CTX_MAPS; m++)
		if (reuse[m] >= 0)
			close(reuse[m]);
	if (!err && s->share && b->h.fds[CM_DATA] >= 0 &&
	    !maps_same(b->h.fds[CM_DATA], s->share)) {
		pr_warn("%s declares its maps unlike context '%s': cannot share them\n",
			s->obj, s->share);
		err = -EINVAL;
	}
	return err;
}

/* The handler (a comp context has none) and the label, pinned. */
static int ctx_pin(struct ctx_build *b)
{
	const struct ctx_spec *s = b->s;
	int err;

	if (s->obj) {
		err = ctx_load_handler(b);
		if (err)
			return err;
		err = pin_handler(b->info.name, &b->h);
		b->pinned = true;
		if (err)
			return err;
		if (!realpath(s->obj, b->info.obj_path))
			snprintf(b->info.obj_path, sizeof(b->info.obj_path),
				 "%s", s->obj);
	}
	err = pin_label(b->info.name, s->label);
	b->pinned = true;
	return err;
}

/* The context's record (xps_ctxinfo) and its slot's (xps_slots). */
static void ctx_describe(struct ctx_build *b)
{
	const struct ctx_spec *s = b->s;
	struct xps_ctx_info *info = &b->info;
	struct timespec now;

	info->flags = s->flags | XPS_SLOT_ACTIVE;
	info->parent = s->parent;
	info->comp_value = s->value;
	info->owner_pid = getpid();
	clock_gettime(CLOCK_REALTIME, &now);
	info->created_ns = now.tv_sec * 1000000000ull + now.tv_nsec;

	b->slot_cfg.flags = info->flags;
	if (s->obj)
		b->slot_cfg.flags |= (b->h.framing << XPS_SLOT_FRAMING_SHIFT) &
				     XPS_SLOT_FRAMING_MASK;
	b->slot_cfg.comp_offset = s->comp_offset;
	b->slot_cfg.comp_len = s->comp_len;
	b->slot_cfg.proto = info->pred.proto;
}

/*
 * Take back what ctx_link() installed: the slot's record and config are
 * cleared in the maps, b->info keeps the name so that ctx_create() can
 * remove the context's pins after it.
 */
static void ctx_unlink(struct ctx_build *b)
{
	const struct ctx_spec *s = b->s;
	struct xps_ctx_info none_info = {};
	struct xps_slot none_slot = {};
	struct xps_pred_key key;

	if (!(s->flags & XPS_SLOT_SUB)) {
		key = b->info.pred;
		bpf_map_delete_elem(b->fw.preds, &key);
	}
	bpf_map_update_elem(b->fw.slots, &b->slot, &none_slot, BPF_ANY);
	bpf_map_update_elem(b->fw.ctxinfo, &b->slot, &none_info, BPF_ANY);
	bpf_map_delete_elem(b->progs, &b->slot);
	if (s->pred)
		masks_sync(&b->fw, s->pred->proto);
}

/* What leads a flow to the context: its predicate or its comp value. */
static int ctx_link_entry(struct ctx_build *b)
{
	const struct ctx_spec *s = b->s;
	struct xps_pred_value pv = { .slot = b->slot };
	struct xps_pred_key key;
	int err;

	if (s->flags & XPS_SLOT_SUB) {
		struct xps_comp_key ck = { .slot = s->parent, .value = s->value };
		struct xps_comp_value cv = { .slot = b->slot };

		if (bpf_map_update_elem(b->fw.comp, &ck, &cv, BPF_NOEXIST))
			return -errno;
		return 0;
	}
	key = b->info.pred;
	if (bpf_map_update_elem(b->fw.preds, &key, &pv, BPF_NOEXIST)) {
		err = -errno;
		pr_warn("cannot add the predicate: %s\n", strerror(errno));
		return err;
	}
	err = masks_sync(&b->fw, b->info.pred.proto);
	if (!err)
		err = fw_tc_sync(&b->fw);
	return err;
}

/*
 * Install the context in its slot: the handler first, then the slot,
 * then what leads to it, so that the data path never finds a slot
 * without its handler.
 */
static int ctx_link(struct ctx_build *b)
{
	int err;

	zero_stats(&b->fw, b->slot);
	/* a server that closed before this context is not its server */
	bpf_map_update_elem(b->fw.servers, &b->slot, &(__u32){ 0 }, BPF_ANY);
	if (b->h.prog_fd >= 0 &&
	    bpf_map_update_elem(b->progs, &b->slot, &b->h.prog_fd, BPF_ANY)) {
		err = -errno;
		pr_warn("cannot install the handler: %s\n", strerror(errno));
		return err;
	}
	if (bpf_map_update_elem(b->fw.slots, &b->slot, &b->slot_cfg, BPF_ANY) ||
	    bpf_map_update_elem(b->fw.ctxinfo, &b->slot, &b->info, BPF_ANY))
		err = -errno;
	else
		err = ctx_link_entry(b);
	if (err)
		ctx_unlink(b);
	return err;
}

static struct xps_context *ctx_create(const struct ctx_spec *s)
{
	struct ctx_build b = { .s = s, .slot = -1 };
	struct xps_context *ctx = NULL;
	int err;

	loaded_init(&b.h);
	err = fw_lock(&b.fw);
	if (err)
		return libxps_err_ptr(err);
	err = fw_ensure(&b.fw);
	if (!err)
		err = fw_undrain(&b.fw);
	if (!err)
		err = ctx_identify(&b);
	if (!err)
		err = ctx_check_unique(&b);
	if (!err)
		err = ctx_take_slot(&b);
	if (!err)
		err = ctx_pin(&b);
	if (!err) {
		ctx_describe(&b);
		err = ctx_link(&b);
	}
	if (!err) {
		ctx = ctx_handle(b.info.name, b.slot);
		if (!ctx) {
			/* no handle to give: the context is taken back */
			err = -ENOMEM;
			ctx_unlink(&b);
		}
		fw_bump_generation(&b.fw);
	}
	if (!err)
		pr_info("context '%s' created in slot %d (%s backend)\n",
			b.info.name, b.slot, xps_backend__name(b.info.backend));
	if (err && b.pinned)
		unpin_handler(b.info.name);
	loaded_close(&b.h);
	if (err && b.fw.config >= 0)
		fw_teardown_if_unused(&b.fw);
	fw_unlock(&b.fw);
	if (err) {
		free(ctx);
		return libxps_err_ptr(err);
	}
	/* the patched kernel's UDP hook runs on sockets that opted in */
	if (b.info.pred.proto == IPPROTO_UDP &&
	    b.info.backend == XPS_BACKEND_NATIVE &&
	    xps_framework__enroll_udp() == 0)
		pr_info("context '%s': no UDP socket it serves yet; enroll the service's when it has one (xpsctl enroll)\n",
			b.info.name);
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
	/* a remote port alone: the sockets a server dials to its peers */
	if (!pred->lport && (!pred->rport || pred->proto != IPPROTO_TCP)) {
		pr_warn("a predicate needs a local port (or, TCP, a remote one)\n");
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

		err = fw_lock_open(&fw);
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

/* ---- the paper's Table 3.2 names and libxps 0.1.0's ------------------- */

LIBXPS_ALIAS(xps_create_context, xps_context__create);
LIBXPS_ALIAS(xps_create_context_pred, xps_context__create_pred);
LIBXPS_ALIAS(xps_create_compcontext, xps_context__create_comp);
LIBXPS_ALIAS(xps_create_compcontext_pred, xps_context__create_comp_pred);
LIBXPS_ALIAS(xps_create_subcontext, xps_context__create_sub);
LIBXPS_ALIAS(xps_create_subcontext_opts, xps_context__create_sub_opts);
