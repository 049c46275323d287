// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Entry programs for bench/handler_cost.c: what the framework does before
 * a handler runs, reduced to the part a cost measure needs.
 *
 * BPF_PROG_TEST_RUN runs a program @repeat times on one skb, and a handler
 * that answers turns the request into its reply: every run therefore
 * first writes the request back (from bench_req).  Then it fills the run
 * state as the framework's native entry does for a counted connection
 * that owes nothing (cookie 1, whose record the tool installs), and
 * tail-calls the handler.  TC programs, as the handler is loaded: a stock
 * kernel runs sk_skb programs by BPF_PROG_TEST_RUN only when patched, and
 * a TC run sees the same payload at offset 0.  bench_base does the same but tail-calls into an
 * empty slot: the difference between the two is the handler's cost.
 */
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include <linux/bpf_serve.h>
#include <xps/abi.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define BENCH_REQ_MAX	512

struct bench_req {
	__u32 len;
	__u32 pad;
	__u8 b[BENCH_REQ_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_req);
} bench_req SEC(".maps");

/* The handler's own instance (the tool reuses its fd). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_RUN_LEVELS);
	__type(key, __u32);
	__type(value, struct xps_run);
} xps_run SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_handler SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_none SEC(".maps");

static __always_inline int enter(struct __sk_buff *skb, void *progs)
{
	struct bench_req *req;
	struct xps_run *run;
	__u32 zero = 0, n;

	req = bpf_map_lookup_elem(&bench_req, &zero);
	run = bpf_map_lookup_elem(&xps_run, &zero);
	if (!req || !run)
		return XPS_PASS;
	n = req->len;
	barrier_var(n);
	if (n < 1 || n > BENCH_REQ_MAX)	/* only for the verifier */
		return XPS_PASS;
	if (bpf_skb_change_tail(skb, n, 0) ||
	    bpf_skb_store_bytes(skb, 0, req->b, n, 0))
		return XPS_PASS;
	__builtin_memset(run, 0, sizeof(*run));
	run->start_ns = bpf_ktime_get_ns();
	run->active = 1;
	run->cookie = 1;
	run->proto = IPPROTO_TCP;
	run->family = 2;	/* AF_INET */
	run->payload_len = n;
	run->may_consume = 1;
	bpf_tail_call(skb, progs, 0);
	run->active = 0;
	return XPS_PASS;
}

SEC("tc")
int bench_full(struct __sk_buff *skb)
{
	return enter(skb, &bench_handler);
}

SEC("tc")
int bench_base(struct __sk_buff *skb)
{
	return enter(skb, &bench_none);
}
