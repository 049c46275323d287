// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The framework's life cycle: backend detection, loading and pinning the
 * extension framework, attaching it (both: cgroup sock_ops link, TC egress
 * for TCP contexts; native: netns links; stock: sockhash verdict programs,
 * TC ingress for UDP contexts and draining), and removing every trace of it
 * when the last context is gone.
 */
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "internal.h"
#include "xps_framework.skel.h"

/*
 * The name of the framework's map @m, checked when compiling: the
 * skeleton (bpftool's, from xps_framework.bpf.c) must have it.  The maps
 * the framework pins are those of the skeleton with LIBBPF_PIN_BY_NAME;
 * fw_unpin_maps() reads them from it, so no list here can miss one.
 */
#define FW_MAP(m)							\
	(#m + 0 * sizeof(((struct xps_framework_bpf *)0)->maps.m))

#define LINK_SOCKOPS	XPS_FW_PIN("link_sockops")
#define LINK_NATIVE_TCP	XPS_FW_PIN("link_native_tcp")
#define LINK_NATIVE_UDP	XPS_FW_PIN("link_native_udp")
#define LINK_LISTEN_CLOSE XPS_FW_PIN("link_listen_close")
#define PROG_VERDICT	XPS_FW_PIN("prog_stream_verdict")
#define PROG_MSG	XPS_FW_PIN("prog_msg_verdict")
#define PROG_SOCKOPS	XPS_FW_PIN("prog_sockops")
#define PROG_TC_IN	XPS_FW_PIN("prog_tc_ingress")
#define PROG_TC_OUT	XPS_FW_PIN("prog_tc_egress")
#define PROG_UDP_ENROLL	XPS_FW_PIN("prog_udp_enroll")

/* TC filter identity of the stock backend's programs ("XP") */
#define XPS_TC_HANDLE	0x5850
#define XPS_TC_PRIO	0x5850

/*
 * The attach type value of the native hook, from the running kernel's BTF:
 * the patch appends BPF_SERVE_TCP/BPF_SERVE_UDP to enum bpf_attach_type, and
 * reading the value (instead of hard-coding it) keeps libxps right should
 * the numbering move.  Returns the value or -ENOENT.
 */
int native_attach_type(const char *name)
{
	const struct btf_enum *e;
	const struct btf_type *t;
	struct btf *btf;
	int id, i, ret = -ENOENT;

	btf = btf__load_vmlinux_btf();
	if (!btf)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, "bpf_attach_type", BTF_KIND_ENUM);
	if (id > 0) {
		t = btf__type_by_id(btf, id);
		e = btf_enum(t);
		for (i = 0; i < btf_vlen(t); i++, e++) {
			if (!strcmp(btf__name_by_offset(btf, e->name_off), name)) {
				ret = e->val;
				break;
			}
		}
	}
	btf__free(btf);
	return ret;
}

/*
 * Whether the running kernel's BTF has the kfunc @name.  Read once into
 * *@known (-1: not read yet): vmlinux BTF takes milliseconds to parse, and
 * every native context asks.
 */
static bool kernel_has_kfunc(const char *name, int *known)
{
	int v = __atomic_load_n(known, __ATOMIC_RELAXED);
	struct btf *btf;

	if (v >= 0)
		return v;
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return false;
	v = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) > 0;
	btf__free(btf);
	__atomic_store_n(known, v, __ATOMIC_RELAXED);
	return v;
}

/* The native hook's reply kfunc, bpf_serve_reply() (kernel patch "bpf: Let
 * serve programs answer from a buffer").
 */
bool kernel_has_reply_kfunc(void)
{
	static int known = -1;

	return kernel_has_kfunc("bpf_serve_reply", &known);
}

/* The connection's state, bpf_serve_state() (kernel patch "bpf: Tell serve
 * programs the connection's state"); older kernels of the series have the
 * bits in struct tcp_sock only, which the framework reads through BTF.
 */
static bool kernel_has_state_kfunc(void)
{
	static int known = -1;

	return kernel_has_kfunc("bpf_serve_state", &known);
}

int detect_backends(__u32 *tcp, __u32 *udp, bool *native)
{
	const char *env = getenv("XPS_BACKEND");
	bool have = native_attach_type("BPF_SERVE_TCP") >= 0 &&
		    native_attach_type("BPF_SERVE_UDP") >= 0;

	if (native)
		*native = have;
	if (env && *env && strcmp(env, "native") && strcmp(env, "stock")) {
		pr_warn("XPS_BACKEND=%s: expected 'native' or 'stock'\n", env);
		return -EINVAL;
	}
	if (env && !strcmp(env, "native") && !have) {
		pr_warn("XPS_BACKEND=native but this kernel has no XPS hook (no BPF_SERVE_TCP in its BTF)\n");
		return -EOPNOTSUPP;
	}
	if (have && !(env && !strcmp(env, "stock"))) {
		*tcp = XPS_BACKEND_NATIVE;
		*udp = XPS_BACKEND_NATIVE;
	} else {
		*tcp = XPS_BACKEND_SOCKMAP;
		*udp = XPS_BACKEND_TC;
	}
	return 0;
}

const char *xps_backend__name(__u32 backend)
{
	switch (backend) {
	case XPS_BACKEND_NATIVE:
		return "native";
	case XPS_BACKEND_SOCKMAP:
	case XPS_BACKEND_TC:
		return "stock";
	default:
		return "none";
	}
}

static int ensure_bpffs(void)
{
	struct statfs st;

	if (!statfs("/sys/fs/bpf", &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	/* these machines do not mount bpffs at boot */
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
		pr_warn("/sys/fs/bpf is not a BPF file system and mounting one failed: %s\n",
			strerror(errno));
		return -errno;
	}
	pr_info("mounted bpffs at /sys/fs/bpf\n");
	return 0;
}

int fw_lock(struct xps_fw *fw)
{
	int err;

	fw_init(fw);
	libxps_route_libbpf();
	if (geteuid() != 0 && access("/sys/fs/bpf", W_OK)) {
		pr_warn("managing XPS contexts needs root (CAP_BPF, CAP_NET_ADMIN and access to /sys/fs/bpf)\n");
		return -EPERM;
	}
	err = ensure_bpffs();
	if (err)
		return err;
	if (mkdir(XPS_PIN_ROOT, 0700) && errno != EEXIST) {
		err = -errno;
		pr_warn("cannot create %s: %s\n", XPS_PIN_ROOT, strerror(errno));
		return err;
	}
	fw->lock_fd = open(XPS_PIN_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fw->lock_fd < 0) {
		err = -errno;
		pr_warn("cannot open %s: %s\n", XPS_PIN_ROOT, strerror(errno));
		return err;
	}
	if (flock(fw->lock_fd, LOCK_EX)) {
		err = -errno;
		close(fw->lock_fd);
		fw->lock_fd = -1;
		return err;
	}
	return 0;
}

/* fw_lock(), then fw_open(): fw_unlock() after either way. */
int fw_lock_open(struct xps_fw *fw)
{
	int err = fw_lock(fw);

	return err ? err : fw_open(fw);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void fw_unlock(struct xps_fw *fw)
{
	int *fds[] = { &fw->config, &fw->preds, &fw->masks, &fw->slots,
		       &fw->ctxinfo, &fw->comp, &fw->progs_tcp,
		       &fw->progs_udp, &fw->stats, &fw->sockhash, &fw->conns,
		       &fw->tcifs, &fw->servers };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close_fd(fds[i]);
	if (fw->lock_fd >= 0) {
		/* fw_lock() creates the directory: leave none behind */
		if (access(XPS_FW_PIN("xps_config"), F_OK))
			rmdir(XPS_PIN_ROOT);
		flock(fw->lock_fd, LOCK_UN);
		close(fw->lock_fd);
	}
	fw->lock_fd = -1;
}

static int get_pinned(const char *name, int *fd)
{
	char path[PATH_MAX];
	int err;

	*fd = -1;
	err = xps_pin_path(path, sizeof(path), NULL, name);
	if (err)
		return err;
	*fd = bpf_obj_get(path);
	return *fd < 0 ? -errno : 0;
}

/*
 * A framework pinned by another version of XPS may lay its maps out
 * otherwise: xps_config (a lookup into this version's struct would overrun
 * it), and the maps this version's handler objects share with it, which
 * libbpf would refuse to reuse (the run state's levels, the connection
 * records).  @max_entries 0: any number.
 */
static int check_fw_map(int fd, const char *name, __u32 value_size,
			__u32 max_entries)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.value_size != value_size ||
	    (max_entries && info.max_entries != max_entries)) {
		pr_warn("the framework under %s was loaded by another version of XPS (%s: %u entries of %u bytes, not %u of %u); remove it with 'xpsctl reset'\n",
			XPS_PIN_ROOT, name, info.max_entries, info.value_size,
			max_entries ? max_entries : info.max_entries,
			value_size);
		return -EPROTO;
	}
	return 0;
}

static int check_config_map(int fd)
{
	return check_fw_map(fd, "xps_config", sizeof(struct xps_config), 1);
}

/* The maps of the pinned framework that handler objects share. */
static int check_shared_maps(struct xps_fw *fw)
{
	int fd, err;

	err = check_fw_map(fw->conns, "xps_conns", sizeof(struct xps_conn), 0);
	if (err)
		return err;
	err = get_pinned(FW_MAP(xps_run), &fd);
	if (err)
		return err;
	err = check_fw_map(fd, "xps_run", sizeof(struct xps_run),
			   XPS_RUN_LEVELS);
	close(fd);
	return err;
}

int xps_framework__map_fd(enum xps_fw_map map)
{
	static const char *const names[] = {
		[XPS_FW_MAP_CONFIG] = FW_MAP(xps_config),
		[XPS_FW_MAP_CONNS] = FW_MAP(xps_conns),
		[XPS_FW_MAP_WPEND] = FW_MAP(xps_wpend),
		[XPS_FW_MAP_SERVERS] = FW_MAP(xps_servers),
	};
	int fd, err;

	if ((unsigned int)map >= sizeof(names) / sizeof(names[0]))
		return libxps_err(-EINVAL);
	err = get_pinned(names[map], &fd);
	if (err) {
		pr_warn("cannot open the framework's %s map: %s\n", names[map],
			err == -ENOENT ? "XPS is not loaded" : strerror(-err));
		return libxps_err(err);
	}
	if (map == XPS_FW_MAP_CONFIG) {
		err = check_config_map(fd);
		if (err) {
			close(fd);
			return libxps_err(err);
		}
	}
	return fd;
}

/* Open the pinned maps of a loaded framework; -ENOENT if not loaded. */
int fw_open(struct xps_fw *fw)
{
	struct xps_config cfg;
	__u32 zero = 0;
	int err;

	if (access(XPS_FW_PIN("xps_config"), F_OK))
		return -ENOENT;
	err = get_pinned(FW_MAP(xps_config), &fw->config);
	if (!err && (err = check_config_map(fw->config))) {
		close_fd(&fw->config);	/* fw_purge() must not read it */
		return err;
	}
	if (err ||
	    (err = get_pinned(FW_MAP(xps_preds), &fw->preds)) ||
	    (err = get_pinned(FW_MAP(xps_masks), &fw->masks)) ||
	    (err = get_pinned(FW_MAP(xps_slots), &fw->slots)) ||
	    (err = get_pinned(FW_MAP(xps_ctxinfo), &fw->ctxinfo)) ||
	    (err = get_pinned(FW_MAP(xps_comp), &fw->comp)) ||
	    (err = get_pinned(FW_MAP(xps_progs_tcp), &fw->progs_tcp)) ||
	    (err = get_pinned(FW_MAP(xps_progs_udp), &fw->progs_udp)) ||
	    (err = get_pinned(FW_MAP(xps_stats), &fw->stats)) ||
	    (err = get_pinned(FW_MAP(xps_sockhash), &fw->sockhash)) ||
	    (err = get_pinned(FW_MAP(xps_conns), &fw->conns)) ||
	    (err = get_pinned(FW_MAP(xps_tcifs), &fw->tcifs)) ||
	    (err = get_pinned(FW_MAP(xps_servers), &fw->servers))) {
		pr_warn("framework state under %s is incomplete (%s); remove it with 'xpsctl reset'\n",
			XPS_PIN_ROOT, strerror(-err));
		return err;
	}
	err = check_shared_maps(fw);
	if (err)
		return err;
	if (bpf_map_lookup_elem(fw->config, &zero, &cfg))
		return -errno;
	fw->backend_tcp = cfg.backend_tcp;
	fw->backend_udp = cfg.backend_udp;
	return 0;
}

int fw_bump_generation(struct xps_fw *fw)
{
	struct xps_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fw->config, &zero, &cfg))
		return -errno;
	cfg.generation++;
	if (bpf_map_update_elem(fw->config, &zero, &cfg, BPF_ANY))
		return -errno;
	return 0;
}

/* The cgroup v2 root: found in /proc/mounts, mounted if there is none. */
static int cgroup2_root_fd(void)
{
	const char *fallback = "/run/xps-cgroup2";
	struct mntent *m;
	FILE *f;
	int fd = -1;

	f = setmntent("/proc/mounts", "r");
	if (f) {
		while ((m = getmntent(f))) {
			if (!strcmp(m->mnt_type, "cgroup2")) {
				fd = open(m->mnt_dir, O_RDONLY | O_DIRECTORY |
						      O_CLOEXEC);
				if (fd >= 0)
					break;
			}
		}
		endmntent(f);
	}
	if (fd >= 0)
		return fd;
	if (mkdir(fallback, 0700) && errno != EEXIST)
		return -errno;
	if (mount("cgroup2", fallback, "cgroup2", 0, NULL)) {
		pr_warn("no cgroup v2 hierarchy is mounted and mounting one failed: %s\n",
			strerror(errno));
		return -errno;
	}
	fd = open(fallback, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Enrol new connections: the sock_ops program on the cgroup v2 root. */
static int attach_sockops(int prog_fd)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo);
	int cg, link, err = 0;

	if (!access(LINK_SOCKOPS, F_OK))
		return 0;
	cg = cgroup2_root_fd();
	if (cg < 0)
		return cg;
	link = bpf_link_create(prog_fd, cg, BPF_CGROUP_SOCK_OPS, &lo);
	close(cg);
	if (link < 0) {
		err = -errno;
		pr_warn("cannot attach the sock_ops program to the cgroup v2 root: %s\n",
			strerror(-err));
		return err;
	}
	if (bpf_obj_pin(link, LINK_SOCKOPS)) {
		err = -errno;
		pr_warn("cannot pin %s: %s\n", LINK_SOCKOPS, strerror(-err));
	}
	close(link);
	return err;
}

struct fw_prog;

/* What an attach function of fw_progs[] gets. */
struct fw_attach_ctx {
	struct xps_framework_bpf *skel;
	const struct fw_prog *p;
	int prog_fd;
};

/*
 * Which framework program runs on which backend, how it is attached and
 * where it is pinned: fw_ensure() loads the programs of the backends in
 * use and walks this table in order, pinning each program (pin) and then
 * attaching it (attach); fw_remove() detaches and unpins from it too.
 * A program in the object that is not here is not loaded.
 */
struct fw_prog {
	const char *name;	/* the program's name in xps_framework.bpf.c */
	__u32 backends;		/* BE(XPS_BACKEND_...) it runs for */
	/*
	 * The attach type, by name in the running kernel's BTF (the native
	 * hook's: the patch's values are not fixed) or by value; set as the
	 * expected attach type at load for attach_btf, and for attach_type
	 * when set_expected (the SEC() name does not imply it).
	 */
	const char *attach_btf;
	enum bpf_attach_type attach_type;
	bool set_expected;
	/* NULL: attached later from its pin (TC, by fw_tc_sync()) */
	int (*attach)(const struct fw_attach_ctx *a);
	const char *pin;	/* the program's pin, or NULL */
	const char *link_pin;	/* the pin of the link attach makes, or NULL */
};

#define BE(b)		(1u << (b))
#define BE_ALL		(BE(XPS_BACKEND_NATIVE) | BE(XPS_BACKEND_SOCKMAP) | \
			 BE(XPS_BACKEND_TC))

static int attach_cgroup(const struct fw_attach_ctx *a)
{
	return attach_sockops(a->prog_fd);
}

/* The stock TCP backend's verdict programs, on the sockhash. */
static int attach_sockhash(const struct fw_attach_ctx *a)
{
	int err;

	if (!bpf_prog_attach(a->prog_fd, bpf_map__fd(a->skel->maps.xps_sockhash),
			     a->p->attach_type, 0))
		return 0;
	err = -errno;
	pr_warn("cannot attach %s to the sockhash: %s\n", a->p->name,
		strerror(-err));
	return err;
}

/* A tracing program: a link, pinned so that it outlives this process. */
static int attach_tracing(const struct fw_attach_ctx *a)
{
	struct bpf_program *prog;
	struct bpf_link *link;
	int err;

	prog = bpf_object__find_program_by_name(a->skel->obj, a->p->name);
	link = prog ? bpf_program__attach(prog) : NULL;
	if (!link) {
		err = prog ? -errno : -ENOENT;
		pr_warn("cannot attach %s: %s\n", a->p->name, strerror(-err));
		return err;
	}
	err = bpf_link__pin(link, a->p->link_pin);
	if (err)
		pr_warn("cannot pin %s: %s\n", a->p->link_pin, strerror(-err));
	/* the pin holds the link; without one this detaches it */
	bpf_link__destroy(link);
	return err;
}

/* The native hook, a link on this network namespace. */
static int attach_netns(const struct fw_attach_ctx *a)
{
	int netns, link_fd, type, err;

	type = native_attach_type(a->p->attach_btf);
	if (type < 0)
		return type;
	netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (netns < 0)
		return -errno;
	link_fd = bpf_link_create(a->prog_fd, netns, type, NULL);
	err = link_fd < 0 ? -errno : 0;
	close(netns);
	if (err) {
		pr_warn("cannot attach the framework to this network namespace (%s): %s\n",
			a->p->attach_btf, strerror(-err));
		return err;
	}
	if (bpf_obj_pin(link_fd, a->p->link_pin)) {
		err = -errno;
		pr_warn("cannot pin %s: %s\n", a->p->link_pin, strerror(-err));
	}
	close(link_fd);
	return err;
}

static const struct fw_prog fw_progs[] = {
	/* per-connection records for handlers (xps_conn_state), both */
	{ .name = "xps_sockops", .backends = BE_ALL,
	  .attach = attach_cgroup, .pin = PROG_SOCKOPS,
	  .link_pin = LINK_SOCKOPS },
	/* a service's listening socket closed: its server is gone */
	{ .name = "xps_listen_close", .backends = BE_ALL,
	  .attach = attach_tracing, .link_pin = LINK_LISTEN_CLOSE },
	/*
	 * Reply counting, stock RESET, and on the native backend the
	 * release of answered writes (release_writes())
	 */
	{ .name = "xps_tc_egress", .backends = BE_ALL, .pin = PROG_TC_OUT },
	{ .name = "xps_msg_verdict", .backends = BE(XPS_BACKEND_SOCKMAP),
	  .attach_type = BPF_SK_MSG_VERDICT,
	  .attach = attach_sockhash, .pin = PROG_MSG },
	{ .name = "xps_stream_verdict", .backends = BE(XPS_BACKEND_SOCKMAP),
	  .attach_type = BPF_SK_SKB_STREAM_VERDICT, .set_expected = true,
	  .attach = attach_sockhash, .pin = PROG_VERDICT },
	/* stock UDP, and draining stock TCP connections */
	{ .name = "xps_tc_ingress",
	  .backends = BE(XPS_BACKEND_SOCKMAP) | BE(XPS_BACKEND_TC),
	  .pin = PROG_TC_IN },
	{ .name = "xps_native_tcp", .backends = BE(XPS_BACKEND_NATIVE),
	  .attach_btf = "BPF_SERVE_TCP", .attach = attach_netns,
	  .link_pin = LINK_NATIVE_TCP },
	{ .name = "xps_native_udp", .backends = BE(XPS_BACKEND_NATIVE),
	  .attach_btf = "BPF_SERVE_UDP", .attach = attach_netns,
	  .link_pin = LINK_NATIVE_UDP },
	/* the UDP sockets the native hook runs on (xps_framework__enroll_udp) */
	{ .name = "xps_udp_enroll", .backends = BE(XPS_BACKEND_NATIVE),
	  .pin = PROG_UDP_ENROLL },
};
#define N_FW_PROGS (sizeof(fw_progs) / sizeof(fw_progs[0]))

static const struct fw_prog *fw_prog_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < N_FW_PROGS; i++)
		if (!strcmp(fw_progs[i].name, name))
			return &fw_progs[i];
	return NULL;
}

/*
 * Load only the programs of the backends in use (@mask), each with its
 * expected attach type.  A program for another kernel's hook must not
 * even be loaded: the verifier would refuse it.
 */
static int fw_progs_prepare(struct xps_framework_bpf *skel, __u32 mask)
{
	const struct fw_prog *p;
	struct bpf_program *prog;
	size_t i;
	int type;

	bpf_object__for_each_program(prog, skel->obj) {
		p = fw_prog_by_name(bpf_program__name(prog));
		if (!p)
			pr_debug("framework program %s is in no backend's table: not loaded\n",
				 bpf_program__name(prog));
		bpf_program__set_autoload(prog, p && (p->backends & mask));
	}
	for (i = 0; i < N_FW_PROGS; i++) {
		p = &fw_progs[i];
		prog = bpf_object__find_program_by_name(skel->obj, p->name);
		if (!prog) {
			pr_warn("the framework object has no program %s\n",
				p->name);
			return -ENOENT;
		}
		if (!(p->backends & mask))
			continue;
		if (p->attach_btf) {
			type = native_attach_type(p->attach_btf);
			if (type < 0) {
				pr_warn("this kernel has no %s attach type\n",
					p->attach_btf);
				return type;
			}
			bpf_program__set_expected_attach_type(prog, type);
		} else if (p->set_expected) {
			bpf_program__set_expected_attach_type(prog,
							      p->attach_type);
		}
	}
	return 0;
}

/* Pin and attach, in fw_progs[] order, the programs of @mask. */
static int fw_progs_attach(struct xps_framework_bpf *skel, __u32 mask)
{
	struct fw_attach_ctx a = { .skel = skel };
	struct bpf_program *prog;
	size_t i;
	int err;

	for (i = 0; i < N_FW_PROGS; i++) {
		a.p = &fw_progs[i];
		if (!(a.p->backends & mask))
			continue;
		prog = bpf_object__find_program_by_name(skel->obj, a.p->name);
		a.prog_fd = prog ? bpf_program__fd(prog) : -ENOENT;
		if (a.prog_fd < 0)
			return a.prog_fd;
		if (a.p->pin && (err = bpf_program__pin(prog, a.p->pin))) {
			pr_warn("cannot pin the framework's %s: %s\n",
				a.p->name, strerror(-err));
			return err;
		}
		if (a.p->attach && (err = a.p->attach(&a)))
			return err;
	}
	return 0;
}

/* Detach what is attached to the sockhash (links go with their pins). */
static void fw_progs_detach(struct xps_fw *fw)
{
	size_t i;
	int fd;

	for (i = 0; i < N_FW_PROGS; i++) {
		if (fw_progs[i].attach != attach_sockhash || fw->sockhash < 0)
			continue;
		fd = bpf_obj_get(fw_progs[i].pin);
		if (fd < 0)
			continue;
		bpf_prog_detach2(fd, fw->sockhash, fw_progs[i].attach_type);
		close(fd);
	}
}

/*
 * Unpin the maps of @obj (the framework, opened with pin_root_path
 * XPS_PIN_ROOT) that libbpf pins: every map with LIBBPF_PIN_BY_NAME,
 * whose path libbpf made when opening it.  Internal maps (.rodata, ...)
 * are never pinned.
 */
static void fw_unpin_maps(const struct bpf_object *obj)
{
	struct bpf_map *map;
	const char *path;

	bpf_object__for_each_map(map, obj) {
		path = bpf_map__pin_path(map);
		if (path)
			unlink(path);
	}
}

/* The framework object opened (not loaded) as fw_ensure() opens it. */
static struct xps_framework_bpf *fw_skel_open(void)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .pin_root_path = XPS_PIN_ROOT);

	return xps_framework_bpf__open_opts(&oo);
}

/*
 * Remove every pin of the framework: its maps (@skel's, or those of the
 * object opened again when @skel is NULL), programs and links, and the
 * directories.
 */
static void unpin_all(struct xps_framework_bpf *skel)
{
	struct xps_framework_bpf *own = skel ? NULL : fw_skel_open();
	size_t i;

	if (skel || own)
		fw_unpin_maps(skel ? skel->obj : own->obj);
	else
		pr_warn("cannot open the framework object to unpin its maps: %s\n",
			strerror(errno));
	xps_framework_bpf__destroy(own);
	for (i = 0; i < N_FW_PROGS; i++) {
		if (fw_progs[i].link_pin)
			unlink(fw_progs[i].link_pin);
		if (fw_progs[i].pin)
			unlink(fw_progs[i].pin);
	}
	rmdir(XPS_PIN_CTX_DIR);
	rmdir(XPS_PIN_ROOT);
}

/* Load, pin and attach the framework unless it is there already. */
int fw_ensure(struct xps_fw *fw)
{
	struct xps_framework_bpf *skel;
	struct xps_config cfg = {};
	__u32 zero = 0, tcp, udp, mask;
	bool native;
	int err;

	err = fw_open(fw);
	if (err != -ENOENT)
		return err;

	err = detect_backends(&tcp, &udp, &native);
	if (err)
		return err;
	mask = BE(tcp) | BE(udp);
	skel = fw_skel_open();
	if (!skel) {
		err = -errno;
		pr_warn("cannot open the framework object: %s\n", strerror(-err));
		return err;
	}
	err = fw_progs_prepare(skel, mask);
	if (err)
		goto fail;
	skel->rodata->xps_state_kfunc = native && kernel_has_state_kfunc();
	err = xps_framework_bpf__load(skel);
	if (err) {
		pr_warn("cannot load the framework: %s (run with -v for the verifier log)\n",
			strerror(-err));
		goto fail;
	}
	cfg.backend_tcp = tcp;
	cfg.backend_udp = udp;
	cfg.generation = 1;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xps_config), &zero,
				&cfg, BPF_ANY)) {
		err = -errno;
		goto fail;
	}
	err = fw_progs_attach(skel, mask);
	if (err)
		goto fail;
	xps_framework_bpf__destroy(skel);
	pr_info("framework loaded (%s backend)\n", xps_backend__name(tcp));
	return fw_open(fw);
fail:
	unpin_all(skel);
	xps_framework_bpf__destroy(skel);
	return err;
}

/* ---- TC programs on every interface: TCP egress, stock UDP ingress -- */

static int tc_attach_one(int ifindex, enum bpf_tc_attach_point point,
			 int prog_fd)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = point);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XPS_TC_HANDLE,
		    .priority = XPS_TC_PRIO, .prog_fd = prog_fd,
		    .flags = BPF_TC_F_REPLACE);

	return bpf_tc_attach(&hook, &opts);
}

static void tc_detach_one(int ifindex, enum bpf_tc_attach_point point)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = point);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = XPS_TC_HANDLE,
		    .priority = XPS_TC_PRIO);

	bpf_tc_detach(&hook, &opts);
}

static void tc_release(struct xps_tc_if *tif, __u32 keep)
{
	if ((tif->flags & XPS_TCIF_INGRESS) && !(keep & XPS_TCIF_INGRESS)) {
		tc_detach_one(tif->ifindex, BPF_TC_INGRESS);
		tif->flags &= ~XPS_TCIF_INGRESS;
	}
	if ((tif->flags & XPS_TCIF_EGRESS) && !(keep & XPS_TCIF_EGRESS)) {
		tc_detach_one(tif->ifindex, BPF_TC_EGRESS);
		tif->flags &= ~XPS_TCIF_EGRESS;
	}
	if (!(tif->flags & (XPS_TCIF_INGRESS | XPS_TCIF_EGRESS)) &&
	    (tif->flags & XPS_TCIF_OWN_QDISC)) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = tif->ifindex,
			    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);

		bpf_tc_hook_destroy(&hook);
		tif->flags = 0;
	}
}

static __u32 fw_flags(struct xps_fw *fw)
{
	struct xps_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fw->config, &zero, &cfg))
		return 0;
	return cfg.flags;
}

static int fw_set_draining(struct xps_fw *fw, bool on)
{
	struct xps_config cfg;
	struct timespec ts;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fw->config, &zero, &cfg))
		return -errno;
	if (on) {
		/* bpf_ktime_get_ns() is CLOCK_MONOTONIC */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		cfg.drain_since_ns = ts.tv_sec * 1000000000ull + ts.tv_nsec;
		cfg.flags |= XPS_CFG_DRAINING;
	} else {
		cfg.flags &= ~XPS_CFG_DRAINING;
	}
	if (bpf_map_update_elem(fw->config, &zero, &cfg, BPF_ANY))
		return -errno;
	return 0;
}

/* Connections in the stock backend's sockhash. */
static __u32 enrolled(struct xps_fw *fw)
{
	__u64 key, next;
	__u32 n = 0;

	if (fw->sockhash < 0 ||
	    bpf_map_get_next_key(fw->sockhash, NULL, &next))
		return 0;
	do {
		key = next;
		n++;
	} while (n < XPS_MAX_CONNS &&
		 !bpf_map_get_next_key(fw->sockhash, &key, &next));
	return n;
}

/* Which TC programs the current contexts need (egress on both backends). */
static __u32 tc_needed(struct xps_fw *fw)
{
	struct xps_ctx_info info;
	__u32 slot, need = 0;

	if (fw_flags(fw) & XPS_CFG_DRAINING)
		need |= XPS_TCIF_INGRESS;
	for (slot = 0; slot < XPS_MAX_SLOTS; slot++) {
		if (bpf_map_lookup_elem(fw->ctxinfo, &slot, &info) ||
		    !info.flags || (info.flags & XPS_SLOT_SUB))
			continue;
		/* native: UDP runs in the hook, TCP egress releases writes */
		if (info.pred.proto == IPPROTO_UDP)
			need |= fw->backend_udp == XPS_BACKEND_TC ?
				XPS_TCIF_INGRESS : 0;
		else
			need |= XPS_TCIF_EGRESS;
	}
	return need;
}

/*
 * Attach (or detach) the TC programs so that every interface of the
 * namespace runs what the contexts need: ingress for UDP contexts on the
 * stock backend (and for draining), egress for TCP contexts on both (reply
 * counting, stock RESET, native release of answered writes).  Interfaces that appeared since the last call are picked
 * up here; each create/delete of a context calls it.
 */
int fw_tc_sync(struct xps_fw *fw)
{
	struct if_nameindex *ifs, *it;
	struct xps_tc_if tifs[XPS_MAX_TC_IFS] = {};
	int in_fd = -1, out_fd = -1, err = 0, n;
	__u32 need = tc_needed(fw), i;

	for (i = 0; i < XPS_MAX_TC_IFS; i++)
		bpf_map_lookup_elem(fw->tcifs, &i, &tifs[i]);

	if (need) {
		if (need & XPS_TCIF_INGRESS)
			in_fd = bpf_obj_get(PROG_TC_IN);
		if (need & XPS_TCIF_EGRESS)
			out_fd = bpf_obj_get(PROG_TC_OUT);
		if (((need & XPS_TCIF_INGRESS) && in_fd < 0) ||
		    ((need & XPS_TCIF_EGRESS) && out_fd < 0)) {
			err = -errno;
			pr_warn("framework TC programs are not pinned: %s\n",
				strerror(errno));
			goto out;
		}
	}

	ifs = if_nameindex();
	for (it = ifs; need && it && it->if_index; it++) {
		struct xps_tc_if *tif = NULL;

		for (i = 0; i < XPS_MAX_TC_IFS; i++)
			if (tifs[i].ifindex == it->if_index)
				tif = &tifs[i];
		for (i = 0; !tif && i < XPS_MAX_TC_IFS; i++)
			if (!tifs[i].ifindex)
				tif = &tifs[i];
		if (!tif) {
			pr_warn("more than %d interfaces: %s is not covered\n",
				XPS_MAX_TC_IFS, it->if_name);
			continue;
		}
		if (!tif->ifindex) {
			LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = it->if_index,
				    .attach_point = BPF_TC_INGRESS);

			tif->ifindex = it->if_index;
			n = bpf_tc_hook_create(&hook);
			if (!n)
				tif->flags |= XPS_TCIF_OWN_QDISC;
			else if (n != -EEXIST) {
				pr_warn("cannot add a clsact qdisc to %s: %s\n",
					it->if_name, strerror(-n));
				tif->ifindex = 0;
				continue;
			}
		}
		if ((need & XPS_TCIF_INGRESS) && !(tif->flags & XPS_TCIF_INGRESS)) {
			n = tc_attach_one(tif->ifindex, BPF_TC_INGRESS, in_fd);
			if (n)
				pr_warn("cannot attach TC ingress on %s: %s\n",
					it->if_name, strerror(-n));
			else
				tif->flags |= XPS_TCIF_INGRESS;
		}
		if ((need & XPS_TCIF_EGRESS) && !(tif->flags & XPS_TCIF_EGRESS)) {
			n = tc_attach_one(tif->ifindex, BPF_TC_EGRESS, out_fd);
			if (n)
				pr_warn("cannot attach TC egress on %s: %s\n",
					it->if_name, strerror(-n));
			else
				tif->flags |= XPS_TCIF_EGRESS;
		}
	}
	if (ifs)
		if_freenameindex(ifs);

	for (i = 0; i < XPS_MAX_TC_IFS; i++) {
		if (tifs[i].ifindex)
			tc_release(&tifs[i], need);
		if (!tifs[i].flags)
			tifs[i].ifindex = 0;
		bpf_map_update_elem(fw->tcifs, &i, &tifs[i], BPF_ANY);
	}
out:
	if (in_fd >= 0)
		close(in_fd);
	if (out_fd >= 0)
		close(out_fd);
	return err;
}

static void fw_remove(struct xps_fw *fw)
{
	fw_set_draining(fw, false);
	unlink(LINK_SOCKOPS);	/* no new enrolment from here on */
	fw_tc_sync(fw);	/* no context needs TC: detaches everything */
	fw_progs_detach(fw);
	unpin_all(NULL);
	pr_info("framework removed\n");
}

/* Stock TCP connections enrolled while a new context is created: serve. */
int fw_undrain(struct xps_fw *fw)
{
	int fd, err;

	if (fw->backend_tcp != XPS_BACKEND_SOCKMAP ||
	    !(fw_flags(fw) & XPS_CFG_DRAINING))
		return 0;
	fd = bpf_obj_get(PROG_SOCKOPS);
	if (fd < 0)
		return -errno;
	err = attach_sockops(fd);
	close(fd);
	if (!err)
		err = fw_set_draining(fw, false);
	return err;
}

/*
 * No context left: remove the framework, or drain first when the stock
 * backend still has connections enrolled (see XPS_CFG_DRAINING).  Also the
 * garbage collector of a finished drain: every control operation calls it.
 */
int fw_teardown_if_unused(struct xps_fw *fw)
{
	struct xps_ctx_info info;
	__u32 slot, n;

	for (slot = 0; slot < XPS_MAX_SLOTS; slot++)
		if (!bpf_map_lookup_elem(fw->ctxinfo, &slot, &info) &&
		    info.flags)
			return 0;
	n = enrolled(fw);
	if (n) {
		if (!(fw_flags(fw) & XPS_CFG_DRAINING)) {
			unlink(LINK_SOCKOPS);
			fw_set_draining(fw, true);
			fw_tc_sync(fw);
			pr_info("last context gone: draining %u connection(s) before removing the framework\n",
				n);
		}
		return 0;
	}
	fw_remove(fw);
	return 0;
}

/* Remove every trace of XPS now, whatever is in flight. */
int fw_purge(struct xps_fw *fw)
{
	fw_remove(fw);
	return 0;
}

int xps_framework__status(struct xps_status *st)
{
	struct xps_fw fw;
	struct utsname u;
	__u32 slot;
	int err;

	memset(st, 0, sizeof(*st));
	if (!uname(&u))
		snprintf(st->kernel_release, sizeof(st->kernel_release), "%s",
			 u.release);
	err = detect_backends(&st->backend_tcp, &st->backend_udp,
			      &st->native_available);
	if (err)
		return libxps_err(err);
	fw_init(&fw);
	if (access(XPS_FW_PIN("xps_config"), F_OK))
		return 0;
	err = fw_lock(&fw);
	if (!err)
		err = fw_open(&fw);
	if (!err)
		fw_teardown_if_unused(&fw);	/* finish a drain that is over */
	if (!err && !access(XPS_FW_PIN("xps_config"), F_OK)) {
		st->loaded = true;
		st->draining = fw_flags(&fw) & XPS_CFG_DRAINING;
		st->enrolled = enrolled(&fw);
		/* contexts use the backend they were created with */
		st->backend_tcp = fw.backend_tcp;
		st->backend_udp = fw.backend_udp;
		for (slot = 0; slot < XPS_MAX_SLOTS; slot++) {
			struct xps_ctx_info info;

			if (!bpf_map_lookup_elem(fw.ctxinfo, &slot, &info) &&
			    info.flags)
				st->contexts++;
		}
	}
	fw_unlock(&fw);
	return err ? libxps_err(err) : 0;
}

/* ---- libxps 0.1.0's names ------------------------------------------------ */

LIBXPS_ALIAS(xps_get_status, xps_framework__status);
LIBXPS_ALIAS(xps_backend_name, xps_backend__name);

int xps_framework__enroll_udp(void)
{
	int prog_fd, link_fd = -1, iter_fd = -1, n = 0, err = 0;
	char buf[256];
	ssize_t r, i;

	prog_fd = bpf_obj_get(PROG_UDP_ENROLL);
	if (prog_fd < 0 && errno == ENOENT) {
		if (access(LINK_NATIVE_UDP, F_OK))
			return 0;	/* no native UDP hook: nothing to opt in */
		pr_warn("the framework was set up by an older libxps, without the UDP opt-in: UDP handlers run on no socket until 'xpsctl reset' and the contexts are created again\n");
		return -ENOENT;
	}
	if (prog_fd < 0)
		return -errno;
	link_fd = bpf_link_create(prog_fd, 0, BPF_TRACE_ITER, NULL);
	if (link_fd < 0) {
		err = -errno;
		goto out;
	}
	iter_fd = bpf_iter_create(link_fd);
	if (iter_fd < 0) {
		err = -errno;
		goto out;
	}
	/* one line per socket enrolled */
	while ((r = read(iter_fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < r; i++)
			n += buf[i] == '\n';
	if (r < 0)
		err = -errno;
out:
	if (err)
		pr_warn("cannot enroll UDP sockets in the native hook: %s\n",
			strerror(-err));
	else
		pr_debug("%d UDP socket(s) enrolled in the native hook\n", n);
	if (iter_fd >= 0)
		close(iter_fd);
	if (link_fd >= 0)
		close(link_fd);
	close(prog_fd);
	return err ? err : n;
}
