/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The framework's view of kernel structures (CO-RE: only the fields it
 * reads, relocated against the running kernel) and the kernel constants
 * it needs, named.  Part of xps_framework.bpf.c.
 */
#ifndef __XPS_FW_KERNEL_BPF_H
#define __XPS_FW_KERNEL_BPF_H

/* Only the fields XPS reads; CO-RE relocates them against the kernel. */
struct tcp_sock___xps {
	__u32 rcv_nxt;
	__u32 copied_seq;
	__u32 write_seq;
	__u8 serve_state;	/* SERVE_SK_*: the patched kernel only */
} __attribute__((preserve_access_index));

/* struct tcp_skb_cb, in sk_buff's cb[] while the skb is on a TCP queue */
struct tcp_skb_cb___xps {
	__u32 seq;
	__u32 end_seq;
	__u32 tcp_tw_isn;
	__u8 tcp_flags;
};

#define XPS_SKB_CB_SIZE	48	/* sizeof(((struct sk_buff *)0)->cb) */

struct sk_buff___xps {
	char cb[XPS_SKB_CB_SIZE];
} __attribute__((preserve_access_index));

#define XPS_TCPHDR_FIN	0x01	/* include/net/tcp.h */
/* The TCP header's 16-bit word of data offset and flags, and its checksum */
#define XPS_TCPHDR_FLAGS_OFF	12
#define XPS_TCPHDR_CSUM_OFF	offsetof(struct tcphdr, check)
#define TCP_FLAGS_AT(th)	((__u8 *)(th) + XPS_TCPHDR_FLAGS_OFF)

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

struct task_struct___xps {
	unsigned int flags;
} __attribute__((preserve_access_index));

#define XPS_PF_KTHREAD 0x00200000	/* include/linux/sched.h */

/* tcp_sock starts with struct sock, which starts with sock_common */
struct sock_common___xps {
	__u16 skc_num;		/* the local port, host byte order */
	struct {
		__s64 counter;
	} skc_cookie;
} __attribute__((preserve_access_index));

struct sock___xps {
	struct sock_common___xps __sk_common;
	struct {
		int owned;
	} sk_lock;
	struct {
		int len;
	} sk_backlog;
	__u16 sk_protocol;
} __attribute__((preserve_access_index));

/*
 * Defined by PREEMPT_RT kernels only (kernel/softirq.c), where softirqs
 * run preemptible: its presence in the kernel's BTF says so.
 */
struct softirq_ctrl___xps {
	int cnt;
};

/* Whether a run in softirq ends before anything else on its CPU runs. */
static __always_inline int softirq_runs_whole(void)
{
	return !bpf_core_type_exists(struct softirq_ctrl___xps);
}

#define XPS_TCP_CLOSE	7	/* include/net/tcp_states.h */
#define XPS_TCP_LISTEN	10

#endif /* __XPS_FW_KERNEL_BPF_H */
