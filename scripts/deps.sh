#!/usr/bin/env bash
# Install the Debian packages XPS needs. Idempotent: packages already present
# are not touched, and nothing is fetched when everything is installed.
#
#   scripts/deps.sh            everything (build, tests, VM, services, bench)
#   scripts/deps.sh build      only what `make` needs
#   scripts/deps.sh package    what `make deb` and `make deb-kernel` need
set -euo pipefail

build_pkgs=(make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev
	    pkg-config linux-libc-dev)
test_pkgs=(iproute2 procps psmisc netcat-openbsd python3 libclang-rt-14-dev redis-server
	   redis-tools memcached libmemcached-tools nginx-light nats-server curl wrk
	   socat jq python3-prometheus-client gdb)
kernel_pkgs=(linux-source-6.12 bc bison flex libssl-dev dwarves xz-utils
	     cpio kmod rsync patch perl qemu-system-x86)
bench_pkgs=(gnuplot-nox linux-perf)
package_pkgs=(dpkg-dev lintian debhelper)

case "${1:-all}" in
build)	want=("${build_pkgs[@]}") ;;
package) want=("${build_pkgs[@]}" "${package_pkgs[@]}") ;;
test)	want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${kernel_pkgs[@]}" "${package_pkgs[@]}") ;;
all)	want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${kernel_pkgs[@]}" "${package_pkgs[@]}"
	      "${bench_pkgs[@]}") ;;
*)	echo "usage: $0 [build|package|test|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing packages: ${missing[*]}" >&2
	echo "deps.sh: run as root (or: sudo $0 $*) to install them" >&2
	exit 1
fi

echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Debian starts redis, memcached, nginx and nats-server on their default
# ports when they are installed; XPS's tests and benchmarks start their
# own instances, so keep the package scripts from starting (and later
# competing with) them.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	created_policy=1
fi
trap '[ $created_policy -eq 1 ] && rm -f "$policy"' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps.sh: done"
