/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reply framing: where each reply a service writes ends, for Redis RESP2,
 * the memcached text protocol, HTTP/1.x responses, Redis Cluster bus
 * messages, line protocols (one line per reply) and NATS routes
 * (nats.bpf.h: messages, none of them answering the other side).  The
 * framework feeds every byte a connection sends, in stream order,
 * through xps_reply_byte() (or passes over xps_reply.skip bytes unread
 * and calls xps_reply_skipped(), or passes over the bytes before the one
 * xps_reply_scan() says the machine waits for, with xps_reply_pass()),
 * and counts the replies that end against the requests the handler
 * passed (docs/ordering.md).
 *
 * The one property that matters: a reply is never reported complete before
 * its last byte.  Anything these parsers do not model exactly (a reply type
 * they do not know, a body delimited by the connection's close, RESP3)
 * returns XPS_RB_ERR, and the connection leaves the fast path for good.
 *
 * Byte-at-a-time state machines over struct xps_reply (include/xps/abi.h),
 * with no buffer: a reply may be split anywhere across segments.  Compiled
 * for BPF (the framework's TC egress program) and for the host (unit tests).
 */
#ifndef __XPS_PROTO_REPLY_BPF_H
#define __XPS_PROTO_REPLY_BPF_H

#include "common.bpf.h"
#include <xps/abi.h>

enum xps_rb {
	XPS_RB_ERR = -1,	/* cannot frame this stream: stop counting */
	XPS_RB_MORE = 0,	/* byte taken, the reply goes on */
	XPS_RB_DONE = 1,	/* this byte ended a reply */
};

/* Numbers beyond this are not replies a service sends: give up. */
#define XPS_RB_NUM_MAX		(1ULL << 40)

XPS_INLINE void xps__rb_reset(struct xps_reply *r)
{
	__u8 proto = r->proto;

	__builtin_memset(r, 0, sizeof(*r));
	r->proto = proto;
}

XPS_INLINE int xps__rb_digit(__u8 c)
{
	return c >= '0' && c <= '9';
}

/* ---- Redis RESP2 ----------------------------------------------------- */

/*
 * pending: values still to read before the reply ends (0: between
 * replies).  An array of n adds its n elements and completes itself, so
 * nesting needs no stack.  aux: '$' or '*' while their count is read.
 */
enum { XPS_RESP_TYPE, XPS_RESP_LINE, XPS_RESP_NUM };
#define XPS_RESP_NEG	1

XPS_INLINE int xps__resp_value_done(struct xps_reply *r)
{
	r->st = XPS_RESP_TYPE;
	if (r->pending)
		r->pending--;
	return r->pending ? XPS_RB_MORE : XPS_RB_DONE;
}

XPS_INLINE int xps__resp_byte(struct xps_reply *r, __u8 c)
{
	switch (r->st) {
	case XPS_RESP_TYPE:
		if (!r->pending)
			r->pending = 1;
		if (c == '+' || c == '-' || c == ':') {
			r->st = XPS_RESP_LINE;
			return XPS_RB_MORE;
		}
		if (c == '$' || c == '*') {
			r->aux = c;
			r->num = 0;
			r->pos = 0;
			r->flags = 0;
			r->st = XPS_RESP_NUM;
			return XPS_RB_MORE;
		}
		return XPS_RB_ERR;	/* RESP3, or not RESP at all */
	case XPS_RESP_LINE:
		return c == '\n' ? xps__resp_value_done(r) : XPS_RB_MORE;
	case XPS_RESP_NUM:
		if (c == '-' && !r->pos) {
			r->flags |= XPS_RESP_NEG;
			r->pos = 1;
			return XPS_RB_MORE;
		}
		if (xps__rb_digit(c)) {
			if (r->num >= XPS_RB_NUM_MAX)
				return XPS_RB_ERR;
			r->num = r->num * 10 + (c - '0');
			r->pos = 2;
			return XPS_RB_MORE;
		}
		if (c == '\r')
			return XPS_RB_MORE;
		if (c != '\n' || r->pos != 2)
			return XPS_RB_ERR;
		if (r->flags & XPS_RESP_NEG) {
			/* $-1, *-1: null; nothing else is negative */
			if (r->num != 1)
				return XPS_RB_ERR;
			return xps__resp_value_done(r);
		}
		if (r->aux == '$') {
			/* data and its CRLF; xps_reply_skipped() ends it */
			r->skip = r->num + 2;
			r->st = XPS_RESP_TYPE;
			return XPS_RB_MORE;
		}
		if (!r->num)
			return xps__resp_value_done(r);
		if (r->num > 0xffffffffULL - r->pending)
			return XPS_RB_ERR;
		/* the array is read; its elements are pending instead */
		r->pending += (__u32)r->num - 1;
		r->st = XPS_RESP_TYPE;
		return XPS_RB_MORE;
	}
	return XPS_RB_ERR;
}

/* ---- memcached text protocol ----------------------------------------- */

/*
 * A reply is one line, or a VALUE/STAT/ITEM block ended by END; VALUE and
 * the meta VA line are followed by a data block whose size they give.
 * pending: the class of the current line; num: its first word (the first
 * 8 bytes, packed), then the size token; pos: length of the first word;
 * aux: index of the token being read.
 */
enum { XPS_MC_R_WORD, XPS_MC_R_REST };
enum {
	XPS_MC_R_NONE,
	XPS_MC_R_VALUE,		/* VALUE <key> <flags> <bytes> [<cas>] */
	XPS_MC_R_VA,		/* VA <bytes> <flags>* (meta get) */
	XPS_MC_R_ITEM,		/* STAT, ITEM: a line of a block */
	XPS_MC_R_END,		/* END */
	XPS_MC_R_ONE,		/* a reply of one line */
};
#define XPS_MC_R_BLOCK		1	/* inside a VALUE/STAT/ITEM block */
#define XPS_MC_R_NOTNUM		2	/* first word: not all digits */
#define XPS_MC_R_SIZE		2	/* rest of the line: size token read */

#define XPS__PK(a, b, c, d, e, f, g, h)					\
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 |		\
	 (__u64)(d) << 24 | (__u64)(e) << 32 | (__u64)(f) << 40 |	\
	 (__u64)(g) << 48 | (__u64)(h) << 56)

/* The first word's class, from its first 8 bytes and its length. */
XPS_INLINE __u32 xps__mc_class(__u64 w, __u32 len, int num)
{
	if (num && len)
		return XPS_MC_R_ONE;		/* incr/decr */
	switch (len) {
	case 2:
		if (w == XPS__PK('V', 'A', 0, 0, 0, 0, 0, 0))
			return XPS_MC_R_VA;
		if (w == XPS__PK('O', 'K', 0, 0, 0, 0, 0, 0) ||
		    w == XPS__PK('H', 'D', 0, 0, 0, 0, 0, 0) ||
		    w == XPS__PK('N', 'F', 0, 0, 0, 0, 0, 0) ||
		    w == XPS__PK('N', 'S', 0, 0, 0, 0, 0, 0) ||
		    w == XPS__PK('E', 'X', 0, 0, 0, 0, 0, 0) ||
		    w == XPS__PK('E', 'N', 0, 0, 0, 0, 0, 0) ||
		    w == XPS__PK('M', 'N', 0, 0, 0, 0, 0, 0) ||
		    w == XPS__PK('M', 'E', 0, 0, 0, 0, 0, 0))
			return XPS_MC_R_ONE;
		break;
	case 3:
		if (w == XPS__PK('E', 'N', 'D', 0, 0, 0, 0, 0))
			return XPS_MC_R_END;
		break;
	case 4:
		if (w == XPS__PK('S', 'T', 'A', 'T', 0, 0, 0, 0) ||
		    w == XPS__PK('I', 'T', 'E', 'M', 0, 0, 0, 0))
			return XPS_MC_R_ITEM;
		break;
	case 5:
		if (w == XPS__PK('V', 'A', 'L', 'U', 'E', 0, 0, 0))
			return XPS_MC_R_VALUE;
		if (w == XPS__PK('E', 'R', 'R', 'O', 'R', 0, 0, 0) ||
		    w == XPS__PK('R', 'E', 'S', 'E', 'T', 0, 0, 0))
			return XPS_MC_R_ONE;
		break;
	case 6:
		if (w == XPS__PK('S', 'T', 'O', 'R', 'E', 'D', 0, 0) ||
		    w == XPS__PK('E', 'X', 'I', 'S', 'T', 'S', 0, 0))
			return XPS_MC_R_ONE;
		break;
	case 7:
		if (w == XPS__PK('D', 'E', 'L', 'E', 'T', 'E', 'D', 0) ||
		    w == XPS__PK('T', 'O', 'U', 'C', 'H', 'E', 'D', 0) ||
		    w == XPS__PK('V', 'E', 'R', 'S', 'I', 'O', 'N', 0))
			return XPS_MC_R_ONE;
		break;
	case 9:
		if (w == XPS__PK('N', 'O', 'T', '_', 'F', 'O', 'U', 'N'))
			return XPS_MC_R_ONE;
		break;
	case 10:
		if (w == XPS__PK('N', 'O', 'T', '_', 'S', 'T', 'O', 'R'))
			return XPS_MC_R_ONE;
		break;
	case 12:
		if (w == XPS__PK('C', 'L', 'I', 'E', 'N', 'T', '_', 'E') ||
		    w == XPS__PK('S', 'E', 'R', 'V', 'E', 'R', '_', 'E'))
			return XPS_MC_R_ONE;
		break;
	}
	return XPS_MC_R_NONE;
}

/* The line ended ('\n'). */
XPS_INLINE int xps__mc_eol(struct xps_reply *r)
{
	__u32 cls = r->pending;
	int block = r->flags & XPS_MC_R_BLOCK;

	r->st = XPS_MC_R_WORD;
	r->pos = 0;
	r->aux = 0;
	r->pending = XPS_MC_R_NONE;
	switch (cls) {
	case XPS_MC_R_VALUE:
	case XPS_MC_R_VA:
		/* the size token must have been read */
		if (!(r->flags & XPS_MC_R_SIZE))
			return XPS_RB_ERR;
		r->skip = r->num + 2;
		r->num = 0;
		r->flags = (cls == XPS_MC_R_VALUE ? XPS_MC_R_BLOCK : 0);
		/* VA ends after its data: the class tells xps_reply_skipped() */
		r->pending = cls;
		return XPS_RB_MORE;
	case XPS_MC_R_ITEM:
		r->flags = XPS_MC_R_BLOCK;
		r->num = 0;
		return XPS_RB_MORE;
	case XPS_MC_R_END:
	case XPS_MC_R_ONE:
		if (block && cls != XPS_MC_R_END)
			return XPS_RB_ERR;	/* an error inside a block */
		r->flags = 0;
		r->num = 0;
		return XPS_RB_DONE;
	}
	return XPS_RB_ERR;
}

XPS_INLINE int xps__mc_byte(struct xps_reply *r, __u8 c)
{
	__u32 cls;

	if (r->st == XPS_MC_R_WORD) {
		if (c != ' ' && c != '\r' && c != '\n') {
			if (!xps__rb_digit(c))
				r->flags |= XPS_MC_R_NOTNUM;
			if (r->pos < 8)
				r->num |= (__u64)c << (8 * r->pos);
			if (r->pos < 0xffff)
				r->pos++;
			return XPS_RB_MORE;
		}
		cls = xps__mc_class(r->num, r->pos,
				    !(r->flags & XPS_MC_R_NOTNUM));
		if (cls == XPS_MC_R_NONE)
			return XPS_RB_ERR;
		/* a VALUE block holds VALUE lines and ends with END only */
		if ((r->flags & XPS_MC_R_BLOCK) && cls == XPS_MC_R_VA)
			return XPS_RB_ERR;
		r->pending = cls;
		r->num = 0;
		/* from here the bit means XPS_MC_R_SIZE */
		r->flags &= XPS_MC_R_BLOCK;
		r->aux = 1;
		r->st = XPS_MC_R_REST;
		if (c == '\n')
			return xps__mc_eol(r);
		if (c == '\r')
			r->aux = 0xff;	/* nothing follows the word */
		return XPS_RB_MORE;
	}
	/* rest of the line: find the size token of VALUE (3) and VA (1) */
	if (c == '\n')
		return xps__mc_eol(r);
	if (c == ' ') {
		if (r->aux < 0xfe)
			r->aux++;
		return XPS_RB_MORE;
	}
	if (c == '\r')
		return XPS_RB_MORE;
	/* aux: index of the token being read (the first word is 0) */
	if ((r->pending == XPS_MC_R_VALUE && r->aux == 3) ||
	    (r->pending == XPS_MC_R_VA && r->aux == 1)) {
		if (!xps__rb_digit(c) || r->num >= XPS_RB_NUM_MAX)
			return XPS_RB_ERR;
		r->num = r->num * 10 + (c - '0');
		r->flags |= XPS_MC_R_SIZE;
	}
	return XPS_RB_MORE;
}

/* ---- HTTP/1.x responses ---------------------------------------------- */

/*
 * pending: the status code; num: Content-Length or the chunk size; pos:
 * bytes of the current line; aux: header names still matching (bit 0
 * content-length, bit 1 transfer-encoding).  1xx responses are interim:
 * the reply goes on after them.  A body without Content-Length or chunked
 * encoding runs to the close of the connection: not countable.
 */
enum {
	XPS_HTTP_R_STATUS,	/* status line */
	XPS_HTTP_R_HDR,		/* start of a header line */
	XPS_HTTP_R_NAME,	/* header name */
	XPS_HTTP_R_CL,		/* Content-Length value */
	XPS_HTTP_R_TE,		/* Transfer-Encoding value */
	XPS_HTTP_R_SKIP,	/* rest of a header line */
	XPS_HTTP_R_BODY,	/* Content-Length body (skipped) */
	XPS_HTTP_R_CHUNK,	/* chunk size line */
	XPS_HTTP_R_CHUNK_EXT,	/* chunk extension */
	XPS_HTTP_R_TRAILER,	/* start of a trailer line */
	XPS_HTTP_R_TRAILER_LINE,
};
#define XPS_HTTP_R_BUSY		1	/* a response has begun */
#define XPS_HTTP_R_HAS_CL	2
#define XPS_HTTP_R_CHUNKED	4
#define XPS_HTTP_R_TE_OTHER	8	/* a coding other than "chunked" */
#define XPS_HTTP_R_SP		16	/* status line: the space was seen */

/*
 * Constant strings packed in little-endian words: no tables in .rodata,
 * which the verifier would want bounds proofs for.
 */
#define XPS_HTTP_V		XPS__PK('H', 'T', 'T', 'P', '/', 0, 0, 0)
#define XPS_HTTP_CL0		XPS__PK('c', 'o', 'n', 't', 'e', 'n', 't', '-')
#define XPS_HTTP_CL1		XPS__PK('l', 'e', 'n', 'g', 't', 'h', 0, 0)
#define XPS_HTTP_TE0		XPS__PK('t', 'r', 'a', 'n', 's', 'f', 'e', 'r')
#define XPS_HTTP_TE1		XPS__PK('-', 'e', 'n', 'c', 'o', 'd', 'i', 'n')
#define XPS_HTTP_TE2		XPS__PK('g', 0, 0, 0, 0, 0, 0, 0)
#define XPS_HTTP_CHUNKED	XPS__PK('c', 'h', 'u', 'n', 'k', 'e', 'd', 0)
#define XPS_CLUSTER_SIG		XPS__PK('R', 'C', 'm', 'b', 0, 0, 0, 0)
#define XPS_HTTP_CL_LEN		14
#define XPS_HTTP_TE_LEN		17
#define XPS_HTTP_CHUNKED_LEN	7

/* Byte @p (< 24) of a string packed as above in @w0, @w1, @w2. */
XPS_INLINE __u8 xps__pk_at(__u64 w0, __u64 w1, __u64 w2, __u32 p)
{
	__u64 w = p < 8 ? w0 : p < 16 ? w1 : w2;

	return (__u8)(w >> (8 * (p & 7)));
}

XPS_INLINE __u8 xps__lower(__u8 c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

XPS_INLINE int xps__http_done(struct xps_reply *r)
{
	xps__rb_reset(r);
	return XPS_RB_DONE;
}

/* The empty line after the headers: where does the body end? */
XPS_INLINE int xps__http_head_end(struct xps_reply *r, int nobody)
{
	__u32 status = r->pending;

	r->pos = 0;
	if (status == 101)
		return XPS_RB_ERR;	/* another protocol from here on */
	if (status < 200) {
		/* interim (100 Continue): the final response follows */
		r->st = XPS_HTTP_R_STATUS;
		r->flags = XPS_HTTP_R_BUSY;
		r->pending = 0;
		r->aux = 0;
		r->num = 0;
		return XPS_RB_MORE;
	}
	if (r->flags & XPS_HTTP_R_TE_OTHER)
		return XPS_RB_ERR;
	if (nobody || status == 204 || status == 304)
		return xps__http_done(r);
	if (r->flags & XPS_HTTP_R_CHUNKED) {
		r->st = XPS_HTTP_R_CHUNK;
		r->num = 0;
		return XPS_RB_MORE;
	}
	if (!(r->flags & XPS_HTTP_R_HAS_CL))
		return XPS_RB_ERR;	/* delimited by close */
	if (!r->num)
		return xps__http_done(r);
	r->skip = r->num;
	r->st = XPS_HTTP_R_BODY;
	return XPS_RB_MORE;
}

XPS_INLINE int xps__hex(__u8 c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = xps__lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* End of a chunk size line: the last chunk, or data and its CRLF. */
XPS_INLINE int xps__http_chunk_eol(struct xps_reply *r)
{
	if (!r->pos)
		return XPS_RB_ERR;
	if (!r->num) {
		r->st = XPS_HTTP_R_TRAILER;
		r->pos = 0;
		return XPS_RB_MORE;
	}
	r->skip = r->num + 2;
	r->num = 0;
	r->pos = 0;
	r->st = XPS_HTTP_R_CHUNK;
	return XPS_RB_MORE;
}

/* A byte of a header name: Content-Length and Transfer-Encoding matter. */
XPS_INLINE int xps__http_name_byte(struct xps_reply *r, __u8 c)
{
	__u32 p = r->pos;

	if (c == ':') {
		r->pos = 0;
		if ((r->aux & 1) && p == XPS_HTTP_CL_LEN) {
			if (r->flags & XPS_HTTP_R_HAS_CL)
				return XPS_RB_ERR;
			r->flags |= XPS_HTTP_R_HAS_CL;
			r->num = 0;
			r->st = XPS_HTTP_R_CL;
		} else if ((r->aux & 2) && p == XPS_HTTP_TE_LEN) {
			r->st = XPS_HTTP_R_TE;
			r->aux = 0;
		} else {
			r->st = XPS_HTTP_R_SKIP;
		}
		return XPS_RB_MORE;
	}
	if (c == '\n')
		return XPS_RB_ERR;
	c = xps__lower(c);
	if (p >= XPS_HTTP_CL_LEN ||
	    c != xps__pk_at(XPS_HTTP_CL0, XPS_HTTP_CL1, 0, p))
		r->aux &= ~1;
	if (p >= XPS_HTTP_TE_LEN ||
	    c != xps__pk_at(XPS_HTTP_TE0, XPS_HTTP_TE1, XPS_HTTP_TE2, p))
		r->aux &= ~2;
	if (p < 0xffff)
		r->pos++;
	return XPS_RB_MORE;
}

XPS_INLINE int xps__http_byte(struct xps_reply *r, __u8 c, int nobody)
{
	__u32 p = r->pos;
	int h;

	switch (r->st) {
	case XPS_HTTP_R_STATUS:
		r->flags |= XPS_HTTP_R_BUSY;
		if (p < 0xffff)
			r->pos++;
		if (c == '\n') {
			if (r->pending < 100 || r->pending > 999)
				return XPS_RB_ERR;
			r->st = XPS_HTTP_R_HDR;
			r->pos = 0;
			return XPS_RB_MORE;
		}
		/* "HTTP/1.x NNN ...": the status follows the first space */
		if (p < 5 && c != xps__pk_at(XPS_HTTP_V, 0, 0, p))
			return XPS_RB_ERR;
		if (!(r->flags & XPS_HTTP_R_SP)) {
			if (c == ' ')
				r->flags |= XPS_HTTP_R_SP;
			return XPS_RB_MORE;
		}
		if (r->aux < 3) {
			if (!xps__rb_digit(c))
				return XPS_RB_ERR;
			r->pending = r->pending * 10 + (c - '0');
			r->aux++;
		}
		return XPS_RB_MORE;
	case XPS_HTTP_R_HDR:
		if (c == '\r')
			return XPS_RB_MORE;
		if (c == '\n')
			return xps__http_head_end(r, nobody);
		r->st = XPS_HTTP_R_NAME;
		r->pos = 0;
		r->aux = 3;	/* both names still match */
		return xps__http_name_byte(r, c);
	case XPS_HTTP_R_NAME:
		return xps__http_name_byte(r, c);
	case XPS_HTTP_R_CL:
		if (c == ' ' || c == '\t' || c == '\r')
			return XPS_RB_MORE;
		if (c == '\n') {
			if (!r->pos)
				return XPS_RB_ERR;
			r->st = XPS_HTTP_R_HDR;
			r->pos = 0;
			return XPS_RB_MORE;
		}
		if (!xps__rb_digit(c) || r->num >= XPS_RB_NUM_MAX)
			return XPS_RB_ERR;
		r->num = r->num * 10 + (c - '0');
		r->pos = 1;
		return XPS_RB_MORE;
	case XPS_HTTP_R_TE:
		if (c == '\n') {
			if (r->pos == XPS_HTTP_CHUNKED_LEN &&
			    !(r->aux & 1))
				r->flags |= XPS_HTTP_R_CHUNKED;
			else
				r->flags |= XPS_HTTP_R_TE_OTHER;
			r->st = XPS_HTTP_R_HDR;
			r->pos = 0;
			return XPS_RB_MORE;
		}
		if (c == ' ' || c == '\t' || c == '\r')
			return XPS_RB_MORE;
		/* aux bit 0: not "chunked" (nginx sends exactly that) */
		if (p >= XPS_HTTP_CHUNKED_LEN ||
		    xps__lower(c) != xps__pk_at(XPS_HTTP_CHUNKED, 0, 0, p))
			r->aux |= 1;
		if (p < 0xffff)
			r->pos++;
		return XPS_RB_MORE;
	case XPS_HTTP_R_SKIP:
		if (c == '\n') {
			r->st = XPS_HTTP_R_HDR;
			r->pos = 0;
		}
		return XPS_RB_MORE;
	case XPS_HTTP_R_CHUNK:
		if (c == '\r')
			return XPS_RB_MORE;
		if (c == '\n')
			return xps__http_chunk_eol(r);
		if (c == ';' || c == ' ' || c == '\t') {
			r->st = XPS_HTTP_R_CHUNK_EXT;
			return XPS_RB_MORE;
		}
		h = xps__hex(c);
		if (h < 0 || r->num >= XPS_RB_NUM_MAX)
			return XPS_RB_ERR;
		r->num = r->num * 16 + h;
		r->pos = 1;
		return XPS_RB_MORE;
	case XPS_HTTP_R_CHUNK_EXT:
		if (c == '\n')
			return xps__http_chunk_eol(r);
		return XPS_RB_MORE;
	case XPS_HTTP_R_TRAILER:
		if (c == '\r')
			return XPS_RB_MORE;
		if (c == '\n')
			return xps__http_done(r);
		r->st = XPS_HTTP_R_TRAILER_LINE;
		return XPS_RB_MORE;
	case XPS_HTTP_R_TRAILER_LINE:
		if (c == '\n')
			r->st = XPS_HTTP_R_TRAILER;
		return XPS_RB_MORE;
	}
	return XPS_RB_ERR;
}

/* ---- Redis Cluster bus --------------------------------------------- */

/* "RCmb", then the message's total length (big endian), then the rest. */
#define XPS_CLUSTER_R_HDR	8
#define XPS_CLUSTER_R_MAX	(1U << 26)

XPS_INLINE int xps__cluster_byte(struct xps_reply *r, __u8 c)
{
	__u32 p = r->pos;

	if (p < 4) {
		if (c != xps__pk_at(XPS_CLUSTER_SIG, 0, 0, p))
			return XPS_RB_ERR;
		r->pos++;
		return XPS_RB_MORE;
	}
	r->num = (r->num << 8) | c;
	r->pos++;
	if (r->pos < XPS_CLUSTER_R_HDR)
		return XPS_RB_MORE;
	if (r->num < XPS_CLUSTER_R_HDR || r->num > XPS_CLUSTER_R_MAX)
		return XPS_RB_ERR;
	if (r->num == XPS_CLUSTER_R_HDR) {
		xps__rb_reset(r);
		return XPS_RB_DONE;
	}
	r->skip = r->num - XPS_CLUSTER_R_HDR;
	return XPS_RB_MORE;
}

/* ---- lines ---------------------------------------------------------- */

/* pos: 1 inside a line, 0 between lines. */
XPS_INLINE int xps__line_byte(struct xps_reply *r, __u8 c)
{
	if (c == '\n') {
		r->pos = 0;
		return XPS_RB_DONE;
	}
	r->pos = 1;
	return XPS_RB_MORE;
}

/* ---- the interface -------------------------------------------------- */

/*
 * One byte of the stream, not inside r->skip.  @nobody: the reply being
 * read answers a request whose reply has no body (HTTP HEAD).
 */
#include "nats.bpf.h"

XPS_INLINE int xps_reply_byte(struct xps_reply *r, __u8 c, int nobody)
{
	switch (r->proto) {
	case XPS_REPLY_RESP:
		return xps__resp_byte(r, c);
	case XPS_REPLY_MEMCACHED:
		return xps__mc_byte(r, c);
	case XPS_REPLY_HTTP:
		return xps__http_byte(r, c, nobody);
	case XPS_REPLY_CLUSTER:
		return xps__cluster_byte(r, c);
	case XPS_REPLY_LINE:
		return xps__line_byte(r, c);
	case XPS_REPLY_NATS:
		return xps__nats_byte(r, c);
	}
	return XPS_RB_ERR;
}

/* The caller passed over r->skip bytes (now 0): what did they end? */
XPS_INLINE int xps_reply_skipped(struct xps_reply *r)
{
	switch (r->proto) {
	case XPS_REPLY_RESP:
		return xps__resp_value_done(r);
	case XPS_REPLY_MEMCACHED:
		if (r->pending == XPS_MC_R_VA) {
			r->pending = XPS_MC_R_NONE;
			r->flags = 0;
			return XPS_RB_DONE;
		}
		r->pending = XPS_MC_R_NONE;
		return XPS_RB_MORE;	/* the next VALUE, or END */
	case XPS_REPLY_HTTP:
		if (r->st == XPS_HTTP_R_BODY)
			return xps__http_done(r);
		return XPS_RB_MORE;	/* the next chunk size line */
	case XPS_REPLY_CLUSTER:
	case XPS_REPLY_NATS:
		xps__rb_reset(r);
		return XPS_RB_DONE;
	}
	return XPS_RB_ERR;
}

/* Between two replies: the next byte, if any, begins a new one. */
XPS_INLINE int xps_reply_idle(const struct xps_reply *r)
{
	if (r->skip)
		return 0;
	switch (r->proto) {
	case XPS_REPLY_RESP:
		return !r->pending;
	case XPS_REPLY_MEMCACHED:
		return r->st == XPS_MC_R_WORD && !r->pos &&
		       !(r->flags & XPS_MC_R_BLOCK);
	case XPS_REPLY_HTTP:
		return !(r->flags & XPS_HTTP_R_BUSY);
	case XPS_REPLY_CLUSTER:
	case XPS_REPLY_LINE:
	case XPS_REPLY_NATS:
		return !r->pos;
	}
	return 1;
}

/*
 * Bytes the machine, in its present state, only waits past: 0 when every
 * byte matters; else which bytes end the wait (XPS_RB_SCAN_LF: '\n';
 * XPS_RB_SCAN_COLON: ':' too).  The bytes before the first of them may be
 * passed over with xps_reply_pass() instead of fed one at a time: the
 * same state results (an HTTP header the framing ignores, its name once
 * it is neither Content-Length nor Transfer-Encoding, the status line's
 * reason phrase, a chunk extension, a trailer line).
 */
#define XPS_RB_SCAN_LF		1
#define XPS_RB_SCAN_COLON	2

XPS_INLINE int xps_reply_scan(const struct xps_reply *r)
{
	if (r->proto != XPS_REPLY_HTTP || r->skip)
		return 0;
	switch (r->st) {
	case XPS_HTTP_R_SKIP:
	case XPS_HTTP_R_CHUNK_EXT:
	case XPS_HTTP_R_TRAILER_LINE:
		return XPS_RB_SCAN_LF;
	case XPS_HTTP_R_STATUS:
		/* past "HTTP/", the space and the three digits */
		return (r->flags & XPS_HTTP_R_SP) && r->aux >= 3 &&
		       r->pos >= 5 ? XPS_RB_SCAN_LF : 0;
	case XPS_HTTP_R_NAME:
		return r->aux ? 0 : XPS_RB_SCAN_LF | XPS_RB_SCAN_COLON;
	}
	return 0;
}

/*
 * Pass over @n bytes that xps_reply_scan() said end no wait: what feeding
 * them one at a time would change, the position the two states that count
 * one keep.
 */
XPS_INLINE void xps_reply_pass(struct xps_reply *r, __u32 n)
{
	__u32 p = r->pos + n;

	if (r->st == XPS_HTTP_R_STATUS || r->st == XPS_HTTP_R_NAME)
		r->pos = p < 0xffff ? p : 0xffff;
}

/*
 * A short reply taken whole instead of byte by byte: @n (2-8) bytes,
 * packed little-endian in @w (the first byte lowest, the bytes past @n
 * zero), beginning between two replies.  Returns 1 when they are exactly
 * one reply, leaving @r as feeding them to xps_reply_byte() would (the
 * unit test compares the two): a Redis simple string, error or integer
 * ("+OK\r\n", ":1\r\n") or memcached's "STORED\r\n", the acknowledgements
 * of writes.  0, with @r untouched, for anything else: the caller feeds
 * the bytes one at a time.
 */
XPS_INLINE int xps_reply_short(struct xps_reply *r, __u64 w, __u32 n)
{
	const __u64 ones = 0x0101010101010101ULL;
	__u64 t, mask;
	__u8 c;

	if (n < 2 || n > 8 || r->skip || (n < 8 && (w >> (n * 8))))
		return 0;
	switch (r->proto) {
	case XPS_REPLY_RESP:
		c = (__u8)w;
		if (r->pending || r->st != XPS_RESP_TYPE ||
		    (c != '+' && c != '-' && c != ':') ||
		    (__u8)(w >> ((n - 1) * 8)) != '\n')
			return 0;
		/* no '\n' before the last byte: a zero byte of t there */
		t = w ^ ('\n' * ones);
		mask = (1ULL << ((n - 1) * 8)) - 1;
		if ((t - ones) & ~t & (0x80 * ones) & mask)
			return 0;
		/* '+' ... '\n' leaves the machine as it found it */
		return 1;
	case XPS_REPLY_MEMCACHED:
		if (n != 8 || w != XPS__PK('S', 'T', 'O', 'R', 'E', 'D', '\r', '\n') ||
		    r->st != XPS_MC_R_WORD || r->pos || r->flags || r->num ||
		    r->aux || r->pending != XPS_MC_R_NONE)
			return 0;
		return 1;	/* a one-line reply, from and back to this state */
	}
	return 0;
}

/* Whether the byte @c ends a wait xps_reply_scan() said is @scan. */
XPS_INLINE int xps_reply_scan_end(int scan, __u8 c)
{
	return c == '\n' || ((scan & XPS_RB_SCAN_COLON) && c == ':');
}

#endif /* __XPS_PROTO_REPLY_BPF_H */
