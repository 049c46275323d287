/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Redis (RESP2) request parser and reply encoder, written against what
 * redis-server 7.0 accepts (networking.c: processMultibulkBuffer and
 * processInlineBuffer) and its command table (COMMAND output of 7.0.15).
 *
 * Entry points:
 *   xps_redis_parse()           classify the request at an offset
 *   xps_redis_parse_get()       the common GET, without the general parser
 *   xps_redis_parse_set()       the common SET, without the general parser
 *   xps_redis_encode_bulk_hdr() "$<len>\r\n"
 *   xps_redis_encode_bulk()     "$<len>\r\n<bytes>\r\n" into a scratch buffer
 *   XPS_REDIS_NIL               "$-1\r\n"
 *
 * Where Redis is laxer than this parser (it skips the two bytes after a
 * bulk without checking they are CRLF), the parser copies Redis, so it never
 * loses the request boundaries Redis sees.  Where Redis's outcome depends on
 * state a parser cannot see, the result is conservative (see docs/protocols.md).
 */
#ifndef __XPS_PROTO_REDIS_BPF_H
#define __XPS_PROTO_REDIS_BPF_H

#include "common.bpf.h"

/* Arguments walked per request; more gives INCOMPLETE | XPS_F_TOO_BIG. */
#ifndef XPS_REDIS_MAX_ARGS
#define XPS_REDIS_MAX_ARGS	64
#endif
/* Argument spans kept for key extraction; keys past it mean XPS_F_ALL. */
#define XPS_REDIS_ARGS_KEPT	20
/* proto-max-bulk-len default: longer bulks are a protocol error. */
#define XPS_REDIS_MAX_BULK	536870912
/* "$" + 10 digits + CRLF */
#define XPS_REDIS_BULK_HDR_MAX	13

#define XPS_REDIS_NIL		"$-1\r\n"
#define XPS_REDIS_NIL_LEN	5

/*
 * Command table entry: class in bits 0-3, legacy key spec (first key, last
 * key, step, as COMMAND reports them) in bits 4-11, flags from 12 on.
 */
enum xps_redis_class {
	XPS_RC_UNKNOWN = 0,	/* not in the table: invalidate all */
	XPS_RC_GET = 1,		/* GET: served when argc == 2 */
	XPS_RC_WRITE = 2,	/* writes the keys of its key spec */
	XPS_RC_STATE = 3,	/* changes the connection (or server) state */
	XPS_RC_HARMLESS = 4,	/* reads, or touches no data */
	XPS_RC_ALL = 5,		/* may write any key */
	XPS_RC_CLIENT = 6,	/* decided by the CLIENT subcommand */
	XPS_RC_CONFIG = 7,	/* decided by the CONFIG subcommand */
	XPS_RC_ACL = 8,		/* decided by the ACL subcommand */
};

#define XPS__RK(first, last, step)					\
	(((first) << 4) | (((last) + 4) << 6) | ((step) << 10))
#define XPS__RF(f)		((__u32)(f) << 12)
#define XPS__RCLASS(i)		((i) & 0xf)
#define XPS__RFIRST(i)		(((i) >> 4) & 3)
#define XPS__RLAST(i)		((int)(((i) >> 6) & 7) - 4)
#define XPS__RSTEP(i)		(((i) >> 10) & 3)
#define XPS__RFLAGS(i)		((i) >> 12)

#define XPS__W(first, last, step)	(XPS_RC_WRITE | XPS__RK(first, last, step))
#define XPS__W1			XPS__W(1, 1, 1)
#define XPS__WB(first, last, step)					\
	(XPS__W(first, last, step) | XPS__RF(XPS_F_BLOCKING | XPS_F_DEFERRED))
#define XPS__RO			XPS_RC_HARMLESS
#define XPS__ST(f)		(XPS_RC_STATE | XPS__RF(XPS_F_STATE | (f)))
#define XPS__ALL(f)		(XPS_RC_ALL | XPS__RF(XPS_F_ALL | (f)))
#define XPS__GL			(XPS_F_STATE | XPS_F_GLOBAL)

/*
 * The table.  Most frequent first: a lookup walks it in order.  Every
 * command redis-server 7.0 lists is here; anything else (a module command,
 * a typo, a newer or renamed command) is XPS_RC_UNKNOWN, parsed as a write
 * of every key with XPS_F_UNKNOWN: a handler that knows the server lists
 * no command missing here may take it for one Redis refuses.
 */
#define XPS_REDIS_COMMANDS(X)						\
	X("GET", XPS_RC_GET | XPS__RK(1, 1, 1))				\
	X("SET", XPS__W1)						\
	X("MGET", XPS__RO)						\
	X("DEL", XPS__W(1, -1, 1))					\
	X("PING", XPS__RO)						\
	X("INCR", XPS__W1)						\
	X("EXPIRE", XPS__W1)						\
	X("SETEX", XPS__W1)						\
	X("MSET", XPS__W(1, -1, 2))					\
	X("EXISTS", XPS__RO)						\
	X("UNLINK", XPS__W(1, -1, 1))					\
	X("SELECT", XPS__ST(0))						\
	X("AUTH", XPS__ST(0))						\
	X("HELLO", XPS__ST(0))						\
	X("CLIENT", XPS_RC_CLIENT)					\
	X("INFO", XPS__RO)						\
	X("QUIT", XPS__ST(0))						\
	/* strings */							\
	X("SETNX", XPS__W1)						\
	X("PSETEX", XPS__W1)						\
	X("GETSET", XPS__W1)						\
	X("GETDEL", XPS__W1)						\
	X("GETEX", XPS__W1)						\
	X("MSETNX", XPS__W(1, -1, 2))					\
	X("APPEND", XPS__W1)						\
	X("SETRANGE", XPS__W1)						\
	X("SETBIT", XPS__W1)						\
	X("BITFIELD", XPS__W1)						\
	X("BITOP", XPS__W(2, -1, 1))					\
	X("DECR", XPS__W1)						\
	X("INCRBY", XPS__W1)						\
	X("DECRBY", XPS__W1)						\
	X("INCRBYFLOAT", XPS__W1)					\
	X("STRLEN", XPS__RO)						\
	X("GETRANGE", XPS__RO)						\
	X("SUBSTR", XPS__RO)						\
	X("GETBIT", XPS__RO)						\
	X("BITCOUNT", XPS__RO)						\
	X("BITPOS", XPS__RO)						\
	X("BITFIELD_RO", XPS__RO)					\
	X("LCS", XPS__RO)						\
	/* keyspace */							\
	X("PEXPIRE", XPS__W1)						\
	X("EXPIREAT", XPS__W1)						\
	X("PEXPIREAT", XPS__W1)						\
	X("PERSIST", XPS__W1)						\
	X("RENAME", XPS__W(1, 2, 1))					\
	X("RENAMENX", XPS__W(1, 2, 1))					\
	X("MOVE", XPS__W1)						\
	X("COPY", XPS__W(2, 2, 1))					\
	X("RESTORE", XPS__W1)						\
	X("RESTORE-ASKING", XPS__W1)					\
	X("TTL", XPS__RO)						\
	X("PTTL", XPS__RO)						\
	X("EXPIRETIME", XPS__RO)					\
	X("PEXPIRETIME", XPS__RO)					\
	X("TYPE", XPS__RO)						\
	X("TOUCH", XPS__RO)						\
	X("DUMP", XPS__RO)						\
	X("KEYS", XPS__RO)						\
	X("SCAN", XPS__RO)						\
	X("RANDOMKEY", XPS__RO)						\
	X("DBSIZE", XPS__RO)						\
	X("OBJECT", XPS__RO)						\
	X("SORT", XPS__ALL(0))						\
	X("SORT_RO", XPS__RO)						\
	X("MIGRATE", XPS__ALL(0))					\
	X("FLUSHDB", XPS__ALL(0))					\
	X("FLUSHALL", XPS__ALL(0))					\
	X("SWAPDB", XPS__ALL(0))					\
	/* lists */							\
	X("LPUSH", XPS__W1)						\
	X("RPUSH", XPS__W1)						\
	X("LPUSHX", XPS__W1)						\
	X("RPUSHX", XPS__W1)						\
	X("LPOP", XPS__W1)						\
	X("RPOP", XPS__W1)						\
	X("LSET", XPS__W1)						\
	X("LINSERT", XPS__W1)						\
	X("LREM", XPS__W1)						\
	X("LTRIM", XPS__W1)						\
	X("LMOVE", XPS__W(1, 2, 1))					\
	X("RPOPLPUSH", XPS__W(1, 2, 1))					\
	X("LMPOP", XPS__ALL(0))						\
	X("BLPOP", XPS__WB(1, -2, 1))					\
	X("BRPOP", XPS__WB(1, -2, 1))					\
	X("BLMOVE", XPS__WB(1, 2, 1))					\
	X("BRPOPLPUSH", XPS__WB(1, 2, 1))				\
	X("BLMPOP", XPS__ALL(XPS_F_BLOCKING | XPS_F_DEFERRED))		\
	X("LRANGE", XPS__RO)						\
	X("LLEN", XPS__RO)						\
	X("LINDEX", XPS__RO)						\
	X("LPOS", XPS__RO)						\
	/* hashes */							\
	X("HSET", XPS__W1)						\
	X("HSETNX", XPS__W1)						\
	X("HMSET", XPS__W1)						\
	X("HDEL", XPS__W1)						\
	X("HINCRBY", XPS__W1)						\
	X("HINCRBYFLOAT", XPS__W1)					\
	X("HGET", XPS__RO)						\
	X("HMGET", XPS__RO)						\
	X("HGETALL", XPS__RO)						\
	X("HKEYS", XPS__RO)						\
	X("HVALS", XPS__RO)						\
	X("HLEN", XPS__RO)						\
	X("HEXISTS", XPS__RO)						\
	X("HSTRLEN", XPS__RO)						\
	X("HRANDFIELD", XPS__RO)					\
	X("HSCAN", XPS__RO)						\
	/* sets */							\
	X("SADD", XPS__W1)						\
	X("SREM", XPS__W1)						\
	X("SPOP", XPS__W1)						\
	X("SMOVE", XPS__W(1, 2, 1))					\
	X("SDIFFSTORE", XPS__W(1, -1, 1))				\
	X("SINTERSTORE", XPS__W(1, -1, 1))				\
	X("SUNIONSTORE", XPS__W(1, -1, 1))				\
	X("SMEMBERS", XPS__RO)						\
	X("SISMEMBER", XPS__RO)						\
	X("SMISMEMBER", XPS__RO)					\
	X("SCARD", XPS__RO)						\
	X("SRANDMEMBER", XPS__RO)					\
	X("SDIFF", XPS__RO)						\
	X("SINTER", XPS__RO)						\
	X("SINTERCARD", XPS__RO)					\
	X("SUNION", XPS__RO)						\
	X("SSCAN", XPS__RO)						\
	/* sorted sets */						\
	X("ZADD", XPS__W1)						\
	X("ZINCRBY", XPS__W1)						\
	X("ZREM", XPS__W1)						\
	X("ZREMRANGEBYLEX", XPS__W1)					\
	X("ZREMRANGEBYRANK", XPS__W1)					\
	X("ZREMRANGEBYSCORE", XPS__W1)					\
	X("ZPOPMIN", XPS__W1)						\
	X("ZPOPMAX", XPS__W1)						\
	X("ZRANGESTORE", XPS__W(1, 2, 1))				\
	/* movable keys, but only the destination (argument 1) is written */ \
	X("ZUNIONSTORE", XPS__W1)					\
	X("ZINTERSTORE", XPS__W1)					\
	X("ZDIFFSTORE", XPS__W1)					\
	X("ZMPOP", XPS__ALL(0))						\
	X("BZPOPMIN", XPS__WB(1, -2, 1))				\
	X("BZPOPMAX", XPS__WB(1, -2, 1))				\
	X("BZMPOP", XPS__ALL(XPS_F_BLOCKING | XPS_F_DEFERRED))		\
	X("ZRANGE", XPS__RO)						\
	X("ZRANGEBYLEX", XPS__RO)					\
	X("ZRANGEBYSCORE", XPS__RO)					\
	X("ZREVRANGE", XPS__RO)						\
	X("ZREVRANGEBYLEX", XPS__RO)					\
	X("ZREVRANGEBYSCORE", XPS__RO)					\
	X("ZCARD", XPS__RO)						\
	X("ZCOUNT", XPS__RO)						\
	X("ZLEXCOUNT", XPS__RO)						\
	X("ZSCORE", XPS__RO)						\
	X("ZMSCORE", XPS__RO)						\
	X("ZRANK", XPS__RO)						\
	X("ZREVRANK", XPS__RO)						\
	X("ZRANDMEMBER", XPS__RO)					\
	X("ZSCAN", XPS__RO)						\
	X("ZDIFF", XPS__RO)						\
	X("ZINTER", XPS__RO)						\
	X("ZINTERCARD", XPS__RO)					\
	X("ZUNION", XPS__RO)						\
	/* geo and hyperloglog */					\
	X("GEOADD", XPS__W1)						\
	X("GEOSEARCHSTORE", XPS__W(1, 2, 1))				\
	X("GEORADIUS", XPS__ALL(0))					\
	X("GEORADIUSBYMEMBER", XPS__ALL(0))				\
	X("GEODIST", XPS__RO)						\
	X("GEOHASH", XPS__RO)						\
	X("GEOPOS", XPS__RO)						\
	X("GEOSEARCH", XPS__RO)						\
	X("GEORADIUS_RO", XPS__RO)					\
	X("GEORADIUSBYMEMBER_RO", XPS__RO)				\
	X("PFADD", XPS__W1)						\
	X("PFMERGE", XPS__W(1, -1, 1))					\
	/* "readonly" in COMMAND, but it rewrites the cached cardinality	\
	 * inside the string GET returns */				\
	X("PFCOUNT", XPS__W(1, -1, 1))					\
	X("PFDEBUG", XPS__W(2, 2, 1))					\
	X("PFSELFTEST", XPS__RO)					\
	/* streams */							\
	X("XADD", XPS__W1)						\
	X("XTRIM", XPS__W1)						\
	X("XDEL", XPS__W1)						\
	X("XACK", XPS__W1)						\
	X("XCLAIM", XPS__W1)						\
	X("XAUTOCLAIM", XPS__W1)					\
	X("XSETID", XPS__W1)						\
	X("XGROUP", XPS__W(2, 2, 1))					\
	X("XREADGROUP", XPS__ALL(XPS_F_BLOCKING | XPS_F_DEFERRED))	\
	X("XREAD", XPS__RO | XPS__RF(XPS_F_BLOCKING))			\
	X("XRANGE", XPS__RO)						\
	X("XREVRANGE", XPS__RO)						\
	X("XLEN", XPS__RO)						\
	X("XPENDING", XPS__RO)						\
	X("XINFO", XPS__RO)						\
	/* scripting: scripts may touch undeclared keys */		\
	X("EVAL", XPS__ALL(0))						\
	X("EVALSHA", XPS__ALL(0))					\
	X("FCALL", XPS__ALL(0))						\
	X("SCRIPT", XPS__ALL(0))					\
	X("FUNCTION", XPS__ALL(0))					\
	/*
	 * Read-only scripts write nothing, but while one runs past
	 * lua-time-limit Redis answers every other client -BUSY: counted
	 * as a write of every key, nothing is served or learned until it
	 * is answered (docs/coherence.md, "Busy and observed servers").
	 */								\
	X("EVAL_RO", XPS__ALL(0))					\
	X("EVALSHA_RO", XPS__ALL(0))					\
	X("FCALL_RO", XPS__ALL(0))					\
	/* connection state */						\
	X("MULTI", XPS__ST(0))						\
	/* queued writes run now: their keys were seen long ago */	\
	X("EXEC", XPS__ST(XPS_F_ALL))					\
	X("DISCARD", XPS__ST(0))					\
	X("WATCH", XPS__ST(0))						\
	X("UNWATCH", XPS__ST(0))					\
	X("RESET", XPS__ST(0))						\
	X("SUBSCRIBE", XPS__ST(0))					\
	X("PSUBSCRIBE", XPS__ST(0))					\
	X("SSUBSCRIBE", XPS__ST(0))					\
	X("UNSUBSCRIBE", XPS__ST(0))					\
	X("PUNSUBSCRIBE", XPS__ST(0))					\
	X("SUNSUBSCRIBE", XPS__ST(0))					\
	X("READONLY", XPS__ST(0))					\
	X("READWRITE", XPS__ST(0))					\
	X("ASKING", XPS__ST(0))						\
	/* the fast path stays off while a monitor is connected */	\
	X("MONITOR", XPS__ST(XPS_F_GLOBAL))				\
	X("SYNC", XPS__ST(0))						\
	X("PSYNC", XPS__ST(0))						\
	X("REPLCONF", XPS__ST(0))					\
	/* server-wide */						\
	X("CONFIG", XPS_RC_CONFIG)					\
	X("ACL", XPS_RC_ACL)						\
	X("CLUSTER", XPS__ALL(XPS__GL))					\
	X("SHUTDOWN", XPS__ST(XPS_F_GLOBAL))				\
	X("FAILOVER", XPS__ALL(XPS__GL))				\
	X("REPLICAOF", XPS__ALL(XPS__GL))				\
	X("SLAVEOF", XPS__ALL(XPS__GL))					\
	X("DEBUG", XPS__ALL(XPS__GL))					\
	X("MODULE", XPS__ALL(XPS__GL))					\
	/* no effect on data */						\
	X("ECHO", XPS__RO)						\
	X("TIME", XPS__RO)						\
	X("LASTSAVE", XPS__RO)						\
	X("ROLE", XPS__RO)						\
	X("COMMAND", XPS__RO)						\
	X("LOLWUT", XPS__RO)						\
	X("PUBLISH", XPS__RO)						\
	X("SPUBLISH", XPS__RO)						\
	X("PUBSUB", XPS__RO)						\
	X("SLOWLOG", XPS__RO)						\
	X("LATENCY", XPS__RO)						\
	X("MEMORY", XPS__RO)						\
	X("BGSAVE", XPS__RO)						\
	X("BGREWRITEAOF", XPS__RO)					\
	X("SAVE", XPS__RO)						\
	X("WAIT", XPS__RO | XPS__RF(XPS_F_BLOCKING))

/* CLIENT subcommands: replies, tracking and pausing change what GET says. */
#define XPS_REDIS_CLIENT_SUBS(X)					\
	X("SETNAME", XPS__RO)						\
	X("SETINFO", XPS__RO)						\
	X("GETNAME", XPS__RO)						\
	X("ID", XPS__RO)						\
	X("INFO", XPS__RO)						\
	X("LIST", XPS__RO)						\
	X("GETREDIR", XPS__RO)						\
	X("TRACKINGINFO", XPS__RO)					\
	X("HELP", XPS__RO)						\
	X("NO-EVICT", XPS__RO)						\
	X("NO-TOUCH", XPS__RO)						\
	X("REPLY", XPS__ST(0))						\
	X("TRACKING", XPS__ST(0))					\
	X("CACHING", XPS__ST(0))					\
	X("PAUSE", XPS__ST(XPS_F_GLOBAL))				\
	X("UNPAUSE", XPS__ST(XPS_F_GLOBAL))				\
	X("KILL", XPS__ST(XPS_F_GLOBAL))				\
	X("UNBLOCK", XPS__ST(XPS_F_GLOBAL))

/*
 * CONFIG GET only reads, RESETSTAT resets counters, REWRITE writes the
 * running configuration to its file: none changes what a GET answers.
 * SET can change auth, eviction, anything.
 */
#define XPS_REDIS_CONFIG_SUBS(X)					\
	X("GET", XPS__RO)						\
	X("HELP", XPS__RO)						\
	X("RESETSTAT", XPS__RO)						\
	X("REWRITE", XPS__RO)

/*
 * ACL subcommands that only read or log; SETUSER, DELUSER, LOAD and any
 * other change who may read what: server-wide (the default).
 */
#define XPS_REDIS_ACL_SUBS(X)						\
	X("GETUSER", XPS__RO)						\
	X("WHOAMI", XPS__RO)						\
	X("LIST", XPS__RO)						\
	X("USERS", XPS__RO)						\
	X("CAT", XPS__RO)						\
	X("DRYRUN", XPS__RO)						\
	X("LOG", XPS__RO)						\
	X("GENPASS", XPS__RO)						\
	X("SAVE", XPS__RO)						\
	X("HELP", XPS__RO)

/* The tables as constant data (.rodata), searched by a loop: a chain of
 * ~300 compares becomes a switch tree that spills to the stack. */
struct xps__rcmd {
	__u64 w0, w1, w2;
	__u32 len, info;
};
#define XPS__RTAB(name, info)						\
	{ XPS_PACK(name, 0), XPS_PACK(name, 1), XPS_PACK(name, 2),	\
	  sizeof(name) - 1, (info) },
static const struct xps__rcmd xps__redis_cmds[] = {
	XPS_REDIS_COMMANDS(XPS__RTAB)
};
static const struct xps__rcmd xps__redis_client[] = {
	XPS_REDIS_CLIENT_SUBS(XPS__RTAB)
};
static const struct xps__rcmd xps__redis_config[] = {
	XPS_REDIS_CONFIG_SUBS(XPS__RTAB)
};
static const struct xps__rcmd xps__redis_acl[] = {
	XPS_REDIS_ACL_SUBS(XPS__RTAB)
};
#define XPS__N(a)	(sizeof(a) / sizeof((a)[0]))

enum {
	XPS__RT_CMD = 0, XPS__RT_CLIENT = 1, XPS__RT_CONFIG = 2,
	XPS__RT_ACL = 3,
};

/*
 * Look @wd up in table @which (XPS__RT_*).  Returns the entry's info, or
 * the table's default: XPS_RC_UNKNOWN for commands, "state, global" for
 * CLIENT subcommands, "all, global" for CONFIG ones.  A global function.
 */
XPS_GLOBAL int xps_redis__lookup(const struct xps_words *wd, __u32 which)
{
	const struct xps__rcmd *tab = xps__redis_cmds;
	__u32 n = XPS__N(xps__redis_cmds), i, len, dflt = XPS_RC_UNKNOWN;
	__u64 w0, w1, w2;

	if (which == XPS__RT_CLIENT) {
		tab = xps__redis_client;
		n = XPS__N(xps__redis_client);
		dflt = XPS__ST(XPS_F_GLOBAL);
	} else if (which == XPS__RT_CONFIG) {
		tab = xps__redis_config;
		n = XPS__N(xps__redis_config);
		dflt = XPS__ALL(XPS__GL);
	} else if (which == XPS__RT_ACL) {
		tab = xps__redis_acl;
		n = XPS__N(xps__redis_acl);
		dflt = XPS__ALL(XPS__GL);
	}
	if (!wd)
		return (int)dflt;
	len = wd->len;
	w0 = wd->w[0];
	w1 = wd->w[1];
	w2 = wd->w[2];
	if (!len)
		return (int)dflt;
	for (i = 0; i < XPS__N(xps__redis_cmds); i++) {
		if (i >= n)
			break;
		/* One test per entry: separate compares would teach the
		 * verifier len (then w0...) on the fall-through paths and
		 * make it walk the rest of the table once per prefix. */
		__u64 d = (tab[i].len ^ len) | (tab[i].w0 ^ w0) |
			  (tab[i].w1 ^ w1) | (tab[i].w2 ^ w2);

		XPS_OPAQUE(d);
		if (!d)
			return (int)tab[i].info;
	}
	return (int)dflt;
}

XPS_INLINE __u32 xps_redis_lookup(const struct xps_words *wd)
{
	return (__u32)xps_redis__lookup(wd, XPS__RT_CMD);
}

XPS_INLINE __u32 xps_redis_lookup_client(const struct xps_words *wd)
{
	return (__u32)xps_redis__lookup(wd, XPS__RT_CLIENT);
}

XPS_INLINE __u32 xps_redis_lookup_config(const struct xps_words *wd)
{
	return (__u32)xps_redis__lookup(wd, XPS__RT_CONFIG);
}

enum { XPS__NUM_OK = 0, XPS__NUM_MORE = 1, XPS__NUM_BAD = 2, XPS__NUM_LONG = 3 };

/* What xps_redis__num() found. */
struct xps_redis_num {
	__s64 val;
	__u32 next;		/* first byte after the number's CR and the
				 * byte Redis skips after it */
	__u32 st;		/* XPS__NUM_* */
};

/*
 * The number after '*' or '$', as Redis reads it: string2ll() on the bytes
 * up to the first '\r' ("0" or -?[1-9][0-9]*), then Redis skips the '\r'
 * and whatever byte follows without looking at it.  19 or 20 digits before
 * the '\r' are refused here (XPS__NUM_LONG; Redis overflows at 19-20): that
 * only turns a request Redis rejects, or accepts as empty, into MALFORMED.
 * Anything else refused (XPS__NUM_BAD) is no number to string2ll() either,
 * or has a NUL before its '\r', which Redis's strchr() never gets past.
 * A global function: verified once,
 * and its results come back to the caller as unknown values, so that all
 * the caller's paths through it are one.  Returns out->st.
 */
XPS_GLOBAL int xps_redis__num(const struct xps_buf *buf, __u32 len, __u32 pos,
			      __u32 neg_ok, struct xps_redis_num *out)
{
	__u64 v = 0, nd = 0, neg = 0, zero = 0, c = 0;
	__u32 i, p = pos;

	if (!buf || !out)
		return XPS__NUM_BAD;
	out->val = 0;
	out->next = 0;
	out->st = XPS__NUM_BAD;
	/* Branch-free but for the one exit test. */
	for (i = 0; i < 21; i++) {
		__u64 dig, minus;

		p = pos + i;
		c = XPS_AT(buf->b, p);
		dig = xps_in(c, '0', '9');
		minus = xps_eq(c, '-') * (i == 0 && neg_ok ? 1 : 0);
		if (xps_ge(p, len) | ((dig | minus) ^ 1))
			break;
		neg |= minus;
		/* "0" followed by anything but '\r' is not a number. */
		zero |= dig & xps_eq(c, '0') & xps_zero(nd);
		v = xps_sel(dig, v * 10 + (c - '0'), v);
		nd += dig;
	}
	p = xps_forget(p);
	if (p >= len) {
		out->st = XPS__NUM_MORE;
		return out->st;
	}
	if (XPS_AT(buf->b, p) != '\r' || !nd || (zero && (nd > 1 || neg)))
		return out->st;
	if (nd > 18) {
		out->st = XPS__NUM_LONG;
		return out->st;
	}
	if (p + 1 >= len) {
		out->st = XPS__NUM_MORE;
		return out->st;
	}
	out->next = p + 2;
	out->val = neg ? -(__s64)v : (__s64)v;
	out->st = XPS__NUM_OK;
	return out->st;
}

/* Argument spans of one request, as the walk found them. */
struct xps_redis_args {
	struct xps_span a[XPS_REDIS_ARGS_KEPT];
	__u32 argc;		/* declared argument count */
	__u32 done;		/* complete arguments in the buffer
				 * (done < argc only for INCOMPLETE) */
	__u32 quoted;		/* argument bytes are not literal (inline
				 * command with quotes) */
};

/*
 * Start every slot as a value the verifier does not know, so that writing
 * a slot does not change its type: otherwise every "how many slots are
 * written" would be a state of its own at each exit of the walk.  Slots
 * the walk does not reach are never read (done/argc bound the reads).
 */
_Static_assert(sizeof(struct xps_redis_args) <= XPS_KV_WS,
	       "argument spans must fit in struct xps_kv_req.ws");
#define XPS__RARGS(req)	((struct xps_redis_args *)(void *)(req)->ws)

/* What xps_redis__parse_resp/_inline ask xps_redis__parse to finish. */
enum { XPS__R_CLASSIFY = 0x100, XPS__R_CLASSIFY_MORE = 0x101 };

XPS_INLINE void xps_redis__args_init(struct xps_redis_args *args)
{
	__u32 k;

	for (k = 0; k < XPS_REDIS_ARGS_KEPT; k++) {
		args->a[k].off = (__u16)xps_forget64(0);
		args->a[k].len = (__u16)xps_forget64(0);
	}
	args->argc = 0;
	args->done = 0;
	args->quoted = 0;
}

/*
 * Turn a command table entry into the result: sets req->hint (the kind),
 * adds flags and keys.  @args says how many arguments there are and how
 * many are complete in the buffer.  A global function: verified once.
 */
XPS_GLOBAL int xps_redis__classify(const struct xps_buf *buf,
				   const struct xps_redis_args *args,
				   struct xps_kv_req *req)
{
	struct xps_words wd = {};
	__u32 info, cls, kind, flags, k, argc, done, quoted;
	int first, last, step, lim;

	if (!buf || !args || !req)
		return 0;
	argc = args->argc;
	done = args->done;
	quoted = args->quoted;
	if (!done) {
		req->hint = XPS_REQ_NONE;
		return 0;
	}
	req->name = args->a[0];
	xps__pack_words(buf, args->a[0].off, args->a[0].len, 1, &wd);
	info = xps_redis_lookup(&wd);
	cls = XPS__RCLASS(info);

	if (cls == XPS_RC_CLIENT || cls == XPS_RC_CONFIG || cls == XPS_RC_ACL) {
		if (done < 2 || quoted) {
			/* Subcommand unknown yet: assume the worst. */
			info = XPS__ALL(XPS__GL);
		} else {
			xps__pack_words(buf, args->a[1].off, args->a[1].len, 1,
					&wd);
			info = (__u32)xps_redis__lookup(&wd,
					cls == XPS_RC_CLIENT ? XPS__RT_CLIENT :
					cls == XPS_RC_CONFIG ? XPS__RT_CONFIG :
							       XPS__RT_ACL);
		}
		cls = XPS__RCLASS(info);
	}

	flags = XPS__RFLAGS(info);
	switch (cls) {
	case XPS_RC_GET:
		/* Wrong arity is an error reply: nothing to serve. */
		kind = argc == 2 && !quoted ? XPS_REQ_SERVE : XPS_REQ_HARMLESS;
		break;
	case XPS_RC_WRITE:
		kind = XPS_REQ_INVALIDATE;
		break;
	case XPS_RC_STATE:
		kind = XPS_REQ_STATE;
		break;
	case XPS_RC_HARMLESS:
		kind = XPS_REQ_HARMLESS;
		break;
	case XPS_RC_ALL:
		kind = flags & XPS_F_STATE ? XPS_REQ_STATE : XPS_REQ_INVALIDATE;
		break;
	default:
		kind = XPS_REQ_INVALIDATE;
		flags |= XPS_F_ALL;
		/*
		 * Quoted, the name Redis looks up is not these bytes.  With a
		 * NUL (or too long to tell), it may still be a command:
		 * Redis's command table compares names with strcasecmp(),
		 * which stops at the NUL, so "SET\0x" runs SET whenever its
		 * hash falls in SET's bucket.
		 */
		if (!quoted && !xps_words_nul(&wd))
			flags |= XPS_F_UNKNOWN;
		break;
	}

	if (kind == XPS_REQ_SERVE ||
	    (kind == XPS_REQ_INVALIDATE && !(flags & XPS_F_ALL))) {
		if (quoted) {
			/* Quoted bytes are not the key Redis sees. */
			flags |= XPS_F_ALL;
		} else {
			first = XPS__RFIRST(info);
			last = XPS__RLAST(info);
			step = XPS__RSTEP(info);
			lim = last > 0 ? last : (int)argc + last;
			for (k = 0; k < XPS_MAX_KEYS; k++) {
				int idx = first + (int)k * step;

				if (idx > lim)
					break;
				if (idx >= (int)done ||
				    idx >= XPS_REDIS_ARGS_KEPT) {
					/* Not in the buffer (yet). */
					if (kind == XPS_REQ_INVALIDATE)
						flags |= XPS_F_ALL;
					break;
				}
				req->keys[k] = args->a[idx];
				req->nkeys = k + 1;
			}
			/* More keys than a result can list. */
			if (k == XPS_MAX_KEYS && kind == XPS_REQ_INVALIDATE &&
			    first + (int)k * step <= lim)
				flags |= XPS_F_ALL;
		}
	}
	if (flags & XPS_F_ALL)
		req->nkeys = 0;
	else if (kind == XPS_REQ_INVALIDATE && argc >= 3 && argc <= 6 &&
		 done == argc && !quoted) {
		if (argc == 4) {
			/* SETEX, PSETEX: <key> <time to live> <value> */
			req->val = args->a[3];
			req->opt[1] = args->a[2];
		} else {
			req->val = args->a[2];
		}
		if (argc >= 5) {
			req->opt[0] = args->a[3];
			req->opt[1] = args->a[4];
		}
		if (argc == 6)
			req->opt[2] = args->a[5];
	}
	if (!(flags & XPS_F_ALL) && kind == XPS_REQ_INVALIDATE &&
	    (argc & 1) && argc >= 3 && argc <= 1 + 2 * XPS_KV_PAIRS &&
	    done == argc && !quoted) {
		/* MSET, MSETNX: <key> <value> pairs */
		for (k = 0; k < XPS_KV_PAIRS; k++) {
			if (2 + 2 * k >= argc)
				break;
			req->mval[k] = args->a[2 + 2 * k];
		}
	}
	req->hint = kind;
	req->flags |= flags;
	return (int)kind;
}

/*
 * RESP array: *<argc>\r\n then argc times $<len>\r\n<bytes>\r\n.  A global
 * function; req is zeroed by the caller.
 */
XPS_GLOBAL int xps_redis__parse_resp(const struct xps_buf *buf, __u32 len,
				     __u32 off, struct xps_kv_req *req)
{
	struct xps_redis_args *args;
	struct xps_redis_num num = {};
	__u32 pos, a, done = 0;
	__s64 argc, bl;
	int r;

	if (!buf || !req)
		return XPS_REQ_MALFORMED;
	args = XPS__RARGS(req);
	xps_redis__args_init(args);
	r = xps_redis__num(buf, len, off + 1, 1, &num);
	argc = num.val;
	pos = num.next;
	if (r == XPS__NUM_MORE)
		goto more;
	if (r != XPS__NUM_OK || argc > 0x7fffffff) {
		/* "invalid multibulk length", but for a long negative
		 * count, which Redis may take for an empty array
		 */
		if (r != XPS__NUM_LONG)
			req->flags |= XPS_F_CLOSES;
		goto bad;
	}
	if (argc <= 0) {
		/* Redis drops an empty array silently. */
		req->req_len = pos - off;
		req->flags |= XPS_F_NOREPLY;
		req->kind = XPS_REQ_HARMLESS;
		return req->kind;
	}
	req->argc = argc > 0xffff ? 0xffff : (__u16)argc;

	for (a = 0; a < XPS_REDIS_MAX_ARGS; a++) {
		__u32 ds;
		__u64 end;

		if (a >= argc)
			break;
		if (pos >= len)
			goto more;
		if (XPS_AT(buf->b, pos) != '$') {
			/* "expected '$'" */
			req->flags |= XPS_F_CLOSES;
			goto bad;
		}
		r = xps_redis__num(buf, len, pos + 1, 0, &num);
		bl = num.val;
		ds = num.next;
		if (r == XPS__NUM_MORE)
			goto more;
		if (r != XPS__NUM_OK || bl > XPS_REDIS_MAX_BULK) {
			/* "invalid bulk length", but for a long one, which
			 * proto-max-bulk-len may allow
			 */
			if (r == XPS__NUM_BAD)
				req->flags |= XPS_F_CLOSES;
			goto bad;
		}
		/* Redis skips the two bytes after the data unchecked. */
		end = (__u64)ds + (__u64)bl + 2;
		if (a < XPS_REDIS_ARGS_KEPT) {
			args->a[a].off = (__u16)ds;
			args->a[a].len = bl > 0xffff ? 0xffff : (__u16)bl;
		}
		if (end > len) {
			/* The last argument tells the total length. */
			if (a + 1 == argc && end - off < 0xffffffffULL)
				req->req_len = (__u32)(end - off);
			else if (end - off > XPS_SCRATCH)
				req->flags |= XPS_F_TOO_BIG;
			goto more;
		}
		pos = xps_forget((__u32)end);
		done = xps_forget(a + 1);
	}
	if (argc > XPS_REDIS_MAX_ARGS) {
		req->flags |= XPS_F_TOO_BIG;
		goto more;
	}
	req->req_len = pos - off;
	args->argc = (__u32)argc;
	args->done = done;
	return XPS__R_CLASSIFY;

more:
	if (req->req_len > XPS_SCRATCH - off)
		req->flags |= XPS_F_TOO_BIG;
	if (done) {
		args->argc = (__u32)argc;
		args->done = done;
		return XPS__R_CLASSIFY_MORE;
	}
	req->kind = XPS_REQ_INCOMPLETE;
	return req->kind;
bad:
	req->req_len = 0;
	req->flags |= XPS_F_ALL | XPS_F_STATE;
	req->kind = XPS_REQ_MALFORMED;
	return req->kind;
}

/*
 * Inline command: one line up to '\n', split like sdssplitargs() splits
 * unquoted text: ' ', '\t', '\r' end an argument; '\v' and '\f' are
 * skipped between arguments but belong to an argument they occur in.
 * Quotes make the arguments non-literal (escapes, joined words): the result
 * gets XPS_F_QUOTED and no keys.  Only the first two arguments are kept
 * (name, and key or subcommand); inline writes invalidate everything, as
 * inline commands come from people typing, not from clients that matter
 * for speed.  The byte loop is branch-free but for its two exits, so the
 * verifier walks it once.
 */
#ifndef XPS_REDIS_INLINE_MAX
#define XPS_REDIS_INLINE_MAX	512
#endif

XPS_GLOBAL int xps_redis__parse_inline(const struct xps_buf *buf, __u32 len,
				       __u32 off, struct xps_kv_req *req)
{
	struct xps_redis_args *args;
	__u64 argc = 0, in_arg = 0, quoted = 0, name_q = 0;
	__u64 s0 = 0, e0 = 0, s1 = 0, e1 = 0, c = 0;
	__u32 i, end = 0, nul = 0;

	if (!buf || !req)
		return XPS_REQ_MALFORMED;
	req->flags |= XPS_F_INLINE;
	for (i = 0; i < XPS_REDIS_INLINE_MAX; i++) {
		__u64 p = off + i, sep, skip, start, stop, q;

		c = XPS_AT(buf->b, p);
		/* One exit test per byte keeps the verifier's pending
		 * branches at one per iteration.  strchr() in Redis stops
		 * at a NUL: such a line never ends. */
		if (xps_ge(p, len) | xps_eq(c, '\n') | xps_eq(c, 0)) {
			if (p >= len)
				break;
			if (c == 0)
				nul = 1;
			else
				end = p + 1;
			break;
		}
		sep = xps_eq(c, ' ') | xps_eq(c, '\t') | xps_eq(c, '\r');
		skip = sep | xps_eq(c, '\v') | xps_eq(c, '\f');
		start = (in_arg ^ 1) & (skip ^ 1);
		stop = in_arg & sep;
		q = xps_eq(c, '"') | xps_eq(c, '\'');
		quoted |= q;
		/* argc counts finished arguments: argument 0 is being read
		 * while argc == 0 (and in_arg or start). */
		name_q |= q & xps_zero(argc) & (in_arg | start);
		s0 = xps_sel(start & xps_zero(argc), p, s0);
		e0 = xps_sel(stop & xps_zero(argc), p, e0);
		s1 = xps_sel(start & xps_zero(argc ^ 1), p, s1);
		e1 = xps_sel(stop & xps_zero(argc ^ 1), p, e1);
		argc += stop;
		in_arg = (in_arg & (sep ^ 1)) | start;
	}
	if (nul) {
		/*
		 * Redis looks for the line's end with strchr(), which stops
		 * at the NUL: the line never ends, and nothing of it or
		 * after it executes (until the buffer passes 64 KiB: a
		 * protocol error, and the connection is closed).
		 */
		req->flags |= XPS_F_CLOSES;
		goto bad;
	}
	if (!end) {
		if (len - off >= XPS_REDIS_INLINE_MAX)
			req->flags |= XPS_F_TOO_BIG;
		req->kind = XPS_REQ_INCOMPLETE;
		return req->kind;
	}
	/* The '\n' ends the argument being read. */
	e0 = xps_sel(in_arg & xps_zero(argc), end - 1, e0);
	e1 = xps_sel(in_arg & xps_zero(argc ^ 1), end - 1, e1);
	argc += in_arg;
	/* For the verifier: all exits of the loop are one state from here. */
	end = xps_forget(end);
	req->req_len = end - off;
	/* A quote in the name hides which command this is. */
	if (name_q)
		goto bad;
	if (!argc) {
		/* Empty line: Redis reads it and answers nothing. */
		req->flags |= XPS_F_NOREPLY;
		req->kind = XPS_REQ_HARMLESS;
		return req->kind;
	}
	if (quoted)
		req->flags |= XPS_F_QUOTED;
	/* Only a[0], a[1] are read (done <= 2): no xps_redis__args_init(),
	 * which would cost its stores once per exit of the loop above. */
	args = XPS__RARGS(req);
	args->a[0].off = (__u16)s0;
	args->a[0].len = (__u16)(e0 - s0);
	args->a[1].off = (__u16)s1;
	args->a[1].len = (__u16)(e1 - s1);
	if (argc > 0xffff)
		argc = 0xffff;
	req->argc = (__u16)argc;
	/* Only two arguments are known: keys past them mean XPS_F_ALL. */
	args->argc = (__u32)argc;
	args->done = argc > 2 ? 2 : (__u32)argc;
	args->quoted = quoted ? 1 : 0;
	return XPS__R_CLASSIFY;
bad:
	req->req_len = 0;
	req->flags |= XPS_F_ALL | XPS_F_STATE;
	req->kind = XPS_REQ_MALFORMED;
	return req->kind;
}

/*
 * Classify the request starting at buf[off]; buf holds len (<= XPS_SCRATCH)
 * payload bytes in an XPS_SCRATCH-byte buffer.  Returns req->kind; the next
 * request starts at off + req->req_len when the kind is not INCOMPLETE or
 * MALFORMED.
 */
XPS_GLOBAL int xps_redis__parse(const struct xps_buf *buf, __u32 len,
				__u32 off, struct xps_kv_req *req)
{
	int r;

	if (!buf || !req)
		return XPS_REQ_MALFORMED;
	__builtin_memset(req, 0, sizeof(*req));
	if (len > XPS_SCRATCH)
		len = XPS_SCRATCH;
	if (off >= len) {
		req->kind = XPS_REQ_INCOMPLETE;
		return req->kind;
	}
	/* Redis picks the protocol from the first byte of a request. */
	if (XPS_AT(buf->b, off) == '*')
		r = xps_redis__parse_resp(buf, len, off, req);
	else
		r = xps_redis__parse_inline(buf, len, off, req);
	if (r != XPS__R_CLASSIFY && r != XPS__R_CLASSIFY_MORE)
		return r;
	/* Called from here, not from the two parsers: a shorter chain of
	 * calls, so less of the BPF stack. */
	xps_redis__classify(buf, XPS__RARGS(req), req);
	if (r == XPS__R_CLASSIFY) {
		req->kind = req->hint;
		req->hint = XPS_REQ_NONE;
	} else {
		req->kind = XPS_REQ_INCOMPLETE;
	}
	return req->kind;
}

/*
 * buf: XPS_SCRATCH bytes (map value or stack); req: any memory of
 * sizeof(struct xps_kv_req).  On BPF the work happens in global functions,
 * each verified once whatever the number of call sites.
 */
XPS_INLINE int xps_redis_parse(const __u8 *buf, __u32 len, __u32 off,
			       struct xps_kv_req *req)
{
	return xps_redis__parse(XPS_BUF(buf), len, off, req);
}

/*
 * "$<vlen>\r\n" into dst (>= XPS_REDIS_BULK_HDR_MAX bytes).  Returns its
 * length.  Constant indices only, so dst may be any stack or map memory.
 */
XPS_INLINE __u32 xps_redis_encode_bulk_hdr(__u8 *dst, __u32 vlen)
{
	__u8 digits[20];
	__u32 n, i;

	n = xps_fmt_u64(digits, vlen);
	dst[0] = '$';
	for (i = 0; i < 10; i++) {
		if (i < n)
			dst[1 + i] = digits[i];
		else if (i == n)
			dst[1 + i] = '\r';
		else if (i == n + 1)
			dst[1 + i] = '\n';
	}
	/* vlen < 2^32 has at most 10 digits: CRLF may spill to 11 and 12. */
	if (n == 10) {
		dst[11] = '\r';
		dst[12] = '\n';
	} else if (n == 9) {
		dst[11] = '\n';
	}
	return n + 3;
}

/*
 * Full bulk reply of @val (vlen bytes, an XPS_SCRATCH-byte buffer) into the
 * XPS_SCRATCH-byte buffer @dst.  Returns the reply length, or -1 when it
 * does not fit.
 */
XPS_GLOBAL int xps_redis__encode_bulk(struct xps_buf *dst,
				     const struct xps_buf *val, __u32 vlen)
{
	__u8 hdr[XPS_REDIS_BULK_HDR_MAX];
	__u32 h, i;

	if (!dst || !val || vlen > XPS_SCRATCH - 2 - XPS_REDIS_BULK_HDR_MAX)
		return -1;
	h = xps_redis_encode_bulk_hdr(hdr, vlen);
	for (i = 0; i < XPS_REDIS_BULK_HDR_MAX; i++) {
		__u8 c;

		if (i >= h)
			break;
		c = hdr[i];
		XPS_OPAQUE(c);		/* no memcpy() on BPF */
		dst->b[i] = c;
	}
	xps__copy(dst, h, val, vlen);
	dst->b[XPS_IDX(h + vlen)] = '\r';
	dst->b[XPS_IDX(h + vlen + 1)] = '\n';
	return (int)(h + vlen + 2);
}

XPS_INLINE int xps_redis_encode_bulk(__u8 *dst, const __u8 *val, __u32 vlen)
{
	return xps_redis__encode_bulk((struct xps_buf *)(void *)dst,
				      XPS_BUF(val), vlen);
}

/*
 * "<n>\r\n" at @p of @buf, n of one to @maxd digits without a leading zero
 * (but "0" itself when @zero_ok): n, and in *@next the byte after the
 * CRLF; -1 otherwise.  Reads at most @maxd + 2 bytes from @p, whatever
 * the buffer's length: the caller checks that what it accepts ends
 * inside it.
 */
XPS_INLINE __s32 xps_redis__small(const __u8 *buf, __u32 p, __u32 maxd,
				  __u32 zero_ok, __u32 *next)
{
	__u32 i, d, n = 0;

	for (i = 0; i < 5; i++) {
		d = (__u32)XPS_AT(buf, p + i) - '0';
		if (d > 9)
			break;
		if (i == maxd || (i == 1 && !n))
			return -1;
		n = n * 10 + d;
	}
	if (!i || (!n && !zero_ok) || XPS_AT(buf, p + i) != '\r' ||
	    XPS_AT(buf, p + i + 1) != '\n')
		return -1;
	*next = p + i + 2;
	return (__s32)n;
}

/*
 * Whether "*<@argc>\r\n$3\r\n<name>\r\n$" starts at @off of @buf, the
 * name's three letters @c0 @c1 @c2 (lower case) in either case: the head
 * of the requests the fast recognizers know.  Reads 14 bytes from @off,
 * whatever the buffer's length (as xps_redis__small()).
 */
XPS_INLINE int xps_redis__head3(const __u8 *buf, __u32 off, char argc,
				char c0, char c1, char c2)
{
	__u64 diff = 0;

#define XPS__RH(i, c)	(diff |= XPS_AT(buf, off + (i)) ^ (__u8)(c))
	XPS__RH(0, '*'); XPS__RH(1, argc); XPS__RH(2, '\r'); XPS__RH(3, '\n');
	XPS__RH(4, '$'); XPS__RH(5, '3'); XPS__RH(6, '\r'); XPS__RH(7, '\n');
	diff |= (XPS_AT(buf, off + 8) | 0x20) ^ (__u8)c0;
	diff |= (XPS_AT(buf, off + 9) | 0x20) ^ (__u8)c1;
	diff |= (XPS_AT(buf, off + 10) | 0x20) ^ (__u8)c2;
	XPS__RH(11, '\r'); XPS__RH(12, '\n'); XPS__RH(13, '$');
#undef XPS__RH
	return !diff;
}

/*
 * The request the fast path answers most, recognized without the general
 * parser: "*2\r\n$3\r\nGET\r\n$<n>\r\n<key>\r\n" (GET in any case, n of one
 * to three digits without a leading zero), starting at @off.  Returns its
 * length and the key's span, or 0: xps_redis_parse() then decides.  Only
 * ever stricter than xps_redis_parse(): when this returns a length, the
 * parser returns XPS_REQ_SERVE at @off with that length, that one key and
 * no flag (tests/unit/test_redis.c checks it on every fixture and on
 * random input).
 */
XPS_INLINE __u32 xps_redis_parse_get(const __u8 *buf, __u32 len, __u32 off,
				     struct xps_span *key)
{
	__u32 p, end;
	__s32 n;

	if (len > XPS_SCRATCH || off >= len || len - off < 20 ||
	    !xps_redis__head3(buf, off, '2', 'g', 'e', 't'))
		return 0;
	n = xps_redis__small(buf, off + 14, 3, 0, &p);
	if (n < 0)
		return 0;
	end = p + (__u32)n + 2;
	/* every byte read above lies before end */
	if (end > len || XPS_AT(buf, p + n) != '\r' ||
	    XPS_AT(buf, p + n + 1) != '\n')
		return 0;
	key->off = (__u16)p;
	key->len = (__u16)n;
	return end - off;
}

/*
 * The write the fast path sees most, recognized without the general
 * parser: "*3\r\n$3\r\nSET\r\n$<k>\r\n<key>\r\n$<v>\r\n<value>\r\n" (SET
 * in any case, k of one to three digits and v of one to four, without a
 * leading zero; v may be "0"), starting at @off.  Returns its length,
 * with @req as xps_redis_parse() leaves it (an INVALIDATE of that one key
 * with that value), or 0: xps_redis_parse() then decides, and @req is
 * undefined.  Only ever stricter than the parser (tests/unit/test_redis.c
 * checks every field on every fixture and on random input).
 */
XPS_INLINE __u32 xps_redis_parse_set(const __u8 *buf, __u32 len, __u32 off,
				     struct xps_kv_req *req)
{
	__u32 p, kp, vp, end;
	__s32 k, v;

	if (len > XPS_SCRATCH || off >= len || len - off < 26 ||
	    !xps_redis__head3(buf, off, '3', 's', 'e', 't'))
		return 0;
	k = xps_redis__small(buf, off + 14, 3, 0, &kp);
	if (k < 0)
		return 0;
	p = kp + (__u32)k;
	if (XPS_AT(buf, p) != '\r' || XPS_AT(buf, p + 1) != '\n' ||
	    XPS_AT(buf, p + 2) != '$')
		return 0;
	v = xps_redis__small(buf, p + 3, 4, 1, &vp);
	if (v < 0)
		return 0;
	end = vp + (__u32)v + 2;
	/* every byte read above lies before end */
	if (end > len || XPS_AT(buf, vp + v) != '\r' ||
	    XPS_AT(buf, vp + v + 1) != '\n')
		return 0;
	__builtin_memset(req, 0, sizeof(*req));
	req->kind = XPS_REQ_INVALIDATE;
	req->req_len = end - off;
	req->argc = 3;
	req->nkeys = 1;
	req->name.off = (__u16)(off + 8);
	req->name.len = 3;
	req->keys[0].off = (__u16)kp;
	req->keys[0].len = (__u16)k;
	req->val.off = (__u16)vp;
	req->val.len = (__u16)v;
	req->mval[0] = req->val;
	return end - off;
}

#endif /* __XPS_PROTO_REDIS_BPF_H */
