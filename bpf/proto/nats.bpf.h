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
 * xps_nats_line() reads one whole line from a buffer, eight bytes at a
 * time.  Compiled for BPF
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
	__u8 b[XPS_NATS_LINE_MAX] __attribute__((aligned(8)));	/* words */
	struct xps_nats_line l;
};

/*
 * The line reader takes eight bytes at a time: per word, the lanes
 * (lanes.bpf.h) of the separators (' ', '\t', '\r', and every lane from
 * the '\n' on) give where tokens start and end, and only those events
 * cost more than the word.  What it reads is what the byte machine above
 * frames, byte for byte (tests/unit/test_reply.c compares the two over
 * random lines): the operation is the token at byte 0 (a line that starts
 * with a separator has none), the size is the last argument's value.
 */
struct xps__nats_lw {
	struct xps_nats_buf *nb;
	__u64 carry;		/* 0x80: the byte before the word separates */
	__u32 len;		/* bytes loaded */
	__u32 end;		/* the '\n' */
	__u32 tok;		/* where the current token started */
	__u32 op_len;		/* the token at byte 0 */
	__u32 last_off;		/* the last argument */
	__u32 last_len;
	int res;
};

/* Separator lanes of @w: ' ', '\t', '\r'. */
XPS_INLINE __u64 xps__nats_sep_lanes(__u64 w)
{
	return (xps_lanes_zero(w ^ XPS__W8(' ')) |
		xps_lanes_zero(w ^ XPS__W8('\t')) |
		xps_lanes_zero(w ^ XPS__W8('\r'))) & XPS__W80;
}

/*
 * The 8 bytes of nb->b at @p (p < XPS_NATS_LINE_MAX), any alignment:
 * loaded whole (x86 BPF allows it; the bytes past the line are the
 * struct's own).
 */
XPS_INLINE __u64 xps__nats_at(const struct xps_nats_buf *nb, __u32 p)
{
	return xps_lanes_load(&nb->b[p & (XPS_NATS_LINE_MAX - 1)]);
}

/* The @n (< 8) low bytes of a word. */
#define XPS__NATS_LOW(n)	((1ULL << ((n) * 8)) - 1)

/* A token ends at @e: the operation, or the next argument. */
XPS_INLINE void xps__nats_tok_end(struct xps__nats_lw *w, __u32 e)
{
	struct xps_nats_line *l = &w->nb->l;
	__u32 s = w->tok, n;

	if (s == 0) {
		w->op_len = e;
		return;
	}
	n = l->nargs++;
	if (n < XPS_NATS_ARGS) {
		l->arg[n].off = s;
		l->arg[n].len = e - s;
	}
	w->last_off = s;
	w->last_len = e - s;
}

XPS_CALLBACK long xps__nats_word_step(__u64 i, void *ctx)
{
	struct xps__nats_lw *w = ctx;
	__u64 b, nl, sep, prev, starts, m;
	__u32 q = i * 8, k, lane;

	if (i >= XPS_NATS_LINE_MAX / 8 || q >= w->len)
		return 1;		/* no '\n' in the bytes given */
	b = xps__nats_at(w->nb, q);
	nl = xps_lanes_zero(b ^ XPS__W8('\n'));
	if (w->len - q < 8)		/* lanes past the bytes given */
		nl &= XPS__NATS_LOW(w->len - q);
	sep = xps__nats_sep_lanes(b);
	if (nl)				/* the first '\n' and every lane after */
		sep |= XPS__W80 << (xps_lanes_lead(nl) * 8);
	prev = (sep << 8) | w->carry;	/* lanes whose previous byte separates */
	starts = ~sep & prev & XPS__W80;
	m = starts | (sep & ~prev & XPS__W80);
	w->carry = (sep >> 56) & 0x80;
	/* the events in lane order: a token starts, a token ends */
	for (k = 0; k < 8 && m; k++) {
		lane = xps_lanes_lead(m);
		if ((starts >> (lane * 8)) & 0x80)
			w->tok = q + lane;
		else
			xps__nats_tok_end(w, q + lane);
		m &= m - 1;
	}
	if (!nl)
		return 0;
	w->end = q + xps_lanes_lead(nl);
	w->res = 1;
	return 1;
}

/* The value of the digits at nb->b[off], @len of them; NOSIZE if not. */
XPS_INLINE __u32 xps__nats_size(const struct xps_nats_buf *nb, __u32 off,
				__u32 len)
{
	__u64 num = 0;
	__u32 k;
	__u8 c;

	if (!len)
		return XPS_NATS_NOSIZE;
	for (k = 0; k < XPS_NATS_LINE_MAX; k++) {
		if (k >= len)
			break;
		c = nb->b[(off + k) & (XPS_NATS_LINE_MAX - 1)];
		/* as the byte machine: no digit is taken past the limit */
		if (c < '0' || c > '9' || num > XPS_NATS_PAYLOAD_MAX)
			return XPS_NATS_NOSIZE;
		num = num * 10 + (c - '0');
	}
	return (__u32)num;
}

/*
 * Read the line at the start of @nb's first @len bytes (at most
 * XPS_NATS_LINE_MAX) into nb->l.  1: a whole line (nb->l says what it
 * is); 0: no '\n' in the bytes given; -1: a line the framing refuses.
 */
XPS_GLOBAL int xps_nats_line(struct xps_nats_buf *nb, __u32 len)
{
	struct xps__nats_lw w = { .carry = 0x80 };
	struct xps_nats_line *l;
	__u64 op = 0;

	if (!nb)
		return -1;
	l = &nb->l;
	__builtin_memset(l, 0, sizeof(*l));
	w.nb = nb;
	w.len = len < XPS_NATS_LINE_MAX ? len : XPS_NATS_LINE_MAX;
	XPS_LOOP(XPS_NATS_LINE_MAX / 8, xps__nats_word_step, &w);
	if (w.res != 1)
		return 0;
	l->len = w.end + 1;
	if (w.op_len >= 3 && w.op_len <= 4) {
		/* upper-cased, as the byte machine packs it */
		op = xps__nats_at(nb, 0) & XPS__W8(0xdf) &
		     XPS__NATS_LOW(w.op_len);
	}
	l->op = xps__nats_op(op, w.op_len);
	if (l->op == XPS_NATS_OP_LINE) {
		l->msg_len = l->len;
		return 1;
	}
	l->size = xps__nats_size(nb, w.last_off, w.last_len);
	if (l->size == XPS_NATS_NOSIZE || l->size > XPS_NATS_PAYLOAD_MAX)
		return -1;		/* the server closes the route */
	l->msg_len = l->len + l->size + 2;
	return 1;
}

/*
 * Whether argument @i of nb->l starts with the @n (<= 16) bytes packed in
 * @w0, @w1 (XPS_PACK()), or is exactly them.
 */
XPS_INLINE int xps_nats_arg_is(const struct xps_nats_buf *nb, __u32 i,
			       __u64 w0, __u64 w1, __u32 n, int exact)
{
	__u32 off;

	if (i >= XPS_NATS_ARGS || i >= nb->l.nargs)
		return 0;
	off = nb->l.arg[i].off;
	if (nb->l.arg[i].len < n || (exact && nb->l.arg[i].len != n))
		return 0;
	if (n < 8)
		return (xps__nats_at(nb, off) & XPS__NATS_LOW(n)) == w0;
	if (xps__nats_at(nb, off) != w0)
		return 0;
	if (n < 16)
		return (xps__nats_at(nb, off + 8) & XPS__NATS_LOW(n - 8)) == w1;
	return xps__nats_at(nb, off + 8) == w1;
}

/*
 * A hash of argument @i of nb->l from byte @from, after @seed, eight bytes
 * a step: the keys of the heartbeat state (a group's name, a reply
 * subject).  Only the kernel computes them, and a collision only ever
 * drops state: every answer is checked byte for byte (docs/nats.md).
 */
#define XPS_NATS_HASH_SEED	0xcbf29ce484222325ULL
#define XPS_NATS_HASH_MUL	0x9e3779b97f4a7c15ULL

XPS_GLOBAL __u64 xps_nats_hash(const struct xps_nats_buf *nb, __u32 i,
			       __u32 from, __u64 seed)
{
	__u64 h = seed, w;
	__u32 off, len, k;

	if (!nb || i >= XPS_NATS_ARGS)
		return h;
	off = nb->l.arg[i].off;
	len = nb->l.arg[i].len;
	if (from > len)
		from = len;
	off += from;
	len -= from;
	for (k = 0; k < XPS_NATS_LINE_MAX; k += 8) {
		if (k >= len)
			break;
		w = xps__nats_at(nb, off + k);
		if (len - k < 8)
			w &= XPS__NATS_LOW(len - k);
		h = (h ^ w) * XPS_NATS_HASH_MUL;
		h ^= h >> 29;
	}
	/* the length, so that "ab"+"c" and "a"+"bc" differ */
	return (h ^ len) * XPS_NATS_HASH_MUL;
}

#endif /* __XPS_PROTO_NATS_BPF_H */
