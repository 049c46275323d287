#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# kwatch's own test (make test, unit): it builds, loads on this kernel, and
# reports the sockets of a plain TCP exchange when they are destroyed
# (-a: balanced ones too), with none of them unbalanced.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"
make -s
out=$(mktemp)
trap 'rm -f "$out"' EXIT
port=$((20000 + RANDOM % 20000))
rc=0
.output/kwatch -a -g 500 -- python3 -c '
import socket, sys
port = int(sys.argv[1])
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", port))
l.listen(1)
c = socket.create_connection(("127.0.0.1", port))
s, _ = l.accept()
c.sendall(b"ping")
assert s.recv(4) == b"ping"
s.close()
c.close()
l.close()
' "$port" >"$out" 2>&1 || rc=$?
if ! grep -q " balanced tcp lport $port " "$out"; then
	cat "$out"
	echo "FAIL: kwatch reported no balanced socket on port $port (exit $rc)"
	exit 1
fi
if grep -q "UNBALANCED tcp lport $port \|UNBALANCED tcp lport [0-9]* rport $port " "$out"; then
	grep "UNBALANCED" "$out"
	echo "FAIL: a socket of a plain TCP exchange was destroyed with memory charged"
	exit 1
fi
# an unbalanced socket of someone else's is the machine's, not kwatch's
grep "UNBALANCED" "$out" && echo "kwatch: the sockets above are not this test's"
echo "PASS kwatch: $(grep -c " lport $port \| rport $port " "$out") socket(s) of the exchange reported, all balanced"
