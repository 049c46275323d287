#!/usr/bin/env bash
# Build XPS's Debian packages from the tree.  `make deb` and `make
# deb-kernel` call it with XPS_VERSION and LIBXPS_SOVER from the Makefile.
#
#   scripts/build-deb.sh OUTDIR            xps-tools, libxps0, libxps-dev
#   scripts/build-deb.sh --kernel OUTDIR   linux-image-* and linux-headers-*
#                                          of scripts/build-kernel.sh's tree
#
# The user-space packages are cut from a clean build staged by `make
# install` (PREFIX=/usr, the systemd unit in /lib/systemd/system); every
# staged file must land in exactly one package.  Depends come from
# dpkg-shlibdeps; lintian's verdict is printed, and OUTDIR/lintian.txt
# keeps it.
#
# Environment:
#   DEBFULLNAME, DEBEMAIL  the Maintainer field (default: git's user.name
#                          and user.email, as dch does)
#   SOURCE_DATE_EPOCH      the changelog's date (default: the last commit's)
set -euo pipefail
umask 022

say() { echo "build-deb: $*" >&2; }
die() { say "$*"; exit 1; }

kernel=0
if [ "${1:-}" = --kernel ]; then
	kernel=1
	shift
fi
[ $# -eq 1 ] || die "usage: $0 [--kernel] OUTDIR"
: "${XPS_VERSION:?set by the Makefile}"
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
cd "$repo"
out=$1
mkdir -p "$out"
outabs=$(cd "$out" && pwd -P)
arch=$(dpkg --print-architecture)

# ---- the patched kernel ---------------------------------------------------
#
# The kernel's own bindeb-pkg, in the object tree scripts/build-kernel.sh
# keeps: linux-image-RELEASE (bzImage, config, System.map), its -dbg
# (vmlinux), and linux-headers-RELEASE when modules are configured.  The source tree is
# shared by every flavour, so it is checked to carry this series first.
if [ $kernel -eq 1 ]; then
	command -v dh_testdir >/dev/null ||
		die "bindeb-pkg needs debhelper (scripts/deps.sh package)"
	kcache=${XPS_CACHE:-$HOME/.cache/xps}/kernel
	# true when the shared source tree carries kernel-patches/series
	tree_matches() {
		local p
		cmp -s <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' kernel-patches/series) \
			"$kcache/src/.xps-applied/series" || return 1
		while read -r p; do
			cmp -s "kernel-patches/$p" "$kcache/src/.xps-applied/$p" || return 1
		done <"$kcache/src/.xps-applied/series"
	}
	built=$(scripts/build-kernel.sh)
	if ! tree_matches; then
		say "the kernel tree carries another series: building this one again"
		built=$(scripts/build-kernel.sh --force)
	fi
	obj=$kcache/obj-std
	# build-kernel.sh's lock: nobody patches the tree while it is packaged
	exec 9>"$kcache/.lock"
	flock 9
	tree_matches && cmp -s "$built/.config" "$obj/.config" ||
		die "the kernel tree changed after it was built: run again"
	kver=$(make -s -C "$kcache/src" O="$obj" kernelversion)
	pkgver=$kver-xps$XPS_VERSION
	say "bindeb-pkg of $kver (a few minutes when the tree is built)"
	# dpkg-buildpackage leaves its results beside the object tree
	make -C "$kcache/src" O="$obj" -j"$(nproc)" bindeb-pkg \
		KDEB_PKGVERSION="$pkgver" >"$outabs/kernel-build.log" 2>&1 ||
		{ tail -30 "$outabs/kernel-build.log" >&2; die "bindeb-pkg failed (log: $out/kernel-build.log)"; }
	mkdir -p "$outabs/kernel"
	rm -f "$outabs"/kernel/*
	# Only the kernel's packages: its linux-libc-dev would replace
	# Debian's, and its linux/bpf_serve.h is libxps-dev's; the .changes and
	# .buildinfo list that package too.
	found=0
	for f in "$kcache"/linux-*_"$pkgver"_*; do
		[ -e "$f" ] || continue
		case ${f##*/} in
		linux-image-*.deb|linux-headers-*.deb)
			mv "$f" "$outabs/kernel/"
			found=1 ;;
		*)	rm -f "$f" ;;
		esac
	done
	[ $found -eq 1 ] || die "bindeb-pkg made no package (log: $out/kernel-build.log)"
	ls "$outabs"/kernel/*.deb
	exit 0
fi

# ---- xps-tools, libxps0, libxps-dev ----------------------------------------

: "${LIBXPS_SOVER:?set by the Makefile}"
ver=$XPS_VERSION
build=$out/build		# relative when OUTDIR is: no build path in the objects
stage=$outabs/stage
pkgs=$outabs/pkgs
maint_name=${DEBFULLNAME:-$(git config user.name || true)}
maint_mail=${DEBEMAIL:-$(git config user.email || true)}
[ -n "$maint_name" ] && [ -n "$maint_mail" ] ||
	die "no maintainer: set DEBFULLNAME and DEBEMAIL (or git's user.name and user.email)"
maint="$maint_name <$maint_mail>"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

rm -rf "$build" "$stage" "$pkgs" "$outabs"/*.deb
say "building the tree with PREFIX=/usr in $build"
${MAKE:-make} -s OUTPUT="$build" PREFIX=/usr SYSTEMD_UNITDIR=/lib/systemd/system \
	DESTDIR="$stage" install >/dev/null

# move PKG PATH...: staged paths into PKG's tree
move() {
	local pkg=$1 p
	shift
	for p; do
		[ -e "$stage/$p" ] || [ -L "$stage/$p" ] || die "nothing staged at /$p"
		mkdir -p "$pkgs/$pkg/$(dirname "$p")"
		mv "$stage/$p" "$pkgs/$pkg/$p"
	done
}
move libxps0 "usr/lib/libxps.so.$LIBXPS_SOVER" "usr/lib/libxps.so.$ver"
move libxps-dev usr/lib/libxps.so usr/lib/libxps.a usr/lib/pkgconfig usr/include
move xps-tools usr/sbin usr/lib/xps usr/share/man usr/share/bash-completion lib/systemd
left=$(cd "$stage" && find . ! -type d)
[ -z "$left" ] || die "staged by make install but in no package: $left"
rm -rf "$stage"

# what dh_strip, dh_compress and dh_installdocs would do
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
	"$pkgs"/xps-tools/usr/sbin/* "$pkgs/libxps0/usr/lib/libxps.so.$ver"
strip --strip-debug --enable-deterministic-archives "$pkgs/libxps-dev/usr/lib/libxps.a"
chmod 644 "$pkgs/libxps0/usr/lib/libxps.so.$ver"
gzip -9n "$pkgs"/xps-tools/usr/share/man/man8/*.8
mkdir -p "$pkgs/xps-tools/usr/share/lintian/overrides"
cp contrib/debian/xps-tools.lintian-overrides "$pkgs/xps-tools/usr/share/lintian/overrides/xps-tools"
for pkg in xps-tools libxps0 libxps-dev; do
	doc=$pkgs/$pkg/usr/share/doc/$pkg
	mkdir -p "$doc"
	cp contrib/debian/copyright "$doc/"
	{
		echo "xps ($ver) unstable; urgency=medium"
		echo
		echo "  * Built from the tree at $(git describe --always --dirty 2>/dev/null || echo "version $ver")."
		echo
		echo " -- $maint  $(date -R -u -d "@$SOURCE_DATE_EPOCH")"
	} | gzip -9n >"$doc/changelog.gz"
done

# Depends of the ELF files of a package, from dpkg-shlibdeps, which wants
# a debian/control and finds a file's package by its DEBIAN directory
shlibs=$outabs/shlibs
mkdir -p "$shlibs/debian"
for pkg in xps-tools libxps0 libxps-dev; do
	mkdir -p "$pkgs/$pkg/DEBIAN"
done
{
	echo "Source: xps"
	printf '\nPackage: %s\nArchitecture: any\n' xps-tools libxps0 libxps-dev
} >"$shlibs/debian/control"
shlibdeps() {
	(cd "$shlibs" && dpkg-shlibdeps -O "$@") | sed -n 's/^shlibs:Depends=//p'
}
tools_deps=$(shlibdeps "$pkgs"/xps-tools/usr/sbin/*)
lib_deps=$(shlibdeps "$pkgs/libxps0/usr/lib/libxps.so.$ver")
[ -n "$tools_deps" ] && [ -n "$lib_deps" ] || die "dpkg-shlibdeps found no dependencies"

synopsis="XPS runs a network service's latency-critical operation (a cache GET,
 an HTTP method check) as a verified eBPF handler in the kernel's TCP and
 UDP receive path, with the service binary unmodified."

# control PKG SECTION DEPENDS DESCRIPTION [FIELD: VALUE...]
control() {
	local pkg=$1 section=$2 depends=$3 desc=$4 root=$pkgs/$1
	shift 4
	mkdir -p "$root/DEBIAN"
	{
		echo "Package: $pkg"
		echo "Source: xps"
		echo "Version: $ver"
		echo "Architecture: $arch"
		echo "Maintainer: $maint"
		echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
		echo "Depends: $depends"
		for f; do echo "$f"; done
		echo "Section: $section"
		echo "Priority: optional"
		echo "Description: $desc"
	} >"$root/DEBIAN/control"
	(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\n' | LC_ALL=C sort |
		xargs -d '\n' md5sum) >"$root/DEBIAN/md5sums"
}

control libxps0 libs "$lib_deps" "XPS extensible kernel protocol stack: shared library
 $synopsis
 .
 This package holds libxps, the library that loads handlers, manages
 their contexts, data maps and statistics under /sys/fs/bpf/xps."
echo "libxps $LIBXPS_SOVER libxps0 (>= $ver)" >"$pkgs/libxps0/DEBIAN/shlibs"
echo "activate-noawait ldconfig" >"$pkgs/libxps0/DEBIAN/triggers"

control libxps-dev libdevel "libxps0 (= $ver), libbpf-dev, linux-libc-dev" \
	"XPS extensible kernel protocol stack: development files
 $synopsis
 .
 This package holds the headers of libxps and of handler authors
 (xps/xps.bpf.h), the static library and libxps.pc for pkg-config."

control xps-tools net "$tools_deps" \
	"XPS extensible kernel protocol stack: xpsctl and service daemons
 $synopsis
 .
 This package holds xpsctl, the command-line tool; the cache filler
 daemons of its Redis, Memcached and Redis Cluster services; the handler
 objects; and the systemd unit xps-service@.service, which accelerates a
 server at boot (systemctl enable --now xps-service@redis-6379)." \
	"Suggests: redis-server, memcached, nginx-light | nginx"
install -m 755 contrib/debian/xps-tools.prerm "$pkgs/xps-tools/DEBIAN/prerm"

for pkg in xps-tools libxps0 libxps-dev; do
	dpkg-deb --root-owner-group -Zxz --build "$pkgs/$pkg" \
		"$outabs/${pkg}_${ver}_$arch.deb" >/dev/null
done
rm -rf "$shlibs"

if command -v lintian >/dev/null; then
	lintian --tag-display-limit 0 "$outabs"/*_"${ver}"_"$arch".deb \
		>"$outabs/lintian.txt" 2>&1 || true
	sed -i '/running with root privileges is not recommended/d' "$outabs/lintian.txt"
	if [ -s "$outabs/lintian.txt" ]; then
		say "lintian says ($out/lintian.txt):"
		sed 's/^/  /' "$outabs/lintian.txt" >&2
	else
		say "lintian: no complaint"
	fi
else
	say "lintian is not installed (scripts/deps.sh package): packages not checked"
fi
ls "$out"/*_"${ver}"_"$arch".deb
