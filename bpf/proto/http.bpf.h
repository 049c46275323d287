/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HTTP/1.x request head parser and error-response encoder, written against
 * nginx 1.22 (ngx_http_parse.c, ngx_http_request.c,
 * ngx_http_special_response.c) and checked against the real server
 * (tests/unit/http_fixtures.h).
 *
 * Entry points:
 *   xps_http_parse()           method, head length, body length, flags
 *   xps_http_encode_error()    the response nginx sends for `return 405;`
 *                              (and 403, 404, 429) with its HTML body
 *   xps_http_fmt_date()        the 29-byte IMF-fixdate of the Date header
 *
 * The parser says SERVE only for a request it understands completely and
 * for which nginx's answer depends on nothing but the method, the HTTP
 * version and the Connection header: plain origin-form URI, HTTP/1.0 or
 * 1.1, one Host (1.1), no Transfer-Encoding, no Expect, no User-Agent that
 * makes nginx pad error pages, valid Content-Length with the whole body
 * present, and a connection nginx keeps open.  Everything else is HARMLESS
 * (complete, PASS it), INCOMPLETE or MALFORMED (nginx answers 400).
 */
#ifndef __XPS_PROTO_HTTP_BPF_H
#define __XPS_PROTO_HTTP_BPF_H

#include "common.bpf.h"

/* Request line plus headers parsed; more gives INCOMPLETE | XPS_F_TOO_BIG. */
#ifndef XPS_HTTP_HEAD_MAX
#define XPS_HTTP_HEAD_MAX	1024
#endif
#define XPS_HTTP_METHOD_MAX	16
/* nginx skips any number of CR/LF before a request; we skip this many. */
#define XPS_HTTP_LEAD_MAX	16
#define XPS_HTTP_DATE_LEN	29

enum xps_http_flags {
	/* XPS_F_TOO_BIG (1 << 6) is used as in common.bpf.h. */
	XPS_HTTP_F_BODY = 1 << 16,	/* Content-Length > 0 */
	XPS_HTTP_F_CHUNKED = 1 << 17,	/* Transfer-Encoding present */
	XPS_HTTP_F_EXPECT = 1 << 18,	/* Expect present */
	XPS_HTTP_F_PAD = 1 << 19,	/* User-Agent with "MSIE " or
					 * "Chrome/": nginx pads error pages
					 * (and closes for old MSIE) */
	XPS_HTTP_F_CLOSE = 1 << 20,	/* nginx closes after the response */
	XPS_HTTP_F_ODD = 1 << 21,	/* something this parser does not
					 * model: URI, version, header syntax,
					 * duplicate or bad Host/Content-Length */
	XPS_HTTP_F_LONG_METHOD = 1 << 22, /* method longer than method[] */
	XPS_HTTP_F_LEADING_CRLF = 1 << 23, /* CR/LF before the request line */
};

/*
 * Flags under which nginx's answer to a request is not what
 * xps_http_encode_error() produces: the filter passes such requests.
 */
#define XPS_HTTP_F_UNMODELLED						\
	(XPS_HTTP_F_CHUNKED | XPS_HTTP_F_EXPECT | XPS_HTTP_F_PAD |	\
	 XPS_HTTP_F_CLOSE | XPS_HTTP_F_ODD | XPS_HTTP_F_LONG_METHOD |	\
	 XPS_F_TOO_BIG)

/* Bytes of parser work area in a result (struct xps_http_req.ws). */
#define XPS_HTTP_WS		80

struct xps_http_req {
	__u32 kind;		/* enum xps_req_kind */
	__u32 flags;		/* enum xps_http_flags, XPS_F_TOO_BIG */
	__u32 req_len;		/* head + body; 0 when unknown */
	__u32 head_len;		/* leading CR/LF, request line, headers, the
				 * empty line */
	__u32 content_length;
	__u32 hint;		/* INCOMPLETE: kind the prefix proves */
	struct xps_span method_span;
	__u8 http_minor;	/* HTTP/1.<minor> */
	__u8 pad[3];
	/* Method, zero padded: usable as a map key. */
	__u8 method[XPS_HTTP_METHOD_MAX];
	/* Not a result: the parser's work area, here rather than on the
	 * 512-byte BPF stack.  Undefined after a parse. */
	__u64 ws[XPS_HTTP_WS / 8];
};

/*
 * Byte classes as 256-bit sets (4 words), tested without branches:
 * URI bytes this parser calls plain (unreserved and sub-delims, '/', '?',
 * ':', '@'; not '%', '#', '\\' or anything nginx normalizes or rejects),
 * and header-name bytes (alphanumerics and '-').
 */
#define XPS__SET2(lo, hi)	(((1ULL << ((hi) - (lo) + 1)) - 1) << ((lo) & 63))
#define XPS__BIT(c)		(1ULL << ((c) & 63))
#define XPS__ALNUM1		(XPS__SET2('A', 'Z') | XPS__SET2('a', 'z'))
#define XPS__ALNUM0		XPS__SET2('0', '9')
#define XPS__URI0							\
	(XPS__ALNUM0 | XPS__BIT('!') | XPS__BIT('$') | XPS__BIT('&') |	\
	 XPS__BIT('\'') | XPS__BIT('(') | XPS__BIT(')') | XPS__BIT('*') | \
	 XPS__BIT('+') | XPS__BIT(',') | XPS__BIT('-') | XPS__BIT('.') | \
	 XPS__BIT('/') | XPS__BIT(':') | XPS__BIT(';') | XPS__BIT('=') | \
	 XPS__BIT('?'))
#define XPS__URI1	(XPS__ALNUM1 | XPS__BIT('@') | XPS__BIT('_') | XPS__BIT('~'))
#define XPS__NAME0	(XPS__ALNUM0 | XPS__BIT('-'))
#define XPS__NAME1	XPS__ALNUM1
#define XPS__HOST0	(XPS__ALNUM0 | XPS__BIT('-') | XPS__BIT('.') | XPS__BIT(':'))
#define XPS__HOST1	(XPS__ALNUM1 | XPS__BIT('_'))

/* x * b for b in {0, 1}, hidden from clang so that it does not turn it
 * back into a 0/-1 mask (see xps_sel()). */
XPS_INLINE __u64 xps__mul01(__u64 x, __u64 b)
{
	XPS_OPAQUE(b);
	return x * b;
}

XPS_INLINE __u64 xps__inset(__u64 c, __u64 w0, __u64 w1)
{
	__u64 hi = c >> 6, sh = c & 63;

	/* Only words 0 and 1 are used: bytes >= 0x80 are never in a set. */
	return xps__mul01((w0 >> sh) & 1, xps_eq(hi, 0)) |
	       xps__mul01((w1 >> sh) & 1, xps_eq(hi, 1));
}

/*
 * Eight bytes at a time.  The loops below take a run of ordinary bytes
 * (header-name bytes, the value of a header the parser does not track,
 * Host value bytes, the usual end of the request line) in one bpf_loop()
 * iteration, and keep the byte-at-a-time state machine for the rest.
 * Byte masks as in lanes.bpf.h (XPS__W8, xps_lanes_lead()).
 */
/* The 8 bytes at buf[q]; the caller knows q + 8 <= len <= XPS_SCRATCH. */
XPS_INLINE __u64 xps_http__w64(const struct xps_buf *buf, __u32 q)
{
	__u32 i = q;

	XPS__HIDE(i);
	i &= XPS_SCRATCH_MASK;
	if (i > XPS_SCRATCH - 8)	/* only for the verifier */
		i = XPS_SCRATCH - 8;
	return xps_lanes_load(&buf->b[i]);
}

/* Lanes of x (bytes < 0x80) in [lo, hi]: no carry crosses a lane. */
XPS_INLINE __u64 xps_http__in(__u64 x, __u8 lo, __u8 hi)
{
	return (x + XPS__W8(0x80 - lo)) & ~(x + XPS__W8(0x7f - hi)) & XPS__W80;
}

/* Lanes of w equal to c.  Exact up to the first such lane, which is all
 * xps_lanes_lead() looks at. */
XPS_INLINE __u64 xps_http__eq(__u64 w, __u8 c)
{
	__u64 v = w ^ XPS__W8(c);

	return (v - XPS__W8(1)) & ~v & XPS__W80;
}

/* Header-name bytes (XPS__NAME0/1) of w, as lanes. */
XPS_INLINE __u64 xps_http__name_lanes(__u64 w)
{
	__u64 x = w & XPS__W7F;

	return (xps_http__in(x, '0', '9') | xps_http__in(x, 'A', 'Z') |
		xps_http__in(x, 'a', 'z') | xps_http__in(x, '-', '-')) &
	       ~w & XPS__W80;
}

/* Host value bytes (XPS__HOST0/1) of w, as lanes. */
XPS_INLINE __u64 xps_http__host_lanes(__u64 w)
{
	__u64 x = w & XPS__W7F;

	return (xps_http__in(x, '0', ':') | xps_http__in(x, 'A', 'Z') |
		xps_http__in(x, 'a', 'z') | xps_http__in(x, '-', '.') |
		xps_http__in(x, '_', '_')) & ~w & XPS__W80;
}

/* Bits of the header loop's state word. */
#define XPS__H_IN_NAME		1	/* bit 0; bits 1-4: in CL, Connection,
					 * User-Agent, Host; 5: TE; 6: Expect */
#define XPS__H_ODD_BIT		7
#define XPS__H_CLBAD_BIT	8
#define XPS__H_CLDONE_BIT	9
#define XPS__H_CLOSE_BIT	10
#define XPS__H_KA_BIT		11
#define XPS__H_PAD_BIT		12

/* Names matched at the ':' of a header line (lower case, length, bytes). */
#define XPS__HNAME(lo, hi, L, s)					\
	(xps_zero64((L) ^ (sizeof(s) - 1)) &				\
	 xps_zero64((lo) ^ XPS_PACK_BE(s)) &				\
	 xps_zero64((hi) ^ XPS_PACK_BE_HI(s)))

/* What the request-line pass found (and its state while it runs). */
struct xps_http_line {
	__u64 odd;		/* something nginx may treat differently */
	__u64 lo, hi;		/* last 16 bytes before the LF (no CR) */
	__u64 runs, prev_sp, prev_sl, cr_seen;
	__u32 nl;		/* position of the LF + 1; 0: not found */
	__u32 too_big;		/* no LF within XPS_HTTP_HEAD_MAX bytes */
	__u32 len, p, i;
};

/* State of the request-line pass between bpf_loop() iterations (in the
 * caller's struct xps_http_line). */
struct xps_http__lctx {
	const struct xps_buf *buf;
	struct xps_http_line *x;
};

/* One request-line byte: buf[p + idx].  Returns 1 at the LF. */
/* URI bytes this parser calls plain (XPS__URI0/1) of w, as lanes. */
XPS_INLINE __u64 xps_http__uri_lanes(__u64 w)
{
	__u64 x = w & XPS__W7F;

	return (xps_http__in(x, '!', '!') | xps_http__in(x, '$', '$') |
		xps_http__in(x, '&', ';') | xps_http__in(x, '=', '=') |
		xps_http__in(x, '?', 'Z') | xps_http__in(x, '_', '_') |
		xps_http__in(x, 'a', 'z') | xps_http__in(x, '~', '~')) &
	       ~w & XPS__W80;
}

/* The request-line scanner's registers, back into @x at a step's exit. */
static __always_inline void xps_http__lsave(struct xps_http_line *x,
					    __u64 odd, __u64 runs,
					    __u64 prev_sp, __u64 prev_sl,
					    __u64 lo, __u64 hi, __u64 cr_seen)
{
	x->odd = odd;
	x->runs = runs;
	x->prev_sp = prev_sp;
	x->prev_sl = prev_sl;
	x->lo = lo;
	x->hi = hi;
	x->cr_seen = cr_seen;
}

/* One step of the request line from buf[p + x->i]: a run of plain URI
 * bytes, then the usual end of the line or one byte.  Returns 1 at the
 * LF, at len, or after XPS_HTTP_HEAD_MAX bytes. */
XPS_CALLBACK long xps_http__lbyte(__u64 idx, void *vx)
{
	struct xps_http__lctx *cx = vx;
	const struct xps_buf *buf = cx->buf;
	struct xps_http_line *x = cx->x;
	__u64 c, odd = x->odd, runs = x->runs, prev_sp = x->prev_sp,
	      prev_sl = x->prev_sl, lo = x->lo, hi = x->hi,
	      cr_seen = x->cr_seen;
	__u32 len = x->len, lim = len < x->p + XPS_HTTP_HEAD_MAX ?
				  len : x->p + XPS_HTTP_HEAD_MAX;
	__u64 q = x->p + x->i, sp, cr, nocr;

	/*
	 * Up to 8 plain URI bytes: what the byte path below does with
	 * them ("/." is odd, so is any byte after a CR).
	 */
	if (q + 8 <= lim) {
		__u64 w = xps_http__w64(buf, q), k, x7, sl, dot, lanes;

		k = xps_lanes_lead(~xps_http__uri_lanes(w) & XPS__W80);
		if (k) {
			lanes = k == 8 ? ~0ULL : (1ULL << (8 * k)) - 1;
			x7 = w & XPS__W7F;
			sl = xps_http__in(x7, '/', '/');
			dot = xps_http__in(x7, '.', '.');
			odd |= xps_zero64(((sl << 8) & dot & lanes) |
					  ((prev_sl << 7) & dot)) ^ 1;
			odd |= cr_seen;
			prev_sp = 0;
			prev_sl = (sl >> (8 * k - 1)) & 1;
			if (k == 8) {
				hi = lo;
				lo = __builtin_bswap64(w);
			} else {
				hi = (hi << (8 * k)) | (lo >> (64 - 8 * k));
				lo = (lo << (8 * k)) |
				     (__builtin_bswap64(w) >> (64 - 8 * k));
			}
			q += k;
		}
	}
	/*
	 * " HTTP/1.1\r\n" or " HTTP/1.0\r\n", all before len and inside
	 * the XPS_HTTP_HEAD_MAX bytes the byte loop would look at: what the
	 * byte path would do with these 11 bytes, in one step.
	 */
	if (q + 11 <= lim) {
		__u64 w0 = xps_http__w64(buf, q), w1 = xps_http__w64(buf, q + 3);
		__u64 v11 = xps_zero64(w1 ^ __builtin_bswap64(
					XPS_PACK_BE("TP/1.1\r\n"))),
		      v10 = xps_zero64(w1 ^ __builtin_bswap64(
					XPS_PACK_BE("TP/1.0\r\n")));

		if (xps_zero64(w0 ^ __builtin_bswap64(XPS_PACK_BE(" HTTP/1."))) &
		    (v11 | v10)) {
			x->odd = odd | cr_seen;
			x->runs = runs + (prev_sp ^ 1);
			x->hi = (lo << 8) | ' ';
			x->lo = xps_sel(v11, XPS_PACK_BE("HTTP/1.1"),
					XPS_PACK_BE("HTTP/1.0"));
			x->nl = q + 11;
			x->i = q + 10 - x->p;
			return 1;
		}
	}
	x->i = q - x->p;
	if (q >= lim) {
		/* len, or XPS_HTTP_HEAD_MAX bytes: the caller tells */
		xps_http__lsave(x, odd, runs, prev_sp, prev_sl, lo, hi, cr_seen);
		return 1;
	}
	c = XPS_AT(buf->b, q);
	if (c == '\n') {
		x->nl = q + 1;	/* + 1: 0 means not found */
		xps_http__lsave(x, odd, runs, prev_sp, prev_sl, lo, hi, cr_seen);
		return 1;
	}
	sp = xps_eq(c, ' ');
	cr = xps_eq(c, '\r');
	nocr = cr ^ 1;
	odd |= (xps__inset(c, XPS__URI0, XPS__URI1) | sp | cr) ^ 1;
	odd |= prev_sl & xps_eq(c, '.');
	odd |= cr_seen;		/* a byte after a CR */
	runs += sp & (prev_sp ^ 1);
	prev_sp = sp;
	prev_sl = xps_eq(c, '/');
	cr_seen |= cr;
	hi = xps_sel(nocr, (hi << 8) | (lo >> 56), hi);
	lo = xps_sel(nocr, (lo << 8) | c, lo);
	xps_http__lsave(x, odd, runs, prev_sp, prev_sl, lo, hi, cr_seen);
	x->i = q + 1 - x->p;
	return 0;
}

/*
 * Rest of the request line from buf[p].  Plain means: "/" path of plain
 * bytes, no "/.", exactly one run of spaces (before the version), a CR
 * only right before the LF, and the line ends in "HTTP/1.0" or
 * "HTTP/1.1".  A global function; the loop is a bpf_loop() callback that
 * takes a run of plain URI bytes and the usual end of the line in one
 * iteration, any other byte alone (branch-free).
 */
XPS_GLOBAL int xps_http__line(const struct xps_buf *buf, __u32 len, __u32 p,
			      struct xps_http_line *out)
{
	struct xps_http__lctx cx = {};

	if (!buf || !out)
		return 0;
	__builtin_memset(out, 0, sizeof(*out));
	out->len = len;
	out->p = p;
	if (p < len && XPS_AT(buf->b, p) != '/')
		out->odd = 1;
	cx.buf = buf;
	cx.x = out;
	XPS_LOOP(XPS_HTTP_HEAD_MAX, xps_http__lbyte, &cx);
	out->too_big = !out->nl && p + out->i < len;
	out->odd |= xps_zero64(out->runs ^ 1) ^ 1;
	out->odd |= xps_zero64((out->hi & 0xff) ^ ' ') ^ 1;
	return (int)out->nl;
}

/*
 * Which header a name is, at its ':' (bit 1 Content-Length, 2 Connection,
 * 3 User-Agent, 4 Host, 5 Transfer-Encoding, 6 Expect).  The first byte
 * of transfer-encoding is not compared: a false match only makes the
 * request pass.
 */
XPS_INLINE __u64 xps_http__hmatch(__u64 lo, __u64 hi, __u64 L)
{
	return (XPS__HNAME(lo, hi, L, "content-length") << 1) |
	       (XPS__HNAME(lo, hi, L, "connection") << 2) |
	       (XPS__HNAME(lo, hi, L, "user-agent") << 3) |
	       (XPS__HNAME(lo, hi, L, "host") << 4) |
	       (xps_zero64(L ^ 17) &
		xps_zero64(lo ^ XPS_PACK_BE("transfer-encoding")) &
		xps_zero64(hi ^ XPS_PACK_BE_HI("transfer-encoding"))) << 5 |
	       XPS__HNAME(lo, hi, L, "expect") << 6;
}

/* State of the header pass between bpf_loop() iterations (in req->ws). */
struct xps_http__hst {
	__u64 f, cnt, L, ll, lraw, cl, lo, hi;
	__u32 len;
	__u32 lim;		/* min(len, first byte + XPS_HTTP_HEAD_MAX) */
	__u32 end;		/* position after the final LF, 0: none yet */
	__u32 q;		/* next byte to look at */
};
_Static_assert(sizeof(struct xps_http__hst) <= XPS_HTTP_WS,
	       "header pass state must fit in struct xps_http_req.ws");

/* The bpf_loop() context (stack): pointers may not be stored in maps. */
struct xps_http__hctx {
	const struct xps_buf *buf;
	struct xps_http__hst *st;
};

/* One step of the header pass from buf[x->q]: a run of bytes, CR LF, or
 * one byte.  Returns 1 at the end of the head, at len, or after
 * XPS_HTTP_HEAD_MAX bytes. */
XPS_CALLBACK long xps_http__hbyte(__u64 idx, void *vx)
{
	struct xps_http__hctx *cx = vx;
	const struct xps_buf *buf = cx->buf;
	struct xps_http__hst *x = cx->st;
	__u64 f = x->f, cnt = x->cnt, L = x->L, ll = x->ll, lraw = x->lraw,
	      cl = x->cl, lo = x->lo, hi = x->hi, c;
	__u32 len = x->len, lim = x->lim, r;

	/*
	 * CR LF in one step: the end of a value line (a new line, in its
	 * name), or the empty line that ends the head.
	 */
	if (x->q + 2 <= lim) {
		__u32 q = x->q;

		if (XPS_AT(buf->b, q) == '\r' && XPS_AT(buf->b, q + 1) == '\n') {
			if (!(f & 1)) {
				x->f = (f & ~(__u64)0x1f) | XPS__H_IN_NAME;
				x->ll = 0;
				x->L = 0;
				x->lo = 0;
				x->hi = 0;
				x->lraw = 0;
				x->q = q + 2;
				return 0;
			}
			if (!ll) {
				x->end = q + 2;
				return 1;
			}
		}
	}
	/*
	 * A run of 1 to 8 bytes the byte path below would only count
	 * (value of a header not tracked: no CR, LF or NUL), count and
	 * record as a name (header-name bytes), count and mark as a Host
	 * value (Host bytes, no space), or add to Content-Length (digits):
	 * all of it at once.  Up to two words per iteration: a run of 8
	 * goes on with the next.
	 */
	for (r = 0; r < 2; r++) {
		f = x->f;
		cnt = x->cnt;
		L = x->L;
		ll = x->ll;
		lraw = x->lraw;
		cl = x->cl;
		lo = x->lo;
		hi = x->hi;
		if (x->q + 8 <= lim) {
			__u32 q = x->q;
			__u64 w = xps_http__w64(buf, q), good, k, t, m, c1, j, d;

			if (f & 1)
				good = xps_http__name_lanes(w);
			else if (!(f & 0x1e))
				good = ~(xps_http__eq(w, 0) | xps_http__eq(w, '\r') |
					 xps_http__eq(w, '\n')) & XPS__W80;
			else if (f & (1 << 4))
				good = xps_http__host_lanes(w);
			else if ((f & (1 << 1)) && !((f >> XPS__H_CLDONE_BIT) & 1))
				good = xps_http__in(w & XPS__W7F, '0', '9') & ~w &
				       XPS__W80;
			else
				good = 0;
			k = xps_lanes_lead(~good & XPS__W80);
			if (f & 1) {
				/* names: lower case, shifted into hi:lo */
				if (k == 8) {
					hi = lo;
					lo = __builtin_bswap64(w | XPS__W8(0x20));
				} else if (k) {
					t = __builtin_bswap64(w | XPS__W8(0x20)) >>
					    (64 - 8 * k);
					hi = (hi << (8 * k)) | (lo >> (64 - 8 * k));
					lo = (lo << (8 * k)) | t;
				}
				L += k;
				ll += k;
				/* the ':' after the name, and one space after it:
				 * what the byte path does with them */
				if (k < 8 && ((w >> (8 * k)) & 0xff) == ':') {
					m = xps_http__hmatch(lo, hi, L);
					f = (f & ~(__u64)0x1f) | m;
					cnt += ((m >> 1) & 1) | ((m >> 2) & 1) << 16 |
					       ((m >> 4) & 1) << 32;
					lo = 0;
					hi = 0;
					lraw = 0;
					ll++;
					k++;
					if (k < 8 && ((w >> (8 * k)) & 0xff) == ' ') {
						lo = ' ';
						lraw = ' ';
						/* Content-Length: a space after
						 * digits ends them */
						f |= ((m >> 1) & 1 &
						      (xps_zero64((cnt >> 48) & 0xff) ^ 1))
						     << XPS__H_CLDONE_BIT;
						ll++;
						k++;
					}
				}
				if (k) {
					x->f = f;
					x->cnt = cnt;
					x->lo = lo;
					x->hi = hi;
					x->lraw = lraw;
					x->L = L;
					x->ll = ll;
					x->q = q + k;
					if (k == 8 && !r)
						continue;
					return 0;
				}
			} else if (k) {
				if (f & (1 << 4)) {
					cnt |= 1ULL << 56;	/* Host */
				} else if (f & (1 << 1)) {
					/* Content-Length digits */
					for (j = 0; j < 8; j++) {
						d = ((w >> (8 * j)) & 0xff) - '0';
						c1 = xps_ge(j, k) ^ 1;
						cl = xps_sel(c1, cl * 10 + d, cl);
					}
					cnt += k << 48;
					x->cl = cl;
				}
				/* lo, hi, lraw: only Connection and User-Agent
				 * values look at them, and the LF clears them */
				x->cnt = cnt;
				if (k <= 6 && ((w >> (8 * k)) & 0xffff) == 0x0a0d) {
					/* and the CR LF that ends the line, as
					 * the CR LF step above takes it */
					x->f = (f & ~(__u64)0x1f) | XPS__H_IN_NAME;
					x->ll = 0;
					x->L = 0;
					x->lo = 0;
					x->hi = 0;
					x->lraw = 0;
					x->q = q + k + 2;
					return 0;
				}
				x->ll = ll + k;
				x->q = q + k;
				if (k == 8 && !r)
					continue;
				return 0;
			}
		}
		break;	/* no run here: one byte */
	}
	{
		__u64 q = x->q, lf, cr, colon, namech, valch, lcc,
		      dig, sp, c2, in_name, v, m;

		if (q >= lim)
			return 1;	/* len, or XPS_HTTP_HEAD_MAX bytes */
		c = XPS_AT(buf->b, q);
		lf = xps_eq(c, '\n');
		if (lf & xps_zero64(ll)) {
			x->end = q + 1;
			return 1;
		}
		in_name = f & 1;
		cr = xps_eq(c, '\r');
		c2 = xps__mul01(XPS_AT(buf->b, q + 1),
				xps_ge(q + 1, len) ^ 1);
		v = 0;
		/* nginx wants LF right after a CR, and no NUL. */
		v |= cr & (xps_eq(c2, '\n') ^ 1);
		v |= xps_eq(c, 0);
		lcc = c | (xps_in(c, 'A', 'Z') << 5);
		colon = xps_eq(c, ':') & in_name;
		namech = in_name & (colon ^ 1) & (lf ^ 1) & (cr ^ 1);
		valch = (in_name ^ 1) & (lf ^ 1) & (cr ^ 1);
		v |= namech & (xps__inset(c, XPS__NAME0, XPS__NAME1) ^ 1);
		/* A header line without ':' is a 400 in nginx. */
		v |= lf & in_name;
		f |= v << XPS__H_ODD_BIT;

		/* Name complete: which header is it? */
		m = xps__mul01(xps_http__hmatch(lo, hi, L), colon);
		/* cur_* bits 1-4 follow the header of this line;
		 * TE and Expect (5, 6) stick. */
		f = (f & ~xps__mul01(0x1e, colon)) | m;
		cnt += ((m >> 1) & 1) | ((m >> 2) & 1) << 16 |
		       ((m >> 4) & 1) << 32;

		hi = xps_sel(namech | valch, (hi << 8) | (lo >> 56), hi);
		lo = xps_sel(namech | valch, (lo << 8) | lcc, lo);
		lraw = xps_sel(valch, (lraw << 8) | c, lraw);
		L += namech;

		/* Content-Length: OWS digits OWS, nothing else. */
		dig = xps_in(c, '0', '9');
		sp = xps_eq(c, ' ') | xps_eq(c, '\t');
		v = valch & (f >> 1) & 1;	/* in a CL value */
		f |= (v & ((dig | sp) ^ 1)) << XPS__H_CLBAD_BIT;
		f |= (v & dig & (f >> XPS__H_CLDONE_BIT)) << XPS__H_CLBAD_BIT;
		f |= (v & sp & (xps_zero64((cnt >> 48) & 0xff) ^ 1)) << XPS__H_CLDONE_BIT;
		cl = xps_sel(v & dig, cl * 10 + (c - '0'), cl);
		cnt += (v & dig) << 48;

		/* nginx: strcasestrn(value, "close"), then
		 * "keep-alive"; strstrn(ua, "MSIE "), "Chrome/". */
		v = valch & (f >> 2) & 1;	/* in Connection */
		f |= (v & xps_zero64((lo & XPS_BYTES_MASK(5)) ^
				     XPS_PACK_BE("close"))) << XPS__H_CLOSE_BIT;
		f |= (v & xps_zero64(lo ^ XPS_PACK_BE("keep-alive")) &
		      xps_zero64((hi & XPS_BYTES_MASK(2)) ^
				 XPS_PACK_BE_HI("keep-alive"))) << XPS__H_KA_BIT;
		v = valch & (f >> 3) & 1;	/* in User-Agent */
		f |= (v & (xps_zero64((lraw & XPS_BYTES_MASK(5)) ^
				      XPS_PACK_BE("MSIE ")) |
			   xps_zero64((lraw & XPS_BYTES_MASK(7)) ^
				      XPS_PACK_BE("Chrome/")))) << XPS__H_PAD_BIT;
		v = valch & (f >> 4) & 1;	/* in Host */
		f |= (v & ((xps__inset(c, XPS__HOST0, XPS__HOST1) | sp) ^ 1))
		     << XPS__H_ODD_BIT;
		/* Host value bytes, in bits 56-63 (saturation is
		 * harmless: only zero matters). */
		cnt |= (v & (sp ^ 1)) << 56;

		/* A new line starts after LF; a value after ':'. */
		ll = xps_sel(lf, 0, ll + (cr ^ 1));
		f = (f & ~(__u64)1) | (in_name & (colon ^ 1)) | lf;
		L = xps_sel(lf, 0, L);
		hi = xps_sel(lf | colon, 0, hi);
		lo = xps_sel(lf | colon, 0, lo);
		lraw = xps_sel(lf | colon, 0, lraw);
		f &= ~xps__mul01(0x1e, lf);
	}
	x->f = f;
	x->cnt = cnt;
	x->L = L;
	x->ll = ll;
	x->lraw = lraw;
	x->cl = cl;
	x->lo = lo;
	x->hi = hi;
	x->q++;
	return 0;
}

/*
 * First half of xps_http_parse(): leading CR/LF, the method and the rest
 * of the request line.  Returns XPS_REQ_NONE when the headers are next
 * (their first byte's position in req->head_len, for xps_http__rest()),
 * else the final kind.  A global function.
 */
XPS_GLOBAL int xps_http__head(const struct xps_buf *buf, __u32 len,
			      __u32 off, struct xps_http_req *req)
{
	struct xps_http_line ln = {};
	__u32 i, p, ms, me = 0, nl;
	__u64 c = 0, odd, lo;

	if (!buf || !req)
		return XPS_REQ_MALFORMED;
	__builtin_memset(req, 0, sizeof(*req));
	if (len > XPS_SCRATCH)
		len = XPS_SCRATCH;

	/* Leading empty lines: nginx skips them (sw_start). */
	p = off;
	for (i = 0; i < XPS_HTTP_LEAD_MAX; i++) {
		if (p >= len)
			goto more;
		c = XPS_AT(buf->b, p);
		if (c != '\r' && c != '\n')
			break;
		p++;
	}
	if (p != off)
		req->flags |= XPS_HTTP_F_LEADING_CRLF;
	if (i == XPS_HTTP_LEAD_MAX) {
		/* More CR/LF than we skip: nginx still reads on. */
		req->flags |= XPS_HTTP_F_ODD;
		goto more;
	}
	p = xps_forget(p);

	/* Method: A-Z, '_' or '-' up to a space, else nginx says 400. */
	ms = p;
	for (i = 0; i < 2 * XPS_HTTP_METHOD_MAX; i++) {
		if (p + i >= len)
			goto more;
		c = XPS_AT(buf->b, p + i);
		if (c == ' ') {
			me = p + i;
			break;
		}
		if ((c < 'A' || c > 'Z') && c != '_' && c != '-')
			goto bad;
		if (i < XPS_HTTP_METHOD_MAX)
			req->method[i] = (__u8)c;
		XPS_OPAQUE(c);		/* no memcpy() on BPF */
	}
	if (!me || me == ms) {
		/* Too long to be a method we could match: let nginx. */
		req->flags |= XPS_HTTP_F_LONG_METHOD | XPS_HTTP_F_ODD;
		goto more;
	}
	me = xps_forget(me);
	req->method_span.off = (__u16)ms;
	req->method_span.len = (__u16)(me - ms);
	if (me - ms > XPS_HTTP_METHOD_MAX)
		req->flags |= XPS_HTTP_F_LONG_METHOD | XPS_HTTP_F_ODD;
	/* From here on the method is known, whatever else happens. */
	req->hint = XPS_REQ_SERVE;

	xps_http__line(buf, len, me + 1, &ln);
	if (!ln.nl) {
		if (ln.too_big)
			req->flags |= XPS_F_TOO_BIG;
		goto more;
	}
	nl = ln.nl - 1;
	odd = ln.odd;
	lo = ln.lo;
	req->http_minor = xps_zero64(lo ^ XPS_PACK_BE("HTTP/1.1"));
	odd |= (xps_zero64(lo ^ XPS_PACK_BE("HTTP/1.0")) |
		req->http_minor) ^ 1;

	if (odd)
		req->flags |= XPS_HTTP_F_ODD;
	req->head_len = nl + 1;
	return XPS_REQ_NONE;

more:
	/* A method is reported only once it is whole. */
	if (!req->method_span.len)
		__builtin_memset(req->method, 0, sizeof(req->method));
	req->kind = XPS_REQ_INCOMPLETE;
	return req->kind;
bad:
	__builtin_memset(req, 0, sizeof(*req));
	req->kind = XPS_REQ_MALFORMED;
	return req->kind;
}

/*
 * Second half: the headers from buf[req->head_len], one pass until the
 * empty line (a bpf_loop() callback, verified until it converges rather
 * than once per byte: runs of ordinary bytes 8 at a time, any other byte
 * alone, branch-free), then the verdict.  A
 * global function, called by xps_http_parse() itself rather than by
 * xps_http__head(), to keep the call chain (and its stack) short.
 */
XPS_GLOBAL int xps_http__rest(const struct xps_buf *buf, __u32 len,
			      __u32 off, struct xps_http_req *req)
{
	struct xps_http__hctx cx = {};
	struct xps_http__hst *x;
	__u32 end;
	__u64 odd = 0;

	if (!buf || !req)
		return XPS_REQ_MALFORMED;
	if (len > XPS_SCRATCH)
		len = XPS_SCRATCH;
	x = (struct xps_http__hst *)(void *)req->ws;
	__builtin_memset(x, 0, sizeof(*x));
	x->len = len;
	x->q = req->head_len;
	x->lim = len < x->q + XPS_HTTP_HEAD_MAX ? len :
						  x->q + XPS_HTTP_HEAD_MAX;
	x->f = XPS__H_IN_NAME;
	req->head_len = 0;
	cx.buf = buf;
	cx.st = x;
	/* Each iteration takes one byte or more. */
	XPS_LOOP(XPS_HTTP_HEAD_MAX, xps_http__hbyte, &cx);
	if (!x->end) {
		/* stopped at XPS_HTTP_HEAD_MAX bytes, before len */
		if (x->q < len)
			req->flags |= XPS_F_TOO_BIG;
		goto more;
	}
	end = x->end;
	{
		__u64 f = x->f, cnt = x->cnt, cl = x->cl;
		__u64 n_cl = cnt & 0xffff, n_conn = (cnt >> 16) & 0xffff,
		      n_host = (cnt >> 32) & 0xffff,
		      cl_nd = (cnt >> 48) & 0xff, host_len = cnt >> 56;

		odd |= (f >> XPS__H_ODD_BIT) & 1;
		odd |= (f >> XPS__H_CLBAD_BIT) & 1;
		odd |= (n_cl > 1) | (cl_nd > 9) | (n_cl & xps_zero64(cl_nd));
		odd |= (n_host > 1) | (n_conn > 1) |
		       (n_host & xps_zero64(host_len));
		/* HTTP/1.1 without Host is a 400. */
		odd |= req->http_minor & xps_zero64(n_host);
		if (cl && !((f >> XPS__H_CLBAD_BIT) & 1) && cl_nd <= 9)
			req->flags |= XPS_HTTP_F_BODY;
		if ((f >> 5) & 1)
			req->flags |= XPS_HTTP_F_CHUNKED;
		if ((f >> 6) & 1)
			req->flags |= XPS_HTTP_F_EXPECT;
		if ((f >> XPS__H_PAD_BIT) & 1)
			req->flags |= XPS_HTTP_F_PAD;
		/* ngx_http_process_connection: "close" wins. */
		if (((f >> XPS__H_CLOSE_BIT) & 1) ||
		    (!req->http_minor && !((f >> XPS__H_KA_BIT) & 1)))
			req->flags |= XPS_HTTP_F_CLOSE;
		if (odd)
			req->flags |= XPS_HTTP_F_ODD;
		req->content_length = (__u32)(cl & 0x3fffffff);
	}

	req->head_len = end - off;
	if (req->flags & (XPS_HTTP_F_ODD | XPS_HTTP_F_CHUNKED)) {
		/* Body length unknown to us: only nginx knows where the
		 * next request starts. */
		req->kind = XPS_REQ_HARMLESS;
		return req->kind;
	}
	req->req_len = req->head_len + req->content_length;
	if (req->content_length > len - end) {
		if (req->req_len > XPS_SCRATCH - off)
			req->flags |= XPS_F_TOO_BIG;
		req->hint = XPS_REQ_SERVE;
		req->kind = XPS_REQ_INCOMPLETE;
		return req->kind;
	}
	req->hint = XPS_REQ_NONE;
	if (req->flags & (XPS_HTTP_F_EXPECT | XPS_HTTP_F_PAD |
			  XPS_HTTP_F_CLOSE))
		req->kind = XPS_REQ_HARMLESS;
	else
		req->kind = XPS_REQ_SERVE;
	return req->kind;

more:
	/* A method is reported only once it is whole. */
	if (!req->method_span.len)
		__builtin_memset(req->method, 0, sizeof(req->method));
	req->kind = XPS_REQ_INCOMPLETE;
	return req->kind;
}

/*
 * Parse the request at buf[off]; buf holds len (<= XPS_SCRATCH) bytes in an
 * XPS_SCRATCH-byte buffer (map value or stack); req: any memory of
 * sizeof(struct xps_http_req).  Returns req->kind.
 */
XPS_INLINE int xps_http_parse(const __u8 *buf, __u32 len, __u32 off,
			      struct xps_http_req *req)
{
	int kind = xps_http__head(XPS_BUF(buf), len, off, req);

	if (kind != XPS_REQ_NONE)
		return kind;
	return xps_http__rest(XPS_BUF(buf), len, off, req);
}

/*
 * IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") of @secs since the epoch
 * into dst[0..29).  Days to civil date without loops (Howard Hinnant's
 * public-domain algorithm, re-derived here).
 */
/* Three bytes packed little-endian, picked without tables or branches:
 * function-local "static const" tables end up in .rodata.str1.1 while
 * their BTF says .rodata, which libbpf refuses ("Error finalizing .BTF"). */
#define XPS__3(a, b, c)	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16)
#define XPS__PICK(v, k, a, b, c)	xps__mul01(XPS__3(a, b, c), xps_eq(v, k))

struct xps_http_date {
	__u8 b[XPS_HTTP_DATE_LEN];
};

/* A global function: the arithmetic's temporaries stay out of the
 * caller's frame.  Returns XPS_HTTP_DATE_LEN. */
XPS_GLOBAL int xps_http__fmt_date(struct xps_http_date *dt, __u64 secs)
{
	__u8 *dst;
	__u64 days = secs / 86400, sod = secs % 86400;
	__u64 z = days + 719468, era = z / 146097, doe = z - era * 146097;
	__u64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	__u64 y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	__u64 mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1;
	__u64 m = mp < 10 ? mp + 3 : mp - 9, w = days % 7;
	__u64 h = sod / 3600, mi = sod / 60 % 60, s = sod % 60, wn, mn;

	if (!dt)
		return 0;
	dst = dt->b;
	y += m <= 2;
	/* 1970-01-01 was a Thursday. */
	wn = XPS__PICK(w, 0, 'T', 'h', 'u') + XPS__PICK(w, 1, 'F', 'r', 'i') +
	     XPS__PICK(w, 2, 'S', 'a', 't') + XPS__PICK(w, 3, 'S', 'u', 'n') +
	     XPS__PICK(w, 4, 'M', 'o', 'n') + XPS__PICK(w, 5, 'T', 'u', 'e') +
	     XPS__PICK(w, 6, 'W', 'e', 'd');
	mn = XPS__PICK(m, 1, 'J', 'a', 'n') + XPS__PICK(m, 2, 'F', 'e', 'b') +
	     XPS__PICK(m, 3, 'M', 'a', 'r') + XPS__PICK(m, 4, 'A', 'p', 'r') +
	     XPS__PICK(m, 5, 'M', 'a', 'y') + XPS__PICK(m, 6, 'J', 'u', 'n') +
	     XPS__PICK(m, 7, 'J', 'u', 'l') + XPS__PICK(m, 8, 'A', 'u', 'g') +
	     XPS__PICK(m, 9, 'S', 'e', 'p') + XPS__PICK(m, 10, 'O', 'c', 't') +
	     XPS__PICK(m, 11, 'N', 'o', 'v') + XPS__PICK(m, 12, 'D', 'e', 'c');
	dst[0] = (__u8)wn;
	dst[1] = (__u8)(wn >> 8);
	dst[2] = (__u8)(wn >> 16);
	dst[3] = ',';
	dst[4] = ' ';
	dst[5] = '0' + d / 10;
	dst[6] = '0' + d % 10;
	dst[7] = ' ';
	dst[8] = (__u8)mn;
	dst[9] = (__u8)(mn >> 8);
	dst[10] = (__u8)(mn >> 16);
	dst[11] = ' ';
	dst[12] = '0' + y / 1000 % 10;
	dst[13] = '0' + y / 100 % 10;
	dst[14] = '0' + y / 10 % 10;
	dst[15] = '0' + y % 10;
	dst[16] = ' ';
	dst[17] = '0' + h / 10;
	dst[18] = '0' + h % 10;
	dst[19] = ':';
	dst[20] = '0' + mi / 10;
	dst[21] = '0' + mi % 10;
	dst[22] = ':';
	dst[23] = '0' + s / 10;
	dst[24] = '0' + s % 10;
	dst[25] = ' ';
	dst[26] = 'G';
	dst[27] = 'M';
	dst[28] = 'T';
	return XPS_HTTP_DATE_LEN;
}

/* dst: XPS_HTTP_DATE_LEN bytes of memory. */
XPS_INLINE void xps_http_fmt_date(__u8 *dst, __u64 secs)
{
	xps_http__fmt_date((struct xps_http_date *)(void *)dst, secs);
}

/* Append the n bytes (a constant) of src at dst[at]. */
#define XPS__PUTN(dst, at, src, n)					\
	do {								\
		__u32 __i;						\
		for (__i = 0; __i < (n); __i++) {			\
			__u8 __b = (src)[__i];				\
			XPS_OPAQUE(__b);	/* no memcpy() on BPF */ \
			(dst)[XPS_IDX((at) + __i)] = __b;		\
		}							\
		(at) += (n);						\
	} while (0)

/* Append the literal @s at dst[at]; dst is XPS_SCRATCH bytes. */
#define XPS__PUTS(dst, at, s)						\
	do {								\
		__u32 __i;						\
		for (__i = 0; __i < sizeof(s) - 1; __i++) {		\
			__u8 __b = (s)[__i];				\
			XPS_OPAQUE(__b);	/* no memcpy() on BPF */ \
			(dst)[XPS_IDX((at) + __i)] = __b;		\
		}							\
		(at) += sizeof(s) - 1;					\
	} while (0)

/*
 * Append n bytes of src (n <= 64) at dst[at]: all 64 bytes of @src are
 * written, with no test on n (one path for the verifier whatever n is);
 * the bytes past n are overwritten by what follows, or lie past the end
 * of the response.  @src must have 64 readable bytes.
 */
XPS_INLINE __u32 xps_http__put(__u8 *dst, __u32 at, const __u8 *src, __u32 n)
{
	__u32 i;

	for (i = 0; i < 64; i++) {
		__u8 b = src[i];

		XPS_OPAQUE(b);		/* no memcpy() on BPF */
		dst[XPS_IDX(at + i)] = b;
	}
	return at + n;
}

/*
 * Status lines nginx uses for the codes a method filter returns; the
 * HTML title and heading repeat it.  Written in place (no pointers into
 * string literals: they would need .rodata.str relocations).  Returns the
 * new position; *n is the reason's length (0: unknown status).
 */
XPS_INLINE __u32 xps_http__put_reason(__u8 *dst, __u32 at, __u32 status,
				      __u32 *n)
{
	__u32 at0 = at;

	switch (status) {
	case 403:
		XPS__PUTS(dst, at, "403 Forbidden");
		break;
	case 404:
		XPS__PUTS(dst, at, "404 Not Found");
		break;
	case 405:
		XPS__PUTS(dst, at, "405 Not Allowed");
		break;
	case 429:
		XPS__PUTS(dst, at, "429 Too Many Requests");
		break;
	}
	*n = at - at0;
	return at;
}

XPS_INLINE __u32 xps_http__reason_len(__u32 status)
{
	switch (status) {
	case 403:
	case 404:
		return 13;
	case 405:
		return 15;
	case 429:
		return 21;
	}
	return 0;
}

/*
 * The error response nginx 1.22 sends for @status (403, 404, 405, 429)
 * with its built-in page, into the XPS_SCRATCH-byte @dst:
 *
 *   HTTP/1.1 405 Not Allowed\r\n
 *   Server: <server>\r\n                       nginx/1.22.1, or nginx with
 *   Date: <date>\r\n                           server_tokens off (dynamic)
 *   Content-Type: text/html\r\n
 *   Content-Length: <body length>\r\n
 *   Connection: keep-alive\r\n                 or close (@keepalive == 0)
 *   \r\n
 *   <html>\r\n<head><title>405 Not Allowed</title></head>\r\n<body>\r\n
 *   <center><h1>405 Not Allowed</h1></center>\r\n
 *   <hr><center><server></center>\r\n</body>\r\n</html>\r\n
 *
 * @server is the server token (<= 64 bytes), @date the 29 bytes from
 * xps_http_fmt_date().  @head leaves the body out (HEAD request) but keeps
 * its Content-Length.  Returns the length, or 0 for an unknown status.
 */
/* Sized views of the encoder's inputs, for the global function. */
struct xps_http_server {
	__u8 b[64];
};

/* @how: status in bits 0-15, keepalive bit 16, head bit 17.  A global
 * function: its frame is not the caller's. */
XPS_GLOBAL int xps_http__encode_error(struct xps_buf *dstb,
				      const struct xps_http_server *srv,
				      __u32 server_len,
				      const struct xps_http_date *dt,
				      __u32 how)
{
	__u32 status = how & 0xffff, rn, at = 0, body;
	int keepalive = (how >> 16) & 1, head = (how >> 17) & 1;
	__u8 *dst;
	const __u8 *server, *date;
	__u8 num[20] = {};

	if (!dstb || !srv || !dt)
		return 0;
	dst = dstb->b;
	server = srv->b;
	date = dt->b;
	rn = xps_http__reason_len(status);
	if (!rn || server_len > 64)
		return 0;
	/* The body is fixed text around the reason (twice) and the server. */
	body = sizeof("<html>\r\n<head><title>") - 1 + rn +
	       sizeof("</title></head>\r\n<body>\r\n<center><h1>") - 1 + rn +
	       sizeof("</h1></center>\r\n<hr><center>") - 1 + server_len +
	       sizeof("</center>\r\n</body>\r\n</html>\r\n") - 1;

	XPS__PUTS(dst, at, "HTTP/1.1 ");
	at = xps_http__put_reason(dst, at, status, &rn);
	XPS__PUTS(dst, at, "\r\nServer: ");
	at = xps_http__put(dst, at, server, server_len);
	XPS__PUTS(dst, at, "\r\nDate: ");
	XPS__PUTN(dst, at, date, XPS_HTTP_DATE_LEN);
	XPS__PUTS(dst, at, "\r\nContent-Type: text/html\r\nContent-Length: ");
	rn = xps_fmt_u64(num, body);
	XPS__PUTN(dst, at, num, 20);
	at -= 20 - rn;
	if (keepalive)
		XPS__PUTS(dst, at, "\r\nConnection: keep-alive\r\n\r\n");
	else
		XPS__PUTS(dst, at, "\r\nConnection: close\r\n\r\n");
	if (head)
		return (int)at;
	XPS__PUTS(dst, at, "<html>\r\n<head><title>");
	at = xps_http__put_reason(dst, at, status, &rn);
	XPS__PUTS(dst, at, "</title></head>\r\n<body>\r\n<center><h1>");
	at = xps_http__put_reason(dst, at, status, &rn);
	XPS__PUTS(dst, at, "</h1></center>\r\n<hr><center>");
	at = xps_http__put(dst, at, server, server_len);
	XPS__PUTS(dst, at, "</center>\r\n</body>\r\n</html>\r\n");
	return (int)at;
}

/*
 * The public signature: @dst an XPS_SCRATCH-byte buffer, @server 64 bytes
 * of memory (the first @server_len used), @date XPS_HTTP_DATE_LEN bytes.
 */
XPS_INLINE __u32 xps_http_encode_error(__u8 *dst, __u32 status,
				       const __u8 *server, __u32 server_len,
				       const __u8 *date, int keepalive,
				       int head)
{
	if (status > 0xffff)
		return 0;
	return (__u32)xps_http__encode_error(
		(struct xps_buf *)(void *)dst,
		(const struct xps_http_server *)(const void *)server,
		server_len, (const struct xps_http_date *)(const void *)date,
		status | (keepalive ? 1u << 16 : 0) | (head ? 1u << 17 : 0));
}

#endif /* __XPS_PROTO_HTTP_BPF_H */
