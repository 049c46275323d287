/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The framework's maps, declared once.  Layouts: include/xps/abi.h.
 *
 * Every map here is pinned by name under /sys/fs/bpf/xps (libxps opens
 * objects with that pin root): the framework creates them when it loads,
 * and every handler object, which includes the first group through
 * xps.bpf.h, reuses the framework's instances.  libbpf reuses a pin only
 * when the definitions agree, which is why there is one of each.
 *
 * The second group only the framework's own programs use; it is declared
 * where XPS__FRAMEWORK is defined (bpf/framework/xps_framework.bpf.c), so that a
 * handler object does not open the framework's own maps.
 */
#ifndef __XPS_INTERNAL_MAPS_BPF_H
#define __XPS_INTERNAL_MAPS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include <linux/bpf_serve.h>
#include <xps/abi.h>
#include <xps/kvcache.h>
#include <xps/nats.h>

/* ---- shared by the framework and the handler API -------------------- */

/*
 * The current run's state, per CPU and per level of nesting (struct
 * xps_run, XPS_RUN_LEVELS).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_RUN_LEVELS);
	__type(key, __u32);
	__type(value, struct xps_run);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_run SEC(".maps");

/* Per-slot run counters (xpsctl stats show), summed over CPUs by libxps. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct xps_handler_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_stats SEC(".maps");

/* Stock TCP: the enrolled connections, by socket cookie. */
struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, XPS_MAX_CONNS);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_sockhash SEC(".maps");

/* Both TCP backends: the record of each accepted connection (xps_sockops). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XPS_MAX_CONNS);
	__type(key, __u64);
	__type(value, struct xps_conn);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_conns SEC(".maps");

/* Why connections lost count, by enum xps_lost_why (xpsctl status). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_LOST_WHY_MAX);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_lost SEC(".maps");

/* Backends in use, control-plane generation, unanswered writes. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xps_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_config SEC(".maps");

/*
 * Stock TCP: per-connection reply slots (see struct xps_stash), created at
 * a connection's first reply from a zeroed template, removed at close.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XPS_MAX_CONNS);
	__type(key, __u64);
	__type(value, struct xps_stash);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_stash SEC(".maps");

/* The zeroed template of an xps_stash entry (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xps_stash);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_stash_zero SEC(".maps");

/* Unanswered writes by key (struct xps_wpend), index 0. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xps_wpend);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_wpend SEC(".maps");

/* Whether a slot's server is gone (XPS_SERVER_GONE), by slot; mappable. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XPS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_servers SEC(".maps");

/*
 * Reply capture (struct xps_cap_hdr): one ring per slot, made and put
 * here by the user-space process that reads it (libxps's kv-cache); a
 * slot without one captures nothing.
 */
struct xps_cap_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XPS_CAP_RING_SIZE);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, XPS_MAX_SLOTS);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct xps_cap_ring);	/* last: a flexible array */
} xps_caps SEC(".maps");

/*
 * NATS routes (include/xps/nats.h): each route's receive framing, the
 * heartbeats the server was given and its answers, the groups' stamps
 * and the epoch, a leader's last answers from its followers; written by
 * the NATS handler and by egress.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XPS_NATS_CONNS);
	__type(key, __u64);
	__type(value, struct xps_nats_conn);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_nats_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XPS_NATS_HBS);
	__type(key, struct xps_nats_hb_key);
	__type(value, struct xps_nats_hb);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_nats_hbs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XPS_NATS_GROUPS);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_nats_groups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XPS_NATS_ACKS);
	__type(key, struct xps_nats_hb_key);
	__type(value, struct xps_nats_ack);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_nats_acks SEC(".maps");

/* [0]: the epoch; [1]: the source of fresh group stamps */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_nats_epoch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XPS_NATS_ST_MAX);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_nats_stats SEC(".maps");

/* ---- the framework's programs only ---------------------------------- */
#ifdef XPS__FRAMEWORK

/*
 * The data map of each kv-cache context, by slot (the context's xps_data,
 * put here by its filler, libxps's kv-cache): where egress commits a
 * write-through.  A slot without one commits nothing.
 */
struct xps_kv_data_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);		/* not compared for hash maps */
	/*
	 * Sizes, not types: clang emits a type reached only through the
	 * template as a forward declaration, of no size for libbpf.
	 */
	__uint(key_size, sizeof(struct xps_kv_hkey));
	__uint(value_size, sizeof(struct xps_kv_value));
	__uint(map_flags, BPF_F_NO_PREALLOC);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, XPS_MAX_SLOTS);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct xps_kv_data_map);
} xps_kv_datas SEC(".maps");

/* The predicate table: which slot serves a flow. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XPS_MAX_PREDICATES);
	__type(key, struct xps_pred_key);
	__type(value, struct xps_pred_value);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_preds SEC(".maps");

/* The predicate masks in use, most specific first; index 0: TCP, 1: UDP. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct xps_pred_masks);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_masks SEC(".maps");

/* What a slot is: active, a composability table, where its value lies. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XPS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct xps_slot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_slots SEC(".maps");

/* Per-slot context description, for the control plane. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XPS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct xps_ctx_info);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_ctxinfo SEC(".maps");

/* L7 composability: (slot, value at the offset) -> sub-context's slot. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XPS_MAX_COMP);
	__type(key, struct xps_comp_key);
	__type(value, struct xps_comp_value);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_comp SEC(".maps");

/*
 * The handlers, by slot.  One program array per protocol: the kernel only
 * tail-calls between programs of the same type and expected attach type,
 * and a backend's TCP and UDP entry points differ in at least one of them.
 * A handler can tell which one dispatched it with xps_proto().
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, XPS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_progs_tcp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, XPS_MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_progs_udp SEC(".maps");

/* Control-plane bookkeeping only: never read by the programs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XPS_MAX_TC_IFS);
	__type(key, __u32);
	__type(value, struct xps_tc_if);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} xps_tcifs SEC(".maps");

#endif /* XPS__FRAMEWORK */
#endif /* __XPS_INTERNAL_MAPS_BPF_H */
