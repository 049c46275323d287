// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xpsctl service redis: GETs answered from the kernel, xps-redisd fills. */
#include <netinet/in.h>
#include <stdio.h>

#include "cmd.h"
#include "service.h"

struct redis_args {
	struct svc_args common;
	const char *redis;
};

static int redis_setup(struct svc_setup *s)
{
	const struct redis_args *a = s->args;
	char *addr = s->scratch[0];
	struct xps_context *ctx;

	if (svc_server_reachable("Redis", "--redis", a->redis, a->common.port,
				 addr, sizeof(s->scratch[0])))
		return -1;
	ctx = svc_attach(s, IPPROTO_TCP, a->common.port, s->name, NULL, true);
	if (!ctx)
		return -1;
	xps_context__close(ctx);
	s->port = a->common.port;
	s->argv[0] = s->daemon;
	s->argv[1] = "--context";
	s->argv[2] = s->name;
	s->argv[3] = "--server";
	s->argv[4] = addr;
	s->argv[5] = NULL;
	return 0;
}

static const struct svc_opt redis_opts[] = {
	SVC_OPT_PORT(struct redis_args, "the server's TCP port (required)"),
	SVC_OPT_NAME(struct redis_args, "the context's name (default: redis)"),
	{ .name = "--redis", .arg = "HOST:PORT", .type = SVC_OPT_STR,
	  .off = offsetof(struct redis_args, redis),
	  .help = "where xps-redisd reaches the server (default: the address port N listens on, from /proc/net/tcp, or 127.0.0.1 when it listens on all of them)" },
	{ NULL },
};

const struct svc_kind svc_redis = {
	.name = "redis",
	.summary = "GETs of cached strings from the kernel (xps-redisd)",
	.handler = "redis",
	.daemon = "xps-redisd",
	.opts = redis_opts,
	.args_size = sizeof(struct redis_args),
	.description =
"Answer GETs of cached strings for the unmodified redis-server listening on\n"
"TCP port N from the kernel.  The handler answers a segment only when every\n"
"request in it is a GET of a cached string, and invalidates the keys of a\n"
"write before the write reaches Redis; the daemon xps-redisd fetches the\n"
"keys the handler missed and keeps the handler out while a write could\n"
"bypass it (clients older than the service, a unix socket, a replica,\n"
"eviction, a password).\n",
	.notes =
"Nothing is created when nothing answers there.  Daemon: xps-redisd, its pid,\n"
"log and state in /run/xps/NAME.{pid,log,state}.\n",
	.example =
"redis-server --port 6379 --save \"\" &\n"
"xpsctl service redis --port 6379\n",
	.setup = redis_setup,
};
