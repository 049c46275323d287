/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Portable base for the XPS protocol parsers and reply encoders.
 *
 * Every *.bpf.h in bpf/proto/ is compiled twice: by clang -target bpf inside
 * a handler object, and by the host compiler for unit tests and fuzzers.
 * Only this file knows the difference.  Rules the parsers follow so that the
 * verifier accepts them on every kernel the stock backend supports (>= 5.15):
 *  - loops have constant bounds and no recursion;
 *  - every read of the payload buffer goes through XPS_AT(), whose mask is
 *    a no-op for correct callers and exists only so the verifier can prove
 *    the access stays inside the XPS_SCRATCH-byte map value;
 *  - no global writable state; constant tables only.
 */
#ifndef __XPS_PROTO_COMMON_BPF_H
#define __XPS_PROTO_COMMON_BPF_H

#include <linux/types.h>

/*
 * Size of the per-CPU scratch buffer a handler copies the payload into.  A
 * power of two so that (i & XPS_SCRATCH_MASK) is a valid bounds proof.
 * Parsers see at most this many bytes of a segment; a request that does not
 * fit is reported INCOMPLETE with XPS_F_TOO_BIG.
 */
#define XPS_SCRATCH		2048
#define XPS_SCRATCH_MASK	(XPS_SCRATCH - 1)

/* Requests a handler should walk per segment before giving up (PASS). */
#define XPS_MAX_REQS_PER_SEG	32

/* Keys a parse result can list; more than that means "invalidate all". */
#define XPS_MAX_KEYS		8

#if defined(__bpf__)
#define XPS_INLINE	static inline __attribute__((always_inline))
/*
 * A BTF "global" function: not static, never inlined.  The verifier checks
 * it once, on its own, with every scalar argument unknown and every pointer
 * argument as "NULL or sizeof(*arg) bytes of memory", instead of once per
 * call site and per caller state.  That is what keeps the parsers inside
 * the verifier's budget.  Rules for such functions (all kernels >= 5.15):
 *  - at most 5 arguments, each a scalar or a pointer to a sized type (a
 *    struct of scalars, a scalar); buffers travel as struct xps_buf *;
 *  - every pointer argument is tested against NULL before use;
 *  - the result is a scalar; whatever the function wrote through a pointer
 *    is unknown to the caller afterwards (the verifier clobbers it).
 * Callers may pass stack, map value or other sized memory.
 */
#define XPS_GLOBAL	__attribute__((noinline))
#else
#define XPS_INLINE	static inline __attribute__((unused))
#define XPS_GLOBAL	static __attribute__((unused))
#endif

/*
 * bpf_loop() (Linux >= 5.17): the verifier checks the callback until its
 * states converge instead of once per iteration, so a long branch-free
 * byte loop costs a few bodies, not a thousand.  Declared here by number
 * (BPF_FUNC_loop) so that the headers do not depend on bpf_helpers.h.
 * On the host: a plain loop with the same contract (the callback returns 1
 * to stop; the result is the number of iterations run).
 */
#if defined(__bpf__)
static long (*const xps__bpf_loop)(__u32 nr, void *cb, void *ctx,
				   __u64 flags) = (void *)181;
#define XPS_LOOP(n, cb, ctx)	xps__bpf_loop((n), (void *)(cb), (ctx), 0)
#define XPS_CALLBACK		static __attribute__((noinline))
#else
static inline __attribute__((unused)) long
xps__loop(__u32 n, long (*cb)(__u64, void *), void *ctx)
{
	__u32 i;

	for (i = 0; i < n; i++)
		if (cb(i, ctx))
			return i + 1;
	return n;
}
#define XPS_LOOP(n, cb, ctx)	xps__loop((n), (cb), (ctx))
#define XPS_CALLBACK		static
#endif

/*
 * Payload access.  The mask is for the verifier only: callers never pass
 * an index >= XPS_SCRATCH, but the verifier cannot know that.
 */
#if defined(__bpf__)
#define XPS__HIDE(x)	asm volatile("" : "+r"(x))
#else
#define XPS__HIDE(x)	((void)0)
#endif

/* The index is hidden from clang first: clang drops a mask it can prove
 * redundant (i < len <= XPS_SCRATCH), and the verifier may not follow the
 * proof. */
static inline __attribute__((always_inline, unused)) __u32 xps__idx(__u32 i)
{
	XPS__HIDE(i);
	return i & XPS_SCRATCH_MASK;
}
#define XPS_IDX(i)		xps__idx((__u32)(i))
#define XPS_AT(buf, i)		((buf)[XPS_IDX(i)])

#include "lanes.bpf.h"

/*
 * The scratch buffer as global functions take it: a pointer to a sized
 * type, so that the verifier knows the XPS_SCRATCH bytes behind it.  The
 * public entry points keep their "const __u8 *buf" signature and cast: the
 * verifier checks the memory the caller really passes (a map value, or
 * stack) against sizeof(struct xps_buf).
 */
struct xps_buf {
	__u8 b[XPS_SCRATCH];
};
#define XPS_BUF(p)		((const struct xps_buf *)(const void *)(p))

/*
 * What a parser says about the request at the offset it was given.  The
 * handler acts on the kind; the flags refine it.
 */
enum xps_req_kind {
	XPS_REQ_NONE = 0,
	/* Complete request the fast path may answer (GET, get/gets, a plain
	 * HTTP request whose method the handler may block). */
	XPS_REQ_SERVE = 1,
	/* Complete write: PASS it, after invalidating keys[] (or everything
	 * when XPS_F_ALL is set). */
	XPS_REQ_INVALIDATE = 2,
	/* Complete request that changes what the service would answer on this
	 * connection: PASS it and stop serving the connection.  May carry keys
	 * or XPS_F_ALL too. */
	XPS_REQ_STATE = 3,
	/* Complete request with no effect on served data: PASS it. */
	XPS_REQ_HARMLESS = 4,
	/* Not all bytes are there.  req_len is the total length when it is
	 * already known (0 otherwise), hint is the kind the prefix proves
	 * (0 when unknown), and keys[] lists the keys seen so far. */
	XPS_REQ_INCOMPLETE = 5,
	/* The service will reject the bytes, or may read them differently from
	 * this parser: PASS, stop serving the connection, treat as XPS_F_ALL
	 * (the parser has lost the request boundaries); with XPS_F_CLOSES,
	 * the service executes nothing of the connection from here on. */
	XPS_REQ_MALFORMED = 6,
};

enum xps_req_flags {
	XPS_F_ALL = 1 << 0,		/* invalidate every key */
	XPS_F_STATE = 1 << 1,		/* stop serving this connection */
	XPS_F_GLOBAL = 1 << 2,		/* server-wide change (auth, pause,
					 * role): other connections too */
	XPS_F_NOREPLY = 1 << 3,		/* the service sends no reply */
	XPS_F_BLOCKING = 1 << 4,	/* the command may block the connection */
	XPS_F_DEFERRED = 1 << 5,	/* the write may happen later than the
					 * request (blocking pop, delayed flush) */
	XPS_F_TOO_BIG = 1 << 6,		/* INCOMPLETE that cannot fit in
					 * XPS_SCRATCH bytes */
	XPS_F_INLINE = 1 << 7,		/* Redis inline (telnet) command */
	XPS_F_QUOTED = 1 << 8,		/* Redis inline command with quotes:
					 * argument bytes are not literal */
	XPS_F_CAS = 1 << 9,		/* memcached gets/gats: reply with cas */
	XPS_F_BADKEY = 1 << 10,		/* a key the fast path must not serve
					 * (too long, control characters) */
	XPS_F_NOEXP = 1 << 11,		/* memcached set, add, replace or cas,
					 * exptime 0, its data block seen
					 * ending in CRLF: stored, the item
					 * is the block and never expires */
	XPS_F_CLOSES = 1 << 12,		/* MALFORMED that the service rejects
					 * with a protocol error, executing
					 * nothing of it or after it on the
					 * connection (Redis closes it) */
	XPS_F_UNKNOWN = 1 << 13,	/* Redis: a command name (unquoted)
					 * not in the handler's table, taken
					 * for a write of every key (XPS_F_ALL)
					 * unless the server is known to have
					 * no such command */
	XPS_F_RELEXP = 1 << 14,		/* memcached set, add, replace or cas
					 * as XPS_F_NOEXP, but with a relative
					 * exptime (1 to 30 days in seconds),
					 * in num: stored, the item is the
					 * block and expires that much later */
	XPS_F_SETS = 1 << 15,		/* memcached set (not add, replace,
					 * cas) with XPS_F_NOEXP: stored or
					 * not, no item with an expiry is
					 * left (a failed set unlinks it) */
};

/* A byte range of the scratch buffer. */
struct xps_span {
	__u16 off;
	__u16 len;
};

/* Bytes of parser work area in a result (struct xps_kv_req.ws). */
#define XPS_KV_WS		96
#define XPS_KV_PAIRS		4	/* key-value pairs a write-through takes */

/* Parse result shared by the Redis and memcached parsers. */
struct xps_kv_req {
	__u32 kind;		/* enum xps_req_kind */
	__u32 flags;		/* enum xps_req_flags */
	__u32 req_len;		/* bytes of this request, see XPS_REQ_* */
	__u32 hint;		/* INCOMPLETE: kind proven by the prefix */
	__u16 argc;		/* arguments (Redis) / tokens (memcached) */
	__u16 nkeys;		/* valid entries of keys[] */
	struct xps_span name;	/* command name */
	struct xps_span keys[XPS_MAX_KEYS];
	/* memcached flush_all <delay> (XPS_F_DEFERRED): the delay, seconds
	 * or, above 30 days, a unix time; 0 when it is not a number.  A
	 * set with XPS_F_RELEXP: its exptime */
	__u32 num;
	/* Redis, a RESP write whose arguments are all in the buffer: of
	 * three, five or six arguments, argument 2 (SET's value) and, of
	 * five or six, arguments 3 and 4 in opt[0] and opt[1] (SET's EX or
	 * PX and its number) and, of six, argument 5 in opt[2]; of four,
	 * argument 3 (SETEX's value) and argument 2 in opt[1] (its time to
	 * live); len 0 otherwise */
	struct xps_span val;
	struct xps_span opt[3];
	/* Redis, a RESP write of an odd count of arguments, 3 to
	 * 1 + 2 * XPS_KV_PAIRS, all in the buffer: arguments 2, 4, 6... (the
	 * values of MSET, MSETNX) in mval[0..]; len 0 past them */
	struct xps_span mval[XPS_KV_PAIRS];
	/* Not a result: the parsers' work area (argument spans, tokens),
	 * here rather than on the 512-byte BPF stack that the handler's own
	 * frames share with the parser's.  Undefined after a parse. */
	__u64 ws[XPS_KV_WS / 8];
};

/*
 * Hide a value from the compiler's range analysis (not from the verifier):
 * keeps clang from turning the branch-free arithmetic below back into
 * compare-and-branch, which is what the arithmetic is there to avoid.
 */
#if defined(__bpf__)
#define XPS_OPAQUE(x)	asm volatile("" : "+r"(x))
#else
#define XPS_OPAQUE(x)	((void)0)
#endif

/*
 * For the verifier only: return @v as a value the verifier knows nothing
 * about.  A loop that exits on data leaves a different known value (its
 * exit position, the number it parsed) on every exit path, and the verifier
 * would walk the code after the loop once per exit, multiplying with every
 * further loop.  A value written to the stack in two halves and read back
 * whole is "unknown" to the verifier and, unlike arithmetic tricks, does
 * not pull the original back into precision tracking, so all exits merge.
 */
XPS_INLINE __u64 xps_forget64(__u64 v)
{
#if defined(__bpf__)
	volatile union {
		__u64 q;
		__u32 h[2];
	} u;

	u.h[0] = (__u32)v;
	u.h[1] = (__u32)(v >> 32);
	return u.q;
#else
	return v;
#endif
}

/* The same for a position (< 4096), bounded again for later indexing. */
XPS_INLINE __u32 xps_forget(__u32 v)
{
	return (__u32)(xps_forget64(v) & 0xfff);
}

/*
 * Branch-free byte tests.  A comparison compiles to a conditional jump on
 * BPF; inside long byte loops every such jump doubles the paths the
 * verifier walks, while arithmetic keeps one path.  All take c in [0, 255]
 * and return 0 or 1.
 */
XPS_INLINE __u64 xps_eq(__u64 c, __u64 v)
{
	__u64 d = c ^ v;

	XPS_OPAQUE(d);
	/* d - 1 wraps (top bit set) only for d == 0; d is in [0, 255]. */
	return (d - 1) >> 63;
}

/* 1 when lo <= c <= hi. */
XPS_INLINE __u64 xps_in(__u64 c, __u64 lo, __u64 hi)
{
	__u64 t = c - lo;

	XPS_OPAQUE(t);
	/* Unsigned: t <= hi - lo exactly when lo <= c <= hi. */
	return (t - (hi - lo) - 1) >> 63 & ~(t >> 63);
}

/* 1 when a >= b, for a, b < 2^63. */
XPS_INLINE __u64 xps_ge(__u64 a, __u64 b)
{
	__u64 d = b - a - 1;

	XPS_OPAQUE(d);
	return d >> 63;
}

/* 1 when v == 0, for any v < 2^63. */
XPS_INLINE __u64 xps_zero(__u64 v)
{
	XPS_OPAQUE(v);
	return (v - 1) >> 63;
}

/* 1 when v == 0, for any 64-bit v.  w < 2^63 and is 0 only for v == 0. */
XPS_INLINE __u64 xps_zero64(__u64 v)
{
	__u64 w;

	XPS_OPAQUE(v);
	w = (v >> 1) | (v & 1);
	XPS_OPAQUE(w);
	return (w - 1) >> 63;
}

/*
 * a when sel == 1, b when sel == 0, without a branch.  A multiplication,
 * not a 0/all-ones mask: ANDing or ORing a constant with a register the
 * verifier knows to be 0 or -1 makes some kernels fork the state there
 * (maybe_fork_scalars(), and Linux 6.18.y oopses on it when the fork hits
 * the jump limit).  Nothing compiled for BPF may build such a mask.
 */
XPS_INLINE __u64 xps_sel(__u64 sel, __u64 a, __u64 b)
{
	__u64 d = a - b, r;

	XPS_OPAQUE(sel);
	r = b + d * sel;
	XPS_OPAQUE(r);
	return r;
}

/* ASCII upper-casing without a branch. */
XPS_INLINE __u64 xps_upper(__u64 c)
{
	return c ^ (xps_in(c, 'a', 'z') << 5);
}

/*
 * Constant packing of a string literal into the little-endian 64-bit words
 * the parsers build from payload bytes.  The literal is padded so that the
 * index is always in bounds, even for the words past its end.
 */
#define XPS__PAD(s)	("" s "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0")
#define XPS__B(s, i)	((__u64)(__u8)XPS__PAD(s)[(i)] << (8 * ((i) % 8)))
#define XPS_PACK(s, w)							\
	(XPS__B(s, 8 * (w) + 0) | XPS__B(s, 8 * (w) + 1) |		\
	 XPS__B(s, 8 * (w) + 2) | XPS__B(s, 8 * (w) + 3) |		\
	 XPS__B(s, 8 * (w) + 4) | XPS__B(s, 8 * (w) + 5) |		\
	 XPS__B(s, 8 * (w) + 6) | XPS__B(s, 8 * (w) + 7))

/*
 * Big-endian packing of the last bytes of a literal, to compare with a
 * register that shifts each new payload byte in from the right:
 * XPS_PACK_BE() holds the last 8 bytes, XPS_PACK_BE_HI() the 8 before.
 */
#define XPS__BEX(s, i, sh)						\
	((sizeof(s) - 1 > (i)) ?					\
	 (__u64)(__u8)XPS__PAD(s)[(sizeof(s) - 1 > (i)) ?		\
				  sizeof(s) - 2 - (i) : 0] << (8 * (sh)) : 0)
#define XPS_PACK_BE(s)							\
	(XPS__BEX(s, 0, 0) | XPS__BEX(s, 1, 1) | XPS__BEX(s, 2, 2) |	\
	 XPS__BEX(s, 3, 3) | XPS__BEX(s, 4, 4) | XPS__BEX(s, 5, 5) |	\
	 XPS__BEX(s, 6, 6) | XPS__BEX(s, 7, 7))
#define XPS_PACK_BE_HI(s)						\
	(XPS__BEX(s, 8, 0) | XPS__BEX(s, 9, 1) | XPS__BEX(s, 10, 2) |	\
	 XPS__BEX(s, 11, 3) | XPS__BEX(s, 12, 4) | XPS__BEX(s, 13, 5) |	\
	 XPS__BEX(s, 14, 6) | XPS__BEX(s, 15, 7))
/* Mask of the low n bytes, n in 1..8. */
#define XPS_BYTES_MASK(n)	((n) >= 8 ? ~0ULL : (1ULL << (8 * (n))) - 1)

/* Name of up to XPS_WORDS_MAX bytes, upper-cased and packed, plus length. */
#define XPS_WORDS_MAX	24
struct xps_words {
	__u64 w[3];
	__u32 len;
};

/*
 * Pack buf[off, off + len) upper-cased (when @fold) into @out.  Names longer
 * than XPS_WORDS_MAX get len = 0 so they match nothing.  Returns out->len.
 */
XPS_GLOBAL int xps__pack_words(const struct xps_buf *buf, __u32 off,
			       __u32 len, __u32 fold, struct xps_words *out)
{
	__u64 w0 = 0, w1 = 0, w2 = 0;
	__u32 i;

	if (!buf || !out)
		return 0;
	if (len > XPS_WORDS_MAX)
		len = 0;
	for (i = 0; i < XPS_WORDS_MAX; i++) {
		__u64 c;

		if (i >= len)
			break;
		c = XPS_AT(buf->b, off + i);
		if (fold)
			c = xps_upper(c);
		if (i < 8)
			w0 |= c << (8 * i);
		else if (i < 16)
			w1 |= c << (8 * (i - 8));
		else
			w2 |= c << (8 * (i - 16));
	}
	out->w[0] = w0;
	out->w[1] = w1;
	out->w[2] = w2;
	out->len = len;
	return (int)len;
}

/*
 * Whether the @wd->len bytes packed in @wd hold a NUL: a name C string
 * functions would end early (len 0, a name too long to pack: yes).
 */
XPS_INLINE int xps_words_nul(const struct xps_words *wd)
{
	const __u64 lo = 0x0101010101010101ULL, hi = 0x8080808080808080ULL;
	__u64 v, pad;
	__u32 i, n;

	if (!wd->len)
		return 1;
	for (i = 0; i < 3; i++) {
		n = wd->len > 8 * i ? wd->len - 8 * i : 0;	/* its bytes */
		/* the bytes past the name are 0: make them 0xff */
		pad = n >= 8 ? 0 : ~0ULL << (8 * n);
		v = wd->w[i] | pad;
		if ((v - lo) & ~v & hi)		/* a zero byte */
			return 1;
	}
	return 0;
}

XPS_INLINE void xps_pack_words(const __u8 *buf, __u32 off, __u32 len,
			       int fold, struct xps_words *out)
{
	xps__pack_words(XPS_BUF(buf), off, len, fold ? 1 : 0, out);
}

/* True when @wd holds exactly the literal @s (case already folded). */
#define XPS_WORDS_IS(wd, s)						\
	((wd)->len == sizeof(s) - 1 && (wd)->w[0] == XPS_PACK(s, 0) &&	\
	 (wd)->w[1] == XPS_PACK(s, 1) && (wd)->w[2] == XPS_PACK(s, 2))

/*
 * Decimal formatting into dst[0..20), left-aligned.  Returns the number of
 * digits (1..20).
 */
XPS_INLINE __u32 xps_fmt_u64(__u8 *dst, __u64 v)
{
	__u64 t = v;
	__u32 n = 0, i;

	for (i = 0; i < 20; i++) {
		n++;
		t /= 10;
		if (!t)
			break;
	}
	for (i = 0; i < 20; i++) {
		__u32 at = n - 1 - i;

		/* Always true for i < n; the test bounds @at for the
		 * verifier. */
		if (i >= n || at >= 20)
			break;
		dst[at] = '0' + (__u8)(v % 10);
		v /= 10;
	}
	return n;
}

/* Room for a u64 in decimal. */
struct xps_digits {
	__u8 b[24];	/* 20, and the last word's slack */
} __attribute__((aligned(8)));

/*
 * Eight bytes at @p of the XPS_SCRATCH-byte buffer @buf, and a store of
 * them, at any alignment: one instruction each on BPF (the verifier
 * allows misaligned access where the CPU does it cheaply, as x86 and arm64
 * do), a copy in host builds (the sanitizers).  @p is hidden from clang
 * and checked for the verifier; callers keep it <= XPS_SCRATCH - 8.
 */
static inline __attribute__((always_inline, unused)) __u32 xps__idx8(__u32 i)
{
	XPS__HIDE(i);
	return i <= XPS_SCRATCH - 8 ? i : XPS_SCRATCH - 8;
}
#if defined(__bpf__)
#define XPS_GET8(buf, p)						\
	(*(const __u64 *)(const void *)&(buf)[xps__idx8(p)])
#define XPS_PUT8(buf, p, v)						\
	(*(__u64 *)(void *)&(buf)[xps__idx8(p)] = (v))
#else
#define XPS_GET8(buf, p)						\
	({ __u64 __w; __builtin_memcpy(&__w, &(buf)[xps__idx8(p)], 8); __w; })
#define XPS_PUT8(buf, p, v)						\
	({ __u64 __w = (v); __builtin_memcpy(&(buf)[xps__idx8(p)], &__w, 8); })
#endif

/*
 * xps_fmt_u64() as a global function: for a value the verifier knows
 * nothing about, the inline version's loop exits (one per digit count)
 * would multiply with everything the caller does afterwards.  The digit
 * count comes back as one unknown value instead.
 */
XPS_GLOBAL int xps__fmt_digits(struct xps_digits *d, __u64 v)
{
	if (!d)
		return 1;
	return (int)xps_fmt_u64(d->b, v);
}

/*
 * Copy @n bytes (n <= XPS_SCRATCH) of @src into the XPS_SCRATCH-byte buffer
 * @dst at @at.  Both indices are masked for the verifier; callers check
 * at + n <= XPS_SCRATCH first.  A global function: the byte loop is
 * verified once.  Returns n.
 */
XPS_GLOBAL int xps__copy(struct xps_buf *dst, __u32 at,
			 const struct xps_buf *src, __u32 n)
{
	__u32 i;

	if (!dst || !src)
		return 0;
	for (i = 0; i < XPS_SCRATCH; i++) {
		__u8 c;

		if (i >= n)
			break;
		c = src->b[XPS_IDX(i)];
		XPS_OPAQUE(c);		/* no memcpy() on BPF */
		dst->b[XPS_IDX(at + i)] = c;
	}
	return (int)n;
}

XPS_INLINE void xps_copy(__u8 *dst, __u32 at, const __u8 *src, __u32 n)
{
	xps__copy((struct xps_buf *)(void *)dst, at, XPS_BUF(src), n);
}

#endif /* __XPS_PROTO_COMMON_BPF_H */
