/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The coherence machinery of a cache handler (docs/coherence.md): writes
 * counted until the service answers them, by connection and by key, and
 * copies of the service's replies for the filler that learns from them.
 * Built on the handler API and the framework's records of connections;
 * the kv-cache (kvcache.bpf.h) is its user.
 */
#ifndef __XPS_LIB_COHERENCE_BPF_H
#define __XPS_LIB_COHERENCE_BPF_H

#include "xps.bpf.h"

/*
 * A cache handler calls this for every write request it is about to pass,
 * before it bumps the versions of the keys the write touches (or the cache
 * generation).  It counts the write as unanswered, in the connection's
 * unacked and in xps_config.unacked_writes, until the service writes on
 * the connection with nothing left unread (the framework's egress
 * programs release it then) or the connection closes.  A filler reads a
 * key's version, then fetches its value only while no write is
 * unanswered, and stamps the value with that version; the handler serves
 * only values whose stamp is still current.  Counting before the bump is
 * what makes this hold (docs/coherence.md).  Not counted: UDP writes,
 * whose answers are never seen, and writes on a connection XPS has no
 * record of; the filler keeps the handler from serving after the one and
 * while the other is open (docs/coherence.md).
 */
static __always_inline void xps_note_write(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();
	struct xps_config *cfg;
	struct xps_conn *conn;
	__u32 zero = 0;

	cfg = bpf_map_lookup_elem(&xps_config, &zero);
	if (!cfg || !run)
		return;
	if (run->proto != IPPROTO_TCP)
		return;	/* the filler keeps the handler out instead */
	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	if (!conn)
		return;
	__sync_fetch_and_add(&cfg->unacked_writes, 1);
	__sync_fetch_and_add(&conn->unacked, 1);
}

/* The connection record of a TCP run, for counting its writes. */
static __always_inline struct xps_conn *xps__write_conn(struct xps_wpend **wp)
{
	struct xps_run *run = xps__run();
	__u32 zero = 0;

	if (!run || run->proto != IPPROTO_TCP)
		return NULL;
	*wp = bpf_map_lookup_elem(&xps_wpend, &zero);
	if (!*wp)
		return NULL;
	return bpf_map_lookup_elem(&xps_conns, &run->cookie);
}

/*
 * After xps_note_write(), the same write counted by key, so that a reader
 * of another key need not wait for it (xps_writes_pending()): call
 * xps_note_write_key() with the 64-bit hash of each key the write
 * touches, before bumping the key's version, or xps_note_write_all() for
 * a write of every key (or of keys the handler cannot name).  Released
 * with the write.  A connection keeps XPS_CONN_WB buckets apart; writes
 * past them count as writes of every key.  Both count for the current
 * run's connection; @skb may be NULL.
 */
static __always_inline void xps_note_write_all(struct __sk_buff *skb)
{
	struct xps_wpend *wp;
	struct xps_conn *conn = xps__write_conn(&wp);

	if (!conn)
		return;
	__sync_fetch_and_add(&wp->ovf, 1);
	__sync_fetch_and_add(&conn->wovf, 1);
}

static __always_inline void xps_note_write_key(struct __sk_buff *skb,
					       __u64 hash)
{
	__u32 b = hash & (XPS_WPEND_BUCKETS - 1), i, slot = XPS_CONN_WB;
	struct xps_wpend *wp;
	struct xps_conn *conn = xps__write_conn(&wp);

	if (!conn)
		return;
	for (i = 0; i < XPS_CONN_WB; i++) {
		if (conn->wbc[i] && conn->wb[i] == b) {
			slot = i;
			break;
		}
		if (!conn->wbc[i] && slot == XPS_CONN_WB)
			slot = i;
	}
	if (slot >= XPS_CONN_WB) {
		__sync_fetch_and_add(&wp->ovf, 1);
		__sync_fetch_and_add(&conn->wovf, 1);
		return;
	}
	/* the bucket first: a release in between then releases less */
	__sync_fetch_and_add(&wp->b[b], 1);
	conn->wb[slot] = b;
	__sync_fetch_and_add(&conn->wbc[slot], 1);
}

/*
 * Unanswered writes that may touch the key of @hash (0: none), as counted
 * by xps_note_write_key() and xps_note_write_all().
 */
static __always_inline __u64 xps_writes_pending(__u64 hash)
{
	struct xps_wpend *wp;
	__u32 zero = 0;

	wp = bpf_map_lookup_elem(&xps_wpend, &zero);
	if (!wp)
		return 1;
	return *(volatile __u64 *)&wp->ovf +
	       *(volatile __u64 *)&wp->b[hash & (XPS_WPEND_BUCKETS - 1)];
}

/*
 * Ask for a copy of the service's reply to the request just counted
 * (xps_request()), for the user-space process that reads the slot's
 * capture ring (struct xps_cap_hdr in include/xps/abi.h).  Returns the ARM
 * record to hand to xps_capture_submit() once its tag (up to
 * XPS_CAP_TAG_MAX bytes, h.len of them) says what user space needs to use
 * the reply; NULL when nothing will be captured: not TCP, replies not
 * counted on the connection (docs/ordering.md), an earlier capture on it
 * still unanswered, nobody reading the slot's ring, or the ring full.
 * The reply is copied when egress counts it, if it is the first reply in
 * a segment and ends there: the segment's bytes from the reply's start,
 * at most XPS_CAP_REPLY_MAX.  The request must be passed.
 */
static __always_inline struct xps_cap_arm *
xps_capture_reply(struct __sk_buff *skb)
{
	struct xps_run *run = xps__run();
	struct xps_cap_arm *rec;
	struct xps_conn *conn;
	__u32 reply;
	void *ring;

	if (!run || run->proto != IPPROTO_TCP || !run->reqs)
		return NULL;
	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	if (!conn || (conn->flags & (XPS_CONN_UNCOUNTED | XPS_CONN_EGRESS)) !=
		     XPS_CONN_EGRESS)
		return NULL;
	/* one at a time: egress looks for one reply number */
	if (conn->cap_reply && (__s32)(conn->answered - conn->cap_reply) < 0)
		return NULL;
	ring = bpf_map_lookup_elem(&xps_caps, &run->slot);
	if (!ring)
		return NULL;
	rec = bpf_ringbuf_reserve(ring, sizeof(*rec), 0);
	if (!rec)
		return NULL;
	reply = conn->owed + run->reqs;
	rec->h.cookie = run->cookie;
	rec->h.time_ns = bpf_ktime_get_ns();
	rec->h.reply = reply;
	rec->h.kind = XPS_CAP_ARM;
	rec->h.len = 0;
	conn->cap_reply = reply;
	return rec;
}

/* The ARM record is complete: user space may read it. */
static __always_inline void xps_capture_submit(struct xps_cap_arm *rec)
{
	bpf_ringbuf_submit(rec, 0);
}

#endif /* __XPS_LIB_COHERENCE_BPF_H */
