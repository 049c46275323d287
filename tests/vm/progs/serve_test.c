// SPDX-License-Identifier: GPL-2.0
/*
 * BPF side of the serve hook tests (prog_tests/serve.c), loaded through the
 * serve_test skeleton.  SK_SKB programs for BPF_SERVE_TCP / BPF_SERVE_UDP (the
 * test sets the expected attach types before load) speaking a tiny
 * protocol keyed by the first four payload bytes:
 *
 *   "PING..."  SERVE_TX, reply "PONG..." (same length, rest unchanged)
 *   "DROP..."  SERVE_DROP
 *   "RST!..."  SERVE_RESET
 *   "BIG" k    SERVE_TX, reply of k KiB: "BIGR" ... "END!" (k <= 15)
 *   "TAIL..."  tail call into tail_handler: SERVE_TX "TAIL-OK"
 *   "BURN..."  SERVE_TX "PONG", after burning CPU (accounting test)
 *   "KB" n     SERVE_TX, reply the first n bytes of `kbuf` (n: 16 bits, big
 *              endian) through the kfunc bpf_serve_reply()
 *   "KPAS"     SERVE_PASS after giving the first 4 bytes of `kbuf` as reply
 *   "KTWO"     SERVE_TX after giving two replies: bytes 0-3, then 4-7
 *   "KBIG"     SERVE_TX after giving a reply of SERVE_TCP_TX_MAX + 1 bytes
 *   "OWNR"     SERVE_TX, reply "DONE", as a handler that follows the
 *              kernel's word: SERVE_PASS if bpf_serve_state() has
 *              SERVE_SK_SEE_ONLY or SERVE_SK_LOST (the run's requests
 *              counted in SERVE_TEST_STAT_SEE_ONLY), so that the
 *              connection is never lost and every request tests the
 *              kernel's rule afresh
 *   otherwise  SERVE_PASS
 *
 * and, on local port 7007, TX of every segment unchanged (stream echo).
 * The program cannot write the request (the verifier keeps serve
 * programs read-only): every reply goes through bpf_serve_reply(), the
 * ones made of the request built in `rbuf` first;
 * on local port 7008, SERVE_PASS of every segment, after checking that it
 * starts and ends where the stream had got to (`stream`).
 * drop_replies, a TC egress program, drops the UDP datagrams sent from
 * port `drop_port` (a reply the stack fails to send).
 * Only sockets with a local port in [SERVE_TEST_PORT_MIN, SERVE_TEST_PORT_MAX]
 * (the tests' servers) are answered.
 * Each run that does not pass records the context the program saw in
 * `seen`; every run counts its verdict in `stats`; the "K" commands keep
 * what bpf_serve_reply() returned in `kret`.  trace_tcp_run and
 * trace_udp_run count the hooks' tracepoint events in `trace_runs`.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <stdbool.h>

#include "serve_test.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct serve_test_seen);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SERVE_TEST_NSTATS);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Thread group whose runs count as SERVE_TEST_STAT_OWNER (backlog test). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} owner_tgid SEC(".maps");

/* Filled by the test; the "K" commands answer from it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct serve_test_kbuf);
} kbuf SEC(".maps");

/* What the last "K" command's calls of bpf_serve_reply() returned. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __s64);
} kret SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct serve_test_stream);
} stream SEC(".maps");

/*
 * One per CPU, keyed by CPU (a per-CPU value may not exceed 32 KiB): the
 * hooks run with softirqs off, so no run interrupts another on its CPU.
 * The test sets max_entries to the number of possible CPUs.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct serve_test_rbuf);
} rbuf SEC(".maps");

extern int bpf_serve_reply(struct __sk_buff *s, const void *buf,
			   __u32 buf__sz) __ksym;
extern __u32 bpf_serve_state(struct __sk_buff *s) __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} jmp SEC(".maps");

static __always_inline void count_n(__u32 what, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &what);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void count(__u32 what)
{
	count_n(what, 1);
}

static __always_inline void record(struct __sk_buff *skb, __u32 verdict)
{
	__u32 zero = 0, *tgid;
	struct serve_test_seen *s = bpf_map_lookup_elem(&seen, &zero);

	/* Replies reaching the client run the program too (and pass). */
	if (s && verdict != SERVE_PASS) {
		s->family = skb->family;
		s->local_port = skb->local_port;
		s->remote_port = bpf_ntohl(skb->remote_port);
		s->local_ip4 = skb->local_ip4;
		s->remote_ip4 = skb->remote_ip4;
		s->local_ip6[0] = skb->local_ip6[0];
		s->local_ip6[1] = skb->local_ip6[1];
		s->local_ip6[2] = skb->local_ip6[2];
		s->local_ip6[3] = skb->local_ip6[3];
		s->remote_ip6[0] = skb->remote_ip6[0];
		s->remote_ip6[1] = skb->remote_ip6[1];
		s->remote_ip6[2] = skb->remote_ip6[2];
		s->remote_ip6[3] = skb->remote_ip6[3];
		s->cookie = bpf_get_socket_cookie(skb);
		s->len = skb->len;
		s->verdict = verdict;
	}
	count(SERVE_TEST_STAT_RUNS);
	count(verdict);
	tgid = bpf_map_lookup_elem(&owner_tgid, &zero);
	if (tgid && *tgid && (bpf_get_current_pid_tgid() >> 32) == *tgid)
		count(SERVE_TEST_STAT_OWNER);
}

static __always_inline void kret_set(__u32 i, __s64 ret)
{
	__s64 *v = bpf_map_lookup_elem(&kret, &i);

	if (v)
		*v = ret;
}

/* The "K" commands: replies through bpf_serve_reply(). */
static __always_inline __u32 kreply(struct __sk_buff *skb, const char *cmd)
{
	struct serve_test_kbuf *kb;
	__u32 zero = 0, len;

	kb = bpf_map_lookup_elem(&kbuf, &zero);
	if (!kb)
		return SERVE_PASS;
	if (cmd[1] == 'B' && cmd[2] == 'I' && cmd[3] == 'G') {
		kret_set(0, bpf_serve_reply(skb, kb->b, SERVE_TCP_TX_MAX + 1));
		return SERVE_TX;
	}
	if (cmd[1] == 'P' && cmd[2] == 'A' && cmd[3] == 'S') {
		kret_set(0, bpf_serve_reply(skb, kb->b, 4));
		return SERVE_PASS;
	}
	if (cmd[1] == 'T' && cmd[2] == 'W' && cmd[3] == 'O') {
		kret_set(0, bpf_serve_reply(skb, kb->b, 4));
		kret_set(1, bpf_serve_reply(skb, kb->b + 4, 4));
		return SERVE_TX;
	}
	if (cmd[1] != 'B')
		return SERVE_PASS;
	len = ((__u8)cmd[2] << 8) | (__u8)cmd[3];
	if (len < 1 || len > SERVE_TEST_KBUF)
		return SERVE_PASS;
	kret_set(0, bpf_serve_reply(skb, kb->b, len));
	return SERVE_TX;
}

/*
 * Answer with the request itself, its first four bytes replaced by @head
 * unless it is NULL: the request copied into `rbuf` (up to
 * SERVE_TCP_TX_MAX bytes), then given to bpf_serve_reply().  SERVE_TX
 * whatever the kfunc returned: a reply it could not take (no memory)
 * makes the hook fall back to SERVE_PASS, which the tests count.
 */
static __always_inline __u32 reply_request(struct __sk_buff *skb,
					   const char *head)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct serve_test_rbuf *rb;
	__u32 len = skb->len;

	rb = bpf_map_lookup_elem(&rbuf, &cpu);
	if (!rb || len < (head ? 4 : 1) || len > SERVE_TCP_TX_MAX ||
	    bpf_skb_load_bytes(skb, 0, rb->b, len))
		return SERVE_PASS;
	if (head)
		__builtin_memcpy(rb->b, head, 4);
	bpf_serve_reply(skb, rb->b, len);
	return SERVE_TX;
}

/* A reply of the @len bytes at @buf (on the stack: a kfunc's buffer must
 * be writable memory), as reply_request().
 */
static __always_inline __u32 reply_bytes(struct __sk_buff *skb, char *buf,
					 __u32 len)
{
	bpf_serve_reply(skb, buf, len);
	return SERVE_TX;
}

/* "BIG" k: k KiB, "BIGR" first and "END!" last, built in `rbuf`. */
static __always_inline __u32 reply_big(struct __sk_buff *skb, __u32 k)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct serve_test_rbuf *rb;
	__u32 len = k * 1024;

	rb = bpf_map_lookup_elem(&rbuf, &cpu);
	if (!rb || len < 8 || len > 15 * 1024)
		return SERVE_DROP;
	__builtin_memcpy(rb->b, "BIGR", 4);
	__builtin_memcpy(rb->b + len - 4, "END!", 4);
	bpf_serve_reply(skb, rb->b, len);
	return SERVE_TX;
}

/* "OWNR": answer only where the kernel allows it. */
static __always_inline __u32 owner_rule(struct __sk_buff *skb)
{
	if (bpf_serve_state(skb) & (SERVE_SK_SEE_ONLY | SERVE_SK_LOST)) {
		/* Per request, not per run: segments that met in the
		 * backlog arrive as one run ("OWNROWNR").
		 */
		count_n(SERVE_TEST_STAT_SEE_ONLY, skb->len / 4);
		return SERVE_PASS;
	}
	return reply_request(skb, "DONE");
}

/* SERVE_TEST_STREAM_PORT: is this run the next bytes of the pattern? */
static __always_inline void stream_check(struct __sk_buff *skb)
{
	struct serve_test_stream *st;
	__u32 zero = 0, state;
	__u8 first, last;

	st = bpf_map_lookup_elem(&stream, &zero);
	if (!st)
		return;
	state = bpf_serve_state(skb);
	if (state & SERVE_SK_SEE_ONLY)
		st->see_only++;
	if (state & SERVE_SK_LOST)
		st->lost++;
	if (bpf_skb_load_bytes(skb, 0, &first, 1) ||
	    bpf_skb_load_bytes(skb, skb->len - 1, &last, 1) ||
	    first != st->bytes % SERVE_TEST_STREAM_MOD ||
	    last != (st->bytes + skb->len - 1) % SERVE_TEST_STREAM_MOD)
		st->bad++;
	st->bytes += skb->len;
	st->runs++;
}

static long burn(__u32 i, void *ctx)
{
	return 0;
}

/*
 * A global function of the serve programs and of not_serve, which
 * read_only tries to replace with ext_sub: an extension may not replace
 * a serve program's functions, and may replace the other's.
 */
__noinline int serve_sub(struct __sk_buff *skb)
{
	return skb->len != 0;
}

static __always_inline int handle(struct __sk_buff *skb, int tcp)
{
	char cmd[4] = {};
	__u32 verdict = SERVE_PASS;

	if (!serve_sub(skb))
		goto out;

	/* Servers only: client sockets of the same netns receive the
	 * replies, and answering those would loop for ever.
	 */
	if (skb->local_port < SERVE_TEST_PORT_MIN ||
	    skb->local_port > SERVE_TEST_PORT_MAX)
		goto out;
	if (tcp && skb->local_port == SERVE_TEST_ECHO_PORT) {
		verdict = reply_request(skb, NULL);
		goto out;
	}
	if (tcp && skb->local_port == SERVE_TEST_STREAM_PORT) {
		stream_check(skb);
		goto out;
	}
	if (bpf_skb_load_bytes(skb, 0, cmd, sizeof(cmd)))
		goto out;

	if (cmd[0] == 'P' && cmd[1] == 'I' && cmd[2] == 'N' && cmd[3] == 'G') {
		verdict = reply_request(skb, "PONG");
	} else if (cmd[0] == 'D' && cmd[1] == 'R' && cmd[2] == 'O' &&
		   cmd[3] == 'P') {
		verdict = SERVE_DROP;
	} else if (cmd[0] == 'R' && cmd[1] == 'S' && cmd[2] == 'T' &&
		   cmd[3] == '!') {
		verdict = SERVE_RESET;
	} else if (cmd[0] == 'B' && cmd[1] == 'I' && cmd[2] == 'G') {
		verdict = reply_big(skb, cmd[3] & 15);
		if (verdict == SERVE_DROP)
			return SERVE_DROP;
	} else if (cmd[0] == 'T' && cmd[1] == 'A' && cmd[2] == 'I' &&
		   cmd[3] == 'L') {
		if (tcp)
			bpf_tail_call(skb, &jmp, 0);
		/* No handler installed: answer from here. */
		verdict = SERVE_PASS;
	} else if (cmd[0] == 'K') {
		verdict = kreply(skb, cmd);
	} else if (tcp && cmd[0] == 'O' && cmd[1] == 'W' && cmd[2] == 'N' &&
		   cmd[3] == 'R') {
		verdict = owner_rule(skb);
	} else if (cmd[0] == 'B' && cmd[1] == 'U' && cmd[2] == 'R' &&
		   cmd[3] == 'N') {
		char pong[4] = { 'P', 'O', 'N', 'G' };

		bpf_loop(20000, burn, NULL, 0);
		verdict = reply_bytes(skb, pong, sizeof(pong));
	}
out:
	record(skb, verdict);
	return verdict;
}

SEC("sk_skb")
int serve_tcp(struct __sk_buff *skb)
{
	return handle(skb, 1);
}

SEC("sk_skb")
int serve_udp(struct __sk_buff *skb)
{
	return handle(skb, 0);
}

/* Reached from serve_tcp through `jmp`, as libxps handlers are. */
SEC("sk_skb")
int tail_handler(struct __sk_buff *skb)
{
	/* Only reached from handle(), for servers. */
	char reply[8] = "TAIL-OK";

	record(skb, SERVE_TX);
	return reply_bytes(skb, reply, 7);
}

/* UDP source port (host order) whose datagrams drop_replies drops. */
__u32 drop_port;

/* On lo's egress: the frames carry an Ethernet header, IP has no options
 * (the tests send none), so the UDP header sits at a fixed offset.
 */
SEC("tc")
int drop_replies(struct __sk_buff *skb)
{
	__u32 l4 = ETH_HLEN;
	__u8 proto;
	__be16 sport;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN + 9, &proto, 1))
			return TC_ACT_OK;
		l4 += 20;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &proto, 1))
			return TC_ACT_OK;
		l4 += 40;
	} else {
		return TC_ACT_OK;
	}
	if (proto != IPPROTO_UDP || bpf_skb_load_bytes(skb, l4, &sport, 2))
		return TC_ACT_OK;
	return bpf_ntohs(sport) == drop_port ? TC_ACT_SHOT : TC_ACT_OK;
}

/*
 * The hooks' tracepoints (tcp:tcp_serve_run, udp:udp_serve_run): runs by
 * [TCP, UDP][the program's verdict][the verdict carried out].
 */
__u64 trace_runs[2][SERVE_VERDICT_MAX + 1][SERVE_VERDICT_MAX + 1];

/* 2 x 4 x 4 counters: a power of two, for the mask below */
#define TRACE_RUNS	(sizeof(trace_runs) / sizeof(trace_runs[0][0][0]))

static __always_inline void trace_run(__u32 udp, __u32 prog_verdict,
				      __u32 verdict)
{
	__u32 i;

	if (prog_verdict > SERVE_VERDICT_MAX || verdict > SERVE_VERDICT_MAX)
		return;
	i = (udp * (SERVE_VERDICT_MAX + 1) + prog_verdict) *
	    (SERVE_VERDICT_MAX + 1) + verdict;
	/* in bounds already; the mask is for the verifier, which loses
	 * the bounds of checks the compiler merges (and the barrier keeps
	 * the compiler from dropping the mask as redundant)
	 */
	barrier_var(i);
	__sync_fetch_and_add(&trace_runs[0][0][0] + (i & (TRACE_RUNS - 1)), 1);
}

struct sock;
struct sk_buff;

SEC("tp_btf/tcp_serve_run")
int BPF_PROG(trace_tcp_run, const struct sock *sk, __u32 len,
	     int prog_verdict, int verdict, bool see_only)
{
	trace_run(0, prog_verdict, verdict);
	return 0;
}

SEC("tp_btf/udp_serve_run")
int BPF_PROG(trace_udp_run, const struct sock *sk, const struct sk_buff *skb,
	     int prog_verdict, int verdict)
{
	trace_run(1, prog_verdict, verdict);
	return 0;
}

struct bpf_iter_meta;

struct sock_common___t {
	__u16 skc_num;
} __attribute__((preserve_access_index));

struct sock___t {
	struct sock_common___t __sk_common;
} __attribute__((preserve_access_index));

extern int bpf_serve_udp_enroll(struct sock___t *sk, int on) __ksym;

struct bpf_iter__udp {
	struct bpf_iter_meta *meta;
	struct sock___t *udp_sk;
} __attribute__((preserve_access_index));

/* enroll_udp enrolls the UDP sockets bound to local port enroll_port
 * (host order), and counts them in enrolled.
 */
__u32 enroll_port;
__u32 enrolled;

SEC("iter/udp")
int enroll_udp(struct bpf_iter__udp *ctx)
{
	struct sock___t *sk = ctx->udp_sk;

	if (!sk || sk->__sk_common.skc_num != enroll_port)
		return 0;
	if (!bpf_serve_udp_enroll(sk, 1))
		enrolled++;
	return 0;
}

/* Loaded with a sockmap attach type: must not attach as serve. */
SEC("sk_skb")
int not_serve(struct __sk_buff *skb)
{
	return serve_sub(skb);
}

/*
 * Loaded only by read_only, which expects the verifier to refuse it: a
 * packet pointer as a kfunc's buffer, which the verifier checks for
 * writes.
 */
SEC("sk_skb")
int reply_pkt(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;

	if (data + 4 > end)
		return SERVE_PASS;
	bpf_serve_reply(skb, data, 4);
	return SERVE_TX;
}

/* Loaded only by read_only, as an extension of serve_sub. */
SEC("freplace/serve_sub")
int ext_sub(struct __sk_buff *skb)
{
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
