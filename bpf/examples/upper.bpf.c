// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Upper: answers with the request upper-cased (ASCII).  With echo it makes
 * the composability example: which one answered shows which sub-context
 * the L7 value selected.
 */
/* requests and replies are lines (docs/ordering.md) */
#define XPS_REPLY_PROTO XPS_REPLY_LINE
#include "xps.bpf.h"
#include "lib/lines.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define UPPER_MAX 256

SEC("xps")
int xps_upper(struct __sk_buff *skb)
{
	__u8 buf[UPPER_MAX];
	__u32 len = xps_len(skb), i;

	xps_count_lines(skb);
	barrier_var(len);
	if (len < 1 || len > UPPER_MAX)
		return xps_pass(skb);
	if (xps_load(skb, 0, buf, len))
		return xps_pass(skb);
	for (i = 0; i < UPPER_MAX; i++) {
		if (i >= len)
			break;
		if (buf[i] >= 'a' && buf[i] <= 'z')
			buf[i] -= 'a' - 'A';
	}
	barrier_var(len);
	if (len < 1 || len > UPPER_MAX)	/* only for the verifier */
		return xps_pass(skb);
	if (xps_store(skb, 0, buf, len))
		return xps_pass(skb);
	return xps_tx(skb);
}
