// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Verifier test: the memcached parser, encoders and UDP header helpers. */
#include "vt_common.bpf.h"
#include "memcached.bpf.h"

SEC("sk_skb/stream_verdict")
int vt_memcached(struct __sk_buff *skb)
{
	__u32 k0 = 0, k1 = 1, k2 = 2, len, off = 0, n, at;
	struct vt_scratch *in, *out, *res;
	struct xps_kv_req *req;
	__u16 id = 0;

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
	if (xps_mc_udp_parse(in->b, len, &id) == 0)
		xps_mc_udp_encode(out->b, id, 0, 1);
	for (n = 0; n < VT_NREQ; n++) {
		int kind = xps_mc_parse(in->b, len, off, req);

		if (kind == XPS_REQ_INCOMPLETE || kind == XPS_REQ_MALFORMED)
			break;
		off += req->req_len;
		if (off >= len)
			break;
	}
	if (req->kind == XPS_REQ_SERVE && req->nkeys) {
		at = xps_mc_encode_value(out->b, XPS_MC_UDP_HDR_LEN, in->b,
					 req->keys[0], 0, in->b, req->keys[0].len,
					 1, req->flags & XPS_F_CAS);
		if (at)
			at = xps_mc_encode_end(out->b, at);
		if (!at)
			return SK_DROP;
	}
	return SK_PASS;
}
