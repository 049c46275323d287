/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The NATS route protocol (nats-server 2.9), as far as XPS reads it:
 * where each message of a route's byte stream ends, in either direction,
 * and the tokens of a protocol line.  Checked against the parser of the
 * Debian nats-server 2.9.10 (server/parser.go, route.go):
 *
 *  - A message is one protocol line ending in '\n'; after the line of a
 *    payload operation (PUB, HPUB, MSG, HMSG, RMSG, LMSG) come as many
 *    bytes as its last argument says, then "\r\n".  The operation name is
 *    case-insensitive; arguments are separated by spaces, tabs and '\r'.
 *  - RMSG <account> <subject> [<reply>] <size> is how a route carries a
 *    message (a queue form puts '+' or '|' and queue names before the
 *    size); HMSG adds a header size before the total size.
 *
 * The framing is a byte-at-a-time state machine over struct xps_reply
 * (include/xps/abi.h), no buffer: egress feeds it every byte a route
 * sends, the NATS handler every byte it receives, each split anywhere.
 * xps_nats_line() reads one whole line from a buffer.  Compiled for BPF
 * and for the host (tests/unit/test_reply.c, test_nats.c).
 */
/* the framing primitives first (reply.bpf.h includes this file) */
#include "reply.bpf.h"

#ifndef __XPS_PROTO_NATS_BPF_H
#define __XPS_PROTO_NATS_BPF_H

/* Lines longer than this are framed but never read whole. */
#define XPS_NATS_LINE_MAX	128
/* Arguments of a line xps_nats_line() keeps (after the operation). */
#define XPS_NATS_ARGS		6
/* nats-server's own ceiling for max_payload */
#define XPS_NATS_PAYLOAD_MAX	(64u << 20)
#define XPS_NATS_NOSIZE		0xffffffffu

/* xps_reply.st */
enum { XPS_NATS_R_OP, XPS_NATS_R_ARGS };
/* xps_reply.flags */
#define XPS_NATS_R_TOK		1	/* inside an argument */
#define XPS_NATS_R_NUM		2	/* the argument is digits so far */
#define XPS_NATS_R_LONG		4	/* the operation is longer than 4 */

/* What a line's operation is (xps_reply.aux, struct xps_nats_line.op). */
enum xps_nats_op {
	XPS_NATS_OP_LINE = 0,	/* no payload follows (PING, RS+, INFO...) */
	XPS_NATS_OP_PAYLOAD,	/* PUB, HPUB, MSG, HMSG, LMSG: a payload */
	XPS_NATS_OP_RMSG,	/* RMSG: a payload */
};

/* Operation words, upper-cased and packed little-endian. */
#define XPS__NATS_W3(a, b, c)	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16)
#define XPS__NATS_W4(a, b, c, d) (XPS__NATS_W3(a, b, c) | (__u64)(d) << 24)

XPS_INLINE __u8 xps__nats_op(__u64 word, __u32 n)
{
	if (n == 3 && (word == XPS__NATS_W3('P', 'U', 'B') ||
		       word == XPS__NATS_W3('M', 'S', 'G')))
		return XPS_NATS_OP_PAYLOAD;
	if (n != 4)
		return XPS_NATS_OP_LINE;
	if (word == XPS__NATS_W4('R', 'M', 'S', 'G'))
		return XPS_NATS_OP_RMSG;
	if (word == XPS__NATS_W4('H', 'P', 'U', 'B') ||
	    word == XPS__NATS_W4('H', 'M', 'S', 'G') ||
	    word == XPS__NATS_W4('L', 'M', 'S', 'G'))
		return XPS_NATS_OP_PAYLOAD;
	return XPS_NATS_OP_LINE;
}

XPS_INLINE int xps__nats_ws(__u8 c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The operation word ends: what it is, in aux. */
XPS_INLINE void xps__nats_op_end(struct xps_reply *r)
{
	r->aux = (r->flags & XPS_NATS_R_LONG) ? XPS_NATS_OP_LINE :
		 xps__nats_op(r->num, r->pos - 1);
	r->st = XPS_NATS_R_ARGS;
	r->flags = 0;
	r->num = 0;
	r->pending = XPS_NATS_NOSIZE;
}

/* An argument ends: pending keeps its value if it is a size. */
XPS_INLINE void xps__nats_arg_end(struct xps_reply *r)
{
	if (!(r->flags & XPS_NATS_R_TOK))
		return;
	r->pending = (r->flags & XPS_NATS_R_NUM) ? (__u32)r->num :
						     XPS_NATS_NOSIZE;
	r->flags &= ~(XPS_NATS_R_TOK | XPS_NATS_R_NUM);
}

XPS_INLINE int xps__nats_byte(struct xps_reply *r, __u8 c)
{
	if (r->pos < 0xffff)
		r->pos++;
	if (r->st == XPS_NATS_R_OP) {
		if (xps__nats_ws(c) || c == '\n') {
			/* a line of nothing but white space: no operation */
			xps__nats_op_end(r);
			if (c != '\n')
				return XPS_RB_MORE;
		} else {
			if (r->pos <= 4)
				r->num |= (__u64)(c & 0xdf) << (8 * (r->pos - 1));
			else
				r->flags |= XPS_NATS_R_LONG;
			return XPS_RB_MORE;
		}
	}
	if (c == '\n') {
		xps__nats_arg_end(r);
		if (r->aux == XPS_NATS_OP_LINE) {
			xps__rb_reset(r);
			return XPS_RB_DONE;
		}
		if (r->pending == XPS_NATS_NOSIZE ||
		    r->pending > XPS_NATS_PAYLOAD_MAX)
			return XPS_RB_ERR;	/* the server closes the route */
		/* the payload and its CRLF; xps_reply_skipped() ends it */
		r->skip = (__u64)r->pending + 2;
		r->pos = 0;
		return XPS_RB_MORE;
	}
	if (xps__nats_ws(c)) {
		xps__nats_arg_end(r);
		return XPS_RB_MORE;
	}
	if (!(r->flags & XPS_NATS_R_TOK)) {
		r->flags |= XPS_NATS_R_TOK | XPS_NATS_R_NUM;
		r->num = 0;
	}
	if ((r->flags & XPS_NATS_R_NUM) && c >= '0' && c <= '9' &&
	    r->num <= XPS_NATS_PAYLOAD_MAX)
		r->num = r->num * 10 + (c - '0');
	else
		r->flags &= ~XPS_NATS_R_NUM;
	return XPS_RB_MORE;
}

/* Between two messages (no payload or line under way). */
XPS_INLINE int xps__nats_idle(const struct xps_reply *r)
{
	return !r->skip && !r->pos;
}

/* ---- one whole line -------------------------------------------------- */

struct xps_nats_line {
	__u32 len;		/* bytes of the line, its '\n' included */
	__u32 nargs;		/* arguments after the operation (arg: the
				 * first XPS_NATS_ARGS of them) */
	__u32 size;		/* payload operations: the payload's size */
	__u32 msg_len;		/* the whole message: line, payload, CRLF */
	__u32 op;		/* enum xps_nats_op */
	__u32 pad;
	struct xps_span arg[XPS_NATS_ARGS];
};

/* A line, its bytes first: what global functions take. */
struct xps_nats_buf {
	__u8 b[XPS_NATS_LINE_MAX];
	struct xps_nats_line l;
};

struct xps__nats_lw {
	struct xps_nats_buf *nb;
	struct xps_reply r;
	__u32 len;
	__u32 in_arg;
	int res;
};

XPS_CALLBACK long xps__nats_line_step(__u64 i, void *ctx)
{
	struct xps__nats_lw *w = ctx;
	struct xps_nats_line *l = &w->nb->l;
	__u32 n;
	__u8 c;
	int r;

	if (i >= w->len || i >= XPS_NATS_LINE_MAX)
		return 1;
	c = w->nb->b[i & (XPS_NATS_LINE_MAX - 1)];
	r = xps__nats_byte(&w->r, c);
	if (r == XPS_RB_ERR) {
		w->res = -1;
		return 1;
	}
	if (w->r.st == XPS_NATS_R_ARGS && (w->r.flags & XPS_NATS_R_TOK)) {
		if (!w->in_arg) {
			/* arguments past XPS_NATS_ARGS are counted, not kept */
			w->in_arg = 1;
			n = l->nargs++;
			if (n < XPS_NATS_ARGS) {
				l->arg[n].off = i;
				l->arg[n].len = 0;
			}
		}
		n = l->nargs - 1;
		if (n < XPS_NATS_ARGS)
			l->arg[n].len++;
	} else {
		w->in_arg = 0;
	}
	if (c != '\n')
		return 0;
	l->len = i + 1;
	l->op = w->r.aux;
	if (r == XPS_RB_DONE) {
		l->msg_len = l->len;
		l->size = 0;
	} else {
		l->size = w->r.pending;
		l->msg_len = l->len + l->size + 2;
	}
	w->res = 1;
	return 1;
}

/*
 * Read the line at the start of @nb's first @len bytes (at most
 * XPS_NATS_LINE_MAX) into nb->l.  1: a whole line (nb->l says what it
 * is); 0: no '\n' in the bytes given; -1: a line the framing refuses.
 */
XPS_GLOBAL int xps_nats_line(struct xps_nats_buf *nb, __u32 len)
{
	struct xps__nats_lw w = {};

	if (!nb)
		return -1;
	__builtin_memset(&nb->l, 0, sizeof(nb->l));
	w.nb = nb;
	w.len = len < XPS_NATS_LINE_MAX ? len : XPS_NATS_LINE_MAX;
	w.r.proto = XPS_REPLY_NATS;
	XPS_LOOP(XPS_NATS_LINE_MAX, xps__nats_line_step, &w);
	return w.res;
}

/* Whether argument @i of nb->l starts with the @n bytes of @pfx. */
XPS_INLINE int xps_nats_arg_is(const struct xps_nats_buf *nb, __u32 i,
			       const char *pfx, __u32 n, int exact)
{
	__u32 off, k;

	if (i >= XPS_NATS_ARGS || i >= nb->l.nargs)
		return 0;
	off = nb->l.arg[i].off;
	if (nb->l.arg[i].len < n || (exact && nb->l.arg[i].len != n))
		return 0;
	for (k = 0; k < 16; k++) {
		if (k >= n)
			break;
		if (nb->b[(off + k) & (XPS_NATS_LINE_MAX - 1)] != (__u8)pfx[k])
			return 0;
	}
	return 1;
}

/*
 * FNV-1a over argument @i of nb->l from byte @from, after @seed: the keys
 * of the heartbeat state (a group's name, a reply subject).
 */
#define XPS_NATS_FNV_OFF	0xcbf29ce484222325ULL
#define XPS_NATS_FNV_PRIME	0x100000001b3ULL

XPS_GLOBAL __u64 xps_nats_hash(const struct xps_nats_buf *nb, __u32 i,
			       __u32 from, __u64 seed)
{
	__u64 h = seed;
	__u32 off, len, k;

	if (!nb || i >= XPS_NATS_ARGS)
		return h;
	off = nb->l.arg[i].off;
	len = nb->l.arg[i].len;
	for (k = 0; k < XPS_NATS_LINE_MAX; k++) {
		if (from + k >= len)
			break;
		h ^= nb->b[(off + from + k) & (XPS_NATS_LINE_MAX - 1)];
		h *= XPS_NATS_FNV_PRIME;
	}
	/* a separator, so that "ab"+"c" and "a"+"bc" differ */
	h ^= ' ';
	h *= XPS_NATS_FNV_PRIME;
	return h;
}

#endif /* __XPS_PROTO_NATS_BPF_H */
