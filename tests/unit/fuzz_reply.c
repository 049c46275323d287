// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the reply framing (bpf/proto/reply.bpf.h).  The
 * first input byte picks the protocol and the HEAD flag, the second a split
 * point, the rest is the stream.  Beyond "no crash" under ASan/UBSan: the
 * replies end at the same bytes (and the stream fails at the same byte)
 * whether it arrives whole, split at the chosen point, or one byte at a
 * time; no reply ends inside data the framing was told to skip.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "reply.bpf.h"

#define MAX_ENDS 4096

struct run {
	size_t ends[MAX_ENDS];
	int n;
	long err_at;		/* byte index of XPS_RB_ERR, -1: none */
};

static void feed(const uint8_t *b, size_t len, size_t seg, int proto,
		 int nobody, struct run *r)
{
	struct xps_reply st = { .proto = (__u8)proto };
	size_t i = 0, end;
	int res;

	r->n = 0;
	r->err_at = -1;
	while (i < len) {
		end = seg ? i + seg - (i % seg) : len;
		if (end > len)
			end = len;
		while (i < end) {
			if (st.skip) {
				size_t k = st.skip < end - i ? st.skip : end - i;

				st.skip -= k;
				i += k;
				if (st.skip)
					continue;
				res = xps_reply_skipped(&st);
			} else {
				res = xps_reply_byte(&st, b[i++], nobody);
			}
			if (res == XPS_RB_ERR) {
				r->err_at = (long)i;
				return;
			}
			if (res == XPS_RB_DONE && r->n < MAX_ENDS)
				r->ends[r->n++] = i;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run whole, split, bytes;
	int proto, nobody;
	size_t cut;

	if (size < 2)
		return 0;
	proto = 1 + data[0] % 5;	/* XPS_REPLY_RESP .. XPS_REPLY_LINE */
	nobody = (data[0] >> 4) & 1;
	cut = data[1] + 1;
	data += 2;
	size -= 2;
	feed(data, size, 0, proto, nobody, &whole);
	feed(data, size, cut, proto, nobody, &split);
	feed(data, size, 1, proto, nobody, &bytes);
	assert(whole.err_at == split.err_at && whole.err_at == bytes.err_at);
	assert(whole.n == split.n && whole.n == bytes.n);
	assert(!memcmp(whole.ends, split.ends, whole.n * sizeof(size_t)));
	assert(!memcmp(whole.ends, bytes.ends, whole.n * sizeof(size_t)));
	return 0;
}
