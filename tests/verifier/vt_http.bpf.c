// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Verifier test: the HTTP parser, date formatter and error encoder. */
#include "vt_common.bpf.h"
#include "http.bpf.h"

#ifndef VT_HTTP_NREQ
#define VT_HTTP_NREQ 4
#endif

/* 64 bytes, like http_state.server: what the encoder may read. */
static char vt_server[64] = "nginx/1.22.1";	/* writable: global functions
						 * get their pointer arguments
						 * as read-write memory */

SEC("sk_skb/stream_verdict")
int vt_http(struct __sk_buff *skb)
{
	__u32 k0 = 0, k1 = 1, k2 = 2, len, off = 0, n, blocked = 0;
	struct vt_scratch *in, *out, *res;
	struct xps_http_req *req;
	__u8 date[XPS_HTTP_DATE_LEN];

	in = bpf_map_lookup_elem(&vt_scratch, &k0);
	out = bpf_map_lookup_elem(&vt_scratch, &k1);
	/* The result lives in map memory, as in services/http-filter/http_filter.bpf.c. */
	res = bpf_map_lookup_elem(&vt_scratch, &k2);
	if (!in || !out || !res)
		return SK_PASS;
	req = (struct xps_http_req *)(void *)res->b;
	len = vt_load(skb, in->b);
	if (!len)
		return SK_PASS;
	for (n = 0; n < VT_HTTP_NREQ; n++) {
		int kind = xps_http_parse(in->b, len, off, req);

		if (kind != XPS_REQ_SERVE)
			break;
		if (req->method[0] == 'P')
			blocked = 1;
		off += req->req_len;
		if (off >= len)
			break;
	}
	if (blocked) {
		xps_http_fmt_date(date, bpf_ktime_get_ns() / 1000000000);
		if (!xps_http_encode_error(out->b, 405,
					   (const __u8 *)vt_server,
					   12, date, 1, 0))
			return SK_DROP;
	}
	return SK_PASS;
}
