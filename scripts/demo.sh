#!/usr/bin/env bash
# make demo: Debian's redis-server accelerated by XPS, side by side with
# itself.
#
# 1. On this machine's kernel (stock backend): a redis-server with 1,000
#    keys, redis-benchmark GETs against it plain, then with
#    `xpsctl service redis` answering GETs from the kernel; what xpsctl
#    shows; how many GETs Redis itself answered.
# 2. On the patched kernel (native backend), in a 1-vCPU QEMU guest under
#    -icount: the server's instructions per GET, plain and accelerated
#    (scripts/bench.py's cost model, building the kernel first if it is
#    not cached).  Wall-clock figures of an emulated guest mean nothing,
#    so only instruction counts are shown there.
#
#   scripts/demo.sh            both
#   scripts/demo.sh --here     only part 1
set -euo pipefail
cd "$(dirname "$0")/.."
X=.output/xpsctl
HERE=0
[ "${1:-}" = "--here" ] && HERE=1
PORT=${DEMO_PORT:-17900}
N=${DEMO_REQUESTS:-100000}

if [ "$(id -u)" -ne 0 ]; then
	echo "make demo loads BPF programs: run it as root" >&2
	exit 1
fi
if ss -Htln "sport = :$PORT" | grep -q .; then
	echo "demo: port $PORT is taken (set DEMO_PORT to another one)" >&2
	exit 1
fi
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
DIR=$(mktemp -d /tmp/xps-demo.XXXXXX)
cleanup() {
	$X service stop demo >/dev/null 2>&1 || true
	[ -n "${SRV:-}" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null || true
	rm -rf "$DIR"
}
trap cleanup EXIT
rc() { redis-cli -p "$PORT" "$@"; }
gets() { rc INFO commandstats | sed -n 's/^cmdstat_get:calls=\([0-9]*\).*/\1/p' | tr -d '\r'; }
bench() {
	redis-benchmark -p "$PORT" -t get -n "$1" -c 50 -d 128 -r 1000 -q --csv |
		awk -F'"' 'NR > 1 { printf "  %s requests/s, p50 %s ms, p99 %s ms\n", $4, $8, $12 }'
}

step "xpsctl status"
$X status

step "redis-server on port $PORT, 1,000 keys of 128 bytes"
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--dir "$DIR" --loglevel warning >"$DIR/redis.log" 2>&1 &
SRV=$!
for _ in $(seq 50); do rc PING >/dev/null 2>&1 && break; sleep 0.1; done
for i in $(seq 0 999); do
	printf '*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$128\r\n%0128d\r\n' "$i" "$i"
done | rc --pipe | tail -1

step "plain Redis: redis-benchmark -t get -n $N -c 50 -d 128 -r 1000"
g0=$(gets)
bench "$N"
echo "  Redis answered $(( $(gets) - g0 )) GETs"

step "xpsctl service redis --port $PORT --name demo"
$X service redis --port "$PORT" --name demo
echo "  warming the cache (the filler learns values from Redis's replies to the GETs the kernel missed)..."
bench 5000 >/dev/null
bench 5000 >/dev/null
$X service list

step "with XPS: the same benchmark"
g0=$(gets)
t0=$($X -j stats show demo | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["tx"])')
bench "$N"
g1=$(gets)
t1=$($X -j stats show demo | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["tx"])')
echo "  Redis answered $((g1 - g0)) GETs; the kernel answered $((t1 - t0)) (one GET each)"

step "xpsctl stats show demo"
$X stats show demo
step "xpsctl stats keys demo --top 3"
$X stats keys demo --top 3

step "xpsctl service stop demo"
$X service stop demo
$X status

[ $HERE -eq 1 ] && exit 0
cleanup
trap - EXIT
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
