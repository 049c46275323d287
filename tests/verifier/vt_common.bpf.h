/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared scaffolding of the verifier tests: a per-CPU scratch map shaped
 * like the one a handler uses, and the payload copy into it.  Each
 * vt_*.bpf.c walks up to VT_NREQ requests per segment the way a handler
 * would, so the verifier sees the parser in its real calling context.
 */
#ifndef __XPS_VT_COMMON_BPF_H
#define __XPS_VT_COMMON_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "common.bpf.h"

#ifndef VT_NREQ
#define VT_NREQ XPS_MAX_REQS_PER_SEG
#endif

struct vt_scratch {
	__u8 b[XPS_SCRATCH];
};

/* Slot 0: the payload.  Slot 1: where replies are built.  Slot 2: spare
 * (parse results). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct vt_scratch);
} vt_scratch SEC(".maps");

/* Copy the first min(len, XPS_SCRATCH) payload bytes; 0 when empty. */
static __always_inline __u32 vt_load(struct __sk_buff *skb, __u8 *dst)
{
	__u32 len = skb->len;

	if (len > XPS_SCRATCH)
		len = XPS_SCRATCH;
	if (len == 0)
		return 0;
	if (bpf_skb_load_bytes(skb, 0, dst, len))
		return 0;
	return len;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#endif /* __XPS_VT_COMMON_BPF_H */
