#!/usr/bin/env bash
# Check that include/uapi/linux/bpf_serve.h, the copy of the uapi header
# that libxps, the handlers and xpsctl build against, says what the kernel
# series says:
#
#   - with its fallback block taken out (the comment "Not in the kernel's
#     copy of this header" down to the #endif of UDP_SERVE), it is the
#     kernel's include/uapi/linux/bpf_serve.h byte for byte, and the kernel's
#     tools/include/uapi/linux/bpf_serve.h is the same file;
#   - the fallback enum serve_verdict and SERVE_VERDICT_MAX are the ones the
#     series leaves in include/uapi/linux/bpf.h, and the fallback TCP_SERVE and
#     UDP_SERVE have the numbers of linux/tcp.h and linux/udp.h there.
#
# The kernel's files are rebuilt from kernel-patches/ alone (git apply
# --include into an empty directory), so no kernel tree is needed.
#
#   scripts/check-uapi.sh      exit 0 when they agree; 1, with a diff, if not
set -euo pipefail

repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
patches=$repo/kernel-patches
ours=$repo/include/uapi/linux/bpf_serve.h

command -v git >/dev/null || { echo "check-uapi: git missing" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mapfile -t series < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$patches/series")
git -C "$tmp" init -q
for p in "${series[@]}"; do
	git -C "$tmp" apply --include=include/uapi/linux/bpf_serve.h \
		--include=tools/include/uapi/linux/bpf_serve.h "$patches/$p" ||
		{ echo "check-uapi: $p does not apply to the header alone" >&2; exit 2; }
done

fail=0
bad() { echo "check-uapi: $*" >&2; fail=1; }

kernel=$tmp/include/uapi/linux/bpf_serve.h
[ -f "$kernel" ] || { echo "check-uapi: the series creates no include/uapi/linux/bpf_serve.h" >&2; exit 2; }
if ! cmp -s "$kernel" "$tmp/tools/include/uapi/linux/bpf_serve.h"; then
	bad "the series' tools/include/uapi/linux/bpf_serve.h is not its include/uapi/linux/bpf_serve.h"
	diff -u "$kernel" "$tmp/tools/include/uapi/linux/bpf_serve.h" >&2 || true
fi

# Split ours into the fallback block and the rest.
: >"$tmp/block"
: >"$tmp/rest"
awk -v block="$tmp/block" -v rest="$tmp/rest" '
	state == 0 && /^\/\*$/ { held = $0; state = 1; next }
	state == 1 {
		if ($0 ~ /Not in the kernel.s copy of this header/) {
			print held > block; print > block; state = 2; next
		}
		print held > rest; held = ""; state = 0
	}
	state == 2 {
		print > block
		if ($0 ~ /^#define UDP_SERVE /) state = 3
		next
	}
	state == 3 { print > block; state = 4; skip_blank = 1; next }
	skip_blank && /^$/ { skip_blank = 0; next }
	{ skip_blank = 0; print > rest }
' "$ours"
[ -s "$tmp/block" ] || bad "include/uapi/linux/bpf_serve.h has no fallback block (\"Not in the kernel's copy of this header\")"
if ! cmp -s "$kernel" "$tmp/rest"; then
	bad "include/uapi/linux/bpf_serve.h, fallbacks aside, is not the series' include/uapi/linux/bpf_serve.h"
	diff -u --label kernel-patches --label include/uapi/linux/bpf_serve.h \
		"$kernel" "$tmp/rest" >&2 || true
fi

# The verdicts: the enum and SERVE_VERDICT_MAX the series adds to linux/bpf.h.
awk '
	/^\+\+\+ b\// { inbpf = ($2 == "b/include/uapi/linux/bpf.h") }
	inbpf && /^\+enum serve_verdict \{/ { on = 1 }
	inbpf && on { sub(/^\+/, ""); print }
	inbpf && on && /SERVE_VERDICT_MAX \(/ { on = 0 }
' "$patches"/*.patch >"$tmp/bpf-enum"
# The enum as the later patches leave it: their hunks of linux/bpf.h,
# applied to it, must lie within it (or this script be taught more).
for p in "${series[@]:1}"; do
	awk '/^diff --git / { on = ($3 == "a/include/uapi/linux/bpf.h") }
	     /^-- $/ { on = 0 }
	     on' "$patches/$p" >"$tmp/bpf-diff"
	[ -s "$tmp/bpf-diff" ] || continue
	patch -s -F0 -r - --no-backup-if-mismatch "$tmp/bpf-enum" \
		<"$tmp/bpf-diff" >/dev/null 2>&1 ||
		bad "$p changes linux/bpf.h outside enum serve_verdict (teach check-uapi.sh)"
done
sed -n '/^enum serve_verdict {/,/^#define SERVE_VERDICT_MAX (/p' "$tmp/block" |
	sed '/^$/d' >"$tmp/our-enum"
sed -i '/^$/d' "$tmp/bpf-enum"
[ -s "$tmp/bpf-enum" ] || bad "no enum serve_verdict added to include/uapi/linux/bpf.h in the series"
if ! cmp -s "$tmp/bpf-enum" "$tmp/our-enum"; then
	bad "the fallback enum serve_verdict is not the one in the series' linux/bpf.h"
	diff -u --label linux/bpf.h --label linux/bpf_serve.h \
		"$tmp/bpf-enum" "$tmp/our-enum" >&2 || true
fi

# The socket options' numbers.
for opt in TCP_SERVE:tcp UDP_SERVE:udp; do
	name=${opt%%:*} hdr=include/uapi/linux/${opt##*:}.h
	theirs=$(awk -v h="b/$hdr" -v n="$name" '
		/^\+\+\+ b\// { on = ($2 == h) }
		on && $1 == "+#define" && $2 == n { print $3; exit }' \
		"$patches"/*.patch)
	mine=$(awk -v n="$name" '$1 == "#define" && $2 == n { print $3; exit }' "$tmp/block")
	if [ -z "$theirs" ]; then
		bad "the series defines no $name in $hdr"
	elif [ "$theirs" != "$mine" ]; then
		bad "$name is ${mine:-missing} in include/uapi/linux/bpf_serve.h, $theirs in the series' $hdr"
	fi
done

[ $fail -eq 0 ] && echo "check-uapi: include/uapi/linux/bpf_serve.h agrees with the kernel series"
exit $fail
