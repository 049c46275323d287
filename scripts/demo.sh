#!/usr/bin/env bash
# make demo: a service accelerated by XPS, side by side with itself.
#
# A small cache service runs on a TCP port; the same load runs twice, first
# with the service answering everything, then with the kv handler answering
# from its data map in the kernel.  xpsctl shows what happened.  It runs on
# this machine's kernel (stock backend), then on the patched kernel in QEMU
# (native backend), building that kernel first if it is not cached.
#
#   scripts/demo.sh            both
#   scripts/demo.sh --here     only on this kernel (what the VM runs)
set -euo pipefail
cd "$(dirname "$0")/.."
X=.output/xpsctl
HERE=0
[ "${1:-}" = "--here" ] && HERE=1
PORT=${DEMO_PORT:-17900}
N=${DEMO_REQUESTS:-20000}

if [ "$(id -u)" -ne 0 ]; then
	echo "make demo loads BPF programs: run it as root" >&2
	exit 1
fi
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cleanup() {
	$X handler detach demo >/dev/null 2>&1 || true
	[ -n "${SRV:-}" ] && kill "$SRV" 2>/dev/null || true
	rm -f /tmp/xps-demo-served
}
trap cleanup EXIT

step "xpsctl status"
$X status

step "starting the service on port $PORT (it answers '<key>\\n' with a value)"
python3 scripts/demo_kv.py serve "$PORT" &
SRV=$!
sleep 0.5

step "baseline: $N requests, the service answers all of them"
python3 scripts/demo_kv.py load "$PORT" "$N" 100
sleep 0.6
base_served=$(cat /tmp/xps-demo-served)
echo "  the service answered $base_served requests"

step "xpsctl handler attach .output/bpf/kv.bpf.o --port $PORT --name demo"
$X handler attach .output/bpf/kv.bpf.o --port "$PORT" --name demo

step "filling the handler's data map with 50 of the 100 keys (xpsctl data put)"
for i in $(seq 0 49); do
	$X data put demo "k$i" "value-$i-$(printf 'x%.0s' $(seq 100))" >/dev/null
done
$X data get demo k7

step "with XPS: the same $N requests (new connections)"
python3 scripts/demo_kv.py load "$PORT" "$N" 100
sleep 0.6
xps_served=$(( $(cat /tmp/xps-demo-served) - base_served ))

step "xpsctl stats show demo"
$X stats show demo
step "xpsctl stats keys demo --top 3"
$X stats keys demo --top 3
tx=$($X -j stats show demo | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["tx"])')
echo
echo "  the service answered $xps_served of $N requests; the kernel answered $tx"
echo "  ($xps_served + $tx = $((xps_served + tx)): every request answered once)"

step "xpsctl handler detach demo"
$X handler detach demo
$X status

if [ $HERE -eq 0 ]; then
	cleanup
	trap - EXIT
	if [ ! -s kernel-patches/series ]; then
		echo "(no kernel patch series in this tree: the native demo is skipped)"
		exit 0
	fi
	step "the same on the patched kernel (native backend), in QEMU"
	echo "  building or reusing the kernel (scripts/build-kernel.sh)..."
	scripts/build-kernel.sh >/dev/null
	echo "  booting it (software emulation: slow, and its numbers are not comparable)"
	DEMO_REQUESTS=${DEMO_VM_REQUESTS:-4000} scripts/vm-run.sh --timeout 900 --env DEMO_REQUESTS -- scripts/demo.sh --here
fi
