/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * BPF serve programs: answering requests on the TCP/UDP receive path.
 *
 * A serve program is a BPF_PROG_TYPE_SK_SKB program attached to a network
 * namespace with BPF_LINK_CREATE and one of the attach types BPF_SERVE_TCP or
 * BPF_SERVE_UDP (target_fd is a network namespace fd).  It runs on the receive
 * path right after transport protocol processing:
 *
 *  - TCP: on in-order payload, after sequence, checksum and window
 *    validation, before the bytes are queued to the socket and the owner is
 *    woken, and on the segments the out-of-order queue hands to the owner.
 *    The program sees every byte the owner reads, once and in order; it
 *    may consume a segment only while the owner has nothing unread
 *    (copied_seq == rcv_nxt), has accepted the connection, is not inside
 *    a write (sendmsg) and has no written bytes queued but unsent, and
 *    the connection can send: a reply never lands inside one of the
 *    owner's writes.  Otherwise it runs with SERVE_SK_SEE_ONLY set in the
 *    connection's state (bpf_serve_state()) and its verdict must be SERVE_PASS.
 *  - UDP: after socket lookup and checksum validation, before the datagram is
 *    queued to the socket.
 *
 * Context conventions (struct __sk_buff):
 *  - skb->data points at the first payload byte, skb->len is the payload
 *    length; no network or transport header is visible.
 *  - skb->sk is the receiving socket; family, local/remote address and port
 *    fields describe the flow.
 *  - The payload is the one the owner is about to read: the program reads
 *    it and writes nothing of it (the verifier refuses direct packet
 *    writes, the helpers that write, resize or redirect the packet, and
 *    context writes).  It gives its reply's bytes to the kfunc
 *    bpf_serve_reply(), which the hooks copy once into the reply (the TCP
 *    hook onto the connection's write queue); SERVE_TX without a reply
 *    given is treated as SERVE_PASS.
 *
 * Return values are enum serve_verdict (linux/bpf.h, beside the attach
 * types).  Any other value, and any failure of the hook before the program
 * ran, is treated as SERVE_PASS, but for one: a TCP segment there is no
 * memory to run the program on (one overlapping bytes already received,
 * shown from rcv_nxt on through a clone) is dropped, so that the owner
 * never reads what the program did not see; the peer sends it again.
 */
#ifndef _UAPI_LINUX_BPF_SERVE_H
#define _UAPI_LINUX_BPF_SERVE_H

#include <linux/types.h>
#include <linux/bpf.h>

/*
 * Not in the kernel's copy of this header: the verdicts, for builds
 * against a linux/bpf.h without them (every kernel but the patched one;
 * the patched kernel defines them beside enum sk_action, and
 * SERVE_VERDICT_MAX with them), and the socket options TCP_SERVE and
 * UDP_SERVE (linux/tcp.h and linux/udp.h of the patched kernel).
 *
 * Serve programs are SK_SKB programs, but their verdicts are not SK_DROP
 * and SK_PASS: SERVE_PASS is 0, which is SK_DROP's number, and SK_PASS (1)
 * is SERVE_DROP.  A serve program must return these names.
 */
#ifndef SERVE_VERDICT_MAX
enum serve_verdict {
	/* Deliver the payload to the socket as if no program were attached. */
	SERVE_PASS = 0,
	/* Consume the payload; TCP acknowledges it, the owner never sees it. */
	SERVE_DROP = 1,
	/*
	 * Consume the payload and send the reply given to bpf_serve_reply()
	 * to the peer: on the same TCP connection, or as a UDP datagram to
	 * the request's source from the address it was sent to.
	 */
	SERVE_TX = 2,
	/* TCP: send RST and close the connection.  UDP: as SERVE_DROP. */
	SERVE_RESET = 3,
	__SERVE_VERDICT_MAX,
};

#define SERVE_VERDICT_MAX (__SERVE_VERDICT_MAX - 1)
#endif

#ifndef TCP_SERVE
#define TCP_SERVE 50	/* setsockopt(SOL_TCP): run the hook on this socket */
#endif
#ifndef UDP_SERVE
#define UDP_SERVE 110	/* setsockopt(SOL_UDP): run the hook on this socket */
#endif

/*
 * TCP: the connection's state, which the program reads with the kfunc
 * bpf_serve_state().  SERVE_SK_SEE_ONLY: the segment goes to the owner whatever
 * the verdict.  SERVE_SK_LOST: bytes reached the owner that the program did
 * not see (among them bytes that arrived before it was attached or while
 * it was detached, and Fast Open data), or a verdict could not be carried
 * out: the program can no longer tell what the owner still owes the peer,
 * and every later segment of the connection is see-only.
 * SERVE_SK_ENROLLED: the hook runs on this socket at all; set with
 * setsockopt(SOL_TCP, TCP_SERVE) on it or on the listener it was accepted
 * from, or with bpf_setsockopt() from a sock_ops program.  The hook
 * costs a socket that did not opt in one test per segment.
 */
#define SERVE_SK_SEE_ONLY	1
#define SERVE_SK_LOST	2
#define SERVE_SK_ENROLLED	4

/*
 * UDP: the hook runs only on sockets that opted in, with
 * setsockopt(SOL_UDP, UDP_SERVE) (linux/udp.h) or, for sockets that are not
 * the caller's, with the kfunc bpf_serve_udp_enroll() from a BPF iterator
 * over UDP sockets (iter/udp).  A socket that did not opt in costs the
 * hook one test per datagram.
 */

/* Largest payload an SERVE_TX reply may carry on TCP and on UDP. */
#define SERVE_TCP_TX_MAX 65536
#define SERVE_UDP_TX_MAX 65507

#endif /* _UAPI_LINUX_BPF_SERVE_H */
