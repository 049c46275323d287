/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* HTTP method filter: layouts shared by the handler, xpsctl and tests. */
#ifndef __XPS_HTTP_FILTER_H
#define __XPS_HTTP_FILTER_H

#include <linux/types.h>

#define HTTP_METHOD_LEN	16
#define HTTP_SERVER_MAX	64

/* Data map: method (upper case, zero padded) -> what to answer. */
struct http_method_key {
	char m[HTTP_METHOD_LEN];
};

struct http_action {
	__u32 status;		/* 405 (or 403, 404, 429): answer; 444: reset */
};

/* State map: what the answers must carry to match nginx's own. */
struct http_state {
	__u32 server_len;
	__u8 server[HTTP_SERVER_MAX];	/* Server header, e.g. nginx/1.22.1 */
	__s64 tai_minus_utc_ns;		/* CLOCK_TAI - CLOCK_REALTIME */
};

_Static_assert(sizeof(struct http_method_key) == 16, "http_method_key layout");
_Static_assert(sizeof(struct http_action) == 4, "http_action layout");
_Static_assert(sizeof(struct http_state) == 80, "http_state layout");

#endif
