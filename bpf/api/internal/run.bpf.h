/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The run state a handler shares with the framework, and how a run ends:
 * its counters, the replies a PASS leaves the connection owing
 * (docs/ordering.md), and each backend's verdict codes.  Used by the
 * handler API (xps.bpf.h), the backends' send paths (backend/) and the
 * framework; never by a handler directly.
 */
#ifndef __XPS_INTERNAL_RUN_BPF_H
#define __XPS_INTERNAL_RUN_BPF_H

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>

#include "maps.bpf.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif

/* sockmap verdicts (enum sk_action) */
#define XPS__SK_DROP 0
#define XPS__SK_PASS 1

/* A handler's reply framing (xps.bpf.h): none unless it names one. */
#ifndef XPS_REPLY_PROTO
#define XPS_REPLY_PROTO XPS_REPLY_NONE
#endif

/*
 * Which backend runs the object (enum xps_backend).  Set by libxps before
 * load; never written at run time, so the verifier prunes the branches of
 * the other backends.
 */
const volatile __u32 xps_backend = XPS_BACKEND_NATIVE;

/*
 * 1: the kernel has the native hook's reply kfunc, bpf_serve_reply()
 * (backend/native.bpf.h).  Set by libxps with xps_backend; 0 keeps the
 * object loadable where it is missing (the reply is then written into
 * the request's clone).
 */
const volatile __u32 xps_reply_kfunc;

/*
 * The framing egress applies from a connection's first byte, for a
 * protocol whose servers speak unprompted (XPS_REPLY_NATS); 0 for the
 * others, whose framing the first counted request sets.  libxps reads it
 * when it creates the context (XPS_SLOT_FRAMING_MASK).
 */
const volatile __u32 xps_framing =
	XPS_REPLY_PROTO == XPS_REPLY_NATS ? XPS_REPLY_NATS : 0;

/*
 * The state of the handler's run under way on this CPU: entry 0, or entry
 * 1 while a run of level 1 interrupts the one of entry 0 (run_begin() in
 * the framework).  The interrupting run ends before the other goes on, so
 * whoever asks is the innermost run.  The native hook runs with softirqs
 * off: its runs never nest, and its handlers read entry 0 alone.  (The
 * framework keeps the pointer run_begin() gave it.)
 */
static __always_inline struct xps_run *xps__run(void)
{
	struct xps_run *run;
	__u32 key = 0;

	run = bpf_map_lookup_elem(&xps_run, &key);
	if (xps_backend == XPS_BACKEND_NATIVE || !run)
		return run;
	key = run->inner;
	return bpf_map_lookup_elem(&xps_run, &key);
}

/*
 * The key of the current run's entry in a per-CPU scratch map of
 * XPS_RUN_LEVELS entries (XPS_SCRATCH_MAP() in xps.bpf.h): a run that
 * interrupts another must not write over its scratch.
 */
static __always_inline __u32 xps__level(void)
{
	struct xps_run *run = xps__run();

	return run ? run->level : 0;
}

enum xps__outcome { XPS__TX, XPS__DROP, XPS__PASS, XPS__RESET, XPS__ERROR };

/* run->rewritten: how far the run's reply got */
#define XPS__REPLY_BUILT	1	/* written in place, or in a copy */
#define XPS__REPLY_GIVEN	2	/* given to the kernel's kfunc */

/*
 * The run is over: its level's run state and scratch are free again, and
 * the run it interrupted, if any, is the CPU's current one.
 */
static __always_inline void xps__run_end(struct xps_run *run)
{
	struct xps_run *outer;
	__u32 zero = 0;

	run->active = 0;
	if (!run->level)
		return;
	outer = bpf_map_lookup_elem(&xps_run, &zero);
	if (outer)
		outer->inner = 0;
}

/*
 * Every handler verdict ends here: the run is over, and another may use
 * the CPU's run state and scratch (see run_begin() in the framework).
 */
static __always_inline void xps__account(struct xps_run *run, int outcome,
					 int error)
{
	struct xps_handler_stats *st;
	__u32 slot = run->slot;

	xps__run_end(run);
	st = bpf_map_lookup_elem(&xps_stats, &slot);
	if (!st)
		return;
	st->runs++;
	st->run_ns += bpf_ktime_get_ns() - run->start_ns;
	if (error)
		st->errors++;
	switch (outcome) {
	case XPS__TX:
		st->tx++;
		st->tx_bytes += run->payload_len;
		break;
	case XPS__DROP:
		st->drop++;
		break;
	case XPS__RESET:
		st->reset++;
		break;
	default:
		st->pass++;
		break;
	}
}

/*
 * Bytes reach the service that nobody counted: the framework can no longer
 * tell when the service has answered everything, so the connection stays
 * on the slow path (docs/ordering.md).  Atomic: a nested run (see
 * run_begin() in the framework) may pass on the same connection meanwhile.
 * xps_lost counts connections, by the reason they lost their count: only
 * the run that set the flag adds one.
 */
static __always_inline void xps__lose_count(struct xps_conn *conn, __u32 why)
{
	__u32 old = __sync_fetch_and_or(&conn->flags, XPS_CONN_UNCOUNTED);
	__u64 *n = bpf_map_lookup_elem(&xps_lost, &why);

	/* no branch on old: every caller's paths would be walked twice */
	if (n)
		*n += ((old & XPS_CONN_UNCOUNTED) ^ XPS_CONN_UNCOUNTED) /
		      XPS_CONN_UNCOUNTED;
}

/*
 * The segment goes to the service: the connection owes the replies of the
 * requests the handler counted in it.
 */
static __always_inline void xps__owe(struct xps_run *run)
{
	struct xps_conn *conn;
	__u32 i, bit;

	if (run->proto != IPPROTO_TCP)
		return;
	conn = bpf_map_lookup_elem(&xps_conns, &run->cookie);
	if (!conn)
		return;
	if (run->counted != XPS_COUNT_KNOWN || XPS_REPLY_PROTO == XPS_REPLY_NONE) {
		xps__lose_count(conn, XPS_LOST_NO_COUNT);
		return;
	}
	if (!run->reqs)
		return;
	/* one framing per connection (a handler swap may bring another) */
	if (conn->rp.proto != XPS_REPLY_PROTO) {
		if (conn->rp.proto) {
			xps__lose_count(conn, XPS_LOST_FRAMING);
			return;
		}
		conn->rp.proto = XPS_REPLY_PROTO;
	}
	if (XPS_REPLY_PROTO == XPS_REPLY_HTTP) {
		/* which replies have no body: a window of them outstanding */
		if (conn->owed - conn->answered + run->reqs >
		    XPS_NOBODY_WINDOW) {
			xps__lose_count(conn, XPS_LOST_WINDOW);
			return;
		}
		for (i = 0; i < XPS_NOBODY_WINDOW; i++) {
			if (i >= run->reqs)
				break;
			bit = 1U << ((conn->owed + i) & XPS_NOBODY_MASK);
			if (run->reqs_nobody & (1U << i))
				conn->nobody |= bit;
			else
				conn->nobody &= ~bit;
		}
	}
	conn->owed += run->reqs;
}

/*
 * What the program returns for PASS, DROP and RESET on the backend in use
 * (stock TCP's RESET: xps__sockmap_reset()).
 */
static __always_inline int xps__pass_code(void)
{
	if (xps_backend == XPS_BACKEND_SOCKMAP)
		return XPS__SK_PASS;
	if (xps_backend == XPS_BACKEND_TC)
		return TC_ACT_OK;
	return XPS_PASS;
}

static __always_inline int xps__drop_code(void)
{
	if (xps_backend == XPS_BACKEND_SOCKMAP)
		return XPS__SK_DROP;
	if (xps_backend == XPS_BACKEND_TC)
		return TC_ACT_SHOT;
	return XPS_DROP;
}

/* The native hook resets a TCP connection; TC drops the datagram. */
static __always_inline int xps__reset_code(void)
{
	if (xps_backend == XPS_BACKEND_TC)
		return TC_ACT_SHOT;
	return XPS_RESET;
}

#endif /* __XPS_INTERNAL_RUN_BPF_H */
