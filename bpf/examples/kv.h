/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Data map layout of the kv example handler, shared with its tests. */
#ifndef __XPS_KV_H
#define __XPS_KV_H

#include <linux/types.h>

#define KV_KEY_MAX	32
#define KV_VALUE_MAX	256

struct kv_key {
	char k[KV_KEY_MAX];
};

struct kv_value {
	__u32 len;
	char v[KV_VALUE_MAX];
};

_Static_assert(sizeof(struct kv_key) == 32, "kv_key layout");
_Static_assert(sizeof(struct kv_value) == 260, "kv_value layout");

#endif
