/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Redis Cluster bus (Redis 7.0, struct clusterMsg in src/cluster.h) as the
 * PING handler (redis_cluster.bpf.c), its filler (xps-clusterd) and the
 * tests see it.  Every multi-byte field is big-endian on the wire.
 */
#ifndef __XPS_REDIS_CLUSTER_H
#define __XPS_REDIS_CLUSTER_H

#include <linux/types.h>

#define CLUSTER_NAMELEN		40	/* node name: 40 hex characters */
#define CLUSTER_SLOTS_BYTES	2048	/* 16384 slots, one bit each */
#define CLUSTER_HDR_LEN		2256	/* offsetof(clusterMsg, data) */
#define CLUSTER_GOSSIP_LEN	104	/* sizeof(clusterMsgDataGossip) */
#define CLUSTER_EXT_HDR_LEN	8	/* clusterMsgPingExt: length, type, unused */

/* clusterMsg field offsets */
#define CLUSTER_OFF_SIG		0	/* "RCmb" */
#define CLUSTER_OFF_TOTLEN	4	/* u32 */
#define CLUSTER_OFF_VER		8	/* u16, 1 */
#define CLUSTER_OFF_TYPE	12	/* u16 */
#define CLUSTER_OFF_COUNT	14	/* u16: gossip entries */
#define CLUSTER_OFF_CUR_EPOCH	16	/* u64 currentEpoch */
#define CLUSTER_OFF_CFG_EPOCH	24	/* u64 configEpoch */
#define CLUSTER_OFF_SENDER	40	/* char[40] */
#define CLUSTER_OFF_MYSLOTS	80	/* bitmap, bit (s & 7) of byte s / 8 */
#define CLUSTER_OFF_SLAVEOF	2128	/* char[40], zeros for a master */
#define CLUSTER_OFF_EXTENSIONS	2214	/* u16 */
#define CLUSTER_OFF_FLAGS	2250	/* u16: the sender's node flags */
#define CLUSTER_OFF_MFLAGS	2253	/* u8[3] */
/* clusterMsgDataGossip */
#define CLUSTER_GOSSIP_OFF_FLAGS 98	/* u16 */

#define CLUSTERMSG_TYPE_PING	0
#define CLUSTERMSG_TYPE_PONG	1
#define CLUSTERMSG_FLAG0_PAUSED	(1 << 0)
#define CLUSTERMSG_FLAG0_EXT_DATA (1 << 2)

/* node flags (CLUSTER_NODE_*) */
#define CLUSTER_NODE_MASTER	1
#define CLUSTER_NODE_SLAVE	2
#define CLUSTER_NODE_PFAIL	4
#define CLUSTER_NODE_FAIL	8
#define CLUSTER_NODE_HANDSHAKE	32
#define CLUSTER_NODE_NOADDR	64

/* What the handler walks; longer PINGs are passed. */
#define CLUSTER_GOSSIP_MAX	32
#define CLUSTER_EXT_MAX		8
#define CLUSTER_PING_MAX	(CLUSTER_HDR_LEN + CLUSTER_GOSSIP_MAX * CLUSTER_GOSSIP_LEN + 4096)
/* The PONG template: header + extensions (gossip stripped). */
#define CLUSTER_PONG_MAX	4096
#define CLUSTER_NODES_MAX	1024

enum cluster_key_kind {
	CLUSTER_KEY_PEER = 1,	/* a node the service knows, not failing */
	CLUSTER_KEY_SELF = 2,	/* the service's own node */
	CLUSTER_KEY_PONG = 3,	/* the PONG template (name all zeros) */
};

/* Data map key. */
struct cluster_key {
	__u32 kind;
	__u8 name[CLUSTER_NAMELEN];
};

/* PEER: the sender as the service sees it (CLUSTER NODES). */
struct cluster_peer {
	__u64 config_epoch;
	__u32 role;		/* CLUSTER_NODE_MASTER or CLUSTER_NODE_SLAVE */
	__u32 pad;
	__u8 slaveof[CLUSTER_NAMELEN];	/* zeros for a master */
	__u8 slots[CLUSTER_SLOTS_BYTES];
};

/* PONG: the node's own PONG, gossip stripped. */
struct cluster_pong {
	__u64 stamp_ns;		/* CLOCK_MONOTONIC before the probe was sent */
	__u64 max_age_ns;	/* served while now - stamp_ns <= max_age_ns */
	__u32 len;		/* bytes in msg */
	__u32 pad;
	__u8 msg[CLUSTER_PONG_MAX];
};

/* Data map value; which member is meaningful follows the key's kind. */
struct cluster_value {
	union {
		struct cluster_peer peer;
		struct cluster_pong pong;
	};
};

_Static_assert(sizeof(struct cluster_key) == 44, "cluster_key layout");
_Static_assert(sizeof(struct cluster_peer) == 2104, "cluster_peer layout");
_Static_assert(sizeof(struct cluster_pong) == 24 + CLUSTER_PONG_MAX,
	       "cluster_pong layout");

#endif
