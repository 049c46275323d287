// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for one protocol parser, chosen at build time (the
 * Makefile builds fuzz_redis, fuzz_memcached and fuzz_http from this file:
 * FUZZ_HEADER, FUZZ_PARSE, FUZZ_REQ).  The first two input bytes choose the offset,
 * the rest is the payload.  Checks, beyond "no crash" under ASan/UBSan:
 * the result never depends on bytes past len, and a complete request lies
 * inside [off, len), and, with FUZZ_REF_*, the reference parser agrees.  Walks the whole segment like a handler.
 */
#include <stddef.h>
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include FUZZ_HEADER
#ifdef FUZZ_REF_HEADER
/* a reference parser the result must equal (http_ref.h: the HTTP parser
 * before its word scans) */
#include FUZZ_REF_HEADER
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static __u8 a[XPS_SCRATCH], b[XPS_SCRATCH];
	struct FUZZ_REQ ra, rb;
	__u32 len, off, n;

	if (size < 2)
		return 0;
	off = (data[0] | data[1] << 8) % 64;
	data += 2;
	size -= 2;
	len = off + (size > XPS_SCRATCH - off ? XPS_SCRATCH - off : size);
	memset(a, 0, sizeof(a));
	memset(b, 0xa5, sizeof(b));
	memcpy(a + off, data, len - off);
	memcpy(b + off, data, len - off);
	for (n = 0; n < XPS_MAX_REQS_PER_SEG && off < len; n++) {
		int k = FUZZ_PARSE(a, len, off, &ra);

		FUZZ_PARSE(b, len, off, &rb);
		assert(!memcmp(&ra, &rb, offsetof(struct FUZZ_REQ, ws)));
#ifdef FUZZ_REF_HEADER
		{
			struct FUZZ_REF_REQ rr;

			FUZZ_REF_PARSE(a, len, off, &rr);
			assert(!memcmp(&ra, &rr, offsetof(struct FUZZ_REQ, ws)));
		}
#endif
		if (k == XPS_REQ_INCOMPLETE || k == XPS_REQ_MALFORMED || !ra.req_len)
			break;
		assert(ra.req_len <= len - off);
		off += ra.req_len;
	}
	return 0;
}
