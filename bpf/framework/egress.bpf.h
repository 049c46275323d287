/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The egress step, on both TCP backends: xps_tc_egress counts the replies
 * a service sends (docs/ordering.md), captures the ones handlers asked
 * for, commits the values of the writes they made records for, releases
 * answered writes on the native backend, and completes the stock
 * backend's RESET.  Part of xps_framework.bpf.c.
 */
#ifndef __XPS_FW_EGRESS_BPF_H
#define __XPS_FW_EGRESS_BPF_H

/* Swap the source and destination addresses (MAC and IP) of the frame. */
static __always_inline void swap_addrs(struct __sk_buff *skb,
				       const struct xps__ip *h)
{
	struct ethhdr eth;

	if (!bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth))) {
		xps__swap_eth(&eth);
		bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0);
	}
	if (h->family == AF_INET) {
		struct iphdr ip;

		if (!bpf_skb_load_bytes(skb, h->l3, &ip, sizeof(ip))) {
			xps__swap_ip4(&ip);
			bpf_skb_store_bytes(skb, h->l3, &ip, sizeof(ip), 0);
		}
	} else {
		struct ipv6hdr ip6;

		if (!bpf_skb_load_bytes(skb, h->l3, &ip6, sizeof(ip6))) {
			xps__swap_ip6(&ip6);
			bpf_skb_store_bytes(skb, h->l3, &ip6, sizeof(ip6), 0);
		}
	}
}

/*
 * The native hook has no sk_msg, so answered writes are released here, on
 * segments that carry bytes the service wrote (the caller checks): a pure
 * ACK also leaves when the service has merely read a write, before
 * executing it, and a kernel reply decided before a write arrived may
 * still be leaving after the service read that write.
 */
static __always_inline void egress_release(struct __sk_buff *skb,
					   struct xps_conn *conn)
{
	struct xps_config *cfg = config();
	struct bpf_sock *bsk = skb->sk;
	struct tcp_sock___xps *tp;

	if (!cfg || cfg->backend_tcp != XPS_BACKEND_NATIVE || !bsk)
		return;
	tp = (struct tcp_sock___xps *)bpf_skc_to_tcp_sock(bsk);
	if (tp)
		release_writes(cfg, conn, tp);
}

/*
 * Counting the service's replies (docs/ordering.md).  Every segment the
 * connection sends passes here, in sequence order, before any qdisc:
 * bytes before conn->eg_seq were accounted for already (retransmissions);
 * the first conn->kr_bytes after it are replies from the kernel; the rest
 * are the service's, fed to the reply framing of the connection's
 * protocol a 64-byte window at a time (xps_eg_feed()), but for the data
 * it can skip unread and the bytes it only waits past (xps_eg_scan()).
 */
#define XPS_EG_WIN	64
/* bpf_loop iterations per segment: a 64 KiB GSO segment of short values */
#define XPS_EG_STEPS	(1 << 18)

struct eg_win {
	__u8 b[XPS_EG_WIN];
} __attribute__((aligned(8)));

struct eg_walk {
	struct __sk_buff *skb;
	struct xps_conn *conn;
	__u32 off;		/* next skb offset to account for */
	__u32 end;
	__u32 woff;		/* next byte in win */
	__u32 wlen;		/* bytes in win */
	__u32 wt;		/* the reply a write-through waits for */
	__u32 wt_at;		/* where it begins in the skb, 0: not here */
	int lost;
	struct eg_win win;
};

/*
 * How many bytes from @o on, before @end (<= XPS_EG_WIN), of the window
 * @win the framing may pass over in the wait xps_reply_scan() said is
 * @scan: up to the first byte that ends it, whole words at a time where
 * the window allows (an HTTP response head is mostly header values no
 * count depends on).  A global function, verified once: inline in the
 * walk's callback, its loops took the verifier past its limit.
 */
__attribute__((noinline))
__u32 xps_eg_scan(const struct eg_win *win, __u32 o, __u32 end, int scan)
{
	const __u64 ones = 0x0101010101010101ULL;
	const __u64 high = 0x8080808080808080ULL;
	__u32 from = o, i;
	__u64 x, t;

	if (!win || end > XPS_EG_WIN)
		return 0;
	/* bytes up to a word boundary of the window */
	for (i = 0; i < 7; i++) {
		if (!(o & 7) || o >= end)
			break;
		if (xps_reply_scan_end(scan, win->b[o & (XPS_EG_WIN - 1)]))
			return o - from;
		o++;
	}
	/* words with none of the bytes that end the wait */
	for (i = 0; i < XPS_EG_WIN / 8; i++) {
		if (o + 8 > end)
			break;
		/* o is a word's start below end: the mask, for the verifier */
		x = *(const __u64 *)&win->b[o & (XPS_EG_WIN - 8)];
		t = x ^ ('\n' * ones);
		t = (t - ones) & ~t & high;
		if (scan & XPS_RB_SCAN_COLON) {
			x ^= ':' * ones;
			t |= (x - ones) & ~x & high;
		}
		if (t)
			break;
		o += 8;
	}
	/* the word that holds one, or the window's last bytes */
	for (i = 0; i < 8; i++) {
		if (o >= end ||
		    xps_reply_scan_end(scan, win->b[o & (XPS_EG_WIN - 1)]))
			break;
		o++;
	}
	return o - from;
}

/*
 * Feed the bytes of the window @win from @o to @end through the framing
 * @rp, reading a reply for a request whose reply has no body when
 * @nobody, until one ends a reply or makes the framing give up, or the
 * framing next wants what the caller does itself (data to skip, a wait to
 * pass over, a reply's start).  Returns the bytes fed times 4 plus the
 * last byte's result + 1 (XPS_RB_*); 0 when nothing was fed.  A global
 * function, verified once: a bpf_loop step per byte cost about 120
 * instructions a byte, most of them the step's own.
 */
__attribute__((noinline))
__u32 xps_eg_feed(struct xps_reply *rp, const struct eg_win *win, __u32 o,
		  __u32 end, int nobody)
{
	int r = XPS_RB_MORE;
	__u32 from = o, i;

	if (!rp || !win || end > XPS_EG_WIN || o >= end)
		return 0;
	for (i = 0; i < XPS_EG_WIN; i++) {
		if (o >= end)
			break;
		if (i && (rp->skip || xps_reply_scan(rp) || xps_reply_idle(rp)))
			break;
		r = xps_reply_byte(rp, win->b[o & (XPS_EG_WIN - 1)], nobody);
		o++;
		if (r != XPS_RB_MORE)
			break;
	}
	return (o - from) << 2 | (__u32)(r + 1);
}

static long eg_step(__u32 i, void *ctx)
{
	struct eg_walk *w = ctx;
	struct xps_conn *conn = w->conn;
	struct xps_reply *rp = &conn->rp;
	__u32 left, k, n, nobody;
	int r, scan;

	if (w->off >= w->end)
		return 1;
	left = w->end - w->off;
	if (rp->skip) {
		k = rp->skip < left ? rp->skip : left;
		rp->skip -= k;
		w->off += k;
		w->wlen = 0;
		if (rp->skip)
			return 0;
		r = xps_reply_skipped(rp);
	} else {
		if (w->woff >= w->wlen) {
			k = left < XPS_EG_WIN ? left : XPS_EG_WIN;
			barrier_var(k);
			if (k < 1 || k > XPS_EG_WIN)	/* only for the verifier */
				return 1;
			if (bpf_skb_load_bytes(w->skb, w->off, w->win.b, k)) {
				w->lost = 1;
				return 1;
			}
			w->wlen = k;
			w->woff = 0;
		}
		scan = xps_reply_scan(rp);
		if (scan) {
			k = xps_eg_scan(&w->win, w->woff, w->wlen, scan);
			/* no further than the window: the verifier's bounds */
			if (k && k <= w->wlen - w->woff) {
				xps_reply_pass(rp, k);
				w->woff += k;
				w->off += k;
				return 0;
			}
		}
		/* a reply begins that no request asked for */
		if (xps_reply_idle(rp) && conn->owed == conn->answered) {
			w->lost = 1;
			return 1;
		}
		nobody = conn->nobody >> (conn->answered & XPS_NOBODY_MASK);
		k = xps_eg_feed(rp, &w->win, w->woff, w->wlen, nobody & 1);
		n = k >> 2;
		if (n < 1 || n > w->wlen - w->woff) {
			w->lost = 1;
			return 1;
		}
		w->woff += n;
		w->off += n;
		r = (int)(k & 3) - 1;
	}
	if (r == XPS_RB_ERR) {
		w->lost = 1;
		return 1;
	}
	if (r == XPS_RB_DONE) {
		conn->answered++;
		if (conn->answered + 1 == w->wt)
			w->wt_at = w->off;
	}
	return 0;
}

/*
 * The segment's service bytes, between two replies and owed one, are a
 * short reply taken whole (xps_reply_short(): the acknowledgement of a
 * write, "+OK\r\n" or "STORED\r\n"): counted as eg_step() would, without
 * the walk.  0: walk them.
 */
static __always_inline int egress_short(struct eg_walk *w)
{
	struct xps_conn *conn = w->conn;
	__u32 n = w->end - w->off;
	__u64 word = 0;

	/*
	 * Two tests apart: clang folds "n < 2 || n > 8" into one range test
	 * of a copy of n, whose bounds the 6.12 verifier does not give n.
	 */
	if (n > sizeof(word))
		return 0;
	barrier_var(n);
	if (n < 2 || bpf_skb_load_bytes(w->skb, w->off, &word, n) ||
	    !xps_reply_short(&conn->rp, word, n))
		return 0;
	conn->answered++;
	if (conn->answered + 1 == w->wt)
		w->wt_at = w->end;
	w->off = w->end;
	return 1;
}

/*
 * The reply a handler asked for (xps_capture_reply()), when it is the
 * first reply in this segment and ends in it: the segment's service bytes
 * from its start, up to XPS_CAP_REPLY_MAX, go to the slot's capture ring;
 * user space finds where the reply ends.  Decided from what the walk
 * counted, not inside it: the walk's bpf_loop verifies only as long as
 * its state stays small.
 */
static __always_inline void capture_emit(struct __sk_buff *skb,
					 struct xps_conn *conn, __u64 cookie,
					 __u32 cap, __u32 start, __u32 end)
{
	__u32 len = end - start, slot = conn->slot, n;
	struct xps_cap_reply *rec;
	void *ring;

	ring = bpf_map_lookup_elem(&xps_caps, &slot);
	if (!ring)
		return;
	rec = bpf_ringbuf_reserve(ring, sizeof(*rec), 0);
	if (!rec)
		return;
	/*
	 * Only for the verifier: the length is read back from the record,
	 * a fresh scalar.  Used as a size straight from the offsets, it
	 * would make them precise back into the walk.
	 */
	rec->h.len = len < XPS_CAP_REPLY_MAX ? len : XPS_CAP_REPLY_MAX;
	n = *(volatile __u16 *)&rec->h.len;
	if (n < 1 || n > XPS_CAP_REPLY_MAX ||
	    bpf_skb_load_bytes(skb, start, rec->b, n)) {
		bpf_ringbuf_discard(rec, 0);
		return;
	}
	rec->h.cookie = cookie;
	rec->h.time_ns = bpf_ktime_get_ns();
	rec->h.reply = cap;
	rec->h.kind = XPS_CAP_REPLY;
	bpf_ringbuf_submit(rec, 0);
}

/*
 * Write-through (struct xps_conn_wt, docs/coherence.md): reply number
 * @reply, which answers a write whose values a kv-cache handler put in
 * its context's data map pending, has been counted.  Its values are
 * committed when that reply began in this segment (at @start, which the
 * walk noted where the reply before it ended, or the segment's start; 0:
 * not here) and begins with the bytes the handler expects of a write that
 * took effect; otherwise they are deleted (wt_settle()).  Its own
 * subprogram: its frame stays off the reply walk's.
 */
static __noinline void wt_commit(struct __sk_buff *skb, struct xps_conn *conn,
				 __u32 reply, __u32 start, __u32 end)
{
	struct xps_config *cfg = config();
	struct xps_conn_wt wt;
	__u64 got = 0, mask;
	__u32 seq, n, ok = 0;

	/* a copy read whole between two even, equal @seq (struct xps_conn_wt) */
	seq = __sync_fetch_and_add(&conn->wt.seq, 0);
	__builtin_memcpy(&wt, &conn->wt, sizeof(wt));
	if ((seq & 1) || __sync_fetch_and_add(&conn->wt.seq, 0) != seq ||
	    wt.reply != reply)
		return;
	n = wt.expect_len;
	if (start && cfg && wt.gen == cfg->generation && n >= 1 && n <= 8 &&
	    end - start >= n && !bpf_skb_load_bytes(skb, start, &got, n)) {
		mask = n == 8 ? ~0ULL : (1ULL << (n * 8)) - 1;
		ok = (got & mask) == wt.expect;
	}
	wt_settle(&wt, ok);
}

/*
 * A NATS route (lib/nats.bpf.h): the server's messages are framed, none
 * of them answers anything, and its answers to heartbeats are learned.
 */
static __noinline int egress_nats(struct __sk_buff *skb, struct xps_conn *conn,
				  __u64 cookie, __u32 off, __u32 end)
{
	struct xps_nats_conn *nc;

	if (xps_nats_walk(skb, &conn->rp, cookie, off, end,
			  XPS_NATS_SEEN_EGRESS))
		xps__lose_count(conn, XPS_LOST_EG_FRAME);
	nc = bpf_map_lookup_elem(&xps_nats_conns, &cookie);
	if (nc)
		nc->tx_ns = bpf_ktime_get_ns();
	return 1;
}

/*
 * Returns whether the segment carries bytes the service wrote and egress
 * had not seen (when the count is lost: whether it carries data at all).
 */
static __always_inline int egress_count(struct __sk_buff *skb,
					struct xps_conn *conn, __u64 cookie,
					const struct tcphdr *th, __u32 payload)
{
	struct eg_walk w = { .skb = skb, .conn = conn };
	__u32 seq, end, k, cap, first, wt;
	int idle;

	if ((conn->flags & (XPS_CONN_UNCOUNTED | XPS_CONN_EGRESS)) !=
	    XPS_CONN_EGRESS)
		return 1;
	seq = bpf_ntohl(th->seq);
	end = seq + payload;
	if ((__s32)(seq - conn->eg_seq) > 0) {
		/* bytes were sent that egress never saw */
		xps__lose_count(conn, XPS_LOST_EG_GAP);
		return 1;
	}
	if ((__s32)(end - conn->eg_seq) <= 0)
		return 0;	/* a retransmission */
	w.off = skb->len - (end - conn->eg_seq);
	w.end = skb->len;
	k = end - conn->eg_seq;
	if (k > conn->kr_bytes)
		k = conn->kr_bytes;
	conn->kr_bytes -= k;
	w.off += k;
	conn->eg_seq = end;
	if (w.off >= w.end)
		return 0;	/* nothing but kernel replies */
	if (conn->rp.proto == XPS_REPLY_NATS)
		return egress_nats(skb, conn, cookie, w.off, w.end);
	first = conn->answered + 1;	/* the first reply starting here */
	idle = xps_reply_idle(&conn->rp);
	k = w.off;
	w.wt = conn->wt_reply;
	if (w.wt && w.wt == first && idle)
		w.wt_at = k;
	if (!idle || conn->owed == conn->answered || !egress_short(&w))
		bpf_loop(XPS_EG_STEPS, eg_step, &w, 0);
	if (w.lost || w.off < w.end) {
		xps__lose_count(conn, XPS_LOST_EG_FRAME);
		return 1;
	}
	cap = conn->cap_reply;
	if (cap && cap == first && idle && (__s32)(conn->answered - cap) >= 0)
		capture_emit(skb, conn, cookie, cap, k, w.end);
	wt = conn->wt_reply;
	if (wt && (__s32)(conn->answered - wt) >= 0) {
		conn->wt_reply = 0;
		wt_commit(skb, conn, wt, w.wt_at, w.end);
	}
	return 1;
}

/* The transport header offset of a TCP segment, 0 if it is not one. */
static __always_inline __u32 tcp_l4_off(struct __sk_buff *skb)
{
	struct xps__ip h;

	if (xps__ip_parse(skb, &h) || h.proto != IPPROTO_TCP)
		return 0;
	return h.l4;
}

/*
 * Every segment a recorded TCP connection sends, on both backends: the
 * service's reply bytes are counted (egress_count()) and, natively,
 * answered writes released (egress_release()).
 *
 * Then RESET on the stock backend.  A stream verdict program can only pass,
 * drop or redirect, so the handler's RESET drops the request and marks the
 * connection; the next segment the socket sends (at the latest the delayed
 * ACK of that request) is turned into an RST for the client, and a mirrored
 * RST (seq = the socket's rcv_nxt, which the segment's ack_seq carries) is
 * injected on ingress so the server's socket is closed too.
 */
SEC("tc")
int xps_tc_egress(struct __sk_buff *skb)
{
	__u16 old_flags, new_flags;
	struct xps_conn *conn;
	struct xps__ip h;
	struct tcphdr th;
	__u32 l4, payload;
	__u64 cookie;

	cookie = bpf_get_socket_cookie(skb);
	if (!cookie)
		return TC_ACT_OK;
	conn = bpf_map_lookup_elem(&xps_conns, &cookie);
	if (!conn)
		return TC_ACT_OK;
	l4 = tcp_l4_off(skb);
	if (!l4 || bpf_skb_load_bytes(skb, l4, &th, sizeof(th)))
		return TC_ACT_OK;
	payload = skb->len - l4 - th.doff * 4;
	/* bytes the service wrote, not a bare ACK or a kernel reply
	 * (egress_release())
	 */
	if (payload && payload <= skb->len &&
	    egress_count(skb, conn, cookie, &th, payload) && conn->unacked)
		egress_release(skb, conn);
	if (!conn->reset_pending)
		return TC_ACT_OK;
	conn->reset_pending = 0;
	/* parsed again here only: a family known through the count above
	 * would have the verifier walk it once per family
	 */
	if (xps__ip_parse(skb, &h))
		return TC_ACT_OK;

	/* 16-bit word 6 of the TCP header holds data offset and flags */
	__builtin_memcpy(&old_flags, TCP_FLAGS_AT(&th), 2);

	/*
	 * Mirror: swap addresses, ports and seq/ack.  Swapping 32-bit
	 * aligned fields leaves the one's complement sums unchanged, so only
	 * the flag change needs a checksum update.
	 */
	{
		struct tcphdr m = th;

		m.source = th.dest;
		m.dest = th.source;
		m.seq = th.ack_seq;
		m.ack_seq = th.seq;
		m.fin = 0;
		m.syn = 0;
		m.psh = 0;
		m.ack = 0;
		m.urg = 0;
		m.rst = 1;
		__builtin_memcpy(&new_flags, TCP_FLAGS_AT(&m), 2);
		m.check = th.check;
		if (bpf_skb_store_bytes(skb, l4, &m, sizeof(m), 0) ||
		    bpf_l4_csum_replace(skb, l4 + XPS_TCPHDR_CSUM_OFF,
					old_flags, new_flags, 2))
			goto forward;
		swap_addrs(skb, &h);
		bpf_clone_redirect(skb, skb->ifindex, BPF_F_INGRESS);
		/* undo the mirror for the segment that goes to the client */
		swap_addrs(skb, &h);
		if (bpf_skb_load_bytes(skb, l4, &m, sizeof(m)))
			return TC_ACT_SHOT;
		th.check = m.check;
		if (bpf_skb_store_bytes(skb, l4, &th, sizeof(th), 0) ||
		    bpf_l4_csum_replace(skb, l4 + 16, new_flags, old_flags, 2))
			return TC_ACT_SHOT;
	}
forward:
	/* RST|ACK at the socket's snd_nxt: the client accepts it exactly */
	if (bpf_skb_load_bytes(skb, l4, &th, sizeof(th)))
		return TC_ACT_OK;
	__builtin_memcpy(&old_flags, TCP_FLAGS_AT(&th), 2);
	th.rst = 1;
	th.psh = 0;
	th.fin = 0;
	th.ack = 1;
	__builtin_memcpy(&new_flags, TCP_FLAGS_AT(&th), 2);
	bpf_skb_store_bytes(skb, l4 + XPS_TCPHDR_FLAGS_OFF, &new_flags, 2, 0);
	bpf_l4_csum_replace(skb, l4 + XPS_TCPHDR_CSUM_OFF, old_flags, new_flags,
			    2);
	return TC_ACT_OK;
}

#endif /* __XPS_FW_EGRESS_BPF_H */
