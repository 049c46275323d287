// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Redis Cluster bus PING answered from the kernel, for an unmodified
 * redis-server 7.0, behind a composability context that routes the type
 * field (offset 12, 2 bytes) value 0 (PING) here.
 *
 * The reply is the node's own PONG, captured by xps-clusterd at most
 * max_age ago (gossip stripped).  A segment is answered only when it is
 * provably one whole PING that brings the node nothing new:
 *   - sig "RCmb", version 1, type PING, totlen == segment length, the
 *     header, gossip entries and extensions add up to totlen (as Redis's
 *     clusterIsValidPacket() counts them), no message flag but EXT_DATA;
 *   - the sender is a node the service knows and does not suspect, and its
 *     header says what the service already believes about it: config
 *     epoch, role, master, slots; its current epoch is not ahead;
 *   - every gossip entry names a known node (or the node itself) and none
 *     is flagged PFAIL, FAIL, HANDSHAKE or NOADDR (failure reports and
 *     discoveries must reach Redis);
 *   - the PONG template is fresh: a stopped or hung server stops being
 *     answered for after max_age (docs/coherence.md).
 * Everything else is passed to Redis untouched.  docs/protocols.md argues
 * what this proves and what it cannot.
 */
#define XPS_REPLY_PROTO XPS_REPLY_CLUSTER	/* docs/ordering.md */
#include "xps.bpf.h"
#include "redis_cluster.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

_Static_assert(CLUSTER_PONG_MAX <= XPS_STOCK_REPLY_MAX,
	       "the PONG must fit a stock-backend reply slot");

XPS_DATA_MAP(struct cluster_key, struct cluster_value, CLUSTER_NODES_MAX);

struct cluster_scratch {
	__u8 hdr[CLUSTER_HDR_LEN];
	__u8 ent[CLUSTER_GOSSIP_LEN];
	__u8 ext[CLUSTER_EXT_HDR_LEN];
	struct cluster_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_RUN_LEVELS);
	__type(key, __u32);
	__type(value, struct cluster_scratch);
} cluster_scratch SEC(".maps");

static __always_inline __u16 be16_at(const __u8 *p)
{
	return (__u16)p[0] << 8 | p[1];
}

static __always_inline __u32 be32_at(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static __always_inline __u64 be64_at(const __u8 *p)
{
	return (__u64)be32_at(p) << 32 | be32_at(p + 4);
}

/*
 * The lengths add up as Redis counts them: header, @count gossip entries,
 * then (with EXT_DATA) the extensions the header announces, each 8-byte
 * aligned and inside the message.  Redis keeps an extension length in 16
 * bits; a longer one is refused here rather than read the way Redis
 * truncates it.
 */
static __always_inline int lengths_add_up(struct __sk_buff *skb,
					  struct cluster_scratch *sc,
					  __u32 len, __u32 count)
{
	__u32 off = CLUSTER_HDR_LEN + count * CLUSTER_GOSSIP_LEN;
	__u32 i, n, elen;

	if (off > len)
		return 0;
	if (!(sc->hdr[CLUSTER_OFF_MFLAGS] & CLUSTERMSG_FLAG0_EXT_DATA))
		return off == len;
	n = be16_at(sc->hdr + CLUSTER_OFF_EXTENSIONS);
	if (n > CLUSTER_EXT_MAX)
		return 0;
	for (i = 0; i < CLUSTER_EXT_MAX; i++) {
		if (i >= n)
			break;
		if (off > len || len - off < CLUSTER_EXT_HDR_LEN)
			return 0;
		if (xps_load(skb, off, sc->ext, CLUSTER_EXT_HDR_LEN))
			return 0;
		elen = be32_at(sc->ext);
		if (elen < CLUSTER_EXT_HDR_LEN || (elen & 7) || elen > 0xffff ||
		    elen > len - off)
			return 0;
		off += elen;
	}
	return off == len;
}

/* The sender's header matches what the service believes about it. */
static __always_inline int sender_known(struct cluster_scratch *sc,
					const struct cluster_value *self_pong)
{
	const struct cluster_peer *p;
	const __u64 *a, *b;
	__u32 i;

	sc->key.kind = CLUSTER_KEY_PEER;
	__builtin_memcpy(sc->key.name, sc->hdr + CLUSTER_OFF_SENDER,
			 CLUSTER_NAMELEN);
	p = xps_data_lookup(&sc->key);
	if (!p)
		return 0;
	if (be64_at(sc->hdr + CLUSTER_OFF_CFG_EPOCH) != p->config_epoch ||
	    (be16_at(sc->hdr + CLUSTER_OFF_FLAGS) &
	     (CLUSTER_NODE_MASTER | CLUSTER_NODE_SLAVE)) != p->role)
		return 0;
	/* a newer current epoch is news (elections, config bumps) */
	if (be64_at(sc->hdr + CLUSTER_OFF_CUR_EPOCH) >
	    be64_at(self_pong->pong.msg + CLUSTER_OFF_CUR_EPOCH))
		return 0;
	a = (const __u64 *)(sc->hdr + CLUSTER_OFF_SLAVEOF);
	b = (const __u64 *)p->slaveof;
	for (i = 0; i < CLUSTER_NAMELEN / 8; i++)
		if (a[i] != b[i])
			return 0;
	a = (const __u64 *)(sc->hdr + CLUSTER_OFF_MYSLOTS);
	b = (const __u64 *)p->slots;
	for (i = 0; i < CLUSTER_SLOTS_BYTES / 8; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* Every gossip entry names a known node in good standing. */
static __always_inline int gossip_known(struct __sk_buff *skb,
					struct cluster_scratch *sc,
					__u32 count)
{
	__u32 i;

	for (i = 0; i < CLUSTER_GOSSIP_MAX; i++) {
		if (i >= count)
			break;
		if (xps_load(skb, CLUSTER_HDR_LEN + i * CLUSTER_GOSSIP_LEN,
			     sc->ent, CLUSTER_GOSSIP_LEN))
			return 0;
		if (be16_at(sc->ent + CLUSTER_GOSSIP_OFF_FLAGS) &
		    (CLUSTER_NODE_PFAIL | CLUSTER_NODE_FAIL |
		     CLUSTER_NODE_HANDSHAKE | CLUSTER_NODE_NOADDR))
			return 0;
		__builtin_memcpy(sc->key.name, sc->ent, CLUSTER_NAMELEN);
		sc->key.kind = CLUSTER_KEY_PEER;
		if (bpf_map_lookup_elem(&xps_data, &sc->key))
			continue;
		sc->key.kind = CLUSTER_KEY_SELF;
		if (!bpf_map_lookup_elem(&xps_data, &sc->key))
			return 0;
	}
	return 1;
}

/* Messages the server answers on the link they came in on. */
#define CLUSTERMSG_TYPE_MEET	2
#define CLUSTERMSG_TYPE_MFSTART	8
#define CLUSTER_COUNT_MAX	8

/*
 * Count the messages of a segment the server will read (docs/ordering.md):
 * PING and MEET get a PONG, MFSTART a PING, on the same link; a message
 * that runs past the segment leaves the rest for cs->skip.
 */
static __always_inline int count_messages(struct __sk_buff *skb, __u32 len)
{
	struct xps_conn_hstate *cs = xps_conn_state(skb);
	__u32 off = 0, i, tot;
	__u8 h[CLUSTER_OFF_TYPE + 2];
	__u16 type;

	if (cs && cs->skip) {
		if (cs->skip >= len) {
			cs->skip -= len;
			xps_requests_none(skb);
			return xps_pass(skb);
		}
		off = cs->skip;
		cs->skip = 0;
	}
	for (i = 0; i < CLUSTER_COUNT_MAX; i++) {
		if (off >= len)
			return xps_pass(skb);
		if (!cs || xps_load(skb, off, h, sizeof(h)) ||
		    h[0] != 'R' || h[1] != 'C' || h[2] != 'm' || h[3] != 'b')
			break;
		tot = be32_at(h + CLUSTER_OFF_TOTLEN);
		if (tot < sizeof(h))
			break;
		type = be16_at(h + CLUSTER_OFF_TYPE);
		if (type == CLUSTERMSG_TYPE_PING || type == CLUSTERMSG_TYPE_MEET ||
		    type == CLUSTERMSG_TYPE_MFSTART)
			xps_request(skb, 0);
		else
			xps_requests_none(skb);
		if (tot >= len - off) {
			cs->skip = tot - (len - off);
			return xps_pass(skb);
		}
		off += tot;
	}
	xps_requests_lost(skb);
	return xps_pass(skb);
}

SEC("xps")
int xps_redis_cluster(struct __sk_buff *skb)
{
	struct cluster_scratch *sc;
	struct cluster_value *tmpl;
	__u32 len, count, tlen;
	__u64 now;

	len = xps_len(skb);
	if (len < CLUSTER_HDR_LEN || len > CLUSTER_PING_MAX ||
	    !xps_may_consume(skb))
		return count_messages(skb, len);
	sc = xps_scratch(&cluster_scratch);
	if (!sc || xps_load(skb, 0, sc->hdr, CLUSTER_HDR_LEN))
		return count_messages(skb, len);

	/* one whole PING, nothing before or after it in the segment */
	if (sc->hdr[0] != 'R' || sc->hdr[1] != 'C' || sc->hdr[2] != 'm' ||
	    sc->hdr[3] != 'b' ||
	    be32_at(sc->hdr + CLUSTER_OFF_TOTLEN) != len ||
	    be16_at(sc->hdr + CLUSTER_OFF_VER) != 1 ||
	    be16_at(sc->hdr + CLUSTER_OFF_TYPE) != CLUSTERMSG_TYPE_PING ||
	    (sc->hdr[CLUSTER_OFF_MFLAGS] & ~CLUSTERMSG_FLAG0_EXT_DATA) ||
	    sc->hdr[CLUSTER_OFF_MFLAGS + 1] || sc->hdr[CLUSTER_OFF_MFLAGS + 2])
		return count_messages(skb, len);
	count = be16_at(sc->hdr + CLUSTER_OFF_COUNT);
	if (count > CLUSTER_GOSSIP_MAX || !lengths_add_up(skb, sc, len, count))
		return count_messages(skb, len);

	/* the template first: without a fresh one nothing else matters */
	__builtin_memset(&sc->key, 0, sizeof(sc->key));
	sc->key.kind = CLUSTER_KEY_PONG;
	tmpl = bpf_map_lookup_elem(&xps_data, &sc->key);
	if (!tmpl)
		return count_messages(skb, len);
	now = bpf_ktime_get_ns();
	if (now < tmpl->pong.stamp_ns ||
	    now - tmpl->pong.stamp_ns > tmpl->pong.max_age_ns)
		return count_messages(skb, len);

	if (!sender_known(sc, tmpl) || !gossip_known(skb, sc, count))
		return count_messages(skb, len);

	tlen = tmpl->pong.len;
	barrier_var(tlen);
	if (tlen < CLUSTER_HDR_LEN || tlen > CLUSTER_PONG_MAX)
		return count_messages(skb, len);	/* the daemon never writes those */
	if (xps_reply(skb, tmpl->pong.msg, tlen))
		return count_messages(skb, len);
	return xps_tx(skb);
}
