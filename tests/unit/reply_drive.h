/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Drive the reply framing (reply.bpf.h) as the framework's egress program
 * does, over a stream cut into segments: bytes are fed one at a time but
 * for the data the framing skips unread, which is passed over within the
 * segment.  Shared by the unit test and the fuzzer.
 */
#ifndef __XPS_TEST_REPLY_DRIVE_H
#define __XPS_TEST_REPLY_DRIVE_H

#include <stddef.h>
#include "reply.bpf.h"

/*
 * Feed @len bytes of @b in segments of @seg bytes (0: all at once); record
 * where each reply ended in @ends (up to @max_ends of them).  Returns the
 * number of replies, or -1 when the framing gave up (*@err_at: the byte).
 * With @scan, bytes the framing only waits past (xps_reply_scan()) are
 * passed over up to the byte that ends the wait, within the segment, as
 * egress does; without, every byte is fed.
 */
static __attribute__((unused)) int
reply_feed_how(const unsigned char *b, size_t len, size_t seg, int proto,
	       int nobody, size_t *ends, int max_ends, size_t *err_at,
	       int scan)
{
	struct xps_reply r = { .proto = (__u8)proto };
	size_t i = 0, end;
	int n = 0, res;

	while (i < len) {
		end = seg ? i + seg - (i % seg) : len;
		if (end > len)
			end = len;
		while (i < end) {
			if (r.skip) {
				size_t k = r.skip < end - i ? r.skip : end - i;

				r.skip -= k;
				i += k;
				if (r.skip)
					continue;
				res = xps_reply_skipped(&r);
			} else {
				int sc = scan ? xps_reply_scan(&r) : 0;
				size_t k = i;

				while (sc && k < end && !xps_reply_scan_end(sc, b[k]))
					k++;
				if (k > i) {
					xps_reply_pass(&r, (__u32)(k - i));
					i = k;
					continue;
				}
				res = xps_reply_byte(&r, b[i++], nobody);
			}
			if (res == XPS_RB_ERR) {
				if (err_at)
					*err_at = i;
				return -1;
			}
			if (res == XPS_RB_DONE) {
				if (n < max_ends)
					ends[n] = i;
				n++;
			}
		}
	}
	return n;
}

/* As egress drives it: passing over what the framing only waits past. */
static __attribute__((unused)) int
reply_feed(const unsigned char *b, size_t len, size_t seg, int proto,
	   int nobody, size_t *ends, int max_ends, size_t *err_at)
{
	return reply_feed_how(b, len, seg, proto, nobody, ends, max_ends,
			      err_at, 1);
}

#endif /* __XPS_TEST_REPLY_DRIVE_H */
