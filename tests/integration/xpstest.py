# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Test harness for XPS integration tests: real sockets, real xpsctl.

Listeners count every byte they receive and answer "S:" + request, so a
test can always tell a reply from the kernel (handler) from one from the
service, and prove the service never saw what the kernel consumed.
"""
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import kernel_log  # noqa: E402  (tests/kernel_log.py)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, ".output")
XPSCTL = os.path.join(OUT, "xpsctl")
BPF = os.path.join(OUT, "bpf")


# A debug kernel (KASAN, lockdep, kmemleak: make test-debug) in an emulated
# guest runs everything several times slower, the verifier most of all.
# Liveness bounds (how long to wait before calling something lost, never a
# claim about speed) stretch by this factor there.
SLOW = 4 if os.path.exists("/sys/kernel/debug/kmemleak") else 1


def obj(name):
    return os.path.join(BPF, name + ".bpf.o")


class XpsError(Exception):
    pass


def xpsctl(*args, check=True, user=None):
    """Run xpsctl -j ARGS; return parsed JSON (raise XpsError on failure)."""
    cmd = [XPSCTL, "-j"] + [str(a) for a in args]
    if user:
        cmd = ["setpriv", "--reuid", user, "--regid", user, "--clear-groups",
               "--inh-caps=-all"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60 * SLOW)
    out = p.stdout.strip()
    try:
        doc = json.loads(out) if out else None
    except json.JSONDecodeError:
        raise XpsError("xpsctl printed invalid JSON: %r (stderr %r)" % (out, p.stderr))
    if p.returncode != 0:
        if not (isinstance(doc, dict) and "error" in doc):
            raise XpsError("xpsctl failed without a JSON error: rc=%d out=%r" % (p.returncode, out))
        if check:
            raise XpsError(doc["error"])
        return doc
    if check and isinstance(doc, dict) and "error" in doc:
        raise XpsError("xpsctl printed an error with exit status 0: %r" % doc)
    return doc


def attach(objname, port, proto="tcp", name=None, addr=None):
    args = ["handler", "attach", obj(objname), "--port", port, "--proto", proto]
    if name:
        args += ["--name", name]
    if addr:
        args += ["--addr", addr]
    return xpsctl(*args)["name"]


def stats(name):
    for s in xpsctl("stats", "show", name):
        if s["name"] == name:
            return s
    raise XpsError("no stats for " + name)


def reset():
    xpsctl("reset")


def backend():
    return xpsctl("status")["backend"]


class Listener:
    """A TCP or UDP service that counts bytes and answers b"S:" + data."""

    def __init__(self, port, proto="tcp", family=socket.AF_INET, reply=True,
                 host=None):
        self.port = port
        self.proto = proto
        self.bytes = 0
        self.chunks = []
        self.reply = reply
        self.errors = []
        self.conns = []
        self.accepted = 0
        self.lock = threading.Lock()
        self.stop = False
        host = host or ("0.0.0.0" if family == socket.AF_INET else "::")
        kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
        self.sock = socket.socket(family, kind)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        self.sock.bind((host, port))
        if proto == "tcp":
            self.sock.listen(128)
        self.sock.settimeout(0.05)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _count(self, data):
        with self.lock:
            self.bytes += len(data)
            self.chunks.append(data)

    def _serve_tcp(self, c):
        c.settimeout(0.2)
        while not self.stop:
            try:
                d = c.recv(65536)
            except socket.timeout:
                continue
            except OSError as e:
                self.errors.append(e)
                break
            if not d:
                break
            self._count(d)
            if self.reply:
                try:
                    c.sendall(b"S:" + d)
                except OSError as e:
                    self.errors.append(e)
                    break
        c.close()

    def _run(self):
        while not self.stop:
            try:
                if self.proto == "tcp":
                    c, _ = self.sock.accept()
                    self.conns.append(c)
                    self.accepted += 1
                    threading.Thread(target=self._serve_tcp, args=(c,), daemon=True).start()
                else:
                    d, a = self.sock.recvfrom(65536)
                    self._count(d)
                    if self.reply:
                        self.sock.sendto(b"S:" + d, a)
            except socket.timeout:
                continue
            except OSError:
                if not self.stop:
                    raise

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.sock.close()


def tcp_client(port, host="127.0.0.1", timeout=3.0, accepted_by=None):
    """Connect; with @accepted_by (a Listener), return once the service
    has accepted the connection: bytes sent before accept() are always
    the service's to answer on the stock backend (see docs/stock-backend.md)."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    c = socket.socket(fam, socket.SOCK_STREAM)
    c.settimeout(timeout)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    before = accepted_by.accepted if accepted_by else 0
    c.connect((host, port))
    if accepted_by:
        wait_for(lambda: accepted_by.accepted > before, what="accept()")
    return c


def udp_client(host="127.0.0.1", timeout=2.0):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    c = socket.socket(fam, socket.SOCK_DGRAM)
    c.settimeout(timeout)
    return c


def recv_exact(c, n):
    buf = b""
    while len(buf) < n:
        d = c.recv(n - len(buf))
        if not d:
            raise AssertionError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += d
    return buf


def resp(*args):
    """A RESP array of bulk strings: a Redis request as clients send it."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def kv_seal(s0, s1, s2, s3, key, val):
    """include/xps/kvsum.h's xps_kv_seal(), for values a test puts in a
    kv-cache context itself (the fillers seal theirs)."""
    M = (1 << 64) - 1

    def mix(h, w):
        h = ((h ^ w) * 0x9e3779b97f4a7c15) & M
        return h ^ (h >> 29)

    def fold(h, b):
        for i in range(0, len(b), 8):
            h = mix(h, int.from_bytes(b[i:i + 8], "little"))
        return h
    h = 0x6a09e667f3bcc908
    for w in (s0, s1, s2, s3):
        h = mix(h, w & M)
    return fold(fold(h, key), val)


def kv_value_hex(key, val, cgen=0, version=0, cas=0, flags=0, seal=None):
    """A struct xps_kv_value (include/xps/kvcache.h) for `xpsctl data put`,
    sealed as a filler seals it unless @seal is given.  xpsctl writes the
    key into the value itself; it is included here so that the bytes are
    the whole value."""
    if seal is None:
        seal = kv_seal(len(val) | cgen << 32, version, cas, flags, key, val)
    return "hex:" + (struct.pack("<IIQQIIQQQ", len(val), cgen, version, cas,
                                 flags, 0, seal, 0, 0)
                     + struct.pack("<II", len(key), 0) + key
                     + bytes(256 - len(key))
                     + val + bytes(1024 - len(val))).hex()


def kv_entry(name, key):
    """The entry of @key (bytes) in kv-cache context @name's data map, as
    (value, pending), or None if it has none.  The value is as `xpsctl
    data get` prints it (printable bytes as they are)."""
    doc = xpsctl("data", "get", name, key.decode(), check=False)
    if "error" in doc:
        if "no key" not in doc["error"]:
            raise XpsError(doc["error"])
        return None
    return doc["value"].encode(), int(doc.get("pending", False))


def redis_cli(port, *args):
    """One redis-cli command against 127.0.0.1:@port, its output stripped."""
    p = subprocess.run(["redis-cli", "-p", str(port)] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=10)
    if p.returncode:
        raise AssertionError("redis-cli %r: %s" % (args, p.stderr))
    return p.stdout.strip()


def wait_for(pred, timeout=5.0, what="condition"):
    t = time.time()
    while time.time() - t < timeout * SLOW:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def log_end(path):
    """Where the log @path ends now (0 if there is none): what a daemon
    started after this writes comes later.  The daemons append to their
    logs, so a line an earlier daemon wrote must not count for this one."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def wait_log(path, text, since, timeout=30.0, what=None):
    """Wait until @text appears in the log @path after offset @since
    (log_end() taken before the daemon started); the log's text then.
    The default timeout leaves room for the verifier, which checks a
    cache handler for seconds on a loaded machine."""
    out = [""]

    def seen():
        try:
            with open(path, errors="replace") as f:
                if os.fstat(f.fileno()).st_size >= since:
                    f.seek(since)
                out[0] = f.read()
        except OSError:
            return False
        return text in out[0]
    wait_for(seen, timeout=timeout, what=what or "%r in %s" % (text, path))
    return out[0]


def bpf_ids(kind):
    """IDs of every BPF prog or map on the system (bpftool)."""
    p = subprocess.run(["bpftool", "-j", kind, "list"], capture_output=True,
                       text=True, check=True)
    return {e["id"] for e in json.loads(p.stdout or "[]")}


def eq(a, b, what):
    if a != b:
        raise AssertionError("%s: expected %r, got %r" % (what, b, a))


_tests = []


def test(fn):
    """Register @fn as a test of the suite being run: a suite that
    imports another's helpers does not run that suite's tests."""
    if fn.__module__ == "__main__":
        _tests.append(fn)
    return fn


def main():
    only = sys.argv[1:]
    if os.geteuid() != 0:
        print("integration tests need root (BPF, cgroup and TC attach)", file=sys.stderr)
        sys.exit(1)
    be = backend()
    print("== integration tests, %s backend, kernel %s" % (be, os.uname().release))
    failed = []
    for fn in _tests:
        if only and fn.__name__ not in only:
            continue
        t0 = time.time()
        try:
            reset()
            fn()
            print("PASS %-40s %.1fs" % (fn.__name__, time.time() - t0), flush=True)
        except Exception:
            failed.append(fn.__name__)
            print("FAIL %-40s %.1fs" % (fn.__name__, time.time() - t0), flush=True)
            traceback.print_exc()
        finally:
            try:
                reset()
            except Exception:
                traceback.print_exc()
    total = len([f for f in _tests if not only or f.__name__ in only])
    print("== %d passed, %d failed (%s backend)" % (total - len(failed), len(failed), be))
    if failed:
        print("failed: " + " ".join(failed))
        sys.exit(1)


def kernel_log_mark():
    """Where the kernel log ends now (None when it cannot be read)."""
    return kernel_log.mark()


def kernel_log_splats(mark):
    """The splat lines the kernel logged since @mark (tests/kernel_log.py)."""
    found = kernel_log.splats(mark)
    if found is None:
        print("    NOTE: the kernel log cannot be read here: no splat check")
        return []
    known, other = kernel_log.judge(found)
    kernel_log.print_known(known, "    ")
    return [l for splat in other for l in splat + [""]]
