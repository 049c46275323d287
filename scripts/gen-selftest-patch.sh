#!/usr/bin/env bash
# Generate the selftest patch of the kernel series (the last one,
# kernel-patches/NNNN-selftests-bpf-Add-serve-tests.patch), from its sources.
# tests/vm/ is the master copy of the test, laid out as in the kernel's
# tools/testing/selftests/bpf, where it is part of test_progs
# (`./test_progs -t serve`):
#
#   tests/vm/prog_tests/serve.c  -> tools/testing/selftests/bpf/prog_tests/serve.c
#   tests/vm/progs/serve_test.c  -> tools/testing/selftests/bpf/progs/serve_test.c
#   tests/vm/serve_test.h        -> tools/testing/selftests/bpf/serve_test.h
#
# (the tools copy of the uapi header, tools/include/uapi/linux/bpf_serve.h,
# which the selftests build includes, comes with the uapi header itself in
# patches 0001 and 0002).  kernel-patches/selftests/ holds what only the
# kernel tree has: the commit message and the MAINTAINERS hunk.
#
#   scripts/gen-selftest-patch.sh           rewrite the patch
#   scripts/gen-selftest-patch.sh --check   exit 1, with a diff, when the
#                                           patch is not what it generates
#   scripts/gen-selftest-patch.sh --stdout  print the patch
#
# The diff is `git format-patch` output of a scratch repository holding the
# new files, so the diffstat, the blob ids and the hunks are git's; the
# MAINTAINERS hunk is against the kernel's MAINTAINERS and is kept as it is.
# A changed patch changes the kernel build's cache key: run
# `scripts/build-kernel.sh --each` after rewriting it.
set -euo pipefail

repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
src=$repo/kernel-patches/selftests
# the series' last patch; its number moves when patches are added
patch=$(ls "$repo"/kernel-patches/[0-9][0-9][0-9][0-9]-selftests-bpf-Add-serve-tests.patch 2>/dev/null | tail -1)
[ -n "$patch" ] || { echo "gen-selftest-patch: no kernel-patches/NNNN-selftests-bpf-Add-serve-tests.patch" >&2; exit 1; }
selftests=tools/testing/selftests/bpf
# master copy in this repository -> path in the kernel tree
files=(
	"tests/vm/prog_tests/serve.c:$selftests/prog_tests/serve.c"
	"tests/vm/progs/serve_test.c:$selftests/progs/serve_test.c"
	"tests/vm/serve_test.h:$selftests/serve_test.h"
)
# the trailer format-patch wrote when the series was made; fixed, so that
# the output does not depend on the git version that runs this
signature=2.39.5

mode=rewrite
case "${1:-}" in
'') ;;
--check) mode=check ;;
--stdout) mode=stdout ;;
-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
*) echo "gen-selftest-patch: unknown option $1 (--check, --stdout)" >&2; exit 2 ;;
esac

command -v git >/dev/null || { echo "gen-selftest-patch: git missing" >&2; exit 1; }
for f in "$src/message" "$src/MAINTAINERS.diff" "${files[@]%%:*}"; do
	case $f in /*) ;; *) f=$repo/$f ;; esac
	[ -f "$f" ] || { echo "gen-selftest-patch: $f missing" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# no configuration of this machine's user may change git's output
g() {
	GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=$tmp \
	GIT_AUTHOR_NAME=XPS GIT_AUTHOR_EMAIL=xps@users.noreply.example \
	GIT_COMMITTER_NAME=XPS GIT_COMMITTER_EMAIL=xps@users.noreply.example \
	GIT_AUTHOR_DATE=2026-11-21T20:11:10Z GIT_COMMITTER_DATE=2026-11-21T20:11:10Z \
		git -C "$tmp/r" -c core.abbrev=9 -c core.autocrlf=false "$@"
}

mkdir "$tmp/r"
g init -q
# the lines the MAINTAINERS hunk adds, for the diffstat; the hunk itself
# is replaced below
echo base >"$tmp/r/MAINTAINERS"
g add MAINTAINERS
g commit -q -m base
sed -n 's/^+\([^+]\)/\1/p' "$src/MAINTAINERS.diff" >>"$tmp/r/MAINTAINERS"
for f in "${files[@]}"; do
	mkdir -p "$(dirname "$tmp/r/${f#*:}")"
	cp "$repo/${f%%:*}" "$tmp/r/${f#*:}"
done
g add -A
g commit -q -m selftests
g format-patch -q --stdout --no-signature -1 >"$tmp/fp"

{
	cat "$src/message"
	# from the "---" before the diffstat to the end, MAINTAINERS' own hunk
	# in place of the scratch one
	awk -v hunk="$src/MAINTAINERS.diff" '
		/^---$/ && !started { started = 1 }
		!started { next }
		/^diff --git / {
			skip = ($0 == "diff --git a/MAINTAINERS b/MAINTAINERS")
			if (skip)
				while ((getline line < hunk) > 0)
					print line
		}
		!skip { print }' "$tmp/fp"
	printf -- '-- \n%s\n\n' "$signature"
} >"$tmp/patch"

grep -q '^diff --git a/MAINTAINERS b/MAINTAINERS$' "$tmp/fp" ||
	{ echo "gen-selftest-patch: no MAINTAINERS hunk in git's output" >&2; exit 1; }

case $mode in
stdout)
	cat "$tmp/patch" ;;
check)
	if ! cmp -s "$tmp/patch" "$patch"; then
		echo "gen-selftest-patch: ${patch#"$repo"/} is not generated from tests/vm," \
		     "include/uapi and kernel-patches/selftests:" >&2
		diff -u "$patch" "$tmp/patch" | head -60 >&2 || true
		echo "gen-selftest-patch: run scripts/gen-selftest-patch.sh to rewrite it" >&2
		exit 1
	fi
	echo "${patch#"$repo"/}: as generated from tests/vm" ;;
rewrite)
	if cmp -s "$tmp/patch" "$patch"; then
		echo "${patch#"$repo"/}: unchanged"
	else
		cp "$tmp/patch" "$patch"
		echo "${patch#"$repo"/}: rewritten; the kernel cache key changed" \
		     "(scripts/build-kernel.sh --each)"
	fi ;;
esac
