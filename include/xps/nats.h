/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Raft heartbeats of NATS JetStream answered on a follower's routes
 * (services/nats/nats.bpf.c, docs/nats.md): the state the handler and the
 * framework's egress step share, as xpsctl and the tests see it.  Plain
 * C, compiled by clang -target bpf and by the host compiler.
 *
 * Three framework maps hold it:
 *  - xps_nats_conns, by socket cookie: each route's receive framing (the
 *    handler's) and when the server last wrote on it (egress);
 *  - xps_nats_hbs, by socket cookie and reply subject: the last heartbeat
 *    the server was given on that route for one group, and the server's
 *    own answer to it, learned at egress;
 *  - xps_nats_groups, by group: a stamp that any other traffic of the
 *    group replaces; a heartbeat state is good only under the stamp it
 *    was learned with.  Index 0 of xps_nats_epoch is an epoch that any
 *    message XPS could not read bumps for every group;
 *  - xps_nats_acks, by socket cookie and reply subject, on a leader: the
 *    last answer a follower sent on that route to the group's heartbeats
 *    that went to the server, and whether the one after it was dropped.
 */
#ifndef __XPS_NATS_H
#define __XPS_NATS_H

#include <linux/types.h>
#include <xps/abi.h>

/* A heartbeat: RMSG line (account, $NRG.AE.<group>, $NRG.R.<inbox>, 42). */
#define XPS_NATS_HB_MAX		128
/* The server's answer: RMSG line (account, $NRG.R.<inbox>, 25). */
#define XPS_NATS_REPLY_MAX	96
#define XPS_NATS_AE_LEN		42	/* leader, term, commit, pterm, pindex, n */
#define XPS_NATS_AR_LEN		25	/* term, index, peer, success */

#define XPS_NATS_CONNS		1024
#define XPS_NATS_HBS		8192	/* groups a server follows, by route */
#define XPS_NATS_GROUPS		16384
#define XPS_NATS_ACKS		8192	/* groups a server leads, by route */

/*
 * The rules' clocks (docs/nats.md): the server answered the heartbeat it
 * was given within ANSWER_NS; that answer is at most FRESH_NS old; the
 * server wrote on the route within TX_NS.
 */
#define XPS_NATS_ANSWER_NS	(250 * 1000 * 1000ULL)
#define XPS_NATS_FRESH_NS	(2500 * 1000 * 1000ULL)
#define XPS_NATS_TX_NS		(1100 * 1000 * 1000ULL)

/*
 * On a leader, a follower's answer byte-identical to its previous one on
 * the route, which went to the server less than DUP_NS ago, may be
 * dropped; never two in a row, so the server hears from every follower of
 * every group at least every other heartbeat (about every 2 s, at most
 * 2 * DUP_NS apart).
 */
#define XPS_NATS_DUP_NS		(1250 * 1000 * 1000ULL)

struct xps_nats_conn {
	struct xps_reply rx;	/* where the received stream is */
	__u64 tx_ns;		/* the server's last bytes on the route */
	__u32 flags;		/* XPS_NATS_CONN_* */
	__u32 pad;
};

#define XPS_NATS_CONN_LOST	1	/* framing lost: never answer again */

struct xps_nats_hb_key {
	__u64 cookie;
	__u64 inbox;		/* hash of the account and reply subject */
};

enum xps_nats_hb_state {
	XPS_NATS_HB_PASSED = 1,	/* passed to the server, answer awaited */
	XPS_NATS_HB_ANSWERED,	/* the server answered the last one */
	XPS_NATS_HB_KERNEL,	/* the kernel answered the last one */
	XPS_NATS_HB_DEAD,	/* a reply XPS will not repeat */
};

struct xps_nats_hb {
	__u64 group;		/* hash of the account and group */
	__u64 gstamp;		/* xps_nats_groups[group] when learned */
	__u64 epoch;		/* xps_nats_epoch[0] when learned */
	__u64 seen_ns;		/* the last heartbeat passed to the server */
	__u64 answered_ns;	/* the server's answer to it */
	__u32 state;		/* enum xps_nats_hb_state */
	__u32 outstanding;	/* heartbeats passed, not answered yet */
	__u32 hb_len;		/* bytes of hb: line, 42, CRLF */
	__u32 reply_len;	/* bytes of reply: line, 25, CRLF */
	__u16 inbox_off;	/* the reply subject inside hb */
	__u16 inbox_len;
	__u32 pad;
	__u8 hb[XPS_NATS_HB_MAX];
	__u8 reply[XPS_NATS_REPLY_MAX];
};

struct xps_nats_ack {
	__u64 passed_ns;	/* when it went to the server */
	__u32 len;		/* bytes of msg: line, 25, CRLF; 0: none */
	__u32 dropped;		/* the next one was dropped */
	__u8 msg[XPS_NATS_REPLY_MAX];	/* zero past len */
};

/* Per-CPU counters (xpsctl service show): index in xps_nats_stats. */
enum xps_nats_stat {
	XPS_NATS_ST_ANSWERED,	/* heartbeats the kernel answered */
	XPS_NATS_ST_PASSED,	/* heartbeats passed to the server */
	XPS_NATS_ST_LEARNED,	/* server answers learned at egress */
	XPS_NATS_ST_BUMPS,	/* group stamps replaced */
	XPS_NATS_ST_EPOCHS,	/* every group's state dropped */
	XPS_NATS_ST_DROPPED,	/* duplicate answers dropped on a leader */
	XPS_NATS_ST_CUT,	/* stock: a route cut, its answer unsafe */
	XPS_NATS_ST_BATCHES,	/* segments of several heartbeats answered */
	XPS_NATS_ST_MAX,
};

#endif /* __XPS_NATS_H */
