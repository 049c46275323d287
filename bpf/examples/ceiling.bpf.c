// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The hook's ceiling: answer every segment with a fixed reply, without
 * parsing.  Its reply is what Redis sends for a GET of a 3-byte value, so
 * redis-benchmark can drive it; every service handler is measured as a
 * fraction of it (scripts/bench.sh).  The fixed reply is for one request
 * per segment: pipelined segments get one reply, so use it unpipelined.
 *
 * It counts one request per segment, so that the framework may answer on
 * the connection (docs/ordering.md); with RESP framing at egress, what the
 * service answers itself (a first CONFIG GET passed before the context
 * existed, say) is counted too.
 */
#define XPS_REPLY_PROTO XPS_REPLY_RESP
#include "xps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xps")
int xps_ceiling(struct __sk_buff *skb)
{
	/* on the stack: a kfunc's buffer must be writable, .rodata is not */
	char reply[] = "$3\r\nbar\r\n";

	xps_request(skb, 0);
	if (xps_reply(skb, reply, sizeof(reply) - 1))
		return xps_pass(skb);
	return xps_tx(skb);
}
