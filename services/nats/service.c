// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xpsctl service nats: Raft heartbeats of NATS JetStream answered on the
 * follower's routes (docs/nats.md).  Two contexts run the handler: one on
 * the routes peers dialed to the route port, one on the routes this
 * server dialed to its peers' route port (a predicate on the remote
 * port).  No daemon: the handler learns from the server's own answers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <xps/nats.h>

#include "cmd.h"
#include "out.h"
#include "service.h"

struct nats_args {
	struct svc_args common;
	const char *addr;
};

static int nats_setup(struct svc_setup *s)
{
	const struct nats_args *a = s->args;
	struct xps_predicate in = { .proto = IPPROTO_TCP,
				    .lport = a->common.port };
	struct xps_predicate out = { .proto = IPPROTO_TCP,
				     .rport = a->common.port };
	struct xps_context_opts opts;
	struct xps_context *main_ctx, *dialed;
	char label[XPS_LABEL_LEN], name[XPS_NAME_LEN];
	struct in_addr ia;

	if (a->addr) {
		if (inet_pton(AF_INET, a->addr, &ia) != 1) {
			p_err("--addr: expected the server's IPv4 route address, got '%s'",
			      a->addr);
			return -1;
		}
		/* v4-mapped, as libxps keeps addresses */
		in.family = out.family = AF_INET;
		in.has_laddr = out.has_laddr = true;
		in.laddr[10] = in.laddr[11] = 0xff;
		memcpy(in.laddr + 12, &ia, 4);
		memcpy(out.laddr, in.laddr, 16);
	}
	svc_ctx_opts(s, &opts, label, sizeof(label), s->name, NULL, true);
	main_ctx = xps_context__create_pred(s->obj, &in, &opts);
	if (!main_ctx) {
		lib_err("service nats", -errno);
		return -1;
	}
	if (snprintf(name, sizeof(name), "%s-dialed", s->name) >=
	    (int)sizeof(name)) {
		p_err("--name: '%s' is too long", s->name);
		goto fail;
	}
	svc_ctx_opts(s, &opts, label, sizeof(label), name, s->name, false);
	dialed = xps_context__create_pred(s->obj, &out, &opts);
	if (!dialed) {
		lib_err("service nats", -errno);
		goto fail;
	}
	xps_context__close(dialed);
	xps_context__close(main_ctx);
	s->port = a->common.port;
	return 0;
fail:
	xps_context__delete(main_ctx);
	return -1;
}

/*
 * "service list"'s state: the counters of include/xps/nats.h, summed over
 * CPUs (one map for every NATS service of the host).
 */
static void nats_health(const char *name, pid_t pid, char *buf, size_t n)
{
	__u64 v[XPS_NATS_ST_MAX];
	int err;

	(void)name;
	(void)pid;
	err = percpu_sums(XPS_PIN_ROOT "/xps_nats_stats", v, XPS_NATS_ST_MAX);
	if (err) {
		snprintf(buf, n, "running (counters unreadable: %s)",
			 strerror(-err));
		return;
	}
	snprintf(buf, n,
		 "running: %llu heartbeats answered (%llu segments of several), %llu passed, %llu answers learned, %llu duplicate answers dropped, %llu group resets, %llu full resets, %llu routes cut",
		 (unsigned long long)v[XPS_NATS_ST_ANSWERED],
		 (unsigned long long)v[XPS_NATS_ST_BATCHES],
		 (unsigned long long)v[XPS_NATS_ST_PASSED],
		 (unsigned long long)v[XPS_NATS_ST_LEARNED],
		 (unsigned long long)v[XPS_NATS_ST_DROPPED],
		 (unsigned long long)v[XPS_NATS_ST_BUMPS],
		 (unsigned long long)v[XPS_NATS_ST_EPOCHS],
		 (unsigned long long)v[XPS_NATS_ST_CUT]);
}

static const struct svc_opt nats_opts[] = {
	SVC_OPT_PORT(struct nats_args, "the servers' route port, the cluster's listen port (required)"),
	{ .name = "--addr", .arg = "IPV4", .type = SVC_OPT_STR,
	  .off = offsetof(struct nats_args, addr),
	  .help = "this server's route address: only its routes are served, where several servers share a host (default: any)" },
	SVC_OPT_NAME(struct nats_args, "the context's name (default: nats)"),
	{ NULL },
};

const struct svc_kind svc_nats = {
	.name = "nats",
	.summary = "JetStream Raft heartbeats answered on a follower's routes",
	.handler = "nats",
	.opts = nats_opts,
	.args_size = sizeof(struct nats_args),
	.description =
"Answer, on the routes of the unmodified nats-server whose cluster listens\n"
"on port N, every other plain Raft heartbeat of a JetStream group from the\n"
"kernel, with the server's own answer to the identical heartbeat before it\n"
"(docs/nats.md).  Votes, entries, catch-up, the meta group and anything\n"
"the server has not answered just before go to the server.  On the groups\n"
"the server leads, every other byte-identical answer of a follower is\n"
"dropped.  Both the routes peers dialed (local port N) and those the\n"
"server dialed (remote port N) are served.  'xpsctl service list' shows\n"
"the counters.  No daemon.\n",
	.example =
"xpsctl service nats --port 6222\n",
	.setup = nats_setup,
	.health = nats_health,
};
