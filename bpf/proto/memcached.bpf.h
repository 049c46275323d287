/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * memcached text protocol parser and reply encoder, written against what
 * memcached 1.6.18 does (proto_text.c: try_read_command_ascii,
 * tokenize_command, process_*_command) and checked against the real server
 * (tests/unit/memcached_fixtures.h).
 *
 * Entry points:
 *   xps_mc_parse()            classify the request at an offset
 *   xps_mc_encode_value_hdr() "VALUE <key> <flags> <bytes>[ <cas>]\r\n"
 *   xps_mc_encode_value()     the header, the data and "\r\n"
 *   xps_mc_encode_end()       "END\r\n"
 *   xps_mc_udp_parse() / xps_mc_udp_encode()   the 8-byte UDP frame header
 *
 * memcached reads a line up to '\n', drops one '\r' before it (only when
 * the line has at least one other byte), and splits it on ' ' only: tabs
 * and other control bytes are part of a token.  Command names are
 * case-sensitive.
 */
#ifndef __XPS_PROTO_MEMCACHED_BPF_H
#define __XPS_PROTO_MEMCACHED_BPF_H

#include "common.bpf.h"

#define XPS_MC_KEY_MAX		250	/* KEY_MAX_LENGTH */
/* memcached's largest relative exptime (REALTIME_MAXDELTA); larger ones
 * are Unix times */
#define XPS_MC_REALTIME_MAXDELTA	(60 * 60 * 24 * 30)
/* Longest command line parsed; longer gives INCOMPLETE | XPS_F_TOO_BIG. */
#ifndef XPS_MC_LINE_MAX
#define XPS_MC_LINE_MAX	1024
#endif
/* Token slots: 15 tokens kept, slot 15 takes the writes to ignore. */
#define XPS_MC_TOKENS		16
#define XPS_MC_TOKENS_KEPT	(XPS_MC_TOKENS - 1)
/* "VALUE " key ' ' flags ' ' bytes ' ' cas "\r\n" */
#define XPS_MC_VALUE_HDR_MAX	(6 + XPS_MC_KEY_MAX + 1 + 10 + 1 + 10 + 1 + 20 + 2)
#define XPS_MC_END		"END\r\n"
#define XPS_MC_END_LEN		5
#define XPS_MC_UDP_HDR_LEN	8

struct xps_mc_tokens {
	__u16 s[XPS_MC_TOKENS];
	__u16 e[XPS_MC_TOKENS];
};

enum { XPS__MCN_OK = 0, XPS__MCN_INVALID = 1, XPS__MCN_UNSURE = 2 };

/*
 * A number token as memcached's safe_strto*() would read it.  Plain
 * decimal (with '-' when @neg_ok) is OK; a token strtol() cannot start on
 * (no digit, sign or space first) or with junk after the digits is INVALID,
 * which memcached answers with CLIENT_ERROR and no data block; anything
 * else strtol() might accept ('+5', leading tabs, overflow) is UNSURE.
 */
struct xps_mc_num {
	__u64 max;		/* in: largest value accepted */
	__s64 val;		/* out */
};

XPS_GLOBAL int xps_mc__num(const struct xps_buf *buf, __u32 s, __u32 e,
			   __u32 neg_ok, struct xps_mc_num *out)
{
	__u64 v = 0, max;
	__u32 i, n = e - s, nd = 0;
	int neg = 0;
	__u8 c0;

	if (!buf || !out)
		return XPS__MCN_UNSURE;
	max = out->max;
	if (!n)
		return XPS__MCN_INVALID;
	c0 = XPS_AT(buf->b, s);
	if (c0 == '+' || c0 == '\t' || c0 == '\v' || c0 == '\f' ||
	    c0 == '\r')
		return XPS__MCN_UNSURE;
	if (c0 == '-') {
		if (!neg_ok)
			return XPS__MCN_UNSURE;
		neg = 1;
	} else if (c0 < '0' || c0 > '9') {
		return XPS__MCN_INVALID;
	}
	for (i = neg; i < 12; i++) {
		__u8 c;

		if (i >= n)
			break;
		c = XPS_AT(buf->b, s + i);
		if (c < '0' || c > '9') {
			/* strtol() stops here; a space-like byte is accepted. */
			if (c == '\t' || c == '\v' || c == '\f' || c == '\r' ||
			    !nd)
				return XPS__MCN_UNSURE;
			return XPS__MCN_INVALID;
		}
		v = v * 10 + (c - '0');
		nd++;
	}
	if (i < n || !nd || nd > 10 || v > max)
		return XPS__MCN_UNSURE;
	out->val = neg ? -(__s64)v : (__s64)v;
	return XPS__MCN_OK;
}

/* The number of token @k (s..e) of @buf; *val is set only when OK. */
XPS_INLINE int xps_mc__num_tok(const struct xps_buf *buf, __u32 s, __u32 e,
			       int neg_ok, __u64 max, __s64 *val)
{
	struct xps_mc_num n = { .max = max };
	int r = xps_mc__num(buf, s, e, neg_ok ? 1 : 0, &n);

	if (r == XPS__MCN_OK)
		*val = n.val;
	return r;
}

XPS_INLINE void xps_mc__tok_words(const struct xps_buf *buf,
				  const struct xps_mc_tokens *t, __u32 k,
				  struct xps_words *wd)
{
	xps__pack_words(buf, t->s[k & 15], t->e[k & 15] - t->s[k & 15], 0, wd);
}

/* Which memcached commands the classifier tells apart. */
enum xps_mc_cmd {
	XPS_MC_OTHER = 0,
	XPS_MC_GET, XPS_MC_GETS, XPS_MC_SET, XPS_MC_ADD, XPS_MC_REPLACE,
	XPS_MC_APPEND, XPS_MC_PREPEND, XPS_MC_CAS, XPS_MC_DELETE,
	XPS_MC_INCR, XPS_MC_DECR, XPS_MC_TOUCH, XPS_MC_GAT, XPS_MC_GATS,
	XPS_MC_FLUSH_ALL, XPS_MC_HARMLESS, XPS_MC_STATE, XPS_MC_SHUTDOWN,
	XPS_MC_MG, XPS_MC_MS, XPS_MC_MD, XPS_MC_MA,
};

XPS_GLOBAL int xps_mc_lookup(const struct xps_words *wd)
{
	if (!wd)
		return XPS_MC_OTHER;
	if (XPS_WORDS_IS(wd, "get"))
		return XPS_MC_GET;
	if (XPS_WORDS_IS(wd, "gets"))
		return XPS_MC_GETS;
	if (XPS_WORDS_IS(wd, "set"))
		return XPS_MC_SET;
	if (XPS_WORDS_IS(wd, "delete"))
		return XPS_MC_DELETE;
	if (XPS_WORDS_IS(wd, "add"))
		return XPS_MC_ADD;
	if (XPS_WORDS_IS(wd, "replace"))
		return XPS_MC_REPLACE;
	if (XPS_WORDS_IS(wd, "append"))
		return XPS_MC_APPEND;
	if (XPS_WORDS_IS(wd, "prepend"))
		return XPS_MC_PREPEND;
	if (XPS_WORDS_IS(wd, "cas"))
		return XPS_MC_CAS;
	if (XPS_WORDS_IS(wd, "incr"))
		return XPS_MC_INCR;
	if (XPS_WORDS_IS(wd, "decr"))
		return XPS_MC_DECR;
	if (XPS_WORDS_IS(wd, "touch"))
		return XPS_MC_TOUCH;
	if (XPS_WORDS_IS(wd, "gat"))
		return XPS_MC_GAT;
	if (XPS_WORDS_IS(wd, "gats"))
		return XPS_MC_GATS;
	if (XPS_WORDS_IS(wd, "flush_all"))
		return XPS_MC_FLUSH_ALL;
	if (XPS_WORDS_IS(wd, "mg"))
		return XPS_MC_MG;
	if (XPS_WORDS_IS(wd, "ms"))
		return XPS_MC_MS;
	if (XPS_WORDS_IS(wd, "md"))
		return XPS_MC_MD;
	if (XPS_WORDS_IS(wd, "ma"))
		return XPS_MC_MA;
	if (XPS_WORDS_IS(wd, "version") || XPS_WORDS_IS(wd, "verbosity") ||
	    XPS_WORDS_IS(wd, "stats") || XPS_WORDS_IS(wd, "mn") ||
	    XPS_WORDS_IS(wd, "me"))
		return XPS_MC_HARMLESS;
	/* quit closes; watch turns the connection into a log stream. */
	if (XPS_WORDS_IS(wd, "quit") || XPS_WORDS_IS(wd, "watch") ||
	    XPS_WORDS_IS(wd, "misbehave"))
		return XPS_MC_STATE;
	if (XPS_WORDS_IS(wd, "shutdown"))
		return XPS_MC_SHUTDOWN;
	/* slabs, lru, lru_crawler, cache_memlimit, extstore...: they can
	 * evict or expire items, so everything is invalid. */
	return XPS_MC_OTHER;
}

XPS_INLINE void xps_mc__add_key(struct xps_kv_req *req,
				const struct xps_mc_tokens *t, __u32 k)
{
	__u32 n = req->nkeys;

	if (n >= XPS_MAX_KEYS || k >= XPS_MC_TOKENS_KEPT) {
		req->flags |= XPS_F_ALL;
		return;
	}
	/* The compiler drops masks it can prove redundant; the verifier
	 * cannot always follow it, so hide n first. */
	XPS_OPAQUE(n);
	XPS_OPAQUE(k);
	req->keys[n & (XPS_MAX_KEYS - 1)].off = t->s[k & 15];
	req->keys[n & (XPS_MAX_KEYS - 1)].len = t->e[k & 15] - t->s[k & 15];
	req->nkeys = n + 1;
}

/* Keys from token @first to the last token: gets, gat. */
XPS_INLINE void xps_mc__add_keys(struct xps_kv_req *req,
				 const struct xps_mc_tokens *t, __u32 first,
				 __u32 ntok)
{
	__u32 k;

	for (k = 0; k < XPS_MC_TOKENS_KEPT; k++) {
		if (k < first)
			continue;
		if (k >= ntok)
			return;
		xps_mc__add_key(req, t, k);
	}
	if (ntok > XPS_MC_TOKENS_KEPT)
		req->flags |= XPS_F_ALL;
}

XPS_INLINE int xps_mc__tok_is(const struct xps_buf *buf,
			      const struct xps_mc_tokens *t,
			      __u32 k, __u32 ntok, int noreply)
{
	struct xps_words wd = {};

	if (k >= ntok || k >= XPS_MC_TOKENS_KEPT)
		return 0;
	xps_mc__tok_words(buf, t, k, &wd);
	return noreply ? XPS_WORDS_IS(&wd, "noreply") : XPS_WORDS_IS(&wd, "0");
}

/* Meta commands with the 'b' flag carry the key base64-encoded. */
XPS_INLINE int xps_mc__meta_b64(const struct xps_buf *buf,
				const struct xps_mc_tokens *t, __u32 ntok)
{
	__u32 k;

	for (k = 2; k < XPS_MC_TOKENS_KEPT; k++) {
		if (k >= ntok)
			break;
		if (XPS_AT(buf->b, t->s[k]) == 'b')
			return 1;
	}
	return ntok > XPS_MC_TOKENS_KEPT;
}

/*
 * A meta get whose flags only ask for data (value, flags, TTL, CAS, key,
 * size, opaque, hit/last-access info, quiet, base64 key) changes nothing;
 * N (vivify), T (touch), E, I, R and anything unknown may.
 */
XPS_INLINE int xps_mc__mg_readonly(const struct xps_buf *buf,
				   const struct xps_mc_tokens *t, __u32 ntok)
{
	__u32 k;

	if (ntok > XPS_MC_TOKENS_KEPT)
		return 0;
	for (k = 2; k < XPS_MC_TOKENS_KEPT; k++) {
		if (k >= ntok)
			break;
		switch (XPS_AT(buf->b, t->s[k])) {
		case 'v': case 'f': case 't': case 'c': case 'k': case 's':
		case 'q': case 'O': case 'h': case 'l': case 'b':
			break;
		default:
			return 0;
		}
	}
	return 1;
}

/* What the line tokenizer found. */
struct xps_mc_line {
	struct xps_mc_tokens t;
	__u64 ctl;		/* bit k: token k holds a byte a key must
				 * not contain */
	__u32 ntok;		/* tokens (finished ones when INCOMPLETE) */
	__u32 nl;		/* position of the '\n' (+ 1 while running) */
	__u32 st;		/* XPS__MCL_* */
	/* while running */
	__u32 in_tok, off, len;
};
/* It lives in struct xps_kv_req.ws, not on the stack. */
_Static_assert(sizeof(struct xps_mc_line) <= XPS_KV_WS,
	       "tokenizer state must fit in struct xps_kv_req.ws");
#define XPS__MCLINE(req)	((struct xps_mc_line *)(void *)(req)->ws)

/* The bpf_loop() context (stack): pointers may not be stored in maps. */
struct xps_mc__tctx {
	const struct xps_buf *buf;
	struct xps_mc_line *ln;
};

enum { XPS__MCL_OK = 0, XPS__MCL_MORE = 1, XPS__MCL_NUL = 2 };

/*
 * One byte of the line: buf[off + idx].  Branch-free but for the exit
 * test: token starts and ends are stored at index ntok, or in the spare
 * slot 15 when the byte is neither.  Returns 1 at the end of the line.
 */
XPS_CALLBACK long xps_mc__tbyte(__u64 idx, void *vx)
{
	struct xps_mc__tctx *cx = vx;
	const struct xps_buf *buf = cx->buf;
	struct xps_mc_line *ln = cx->ln;
	__u64 ntok = ln->ntok, in_tok = ln->in_tok, len = ln->len;
	__u64 p = ln->off + (__u32)idx, c, c2, sep, start, stop, bad;

	c = XPS_AT(buf->b, p);
	/* tokenize_command() uses strlen(): a NUL cuts the line. */
	if (xps_ge(p, len) | xps_eq(c, '\n') | xps_eq(c, 0)) {
		if (p >= len)
			return 1;
		if (c == 0)
			ln->st = XPS__MCL_NUL;
		else
			ln->nl = p + 1;	/* + 1: 0 means not found */
		return 1;
	}
	/* The byte after, or 0 past len (the buffer holds junk). */
	c2 = XPS_AT(buf->b, p + 1) * (xps_ge(p + 1, len) ^ 1);
	sep = xps_eq(c, ' ') |
	      (xps_eq(c, '\r') & xps_eq(c2, '\n') & (idx ? 1 : 0));
	start = (in_tok ^ 1) & (sep ^ 1);
	stop = in_tok & sep;
	ln->t.s[xps_sel(start, ntok, 15) & 15] = (__u16)p;
	ln->t.e[xps_sel(stop, ntok, 15) & 15] = (__u16)p;
	bad = (xps_in(c, 0, 0x20) | xps_eq(c, 0x7f)) & (sep ^ 1);
	ln->ctl |= bad << (ntok & 63);
	ln->ntok = (__u32)(ntok + stop);
	ln->in_tok = (__u32)((in_tok & (sep ^ 1)) | start);
	return 0;
}

/*
 * Split the line at buf[off] into tokens, in @ln.  A global function; the
 * byte loop is a bpf_loop() callback, verified until it converges rather
 * than once per byte.
 */
XPS_GLOBAL int xps_mc__tokenize(const struct xps_buf *buf, __u32 len,
				__u32 off, struct xps_mc_line *ln)
{
	struct xps_mc__tctx cx = {};
	__u32 nl, ntok, in_tok;

	if (!buf || !ln)
		return XPS__MCL_NUL;
	__builtin_memset(ln, 0, sizeof(*ln));
	ln->off = off;
	ln->len = len;
	ln->st = XPS__MCL_MORE;
	cx.buf = buf;
	cx.ln = ln;
	XPS_LOOP(XPS_MC_LINE_MAX, xps_mc__tbyte, &cx);
	if (ln->st == XPS__MCL_NUL)
		return ln->st;
	nl = ln->nl;
	if (!nl) {
		ln->st = XPS__MCL_MORE;
		return ln->st;
	}
	nl -= 1;
	ntok = ln->ntok;
	in_tok = ln->in_tok & 1;
	/* The '\n' ends the token being read. */
	ln->t.e[xps_sel(in_tok, ntok, 15) & 15] = (__u16)nl;
	ln->ntok = ntok + in_tok;
	ln->nl = nl;
	ln->st = XPS__MCL_OK;
	return ln->st;
}

/*
 * Classify the tokenized line @ln at buf[off] into @req (zeroed by the
 * caller).  A global function: verified once.  Returns req->kind.
 */
XPS_GLOBAL int xps_mc__classify(const struct xps_buf *buf, __u32 len,
				__u32 off, const struct xps_mc_line *ln,
				struct xps_kv_req *req)
{
	const struct xps_mc_tokens *t;
	struct xps_words wd = {};
	__u64 ntok, ctl;
	__u32 nl, cmd, key_ok = 1, k, line;
	__s64 vlen = 0, num, exp = -1;
	int r;

	if (!buf || !ln || !req)
		return XPS_REQ_MALFORMED;
	/* Read in place (req->ws): a copy would cost 64 bytes of stack. */
	t = &ln->t;
	ntok = ln->ntok;
	ctl = ln->ctl;
	if (ln->st == XPS__MCL_NUL)
		goto bad;
	if (ln->st != XPS__MCL_OK) {
		if (len - off >= XPS_MC_LINE_MAX)
			req->flags |= XPS_F_TOO_BIG;
		/* The tokens finished so far may already tell the command. */
		if (ntok) {
			xps_mc__tok_words(buf, t, 0, &wd);
			cmd = (__u32)xps_mc_lookup(&wd);
			if (cmd == XPS_MC_GET || cmd == XPS_MC_GETS) {
				req->hint = XPS_REQ_SERVE;
			} else if (cmd == XPS_MC_HARMLESS) {
				req->hint = XPS_REQ_HARMLESS;
			} else if (cmd == XPS_MC_STATE || cmd == XPS_MC_SHUTDOWN) {
				req->hint = XPS_REQ_STATE;
			} else {
				req->hint = XPS_REQ_INVALIDATE;
				if (ntok >= 2 && cmd != XPS_MC_GAT &&
				    cmd != XPS_MC_GATS && cmd != XPS_MC_OTHER &&
				    cmd != XPS_MC_FLUSH_ALL)
					xps_mc__add_key(req, t, 1);
				else
					req->flags |= XPS_F_ALL;
			}
		}
		req->kind = XPS_REQ_INCOMPLETE;
		return req->kind;
	}
	nl = ln->nl;
	line = nl + 1 - off;
	req->req_len = line;
	req->argc = ntok > 0xffff ? 0xffff : (__u16)ntok;
	if (!ntok) {
		/* A bare "\n": memcached answers ERROR. */
		req->kind = XPS_REQ_HARMLESS;
		return req->kind;
	}
	req->name.off = t->s[0];
	req->name.len = t->e[0] - t->s[0];
	xps_mc__tok_words(buf, t, 0, &wd);
	cmd = (__u32)xps_mc_lookup(&wd);
	switch (cmd) {
	case XPS_MC_GET:
	case XPS_MC_GETS:
		req->kind = XPS_REQ_HARMLESS;
		if (cmd == XPS_MC_GETS)
			req->flags |= XPS_F_CAS;
		/* "get" alone is an ERROR; too many keys: let memcached. */
		if (ntok < 2 || ntok - 1 > XPS_MAX_KEYS)
			break;
		for (k = 1; k <= XPS_MAX_KEYS; k++) {
			if (k >= ntok)
				break;
			if (t->e[k] - t->s[k] > XPS_MC_KEY_MAX || (ctl >> k) & 1)
				key_ok = 0;
			xps_mc__add_key(req, t, k);
		}
		if (key_ok)
			req->kind = XPS_REQ_SERVE;
		else
			req->flags |= XPS_F_BADKEY;
		break;
	case XPS_MC_SET:
	case XPS_MC_ADD:
	case XPS_MC_REPLACE:
	case XPS_MC_APPEND:
	case XPS_MC_PREPEND:
	case XPS_MC_CAS: {
		__u32 base = cmd == XPS_MC_CAS ? 6 : 5;

		/* Wrong token count: ERROR, and no data block is read. */
		req->kind = XPS_REQ_HARMLESS;
		if (ntok != base && ntok != base + 1)
			break;
		if (t->e[1] - t->s[1] > XPS_MC_KEY_MAX)
			break;
		r = xps_mc__num_tok(buf, t->s[2], t->e[2], 0, 0xffffffffULL, &num);
		if (r == XPS__MCN_OK)
			r = xps_mc__num_tok(buf, t->s[3], t->e[3], 1, 0x7fffffff, &num);
		if (r == XPS__MCN_OK)
			exp = num;
		if (r == XPS__MCN_OK)
			r = xps_mc__num_tok(buf, t->s[4], t->e[4], 1, 0x7fffffff, &vlen);
		if (r == XPS__MCN_OK && cmd == XPS_MC_CAS)
			r = xps_mc__num_tok(buf, t->s[5], t->e[5], 0,
					    0xffffffffffffffffULL, &num);
		if (r == XPS__MCN_UNSURE)
			goto bad;
		if (r == XPS__MCN_INVALID || vlen < 0 || vlen > 0x7ffffffd)
			break;
		if (xps_mc__tok_is(buf, t, base, ntok, 1))
			req->flags |= XPS_F_NOREPLY;
		req->kind = XPS_REQ_INVALIDATE;
		xps_mc__add_key(req, t, 1);
		/* The data block and its two trailing bytes, unchecked:
		 * memcached consumes them whatever they are. */
		req->req_len = line + (__u32)vlen + 2;
		/*
		 * A set (add, replace, cas) that never expires, or expires
		 * a number of seconds after memcached stores it: the item is
		 * then the data block, whatever it was before.  memcached
		 * refuses a block not ending in CRLF and keeps the old item,
		 * so only a CRLF seen here counts (docs/coherence.md).
		 * append and prepend keep what was.
		 */
		if ((cmd == XPS_MC_SET || cmd == XPS_MC_ADD ||
		     cmd == XPS_MC_REPLACE || cmd == XPS_MC_CAS) && exp >= 0 &&
		    exp <= XPS_MC_REALTIME_MAXDELTA && r == XPS__MCN_OK) {
			__u64 end = (__u64)off + req->req_len;
			__u32 cr;

			/*
			 * No masks here (tests/verifier/maskcheck.py); cr is
			 * opaque so that clang tests the register it indexes
			 * with, not a copy (6.12 loses the bound otherwise).
			 */
			if (end <= len && end >= 2 && end <= XPS_SCRATCH) {
				cr = (__u32)end - 2;
				XPS_OPAQUE(cr);
				if (cr < XPS_SCRATCH - 1 && buf->b[cr] == '\r' &&
				    buf->b[cr + 1] == '\n') {
					if (exp) {
						req->flags |= XPS_F_RELEXP;
						req->num = (__u32)exp;
					} else {
						req->flags |= XPS_F_NOEXP;
						if (cmd == XPS_MC_SET)
							req->flags |= XPS_F_SETS;
					}
				}
			}
		}
		break;
	}
	case XPS_MC_MS:
		req->kind = XPS_REQ_HARMLESS;
		if (ntok < 3)
			break;
		r = xps_mc__num_tok(buf, t->s[2], t->e[2], 0, 0x7ffffffd, &vlen);
		if (r != XPS__MCN_OK || t->e[1] - t->s[1] > XPS_MC_KEY_MAX)
			goto bad;
		req->kind = XPS_REQ_INVALIDATE;
		if (xps_mc__meta_b64(buf, t, ntok))
			req->flags |= XPS_F_ALL;
		else
			xps_mc__add_key(req, t, 1);
		req->req_len = line + (__u32)vlen + 2;
		break;
	case XPS_MC_MG:
	case XPS_MC_MD:
	case XPS_MC_MA:
		/* mg can touch or create items too (T, N flags). */
		req->kind = XPS_REQ_HARMLESS;
		if (ntok < 2)
			break;
		if (cmd == XPS_MC_MG && xps_mc__mg_readonly(buf, t, ntok))
			break;
		req->kind = XPS_REQ_INVALIDATE;
		if (xps_mc__meta_b64(buf, t, ntok))
			req->flags |= XPS_F_ALL;
		else
			xps_mc__add_key(req, t, 1);
		break;
	case XPS_MC_DELETE:
		req->kind = XPS_REQ_HARMLESS;
		if (ntok < 2 || ntok > 4)
			break;
		req->kind = XPS_REQ_INVALIDATE;
		xps_mc__add_key(req, t, 1);
		if (xps_mc__tok_is(buf, t, ntok - 1, ntok, 1))
			req->flags |= XPS_F_NOREPLY;
		break;
	case XPS_MC_INCR:
	case XPS_MC_DECR:
	case XPS_MC_TOUCH:
		req->kind = XPS_REQ_HARMLESS;
		if (ntok != 3 && ntok != 4)
			break;
		req->kind = XPS_REQ_INVALIDATE;
		xps_mc__add_key(req, t, 1);
		if (xps_mc__tok_is(buf, t, 3, ntok, 1))
			req->flags |= XPS_F_NOREPLY;
		break;
	case XPS_MC_GAT:
	case XPS_MC_GATS:
		/* get-and-touch: a touch is a write of the expiry. */
		req->kind = XPS_REQ_HARMLESS;
		if (ntok < 3)
			break;
		req->kind = XPS_REQ_INVALIDATE;
		xps_mc__add_keys(req, t, 2, ntok);
		break;
	case XPS_MC_FLUSH_ALL:
		req->kind = XPS_REQ_INVALIDATE;
		req->flags |= XPS_F_ALL;
		/* flush_all <delay>: items die later, not now. */
		if (ntok >= 2 && !xps_mc__tok_is(buf, t, 1, ntok, 1) &&
		    !xps_mc__tok_is(buf, t, 1, ntok, 0)) {
			req->flags |= XPS_F_DEFERRED;
			if (xps_mc__num_tok(buf, t->s[1], t->e[1], 0,
					    0xffffffffULL, &num) == XPS__MCN_OK)
				req->num = (__u32)num;
		}
		if (xps_mc__tok_is(buf, t, ntok - 1, ntok, 1))
			req->flags |= XPS_F_NOREPLY;
		break;
	case XPS_MC_HARMLESS:
		req->kind = XPS_REQ_HARMLESS;
		break;
	case XPS_MC_STATE:
		req->kind = XPS_REQ_STATE;
		req->flags |= XPS_F_STATE;
		break;
	case XPS_MC_SHUTDOWN:
		req->kind = XPS_REQ_STATE;
		req->flags |= XPS_F_STATE | XPS_F_GLOBAL;
		break;
	default:
		req->kind = XPS_REQ_INVALIDATE;
		req->flags |= XPS_F_ALL;
		break;
	}
	if (req->flags & XPS_F_ALL)
		req->nkeys = 0;
	if (req->req_len > len - off) {
		/* The data block is not all here yet. */
		req->hint = req->kind;
		req->kind = XPS_REQ_INCOMPLETE;
		if (req->req_len > XPS_SCRATCH - off)
			req->flags |= XPS_F_TOO_BIG;
	}
	return req->kind;
bad:
	__builtin_memset(req, 0, sizeof(*req));
	req->flags = XPS_F_ALL | XPS_F_STATE;
	req->kind = XPS_REQ_MALFORMED;
	return req->kind;
}


/*
 * Classify the request at buf[off]; buf holds len (<= XPS_SCRATCH) bytes in
 * an XPS_SCRATCH-byte buffer.  Returns req->kind.
 */
XPS_GLOBAL int xps_mc__parse(const struct xps_buf *buf, __u32 len, __u32 off,
			     struct xps_kv_req *req)
{
	if (!buf || !req)
		return XPS_REQ_MALFORMED;
	__builtin_memset(req, 0, sizeof(*req));
	if (len > XPS_SCRATCH)
		len = XPS_SCRATCH;
	if (off >= len) {
		req->kind = XPS_REQ_INCOMPLETE;
		return req->kind;
	}
	xps_mc__tokenize(buf, len, off, XPS__MCLINE(req));
	return xps_mc__classify(buf, len, off, XPS__MCLINE(req), req);
}

/*
 * buf: XPS_SCRATCH bytes (map value or stack); req: any memory of
 * sizeof(struct xps_kv_req).
 */
XPS_INLINE int xps_mc_parse(const __u8 *buf, __u32 len, __u32 off,
			    struct xps_kv_req *req)
{
	return xps_mc__parse(XPS_BUF(buf), len, off, req);
}

/*
 * UDP frame header: request id, sequence number, datagram count, reserved,
 * all big-endian.  memcached 1.6 drops requests whose count is not 1 and
 * ignores the sequence number and reserved field.  Returns 0 and the request
 * id, or -1 when the datagram is too short or not a single-datagram request.
 */
XPS_INLINE int xps_mc_udp_parse(const __u8 *buf, __u32 len, __u16 *req_id)
{
	if (len < XPS_MC_UDP_HDR_LEN)
		return -1;
	if (buf[4] != 0 || buf[5] != 1)
		return -1;
	*req_id = (__u16)(buf[0] << 8 | buf[1]);
	return 0;
}

/* Reply header: same request id, this datagram's number, the total. */
XPS_INLINE void xps_mc_udp_encode(__u8 *dst, __u16 req_id, __u16 seq,
				  __u16 total)
{
	dst[0] = req_id >> 8;
	dst[1] = req_id & 0xff;
	dst[2] = seq >> 8;
	dst[3] = seq & 0xff;
	dst[4] = total >> 8;
	dst[5] = total & 0xff;
	dst[6] = 0;
	dst[7] = 0;
}

/*
 * Append a decimal number at dst[at]; returns the new position.  All 24
 * digit bytes are written, a word at a time (no test on the digit count,
 * so one path for the verifier); those past the number are overwritten by
 * what follows.
 */
XPS_INLINE __u32 xps_mc__put_num(__u8 *dst, __u32 at, __u64 v)
{
	struct xps_digits d = {};
	__u32 n;

	n = (__u32)xps__fmt_digits(&d, v);
	XPS_PUT8(dst, at, *(const __u64 *)(const void *)&d.b[0]);
	XPS_PUT8(dst, at + 8, *(const __u64 *)(const void *)&d.b[8]);
	XPS_PUT8(dst, at + 16, *(const __u64 *)(const void *)&d.b[16]);
	return at + n;
}

/* Arguments of xps_mc__encode_value_hdr() (more than five). */
struct xps_mc_vhdr {
	__u64 cas;
	__u32 flags, bytes;
	struct xps_span key;
	__u32 with_cas;
};

/* Bytes the header encoder may write past its result (see put_num). */
#define XPS__MC_VHDR_SLACK	24

/*
 * "VALUE <key> <flags> <bytes>[ <cas>]\r\n" at dst[at].  A global
 * function.  The key is copied a word at a time up to its length (all
 * XPS_MC_KEY_MAX bytes every time took a quarter of a GET's instructions
 * with short keys; a byte at a time, with the numbers, still 8% of a UDP
 * get's).  Reading a word past the key's end needs 7 bytes of @kbuf after
 * it; a key closer to the buffer's end is copied a byte at a time.
 */
XPS_GLOBAL int xps_mc__encode_value_hdr(struct xps_buf *dstb, __u32 at,
					const struct xps_buf *kbuf,
					const struct xps_mc_vhdr *a)
{
	struct xps_span key;
	__u8 *dst;
	__u32 i;

	if (!dstb || !kbuf || !a)
		return 0;
	dst = dstb->b;
	key = a->key;
	if (key.len > XPS_MC_KEY_MAX ||
	    at + XPS_MC_VALUE_HDR_MAX + XPS__MC_VHDR_SLACK > XPS_SCRATCH)
		return 0;
	/* "VALUE " (little endian) and two bytes the key overwrites */
	XPS_PUT8(dst, at, 0x2045554c4156ULL);
	at += 6;
	/* a word a step: up to 7 past the key, overwritten below */
	for (i = 0; i < XPS_MC_KEY_MAX; i += 8) {
		__u32 j;

		if (i >= key.len)
			break;
		if (key.off + i <= XPS_SCRATCH - 8) {
			XPS_PUT8(dst, at + i, XPS_GET8(kbuf->b, key.off + i));
			continue;
		}
		for (j = 0; j < 8; j++) {
			__u8 b = XPS_AT(kbuf->b, key.off + i + j);

			XPS_OPAQUE(b);		/* no memcpy() on BPF */
			dst[XPS_IDX(at + i + j)] = b;
		}
	}
	at += key.len;
	dst[XPS_IDX(at++)] = ' ';
	at = xps_mc__put_num(dst, at, a->flags);
	dst[XPS_IDX(at++)] = ' ';
	at = xps_mc__put_num(dst, at, a->bytes);
	if (a->with_cas) {
		dst[XPS_IDX(at++)] = ' ';
		at = xps_mc__put_num(dst, at, a->cas);
	}
	dst[XPS_IDX(at++)] = '\r';
	dst[XPS_IDX(at++)] = '\n';
	return (int)at;
}

/*
 * "VALUE <key> <flags> <bytes>[ <cas>]\r\n" at dst[at] (dst is an
 * XPS_SCRATCH-byte buffer; the key is @key of the XPS_SCRATCH-byte @kbuf).
 * Returns the position after it, or 0 when it would not fit (the encoder
 * needs XPS_MC_VALUE_HDR_MAX + 24 bytes of room from @at).
 */
XPS_INLINE __u32 xps_mc_encode_value_hdr(__u8 *dst, __u32 at,
					 const __u8 *kbuf, struct xps_span key,
					 __u32 flags, __u32 bytes, __u64 cas,
					 int with_cas)
{
	struct xps_mc_vhdr a = {
		.cas = cas, .flags = flags, .bytes = bytes, .key = key,
		.with_cas = with_cas ? 1 : 0,
	};

	return (__u32)xps_mc__encode_value_hdr((struct xps_buf *)(void *)dst,
					       at, XPS_BUF(kbuf), &a);
}

/*
 * One VALUE block: header, the @vlen data bytes of the XPS_SCRATCH-byte
 * @val, "\r\n".  Returns the position after it, or 0 when it would not fit.
 */
XPS_INLINE __u32 xps_mc_encode_value(__u8 *dst, __u32 at, const __u8 *kbuf,
				     struct xps_span key, __u32 flags,
				     const __u8 *val, __u32 vlen, __u64 cas,
				     int with_cas)
{
	at = xps_mc_encode_value_hdr(dst, at, kbuf, key, flags, vlen, cas,
				     with_cas);
	if (!at || vlen > XPS_SCRATCH || at + vlen + 2 > XPS_SCRATCH)
		return 0;
	xps_copy(dst, at, val, vlen);
	at += vlen;
	dst[XPS_IDX(at++)] = '\r';
	dst[XPS_IDX(at++)] = '\n';
	return at;
}

/* "END\r\n" at dst[at]; returns the position after it, 0 if no room. */
XPS_INLINE __u32 xps_mc_encode_end(__u8 *dst, __u32 at)
{
	if (at + XPS_MC_END_LEN > XPS_SCRATCH)
		return 0;
	dst[XPS_IDX(at + 0)] = 'E';
	dst[XPS_IDX(at + 1)] = 'N';
	dst[XPS_IDX(at + 2)] = 'D';
	dst[XPS_IDX(at + 3)] = '\r';
	dst[XPS_IDX(at + 4)] = '\n';
	return at + XPS_MC_END_LEN;
}

/* Eight bytes of @buf from @p (any alignment). */
XPS_INLINE __u64 xps_mc__word(const __u8 *buf, __u32 p)
{
	return xps_lanes_load(buf + p);
}

#define XPS__MC_ONES	0x0101010101010101ULL
#define XPS__MC_HIGHS	0x8080808080808080ULL

/*
 * Whether @n (<= XPS_MC_KEY_MAX) bytes at @p hold a byte a key may not
 * (0x00-0x20, 0x7f, as xps_mc__tbyte() says), eight at a time: a byte
 * below 0x21 or a zero byte of w ^ 0x7f..7f sets the high bit of a lane
 * (exact for "any lane").  A global function: verified once.
 */
XPS_GLOBAL int xps_mc__key_bad(const struct xps_buf *buf, __u32 p, __u32 n)
{
	__u64 w, x, m, bad = 0;
	__u32 i, q;

	if (!buf || n > XPS_MC_KEY_MAX)
		return 1;
	for (i = 0; i < (XPS_MC_KEY_MAX + 7) / 8; i++) {
		if (i * 8 >= n)
			break;
		q = p + i * 8;
		/* hidden from clang, so the verifier sees the test on q */
		XPS__HIDE(q);
		if (q > XPS_SCRATCH - 8)
			return 1;
		w = xps_mc__word(buf->b, q);
		/* lanes past the key read as 'a' */
		m = n - i * 8 >= 8 ? ~0ULL : (1ULL << ((n - i * 8) * 8)) - 1;
		w = (w & m) | (0x6161616161616161ULL & ~m);
		x = w ^ 0x7f7f7f7f7f7f7f7fULL;
		bad |= ((w - XPS__MC_ONES * 0x21) & ~w) |
		       ((x - XPS__MC_ONES) & ~x);
	}
	return (bad & XPS__MC_HIGHS) != 0;
}

/*
 * The request the fast path answers most, recognized without the general
 * parser: a whole segment "get <key>\r\n" or "gets <key>\r\n" of @len
 * bytes, one key of 1 to 250 bytes a key may hold.  Returns @len and the
 * key's span (*cas set for gets), or 0: xps_mc_parse() then decides.
 * Only ever stricter than xps_mc_parse(): when this returns a length, the
 * parser returns XPS_REQ_SERVE at 0 with that length, that one key and no
 * flag but XPS_F_CAS for gets (tests/unit/test_memcached.c checks it).
 */
XPS_INLINE __u32 xps_mc_parse_get(const __u8 *buf, __u32 len,
				  struct xps_span *key, int *cas)
{
	__u32 p, crlf = len - 2;

	/* hidden: "len - 1" would be a 0/-1 mask to tests/verifier/maskcheck.py */
	XPS__HIDE(crlf);
	if (len > XPS_SCRATCH || len < 7 || buf[0] != 'g' || buf[1] != 'e' ||
	    buf[2] != 't' || XPS_AT(buf, crlf) != '\r' ||
	    XPS_AT(buf, crlf + 1) != '\n')
		return 0;
	*cas = buf[3] == 's';
	p = *cas ? 4 : 3;
	if (buf[p] != ' ')
		return 0;
	p++;
	if (len - 2 <= p || len - 2 - p > XPS_MC_KEY_MAX ||
	    xps_mc__key_bad(XPS_BUF(buf), p, len - 2 - p))
		return 0;
	key->off = (__u16)p;
	key->len = (__u16)(len - 2 - p);
	return len;
}

#endif /* __XPS_PROTO_MEMCACHED_BPF_H */
