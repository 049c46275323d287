#!/usr/bin/env bash
# Inside the XPS VM (scripts/vm-test.sh boots it): the suites that ran on
# the stock backend, now on the native hook, plus the kernel-level tests.
set -u
cd "$(dirname "$0")/../.."
export XPS_BACKEND=native
fail=0
step() { printf '\n=== %s\n' "$*"; }

step "xpsctl status (must say native)"
.output/xpsctl -j status | tee /tmp/xps-status.json
if ! grep -q '"backend":"native"' /tmp/xps-status.json; then
	echo "FAIL: the guest kernel has no XPS hook"
	exit 1
fi
step "kernel hook tests (tests/vm)"
tests/vm/run.sh || fail=1
step "handler fixtures through BPF_PROG_TEST_RUN (tests/vm/xps_fxtest.c)"
tests/vm/.output/xps_fxtest .output/bpf tests/vm/.output/fx_wrap.bpf.o || fail=1
step "libxps API test, native backend"
.output/tests/api_test .output/bpf || fail=1
step "integration: foundation, native backend"
python3 tests/integration/test_foundation.py || fail=1
step "integration: faults, native backend"
python3 tests/integration/test_faults.py || fail=1
step "integration: the README's example, native backend"
python3 tests/integration/test_readme.py || fail=1
step "integration: differential soak, native backend (short: the VM is emulated)"
SOAK_SECONDS=10 SOAK_CLIENTS=8 python3 tests/integration/test_soak.py || fail=1
step "integration: reply ordering, native backend"
python3 tests/integration/test_ordering.py || fail=1
for svc in redis memcached http cluster nats; do
	step "integration: $svc, native backend"
	tests/integration/service-suite.sh $svc || fail=1
done
# The stock backend on this kernel too: 6.12 is what Debian ships, and its
# bpf_msg_pop_data() crashed on a message the stock path emptied.
step "integration: foundation, stock backend on the patched kernel"
XPS_BACKEND=stock python3 tests/integration/test_foundation.py || fail=1
step "integration: reply ordering, stock backend on the patched kernel"
XPS_BACKEND=stock python3 tests/integration/test_ordering.py || fail=1
exit $fail
