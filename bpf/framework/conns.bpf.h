/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Connection records, on both TCP backends: xps_sockops records every
 * accepted (or dialed) connection a predicate matches (struct xps_conn)
 * and forgets it when it closes; xps_listen_close marks a service's
 * server gone when its listening socket closes; and the release of the
 * writes a service has answered (docs/coherence.md).  Part of
 * xps_framework.bpf.c.
 */
#ifndef __XPS_FW_CONNS_BPF_H
#define __XPS_FW_CONNS_BPF_H

/* The connection's writes by key are answered too (xps_note_write_key()). */
static __always_inline void release_key_writes(struct xps_conn *conn)
{
	struct xps_wpend *wp;
	__u32 zero = 0, i, n;
	__u16 b;

	wp = bpf_map_lookup_elem(&xps_wpend, &zero);
	if (!wp)
		return;
	for (i = 0; i < XPS_CONN_WB; i++) {
		b = conn->wb[i];	/* before the count: see the note side */
		n = __sync_lock_test_and_set(&conn->wbc[i], 0);
		if (n)
			__sync_fetch_and_sub(&wp->b[b & (XPS_WPEND_BUCKETS - 1)], n);
	}
	n = __sync_lock_test_and_set(&conn->wovf, 0);
	if (n)
		__sync_fetch_and_sub(&wp->ovf, n);
}

/*
 * The service writes on a connection while nothing on it is unread: it has
 * executed every request it was passed, so the writes among them are
 * answered (docs/coherence.md).  Called on the way out, before the bytes
 * reach the client; the exchange makes concurrent callers release once.
 */
static __always_inline void release_writes(struct xps_config *cfg,
					   struct xps_conn *conn,
					   struct tcp_sock___xps *tp)
{
	__u32 n;

	if (!conn->unacked || tp->copied_seq != tp->rcv_nxt)
		return;
	n = __sync_lock_test_and_set(&conn->unacked, 0);
	if (n)
		__sync_fetch_and_sub(&cfg->unacked_writes, n);
	release_key_writes(conn);
}

/* ---- TCP, both backends: a service's listening socket closes -------- */


struct bpf_map;

/* Mark the server of every predicate on port *@port gone. */
static long mark_gone(struct bpf_map *map, const struct xps_pred_key *key,
		      const struct xps_pred_value *val, __u16 *port)
{
	__u32 slot = val->slot, *w;

	if ((key->mask & XPS_PRED_LPORT) && key->lport != *port)
		return 0;
	w = bpf_map_lookup_elem(&xps_servers, &slot);
	if (w) {
		__sync_fetch_and_or(w, XPS_SERVER_GONE);
		__sync_fetch_and_add(w, XPS_SERVER_CLOSE_ONE);
	}
	return 0;
}

/*
 * A listening TCP socket closed (the server exited, was killed or closed
 * it): every context whose predicate could match its port, TCP or UDP (a
 * server's UDP socket goes with it), has lost its server (XPS_SERVER_GONE,
 * include/xps/abi.h), here, before the port can be bound again, whatever
 * user space is doing.  Addresses
 * and families are not compared: a listener on the wildcard address
 * serves a predicate on one of its addresses, and marking one context too
 * many only costs it a cache.  Runs at every TCP state change of the
 * host; anything but a listener's close returns at the first test.
 */
SEC("tp_btf/inet_sock_set_state")
int xps_listen_close(__u64 *ctx)
{
	struct sock___xps *sk = (void *)ctx[0];
	__u16 port;

	if ((int)ctx[1] != XPS_TCP_LISTEN || (int)ctx[2] != XPS_TCP_CLOSE)
		return 0;
	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	port = BPF_CORE_READ(sk, __sk_common.skc_num);
	bpf_for_each_map_elem(&xps_preds, mark_gone, &port, 0);
	return 0;
}

/* ---- TCP, both backends: connection records -------------------------- */

/*
 * The values of write-through record @wt (struct xps_conn_wt), pending in
 * the data map of its context: committed (their pending mark cleared)
 * when @ok, deleted otherwise.  Either only to an entry that is still
 * this write's value, pending with the record's stamps: a fill or another
 * write may have replaced it since.  A value committed after a later
 * write of its key carries a stamp that is no longer current: it is never
 * served, and only costs that key a miss.
 */
static __noinline void wt_settle(const struct xps_conn_wt *wt, int ok)
{
	const struct xps_conn_wt_rec *r;
	struct xps_kv_value *v;
	__u32 i, slot;
	void *data;

	if (!wt)
		return;
	slot = wt->slot;
	data = bpf_map_lookup_elem(&xps_kv_datas, &slot);
	if (!data)
		return;
	for (i = 0; i < XPS_CONN_WT_KEYS; i++) {
		if (i >= wt->n)
			break;
		r = &wt->rec[i];
		v = bpf_map_lookup_elem(data, &r->hash);
		if (!v || !v->pending || v->version != r->version ||
		    v->cgen != r->cgen)
			continue;
		if (ok)
			*(volatile __u32 *)&v->pending = 0;
		else
			bpf_map_delete_elem(data, &r->hash);
	}
}

/*
 * A slot whose handler frames the stream from its first byte
 * (XPS_SLOT_FRAMING_MASK): egress starts framing the service's bytes now,
 * and a NATS route gets its receive state.  0: the connection cannot be
 * served (no room for that state), so it is not recorded.
 */
static __always_inline int conn_framing(__u32 slot, struct xps_conn *conn,
					__u64 cookie)
{
	struct xps_nats_conn nc = {};
	struct xps_slot *s;
	__u32 f;

	s = bpf_map_lookup_elem(&xps_slots, &slot);
	if (!s)
		return 1;
	f = (s->flags & XPS_SLOT_FRAMING_MASK) >> XPS_SLOT_FRAMING_SHIFT;
	if (f != XPS_REPLY_NATS)
		return 1;
	conn->rp.proto = f;
	nc.rx.proto = f;
	return !bpf_map_update_elem(&xps_nats_conns, &cookie, &nc, BPF_ANY);
}

SEC("sockops")
int xps_sockops(struct bpf_sock_ops *skops)
{
	struct xps_pred_key key;
	struct xps_config *cfg;
	struct xps_conn conn = {};
	__u32 slot;
	__u64 cookie;

	switch (skops->op) {
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
	/* a predicate on the remote port serves sockets the service dialed */
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (skops->args[1] == BPF_TCP_CLOSE) {
			struct xps_conn *c;

			cookie = bpf_get_socket_cookie(skops);
			c = bpf_map_lookup_elem(&xps_conns, &cookie);
			cfg = config();
			/* writes that will never be answered: release them */
			if (c && cfg && c->unacked)
				__sync_fetch_and_sub(&cfg->unacked_writes,
						     c->unacked);
			if (c)
				release_key_writes(c);
			/*
			 * A write whose reply egress never saw: its values
			 * stay unconfirmed for good.  Nothing else writes the
			 * record now (the socket is closed under its lock).
			 */
			if (c && c->wt_reply)
				wt_settle(&c->wt, 0);
			if (c && c->rp.proto == XPS_REPLY_NATS)
				bpf_map_delete_elem(&xps_nats_conns, &cookie);
			bpf_map_delete_elem(&xps_conns, &cookie);
			bpf_map_delete_elem(&xps_stash, &cookie);
		}
		return 1;
	default:
		return 1;
	}

	cfg = config();
	if (!cfg)
		return 1;

	KEY_FROM_SOCK_CTX(skops, IPPROTO_TCP, &key);
	if (pred_lookup(&key, &slot))
		return 1;

	cookie = bpf_get_socket_cookie(skops);
	conn.slot = slot;
	conn.gen = cfg->generation;
	/* the service's first byte: egress accounts for the stream from here */
	conn.eg_seq = skops->snd_nxt;
	conn.flags = XPS_CONN_EGRESS;
	if (!conn_framing(slot, &conn, cookie))
		return 1;
	if (bpf_map_update_elem(&xps_conns, &cookie, &conn, BPF_ANY)) {
		__sync_fetch_and_add(&cfg->unrecorded, 1);
		return 1;
	}
	/*
	 * The native hook runs only on sockets that opted in (TCP_SERVE);
	 * this callback runs in tcp_init_transfer(), before any payload.
	 * A kernel without the opt-in refuses the option and runs the hook
	 * on every socket.  Handlers keep their per-connection state here
	 * (xps_conn_state()) on both backends.
	 */
	if (cfg->backend_tcp == XPS_BACKEND_NATIVE) {
		int one = 1;

		bpf_setsockopt(skops, IPPROTO_TCP, TCP_SERVE, &one, sizeof(one));
	}
	if (cfg->backend_tcp == XPS_BACKEND_SOCKMAP &&
	    bpf_sock_hash_update(skops, &xps_sockhash, &cookie, BPF_NOEXIST)) {
		bpf_map_delete_elem(&xps_conns, &cookie);
		__sync_fetch_and_add(&cfg->unrecorded, 1);
		return 1;
	}
	/* to forget the connection when it closes */
	bpf_sock_ops_cb_flags_set(skops, BPF_SOCK_OPS_STATE_CB_FLAG);
	return 1;
}

#endif /* __XPS_FW_CONNS_BPF_H */
