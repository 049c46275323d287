#!/usr/bin/env bash
# A service suite (redis, memcached, http, cluster, nats) against its Debian server, run
# once its handler loads on this kernel.  Until then it says so loudly
# (exit 77: NOT RUN) instead of failing quietly.
#
#   tests/integration/service-suite.sh redis|memcached|http|cluster|nats
set -u
cd "$(dirname "$0")/../.."
svc=$1
# the service's folder, its handler object and its suite
case $svc in
redis) dir=redis obj=redis ;;
memcached) dir=memcached obj=memcached ;;
http) dir=http-filter obj=http_filter ;;
cluster) dir=redis-cluster obj=redis_cluster ;;
nats) dir=nats obj=nats ;;
*) echo "usage: $0 redis|memcached|http|cluster|nats" >&2; exit 2 ;;
esac
X=.output/xpsctl
notrun() {
	{
		echo "***************************************************************************"
		echo "*  ${svc^^} SUITE NOT RUN: $*"
		echo "***************************************************************************"
	} >&2
	exit 77
}
if [ "$(id -u)" -ne 0 ]; then
	echo "the $svc suite loads BPF programs: run it as root" >&2
	exit 1
fi
# loading the current parsers trips a verifier bug of Linux 6.18 (an oops
# in maybe_fork_scalars): do not even try while they are known to fail
[ -e tests/verifier/KNOWN-FAILING ] &&
	notrun "$(head -1 tests/verifier/KNOWN-FAILING); the $obj handler is not loaded"
suite=services/$dir/test_$svc.py
[ -e "$suite" ] || notrun "no $suite yet"
$X reset >/dev/null 2>&1
if ! out=$($X handler attach .output/bpf/$obj.bpf.o --port 17499 --name probe 2>&1); then
	$X reset >/dev/null 2>&1
	notrun "the $obj handler does not load on this kernel: $out"
fi
$X reset >/dev/null 2>&1
exec python3 "$suite"
