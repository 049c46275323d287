// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xpsctl handler: attach, detach, update, list, comp. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "cmd.h"
#include "out.h"

/* An address into @dst (v4-mapped for IPv4); sets and checks the family. */
static int parse_addr(const char *opt, const char *s, __u8 *dst,
		      struct xps_predicate *p)
{
	struct in_addr a4;
	struct in6_addr a6;
	__u8 fam;

	if (inet_pton(AF_INET, s, &a4) == 1) {
		memset(dst, 0, 10);
		dst[10] = dst[11] = 0xff;
		memcpy(dst + 12, &a4, 4);
		fam = AF_INET;
	} else if (inet_pton(AF_INET6, s, &a6) == 1) {
		memcpy(dst, &a6, 16);
		fam = IN6_IS_ADDR_V4MAPPED(&a6) ? AF_INET : AF_INET6;
	} else {
		p_err("%s: '%s' is not an IPv4 or IPv6 address", opt, s);
		return -1;
	}
	if (p->family && p->family != fam) {
		p_err("%s: '%s' is not of the same family as the other address",
		      opt, s);
		return -1;
	}
	p->family = fam;
	return 0;
}

/* Parse the options shared by attach and comp into @p and @name. */
static int parse_pred_opts(int *argc, char ***argv, struct xps_predicate *p,
			   const char **name, const char **parent,
			   const char **value, __u32 *offset, __u32 *len,
			   const char **share)
{
	const char *v;
	__u32 port;

	memset(p, 0, sizeof(*p));
	p->proto = IPPROTO_TCP;
	while (*argc > 0) {
		const char *o = (*argv)[0];

		if (!strcmp(o, "--port") || !strcmp(o, "port")) {
			if (next_arg(argc, argv, "--port", &v) ||
			    parse_u32(v, "--port", 65535, &port))
				return -1;
			if (!port) {
				p_err("--port: 0 is not a port");
				return -1;
			}
			p->lport = port;
		} else if (!strcmp(o, "--proto") || !strcmp(o, "proto")) {
			if (next_arg(argc, argv, "--proto", &v))
				return -1;
			if (!strcmp(v, "tcp"))
				p->proto = IPPROTO_TCP;
			else if (!strcmp(v, "udp"))
				p->proto = IPPROTO_UDP;
			else {
				p_err("--proto: expected tcp or udp, got '%s'", v);
				return -1;
			}
		} else if (!strcmp(o, "--addr") || !strcmp(o, "addr")) {
			if (next_arg(argc, argv, "--addr", &v) ||
			    parse_addr("--addr", v, p->laddr, p))
				return -1;
			p->has_laddr = true;
		} else if (!strcmp(o, "--raddr") || !strcmp(o, "raddr")) {
			if (next_arg(argc, argv, "--raddr", &v) ||
			    parse_addr("--raddr", v, p->raddr, p))
				return -1;
			p->has_raddr = true;
		} else if (!strcmp(o, "--rport") || !strcmp(o, "rport")) {
			if (next_arg(argc, argv, "--rport", &v) ||
			    parse_u32(v, "--rport", 65535, &port))
				return -1;
			p->rport = port;
		} else if (!strcmp(o, "--name") || !strcmp(o, "name")) {
			if (next_arg(argc, argv, "--name", name))
				return -1;
		} else if (share && (!strcmp(o, "--share") || !strcmp(o, "share"))) {
			if (next_arg(argc, argv, "--share", share))
				return -1;
		} else if (parent && (!strcmp(o, "--parent") || !strcmp(o, "parent"))) {
			if (next_arg(argc, argv, "--parent", parent))
				return -1;
		} else if (value && (!strcmp(o, "--value") || !strcmp(o, "value"))) {
			if (next_arg(argc, argv, "--value", value))
				return -1;
		} else if (offset && (!strcmp(o, "--offset") || !strcmp(o, "offset"))) {
			if (next_arg(argc, argv, "--offset", &v) ||
			    parse_u32(v, "--offset", 65535, offset))
				return -1;
		} else if (len && (!strcmp(o, "--len") || !strcmp(o, "len"))) {
			if (next_arg(argc, argv, "--len", &v) ||
			    parse_u32(v, "--len", XPS_COMP_MAX_LEN, len))
				return -1;
		} else {
			p_err("unknown option '%s'", o);
			return -1;
		}
	}
	return 0;
}

static void print_ctx(const struct xps_ctx_info *info, __u32 slot)
{
	char addr[INET6_ADDRSTRLEN] = "*";
	const char *kind = info->flags & XPS_SLOT_COMP ? "comp" :
			   info->flags & XPS_SLOT_SUB ? "sub" : "handler";

	if (info->pred.mask & XPS_PRED_LADDR) {
		if (info->pred.family == AF_INET)
			inet_ntop(AF_INET, info->pred.laddr + 12, addr, sizeof(addr));
		else
			inet_ntop(AF_INET6, info->pred.laddr, addr, sizeof(addr));
	}
	out_begin_object(NULL);
	out_str("name", info->name);
	out_str("kind", kind);
	out_u64("port", info->pred.lport);
	out_str("proto", proto_name(info->pred.proto));
	out_str("addr", addr);
	if (info->pred.mask & XPS_PRED_RADDR) {
		if (info->pred.family == AF_INET)
			inet_ntop(AF_INET, info->pred.raddr + 12, addr, sizeof(addr));
		else
			inet_ntop(AF_INET6, info->pred.raddr, addr, sizeof(addr));
		out_str("raddr", addr);
	}
	if (info->pred.mask & XPS_PRED_RPORT)
		out_u64("rport", info->pred.rport);
	out_str("backend", xps_backend__name(info->backend));
	out_u64("slot", slot);
	if (info->flags & XPS_SLOT_SUB) {
		char v[32];

		snprintf(v, sizeof(v), "0x%llx",
			 (unsigned long long)info->comp_value);
		out_str("value", v);
	}
	out_str("object", info->obj_path);
	out_u64("owner_pid", info->owner_pid);
	out_end_object();
}

static int print_one(const struct xps_ctx_info *info, __u32 slot, void *data)
{
	(void)data;
	print_ctx(info, slot);
	return 0;
}

static int do_list(int argc, char **argv)
{
	int err;

	(void)argv;
	if (argc) {
		p_err("handler list takes no arguments");
		return 1;
	}
	out_begin_array(NULL);
	err = xps_context__for_each(print_one, NULL);
	out_end_array();
	return err < 0 ? lib_err("handler list", err) : 0;
}

static int report_created(struct xps_context *ctx)
{
	struct xps_ctx_info info;

	if (xps_context__info(ctx, &info)) {
		xps_context__close(ctx);
		return lib_err("handler", -errno);
	}
	print_ctx(&info, xps_context__slot(ctx));
	xps_context__close(ctx);
	return 0;
}

/* a value for a sub-context: "hex:..." or the string's bytes */
static int parse_value(const char *s, __u8 v[XPS_COMP_MAX_LEN])
{
	size_t n;

	memset(v, 0, XPS_COMP_MAX_LEN);
	if (!strncmp(s, "hex:", 4)) {
		s += 4;
		for (n = 0; *s; n++, s += 2) {
			unsigned int b;

			if (n >= XPS_COMP_MAX_LEN || sscanf(s, "%2x", &b) != 1) {
				p_err("--value: bad hex (at most %d bytes)",
				      XPS_COMP_MAX_LEN);
				return -1;
			}
			v[n] = b;
		}
		return 0;
	}
	n = strlen(s);
	if (!n || n > XPS_COMP_MAX_LEN) {
		p_err("--value: 1 to %d bytes", XPS_COMP_MAX_LEN);
		return -1;
	}
	memcpy(v, s, n);
	return 0;
}

static int do_attach(int argc, char **argv)
{
	const char *obj, *name = NULL, *parent = NULL, *value = NULL;
	const char *share = NULL;
	struct xps_predicate p;
	struct xps_context *ctx;

	if (argc < 1 || argv[0][0] == '-') {
		p_err("handler attach: missing OBJ.bpf.o");
		return 1;
	}
	obj = argv[0];
	argc--;
	argv++;
	if (parse_pred_opts(&argc, &argv, &p, &name, &parent, &value, NULL,
			    NULL, &share))
		return 1;
	if (parent) {
		XPS_CTX_OPTS(opts, name);
		struct xps_context *comp;
		__u8 v[XPS_COMP_MAX_LEN];

		if (!value) {
			p_err("handler attach --parent needs --value");
			return 1;
		}
		if (p.lport) {
			p_err("a sub-context takes its port from --parent");
			return 1;
		}
		if (parse_value(value, v))
			return 1;
		comp = open_ctx(parent);
		if (!comp)
			return 1;
		ctx = xps_context__create_sub_opts(comp, obj, v, &opts);
		xps_context__close(comp);
		if (!ctx)
			return lib_err("handler attach", -errno);
		return report_created(ctx);
	}
	if (!p.lport) {
		p_err("handler attach: --port is required");
		return 1;
	}
	{
		XPS_CTX_OPTS_SHARE(opts, name, share);

		ctx = xps_context__create_pred(obj, &p, &opts);
	}
	if (!ctx)
		return lib_err("handler attach", -errno);
	return report_created(ctx);
}

static int do_comp(int argc, char **argv)
{
	const char *name = NULL;
	struct xps_predicate p;
	struct xps_context *ctx;
	__u32 offset = 0, len = 0;

	if (parse_pred_opts(&argc, &argv, &p, &name, NULL, NULL, &offset, &len,
			    NULL))
		return 1;
	if (!p.lport || !len) {
		p_err("handler comp: --port and --len are required");
		return 1;
	}
	{
		XPS_CTX_OPTS(opts, name);

		ctx = xps_context__create_comp_pred(&p, offset, len, &opts);
	}
	if (!ctx)
		return lib_err("handler comp", -errno);
	return report_created(ctx);
}

static int do_detach(int argc, char **argv)
{
	struct xps_context *ctx;

	if (argc != 1) {
		p_err("usage: xpsctl handler detach NAME");
		return 1;
	}
	ctx = open_ctx(argv[0]);
	if (!ctx)
		return 1;
	if (xps_context__delete(ctx))
		return lib_err("handler detach", -errno);
	out_begin_object(NULL);
	out_str("detached", argv[0]);
	out_end_object();
	return 0;
}

static int do_update(int argc, char **argv)
{
	struct xps_context *ctx;
	int err;

	if (argc != 2) {
		p_err("usage: xpsctl handler update NAME OBJ.bpf.o");
		return 1;
	}
	ctx = open_ctx(argv[0]);
	if (!ctx)
		return 1;
	err = xps_context__update(ctx, argv[1]);
	if (err) {
		xps_context__close(ctx);
		return lib_err("handler update", err);
	}
	return report_created(ctx);
}

static const char usage[] =
"Usage: xpsctl handler attach OBJ --port N [--proto tcp|udp] [--addr A]\n"
"                             [--raddr A] [--rport N] [--name NAME]\n"
"                             [--share CTX]\n"
"       xpsctl handler attach OBJ --parent COMP --value V [--name NAME]\n"
"       xpsctl handler comp --port N --offset O --len L [--proto tcp|udp]\n"
"                           [--addr A] [--raddr A] [--rport N] [--name NAME]\n"
"       xpsctl handler detach NAME\n"
"       xpsctl handler update NAME OBJ\n"
"       xpsctl handler list\n"
"\n"
"Contexts: a handler (the SEC(\"xps\") program of the BPF object OBJ) run in\n"
"the kernel's receive path for the flows a predicate selects.  When several\n"
"contexts match a flow, the most specific one runs; a context of the same\n"
"specificity that could match the same flows is refused.\n"
"\n"
"Commands:\n"
"  attach     a context for the flows to local port N (TCP unless --proto\n"
"             udp), or a sub-context of the composability context COMP for\n"
"             the messages whose value is V (a string, or hex:BYTES)\n"
"  comp       a composability context: the L (1 to 8) payload bytes at\n"
"             offset O select a sub-context; other messages are passed\n"
"  detach     remove the context, its sub-contexts and every trace of them\n"
"  update     replace the handler atomically; the data map is kept when\n"
"             OBJ declares one of the same layout\n"
"  list       the contexts, their predicate, backend and object\n"
"\n"
"Options:\n"
"  --port N            the local port (required)\n"
"  --proto tcp|udp     the protocol (default: tcp)\n"
"  --addr A            only this local address (IPv4 or IPv6)\n"
"  --raddr A           only this client address\n"
"  --rport N           only this client port\n"
"  --name NAME         the context's name, up to 31 of [A-Za-z0-9._-]\n"
"                      (default: the object's name and the port)\n"
"  --share CTX         use the data map and the other per-context maps of the\n"
"                      context CTX, whose handler declares them alike\n"
"  --parent COMP       attach a sub-context of COMP\n"
"  --value V           the value that selects it\n"
"  --offset O, --len L the bytes that select a sub-context\n"
"  -h, --help          this text\n"
"\n"
"Example:\n"
"  xpsctl handler attach kv.bpf.o --port 7000 --name cache\n"
"  xpsctl handler comp --port 7001 --offset 0 --len 1 --name mux\n"
"  xpsctl handler attach echo.bpf.o --parent mux --value e\n"
"  xpsctl handler update cache kv.bpf.o\n"
"  xpsctl handler detach mux\n"
"\n"
"See xpsctl(8).\n";

static int do_help(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return print_usage(usage);
}

int do_handler(int argc, char **argv)
{
	static const struct cmd cmds[] = {
		{ "attach", do_attach, 0 },
		{ "comp", do_comp, 0 },
		{ "detach", do_detach, 0 },
		{ "update", do_update, 0 },
		{ "list", do_list, 0 },
		{ "help", do_help, 0 },
		{ NULL, NULL, 0 },
	};

	return dispatch(cmds, argc, argv, "handler");
}
