#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Redis Cluster bus PINGs answered from the kernel (xpsctl service
redis-cluster) in a 3-master cluster of unmodified Debian redis-server:
the kernel's PONGs keep the cluster healthy, the accelerated node's own
counters show exactly the PINGs the kernel took, a stopped node stops being
answered for and is flagged by its peers, and whatever is not one whole
PING of a known node reaches Redis untouched.

Oracle for "PINGs sent to the node": an AF_PACKET capture on lo that
counts every cluster-bus message arriving at the node's bus port."""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback


# the integration harness lives with the other suites
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "integration"))
from xpstest import eq, redis_cli, stats, wait_for, xpsctl

BASE = 17630                 # client ports BASE..BASE+2, bus ports +10000
ACCEL = 1                    # the node whose PINGs the kernel answers
NODE_TIMEOUT_MS = 4000      # room for the freezes below under QEMU's TCG
MAX_AGE_S = NODE_TIMEOUT_MS / 2 / 1000.0    # the service's default
SVC = "xpsclu"
HDR = 2256


def be16(b, o):
    return struct.unpack_from(">H", b, o)[0]


class Node:
    def __init__(self, port):
        self.port = port
        self.bus = port + 10000
        self.dir = tempfile.mkdtemp(prefix="xps-cluster-")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
             "--cluster-enabled", "yes",
             "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
             "--cluster-config-file", os.path.join(self.dir, "nodes.conf"),
             "--save", "", "--appendonly", "no", "--dir", self.dir,
             "--protected-mode", "no", "--loglevel", "notice",
             "--logfile", os.path.join(self.dir, "log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: self._try("PING") == "PONG",
                 what="redis-server on port %d" % port)
        self.name = self.cli("CLUSTER", "MYID")

    def _try(self, *args):
        try:
            return self.cli(*args)
        except Exception:
            return None

    def cli(self, *args):
        return redis_cli(self.port, *args)

    def info(self):
        """CLUSTER INFO over a kept connection (no process start: fast
        enough to read while the other nodes are stopped)."""
        if not getattr(self, "conn", None):
            self.conn = socket.create_connection(("127.0.0.1", self.port))
            self.conn.settimeout(10)
        self.conn.sendall(b"*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n")
        buf = b""
        while b"\r\n" not in buf or len(buf) < buf.index(b"\r\n") + 2 + \
                int(buf[1:buf.index(b"\r\n")]) + 2:
            d = self.conn.recv(65536)
            if not d:
                raise AssertionError("Redis closed the connection")
            buf += d
        body = buf[buf.index(b"\r\n") + 2:-2].decode()
        return dict(l.split(":", 1) for l in body.split() if ":" in l)

    def nodes(self):
        """name -> (flags, config epoch, pong_received ms, slot tokens)"""
        out = {}
        for line in self.cli("CLUSTER", "NODES").splitlines():
            f = line.split()
            out[f[0]] = (f[2].split(","), int(f[6]), int(f[5]), f[8:])
        return out

    def close(self):
        try:
            if getattr(self, "conn", None):
                self.conn.close()
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(10)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class BusCapture:
    """Counts cluster-bus messages arriving on lo at one port, by type."""

    def __init__(self, port):
        self.port = port
        self.pings = 0
        self.other = 0
        self.unaligned = 0
        self.lock = threading.Lock()
        self.stop = False
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                  socket.htons(0x0003))
        self.sock.bind(("lo", 0))
        self.sock.settimeout(0.2)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop:
            try:
                pkt, addr = self.sock.recvfrom(262144)
            except socket.timeout:
                continue
            except OSError:
                return
            # lo shows each packet twice: count the incoming copy only
            if addr[2] != socket.PACKET_HOST or len(pkt) < 14 + 20 + 20:
                continue
            if pkt[12:14] != b"\x08\x00" or pkt[23] != 6:
                continue
            ihl = (pkt[14] & 15) * 4
            tcp = 14 + ihl
            if struct.unpack_from(">H", pkt, tcp + 2)[0] != self.port:
                continue
            tot = struct.unpack_from(">H", pkt, 16)[0]
            data = pkt[tcp + (pkt[tcp + 12] >> 4) * 4:14 + tot]
            self._count(data)

    def _count(self, data):
        at = 0
        with self.lock:
            while at < len(data):
                if data[at:at + 4] != b"RCmb" or len(data) - at < 16:
                    self.unaligned += 1
                    return
                tl = struct.unpack_from(">I", data, at + 4)[0]
                if be16(data, at + 12) == 0:
                    self.pings += 1
                else:
                    self.other += 1
                if tl < 16:
                    self.unaligned += 1
                    return
                at += tl
            if at != len(data):
                self.unaligned += 1

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.sock.close()


class Cluster:
    def __init__(self):
        self.nodes = []
        self.cap = None
        self.svc = False
        try:
            self.nodes = [Node(BASE + i) for i in range(3)]
            self.b = self.nodes[ACCEL]
            self.peers = [n for n in self.nodes if n is not self.b]
            self.cap = BusCapture(self.b.bus)
            # before the cluster exists, so that every bus link is made
            # after the context (the stock backend sees only those)
            xpsctl("service", "redis-cluster", "--port", self.b.port,
                   "--name", SVC)
            self.svc = True
            p = subprocess.run(["redis-cli", "--cluster", "create"] +
                               ["127.0.0.1:%d" % n.port for n in self.nodes] +
                               ["--cluster-yes"], capture_output=True,
                               text=True, timeout=60)
            if p.returncode:
                raise AssertionError("cluster create: " + p.stdout + p.stderr)
            wait_for(self.healthy, timeout=30, what="cluster_state ok everywhere")
        except BaseException:
            self.close()
            raise

    def healthy(self):
        for n in self.nodes:
            if n.info().get("cluster_state") != "ok":
                return False
            for flags, _, _, _ in n.nodes().values():
                if "fail" in flags or "fail?" in flags:
                    return False
        return True

    def tx(self):
        return stats(SVC + "-ping")["tx"]

    def daemon_pid(self):
        with open("/run/xps/%s.pid" % SVC) as f:
            return int(f.read())

    def template_age(self):
        """Seconds since the PONG template's stamp (None: no template)."""
        key = ["3", "0", "0", "0"] + ["0"] * 40
        p = subprocess.run(["bpftool", "-j", "map", "lookup", "pinned",
                            "/sys/fs/bpf/xps/ctx/%s-ping/data" % SVC, "key"] + key,
                           capture_output=True, text=True)
        if p.returncode:
            return None
        v = bytes(int(b, 16) for b in json.loads(p.stdout)["value"][:8])
        return (time.monotonic_ns() - struct.unpack("<Q", v)[0]) / 1e9

    def snapshot(self, peers=True):
        """(captured PINGs, ping_received of the node, kernel tx) with every
        sender of PINGs stopped: the filler and (@peers) the other nodes.
        Then everything runs again and the template is fresh."""
        stopped = [self.daemon_pid()] + [p.proc.pid for p in self.peers if peers]
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(0.3)     # what is on its way arrives and is counted

            with self.cap.lock:
                c = self.cap.pings
            a = (c, int(self.b.info()["cluster_stats_messages_ping_received"]),
                 self.tx())
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
        wait_for(lambda: (self.template_age() or 99) < MAX_AGE_S / 2, timeout=10,
                 what="a fresh PONG template")
        return a

    def close(self):
        if self.svc:
            try:
                xpsctl("service", "stop", SVC)
            except Exception:
                traceback.print_exc()
        for n in self.nodes:
            n.close()
        if self.cap:
            self.cap.close()


def ping_msg(sender, count=0, cfg_epoch=0, cur_epoch=0, flags=1, slots=b"",
             totlen=None):
    h = bytearray(HDR)
    h[0:4] = b"RCmb"
    struct.pack_into(">IHHHHQQ", h, 4, totlen or HDR + 104 * count, 1, 0, 0,
                     count, cur_epoch, cfg_epoch)
    h[40:80] = sender.encode()
    h[80:80 + len(slots)] = slots
    struct.pack_into(">H", h, 2250, flags)
    return bytes(h)


def slot_bitmap(tokens):
    bm = bytearray(2048)
    for t in tokens:
        if t.startswith("["):
            continue
        a, _, b = t.partition("-")
        for s in range(int(a), int(b or a) + 1):
            bm[s // 8] |= 1 << (s & 7)
    return bytes(bm)


def read_msgs(c, n):
    """@n whole bus messages from @c."""
    buf, out = b"", []
    while len(out) < n:
        if len(buf) >= 8 and len(buf) >= struct.unpack_from(">I", buf, 4)[0]:
            tl = struct.unpack_from(">I", buf, 4)[0]
            out.append(buf[:tl])
            buf = buf[tl:]
            continue
        d = c.recv(65536)
        if not d:
            raise AssertionError("connection closed after %d messages" % len(out))
        buf += d
    eq(buf, b"", "bytes after the expected messages")
    return out


def bus_conn(node):
    c = socket.create_connection(("127.0.0.1", node.bus))
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.settimeout(3)
    return c


# ---- the tests -----------------------------------------------------------

def test_pongs_keep_cluster_healthy(cl):
    """(a) the kernel answers, and its PONGs are accepted by the peers."""
    t0 = cl.tx()
    end = time.time() + 3 * NODE_TIMEOUT_MS / 1000.0
    while time.time() < end:
        if not cl.healthy():
            raise AssertionError("cluster unhealthy while the kernel answers: %r" %
                                 [n.nodes() for n in cl.nodes])
        for p in cl.peers:
            pong = p.nodes()[cl.b.name][2]
            age = time.time() * 1000 - pong
            if pong and age > NODE_TIMEOUT_MS:
                raise AssertionError("peer %d last saw a PONG from the node %d ms ago"
                                     % (p.port, age))
        time.sleep(0.25)
    if cl.tx() - t0 < 3:
        raise AssertionError("the kernel answered only %d PINGs in %.0f s"
                             % (cl.tx() - t0, 3 * NODE_TIMEOUT_MS / 1000.0))


def test_ping_received_short_by_tx(cl):
    """(b) Redis sees exactly the PINGs the kernel did not answer."""
    c0, r0, t0 = cl.snapshot()
    time.sleep(6)
    c1, r1, t1 = cl.snapshot()
    eq(cl.cap.unaligned, 0, "bus segments that were not whole messages")
    if t1 - t0 < 2:
        raise AssertionError("the kernel answered %d PINGs in 6 s" % (t1 - t0))
    print("   PINGs sent %d, answered by the kernel %d, seen by Redis %d"
          % (c1 - c0, t1 - t0, r1 - r0))
    eq(r1 - r0, (c1 - c0) - (t1 - t0), "ping_received growth = PINGs sent - kernel tx")


def frozen_exchange(cl, segs, replies):
    """With the peers stopped (only the daemon's probes and this exchange
    reach the node), send @segs on a new bus connection, read @replies
    messages (0: check that none comes) after Redis's answer to a PING
    from an unknown node.  Returns (messages, PINGs sent to
    the node, PINGs the kernel answered, PINGs Redis counted)."""
    for p in cl.peers:
        p.proc.send_signal(signal.SIGSTOP)
    try:
        c0, r0, t0 = cl.snapshot(peers=False)
        with bus_conn(cl.b) as c:
            # on the stock backend bytes that arrive before accept() are
            # always Redis's: a first exchange Redis answers proves accept()
            c.sendall(ping_msg(os.urandom(20).hex()))
            read_msgs(c, 1)
            for s in segs:
                c.sendall(s)
                time.sleep(0.05)
            msgs = read_msgs(c, replies)
            if not replies:
                c.settimeout(0.5)
                try:
                    raise AssertionError("unexpected reply %r" % c.recv(65536)[:16])
                except socket.timeout:
                    pass
        c1, r1, t1 = cl.snapshot(peers=False)
    finally:
        for p in cl.peers:
            p.proc.send_signal(signal.SIGCONT)
    return msgs, c1 - c0, t1 - t0, r1 - r0


def test_pass_unknown_partial_malformed(cl):
    """(d) only whole PINGs of known nodes matching Redis's view of them
    are answered; everything else gets Redis's own behaviour."""
    a = cl.peers[0]
    view = cl.b.nodes()[a.name]
    cur = int(cl.b.info()["cluster_current_epoch"])
    slots = slot_bitmap(view[3])
    good = ping_msg(a.name, cfg_epoch=view[1], cur_epoch=cur, slots=slots)
    norm = lambda m: m[:4] + m[8:14] + m[16:HDR]

    # an unknown sender: Redis answers with a PONG of its own
    (redis_pong,), sent, kern, seen = frozen_exchange(
        cl, [ping_msg(os.urandom(20).hex())], 1)
    eq((be16(redis_pong, 12), redis_pong[40:80]), (1, cl.b.name.encode()),
       "unknown sender: Redis's PONG")
    eq((kern, seen), (0, sent), "unknown sender: (kernel answers, Redis counts)")

    # a known sender consistent with Redis's view: the kernel answers with
    # Redis's own PONG header, gossip stripped
    (kpong,), sent, kern, seen = frozen_exchange(cl, [good], 1)
    eq((kern, seen), (1, sent - 1), "known sender: (kernel answers, Redis counts)")
    eq((be16(kpong, 14), len(kpong)), (0, HDR), "kernel PONG: gossip count, length")
    eq(norm(kpong), norm(redis_pong), "kernel PONG header = Redis's PONG header")

    older = ping_msg(a.name, cfg_epoch=view[1] - 1, cur_epoch=cur, slots=slots)
    bad_len = ping_msg(a.name, count=1, totlen=HDR, cfg_epoch=view[1],
                       cur_epoch=cur, slots=slots)
    for what, segs, replies in [
            ("not Redis's view (epoch)", [older], 1),
            ("split across segments", [good[:1000], good[1000:]], 1),
            ("two PINGs in one segment", [good + good], 2),
            # Redis counts it, logs it as invalid and does not answer
            ("lengths do not add up", [bad_len], 0)]:
        msgs, sent, kern, seen = frozen_exchange(cl, segs, replies)
        print("   %-28s PINGs sent %d, kernel %d, Redis %d" % (what, sent, kern, seen))
        for m in msgs:
            eq(be16(m, 12), 1, what + ": Redis replies a PONG")
        eq((kern, seen), (0, sent), what + ": (kernel answers, Redis counts)")
    with open(os.path.join(cl.b.dir, "log")) as f:
        if "received invalid ping packet" not in f.read().lower():
            raise AssertionError("Redis did not see the PING whose lengths do not add up")


def test_stale_template_not_served(cl):
    """The kernel itself refuses a template older than max_age: with the
    daemon stopped the template stays in the map and ages."""
    pid = cl.daemon_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(MAX_AGE_S + 0.3)
        t0 = cl.tx()
        s0 = stats(SVC + "-ping")["pass"]
        time.sleep(NODE_TIMEOUT_MS / 1000.0)
        eq(cl.tx(), t0, "kernel answers with a template older than max_age")
        if stats(SVC + "-ping")["pass"] <= s0:
            raise AssertionError("no PING reached the handler meanwhile")
    finally:
        os.kill(pid, signal.SIGCONT)
    t0 = cl.tx()
    wait_for(lambda: cl.tx() > t0, timeout=10, what="the kernel answering again")


def test_stopped_node_is_flagged(cl):
    """(c) SIGSTOP the node: the kernel stops answering within max_age, the
    peers flag it within node timeout + max_age; SIGCONT recovers."""
    cl.b.proc.send_signal(signal.SIGSTOP)
    stopped = time.time()
    try:
        time.sleep(MAX_AGE_S + 0.3)
        t0 = cl.tx()

        def flagged():
            return all(any(f in ("fail?", "fail") for f in p.nodes()[cl.b.name][0])
                       for p in cl.peers)
        wait_for(flagged, timeout=NODE_TIMEOUT_MS / 1000.0 + MAX_AGE_S + 5,
                 what="the peers flagging the stopped node")
        print("   flagged %.1f s after SIGSTOP" % (time.time() - stopped))
        eq(cl.tx(), t0, "kernel answers for a stopped node")
    finally:
        cl.b.proc.send_signal(signal.SIGCONT)
    wait_for(cl.healthy, timeout=30, what="recovery after SIGCONT")
    t0 = cl.tx()
    wait_for(lambda: cl.tx() > t0, timeout=10, what="the kernel answering again")


def test_daemon_exits_with_its_context(cl):
    """xps-clusterd exits once its context is removed behind the
    service's back: it would otherwise keep probing for nobody.  Last:
    the service has no handler afterwards."""
    pid = cl.daemon_pid()
    xpsctl("handler", "detach", SVC + "-ping")
    wait_for(lambda: not os.path.exists("/proc/%d" % pid), timeout=10,
             what="xps-clusterd to exit when its context is gone")
    with open("/run/xps/%s.log" % SVC) as f:
        if "was removed: exiting" not in f.read():
            raise AssertionError("xps-clusterd did not say why it exited")


TESTS = [test_pongs_keep_cluster_healthy, test_ping_received_short_by_tx,
         test_pass_unknown_partial_malformed, test_stale_template_not_served,
         test_stopped_node_is_flagged, test_daemon_exits_with_its_context]


def main():
    if os.geteuid() != 0:
        print("integration tests need root", file=sys.stderr)
        sys.exit(1)
    only = sys.argv[1:]
    print("== cluster tests, %s backend, kernel %s"
          % (xpsctl("status")["backend"], os.uname().release))
    failed = []
    t = time.time()
    try:
        cl = Cluster()
    except Exception:
        traceback.print_exc()
        print("FAIL cluster setup")
        sys.exit(1)
    print("   cluster up in %.1f s" % (time.time() - t))
    try:
        for fn in TESTS:
            if only and fn.__name__ not in only:
                continue
            t0 = time.time()
            try:
                if not cl.healthy():
                    wait_for(cl.healthy, timeout=30, what="a healthy cluster")
                fn(cl)
                print("PASS %-40s %.1fs" % (fn.__name__, time.time() - t0), flush=True)
            except Exception:
                failed.append(fn.__name__)
                print("FAIL %-40s %.1fs" % (fn.__name__, time.time() - t0), flush=True)
                traceback.print_exc()
    finally:
        cl.close()
    total = len([f for f in TESTS if not only or f.__name__ in only])
    print("== %d passed, %d failed" % (total - len(failed), len(failed)))
    if failed:
        print("failed: " + " ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
