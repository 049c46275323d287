/* SPDX-License-Identifier: GPL-2.0 */
/* Outside the kernel tree, prog_tests/serve.c's <test_progs.h> is the shim. */
#include "../test_progs_shim.h"
