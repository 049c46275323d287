// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP method filter for nginx: requests whose method the data map names
 * are answered from the kernel the way nginx answers `return 405;`, or
 * reset for 444 (nginx closes without a response); everything else, and
 * everything this handler cannot prove nginx would treat the same way,
 * goes to nginx.
 *
 * Answered: a segment holding exactly one complete request (head and
 * Content-Length body) of a blocked method, HTTP/1.x, keep-alive, nothing
 * the parser flags as beyond its model (odd syntax, chunked bodies,
 * Expect, padded or closing responses).
 */
#define XPS_REPLY_PROTO XPS_REPLY_HTTP	/* docs/ordering.md */
#include "xps.bpf.h"
#include "proto/http.bpf.h"
#include "http_filter.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

XPS_DATA_MAP(struct http_method_key, struct http_action, 64);
XPS_STATE_MAP(struct http_state);

struct http_scratch {
	__u8 in[XPS_SCRATCH];
	__u8 out[XPS_SCRATCH];
	struct xps_http_req req;
	/*
	 * out[] keeps the last reply this CPU encoded, for as long as what
	 * it was made of does not change: the second of its Date, the
	 * status and HEAD bit (how), the server token.  0 bytes: none.
	 */
	__u32 out_len;
	__u32 out_how;
	__u64 out_secs;
	__u32 out_server_len;
	__u32 pad;
	__u64 out_server[HTTP_SERVER_MAX / 8];
	/* here rather than on the stack (the stock TX path's frames) */
	__u8 date[XPS_HTTP_DATE_LEN + 3];
	struct http_method_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_RUN_LEVELS);
	__type(key, __u32);
	__type(value, struct http_scratch);
} http_scratch SEC(".maps");

/* The request just parsed is a HEAD: its response has no body. */
static __always_inline __u32 head_flag(const struct xps_http_req *req)
{
	const __u8 *m = req->method;

	return m[0] == 'H' && m[1] == 'E' && m[2] == 'A' && m[3] == 'D' &&
	       !m[4] ? XPS_REQ_NOBODY : 0;
}

/* Word @i of the server token: 8-byte loads at offset 4 of the state map
 * value, which x86 (and the verifier there) takes unaligned. */
static __always_inline __u64 server_word(const struct http_state *st, __u32 i)
{
	return ((const __u64 *)(const void *)st->server)[i];
}

/* Requests walked per segment to count them; more: the count is lost. */
#define HTTP_COUNT_MAX	8

/*
 * Count the requests starting at @off of a segment nginx will read
 * (docs/ordering.md): sc->in holds its first @n of @len bytes.  The first
 * one may be parsed already (@parsed).  A request that runs past the
 * segment leaves the rest for cs->skip.
 */
static __always_inline void count_requests(struct __sk_buff *skb,
					   struct http_scratch *sc,
					   struct xps_conn_hstate *cs,
					   __u32 off, __u32 n, __u32 len,
					   int parsed)
{
	__u32 i, end;
	int kind;

	for (i = 0; i < HTTP_COUNT_MAX; i++) {
		if (off >= len)
			return;
		if (off >= n) {
			xps_requests_lost(skb);	/* beyond what was copied */
			return;
		}
		kind = parsed && !i ? (int)sc->req.kind :
				      xps_http_parse(sc->in, n, off, &sc->req);
		/* only nginx knows where a chunked or odd request ends */
		if (kind == XPS_REQ_MALFORMED || !sc->req.req_len ||
		    (sc->req.flags & (XPS_HTTP_F_ODD | XPS_HTTP_F_CHUNKED))) {
			xps_requests_lost(skb);
			return;
		}
		xps_request(skb, head_flag(&sc->req));
		end = off + sc->req.req_len;
		if (end >= len) {
			if (cs)
				cs->skip = end - len;
			else if (end > len)
				xps_requests_lost(skb);
			return;
		}
		off = end;
	}
	xps_requests_lost(skb);
}

SEC("xps")
int xps_http_filter(struct __sk_buff *skb)
{
	struct xps_conn_hstate *cs = xps_conn_state(skb);
	struct http_scratch *sc;
	struct http_action *act;
	struct http_state *st;
	__u32 zero = 0, len = xps_len(skb), n, out, start = 0, how, slen, i;
	__u64 diff;
	__u64 secs;
	int kind;

	/* the rest of a request nginx is reading: not ours to judge */
	if (cs && cs->skip) {
		if (cs->skip >= len) {
			cs->skip -= len;
			xps_requests_none(skb);
			return xps_pass(skb);
		}
		start = cs->skip;	/* requests after it: nginx's too */
		cs->skip = 0;
	}
	sc = xps_scratch(&http_scratch);
	st = bpf_map_lookup_elem(&xps_state, &zero);
	if (!sc || !st)
		return xps_pass(skb);
	n = len < XPS_SCRATCH ? len : XPS_SCRATCH;
	barrier_var(n);
	if (n < 1 || n > XPS_SCRATCH)
		return xps_pass(skb);
	if (xps_load(skb, 0, sc->in, n))
		return xps_pass(skb);
	if (start) {
		count_requests(skb, sc, cs, start, n, len, 0);
		return xps_pass(skb);
	}

	kind = xps_http_parse(sc->in, n, 0, &sc->req);
	if (kind != XPS_REQ_SERVE || sc->req.req_len != len ||
	    (sc->req.flags & XPS_HTTP_F_UNMODELLED) || !xps_may_consume(skb))
		goto pass;

	__builtin_memcpy(sc->key.m, sc->req.method, HTTP_METHOD_LEN);
	act = xps_data_lookup(&sc->key);
	if (!act)
		goto pass;
	if (act->status == 444)
		return xps_reset(skb);

	secs = (bpf_ktime_get_tai_ns() - st->tai_minus_utc_ns) / 1000000000ull;
	slen = st->server_len > HTTP_SERVER_MAX ? HTTP_SERVER_MAX :
						  st->server_len;
	how = act->status | (sc->key.m[0] == 'H' && sc->key.m[1] == 'E' &&
			     sc->key.m[2] == 'A' && sc->key.m[3] == 'D' &&
			     !sc->key.m[4]) << 17;
	/* The reply this CPU encoded last, if it is the same reply. */
	diff = (sc->out_secs ^ secs) | (sc->out_how ^ how) |
	       (sc->out_server_len ^ slen) | !sc->out_len;
	for (i = 0; i < HTTP_SERVER_MAX / 8; i++)
		diff |= sc->out_server[i] ^ server_word(st, i);
	if (diff) {
		xps_http_fmt_date(sc->date, secs);
		out = xps_http_encode_error(sc->out, act->status, st->server,
					    slen, sc->date, 1, (how >> 17) & 1);
		sc->out_len = out;
		sc->out_how = how;
		sc->out_secs = secs;
		sc->out_server_len = slen;
		for (i = 0; i < HTTP_SERVER_MAX / 8; i++)
			sc->out_server[i] =
				server_word(st, i);
	}
	out = sc->out_len;
	barrier_var(out);
	if (out < 1 || out > XPS_SCRATCH)	/* only for the verifier */
		goto pass;
	if (xps_reply(skb, sc->out, out))
		return xps_pass(skb);
	return xps_tx(skb);
pass:
	count_requests(skb, sc, cs, 0, n, len, 1);
	return xps_pass(skb);
}
