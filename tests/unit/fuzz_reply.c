// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the reply framing (bpf/proto/reply.bpf.h).  The
 * first input byte picks the protocol and the HEAD flag, the second a split
 * point, the rest is the stream.  Beyond "no crash" under ASan/UBSan: the
 * replies end at the same bytes (and the stream fails at the same byte)
 * whether it arrives whole, split at the chosen point, or one byte at a
 * time, and whether the bytes the framing only waits past are passed over
 * (as egress does) or fed one by one; no reply ends inside data the
 * framing was told to skip.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "reply_drive.h"

#define MAX_ENDS 4096

struct run {
	size_t ends[MAX_ENDS];
	int n;
	size_t err_at;		/* byte of XPS_RB_ERR when n < 0 */
};

static void feed(const uint8_t *b, size_t len, size_t seg, int proto,
		 int nobody, struct run *r, int scan)
{
	r->err_at = 0;
	r->n = reply_feed_how(b, len, seg, proto, nobody, r->ends, MAX_ENDS,
			      &r->err_at, scan);
	if (r->n > MAX_ENDS)
		r->n = MAX_ENDS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run whole, split, bytes, fed;
	int proto, nobody;
	size_t cut;

	if (size < 2)
		return 0;
	proto = 1 + data[0] % 6;	/* XPS_REPLY_RESP .. XPS_REPLY_NATS */
	nobody = (data[0] >> 4) & 1;
	cut = data[1] + 1;
	data += 2;
	size -= 2;
	feed(data, size, 0, proto, nobody, &whole, 1);
	feed(data, size, cut, proto, nobody, &split, 1);
	feed(data, size, 1, proto, nobody, &bytes, 1);
	feed(data, size, 0, proto, nobody, &fed, 0);
	assert(whole.n == split.n && whole.n == bytes.n && whole.n == fed.n);
	if (whole.n < 0) {
		assert(whole.err_at == split.err_at &&
		       whole.err_at == bytes.err_at && whole.err_at == fed.err_at);
		return 0;
	}
	assert(!memcmp(whole.ends, split.ends, whole.n * sizeof(size_t)));
	assert(!memcmp(whole.ends, bytes.ends, whole.n * sizeof(size_t)));
	assert(!memcmp(whole.ends, fed.ends, whole.n * sizeof(size_t)));
	return 0;
}
