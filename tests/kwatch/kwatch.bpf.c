// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kwatch: report every inet socket the kernel destroys with memory still
 * charged to it, the condition inet_sock_destruct() WARNs on once per boot.
 * The WARN is WARN_ON_ONCE, so after the first splat a leak is silent;
 * this checks the same fields on every destruction.
 *
 * Only tracepoints are used (tp_btf): kernels built without kprobe events
 * or that refuse BPF trampolines (fentry/fexit) still have them.  The
 * check runs at the kmem_cache_free tracepoint of the socket's own slab
 * object: __sk_destruct() calls sk->sk_destruct() and then sk_prot_free(),
 * so at that point inet_sock_destruct() has purged and reclaimed and the
 * fields hold exactly what its WARN_ON_ONCE()s looked at.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "kwatch.h"

#define AF_INET_FAMILY		2
#define AF_INET6_FAMILY		10
#define SOCK_STREAM_TYPE	1	/* SOCK_STREAM: a #define, not in BTF */
#define TCP_CLOSE_STATE		7	/* TCP_CLOSE: an anonymous enum */
#define PF_KTHREAD_FLAG		0x00200000

/*
 * The destructors that end in inet_sock_destruct()'s checks.  Newer
 * kernels give TCP and UDP destructors of their own that call it; weak,
 * so that a kernel without one resolves it to 0, which matches nothing.
 */
extern const void inet_sock_destruct __ksym __weak;
extern const void inet6_sock_destruct __ksym __weak;
extern const void tcp4_destruct_sock __ksym __weak;
extern const void tcp6_destruct_sock __ksym __weak;
extern const void udp_destruct_sock __ksym __weak;
extern const void udpv6_destruct_sock __ksym __weak;

static __always_inline bool is_inet_destruct(unsigned long fn)
{
	return fn && (fn == (unsigned long)&inet_sock_destruct ||
		      fn == (unsigned long)&inet6_sock_destruct ||
		      fn == (unsigned long)&tcp4_destruct_sock ||
		      fn == (unsigned long)&tcp6_destruct_sock ||
		      fn == (unsigned long)&udp_destruct_sock ||
		      fn == (unsigned long)&udpv6_destruct_sock);
}

/* also report balanced inet sockets (kwatch -a) */
const volatile bool report_all;

__u64 nr_unbalanced;	/* read by user space after the run */
__u64 nr_lost;		/* records the ring buffer had no room for */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} events SEC(".maps");

struct sock_paths {
	__u32 paths[KW_NR_PATHS];
	__s32 last_send_err;
	__u64 drop_site[KW_DROP_SITES];
	__u32 drop_count[KW_DROP_SITES];
	__u32 drop_reason[KW_DROP_SITES];
};

/* per-socket path counters, from the socket's first counted event on */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);		/* struct sock * */
	__type(value, struct sock_paths);
} socks SEC(".maps");

/* a zeroed record is too large for the 512-byte BPF stack: build it here */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sock_paths);
} zero_paths SEC(".maps");

static __always_inline bool sk_is_inet(const struct sock *sk)
{
	__u16 family = sk->__sk_common.skc_family;

	return family == AF_INET_FAMILY || family == AF_INET6_FAMILY;
}

static __always_inline struct sock_paths *paths_of(const struct sock *sk)
{
	__u64 key = (__u64)(unsigned long)sk;
	struct sock_paths *sp;
	__u32 zero = 0;

	sp = bpf_map_lookup_elem(&socks, &key);
	if (sp)
		return sp;
	sp = bpf_map_lookup_elem(&zero_paths, &zero);
	if (!sp)
		return NULL;
	bpf_map_update_elem(&socks, &key, sp, BPF_NOEXIST);
	return bpf_map_lookup_elem(&socks, &key);
}

static __always_inline void count_path(const struct sock *sk,
				       enum kwatch_path path)
{
	struct sock_paths *sp;

	if (!sk || !sk_is_inet(sk))
		return;
	sp = paths_of(sk);
	if (sp && path < KW_NR_PATHS)
		__sync_fetch_and_add(&sp->paths[path], 1);
}

static __always_inline bool in_kthread(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return task->flags & PF_KTHREAD_FLAG;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(send_length, struct sock *sk, int ret, int flags)
{
	struct sock_paths *sp;

	if (!in_kthread()) {
		count_path(sk, KW_USER_SEND);
		return 0;
	}
	count_path(sk, KW_KTHREAD_SEND);
	if (ret >= 0)
		return 0;
	/* sockmap's sendmsg returns -EACCES for an sk_msg SK_DROP */
	count_path(sk, KW_KTHREAD_SEND_ERR);
	sp = sk && sk_is_inet(sk) ? paths_of(sk) : NULL;
	if (sp)
		sp->last_send_err = ret;
	return 0;
}

/*
 * The psock backlog worker delivers to the owner (sk_psock_skb_ingress)
 * holding only its work mutex, not the socket lock; it wakes the owner
 * from a kworker, where every other delivery comes from softirq.
 */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(data_ready, const struct sock *sk)
{
	char comm[8];

	count_path(sk, KW_DATA_READY);
	if (!in_kthread() || bpf_get_current_comm(comm, sizeof(comm)))
		return 0;
	if (comm[0] == 'k' && comm[1] == 'w' && comm[2] == 'o' &&
	    comm[3] == 'r' && comm[4] == 'k' && comm[5] == 'e' &&
	    comm[6] == 'r')
		count_path(sk, KW_WORKER_DATA_READY);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(retransmit, const struct sock *sk)
{
	count_path(sk, KW_RETRANSMIT);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(recv_length, struct sock *sk, int ret, int flags)
{
	count_path(sk, KW_USER_RECV);
	return 0;
}

/* an skb the socket owned, freed as a drop: sockmap's SK_DROP among them */
SEC("tp_btf/kfree_skb")
int BPF_PROG(skb_drop, struct sk_buff *skb, void *location,
	     enum skb_drop_reason reason, struct sock *rx_sk)
{
	struct sock *sk = rx_sk ? rx_sk : skb->sk;
	__u64 site = (__u64)(unsigned long)location;
	struct sock_paths *sp;
	int i;

	if (!sk || !sk_is_inet(sk))
		return 0;
	sp = paths_of(sk);
	if (!sp)
		return 0;
	__sync_fetch_and_add(&sp->paths[KW_SKB_DROP], 1);
	for (i = 0; i < KW_DROP_SITES; i++) {
		/* racing first users of a slot may both take it: only detail */
		if (!sp->drop_site[i])
			sp->drop_site[i] = site;
		if (sp->drop_site[i] != site)
			continue;
		__sync_fetch_and_add(&sp->drop_count[i], 1);
		sp->drop_reason[i] = reason;
		break;
	}
	return 0;
}

SEC("tp_btf/kmem_cache_free")
int BPF_PROG(cache_free, unsigned long call_site, const void *ptr,
	     const struct kmem_cache *s)
{
	struct sock *sk = (struct sock *)ptr;
	__u64 key = (__u64)(unsigned long)ptr;
	__s32 rmem, wmem, queued, fwd;
	struct kwatch_event *ev;
	struct sock_paths *sp;
	unsigned long destruct;
	unsigned char state;
	__u16 type;
	__u8 flags = 0;

	/* most frees are of small objects: skip them before any read */
	if (!ptr || s->object_size < bpf_core_type_size(struct sock))
		return 0;
	destruct = (unsigned long)BPF_CORE_READ(sk, sk_destruct);
	if (!is_inet_destruct(destruct))
		return 0;

	sp = bpf_map_lookup_elem(&socks, &key);

	/* inet_sock_destruct() returns before its WARNs in these cases */
	type = BPF_CORE_READ(sk, sk_type);
	state = BPF_CORE_READ(sk, __sk_common.skc_state);
	if (type == SOCK_STREAM_TYPE && state != TCP_CLOSE_STATE)
		goto out;
	if (!(BPF_CORE_READ(sk, __sk_common.skc_flags) & (1UL << SOCK_DEAD)))
		goto out;

	rmem = BPF_CORE_READ(sk, sk_backlog.rmem_alloc.counter);
	wmem = BPF_CORE_READ(sk, sk_wmem_alloc.refs.counter);
	queued = BPF_CORE_READ(sk, sk_wmem_queued);
	fwd = BPF_CORE_READ(sk, sk_forward_alloc);
	if (rmem || wmem || queued || fwd) {
		flags |= KW_F_UNBALANCED;
		__sync_fetch_and_add(&nr_unbalanced, 1);
	} else if (!report_all) {
		goto out;
	}

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		__sync_fetch_and_add(&nr_lost, 1);
		goto out;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->ts_ns = bpf_ktime_get_ns();
	ev->cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
	ev->rmem_alloc = rmem;
	ev->wmem_alloc = wmem;
	ev->wmem_queued = queued;
	ev->forward_alloc = fwd;
	ev->pid = bpf_get_current_pid_tgid() >> 32;
	ev->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	ev->protocol = BPF_CORE_READ(sk, sk_protocol);
	/* skc_num is cleared when the port is released: inet_sport is not */
	ev->lport = bpf_ntohs(BPF_CORE_READ((struct inet_sock *)sk, inet_sport));
	ev->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	ev->state = state;
	ev->flags = flags;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	if (sp) {
		__builtin_memcpy(ev->paths, sp->paths, sizeof(ev->paths));
		ev->last_send_err = sp->last_send_err;
		__builtin_memcpy(ev->drop_site, sp->drop_site,
				 sizeof(ev->drop_site));
		__builtin_memcpy(ev->drop_count, sp->drop_count,
				 sizeof(ev->drop_count));
		__builtin_memcpy(ev->drop_reason, sp->drop_reason,
				 sizeof(ev->drop_reason));
	}
	/* who freed it: sk_psock_destroy() means the psock held the last ref */
	ev->nr_stack = bpf_get_stack(ctx, ev->stack, sizeof(ev->stack), 0);
	bpf_ringbuf_submit(ev, 0);
out:
	if (sp)
		bpf_map_delete_elem(&socks, &key);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
