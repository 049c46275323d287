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

XPS_INLINE __u64 xps__inset(__u64 c, __u64 w0, __u64 w1)
{
	__u64 hi = c >> 6, w;

	/* Only words 0 and 1 are used: bytes >= 0x80 are never in a set. */
	w = (w0 & (0 - xps_eq(hi, 0))) | (w1 & (0 - xps_eq(hi, 1)));
	return (w >> (c & 63)) & 1;
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

/*
 * Parse the request at buf[off]; buf holds len (<= XPS_SCRATCH) bytes in an
 * XPS_SCRATCH-byte buffer.  Returns req->kind.
 */
XPS_INLINE int xps_http_parse(const __u8 *buf, __u32 len, __u32 off,
			      struct xps_http_req *req)
{
	__u32 i, p, ms, me = 0, nl = 0, end = 0;
	__u64 c = 0, odd = 0, runs = 0, prev_sp = 0, prev_sl = 0, lo = 0,
	      hi = 0, cr_seen = 0;

	__builtin_memset(req, 0, sizeof(*req));
	if (len > XPS_SCRATCH)
		len = XPS_SCRATCH;

	/* Leading empty lines: nginx skips them (sw_start). */
	p = off;
	for (i = 0; i < XPS_HTTP_LEAD_MAX; i++) {
		if (p >= len)
			goto more;
		c = XPS_AT(buf, p);
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
		c = XPS_AT(buf, p + i);
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

	/*
	 * Rest of the request line, branch-free but for its one exit test.
	 * Plain means: "/" path of plain bytes, no "/.", exactly one run of
	 * spaces (before the version), a CR only right before the LF, and the
	 * line ends in "HTTP/1.0" or "HTTP/1.1".
	 */
	p = me + 1;
	if (p < len && XPS_AT(buf, p) != '/')
		odd = 1;
	for (i = 0; i < XPS_HTTP_HEAD_MAX; i++) {
		__u64 q = p + i, sp, cr, nocr;

		c = XPS_AT(buf, q);
		if (xps_ge(q, len) | xps_eq(c, '\n')) {
			if (q < len)
				nl = q + 1;	/* + 1: 0 means not found */
			break;
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
	}
	if (!nl) {
		if (p + i < len)
			req->flags |= XPS_F_TOO_BIG;
		goto more;
	}
	nl = xps_forget(nl - 1);
	odd |= xps_zero64(runs ^ 1) ^ 1;
	odd |= xps_zero64((hi & 0xff) ^ ' ') ^ 1;
	req->http_minor = xps_zero64(lo ^ XPS_PACK_BE("HTTP/1.1"));
	odd |= (xps_zero64(lo ^ XPS_PACK_BE("HTTP/1.0")) |
		req->http_minor) ^ 1;

	/*
	 * Headers, one branch-free pass until the empty line.  Per line: the
	 * name is shifted into lo/hi (lower case) until the first ':', then
	 * matched; value bytes are shifted in again for the substring tests
	 * nginx does on Connection and User-Agent.  Booleans live in the bits
	 * of f and counters in the 16-bit fields of cnt, so that the loop fits
	 * in registers and the BPF stack.
	 */
	{
		__u64 f = XPS__H_IN_NAME, cnt = 0, L = 0, ll = 0, lraw = 0,
		      cl = 0;

		p = nl + 1;
		lo = 0;
		hi = 0;
		for (i = 0; i < XPS_HTTP_HEAD_MAX; i++) {
			__u64 q = p + i, lf, cr, colon, namech, valch, lcc,
			      dig, sp, c2, in_name, v, m;

			c = XPS_AT(buf, q);
			lf = xps_eq(c, '\n');
			if (xps_ge(q, len) | (lf & xps_zero64(ll))) {
				if (q < len)
					end = q + 1;
				break;
			}
			in_name = f & 1;
			cr = xps_eq(c, '\r');
			c2 = XPS_AT(buf, q + 1) &
			     (0 - (xps_ge(q + 1, len) ^ 1));
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

			/* Name complete: which header is it?  The first byte
			 * of transfer-encoding is not compared: a false match
			 * only makes the request pass. */
			m = (XPS__HNAME(lo, hi, L, "content-length") << 1) |
			    (XPS__HNAME(lo, hi, L, "connection") << 2) |
			    (XPS__HNAME(lo, hi, L, "user-agent") << 3) |
			    (XPS__HNAME(lo, hi, L, "host") << 4) |
			    (xps_zero64(L ^ 17) &
			     xps_zero64(lo ^ XPS_PACK_BE("transfer-encoding")) &
			     xps_zero64(hi ^ XPS_PACK_BE_HI("transfer-encoding"))) << 5 |
			    XPS__HNAME(lo, hi, L, "expect") << 6;
			m &= 0 - colon;
			/* cur_* bits 1-4 follow the header of this line;
			 * TE and Expect (5, 6) stick. */
			f = (f & ~(0x1e & (0 - colon))) | m;
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
			f &= ~(0x1e & (0 - lf));
		}
		if (!end) {
			if (p + i < len)
				req->flags |= XPS_F_TOO_BIG;
			goto more;
		}
		end = xps_forget(end);

		odd |= (f >> XPS__H_ODD_BIT) & 1;
		odd |= (f >> XPS__H_CLBAD_BIT) & 1;
		{
			__u64 n_cl = cnt & 0xffff, n_conn = (cnt >> 16) & 0xffff,
			      n_host = (cnt >> 32) & 0xffff,
			      cl_nd = (cnt >> 48) & 0xff, host_len = cnt >> 56;

			odd |= (n_cl > 1) | (cl_nd > 9) | (n_cl & xps_zero64(cl_nd));
			odd |= (n_host > 1) | (n_conn > 1) |
			       (n_host & xps_zero64(host_len));
			/* HTTP/1.1 without Host is a 400. */
			odd |= req->http_minor & xps_zero64(n_host);
			if (cl && !((f >> XPS__H_CLBAD_BIT) & 1) && cl_nd <= 9)
				req->flags |= XPS_HTTP_F_BODY;
		}
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
bad:
	__builtin_memset(req, 0, sizeof(*req));
	req->kind = XPS_REQ_MALFORMED;
	return req->kind;
}

/*
 * IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") of @secs since the epoch
 * into dst[0..29).  Days to civil date without loops (Howard Hinnant's
 * public-domain algorithm, re-derived here).
 */
XPS_INLINE void xps_http_fmt_date(__u8 *dst, __u64 secs)
{
	static const char wd[] = "ThuFriSatSunMonTueWed";
	static const char mo[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	__u64 days = secs / 86400, sod = secs % 86400;
	__u64 z = days + 719468, era = z / 146097, doe = z - era * 146097;
	__u64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	__u64 y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	__u64 mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1;
	__u64 m = mp < 10 ? mp + 3 : mp - 9, w = (days % 7) * 3;
	__u64 h = sod / 3600, mi = sod / 60 % 60, s = sod % 60;

	y += m <= 2;
	dst[0] = wd[w % 21];
	dst[1] = wd[(w + 1) % 21];
	dst[2] = wd[(w + 2) % 21];
	dst[3] = ',';
	dst[4] = ' ';
	dst[5] = '0' + d / 10;
	dst[6] = '0' + d % 10;
	dst[7] = ' ';
	dst[8] = mo[((m - 1) * 3) % 36];
	dst[9] = mo[((m - 1) * 3 + 1) % 36];
	dst[10] = mo[((m - 1) * 3 + 2) % 36];
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
}

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

/* Append n bytes of src (n <= 64) at dst[at]. */
XPS_INLINE __u32 xps_http__put(__u8 *dst, __u32 at, const __u8 *src, __u32 n)
{
	__u32 i;

	for (i = 0; i < 64; i++) {
		__u8 b;

		if (i >= n)
			break;
		b = src[i];
		XPS_OPAQUE(b);		/* no memcpy() on BPF */
		dst[XPS_IDX(at + i)] = b;
	}
	return at + n;
}

/*
 * Status lines nginx uses for the codes a method filter returns; the
 * HTML title and heading repeat it.
 */
XPS_INLINE const char *xps_http__reason(__u32 status, __u32 *n)
{
	switch (status) {
	case 403:
		*n = 13;
		return "403 Forbidden";
	case 404:
		*n = 13;
		return "404 Not Found";
	case 405:
		*n = 15;
		return "405 Not Allowed";
	case 429:
		*n = 21;
		return "429 Too Many Requests";
	}
	*n = 0;
	return "";
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
XPS_INLINE __u32 xps_http_encode_error(__u8 *dst, __u32 status,
				       const __u8 *server, __u32 server_len,
				       const __u8 *date, int keepalive,
				       int head)
{
	const char *reason;
	__u32 rn, at = 0, body, i;
	__u8 num[20];

	reason = xps_http__reason(status, &rn);
	if (!rn || server_len > 64)
		return 0;
	/* The body is fixed text around the reason (twice) and the server. */
	body = sizeof("<html>\r\n<head><title>") - 1 + rn +
	       sizeof("</title></head>\r\n<body>\r\n<center><h1>") - 1 + rn +
	       sizeof("</h1></center>\r\n<hr><center>") - 1 + server_len +
	       sizeof("</center>\r\n</body>\r\n</html>\r\n") - 1;

	XPS__PUTS(dst, at, "HTTP/1.1 ");
	at = xps_http__put(dst, at, (const __u8 *)reason, rn);
	XPS__PUTS(dst, at, "\r\nServer: ");
	at = xps_http__put(dst, at, server, server_len);
	XPS__PUTS(dst, at, "\r\nDate: ");
	at = xps_http__put(dst, at, date, XPS_HTTP_DATE_LEN);
	XPS__PUTS(dst, at, "\r\nContent-Type: text/html\r\nContent-Length: ");
	rn = xps_fmt_u64(num, body);
	at = xps_http__put(dst, at, num, rn);
	if (keepalive)
		XPS__PUTS(dst, at, "\r\nConnection: keep-alive\r\n\r\n");
	else
		XPS__PUTS(dst, at, "\r\nConnection: close\r\n\r\n");
	if (head)
		return at;
	reason = xps_http__reason(status, &rn);
	XPS__PUTS(dst, at, "<html>\r\n<head><title>");
	at = xps_http__put(dst, at, (const __u8 *)reason, rn);
	XPS__PUTS(dst, at, "</title></head>\r\n<body>\r\n<center><h1>");
	at = xps_http__put(dst, at, (const __u8 *)reason, rn);
	XPS__PUTS(dst, at, "</h1></center>\r\n<hr><center>");
	at = xps_http__put(dst, at, server, server_len);
	XPS__PUTS(dst, at, "</center>\r\n</body>\r\n</html>\r\n");
	(void)i;
	return at;
}

#endif /* __XPS_PROTO_HTTP_BPF_H */
