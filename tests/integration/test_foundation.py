#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Foundation tests: every verdict, both protocols, both families, the
control plane (attach/update/detach under traffic, traces), statistics and
data maps, on whatever backend the running kernel gives (stock on an
unpatched kernel, native on the patched one)."""
import json
import os
import socket
import subprocess
import tempfile
import threading
import time

from xpstest import (Listener, XpsError, attach, backend, bpf_ids, eq, main,
                     obj, recv_exact, stats, tcp_client, test, udp_client,
                     wait_for, xpsctl)

P = 17100  # base port of this file


def echo_round(c, msg):
    c.sendall(msg)
    return recv_exact(c, len(msg))


@test
def test_echo_tcp():
    srv = Listener(P)
    try:
        name = attach("echo", P)
        c = tcp_client(P, accepted_by=srv)
        for i in range(50):
            msg = b"echo request %03d\n" % i
            eq(echo_round(c, msg), msg, "kernel echo reply %d" % i)
        c.close()
        time.sleep(0.2)
        eq(srv.bytes, 0, "bytes the listener received")
        s = stats(name)
        eq((s["runs"], s["tx"], s["pass"]), (50, 50, 0), "runs/tx/pass")
    finally:
        srv.close()


@test
def test_echo_tcp_ipv6():
    srv = Listener(P + 1, family=socket.AF_INET6)
    try:
        name = attach("echo", P + 1)
        for host in ("::1", "127.0.0.1"):  # v6 and v4-mapped on a [::] socket
            c = tcp_client(P + 1, host, accepted_by=srv)
            for i in range(10):
                msg = b"v6 %s %d" % (host.encode(), i)
                eq(echo_round(c, msg), msg, "echo over " + host)
            c.close()
        time.sleep(0.2)
        eq(srv.bytes, 0, "bytes the listener received")
        eq(stats(name)["tx"], 20, "tx")
    finally:
        srv.close()


@test
def test_echo_udp():
    srv = Listener(P + 2, proto="udp")
    try:
        name = attach("echo", P + 2, proto="udp")
        c = udp_client()
        for i in range(50):
            msg = b"udp echo %03d " % i + b"x" * (i * 20)
            c.sendto(msg, ("127.0.0.1", P + 2))
            d, a = c.recvfrom(65536)
            eq(d, msg, "kernel UDP echo %d" % i)
            eq(a[1], P + 2, "reply source port")
        time.sleep(0.2)
        eq(srv.bytes, 0, "bytes the UDP listener received")
        eq(stats(name)["tx"], 50, "tx")
    finally:
        srv.close()


@test
def test_udp_server_bound_after_its_context():
    """The patched kernel runs the UDP hook only on sockets that opted in:
    a server bound after its context is its own until `xpsctl enroll`
    enrolls it (the services' daemons do so whenever they reconnect).  The
    stock backend's TC program needs no opt-in: enroll finds nothing to do."""
    name = attach("echo", P + 24, proto="udp")
    srv = Listener(P + 24, proto="udp")
    native = backend() == "native"
    try:
        c = udp_client()
        c.sendto(b"before", ("127.0.0.1", P + 24))
        d, _ = c.recvfrom(65536)
        eq(d, b"S:before" if native else b"before",
           "reply before enroll (the server's on native)")
        r = xpsctl("enroll")
        eq(r["udp_sockets_enrolled"], 1 if native else 0, "sockets enrolled")
        tx = stats(name)["tx"]
        for i in range(5):
            msg = b"after %d" % i
            c.sendto(msg, ("127.0.0.1", P + 24))
            d, _ = c.recvfrom(65536)
            eq(stats(name)["tx"], tx + i + 1, "the kernel answered %d" % i)
            eq(d, msg, "kernel echo after enroll")
        eq(srv.bytes, 6 if native else 0, "bytes the server received")
        eq(stats(name)["tx"], 5 if native else 6, "tx")
    finally:
        srv.close()


@test
def test_echo_udp_ipv6():
    srv = Listener(P + 3, proto="udp", family=socket.AF_INET6)
    try:
        name = attach("echo", P + 3, proto="udp")
        c = udp_client("::1")
        for i in range(20):
            msg = b"udp6 %d" % i + b"y" * (i * 37)
            c.sendto(msg, ("::1", P + 3))
            d, a = c.recvfrom(65536)
            eq(d, msg, "kernel UDPv6 echo %d" % i)
        eq(srv.bytes, 0, "bytes the UDP listener received")
        eq(stats(name)["tx"], 20, "tx")
    finally:
        srv.close()


@test
def test_pass_drop_tx_tcp():
    """PASS reaches the listener, DROP never does and the stream goes on.
    The verdict handler speaks lines: once the service answered the line it
    was passed, the kernel may answer again (docs/ordering.md)."""
    srv = Listener(P + 4)
    try:
        name = attach("verdict", P + 4)
        c = tcp_client(P + 4, accepted_by=srv)
        eq(echo_round(c, b"T1\n"), b"T1\n", "TX reply")
        c.sendall(b"Pone\n")
        eq(recv_exact(c, 7), b"S:Pone\n", "service reply to PASS")
        c.sendall(b"Dgone\n")            # consumed, no answer
        time.sleep(0.1)
        eq(echo_round(c, b"T2\n"), b"T2\n", "TX after PASS and DROP")
        c.sendall(b"Ptwo\n")
        eq(recv_exact(c, 7), b"S:Ptwo\n", "PASS after DROP")
        # one segment per line: a segment that starts with D is dropped
        # whole, and under load the socket corks small writes together
        for i in range(20):
            c.sendall(b"D%d\n" % i)
            wait_for(lambda: stats(name)["drop"] >= i + 2, what="DROP %d" % i)
        eq(echo_round(c, b"T3\n"), b"T3\n", "stream goes on after 20 DROPs")
        c.close()
        wait_for(lambda: srv.bytes == 10, what="listener bytes")
        eq(b"".join(srv.chunks), b"Pone\nPtwo\n", "what the listener saw")
        s = stats(name)
        eq((s["tx"], s["pass"], s["drop"], s["reset"]), (3, 2, 21, 0),
           "tx/pass/drop/reset")
        eq(s["runs"], 26, "runs")
    finally:
        srv.close()


def reset_round(port, family, host):
    srv = Listener(port, family=family)
    try:
        name = attach("verdict", port)
        c = tcp_client(port, host, accepted_by=srv)
        eq(echo_round(c, b"Tx"), b"Tx", "TX before RESET")
        c.sendall(b"Rbye")
        t = time.time()
        try:
            d = c.recv(100)
            raise AssertionError("expected a reset, got %r" % d)
        except ConnectionResetError:
            pass
        eq(stats(name)["reset"], 1, "reset counter")
        # the service's end is closed too: its recv() ends
        wait_for(lambda: srv.conns and all(x.fileno() == -1 for x in srv.conns),
                 what="service side closed")
        eq(srv.bytes, 0, "listener bytes")
        print("    reset over %s seen by the client after %.0f ms"
              % (host, (time.time() - t) * 1000))
    finally:
        srv.close()


@test
def test_reset_tcp():
    reset_round(P + 5, socket.AF_INET, "127.0.0.1")


@test
def test_reset_tcp_ipv6():
    """The stock backend's RESET mirrors the segment with the addresses of
    an IPv6 header swapped."""
    reset_round(P + 40, socket.AF_INET6, "::1")


@test
def test_framework_of_another_version_refused_then_reset():
    """A framework pinned by a build whose shared maps differ (here its run
    state with one level, as before XPS_RUN_LEVELS) is refused with a
    message naming the map and `xpsctl reset`, and `xpsctl reset` removes
    it with its contexts, leaving nothing pinned."""
    root = "/sys/fs/bpf/xps"
    attach("echo", P + 60)
    run = os.path.join(root, "xps_run")
    os.unlink(run)
    subprocess.run(["bpftool", "map", "create", run, "type", "percpu_array", "key", "4",
                    "value", "64", "entries", "1", "name", "xps_run"], check=True)
    doc = xpsctl("handler", "attach", obj("upper"), "--port", P + 61, check=False)
    err = doc.get("error", "") if isinstance(doc, dict) else ""
    for want in ("another version", "xps_run", "xpsctl reset"):
        if want not in err:
            raise AssertionError("attach over the old framework: %r lacks %r" % (err, want))
    xpsctl("reset")
    eq(os.path.exists(root), False, "anything left under %s" % root)
    eq(xpsctl("status")["loaded"], False, "loaded after the reset")
    attach("echo", P + 60)      # this build's framework loads again


@test
def test_two_services():
    a, b = Listener(P + 6), Listener(P + 7)
    try:
        na = attach("echo", P + 6)
        nb = attach("upper", P + 7)
        ca, cb = tcp_client(P + 6, accepted_by=a), tcp_client(P + 7, accepted_by=b)
        for i in range(10):
            eq(echo_round(ca, b"hello %d" % i), b"hello %d" % i, "echo")
            eq(echo_round(cb, b"hello %d" % i), b"HELLO %d" % i, "upper")
        eq((a.bytes, b.bytes), (0, 0), "listener bytes")
        eq((stats(na)["tx"], stats(nb)["tx"]), (10, 10), "per-handler tx")
        # a third port without a context is untouched
        c = Listener(P + 8)
        cc = tcp_client(P + 8)
        cc.sendall(b"plain")
        eq(recv_exact(cc, 7), b"S:plain", "port without a context")
        c.close()
    finally:
        a.close()
        b.close()


@test
def test_composability():
    srv = Listener(P + 9)
    try:
        comp = xpsctl("handler", "comp", "--port", P + 9, "--offset", 0,
                      "--len", 1, "--name", "cmp")["name"]
        xpsctl("handler", "attach", obj("echo"), "--parent", comp, "--value", "e",
               "--name", "cmp-echo")
        xpsctl("handler", "attach", obj("upper"), "--parent", comp, "--value", "u",
               "--name", "cmp-upper")
        c = tcp_client(P + 9, accepted_by=srv)
        eq(echo_round(c, b"e-hello"), b"e-hello", "value e -> echo")
        eq(echo_round(c, b"u-hello"), b"U-HELLO", "value u -> upper")
        c.sendall(b"x-hello")
        eq(recv_exact(c, 9), b"S:x-hello", "unknown value -> service")
        # no handler counted what the comp context passed: the service
        # may owe replies the kernel cannot see end, so the connection
        # stays on the slow path (docs/ordering.md)
        c.sendall(b"e2")
        eq(recv_exact(c, 4), b"S:e2", "after a pass nobody counted")
        c2 = tcp_client(P + 9, accepted_by=srv)
        eq(echo_round(c2, b"e3"), b"e3", "echo on another connection")
        eq(stats("cmp-echo")["tx"], 2, "echo sub tx")
        eq(stats("cmp-upper")["tx"], 1, "upper sub tx")
        eq(stats(comp)["pass"], 1, "comp context passes unknown values")
        names = [x["name"] for x in xpsctl("handler", "list")]
        eq(sorted(names), ["cmp", "cmp-echo", "cmp-upper"], "contexts")
        xpsctl("handler", "detach", comp)
        eq(xpsctl("handler", "list"), [], "sub-contexts go with their parent")
    finally:
        srv.close()


@test
def test_stats_exact():
    srv = Listener(P + 10)
    try:
        name = attach("verdict", P + 10)
        c = tcp_client(P + 10, accepted_by=srv)
        want = {"tx": 0, "pass": 0, "drop": 0}
        for i in range(60):
            kind = "TPD"[i % 3]
            msg = kind.encode() + b"%d\n" % i
            c.sendall(msg)
            if kind == "T":
                eq(recv_exact(c, len(msg)), msg, "tx")
                want["tx"] += 1
            elif kind == "P":
                eq(recv_exact(c, len(msg) + 2), b"S:" + msg, "pass")
                want["pass"] += 1
            else:
                want["drop"] += 1
        echo_round(c, b"Tend\n")
        want["tx"] += 1
        s = xpsctl("stats", "show", name)[0]
        for k in ("name", "port", "proto", "backend", "runs", "tx", "drop",
                  "pass", "reset", "errors", "avg_ns"):
            if k not in s:
                raise AssertionError("stats show lacks " + k)
        eq((s["tx"], s["pass"], s["drop"], s["reset"], s["errors"]),
           (want["tx"], want["pass"], want["drop"], 0, 0), "counters")
        eq(s["runs"], 61, "runs = requests sent")
        eq((s["port"], s["proto"]), (P + 10, "tcp"), "port/proto")
        if s["avg_ns"] <= 0:
            raise AssertionError("avg_ns should be positive")
    finally:
        srv.close()


def traffic(port, n_threads, stop, results, transform_ok, listener=None):
    """Clients sending unique requests; each reply must be one answer."""
    def run(tid):
        try:
            c = tcp_client(port, timeout=5, accepted_by=listener)
        except OSError as e:
            results["errors"].append(repr(e))
            return
        i = 0
        while not stop.is_set():
            msg = b"t%02d-%06d" % (tid, i)
            try:
                c.sendall(msg)
                d = c.recv(64)
            except OSError as e:
                results["errors"].append("%s after %d" % (e, i))
                return
            if not transform_ok(msg, d):
                results["errors"].append("bad reply %r to %r" % (d, msg))
                return
            results["kernel" if not d.startswith(b"S:") else "service"] += 1
            i += 1
        c.close()
    ts = [threading.Thread(target=run, args=(t,)) for t in range(n_threads)]
    for t in ts:
        t.start()
    return ts


@test
def test_update_detach_under_traffic():
    srv = Listener(P + 11)
    try:
        name = attach("echo", P + 11)
        stop = threading.Event()
        res = {"kernel": 0, "service": 0, "errors": []}
        ok = lambda m, d: d in (m, m.upper(), b"S:" + m)
        ts = traffic(P + 11, 4, stop, res, ok, listener=srv)
        for i in range(6):
            time.sleep(0.3)
            xpsctl("handler", "update", name, obj("upper" if i % 2 == 0 else "echo"))
        time.sleep(0.3)
        xpsctl("handler", "detach", name)
        time.sleep(0.5)
        name = attach("echo", P + 11)
        time.sleep(0.3)
        stop.set()
        for t in ts:
            t.join(10)
        if res["errors"]:
            raise AssertionError("; ".join(res["errors"][:5]))
        print("    %d answers from the kernel, %d from the service, 0 lost"
              % (res["kernel"], res["service"]))
        if res["kernel"] == 0 or res["service"] == 0:
            raise AssertionError("traffic should have seen both paths: %r" % res)
    finally:
        srv.close()


@test
def test_most_specific_match_wins():
    srv = Listener(P + 21)
    try:
        attach("echo", P + 21, name="any-client")
        xpsctl("handler", "attach", obj("upper"), "--port", P + 21,
               "--raddr", "127.0.0.2", "--name", "one-client")
        a = tcp_client(P + 21, accepted_by=srv)
        b = socket.socket()
        b.settimeout(3)
        b.bind(("127.0.0.2", 0))
        before = srv.accepted
        b.connect(("127.0.0.1", P + 21))
        wait_for(lambda: srv.accepted > before, what="accept()")
        for i in range(5):
            eq(echo_round(a, b"abc%d" % i), b"abc%d" % i, "127.0.0.1 -> echo")
            eq(echo_round(b, b"abc%d" % i), b"ABC%d" % i, "127.0.0.2 -> upper")
        eq((stats("any-client")["tx"], stats("one-client")["tx"]), (5, 5), "tx")
        # one client port, more specific still
        c = socket.socket()
        c.settimeout(3)
        c.bind(("127.0.0.2", 0))
        xpsctl("handler", "attach", obj("verdict"), "--port", P + 21,
               "--raddr", "127.0.0.2", "--rport", c.getsockname()[1],
               "--name", "one-port")
        before = srv.accepted
        c.connect(("127.0.0.1", P + 21))
        wait_for(lambda: srv.accepted > before, what="accept()")
        eq(echo_round(c, b"Tx"), b"Tx", "address+port -> verdict")
        eq(stats("one-port")["tx"], 1, "most specific handler ran")
        r = xpsctl("handler", "attach", obj("echo"), "--port", P + 21,
                   "--raddr", "127.0.0.2", check=False)
        if "already has context 'one-client'" not in r.get("error", ""):
            raise AssertionError(r)
    finally:
        srv.close()


@test
def test_stats_watch():
    name = attach("echo", P + 22)
    p = subprocess.run([os.path.join(os.path.dirname(obj("echo")), "..", "xpsctl"),
                        "-j", "stats", "watch", name, "--count", "2"],
                       capture_output=True, text=True, timeout=10)
    eq(p.returncode, 0, "exit status")
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    eq(len(lines), 2, "one JSON document per refresh")
    eq(lines[1][0]["name"], name, "context in the refresh")


@test
def test_duplicate_port_refused():
    name = attach("echo", P + 12)
    r = xpsctl("handler", "attach", obj("upper"), "--port", P + 12, check=False)
    if "error" not in r or "already has context '%s'" % name not in r["error"]:
        raise AssertionError("expected a clear refusal, got %r" % r)
    # a more specific predicate (one address) on the same port is refused too
    r = xpsctl("handler", "attach", obj("upper"), "--port", P + 12,
               "--addr", "127.0.0.1", check=False)
    if "error" not in r:
        raise AssertionError("overlapping predicate accepted: %r" % r)
    # the same port over UDP is another service
    attach("echo", P + 12, proto="udp")
    eq(len(xpsctl("handler", "list")), 2, "contexts")


@test
def test_delete_removes_every_trace():
    xpsctl("reset")
    progs, maps = bpf_ids("prog"), bpf_ids("map")
    a = attach("echo", P + 13)
    b = attach("kv", P + 14, proto="udp")
    srv = Listener(P + 13)
    c = tcp_client(P + 13, accepted_by=srv)
    eq(echo_round(c, b"x"), b"x", "echo works")
    if bpf_ids("prog") == progs:
        raise AssertionError("attach loaded no program?")
    xpsctl("handler", "detach", a)
    xpsctl("handler", "detach", b)
    st = xpsctl("status")
    if st["backend"] == "stock":
        # the open connection is still enrolled: the framework drains
        eq((st["loaded"], st["draining"], st["enrolled_connections"]),
           (True, True, 1), "draining with one connection enrolled")
        c.sendall(b"still served")
        eq(recv_exact(c, 14), b"S:still served", "drained connection reaches the service")
    c.close()
    srv.close()
    time.sleep(0.3)
    xpsctl("status")  # completes a finished drain
    time.sleep(0.5)  # programs are freed after an RCU grace period
    eq(bpf_ids("prog") - progs, set(), "programs left behind")
    eq(bpf_ids("map") - maps, set(), "maps left behind")
    eq(os.path.exists("/sys/fs/bpf/xps"), False, "pin directory left behind")
    out = subprocess.run(["tc", "filter", "show", "dev", "lo", "ingress"],
                         capture_output=True, text=True).stdout
    eq("xps" in out, False, "TC filter left on lo")


@test
def test_kv_data_and_key_stats():
    srv = Listener(P + 15)
    try:
        name = attach("kv", P + 15)
        xpsctl("data", "put", name, "alpha", "value-of-alpha")
        xpsctl("data", "put", name, "beta", "b")
        r = xpsctl("data", "put", name, "alpha", "again", check=False)
        if "exists" not in r.get("error", ""):
            raise AssertionError("second put of a key should fail: %r" % r)
        c = tcp_client(P + 15, accepted_by=srv)
        for i in range(3):
            c.sendall(b"alpha\n")
            eq(recv_exact(c, 15), b"value-of-alpha\n", "value from the kernel")
        c.sendall(b"beta\n")
        eq(recv_exact(c, 2), b"b\n", "short value")
        c.sendall(b"gamma\n")
        eq(recv_exact(c, 8), b"S:gamma\n", "miss goes to the service")
        xpsctl("data", "update", name, "beta", "new-beta")
        c.sendall(b"beta\n")
        eq(recv_exact(c, 9), b"new-beta\n", "updated value")
        eq(xpsctl("data", "get", name, "beta")["value"], "new-beta", "data get")
        dump = {e["key"]: e["value"] for e in xpsctl("data", "dump", name)}
        eq(dump, {"alpha": "value-of-alpha", "beta": "new-beta"}, "data dump")
        xpsctl("data", "del", name, "alpha")
        c.sendall(b"alpha\n")
        eq(recv_exact(c, 8), b"S:alpha\n", "deleted key goes to the service")
        keys = {e["key"]: e["count"] for e in xpsctl("stats", "keys", name)}
        eq(keys.get("alpha"), 4, "alpha lookups (3 hits, 1 after delete)")
        eq(keys.get("beta"), 2, "beta lookups")
        eq(keys.get("gamma"), 1, "gamma lookups (a miss counts too)")
        top = xpsctl("stats", "keys", name, "--top", 1)
        eq(len(top), 1, "--top 1")
        eq(top[0]["key"], "alpha", "most looked-up key")
    finally:
        srv.close()


@test
def test_json_errors_and_usage():
    r = xpsctl("handler", "detach", "no-such-context", check=False)
    if "error" not in r:
        raise AssertionError(r)
    r = xpsctl("handler", "attach", obj("echo"), "--port", "70000", check=False)
    if "error" not in r:
        raise AssertionError(r)
    r = xpsctl("handler", "attach", "/nonexistent.bpf.o", "--port", P + 16, check=False)
    if "cannot read handler object" not in r.get("error", ""):
        raise AssertionError(r)
    r = xpsctl("bogus", check=False)
    if "unknown command" not in r.get("error", ""):
        raise AssertionError(r)
    # prefix matching as in bpftool
    eq(xpsctl("h", "l"), [], "xpsctl h l")
    # the handler object must be a BPF object with SEC("xps")
    r = xpsctl("handler", "attach", "/etc/hostname", "--port", P + 16, check=False)
    if "error" not in r:
        raise AssertionError(r)
    eq(xpsctl("handler", "list"), [], "nothing left after failures")
    eq(os.path.exists("/sys/fs/bpf/xps/xps_config"), False,
       "a failed first attach leaves no framework behind")


@test
def test_unprivileged_refused():
    r = xpsctl("handler", "attach", obj("echo"), "--port", P + 17, check=False,
               user="65534")
    if "error" not in r:
        raise AssertionError("an unprivileged user attached a handler: %r" % r)
    name = attach("echo", P + 17)
    r = xpsctl("data", "dump", name, check=False, user="65534")
    if "error" not in r:
        raise AssertionError("an unprivileged user read a context: %r" % r)


@test
def test_blocking_reader_loses_nothing():
    """DESIGN (b): a service that reads with blocking read()s.  On the native
    hook it blocks until passed bytes arrive and every consumed request is
    answered by the kernel.  On the stock backend the kernel's sockmap wakes
    a reader sleeping in recvmsg when bytes are consumed and its read()
    fails (EAGAIN) or returns 0 although nothing was read; that call also
    writes back a stale copied_seq, after which the framework sends the
    connection's requests to the service (docs/stock-backend.md).  What must
    hold everywhere: every request is answered exactly once."""
    name = attach("verdict", P + 18)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", P + 18))
    ls.listen(1)
    spurious = []
    accepted = threading.Event()
    done = threading.Event()

    def blocking_service():
        s, _ = ls.accept()
        accepted.set()
        s.settimeout(None)       # blocking reads
        while not done.is_set():
            try:
                d = s.recv(100)
            except BlockingIOError:
                spurious.append("EAGAIN")
                continue
            if not d:
                if done.is_set():
                    break       # the client's own FIN at the end
                spurious.append("EOF")
                if done.wait(0.01):
                    break
                continue
            s.sendall(b"S:" + d)
        s.close()
    t = threading.Thread(target=blocking_service)
    t.start()
    c = tcp_client(P + 18)
    accepted.wait(3)
    time.sleep(0.1)
    kernel = service = 0
    for i in range(20):
        msg = b"T%02d" % i
        c.sendall(msg)
        d = recv_exact(c, 3)
        if d == msg:
            kernel += 1
        else:
            eq(d + recv_exact(c, 2), b"S:" + msg, "service reply")
            service += 1
    c.sendall(b"Pfinally")
    eq(recv_exact(c, 10), b"S:Pfinally", "passed bytes reach the blocking reader")
    done.set()          # before the FIN, so the reader does not count it
    c.close()
    t.join(5)
    s = stats(name)
    eq((s["tx"], s["pass"]), (kernel, service + 1), "counters match the answers")
    if xpsctl("status")["backend"] == "native":
        eq(spurious, [], "spurious returns of a blocking read on the native hook")
        eq(kernel, 20, "kernel answers on the native hook")
    else:
        print("    KNOWN LIMITATION (stock backend, blocking reader): %d spurious "
              "returns (%s); %d of 20 answered by the kernel, %d fell back to the "
              "service" % (len(spurious), ",".join(sorted(set(spurious))) or "-",
                           kernel, service))
        if kernel < 1:
            raise AssertionError("the first request should be answered by the kernel")
    ls.close()


@test
def test_bytes_before_accept():
    """Requests that arrive before the service accept()s the connection are
    answered exactly once (by the service: neither backend consumes bytes of
    a socket nobody has accepted), and the connection is served from the
    kernel afterwards."""
    srv = Listener(P + 20)
    try:
        name = attach("verdict", P + 20)
        kernel = service = 0
        for k in range(30):
            c = tcp_client(P + 20)
            c.sendall(b"Tfirst\n")       # before accept, usually
            d = recv_exact(c, 7)
            if d not in (b"Tfirst\n", b"S:Tfirs"):
                raise AssertionError("first reply %r" % d)
            if d == b"S:Tfirs":
                eq(recv_exact(c, 2), b"t\n", "rest of the service reply")
                service += 1
            else:
                kernel += 1
            wait_for(lambda: srv.accepted > k, what="accept")
            for i in range(10):
                eq(echo_round(c, b"T%d\n" % i), b"T%d\n" % i,
                   "kernel reply after accept")
            c.close()
        s = stats(name)
        eq(s["tx"], kernel + 300, "kernel answers = tx")
        # stock runs the handler on pre-accept bytes (and passes them);
        # the native hook passes them without running it
        eq(s["pass"] <= service, True, "passes are answered by the service")
    finally:
        srv.close()


@test
def test_connections_before_attach_keep_working():
    srv = Listener(P + 19)
    try:
        early = tcp_client(P + 19)
        early.sendall(b"before")
        eq(recv_exact(early, 8), b"S:before", "before attach")
        attach("echo", P + 19)
        early.sendall(b"after")
        # Nothing recorded what the service was passed before the attach,
        # so nothing can tell when it owes no reply: on both backends the
        # connection stays on the socket path (docs/ordering.md).
        eq(recv_exact(early, 7), b"S:after",
           "a connection accepted before the attach stays on the socket path")
        late = tcp_client(P + 19, accepted_by=srv)
        eq(echo_round(late, b"late"), b"late", "new connections are served")
    finally:
        srv.close()


def tcp_info(s):
    """(unacked segments, bytes not yet sent) of @s, read under its lock."""
    i = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 160)
    return int.from_bytes(i[24:28], "little"), int.from_bytes(i[144:148], "little")


@test
def test_request_in_pieces_replied_at_once():
    """A request whose bytes sit in two page fragments of one segment (here:
    a write with MSG_MORE, then sendfile()).  The stock backend's kworker
    sends such a request in pieces, all but the last with MSG_MORE; a reply
    put on the first piece was corked by that flag and left only when the
    server's ~200 ms probe timer fired.  Checked as state, not time: while a
    reply is awaited, the server socket must never hold unsent bytes with
    nothing in flight (TCP_INFO is read under the socket lock, so a send in
    progress is never seen half done)."""
    srv = Listener(P + 23, reply=False)
    tail = b"second piece, from a file page\n"
    with tempfile.TemporaryFile() as f:
        f.write(tail)
        f.flush()
        try:
            name = attach("echo", P + 23)
            c = tcp_client(P + 23, accepted_by=srv)
            server = srv.conns[-1]
            corked = 0
            for i in range(20):
                head = b"request %02d, first piece; " % i
                c.send(head, socket.MSG_MORE)
                eq(os.sendfile(c.fileno(), f.fileno(), 0, len(tail)), len(tail),
                   "sendfile")
                want, buf = head + tail, b""
                c.settimeout(0.01)
                deadline = time.time() + 5
                while len(buf) < len(want) and time.time() < deadline:
                    try:
                        d = c.recv(len(want) - len(buf))
                        if not d:
                            raise AssertionError("connection closed")
                        buf += d
                    except socket.timeout:
                        unacked, notsent = tcp_info(server)
                        if notsent and not unacked:
                            corked += 1
                eq(buf, want, "kernel reply %d" % i)
                eq(corked, 0, "polls that found reply %d corked in the "
                   "server's write queue" % i)
            c.close()
            s = stats(name)
            eq((s["tx"], s["pass"]), (20, 0), "tx/pass")
            eq(srv.bytes, 0, "bytes the listener received")
        finally:
            srv.close()


if __name__ == "__main__":
    main()
