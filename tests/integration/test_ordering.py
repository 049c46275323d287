#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Ordering against the server's own replies (TESTING.md, docs/ordering.md):
a request the kernel can answer (a cached Redis GET, a cached memcached
get, a POST the HTTP service blocks) arrives on a connection while the
server still owes a reply there: a busy Lua script, a blocking command, a
reply larger than the socket buffers with the client not reading, a reply
written in pieces by two threads, a proxied stream.  The kernel's answer
must come after that reply, never before it nor inside it.

Every test compares the client's whole byte stream with the exact bytes
the plain server sends: each reply is read by its exact length and
compared byte for byte (HTTP heads are parsed strictly, chunked bodies
chunk by chunk), then a last request whose reply must come next proves
no stray byte is left.  A failure names the first wrong byte, the reply
it belongs to and where the misplaced reply went.

Before each scenario the kernel answers the cached request on the very
connection the scenario uses (so the connection is enrolled and the
answer cached), and afterwards it still does.

XPS_ORDERING_PLAIN=1 runs the same exchanges against the plain servers
with no xpsctl call at all (no handler, no service): a check of the
tests' own expectations.  The two-threaded server is
.output/tests/twothread_server (`make tests`), or $XPS_TWOTHREAD_SERVER.
"""
import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import xpstest
from xpstest import (resp, OUT, attach, eq, log_end, main, kv_value_hex, stats, test,
                     wait_for, wait_log, xpsctl)

PLAIN = os.environ.get("XPS_ORDERING_PLAIN") == "1"

P = 26200  # base port of this file
REDIS_PORT = P
MC_PORT = P + 10
HTTP_PORT = P + 20
UPSTREAM_PORT = P + 21
TT_PORT = P + 30

HOT = b"hot"                  # the key the kernel answers for
HOT_VALUE = b"value-of-hot"
NOT_READING = 0.5             # how long the client leaves replies unread
TWOTHREAD = os.environ.get("XPS_TWOTHREAD_SERVER") or \
    os.path.join(OUT, "tests", "twothread_server")


# ---- processes: every one started here is stopped on exit --------------

_children = []


def spawn(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    _children.append(p)
    return p


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
    if p in _children:
        _children.remove(p)


def _cleanup():
    for p in list(_children):
        stop(p)


def _on_sigterm(sig, frame):
    raise SystemExit(128 + sig)      # runs the tests' finally blocks, then atexit


atexit.register(_cleanup)
signal.signal(signal.SIGTERM, _on_sigterm)


# ---- XPS: nothing at all in plain mode ---------------------------------

def ctl(*args, check=True):
    if PLAIN:
        return None
    return xpsctl(*args, check=check)


def kernel_tx(name):
    return 0 if PLAIN else stats(name)["tx"]


def start_filler(kind, port, name, text):
    """xpsctl service @kind, then wait for its daemon to log @text."""
    log = "/run/xps/%s.log" % name
    since = log_end(log)
    xpsctl("service", kind, "--port", port, "--name", name)
    wait_log(log, text, since)


def served_by_kernel(name, ask, what, after=False):
    """Run @ask() (one request, its reply checked) until the kernel answers
    it: the key is cached and this connection is enrolled.  On the stock
    backend the first bytes of a connection may reach the server before it
    accept()s, and a fill takes a round trip to the server.  @after: the
    scenario is over and nothing is owed any more, so the kernel must
    answer again (docs/ordering.md: only a lost count keeps a connection
    on the slow path).  Plain mode: once."""
    if PLAIN:
        ask()
        return
    t = time.time()
    while time.time() - t < 5:
        before = kernel_tx(name)
        ask()
        if kernel_tx(name) > before:
            return
        time.sleep(0.01)
    if after:
        raise AssertionError("the replies came in the right order, but afterwards the kernel "
                             "never answered %s on this connection again: it stayed on the "
                             "slow path" % what)
    raise AssertionError("the kernel never answered %s on this connection" % what)


# ---- reading a byte stream strictly -------------------------------------

def first_diff(a, b):
    """Index of the first byte where @a and @b differ (min length if none)."""
    n = min(len(a), len(b))
    lo, step = 0, 1 << 16
    while lo < n and a[lo:lo + step] == b[lo:lo + step]:
        lo += step
    if lo >= n:
        return n
    for i in range(lo, min(lo + step, n)):
        if a[i] != b[i]:
            return i
    return n


def mismatch(got, parts, why=None, strays=(), base=0):
    """Describe how @got (read from stream offset @base) differs from the
    concatenated (label, bytes) @parts: the first wrong byte and the reply
    it belongs to, and where each small reply (and each of @strays)
    actually is.  Offsets are the connection's stream offsets."""
    want = b"".join(p for _, p in parts)
    bounds, at = [], 0
    for label, p in parts:
        bounds.append((label, at, at + len(p)))
        at += len(p)

    def where(off):
        for label, a, b in bounds:
            if a <= off < b:
                return "where %s was due (%d-%d)" % (label, base + a, base + b - 1)
        return "after everything expected"

    msgs = []
    i = first_diff(got, want)
    if i < min(len(got), len(want)):
        msgs.append("first wrong byte at offset %d, %s: expected %r, got %r (after %r)"
                    % (base + i, where(i), bytes(want[i:i + 48]), bytes(got[i:i + 48]),
                       bytes(got[max(0, i - 24):i])))
    elif len(got) < len(want):
        msgs.append("only %d of the %d bytes expected arrived (%s); missing from offset "
                    "%d, %s" % (len(got), len(want), why or "?", base + len(got),
                                where(len(got))))
    else:
        msgs.append("%d bytes more than expected: %r" % (len(got) - len(want),
                                                         bytes(got[len(want):len(want) + 64])))
    looks = [(label, want[a:b], a) for label, a, b in bounds if 0 < b - a <= 4096]
    looks += [(label, s, None) for label, s in strays]
    for label, p, due in looks:
        if due is not None and got[due:due + len(p)] == p:
            continue
        hits, k = [], got.find(p)
        while k >= 0 and len(hits) < 3:
            hits.append(k)
            k = got.find(p, k + 1)
        if due is None and not hits:
            continue
        msgs.append("%s (%d bytes%s) %s" % (
            label, len(p), ", due at offset %d" % (base + due) if due is not None else "",
            "is at offset " + ", ".join("%d, %s" % (base + h, where(h)) for h in hits)
            if hits else "is nowhere in the %d bytes received" % len(got)))
    return "; ".join(msgs)


class Stream:
    """A client connection whose replies are read by exact length."""

    def __init__(self, port, timeout=20.0):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.settimeout(timeout)
        self.buf = bytearray()
        self.offset = 0          # stream offset of self.buf[0]

    def send(self, data):
        """One send call.  With TCP_NODELAY and nothing unsent before it,
        @data leaves in segments of its own."""
        self.s.sendall(data)

    def _more(self, want):
        """Receive at least one byte; return why not (or None)."""
        try:
            d = self.s.recv(min(max(want, 65536), 1 << 22))
        except socket.timeout:
            return "nothing for %.0f s" % self.s.gettimeout()
        except OSError as e:
            return str(e)
        if not d:
            return "the server closed the connection"
        self.buf += d
        return None

    def take_upto(self, n):
        """(up to @n bytes, why fewer)."""
        why = None
        while len(self.buf) < n and why is None:
            why = self._more(n - len(self.buf))
        out = bytes(self.buf[:n])
        del self.buf[:n]
        self.offset += len(out)
        return out, why

    def take(self, n, what):
        out, why = self.take_upto(n)
        if len(out) < n:
            raise AssertionError("%s: %d of %d bytes, then %s: %r"
                                 % (what, len(out), n, why, out[-64:]))
        return out

    def line(self, what, limit=8192):
        """One CRLF-terminated line, with its CRLF; no bare LF allowed."""
        scan = 0
        while True:
            k = self.buf.find(b"\r\n", scan)
            if k >= 0:
                break
            scan = max(0, len(self.buf) - 1)
            if len(self.buf) > limit:
                raise AssertionError("%s: no CRLF in %d bytes at stream offset %d: %r"
                                     % (what, limit, self.offset, bytes(self.buf[:80])))
            why = self._more(1)
            if why:
                raise AssertionError("%s: a line expected at stream offset %d, %s after %r"
                                     % (what, self.offset, why, bytes(self.buf[:80])))
        out = self.take(k + 2, what)
        if b"\n" in out[:-2]:
            raise AssertionError("%s: bare LF in line %r at stream offset %d"
                                 % (what, out, self.offset - len(out)))
        return out

    def close(self):
        self.s.close()


def expect(st, parts, strays=()):
    """The next bytes of @st are exactly the (label, bytes) @parts, in order."""
    want = sum(len(p) for _, p in parts)
    start = st.offset
    got, why = st.take_upto(want)
    if got != b"".join(p for _, p in parts):
        raise AssertionError(mismatch(got, parts, why, strays, base=start))


def pattern(n):
    """@n bytes of 16-byte records "%015x," (record r at offset 16r): the
    twothread server's big replies and the static file; any misplaced byte
    changes a record."""
    return b"".join(b"%015x," % r for r in range((n + 15) // 16))[:n]


# ---- Redis --------------------------------------------------------------

REDIS_SVC = "ord-redis"


def bulk(v):
    return b"$%d\r\n%s\r\n" % (len(v), v)


class Redis:
    """A throwaway redis-server: no persistence, no unix socket."""

    def __init__(self, port=REDIS_PORT):
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="xps-ord-redis-")
        self.proc = spawn(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir,
             "--protected-mode", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self._up, what="redis-server on port %d" % port)

    def _up(self):
        try:
            return xpstest.redis_cli(self.port, "PING") == "PONG"
        except Exception:
            return False

    def close(self):
        stop(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


class RespCase:
    """What the RESP scenarios share: a GET of the cached key that the
    kernel may answer, and the check when the scenario ends (nothing left
    in the stream, the kernel answering again).  Subclasses set CTX and
    open self.st in __enter__."""
    CTX = None

    def get_hot(self):
        self.st.send(resp("GET", HOT))
        expect(self.st, [("the GET's reply", bulk(HOT_VALUE))])

    def tx(self):
        return kernel_tx(self.CTX)

    def __exit__(self, kind, value, tb):
        try:
            if kind is None:
                # anything left unread, or sent twice, comes before PONG
                self.st.send(resp("PING"))
                expect(self.st, [("PONG (nothing may precede it)", b"+PONG\r\n")])
                served_by_kernel(self.CTX, self.get_hot, "GET hot", after=True)
        finally:
            self._close()
        return False


class RedisCase(RespCase):
    """A fresh redis-server and, except in plain mode, the Redis service in
    front of it; HOT set; a client connection on which the kernel answers
    GET hot.  @setup(call) runs first, on a connection of its own: big
    requests (heads spanning segments) may leave a connection on the slow
    path for good (docs/ordering.md), which would make the test's own
    connection prove nothing.  Used as `with RedisCase(setup) as rc:`; on
    a clean exit checks that no stray byte is left and that the kernel
    still answers GET hot on the connection."""

    CTX = REDIS_SVC

    def __init__(self, setup=None):
        self.setup = setup

    def __enter__(self):
        self.r = Redis()
        self.st = None
        try:
            if not PLAIN:
                start_filler("redis", REDIS_PORT, REDIS_SVC, "serving GETs")
            # connections older than the service keep the handler out
            setup = Stream(REDIS_PORT)
            try:
                redis_call(setup, ("SET", HOT, HOT_VALUE), b"+OK\r\n")
                if self.setup:
                    self.setup(lambda args, reply: redis_call(setup, args, reply))
            finally:
                setup.close()
            self.st = Stream(REDIS_PORT)
            served_by_kernel(REDIS_SVC, self.get_hot, "GET hot")
        except BaseException:
            self._close()
            raise
        return self

    def _close(self):
        if self.st:
            self.st.close()
        ctl("service", "stop", REDIS_SVC, check=False)
        self.r.close()


def redis_call(st, args, reply):
    st.send(resp(*args))
    expect(st, [("the reply to %r" % (args[:2],), reply)])


def report(what, answered, sent):
    if not PLAIN:
        print("    %s: the kernel answered %d of %d" % (what, answered, sent))


BUSY_SCRIPT = b"""local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local t0 = now()
while now() - t0 < tonumber(ARGV[1]) * 1000 do end
return 'script-done'"""


@test
def test_redis_busy_script_then_get():
    """A Lua script keeps Redis busy for 2 s; 0.5 s into it a cached GET
    arrives in its own segment.  Redis has read the script and written
    nothing: a kernel reply sent now overtakes the script's result, and the
    stream starts with the GET's bulk reply instead of $11 script-done.
    EVAL_RO, not EVAL: the handler takes EVAL for a write of every key and
    empties the cache, so the GET would be a miss, passed whatever the
    ordering, and the test could not fail."""
    with RedisCase() as rc:
        tx0 = rc.tx()
        rc.st.send(resp("EVAL_RO", BUSY_SCRIPT, 0, 2000))
        time.sleep(0.5)                      # the script is running
        rc.st.send(resp("GET", HOT))
        expect(rc.st, [("the script's result", bulk(b"script-done")),
                       ("the GET's reply", bulk(HOT_VALUE))])
        report("GET sent during the script", rc.tx() - tx0, 1)


@test
def test_redis_blpop_timeout_then_get():
    """BLPOP on an empty list blocks for 1 s, then Redis answers the nil
    array; a cached GET sent 0.5 s into it must come after *-1.  Redis has
    read BLPOP and written nothing: a kernel reply sent now comes first."""
    with RedisCase() as rc:
        tx0 = rc.tx()
        rc.st.send(resp("BLPOP", "empty-list", 1))
        time.sleep(0.5)                      # BLPOP is blocked
        rc.st.send(resp("GET", HOT))
        expect(rc.st, [("BLPOP's nil array", b"*-1\r\n"),
                       ("the GET's reply", bulk(HOT_VALUE))])
        report("GET sent during BLPOP", rc.tx() - tx0, 1)


LIST_LEN, ELEM_LEN = 10000, 1000


def elem(i):
    return (b"elem-%06d:" % i).ljust(ELEM_LEN, b"abcdefghij"[i % 10:i % 10 + 1])


@test
def test_redis_large_lrange_unread_then_get():
    """LRANGE answers ~10 MB; the client does not read for 0.5 s, so Redis
    has written what the socket buffers hold and keeps the rest; then a
    cached GET in its own segment.  Redis has read everything and written
    (part of the reply): a kernel reply sent now lands inside the LRANGE
    reply, where the first wrong byte is found."""
    def fill(call):
        batch = 500
        for b in range(0, LIST_LEN, batch):
            call(("RPUSH", "big-list") + tuple(elem(i) for i in range(b, b + batch)),
                 b":%d\r\n" % (b + batch))

    want = (b"*%d\r\n" % LIST_LEN +
            b"".join(bulk(elem(i)) for i in range(LIST_LEN)))
    with RedisCase(fill) as rc:
        tx0 = rc.tx()
        rc.st.send(resp("LRANGE", "big-list", 0, -1))
        time.sleep(NOT_READING)              # the reply piles up unread
        rc.st.send(resp("GET", HOT))
        expect(rc.st, [("the LRANGE reply (%d bytes)" % len(want), want),
                       ("the GET's reply", bulk(HOT_VALUE))])
        report("GET sent behind the unread LRANGE reply", rc.tx() - tx0, 1)


@test
def test_redis_incr_get_rounds():
    """300 rounds: INCR, then a cached GET in a segment of its own before
    reading anything, some rounds with a short pause between the two, so
    the GET meets the INCR before Redis reads it, while it runs and after
    it answered.  A kernel reply sent before Redis wrote :N comes first and
    the round's first reply is the GET's bulk reply."""
    rounds = 300
    pauses = (0, 0, 0.0001, 0.0005, 0.002)
    with RedisCase() as rc:
        tx0 = rc.tx()
        for i in range(1, rounds + 1):
            rc.st.send(resp("INCR", "counter"))
            if pauses[i % len(pauses)]:
                time.sleep(pauses[i % len(pauses)])
            rc.st.send(resp("GET", HOT))
            expect(rc.st, [("INCR's reply, round %d" % i, b":%d\r\n" % i),
                           ("the GET's reply, round %d" % i, bulk(HOT_VALUE))])
        report("GETs sent behind an INCR", rc.tx() - tx0, rounds)


# ---- a service writing its replies from two threads (Redis handler) ----

TT_CTX = "ord-twothread"


class TwoThreadCase(RespCase):
    """tests/integration/twothread_server.c (a Redis subset whose big
    replies two threads write in pieces) on TT_PORT, knowing HOT, and,
    except in plain mode, the Redis handler in front of it with HOT put in
    its data map by hand: both answer GET hot with the same bytes.  A
    client connection on which the kernel answers GET hot.

    No filler: `xpsctl data put` writes a struct xps_kv_value sealed as the
    filler seals it, with cache generation 0 and version 0, what a fresh
    context has for a key never written, so the handler serves the value.
    The server's requests (GET, PING) never invalidate it."""
    CTX = TT_CTX

    def __enter__(self):
        if not os.access(TWOTHREAD, os.X_OK):
            raise AssertionError("%s is missing: `make tests` builds it (or set "
                                 "XPS_TWOTHREAD_SERVER)" % TWOTHREAD)
        self.proc = spawn([TWOTHREAD, str(TT_PORT), (HOT + b"=" + HOT_VALUE).decode()],
                          stdout=subprocess.PIPE)
        self.st = None
        try:
            eq(self.proc.stdout.readline(), b"ready\n", "twothread_server started")
            if not PLAIN:
                attach("redis", TT_PORT, name=TT_CTX)
                xpsctl("data", "put", TT_CTX, HOT.decode(), kv_value_hex(HOT, HOT_VALUE))
            self.st = Stream(TT_PORT)
            served_by_kernel(TT_CTX, self.get_hot, "GET hot")
        except BaseException:
            self._close()
            raise
        return self

    def _close(self):
        if self.st:
            self.st.close()
        ctl("handler", "detach", TT_CTX, check=False)
        self.proc.stdout.close()
        stop(self.proc)


def big(n, pieces, pause_ms):
    """The request for a big reply of the two-threaded server, and the
    reply."""
    return resp("GET", "big:%d:%d:%d" % (n, pieces, pause_ms)), bulk(pattern(n))


@test
def test_twothread_paused_reply_then_get():
    """A 1 MiB reply in 8 pieces, alternately from the server's two
    threads, with a 500 ms pause after the fourth piece.  The client reads
    the first half, then sends a cached GET in its own segment during the
    pause: the server has read everything and written, but owes the second
    half.  A kernel reply sent now lands between the halves."""
    req, reply = big(1 << 20, 8, 500)
    half = len(reply) // 8 * 4
    with TwoThreadCase() as tc:
        tx0 = tc.tx()
        tc.st.send(req)
        expect(tc.st, [("the first half of the big reply", reply[:half])])
        tc.st.send(resp("GET", HOT))         # during the server's pause
        expect(tc.st, [("the second half of the big reply", reply[half:]),
                       ("the GET's reply", bulk(HOT_VALUE))])
        report("GET sent during the pause", tc.tx() - tx0, 1)


@test
def test_twothread_large_reply_unread_then_get():
    """An 8 MiB reply in 16 pieces from two threads, the client not reading
    for 0.5 s, then a cached GET in its own segment: a kernel reply sent
    before the server's last piece lands inside the big reply."""
    req, reply = big(8 << 20, 16, 0)
    with TwoThreadCase() as tc:
        tx0 = tc.tx()
        tc.st.send(req)
        time.sleep(NOT_READING)
        tc.st.send(resp("GET", HOT))
        expect(tc.st, [("the big reply (%d bytes)" % len(reply), reply),
                       ("the GET's reply", bulk(HOT_VALUE))])
        report("GET sent behind the unread reply", tc.tx() - tx0, 1)


@test
def test_twothread_rounds():
    """300 rounds of a 256-byte reply in 4 pieces from two threads and a
    cached GET right behind it, in a segment of its own, some rounds after
    a short pause: a kernel reply sent between two of the pieces (the
    server has read and written, but is not done) lands inside the
    reply."""
    rounds = 300
    req, reply = big(256, 4, 0)
    pauses = (0, 0, 0.0001, 0.0005)
    with TwoThreadCase() as tc:
        tx0 = tc.tx()
        for i in range(rounds):
            tc.st.send(req)
            if pauses[i % len(pauses)]:
                time.sleep(pauses[i % len(pauses)])
            tc.st.send(resp("GET", HOT))
            expect(tc.st, [("the big reply, round %d" % i, reply),
                           ("the GET's reply, round %d" % i, bulk(HOT_VALUE))])
        report("GETs sent behind a reply in pieces", tc.tx() - tx0, rounds)


# ---- Memcached ---------------------------------------------------------

MC_SVC = "ord-mc"
MC_VALUES = 5
MC_VALUE_LEN = 1000000        # under memcached's 1 MiB item limit


_mc_pattern = []


def mc_value(i):
    if not _mc_pattern:
        _mc_pattern.append(pattern(MC_VALUE_LEN))
    head = b"value-%d:" % i
    return head + _mc_pattern[0][len(head):]


def mc_hit(key, value, flags=0):
    return b"VALUE %s %d %d\r\n%s\r\n" % (key, flags, len(value), value)


@test
def test_memcached_large_multiget_unread_then_get():
    """A multi-get answering ~5 MB, the client not reading for 0.5 s, then
    `get hot` in its own segment.  memcached has read everything and
    written part of the reply: a kernel reply sent now lands inside it."""
    m = spawn(["memcached", "-p", str(MC_PORT), "-U", "0", "-l", "127.0.0.1",
               "-u", "nobody", "-m", "64", "-t", "2"],
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    st = None

    def up():
        try:
            socket.create_connection(("127.0.0.1", MC_PORT)).close()
            return True
        except OSError:
            return False
    try:
        wait_for(up, what="memcached on port %d" % MC_PORT)
        if not PLAIN:
            start_filler("memcached", MC_PORT, MC_SVC, "serving gets")
        # the big sets on a connection of their own (see RedisCase)
        setup = Stream(MC_PORT)
        try:
            setup.send(b"version\r\n")
            version = setup.line("memcached's version")
            if not version.startswith(b"VERSION "):
                raise AssertionError("version: %r" % version)
            keys = [b"big-%d" % i for i in range(MC_VALUES)]
            for i, k in enumerate(keys):
                setup.send(b"set %s 0 0 %d\r\n%s\r\n" % (k, MC_VALUE_LEN, mc_value(i)))
                expect(setup, [("the reply to set %s" % k.decode(), b"STORED\r\n")])
            setup.send(b"set %s 0 0 %d\r\n%s\r\n" % (HOT, len(HOT_VALUE), HOT_VALUE))
            expect(setup, [("the reply to set hot", b"STORED\r\n")])
        finally:
            setup.close()
        st = Stream(MC_PORT)

        def call(req, reply):
            st.send(req)
            expect(st, [("reply to %r" % req[:40], reply)])

        def get_hot():
            call(b"get %s\r\n" % HOT, mc_hit(HOT, HOT_VALUE) + b"END\r\n")
        served_by_kernel(MC_SVC, get_hot, "get hot")
        want = b"".join(mc_hit(k, mc_value(i)) for i, k in enumerate(keys)) + b"END\r\n"
        tx0 = kernel_tx(MC_SVC)
        st.send(b"get %s\r\n" % b" ".join(keys))
        time.sleep(NOT_READING)
        st.send(b"get %s\r\n" % HOT)
        expect(st, [("the multi-get reply (%d bytes)" % len(want), want),
                    ("the reply to get hot", mc_hit(HOT, HOT_VALUE) + b"END\r\n")])
        report("get hot sent behind the unread multi-get reply",
               kernel_tx(MC_SVC) - tx0, 1)
        st.send(b"version\r\n")
        expect(st, [("VERSION (nothing may precede it)", version)])
        served_by_kernel(MC_SVC, get_hot, "get hot", after=True)
    finally:
        if st:
            st.close()
        ctl("service", "stop", MC_SVC, check=False)
        stop(m)


# ---- nginx -------------------------------------------------------------

WEB_SVC = "ord-web"
FILE_LEN = 4 << 20
STREAM_PARTS = (b"first-part", b"second-part")

NGINX_CONF = """worker_processes 1;
daemon off;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log;
events { worker_connections 1024; }
http {
    access_log %(dir)s/access.log;
    server {
        listen 127.0.0.1:%(port)d;
        if ($request_method = POST) { return 405; }
        location /static/ { root %(dir)s; }
        location /stream {
            proxy_pass http://127.0.0.1:%(up)d;
            proxy_http_version 1.1;
            proxy_buffering off;
        }
        location / { return 200 "ok\\n"; }
    }
}
"""

GET_FILE = b"GET /static/big.bin HTTP/1.1\r\nHost: x\r\n\r\n"
GET_STREAM = b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"
GET_OK = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
POST = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
KERNEL_405 = b"HTTP/1.1 405"


class Upstream:
    """A tiny HTTP/1.1 upstream: every request gets a chunked response
    sent in two parts, 0.5 s apart, then the connection is closed."""

    def __init__(self, port=UPSTREAM_PORT):
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", port))
        self.ls.listen(16)
        self.ls.settimeout(0.1)
        self.done = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _serve(self, c):
        try:
            c.settimeout(10)
            req = b""
            while b"\r\n\r\n" not in req:
                d = c.recv(4096)
                if not d:
                    return
                req += d
            a, b = STREAM_PARTS
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(a), a))
            time.sleep(0.5)
            c.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(b), b))
        except OSError:
            pass
        finally:
            c.close()

    def _run(self):
        while not self.done:
            try:
                c, _ = self.ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def close(self):
        self.done = True
        self.t.join(2)
        self.ls.close()


class Nginx:
    def __init__(self, port=HTTP_PORT):
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="xps-ord-nginx-")
        os.chmod(self.dir, 0o755)            # the workers read the file
        os.mkdir(os.path.join(self.dir, "static"), 0o755)
        self.file = pattern(FILE_LEN)
        with open(os.path.join(self.dir, "static", "big.bin"), "wb") as f:
            f.write(self.file)
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF % {"dir": self.dir, "port": port, "up": UPSTREAM_PORT})
        self.proc = spawn(["nginx", "-c", os.path.join(self.dir, "nginx.conf")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self._up, what="nginx on port %d" % port)

    def _up(self):
        try:
            socket.create_connection(("127.0.0.1", self.port)).close()
            return True
        except OSError:
            return False

    def close(self):
        stop(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


def undate(head):
    return re.sub(rb"\r\nDate: [^\r]*", b"\r\nDate: -", head)


STATUS_RE = re.compile(rb"HTTP/1\.1 [1-5][0-9][0-9] [^\r\n]*\r\n\Z")
FIELD_RE = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+: [^\r\n]*\r\n\Z")


def read_head(st, what):
    """A response's status line and header fields, parsed strictly;
    (head bytes, {lowercase name: value})."""
    head = st.line(what + ", status line")
    if not STATUS_RE.match(head):
        raise AssertionError("%s: expected a status line at stream offset %d, got %r"
                             % (what, st.offset - len(head), head))
    fields = {}
    while True:
        line = st.line(what + ", header")
        head += line
        if line == b"\r\n":
            return head, fields
        if not FIELD_RE.match(line):
            raise AssertionError("%s: bad header line %r" % (what, line))
        name, _, value = line[:-2].partition(b": ")
        fields[name.lower()] = value


def same_head(head, ref, what):
    if undate(head) != undate(ref):
        raise AssertionError("%s: head differs from the plain server's:\n  got  %r\n  want %r"
                             % (what, undate(head), undate(ref)))


def read_chunk(st, what):
    """One chunk of a chunked body, strictly; b"" for the last chunk (no
    trailer fields allowed)."""
    at = st.offset
    line = st.line(what + ", chunk size", limit=64)
    if not re.match(rb"[0-9a-fA-F]{1,8}\r\n\Z", line):
        inside = " (a response inside the body)" if line.startswith(b"HTTP/") else ""
        raise AssertionError("%s: expected a chunk-size line at stream offset %d, got %r%s"
                             % (what, at, line[:80], inside))
    n = int(line[:-2], 16)
    if n == 0:
        end = st.take(2, what + ", end of the chunked body")
        if end != b"\r\n":
            raise AssertionError("%s: after the last chunk, expected CRLF, got %r" % (what, end))
        return b""
    data = st.take(n, what + ", chunk data")
    end = st.take(2, what + ", chunk end")
    if end != b"\r\n":
        raise AssertionError("%s: a %d-byte chunk at stream offset %d ends in %r, not CRLF"
                             % (what, n, at, end))
    return data


def read_response(st, what):
    """A whole response with Content-Length or chunked; (head, body).  A
    mismatch in the body is for the caller, which knows what to expect."""
    head, fields = read_head(st, what)
    if fields.get(b"transfer-encoding") == b"chunked":
        body = b""
        while True:
            d = read_chunk(st, what)
            if not d:
                return head, body
            body += d
    if b"content-length" not in fields:
        raise AssertionError("%s: neither Content-Length nor chunked: %r" % (what, head))
    return head, st.take(int(fields[b"content-length"]), what + ", body")


def reference(port, req, what):
    """The plain server's response to @req on a fresh connection (before
    any service is attached: it is nginx's own)."""
    st = Stream(port)
    try:
        st.send(req)
        return read_response(st, "reference " + what)
    finally:
        st.close()


def expect_response(st, ref, what):
    """The next response on @st is @ref (head but for Date, body byte for byte)."""
    head, fields = read_head(st, what)
    same_head(head, ref[0], what)
    if fields.get(b"transfer-encoding") == b"chunked":
        raise AssertionError("%s: unexpectedly chunked" % what)
    expect(st, [(what + ", body", ref[1])], strays=[("a response head", b"HTTP/1.1 ")])


class WebCase:
    """nginx and its upstream; nginx's own responses to POST, GET / and
    @request, taken as references before anything is attached; except in
    plain mode, the HTTP service blocking POST with 405 in front; a
    keep-alive client connection on which the kernel answers POST."""

    def __init__(self, request):
        self.request = request

    def __enter__(self):
        self.up = Upstream()
        self.n = None
        self.st = None
        try:
            self.n = Nginx()
            self.ref_405 = reference(HTTP_PORT, POST, "POST")
            self.ref_ok = reference(HTTP_PORT, GET_OK, "GET /")
            self.ref = reference(HTTP_PORT, self.request, repr(self.request[:20]))
            eq(self.ref_405[0][:12], KERNEL_405, "nginx's answer to POST")
            if not PLAIN:
                xpsctl("service", "http", "--port", HTTP_PORT, "--block", "POST=405",
                       "--name", WEB_SVC)
            self.st = Stream(HTTP_PORT)
            served_by_kernel(WEB_SVC, self.post, "POST")
        except BaseException:
            self._close()
            raise
        return self

    def post(self):
        self.st.send(POST)
        expect_response(self.st, self.ref_405, "405 to POST")

    def tx(self):
        return kernel_tx(WEB_SVC)

    def __exit__(self, kind, value, tb):
        try:
            if kind is None:
                self.st.send(GET_OK)
                expect_response(self.st, self.ref_ok, "GET / (nothing may precede it)")
                served_by_kernel(WEB_SVC, self.post, "POST", after=True)
        finally:
            self._close()
        return False

    def _close(self):
        if self.st:
            self.st.close()
        ctl("service", "stop", WEB_SVC, check=False)
        if self.n:
            self.n.close()
        self.up.close()


@test
def test_nginx_large_file_unread_then_post():
    """A 4 MiB static file on a keep-alive connection, the client not
    reading for 0.5 s, then a POST the service blocks, in its own segment.
    nginx has read everything and written part of the file: a kernel 405
    sent now lands inside the file's body."""
    with WebCase(GET_FILE) as wc:
        ref_file = wc.ref
        eq(ref_file[1] == wc.n.file, True, "nginx serves the file as written")
        tx0 = wc.tx()
        wc.st.send(GET_FILE)
        time.sleep(NOT_READING)
        wc.st.send(POST)
        expect_response(wc.st, ref_file, "the file's response")
        expect_response(wc.st, wc.ref_405, "405 to the POST sent behind the file")
        report("POST sent behind the unread file", wc.tx() - tx0, 1)


@test
def test_nginx_proxied_stream_then_post():
    """nginx streams an upstream's chunked response (proxy_buffering off):
    first-part, 0.5 s later second-part.  Once the client has first-part
    it sends a POST the service blocks, in its own segment: nginx has read
    everything and written, but the response is not complete.  A kernel
    405 sent now lands between the chunks, where a chunk-size line is
    due."""
    with WebCase(GET_STREAM) as wc:
        ref_head, ref_body = wc.ref
        eq(ref_body, b"".join(STREAM_PARTS), "the stream through nginx")
        tx0 = wc.tx()
        what = "the streamed response"
        wc.st.send(GET_STREAM)
        head, fields = read_head(wc.st, what)
        same_head(head, ref_head, what)
        eq(fields.get(b"transfer-encoding"), b"chunked", what + ": Transfer-Encoding")
        body = b""
        while len(body) < len(STREAM_PARTS[0]):
            d = read_chunk(wc.st, what)
            if not d:
                raise AssertionError("%s ended after %r" % (what, body))
            body += d
        eq(body, STREAM_PARTS[0], what + ": what the upstream sent first")
        wc.st.send(POST)                     # the upstream holds second-part back
        while True:
            d = read_chunk(wc.st, what)
            if not d:
                break
            body += d
        eq(body, ref_body, what + ": body")
        expect_response(wc.st, wc.ref_405, "405 to the POST sent during the stream")
        report("POST sent during the stream", wc.tx() - tx0, 1)


if __name__ == "__main__":
    if PLAIN:
        # no xpsctl at all: not for the backend, not for the resets
        xpstest.backend = lambda: "plain servers, no XPS (XPS_ORDERING_PLAIN=1)"
        xpstest.reset = lambda: None
    main()
