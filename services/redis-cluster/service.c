// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xpsctl service redis-cluster: Redis Cluster bus PINGs answered from the
 * kernel.  A comp context on the bus port selects by the message type
 * (offset 12, 2 bytes); type 0 (PING) runs redis_cluster.bpf.o in the
 * sub-context NAME-ping, whose PONG template xps-clusterd keeps fresh
 * (docs/coherence.md).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "out.h"
#include "service.h"
#include "supervise.h"
#include "redis_cluster.h"

struct cluster_args {
	struct svc_args common;
	__u32 bus_port;
	__u32 max_age;
};

/* A sub-context of @comp for the bus message type @type. */
static int add_type(const struct svc_setup *s, struct xps_context *comp,
		    unsigned int type, const char *name, const char *share)
{
	__u8 val[XPS_COMP_MAX_LEN] = { 0, (__u8)type };	/* be16 */
	struct xps_context_opts opts;
	char label[XPS_LABEL_LEN];
	struct xps_context *ctx;

	svc_ctx_opts(s, &opts, label, sizeof(label), name, share, false);
	ctx = xps_context__create_sub_opts(comp, s->obj, val, &opts);
	if (!ctx)
		return lib_err("service redis-cluster", -errno);
	xps_context__close(ctx);
	return 0;
}

static int cluster_setup(struct svc_setup *s)
{
	const struct cluster_args *a = s->args;
	struct xps_predicate p = { .proto = IPPROTO_TCP };
	char *redis = s->scratch[0], *bus = s->scratch[1], *age = s->scratch[2];
	char sub[XPS_NAME_LEN], tname[XPS_NAME_LEN], label[XPS_LABEL_LEN];
	struct xps_context_opts opts;
	struct xps_context *comp;
	unsigned int t;
	int n = 0;

	if (!a->bus_port && a->common.port + 10000 > 65535) {
		p_err("--port %u: the bus port would be above 65535; give --bus-port",
		      a->common.port);
		return -1;
	}
	if (strlen(s->name) > XPS_NAME_LEN - 6) {
		p_err("--name: at most %d characters", XPS_NAME_LEN - 6);
		return -1;
	}
	snprintf(sub, sizeof(sub), "%.26s-ping", s->name);
	snprintf(redis, sizeof(s->scratch[0]), "127.0.0.1:%u", a->common.port);
	p.lport = a->bus_port ? a->bus_port : a->common.port + 10000;
	snprintf(bus, sizeof(s->scratch[1]), "%u", p.lport);
	snprintf(age, sizeof(s->scratch[2]), "%u", a->max_age);
	s->argv[n++] = s->daemon;
	s->argv[n++] = "--context";
	/* the PING sub-context: the daemon keeps its PONG fresh */
	snprintf(s->scratch[3], sizeof(s->scratch[3]), "%s", sub);
	s->argv[n++] = s->scratch[3];
	s->argv[n++] = "--server";
	s->argv[n++] = redis;
	s->argv[n++] = "--bus-port";
	s->argv[n++] = bus;
	if (a->max_age) {
		s->argv[n++] = "--max-age";
		s->argv[n++] = age;
	}
	s->argv[n++] = "--check";
	s->argv[n] = NULL;
	/* the configuration, checked before anything is created */
	if (supervise_check(s->argv))
		return -1;
	s->argv[--n] = NULL;	/* the same, without --check */

	svc_ctx_opts(s, &opts, label, sizeof(label), s->name, NULL, true);
	comp = xps_context__create_comp_pred(&p, CLUSTER_OFF_TYPE, 2, &opts);
	if (!comp) {
		lib_err("service redis-cluster", -errno);
		return -1;
	}
	if (add_type(s, comp, CLUSTERMSG_TYPE_PING, sub, NULL))
		goto fail;
	/*
	 * Every other message type through the same handler, on the PING
	 * context's maps: it answers none of them, but counts the ones the
	 * node answers on the link (MEET, MFSTART), so that the link keeps
	 * its count (docs/ordering.md); unmatched types would lose it.
	 */
	for (t = CLUSTERMSG_TYPE_PING + 1; t <= 10; t++) {
		snprintf(tname, sizeof(tname), "%.22s-t%u", s->name, t);
		if (add_type(s, comp, t, tname, sub))
			goto fail;
	}
	xps_context__close(comp);
	s->port = p.lport;
	return 0;
fail:
	xps_context__delete(comp);	/* and its sub-contexts */
	return -1;
}

static const struct svc_opt cluster_opts[] = {
	SVC_OPT_PORT(struct cluster_args, "the node's client port (required)"),
	{ .name = "--bus-port", .arg = "M", .type = SVC_OPT_U32, .max = 65535,
	  .off = offsetof(struct cluster_args, bus_port),
	  .help = "its cluster bus port (default: N + 10000)" },
	{ .name = "--max-age", .arg = "MS", .type = SVC_OPT_U32, .max = 3600000,
	  .off = offsetof(struct cluster_args, max_age),
	  .help = "the oldest PONG the kernel sends, in milliseconds (default: half of the node's cluster-node-timeout)" },
	SVC_OPT_NAME(struct cluster_args,
		     "the context's name, at most 26 characters (default: redis-cluster)"),
	{ NULL },
};

/* An unlabelled NAME-ping is the service NAME (its comp context); the
 * other sub-contexts (NAME-tN: other message types) are part of it. */
static bool cluster_list_unlabelled(const struct svc_kind *k,
				    const struct xps_ctx_info *info)
{
	char svc[XPS_NAME_LEN];
	size_t n = strlen(info->name);

	if (n <= 5 || strcmp(info->name + n - 5, "-ping"))
		return true;	/* part of a service listed by its -ping */
	snprintf(svc, sizeof(svc), "%.*s", (int)(n - 5), info->name);
	svc_print(k, NULL, svc, NULL, info->pred.lport, supervise_pid(svc));
	return true;
}

const struct svc_kind svc_redis_cluster = {
	.name = "redis-cluster",
	.summary = "cluster bus PINGs answered with the node's PONG (xps-clusterd)",
	.handler = "redis_cluster",
	.daemon = "xps-clusterd",
	.opts = cluster_opts,
	.args_size = sizeof(struct cluster_args),
	.description =
"Answer the Redis Cluster bus PINGs of the node whose client port is N from\n"
"the kernel, with the node's own PONG (gossip stripped).  A composability\n"
"context NAME on the bus port selects by the message type; PINGs run\n"
"redis_cluster.bpf.o in the sub-context NAME-ping, which answers only one\n"
"whole well-formed PING from a node the server knows.  The daemon\n"
"xps-clusterd refreshes the PONG every 100 ms; the kernel uses it only\n"
"while it is younger than MS, so a stopped or hung node stops being\n"
"answered for.\n",
	.notes =
"The configuration (cluster mode, bus port, a PONG from the bus) is checked\n"
"before anything is created.  Start the service before the bus links form:\n"
"on the stock backend, links accepted earlier stay on the socket path.\n"
"Daemon: xps-clusterd, its pid, log and state in /run/xps/NAME.{pid,log,state};\n"
"PINGs answered: tx of 'xpsctl stats show NAME-ping'.\n",
	.example =
"xpsctl service redis-cluster --port 7001 --max-age 1000\n",
	.setup = cluster_setup,
	.list_unlabelled = cluster_list_unlabelled,
};
