// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A lossy link for kernels without netem: on the egress it is attached to,
 * drop 5% of the packets and send another 5% twice.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tc")
int lossy(struct __sk_buff *skb)
{
	__u32 r = bpf_get_prandom_u32() % 100;

	if (r < 5)
		return TC_ACT_SHOT;
	if (r < 10)
		bpf_clone_redirect(skb, skb->ifindex, 0);
	return TC_ACT_OK;
}
