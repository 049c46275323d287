#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Redis fast path against the unmodified Debian redis-server: GETs answered
from the kernel, byte-identical to what Redis answers, never stale, in
order; the server's own counters prove the fast path was taken."""
import os
import sys
import random
import shutil
import signal
import itertools
import socket
import struct
import subprocess
import tempfile
import threading
import time


# the integration harness lives with the other suites
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "integration"))
from xpstest import (attach, backend, kv_seal, resp, XpsError, eq, redis_cli, kv_value_hex, kv_entry, main, recv_exact,
                     stats, test, wait_for, xpsctl, SLOW, log_end, wait_log)

PORT = 17400


class Redis:
    """A throwaway redis-server: no persistence, no unix socket."""

    def __init__(self, port=PORT, bind="127.0.0.1 ::1", args=()):
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="xps-redis-")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", bind,
             "--save", "", "--appendonly", "no", "--dir", self.dir,
             "--protected-mode", "no", "--loglevel", "warning"] + list(args),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self._up, what="redis-server on port %d" % port)

    def _up(self):
        try:
            return self.cli("PING") == "PONG"
        except Exception:
            return False

    def cli(self, *args):
        return redis_cli(self.port, *args)

    def getcalls(self):
        for line in self.cli("INFO", "commandstats").splitlines():
            if line.startswith("cmdstat_get:"):
                return int(line.split("calls=")[1].split(",")[0])
        return 0

    def close(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def read_reply(c, buf=b""):
    """One RESP2 reply (bytes, as received) and the rest of the buffer."""
    def need(n):
        nonlocal buf
        while len(buf) < n:
            d = c.recv(65536)
            if not d:
                raise AssertionError("connection closed")
            buf += d

    def line(at):
        nonlocal buf
        while b"\r\n" not in buf[at:]:
            need(len(buf) + 1)
        return buf.index(b"\r\n", at)

    def one(at):
        need(at + 1)
        e = line(at)
        t = buf[at:at + 1]
        if t in (b"+", b"-", b":"):
            return e + 2
        n = int(buf[at + 1:e])
        if t == b"$":
            if n < 0:
                return e + 2
            need(e + 2 + n + 2)
            return e + 2 + n + 2
        at = e + 2
        for _ in range(max(n, 0)):
            at = one(at)
        return at
    end = one(0)
    return buf[:end], buf[end:]


class Client:
    def __init__(self, port=PORT):
        self.c = socket.create_connection(("127.0.0.1", port))
        self.c.settimeout(5)
        self.buf = b""

    def call(self, *args):
        self.c.sendall(resp(*args))
        r, self.buf = read_reply(self.c, self.buf)
        return r

    def pipeline(self, cmds):
        self.c.sendall(b"".join(resp(*a) for a in cmds))
        out = []
        for _ in cmds:
            r, self.buf = read_reply(self.c, self.buf)
            out.append(r)
        return out

    def close(self):
        self.c.close()


def start_service(r, name="redis"):
    log = "/run/xps/%s.log" % name
    since = log_end(log)
    xpsctl("service", "redis", "--port", r.port, "--name", name)
    wait_log(log, "serving GETs", since, what="xps-redisd to start serving")


def warm(c, key, value):
    """GET until the kernel answers (the daemon filled the key)."""
    t = time.time()
    while time.time() - t < 5 * SLOW:
        before = stats("redis")["tx"]
        eq(c.call("GET", key), b"$%d\r\n%s\r\n" % (len(value), value), "GET " + key)
        if stats("redis")["tx"] > before:
            return
        time.sleep(0.01)
    raise AssertionError("the cache never served %s" % key)


@test
def test_get_served_from_kernel_counters_match():
    r = Redis()
    try:
        start_service(r)
        for i in range(20):
            r.cli("SET", "key:%02d" % i, "value-%d" % i)
        c = Client()
        for i in range(20):
            warm(c, "key:%02d" % i, b"value-%d" % i)
        s0, g0 = stats("redis")["tx"], r.getcalls()
        n = 500
        for i in range(n):
            k = i % 20
            eq(c.call("GET", "key:%02d" % k), b"$%d\r\nvalue-%d\r\n" % (len(b"value-%d" % k), k), "GET")
        s1, g1 = stats("redis")["tx"], r.getcalls()
        eq((g1 - g0) + (s1 - s0), n, "Redis GET calls + kernel answers = GETs sent")
        if s1 - s0 < n * 0.9:
            raise AssertionError("only %d of %d GETs from the kernel" % (s1 - s0, n))
        print("    %d of %d GETs answered by the kernel, %d by Redis" % (s1 - s0, n, g1 - g0))
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_stats_count_only_what_clients_asked():
    """The filler learns values from Redis's replies to the GETs clients
    send (no GET of its own), so Redis's cmdstat_get is exactly the GETs it
    answered; a connection that SELECTed another database teaches nothing
    (its GETs answer from that database)."""
    r = Redis()
    try:
        start_service(r)
        r.cli("SET", "k", "v0")
        c = Client()
        sent = 0
        g0, tx0 = r.getcalls(), stats("redis")["tx"]
        t = time.time()
        while stats("redis")["tx"] == tx0:
            if time.time() - t > 5:
                raise AssertionError("k never served by the kernel")
            eq(c.call("GET", "k"), b"$2\r\nv0\r\n", "GET k")
            sent += 1
        for _ in range(50):
            eq(c.call("GET", "k"), b"$2\r\nv0\r\n", "GET k")
            sent += 1
        time.sleep(0.3)
        tx = stats("redis")["tx"] - tx0
        print("    %d GETs sent, %d answered by the kernel" % (sent, tx))
        eq(r.getcalls() - g0, sent - tx, "Redis's GET calls: GETs sent - kernel answers")
        # db 1 holds another k: its GETs must not fill db 0's cache
        d = Client()
        eq(d.call("SELECT", "1"), b"+OK\r\n", "SELECT 1")
        eq(d.call("SET", "k2", "from-db1"), b"+OK\r\n", "SET in db 1")
        r.cli("SET", "k2", "from-db0")
        for _ in range(30):
            eq(d.call("GET", "k2"), b"$8\r\nfrom-db1\r\n", "GET k2 in db 1")
        time.sleep(0.3)
        for _ in range(30):
            eq(c.call("GET", "k2"), b"$8\r\nfrom-db0\r\n", "GET k2 in db 0")
        d.close()
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_learned_while_other_keys_are_written():
    """Unanswered writes are counted by key: a GET of a key nobody writes
    is learned and answered by the kernel while a BLPOP of another key
    waits (a write unanswered for seconds) and other keys are written
    without pause.  Waiting for no write anywhere to be unanswered, it was
    not learned until the BLPOP ended."""
    r = Redis()
    stop = threading.Event()
    errors = []

    def writer(n):
        try:
            w = Client()
            i = 0
            while not stop.is_set():
                out = w.pipeline([("SET", "hot:%d:%d" % (n, j % 50), "v%d" % i)
                                  for j in range(16)])
                if any(o != b"+OK\r\n" for o in out):
                    errors.append(out)
                    return
                i += 1
            w.close()
        except Exception as e:      # reported below
            errors.append(e)

    try:
        start_service(r)
        r.cli("SET", "cold", "steady")
        ws = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in ws:
            t.start()
        blocked = Client()
        blocked.c.sendall(resp("BLPOP", "queue", "8"))
        time.sleep(0.3)
        c = Client()
        tx0 = stats("redis")["tx"]
        t0 = time.time()
        while stats("redis")["tx"] == tx0:
            if time.time() - t0 > 4 * SLOW:
                raise AssertionError("cold not answered by the kernel while BLPOP queue waits")
            eq(c.call("GET", "cold"), b"$6\r\nsteady\r\n", "GET cold")
        learned = time.time() - t0
        n, tx1 = 200, stats("redis")["tx"]
        for _ in range(n):
            eq(c.call("GET", "cold"), b"$6\r\nsteady\r\n", "GET cold")
        served = stats("redis")["tx"] - tx1
        print("    BLPOP waiting, other keys written: cold learned in %.2f s, then %d of %d GETs from the kernel"
              % (learned, served, n))
        if served < n * 0.9:
            raise AssertionError("only %d of %d GETs of cold from the kernel" % (served, n))
        r.cli("LPUSH", "queue", "item")
        r2, _ = read_reply(blocked.c, blocked.buf)
        eq(r2, b"*2\r\n$5\r\nqueue\r\n$4\r\nitem\r\n", "the BLPOP's reply")
        blocked.close()
        # and a write of cold itself is never missed: the next GET sees it
        eq(c.call("SET", "cold", "moved"), b"+OK\r\n", "SET cold")
        eq(c.call("GET", "cold"), b"$5\r\nmoved\r\n", "GET cold after its write")
        stop.set()
        for t in ws:
            t.join(10)
        if errors:
            raise AssertionError("writer: %r" % errors[0])
        c.close()
    finally:
        stop.set()
        xpsctl("service", "stop", "redis", check=False)
        r.close()


def cmdcalls(r, cmd):
    for line in r.cli("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_%s:" % cmd):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def kernel_get(c, key, want):
    """GET @key on @c: the reply must be @want; whether the kernel gave it."""
    tx = stats("redis")["tx"]
    eq(c.call("GET", key), want, "GET " + key)
    return stats("redis")["tx"] > tx


def start_serving(r):
    """start_service(), then a client of @r once the kernel answers on it
    (the filler's first check is over: until then nothing is committed)."""
    start_service(r)
    c = Client()
    eq(c.call("SET", "wt:warm", "w"), b"+OK\r\n", "SET")
    warm(c, "wt:warm", b"w")
    return c


@test
def test_set_committed_by_the_kernel():
    """A plain SET answered +OK is committed to the cache by the kernel
    (docs/coherence.md, "Writes committed by the kernel"): the next GET of
    the key is answered by the kernel, with no PTTL and no GET for Redis
    to execute.  So are GETSET and SET ... GET, answered with the old
    value or nil, and not when Redis refuses them; SET NX and SET XX
    when Redis answers +OK, not when it answers nil; a SET pipelined
    behind another request, the first write of its segment.  A SET with
    other options (KEEPTTL, NX or XX with GET) and a second write in a
    segment are not committed: their keys are learned as before."""
    r = Redis()
    try:
        c = start_serving(r)
        g0, p0 = r.getcalls(), cmdcalls(r, "pttl")
        for i in range(50):
            v = b"value-%d" % i
            eq(c.call("SET", "wt:%d" % i, v), b"+OK\r\n", "SET")
        served = sum(kernel_get(c, "wt:%d" % i, b"$%d\r\nvalue-%d\r\n" % (len(b"value-%d" % i), i))
                     for i in range(50))
        g1, p1 = r.getcalls(), cmdcalls(r, "pttl")
        print("    50 SETs, then 50 GETs: the kernel answered %d, Redis %d GETs and %d PTTLs"
              % (served, g1 - g0, p1 - p0))
        if served < 48:
            raise AssertionError("only %d of 50 GETs after a SET from the kernel" % served)
        eq(p1 - p0, 0, "PTTLs the filler asked")
        # GETSET and SET ... GET answer with the old value, or nil
        eq(c.call("GETSET", "wt:1", "swapped"), b"$7\r\nvalue-1\r\n", "GETSET")
        eq(kernel_get(c, "wt:1", b"$7\r\nswapped\r\n"), True, "the kernel answered GETSET's value")
        eq(c.call("SET", "wt:new", "fresh", "GET"), b"$-1\r\n", "SET GET of a new key")
        eq(kernel_get(c, "wt:new", b"$5\r\nfresh\r\n"), True, "the kernel answered SET GET's value")
        # refused: a key of another type is left as it was
        eq(c.call("RPUSH", "wt:list", "x"), b":1\r\n", "RPUSH")
        eq(c.call("SET", "wt:list", "v", "GET")[:10], b"-WRONGTYPE", "SET GET of a list")
        eq(c.call("GETSET", "wt:list", "v")[:10], b"-WRONGTYPE", "GETSET of a list")
        eq(c.call("LRANGE", "wt:list", "0", "-1"), b"*1\r\n$1\r\nx\r\n", "the list")
        eq(kernel_get(c, "wt:list", b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
           False, "the kernel answered a GET of a list")
        # NX and XX: committed when Redis set the key (+OK), not when the
        # condition failed (nil), and the key keeps no time to live
        eq(c.call("SET", "wt:nx", "temp", "NX"), b"+OK\r\n", "SET NX of a new key")
        eq(kernel_get(c, "wt:nx", b"$4\r\ntemp\r\n"), True, "the kernel answered SET NX's value")
        eq(c.call("SET", "wt:nx", "other", "nx"), b"$-1\r\n", "SET NX of a key that exists")
        # its value, put pending when the SET was passed, went with the nil
        eq(kv_entry("redis", b"wt:nx"), None, "the cache's entry after a refused SET NX")
        eq(c.call("GET", "wt:nx"), b"$4\r\ntemp\r\n", "GET after a refused SET NX")
        eq(c.call("SET", "wt:nx", "other", "EX", "100", "NX"), b"$-1\r\n", "SET EX NX of a key that exists")
        eq(c.call("GET", "wt:nx"), b"$4\r\ntemp\r\n", "GET after a refused SET EX NX")
        eq(c.call("SET", "wt:xx", "none", "XX"), b"$-1\r\n", "SET XX of a missing key")
        eq(c.call("GET", "wt:xx"), b"$-1\r\n", "GET after a refused SET XX")
        eq(c.call("SET", "wt:xx", "ttl", "PX", "60000"), b"+OK\r\n", "SET PX")
        eq(c.call("SET", "wt:xx", "kept", "XX"), b"+OK\r\n", "SET XX of a key that exists")
        eq(kernel_get(c, "wt:xx", b"$4\r\nkept\r\n"), True, "the kernel answered SET XX's value")
        eq(c.call("PTTL", "wt:xx"), b":-1\r\n", "SET XX dropped the time to live")
        # options the kernel does not follow: not committed
        eq(c.call("SET", "wt:nx", "kept", "XX", "KEEPTTL"), b"+OK\r\n", "SET XX KEEPTTL")
        eq(kernel_get(c, "wt:nx", b"$4\r\nkept\r\n"), False, "the kernel answered a SET KEEPTTL's value")
        # pipelined behind another request: egress finds its reply where
        # the one before it ends
        eq(c.pipeline([("GET", "wt:0"), ("SET", "wt:0", "second")]),
           [b"$7\r\nvalue-0\r\n", b"+OK\r\n"], "GET, SET pipelined")
        eq(kernel_get(c, "wt:0", b"$6\r\nsecond\r\n"), True,
           "the kernel answered a SET's value pipelined behind a GET")
        # two writes in a segment: the first is committed, the second
        # learned as before
        eq(c.pipeline([("SET", "wt:p1", "one"), ("SET", "wt:p2", "two")]),
           [b"+OK\r\n", b"+OK\r\n"], "SET, SET pipelined")
        eq(kernel_get(c, "wt:p1", b"$3\r\none\r\n"), True, "the kernel answered the first SET's value")
        eq(kernel_get(c, "wt:p2", b"$3\r\ntwo\r\n"), False, "the kernel answered the second SET's value")
        # two writes of one key: the second bumped the version the first
        # was stamped with, so the first is never served
        eq(c.pipeline([("SET", "wt:0", "old"), ("SET", "wt:0", "new")]),
           [b"+OK\r\n", b"+OK\r\n"], "SET, SET of one key pipelined")
        eq(kernel_get(c, "wt:0", b"$3\r\nnew\r\n"), False, "the kernel answered after two SETs of a key")
        for _ in range(5):      # learned from that GET's reply, or not: "new"
            kernel_get(c, "wt:0", b"$3\r\nnew\r\n")
        # the value overwritten the same way is committed again
        eq(c.call("SET", "wt:0", "third"), b"+OK\r\n", "SET")
        eq(kernel_get(c, "wt:0", b"$5\r\nthird\r\n"), True, "the kernel answered the new value")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_mset_committed_by_the_kernel():
    """MSET of up to four keys answered +OK, and MSETNX answered :1, are
    committed by the kernel, all keys or none: each key is its value with
    no time to live.  MSETNX answered :0 (a key existed, Redis set none)
    commits nothing; nor does an MSET of five keys, or one that names a
    key twice (two writes of one key pending)."""
    r = Redis()
    try:
        c = start_serving(r)
        p0 = cmdcalls(r, "pttl")
        for n in (1, 2, 3, 4):
            args = ["MSET"]
            for i in range(n):
                args += ["ms:%d:%d" % (n, i), "v%d-%d" % (n, i)]
            eq(c.call(*args), b"+OK\r\n", "MSET of %d keys" % n)
            for i in range(n):
                v = b"v%d-%d" % (n, i)
                eq(kernel_get(c, "ms:%d:%d" % (n, i), b"$%d\r\n%s\r\n" % (len(v), v)), True,
                   "the kernel answered key %d of an MSET of %d" % (i, n))
        eq(cmdcalls(r, "pttl") - p0, 0, "PTTLs the filler asked")
        # a time to live and a key of another type: MSET drops and replaces them
        eq(c.call("SET", "ms:ttl", "old", "EX", "100"), b"+OK\r\n", "SET EX")
        eq(c.call("RPUSH", "ms:list", "x"), b":1\r\n", "RPUSH")
        eq(c.call("MSET", "ms:ttl", "new", "ms:list", "str"), b"+OK\r\n", "MSET over them")
        eq(kernel_get(c, "ms:ttl", b"$3\r\nnew\r\n"), True, "the kernel answered an MSET over a TTL")
        eq(kernel_get(c, "ms:list", b"$3\r\nstr\r\n"), True, "the kernel answered an MSET over a list")
        eq(c.call("PTTL", "ms:ttl"), b":-1\r\n", "MSET dropped the time to live")
        # MSETNX: all or none
        eq(c.call("MSETNX", "ms:nx:a", "1", "ms:nx:b", "2"), b":1\r\n", "MSETNX of new keys")
        eq(kernel_get(c, "ms:nx:a", b"$1\r\n1\r\n"), True, "the kernel answered MSETNX's first key")
        eq(kernel_get(c, "ms:nx:b", b"$1\r\n2\r\n"), True, "the kernel answered MSETNX's second key")
        eq(c.call("MSETNX", "ms:nx:c", "3", "ms:nx:a", "changed"), b":0\r\n", "MSETNX of a key that exists")
        eq(kernel_get(c, "ms:nx:c", b"$-1\r\n"), False, "the kernel answered a key MSETNX did not set")
        eq(kernel_get(c, "ms:nx:a", b"$1\r\n1\r\n"), False, "the kernel answered right after a refused MSETNX")
        # five keys: more than the kernel takes; a key twice
        args = ["MSET"]
        for i in range(5):
            args += ["ms:5:%d" % i, "five"]
        eq(c.call(*args), b"+OK\r\n", "MSET of 5 keys")
        eq(kernel_get(c, "ms:5:0", b"$4\r\nfive\r\n"), False, "the kernel answered an MSET of 5 keys")
        eq(c.call("MSET", "ms:twice", "a", "ms:other", "b", "ms:twice", "c"), b"+OK\r\n", "MSET of a key twice")
        eq(kernel_get(c, "ms:twice", b"$1\r\nc\r\n"), False, "the kernel answered a key MSET named twice")
        eq(kernel_get(c, "ms:other", b"$1\r\nb\r\n"), False, "the kernel answered beside a key named twice")
        # pipelined behind a GET
        eq(c.pipeline([("GET", "ms:1:0"), ("MSET", "ms:1:0", "p0", "ms:pipe", "p1")]),
           [b"$4\r\nv1-0\r\n", b"+OK\r\n"], "GET, MSET pipelined")
        eq(kernel_get(c, "ms:1:0", b"$2\r\np0\r\n"), True, "the kernel answered MSET's value behind a GET")
        eq(kernel_get(c, "ms:pipe", b"$2\r\np1\r\n"), True, "the kernel answered MSET's second value")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_segments_longer_than_the_window():
    """A segment longer than the handler's 2 KiB copy is walked whole, the
    copy moved along it: a pipeline of writes of named keys (one of a
    value longer than the copy) invalidates those keys, not the whole
    cache, and a pipeline of GETs longer than the copy is answered by the
    kernel whole.  A SET of 10 KB sent in 1000-byte segments leaves its
    connection served (its length is known from its first segment)."""
    r = Redis()
    try:
        c = start_serving(r)
        eq(c.call("SET", "win:kept", "kept"), b"+OK\r\n", "SET")
        eq(kernel_get(c, "win:kept", b"$4\r\nkept\r\n"), True, "the kernel answered win:kept")
        for big in (False, True):
            # ten SETs of 300-byte values, one of 3000 bytes in the middle
            writes = [("SET", "win:w%d" % i, ("%d" % i) * 300) for i in range(10)]
            if big:
                writes[4] = ("SET", "win:w4", "B" * 3000)
            eq(c.pipeline(writes), [b"+OK\r\n"] * 10, "ten SETs pipelined")
            eq(kernel_get(c, "win:kept", b"$4\r\nkept\r\n"), True,
               "the kernel answered a key the pipeline did not write (big value: %s)" % big)
            for cmd in writes:
                v = cmd[2].encode()
                eq(c.call("GET", cmd[1]), b"$%d\r\n%s\r\n" % (len(v), v), "GET " + cmd[1])
        # a SET of 10 KB in 1000-byte segments: its length known from
        # the first, the rest skipped; the connection is served after it
        m = socket.socket()
        m.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1000)
        m.connect(("127.0.0.1", r.port))
        mc = Client.__new__(Client)
        mc.c, mc.buf = m, b""
        m.settimeout(5)
        eq(mc.call("SET", "win:big", "b" * 10000), b"+OK\r\n", "SET of 10 KB in small segments")
        eq(kernel_get(mc, "win:kept", b"$4\r\nkept\r\n"), True,
           "the kernel answered on the connection after a SET of 10 KB in small segments")
        mc.close()
        # GETs of 120-byte keys: about 2.8 KiB of requests in one segment
        keys = ["win:%03d:" % i + "k" * 112 for i in range(20)]
        for k in keys:
            eq(c.call("SET", k, k[:7]), b"+OK\r\n", "SET")
        tx = stats("redis")["tx"]
        got = c.pipeline([("GET", k) for k in keys])
        eq(got, [b"$7\r\n%s\r\n" % k[:7].encode() for k in keys], "twenty GETs pipelined")
        eq(stats("redis")["tx"] - tx, 1, "kernel answers to the segment of twenty GETs")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_set_with_expiry_never_served_past_it():
    """SET ... EX, SET ... PX, SETEX and PSETEX, and SET ... EXAT and
    SET ... PXAT, with NX or XX too, are committed by the kernel with their
    expiry: the kernel
    answers the key at once, and never once Redis has expired it (a GET
    sent after the write's reply plus the time to live, or after the Unix
    time given, is never answered by the kernel, and Redis then answers
    nil)."""
    # the kernel reads a Unix time on the TAI clock, which runs this far
    # ahead of real time (0 unless NTP set it): a key must outlive that
    ahead = max(0.0, time.clock_gettime(time.CLOCK_TAI) - time.time())

    def at(secs, ms=False):
        """The Unix time @secs from now, plus the TAI offset."""
        t = time.time() + ahead + secs
        return str(int(t * 1000)) if ms else str(int(t) + 1)
    r = Redis()
    try:
        c = start_serving(r)
        # (key, the write, its time to live in s: None for a Unix time)
        for key, cmd, ttl in (("wt:px", lambda: ("SET", "wt:px", "short-lived", "PX", "1500"), 1.5),
                              ("wt:ex", lambda: ("SET", "wt:ex", "short-lived", "EX", "2"), 2.0),
                              ("wt:setex", lambda: ("SETEX", "wt:setex", "2", "short-lived"), 2.0),
                              ("wt:psetex", lambda: ("PSETEX", "wt:psetex", "1500", "short-lived"),
                               1.5),
                              ("wt:pxat", lambda: ("SET", "wt:pxat", "short-lived", "PXAT",
                                                   at(1.5, ms=True)), None),
                              ("wt:exat", lambda: ("SET", "wt:exat", "short-lived", "EXAT",
                                                   at(1.0)), None),
                              ("wt:nxpx", lambda: ("SET", "wt:nxpx", "short-lived", "NX", "PX",
                                                   "1500"), 1.5),
                              # XX: the key must exist, here without an expiry
                              ("wt:exxx", lambda: (c.call("SET", "wt:exxx", "before"),
                                                   ("SET", "wt:exxx", "short-lived", "EX", "2",
                                                    "XX"))[1], 2.0)):
            cmd = cmd()
            opt = " ".join(a for a in cmd if a not in (key, "short-lived"))
            t0 = time.time()
            eq(c.call(*cmd), b"+OK\r\n", opt)
            acked = time.time()
            if ttl is None:
                ttl = int(cmd[4]) / (1000.0 if cmd[3] == "PXAT" else 1.0) - acked
            live, late = 0, []
            while True:
                tx = stats("redis")["tx"]
                sent = time.time()
                rep = c.call("GET", key)
                kernel = stats("redis")["tx"] > tx
                if rep == b"$-1\r\n":
                    eq(kernel, False, "the kernel answered nil")
                    break
                eq(rep, b"$11\r\nshort-lived\r\n", "GET " + key)
                if kernel:
                    live += 1
                    if sent > acked + ttl:
                        late.append(sent - acked)
                if time.time() - t0 > ttl + 3 * SLOW:
                    raise AssertionError("%s never expired" % key)
                time.sleep(0.01)
            gone = time.time() - t0
            print("    %s: the kernel answered %d GETs, Redis said nil %.2f s after the write"
                  % (opt, live, gone))
            if late:
                raise AssertionError("the kernel answered %s %.3f s after the SET's reply (TTL %.1f s)"
                                     % (key, late[0], ttl))
            if not live:
                raise AssertionError("the kernel never answered %s while it lived" % key)
        # a Unix time already past: Redis deletes the key at once
        eq(c.call("SET", "wt:past", "gone", "EXAT", str(int(time.time()) - 10)), b"+OK\r\n",
           "SET EXAT in the past")
        for _ in range(5):
            eq(kernel_get(c, "wt:past", b"$-1\r\n"), False, "the kernel answered wt:past")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


class Stalled:
    """A connection whose replies Redis cannot send: it asks for a large
    value many times without reading, so a request sent after that is
    executed by Redis while its reply waits behind megabytes."""

    def __init__(self, r):
        setter = Client(r.port)
        eq(setter.call("SET", "wt:big", "x" * (512 << 10)), b"+OK\r\n", "SET wt:big")
        setter.close()
        self.c = socket.socket()
        self.c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.c.connect(("127.0.0.1", r.port))
        self.c.sendall(resp("GET", "wt:big") * 16)
        time.sleep(0.3)

    def send(self, *args):
        self.c.sendall(resp(*args))
        time.sleep(0.2)     # Redis reads and executes it

    def drain(self, tail):
        """Read the 16 values, then what must follow them."""
        self.c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        want = b"$%d\r\n%s\r\n" % (512 << 10, b"x" * (512 << 10))
        got = recv_exact(self.c, len(want) * 16 + len(tail))
        eq(got[len(want) * 16:], tail, "the stalled connection's last reply")
        self.c.close()


@test
def test_write_through_with_a_reply_held_back():
    """Two writers of one key, one whose +OK Redis cannot send yet (its
    connection does not read): whatever order the two replies leave in,
    the kernel answers a GET only with the value Redis holds, and answers
    it from the cache once the writes are answered.  The writes are SETs,
    then MSETs of the key and another."""
    r = Redis()
    try:
        c, b = start_serving(r), Client()
        for form, first in itertools.product(("SET", "MSET"), ("stalled", "other")):
            key = "wt:k:%s:%s" % (form, first)

            def write(v):
                if form == "SET":
                    return ("SET", key, v)
                return ("MSET", key + ":x", v, key, v)

            eq(c.call("SET", key, "old"), b"+OK\r\n", "SET old")
            eq(kernel_get(c, key, b"$3\r\nold\r\n"), True, "%s: old committed" % first)
            a = Stalled(r)
            if first == "stalled":
                # Redis executes A's write, then B's: B's value stays
                a.send(*write("from-a"))
                eq(b.call(*write("from-b")), b"+OK\r\n", form + " from B")
                final = b"from-b"
            else:
                eq(b.call(*write("from-b")), b"+OK\r\n", form + " from B")
                a.send(*write("from-a"))
                final = b"from-a"
                # A's value is in the cache already, pending: put when
                # the handler passed the write, never served until its
                # +OK leaves (docs/coherence.md)
                wait_for(lambda: kv_entry("redis", key.encode()) == (b"from-a", 1),
                         what="A's value pending in the cache")
            want = b"$%d\r\n%s\r\n" % (len(final), final)
            before = sum(kernel_get(c, key, want) for _ in range(20))
            a.drain(b"+OK\r\n")
            if first == "other":
                eq(kv_entry("redis", key.encode()), (b"from-a", 0),
                   "A's value once its +OK left")
            after = sum(kernel_get(c, key, want) for _ in range(20))
            print("    %s %s's reply held back: Redis holds %s; the kernel answered %d of 20 GETs "
                  "before the held reply left, %d of 20 after"
                  % (first, form, final.decode(), before, after))
            if first == "other" and before:
                raise AssertionError("the kernel answered while A's SET was unanswered")
            if after < 15:
                raise AssertionError("only %d of 20 GETs from the kernel once both writes were answered"
                                     % after)
        c.close()
        b.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_unanswered_write_forgotten_at_close():
    """A write whose +OK never leaves (its connection does not read, then
    resets): the value the handler put in the cache pending is deleted when
    the connection closes, not kept there unserved; the kernel then learns
    what Redis holds as for any other miss."""
    r = Redis()
    try:
        c = start_serving(r)
        key = "wt:gone"
        eq(c.call("SET", key, "old"), b"+OK\r\n", "SET old")
        eq(kernel_get(c, key, b"$3\r\nold\r\n"), True, "old committed")
        a = Stalled(r)
        a.send("SET", key, "from-a")
        wait_for(lambda: kv_entry("redis", key.encode()) == (b"from-a", 1),
                 what="A's value pending in the cache")
        a.c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        a.c.close()     # a reset: the +OK never leaves
        wait_for(lambda: kv_entry("redis", key.encode()) is None,
                 what="A's pending value deleted when its connection closed")
        want = b"$6\r\nfrom-a\r\n"
        wait_for(lambda: kernel_get(c, key, want), timeout=10,
                 what="the kernel answering what Redis holds")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_expiring_keys_never_served():
    """A key with a time to live is never learned by the filler: it asks
    PTTL as soon as a GET misses, before Redis's reply is captured, and
    only a key that never expires is learned.  Once PERSIST removes the
    time to live the key is learned; EXPIRE and GETEX give it one again
    and the kernel stops answering it at once.  (A SET ... PX is
    committed by the kernel with its expiry:
    test_set_with_expiry_never_served_past_it.)"""
    r = Redis()
    try:
        start_service(r)
        r.cli("SET", "plain", "stays")
        r.cli("SET", "exp", "goes")
        r.cli("EXPIRE", "exp", "600")
        c = Client()

        def from_kernel(key, want, n):
            """How many of @n GETs of @key the kernel answered (this
            client is the only one)."""
            before = stats("redis")["tx"]
            for _ in range(n):
                eq(c.call("GET", key), want, "GET " + key)
                time.sleep(0.005)
            return stats("redis")["tx"] - before

        warm(c, "plain", b"stays")
        # a second of asking: PTTL is asked and the key skipped many times
        eq(from_kernel("exp", b"$4\r\ngoes\r\n", 200), 0, "GETs of a key with a TTL from the kernel")
        eq(c.call("PERSIST", "exp"), b":1\r\n", "PERSIST")
        warm(c, "exp", b"goes")
        # (value before, command giving a TTL, its reply, value after)
        for before, cmd, want, after in (
                (b"goes", ("EXPIRE", "exp", "600"), b":1\r\n", b"goes"),
                (b"goes", ("GETEX", "exp", "EX", "600"), b"$4\r\ngoes\r\n", b"goes")):
            c.call("PERSIST", "exp")
            warm(c, "exp", before)
            eq(c.call(*cmd), want, " ".join(cmd))
            eq(from_kernel("exp", b"$4\r\n%s\r\n" % after, 100), 0,
               "GETs from the kernel after " + cmd[0])
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_learning_batch_of_long_keys():
    """Forty 102-byte keys missed while the filler is stopped: it takes
    them in batches of PTTLs that each fill most of a write, and learns
    every one without losing its connection to Redis (a batch the byte
    budget allowed once failed to encode, and the filler reconnected and
    invalidated the cache)."""
    r = Redis()
    keys = ["key:%03d:" % i + "x" * 94 for i in range(40)]
    try:
        start_service(r)
        log0 = os.path.getsize("/run/xps/redis.log")
        for k in keys:
            r.cli("SET", k, "v-" + k[:7])
        pid = next(s["daemon_pid"] for s in xpsctl("service", "list")
                   if s["name"] == "redis")
        cs = [Client() for _ in keys]
        os.kill(pid, signal.SIGSTOP)
        try:
            for c, k in zip(cs, keys):
                c.c.sendall(resp("GET", k))
            for c, k in zip(cs, keys):
                r2, c.buf = read_reply(c.c, c.buf)
                eq(r2, b"$9\r\nv-%s\r\n" % k[:7].encode(), "GET " + k)
        finally:
            os.kill(pid, signal.SIGCONT)
        for c, k in zip(cs, keys):
            warm(c, k, ("v-" + k[:7]).encode())
            c.close()
        with open("/run/xps/redis.log") as f:
            f.seek(log0)
            log = f.read()
        eq("lost the connection" in log, False, "the filler's log: " + log[-300:])
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_value_lengths_byte_exact():
    """Values of every length class around the handler's 8-byte copy steps
    and its 1 KiB limit come back from the kernel byte for byte."""
    lengths = [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 1015, 1016, 1017,
               1023, 1024]
    r = Redis()
    rnd = random.Random(11)
    try:
        start_service(r)
        c = Client()
        vals = {}
        for n in lengths:
            vals[n] = bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz0123456789")
                            for _ in range(n))
            eq(c.call("SET", "len:%d" % n, vals[n]), b"+OK\r\n", "SET")
        for n in lengths:
            warm(c, "len:%d" % n, vals[n])
        tx0 = stats("redis")["tx"]
        for n in lengths:
            eq(c.call("GET", "len:%d" % n), b"$%d\r\n%s\r\n" % (n, vals[n]),
               "GET of a %d-byte value" % n)
        eq(stats("redis")["tx"] - tx0, len(lengths), "GETs answered by the kernel")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_differential_oracle():
    """The same stream with and without XPS: byte-identical replies."""
    cmds = []
    rnd = random.Random(7)
    keys = ["k%d" % i for i in range(12)]
    for i in range(400):
        k = rnd.choice(keys)
        op = rnd.random()
        if op < 0.6:
            cmds.append(("GET", k))
        elif op < 0.75:
            cmds.append(("SET", k, "v%d" % i + "x" * rnd.randint(0, 300)))
        elif op < 0.8:
            cmds.append(("DEL", k))
        elif op < 0.85:
            cmds.append(("APPEND", k, "+"))
        elif op < 0.9:
            cmds.append(("INCR", "counter"))
        elif op < 0.93:
            cmds.append(("GET", k, "extra"))      # wrong arity: an error
        elif op < 0.96:
            cmds.append(("LPUSH", "list:" + k, "a"))
        else:
            cmds.append(("GET", "list:" + k))    # WRONGTYPE
    outs = []
    for accelerated in (False, True):
        r = Redis()
        try:
            if accelerated:
                start_service(r)
            c = Client()
            got = []
            for rep in range(3):              # repeats let the cache warm
                for cmd in cmds:
                    got.append(c.call(*cmd))
                time.sleep(0.2)
            outs.append(got)
            c.close()
        finally:
            if accelerated:
                s = stats("redis")
                print("    accelerated run: %d replies from the kernel" % s["tx"])
                xpsctl("service", "stop", "redis", check=False)
            r.close()
    for i, (a, b) in enumerate(zip(outs[0], outs[1])):
        if a != b:
            raise AssertionError("reply %d differs: %r without XPS, %r with" % (i, a, b))


@test
def test_no_stale_read_after_acknowledged_write():
    r = Redis()
    try:
        start_service(r)
        r.cli("SET", "hot", "0")
        stop = threading.Event()
        errors = []
        acked = [0]

        def writer():
            w = Client()
            i = 0
            while not stop.is_set():
                i += 1
                eq(w.call("SET", "hot", str(i)), b"+OK\r\n", "SET")
                acked[0] = i          # acknowledged
            w.close()

        def reader():
            c = Client()
            while not stop.is_set():
                floor = acked[0]
                rep = c.call("GET", "hot")
                v = int(rep.split(b"\r\n")[1])
                if v < floor:
                    errors.append("read %d after %d was acknowledged" % (v, floor))
                    return
            c.close()
        ts = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(3)]
        for t in ts:
            t.start()
        time.sleep(4)
        stop.set()
        for t in ts:
            t.join(10)
        if errors:
            raise AssertionError(errors[0])
        print("    %d writes; kernel answers %d" % (acked[0], stats("redis")["tx"]))
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


def never_stale_after(key, write):
    """Cache @key as "old" (the kernel answers it on connection c), run
    write(w, c) with a second connection w, which leaves "new" in Redis and
    reads its +OK, then GET @key twenty times on c: always "new"."""
    r = Redis()
    try:
        c = start_serving(r)
        eq(c.call("SET", key, "old"), b"+OK\r\n", "SET")
        warm(c, key, b"old")
        w = Client()
        write(w, c)
        for _ in range(20):
            eq(c.call("GET", key), b"$3\r\nnew\r\n", "GET after the acknowledged write")
        w.close()
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_writes_after_lost_boundaries_invalidate():
    """A connection whose request boundaries the handler lost (a head cut
    longer than it keeps) is never parsed again: its bytes may hold any
    write.  Here a value carries a fake SET whose length swallows the next
    real SET, as a handler parsing from the cut would read it."""
    def write(w, c):
        key = b"K" * 400
        real = resp(b"SET", b"lb:k", b"new")
        fake = b"*3\r\n$3\r\nSET\r\n$3\r\nfoo\r\n$%d\r\n" % (len(real) + 10)
        w.c.sendall(b"*3\r\n$3\r\nSET\r\n$400\r\n" + key[:390])
        time.sleep(0.05 * SLOW)
        w.c.sendall(key[390:] + b"\r\n$%d\r\n" % len(fake) + fake + b"\r\n")
        rep, w.buf = read_reply(w.c, w.buf)
        eq(rep, b"+OK\r\n", "SET of the long key")
        warm(c, "lb:k", b"old")
        w.c.sendall(real)
        rep, w.buf = read_reply(w.c, w.buf)
        eq(rep, b"+OK\r\n", "SET lb:k new")
    never_stale_after("lb:k", write)


@test
def test_protocol_errors_cost_no_cache():
    """A request Redis rejects with a protocol error ("invalid bulk
    length", "expected '$'", "invalid multibulk length") is executed by
    no one, nor is anything after it on its connection, which Redis
    closes: the kernel keeps serving what it holds (before, every such
    request dropped every cached value), and a SET sent behind it, which
    Redis never executes, changes nothing.  A long negative count, which
    Redis takes for an empty array and goes on, is a write of every key:
    the SET behind it is never served stale.  An inline line with a NUL
    never ends for Redis, which executes nothing after it: the same."""
    r = Redis()
    try:
        c = start_serving(r)
        eq(c.call("SET", "pe:k", "old"), b"+OK\r\n", "SET")
        warm(c, "pe:k", b"old")
        for bad in (b"*1\r\n$x\r\n", b"*2\r\n$3\r\nGET\r\n:4\r\n", b"*1x\r\n",
                    b"*3\r\n$3\r\nSET\r\n$4\r\npe:k\r\n$-3\r\n"):
            w = Client()
            eq(w.call("PING"), b"+PONG\r\n", "PING")
            w.c.sendall(resp(b"GET", b"pe:k") + bad + resp(b"SET", b"pe:k", b"new"))
            rep, w.buf = read_reply(w.c, w.buf)
            eq(rep, b"$3\r\nold\r\n", "GET before %r" % bad)
            rep, w.buf = read_reply(w.c, w.buf)
            eq(rep[:19], b"-ERR Protocol error", "Redis's answer to %r" % bad)
            eq(w.c.recv(100), b"", "the connection after %r" % bad)
            w.close()
            eq(kernel_get(c, "pe:k", b"$3\r\nold\r\n"), True,
               "the kernel answered pe:k after %r" % bad)
        # an inline line with a NUL never ends for Redis (strchr()): it
        # answers nothing more on the connection and executes nothing
        w = Client()
        w.c.sendall(resp(b"GET", b"pe:k") + b"GET a\0b\r\n" + resp(b"SET", b"pe:k", b"new"))
        rep, w.buf = read_reply(w.c, w.buf)
        eq(rep, b"$3\r\nold\r\n", "GET before an inline NUL")
        w.c.settimeout(0.5)
        try:
            more = w.c.recv(100)
        except socket.timeout:
            more = None
        eq(more, None, "Redis's answer after an inline NUL")
        eq(kernel_get(c, "pe:k", b"$3\r\nold\r\n"), True, "the kernel answered pe:k after an inline NUL")
        w.close()
        # Redis takes a count of 19 digits below zero for an empty array
        w = Client()
        w.c.sendall(b"*-1234567890123456789\r\n" + resp(b"SET", b"pe:k", b"new"))
        rep, w.buf = read_reply(w.c, w.buf)
        eq(rep, b"+OK\r\n", "SET behind a long negative count")
        for _ in range(20):
            eq(c.call("GET", "pe:k"), b"$3\r\nnew\r\n", "GET after it")
        w.close()
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_unknown_commands_cost_no_cache():
    """A command Redis does not know is refused, executing nothing.  Once
    the filler has found every command this Redis lists (COMMAND LIST) in
    the handler's table, the kernel keeps serving what it holds across
    one, inline or not (before, every such command dropped every cached
    value).  A command quoted inline is still a write of every key (Redis
    unquotes the name), and so is a name with a NUL (Redis's command table
    compares names with strcasecmp())."""
    r = Redis()
    try:
        c = start_serving(r)
        eq(c.call("SET", "uc:k", "old"), b"+OK\r\n", "SET")
        warm(c, "uc:k", b"old")

        def survives(raw):
            c.c.sendall(raw)
            rep, c.buf = read_reply(c.c, c.buf)
            eq(rep[:4], b"-ERR", "Redis's answer to %r" % raw)
            return kernel_get(c, "uc:k", b"$3\r\nold\r\n")
        # the filler grants it at its next check (once a second)
        t = time.time()
        while not survives(resp(b"FOOBAR")):
            if time.time() - t > 5 * SLOW:
                raise AssertionError("an unknown command still drops the cache")
            warm(c, "uc:k", b"old")
            time.sleep(0.2)
        for raw in (resp(b"NOSUCHCMD", b"uc:k", b"new"), resp(b"$3"),
                    b"FOOBAR uc:k new\r\n"):
            eq(survives(raw), True, "the kernel answered uc:k after %r" % raw)
        # a NUL in the name: Redis's table compares names with strcasecmp(),
        # so "SET\0x" may run SET: still a write of every key
        c.c.sendall(resp(b"SET\x00x", b"uc:k", b"old"))
        rep, c.buf = read_reply(c.c, c.buf)
        eq(rep[:3] in (b"+OK", b"-ER"), True, "Redis's answer to SET\\0x: %r" % rep)
        eq(kernel_get(c, "uc:k", b"$3\r\nold\r\n"), False,
           "the kernel answered uc:k from its cache after SET\\0x")
        warm(c, "uc:k", b"old")
        # the filler's own requests (its checks, the COMMAND INFOs of the
        # grant) cost no cache either: it keeps its connection's bounds
        time.sleep(2.5)
        eq(kernel_get(c, "uc:k", b"$3\r\nold\r\n"), True,
           "the kernel answered uc:k after the filler's checks")
        # "SET" quoted: Redis runs SET
        c.c.sendall(b'"SET" uc:k new\r\n')
        rep, c.buf = read_reply(c.c, c.buf)
        eq(rep, b"+OK\r\n", "a quoted inline SET")
        for _ in range(20):
            eq(c.call("GET", "uc:k"), b"$3\r\nnew\r\n", "GET after the quoted SET")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_renamed_command_is_a_write():
    """Against a Redis with a renamed command (rename-command SET MYSET),
    which the handler does not know, the filler grants nothing: MYSET is
    a write of every key, and no GET after its +OK is served stale."""
    r = Redis(args=("--rename-command", "SET", "MYSET"))
    try:
        start_service(r)
        c = Client()
        eq(c.call("MYSET", "rn:k", "old"), b"+OK\r\n", "MYSET")
        warm(c, "rn:k", b"old")
        time.sleep(2.5)     # checks enough for a wrong grant to show
        warm(c, "rn:k", b"old")
        eq(c.call("MYSET", "rn:k", "new"), b"+OK\r\n", "MYSET")
        for _ in range(20):
            eq(c.call("GET", "rn:k"), b"$3\r\nnew\r\n", "GET after MYSET")
        eq(c.call("SET", "rn:k", "x")[:4], b"-ERR", "SET, renamed away")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_requests_cut_in_their_heads():
    """A request head cut by the end of its segment is carried to the next
    one: a write whose key the cut splits invalidates that key (never a
    stale GET after its +OK), and the connection stays on the fast path."""
    r = Redis()
    try:
        c = start_serving(r)
        w = Client()
        for i, cut in enumerate((9, 14, 17, 19, 21, 24)):
            key = b"cut:k%d" % i
            eq(c.call("SET", key, "old"), b"+OK\r\n", "SET")
            warm(c, key.decode(), b"old")
            req = resp(b"SET", key, b"new%d" % i)
            w.c.sendall(req[:cut])
            time.sleep(0.05 * SLOW)
            w.c.sendall(req[cut:])
            rep, w.buf = read_reply(w.c, w.buf)
            eq(rep, b"+OK\r\n", "SET cut at %d" % cut)
            eq(c.call("GET", key), b"$4\r\nnew%d\r\n" % i, "GET after the cut SET")
            # a GET cut in its head, on the same connection
            req = resp(b"GET", key)
            w.c.sendall(req[:cut // 2])
            time.sleep(0.05 * SLOW)
            w.c.sendall(req[cut // 2:])
            rep, w.buf = read_reply(w.c, w.buf)
            eq(rep, b"$4\r\nnew%d\r\n" % i, "GET cut at %d" % (cut // 2))
        # the writer's connection kept its count: the kernel answers on it
        warm(w, "cut:k5", b"new5")
        w.close()
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


def slot_active(name, on):
    """Set or clear XPS_SLOT_ACTIVE of context @name's slot in the pinned
    xps_slots map: while it is clear the framework passes the context's
    segments without running its handler (as a nested run does)."""
    import json
    slot = [h for h in xpsctl("handler", "list") if h["name"] == name][0]["slot"]
    key = ["%d" % b for b in slot.to_bytes(4, "little")]
    pin = "/sys/fs/bpf/xps/xps_slots"
    got = json.loads(subprocess.check_output(
        ["bpftool", "-j", "map", "lookup", "pinned", pin, "key"] + key))
    val = [int(b, 16) for b in got["value"]]
    val[0] = (val[0] | 1) if on else (val[0] & ~1)
    subprocess.check_call(["bpftool", "map", "update", "pinned", pin, "key"] + key +
                          ["value"] + ["%d" % b for b in val])


def set_cut_in_its_head(key, before=b"", between=None):
    """SET @key old and warm it; then SET @key new in two segments, the
    first after @before (PINGs) and cut inside the key, with between()
    run before the second.  The SET is answered after the PONGs, a GET
    says new, and the kernel answers the connection again: it kept its
    boundaries."""
    r = Redis()
    try:
        c = start_serving(r)
        eq(c.call("SET", key, "old"), b"+OK\r\n", "SET")
        warm(c, key, b"old")
        write = resp(b"SET", key.encode(), b"new")
        cut = write.index(key.encode()) + 2
        c.c.sendall(before + write[:cut])
        time.sleep(0.05)
        if between:
            between()
        c.c.sendall(write[cut:])
        for i in range(before.count(b"PING")):
            rep, c.buf = read_reply(c.c, c.buf)
            eq(rep, b"+PONG\r\n", "PING %d" % i)
        rep, c.buf = read_reply(c.c, c.buf)
        eq(rep, b"+OK\r\n", "the SET whose head was cut")
        eq(c.call("GET", key), b"$3\r\nnew\r\n", "GET after it")
        warm(c, key, b"new")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_head_cut_past_the_walk_is_carried():
    """A segment of more requests than the handler walks, whose end cuts a
    request's head: the requests past the walk are counted, the cut head
    is carried to the next segment as the walk carries one (before, the
    connection lost its boundaries for good: never served again, and each
    of its segments dropped the cache), and the write it starts
    invalidates its key once whole."""
    set_cut_in_its_head("ch:k", before=resp(b"PING") * 40)  # walks 32


@test
def test_handler_update_keeps_a_carried_head():
    """A request head carried to the connection's next segment survives a
    handler update (the same object again): the new handler parses it
    whole with the rest, and the connection keeps its boundaries (before,
    the head went with the old handler's map and the connection was adrift
    for good: never served again, each segment a write of every key)."""
    obj = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       ".output", "bpf", "redis.bpf.o")
    set_cut_in_its_head("hu:k", between=lambda: xpsctl("handler", "update", "redis", obj))


@test
def test_write_the_handler_never_saw():
    """A segment the framework passes without running the handler (here:
    its slot made inactive for a moment) may hold any write: the kernel
    must not answer the old value after it."""
    def write(w, c):
        slot_active("redis", False)
        try:
            eq(w.call("SET", "unseen:k", "new"), b"+OK\r\n", "SET with no handler run")
        finally:
            slot_active("redis", True)
    never_stale_after("unseen:k", write)


@test
def test_write_in_urgent_data():
    """A SET whose last byte is urgent: the patched kernel's hook runs
    the program on it see-only and marks the connection lost (urgent data
    may leave the stream Redis reads), so the framework counts a write of
    every key before Redis has even read the SET, and no GET after Redis's
    answer is served a value cached before (docs/coherence.md)."""
    r = Redis()
    try:
        c = start_serving(r)
        eq(c.call("SET", "urg:k", "old"), b"+OK\r\n", "SET")
        warm(c, "urg:k", b"old")
        w = Client()
        # the last byte is urgent: out of band Redis never reads it, in
        # band (the stock backend's sockmap) it is an empty line it skips
        w.c.send(resp(b"SET", b"urg:k", b"new") + b"\n", socket.MSG_OOB)
        rep, w.buf = read_reply(w.c, w.buf)
        eq(rep, b"+OK\r\n", "SET sent with urgent data")
        for _ in range(20):
            eq(c.call("GET", "urg:k"), b"$3\r\nnew\r\n", "GET after the SET")
        eq(w.call("PING"), b"+PONG\r\n", "PING after it")
        w.close()
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_pipelines_split_and_state():
    r = Redis()
    try:
        start_service(r)
        for i in range(8):
            r.cli("SET", "p%d" % i, "val%d" % i)
        c = Client()
        for i in range(8):
            warm(c, "p%d" % i, b"val%d" % i)
        # a pipeline of hundreds of mixed commands: every reply, in order
        cmds = []
        for i in range(300):
            cmds.append(("GET", "p%d" % (i % 8)) if i % 5 else ("SET", "w%d" % i, "x"))
        got = c.pipeline(cmds)
        for cmd, rep in zip(cmds, got):
            want = b"+OK\r\n" if cmd[0] == "SET" else b"$4\r\nval%s\r\n" % cmd[1][1:].encode()
            eq(rep, want, "pipelined %r" % (cmd,))
        # that pipeline's segments were larger than the handler parses,
        # which invalidates everything: warm the keys again
        for i in range(8):
            warm(c, "p%d" % i, b"val%d" % i)
        # 16 GETs in one segment are answered together
        before = stats("redis")["tx"]
        got = c.pipeline([("GET", "p%d" % (i % 8)) for i in range(16)])
        eq(len(got), 16, "replies")
        if stats("redis")["tx"] == before:
            raise AssertionError("a segment of 16 cached GETs was not answered by the kernel")
        # a request split at every byte offset
        req = resp("GET", "p3")
        for cut in range(1, len(req)):
            c.c.sendall(req[:cut])
            time.sleep(0.002)
            c.c.sendall(req[cut:])
            rep, c.buf = read_reply(c.c, c.buf)
            eq(rep, b"$4\r\nval3\r\n", "GET split at %d" % cut)
        # SELECT: another database, which the cache must not answer for
        eq(c.call("SELECT", "1"), b"+OK\r\n", "SELECT 1")
        eq(c.call("GET", "p3"), b"$-1\r\n", "db 1 has no p3")
        c.close()
        # MULTI: queued, not answered
        m = Client()
        eq(m.call("MULTI"), b"+OK\r\n", "MULTI")
        eq(m.call("GET", "p1"), b"+QUEUED\r\n", "GET inside MULTI")
        eq(m.call("EXEC"), b"*1\r\n$4\r\nval1\r\n", "EXEC")
        m.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_pipelined_replies_over_16k():
    """16 GETs of 1 KiB values in one segment: 16,528 reply bytes, more than
    a packet can be grown to.  Every reply right, in order, on every
    backend; on the native one (bpf_serve_reply()) the kernel answers it."""
    r = Redis()
    try:
        start_service(r)
        vals = [bytes([65 + i]) * 1000 + b"%024d" % i for i in range(16)]
        for i, v in enumerate(vals):
            r.cli("SET", "big%d" % i, v.decode())
        c = Client()
        for i, v in enumerate(vals):
            warm(c, "big%d" % i, v)
        want = [b"$1024\r\n%s\r\n" % v for v in vals]
        tx0, g0 = stats("redis")["tx"], r.getcalls()
        for _ in range(5):
            eq(c.pipeline([("GET", "big%d" % i) for i in range(16)]), want,
               "16 pipelined 1 KiB GETs")
        tx, gets = stats("redis")["tx"] - tx0, r.getcalls() - g0
        print("    5 pipelines of 16: %d answered by the kernel, %d GETs by Redis"
              % (tx, gets))
        if backend() == "native" and tx == 0:
            raise AssertionError("the native kernel answered none of the 16.5 KiB replies")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_real_clients():
    r = Redis()
    try:
        start_service(r)
        r.cli("SET", "key:__rand_int__", "x" * 128)
        c = Client()
        warm(c, "key:__rand_int__", b"x" * 128)
        c.close()
        g0 = r.getcalls()
        p = subprocess.run(["redis-benchmark", "-p", str(r.port), "-n", "20000", "-P", "16",
                            "-c", "8", "-t", "get", "-q"], capture_output=True, text=True,
                           timeout=120)
        eq(p.returncode, 0, "redis-benchmark exit status")
        if "requests per second" not in p.stdout:
            raise AssertionError(p.stdout + p.stderr)
        tx = stats("redis")["tx"]
        print("    redis-benchmark -P 16: %s; Redis GET calls %d, kernel TX %d"
              % (p.stdout.strip().splitlines()[-1], r.getcalls() - g0, tx))
        eq(r.cli("GET", "key:__rand_int__"), "x" * 128, "redis-cli GET")
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()



def service_state(name):
    for svc in xpsctl("service", "list"):
        if svc["name"] == name:
            return svc["state"]
    raise AssertionError("no service " + name)


@test
def test_filler_survives_busy_script_and_restart():
    """A script past lua-time-limit (Redis answers BUSY) then SCRIPT KILL,
    and Redis restarted with other data: the filler stays, `service list`
    says what it is doing, the kernel never serves the old data, and it
    answers again once the filler can vouch for the cache."""
    r = Redis()
    try:
        start_service(r)
        r.cli("SET", "sk", "old-value")
        c = Client()
        warm(c, "sk", b"old-value")
        eq(service_state("redis"), "running", "state")
        script = subprocess.Popen(
            ["redis-cli", "-p", str(r.port), "EVAL",
             "local t = redis.call('TIME') while true do local n = redis.call('TIME') "
             "if n[1] - t[1] > 20 then break end end return 1", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: "BUSY" in subprocess.run(
                ["redis-cli", "-p", str(r.port), "PING"], capture_output=True,
                text=True).stdout, timeout=15, what="Redis to answer BUSY")
            wait_for(lambda: service_state("redis") != "running", timeout=5,
                     what="the service to leave the running state")
            eq(r.cli("SCRIPT", "KILL"), "OK", "SCRIPT KILL")
        finally:
            script.wait(10)
        wait_for(lambda: service_state("redis") == "running", timeout=15,
                 what="the filler to serve again after SCRIPT KILL")
        warm(c, "sk", b"old-value")
        c.close()
        # restarted with other data: the old value must never come back
        r.close()
        r = Redis()
        r.cli("SET", "sk", "new-value")
        c = Client()
        t = time.time()
        while time.time() - t < 3:
            eq(c.call("GET", "sk"), b"$9\r\nnew-value\r\n", "GET after the restart")
            time.sleep(0.05)
        wait_for(lambda: service_state("redis") == "running", timeout=15,
                 what="the filler to reconnect")
        warm(c, "sk", b"new-value")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()

@test
def test_service_list_and_stop():
    r = Redis()
    try:
        start_service(r, "rds")
        lst = xpsctl("service", "list")
        eq([(x["name"], x["service"], x["port"]) for x in lst], [("rds", "redis", PORT)], "service list")
        if not lst[0]["daemon_pid"]:
            raise AssertionError("no daemon")
        pid = lst[0]["daemon_pid"]
        xpsctl("service", "stop", "rds")
        time.sleep(0.2)
        eq(os.path.exists("/proc/%d" % pid), False, "daemon stopped")
        eq(xpsctl("handler", "list"), [], "context removed")
        r2 = xpsctl("service", "redis", check=False)
        if "error" not in r2:
            raise AssertionError(r2)
        # a context removed behind the service's back: its daemon exits
        start_service(r, "rds")
        pid = xpsctl("service", "list")[0]["daemon_pid"]
        xpsctl("handler", "detach", "rds")
        wait_for(lambda: not os.path.exists("/proc/%d" % pid), timeout=10,
                 what="xps-redisd to exit when its context is gone")
    finally:
        xpsctl("service", "stop", "rds", check=False)
        r.close()


@test
def test_value_served_only_with_its_seal():
    """A cached value is served only when the copy the handler sends
    matches the seal its filler put on it (include/xps/kvsum.h): bytes
    from another key, a torn copy or a stale one are passed to Redis.
    No filler here: the test puts the values itself."""
    r = Redis()
    try:
        r.cli("SET", "k", "from-redis")
        attach("redis", PORT, name="sealed")
        c = Client()
        c.call("PING")      # accepted and counted before the cache has k

        def kernel_get(what):
            before = stats("sealed")["tx"]
            got = c.call("GET", "k")
            return got, stats("sealed")["tx"] - before

        xpsctl("data", "put", "sealed", "k", kv_value_hex(b"k", b"from-cache"))
        eq(kernel_get("sealed"), (b"$10\r\nfrom-cache\r\n", 1), "a sealed value")
        def value(val, key=b"k", seal_val=None, seal_version=0, seal=None):
            if seal is None:
                seal = kv_seal(len(val), seal_version, 0, 0, key,
                               val if seal_val is None else seal_val)
            return kv_value_hex(b"k", val, seal=seal)
        eq(value(b"from-cache"), kv_value_hex(b"k", b"from-cache"), "seal")
        bad = [
            ("sealed for other bytes", value(b"from-cache", seal_val=b"from-kache")),
            ("sealed for another key", value(b"from-cache", key=b"j")),
            ("sealed for another version", value(b"from-cache", seal_version=5)),
            ("not sealed", value(b"from-cache", seal=0)),
        ]
        for what, val in bad:
            xpsctl("data", "set", "sealed", "k", val)
            eq(kernel_get(what), (b"$10\r\nfrom-redis\r\n", 0), "a value " + what)
        c.close()
    finally:
        xpsctl("handler", "detach", "sealed", check=False)
        r.close()


# ---- the kernel answers only what Redis would answer, now (issue 24) ----

ADMIN = ("admin", "adminpw")


def admin_call(port, *args):
    """@args over a new connection authenticated as the admin user."""
    c = Client(port)
    try:
        eq(c.call("AUTH", *ADMIN), b"+OK\r\n", "AUTH admin")
        return c.call(*args)
    finally:
        c.close()


def default_user_open(*servers):
    for srv in servers:
        admin_call(srv.port, "ACL", "SETUSER", "default", "reset", "on",
                   "nopass", "~*", "&*", "+@all")


def tx():
    return stats("redis")["tx"]


def same_gets(pairs, key, what):
    """GET @key on each (accelerated, plain) pair of connections: the
    same bytes."""
    for a, b in pairs:
        eq(a.call("GET", key), b.call("GET", key), what)


def same_gets_for(seconds, r, p, old, old_p, key, what):
    """For @seconds: GET @key on a fresh connection to each of @r
    (accelerated) and @p (plain), and on the older @old and @old_p: the
    same bytes each time."""
    t = time.time()
    while time.time() - t < seconds:
        fresh, fresh_p = Client(r.port), Client(p.port)
        same_gets([(fresh, fresh_p), (old, old_p)], key, what)
        fresh.close()
        fresh_p.close()
        time.sleep(0.05)


@test
def test_acl_changes_follow_redis():
    """Five changes of the default user (a password, key patterns, -get,
    off, resetpass), each made with redis-cli and over an accelerated
    connection: right after the change, fresh and older connections get
    from XPS the bytes a plain Redis gives them (-NOAUTH, -NOPERM or the
    value), and the kernel answers none of them; once the default user may
    read everything again, the kernel serves again."""
    r, p = Redis(), Redis(port=PORT + 1)
    changes = [[">pw2"], ["resetkeys", "~public:*"], ["-get"], ["off"],
               ["resetpass"]]
    try:
        for srv in (r, p):
            srv.cli("ACL", "SETUSER", ADMIN[0], "on", ">" + ADMIN[1], "~*",
                    "&*", "+@all")
            srv.cli("SET", "secret:x", "topsecret")
        start_service(r)
        for change in changes:
            for via in ("redis-cli", "accelerated"):
                what = "ACL SETUSER default %s (%s)" % (" ".join(change), via)
                old = Client(r.port)
                warm(old, "secret:x", b"topsecret")
                old_p = Client(p.port)
                old_p.call("PING")
                before = tx()
                for srv in (r, p):
                    if via == "redis-cli":
                        eq(srv.cli("ACL", "SETUSER", "default", *change), "OK", what)
                    else:
                        c = Client(srv.port)
                        eq(c.call("ACL", "SETUSER", "default", *change),
                           b"+OK\r\n", what)
                        c.close()
                # long enough for the filler's checks to lift a stop they
                # should not, and for the old connection's GET to teach
                # the cache a value the fresh ones may not read
                same_gets_for(3, r, p, old, old_p, "secret:x", what)
                eq(tx(), before, "kernel answers after " + what)
                old.close()
                old_p.close()
                default_user_open(r, p)
        # the other direction: the filler verified an open default user
        c = Client(r.port)
        warm(c, "secret:x", b"topsecret")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()
        p.close()


@test
def test_users_and_passwords_get_what_redis_gives():
    """Connections authenticated as restricted users (~public:*, -@read,
    nopass), with AUTH and with HELLO 3 AUTH, and requirepass set and
    cleared: every GET gets the bytes a plain twin Redis gives, the
    kernel answers none of them while the default user is not open, and
    serves again once it is."""
    r, p = Redis(), Redis(port=PORT + 1)
    users = [("pub", ["on", ">pubpw", "~public:*", "+@all"]),
             ("noread", ["on", ">nrpw", "~*", "+@all", "-@read"]),
             ("free", ["on", "nopass", "~*", "+@all"])]
    try:
        for srv in (r, p):
            for name, rules in users:
                srv.cli("ACL", "SETUSER", name, *rules)
            srv.cli("SET", "secret:x", "topsecret")
            srv.cli("SET", "public:y", "open")
        start_service(r)
        c = Client(r.port)
        warm(c, "secret:x", b"topsecret")
        warm(c, "public:y", b"open")
        before = tx()
        for name, rules in users:
            pw = next((x[1:] for x in rules if x.startswith(">")), "any")
            for hello in (False, True):
                pair = []
                for srv in (r, p):
                    cc = Client(srv.port)
                    if hello:
                        # HELLO 3's reply is a RESP3 map whose client id
                        # differs between the servers: read past a PING
                        cc.c.sendall(resp("HELLO", "3", "AUTH", name, pw) +
                                     resp("PING"))
                        while b"+PONG\r\n" not in cc.buf:
                            cc.buf += cc.c.recv(65536)
                        cc.buf = cc.buf.split(b"+PONG\r\n", 1)[1]
                    else:
                        cc.call("AUTH", name, pw)
                    pair.append(cc)
                for key in ("secret:x", "public:y", "secret:x"):
                    same_gets([tuple(pair)], key, "%s%s GET %s" % (
                        name, " (HELLO 3)" if hello else "", key))
                for cc in pair:
                    cc.close()
        eq(tx(), before, "kernel answers to authenticated users")
        # requirepass set, then cleared: the default user follows
        old = Client(r.port)
        warm(old, "secret:x", b"topsecret")
        old_p = Client(p.port)
        before = tx()
        for srv, conn in ((r, old), (p, old_p)):
            eq(conn.call("CONFIG", "SET", "requirepass", "pw"), b"+OK\r\n",
               "CONFIG SET requirepass")
        same_gets_for(2, r, p, old, old_p, "secret:x", "GET under requirepass")
        eq(tx(), before, "kernel answers under requirepass")
        for conn in (old, old_p):
            eq(conn.call("CONFIG", "SET", "requirepass", ""), b"+OK\r\n",
               "CONFIG SET requirepass ''")
            conn.close()
        c.close()
        c = Client(r.port)
        warm(c, "secret:x", b"topsecret")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()
        p.close()


@test
def test_requirepass_race():
    """CONFIG SET requirepass executed while the filler's check is under
    way (held, with gdb, after it found no password and before it lifts
    the stop): the check must not lift the stop the handler set for the
    change, so no connection without a password is answered from the
    cache, even once an older connection taught it the value."""
    if not shutil.which("gdb"):
        raise AssertionError("gdb is missing (scripts/deps.sh installs it)")
    r = Redis()
    hit, go = "/tmp/xps-race-hit", "/tmp/xps-race-go"
    for f in (hit, go):
        if os.path.exists(f):
            os.unlink(f)
    gdb = None
    try:
        start_service(r)
        r.cli("SET", "secret:x", "topsecret")
        old = Client()
        warm(old, "secret:x", b"topsecret")
        pid = [x for x in xpsctl("service", "list")
               if x["name"] == "redis"][0]["daemon_pid"]
        gdb = subprocess.Popen(
            ["gdb", "-q", "-nx", "-batch", "-p", str(pid),
             "-ex", "break filler_check_end", "-ex", "continue",
             "-ex", "shell touch " + hit,
             "-ex", "shell while [ ! -e %s ]; do sleep 0.05; done" % go,
             "-ex", "delete", "-ex", "detach"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(hit), timeout=20,
                 what="the filler's check to reach its end")
        # the check saw no password; the change comes before its lift
        eq(Client().call("CONFIG", "SET", "requirepass", "pw"), b"+OK\r\n",
           "CONFIG SET requirepass")
        open(go, "w").close()
        gdb.wait(20)
        before, t = tx(), time.time()
        while time.time() - t < 0.8:
            old.call("GET", "secret:x")          # may teach the cache
            fresh = Client()
            got = fresh.call("GET", "secret:x")
            fresh.close()
            if not got.startswith(b"-NOAUTH"):
                raise AssertionError("a connection without the password got %r" % got)
        eq(tx(), before, "kernel answers under requirepass")
        old.call("CONFIG", "SET", "requirepass", "")
        old.close()
    finally:
        if gdb and gdb.poll() is None:
            open(go, "w").close()
            gdb.wait(20)
        for f in (hit, go):
            if os.path.exists(f):
                os.unlink(f)
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_dead_filler_stops_the_kernel():
    """kill -9 of xps-redisd: within its lease (3 s) the kernel stops
    answering, and a Redis restarted with other data is never answered
    for with the old value."""
    r = Redis()
    try:
        start_service(r)
        r.cli("SET", "dk", "old-value")
        c = Client()
        warm(c, "dk", b"old-value")
        pid = [x for x in xpsctl("service", "list") if x["name"] == "redis"][0]["daemon_pid"]
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not os.path.exists("/proc/%d" % pid), timeout=5,
                 what="xps-redisd to die")
        time.sleep(3.2)
        before = tx()
        for _ in range(20):
            eq(c.call("GET", "dk"), b"$9\r\nold-value\r\n", "GET, filler dead")
        eq(tx(), before, "kernel answers with the filler dead")
        c.close()
        r.close()
        r = Redis()
        r.cli("SET", "dk", "new-value")
        c = Client()
        for _ in range(20):
            eq(c.call("GET", "dk"), b"$9\r\nnew-value\r\n", "GET after the restart")
        eq(tx(), before, "kernel answers after the restart")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_restarted_server_never_answered_for():
    """redis-server stopped (SIGTERM, SIGKILL) and a new, empty one started
    on the port at once, with the filler alive and with it killed: the
    kernel drops the cache when the old listening socket closes, so no
    read of the new server gets an old value; once the filler has dropped
    the cache, the kernel serves the new server's values."""
    r = Redis()
    try:
        start_service(r)
        for sig, kill_filler in ((signal.SIGTERM, False), (signal.SIGKILL, False),
                                 (signal.SIGKILL, True)):
            what = "%s%s" % (sig.name, ", filler killed" if kill_filler else "")
            r.cli("SET", "rk", "old-value")
            c = Client()
            warm(c, "rk", b"old-value")
            c.close()
            if kill_filler:
                pid = [x for x in xpsctl("service", "list")
                       if x["name"] == "redis"][0]["daemon_pid"]
                os.kill(pid, signal.SIGKILL)
            r.proc.send_signal(sig)
            r.proc.wait(10)
            shutil.rmtree(r.dir, ignore_errors=True)
            r = Redis()
            # rk is not written (a write would invalidate it): the new
            # server has none.  One connection: on the stock backend a connection's first
            # bytes always reach the server
            c = Client()
            before, t = tx(), time.time()
            while time.time() - t < 1.5:
                eq(c.call("GET", "rk"), b"$-1\r\n", "GET after " + what)
            c.close()
            r.cli("SET", "rk", "new-value")
            if kill_filler:
                eq(tx(), before, "kernel answers, filler dead")
                xpsctl("service", "stop", "redis")
                start_service(r)
            c = Client()
            warm(c, "rk", b"new-value")
            c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_busy_read_only_script_is_not_answered_for():
    """EVAL_RO past lua-time-limit: Redis answers every other client
    -BUSY, and so does XPS (the script counts as a write of every key)."""
    r = Redis()
    try:
        r.cli("CONFIG", "SET", "lua-time-limit", "10")
        start_service(r)
        r.cli("SET", "bk", "value")
        c = Client()
        warm(c, "bk", b"value")
        for fn in ("EVAL_RO", "FCALL_RO"):
            if fn == "FCALL_RO":
                eq(r.cli("FUNCTION", "LOAD", "REPLACE",
                         "#!lua name=xpsbusy\nredis.register_function{function_name='spin', "
                         "callback=function() while true do end end, flags={'no-writes'}}"),
                   "xpsbusy", "FUNCTION LOAD")
                warm(c, "bk", b"value")
                cmd = ["FCALL_RO", "spin", "0"]
            else:
                cmd = ["EVAL_RO", "while true do end", "0"]
            before = tx()
            script = Client()
            script.c.sendall(resp(*cmd))
            try:
                wait_for(lambda: redis_cli(r.port, "PING").startswith("BUSY"),
                         timeout=10, what="Redis to answer BUSY")
                for _ in range(5):
                    got = c.call("GET", "bk")
                    if not got.startswith(b"-BUSY"):
                        raise AssertionError("%s: GET got %r, Redis answers -BUSY"
                                             % (fn, got))
                eq(tx(), before, "kernel answers while %s runs" % fn)
            finally:
                redis_cli(r.port, "FUNCTION" if fn == "FCALL_RO" else "SCRIPT", "KILL")
                script.close()
            warm(c, "bk", b"value")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_monitor_sees_every_get():
    """While a MONITOR client is connected, the kernel answers nothing, so
    the monitor sees every GET; once it is gone, the kernel serves again."""
    r = Redis()
    try:
        start_service(r)
        r.cli("SET", "mk", "value")
        c = Client()
        warm(c, "mk", b"value")
        mon = Client()
        eq(mon.call("MONITOR"), b"+OK\r\n", "MONITOR")
        before = tx()
        for _ in range(5):
            eq(c.call("GET", "mk"), b"$5\r\nvalue\r\n", "GET under MONITOR")
        eq(tx(), before, "kernel answers under MONITOR")
        seen, t = b"", time.time()
        while seen.count(b'"GET" "mk"') < 5 and time.time() - t < 5:
            seen += mon.c.recv(65536)
        eq(seen.count(b'"GET" "mk"'), 5, "GETs the monitor saw")
        mon.close()
        warm(c, "mk", b"value")
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_idle_timeout_keeps_served_connections():
    """Redis closes connections idle for `timeout` seconds: one whose GETs
    the kernel answers is still seen alive (a GET passed every half
    timeout), as without XPS."""
    r = Redis()
    try:
        r.cli("CONFIG", "SET", "timeout", "2")
        start_service(r)
        r.cli("SET", "ik", "value")
        c = Client()
        warm(c, "ik", b"value")
        before = tx()
        t = time.time()
        while time.time() - t < 6:
            eq(c.call("GET", "ik"), b"$5\r\nvalue\r\n", "GET, timeout 2")
            time.sleep(0.1)
        if tx() - before < 20:
            raise AssertionError("the kernel answered %d GETs" % (tx() - before))
        c.close()
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


@test
def test_config_set_port_stops_the_kernel():
    """CONFIG SET port: writes through the new port bypass XPS, so a
    connection on the old one is no longer answered from the cache."""
    r = Redis()
    try:
        start_service(r)
        r.cli("SET", "pk", "old-value")
        c = Client()
        warm(c, "pk", b"old-value")
        eq(c.call("CONFIG", "SET", "port", str(PORT + 2)), b"+OK\r\n", "CONFIG SET port")
        eq(redis_cli(PORT + 2, "SET", "pk", "new-value"), "OK", "SET on the new port")
        before = tx()
        t = time.time()
        while time.time() - t < 2.5:
            eq(c.call("GET", "pk"), b"$9\r\nnew-value\r\n", "GET on the old port")
            time.sleep(0.05)
        eq(tx(), before, "kernel answers after CONFIG SET port")
        # the old listening socket closed (the kernel stopped answering
        # at once): the filler finds no Redis on the context's port, or,
        # where Redis keeps listening there too, a Redis on another one
        why = ("restarting: Redis's listening socket closed",
               "degraded: Redis listens on port")
        try:
            wait_for(lambda: service_state("redis").startswith(why), timeout=5,
                     what="the service to say why it does not serve")
        except AssertionError:
            raise AssertionError("service state %r" % service_state("redis"))
        c.close()
        # a filler pointed at a Redis on another port than the context's
        xpsctl("service", "stop", "redis")
        xpsctl("service", "redis", "--port", PORT, "--redis",
               "127.0.0.1:%d" % (PORT + 2))
        wait_for(lambda: service_state("redis").startswith(why[1]), timeout=5,
                 what="the service to say Redis is on another port")
    finally:
        xpsctl("service", "stop", "redis", check=False)
        r.close()


if __name__ == "__main__":
    main()
