// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xpsctl service: one command per accelerated server.
 *
 *   xpsctl service redis --port N [--name NAME] [--redis HOST:PORT]
 *   xpsctl service memcached --port N [--udp] [--name NAME] [--memcached HOST:PORT]
 *   xpsctl service http --port N [--block METHOD=STATUS]... [--name NAME]
 *   xpsctl service redis-cluster --port N [--bus-port M] [--max-age MS]
 *                                [--name NAME]
 *   xpsctl service stop NAME
 *   xpsctl service list
 *
 * A service is a context plus, where its cache must follow the server, a
 * daemon (pid file and log under /run/xps/).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>
#include <poll.h>
#include <netinet/in.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <bpf/bpf.h>

#include "cmd.h"
#include "out.h"
#include <xps/http_filter.h>
#include <xps/redis_cluster.h>

#define RUN_DIR "/run/xps"

/* Directory of this executable: handler objects and daemons sit beside it
 * in the build tree (.output/) and under PREFIX when installed. */
static const char *self_dir(void)
{
	static char dir[PATH_MAX];
	char *slash;
	ssize_t n;

	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return ".";
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return dir;
}

/*
 * A handler object by name: $XPS_BPF_DIR, the build tree, PREFIX/lib/xps/bpf
 * (lib: the objects are built for this architecture's kernel).
 */
static int find_object(const char *name, char *out, size_t sz)
{
	const char *env = getenv("XPS_BPF_DIR");
	const char *cands[3];
	char b1[PATH_MAX], b2[PATH_MAX];
	int i;

	snprintf(b1, sizeof(b1), "%s/bpf", self_dir());
	snprintf(b2, sizeof(b2), "%s/../lib/xps/bpf", self_dir());
	cands[0] = env;
	cands[1] = b1;
	cands[2] = b2;
	for (i = 0; i < 3; i++) {
		if (!cands[i])
			continue;
		snprintf(out, sz, "%s/%s.bpf.o", cands[i], name);
		if (!access(out, R_OK))
			return 0;
	}
	p_err("cannot find %s.bpf.o (set XPS_BPF_DIR)", name);
	return -1;
}

static int find_daemon(const char *name, char *out, size_t sz)
{
	snprintf(out, sz, "%s/%s", self_dir(), name);
	if (!access(out, X_OK))
		return 0;
	snprintf(out, sz, "%s/../sbin/%s", self_dir(), name);
	if (!access(out, X_OK))
		return 0;
	p_err("cannot find the %s daemon next to xpsctl", name);
	return -1;
}

static void run_path(char *buf, size_t sz, const char *name, const char *ext)
{
	snprintf(buf, sz, RUN_DIR "/%s.%s", name, ext);
}

static pid_t read_pid(const char *name)
{
	char path[PATH_MAX];
	FILE *f;
	long pid = 0;

	run_path(path, sizeof(path), name, "pid");
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	return pid > 0 && !kill(pid, 0) ? (pid_t)pid : 0;
}

/* Start @argv detached, logging to RUN_DIR/NAME.log; returns its pid. */
static pid_t spawn_daemon(const char *name, char *const argv[])
{
	char log[PATH_MAX], pidf[PATH_MAX];
	int fd, st, pfd[2];
	pid_t pid;
	FILE *f;

	if (mkdir(RUN_DIR, 0755) && errno != EEXIST) {
		p_err("cannot create " RUN_DIR ": %s", strerror(errno));
		return -1;
	}
	run_path(log, sizeof(log), name, "log");
	run_path(pidf, sizeof(pidf), name, "pid");
	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (!pid) {
		/* double fork: the daemon is not our child */
		close(pfd[0]);
		if (setsid() < 0 || (pid = fork()) < 0)
			_exit(1);
		if (pid) {
			if (write(pfd[1], &pid, sizeof(pid)) != sizeof(pid))
				_exit(1);
			_exit(0);
		}
		close(pfd[1]);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, STDIN_FILENO);
		/*
		 * Nothing else of the caller's: a daemon that kept its fds
		 * would hold its locks (flock(1)) and keep its pipes from
		 * ever reaching EOF for as long as the service runs.
		 */
		if (close_range(3, ~0u, 0))
			for (fd = 3; fd < sysconf(_SC_OPEN_MAX); fd++)
				close(fd);
		execv(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	if (read(pfd[0], &pid, sizeof(pid)) != sizeof(pid))
		pid = -1;
	close(pfd[0]);
	waitpid(-1, &st, 0);
	if (pid > 0) {
		f = fopen(pidf, "w");
		if (f) {
			fprintf(f, "%d\n", pid);
			fclose(f);
		}
	}
	return pid;
}

struct svc_opts {
	__u32 port;
	bool udp;
	const char *name;
	const char *redis;
	const char *memcached;
	const char *blocks[16];
	int nblocks;
};

static int parse_svc(int argc, char **argv, struct svc_opts *o, bool http)
{
	const char *v;

	memset(o, 0, sizeof(*o));
	while (argc > 0) {
		if (!strcmp(argv[0], "--port") || !strcmp(argv[0], "port")) {
			if (next_arg(&argc, &argv, "--port", &v) ||
			    parse_u32(v, "--port", 65535, &o->port))
				return -1;
		} else if (!strcmp(argv[0], "--name") || !strcmp(argv[0], "name")) {
			if (next_arg(&argc, &argv, "--name", &o->name))
				return -1;
		} else if (!http && !strcmp(argv[0], "--udp")) {
			o->udp = true;
			argc--;
			argv++;
		} else if (!http && !strcmp(argv[0], "--redis")) {
			if (next_arg(&argc, &argv, "--redis", &o->redis))
				return -1;
		} else if (!http && !strcmp(argv[0], "--memcached")) {
			if (next_arg(&argc, &argv, "--memcached", &o->memcached))
				return -1;
		} else if (http && !strcmp(argv[0], "--block")) {
			if (next_arg(&argc, &argv, "--block", &v))
				return -1;
			if (o->nblocks == 16) {
				p_err("--block: at most 16 methods");
				return -1;
			}
			o->blocks[o->nblocks++] = v;
		} else {
			p_err("unknown option '%s'", argv[0]);
			return -1;
		}
	}
	if (!o->port) {
		p_err("--port is required");
		return -1;
	}
	return 0;
}

/*
 * Where the server listening on TCP @port can be reached from here:
 * "127.0.0.1:PORT" when it listens on every address, else the address it
 * is bound to (the first one found in /proc/net/tcp, then tcp6).  -1 when
 * nothing listens on the port.
 */
static int server_addr(__u32 port, char *buf, size_t n)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	char line[512], addr[64], txt[INET6_ADDRSTRLEN];
	unsigned int lport, st, i, w[4];
	FILE *f;

	for (i = 0; i < 2; i++) {
		f = fopen(files[i], "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, " %*u: %63[0-9A-Fa-f]:%x %*s %x", addr,
				   &lport, &st) != 3 ||
			    lport != port || st != 0x0A /* TCP_LISTEN */)
				continue;
			fclose(f);
			if (!i) {
				struct in_addr a;

				sscanf(addr, "%8x", &w[0]);
				a.s_addr = w[0];
				if (!a.s_addr)
					snprintf(buf, n, "127.0.0.1:%u", port);
				else
					snprintf(buf, n, "%s:%u",
						 inet_ntoa(a), port);
				return 0;
			} else {
				struct in6_addr a;

				sscanf(addr, "%8x%8x%8x%8x", &w[0], &w[1],
				       &w[2], &w[3]);
				memcpy(&a, w, sizeof(a));
				if (IN6_IS_ADDR_UNSPECIFIED(&a))
					snprintf(buf, n, "127.0.0.1:%u", port);
				else
					snprintf(buf, n, "[%s]:%u",
						 inet_ntop(AF_INET6, &a, txt,
							   sizeof(txt)), port);
				return 0;
			}
		}
		fclose(f);
	}
	return -1;
}

/*
 * The filler must reach the server where it really listens: find it (or
 * take @given), and connect once, so that a service that could accelerate
 * nothing fails here with the reason instead of quietly passing every
 * request.
 */
static int server_reachable(const char *what, const char *option,
			    const char *given, __u32 port, char *buf, size_t n)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	char host[256], sport[16];
	const char *colon;
	int fd = -1, err, ok = 0;
	struct pollfd pfd;
	socklen_t len;

	if (given) {
		snprintf(buf, n, "%s", given);
	} else if (server_addr(port, buf, n)) {
		p_err("nothing listens on TCP port %u: start %s first, or give %s HOST:PORT",
		      port, what, option);
		return -1;
	}
	colon = strrchr(buf, ':');
	if (!colon || colon == buf) {
		p_err("%s: expected HOST:PORT, got '%s'", option, buf);
		return -1;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - buf), buf);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	snprintf(sport, sizeof(sport), "%s", colon + 1);
	err = getaddrinfo(host, sport, &hints, &res);
	if (err) {
		p_err("%s at %s: %s", what, buf, gai_strerror(err));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && (!connect(fd, res->ai_addr, res->ai_addrlen) ||
			errno == EINPROGRESS)) {
		pfd.fd = fd;
		pfd.events = POLLOUT;
		len = sizeof(err);
		err = ETIMEDOUT;
		if (poll(&pfd, 1, 2000) == 1)
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
		ok = !err;
		errno = err;
	}
	if (!ok)
		p_err("cannot reach %s at %s: %s (is it listening there? %s HOST:PORT says where)",
		      what, buf, strerror(errno), option);
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return ok ? 0 : -1;
}

static struct xps_context *attach_proto(const char *objname, __u8 proto,
					__u32 port, const char *name,
					const char *share)
{
	struct xps_predicate p = { .proto = proto, .lport = port };
	XPS_CTX_OPTS_SHARE(opts, name, share);
	struct xps_context *ctx;
	char obj[PATH_MAX];

	if (find_object(objname, obj, sizeof(obj)))
		return NULL;
	ctx = xps_create_context_pred(obj, &p, &opts);
	if (!ctx)
		lib_err("service", -errno);
	return ctx;
}

/*
 * The service's state as its daemon reports it (RUN_DIR/NAME.state:
 * running, degraded or restarting, and why), "dead" when the daemon is
 * gone, "running" for services without a daemon.
 */
static void service_state(const char *name, const char *kind, pid_t pid,
			  char *buf, size_t n)
{
	char path[PATH_MAX], line[400] = "";
	FILE *f;

	if (!strcmp(kind, "http")) {
		snprintf(buf, n, "running");
		return;
	}
	run_path(path, sizeof(path), name, "state");
	f = fopen(path, "r");
	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
		line[strcspn(line, "\n")] = '\0';
	}
	if (pid <= 0)
		snprintf(buf, n, "dead: the daemon is not running%s%s",
			 line[0] ? "; it last said: " : "", line);
	else
		snprintf(buf, n, "%s", line[0] ? line : "starting");
}

static void print_service(const char *name, const char *kind, __u32 port,
			  pid_t pid)
{
	char log[PATH_MAX], state[512], base[XPS_NAME_LEN];
	size_t len = strlen(name);

	/* memcached's UDP companion shares the TCP context's daemon */
	snprintf(base, sizeof(base), "%s", name);
	if (!strcmp(kind, "memcached-udp") && len > 4)
		base[len - 4] = '\0';
	service_state(base, kind, pid, state, sizeof(state));
	out_begin_object(NULL);
	out_str("name", name);
	out_str("service", kind);
	out_u64("port", port);
	out_str("state", state);
	out_u64("daemon_pid", pid > 0 ? pid : 0);
	if (pid > 0) {
		run_path(log, sizeof(log), name, "log");
		out_str("log", log);
	}
	out_end_object();
}

static int do_redis(int argc, char **argv)
{
	char daemon[PATH_MAX], name[XPS_NAME_LEN], redis[300];
	struct svc_opts o;
	struct xps_context *ctx;
	pid_t pid;

	if (parse_svc(argc, argv, &o, false))
		return 1;
	snprintf(name, sizeof(name), "%s", o.name ? o.name : "redis");
	if (server_reachable("Redis", "--redis", o.redis, o.port, redis,
			     sizeof(redis)))
		return 1;
	if (find_daemon("xps-redisd", daemon, sizeof(daemon)))
		return 1;
	ctx = attach_proto("redis", IPPROTO_TCP, o.port, name, NULL);
	if (!ctx)
		return 1;
	{
		char *const args[] = { daemon, "--context", name, "--redis",
				       redis, NULL };

		pid = spawn_daemon(name, args);
	}
	if (pid <= 0) {
		p_err("cannot start xps-redisd");
		xps_delete_context(ctx);
		return 1;
	}
	xps_context__close(ctx);
	print_service(name, "redis", o.port, pid);
	return 0;
}

/*
 * Run "@argv --check" and turn its complaint (stderr, first line) into
 * ours: bad configuration is reported before anything is created.
 */
static int daemon_check(char *const argv[])
{
	char msg[512] = "";
	int pfd[2], st = 0;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (!pid) {
		close(pfd[0]);
		dup2(pfd[1], STDERR_FILENO);
		dup2(pfd[1], STDOUT_FILENO);
		execv(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	while (got < (ssize_t)sizeof(msg) - 1 &&
	       (n = read(pfd[0], msg + got, sizeof(msg) - 1 - got)) > 0)
		got += n;
	close(pfd[0]);
	msg[got] = '\0';
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		/* the last line says why (earlier ones are log lines) */
		while (got > 0 && msg[got - 1] == '\n')
			msg[--got] = '\0';
		p_err("%s", strrchr(msg, '\n') ? strrchr(msg, '\n') + 1 :
			    msg[0] ? msg : "the node failed the check");
		return -1;
	}
	return 0;
}

/*
 * Redis Cluster bus PINGs answered from the kernel: a comp context on the
 * bus port selects by the message type (offset 12, 2 bytes); type 0 (PING)
 * runs redis_cluster.bpf.o in the sub-context NAME-ping, whose PONG
 * template xps-clusterd keeps fresh (docs/coherence.md).
 */
static int do_redis_cluster(int argc, char **argv)
{
	char daemon[PATH_MAX], obj[PATH_MAX], name[XPS_NAME_LEN];
	char sub[XPS_NAME_LEN], redis[64], bus[16], age[16];
	__u32 port = 0, bus_port = 0, max_age = 0;
	const char *v, *oname = NULL;
	__u8 ping[XPS_COMP_MAX_LEN] = { 0, 0 };	/* CLUSTERMSG_TYPE_PING, be16 */
	struct xps_predicate p = { .proto = IPPROTO_TCP };
	struct xps_context *comp, *ctx;
	char *args[14];
	int n = 0;
	unsigned int t;
	pid_t pid;

	while (argc > 0) {
		if (!strcmp(argv[0], "--port")) {
			if (next_arg(&argc, &argv, "--port", &v) ||
			    parse_u32(v, "--port", 65535, &port))
				return 1;
		} else if (!strcmp(argv[0], "--bus-port")) {
			if (next_arg(&argc, &argv, "--bus-port", &v) ||
			    parse_u32(v, "--bus-port", 65535, &bus_port))
				return 1;
		} else if (!strcmp(argv[0], "--max-age")) {
			if (next_arg(&argc, &argv, "--max-age", &v) ||
			    parse_u32(v, "--max-age", 3600000, &max_age))
				return 1;
		} else if (!strcmp(argv[0], "--name")) {
			if (next_arg(&argc, &argv, "--name", &oname))
				return 1;
		} else {
			p_err("unknown option '%s'", argv[0]);
			return 1;
		}
	}
	if (!port) {
		p_err("--port is required (the node's client port)");
		return 1;
	}
	if (!bus_port && port + 10000 > 65535) {
		p_err("--port %u: the bus port would be above 65535; give --bus-port",
		      port);
		return 1;
	}
	if (oname && strlen(oname) > XPS_NAME_LEN - 6) {
		p_err("--name: at most %d characters", XPS_NAME_LEN - 6);
		return 1;
	}
	snprintf(name, sizeof(name), "%s", oname ? oname : "redis-cluster");
	snprintf(sub, sizeof(sub), "%.26s-ping", name);
	snprintf(redis, sizeof(redis), "127.0.0.1:%u", port);
	snprintf(bus, sizeof(bus), "%u", bus_port ? bus_port : port + 10000);
	snprintf(age, sizeof(age), "%u", max_age);
	if (find_daemon("xps-clusterd", daemon, sizeof(daemon)) ||
	    find_object("redis_cluster", obj, sizeof(obj)))
		return 1;
	args[n++] = daemon;
	args[n++] = "--context";
	args[n++] = sub;
	args[n++] = "--redis";
	args[n++] = redis;
	args[n++] = "--bus-port";
	args[n++] = bus;
	if (max_age) {
		args[n++] = "--max-age";
		args[n++] = age;
	}
	args[n++] = "--check";
	args[n] = NULL;
	if (daemon_check(args))
		return 1;
	args[--n] = NULL;	/* the same, without --check */

	p.lport = bus_port ? bus_port : port + 10000;
	{
		XPS_CTX_OPTS(opts, name);

		comp = xps_create_compcontext_pred(&p, CLUSTER_OFF_TYPE, 2, &opts);
	}
	if (!comp)
		return lib_err("service redis-cluster", -errno);
	{
		XPS_CTX_OPTS(opts, sub);

		ctx = xps_create_subcontext_opts(comp, obj, ping, &opts);
	}
	if (!ctx) {
		lib_err("service redis-cluster", -errno);
		xps_delete_context(comp);
		return 1;
	}
	xps_context__close(ctx);
	/*
	 * Every other message type through the same handler, on the PING
	 * context's maps: it answers none of them, but counts the ones the
	 * node answers on the link (MEET, MFSTART), so that the link keeps
	 * its count (docs/ordering.md); unmatched types would lose it.
	 */
	for (t = CLUSTERMSG_TYPE_PING + 1; t <= 10; t++) {
		__u8 val[XPS_COMP_MAX_LEN] = { 0, (__u8)t };
		char tname[XPS_NAME_LEN];
		XPS_CTX_OPTS_SHARE(opts, tname, sub);

		snprintf(tname, sizeof(tname), "%.22s-t%u", name, t);
		ctx = xps_create_subcontext_opts(comp, obj, val, &opts);
		if (!ctx) {
			lib_err("service redis-cluster", -errno);
			xps_delete_context(comp);
			return 1;
		}
		xps_context__close(ctx);
	}
	pid = spawn_daemon(name, args);
	if (pid <= 0) {
		p_err("cannot start xps-clusterd");
		xps_delete_context(comp);	/* and its sub-context */
		return 1;
	}
	xps_context__close(comp);
	print_service(name, "redis-cluster", p.lport, pid);
	return 0;
}

/*
 * memcached over TCP, and with --udp over UDP too: the UDP context
 * (NAME-udp) shares the TCP one's cache, versions and miss queue, so a
 * write on either invalidates both and one filler serves both.
 */
static int do_memcached(int argc, char **argv)
{
	char daemon[PATH_MAX], name[XPS_NAME_LEN], uname[XPS_NAME_LEN];
	char server[300];
	struct xps_context *ctx, *uctx = NULL;
	struct svc_opts o;
	pid_t pid;

	if (parse_svc(argc, argv, &o, false))
		return 1;
	snprintf(name, sizeof(name), "%s", o.name ? o.name : "memcached");
	snprintf(uname, sizeof(uname), "%.27s-udp", name);
	if (server_reachable("memcached", "--memcached", o.memcached, o.port,
			     server, sizeof(server)))
		return 1;
	if (find_daemon("xps-memcachedd", daemon, sizeof(daemon)))
		return 1;
	ctx = attach_proto("memcached", IPPROTO_TCP, o.port, name, NULL);
	if (!ctx)
		return 1;
	if (o.udp) {
		uctx = attach_proto("memcached", IPPROTO_UDP, o.port, uname, name);
		if (!uctx) {
			xps_delete_context(ctx);
			return 1;
		}
	}
	{
		char *const args[] = { daemon, "--context", name, "--server",
				       server, NULL };

		pid = spawn_daemon(name, args);
	}
	if (pid <= 0) {
		p_err("cannot start xps-memcachedd");
		xps_delete_context(ctx);
		if (uctx)
			xps_delete_context(uctx);
		return 1;
	}
	xps_context__close(ctx);
	out_begin_array(NULL);
	print_service(name, "memcached", o.port, pid);
	if (uctx) {
		xps_context__close(uctx);
		print_service(uname, "memcached-udp", o.port, pid);
	}
	out_end_array();
	return 0;
}

/* "POST=405": the method and the status the handler answers it with. */
static int parse_block(const char *s, char *method, size_t msz, __u32 *status)
{
	const char *eq = strchr(s, '=');
	size_t n = eq ? (size_t)(eq - s) : 0;

	if (!eq || !n || n >= msz || parse_u32(eq + 1, "--block", 999, status) ||
	    (*status != 403 && *status != 404 && *status != 405 &&
	     *status != 429 && *status != 444)) {
		p_err("--block: expected METHOD=STATUS with STATUS 403, 404, 405, 429 or 444 (reset), got '%s'",
		      s);
		return -1;
	}
	memcpy(method, s, n);
	method[n] = '\0';
	return 0;
}

/*
 * The Server header nginx sends on this port (HEAD / over HTTP/1.0), so
 * that the handler's answers carry the same; "nginx" when it cannot tell.
 */
static void learn_server(__u32 port, struct http_state *st)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { 2, 0 };
	char buf[2048], *p, *e;
	ssize_t n, got = 0;
	int fd;

	memcpy(st->server, "nginx", 5);
	st->server_len = 5;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(fd, "HEAD / HTTP/1.0\r\n\r\n", 19) != 19)
		goto out;
	while (got < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	buf[got] = '\0';
	p = strstr(buf, "\r\nServer: ");
	if (!p)
		goto out;
	p += 10;
	e = strstr(p, "\r\n");
	if (e && e > p && e - p <= HTTP_SERVER_MAX) {
		memcpy(st->server, p, e - p);
		st->server_len = e - p;
	}
out:
	close(fd);
}

static int set_http_state(const char *name, __u32 port)
{
	struct http_state st = {};
	struct xps_context *ctx;
	struct timespec tai, utc;
	__u32 zero = 0;
	int fd, err;

	learn_server(port, &st);
	clock_gettime(CLOCK_TAI, &tai);
	clock_gettime(CLOCK_REALTIME, &utc);
	st.tai_minus_utc_ns = (tai.tv_sec - utc.tv_sec) * 1000000000ll +
			      (tai.tv_nsec - utc.tv_nsec);
	/* round to whole seconds: the offset is an integer number of them */
	st.tai_minus_utc_ns = (st.tai_minus_utc_ns + 500000000ll) /
			      1000000000ll * 1000000000ll;
	ctx = xps_context__open(name);
	fd = ctx ? xps_context__map_fd(ctx, XPS_CTX_MAP_STATE) : -errno;
	xps_context__close(ctx);
	if (fd < 0) {
		lib_err("the handler's state", fd);
		return -1;
	}
	err = bpf_map_update_elem(fd, &zero, &st, BPF_ANY);
	close(fd);
	if (err) {
		p_err("cannot set the handler's state: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int do_http(int argc, char **argv)
{
	char name[XPS_NAME_LEN], method[16];
	struct svc_opts o;
	struct xps_context *ctx;
	__u32 ks, vs, status;
	int i;

	if (parse_svc(argc, argv, &o, true))
		return 1;
	if (!o.nblocks)
		o.blocks[o.nblocks++] = "POST=405";
	snprintf(name, sizeof(name), "%s", o.name ? o.name : "http");
	for (i = 0; i < o.nblocks; i++)
		if (parse_block(o.blocks[i], method, sizeof(method), &status))
			return 1;
	ctx = attach_proto("http_filter", IPPROTO_TCP, o.port, name, NULL);
	if (!ctx)
		return 1;
	if (set_http_state(name, o.port)) {
		xps_delete_context(ctx);
		return 1;
	}
	if (xps_data_sizes(ctx, &ks, &vs) || ks != sizeof(struct http_method_key) ||
	    vs != sizeof(struct http_action)) {
		p_err("the http_filter object has an unexpected data map");
		xps_delete_context(ctx);
		return 1;
	}
	for (i = 0; i < o.nblocks; i++) {
		struct http_method_key key = {};
		struct http_action val = {};

		parse_block(o.blocks[i], key.m, sizeof(key.m), &status);
		val.status = status;
		if (xps_set_data(ctx, &key, &val)) {
			lib_err("service http", -errno);
			xps_delete_context(ctx);
			return 1;
		}
	}
	xps_context__close(ctx);
	print_service(name, "http", o.port, 0);
	return 0;
}

/* Stop one service's daemon and remove its context. */
static int stop_one(const char *name)
{
	struct xps_context *ctx;
	char path[PATH_MAX];
	pid_t pid;
	int i;

	pid = read_pid(name);
	if (pid > 0) {
		kill(pid, SIGTERM);
		for (i = 0; i < 50 && !kill(pid, 0); i++)
			usleep(100000);
		if (!kill(pid, 0))
			kill(pid, SIGKILL);
	}
	run_path(path, sizeof(path), name, "pid");
	unlink(path);
	ctx = open_ctx(name);
	if (!ctx)
		return 1;
	if (xps_delete_context(ctx))
		return lib_err("service stop", -errno);
	return 0;
}

static int do_stop(int argc, char **argv)
{
	char uname[XPS_NAME_LEN];
	struct xps_context *u;

	if (argc != 1) {
		p_err("usage: xpsctl service stop NAME");
		return 1;
	}
	if (stop_one(argv[0]))
		return 1;
	/* memcached --udp made a companion context */
	snprintf(uname, sizeof(uname), "%.27s-udp", argv[0]);
	u = xps_context__open(uname);
	if (u) {
		xps_context__close(u);
		if (stop_one(uname))
			return 1;
	}
	out_begin_object(NULL);
	out_str("stopped", argv[0]);
	out_end_object();
	return 0;
}

static int list_one(const struct xps_ctx_info *info, __u32 slot, void *data)
{
	const char *base = strrchr(info->obj_path, '/');
	char kind[XPS_OBJ_PATH_LEN];

	(void)slot;
	(void)data;
	snprintf(kind, sizeof(kind), "%s", base ? base + 1 : info->obj_path);
	if (strchr(kind, '.'))
		*strchr(kind, '.') = '\0';
	if (!strcmp(kind, "redis_cluster")) {
		/* the service is the comp context NAME, this is NAME-ping */
		char svc[XPS_NAME_LEN];
		size_t n = strlen(info->name);

		snprintf(svc, sizeof(svc), "%s", info->name);
		/* NAME-tN: the other message types of the same service */
		if (n <= 5 || strcmp(svc + n - 5, "-ping"))
			return 0;
		svc[n - 5] = '\0';
		print_service(svc, "redis-cluster", info->pred.lport,
			      read_pid(svc));
		return 0;
	}
	if (strcmp(kind, "redis") && strcmp(kind, "http_filter") &&
	    strcmp(kind, "memcached"))
		return 0;
	if (!strcmp(kind, "memcached") && info->pred.proto == IPPROTO_UDP) {
		/* NAME-udp: the companion of NAME, served by its daemon */
		char base[XPS_NAME_LEN];
		size_t n = strlen(info->name);

		snprintf(base, sizeof(base), "%s", info->name);
		if (n > 4 && !strcmp(base + n - 4, "-udp"))
			base[n - 4] = '\0';
		print_service(info->name, "memcached-udp", info->pred.lport,
			      read_pid(base));
		return 0;
	}
	print_service(info->name, !strcmp(kind, "http_filter") ? "http" : kind,
		      info->pred.lport, read_pid(info->name));
	return 0;
}

static int do_list(int argc, char **argv)
{
	int err;

	(void)argv;
	if (argc) {
		p_err("service list takes no arguments");
		return 1;
	}
	out_begin_array(NULL);
	err = xps_for_each_context(list_one, NULL);
	out_end_array();
	return err < 0 ? lib_err("service list", err) : 0;
}

static const char svc_overview[] =
"Usage: xpsctl service KIND --port N [OPTIONS]\n"
"       xpsctl service stop NAME\n"
"       xpsctl service list\n"
"       xpsctl service help [KIND]\n"
"\n"
"Accelerate an unmodified server: a context running KIND's handler on the\n"
"server's port plus, where the handler's cache must follow the server, a\n"
"daemon (its pid, log and state in /run/xps/NAME.{pid,log,state}).\n"
"\n"
"Kinds:\n"
"  redis          GETs of cached strings from the kernel (xps-redisd)\n"
"  memcached      get/gets of cached items, TCP and UDP (xps-memcachedd)\n"
"  http           blocked request methods answered as nginx would\n"
"  redis-cluster  cluster bus PINGs answered with the node's PONG\n"
"                 (xps-clusterd)\n"
"\n"
"Commands:\n"
"  stop NAME      stop the daemon, remove the service's contexts\n"
"  list           the services and their state\n"
"\n"
"'xpsctl service KIND --help' shows KIND's options; see also xpsctl(8).\n";

/*
 * Usage, as complete as xpsctl(8): "xpsctl service help [KIND]" and
 * "xpsctl service KIND --help".  One entry per command of the table below.
 */
static const struct svc_usage {
	const char *cmd;
	const char *text;
} svc_usages[] = {
	{ "redis",
"Usage: xpsctl service redis --port N [--name NAME] [--redis HOST:PORT]\n"
"\n"
"Answer GETs of cached strings for the unmodified redis-server listening on\n"
"TCP port N from the kernel.  The handler answers a segment only when every\n"
"request in it is a GET of a cached string, and invalidates the keys of a\n"
"write before the write reaches Redis; the daemon xps-redisd fetches the\n"
"keys the handler missed and keeps the handler out while a write could\n"
"bypass it (clients older than the service, a unix socket, a replica,\n"
"eviction, a password).\n"
"\n"
"Options:\n"
"  --port N            the server's TCP port (required)\n"
"  --name NAME         the context's name (default: redis)\n"
"  --redis HOST:PORT   where xps-redisd reaches the server (default: the\n"
"                      address port N listens on, from /proc/net/tcp, or\n"
"                      127.0.0.1 when it listens on all of them)\n"
"  -h, --help          this text\n"
"\n"
"Nothing is created when nothing answers there.  Daemon: xps-redisd, its pid,\n"
"log and state in /run/xps/NAME.{pid,log,state}.\n"
"\n"
"Example:\n"
"  redis-server --port 6379 --save \"\" &\n"
"  xpsctl service redis --port 6379\n" },
	{ "redis-cluster",
"Usage: xpsctl service redis-cluster --port N [--bus-port M] [--max-age MS]\n"
"                                    [--name NAME]\n"
"\n"
"Answer the Redis Cluster bus PINGs of the node whose client port is N from\n"
"the kernel, with the node's own PONG (gossip stripped).  A composability\n"
"context NAME on the bus port selects by the message type; PINGs run\n"
"redis_cluster.bpf.o in the sub-context NAME-ping, which answers only one\n"
"whole well-formed PING from a node the server knows.  The daemon\n"
"xps-clusterd refreshes the PONG every 100 ms; the kernel uses it only\n"
"while it is younger than MS, so a stopped or hung node stops being\n"
"answered for.\n"
"\n"
"Options:\n"
"  --port N            the node's client port (required)\n"
"  --bus-port M        its cluster bus port (default: N + 10000)\n"
"  --max-age MS        the oldest PONG the kernel sends, in milliseconds\n"
"                      (default: half of the node's cluster-node-timeout)\n"
"  --name NAME         the context's name, at most 26 characters\n"
"                      (default: redis-cluster)\n"
"  -h, --help          this text\n"
"\n"
"The configuration (cluster mode, bus port, a PONG from the bus) is checked\n"
"before anything is created.  Start the service before the bus links form:\n"
"on the stock backend, links accepted earlier stay on the socket path.\n"
"Daemon: xps-clusterd, its pid, log and state in /run/xps/NAME.{pid,log,state};\n"
"PINGs answered: tx of 'xpsctl stats show NAME-ping'.\n"
"\n"
"Example:\n"
"  xpsctl service redis-cluster --port 7001 --max-age 1000\n" },
	{ "memcached",
"Usage: xpsctl service memcached --port N [--udp] [--name NAME]\n"
"                                [--memcached HOST:PORT]\n"
"\n"
"Answer get and gets of cached items (1 to 8 keys) for the unmodified\n"
"memcached listening on TCP port N from the kernel.  Writes invalidate\n"
"their keys before they reach the server; the daemon xps-memcachedd fetches\n"
"the keys the handler missed (items without an expiry time).\n"
"\n"
"Options:\n"
"  --port N                the server's port (required)\n"
"  --udp                   also on UDP port N, in the context NAME-udp; it\n"
"                          shares NAME's cache, and one daemon serves both\n"
"  --name NAME             the context's name (default: memcached)\n"
"  --memcached HOST:PORT   where xps-memcachedd reaches the server (default:\n"
"                          the address port N listens on, from\n"
"                          /proc/net/tcp, or 127.0.0.1 when it listens on\n"
"                          all of them)\n"
"  -h, --help              this text\n"
"\n"
"Nothing is created when nothing answers there.  Daemon: xps-memcachedd,\n"
"its pid, log and state in /run/xps/NAME.{pid,log,state}.\n"
"\n"
"Example:\n"
"  memcached -p 11211 -U 11211 -u nobody &\n"
"  xpsctl service memcached --port 11211 --udp\n" },
	{ "http",
"Usage: xpsctl service http --port N [--block METHOD=STATUS]... [--name NAME]\n"
"\n"
"Answer requests with a blocked method for the unmodified nginx listening\n"
"on TCP port N from the kernel, with the bytes nginx itself would send\n"
"(its built-in error page, its Server header, learnt by a HEAD / to\n"
"127.0.0.1:N).  Requests whose answer could depend on anything but the\n"
"method, the HTTP version and Connection go to nginx.  No daemon.\n"
"\n"
"Options:\n"
"  --port N               the server's TCP port (required)\n"
"  --block METHOD=STATUS  answer METHOD with STATUS: 403, 404, 405, 429, or\n"
"                         444 to reset the connection (default: POST=405;\n"
"                         up to 16)\n"
"  --name NAME            the context's name (default: http)\n"
"  -h, --help             this text\n"
"\n"
"Example:\n"
"  xpsctl service http --port 80 --block POST=405 --block PUT=444\n" },
	{ "stop",
"Usage: xpsctl service stop NAME\n"
"\n"
"Stop the service's daemon (SIGTERM, SIGKILL after 5 s) and remove its\n"
"contexts: NAME, its sub-contexts and memcached's NAME-udp.\n" },
	{ "help", svc_overview },
	{ "list",
"Usage: xpsctl service list\n"
"\n"
"The services: name, kind, port, daemon pid, log and state:\n"
"  running              the kernel answers\n"
"  degraded: WHY        the daemon keeps the handler out, for instance while\n"
"                       connections older than the service exist\n"
"  restarting: WHY      the daemon lost the server and reconnects, backing\n"
"                       off; everything cached before is invalidated\n"
"  dead                 the daemon is gone and the handler answers nothing:\n"
"                       stop and start the service\n" },
	{ NULL, NULL },
};

/* Print the usage of @cmd, a full name of do_service()'s table. */
static int svc_usage(const char *cmd)
{
	const struct svc_usage *u;

	if (out_format == OUT_JSON) {
		p_err("help is not available in JSON mode");
		return 1;
	}
	for (u = svc_usages; u->cmd; u++)
		if (!strcmp(cmd, u->cmd)) {
			fputs(u->text, stdout);
			return 0;
		}
	p_err("service: no usage for '%s'", cmd);
	return 1;
}

/* "-h" or "--help" anywhere: the usage instead of the command */
static bool wants_help(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

static int do_help(int argc, char **argv);

static const struct cmd svc_cmds[] = {
	{ "redis", do_redis, 0 },
	{ "redis-cluster", do_redis_cluster, 0 },
	{ "memcached", do_memcached, 0 },
	{ "http", do_http, 0 },
	{ "stop", do_stop, 0 },
	{ "list", do_list, 0 },
	{ "help", do_help, 0 },
	{ NULL, NULL, 0 },
};

static int do_help(int argc, char **argv)
{
	const struct cmd *c;

	if (argc > 1) {
		p_err("usage: xpsctl service help [KIND]");
		return 1;
	}
	if (!argc)
		return svc_usage("help");
	c = find_cmd(svc_cmds, argv[0]);
	if (!c) {
		p_err("service help: unknown command '%s' (try 'xpsctl service help')",
		      argv[0]);
		return 1;
	}
	return svc_usage(c->name);
}

int do_service(int argc, char **argv)
{
	const struct cmd *c;

	/* "xpsctl service KIND ... --help": KIND's usage, nothing done */
	if (argc > 1 && wants_help(argc - 1, argv + 1)) {
		c = find_cmd(svc_cmds, argv[0]);
		if (c)
			return svc_usage(c->name);
	}
	return dispatch(svc_cmds, argc, argv, "service");
}
