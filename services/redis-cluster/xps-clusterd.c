// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xps-clusterd: keeps the Redis Cluster PING handler's PONG template fresh,
 * for an unmodified redis-server 7.0.
 *
 *   xps-clusterd --context NAME --server HOST:PORT [--bus-port M]
 *                [--max-age MS] [--interval MS] [--check] [-v]
 *
 * Every interval (100 ms) it proves the node alive and responsive: it sends
 * the node's cluster bus a PING as a node nobody knows (a random name; Redis
 * answers any PING with a PONG and learns nothing from an unknown sender),
 * takes the PONG, strips its gossip section (count 0, totlen adjusted,
 * extensions kept verbatim) and writes it, stamped with CLOCK_MONOTONIC
 * from before the PING was sent, into the handler's data map.  The handler
 * answers with it only while it is younger than max_age (default half the
 * node's cluster-node-timeout), so a stopped or hung server stops being
 * answered for (docs/coherence.md).  It also copies CLUSTER NODES into the
 * map: the senders (and gossip subjects) the handler may answer for.
 *
 * --check: validate the configuration and probe once, then exit (0 or 1
 * with the reason on stderr); xpsctl runs it before creating anything.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "libxps.h"
#include "daemon.h"
#include "resp.h"
#include "redis_cluster.h"

#define logmsg(...) daemon_log("xps-clusterd: " __VA_ARGS__)
#define PONG_BUF_MAX	65536	/* largest PONG read from the bus */
#define NODES_BUF_MAX	(1 << 20)

struct clusterd {
	struct daemon d;	/* d.host, d.port: the node's client port */
	struct xps_context *xc;	/* its data map holds the PONG template */
	struct conn redis;
	int bus_fd;
	unsigned int want_bus;	/* --bus-port, 0: none */
	bool check;		/* --check */
	unsigned int bus_port;
	unsigned int interval_ms;
	__u64 max_age_ns;
	char probe_name[CLUSTER_NAMELEN];
	__u8 self[CLUSTER_NAMELEN];	/* the node's name, from CLUSTER NODES */
	__u8 ping[CLUSTER_HDR_LEN];
	__u8 pong[PONG_BUF_MAX];
	char nodes[NODES_BUF_MAX + 1];
	struct cluster_value tmpl;
	struct cluster_value peer;
	struct cluster_key seen[CLUSTER_NODES_MAX];
	int nseen;
	__u64 probes, failures;
};

static __u16 be16(const __u8 *p)
{
	return (__u16)p[0] << 8 | p[1];
}

static __u32 be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static void put_be16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put_be32(__u8 *p, __u32 v)
{
	put_be16(p, v >> 16);
	put_be16(p + 2, v);
}

/* ---- configuration ---------------------------------------------------- */

/*
 * The node must run in cluster mode; its bus port is cluster-port, or the
 * client port + 10000 when that is 0.  Fills x->bus_port (checking a given
 * one) and the default max age.
 */
static int check_config(struct clusterd *x, unsigned int want_bus)
{
	char v[64];
	long timeout_ms, cport;

	if (config_get(&x->redis, "cluster-enabled", v, sizeof(v))) {
		fprintf(stderr, "no answer from Redis at %s:%s\n", x->d.host, x->d.port);
		return -1;
	}
	if (strcmp(v, "yes")) {
		fprintf(stderr,
			"Redis at %s:%s is not in cluster mode (cluster-enabled is '%s')\n",
			x->d.host, x->d.port, v);
		return -1;
	}
	if (config_get(&x->redis, "cluster-node-timeout", v, sizeof(v)))
		return -1;
	timeout_ms = strtol(v, NULL, 10);
	if (config_get(&x->redis, "cluster-port", v, sizeof(v)))
		return -1;
	cport = strtol(v, NULL, 10);
	if (cport <= 0)
		cport = strtol(x->d.port, NULL, 10) + 10000;
	if (want_bus && want_bus != cport) {
		fprintf(stderr,
			"--bus-port %u: Redis at %s:%s has its cluster bus on port %ld\n",
			want_bus, x->d.host, x->d.port, cport);
		return -1;
	}
	x->bus_port = cport;
	if (!x->max_age_ns) {
		if (timeout_ms < 2) {
			fprintf(stderr, "cluster-node-timeout %ld ms is too small\n",
				timeout_ms);
			return -1;
		}
		x->max_age_ns = (__u64)timeout_ms / 2 * 1000000ull;
	}
	return 0;
}

/* ---- the bus probe ---------------------------------------------------- */

static int bus_connect(struct clusterd *x)
{
	unsigned int ms = x->interval_ms < 200 ? 200 : x->interval_ms;
	char port[16];
	int gai_err;

	snprintf(port, sizeof(port), "%u", x->bus_port);
	x->bus_fd = daemon_tcp_connect(x->d.host, port, ms, &gai_err);
	return x->bus_fd < 0 ? -1 : 0;
}

static void bus_close(struct clusterd *x)
{
	if (x->bus_fd >= 0)
		close(x->bus_fd);
	x->bus_fd = -1;
}

static int read_full(int fd, __u8 *buf, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		r = read(fd, buf + got, n - got);
		if (r <= 0)
			return -1;
		got += r;
	}
	return 0;
}

/*
 * A PING from the probe's unknown name, then the PONG it gets.  Returns the
 * PONG's length, 0 when something other than a PONG came back, -1 when the
 * node did not answer (the connection is then closed: a late answer must
 * never be taken for the next probe's).
 */
static int probe(struct clusterd *x)
{
	__u32 len;

	memset(x->ping, 0, sizeof(x->ping));
	memcpy(x->ping, "RCmb", 4);
	put_be32(x->ping + CLUSTER_OFF_TOTLEN, CLUSTER_HDR_LEN);
	put_be16(x->ping + CLUSTER_OFF_VER, 1);
	put_be16(x->ping + CLUSTER_OFF_TYPE, CLUSTERMSG_TYPE_PING);
	memcpy(x->ping + CLUSTER_OFF_SENDER, x->probe_name, CLUSTER_NAMELEN);
	if (x->bus_fd < 0 && bus_connect(x))
		return -1;
	if (write(x->bus_fd, x->ping, sizeof(x->ping)) != sizeof(x->ping) ||
	    read_full(x->bus_fd, x->pong, 8))
		goto fail;
	len = be32(x->pong + CLUSTER_OFF_TOTLEN);
	if (memcmp(x->pong, "RCmb", 4) || len < CLUSTER_HDR_LEN ||
	    len > sizeof(x->pong)) {
		bus_close(x);
		return 0;
	}
	if (read_full(x->bus_fd, x->pong + 8, len - 8))
		goto fail;
	if (be16(x->pong + CLUSTER_OFF_TYPE) != CLUSTERMSG_TYPE_PONG)
		return 0;
	return len;
fail:
	bus_close(x);
	return -1;
}

/*
 * The PONG without its gossip: count 0, totlen adjusted, extensions kept.
 * 0 when @len bytes of x->pong make a template, else why not.
 */
static const char *make_template(struct clusterd *x, __u32 len, __u64 stamp)
{
	struct cluster_pong *t = &x->tmpl.pong;
	__u32 gossip_end, ext;

	gossip_end = CLUSTER_HDR_LEN +
		     be16(x->pong + CLUSTER_OFF_COUNT) * CLUSTER_GOSSIP_LEN;
	if (gossip_end > len)
		return "a PONG shorter than its gossip section";
	ext = len - gossip_end;
	if (CLUSTER_HDR_LEN + ext > CLUSTER_PONG_MAX)
		return "PONG extensions too long for the handler";
	if (memcmp(x->pong + CLUSTER_OFF_SENDER, x->self, CLUSTER_NAMELEN))
		return "the PONG's sender is not the node CLUSTER NODES calls myself";
	/* a master in a manual failover says PAUSED: let Redis answer */
	if (x->pong[CLUSTER_OFF_MFLAGS] & CLUSTERMSG_FLAG0_PAUSED)
		return "manual failover in progress";
	memset(&x->tmpl, 0, sizeof(x->tmpl));
	memcpy(t->msg, x->pong, CLUSTER_HDR_LEN);
	memcpy(t->msg + CLUSTER_HDR_LEN, x->pong + gossip_end, ext);
	put_be16(t->msg + CLUSTER_OFF_COUNT, 0);
	put_be32(t->msg + CLUSTER_OFF_TOTLEN, CLUSTER_HDR_LEN + ext);
	t->len = CLUSTER_HDR_LEN + ext;
	t->stamp_ns = stamp;
	t->max_age_ns = x->max_age_ns;
	return NULL;
}

static void template_key(struct cluster_key *k)
{
	memset(k, 0, sizeof(*k));
	k->kind = CLUSTER_KEY_PONG;
}

static void withdraw(struct clusterd *x)
{
	struct cluster_key k;
	int err;

	template_key(&k);
	err = xps_context__data_delete(x->xc, &k);
	if (err && err != -ENOENT)
		logmsg("cannot remove the PONG template: %s", strerror(-err));
}

/* ---- known nodes ------------------------------------------------------ */

static int hex_name(const char *s, size_t n, __u8 *out)
{
	size_t i;

	if (n != CLUSTER_NAMELEN)
		return -1;
	for (i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]) || !s[i])
			return -1;
	memcpy(out, s, n);
	return 0;
}

static int has_flag(const char *flags, const char *f)
{
	size_t n = strlen(f);
	const char *p = flags;

	while ((p = strstr(p, f))) {
		if ((p == flags || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return 1;
		p += n;
	}
	return 0;
}

static void set_slots(__u8 *bm, const char *tok)
{
	long a, b, s;
	char *end;

	if (tok[0] == '[')	/* importing/migrating marks: not ownership */
		return;
	a = strtol(tok, &end, 10);
	b = *end == '-' ? strtol(end + 1, NULL, 10) : a;
	for (s = a; s <= b && s >= 0 && s < CLUSTER_SLOTS_BYTES * 8; s++)
		bm[s / 8] |= 1 << (s & 7);
}

/*
 * One CLUSTER NODES line: "<id> <addr> <flags> <master> <ping-sent>
 * <pong-recv> <config-epoch> <link-state> <slot>...".  Writes the node's
 * entry (or none for a node Redis suspects) and remembers its key.
 */
static int node_line(struct clusterd *x, char *line)
{
	char *tok[8], *save = NULL, *t;
	struct cluster_key k = {};
	struct cluster_peer *p = &x->peer.peer;
	int i;

	for (i = 0; i < 8; i++) {
		tok[i] = strtok_r(i ? NULL : line, " ", &save);
		if (!tok[i])
			return i ? -1 : 0;
	}
	if (hex_name(tok[0], strlen(tok[0]), k.name))
		return -1;
	memset(&x->peer, 0, sizeof(x->peer));
	if (has_flag(tok[2], "myself")) {
		memcpy(x->self, k.name, CLUSTER_NAMELEN);
		k.kind = CLUSTER_KEY_SELF;
	} else {
		if (has_flag(tok[2], "fail?") || has_flag(tok[2], "fail") ||
		    has_flag(tok[2], "handshake") || has_flag(tok[2], "noaddr"))
			return 0;
		k.kind = CLUSTER_KEY_PEER;
		p->role = has_flag(tok[2], "master") ? CLUSTER_NODE_MASTER :
			  has_flag(tok[2], "slave") ? CLUSTER_NODE_SLAVE : 0;
		if (strcmp(tok[3], "-") &&
		    hex_name(tok[3], strlen(tok[3]), p->slaveof))
			return -1;
		p->config_epoch = strtoull(tok[6], NULL, 10);
		while ((t = strtok_r(NULL, " ", &save)))
			set_slots(p->slots, t);
	}
	if (x->nseen == CLUSTER_NODES_MAX)
		return -1;
	x->seen[x->nseen++] = k;
	if (xps_context__data_set(x->xc, &k, &x->peer)) {
		logmsg("cannot write node %.40s: %s", tok[0], strerror(errno));
		return -1;
	}
	return 0;
}

/* Entries of nodes that left CLUSTER NODES or are now suspected go. */
static void forget_unseen(struct clusterd *x)
{
	static struct cluster_key gone[CLUSTER_NODES_MAX];
	struct cluster_key k, next;
	int fd = xps_context__data_fd(x->xc), i, n = 0;
	void *prev = NULL;

	while (fd >= 0 && !bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (k.kind == CLUSTER_KEY_PONG)
			continue;
		for (i = 0; i < x->nseen; i++)
			if (!memcmp(&x->seen[i], &k, sizeof(k)))
				break;
		if (i == x->nseen && n < CLUSTER_NODES_MAX)
			gone[n++] = k;
	}
	for (i = 0; i < n; i++)
		xps_context__data_delete(x->xc, &gone[i]);
}

static int refresh_nodes(struct clusterd *x)
{
	const char *argv[] = { "CLUSTER", "NODES" };
	char line[256], t, *l, *save = NULL;
	long long n;

	if (send_cmd(&x->redis, 2, argv, NULL) ||
	    read_reply(&x->redis, &t, &n, x->nodes, NODES_BUF_MAX, line,
		       sizeof(line)))
		return -1;
	if (t != '$' || n < 0) {
		logmsg("CLUSTER NODES failed: %s", t == '-' ? line : "no bulk reply");
		return -1;
	}
	x->nodes[n] = '\0';
	x->nseen = 0;
	for (l = strtok_r(x->nodes, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		/* node_line() cuts @l into tokens */
		if (node_line(x, l)) {
			logmsg("cannot read the CLUSTER NODES line '%.80s...'", l);
			return -1;
		}
	}
	forget_unseen(x);
	return 0;
}

/* ---- main loop -------------------------------------------------------- */

/* One round: probe, then nodes.  Returns why the template was withdrawn. */
static const char *round_once(struct clusterd *x)
{
	struct cluster_key k;
	const char *why;
	__u64 stamp = daemon_mono_ns();
	int len;

	len = probe(x);
	x->probes++;
	if (len <= 0) {
		x->failures++;
		withdraw(x);
		return len < 0 ? "no PONG from the cluster bus" :
				 "the cluster bus answered something other than a PONG";
	}
	/* the sender check needs the node's own name first */
	if (refresh_nodes(x)) {
		conn_close(&x->redis);
		withdraw(x);
		return "CLUSTER NODES failed";
	}
	why = make_template(x, len, stamp);
	if (why) {
		withdraw(x);
		return why;
	}
	template_key(&k);
	if (xps_context__data_set(x->xc, &k, &x->tmpl)) {
		logmsg("cannot write the PONG template: %s", strerror(errno));
		return "map update failed";
	}
	if (x->d.verbose > 1)
		logmsg("template of %u bytes, %d nodes known", x->tmpl.pong.len,
		       x->nseen);
	return NULL;
}

/* ---- the daemon ------------------------------------------------------- */

static int clusterd_opt(struct daemon *d, int opt, const char *arg)
{
	struct clusterd *x = daemon_of(d, struct clusterd, d);

	switch (opt) {
	case 'b':
		x->want_bus = strtoul(arg, NULL, 10);
		if (!x->want_bus || x->want_bus > 65535) {
			fprintf(stderr, "--bus-port: 1 to 65535\n");
			return 2;
		}
		return 0;
	case 'm':
		x->max_age_ns = strtoull(arg, NULL, 10) * 1000000ull;
		if (!x->max_age_ns) {
			fprintf(stderr, "--max-age: milliseconds, at least 1\n");
			return 2;
		}
		return 0;
	case 'i':
		x->interval_ms = strtoul(arg, NULL, 10);
		if (x->interval_ms < 10 || x->interval_ms > 10000) {
			fprintf(stderr, "--interval: 10 to 10000 ms\n");
			return 2;
		}
		return 0;
	case 'C':
		x->check = true;
		return 0;
	}
	daemon_usage(d, stderr);
	return 2;
}

static void clusterd_finish(struct daemon *d, int status)
{
	struct clusterd *x = daemon_of(d, struct clusterd, d);

	if (!status)
		logmsg("exiting after %llu probes (%llu unanswered)",
		       (unsigned long long)x->probes,
		       (unsigned long long)x->failures);
	if (x->xc && xps_context__data_fd(x->xc) >= 0)
		withdraw(x);	/* nobody vouches for the node any more */
	xps_context__close(x->xc);
	x->xc = NULL;
	bus_close(x);
	conn_close(&x->redis);
}

/*
 * The node is checked (cluster mode, bus port, a PONG) before anything
 * else; --check stops there.
 */
static int clusterd_start(struct daemon *d)
{
	struct clusterd *x = daemon_of(d, struct clusterd, d);
	__u8 rnd[CLUSTER_NAMELEN / 2];
	int i, ret = 1;

	if (!d->context && !x->check) {
		daemon_usage(d, stderr);
		return 2;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return 1;
	for (i = 0; i < (int)sizeof(rnd); i++)
		snprintf(x->probe_name + 2 * i, 3, "%02x", rnd[i]);

	if (conn_connect(&x->redis, d->host, d->port, "Redis") ||
	    conn_set_timeout(&x->redis, 1000)) {
		fprintf(stderr, "cannot talk to Redis at %s:%s\n", d->host,
			d->port);
		goto fail;
	}
	if (check_config(x, x->want_bus))
		goto fail;
	if (probe(x) <= 0) {
		fprintf(stderr, "no PONG from the cluster bus at %s:%u\n",
			d->host, x->bus_port);
		goto fail;
	}
	if (x->check) {
		ret = 0;
		goto fail;
	}
	x->xc = xps_context__open(d->context);
	if (!x->xc || xps_context__data_fd(x->xc) < 0) {
		logmsg("no context '%s' with a data map", d->context);
		goto fail;
	}
	d->data_id = daemon_data_map_id(x->xc);
	logmsg("context '%s': node %s:%s, bus port %u, max age %llu ms, probe every %u ms as %.40s",
	       d->context, d->host, d->port, x->bus_port,
	       (unsigned long long)(x->max_age_ns / 1000000), x->interval_ms,
	       x->probe_name);
	return 0;
fail:
	clusterd_finish(d, -1);
	return ret;
}

/* One round every interval: the template, or why there is none. */
static int clusterd_work(struct daemon *d)
{
	struct clusterd *x = daemon_of(d, struct clusterd, d);
	__u64 t0 = d->now_ns, left;
	const char *why;

	if (x->redis.fd < 0 &&
	    conn_connect(&x->redis, d->host, d->port, "Redis") == 0)
		conn_set_timeout(&x->redis, 1000);
	why = x->redis.fd < 0 ? "no connection to Redis" : round_once(x);
	daemon_report(d, why ? why : "");
	left = t0 + x->interval_ms * 1000000ull - daemon_mono_ns();
	if (left < x->interval_ms * 1000000ull) {
		struct timespec ts = { left / 1000000000ull,
				       left % 1000000000ull };

		nanosleep(&ts, NULL);
	}
	return DAEMON_OK;
}

static const struct option clusterd_opts[] = {
	{ "bus-port", required_argument, NULL, 'b' },
	{ "max-age", required_argument, NULL, 'm' },
	{ "interval", required_argument, NULL, 'i' },
	{ "check", no_argument, NULL, 'C' },
	{ NULL, 0, NULL, 0 },
};

static const struct daemon_ops clusterd_ops = {
	.prog = "xps-clusterd",
	.synopsis = "--context NAME --server HOST:PORT [--bus-port M]\n"
"                    [--max-age MS] [--interval MS] [--check] [-v]",
	.about =
"Keeps the PONG template of the XPS Redis Cluster PING context NAME fresh\n"
"for the node at HOST:PORT: the kernel answers the cluster bus's PINGs\n"
"only while the template is younger than the maximum age.\n",
	.own_help =
"  -b, --bus-port M        the node's cluster bus port (default: its\n"
"                          cluster-port, or PORT + 10000); checked\n"
"  -m, --max-age MS        the template's maximum age (default: half the\n"
"                          node's cluster-node-timeout)\n"
"  -i, --interval MS       how often the node is probed, 10 to 10000\n"
"                          (default 100)\n"
"  -C, --check             check the node and probe it once, then exit\n"
"                          (0, or 1 with the reason); needs no context\n",
	.server = "the Redis Cluster node",
	.opts = clusterd_opts,
	.shortopts = "b:m:i:C",
	.opt = clusterd_opt,
	.server_required = true,
	.context_optional = true,
	.redis_alias = true,
	.serving = "answering PINGs with the node's PONG",
	.not_serving = "not answering",
	.check_ms = 1000,
	.start = clusterd_start,
	.work = clusterd_work,
	.finish = clusterd_finish,
};

int main(int argc, char **argv)
{
	static struct clusterd x;	/* in .bss: over a MiB of buffers */

	x.d.ops = &clusterd_ops;
	x.bus_fd = -1;
	x.redis.fd = -1;
	x.interval_ms = 100;
	return daemon_main(&x.d, argc, argv);
}
