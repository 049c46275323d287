#!/usr/bin/env bash
# Run a command inside a QEMU guest booted on the XPS kernel.
#
#   scripts/vm-run.sh [options] [--] CMD [ARGS...]
#
# The guest's root is this machine's root, shared read-only over virtio-9p
# and made writable by an overlay on tmpfs (nothing the guest writes reaches
# the host, except through --rw directories).  CMD runs as root through
# `bash -c` in the caller's working directory, with bpffs on /sys/fs/bpf,
# cgroup2 on /sys/fs/cgroup and loopback up.  The exit status is CMD's.
# The run fails loudly (status 99 when CMD itself succeeded) when the
# guest's kernel log shows a WARNING/BUG/KASAN/lockdep/kmemleak splat, and
# with status 124 when --timeout expires.
#
# Options:
#   --kernel PATH   bzImage, or a directory holding one (default: the
#                   cached build of scripts/build-kernel.sh, built if needed)
#   --debug         use the debug kernel (build-kernel.sh --debug)
#   --timeout SEC   kill the guest after SEC seconds (default 900)
#   --mem MB        guest memory (default 2048)
#   --cpus N        guest CPUs (default 2)
#   --rw DIR        share host DIR read-write at the same path (repeatable)
#   --env NAME      pass host variable NAME into the guest (repeatable;
#                   XPS_*, CI, V and TERM are always passed)
#   --log FILE      also write the guest console to FILE
#   --icount        count instructions: `-icount shift=0,sleep=on`, so the
#                   guest's clock advances 1 ns per instruction it executes
#                   (the benchmark's cost model; use with --cpus 1)
#   --net NS        a virtio-net NIC on a tap device created in the host's
#                   network namespace NS (QEMU runs inside NS); the guest
#                   sees it as eth0, unconfigured
#   --kvm           use KVM (off by default: /dev/kvm exists on these
#                   machines but nested KVM hangs or aborts; TCG is used)
#
# Internal: the guest's init is this very script, started as
# `vm-run.sh --guest-init` (stage 1, on the 9p root) and
# `vm-run.sh --guest-stage2` (after switching to the overlay root).
set -euo pipefail

GUEST_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CTL=/run/xps-ctl		# control share inside the guest

# Kernel messages that fail a run.  Kept to real splats: "WARNING:" and
# "BUG:" cover WARN_ON*, BUG_ON, scheduling-while-atomic, KASAN and
# sleeping-in-atomic reports start with "BUG:", lockdep's with the
# banners below, kmemleak reports through its scan file.
SPLAT_RE='WARNING:|BUG:|KASAN|UBSAN|Oops|general protection fault|kernel BUG|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|INFO: task .* blocked|Kernel panic|unreferenced object|stack-protector'

# --------------------------------------------------------------------------
# Guest side
# --------------------------------------------------------------------------
guest_poweroff() {
	sync 2>/dev/null || true
	# The 9p root goes away under us: no external commands after this.
	echo o >/proc/sysrq-trigger 2>/dev/null || true
	read -r -t 5 2>/dev/null || true
	echo b >/proc/sysrq-trigger 2>/dev/null || true
	read -r -t 30 2>/dev/null || true
}

# Stage 1: PID 1 on the read-only 9p root.  Build a writable root (overlay
# of the 9p root and a tmpfs) and switch to it.
guest_init() {
	export PATH=$GUEST_PATH
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev 2>/dev/null || true
	mount -t tmpfs -o mode=755 tmpfs /run
	mkdir -p /run/ov/upper /run/ov/work /run/ov/root
	if mount -t overlay overlay \
		-o lowerdir=/,upperdir=/run/ov/upper,workdir=/run/ov/work \
		/run/ov/root 2>/dev/null; then
		local m
		for m in proc sys dev; do
			mount --move /$m /run/ov/root/$m
		done
		mkdir -p /run/ov/root/run
		mount -t tmpfs -o mode=755 tmpfs /run/ov/root/run
		cd /run/ov/root
		exec chroot . "$SELF" --guest-stage2
	fi
	# No overlay: writable tmpfs where services write.
	echo "vm-run: overlay root failed, using tmpfs directories" >&2
	mount -t tmpfs -o mode=755 tmpfs /run
	for m in /tmp /var/tmp /var/log /var/lib /var/cache /root /home; do
		[ -d $m ] && mount -t tmpfs tmpfs $m
	done
	exec "$SELF" --guest-stage2
}

guest_stage2() {
	export PATH=$GUEST_PATH HOME=/root
	local rc=0 d tag i

	mountpoint -q /proc || mount -t proc proc /proc
	mountpoint -q /sys || mount -t sysfs sysfs /sys
	mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
	mkdir -p /dev/pts /dev/shm /dev/mqueue
	mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	mountpoint -q /run || mount -t tmpfs -o mode=755 tmpfs /run
	mkdir -p /run/lock /run/redis /run/memcached /run/nginx
	mount -t bpf bpf /sys/fs/bpf
	mount -t cgroup2 cgroup2 /sys/fs/cgroup
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
	ln -sf /proc/self/fd /dev/fd 2>/dev/null || true
	hostname xps-vm
	ip link set lo up

	mkdir -p $CTL
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 xpsctl $CTL
	# Fresh /tmp and /var/tmp, unless CMD's directory lies in one of them
	# (a checkout in /tmp): that one stays the root overlay's view of the
	# host's, writable in the guest only.
	for d in /tmp /var/tmp; do
		case "$(cat $CTL/cwd)/" in
		"$d"/*) ;;
		*) mount -t tmpfs -o mode=1777 tmpfs "$d" ;;
		esac
	done
	i=0
	while IFS= read -r d; do
		mkdir -p "$d"
		mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 \
			"xpsrw$i" "$d"
		i=$((i + 1))
	done <$CTL/rw
	# shellcheck disable=SC1091
	. $CTL/env.sh
	cd "$(cat $CTL/cwd)"

	bash -c "$(cat $CTL/cmd)" </dev/null || rc=$?

	if [ -w /sys/kernel/debug/kmemleak ]; then
		echo scan >/sys/kernel/debug/kmemleak
		cat /sys/kernel/debug/kmemleak >$CTL/kmemleak || true
	fi
	dmesg >$CTL/dmesg 2>&1 || true
	echo $rc >$CTL/rc
	guest_poweroff
}

# --------------------------------------------------------------------------
# Host side
# --------------------------------------------------------------------------
die() {
	echo "vm-run: $*" >&2
	exit 2
}

host_main() {
	local kernel="" debug=0 timeout=900 mem=2048 cpus=2 log="" kvm=0
	local icount=0 netns=""
	local -a rw=() envs=(CI V TERM)
	local here repo self

	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel) kernel=$2; shift 2 ;;
		--debug) debug=1; shift ;;
		--timeout) timeout=$2; shift 2 ;;
		--mem) mem=$2; shift 2 ;;
		--cpus) cpus=$2; shift 2 ;;
		--rw) rw+=("$(readlink -f "$2")"); shift 2 ;;
		--env) envs+=("$2"); shift 2 ;;
		--log) log=$2; shift 2 ;;
		--kvm) kvm=1; shift ;;
		--icount) icount=1; shift ;;
		--net) netns=$2; shift 2 ;;
		-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		--) shift; break ;;
		-*) die "unknown option $1" ;;
		*) break ;;
		esac
	done
	[ $# -gt 0 ] || die "no command (see --help)"
	command -v qemu-system-x86_64 >/dev/null ||
		die "qemu-system-x86_64 missing (scripts/deps.sh test)"

	self=$(readlink -f "$0")
	here=$(pwd -P)
	repo=$(cd "$(dirname "$self")/.." && pwd -P)

	if [ -z "$kernel" ]; then
		local -a bk=()
		[ $debug -eq 1 ] && bk+=(--debug)
		kernel=$("$repo/scripts/build-kernel.sh" "${bk[@]}") ||
			die "kernel build failed"
	fi
	[ -d "$kernel" ] && kernel=$kernel/bzImage
	[ -f "$kernel" ] || die "no kernel at $kernel"

	local ctl
	ctl=$(mktemp -d "${TMPDIR:-/tmp}/xps-vm.XXXXXX")
	trap 'rm -rf "$ctl"' EXIT
	printf '%s' "$*" >"$ctl/cmd"
	printf '%s\n' "$here" >"$ctl/cwd"
	printf '%s\n' "${rw[@]+"${rw[@]}"}" | sed '/^$/d' >"$ctl/rw"
	{
		local n
		for n in "${envs[@]}" $(compgen -v XPS_ || true); do
			[ -n "${!n+x}" ] && printf 'export %s=%q\n' "$n" "${!n}"
		done
	} >"$ctl/env.sh"

	local accel=tcg cpu=max
	if [ $kvm -eq 1 ]; then
		accel=kvm
		cpu=host,-arch-capabilities
	fi

	local -a qemu=(qemu-system-x86_64 -machine q35 -accel "$accel"
		-cpu "$cpu" -smp "$cpus" -m "$mem" -display none -no-reboot
		-nodefaults -serial stdio -kernel "$kernel"
		-fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
		-device virtio-9p-pci,fsdev=root,mount_tag=rootfs
		-fsdev "local,id=ctl,path=$ctl,security_model=none"
		-device virtio-9p-pci,fsdev=ctl,mount_tag=xpsctl
		-device virtio-rng-pci)
	[ $icount -eq 1 ] && qemu+=(-icount shift=0,sleep=on)
	local -a wrap=()
	if [ -n "$netns" ]; then
		ip netns exec "$netns" true 2>/dev/null ||
			die "--net $netns: no such network namespace"
		qemu+=(-netdev "tap,id=n0,ifname=xpsvm0,script=no,downscript=no"
		       -device "virtio-net-pci,netdev=n0,mac=52:54:00:78:00:02")
		wrap=(ip netns exec "$netns")
	fi
	local i=0 d
	for d in "${rw[@]+"${rw[@]}"}"; do
		[ -d "$d" ] || die "--rw $d: not a directory"
		qemu+=(-fsdev "local,id=rw$i,path=$d,security_model=none"
		       -device "virtio-9p-pci,fsdev=rw$i,mount_tag=xpsrw$i")
		i=$((i + 1))
	done
	local append="console=ttyS0 root=rootfs rootfstype=9p ro"
	append+=" rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose"
	append+=" init=$self panic=-1 oops=panic quiet loglevel=3"
	append+=" -- --guest-init"
	qemu+=(-append "$append")

	echo "vm-run: booting $(basename "$kernel") ($accel, $cpus cpu, ${mem}M): $*" >&2
	local qrc=0 start=$SECONDS
	if [ -n "$log" ]; then
		timeout -k 10 "$timeout" "${wrap[@]}" "${qemu[@]}" </dev/null |
			tee "$log" || qrc=$?
	else
		timeout -k 10 "$timeout" "${wrap[@]}" "${qemu[@]}" </dev/null ||
			qrc=$?
	fi
	[ "$qrc" = 124 ] && {
		echo "vm-run: TIMEOUT after ${timeout}s: $*" >&2
		exit 124
	}

	if [ ! -s "$ctl/rc" ]; then
		echo "vm-run: FAILED: the guest died before CMD finished (qemu status $qrc)" >&2
		exit 125
	fi
	local rc splats
	rc=$(cat "$ctl/rc")
	splats=$(grep -E "$SPLAT_RE" "$ctl/dmesg" || true)
	if [ -s "$ctl/kmemleak" ]; then
		splats+=$'\n'"$(head -40 "$ctl/kmemleak")"
	fi
	echo "vm-run: CMD exited $rc after $((SECONDS - start))s" >&2
	if [ -n "${splats//$'\n'/}" ]; then
		{
			echo "vm-run: ==== KERNEL SPLAT in guest dmesg ===="
			grep -E -A25 "$SPLAT_RE" "$ctl/dmesg" | head -150
			[ -s "$ctl/kmemleak" ] && head -40 "$ctl/kmemleak"
			echo "vm-run: ==== run FAILED because of the splat above ===="
		} >&2
		[ "$rc" = 0 ] && rc=99
	fi
	exit "$rc"
}

SELF=$(readlink -f "$0")
case "${1:-}" in
--guest-init) guest_init ;;
--guest-stage2) guest_stage2 ;;
*) host_main "$@" ;;
esac
