// SPDX-License-Identifier: GPL-2.0
/*
 * Entry programs for the handler fixture tests (tests/vm/xps_fxtest.c).
 *
 * BPF_PROG_TEST_RUN gives an SK_SKB program a fresh dummy socket per run,
 * whose cookie nobody knows in advance, so the framework finds no record of
 * the connection and a handler no state of its own (xps_conn_state()).
 * These programs install the record the test carries from run to run under
 * the dummy socket's cookie, report the cookie, and tail-call the
 * framework's own native entry program: the request then goes through the
 * predicate table, the composability map and the real handler exactly as
 * on the hook.  The test reads the record back after the run.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include <linux/bpf_serve.h>
#include <xps/abi.h>
#include <xps/abi.h>

/* xps_conns and the other maps handlers share, reused from /sys/fs/bpf/xps */
#include "internal/maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * The framework's xps_native_tcp and xps_native_udp.  A program array
 * only takes programs of its first user's expected attach type, so the
 * test loads fx_tcp as BPF_SERVE_TCP, fx_udp as BPF_SERVE_UDP, one array each.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fx_fw_tcp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fx_fw_udp SEC(".maps");

/* The connection record to install before the run. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xps_conn);
} fx_carry SEC(".maps");

/*
 * [0] the dummy socket's cookie, for the test to find the record after;
 * [1] runs that did not reach the framework (the verifier allows XPS
 * verdicts only as return values, so a failure is counted here).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} fx_cookie SEC(".maps");

static __always_inline int no_framework(void)
{
	__u32 one = 1;
	__u64 *n = bpf_map_lookup_elem(&fx_cookie, &one);

	if (n)
		__sync_fetch_and_add(n, 1);
	return XPS_PASS;
}

SEC("sk_skb")
int fx_tcp(struct __sk_buff *skb)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	struct xps_conn *c;
	__u64 *ck;
	__u32 zero = 0;

	c = bpf_map_lookup_elem(&fx_carry, &zero);
	ck = bpf_map_lookup_elem(&fx_cookie, &zero);
	if (!c || !ck)
		return no_framework();
	*ck = cookie;
	if (bpf_map_update_elem(&xps_conns, &cookie, c, BPF_ANY))
		return no_framework();
	bpf_tail_call(skb, &fx_fw_tcp, 0);
	return no_framework();
}

SEC("sk_skb")
int fx_udp(struct __sk_buff *skb)
{
	bpf_tail_call(skb, &fx_fw_udp, 0);
	return no_framework();
}
