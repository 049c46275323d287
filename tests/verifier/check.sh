#!/usr/bin/env bash
# Prove the verifier of THIS kernel accepts every parser: build each
# vt_*.bpf.c with every clang found (clang, clang-19), load it with bpftool
# as an sk_skb program, print the instructions the verifier processed, and
# remove the pin again.  Exit status is non-zero if any load fails.
#
#   tests/verifier/check.sh            all programs, all compilers
#   VT_CLANGS="clang-19" check.sh      a chosen compiler list
#   VT_NREQ=1 check.sh                 one request per segment
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
command -v bpftool >/dev/null || { echo "check.sh: bpftool missing" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "check.sh: needs root to load programs" >&2; exit 1; }
# bpffs is not mounted at boot on these machines.
if ! grep -q ' /sys/fs/bpf bpf ' /proc/mounts; then
	mount -t bpf bpf /sys/fs/bpf || { echo "check.sh: cannot mount bpffs" >&2; exit 1; }
fi
mkdir -p "$out"

fail=0 n=0
for cc in $VT_CLANGS; do
	ver=$($cc -dumpversion)
	for src in "$here"/vt_*.bpf.c; do
		name=$(basename "$src" .bpf.c)
		obj="$out/$name.$cc.o"
		n=$((n + 1))
		pin=/sys/fs/bpf/xps_vtest_$$_$n
		if ! $cc -O2 -g -target bpf -mcpu=v3 -Wall -Werror \
			-DVT_NREQ="$nreq" -I"$arch_inc" -I"$root/bpf/proto" \
			-I"$here" -c "$src" -o "$obj" 2>"$out/$name.$cc.cc.log"; then
			echo "FAIL $name clang-$ver: compile error"
			sed 's/^/    /' "$out/$name.$cc.cc.log" | head -20
			fail=1
			continue
		fi
		if ! bpftool prog load "$obj" "$pin" type sk_skb \
			>"$out/$name.$cc.load.log" 2>&1; then
			echo "FAIL $name clang-$ver: verifier rejected it (log: $out/$name.$cc.load.log)"
			grep -v '^libbpf: \(loaded kernel BTF\|elf:\|sec\|map\|prog\|CO-RE\|Kernel\)' \
				"$out/$name.$cc.load.log" | tail -15 | sed 's/^/    /'
			rm -f "$pin"
			fail=1
			continue
		fi
		insns=$(bpftool -j prog show pinned "$pin" 2>/dev/null |
			sed -n 's/.*"verified_insns":\([0-9]*\).*/\1/p')
		rm -f "$pin"
		echo "PASS $name clang-$ver: verified_insns=${insns:-?} (requests/segment: $nreq)"
	done
done
[ $n -gt 0 ] || { echo "check.sh: no clang found" >&2; exit 1; }
exit $fail
