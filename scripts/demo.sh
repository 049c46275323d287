#!/usr/bin/env bash
# make demo: Debian's redis-server accelerated by XPS, side by side with
# itself.
#
# 1. On this machine's kernel (stock backend), in the benchmarks'
#    two-namespace topology (scripts/demo.py): redis-server with 1,000
#    keys in its own network namespace behind veth, on its own core;
#    GETs alone and a 90/10 GET/SET mix, plain and with
#    `xpsctl service redis`: throughput, p99 and the server's CPU per
#    request, with ratios; what xpsctl shows.
# 2. On the patched kernel (native backend), in a 1-vCPU QEMU guest under
#    -icount: the server's instructions per GET, plain and accelerated
#    (scripts/bench.py's cost model, building the kernel first if it is
#    not cached).  Wall-clock figures of an emulated guest mean nothing,
#    so only instruction counts are shown there.
#
#   scripts/demo.sh            both
#   scripts/demo.sh --here     only part 1
# DEMO_PORT, DEMO_REQUESTS and DEMO_SECONDS tune part 1
# (scripts/demo.py --help).
set -euo pipefail
cd "$(dirname "$0")/.."
HERE=0
[ "${1:-}" = "--here" ] && HERE=1

if [ "$(id -u)" -ne 0 ]; then
	echo "make demo loads BPF programs: run it as root" >&2
	exit 1
fi
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
python3 scripts/demo.py

[ $HERE -eq 1 ] && exit 0
if [ ! -s kernel-patches/series ]; then
	echo "(no kernel patch series in this tree: the native part is skipped)"
	exit 0
fi
step "the patched kernel (native backend): instructions per GET, plain and with XPS"
echo "  (a 1-vCPU QEMU guest under -icount runs only redis-server; redis-benchmark runs"
echo "   here and reaches it through a tap device; builds the kernel if it is not cached)"
out=$(mktemp -d /tmp/xps-demo-icount.XXXXXX)
python3 scripts/bench.py --icount-only --quick --only redis --out "$out" >"$out/log" 2>&1 || {
	tail -20 "$out/log"
	echo "demo: the instruction-count run failed (log above)" >&2
	exit 1
}
grep -E 'instructions/req|NOT RUN|FAILED' "$out/log" || true
grep -E '^\| redis_get.*instructions_per_req' "$out/table.md" |
	awk -F'|' '{ for (i = 2; i <= 7; i++) gsub(/^ +| +$/, "", $i)
		printf "  %s, %s: plain %s, XPS %s instructions per GET (%s)\n", $2, $3, $5, $6, $7 }'
rm -rf "$out"
