#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""JetStream Raft heartbeats answered from the kernel (xpsctl service nats)
on one follower of a cluster of three unmodified Debian nats-servers, with
an R3 stream and R3 durable consumers in memory: the kernel answers the
follower's heartbeats, never two in a row, with bytes the server itself
sent; the cluster elects no leader it would not elect without XPS; a
stopped follower is seen by its leaders; JetStream publishes and 64 KB
core messages on the same routes arrive whole.

Each server runs in its own network namespace, on a veth pair to this
host, which routes between them, as servers on separate hosts: the
follower's routes, those it accepted and those it dialed, carry its own
address.  (Routed, not bridged: the patched kernel's configuration has
no bridge.)  Oracle for "what the follower sent": an AF_PACKET capture on
this host's end of the follower's veth of every byte its routes carry, reassembled by sequence number and framed as the NATS route
protocol."""
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

# the integration harness lives with the other suites
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "integration"))
from xpstest import SLOW, XPSCTL, XpsError, eq, test, wait_for, main

CLIENT = 17650               # client port of each server (its own address)
ROUTE = 17660                # the cluster's route port
HTTP = 17670                 # monitoring port
ACCEL = 1                    # the follower XPS serves (namespace xpsnats1)
SVC = "xpsnats"
SO_RCVBUFFORCE = 33          # <asm-generic/socket.h>; Python does not name it
LEADER_RE = ("new stream leader", "new consumer leader", "new metadata leader",
             "Self is new JetStream cluster metadata leader")


def addr(i):
    """Server @i's address; this host's end of its veth is .254."""
    return "10.78.%d.1" % i


def ns(i):
    return "xpsnats%d" % i


def sh(*cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode:
        raise AssertionError("%s: %s" % (" ".join(map(str, cmd)), p.stderr.strip()))
    return p.stdout


FORWARD = "/proc/sys/net/ipv4/ip_forward"
_forward_was = None


def topo_down():
    global _forward_was
    for i in range(3):
        subprocess.run(["ip", "netns", "del", ns(i)], capture_output=True)
        subprocess.run(["ip", "link", "del", "xpsn%d" % i], capture_output=True)
    if _forward_was is not None:
        with open(FORWARD, "w") as f:
            f.write(_forward_was)
        _forward_was = None


def topo_up():
    """A namespace per server on a veth pair to this host, which routes."""
    global _forward_was
    topo_down()
    with open(FORWARD) as f:
        _forward_was = f.read()
    with open(FORWARD, "w") as f:
        f.write("1\n")
    for i in range(3):
        sh("ip", "netns", "add", ns(i))
        sh("ip", "link", "add", "xpsn%d" % i, "type", "veth", "peer", "name", "eth0",
           "netns", ns(i))
        sh("ip", "addr", "add", "10.78.%d.254/24" % i, "dev", "xpsn%d" % i)
        sh("ip", "link", "set", "xpsn%d" % i, "up")
        sh("ip", "-n", ns(i), "addr", "add", addr(i) + "/24", "dev", "eth0")
        sh("ip", "-n", ns(i), "link", "set", "eth0", "up")
        sh("ip", "-n", ns(i), "link", "set", "lo", "up")
        sh("ip", "-n", ns(i), "route", "add", "default", "via", "10.78.%d.254" % i)


def xpsctl_in(i, *args, check=True):
    """xpsctl -j ARGS in server @i's network namespace (the framework's TC
    programs attach to the devices of the namespace it runs in); nsenter,
    not ip netns exec, which would hide the pins of /sys/fs/bpf."""
    p = subprocess.run(["nsenter", "--net=/run/netns/" + ns(i), XPSCTL, "-j"] +
                       [str(a) for a in args], capture_output=True, text=True,
                       timeout=60 * SLOW)
    if p.returncode and check:
        raise XpsError("xpsctl %s: %s %s" % (" ".join(map(str, args)), p.stdout,
                                             p.stderr))
    return json.loads(p.stdout) if p.stdout.strip() else None


def replica_in(info, i):
    """What consumer info @info (None: no answer) says of server @i, None
    if it says nothing."""
    for r in (info or {}).get("cluster", {}).get("replicas", []):
        if r.get("name") == "n%d" % i:
            return r
    return None


class Client:
    """The NATS client protocol, enough for the JetStream API."""

    def __init__(self, i, port=CLIENT):
        """To server @i of the suite's cluster, or to the address @i."""
        host = i if isinstance(i, str) else addr(i)
        self.s = socket.create_connection((host, port), timeout=10 * SLOW)
        self.buf = b""
        self.sid = 0
        self._line()        # INFO
        self.s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nPING\r\n')
        while self._line() != b"PONG":
            pass

    def _fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise AssertionError("the server closed the client connection")
        self.buf += d

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def msg(self):
        """The next MSG/HMSG: (subject, payload)."""
        while True:
            line = self._line()
            if line == b"PING":
                self.s.sendall(b"PONG\r\n")
                continue
            if line.startswith(b"-ERR"):
                raise AssertionError(line)
            if not (line.startswith(b"MSG ") or line.startswith(b"HMSG ")):
                continue
            args = line.split()
            n = int(args[-1])
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            if line.startswith(b"HMSG "):
                data = data[int(args[-2]):]
            return args[1].decode(), data

    def sub(self, subject):
        self.sid += 1
        self.s.sendall(b"SUB %s %d\r\n" % (subject.encode(), self.sid))
        return self.sid

    def pub(self, subject, data, reply=None):
        r = b" " + reply.encode() if reply else b""
        self.s.sendall(b"PUB %s%s %d\r\n%s\r\n" % (subject.encode(), r, len(data), data))

    def req(self, subject, body, timeout=None):
        """The reply to a request, None if none came within @timeout
        seconds (with @timeout: JetStream drops an API request for a group
        that has no leader, as while it elects one, and answers nothing)."""
        inbox = "_INBOX.t%d" % (self.sid + 1)
        sid = self.sub(inbox)
        self.pub(subject, json.dumps(body).encode() if body is not None else b"", inbox)
        if timeout is not None:
            self.s.settimeout(timeout * SLOW)
        try:
            while True:
                subj, data = self.msg()
                # a late reply to an earlier request that timed out
                if subj == inbox:
                    break
        except socket.timeout:
            if timeout is None:
                raise
            data = None
        finally:
            self.s.settimeout(10 * SLOW)
            self.s.sendall(b"UNSUB %d\r\n" % sid)
        return json.loads(data) if data is not None else None

    def flush(self):
        self.s.sendall(b"PING\r\n")
        while self._line() != b"PONG":
            pass

    def close(self):
        self.s.close()


def monitor(host, path):
    """GET @path of the monitoring port of the server at @host: its JSON."""
    s = socket.create_connection((host, HTTP), timeout=10 * SLOW)
    s.sendall(b"GET %s HTTP/1.0\r\n\r\n" % path.encode())
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    return json.loads(buf.split(b"\r\n\r\n", 1)[1])


class Server:
    def __init__(self, i, root):
        self.i = i
        self.dir = os.path.join(root, "n%d" % i)
        os.makedirs(self.dir)
        self.log = os.path.join(self.dir, "log")
        conf = os.path.join(self.dir, "conf")
        with open(conf, "w") as f:
            f.write(server_conf("n%d" % i, addr(i), self.dir, [addr(k) for k in range(3)]))
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns(i),
                                      "nats-server", "-c", conf, "-l", self.log],
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def http(self, path):
        return monitor(addr(self.i), path)

    def log_lines(self, *needles):
        try:
            with open(self.log, errors="replace") as f:
                return [l for l in f if any(n in l for n in needles)]
        except FileNotFoundError:
            return []

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class RouteCapture:
    """Every byte sent by and to the follower on its routes, by flow."""

    def __init__(self):
        self.segs = {}      # (src, sport, dst, dport) -> {seq: bytes}
        self.isn = {}
        self.lock = threading.Lock()
        self.stop = False
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                  socket.htons(0x0003))
        self.sock.bind(("xpsn%d" % ACCEL, 0))
        # past net.core.rmem_max (root): an emulated guest reads slowly
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        self.sock.settimeout(0.2)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        me = socket.inet_aton(addr(ACCEL))
        while not self.stop:
            try:
                pkt, a = self.sock.recvfrom(262144)
            except socket.timeout:
                continue
            except OSError:
                return
            # this host's end of the follower's veth: each frame once
            if pkt[12:14] != b"\x08\x00" or pkt[23] != 6:
                continue
            ihl = (pkt[14] & 15) * 4
            src, dst = pkt[26:30], pkt[30:34]
            tcp = 14 + ihl
            sport, dport, seq = struct.unpack_from(">HHI", pkt, tcp)
            if me not in (src, dst) or ROUTE not in (sport, dport):
                continue
            flags = pkt[tcp + 13]
            tot = struct.unpack_from(">H", pkt, 16)[0]
            data = pkt[tcp + (pkt[tcp + 12] >> 4) * 4:14 + tot]
            flow = (src, sport, dst, dport)
            with self.lock:
                if flags & 2:       # SYN: the stream starts after it
                    self.isn[flow] = (seq + 1) & 0xffffffff
                if data:
                    self.segs.setdefault(flow, {})[seq] = data

    def streams(self, outgoing):
        """Each flow's bytes from its first, in order: {flow: bytes}."""
        me = socket.inet_aton(addr(ACCEL))
        out = {}
        with self.lock:
            for flow, segs in self.segs.items():
                if (flow[0] == me) != outgoing or flow not in self.isn:
                    continue
                at, buf = self.isn[flow], bytearray()
                for seq in sorted(segs, key=lambda s: (s - self.isn[flow]) & 0xffffffff):
                    d = segs[seq]
                    rel = (seq - at) & 0xffffffff
                    if rel > 1 << 31:           # a retransmission, partly
                        skip = (at - seq) & 0xffffffff
                        if skip >= len(d):
                            continue
                        d, rel = d[skip:], 0
                    if rel:
                        raise AssertionError("capture lost %d bytes of %r" % (rel, flow))
                    buf += d
                    at = (at + len(d)) & 0xffffffff
                out[flow] = bytes(buf)
        return out

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.sock.close()


def frame(stream):
    """The route protocol's messages: [(line, payload)]; an error if the
    stream is not whole messages (one spliced inside another)."""
    msgs, at = [], 0
    while at < len(stream):
        e = stream.find(b"\n", at)
        if e < 0:
            break               # the last line, still being sent
        line = stream[at:e + 1]
        args = line.split()
        op = args[0].upper() if args else b""
        if op in (b"RMSG", b"HMSG", b"LMSG", b"MSG", b"PUB", b"HPUB"):
            n = int(args[-1])
            if e + 1 + n + 2 > len(stream):
                break
            payload = stream[e + 1:e + 1 + n]
            if stream[e + 1 + n:e + 3 + n] != b"\r\n":
                raise AssertionError("a payload not followed by CRLF: %r" % line)
            msgs.append((line, payload))
            at = e + 3 + n
        else:
            msgs.append((line, None))
            at = e + 1
    return msgs


NATS_STATS = ["bpftool", "-j", "map", "dump", "pinned", "/sys/fs/bpf/xps/xps_nats_stats"]


def nats_stats(dump=None):
    """The NATS counters (include/xps/nats.h), summed over CPUs, from
    @dump (NATS_STATS's output, run elsewhere) or read here."""
    if dump is None:
        dump = subprocess.run(NATS_STATS, capture_output=True, text=True,
                              check=True).stdout
    out = {}
    for e in json.loads(dump):
        k = e["key"] if isinstance(e["key"], int) else int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little")
        out[k] = sum(v["value"] if isinstance(v["value"], int) else
                     int.from_bytes(bytes(int(b, 16) for b in v["value"]), "little")
                     for v in e["values"])
    return {"answered": out[0], "passed": out[1], "learned": out[2],
            "bumps": out[3], "epochs": out[4], "dropped": out[5], "cut": out[6],
            "batches": out[7]}


def meta_ready(c):
    """Whether JetStream answers its API (the meta group has a leader)."""
    try:
        return c.req("$JS.API.INFO", None).get("type") is not None
    except (OSError, ValueError):
        return False


def make_groups(c, consumers):
    """Stream S1 and @consumers durable consumers, all R3 in memory, through
    client @c: that many Raft groups and the stream's.  Their names."""
    deadline = time.time() + 60 * SLOW
    while True:
        r = c.req("$JS.API.STREAM.CREATE.S1",
                  {"name": "S1", "subjects": ["s1.>"], "storage": "memory",
                   "num_replicas": 3})
        # 10005, "no suitable peers": the meta group does not know all
        # three servers yet
        if "error" not in r:
            break
        if r["error"].get("err_code") != 10005 or time.time() > deadline:
            raise AssertionError(r)
        time.sleep(0.5)
    names = ["d%d" % k for k in range(consumers)]
    # a window of requests in flight: each creation is a round of the meta
    # group's Raft, and one at a time a thousand take minutes
    sid = c.sub("_INBOX.mk.*")
    sent = done = 0
    while done < len(names):
        while sent < len(names) and sent - done < 16:
            d = names[sent]
            c.pub("$JS.API.CONSUMER.DURABLE.CREATE.S1." + d,
                  json.dumps({"stream_name": "S1",
                              "config": {"durable_name": d, "ack_policy": "explicit",
                                         "num_replicas": 3}}).encode(),
                  "_INBOX.mk.%d" % sent)
            sent += 1
        _, data = c.msg()
        r = json.loads(data)
        if "error" in r:
            raise AssertionError(r)
        done += 1
    c.s.sendall(b"UNSUB %d\r\n" % sid)
    return names


def server_conf(name, ip, store, peers):
    """A server's configuration: client, monitoring and route ports on
    @ip, JetStream in @store, routes to every address of @peers."""
    routes = ", ".join("nats-route://%s:%d" % (a, ROUTE) for a in peers)
    return ("server_name: %s\nlisten: %s:%d\nhttp: %s:%d\n"
            "jetstream { store_dir: %s, max_memory_store: 1GB, max_file_store: 64MB }\n"
            "cluster { name: xps, listen: %s:%d, routes: [%s] }\n"
            % (name, ip, CLIENT, ip, HTTP, store, ip, ROUTE, routes))


class Cluster:
    """Three servers, XPS on server ACCEL from before they start (routes
    made earlier are not served), a stream and @consumers consumers."""

    def __init__(self, consumers, xps=True):
        self.root = tempfile.mkdtemp(prefix="xps-nats-")
        self.servers = []
        self.cap = None
        try:
            topo_up()
            self.cap = RouteCapture()
            if xps:
                xpsctl_in(ACCEL, "service", "nats", "--port", ROUTE, "--addr",
                          addr(ACCEL), "--name", SVC)
            self.servers = [Server(i, self.root) for i in range(3)]
            for s in self.servers:
                wait_for(lambda: self._routes(s) == 2, timeout=20,
                         what="the routes of n%d" % s.i)
            self.c = Client(0)
            wait_for(lambda: meta_ready(self.c), timeout=30, what="a JetStream meta leader")
            self.consumers = make_groups(self.c, consumers)
        except BaseException:
            self.close()
            raise

    def _routes(self, s):
        try:
            return s.http("/routez")["num_routes"]
        except (OSError, ValueError, KeyError):
            return -1


    def leader_events(self):
        return sum(len(s.log_lines(*LEADER_RE)) for s in self.servers)

    trouble_before = None

    def route_trouble(self):
        """Route errors logged since settle() (all of them before)."""
        got = [l for s in self.servers
                for l in s.log_lines("Router connection closed", "Error", "Slow Consumer",
                                     "Reconnect", "[ERR]")
                # the first attempts, while the other servers start, and
                # the second route of a pair both servers dialed at once
                if "Error trying to connect to route" not in l and
                "Duplicate Route" not in l]
        return [l for l in got if l not in (self.trouble_before or [])]

    def consumer_info(self, d, timeout=None):
        """What consumer @d's leader says of it; with @timeout, None if it
        said nothing in that time (see Client.req)."""
        return self.c.req("$JS.API.CONSUMER.INFO.S1." + d, None, timeout)

    def replica(self, d, i):
        """What consumer @d's leader knows of server @i, None if it says
        nothing (an API error while a group changes)."""
        return replica_in(self.consumer_info(d), i)

    def close(self):
        for s in self.servers:
            s.stop()
        if self.cap:
            self.cap.close()
        xpsctl_in(ACCEL, "service", "stop", SVC, check=False)
        topo_down()
        shutil.rmtree(self.root, ignore_errors=True)


def settle(cl, seconds=8):
    """Wait for the groups' leaders to settle: @seconds without a new one.
    What the logs say of the routes from then on is route_trouble()'s."""
    n = cl.leader_events()
    t = time.time()
    while time.time() - t < seconds * SLOW:
        time.sleep(1)
        m = cl.leader_events()
        if m != n:
            n, t = m, time.time()
    cl.trouble_before = cl.route_trouble()
    for l in cl.trouble_before:
        print("    while the cluster formed: " + l.strip())


def replies_of(streams):
    """The follower's answers to heartbeats, by flow and reply subject."""
    by = {}
    for flow, stream in streams.items():
        for line, payload in frame(stream):
            args = line.split()
            if args and args[0] == b"RMSG" and args[2].startswith(b"$NRG.R.") and \
                    payload is not None:
                by.setdefault((flow, args[2]), []).append(line + payload)
    return by


def steady(cl, secs):
    """@secs of steady state: (heartbeats the kernel answered, heartbeats
    passed to the follower, leader elections); the counters' deltas in
    cl.delta."""
    ev0, st0 = cl.leader_events(), nats_stats()
    time.sleep(secs * SLOW)
    st1 = nats_stats()
    cl.delta = {k: st1[k] - st0[k] for k in st1}
    return (st1["answered"] - st0["answered"], st1["passed"] - st0["passed"],
            cl.leader_events() - ev0)


def led_by_accel(cl):
    """The consumers server ACCEL leads."""
    return [d for d in cl.consumers
            if cl.consumer_info(d).get("cluster", {}).get("leader") == "n%d" % ACCEL]


def check_leader_drops(cl, secs, delay=1.5):
    """On the groups ACCEL leads, the kernel drops duplicate answers of
    the followers, never two in a row: some dropped, at most about half,
    and every follower heard from within 2.5 s and the leader's delay
    (@delay seconds)."""
    led = led_by_accel(cl)
    if not led:
        print("    n%d leads no consumer: nothing to drop" % ACCEL)
        return
    # two followers, a heartbeat a second each, the stream's and the meta
    # group's groups perhaps too
    most = (len(led) + 2) * 2 * secs // 2 + 2 * (len(led) + 2)
    dropped = cl.delta["dropped"]
    print("    leader n%d: %d duplicate answers dropped in %d s (%d consumers led)"
          % (ACCEL, dropped, secs, len(led)))
    if dropped < 1 or dropped > most:
        raise AssertionError("dropped %d duplicate answers, expected 1 to %d" % (dropped, most))
    for d in led:
        for r in cl.consumer_info(d).get("cluster", {}).get("replicas", []):
            # "active": ns since the leader last heard from the follower
            # passes at most 2 * XPS_NATS_DUP_NS apart, and the time the
            # leader takes to read them
            if r.get("active", 0) > (2.5 + delay) * 1e9 * SLOW:
                raise AssertionError("consumer %s: the leader did not hear from %s: %r"
                                     % (d, r.get("name"), r))


@test
def test_heartbeats_answered_by_the_kernel():
    cl = Cluster(20)
    try:
        settle(cl)
        answered, passed, elections = steady(cl, 12)
        # the follower follows about two thirds of 21 groups (not the meta
        # group), one heartbeat each a second, every other one answered
        if answered < 20:
            raise AssertionError("the kernel answered %d heartbeats in 12 s, passed %d"
                                 % (answered, passed))
        # never two in a row: each answer follows a heartbeat passed (one
        # more per group where the window cuts a pair)
        if answered > passed + 21:
            raise AssertionError("answered %d, passed %d" % (answered, passed))
        eq(elections, 0, "leader elections in 12 s of steady state")
        check_leader_drops(cl, 12)
        # the counters, as an operator sees them
        svc = [e for e in xpsctl_in(ACCEL, "service", "list") if e["name"] == SVC]
        eq(len(svc), 1, "service list entries named %s" % SVC)
        m = re.match(r"running: (\d+) heartbeats answered \((\d+) segments of several\), "
                     r".* (\d+) routes cut$", svc[0]["state"])
        if not m or not 1 <= int(m.group(1)) <= nats_stats()["answered"] or \
                int(m.group(2)) > nats_stats()["batches"]:
            raise AssertionError("service list state: %r" % svc[0]["state"])
        eq(int(m.group(3)), 0, "routes cut")
        for s in cl.servers:
            eq(s.http("/healthz").get("status"), "ok", "/healthz of n%d" % s.i)
        eq(cl.route_trouble(), [], "route errors")
        # every answer to an append on the wire (25 bytes; votes are
        # answered in 17): whole, the follower's own id, and the kernel's
        # repeat an earlier answer of the same flow
        by = replies_of(cl.cap.streams(outgoing=True))
        ids, repeats = set(), 0
        for key, msgs in by.items():
            msgs = [m for m in msgs if len(m) - m.index(b"\n") - 1 == 25]
            for k, m in enumerate(msgs):
                ids.add(m[m.index(b"\n") + 1:][16:24])
                repeats += m in msgs[:k]
        eq(len(ids), 1, "peer ids in the follower's answers")
        total = nats_stats()["answered"]
        if repeats < total:
            raise AssertionError("%d kernel answers but only %d answers repeat an "
                                 "earlier one on their route" % (total, repeats))
        # the incoming side frames whole too (nothing spliced by the leaders)
        for flow, stream in cl.cap.streams(outgoing=False).items():
            frame(stream)
    finally:
        cl.close()


def idle_cluster(consumers, least):
    """@consumers consumer groups and the stream, idle: the kernel answers
    at least @least of the heartbeats it passes (never more than one per
    passed, plus one per group where the window cuts a pair), no group
    elects a leader, the leaders' drops hold, no route breaks."""
    t0 = time.time()
    cl = Cluster(consumers)
    try:
        print("    %d consumers made in %.0f s" % (consumers, time.time() - t0))
        settle(cl)
        answered, passed, elections = steady(cl, 10)
        # routes that fell back to the slow path for good, and why
        st = xpsctl_in(ACCEL, "status") or {}
        lost = {k: v for k, v in (st.get("connections_lost_count") or {}).items() if v}
        print("    kernel answered %d heartbeats in 10 s (%d segments of several), passed %d%s"
              % (answered, cl.delta["batches"], passed, "; connections lost their count: " +
                 ", ".join("%s %d" % kv for kv in sorted(lost.items())) if lost else ""))
        if answered < max(1, passed * least) or answered > passed + consumers + 1:
            raise AssertionError("answered %d, passed %d" % (answered, passed))
        eq(elections, 0, "leader elections in 10 s of steady state")
        # the leader's reading delay grows with its groups: 3.5 s and
        # 4.02 s seen at 1,000 consumers in the emulated VM
        check_leader_drops(cl, 10, 1.5 if consumers < 1000 else 2.5)
        eq(cl.route_trouble(), [], "route errors")
    finally:
        cl.close()


@test
def test_heartbeats_at_100_consumers():
    """A hundred consumer groups: the follower follows about 67 of the 101
    groups, about 670 heartbeats in 10 s, about half of them the
    kernel's."""
    idle_cluster(100, 1 / 4)


@test
def test_heartbeats_at_1000_consumers():
    """A thousand consumer groups, the scale of the reports of idle
    clusters burning CPU: the kernel still answers a share of the
    follower's heartbeats (the leaders batch their writes, and a segment
    of several heartbeats is passed whole: 44% answered on this machine's
    cores, 2 to 15% in the native backend's emulated VM, where the
    leaders' batches grow with the load: the share is not asserted, only
    that the kernel answers).  About two minutes here, five in the VM."""
    idle_cluster(1000, 0)


@test
def test_writes_and_large_messages_on_the_routes():
    """JetStream publishes (Raft entries) and 64 KB core messages cross the
    follower's routes, both ways, while heartbeats are answered: every
    message arrives whole, every replica stores every entry, no route
    breaks (a kernel answer inside one of the follower's messages would
    break the route it went out on)."""
    cl = Cluster(10)
    clients = []
    try:
        settle(cl)
        st0 = nats_stats()
        subs = [Client(i) for i in range(3)]
        pubs = [Client(i) for i in range(3)]
        clients = subs + pubs
        for c in subs:
            c.sub("big.>")
            c.flush()
        big = bytes(range(256)) * 256
        n = 60                  # per publisher
        got = [[] for _ in subs]

        def reader(k):
            while len(got[k]) < 3 * n:
                got[k].append(subs[k].msg())
        threads = [threading.Thread(target=reader, args=(k,), daemon=True)
                   for k in range(3)]
        for t in threads:
            t.start()
        for k in range(n):
            for i, p in enumerate(pubs):
                p.pub("big.%d.%d" % (i, k), big[k:] + big[:k])
            if k % 3 == 0:
                r = cl.c.req("s1.k%d" % k, {"k": k})
                if "error" in r:
                    raise AssertionError(r)
        for p in pubs:
            p.flush()
        for t in threads:
            t.join(60 * SLOW)
        for k, g in enumerate(got):
            eq(len(g), 3 * n, "core messages received on n%d" % k)
            for subj, data in g:
                m = int(subj.split(".")[2])
                if data != big[m:] + big[:m]:
                    raise AssertionError("%s corrupted on its way to n%d" % (subj, k))
        time.sleep(3 * SLOW)
        for s in cl.servers:
            st = s.http("/jsz?streams=true")
            msgs = sum(sd.get("state", {}).get("messages", 0)
                       for a in st.get("account_details", []) for sd in a.get("stream_detail", []))
            eq(msgs, 20, "stream messages stored on n%d" % s.i)
        eq(cl.route_trouble(), [], "route errors")
        st1 = nats_stats()
        if st1["answered"] - st0["answered"] < 1:
            raise AssertionError("no heartbeat answered under the load: %r" % st1)
    finally:
        for c in clients:
            c.close()
        cl.close()


@test
def test_stopped_follower_seen_by_its_leaders():
    """SIGSTOP of the follower: the kernel stops answering for it within
    about one heartbeat, so every leader sees it silent."""
    cl = Cluster(10)
    try:
        settle(cl)
        time.sleep(3)
        led = [d for d in cl.consumers
               if cl.consumer_info(d)["cluster"].get("leader") != "n%d" % ACCEL]
        if not led:
            raise AssertionError("the follower leads every consumer")
        st0 = nats_stats()
        victim = cl.servers[ACCEL]
        victim.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(5)
            st1 = nats_stats()
            rep = cl.replica(led[0], ACCEL)
        finally:
            victim.proc.send_signal(signal.SIGCONT)
        if rep is None:
            raise AssertionError("consumer %s: no replica info" % led[0])
        # "active": ns since the leader last heard from the follower
        # ("current" says whether its log is caught up, not whether it lives)
        if rep["active"] < 2.5e9:
            raise AssertionError("the leader heard from the stopped follower: %r" % rep)
        # at most one answer per group after the stop
        if st1["answered"] - st0["answered"] > len(cl.consumers) + 1:
            raise AssertionError("kernel answers while stopped: %d"
                                 % (st1["answered"] - st0["answered"]))
        def back():
            # a follower resumed after its election timeout may win the
            # group (Raft, with or without XPS: docs/nats.md); while the
            # group elects, its API answers nothing
            info = cl.consumer_info(led[0], timeout=2)
            if info is None:
                return False
            if info.get("cluster", {}).get("leader") == "n%d" % ACCEL:
                return True
            return (replica_in(info, ACCEL) or {}).get("active", 1e18) < 2e9
        try:
            wait_for(back, timeout=20, what="the leader hearing from the follower again")
        except AssertionError:
            print("    consumer %s: %r" % (led[0], cl.consumer_info(led[0], timeout=2)))
            raise
    finally:
        cl.close()


def failover(xps):
    """Kill (SIGKILL) the server other than the follower that leads the most
    consumer groups: the seconds until every group it led has a new leader
    (a survivor's log says so), and how many groups that was."""
    cl = Cluster(10, xps=xps)
    try:
        settle(cl)
        lead = {d: cl.consumer_info(d).get("cluster", {}).get("leader")
                for d in cl.consumers}
        victim = max((i for i in range(3) if i != ACCEL),
                     key=lambda i: sum(v == "n%d" % i for v in lead.values()))
        led = [d for d, v in lead.items() if v == "n%d" % victim]
        if not led:
            raise AssertionError("no consumer led by n0 or n2: %r" % lead)
        survivors = [s for s in cl.servers if s.i != victim]

        def elected():
            return {d: sum(len(s.log_lines("new consumer leader for '$G > S1 > %s'" % d))
                           for s in survivors) for d in led}
        before = elected()
        t0 = time.time()
        cl.servers[victim].proc.kill()
        cl.servers[victim].proc.wait(10)

        def done():
            now = elected()
            return all(now[d] > before[d] for d in led)
        wait_for(done, timeout=60, what="new leaders for the groups of n%d" % victim)
        secs = time.time() - t0
        return secs, len(led)
    finally:
        cl.close()


@test
def test_failover_no_slower_than_baseline():
    """The leader of some consumer groups dies: the follower XPS serves
    takes part in electing their new leaders no later than it would
    without XPS (the kernel answers only heartbeats that arrive, and none
    arrives from a dead leader).  One run each, same topology: the bound
    allows the election timer's spread (4 to 9 s)."""
    base, nb = failover(False)
    xps, nx = failover(True)
    print("    new leaders for %d groups in %.1f s without XPS, for %d in %.1f s with it"
          % (nb, base, nx, xps))
    if xps > base + 5 * SLOW:
        raise AssertionError("failover took %.1f s with XPS, %.1f s without" % (xps, base))


if __name__ == "__main__":
    main()
