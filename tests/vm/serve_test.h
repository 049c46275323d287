/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by progs/serve_test.c and prog_tests/serve.c. */
#ifndef __SERVE_TEST_H
#define __SERVE_TEST_H

#include <linux/types.h>

#include <linux/bpf_serve.h>

#define SERVE_TEST_ECHO_PORT	7007
/* Port whose payload the program checks against the stream's pattern
 * (byte i is i % SERVE_TEST_STREAM_MOD) and passes.
 */
#define SERVE_TEST_STREAM_PORT	7008
#define SERVE_TEST_STREAM_MOD	251
/* The program answers on these local ports only (the tests' servers). */
#define SERVE_TEST_PORT_MIN	7000
#define SERVE_TEST_PORT_MAX	9999

/* stats[] slots: 0..3 count verdicts. */
#define SERVE_TEST_STAT_RUNS	4
#define SERVE_TEST_STAT_OWNER	5	/* runs in the owner's context */
#define SERVE_TEST_STAT_SEE_ONLY	6	/* "OWNR" requests kept see-only */
#define SERVE_TEST_NSTATS		7

/* The buffer bpf_serve_reply() answers from: one byte over SERVE_TCP_TX_MAX. */
#define SERVE_TEST_KBUF		(SERVE_TCP_TX_MAX + 1)

struct serve_test_kbuf {
	__u8 b[SERVE_TEST_KBUF];
};

/* Where the program builds the replies it makes of the request (one per
 * CPU): the program cannot write the request itself.
 */
struct serve_test_rbuf {
	__u8 b[SERVE_TCP_TX_MAX];
};

/* What the program saw of the stream on SERVE_TEST_STREAM_PORT. */
struct serve_test_stream {
	__u64 bytes;		/* payload seen, in all */
	__u64 runs;
	__u64 bad;		/* runs not where the stream had got to */
	__u64 see_only;		/* runs with SERVE_SK_SEE_ONLY set */
	__u64 lost;		/* runs with SERVE_SK_LOST set */
};

struct serve_test_seen {
	__u32 family;
	__u32 local_port;	/* host order */
	__u32 remote_port;	/* host order */
	__u32 local_ip4;	/* network order */
	__u32 remote_ip4;
	__u32 local_ip6[4];
	__u32 remote_ip6[4];
	__u64 cookie;
	__u32 len;
	__u32 verdict;
};

#endif /* __SERVE_TEST_H */
