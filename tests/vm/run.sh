#!/usr/bin/env bash
# Run the kernel-hook tests (prog_tests/serve.c, the selftest of the kernel
# series) through the test_progs shim.  Inside the XPS VM:
#
#   scripts/vm-run.sh tests/vm/run.sh [-v] [SUBTEST...]
#
# Builds the test binary and BPF object first if needed (do that on the
# host: `make -C tests/vm`, the guest's compiler runs under emulation).
# Prints PASS/FAIL per subtest and "N passed, M failed"; exits non-zero on
# any failure.  Needs root and an XPS kernel.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"
out=${OUTPUT:-.output}
make -s OUTPUT="$out"
if ! grep -q . /sys/kernel/btf/vmlinux 2>/dev/null; then
	echo "FAIL setup: no /sys/kernel/btf/vmlinux"
	exit 1
fi
exec "$out/test_serve" "$@"
