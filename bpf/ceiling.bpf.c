// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The hook's ceiling: answer every segment with a fixed reply, without
 * parsing.  Its reply is what Redis sends for a GET of a 3-byte value, so
 * redis-benchmark can drive it; every service handler is measured as a
 * fraction of it (scripts/bench.sh).  The fixed reply is for one request
 * per segment: pipelined segments get one reply, so use it unpipelined.
 */
#include "xps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static const char reply[] = "$3\r\nbar\r\n";

SEC("xps")
int xps_ceiling(struct __sk_buff *skb)
{
	if (xps_resize(skb, sizeof(reply) - 1) ||
	    xps_store(skb, 0, reply, sizeof(reply) - 1))
		return xps_pass(skb);
	return xps_tx(skb);
}
