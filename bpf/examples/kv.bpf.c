// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A minimal cache: a request is a key terminated by '\n'; when the key is
 * in the data map the kernel answers with its value and '\n', otherwise the
 * request goes to the service.  Exercises the data map and key statistics.
 */
/* requests and replies are lines (docs/ordering.md) */
#define XPS_REPLY_PROTO XPS_REPLY_LINE
#include "xps.bpf.h"
#include "lib/lines.bpf.h"
#include "kv.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

XPS_DATA_MAP(struct kv_key, struct kv_value, 4096);

SEC("xps")
int xps_kv(struct __sk_buff *skb)
{
	struct kv_key key = {};
	struct kv_value *val;
	__u32 len = xps_len(skb), klen, vlen;
	__u8 nl;

	xps_count_lines(skb);
	/* exactly one "<key>\n" request per segment, else the service */
	if (len < 2 || len > KV_KEY_MAX + 1)
		return xps_pass(skb);
	klen = len - 1;
	if (xps_load(skb, klen, &nl, 1) || nl != '\n')
		return xps_pass(skb);
	barrier_var(klen);
	if (klen < 1 || klen > KV_KEY_MAX)	/* only for the verifier */
		return xps_pass(skb);
	if (xps_load(skb, 0, key.k, klen))
		return xps_pass(skb);
	val = xps_data_lookup(&key);
	if (!val || !xps_may_consume(skb))
		return xps_pass(skb);
	vlen = val->len;
	barrier_var(vlen);
	if (vlen > KV_VALUE_MAX)
		return xps_pass(skb);
	/* value then '\n' */
	if (xps_resize(skb, vlen + 1))
		return xps_pass(skb);
	if (vlen) {
		barrier_var(vlen);
		if (vlen < 1 || vlen > KV_VALUE_MAX)	/* only for the verifier */
			return xps_pass(skb);
		if (xps_store(skb, 0, val->v, vlen))
			return xps_pass(skb);
	}
	nl = '\n';
	if (xps_store(skb, vlen, &nl, 1))
		return xps_pass(skb);
	return xps_tx(skb);
}
