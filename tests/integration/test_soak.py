#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Differential soak: the same random byte streams, split at random points,
to a plain redis-server and to one accelerated by XPS; the replies must be
byte for byte the same.  Many connections at once, each with its own keys
(so that both servers see the same history per key): valid commands of
every kind the handler treats differently, malformed and truncated
requests, pipelines, a slow client sending a byte at a time, connections
closed with replies in flight.  SOAK_SECONDS (default 20) sets how long."""
import os
import random
import socket
import subprocess
import tempfile
import threading
import time

from xpstest import log_end, resp, main, stats, test, wait_for, wait_log, xpsctl

PLAIN, ACCEL = 26500, 26501
SECONDS = float(os.environ.get("SOAK_SECONDS", "20"))
CLIENTS = int(os.environ.get("SOAK_CLIENTS", "24"))


def redis(port):
    d = tempfile.mkdtemp(prefix="xps-soak-")
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no", "--dir", d,
                          "--loglevel", "warning"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    wait_for(up, what="redis-server on %d" % port)
    return p


def commands(rng, tid, reader):
    """One random request (bytes) on thread @tid's keys; readers GET the
    shared keys nobody writes (what the kernel can answer)."""
    if reader:
        return resp(b"GET", b"ro:k%d" % rng.randrange(16))
    k = b"t%d:k%d" % (tid, rng.randrange(8))
    v = bytes(rng.choice(b"abcxyz\r\n\x00") for _ in range(rng.choice((0, 1, 5, 100, 1500))))
    r = rng.random()
    if r < 0.45:
        return resp(b"GET", k)
    if r < 0.60:
        return resp(b"SET", k, v)
    if r < 0.65:
        return resp(b"DEL", k)
    if r < 0.70:
        return resp(b"INCR", b"t%d:n" % tid)
    if r < 0.74:
        return resp(b"MGET", k, b"t%d:k0" % tid)
    if r < 0.77:
        return resp(b"APPEND", k, v)
    if r < 0.80:
        return b"GET " + k + b"\r\n"                      # inline
    if r < 0.82:
        return resp(b"EXISTS", k)
    if r < 0.84:
        return resp(b"GETRANGE", k, 0, 3)
    if r < 0.86:
        return resp(b"STRLEN", k)
    if r < 0.88:
        return resp(b"PING")
    if r < 0.90:
        return resp(b"ECHO", v)
    if r < 0.92:
        return b"*2\r\n$3\r\nGET\r\n$" + str(len(k) + 5).encode() + b"\r\n" + k  # truncated
    if r < 0.94:
        return b"*1\r\n$x\r\n"                             # malformed length
    if r < 0.96:
        return resp(b"GET", k, k)                           # wrong arity
    return resp(b"LPUSH", b"t%d:l" % tid, v)


def rss_kib(proc):
    with open("/proc/%d/status" % proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def drain(s, idle=0.3):
    out = b""
    s.settimeout(idle)
    while True:
        try:
            d = s.recv(65536)
        except socket.timeout:
            return out, False
        except ConnectionResetError:
            return out, True
        if not d:
            return out, True
        out += d


def send_both(a, b, p):
    for s in (a, b):
        try:
            s.sendall(p)
        except OSError:
            pass        # closed by the server: the replies tell


def client(tid, deadline, failures, counts, slow=False, reader=False):
    rng = random.Random(tid * 7919 + int(time.time()))
    while time.time() < deadline and not failures:
        a = socket.create_connection(("127.0.0.1", PLAIN))
        b = socket.create_connection(("127.0.0.1", ACCEL))
        time.sleep(0.05)        # past accept(), so that XPS may answer
        for _ in range(rng.randrange(1, 40)):
            n = rng.choice((1, 1, 1, 4, 16))
            stream = b"".join(commands(rng, tid, reader) for _ in range(n))
            if reader and not slow:
                counts[1] += 1      # one segment of GETs of keys nobody writes
            cuts = sorted(rng.sample(range(1, len(stream)), min(3, len(stream) - 1))) \
                if len(stream) > 1 and not reader and rng.random() < 0.3 else []
            if slow:
                cuts = list(range(1, min(len(stream), 40)))
            pieces = [stream[i:j] for i, j in zip([0] + cuts, cuts + [len(stream)])]
            for p in pieces:
                send_both(a, b, p)
                if len(pieces) > 1:
                    time.sleep(0.01 if not slow else 0.05)
            ra, ca = drain(a)
            rb, cb = drain(b)
            counts[0] += 1
            if ra != rb:
                i = next((n for n in range(min(len(ra), len(rb))) if ra[n] != rb[n]),
                         min(len(ra), len(rb)))
                failures.append("thread %d: replies differ at byte %d: plain %r, XPS %r (stream %r)"
                                % (tid, i, ra[max(0, i - 40):i + 40], rb[max(0, i - 40):i + 40],
                                   stream[:200]))
                break
            if ca or cb or rng.random() < 0.05:
                break           # closed by the server (protocol error) or by us
            if not reader:
                time.sleep(rng.uniform(0, 0.3))     # quiet moments for fills
        a.close()
        b.close()


@test
def test_differential_soak():
    servers = [redis(PLAIN), redis(ACCEL)]
    try:
        since = log_end("/run/xps/soak.log")
        xpsctl("service", "redis", "--port", ACCEL, "--name", "soak")
        wait_log("/run/xps/soak.log", "serving GETs", since, what="xps-redisd to serve")
        for port in (PLAIN, ACCEL):
            c = socket.create_connection(("127.0.0.1", port))
            c.sendall(b"".join(resp(b"SET", b"ro:k%d" % i, b"value-%d" % i * 10)
                               for i in range(16)))
            want = b"+OK\r\n" * 16
            got = b""
            while len(got) < len(want):
                got += c.recv(4096)
            c.close()
        failures, counts = [], [0, 0]
        deadline = time.time() + SECONDS
        threads = [threading.Thread(target=client,
                                    args=(t, deadline, failures, counts, False, t % 2 == 0))
                   for t in range(CLIENTS)]
        # a slow reader: a byte at a time (a slow writer would hold every
        # fill back for as long as its write is unanswered, docs/coherence.md)
        threads.append(threading.Thread(target=client,
                                        args=(CLIENTS, deadline, failures, counts, True, True)))
        for t in threads:
            t.start()
        # a handler swap under traffic: the same object again
        time.sleep(SECONDS / 2)
        xpsctl("handler", "update", "soak", os.path.join(os.path.dirname(__file__),
               "..", "..", ".output", "bpf", "redis.bpf.o"))
        for t in threads:
            t.join()
        chaos_tx = stats("soak")["tx"]
        chaos_gets = counts[1]
        # Then readers alone for a while, compared the same way.  Under
        # the writers above, unanswered writes of every key (malformed
        # requests, segments the walk could not finish, pipelines of many
        # keys) are rarely all answered at the moment of a GET, and values
        # are learned only at such moments (docs/coherence.md): the kernel
        # may answer few GETs there, or none.
        if not failures:
            quiet = time.time() + min(4.0, SECONDS / 2)
            readers = [threading.Thread(target=client,
                                        args=(CLIENTS + 1 + t, quiet, failures, counts,
                                              False, True))
                       for t in range(2)]
            for t in readers:
                t.start()
            for t in readers:
                t.join()
        s = stats("soak")
        plain_kib, accel_kib = rss_kib(servers[0]), rss_kib(servers[1])
        print("    %d exchanges on %d connections' worth of threads; kernel answered %d, "
              "passed %d; under the writers it answered %d of the readers' %d segments of GETs "
              "(%.0f%%); "
              "server RSS: plain %d KiB, with XPS %d KiB"
              % (counts[0], len(threads) + 2, s["tx"], s["pass"], chaos_tx, chaos_gets,
                 100.0 * chaos_tx / max(chaos_gets, 1), plain_kib, accel_kib))
        # the same commands reached both: the same memory, give or take
        if accel_kib > plain_kib * 3 // 2 + 20 * 1024:
            raise AssertionError("the accelerated server grew to %d KiB, the plain one %d KiB"
                                 % (accel_kib, plain_kib))
        if failures:
            raise AssertionError(failures[0])
        if s["tx"] == 0:
            raise AssertionError("the kernel answered nothing: the soak proved nothing")
    finally:
        xpsctl("service", "stop", "soak", check=False)
        for p in servers:
            p.terminate()
            p.wait(10)


if __name__ == "__main__":
    main()
