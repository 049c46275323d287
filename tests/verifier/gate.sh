#!/usr/bin/env bash
# The verifier suite, or a loud NOT RUN while the parsers are known not to
# pass: on Linux 6.18 their current form also trips a verifier bug
# (NULL dereference in maybe_fork_scalars), which oopses the loading
# process, so the suite must not run until they are fixed (issue 4).
set -u
cd "$(dirname "$0")/../.."
if [ -e tests/verifier/KNOWN-FAILING ]; then
	{
		echo "***************************************************************************"
		echo "*  VERIFIER SUITE NOT RUN: $(head -1 tests/verifier/KNOWN-FAILING)"
		echo "***************************************************************************"
	} >&2
	exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "the verifier suite loads BPF programs: run it as root" >&2
	exit 1
fi
exec tests/verifier/check.sh
