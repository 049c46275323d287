// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Checking an options struct the caller built with another libxps.h. */
#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

bool libxps_opts_valid(const void *opts, size_t known, const char *type)
{
	const unsigned char *bytes = opts;
	size_t sz, i;

	if (!opts)
		return true;
	sz = *(const size_t *)opts;
	if (sz < sizeof(size_t)) {
		pr_warn("struct %s: sz is %zu, expected sizeof(struct %s) (use DECLARE_XPS_OPTS())\n",
			type, sz, type);
		return false;
	}
	for (i = known; i < sz; i++) {
		if (bytes[i]) {
			pr_warn("struct %s: the caller sets a field at byte %zu, past the %zu bytes this libxps knows: it is newer than this library\n",
				type, i, known);
			return false;
		}
	}
	return true;
}
