/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Types kwatch.bpf.c and kwatch.c share: one record per inet socket the
 * kernel destroyed with memory still charged to it.
 */
#ifndef __KWATCH_H
#define __KWATCH_H

/*
 * What a socket did while it lived, counted from tracepoints, so that the
 * record of an unbalanced socket says which paths its data took.  The
 * psock's backlog worker sends redirected skbs from a kernel thread, which
 * is how its sends are told from the owner's.
 */
enum kwatch_path {
	KW_USER_SEND,		/* sendmsg from a user task */
	KW_KTHREAD_SEND,	/* sendmsg from a kernel thread (psock backlog) */
	KW_KTHREAD_SEND_ERR,	/* ... that returned an error (-EACCES: SK_DROP) */
	KW_USER_RECV,		/* recvmsg */
	KW_RETRANSMIT,		/* TCP segments retransmitted */
	KW_DATA_READY,		/* owner woken for data */
	KW_WORKER_DATA_READY,	/* ... by a kworker: the psock backlog queued
				 * the data to ingress_msg, without the
				 * socket lock */
	KW_SKB_DROP,		/* kfree_skb of an skb the socket owned */
	KW_NR_PATHS,
};

#define KW_F_UNBALANCED		0x1	/* inet_sock_destruct would WARN */

#define KW_STACK_DEPTH		16
#define KW_DROP_SITES		3	/* kfree_skb call sites told apart */
#define KW_COMM_LEN	16

struct kwatch_event {
	__u64 ts_ns;		/* CLOCK_MONOTONIC */
	__u64 cookie;		/* socket cookie, 0 if never taken */
	/* as inet_sock_destruct() checks them, after purge and reclaim */
	__s32 rmem_alloc;
	__s32 wmem_alloc;
	__s32 wmem_queued;
	__s32 forward_alloc;
	__u32 pid;
	__u16 family;
	__u16 protocol;
	__u16 lport;		/* host order */
	__u16 rport;		/* host order */
	__u8 state;
	__u8 flags;		/* KW_F_* */
	__u8 pad[2];
	char comm[KW_COMM_LEN];
	__u32 paths[KW_NR_PATHS];
	__s32 last_send_err;	/* of the last KW_KTHREAD_SEND_ERR */
	__s32 nr_stack;		/* frames in stack[] */
	/* the first call sites of its kfree_skb()s, and how often each */
	__u64 drop_site[KW_DROP_SITES];
	__u32 drop_count[KW_DROP_SITES];
	__u32 drop_reason[KW_DROP_SITES];	/* the last one at each */
	__u64 stack[KW_STACK_DEPTH];	/* kernel stack that freed the socket */
};

_Static_assert(sizeof(struct kwatch_event) % 8 == 0,
	       "kwatch_event must keep one layout on both sides");

#endif /* __KWATCH_H */
