// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The XPS extension framework: predicate table lookup, L7 composability and
 * dispatch to the handler by tail call, for every backend.
 *
 *  native	xps_native_tcp / xps_native_udp, run by the patched kernel's
 *		hook (SK_SKB with the BPF_SERVE_* attach types set by libxps,
 *		attached by netns links); xps_udp_enroll, an iterator libxps
 *		runs, opts the served UDP sockets in to the hook
 *  sockmap	xps_stream_verdict runs on the data of the connections
 *		xps_sockops enrolled into xps_sockhash; xps_msg_verdict puts
 *		the replies on the wire and releases answered writes;
 *		xps_tc_egress completes RESET
 *  tc		xps_tc_ingress runs UDP handlers on the interface's ingress
 *		(and takes TCP connections out of the sockhash when draining)
 *
 * Two programs run on both TCP backends, the native one included: libxps
 * attaches xps_sockops to the cgroup v2 root (a BPF_CGROUP_SOCK_OPS link)
 * and xps_tc_egress to the egress of every interface while a TCP context
 * exists.  xps_sockops records every accepted connection that matches a
 * predicate (struct xps_conn, which also holds the handlers' state of the
 * connection) and forgets it when it closes; it enrols the connection into
 * xps_sockhash on the sockmap backend only.  xps_tc_egress counts the
 * replies the service sends on it, so that a reply from the kernel never
 * overtakes or lands inside one the service still owes (docs/ordering.md),
 * and on the native backend releases the writes the service has answered
 * (docs/coherence.md).  libxps loads the programs of the backend in use
 * and these two.
 */
#define XPS__FRAMEWORK	/* all the maps of internal/maps.bpf.h */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

#include "internal/run.bpf.h"
#include "internal/packet.bpf.h"
#include "proto/reply.bpf.h"
/* the NATS walk reads the bytes a route sends (egress.bpf.h) */
#define XPS_NATS_LOAD(skb, off, dst, n) bpf_skb_load_bytes((skb), (off), (dst), (n))
#define XPS_NATS_SCRATCH_KEY XPS_RUN_LEVELS
#include "lib/nats.bpf.h"

/* The roles, in the order they build on each other */
#include "kernel.bpf.h"
#include "dispatch.bpf.h"
#include "conns.bpf.h"
#include "native.bpf.h"
#include "sockmap.bpf.h"
#include "egress.bpf.h"
#include "tc_ingress.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";
