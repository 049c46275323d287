// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Echo: every request is answered from the kernel with its own bytes. */
#include "xps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xps")
int xps_echo(struct __sk_buff *skb)
{
	return xps_tx(skb);
}
