#!/usr/bin/env bash
# Build the XPS kernel: Debian's linux-source-6.12 + kernel-patches/series,
# configured from `make allnoconfig` + kernel-patches/config.fragment.
#
#   scripts/build-kernel.sh [--debug|--ipv6-module] [--each] [--force] [-j N]
#
# Prints the directory of the cached bzImage on stdout (progress goes to
# stderr).  The cache key hashes the series, the patches, the fragments and
# this script, so an unchanged input returns at once.
#
#   --debug   add kernel-patches/config.debug.fragment (KASAN, lockdep,
#             kmemleak); cached separately
#   --ipv6-module  build with CONFIG_IPV6=m (and modules), to prove the
#             series links when the IPv6 stack is a module; cached separately
#   --each    apply the series one patch at a time, running
#             checkpatch.pl --strict and building after each, to prove every
#             patch builds alone
#   --force   rebuild even when the cache has this kernel
#   -j N      parallel jobs (default: number of CPUs)
#
# Environment:
#   XPS_CACHE           cache root (default $HOME/.cache/xps)
#   XPS_KERNEL_TARBALL  source tarball (default
#                       /usr/src/linux-source-6.12.tar.xz)
set -euo pipefail

repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
patches=$repo/kernel-patches
cache=${XPS_CACHE:-$HOME/.cache/xps}/kernel
tarball=${XPS_KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
debug=0 ipv6m=0 each=0 force=0 jobs=$(nproc)

while [ $# -gt 0 ]; do
	case "$1" in
	--debug) debug=1 ;;
	--ipv6-module) ipv6m=1 ;;
	--each) each=1 ;;
	--force) force=1 ;;
	-j) jobs=$2; shift ;;
	-j*) jobs=${1#-j} ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "build-kernel: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

say() { echo "build-kernel: $*" >&2; }
die() { say "$*"; exit 1; }

[ -f "$tarball" ] || die "no $tarball (scripts/deps.sh test installs linux-source-6.12)"
for t in make gcc flex bison bc pahole xz patch; do
	command -v $t >/dev/null || die "$t missing (scripts/deps.sh test)"
done

mapfile -t series < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$patches/series")
flavor=std
fragments=("$patches/config.fragment")
targets=(bzImage)
if [ $debug -eq 1 ] && [ $ipv6m -eq 1 ]; then
	die "--debug and --ipv6-module are separate flavours"
fi
if [ $debug -eq 1 ]; then
	flavor=debug
	fragments+=("$patches/config.debug.fragment")
fi
if [ $ipv6m -eq 1 ]; then
	flavor=ipv6m
	fragments+=("$patches/config.ipv6m.fragment")
	targets+=(modules)	# modpost finds what a module cannot link
fi

key=$({
	echo "$flavor $(basename "$tarball") $(stat -c %s "$tarball")"
	cat "$patches/series"
	for p in "${series[@]}"; do cat "$patches/$p"; done
	cat "${fragments[@]}" "$(readlink -f "$0")"
} | sha256sum | cut -c1-16)
out=$cache/$flavor-$key

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

if [ $force -eq 0 ] && [ $each -eq 0 ] && [ -f "$out/bzImage" ]; then
	echo "$out"
	exit 0
fi

# One source tree, patched in place.  What is applied is recorded, so that
# a changed series is first reverse-applied: patch(1) gives every file it
# touches a new mtime, and kbuild rebuilds exactly those.
src=$cache/src
applied=$src/.xps-applied
if [ ! -f "$src/.xps-pristine" ]; then
	say "unpacking $(basename "$tarball") (once)"
	rm -rf "$src" "$cache/src.tmp"
	mkdir -p "$cache/src.tmp"
	tar -C "$cache/src.tmp" --strip-components=1 -xf "$tarball"
	mv "$cache/src.tmp" "$src"
	touch "$src/.xps-pristine"
	mkdir -p "$applied"
	: >"$applied/series"
fi

# Reverse-apply the applied patches from the first one that differs from
# the wanted series (all of them with --each), so that kbuild rebuilds only
# what changed.
unapply_from() {
	local keep=$1 p i=0
	mapfile -t old <"$applied/series"
	for ((i = ${#old[@]} - 1; i >= keep; i--)); do
		p=${old[$i]}
		patch -d "$src" -p1 -R -s -f <"$applied/$p" >/dev/null ||
			return 1
		rm -f "$applied/$p"
	done
	printf '%s\n' "${old[@]:0:$keep}" | sed '/^$/d' >"$applied/series"
}

apply_one() {
	local p=$1
	patch -d "$src" -p1 -s -f --no-backup-if-mismatch <"$patches/$p" >&2 ||
		die "$p does not apply"
	cp "$patches/$p" "$applied/$p"
	echo "$p" >>"$applied/series"
}

keep=0
if [ $each -eq 0 ]; then
	mapfile -t old <"$applied/series"
	while [ $keep -lt ${#old[@]} ] && [ $keep -lt ${#series[@]} ] &&
	      [ "${old[$keep]}" = "${series[$keep]}" ] &&
	      cmp -s "$applied/${old[$keep]}" "$patches/${series[$keep]}"; do
		keep=$((keep + 1))
	done
fi
if ! unapply_from $keep; then
	say "source tree out of sync with its record, unpacking again"
	rm -f "$src/.xps-pristine"
	exec "$0" "$@"
fi

obj=$cache/obj-$flavor
mkdir -p "$obj"
frag=$obj/.xps-fragment
# a later fragment's value wins: drop the base fragment's line for it
cat "${fragments[@]}" | awk -F= '
	/^CONFIG_/ { last[$1] = NR }
	{ line[NR] = $0; key[NR] = $1 }
	END { for (i = 1; i <= NR; i++)
		if (key[i] !~ /^CONFIG_/ || last[key[i]] == i) print line[i] }' >"$frag"

configure() {
	make -C "$src" O="$obj" -s allnoconfig KCONFIG_ALLCONFIG="$frag" >&2
}

# One line of progress: the number of objects built and the latest one.
build_progress() {
	local what=$1 log=$obj/.xps-build.log
	configure
	local rc=0
	make -C "$src" O="$obj" -j"$jobs" "${targets[@]}" </dev/null 2>&1 |
		tee "$log" |
		awk -v what="$what" '/^  [A-Z]+/ { n++; printf "\rbuild-kernel: %s: %5d %-50.50s", what, n, $2 > "/dev/stderr"; fflush("/dev/stderr") }
			END { printf "\n" > "/dev/stderr" }' || true
	rc=${PIPESTATUS[0]}
	if [ "$rc" -ne 0 ]; then
		grep -E -B2 -A8 'error:|Error [0-9]' "$log" | head -60 >&2
		die "$what: build FAILED (log: $log)"
	fi
}

start=$SECONDS
if [ $each -eq 1 ]; then
	n=0
	for p in "${series[@]}"; do
		n=$((n + 1))
		say "[$n/${#series[@]}] $p"
		# from the kernel tree: inside a git work tree (this
		# repository) checkpatch.pl reads a .patch as a source file
		(cd "$src" && perl scripts/checkpatch.pl --no-tree -q --strict \
			"$patches/$p") >&2 ||
			die "$p: checkpatch.pl complains"
		apply_one "$p"
		build_progress "$n/${#series[@]}"
	done
else
	for p in "${series[@]:$keep}"; do
		apply_one "$p"
	done
	build_progress "$flavor"
fi

# Every fragment line must have survived Kconfig's dependency resolution.
missing=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=n) grep -q "^${line%=n}=" "$obj/.config" && { say "config: $line not honoured"; missing=1; } ;;
	CONFIG_*)
		grep -qxF "$line" "$obj/.config" && continue
		# with IPv6 a module, what depends on it may be one too
		[ $ipv6m -eq 1 ] && [ "${line##*=}" = y ] &&
			grep -qxF "${line%=y}=m" "$obj/.config" && continue
		say "config: $line not honoured"
		missing=1 ;;
	esac
done <"$frag"
[ $missing -eq 0 ] || die "config fragment not fully applied"

rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cp "$obj/arch/x86/boot/bzImage" "$obj/.config" "$obj/System.map" "$out.tmp/"
printf '%s\n' "${series[@]}" >"$out.tmp/series"
rm -rf "$out"
mv "$out.tmp" "$out"
say "built in $((SECONDS - start))s: $out"
echo "$out"
