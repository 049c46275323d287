// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xpsctl service memcached: get/gets answered from the kernel over TCP,
 * and with --udp over UDP too: the UDP context (NAME-udp) shares the TCP
 * one's cache, versions and miss queue, so a write on either invalidates
 * both and one filler, xps-memcachedd, serves both.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "out.h"
#include "service.h"
#include "supervise.h"

struct memcached_args {
	struct svc_args common;
	bool udp;
	const char *memcached;
};

static void udp_name(char *buf, size_t sz, const char *name)
{
	snprintf(buf, sz, "%.27s-udp", name);
}

static int memcached_setup(struct svc_setup *s)
{
	const struct memcached_args *a = s->args;
	char *server = s->scratch[0], uname[XPS_NAME_LEN];
	struct xps_context *ctx, *uctx = NULL;

	if (svc_server_reachable("memcached", "--memcached", a->memcached,
				 a->common.port, server,
				 sizeof(s->scratch[0])))
		return -1;
	ctx = svc_attach(s, IPPROTO_TCP, a->common.port, s->name, NULL, true);
	if (!ctx)
		return -1;
	if (a->udp) {
		udp_name(uname, sizeof(uname), s->name);
		uctx = svc_attach(s, IPPROTO_UDP, a->common.port, uname,
				  s->name, false);
		if (!uctx) {
			xps_context__delete(ctx);
			return -1;
		}
		xps_context__close(uctx);
	}
	xps_context__close(ctx);
	s->port = a->common.port;
	s->argv[0] = s->daemon;
	s->argv[1] = "--context";
	s->argv[2] = s->name;
	s->argv[3] = "--server";
	s->argv[4] = server;
	s->argv[5] = NULL;
	return 0;
}

/* an array: the TCP context, and the UDP one with --udp */
static void memcached_report(const struct svc_setup *s, pid_t pid)
{
	const struct memcached_args *a = s->args;
	char uname[XPS_NAME_LEN];

	out_begin_array(NULL);
	svc_print(s->kind, NULL, s->name, NULL, s->port, pid);
	if (a->udp) {
		udp_name(uname, sizeof(uname), s->name);
		svc_print(s->kind, "memcached-udp", uname, s->name, s->port,
			  pid);
	}
	out_end_array();
}

static const struct svc_opt memcached_opts[] = {
	SVC_OPT_PORT(struct memcached_args, "the server's port (required)"),
	{ .name = "--udp", .type = SVC_OPT_FLAG,
	  .off = offsetof(struct memcached_args, udp),
	  .help = "also on UDP port N, in the context NAME-udp; it shares NAME's cache, and one daemon serves both" },
	SVC_OPT_NAME(struct memcached_args,
		     "the context's name (default: memcached)"),
	{ .name = "--memcached", .arg = "HOST:PORT", .type = SVC_OPT_STR,
	  .off = offsetof(struct memcached_args, memcached),
	  .help = "where xps-memcachedd reaches the server (default: the address port N listens on, from /proc/net/tcp, or 127.0.0.1 when it listens on all of them)" },
	{ NULL },
};

/* An unlabelled UDP context NAME-udp is the companion of NAME, served by
 * its daemon. */
static bool memcached_list_unlabelled(const struct svc_kind *k,
				      const struct xps_ctx_info *info)
{
	char svc[XPS_NAME_LEN];
	size_t n = strlen(info->name);

	if (info->pred.proto != IPPROTO_UDP)
		return false;
	if (n > 4 && !strcmp(info->name + n - 4, "-udp"))
		n -= 4;
	snprintf(svc, sizeof(svc), "%.*s", (int)n, info->name);
	svc_print(k, "memcached-udp", info->name, svc, info->pred.lport,
		  supervise_pid(svc));
	return true;
}

const struct svc_kind svc_memcached = {
	.name = "memcached",
	.summary = "get/gets of cached items, TCP and UDP (xps-memcachedd)",
	.handler = "memcached",
	.daemon = "xps-memcachedd",
	.opts = memcached_opts,
	.args_size = sizeof(struct memcached_args),
	.description =
"Answer get and gets of cached items (1 to 8 keys) for the unmodified\n"
"memcached listening on TCP port N from the kernel.  Writes invalidate\n"
"their keys before they reach the server; the daemon xps-memcachedd learns\n"
"the values of the keys the handler missed (items without an expiry time)\n"
"from memcached's replies.\n"
"Evictions: coherent (the only mode).  An item memcached evicts is no\n"
"longer answered from the kernel within one check of the daemon (200 ms;\n"
"memcached's `watch evictions` usually tells it sooner): the kernel answers\n"
"only what memcached would.  With -Y or SASL authentication, the kernel\n"
"answers nothing (the service is degraded).\n",
	.notes =
"Nothing is created when nothing answers there.  Daemon: xps-memcachedd,\n"
"its pid, log and state in /run/xps/NAME.{pid,log,state}.\n",
	.example =
"memcached -p 11211 -U 11211 -u nobody &\n"
"xpsctl service memcached --port 11211 --udp\n",
	.setup = memcached_setup,
	.report = memcached_report,
	.list_unlabelled = memcached_list_unlabelled,
};
