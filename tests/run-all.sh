#!/usr/bin/env bash
# Run XPS's test suites and print one summary.  `make test` calls this.
#
#   tests/run-all.sh            every suite
#   tests/run-all.sh SUITE...   some of: unit verifier api integration vm
#
# Suites that cannot run on this machine fail loudly; nothing is skipped
# silently.  A suite also fails when this machine's kernel logs a splat
# (WARNING, BUG, KASAN, refcount_t, ...) while it runs (tests/kernel_log.py;
# one known defect of the stock kernel is printed, not failed: see there);
# the vm suite's guest has its own check (scripts/vm-run.sh).
set -u
cd "$(dirname "$0")/.."
OUT=.output
suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(unit verifier api integration vm)

declare -a results
fail=0

run() {
	local name=$1; shift
	local t0=$SECONDS rc
	echo "=== $name"
	python3 tests/kernel_log.py mark "$OUT/kernel-log.mark"
	"$@"
	rc=$?
	python3 tests/kernel_log.py check "$OUT/kernel-log.mark"
	case $? in
	0)	;;
	3)	name+=" (the kernel logged its known sockmap charge race: see above)" ;;
	*)	name+=": the kernel logged a splat"
		[ $rc -eq 0 ] && rc=1 ;;
	esac
	case $rc in
	0)	results+=("PASS     $name ($((SECONDS - t0))s)") ;;
	77)	results+=("NOT RUN  $name: see the message above") ;;
	*)	results+=("FAIL     $name ($((SECONDS - t0))s)")
		fail=1 ;;
	esac
}

need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "the $1 suite loads BPF programs: run it as root" >&2
		return 1
	fi
}

for s in "${suites[@]}"; do
	case $s in
	unit)
		run "unit: protocol parsers and encoders (host)" make -s -C tests/unit test
		run "unit: fuzzers, 5 s each (make fuzz runs them longer)" \
			make -s -C tests/unit fuzz-smoke FUZZ_SECONDS=5
		run "unit: the selftest kernel patch is generated from tests/vm" \
			scripts/gen-selftest-patch.sh --check
		run "unit: include/uapi/linux/bpf_serve.h is the kernel series' header" \
			scripts/check-uapi.sh
		run "unit: the host suites' kernel-log splat check" \
			python3 tests/kernel_log.py selftest
		run "unit: kwatch, the unbalanced-socket watcher (tests/kwatch)" \
			bash -c "$(declare -f need_root); need_root kwatch && tests/kwatch/smoke.sh" ;;
	verifier)
		run "verifier: parsers accepted by this kernel" tests/verifier/gate.sh ;;
	api)
		run "api: libxps (paper Table 3.2), stock backend" \
			bash -c "$(declare -f need_root); need_root api && XPS_BACKEND=stock $OUT/tests/api_test $OUT/bpf" ;;
	integration)
		run "integration: foundation, stock backend" \
			bash -c "$(declare -f need_root); need_root integration && XPS_BACKEND=stock python3 tests/integration/test_foundation.py"
		run "integration: faults, stock backend" \
			bash -c "$(declare -f need_root); need_root integration && XPS_BACKEND=stock python3 tests/integration/test_faults.py"
		run "integration: the README's example, stock backend" \
			bash -c "$(declare -f need_root); need_root integration && XPS_BACKEND=stock python3 tests/integration/test_readme.py"
		run "integration: xpsctl output formats, usage, completion, stock backend" \
			bash -c "$(declare -f need_root); need_root integration && XPS_BACKEND=stock python3 tests/integration/test_xpsctl.py"
		run "integration: differential soak, stock backend" \
			bash -c "$(declare -f need_root); need_root integration && XPS_BACKEND=stock python3 tests/integration/test_soak.py"
		run "integration: reply ordering, stock backend" \
			bash -c "$(declare -f need_root); need_root integration && XPS_BACKEND=stock python3 tests/integration/test_ordering.py"
		run "integration: runs interrupting runs (two namespaces), stock backend" \
			bash -c "$(declare -f need_root); need_root integration && XPS_BACKEND=stock python3 tests/integration/test_nested.py"
		run "integration: Debian packages and the systemd unit, stock backend" \
			bash -c "$(declare -f need_root); need_root integration && XPS_BACKEND=stock python3 tests/integration/test_packaging.py"
		for svc in redis memcached http cluster nats; do
			run "integration: $svc, stock backend" \
				env XPS_BACKEND=stock tests/integration/service-suite.sh $svc
		done ;;
	vm)
		run "vm: patched kernel, native backend" scripts/vm-test.sh ;;
	*)
		echo "unknown suite '$s' (unit verifier api integration vm)" >&2
		exit 2 ;;
	esac
done

echo
echo "=== summary"
printf '%s\n' "${results[@]}"
exit $fail
