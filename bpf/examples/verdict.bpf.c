// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Verdict by first byte: 'T' answers the request with itself (TX), 'D'
 * drops it, 'R' resets the connection, anything else (and 'P') passes it to
 * the service.  Used by the tests to drive every verdict on every backend.
 */
/* requests and replies are lines (docs/ordering.md) */
#define XPS_REPLY_PROTO XPS_REPLY_LINE
#include "xps.bpf.h"
#include "lib/lines.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xps")
int xps_verdict(struct __sk_buff *skb)
{
	__u8 c;

	xps_count_lines(skb);
	if (xps_load(skb, 0, &c, 1))
		return xps_pass(skb);
	switch (c) {
	case 'T':
		return xps_tx(skb);
	case 'D':
		return xps_drop(skb);
	case 'R':
		return xps_reset(skb);
	default:
		return xps_pass(skb);
	}
}
