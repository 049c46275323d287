// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel-level tests of the XPS hooks, run as root on a kernel with
 * CONFIG_BPF_XPS (in the XPS repository: inside the VM, by tests/vm/run.sh).
 * Each test runs in a child process in a network namespace of its own and
 * prints PASS/FAIL; the exit status is 1 if any test failed.
 *
 *   xps_vmtest [-v] [-o OBJ] [TEST...]     (default: all tests)
 *
 * Built against the system libbpf 1.1, which does not know the XPS attach
 * types: their values come from the running kernel's BTF.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "xps_test.h"

static const char *obj_path = "xps_test.bpf.o";
static int verbose;
static char fail_msg[512];

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Record why a test failed; returns -1 for `return fail(...)`. */
static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fail_msg, sizeof(fail_msg), fmt, ap);
	va_end(ap);
	return -1;
}

static void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* ---- BPF setup ---------------------------------------------------------- */

struct xps {
	struct bpf_object *obj;
	int tcp, udp, tail, not_xps;		/* program fds */
	int seen, stats, owner, jmp;		/* map fds */
	int netns;				/* our netns */
};

static int attach_tcp = -1, attach_udp = -1;

static int find_attach_types(void)
{
	const struct btf_type *t;
	const struct btf_enum *e;
	struct btf *btf;
	int id, i;

	btf = btf__load_vmlinux_btf();
	if (!btf)
		return fail("no vmlinux BTF: %s", strerror(errno));
	id = btf__find_by_name_kind(btf, "bpf_attach_type", BTF_KIND_ENUM);
	if (id < 0) {
		btf__free(btf);
		return fail("enum bpf_attach_type not in BTF");
	}
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (i = 0; i < btf_vlen(t); i++, e++) {
		const char *n = btf__name_by_offset(btf, e->name_off);

		if (!strcmp(n, "BPF_XPS_TCP"))
			attach_tcp = e->val;
		else if (!strcmp(n, "BPF_XPS_UDP"))
			attach_udp = e->val;
	}
	btf__free(btf);
	if (attach_tcp < 0 || attach_udp < 0)
		return fail("kernel has no BPF_XPS_TCP/BPF_XPS_UDP (not an XPS kernel)");
	return 0;
}

static int prog_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_program *p = bpf_object__find_program_by_name(obj, name);

	return p ? bpf_program__fd(p) : -1;
}

static int map_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	return m ? bpf_map__fd(m) : -1;
}

static int xps_load(struct xps *x)
{
	struct bpf_program *p;
	__u32 zero = 0;
	int err;

	memset(x, 0, sizeof(*x));
	x->obj = bpf_object__open_file(obj_path, NULL);
	if (!x->obj)
		return fail("open %s: %s", obj_path, strerror(errno));
	bpf_object__for_each_program(p, x->obj) {
		const char *n = bpf_program__name(p);
		int at = !strcmp(n, "xps_udp") ? attach_udp :
			 !strcmp(n, "not_xps") ? BPF_SK_SKB_STREAM_VERDICT :
			 attach_tcp;

		bpf_program__set_type(p, BPF_PROG_TYPE_SK_SKB);
		bpf_program__set_expected_attach_type(p, at);
	}
	err = bpf_object__load(x->obj);
	if (err)
		return fail("load %s: %s", obj_path, strerror(-err));
	x->tcp = prog_fd(x->obj, "xps_tcp");
	x->udp = prog_fd(x->obj, "xps_udp");
	x->tail = prog_fd(x->obj, "tail_handler");
	x->not_xps = prog_fd(x->obj, "not_xps");
	x->seen = map_fd(x->obj, "seen");
	x->stats = map_fd(x->obj, "stats");
	x->owner = map_fd(x->obj, "owner_tgid");
	x->jmp = map_fd(x->obj, "jmp");
	if (bpf_map_update_elem(x->jmp, &zero, &x->tail, BPF_ANY))
		return fail("tail handler into PROG_ARRAY: %s", strerror(errno));
	x->netns = open("/proc/self/ns/net", O_RDONLY);
	if (x->netns < 0)
		return fail("open netns: %s", strerror(errno));
	return 0;
}

static int xps_link(struct xps *x, int prog, int type)
{
	int fd = bpf_link_create(prog, x->netns, type, NULL);

	if (fd < 0)
		return fail("bpf_link_create(type %d): %s", type, strerror(errno));
	return fd;
}

static __u64 stat_get(struct xps *x, __u32 slot)
{
	__u64 v = 0;

	bpf_map_lookup_elem(x->stats, &slot, &v);
	return v;
}

static void seen_get(struct xps *x, struct xps_test_seen *s)
{
	__u32 zero = 0;

	memset(s, 0, sizeof(*s));
	bpf_map_lookup_elem(x->seen, &zero, s);
}

/* ---- sockets ------------------------------------------------------------ */

/* A flag shared with forked helpers. */
static int *mmap_shared(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static int set_lo(int up, int mtu)
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (mtu) {
		ifr.ifr_mtu = mtu;
		if (ioctl(fd, SIOCSIFMTU, &ifr))
			goto err;
	}
	if (up) {
		if (ioctl(fd, SIOCGIFFLAGS, &ifr))
			goto err;
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr))
			goto err;
	}
	close(fd);
	return 0;
err:
	close(fd);
	return -1;
}

static int new_netns(void)
{
	if (unshare(CLONE_NEWNET))
		return fail("unshare(CLONE_NEWNET): %s", strerror(errno));
	if (set_lo(1, 0))
		return fail("lo up: %s", strerror(errno));
	return 0;
}

static socklen_t mkaddr(int family, const char *ip, int port,
			struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (void *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		inet_pton(AF_INET6, ip, &a->sin6_addr);
		return sizeof(*a);
	}
	{
		struct sockaddr_in *a = (void *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		inet_pton(AF_INET, ip, &a->sin_addr);
		return sizeof(*a);
	}
}

static void timeouts(int fd, int sec)
{
	struct timeval tv = { .tv_sec = sec };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A connected, accepted TCP pair on loopback. */
static int tcp_pair(int family, int port, int *cli, int *srv)
{
	const char *ip = family == AF_INET6 ? "::1" : "127.0.0.1";
	struct sockaddr_storage ss;
	socklen_t len = mkaddr(family, ip, port, &ss);
	int one = 1, l;

	l = socket(family, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (void *)&ss, len) || listen(l, 8))
		return fail("listen on port %d: %s", port, strerror(errno));
	*cli = socket(family, SOCK_STREAM, 0);
	if (connect(*cli, (void *)&ss, len))
		return fail("connect: %s", strerror(errno));
	*srv = accept(l, NULL, NULL);
	close(l);
	if (*srv < 0)
		return fail("accept: %s", strerror(errno));
	timeouts(*cli, 10);
	timeouts(*srv, 10);
	return 0;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0)
			return fail("send: %s", strerror(errno));
		p += n;
		len -= n;
	}
	return 0;
}

static int recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0)
			return fail("recv: %s", strerror(errno));
		if (n == 0)
			return fail("recv: unexpected EOF");
		p += n;
		len -= n;
	}
	return 0;
}

static int inq(int fd)
{
	int n = -1;

	ioctl(fd, FIONREAD, &n);
	return n;
}

static int readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) > 0 && (p.revents & POLLIN);
}

static void tcp_info(int fd, struct tcp_info *ti)
{
	socklen_t len = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len);
}

/* Wait until everything @fd sent has been acknowledged. */
static int wait_acked(int fd, __u64 bytes)
{
	struct tcp_info ti;
	int i;

	for (i = 0; i < 500; i++) {
		tcp_info(fd, &ti);
		if (ti.tcpi_bytes_acked >= bytes && !ti.tcpi_unacked)
			return 0;
		usleep(10000);
	}
	return fail("only %llu of %llu bytes acked", ti.tcpi_bytes_acked,
	     (unsigned long long)bytes);
}

static int ping(int cli, int i)
{
	char req[9], want[9], got[8];

	snprintf(req, sizeof(req), "PING%04d", i % 10000);
	snprintf(want, sizeof(want), "PONG%04d", i % 10000);
	if ((send_all(cli, req, 8)) < 0)
		return -1;
	if ((recv_all(cli, got, 8)) < 0)
		return -1;
	if (!(!memcmp(got, want, 8)))
		return fail("request %d: got '%.8s', want '%s'",
			   i, got, want);
	return 0;
}

/* ---- tests ---------------------------------------------------------------- */

static int t_btf(void)
{
	if (!(attach_tcp == 57 && attach_udp == 58))
		return fail("BPF_XPS_TCP=%d BPF_XPS_UDP=%d, want 57/58", attach_tcp,
			   attach_udp);
	return 0;
}

/* TX on TCP: replies in order, the owner never sees the requests, and the
 * sequence space stays exact for the owner's own reads and writes.
 */
static int tcp_tx(int family)
{
	struct tcp_info tc, ts;
	struct xps_test_seen s;
	struct xps x;
	int cli, srv, i, port = 8000 + family;
	__u64 cookie = 0;
	socklen_t cl = sizeof(cookie);
	char buf[16];

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	if ((tcp_pair(family, port, &cli, &srv)) < 0)
		return -1;

	for (i = 0; i < 100; i++)
		if ((ping(cli, i)) < 0)
			return -1;
	if (!(stat_get(&x, XPS_TX) == 100))
		return fail("%llu TX verdicts, want 100",
			   (unsigned long long)stat_get(&x, XPS_TX));
	/* The context the program saw on the server's socket. */
	seen_get(&x, &s);
	getsockopt(srv, SOL_SOCKET, SO_COOKIE, &cookie, &cl);
	if (!(s.family == (unsigned int)family))
		return fail("family %u", s.family);
	if (!(s.local_port == (unsigned int)port))
		return fail("local_port %u", s.local_port);
	if (!(s.cookie == cookie))
		return fail("cookie %llu, socket's %llu",
			   (unsigned long long)s.cookie, (unsigned long long)cookie);
	{
		struct sockaddr_storage ss;
		socklen_t l = sizeof(ss);

		getsockname(cli, (void *)&ss, &l);
		if (!(s.remote_port == ntohs(((struct sockaddr_in *)&ss)->sin_port)))
			return fail("remote_port %u", s.remote_port);
	}
	if (family == AF_INET && (s.local_ip4 != htonl(INADDR_LOOPBACK) ||
				  s.remote_ip4 != htonl(INADDR_LOOPBACK)))
		return fail("ip4 %x/%x", s.local_ip4, s.remote_ip4);
	if (family == AF_INET6 && (s.local_ip6[3] != htonl(1) ||
				   s.remote_ip6[3] != htonl(1)))
		return fail("ip6 ...%x/...%x", s.local_ip6[3], s.remote_ip6[3]);
	if (readable(srv, 0))
		return fail("owner readable after consumed requests");
	if (!(inq(srv) == 0))
		return fail("owner has %d bytes queued", inq(srv));

	/* The owner's stream continues where the consumed bytes ended. */
	if ((send_all(cli, "hello", 5)) < 0)
		return -1;
	if ((recv_all(srv, buf, 5)) < 0)
		return -1;
	if (!(!memcmp(buf, "hello", 5)))
		return fail("owner read '%.5s'", buf);
	if ((send_all(srv, "world", 5)) < 0)
		return -1;
	if ((recv_all(cli, buf, 5)) < 0)
		return -1;
	if (!(!memcmp(buf, "world", 5)))
		return fail("client read '%.5s'", buf);
	if ((wait_acked(cli, 805)) < 0)
		return -1;
	if ((wait_acked(srv, 805)) < 0)
		return -1;
	tcp_info(cli, &tc);
	tcp_info(srv, &ts);
	if (!(ts.tcpi_bytes_received == 805 && tc.tcpi_bytes_received == 805))
		return fail("bytes_received srv %llu cli %llu, want 805",
			   ts.tcpi_bytes_received, tc.tcpi_bytes_received);
	if (!(!tc.tcpi_total_retrans && !ts.tcpi_total_retrans))
		return fail("retransmissions: cli %u srv %u", tc.tcpi_total_retrans,
			   ts.tcpi_total_retrans);

	return 0;
}

static int t_tcp_tx_v4(void) { return tcp_tx(AF_INET); }
static int t_tcp_tx_v6(void) { return tcp_tx(AF_INET6); }

struct waker {
	int fd, events;
	int stop;	/* __atomic */
};

static void *count_wakeups(void *arg)
{
	struct waker *w = arg;
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(0);

	epoll_ctl(ep, EPOLL_CTL_ADD, w->fd, &ev);
	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		if (epoll_wait(ep, &ev, 1, 20) > 0) {
			w->events++;
			usleep(20000);	/* level-triggered: don't spin */
		}
	}
	close(ep);
	return NULL;
}

/* The service is never woken for consumed bytes. */
static int t_tcp_not_woken(void)
{
	struct waker w = {};
	pthread_t th;
	struct xps x;
	int cli, srv, i;
	char buf[4];

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	if ((tcp_pair(AF_INET, 8100, &cli, &srv)) < 0)
		return -1;
	w.fd = srv;
	pthread_create(&th, NULL, count_wakeups, &w);
	for (i = 0; i < 200; i++)
		if ((ping(cli, i)) < 0)
			return -1;
	usleep(100000);
	if (!(w.events == 0))
		return fail("owner woken %d times for consumed bytes",
			   w.events);
	if ((send_all(cli, "bye!", 4)) < 0)
		return -1;
	usleep(200000);
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	if (!(w.events >= 1))
		return fail("owner not woken for passed bytes");
	if ((recv_all(srv, buf, 4)) < 0)
		return -1;
	if (!(!memcmp(buf, "bye!", 4)))
		return fail("owner read '%.4s'", buf);
	return 0;
}

/* Replies larger than the MSS: 15 KiB built by the program, and a 64 KiB
 * stream echoed segment by segment, with a 1500 byte MTU.
 */
static int t_tcp_big(void)
{
	static char out[65536], in[65536];
	struct tcp_info ti;
	struct xps x;
	int cli, srv, i;

	if ((set_lo(0, 1500)) < 0)
		return -1;
	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	if ((tcp_pair(AF_INET, 8200, &cli, &srv)) < 0)
		return -1;
	for (i = 0; i < 3; i++) {
		if ((send_all(cli, "BIG\x0f", 4)) < 0)
			return -1;
		if ((recv_all(cli, in, 15360)) < 0)
			return -1;
		if (!(!memcmp(in, "BIGR", 4) && !memcmp(in + 15356, "END!", 4)))
			return fail("15 KiB reply mangled");
	}
	tcp_info(srv, &ti);
	if (!(ti.tcpi_snd_mss < 15360))
		return fail("snd_mss %u", ti.tcpi_snd_mss);
	vlog("  15 KiB replies with snd_mss %u\n", ti.tcpi_snd_mss);
	if (!(inq(srv) == 0))
		return fail("owner has %d bytes", inq(srv));
	close(cli);
	close(srv);

	if ((tcp_pair(AF_INET, XPS_TEST_ECHO_PORT, &cli, &srv)) < 0)
		return -1;
	for (i = 0; i < (int)sizeof(out); i++)
		out[i] = (char)(i * 7 + (i >> 8));
	if ((send_all(cli, out, sizeof(out))) < 0)
		return -1;
	if ((recv_all(cli, in, sizeof(in))) < 0)
		return -1;
	if (!(!memcmp(in, out, sizeof(in))))
		return fail("64 KiB echo differs");
	if (!(inq(srv) == 0 && !readable(srv, 0)))
		return fail("owner saw echoed bytes");
	vlog("  64 KiB echoed in %llu TX runs\n",
	     (unsigned long long)stat_get(&x, XPS_TX));
	return 0;
}

/* DROP consumes and acknowledges; the stream continues. */
static int t_tcp_drop(void)
{
	struct xps x;
	int cli, srv, i;
	char buf[5];

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	if ((tcp_pair(AF_INET, 8300, &cli, &srv)) < 0)
		return -1;
	for (i = 0; i < 20; i++) {
		if ((send_all(cli, "DROPDROP", 8)) < 0)
			return -1;
		/* Acked without any reply or read: no delayed-ACK stall. */
		if ((wait_acked(cli, 8 * (i + 1))) < 0)
			return -1;
	}
	if (!(inq(srv) == 0 && !readable(srv, 0)))
		return fail("owner saw dropped bytes");
	if ((send_all(cli, "hello", 5)) < 0)
		return -1;
	if ((recv_all(srv, buf, 5)) < 0)
		return -1;
	if (!(!memcmp(buf, "hello", 5)))
		return fail("owner read '%.5s'", buf);
	if (!(stat_get(&x, XPS_DROP) == 20))
		return fail("%llu DROP verdicts",
			   (unsigned long long)stat_get(&x, XPS_DROP));
	return 0;
}

/* RESET closes the client (and the owner sees the reset). */
static int t_tcp_reset(void)
{
	struct xps x;
	int cli, srv;
	char buf[4];
	ssize_t n;

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	if ((tcp_pair(AF_INET, 8400, &cli, &srv)) < 0)
		return -1;
	if ((ping(cli, 1)) < 0)
		return -1;
	if ((send_all(cli, "RST!", 4)) < 0)
		return -1;
	n = recv(cli, buf, sizeof(buf), 0);
	if (!(n < 0 && errno == ECONNRESET))
		return fail("client recv %zd (%s)", n,
			   n < 0 ? strerror(errno) : "data");
	n = recv(srv, buf, sizeof(buf), 0);
	if (!(n < 0 && errno == ECONNRESET))
		return fail("owner recv %zd (%s)", n,
			   n < 0 ? strerror(errno) : "data");
	return 0;
}

/* PASS delivers, also across segments the program passes. */
static int t_tcp_pass(void)
{
	struct xps x;
	int cli, srv;
	char buf[11];

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	if ((tcp_pair(AF_INET, 8500, &cli, &srv)) < 0)
		return -1;
	if ((send_all(cli, "hello world", 11)) < 0)
		return -1;
	if ((recv_all(srv, buf, 11)) < 0)
		return -1;
	if (!(!memcmp(buf, "hello world", 11)))
		return fail("owner read '%.11s'", buf);
	if (!(stat_get(&x, XPS_PASS) >= 1))
		return fail("program did not run");
	/* TAIL goes through the PROG_ARRAY like libxps handlers. */
	if ((send_all(cli, "TAIL", 4)) < 0)
		return -1;
	if (recv_all(cli, buf, 7))
		return fail("no tail call reply: verdicts pass %llu drop %llu tx %llu reset %llu",
		     (unsigned long long)stat_get(&x, XPS_PASS),
		     (unsigned long long)stat_get(&x, XPS_DROP),
		     (unsigned long long)stat_get(&x, XPS_TX),
		     (unsigned long long)stat_get(&x, XPS_RESET));
	if (!(!memcmp(buf, "TAIL-OK", 7)))
		return fail("tail call reply '%.7s'", buf);
	return 0;
}

/* Socket owned by user: segments processed from the backlog by the owner
 * (release_sock) are answered the same way.
 */
static int t_tcp_backlog(void)
{
	int *stop;
	struct xps x;
	int cli, srv, i, tgid, one = 1;
	pid_t pid;
	__u32 zero = 0;

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	if ((tcp_pair(AF_INET, 8600, &cli, &srv)) < 0)
		return -1;
	stop = mmap_shared();
	pid = fork();
	if (pid == 0) {
		/* Own the socket as often as possible. */
		while (!__atomic_load_n(stop, __ATOMIC_RELAXED))
			setsockopt(srv, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
		_exit(0);
	}
	tgid = pid;
	bpf_map_update_elem(x.owner, &zero, &tgid, BPF_ANY);
	for (i = 0; i < 3000; i++)
		if (ping(cli, i))
			break;
	__atomic_store_n(stop, 1, __ATOMIC_RELAXED);
	waitpid(pid, NULL, 0);
	if (i < 3000)
		return -1;
	vlog("  %llu of %llu runs from the backlog\n",
	     (unsigned long long)stat_get(&x, XPS_TEST_STAT_OWNER),
	     (unsigned long long)stat_get(&x, XPS_TEST_STAT_RUNS));
	if (!(stat_get(&x, XPS_TEST_STAT_OWNER) > 0))
		return fail("no run in the owner's context (backlog path not exercised)");
	if (!(inq(srv) == 0))
		return fail("owner has %d bytes", inq(srv));
	return 0;
}

/* A FIN in the segment of a consumed request stays unread: the owner reads
 * EOF, and the reply still goes out (CLOSE_WAIT can send).
 */
static int t_tcp_fin_with_data(void)
{
	struct xps x;
	int cli, srv, one = 1, zero = 0;
	char buf[8];
	ssize_t n;

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	if ((tcp_pair(AF_INET, 8450, &cli, &srv)) < 0)
		return -1;
	if ((ping(cli, 1)) < 0)
		return -1;
	/* Corked: the data and the FIN leave in one segment. */
	setsockopt(cli, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
	if ((send_all(cli, "PING0002", 8)) < 0)
		return -1;
	shutdown(cli, SHUT_WR);
	setsockopt(cli, IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero));
	if ((recv_all(cli, buf, 8)) < 0)
		return -1;
	if (!(!memcmp(buf, "PONG0002", 8)))
		return fail("reply '%.8s'", buf);
	n = recv(srv, buf, sizeof(buf), 0);
	if (!(n == 0))
		return fail("owner read %zd, want EOF", n);
	if (!(inq(srv) == 0))
		return fail("owner inq %d after EOF", inq(srv));
	if ((send_all(srv, "late", 4)) < 0)
		return -1;
	if ((recv_all(cli, buf, 4)) < 0)
		return -1;
	if (!(!memcmp(buf, "late", 4)))
		return fail("client read '%.4s'", buf);
	return 0;
}

/* IPv4 clients of a dual-stack IPv6 socket (v4-mapped), TCP and UDP. */
static int t_v4mapped(void)
{
	struct sockaddr_storage ss, from;
	socklen_t len, fl = sizeof(from);
	int l, cli, srv, u, i, one = 1;
	struct xps x;
	char buf[16];
	ssize_t n;

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	if ((xps_link(&x, x.udp, attach_udp)) < 0)
		return -1;
	l = socket(AF_INET6, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	len = mkaddr(AF_INET6, "::", 8060, &ss);
	if (bind(l, (void *)&ss, len) || listen(l, 1))
		return fail("listen: %s", strerror(errno));
	cli = socket(AF_INET, SOCK_STREAM, 0);
	timeouts(cli, 10);
	len = mkaddr(AF_INET, "127.0.0.1", 8060, &ss);
	if (connect(cli, (void *)&ss, len))
		return fail("connect: %s", strerror(errno));
	srv = accept(l, NULL, NULL);
	if (srv < 0)
		return fail("accept: %s", strerror(errno));
	for (i = 0; i < 10; i++)
		if ((ping(cli, i)) < 0)
			return -1;
	if (!(inq(srv) == 0))
		return fail("owner has %d bytes", inq(srv));

	u = socket(AF_INET6, SOCK_DGRAM, 0);
	len = mkaddr(AF_INET6, "::", 9060, &ss);
	if (bind(u, (void *)&ss, len))
		return fail("bind: %s", strerror(errno));
	cli = socket(AF_INET, SOCK_DGRAM, 0);
	timeouts(cli, 5);
	len = mkaddr(AF_INET, "127.0.0.3", 9060, &ss);
	sendto(cli, "PING-map", 8, 0, (void *)&ss, len);
	n = recvfrom(cli, buf, sizeof(buf), 0, (void *)&from, &fl);
	if (!(n == 8 && !memcmp(buf, "PONG-map", 8)))
		return fail("UDP reply %zd", n);
	if (!(fl == len && !memcmp(&from, &ss, len)))
		return fail("UDP reply not from 127.0.0.3:9060");
	return 0;
}

static int udp_tx(int family)
{
	const char *any = family == AF_INET6 ? "::" : "0.0.0.0";
	const char *dst = family == AF_INET6 ? "::1" : "127.0.0.2";
	struct sockaddr_storage ss, from;
	socklen_t len, fl = sizeof(from);
	struct xps x;
	int srv, cli, port = 9000 + family;
	char buf[64];
	ssize_t n;

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.udp, attach_udp)) < 0)
		return -1;
	srv = socket(family, SOCK_DGRAM, 0);
	len = mkaddr(family, any, port, &ss);
	if (bind(srv, (void *)&ss, len))
		return fail("bind: %s", strerror(errno));
	cli = socket(family, SOCK_DGRAM, 0);
	timeouts(cli, 5);
	len = mkaddr(family, dst, port, &ss);

	/* TX: from the address the request was sent to. */
	sendto(cli, "PING-udp", 8, 0, (void *)&ss, len);
	n = recvfrom(cli, buf, sizeof(buf), 0, (void *)&from, &fl);
	if (!(n == 8 && !memcmp(buf, "PONG-udp", 8)))
		return fail("reply %zd '%.*s'", n,
			   (int)(n > 0 ? n : 0), buf);
	if (!(fl == len && !memcmp(&from, &ss, len)))
		return fail("reply not from the request's destination address/port");
	/* DROP: nobody sees anything. */
	sendto(cli, "DROP-udp", 8, 0, (void *)&ss, len);
	usleep(100000);
	if (recv(srv, buf, sizeof(buf), MSG_DONTWAIT) >= 0 || errno != EAGAIN)
		return fail("owner received a dropped datagram");
	if (!(recv(cli, buf, sizeof(buf), MSG_DONTWAIT) < 0))
		return fail("client got a reply to DROP");
	/* PASS: the owner gets the datagram unchanged. */
	sendto(cli, "hello-udp", 9, 0, (void *)&ss, len);
	timeouts(srv, 5);
	n = recv(srv, buf, sizeof(buf), 0);
	if (!(n == 9 && !memcmp(buf, "hello-udp", 9)))
		return fail("owner got %zd", n);
	if (!(stat_get(&x, XPS_TX) == 1 && stat_get(&x, XPS_DROP) == 1))
		return fail("verdicts TX %llu DROP %llu",
			   (unsigned long long)stat_get(&x, XPS_TX),
			   (unsigned long long)stat_get(&x, XPS_DROP));
	return 0;
}

static int t_udp_tx_v4(void) { return udp_tx(AF_INET); }
static int t_udp_tx_v6(void) { return udp_tx(AF_INET6); }

struct user_echo {
	int fd;
	int stop;	/* __atomic */
};

/* The service answers PING exactly like the program: the client must not
 * be able to tell which one did, whatever is attached when.
 */
static void *user_echo(void *arg)
{
	struct user_echo *u = arg;
	char buf[8];

	while (!__atomic_load_n(&u->stop, __ATOMIC_RELAXED)) {
		if (recv_all(u->fd, buf, 8))
			break;
		memcpy(buf, "PONG", 4);
		if (send_all(u->fd, buf, 8))
			break;
	}
	return NULL;
}

static int t_attach_detach(void)
{
	struct user_echo u = {};
	struct xps x, y;
	pthread_t th;
	int cli, srv, i, link = -1, n = 0;

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_load(&y)) < 0)
		return -1;
	if ((tcp_pair(AF_INET, 8700, &cli, &srv)) < 0)
		return -1;
	u.fd = srv;
	pthread_create(&th, NULL, user_echo, &u);
	for (i = 0; i < 3000; i++) {
		if (i % 50 == 0) {
			if (link < 0) {
				link = xps_link(&x, x.tcp, attach_tcp);
				if (link < 0)
					return -1;
			} else if (i % 100 == 50) {
				/* Swap the program under traffic. */
				if (bpf_link_update(link, n++ % 2 ? x.tcp : y.tcp,
						    NULL))
					return fail("link update: %s", strerror(errno));
				close(link);
				link = -1;
			}
		}
		if (ping(cli, i))
			return -1;
	}
	__atomic_store_n(&u.stop, 1, __ATOMIC_RELAXED);
	shutdown(cli, SHUT_RDWR);
	pthread_join(th, NULL);
	if (!(stat_get(&x, XPS_TX) + stat_get(&y, XPS_TX) > 0))
		return fail("the program never answered");
	vlog("  kernel answered %llu, service the rest\n",
	     (unsigned long long)(stat_get(&x, XPS_TX) + stat_get(&y, XPS_TX)));
	return 0;
}

/* A program attached to one netns does not see another's traffic. */
static int t_netns_isolation(void)
{
	struct xps x;
	int cli, srv, st;
	char buf[8];
	pid_t pid;

	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		if (new_netns() || tcp_pair(AF_INET, 8800, &cli, &srv) ||
		    send_all(cli, "PING0001", 8) || recv_all(srv, buf, 8) ||
		    memcmp(buf, "PING0001", 8))
			_exit(1);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	if (!(WIFEXITED(st) && !WEXITSTATUS(st)))
		return fail("the other netns' service did not get its request");
	if (!(stat_get(&x, XPS_TEST_STAT_RUNS) == 0))
		return fail("program ran on another netns' traffic");
	if ((tcp_pair(AF_INET, 8801, &cli, &srv)) < 0)
		return -1;
	if ((ping(cli, 1)) < 0)
		return -1;
	return 0;
}

/* Attach rules: privilege, expected attach type, one program per netns. */
static int t_permissions(void)
{
	struct xps x;
	int st, fd;
	pid_t pid;

	if ((xps_load(&x)) < 0)
		return -1;
	fd = bpf_link_create(x.not_xps, x.netns, attach_tcp, NULL);
	if (!(fd < 0 && errno == EINVAL))
		return fail("sockmap program attached as XPS (%d %s)", fd, strerror(errno));
	fd = bpf_link_create(x.tcp, x.netns, attach_udp, NULL);
	if (!(fd < 0 && errno == EINVAL))
		return fail("TCP program attached as BPF_XPS_UDP (%d)", fd);
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	fd = bpf_link_create(x.tcp, x.netns, attach_tcp, NULL);
	if (!(fd < 0))
		return fail("second XPS program attached to one netns");

	pid = fork();
	if (pid == 0) {
		struct bpf_insn ret0[] = {
			{ .code = 0xb7, .dst_reg = 0, .imm = 0 },	/* r0 = 0 */
			{ .code = 0x95 },				/* exit */
		};
		int code = 0;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		fd = bpf_link_create(x.udp, x.netns, attach_udp, NULL);
		if (!(fd < 0 && errno == EPERM))
			code |= 1;
		fd = bpf_prog_load(BPF_PROG_TYPE_SK_SKB, "u", "GPL", ret0, 2,
				   NULL);
		if (!(fd < 0 && (errno == EPERM || errno == EACCES)))
			code |= 2;
		_exit(code);
	}
	waitpid(pid, &st, 0);
	if (!(WIFEXITED(st) && WEXITSTATUS(st) != 10))
		return fail("could not drop root");
	if (!(!(WEXITSTATUS(st) & 1)))
		return fail("unprivileged bpf_link_create not EPERM");
	if (!(!(WEXITSTATUS(st) & 2)))
		return fail("unprivileged SK_SKB load succeeded");
	return 0;
}

/* BPF_PROG_TEST_RUN: payload in, rewritten payload and verdict out. */
static int t_test_run(void)
{
	struct __sk_buff ctx = {
		.family = AF_INET6,
		.local_port = 8379,
		.remote_port = htonl(40000),
		.local_ip6 = { 0, 0, 0, htonl(1) },
		.remote_ip6 = { htonl(0x20010db8), 0, 0, htonl(2) },
	};
	static char out[16384];
	struct xps_test_seen s;
	struct xps x;

	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = "PING1234",
		    .data_size_in = 8, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx));

	if ((xps_load(&x)) < 0)
		return -1;
	if (bpf_prog_test_run_opts(x.tcp, &o))
		return fail("test_run: %s", strerror(errno));
	if (o.retval != XPS_TX || o.data_size_out != 8 ||
	    memcmp(out, "PONG1234", 8))
		return fail("PING: retval %u, out %u '%.8s'",
			   o.retval, o.data_size_out, out);
	seen_get(&x, &s);
	if (s.family != AF_INET6 || s.local_port != 8379 ||
	    s.remote_port != 40000 || s.local_ip6[3] != htonl(1) ||
	    s.remote_ip6[0] != htonl(0x20010db8))
		return fail("context not as given");
	if (!(s.cookie != 0))
		return fail("no socket cookie");

	/* Without ctx_in the local port is 0: the program passes. */
	o.data_in = "PING";
	o.data_size_in = 4;
	o.data_size_out = sizeof(out);
	o.ctx_in = NULL;
	o.ctx_size_in = 0;
	if (bpf_prog_test_run_opts(x.tcp, &o))
		return fail("test_run without ctx: %s", strerror(errno));
	if (!(o.retval == XPS_PASS && !memcmp(out, "PING", 4)))
		return fail("no ctx: retval %u", o.retval);

	o.data_in = "BIG\x0f";
	o.data_size_out = sizeof(out);
	o.ctx_in = &ctx;
	o.ctx_size_in = sizeof(ctx);
	if (bpf_prog_test_run_opts(x.tcp, &o))
		return fail("test_run BIG: %s", strerror(errno));
	if (o.retval != XPS_TX || o.data_size_out != 15360 ||
	    memcmp(out + 15356, "END!", 4))
		return fail("BIG: retval %u size %u",
			   o.retval, o.data_size_out);

	o.data_in = "TAIL";
	o.data_size_out = sizeof(out);
	if (bpf_prog_test_run_opts(x.tcp, &o))
		return fail("test_run TAIL: %s", strerror(errno));
	if (o.retval != XPS_TX || o.data_size_out != 7 ||
	    memcmp(out, "TAIL-OK", 7))
		return fail("TAIL: retval %u", o.retval);

	o.data_in = "DROP";
	o.data_size_out = sizeof(out);
	if (bpf_prog_test_run_opts(x.udp, &o))
		return fail("test_run UDP: %s", strerror(errno));
	if (!(o.retval == XPS_DROP))
		return fail("UDP DROP: retval %u", o.retval);
	return 0;
}

static long long schedstat_ns(pid_t pid)
{
	char path[64];
	long long ns = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lld", &ns) != 1)
			ns = -1;
		fclose(f);
	}
	return ns;
}

static long long stat_ticks(pid_t pid)
{
	unsigned long long ut = 0, st = 0;
	char path[64], buf[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(buf, ')');
	/* fields 14 and 15 (utime, stime) after "pid (comm)" */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return ut + st;
}

static long long cgroup_usage_us(const char *cg)
{
	char path[256], key[64];
	long long v = -1, x;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpu.stat", cg);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &x) == 2)
		if (!strcmp(key, "usage_usec"))
			v = x;
	fclose(f);
	return v;
}

/* Handler time is charged to the task owning the socket (and its cgroup),
 * although that task never runs the handler and is never woken by it.
 */
static int t_accounting(void)
{
	const char *cg = "/sys/fs/cgroup/xps-vmtest";
	long long ns0, ns1, cg0, cg1, tk0, tk1, run_ns;
	struct bpf_prog_info info = {};
	__u32 ilen = sizeof(info);
	int *stop;
	struct xps x;
	int cli, srv, i, stats_fd;
	char path[256];
	pid_t pid;
	FILE *f;

	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0)
		return fail("bpf_enable_stats: %s", strerror(errno));
	if ((xps_load(&x)) < 0)
		return -1;
	if ((xps_link(&x, x.tcp, attach_tcp)) < 0)
		return -1;
	stop = mmap_shared();
	mkdir(cg, 0755);

	/* The owner: accepts, then sleeps in poll() waking every 20 ms, which
	 * is when pending handler time is flushed into its runtime.
	 */
	pid = fork();
	if (pid == 0) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, c;
		struct sockaddr_storage ss;
		socklen_t len = mkaddr(AF_INET, "127.0.0.1", 8900, &ss);

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (void *)&ss, len) || listen(l, 1))
			_exit(1);
		c = accept(l, NULL, NULL);
		while (!__atomic_load_n(stop, __ATOMIC_RELAXED)) {
			struct pollfd p = { .fd = c, .events = POLLIN };

			if (poll(&p, 1, 20) > 0)
				_exit(2);	/* woken for consumed bytes */
		}
		_exit(0);
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	f = fopen(path, "w");
	if (!f)
		return fail("cgroup %s: %s", cg, strerror(errno));
	fprintf(f, "%d\n", pid);
	fclose(f);
	usleep(200000);
	{
		struct sockaddr_storage ss;
		socklen_t len = mkaddr(AF_INET, "127.0.0.1", 8900, &ss);

		cli = socket(AF_INET, SOCK_STREAM, 0);
		timeouts(cli, 10);
		if (connect(cli, (void *)&ss, len))
			return fail("connect: %s", strerror(errno));
	}
	srv = -1;
	usleep(200000);
	ns0 = schedstat_ns(pid);
	tk0 = stat_ticks(pid);
	cg0 = cgroup_usage_us(cg);
	for (i = 0; i < 400; i++) {
		char got[4];

		if ((send_all(cli, "BURN", 4)) < 0)
			return -1;
		if ((recv_all(cli, got, 4)) < 0)
			return -1;
		if (!(!memcmp(got, "PONG", 4)))
			return fail("BURN reply '%.4s'", got);
	}
	usleep(300000);
	ns1 = schedstat_ns(pid);
	tk1 = stat_ticks(pid);
	cg1 = cgroup_usage_us(cg);
	__atomic_store_n(stop, 1, __ATOMIC_RELAXED);
	{
		int st;

		waitpid(pid, &st, 0);
		if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
			return fail("owner exited %d (2: woken for consumed bytes)",
				   WEXITSTATUS(st));
	}
	if (bpf_obj_get_info_by_fd(x.tcp, &info, &ilen))
		return fail("prog info: %s", strerror(errno));
	run_ns = info.run_time_ns;
	vlog("  program %lld us; owner +%lld us (schedstat), +%lld ticks, cgroup +%lld us\n",
	     run_ns / 1000, (ns1 - ns0) / 1000, tk1 - tk0, cg1 - cg0);
	close(stats_fd);
	(void)srv;
	if (!(run_ns > 20 * 1000000LL))
		return fail("program ran only %lld us: test too weak",
			   run_ns / 1000);
	if (!(ns1 - ns0 >= run_ns * 8 / 10))
		return fail("owner charged %lld us for %lld us of handler time",
			   (ns1 - ns0) / 1000, run_ns / 1000);
	if (!(cg1 - cg0 >= run_ns / 1000 * 8 / 10))
		return fail("cgroup charged %lld us for %lld us", cg1 - cg0, run_ns / 1000);
	if (!((tk1 - tk0) * (1000000000LL / sysconf(_SC_CLK_TCK)) >= run_ns / 2))
		return fail("/proc/PID/stat utime+stime grew %lld ticks only", tk1 - tk0);
	rmdir(cg);
	return 0;
}

/* ---- driver --------------------------------------------------------------- */

struct test {
	const char *name;
	int (*fn)(void);
};

static const struct test tests[] = {
	{ "btf_attach_types", t_btf },
	{ "tcp_tx_v4", t_tcp_tx_v4 },
	{ "tcp_tx_v6", t_tcp_tx_v6 },
	{ "tcp_not_woken", t_tcp_not_woken },
	{ "tcp_big_replies", t_tcp_big },
	{ "tcp_drop", t_tcp_drop },
	{ "tcp_reset", t_tcp_reset },
	{ "tcp_fin_with_data", t_tcp_fin_with_data },
	{ "tcp_pass_tailcall", t_tcp_pass },
	{ "tcp_backlog", t_tcp_backlog },
	{ "udp_tx_v4", t_udp_tx_v4 },
	{ "udp_tx_v6", t_udp_tx_v6 },
	{ "v4mapped", t_v4mapped },
	{ "attach_detach_traffic", t_attach_detach },
	{ "netns_isolation", t_netns_isolation },
	{ "permissions", t_permissions },
	{ "test_run", t_test_run },
	{ "accounting", t_accounting },
};

static int run_one(const struct test *t)
{
	int pfd[2], st;
	char msg[sizeof(fail_msg)] = "";
	pid_t pid;
	ssize_t n;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid == 0) {
		int rc;

		close(pfd[0]);
		rc = new_netns();
		if (!rc)
			rc = t->fn();
		if (rc)
			n = write(pfd[1], fail_msg, strlen(fail_msg));
		_exit(rc ? 1 : 0);
	}
	close(pfd[1]);
	n = read(pfd[0], msg, sizeof(msg) - 1);
	if (n > 0)
		msg[n] = 0;
	close(pfd[0]);
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && !WEXITSTATUS(st)) {
		printf("PASS %s\n", t->name);
		return 0;
	}
	if (WIFSIGNALED(st))
		snprintf(msg, sizeof(msg), "killed by signal %d", WTERMSIG(st));
	printf("FAIL %s: %s\n", t->name, msg[0] ? msg : "failed");
	return 1;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level == LIBBPF_DEBUG && verbose < 2)
		return 0;
	return verbose ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
	int i, j, opt, failed = 0, passed = 0;

	while ((opt = getopt(argc, argv, "vo:")) != -1) {
		switch (opt) {
		case 'v':
			verbose++;
			break;
		case 'o':
			obj_path = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-v] [-o obj] [test...]\n",
				argv[0]);
			return 2;
		}
	}
	libbpf_set_print(libbpf_print);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (find_attach_types()) {
		printf("FAIL btf_attach_types: %s\n", fail_msg);
		return 1;
	}
	for (i = 0; i < (int)ARRAY_SIZE(tests); i++) {
		bool want = optind >= argc;

		for (j = optind; j < argc; j++)
			if (!strcmp(argv[j], tests[i].name))
				want = true;
		if (!want)
			continue;
		if (run_one(&tests[i]))
			failed++;
		else
			passed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
