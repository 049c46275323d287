// SPDX-License-Identifier: GPL-2.0
/*
 * Tests of the serve hooks (BPF_SERVE_TCP, BPF_SERVE_UDP): verdicts on TCP and
 * UDP, the context the program sees and cannot write, link rules,
 * BPF_PROG_TEST_RUN and the accounting of handler time to the socket's
 * owner.  Each subtest runs in
 * a network namespace of its own; the programs are progs/serve_test.c.
 *
 * The attach types come from the running kernel's BTF, so that the test
 * also builds against a libbpf and uapi headers that do not know them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <bpf/btf.h>

#include <test_progs.h>

#include "serve_test.h"
#include "serve_test.skel.h"

/* The socket options of the series (linux/tcp.h, linux/udp.h), unknown
 * to the system's headers.
 */
#ifndef TCP_SERVE
#define TCP_SERVE 50
#endif
#ifndef UDP_SERVE
#define UDP_SERVE 110
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

/* Bound of every wait for something to happen: the kernel usually takes
 * microseconds, but the test also runs in emulated guests.
 */
#define SERVE_WAIT_MS	10000

static int attach_tcp = -1, attach_udp = -1;

static int find_attach_types(void)
{
	const struct btf_type *t;
	const struct btf_enum *e;
	struct btf *btf;
	int id, i;

	btf = btf__load_vmlinux_btf();
	if (!btf)
		return -errno;
	id = btf__find_by_name_kind(btf, "bpf_attach_type", BTF_KIND_ENUM);
	if (id < 0) {
		btf__free(btf);
		return id;
	}
	t = btf__type_by_id(btf, id);
	e = btf_enum(t);
	for (i = 0; i < btf_vlen(t); i++, e++) {
		const char *n = btf__name_by_offset(btf, e->name_off);

		if (!strcmp(n, "BPF_SERVE_TCP"))
			attach_tcp = e->val;
		else if (!strcmp(n, "BPF_SERVE_UDP"))
			attach_udp = e->val;
	}
	btf__free(btf);
	return attach_tcp < 0 || attach_udp < 0 ? -ENOENT : 0;
}

/* The skeleton, loaded with the serve attach types, tail handler installed. */
static struct serve_test *serve_load(void)
{
	struct serve_test *skel;
	__u32 zero = 0;
	int tail_fd;

	skel = serve_test__open();
	if (!ASSERT_OK_PTR(skel, "serve_test__open"))
		return NULL;
	bpf_program__set_expected_attach_type(skel->progs.serve_tcp, attach_tcp);
	/* 6.12 tail-calls only between programs of one expected type */
	bpf_program__set_expected_attach_type(skel->progs.tail_handler,
					      attach_tcp);
	bpf_program__set_expected_attach_type(skel->progs.serve_udp, attach_udp);
	bpf_program__set_expected_attach_type(skel->progs.not_serve,
					      BPF_SK_SKB_STREAM_VERDICT);
	if (!ASSERT_OK(bpf_map__set_max_entries(skel->maps.rbuf,
						libbpf_num_possible_cpus()),
		       "rbuf: one buffer per CPU"))
		goto err;
	/* read_only loads them alone */
	bpf_program__set_autoload(skel->progs.ext_sub, false);
	bpf_program__set_autoload(skel->progs.reply_pkt, false);
	if (!ASSERT_OK(serve_test__load(skel), "serve_test__load"))
		goto err;
	tail_fd = bpf_program__fd(skel->progs.tail_handler);
	if (!ASSERT_OK(bpf_map_update_elem(bpf_map__fd(skel->maps.jmp), &zero,
					   &tail_fd, BPF_ANY),
		       "tail handler into jmp"))
		goto err;
	return skel;
err:
	serve_test__destroy(skel);
	return NULL;
}

/* Attach @prog to the current netns; returns the link fd or -1. */
static int serve_link(struct bpf_program *prog, int type)
{
	int netns, link;

	netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (!ASSERT_OK_FD(netns, "open netns"))
		return -1;
	link = bpf_link_create(bpf_program__fd(prog), netns, type, NULL);
	close(netns);
	if (!ASSERT_OK_FD(link, "bpf_link_create"))
		return -1;
	return link;
}

static __u64 stat_get(struct serve_test *skel, __u32 slot)
{
	__u64 v = 0;

	bpf_map_lookup_elem(bpf_map__fd(skel->maps.stats), &slot, &v);
	return v;
}

static void seen_get(struct serve_test *skel, struct serve_test_seen *s)
{
	__u32 zero = 0;

	memset(s, 0, sizeof(*s));
	bpf_map_lookup_elem(bpf_map__fd(skel->maps.seen), &zero, s);
}

static __u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* Wait until the program has counted @want runs of kind @slot. */
static bool wait_stat(struct serve_test *skel, __u32 slot, __u64 want)
{
	__u64 deadline = now_ms() + SERVE_WAIT_MS;

	while (stat_get(skel, slot) < want && now_ms() < deadline)
		sched_yield();
	return ASSERT_GE(stat_get(skel, slot), want, "program's count");
}

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* ---- sockets ------------------------------------------------------------ */

/* A flag shared with forked helpers. */
static int *mmap_shared(void)
{
	void *p = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int set_lo(int up, int mtu)
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

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

/* Blocking calls give up after @sec seconds instead of hanging the run. */
static void timeouts(int fd, int sec)
{
	struct timeval tv = { .tv_sec = sec };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/*
 * A TCP listener opts in to the hook (TCP_SERVE): its children inherit it.
 * A UDP socket opts in with UDP_SERVE.
 */
static int listen_on(int family, int type, const char *ip, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = mkaddr(family, ip, port, &ss);
	int fd, one = 1;

	fd = socket(family, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if ((type == SOCK_STREAM &&
	     setsockopt(fd, IPPROTO_TCP, TCP_SERVE, &one, sizeof(one))) ||
	    (type == SOCK_DGRAM &&
	     setsockopt(fd, SOL_UDP, UDP_SERVE, &one, sizeof(one))) ||
	    bind(fd, (void *)&ss, len) ||
	    (type == SOCK_STREAM && listen(fd, 8))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int connect_to(int family, const char *ip, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = mkaddr(family, ip, port, &ss);
	int fd;

	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	timeouts(fd, 10);
	if (connect(fd, (void *)&ss, len)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A connected, accepted TCP pair on loopback; false (fds -1) on failure. */
static bool tcp_pair(int family, int port, int *cli, int *srv)
{
	const char *ip = family == AF_INET6 ? "::1" : "127.0.0.1";
	int l;

	*cli = *srv = -1;
	l = listen_on(family, SOCK_STREAM, ip, port);
	if (!ASSERT_OK_FD(l, "listen"))
		return false;
	*cli = connect_to(family, ip, port);
	if (ASSERT_OK_FD(*cli, "connect"))
		*srv = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	close(l);
	if (*cli < 0 || !ASSERT_OK_FD(*srv, "accept")) {
		close_fd(*cli);
		*cli = -1;
		return false;
	}
	timeouts(*srv, 10);
	return true;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

/* 0, -errno, or -EPIPE on an early EOF. */
static int recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
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

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) > 0 && (p.revents & POLLIN);
}

static void get_tcp_info(int fd, struct tcp_info *ti)
{
	socklen_t len = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len);
}

/* Wait until everything @fd sent, @bytes in all, has been acknowledged. */
static bool wait_acked(int fd, __u64 bytes)
{
	__u64 deadline = now_ms() + SERVE_WAIT_MS;
	struct tcp_info ti;

	for (;;) {
		get_tcp_info(fd, &ti);
		if ((ti.tcpi_bytes_acked >= bytes && !ti.tcpi_unacked) ||
		    now_ms() >= deadline)
			break;
		sched_yield();
	}
	return ASSERT_GE(ti.tcpi_bytes_acked, bytes, "bytes acked") &&
	       ASSERT_EQ(ti.tcpi_unacked, 0, "segments unacked");
}

/* One request answered by the program; quiet on success (loops call it). */
static bool ping(int cli, int i)
{
	char req[9], want[9], got[8];
	int err;

	snprintf(req, sizeof(req), "PING%04d", i % 10000);
	snprintf(want, sizeof(want), "PONG%04d", i % 10000);
	err = send_all(cli, req, 8);
	if (!err)
		err = recv_all(cli, got, 8);
	if (err) {
		PRINT_FAIL("request %d: %s\n", i, strerror(-err));
		return false;
	}
	if (memcmp(got, want, 8)) {
		PRINT_FAIL("request %d: got '%.8s', want '%s'\n", i, got, want);
		return false;
	}
	return true;
}

/* ---- subtests ------------------------------------------------------------ */

/*
 * The attach types' numbers are ABI: 58 and 59, 57 being upstream's
 * BPF_TRACE_UPROBE_SESSION (linux/bpf.h).
 */
static void test_btf_attach_types(void)
{
	ASSERT_EQ(attach_tcp, 58, "BPF_SERVE_TCP");
	ASSERT_EQ(attach_udp, 59, "BPF_SERVE_UDP");
}

/* TX on TCP: replies in order, the owner never sees the requests, and the
 * sequence space stays exact for the owner's own reads and writes.
 */
static void tcp_tx(int family)
{
	int cli = -1, srv = -1, link = -1, port = 8000 + family, i;
	struct sockaddr_storage ss;
	struct tcp_info tc, ts;
	struct serve_test_seen s;
	struct serve_test *skel;
	socklen_t len;
	__u64 cookie = 0;
	char buf[16];

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(family, port, &cli, &srv))
		goto out;

	for (i = 0; i < 100; i++)
		if (!ping(cli, i))
			goto out;
	ASSERT_EQ(stat_get(skel, SERVE_TX), 100, "TX verdicts");

	/* The context the program saw on the server's socket. */
	seen_get(skel, &s);
	len = sizeof(cookie);
	if (!ASSERT_OK(getsockopt(srv, SOL_SOCKET, SO_COOKIE, &cookie, &len),
		       "SO_COOKIE"))
		goto out;
	ASSERT_EQ(s.family, family, "seen family");
	ASSERT_EQ(s.local_port, port, "seen local_port");
	ASSERT_EQ(s.cookie, cookie, "seen cookie");
	len = sizeof(ss);
	if (!ASSERT_OK(getsockname(cli, (void *)&ss, &len), "getsockname"))
		goto out;
	/* sin_port and sin6_port are at the same offset */
	ASSERT_EQ(s.remote_port, ntohs(((struct sockaddr_in *)&ss)->sin_port),
		  "seen remote_port");
	if (family == AF_INET) {
		ASSERT_EQ(s.local_ip4, htonl(INADDR_LOOPBACK), "seen local_ip4");
		ASSERT_EQ(s.remote_ip4, htonl(INADDR_LOOPBACK), "seen remote_ip4");
	} else {
		ASSERT_EQ(s.local_ip6[3], htonl(1), "seen local_ip6");
		ASSERT_EQ(s.remote_ip6[3], htonl(1), "seen remote_ip6");
	}
	ASSERT_FALSE(readable(srv, 0), "owner readable after consumed requests");
	ASSERT_EQ(inq(srv), 0, "owner's queued bytes");

	/* The owner's stream continues where the consumed bytes ended. */
	if (!ASSERT_OK(send_all(cli, "hello", 5), "send to owner") ||
	    !ASSERT_OK(recv_all(srv, buf, 5), "owner recv"))
		goto out;
	ASSERT_STRNEQ(buf, "hello", 5, "owner read");
	if (!ASSERT_OK(send_all(srv, "world", 5), "owner send") ||
	    !ASSERT_OK(recv_all(cli, buf, 5), "recv from owner"))
		goto out;
	ASSERT_STRNEQ(buf, "world", 5, "client read");
	if (!wait_acked(cli, 805) || !wait_acked(srv, 805))
		goto out;
	get_tcp_info(cli, &tc);
	get_tcp_info(srv, &ts);
	ASSERT_EQ(ts.tcpi_bytes_received, 805, "owner's bytes_received");
	ASSERT_EQ(tc.tcpi_bytes_received, 805, "client's bytes_received");
	ASSERT_EQ(tc.tcpi_total_retrans, 0, "client retransmissions");
	ASSERT_EQ(ts.tcpi_total_retrans, 0, "owner retransmissions");
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

static void test_tcp_tx_v4(void)
{
	tcp_tx(AF_INET);
}

static void test_tcp_tx_v6(void)
{
	tcp_tx(AF_INET6);
}

/* Counts the owner's EPOLLIN events, each reported on an eventfd. */
struct owner_watch {
	int fd;		/* the owner's socket */
	int report;	/* eventfd: +1 for each event */
	int stop;	/* eventfd: written to end the thread */
	pthread_t thread;
	int events;
	int err;
};

static void *watch_owner(void *arg)
{
	struct owner_watch *w = arg;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
	__u64 one = 1;
	int ep;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		w->err = errno;
		return NULL;
	}
	/* edge-triggered: one event per wake-up with new data */
	ev.data.fd = w->fd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, w->fd, &ev))
		goto err;
	ev.events = EPOLLIN;
	ev.data.fd = w->stop;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, w->stop, &ev))
		goto err;
	for (;;) {
		int n = epoll_wait(ep, &ev, 1, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto err;
		if (ev.data.fd == w->stop)
			break;
		w->events++;
		if (write(w->report, &one, sizeof(one)) != sizeof(one))
			goto err;
	}
	close(ep);
	return NULL;
err:
	w->err = errno;
	close(ep);
	return NULL;
}

/* The service is never woken for consumed bytes. */
static void test_tcp_not_woken(void)
{
	struct owner_watch w = { .report = -1, .stop = -1 };
	int cli = -1, srv = -1, link = -1, i;
	struct serve_test *skel;
	bool watching = false;
	__u64 one = 1;
	char buf[4];

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, 8100, &cli, &srv))
		goto out;
	w.fd = srv;
	w.report = eventfd(0, EFD_CLOEXEC);
	w.stop = eventfd(0, EFD_CLOEXEC);
	if (!ASSERT_OK_FD(w.report, "eventfd") ||
	    !ASSERT_OK_FD(w.stop, "eventfd"))
		goto out;
	if (!ASSERT_OK(pthread_create(&w.thread, NULL, watch_owner, &w),
		       "pthread_create"))
		goto out;
	watching = true;
	for (i = 0; i < 200; i++)
		if (!ping(cli, i))
			goto out;
	ASSERT_EQ(inq(srv), 0, "owner's queued bytes");
	ASSERT_FALSE(readable(w.report, 0), "owner woken by consumed bytes");

	/* Passed bytes wake the owner: its first wake-up must be for them. */
	if (!ASSERT_OK(send_all(cli, "bye!", 4), "send passed bytes"))
		goto out;
	ASSERT_TRUE(readable(w.report, SERVE_WAIT_MS), "owner woken for passed bytes");
	if (!ASSERT_OK(recv_all(srv, buf, 4), "owner recv"))
		goto out;
	ASSERT_STRNEQ(buf, "bye!", 4, "owner read");
	ASSERT_EQ(inq(srv), 0, "owner's queued bytes after its read");
out:
	if (watching) {
		if (write(w.stop, &one, sizeof(one)) != sizeof(one))
			/* the thread never ends: don't wait for it */
			PRINT_FAIL("stopping the watcher: %s\n", strerror(errno));
		else
			pthread_join(w.thread, NULL);
		ASSERT_OK(w.err, "watcher thread");
		ASSERT_EQ(w.events, 1, "owner's wake-ups");
	}
	close_fd(w.report);
	close_fd(w.stop);
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* Replies larger than the MSS: 15 KiB built by the program, and a 64 KiB
 * stream echoed segment by segment, with a 1500 byte MTU.
 */
static void test_tcp_big(void)
{
	static char out[65536], in[65536];
	int cli = -1, srv = -1, link = -1, i;
	struct serve_test *skel;
	struct tcp_info ti;

	if (!ASSERT_OK(set_lo(0, 1500), "lo mtu 1500"))
		return;
	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, 8200, &cli, &srv))
		goto out;
	for (i = 0; i < 3; i++) {
		if (!ASSERT_OK(send_all(cli, "BIG\x0f", 4), "send BIG") ||
		    !ASSERT_OK(recv_all(cli, in, 15360), "recv 15 KiB reply"))
			goto out;
		if (!ASSERT_STRNEQ(in, "BIGR", 4, "reply head") ||
		    !ASSERT_STRNEQ(in + 15356, "END!", 4, "reply tail"))
			goto out;
	}
	get_tcp_info(srv, &ti);
	ASSERT_LT(ti.tcpi_snd_mss, 15360, "snd_mss");
	if (env.verbosity > VERBOSE_NONE)
		printf("  15 KiB replies with snd_mss %u\n", ti.tcpi_snd_mss);
	ASSERT_EQ(inq(srv), 0, "owner's queued bytes");
	close(cli);
	close(srv);

	if (!tcp_pair(AF_INET, SERVE_TEST_ECHO_PORT, &cli, &srv))
		goto out;
	for (i = 0; i < (int)sizeof(out); i++)
		out[i] = (char)(i * 7 + (i >> 8));
	if (!ASSERT_OK(send_all(cli, out, sizeof(out)), "send 64 KiB") ||
	    !ASSERT_OK(recv_all(cli, in, sizeof(in)), "recv 64 KiB echo"))
		goto out;
	ASSERT_OK(memcmp(in, out, sizeof(in)), "64 KiB echo as sent");
	ASSERT_EQ(inq(srv), 0, "owner's queued bytes");
	ASSERT_FALSE(readable(srv, 0), "owner readable after echoed bytes");
	if (env.verbosity > VERBOSE_NONE)
		printf("  64 KiB echoed in %llu TX runs\n",
		       (unsigned long long)stat_get(skel, SERVE_TX));
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

static __s64 kret_get(struct serve_test *skel, __u32 i)
{
	__s64 v = 1;

	bpf_map_lookup_elem(bpf_map__fd(skel->maps.kret), &i, &v);
	return v;
}

/* Fill `kbuf` with a pattern (copied to @kb); false on failure. */
static bool kbuf_fill(struct serve_test *skel, struct serve_test_kbuf *kb)
{
	__u32 zero = 0, i;

	for (i = 0; i < sizeof(kb->b); i++)
		kb->b[i] = (__u8)(i * 7 + (i >> 8));
	return ASSERT_OK(bpf_map_update_elem(bpf_map__fd(skel->maps.kbuf),
					     &zero, kb, 0), "fill kbuf");
}

/*
 * bpf_serve_reply(): a reply from a buffer, up to SERVE_TCP_TX_MAX bytes
 * (over 16 KiB); taken back when the verdict is not TX; one per run;
 * over SERVE_TCP_TX_MAX or on a see-only segment refused, and TX then falls
 * back to PASS with the request intact.
 */
static void test_tcp_kfunc(void)
{
	static struct serve_test_kbuf kb;
	static char in[40000];
	int cli = -1, srv = -1, link = -1, i;
	struct serve_test *skel;
	char req[4], buf[12];

	if (!ASSERT_OK(set_lo(0, 1500), "lo mtu 1500"))
		return;
	skel = serve_load();
	if (!skel)
		return;
	if (!kbuf_fill(skel, &kb))
		goto out;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, 8250, &cli, &srv))
		goto out;
	req[0] = 'K';
	req[1] = 'B';
	req[2] = sizeof(in) >> 8;
	req[3] = sizeof(in) & 0xff;
	for (i = 0; i < 3; i++) {
		if (!ASSERT_OK(send_all(cli, req, 4), "send KB") ||
		    !ASSERT_OK(recv_all(cli, in, sizeof(in)),
			       "recv 40000-byte reply"))
			goto out;
		if (!ASSERT_OK(memcmp(in, kb.b, sizeof(in)), "reply bytes"))
			goto out;
	}
	ASSERT_EQ(kret_get(skel, 0), 0, "bpf_serve_reply()");
	ASSERT_EQ(inq(srv), 0, "owner's queued bytes");

	/* Given, then PASS: taken back; the owner gets the request. */
	if (!ASSERT_OK(send_all(cli, "KPAS", 4), "send KPAS") ||
	    !ASSERT_OK(recv_all(srv, buf, 4), "owner recv KPAS"))
		goto out;
	ASSERT_STRNEQ(buf, "KPAS", 4, "owner read");
	ASSERT_EQ(kret_get(skel, 0), 0, "bpf_serve_reply() before PASS");
	ASSERT_FALSE(readable(cli, 200), "client got the withdrawn reply");

	/* Two replies in a run: the second is refused. */
	if (!ASSERT_OK(send_all(cli, "KTWO", 4), "send KTWO") ||
	    !ASSERT_OK(recv_all(cli, buf, 4), "recv KTWO reply"))
		goto out;
	ASSERT_OK(memcmp(buf, kb.b, 4), "KTWO reply is the first");
	ASSERT_EQ(kret_get(skel, 0), 0, "first bpf_serve_reply()");
	ASSERT_EQ(kret_get(skel, 1), -EBUSY, "second bpf_serve_reply()");
	ASSERT_FALSE(readable(cli, 200), "client got more than one reply");

	/* Too long: refused; TX becomes PASS (and the connection LOST). */
	if (!ASSERT_OK(send_all(cli, "KBIG", 4), "send KBIG") ||
	    !ASSERT_OK(recv_all(srv, buf, 4), "owner recv KBIG"))
		goto out;
	ASSERT_STRNEQ(buf, "KBIG", 4, "owner read");
	ASSERT_EQ(kret_get(skel, 0), -EMSGSIZE, "bpf_serve_reply() too long");
	ASSERT_FALSE(readable(cli, 200), "client got a reply to KBIG");

	/* Every later segment is see-only: refused, passed. */
	req[2] = 0;
	req[3] = 16;
	if (!ASSERT_OK(send_all(cli, req, 4), "send KB 16") ||
	    !ASSERT_OK(recv_all(srv, buf, 4), "owner recv KB 16"))
		goto out;
	ASSERT_OK(memcmp(buf, req, 4), "owner read");
	ASSERT_EQ(kret_get(skel, 0), -EPERM, "bpf_serve_reply() see-only");
	ASSERT_FALSE(readable(cli, 200), "client got a see-only reply");
	if (env.verbosity > VERBOSE_NONE)
		printf("  40000-byte replies from a buffer; refused: %s\n",
		       "a second reply, too long, see-only");
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* DROP consumes and acknowledges; the stream continues. */
static void test_tcp_drop(void)
{
	int cli = -1, srv = -1, link = -1, i;
	struct serve_test *skel;
	char buf[5];

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, 8300, &cli, &srv))
		goto out;
	for (i = 0; i < 20; i++) {
		if (!ASSERT_OK(send_all(cli, "DROPDROP", 8), "send DROP"))
			goto out;
		/* Acked without any reply or read: no delayed-ACK stall. */
		if (!wait_acked(cli, 8 * (i + 1)))
			goto out;
	}
	ASSERT_EQ(inq(srv), 0, "owner's queued bytes");
	ASSERT_FALSE(readable(srv, 0), "owner readable after dropped bytes");
	if (!ASSERT_OK(send_all(cli, "hello", 5), "send to owner") ||
	    !ASSERT_OK(recv_all(srv, buf, 5), "owner recv"))
		goto out;
	ASSERT_STRNEQ(buf, "hello", 5, "owner read");
	ASSERT_EQ(stat_get(skel, SERVE_DROP), 20, "DROP verdicts");
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* RESET closes the client (and the owner sees the reset). */
static void test_tcp_reset(void)
{
	int cli = -1, srv = -1, link = -1, err;
	struct serve_test *skel;
	char buf[4];
	ssize_t n;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, 8400, &cli, &srv))
		goto out;
	if (!ping(cli, 1) ||
	    !ASSERT_OK(send_all(cli, "RST!", 4), "send RST!"))
		goto out;
	n = recv(cli, buf, sizeof(buf), 0);
	err = n < 0 ? errno : 0;
	ASSERT_EQ(n, -1, "client recv after RESET");
	ASSERT_EQ(err, ECONNRESET, "client recv errno");
	n = recv(srv, buf, sizeof(buf), 0);
	err = n < 0 ? errno : 0;
	ASSERT_EQ(n, -1, "owner recv after RESET");
	ASSERT_EQ(err, ECONNRESET, "owner recv errno");
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* A FIN in the segment of a consumed request stays unread: the owner reads
 * EOF, and the reply still goes out (CLOSE_WAIT can send).
 */
static void test_tcp_fin_with_data(void)
{
	int cli = -1, srv = -1, link = -1, one = 1, zero = 0;
	struct serve_test *skel;
	char buf[8];
	ssize_t n;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, 8450, &cli, &srv))
		goto out;
	if (!ping(cli, 1))
		goto out;
	/* Corked: the data and the FIN leave in one segment. */
	setsockopt(cli, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
	if (!ASSERT_OK(send_all(cli, "PING0002", 8), "send PING"))
		goto out;
	shutdown(cli, SHUT_WR);
	setsockopt(cli, IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero));
	if (!ASSERT_OK(recv_all(cli, buf, 8), "recv reply"))
		goto out;
	ASSERT_STRNEQ(buf, "PONG0002", 8, "reply");
	n = recv(srv, buf, sizeof(buf), 0);
	ASSERT_EQ(n, 0, "owner reads EOF");
	ASSERT_EQ(inq(srv), 0, "owner's queued bytes after EOF");
	if (!ASSERT_OK(send_all(srv, "late", 4), "owner send after EOF") ||
	    !ASSERT_OK(recv_all(cli, buf, 4), "recv from owner"))
		goto out;
	ASSERT_STRNEQ(buf, "late", 4, "client read");
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* PASS delivers, also across segments the program passes. */
static void test_tcp_pass(void)
{
	int cli = -1, srv = -1, link = -1;
	struct serve_test *skel;
	char buf[11];

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, 8500, &cli, &srv))
		goto out;
	if (!ASSERT_OK(send_all(cli, "hello world", 11), "send") ||
	    !ASSERT_OK(recv_all(srv, buf, 11), "owner recv"))
		goto out;
	ASSERT_STRNEQ(buf, "hello world", 11, "owner read");
	ASSERT_GE(stat_get(skel, SERVE_PASS), 1, "PASS verdicts");
	/* TAIL goes through the PROG_ARRAY like libxps handlers. */
	if (!ASSERT_OK(send_all(cli, "TAIL", 4), "send TAIL"))
		goto out;
	if (!ASSERT_OK(recv_all(cli, buf, 7), "tail call reply")) {
		printf("  verdicts: pass %llu drop %llu tx %llu reset %llu\n",
		       (unsigned long long)stat_get(skel, SERVE_PASS),
		       (unsigned long long)stat_get(skel, SERVE_DROP),
		       (unsigned long long)stat_get(skel, SERVE_TX),
		       (unsigned long long)stat_get(skel, SERVE_RESET));
		goto out;
	}
	ASSERT_STRNEQ(buf, "TAIL-OK", 7, "tail call reply");
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* Socket owned by user: segments processed from the backlog by the owner
 * (release_sock) are answered the same way.
 */
static void test_tcp_backlog(void)
{
	int cli = -1, srv = -1, link = -1, i, tgid, one = 1, *stop = NULL;
	struct serve_test *skel;
	pid_t pid = -1;
	__u32 zero = 0;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, 8600, &cli, &srv))
		goto out;
	stop = mmap_shared();
	if (!ASSERT_OK_PTR(stop, "mmap"))
		goto out;
	pid = fork();
	if (!ASSERT_GE(pid, 0, "fork"))
		goto out;
	if (pid == 0) {
		/* Own the socket as often as possible. */
		while (!__atomic_load_n(stop, __ATOMIC_RELAXED))
			setsockopt(srv, IPPROTO_TCP, TCP_NODELAY, &one,
				   sizeof(one));
		_exit(0);
	}
	tgid = pid;
	if (!ASSERT_OK(bpf_map_update_elem(bpf_map__fd(skel->maps.owner_tgid),
					   &zero, &tgid, BPF_ANY),
		       "owner_tgid"))
		goto out;
	for (i = 0; i < 3000; i++)
		if (!ping(cli, i))
			goto out;
	if (env.verbosity > VERBOSE_NONE)
		printf("  %llu of %llu runs from the backlog\n",
		       (unsigned long long)stat_get(skel, SERVE_TEST_STAT_OWNER),
		       (unsigned long long)stat_get(skel, SERVE_TEST_STAT_RUNS));
	ASSERT_GT(stat_get(skel, SERVE_TEST_STAT_OWNER), 0,
		  "runs in the owner's context (backlog path)");
	ASSERT_EQ(inq(srv), 0, "owner's queued bytes");
out:
	if (pid > 0) {
		__atomic_store_n(stop, 1, __ATOMIC_RELAXED);
		waitpid(pid, NULL, 0);
	}
	if (stop)
		munmap(stop, sizeof(*stop));
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* One "OWNR" request on @cli: true if the program answered "DONE". */
static bool ownr_answered(int cli)
{
	char buf[4];

	return !send_all(cli, "OWNR", 4) && !recv_all(cli, buf, 4) &&
	       !memcmp(buf, "DONE", 4);
}

/* Read @len bytes from @fd, all equal to @c; false at the first other. */
static bool recv_pattern(int fd, size_t len, char c, const char *what)
{
	char buf[4096];
	size_t got = 0;
	ssize_t n, i;

	while (got < len) {
		n = recv(fd, buf, len - got < sizeof(buf) ? len - got :
			 sizeof(buf), 0);
		if (!ASSERT_GT(n, 0, what))
			return false;
		for (i = 0; i < n; i++)
			if (buf[i] != c) {
				PRINT_FAIL("%s: byte %zu is '%c'\n", what,
					   got + i, buf[i]);
				return false;
			}
		got += n;
	}
	return true;
}

/* Read @n "OWNR" requests the owner got from @srv. */
static bool owner_got_ownr(int srv, int n)
{
	char buf[4];
	int i;

	for (i = 0; i < n; i++)
		if (!ASSERT_OK(recv_all(srv, buf, 4), "owner recv") ||
		    !ASSERT_STRNEQ(buf, "OWNR", 4, "owner got the request"))
			return false;
	return true;
}

/*
 * An "OWNR" request on @cli reaches the owner @srv, the program having
 * seen it see-only (its @see_only-th such run), and the client gets no
 * reply: the kernel kept the request from the program, as @what says.
 */
static bool ownr_to_owner(struct serve_test *skel, int cli, int srv,
			  __u64 see_only, const char *what)
{
	if (!ASSERT_OK(send_all(cli, "OWNR", 4), "send OWNR") ||
	    !owner_got_ownr(srv, 1))
		return false;
	return ASSERT_EQ(stat_get(skel, SERVE_TEST_STAT_SEE_ONLY), see_only,
			 what) &&
	       ASSERT_FALSE(readable(cli, 100), "client got no reply");
}

/*
 * A pair with small buffers, so that a write of a few MB has to wait for
 * the reader, every request of the client sent in a segment of its own
 * (the server's backlog may still join two into one run); and
 * @total bytes of 'x' for the owner to write.  NULL on failure.
 */
static char *slow_reader_pair(int port, size_t total, int *cli, int *srv)
{
	int sz = 64 << 10, one = 1;
	char *big;

	if (!tcp_pair(AF_INET, port, cli, srv))
		return NULL;
	setsockopt(*srv, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(*cli, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(*cli, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	big = malloc(total);
	if (!ASSERT_OK_PTR(big, "malloc"))
		return NULL;
	return memset(big, 'x', total);
}

/*
 * The kernel keeps a reply out of a write in progress, whatever the
 * program: while the owner's task is inside a blocking sendmsg() of 4 MB
 * (sleeping for memory as the client reads slowly), every request is
 * see-only, although acknowledgements free memory in between; the client
 * reads the 4 MB whole.  Once the write is over, a request is answered.
 */
static void test_tcp_owner_writing(void)
{
	const size_t total = 4 << 20, quiet = 1 << 20;
	int cli = -1, srv = -1, link = -1, st, sent = 0;
	struct serve_test *skel;
	char *big = NULL, buf[4096];
	size_t got = 0;
	pid_t pid = -1;
	ssize_t n;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0)
		goto out;
	big = slow_reader_pair(8910, total, &cli, &srv);
	if (!big)
		goto out;
	pid = fork();
	if (!ASSERT_GE(pid, 0, "fork"))
		goto out;
	if (pid == 0)
		_exit(send_all(srv, big, total) ? 1 : 0);
	/* A request after every 64 KB read, while more than the buffers
	 * can hold is still to come: the writer is then inside sendmsg().
	 */
	while (got + quiet < total) {
		n = recv(cli, buf, sizeof(buf), 0);
		if (!ASSERT_GT(n, 0, "client recv"))
			goto out;
		if (memchr(buf, 'D', n)) {
			PRINT_FAIL("a reply inside the owner's write, near byte %zu\n",
				   got);
			goto out;
		}
		if ((got + n) / (64 << 10) != got / (64 << 10)) {
			if (!ASSERT_OK(send_all(cli, "OWNR", 4), "send OWNR"))
				goto out;
			sent++;
		}
		got += n;
	}
	if (!recv_pattern(cli, total - got, 'x', "the owner's write, whole"))
		goto out;
	if (!ASSERT_OK(waitpid(pid, &st, 0) == pid ? 0 : -1, "waitpid"))
		goto out;
	pid = -1;
	ASSERT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st), "owner's write");
	ASSERT_GE(sent, 40, "requests during the write");
	ASSERT_EQ(stat_get(skel, SERVE_TEST_STAT_SEE_ONLY), sent,
		  "requests the kernel kept see-only");
	if (!owner_got_ownr(srv, sent))
		goto out;
	ASSERT_FALSE(readable(cli, 100), "client got nothing else");
	ASSERT_TRUE(ownr_answered(cli), "answered once the write is over");
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	free(big);
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/*
 * Nor after a write that stopped halfway: a non-blocking send() queued
 * part of a message the peer's window does not take yet; the client
 * reads some of it (acknowledgements free memory), then asks.  The
 * request is see-only until the owner's bytes are all sent.
 */
static void test_tcp_owner_unsent(void)
{
	const size_t total = 4 << 20;
	int cli = -1, srv = -1, link = -1;
	struct tcp_info ti;
	struct serve_test *skel;
	char *big = NULL;
	ssize_t n;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0)
		goto out;
	big = slow_reader_pair(8920, total, &cli, &srv);
	if (!big)
		goto out;
	n = send(srv, big, total, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (!ASSERT_GT(n, 0, "non-blocking send") ||
	    !ASSERT_LT(n, (ssize_t)total, "send stopped halfway"))
		goto out;
	if (!recv_pattern(cli, 32 << 10, 'x', "the owner's first bytes"))
		goto out;
	usleep(50000);
	get_tcp_info(srv, &ti);
	if (!ASSERT_GT(ti.tcpi_notsent_bytes, 0, "owner's bytes not yet sent"))
		goto out;
	if (!ASSERT_OK(send_all(cli, "OWNR", 4), "send OWNR") ||
	    !owner_got_ownr(srv, 1))
		goto out;
	ASSERT_EQ(stat_get(skel, SERVE_TEST_STAT_SEE_ONLY), 1,
		  "request the kernel kept see-only");
	if (!recv_pattern(cli, n - (32 << 10), 'x', "the owner's write, whole"))
		goto out;
	ASSERT_FALSE(readable(cli, 100), "client got nothing else");
	ASSERT_TRUE(ownr_answered(cli), "answered once the bytes are sent");
out:
	free(big);
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/*
 * Bytes the program never saw: a connection older than the program, and
 * one that carried data while the program was detached, are lost to it
 * (it still sees what follows, see-only, and every request goes to the
 * owner); a connection made after the attach is answered.
 */
static void test_tcp_attach_gap(void)
{
	int old_cli = -1, old_srv = -1, cli = -1, srv = -1, link = -1;
	struct serve_test *skel;
	char buf[5];

	skel = serve_load();
	if (!skel)
		return;
	if (!tcp_pair(AF_INET, 8930, &old_cli, &old_srv) ||
	    !ASSERT_OK(send_all(old_cli, "hello", 5), "send before attach") ||
	    !ASSERT_OK(recv_all(old_srv, buf, 5), "owner recv before attach"))
		goto out;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0)
		goto out;
	if (!ownr_to_owner(skel, old_cli, old_srv, 1,
			   "older connection lost to the program"))
		goto out;

	if (!tcp_pair(AF_INET, 8931, &cli, &srv) ||
	    !ASSERT_TRUE(ownr_answered(cli), "newer connection answered"))
		goto out;
	/* Detached, bytes pass; re-attached, the connection is lost. */
	close(link);
	link = -1;
	if (!ASSERT_OK(send_all(cli, "gap!", 4), "send while detached") ||
	    !ASSERT_OK(recv_all(srv, buf, 4), "owner recv while detached"))
		goto out;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0)
		goto out;
	ownr_to_owner(skel, cli, srv, 2,
		      "connection lost to the program after the gap");
out:
	close_fd(old_cli);
	close_fd(old_srv);
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/*
 * Urgent data may leave the stream the owner reads (here, without
 * SO_OOBINLINE, the owner reads "OWN" and the urgent "R" out of band): the
 * program still sees the segment, whose bytes a cache must know of, but
 * see-only, and the connection is lost to it.
 */
static void test_tcp_urgent(void)
{
	int cli = -1, srv = -1, link = -1;
	struct serve_test *skel;
	char buf[4];

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, 8960, &cli, &srv) ||
	    !ASSERT_TRUE(ownr_answered(cli), "answered before urgent data"))
		goto out;
	if (!ASSERT_EQ(send(cli, "OWNR", 4, MSG_OOB), 4, "send(MSG_OOB)") ||
	    !ASSERT_OK(recv_all(srv, buf, 3), "owner recv in band") ||
	    !ASSERT_STRNEQ(buf, "OWN", 3, "in-band bytes") ||
	    !ASSERT_EQ(recv(srv, buf, 1, MSG_OOB), 1, "owner recv(MSG_OOB)") ||
	    !ASSERT_EQ(buf[0], 'R', "urgent byte"))
		goto out;
	if (!ASSERT_EQ(stat_get(skel, SERVE_TEST_STAT_SEE_ONLY), 1,
		       "the program saw the urgent segment, see-only") ||
	    !ASSERT_FALSE(readable(cli, 100), "no reply to urgent data"))
		goto out;
	ownr_to_owner(skel, cli, srv, 2, "connection lost after urgent data");
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/*
 * The value of @name in @path's "@prefix:" lines (/proc/net/netstat,
 * /proc/net/snmp: a line of names, then one of values), in the current
 * netns; -1 if absent.
 */
static long long net_stat(const char *path, const char *prefix,
			  const char *name)
{
	char names[4096], values[4096], *n, *v, *sn, *sv;
	size_t plen = strlen(prefix);
	long long val = -1;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -1;
	while (val < 0 && fgets(names, sizeof(names), f) &&
	       fgets(values, sizeof(values), f)) {
		if (strncmp(names, prefix, plen) || names[plen] != ':')
			continue;
		n = strtok_r(names + plen + 1, "\n ", &sn);
		v = strtok_r(values + plen + 1, "\n ", &sv);
		while (n && v && strcmp(n, name)) {
			n = strtok_r(NULL, "\n ", &sn);
			v = strtok_r(NULL, "\n ", &sv);
		}
		if (n && v)
			val = atoll(v);
	}
	fclose(f);
	return val;
}

static long long tcp_mib(const char *name)
{
	return net_stat("/proc/net/netstat", "TcpExt", name);
}

static long long udp_mib(const char *name)
{
	return net_stat("/proc/net/snmp", "Udp", name);
}

#define FAILSLAB "/sys/kernel/debug/failslab/"

static bool write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (!ASSERT_OK_FD(fd, path))
		return false;
	n = write(fd, val, strlen(val));
	close(fd);
	return ASSERT_EQ(n, (ssize_t)strlen(val), path);
}

/*
 * Fault injection (CONFIG_FAILSLAB): fail @percent of the slab allocations
 * that may not sleep, anywhere in the kernel, @times times over; 0 turns
 * it off.
 */
static bool failslab_set(int percent, int times)
{
	char t[16], p[16];

	if (access(FAILSLAB, F_OK) &&
	    mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL) &&
	    errno != EBUSY) {
		PRINT_FAIL("mount debugfs: %s\n", strerror(errno));
		return false;
	}
	if (access(FAILSLAB "times", W_OK)) {
		PRINT_FAIL("no %s: needs CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS\n",
			   FAILSLAB);
		return false;
	}
	if (!percent)
		return write_str(FAILSLAB "probability", "0");
	snprintf(t, sizeof(t), "%d", times);
	snprintf(p, sizeof(p), "%d", percent);
	/* times before probability: its default may be unlimited */
	return write_str(FAILSLAB "verbose", "0") &&
	       write_str(FAILSLAB "ignore-gfp-wait", "Y") &&
	       write_str(FAILSLAB "interval", "1") &&
	       write_str(FAILSLAB "times", t) &&
	       write_str(FAILSLAB "probability", p);
}

/* Fail the next allocation that may not sleep, @times times; 0: off. */
static bool failslab(int times)
{
	return failslab_set(times ? 100 : 0, times);
}

/* Tries of a test whose injected failure may hit another allocation. */
#define SERVE_FAILSLAB_TRIES	10

/*
 * A segment needs no memory to be seen: the program runs on it as it is
 * (only one overlapping bytes already received is cloned, to show it
 * from rcv_nxt on).  With the next allocation that may not sleep failing
 * (failslab, anywhere in the kernel), a request still reaches the
 * program: answered, or, when the failure hit the reply, passed to the
 * owner intact; never dropped for want of memory.  A connection of its
 * own per try: a refused reply loses the connection to the program.
 */
static void test_tcp_nomem(void)
{
	long long drops0, refused0, passed = 0;
	int cli = -1, srv = -1, link = -1, i;
	struct serve_test *skel;
	bool answered;
	char buf[8];
	__u64 runs0;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0)
		goto out;
	drops0 = tcp_mib("TCPRcvQDrop");
	refused0 = tcp_mib("TCPServeRefused");
	if (!ASSERT_GE(drops0, 0, "TcpExt TCPRcvQDrop") ||
	    !ASSERT_GE(refused0, 0, "TcpExt TCPServeRefused"))
		goto out;
	for (i = 0; i < SERVE_FAILSLAB_TRIES; i++) {
		if (!tcp_pair(AF_INET, 8970 + i, &cli, &srv))
			goto out;
		runs0 = stat_get(skel, SERVE_TEST_STAT_RUNS);
		if (!failslab(1))
			goto out;
		if (!ASSERT_OK(send_all(cli, "PING0001", 8), "send PING")) {
			failslab(0);
			goto out;
		}
		answered = readable(cli, 500) && !recv_all(cli, buf, 8) &&
			   !memcmp(buf, "PONG0001", 8);
		failslab(0);
		if (!answered) {
			passed++;
			if (!ASSERT_OK(recv_all(srv, buf, 8), "owner recv") ||
			    !ASSERT_STRNEQ(buf, "PING0001", 8,
					   "owner got the request intact"))
				goto out;
		}
		if (!ASSERT_EQ(stat_get(skel, SERVE_TEST_STAT_RUNS) - runs0, 1,
			       "the program saw the request"))
			goto out;
		close_fd(cli);
		close_fd(srv);
		cli = -1;
		srv = -1;
	}
	ASSERT_EQ(tcp_mib("TCPRcvQDrop") - drops0, 0,
		  "segments dropped for want of memory");
	ASSERT_EQ(tcp_mib("TCPServeRefused") - refused0, passed,
		  "replies refused: the requests passed");
	if (env.verbosity > VERBOSE_NONE)
		printf("  %d tries, %lld with the reply's allocation failed\n",
		       i, passed);
out:
	failslab(0);
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

#define TC_QDISC	"PATH=$PATH:/usr/sbin:/sbin tc qdisc "
#define NETEM		"delay 2ms 1ms reorder 25% 50% duplicate 3% loss 1%"

/* Writes @len bytes of @buf on @fd in writes of uneven sizes. */
struct stream_writer {
	int fd;
	const char *buf;
	size_t len;
	int err;
};

static void *stream_write(void *arg)
{
	struct stream_writer *w = arg;
	size_t off = 0, n;

	while (off < w->len && !w->err) {
		n = 1 + (off * 7919) % 2900;
		if (n > w->len - off)
			n = w->len - off;
		w->err = send_all(w->fd, w->buf + off, n);
		off += n;
	}
	return NULL;
}

/*
 * Under reordering, duplication and loss (netem on lo), the program still
 * sees the stream the owner reads, once and in order: the segments the
 * out-of-order queue hands over (see-only), retransmissions overlapping
 * bytes already received (from rcv_nxt on), duplicates not at all.  The
 * connection is never lost to it, and the owner reads the stream intact.
 * @nomem: then two rounds that fail three in ten allocations that may
 * not sleep, six times over (failslab): a segment overlapping bytes
 * already received that the hook cannot clone for the program is
 * dropped (the peer sends it again), any other is seen as it is.  A
 * segment whose retransmissions fail too waits out a doubling RTO each
 * time (six failures in a row: 0.2 + 0.4 + ... + 6.4 s), so the failure
 * budget is kept small and the sockets wait SERVE_STREAM_WAIT_S, not the
 * usual 10 s.
 */
#define SERVE_STREAM_FAILS	6
#define SERVE_STREAM_WAIT_S	30

static void tcp_stream(bool nomem)
{
	/* a whole number of patterns: every round sends the same bytes */
	const size_t total = 512 * SERVE_TEST_STREAM_MOD;
	struct stream_writer w = { .fd = -1 };
	int srv = -1, link = -1, one = 1, round, injected = 0;
	bool netem = false, th = false, inject;
	long long ofo = 0, drops = 0, drops0 = 0;
	__u64 start, slowest = 0;
	struct serve_test_stream st = {};
	char *buf = NULL, *got = NULL;
	struct serve_test *skel;
	pthread_t thread;
	__u32 zero = 0;
	size_t i;

	skel = serve_load();
	if (!skel)
		return;
	buf = malloc(total);
	got = malloc(total);
	if (!ASSERT_OK_PTR(buf, "malloc") || !ASSERT_OK_PTR(got, "malloc"))
		goto out;
	for (i = 0; i < total; i++)
		buf[i] = i % SERVE_TEST_STREAM_MOD;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, SERVE_TEST_STREAM_PORT, &w.fd, &srv))
		goto out;
	setsockopt(w.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	timeouts(w.fd, SERVE_STREAM_WAIT_S);
	timeouts(srv, SERVE_STREAM_WAIT_S);
	if (!ASSERT_OK(system(TC_QDISC "add dev lo root netem " NETEM),
		       "netem on lo"))
		goto out;
	netem = true;
	w.buf = buf;
	w.len = total;
	/*
	 * Rounds until netem has reordered something (the first, mostly);
	 * with @nomem, two more with failures injected.
	 */
	for (round = 0; round < 12;) {
		inject = nomem && ofo > 0;
		injected += inject;
		if (inject) {
			drops0 = tcp_mib("TCPRcvQDrop");
			if (!failslab_set(30, SERVE_STREAM_FAILS))
				goto out;
		}
		start = now_ms();
		if (!ASSERT_OK(pthread_create(&thread, NULL, stream_write, &w),
			       "pthread_create"))
			goto out;
		th = true;
		if (!ASSERT_OK(recv_all(srv, got, total), "owner recv") ||
		    !ASSERT_OK(memcmp(got, buf, total),
			       "owner read the stream intact"))
			goto out;
		pthread_join(thread, NULL);
		th = false;
		round++;
		if (now_ms() - start > slowest)
			slowest = now_ms() - start;
		if (inject) {
			failslab(0);
			drops += tcp_mib("TCPRcvQDrop") - drops0;
		}
		if (!ASSERT_OK(w.err, "client send"))
			goto out;
		ofo = tcp_mib("TCPOFOQueue");
		if (nomem ? injected >= 2 : ofo > 0)
			break;
	}
	if (!ASSERT_OK(bpf_map_lookup_elem(bpf_map__fd(skel->maps.stream),
					   &zero, &st), "stream map"))
		goto out;
	printf("%s: %d round(s), slowest %llu ms\n", __func__, round,
	       (unsigned long long)slowest);
	printf("%s: %llu runs, %llu see-only; TCPOFOQueue %lld, dropped %lld\n",
	       __func__, (unsigned long long)st.runs,
	       (unsigned long long)st.see_only, ofo, nomem ? drops : 0);
	ASSERT_EQ(st.bytes, total * round, "bytes the program saw");
	ASSERT_EQ(st.bad, 0, "runs out of place");
	ASSERT_EQ(st.lost, 0, "runs on a lost connection");
	ASSERT_EQ(tcp_mib("TCPServeLost"), 0, "TCPServeLost");
	/* otherwise the test proved nothing of the out-of-order queue */
	ASSERT_GT(ofo, 0, "segments through the out-of-order queue");
	ASSERT_GT(st.see_only, 0, "see-only runs from it");
	if (nomem)
		ASSERT_EQ(injected, 2, "rounds with failures injected");
out:
	if (nomem)
		failslab(0);
	if (th) {
		shutdown(w.fd, SHUT_RDWR);
		pthread_join(thread, NULL);
	}
	if (netem)
		system(TC_QDISC "del dev lo root");
	free(buf);
	free(got);
	close_fd(w.fd);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

static void test_tcp_reorder(void)
{
	tcp_stream(false);
}

static void test_tcp_reorder_nomem(void)
{
	tcp_stream(true);
}

/* TCP options as TCP_REPAIR_OPTIONS names them (include/net/tcp.h). */
#ifndef TCPOPT_MSS
#define TCPOPT_MSS		2
#endif
#ifndef TCPOPT_WINDOW
#define TCPOPT_WINDOW		3
#endif
#ifndef TCPOPT_TIMESTAMP
#define TCPOPT_TIMESTAMP	8
#endif

/* One of @fd's repair queues' sequence numbers (TCP_QUEUE_SEQ). */
static bool repair_seq(int fd, int queue, __u32 *seq, bool set)
{
	socklen_t len = sizeof(*seq);

	if (!ASSERT_OK(setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &queue,
				  sizeof(queue)), "TCP_REPAIR_QUEUE"))
		return false;
	if (set)
		return ASSERT_OK(setsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, seq,
					    sizeof(*seq)), "set TCP_QUEUE_SEQ");
	return ASSERT_OK(getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, seq, &len),
			 "get TCP_QUEUE_SEQ");
}

/*
 * A client connection rebuilt with TCP_REPAIR in place of @*cli, its send
 * sequence @back bytes behind where @*cli had got to, so that the next
 * bytes it sends overlap @back bytes the server has received already.
 * The old socket is closed in repair mode: no FIN, no RST.
 */
static bool rewind_client(int *cli, __u32 back)
{
	struct sockaddr_storage local, peer;
	socklen_t llen = sizeof(local), plen = sizeof(peer), len;
	struct tcp_repair_window win;
	struct tcp_repair_opt opts[3];
	__u32 snd, rcv, ts, mss;
	int one = 1, off = TCP_REPAIR_OFF_NO_WP, fd = -1;
	struct tcp_info ti;

	get_tcp_info(*cli, &ti);
	if (!ASSERT_OK(getsockname(*cli, (void *)&local, &llen), "getsockname") ||
	    !ASSERT_OK(getpeername(*cli, (void *)&peer, &plen), "getpeername") ||
	    !ASSERT_OK(setsockopt(*cli, IPPROTO_TCP, TCP_REPAIR, &one,
				  sizeof(one)), "TCP_REPAIR on") ||
	    !repair_seq(*cli, TCP_SEND_QUEUE, &snd, false) ||
	    !repair_seq(*cli, TCP_RECV_QUEUE, &rcv, false))
		return false;
	len = sizeof(win);
	if (!ASSERT_OK(getsockopt(*cli, IPPROTO_TCP, TCP_REPAIR_WINDOW, &win,
				  &len), "get TCP_REPAIR_WINDOW"))
		return false;
	len = sizeof(ts);
	if (!ASSERT_OK(getsockopt(*cli, IPPROTO_TCP, TCP_TIMESTAMP, &ts, &len),
		       "get TCP_TIMESTAMP"))
		return false;
	len = sizeof(mss);
	if (!ASSERT_OK(getsockopt(*cli, IPPROTO_TCP, TCP_MAXSEG, &mss, &len),
		       "get TCP_MAXSEG"))
		return false;
	close(*cli);
	*cli = -1;

	fd = socket(local.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!ASSERT_OK_FD(fd, "socket"))
		return false;
	timeouts(fd, 10);
	snd -= back;
	opts[0] = (struct tcp_repair_opt){ TCPOPT_MSS, mss };
	opts[1] = (struct tcp_repair_opt){
		TCPOPT_WINDOW, ti.tcpi_snd_wscale | ti.tcpi_rcv_wscale << 16 };
	opts[2] = (struct tcp_repair_opt){ TCPOPT_TIMESTAMP, 0 };
	if (!ASSERT_OK(setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &one,
				  sizeof(one)), "TCP_REPAIR on (new)") ||
	    !ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				  sizeof(one)), "SO_REUSEADDR") ||
	    !repair_seq(fd, TCP_SEND_QUEUE, &snd, true) ||
	    !repair_seq(fd, TCP_RECV_QUEUE, &rcv, true) ||
	    !ASSERT_OK(bind(fd, (void *)&local, llen), "bind") ||
	    !ASSERT_OK(connect(fd, (void *)&peer, plen), "connect (repair)") ||
	    !ASSERT_OK(setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_OPTIONS, opts,
				  sizeof(opts)), "TCP_REPAIR_OPTIONS") ||
	    !ASSERT_OK(setsockopt(fd, IPPROTO_TCP, TCP_TIMESTAMP, &ts,
				  sizeof(ts)), "set TCP_TIMESTAMP") ||
	    !ASSERT_OK(setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_WINDOW, &win,
				  sizeof(win)), "set TCP_REPAIR_WINDOW") ||
	    !ASSERT_OK(setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &off,
				  sizeof(off)), "TCP_REPAIR off")) {
		close(fd);
		return false;
	}
	*cli = fd;
	return true;
}

/*
 * A segment that overlaps bytes already received (a retransmission after
 * a lost ACK, collapsed with new bytes) runs the program on its new bytes
 * only, see-only, and the connection is not lost: the client is rebuilt
 * with TCP_REPAIR 100 bytes behind, and sends them again with 1000 new
 * ones in one segment.  The server must have acknowledged the overlap
 * as a duplicate (TCPDSACKOldSent), or the test proved nothing.
 */
static void test_tcp_overlap(void)
{
	const size_t first = 1000, back = 100, more = 1000;
	char buf[2000], got[1000];
	struct serve_test_stream st = {};
	int cli = -1, srv = -1, link = -1;
	struct serve_test *skel;
	long long dsack;
	__u32 zero = 0;
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = i % SERVE_TEST_STREAM_MOD;
	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, SERVE_TEST_STREAM_PORT, &cli, &srv) ||
	    !ASSERT_OK(send_all(cli, buf, first), "send") ||
	    !ASSERT_OK(recv_all(srv, got, first), "owner recv") ||
	    !ASSERT_OK(memcmp(got, buf, first), "owner read the first bytes"))
		goto out;
	/* every byte acknowledged: the rebuilt client starts from there */
	if (!wait_acked(cli, first))
		goto out;
	dsack = tcp_mib("TCPDSACKOldSent");
	if (!rewind_client(&cli, back) ||
	    !ASSERT_OK(send_all(cli, buf + first - back, back + more),
		       "send the overlap and more") ||
	    !ASSERT_OK(recv_all(srv, got, more), "owner recv") ||
	    !ASSERT_OK(memcmp(got, buf + first, more),
		       "owner read the new bytes once"))
		goto out;
	ASSERT_GT(tcp_mib("TCPDSACKOldSent"), dsack,
		  "the server saw the overlap");
	if (!ASSERT_OK(bpf_map_lookup_elem(bpf_map__fd(skel->maps.stream),
					   &zero, &st), "stream map"))
		goto out;
	ASSERT_EQ(st.bytes, first + more, "bytes the program saw");
	ASSERT_EQ(st.bad, 0, "runs out of place");
	ASSERT_GT(st.see_only, 0, "the overlapping run see-only");
	ASSERT_EQ(st.lost, 0, "runs on a lost connection");
	ASSERT_EQ(tcp_mib("TCPServeLost"), 0, "TCPServeLost");
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* Data in a Fast Open SYN reaches the owner without the program: the
 * connection is lost to it.
 */
static void test_tcp_fastopen(void)
{
	int l = -1, cli = -1, srv = -1, link = -1, qlen = 8, fd;
	struct sockaddr_storage ss;
	struct tcp_info ti;
	struct serve_test *skel;
	socklen_t len;
	char buf[5];

	/* client and server on, no cookie needed either way */
	fd = open("/proc/sys/net/ipv4/tcp_fastopen", O_WRONLY | O_CLOEXEC);
	if (!ASSERT_OK_FD(fd, "open tcp_fastopen sysctl"))
		return;
	ASSERT_EQ(write(fd, "0x207", 5), 5, "tcp_fastopen = 0x207");
	close(fd);
	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0)
		goto out;
	l = listen_on(AF_INET, SOCK_STREAM, "127.0.0.1", 8940);
	if (!ASSERT_OK_FD(l, "listen") ||
	    !ASSERT_OK(setsockopt(l, IPPROTO_TCP, TCP_FASTOPEN, &qlen,
				  sizeof(qlen)), "TCP_FASTOPEN"))
		goto out;
	cli = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!ASSERT_OK_FD(cli, "socket"))
		goto out;
	timeouts(cli, 10);
	len = mkaddr(AF_INET, "127.0.0.1", 8940, &ss);
	if (!ASSERT_EQ(sendto(cli, "hello", 5, MSG_FASTOPEN, (void *)&ss, len),
		       5, "sendto(MSG_FASTOPEN)"))
		goto out;
	srv = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (!ASSERT_OK_FD(srv, "accept"))
		goto out;
	timeouts(srv, 10);
	if (!ASSERT_OK(recv_all(srv, buf, 5), "owner recv SYN data") ||
	    !ASSERT_STRNEQ(buf, "hello", 5, "SYN data"))
		goto out;
	get_tcp_info(cli, &ti);
	if (!ASSERT_TRUE(ti.tcpi_options & TCPI_OPT_SYN_DATA,
			 "data went in the SYN"))
		goto out;
	ownr_to_owner(skel, cli, srv, 1, "connection lost to the program");
out:
	close_fd(l);
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* An int socket option's value (TCP_SERVE, UDP_SERVE), or -errno. */
static int int_opt(int fd, int level, int name)
{
	socklen_t len = sizeof(int);
	int v = -1;

	if (getsockopt(fd, level, name, &v, &len))
		return -errno;
	return v;
}

/*
 * The hook runs only on sockets that opted in (TCP_SERVE): not on the
 * connection of a listener that did not, until that socket opts in; it
 * is then lost to the program, which missed its first bytes.  A listener
 * that opts in passes it to its children.
 */
static void test_tcp_opt_in(void)
{
	int l = -1, cli = -1, srv = -1, link = -1, zero = 0, one = 1;
	struct serve_test *skel;
	char buf[8];

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0)
		goto out;
	l = listen_on(AF_INET, SOCK_STREAM, "127.0.0.1", 8950);
	if (!ASSERT_OK_FD(l, "listen") ||
	    !ASSERT_EQ(int_opt(l, IPPROTO_TCP, TCP_SERVE), 1, "listener opted in") ||
	    !ASSERT_OK(setsockopt(l, IPPROTO_TCP, TCP_SERVE, &zero, sizeof(zero)),
		       "listener opts out"))
		goto out;
	cli = connect_to(AF_INET, "127.0.0.1", 8950);
	if (!ASSERT_OK_FD(cli, "connect"))
		goto out;
	srv = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (!ASSERT_OK_FD(srv, "accept"))
		goto out;
	timeouts(srv, 10);
	ASSERT_EQ(int_opt(srv, IPPROTO_TCP, TCP_SERVE), 0,
		  "child of a listener that opted out");
	if (!ASSERT_OK(send_all(cli, "PING0001", 8), "send PING") ||
	    !ASSERT_OK(recv_all(srv, buf, 8), "owner recv"))
		goto out;
	ASSERT_STRNEQ(buf, "PING0001", 8, "owner got the request");
	ASSERT_EQ(stat_get(skel, SERVE_TEST_STAT_RUNS), 0,
		  "program runs on a socket that did not opt in");

	if (!ASSERT_OK(setsockopt(srv, IPPROTO_TCP, TCP_SERVE, &one, sizeof(one)),
		       "accepted socket opts in") ||
	    !ASSERT_EQ(int_opt(srv, IPPROTO_TCP, TCP_SERVE), 1, "opted in"))
		goto out;
	if (!ownr_to_owner(skel, cli, srv, 1,
			   "late opt-in: the connection is lost to the program"))
		goto out;
	close(cli);
	close(srv);
	srv = -1;

	if (!ASSERT_OK(setsockopt(l, IPPROTO_TCP, TCP_SERVE, &one, sizeof(one)),
		       "listener opts in"))
		goto out;
	cli = connect_to(AF_INET, "127.0.0.1", 8950);
	if (!ASSERT_OK_FD(cli, "connect"))
		goto out;
	srv = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (!ASSERT_OK_FD(srv, "accept"))
		goto out;
	ASSERT_EQ(int_opt(srv, IPPROTO_TCP, TCP_SERVE), 1, "child inherits the opt-in");
	ASSERT_EQ(int_opt(cli, IPPROTO_TCP, TCP_SERVE), 0,
		  "client socket did not opt in");
	ASSERT_TRUE(ownr_answered(cli), "answered on the child");
out:
	close_fd(l);
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/*
 * A UDP server on the wildcard address of @family, port @port, and a
 * client socket; *@ss, *@len: the server's address @dst.
 */
static bool udp_pair(int family, const char *dst, int port, int *srv,
		     int *cli, struct sockaddr_storage *ss, socklen_t *len)
{
	const char *any = family == AF_INET6 ? "::" : "0.0.0.0";

	*srv = listen_on(family, SOCK_DGRAM, any, port);
	if (!ASSERT_OK_FD(*srv, "bind"))
		return false;
	timeouts(*srv, 5);
	*cli = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (!ASSERT_OK_FD(*cli, "socket"))
		return false;
	timeouts(*cli, 5);
	*len = mkaddr(family, dst, port, ss);
	return true;
}

/*
 * The 4-byte @req sent from @cli is answered with a datagram of @n bytes
 * that begins with the @wlen (at most 64) bytes at @want.
 */
static bool udp_answered_n(int cli, const struct sockaddr_storage *ss,
			   socklen_t len, const char *req, const void *want,
			   size_t wlen, ssize_t n)
{
	char buf[64];

	if (!ASSERT_LE(wlen, sizeof(buf), "bytes to compare") ||
	    !ASSERT_EQ(sendto(cli, req, 4, 0, (const void *)ss, len), 4, req) ||
	    !ASSERT_EQ(recv(cli, buf, sizeof(buf), MSG_TRUNC), n,
		       "reply length"))
		return false;
	return ASSERT_OK(memcmp(buf, want, wlen), "reply bytes");
}

/* The 4-byte @req sent from @cli is answered with the @n bytes at @want. */
static bool udp_answered(int cli, const struct sockaddr_storage *ss,
			 socklen_t len, const char *req, const void *want,
			 ssize_t n)
{
	return udp_answered_n(cli, ss, len, req, want, n, n);
}

/* @msg sent from @cli reaches the owner @srv as it was sent. */
static bool udp_to_owner(int cli, int srv, const struct sockaddr_storage *ss,
			 socklen_t len, const char *msg)
{
	ssize_t want = strlen(msg), n;
	char buf[64];

	if (!ASSERT_EQ(sendto(cli, msg, want, 0, (const void *)ss, len), want,
		       msg))
		return false;
	n = recv(srv, buf, sizeof(buf), 0);
	if (!ASSERT_EQ(n, want, "owner's datagram length"))
		return false;
	ASSERT_STRNEQ(buf, msg, want, "owner's datagram");
	return true;
}

static void udp_tx(int family)
{
	const char *dst = family == AF_INET6 ? "::1" : "127.0.0.2";
	int srv = -1, cli = -1, link = -1, port = 9000 + family;
	static struct serve_test_kbuf kb;
	struct sockaddr_storage ss, from;
	struct serve_test *skel;
	socklen_t len, fl = sizeof(from);
	char buf[64];
	ssize_t n;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_udp, attach_udp);
	if (link < 0)
		goto out;
	if (!udp_pair(family, dst, port, &srv, &cli, &ss, &len))
		goto out;

	/* TX: from the address the request was sent to. */
	if (!ASSERT_EQ(sendto(cli, "PING-udp", 8, 0, (void *)&ss, len), 8,
		       "send PING"))
		goto out;
	n = recvfrom(cli, buf, sizeof(buf), 0, (void *)&from, &fl);
	if (!ASSERT_EQ(n, 8, "reply length"))
		goto out;
	ASSERT_STRNEQ(buf, "PONG-udp", 8, "reply");
	ASSERT_EQ(fl, len, "reply address length");
	ASSERT_OK(memcmp(&from, &ss, len),
		  "reply from the request's destination address and port");

	/* A reply from a buffer (bpf_serve_reply() builds the datagram). */
	if (!kbuf_fill(skel, &kb) ||
	    !udp_answered(cli, &ss, len, "KB\x00\x30", kb.b, 48))
		goto out;

	/* Two replies in a run: the second is refused, the first sent. */
	if (!udp_answered(cli, &ss, len, "KTWO", kb.b, 4))
		goto out;
	ASSERT_EQ(kret_get(skel, 1), -EBUSY, "second bpf_serve_reply()");

	/* Given, then PASS: dropped; the owner gets the request intact. */
	if (!udp_to_owner(cli, srv, &ss, len, "KPAS"))
		goto out;
	ASSERT_LT(recv(cli, buf, sizeof(buf), MSG_DONTWAIT), 0,
		  "client got the withdrawn reply");

	/* DROP: nobody sees anything, once the program has dropped it. */
	if (!ASSERT_EQ(sendto(cli, "DROP-udp", 8, 0, (void *)&ss, len), 8,
		       "send DROP") ||
	    !wait_stat(skel, SERVE_DROP, 1))
		goto out;
	n = recv(srv, buf, sizeof(buf), MSG_DONTWAIT);
	ASSERT_TRUE(n < 0 && errno == EAGAIN, "owner got nothing of DROP");
	ASSERT_LT(recv(cli, buf, sizeof(buf), MSG_DONTWAIT), 0,
		  "client got no reply to DROP");

	/* PASS: the owner gets the datagram unchanged (and nothing before). */
	if (!udp_to_owner(cli, srv, &ss, len, "hello-udp"))
		goto out;
	ASSERT_EQ(stat_get(skel, SERVE_TX), 3, "TX verdicts (PING, KB, KTWO)");
	ASSERT_EQ(stat_get(skel, SERVE_DROP), 1, "DROP verdicts");
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* Run the enroll_udp iterator over this namespace's UDP sockets. */
static bool udp_enroll(struct serve_test *skel, int port)
{
	struct bpf_link *link;
	char buf[64];
	int fd;

	skel->bss->enroll_port = port;
	skel->bss->enrolled = 0;
	link = bpf_program__attach_iter(skel->progs.enroll_udp, NULL);
	if (!ASSERT_OK_PTR(link, "attach iter/udp"))
		return false;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (ASSERT_OK_FD(fd, "iter create")) {
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
	bpf_link__destroy(link);
	return fd >= 0;
}

/*
 * The hook runs only on UDP sockets that opted in: with UDP_SERVE, or
 * enrolled by an iterator through bpf_serve_udp_enroll().  Not on the
 * client's socket (the answers it receives), not on UDP-Lite.
 */
static void test_udp_opt_in(void)
{
	int srv = -1, cli = -1, lite = -1, link = -1, zero = 0, one = 1;
	struct sockaddr_storage ss;
	struct serve_test *skel;
	socklen_t len;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_udp, attach_udp);
	if (link < 0 ||
	    !udp_pair(AF_INET, "127.0.0.1", 9070, &srv, &cli, &ss, &len))
		goto out;
	ASSERT_EQ(int_opt(srv, SOL_UDP, UDP_SERVE), 1, "server opted in");
	ASSERT_EQ(int_opt(cli, SOL_UDP, UDP_SERVE), 0, "client did not opt in");
	if (!udp_answered(cli, &ss, len, "PING", "PONG", 4))
		goto out;
	ASSERT_EQ(stat_get(skel, SERVE_TEST_STAT_RUNS), 1,
		  "runs: the request, not the answer the client received");

	if (!ASSERT_OK(setsockopt(srv, SOL_UDP, UDP_SERVE, &zero, sizeof(zero)),
		       "server opts out") ||
	    !ASSERT_EQ(int_opt(srv, SOL_UDP, UDP_SERVE), 0, "opted out") ||
	    !udp_to_owner(cli, srv, &ss, len, "PING"))
		goto out;
	ASSERT_EQ(stat_get(skel, SERVE_TEST_STAT_RUNS), 1,
		  "program runs on a socket that opted out");

	/* A socket the iterator enrolls, as libxps does for a service. */
	if (!udp_enroll(skel, 9070))
		goto out;
	ASSERT_EQ(skel->bss->enrolled, 1, "sockets the iterator enrolled");
	ASSERT_EQ(int_opt(srv, SOL_UDP, UDP_SERVE), 1, "enrolled by the iterator");
	ASSERT_EQ(int_opt(cli, SOL_UDP, UDP_SERVE), 0, "client left alone");
	if (!udp_answered(cli, &ss, len, "PING", "PONG", 4))
		goto out;

	lite = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDPLITE);
	if (ASSERT_OK_FD(lite, "UDP-Lite socket")) {
		ASSERT_ERR(setsockopt(lite, SOL_UDP, UDP_SERVE, &one,
				      sizeof(one)), "UDP-Lite opts in");
		ASSERT_EQ(errno, ENOPROTOOPT, "UDP-Lite's errno");
	}
out:
	close_fd(lite);
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

static void test_udp_tx_v4(void)
{
	udp_tx(AF_INET);
}

static void test_udp_tx_v6(void)
{
	udp_tx(AF_INET6);
}

/*
 * A reply the stack fails to send (here a TC egress program drops it, so
 * that the send returns NET_XMIT_DROP) leaves the request to the owner,
 * instead of consuming it with nobody answering.
 */
static void udp_send_fails(int family)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = 1,
		    .attach_point = BPF_TC_EGRESS);
	LIBBPF_OPTS(bpf_tc_opts, tc);
	const char *dst = family == AF_INET6 ? "::1" : "127.0.0.1";
	int srv = -1, cli = -1, link = -1, port = 9100 + family;
	struct sockaddr_storage ss;
	struct serve_test *skel;
	bool hooked = false;
	socklen_t len;
	char buf[64];

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_udp, attach_udp);
	if (link < 0)
		goto out;
	if (!udp_pair(family, dst, port, &srv, &cli, &ss, &len))
		goto out;
	if (!udp_answered(cli, &ss, len, "PING", "PONG", 4))
		goto out;

	skel->bss->drop_port = port;
	if (!ASSERT_OK(bpf_tc_hook_create(&hook), "clsact on lo"))
		goto out;
	hooked = true;
	tc.prog_fd = bpf_program__fd(skel->progs.drop_replies);
	if (!ASSERT_OK(bpf_tc_attach(&hook, &tc), "drop_replies on lo egress"))
		goto out;
	if (!udp_to_owner(cli, srv, &ss, len, "PING-lost"))
		goto out;
	ASSERT_LT(recv(cli, buf, sizeof(buf), MSG_DONTWAIT), 0,
		  "client got a reply");
	ASSERT_EQ(stat_get(skel, SERVE_TX), 2, "TX verdicts (both PINGs)");
out:
	if (hooked) {
		hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
		bpf_tc_hook_destroy(&hook);
	}
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

static void test_udp_send_fails_v4(void)
{
	udp_send_fails(AF_INET);
}

static void test_udp_send_fails_v6(void)
{
	udp_send_fails(AF_INET6);
}

/* A request from port 0 cannot be answered: the owner gets it. */
static void test_udp_port_zero(void)
{
	int srv = -1, raw = -1, link = -1, port = 9150;
	struct sockaddr_storage ss, from;
	socklen_t len, fl = sizeof(from);
	struct serve_test *skel;
	struct {
		__be16 source, dest, len, check;
		char data[8];
	} dg = { .data = "PING-p0!" };
	char buf[64];
	ssize_t n;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_udp, attach_udp);
	if (link < 0)
		goto out;
	srv = listen_on(AF_INET, SOCK_DGRAM, "0.0.0.0", port);
	if (!ASSERT_OK_FD(srv, "bind"))
		goto out;
	timeouts(srv, 5);
	/* The kernel builds the IP header; no UDP checksum (0) on IPv4. */
	raw = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_UDP);
	if (!ASSERT_OK_FD(raw, "raw socket"))
		goto out;
	dg.dest = htons(port);
	dg.len = htons(sizeof(dg));
	len = mkaddr(AF_INET, "127.0.0.1", 0, &ss);
	if (!ASSERT_EQ(sendto(raw, &dg, sizeof(dg), 0, (void *)&ss, len),
		       (ssize_t)sizeof(dg), "send from port 0"))
		goto out;
	n = recvfrom(srv, buf, sizeof(buf), 0, (void *)&from, &fl);
	if (!ASSERT_EQ(n, 8, "owner's datagram length"))
		goto out;
	ASSERT_STRNEQ(buf, "PING-p0!", 8, "owner got the request intact");
	ASSERT_EQ(ntohs(((struct sockaddr_in *)&from)->sin_port), 0,
		  "from port 0");
	ASSERT_EQ(stat_get(skel, SERVE_TX), 1, "TX verdict");
out:
	close_fd(raw);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* Runs ip(8) with the arguments @fmt makes.  Return: system()'s. */
static int ip_cmd(const char *fmt, ...)
{
	char args[256], cmd[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "PATH=$PATH:/usr/sbin:/sbin ip %s", args);
	return system(cmd);
}

/*
 * lo's local route to its address with an MTU of 1280, then without, for
 * IPv4 and IPv6.  IPv6 routes added from user space take metric 1024, so
 * the kernel's (metric 0) is deleted first rather than replaced.
 */
static const char *const local_route_mtu[] = {
	"-4 route replace local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 mtu 1280",
	"-6 route add local ::1 dev lo table local mtu 1280",
};

static const char *const local_route[] = {
	"-4 route replace local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1",
	"-6 route replace local ::1 dev lo table local",
};

/* "BIG2" from @cli is answered in the kernel: 2048 bytes, "BIGR" first. */
static bool udp_big_answered(int cli, const struct sockaddr_storage *ss,
			     socklen_t len)
{
	return udp_answered_n(cli, ss, len, "BIG2", "BIGR", 4, 2048);
}

/*
 * The socket keeps the route of its last reply: a route that changed is
 * looked up again (here the local route's MTU drops below the reply's
 * length, so the owner answers, then comes back), and a route that may
 * depend on more than the addresses is never taken from the cache (a
 * routing rule refuses replies to one client's port only: that client's
 * request goes to the owner while the other's is answered).
 */
static void udp_route_cache(int family)
{
	const bool v6 = family == AF_INET6;
	const char *dst = v6 ? "::1" : "127.0.0.1", *fam = v6 ? "-6" : "-4";
	int srv = -1, cli = -1, cli2 = -1, link = -1, port = 9190 + family;
	int cport = 41000 + family;
	struct sockaddr_storage ss, cs;
	struct serve_test *skel;
	socklen_t len, cl;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_udp, attach_udp);
	if (link < 0 || !udp_pair(family, dst, port, &srv, &cli, &ss, &len) ||
	    !udp_big_answered(cli, &ss, len) ||
	    !udp_big_answered(cli, &ss, len))
		goto out;

	if ((v6 && !ASSERT_OK(ip_cmd("-6 route del local ::1 table local"),
			      "kernel's local route deleted")) ||
	    !ASSERT_OK(ip_cmd("%s", local_route_mtu[v6]),
		       "local route's MTU to 1280") ||
	    !udp_to_owner(cli, srv, &ss, len, "BIG2"))
		goto out;
	if (!ASSERT_OK(ip_cmd("%s", local_route[v6]), "local route's MTU back") ||
	    !udp_big_answered(cli, &ss, len))
		goto out;

	cli2 = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (!ASSERT_OK_FD(cli2, "second client"))
		goto out;
	timeouts(cli2, 5);
	cl = mkaddr(family, dst, cport, &cs);
	if (!ASSERT_OK(bind(cli2, (void *)&cs, cl), "bind second client"))
		goto out;
	/* ahead of the local table's rule, which moves from 0 to 100 */
	if (!ASSERT_OK(ip_cmd("%s rule add to %s ipproto udp dport %d prohibit pref 10",
			      fam, dst, cport), "rule refusing the second client") ||
	    !ASSERT_OK(ip_cmd("%s rule add lookup local pref 100", fam),
		       "local table's rule moved") ||
	    !ASSERT_OK(ip_cmd("%s rule del pref 0", fam), "local table's rule at 0") ||
	    !udp_answered(cli, &ss, len, "PING", "PONG", 4) ||
	    !udp_to_owner(cli2, srv, &ss, len, "PING") ||
	    !udp_answered(cli, &ss, len, "PING", "PONG", 4))
		goto out;
	ASSERT_EQ(stat_get(skel, SERVE_TX), 7, "TX verdicts (the owner's two too)");
out:
	close_fd(cli2);
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

static void test_udp_route_cache_v4(void)
{
	udp_route_cache(AF_INET);
}

static void test_udp_route_cache_v6(void)
{
	udp_route_cache(AF_INET6);
}

/*
 * A datagram needs no memory to be seen: with the next allocation that
 * may not sleep failing, it still reaches the program, and is answered
 * or, when the failure hit the reply, passed to the owner intact; never
 * dropped for want of memory (Udp MemErrors).
 */
static void test_udp_nomem(void)
{
	int srv = -1, cli = -1, link = -1, i;
	long long mem0, refused0, passed = 0;
	struct sockaddr_storage ss;
	struct serve_test *skel;
	bool replied, owner;
	char buf[64];
	socklen_t len;
	__u64 runs0;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_udp, attach_udp);
	if (link < 0 ||
	    !udp_pair(AF_INET, "127.0.0.1", 9170, &srv, &cli, &ss, &len) ||
	    !udp_answered(cli, &ss, len, "PING", "PONG", 4))
		goto out;
	mem0 = udp_mib("MemErrors");
	refused0 = udp_mib("ServeRefused");
	if (!ASSERT_GE(mem0, 0, "Udp MemErrors") ||
	    !ASSERT_GE(refused0, 0, "Udp ServeRefused"))
		goto out;
	for (i = 0; i < SERVE_FAILSLAB_TRIES; i++) {
		runs0 = stat_get(skel, SERVE_TEST_STAT_RUNS);
		if (!failslab(1))
			goto out;
		if (!ASSERT_EQ(sendto(cli, "PING", 4, 0, (void *)&ss, len), 4,
			       "sendto")) {
			failslab(0);
			goto out;
		}
		replied = readable(cli, 500) &&
			  recv(cli, buf, sizeof(buf), 0) == 4 &&
			  !memcmp(buf, "PONG", 4);
		failslab(0);
		owner = readable(srv, 200);
		if (owner) {
			passed++;
			if (!ASSERT_EQ(recv(srv, buf, sizeof(buf), 0), 4,
				       "owner's datagram") ||
			    !ASSERT_STRNEQ(buf, "PING", 4, "owner's datagram"))
				goto out;
		}
		if (!ASSERT_NEQ(replied, owner, "answered or passed") ||
		    !ASSERT_EQ(stat_get(skel, SERVE_TEST_STAT_RUNS) - runs0, 1,
			       "the program saw the datagram"))
			goto out;
	}
	ASSERT_EQ(udp_mib("MemErrors") - mem0, 0,
		  "datagrams dropped for want of memory");
	ASSERT_EQ(udp_mib("ServeRefused") - refused0, passed,
		  "replies refused: the datagrams passed");
	udp_answered(cli, &ss, len, "PING", "PONG", 4);
out:
	failslab(0);
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/*
 * What the tracepoints of @proto (0: tcp:tcp_serve_run, 1: udp:udp_serve_run)
 * counted agrees with the MIB counters @mib reads (@prefix: "TCPServe" or
 * "Serve"): every run, the verdicts carried out, and the refused ones (the
 * program's verdict not carried out).
 */
static void trace_agrees(struct serve_test *skel, int proto,
			 long long (*mib)(const char *), const char *prefix)
{
	static const char *const names[] = {
		[SERVE_DROP] = "Drop", [SERVE_TX] = "Answer", [SERVE_RESET] = "Reset",
	};
	long long runs = 0, by[SERVE_VERDICT_MAX + 1] = {}, refused = 0;
	char name[32];
	int p, v;

	for (p = 0; p <= SERVE_VERDICT_MAX; p++)
		for (v = 0; v <= SERVE_VERDICT_MAX; v++) {
			long long n = skel->bss->trace_runs[proto][p][v];

			runs += n;
			by[v] += n;
			if (p != v)
				refused += n;
		}
	snprintf(name, sizeof(name), "%sRun", prefix);
	ASSERT_EQ(runs, mib(name), "tracepoint events: runs");
	snprintf(name, sizeof(name), "%sRefused", prefix);
	ASSERT_EQ(refused, mib(name), "tracepoint events: refused");
	for (v = SERVE_DROP; v <= SERVE_RESET; v++) {
		/* UDP carries SERVE_RESET out as SERVE_DROP: no such counter */
		if (proto && v == SERVE_RESET) {
			ASSERT_EQ(by[v], 0, "tracepoint events: UDP resets");
			continue;
		}
		snprintf(name, sizeof(name), "%s%s", prefix, names[v]);
		ASSERT_EQ(by[v], mib(name), name);
	}
}

/*
 * The namespace's MIB counters (TcpExt TCPServe*, Udp Serve*) count the runs,
 * answers, drops, resets, refused verdicts and lost connections; the
 * tracepoints tcp:tcp_serve_run and udp:udp_serve_run see the same runs.
 */
static void test_mib_counters(void)
{
	int cli = -1, srv = -1, link = -1, ulink = -1, ucli = -1, usrv = -1;
	struct bpf_link *ttrace = NULL, *utrace = NULL;
	struct sockaddr_storage ss;
	struct serve_test *skel;
	socklen_t len;
	char buf[8];

	skel = serve_load();
	if (!skel)
		return;
	ttrace = bpf_program__attach(skel->progs.trace_tcp_run);
	utrace = bpf_program__attach(skel->progs.trace_udp_run);
	if (!ASSERT_OK_PTR(ttrace, "attach tp_btf/tcp_serve_run") ||
	    !ASSERT_OK_PTR(utrace, "attach tp_btf/udp_serve_run"))
		goto out;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0 || !tcp_pair(AF_INET, 8990, &cli, &srv) ||
	    !ping(cli, 1) ||
	    !ASSERT_OK(send_all(cli, "DROP", 4), "send DROP") ||
	    !ASSERT_OK(send_all(cli, "pass", 4), "send pass") ||
	    !ASSERT_OK(recv_all(srv, buf, 4), "owner recv") ||
	    !ASSERT_STRNEQ(buf, "pass", 4, "owner got what passed"))
		goto out;
	/* On urgent data the run is see-only: its SERVE_TX is refused, and
	 * the connection is lost to the program.
	 */
	if (!ASSERT_EQ(send(cli, "PING", 4, MSG_OOB), 4, "send(MSG_OOB)") ||
	    !ASSERT_OK(recv_all(srv, buf, 3), "owner recv in band"))
		goto out;
	ASSERT_EQ(tcp_mib("TCPServeRun"), 4, "TCPServeRun");
	ASSERT_EQ(tcp_mib("TCPServeAnswer"), 1, "TCPServeAnswer");
	ASSERT_EQ(tcp_mib("TCPServeDrop"), 1, "TCPServeDrop");
	ASSERT_EQ(tcp_mib("TCPServeRefused"), 1, "TCPServeRefused");
	ASSERT_EQ(tcp_mib("TCPServeLost"), 1, "TCPServeLost");
	ASSERT_EQ(tcp_mib("TCPServeReset"), 0, "TCPServeReset before RST!");
	close_fd(cli);
	close_fd(srv);
	if (!tcp_pair(AF_INET, 8991, &cli, &srv) ||
	    !ASSERT_OK(send_all(cli, "RST!", 4), "send RST!") ||
	    !ASSERT_EQ(recv(cli, buf, sizeof(buf), 0), -1, "reset"))
		goto out;
	ASSERT_EQ(tcp_mib("TCPServeReset"), 1, "TCPServeReset");
	trace_agrees(skel, 0, tcp_mib, "TCPServe");
	/* the urgent PING: the program's SERVE_TX, carried out as SERVE_PASS */
	ASSERT_EQ(skel->bss->trace_runs[0][SERVE_TX][SERVE_PASS], 1,
		  "tcp:tcp_serve_run of the refused SERVE_TX");

	ulink = serve_link(skel->progs.serve_udp, attach_udp);
	if (ulink < 0 ||
	    !udp_pair(AF_INET, "127.0.0.1", 9180, &usrv, &ucli, &ss, &len) ||
	    !udp_answered(ucli, &ss, len, "PING", "PONG", 4) ||
	    !ASSERT_EQ(sendto(ucli, "DROP", 4, 0, (void *)&ss, len), 4,
		       "sendto DROP") ||
	    !udp_to_owner(ucli, usrv, &ss, len, "pass"))
		goto out;
	/* not the PONG at the client, which did not opt in */
	ASSERT_EQ(udp_mib("ServeRun"), 3, "Udp ServeRun");
	ASSERT_EQ(udp_mib("ServeAnswer"), 1, "Udp ServeAnswer");
	ASSERT_EQ(udp_mib("ServeDrop"), 1, "Udp ServeDrop");
	ASSERT_EQ(udp_mib("ServeRefused"), 0, "Udp ServeRefused");
	trace_agrees(skel, 1, udp_mib, "Serve");
out:
	bpf_link__destroy(ttrace);
	bpf_link__destroy(utrace);
	close_fd(cli);
	close_fd(srv);
	close_fd(ucli);
	close_fd(usrv);
	close_fd(link);
	close_fd(ulink);
	serve_test__destroy(skel);
}

/* IPv4 clients of a dual-stack IPv6 socket (v4-mapped), TCP and UDP. */
static void test_v4mapped(void)
{
	int l = -1, cli = -1, srv = -1, u = -1, ucli = -1, i;
	int link_tcp = -1, link_udp = -1;
	struct sockaddr_storage ss, from;
	socklen_t len, fl = sizeof(from);
	struct serve_test *skel;
	char buf[16];
	ssize_t n;

	skel = serve_load();
	if (!skel)
		return;
	link_tcp = serve_link(skel->progs.serve_tcp, attach_tcp);
	link_udp = serve_link(skel->progs.serve_udp, attach_udp);
	if (link_tcp < 0 || link_udp < 0)
		goto out;
	l = listen_on(AF_INET6, SOCK_STREAM, "::", 8060);
	if (!ASSERT_OK_FD(l, "listen on [::]"))
		goto out;
	cli = connect_to(AF_INET, "127.0.0.1", 8060);
	if (!ASSERT_OK_FD(cli, "connect"))
		goto out;
	srv = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (!ASSERT_OK_FD(srv, "accept"))
		goto out;
	for (i = 0; i < 10; i++)
		if (!ping(cli, i))
			goto out;
	ASSERT_EQ(inq(srv), 0, "owner's queued bytes");

	u = listen_on(AF_INET6, SOCK_DGRAM, "::", 9060);
	if (!ASSERT_OK_FD(u, "bind UDP [::]"))
		goto out;
	ucli = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (!ASSERT_OK_FD(ucli, "socket"))
		goto out;
	timeouts(ucli, 5);
	len = mkaddr(AF_INET, "127.0.0.3", 9060, &ss);
	if (!ASSERT_EQ(sendto(ucli, "PING-map", 8, 0, (void *)&ss, len), 8,
		       "send UDP PING"))
		goto out;
	n = recvfrom(ucli, buf, sizeof(buf), 0, (void *)&from, &fl);
	if (!ASSERT_EQ(n, 8, "UDP reply length"))
		goto out;
	ASSERT_STRNEQ(buf, "PONG-map", 8, "UDP reply");
	ASSERT_EQ(fl, len, "UDP reply address length");
	ASSERT_OK(memcmp(&from, &ss, len), "UDP reply from 127.0.0.3:9060");
out:
	close_fd(l);
	close_fd(cli);
	close_fd(srv);
	close_fd(u);
	close_fd(ucli);
	close_fd(link_tcp);
	close_fd(link_udp);
	serve_test__destroy(skel);
}

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

/* Attach, swap and detach the program under traffic. */
static void test_attach_detach(void)
{
	int cli = -1, srv = -1, i, link = -1, n = 0;
	struct serve_test *x, *y = NULL;
	struct user_echo u = {};
	bool echoing = false;
	pthread_t th;

	x = serve_load();
	if (!x)
		return;
	y = serve_load();
	if (!y || !tcp_pair(AF_INET, 8700, &cli, &srv))
		goto out;
	u.fd = srv;
	if (!ASSERT_OK(pthread_create(&th, NULL, user_echo, &u),
		       "pthread_create"))
		goto out;
	echoing = true;
	for (i = 0; i < 3000; i++) {
		if (i % 50 == 0) {
			if (link < 0) {
				link = serve_link(x->progs.serve_tcp, attach_tcp);
				if (link < 0)
					goto out;
			} else if (i % 100 == 50) {
				struct bpf_program *p = n++ % 2 ?
					x->progs.serve_tcp : y->progs.serve_tcp;

				/* Swap the program under traffic, then detach. */
				if (!ASSERT_OK(bpf_link_update(link,
							       bpf_program__fd(p),
							       NULL),
					       "bpf_link_update"))
					goto out;
				close(link);
				link = -1;
			}
		}
		if (!ping(cli, i))
			goto out;
	}
	ASSERT_GT(stat_get(x, SERVE_TX) + stat_get(y, SERVE_TX), 0,
		  "requests the program answered");
	if (env.verbosity > VERBOSE_NONE)
		printf("  kernel answered %llu, service the rest\n",
		       (unsigned long long)(stat_get(x, SERVE_TX) +
					    stat_get(y, SERVE_TX)));
out:
	if (echoing) {
		__atomic_store_n(&u.stop, 1, __ATOMIC_RELAXED);
		/* the service's recv sees EOF and its thread ends */
		shutdown(cli, SHUT_RDWR);
		pthread_join(th, NULL);
	}
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(y);
	serve_test__destroy(x);
}

/* A program attached to one netns does not see another's traffic. */
static void test_netns_isolation(void)
{
	int cli = -1, srv = -1, link = -1, st;
	struct serve_test *skel;
	char buf[8];
	pid_t pid;

	skel = serve_load();
	if (!skel)
		return;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0)
		goto out;
	pid = fork();
	if (!ASSERT_GE(pid, 0, "fork"))
		goto out;
	if (pid == 0) {
		/* A service of another netns; exit status 0 when it got
		 * its request.
		 */
		if (unshare(CLONE_NEWNET) || set_lo(1, 0))
			_exit(1);
		if (!tcp_pair(AF_INET, 8800, &cli, &srv) ||
		    send_all(cli, "PING0001", 8) || recv_all(srv, buf, 8) ||
		    memcmp(buf, "PING0001", 8))
			_exit(1);
		_exit(0);
	}
	if (!ASSERT_EQ(waitpid(pid, &st, 0), pid, "waitpid"))
		goto out;
	ASSERT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st),
		    "the other netns' service got its request");
	ASSERT_EQ(stat_get(skel, SERVE_TEST_STAT_RUNS), 0,
		  "runs on another netns' traffic");
	if (!tcp_pair(AF_INET, 8801, &cli, &srv))
		goto out;
	ping(cli, 1);
out:
	close_fd(cli);
	close_fd(srv);
	close_fd(link);
	serve_test__destroy(skel);
}

/* Attach rules: privilege, expected attach type, one program per netns. */
static void test_permissions(void)
{
	int netns = -1, link = -1, fd, err, st;
	struct serve_test *skel;
	pid_t pid;

	skel = serve_load();
	if (!skel)
		return;
	netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (!ASSERT_OK_FD(netns, "open netns"))
		goto out;

	fd = bpf_link_create(bpf_program__fd(skel->progs.not_serve), netns,
			     attach_tcp, NULL);
	err = fd < 0 ? errno : 0;
	close_fd(fd);
	ASSERT_EQ(err, EINVAL, "sockmap program attached as BPF_SERVE_TCP");
	fd = bpf_link_create(bpf_program__fd(skel->progs.serve_tcp), netns,
			     attach_udp, NULL);
	err = fd < 0 ? errno : 0;
	close_fd(fd);
	ASSERT_EQ(err, EINVAL, "BPF_SERVE_TCP program attached as BPF_SERVE_UDP");
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0)
		goto out;
	fd = bpf_link_create(bpf_program__fd(skel->progs.serve_tcp), netns,
			     attach_tcp, NULL);
	close_fd(fd);
	ASSERT_ERR(fd, "second serve program attached to one netns");

	pid = fork();
	if (!ASSERT_GE(pid, 0, "fork"))
		goto out;
	if (pid == 0) {
		struct bpf_insn ret0[] = {
			{ .code = 0xb7, .dst_reg = 0, .imm = 0 },	/* r0 = 0 */
			{ .code = 0x95 },				/* exit */
		};
		int code = 0;

		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(10);
		fd = bpf_link_create(bpf_program__fd(skel->progs.serve_udp),
				     netns, attach_udp, NULL);
		if (!(fd < 0 && errno == EPERM))
			code |= 1;
		fd = bpf_prog_load(BPF_PROG_TYPE_SK_SKB, "u", "GPL", ret0, 2,
				   NULL);
		if (!(fd < 0 && (errno == EPERM || errno == EACCES)))
			code |= 2;
		_exit(code);
	}
	if (!ASSERT_EQ(waitpid(pid, &st, 0), pid, "waitpid"))
		goto out;
	if (!ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 10, "drop root"))
		goto out;
	ASSERT_FALSE(WEXITSTATUS(st) & 1, "unprivileged bpf_link_create not EPERM");
	ASSERT_FALSE(WEXITSTATUS(st) & 2, "unprivileged SK_SKB load succeeded");
out:
	close_fd(link);
	close_fd(netns);
	serve_test__destroy(skel);
}

/*
 * Serve programs run on the segment the owner is about to read: the
 * verifier refuses every way of writing it (a direct write, a helper that
 * writes or resizes the packet, a context write), which the same
 * instructions may do as a sockmap verdict program; reading it loads as
 * both.  Nor may a packet pointer be a kfunc's buffer (the verifier
 * checks those for writes).  An extension, which does not carry the
 * attach type, may replace a global function of a sockmap verdict
 * program but not of a serve program.
 */
static void test_read_only(void)
{
	const __s16 data = offsetof(struct __sk_buff, data);
	const __s16 data_end = offsetof(struct __sk_buff, data_end);
	const __s16 prio = offsetof(struct __sk_buff, priority);
	/*
	 * r2 = data, r3 = data_end, then the packet's first byte read or
	 * written if there is one; r0 = 0, exit.
	 */
	const struct bpf_insn reads[] = {
		{ .code = 0x61, .dst_reg = 2, .src_reg = 1, .off = data },
		{ .code = 0x61, .dst_reg = 3, .src_reg = 1, .off = data_end },
		{ .code = 0xbf, .dst_reg = 4, .src_reg = 2 },	/* r4 = r2 */
		{ .code = 0x07, .dst_reg = 4, .imm = 1 },	/* r4 += 1 */
		{ .code = 0x2d, .dst_reg = 4, .src_reg = 3, .off = 1 },
		{ .code = 0x71, .dst_reg = 5, .src_reg = 2 },	/* r5 = *r2 */
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 },
		{ .code = 0x95 },
	}, writes[] = {
		{ .code = 0x61, .dst_reg = 2, .src_reg = 1, .off = data },
		{ .code = 0x61, .dst_reg = 3, .src_reg = 1, .off = data_end },
		{ .code = 0xbf, .dst_reg = 4, .src_reg = 2 },
		{ .code = 0x07, .dst_reg = 4, .imm = 1 },
		{ .code = 0x2d, .dst_reg = 4, .src_reg = 3, .off = 1 },
		{ .code = 0x72, .dst_reg = 2, .imm = 0 },	/* *r2 = 0 */
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 },
		{ .code = 0x95 },
	}, store_bytes[] = {
		{ .code = 0x7a, .dst_reg = 10, .off = -8 },	/* fp[-8] = 0 */
		{ .code = 0xb7, .dst_reg = 2, .imm = 0 },	/* offset */
		{ .code = 0xbf, .dst_reg = 3, .src_reg = 10 },
		{ .code = 0x07, .dst_reg = 3, .imm = -8 },	/* from */
		{ .code = 0xb7, .dst_reg = 4, .imm = 1 },	/* len */
		{ .code = 0xb7, .dst_reg = 5, .imm = 0 },	/* flags */
		{ .code = 0x85, .imm = BPF_FUNC_skb_store_bytes },
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 },
		{ .code = 0x95 },
	}, change_tail[] = {
		{ .code = 0xb7, .dst_reg = 2, .imm = 1 },
		{ .code = 0xb7, .dst_reg = 3, .imm = 0 },
		{ .code = 0x85, .imm = BPF_FUNC_skb_change_tail },
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 },
		{ .code = 0x95 },
	}, ctx_write[] = {
		{ .code = 0xb7, .dst_reg = 2, .imm = 0 },
		{ .code = 0x63, .dst_reg = 1, .src_reg = 2, .off = prio },
		{ .code = 0xb7, .dst_reg = 0, .imm = 0 },
		{ .code = 0x95 },
	};
	const struct {
		const char *what;
		const struct bpf_insn *insns;
		size_t n;
		bool writes;
	} progs[] = {
		{ "packet read", reads, ARRAY_SIZE(reads), false },
		{ "direct write", writes, ARRAY_SIZE(writes), true },
		{ "bpf_skb_store_bytes", store_bytes, ARRAY_SIZE(store_bytes),
		  true },
		{ "bpf_skb_change_tail", change_tail, ARRAY_SIZE(change_tail),
		  true },
		{ "context write", ctx_write, ARRAY_SIZE(ctx_write), true },
	};
	int types[] = { attach_tcp, attach_udp, BPF_SK_SKB_STREAM_VERDICT };
	static char log[65536];
	struct serve_test *skel;
	struct bpf_program *p;
	char name[96];
	size_t i, t;
	int fd;

	for (i = 0; i < ARRAY_SIZE(progs); i++) {
		for (t = 0; t < ARRAY_SIZE(types); t++) {
			LIBBPF_OPTS(bpf_prog_load_opts, o,
				    .expected_attach_type = types[t]);
			bool serve = types[t] != BPF_SK_SKB_STREAM_VERDICT;

			fd = bpf_prog_load(BPF_PROG_TYPE_SK_SKB, "ro", "GPL",
					   progs[i].insns, progs[i].n, &o);
			snprintf(name, sizeof(name), "%s, %s", progs[i].what,
				 serve ? "serve program" : "stream verdict");
			if (serve && progs[i].writes)
				ASSERT_LT(fd, 0, name);
			else
				ASSERT_OK_FD(fd, name);
			close_fd(fd);
		}
	}

	skel = serve_test__open();
	if (!ASSERT_OK_PTR(skel, "serve_test__open"))
		return;
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, p == skel->progs.reply_pkt);
	bpf_program__set_expected_attach_type(skel->progs.reply_pkt,
					      attach_tcp);
	log[0] = 0;
	bpf_program__set_log_buf(skel->progs.reply_pkt, log, sizeof(log));
	ASSERT_ERR(serve_test__load(skel), "a packet pointer as a kfunc's buffer");
	ASSERT_OK_PTR(strstr(log, "cannot write into a serve program's packet"),
		      "the verifier's reason");
	serve_test__destroy(skel);

	skel = serve_load();
	if (!skel)
		return;
	for (t = 0; t < 2; t++) {
		struct bpf_program *target;
		struct serve_test *x;
		int err;

		x = serve_test__open();
		if (!ASSERT_OK_PTR(x, "serve_test__open"))
			break;
		bpf_object__for_each_program(p, x->obj)
			bpf_program__set_autoload(p, p == x->progs.ext_sub);
		target = t ? skel->progs.not_serve : skel->progs.serve_tcp;
		err = bpf_program__set_attach_target(x->progs.ext_sub,
						     bpf_program__fd(target),
						     "serve_sub");
		if (!err)
			err = serve_test__load(x);
		if (t)
			ASSERT_OK(err, "extension of a stream verdict's function");
		else
			ASSERT_ERR(err, "extension of a serve program's function");
		serve_test__destroy(x);
	}
	serve_test__destroy(skel);
}

/* BPF_PROG_TEST_RUN: payload in, the reply and the verdict out. */
static void test_test_run(void)
{
	struct __sk_buff ctx = {
		.family = AF_INET6,
		.local_port = 8379,
		.remote_port = htonl(40000),
		.local_ip6 = { 0, 0, 0, htonl(1) },
		.remote_ip6 = { htonl(0x20010db8), 0, 0, htonl(2) },
	};
	static struct serve_test_kbuf kb;
	static char out[16384];
	struct serve_test_seen s;
	struct serve_test *skel;
	int tcp, udp;

	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = "PING1234",
		    .data_size_in = 8, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx));

	skel = serve_load();
	if (!skel)
		return;
	tcp = bpf_program__fd(skel->progs.serve_tcp);
	udp = bpf_program__fd(skel->progs.serve_udp);
	if (!ASSERT_OK(bpf_prog_test_run_opts(tcp, &o), "test_run PING"))
		goto out;
	ASSERT_EQ(o.retval, SERVE_TX, "PING verdict");
	ASSERT_EQ(o.data_size_out, 8, "PING reply length");
	ASSERT_STRNEQ(out, "PONG1234", 8, "PING reply");
	seen_get(skel, &s);
	ASSERT_EQ(s.family, AF_INET6, "seen family");
	ASSERT_EQ(s.local_port, 8379, "seen local_port");
	ASSERT_EQ(s.remote_port, 40000, "seen remote_port");
	ASSERT_EQ(s.local_ip6[3], htonl(1), "seen local_ip6");
	ASSERT_EQ(s.remote_ip6[0], htonl(0x20010db8), "seen remote_ip6");
	ASSERT_NEQ(s.cookie, 0, "socket cookie");

	/* No connection under test_run: bpf_serve_state() is 0, OWNR answered */
	o.data_in = "OWNR";
	o.data_size_in = 4;
	o.data_size_out = sizeof(out);
	if (!ASSERT_OK(bpf_prog_test_run_opts(tcp, &o), "test_run OWNR"))
		goto out;
	ASSERT_EQ(o.retval, SERVE_TX, "OWNR verdict");
	ASSERT_STRNEQ(out, "DONE", 4, "OWNR reply");

	/* Without ctx_in the local port is 0: the program passes. */
	o.data_in = "PING";
	o.data_size_in = 4;
	o.data_size_out = sizeof(out);
	o.ctx_in = NULL;
	o.ctx_size_in = 0;
	if (!ASSERT_OK(bpf_prog_test_run_opts(tcp, &o), "test_run without ctx"))
		goto out;
	ASSERT_EQ(o.retval, SERVE_PASS, "verdict without ctx");
	ASSERT_STRNEQ(out, "PING", 4, "payload without ctx");

	o.data_in = "BIG\x0f";
	o.data_size_out = sizeof(out);
	o.ctx_in = &ctx;
	o.ctx_size_in = sizeof(ctx);
	if (!ASSERT_OK(bpf_prog_test_run_opts(tcp, &o), "test_run BIG"))
		goto out;
	ASSERT_EQ(o.retval, SERVE_TX, "BIG verdict");
	ASSERT_EQ(o.data_size_out, 15360, "BIG reply length");
	ASSERT_STRNEQ(out + 15356, "END!", 4, "BIG reply tail");

	o.data_in = "TAIL";
	o.data_size_out = sizeof(out);
	if (!ASSERT_OK(bpf_prog_test_run_opts(tcp, &o), "test_run TAIL"))
		goto out;
	ASSERT_EQ(o.retval, SERVE_TX, "TAIL verdict");
	ASSERT_EQ(o.data_size_out, 7, "TAIL reply length");
	ASSERT_STRNEQ(out, "TAIL-OK", 7, "TAIL reply");

	/* bpf_serve_reply() outside the hooks: the payload becomes the reply */
	if (!kbuf_fill(skel, &kb))
		goto out;
	o.data_in = "KB\x01\x00";
	o.data_size_out = sizeof(out);
	if (!ASSERT_OK(bpf_prog_test_run_opts(tcp, &o), "test_run KB"))
		goto out;
	ASSERT_EQ(o.retval, SERVE_TX, "KB verdict");
	ASSERT_EQ(o.data_size_out, 256, "KB reply length");
	ASSERT_OK(memcmp(out, kb.b, 256), "KB reply");

	o.data_in = "DROP";
	o.data_size_out = sizeof(out);
	if (!ASSERT_OK(bpf_prog_test_run_opts(udp, &o), "test_run UDP"))
		goto out;
	ASSERT_EQ(o.retval, SERVE_DROP, "UDP DROP verdict");
out:
	serve_test__destroy(skel);
}

static long long schedstat_ns(pid_t pid)
{
	char path[64];
	long long ns = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%lld", &ns) != 1)
			ns = -1;
		fclose(f);
	}
	return ns;
}

static long long cgroup_usage_us(const char *cg)
{
	char path[256], key[64];
	long long v = -1, x;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpu.stat", cg);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &x) == 2)
		if (!strcmp(key, "usage_usec"))
			v = x;
	fclose(f);
	return v;
}

/*
 * Handler time is charged to the cgroup of the socket (its service's),
 * once: not to the owner task, which never runs the handler and is never
 * woken by it, nor to the client, in whose send the softirq ran.
 */
static void test_accounting(void)
{
	const char *cg = "/sys/fs/cgroup/serve-test";
	int stats_fd, cli = -1, link = -1, i, st, *stop = NULL;
	long long run_ns, run0, owner0, owner1, cli0, cli1, cli_own, cg0, cg1;
	int ready[2] = { -1, -1 };
	struct bpf_prog_info info = {};
	__u32 ilen = sizeof(info);
	struct serve_test *skel = NULL;
	char path[256], c;
	pid_t pid = -1;
	FILE *f;

	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (!ASSERT_OK_FD(stats_fd, "bpf_enable_stats"))
		return;
	skel = serve_load();
	if (!skel)
		goto out;
	link = serve_link(skel->progs.serve_tcp, attach_tcp);
	if (link < 0)
		goto out;
	stop = mmap_shared();
	if (!ASSERT_OK_PTR(stop, "mmap") ||
	    !ASSERT_OK(pipe2(ready, O_CLOEXEC), "pipe"))
		goto out;
	if (mkdir(cg, 0755) && !ASSERT_EQ(errno, EEXIST, "mkdir cgroup"))
		goto out;
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);

	pid = fork();
	if (!ASSERT_GE(pid, 0, "fork"))
		goto out;
	if (pid == 0) {
		/* The service: joins its cgroup, then listens (its sockets
		 * are the cgroup's), accepts, and never reads.
		 */
		int l, s;

		f = fopen(path, "we");
		if (!f || fprintf(f, "0\n") < 0 || fclose(f))
			_exit(3);
		l = listen_on(AF_INET, SOCK_STREAM, "127.0.0.1", 8900);
		if (l < 0 || write(ready[1], "l", 1) != 1)
			_exit(1);
		s = accept(l, NULL, NULL);
		if (s < 0 || write(ready[1], "a", 1) != 1)
			_exit(1);
		while (!__atomic_load_n(stop, __ATOMIC_RELAXED)) {
			struct pollfd p = { .fd = s, .events = POLLIN };

			/* A wake-up for the socket would be one for
			 * consumed bytes.
			 */
			if (poll(&p, 1, 20) > 0)
				_exit(2);
		}
		_exit(0);
	}
	if (!ASSERT_TRUE(readable(ready[0], SERVE_WAIT_MS), "service listens") ||
	    !ASSERT_EQ(read(ready[0], &c, 1), 1, "read"))
		goto out;
	cli = connect_to(AF_INET, "127.0.0.1", 8900);
	if (!ASSERT_OK_FD(cli, "connect") ||
	    !ASSERT_TRUE(readable(ready[0], SERVE_WAIT_MS), "service accepted"))
		goto out;
	/*
	 * The client's own work, for the same number of round trips with
	 * little for the program to do: on a debug kernel its system calls
	 * alone may outweigh the program's burn.
	 */
	cli0 = schedstat_ns(getpid());
	for (i = 0; i < 400; i++)
		if (!ping(cli, i))
			goto out;
	cli_own = schedstat_ns(getpid()) - cli0;
	if (!ASSERT_OK(bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.serve_tcp),
					      &info, &ilen),
		       "prog info"))
		goto out;
	run0 = info.run_time_ns;
	/* a second call with the counts of the first would want arrays */
	memset(&info, 0, sizeof(info));
	ilen = sizeof(info);
	owner0 = schedstat_ns(pid);
	cli0 = schedstat_ns(getpid());
	cg0 = cgroup_usage_us(cg);
	for (i = 0; i < 400; i++) {
		char got[4];
		int err;

		err = send_all(cli, "BURN", 4);
		if (!err)
			err = recv_all(cli, got, 4);
		if (err) {
			PRINT_FAIL("BURN %d: %s\n", i, strerror(-err));
			goto out;
		}
		if (memcmp(got, "PONG", 4)) {
			PRINT_FAIL("BURN %d: reply '%.4s'\n", i, got);
			goto out;
		}
	}
	owner1 = schedstat_ns(pid);
	cli1 = schedstat_ns(getpid());
	cg1 = cgroup_usage_us(cg);
	if (!ASSERT_OK(bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.serve_tcp),
					      &info, &ilen),
		       "prog info"))
		goto out;
	run_ns = info.run_time_ns - run0;
	if (!ASSERT_GT(run_ns, 20 * 1000000LL, "program run time (test too weak)"))
		goto out;

	__atomic_store_n(stop, 1, __ATOMIC_RELAXED);
	if (!ASSERT_EQ(waitpid(pid, &st, 0), pid, "waitpid"))
		goto out;
	pid = -1;
	if (!ASSERT_TRUE(WIFEXITED(st), "service exited"))
		goto out;
	ASSERT_EQ(WEXITSTATUS(st), 0, "service's exit status (2: woken for consumed bytes)");
	if (env.verbosity > VERBOSE_NONE)
		printf("  prog %lld us; cgroup +%lld; service +%lld, client +%lld (own %lld)\n",
		       run_ns / 1000, cg1 - cg0, (owner1 - owner0) / 1000,
		       (cli1 - cli0) / 1000, cli_own / 1000);
	ASSERT_GE(cg1 - cg0, run_ns / 1000 * 8 / 10, "cgroup usage_usec");
	ASSERT_LT(owner1 - owner0, run_ns / 4, "service task's runtime (not charged)");
	/* the client's softirq time is not its task time: counted once */
	ASSERT_LT(cli1 - cli0 - cli_own, run_ns / 2,
		  "client task's runtime beyond its own (softirq kept apart)");
out:
	if (pid > 0) {
		__atomic_store_n(stop, 1, __ATOMIC_RELAXED);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	rmdir(cg);
	if (stop)
		munmap(stop, sizeof(*stop));
	close_fd(ready[0]);
	close_fd(ready[1]);
	close_fd(cli);
	close_fd(link);
	serve_test__destroy(skel);
	close(stats_fd);
}

/* ---- driver --------------------------------------------------------------- */

static const struct {
	const char *name;
	void (*fn)(void);
} subtests[] = {
	{ "btf_attach_types", test_btf_attach_types },
	{ "tcp_tx_v4", test_tcp_tx_v4 },
	{ "tcp_tx_v6", test_tcp_tx_v6 },
	{ "tcp_not_woken", test_tcp_not_woken },
	{ "tcp_big_replies", test_tcp_big },
	{ "tcp_drop", test_tcp_drop },
	{ "tcp_reset", test_tcp_reset },
	{ "tcp_fin_with_data", test_tcp_fin_with_data },
	{ "tcp_pass_tailcall", test_tcp_pass },
	{ "tcp_backlog", test_tcp_backlog },
	{ "tcp_kfunc", test_tcp_kfunc },
	{ "tcp_owner_writing", test_tcp_owner_writing },
	{ "tcp_owner_unsent", test_tcp_owner_unsent },
	{ "tcp_attach_gap", test_tcp_attach_gap },
	{ "tcp_urgent", test_tcp_urgent },
	{ "tcp_nomem", test_tcp_nomem },
	{ "tcp_reorder", test_tcp_reorder },
	{ "tcp_reorder_nomem", test_tcp_reorder_nomem },
	{ "tcp_overlap", test_tcp_overlap },
	{ "tcp_fastopen", test_tcp_fastopen },
	{ "tcp_opt_in", test_tcp_opt_in },
	{ "udp_opt_in", test_udp_opt_in },
	{ "udp_tx_v4", test_udp_tx_v4 },
	{ "udp_tx_v6", test_udp_tx_v6 },
	{ "udp_send_fails_v4", test_udp_send_fails_v4 },
	{ "udp_send_fails_v6", test_udp_send_fails_v6 },
	{ "udp_port_zero", test_udp_port_zero },
	{ "udp_route_cache_v4", test_udp_route_cache_v4 },
	{ "udp_route_cache_v6", test_udp_route_cache_v6 },
	{ "udp_nomem", test_udp_nomem },
	{ "mib_counters", test_mib_counters },
	{ "v4mapped", test_v4mapped },
	{ "attach_detach_traffic", test_attach_detach },
	{ "netns_isolation", test_netns_isolation },
	{ "permissions", test_permissions },
	{ "read_only", test_read_only },
	{ "test_run", test_test_run },
	{ "accounting", test_accounting },
};

/* Each subtest in a fresh netns with lo up; the caller's is restored. */
static void run_subtest(const char *name, void (*fn)(void))
{
	int saved;

	if (!test__start_subtest(name))
		return;
	saved = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (!ASSERT_OK_FD(saved, "open netns"))
		return;
	if (ASSERT_OK(unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)") &&
	    ASSERT_OK(set_lo(1, 0), "lo up"))
		fn();
	ASSERT_OK(setns(saved, CLONE_NEWNET), "restore netns");
	close(saved);
}

void test_serve(void)
{
	int i;

	if (!ASSERT_OK(find_attach_types(),
		       "BPF_SERVE_TCP and BPF_SERVE_UDP in the kernel's BTF"))
		return;
	for (i = 0; i < (int)ARRAY_SIZE(subtests); i++)
		run_subtest(subtests[i].name, subtests[i].fn);
}
