#!/usr/bin/env bash
# Prove the verifier of THIS kernel accepts every parser: build each
# vt_*.bpf.c with every clang found (clang, clang-19), load it with vt_load
# (libbpf) as an sk_skb program and print the instructions the verifier
# processed.  Exit status is non-zero if any load fails.
#
#   tests/verifier/check.sh            all programs, all compilers
#   VT_CLANGS="clang-19" check.sh      a chosen compiler list
#   VT_NREQ=1 check.sh                 one request per segment
#
# Before loading, maskcheck.py refuses objects with "reg &= K" / "reg |= K"
# on a register that may hold a 0/-1 mask: Linux 6.18.y oopses in
# maybe_fork_scalars() on them.  After the loads, dmesg must show no new
# Oops.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${VT_OUT:-$here/.output}
arch_inc=/usr/include/$(gcc -dumpmachine)
nreq=${VT_NREQ:-32}

if [ -z "${VT_CLANGS:-}" ]; then
	VT_CLANGS=""
	for c in clang clang-19; do
		command -v "$c" >/dev/null 2>&1 && VT_CLANGS="$VT_CLANGS $c"
	done
fi
command -v python3 >/dev/null || { echo "check.sh: python3 missing" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "check.sh: needs root to load programs" >&2; exit 1; }
mkdir -p "$out"
gcc -O1 -Wall -o "$out/vt_load" "$here/vt_load.c" -lbpf ||
	{ echo "check.sh: cannot build vt_load (libbpf-dev?)" >&2; exit 1; }
oops0=$(dmesg 2>/dev/null | grep -c Oops)

fail=0 n=0
for cc in $VT_CLANGS; do
	ver=$($cc -dumpversion)
	for src in "$here"/vt_*.bpf.c; do
		name=$(basename "$src" .bpf.c)
		obj="$out/$name.$cc.o"
		n=$((n + 1))
		if ! $cc -O2 -g -target bpf -mcpu=v3 -Wall -Werror \
			-DVT_NREQ="$nreq" -I"$arch_inc" -I"$root/bpf/proto" \
			-I"$here" -c "$src" -o "$obj" 2>"$out/$name.$cc.cc.log"; then
			echo "FAIL $name clang-$ver: compile error"
			sed 's/^/    /' "$out/$name.$cc.cc.log" | head -20
			fail=1
			continue
		fi
		if ! python3 "$here/maskcheck.py" "$obj" >"$out/$name.$cc.mask.log"; then
			echo "FAIL $name clang-$ver: 0/-1 mask ANDed/ORed with a constant, not loaded"
			grep -v '^maskcheck' "$out/$name.$cc.mask.log" | head -5 | sed 's/^/    /'
			fail=1
			continue
		fi
		if ! "$out/vt_load" "$obj" >"$out/$name.$cc.load.log" 2>&1; then
			echo "FAIL $name clang-$ver: verifier rejected it (log: $out/$name.$cc.load.log)"
			grep -v '^libbpf: \(loaded kernel BTF\|elf:\|sec\|map\|prog\|CO-RE\|Kernel\)' \
				"$out/$name.$cc.load.log" | tail -15 | sed 's/^/    /'
			fail=1
			continue
		fi
		insns=$(sed -n 's/^processed \([0-9]*\) insns.*/\1/p' "$out/$name.$cc.load.log")
		echo "PASS $name clang-$ver: processed ${insns:-?} insns (requests/segment: $nreq)"
	done
done
# Handlers that need no parser test of their own but the framework's maps
# (loaded by their integration suites): built and mask-checked here.
for cc in $VT_CLANGS; do
	ver=$($cc -dumpversion)
	for src in services/redis-cluster/redis_cluster.bpf.c; do
		name=$(basename "$src" .bpf.c)
		obj="$out/$name.$cc.o"
		if ! $cc -O2 -g -target bpf -mcpu=v3 -Wall -Werror \
			-D__TARGET_ARCH_$(uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/') \
			-I"$arch_inc" -I"$root/include" -I"$root/include/uapi" \
			-I"$root/bpf/api" -I"$root/bpf" \
			-c "$root/$src" -o "$obj" \
			2>"$out/$name.$cc.cc.log"; then
			echo "FAIL $name clang-$ver: compile error"
			sed 's/^/    /' "$out/$name.$cc.cc.log" | head -20
			fail=1
		elif ! python3 "$here/maskcheck.py" "$obj" >"$out/$name.$cc.mask.log"; then
			echo "FAIL $name clang-$ver: 0/-1 mask ANDed/ORed with a constant"
			fail=1
		else
			echo "PASS $name clang-$ver: built, no 0/-1 masks (loaded by its integration suite)"
		fi
	done
done
[ $n -gt 0 ] || { echo "check.sh: no clang found" >&2; exit 1; }
oops1=$(dmesg 2>/dev/null | grep -c Oops)
if [ "$oops1" != "$oops0" ]; then
	echo "FAIL kernel oopsed while verifying (dmesg Oops count $oops0 -> $oops1)"
	fail=1
fi
exit $fail
