// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Verifier test: the Redis parser and bulk encoder in a handler-like walk. */
#include "vt_common.bpf.h"
#include "redis.bpf.h"

SEC("sk_skb/stream_verdict")
int vt_redis(struct __sk_buff *skb)
{
	__u32 k0 = 0, k1 = 1, k2 = 2, len, off = 0, n, served = 0;
	struct vt_scratch *in, *out, *res;
	struct xps_kv_req *req;

	in = bpf_map_lookup_elem(&vt_scratch, &k0);
	out = bpf_map_lookup_elem(&vt_scratch, &k1);
	/* The result lives in map memory, as in the handlers. */
	res = bpf_map_lookup_elem(&vt_scratch, &k2);
	if (!in || !out || !res)
		return SK_PASS;
	req = (struct xps_kv_req *)(void *)res->b;
	len = vt_load(skb, in->b);
	if (!len)
		return SK_PASS;
	for (n = 0; n < VT_NREQ; n++) {
		int kind = xps_redis_parse(in->b, len, off, req);

		if (kind == XPS_REQ_INCOMPLETE || kind == XPS_REQ_MALFORMED)
			break;
		if (kind == XPS_REQ_SERVE)
			served = 1;
		off += req->req_len;
		if (off >= len)
			break;
	}
	/* Encode the key of the last request as if it were the value. */
	if (served && req->nkeys &&
	    xps_redis_encode_bulk(out->b, in->b, req->keys[0].len) < 0)
		return SK_DROP;
	return SK_PASS;
}
