/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Request counting for line protocols (one request per line, one reply
 * line per request), as the example handlers speak them: include after
 * xps.bpf.h, with XPS_REPLY_PROTO defined as XPS_REPLY_LINE, and call
 * xps_count_lines() on every segment (docs/ordering.md).
 */
#ifndef __XPS_LINES_BPF_H
#define __XPS_LINES_BPF_H

#include "proto/lanes.bpf.h"

/* xps_conn_hstate.flags bit: the last segment ended inside a line. */
#define XPS_LINES_MID		(1U << 31)
#define XPS_LINES_WIN		64
/* windows per segment: 64 KiB */
#define XPS_LINES_WINS		1024

struct xps__lines {
	struct __sk_buff *skb;
	__u32 len;
	__u32 nl;		/* '\n' bytes seen */
	__u8 last;		/* the last byte seen */
	int err;
	union {
		__u8 win[XPS_LINES_WIN];
		__u64 w[XPS_LINES_WIN / 8];
	};
};

/*
 * The '\n' bytes of an 8-byte word, without a branch: the lanes where
 * w has '\n' (xps_lanes_zero(), exact), added up in the top byte by the
 * multiply.  Branch-free, so the verifier walks the window once, not
 * once per byte.
 */
static __always_inline __u32 xps__nl_in_word(__u64 w)
{
	__u64 t = xps_lanes_zero(w ^ XPS__W8('\n'));

	return (__u32)(((t >> 7) * 0x0101010101010101ULL) >> 56);
}

static long xps__lines_win(__u32 i, void *ctx)
{
	struct xps__lines *l = ctx;
	__u32 off = i * XPS_LINES_WIN, n, j;

	if (off >= l->len)
		return 1;
	n = l->len - off;
	if (n > XPS_LINES_WIN)
		n = XPS_LINES_WIN;
	barrier_var(n);
	if (n < 1 || n > XPS_LINES_WIN)	/* only for the verifier */
		return 1;
	/* bytes past n stay zero, which is not '\n' */
	if (n < XPS_LINES_WIN)
		__builtin_memset(l->w, 0, sizeof(l->w));
	if (xps_load(l->skb, off, l->win, n)) {
		l->err = 1;
		return 1;
	}
	for (j = 0; j < XPS_LINES_WIN / 8; j++)
		l->nl += xps__nl_in_word(l->w[j]);
	l->last = l->win[(n - 1) & (XPS_LINES_WIN - 1)];
	return 0;
}

/* Count the lines that start in this segment with xps_request(). */
static __always_inline void xps_count_lines(struct __sk_buff *skb)
{
	struct xps_conn_hstate *cs = xps_conn_state(skb);
	struct xps__lines l = { .skb = skb, .len = xps_len(skb) };
	__u32 starts;

	if (!l.len)
		return;
	if (l.len > XPS_LINES_WIN * XPS_LINES_WINS) {
		xps_requests_lost(skb);
		return;
	}
	bpf_loop(XPS_LINES_WINS, xps__lines_win, &l, 0);
	if (l.err) {
		xps_requests_lost(skb);
		return;
	}
	/* a line starts at the segment's start and after every '\n' but
	 * a last one
	 */
	starts = l.nl - (l.last == '\n');
	if (!cs || !(cs->flags & XPS_LINES_MID))
		starts++;
	if (cs) {
		if (l.last == '\n')
			cs->flags &= ~XPS_LINES_MID;
		else
			cs->flags |= XPS_LINES_MID;
	}
	xps_requests(skb, starts);
}

#endif /* __XPS_LINES_BPF_H */
