#!/usr/bin/env bash
# Inside the XPS VM (scripts/vm-test.sh boots it): the suites that ran on
# the stock backend, now on the native hook, plus the kernel-level tests.
#
#   tests/vm/native-suite.sh [STEPS]
#
# STEPS: all (the default), a comma-separated list of the step names
# below, or one of two halves: "kernel" (the hook's selftests, the
# handler fixtures, the API test and the foundation, faults, README and
# soak suites) and "services" (the ordering and service suites, and the
# stock backend's on this kernel).  The halves exist for the debug kernel,
# where the whole takes hours (docs/testing.md).
set -u
cd "$(dirname "$0")/../.."
export XPS_BACKEND=native
KERNEL_HALF=selftests,fixtures,api,foundation,faults,readme,soak
SERVICES_HALF=ordering,redis,memcached,http,cluster,nats,stock-foundation,stock-ordering
steps=${1:-all}
case $steps in
kernel) steps=$KERNEL_HALF ;;
services) steps=$SERVICES_HALF ;;
all) steps=$KERNEL_HALF,$SERVICES_HALF ;;
esac
for s in ${steps//,/ }; do
	case ",$KERNEL_HALF,$SERVICES_HALF," in
	*",$s,"*) ;;
	*)
		echo "native-suite.sh: unknown step '$s' (steps: $KERNEL_HALF,$SERVICES_HALF; or all, kernel, services)" >&2
		exit 2
		;;
	esac
done
want() { [[ ",$steps," == *",$1,"* ]]; }
fail=0
step() { printf '\n=== %s [%s]\n' "$*" "$(date -u +%T)"; }

step "xpsctl status (must say native)"
.output/xpsctl -j status | tee /tmp/xps-status.json
if ! grep -q '"backend":"native"' /tmp/xps-status.json; then
	echo "FAIL: the guest kernel has no XPS hook"
	exit 1
fi
echo "steps: $steps"
if want selftests; then
	step "kernel hook tests (tests/vm)"
	tests/vm/run.sh || fail=1
fi
if want fixtures; then
	step "handler fixtures through BPF_PROG_TEST_RUN (tests/vm/xps_fxtest.c)"
	tests/vm/.output/xps_fxtest .output/bpf tests/vm/.output/fx_wrap.bpf.o || fail=1
fi
if want api; then
	step "libxps API test, native backend"
	.output/tests/api_test .output/bpf || fail=1
fi
if want foundation; then
	step "integration: foundation, native backend"
	python3 tests/integration/test_foundation.py || fail=1
fi
if want faults; then
	step "integration: faults, native backend"
	python3 tests/integration/test_faults.py || fail=1
fi
if want readme; then
	step "integration: the README's example, native backend"
	python3 tests/integration/test_readme.py || fail=1
fi
if want soak; then
	step "integration: differential soak, native backend (short: the VM is emulated)"
	SOAK_SECONDS=10 SOAK_CLIENTS=8 python3 tests/integration/test_soak.py || fail=1
fi
if want ordering; then
	step "integration: reply ordering, native backend"
	python3 tests/integration/test_ordering.py || fail=1
fi
for svc in redis memcached http cluster nats; do
	want $svc || continue
	step "integration: $svc, native backend"
	tests/integration/service-suite.sh $svc || fail=1
done
# The stock backend on this kernel too: 6.12 is what Debian ships, and its
# bpf_msg_pop_data() crashed on a message the stock path emptied.
if want stock-foundation; then
	step "integration: foundation, stock backend on the patched kernel"
	XPS_BACKEND=stock python3 tests/integration/test_foundation.py || fail=1
fi
if want stock-ordering; then
	step "integration: reply ordering, stock backend on the patched kernel"
	XPS_BACKEND=stock python3 tests/integration/test_ordering.py || fail=1
fi
exit $fail
