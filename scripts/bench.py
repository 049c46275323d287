#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""XPS benchmarks: each baseline and its XPS variant in the same run, same
topology, same client; ratios, not absolute claims.

Topology ("two machines" on one 2-core box): the server runs in its own
network namespace joined to the client's by veth; the server process and,
through RPS on the veth's receive queue, its receive processing are pinned
to CPU 1, the client to CPU 0.  A loopback run is kept for reference.

Server CPU per request = busy ticks of CPU 1 (/proc/stat) divided by the
requests served during the measurement.

  scripts/bench.py [--quick] [--out DIR] [--only GROUPS] [--profile]

--profile samples the server core with perf(1) during every measured run
and writes the hottest commands and symbols, baseline next to XPS, under
DIR/profiles/ (sampling costs a little of that core in both variants).
"""
import argparse
import csv
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, ".output")
XPSCTL = os.path.join(OUT, "xpsctl")
NS = "xpsb"
SRV_IP, CLI_IP = "10.77.0.2", "10.77.0.1"
SRV_CPU, CLI_CPU = 1, 0
HZ = os.sysconf("SC_CLK_TCK")

GOALS = {
    # (experiment prefix, metric): (goal ratio, "<=" or ">=", text)
    ("redis_get_P16", "throughput"): (2.0, ">=", "Redis GET throughput, pipelining client >= 2.0x"),
    ("redis_get_P16", "p99_ms"): (0.25, "<=", "Redis GET p99, pipelining client <= 0.25x"),
    ("redis_get", "cpu_us_per_req"): (0.4, "<=", "server CPU per Redis GET <= 0.4x"),
    ("nginx_post", "throughput"): (2.5, ">=", "blocked-POST throughput >= 2.5x"),
    ("nginx_post", "p99_ms"): (0.15, "<=", "blocked-POST p99 <= 0.15x"),
    ("memcached_udp", "throughput"): (4.0, ">=", "Memcached UDP GET throughput >= 4x"),
}

# Instructions per request, XPS/baseline, on the patched kernel's
# instruction-count model (scripts/bench_icount.py): exact experiment names.
ICOUNT_GOALS = {
    "redis_get_P1_d128_c50": 0.45,
    "redis_get_P1_d128_c1": 0.50,
    "redis_get_P16_d128_c50": 0.50,
    "redis_get_P1_d1024_c50": 0.55,
    "redis_get_P16_d1024_c50": 0.55,
    "ceiling_c50": 0.40,
    "memcached_tcp_get": 0.45,
    "memcached_udp_get": 0.35,
    "nginx_post100": 0.35,
    # the mixes (issue 27): reads and writes, passes included
    "redis_mix_95_5_d128_c50": 0.80,
    "redis_mix_75_25_d128_c50": 0.90,
    # XPS with threaded NAPI against the baseline's softirq NAPI
    "redis_mix_95_5_d128_c50_tnapi": 0.80,
    "redis_mix_75_25_d128_c50_tnapi": 0.90,
    "nginx_post75": 0.75,
    "nginx_post50": 0.90,
}
# The handler's own instructions per run (its run_ns under icount).
HANDLER_GOALS = {"redis_get_P1_d128_c50": 1000.0}
# the kernel's share of a mix's GETs, by experiment prefix
GETS_ANSWERED_GOALS = {"redis_mix_95_5": 0.99}

log_lines = []
PROFILE_DIR = None   # --profile: where perf reports go


def say(msg):
    line = "[%s] %s" % (time.strftime("%H:%M:%S"), msg)
    log_lines.append(line)
    print(line, flush=True)


def sh(cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, **kw)


def in_srv(cmd, cpu=SRV_CPU):
    # nsenter keeps the mount namespace: /sys/fs/bpf stays shared
    return ["nsenter", "--net=/run/netns/" + NS, "taskset", "-c", str(cpu)] + cmd


def on_cli(cmd):
    return ["taskset", "-c", str(CLI_CPU)] + cmd


def xpsctl(*args, netns=True, check=True):
    cmd = [XPSCTL, "-j"] + [str(a) for a in args]
    if netns:
        cmd = ["nsenter", "--net=/run/netns/" + NS] + cmd
    p = sh(cmd, check=False)
    doc = json.loads(p.stdout) if p.stdout.strip() else None
    if p.returncode and check:
        raise RuntimeError("xpsctl %s: %s" % (" ".join(map(str, args)),
                                                doc.get("error") if doc else p.stderr))
    return doc


# ---- topology --------------------------------------------------------------

def topo_up():
    topo_down()
    for c in (["ip", "netns", "add", NS],
              ["ip", "link", "add", "xpsb-c", "type", "veth", "peer", "name", "xpsb-s"],
              ["ip", "link", "set", "xpsb-s", "netns", NS],
              ["ip", "addr", "add", CLI_IP + "/24", "dev", "xpsb-c"],
              ["ip", "link", "set", "xpsb-c", "up"],
              ["ip", "netns", "exec", NS, "ip", "addr", "add", SRV_IP + "/24", "dev", "xpsb-s"],
              ["ip", "netns", "exec", NS, "ip", "link", "set", "xpsb-s", "up"],
              ["ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up"]):
        sh(c)
    # receive processing of the server's side on the server's CPU
    mask = "%x" % (1 << SRV_CPU)
    rps = [sh(["ip", "netns", "exec", NS, "sh", "-c",
               "for q in /sys/class/net/xpsb-s/queues/rx-*; do echo %s > $q/rps_cpus; done" % mask],
              check=False).returncode,
           sh(["sh", "-c", "for q in /sys/class/net/xpsb-c/queues/rx-*; do echo %x > $q/rps_cpus; done"
               % (1 << CLI_CPU)], check=False).returncode]
    if any(rps):
        say("NOTE: this kernel has no RPS: receive processing is not pinned")


def topo_down():
    sh(["ip", "link", "del", "xpsb-c"], check=False)
    sh(["ip", "netns", "del", NS], check=False)


def cpu_busy(cpu):
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu%d " % cpu):
                v = [int(x) for x in line.split()[1:]]
                # user nice system idle iowait irq softirq steal
                return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    raise RuntimeError("no cpu%d in /proc/stat" % cpu)


class profiled:
    """perf record of the server core while a measurement runs, when
    --profile asked for it; a no-op otherwise."""

    def __init__(self, exp, variant):
        self.tag = "%s_%s" % (exp, variant)
        self.proc = None

    def __enter__(self):
        if PROFILE_DIR:
            self.data = os.path.join(PROFILE_DIR, self.tag + ".data")
            self.proc = subprocess.Popen(["perf", "record", "-q", "-C", str(SRV_CPU), "-F", "999",
                                          "-o", self.data],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return self

    def __exit__(self, *exc):
        if not self.proc:
            return False
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        txt = os.path.join(PROFILE_DIR, self.tag + ".txt")
        with open(txt, "w") as f:
            for sort, limit in (("comm", "0.5"), ("comm,dso,sym", "0.7")):
                p = sh(["perf", "report", "--stdio", "-i", self.data, "--sort", sort,
                        "--percent-limit", limit], check=False)
                f.write("".join(l + "\n" for l in p.stdout.splitlines()
                                if l.strip() and not l.startswith("# ") and l != "#"))
                f.write("\n")
        os.remove(self.data)
        return False


# ---- servers ----------------------------------------------------------------

class RedisServer:
    def __init__(self, port, netns=True):
        self.dir = tempfile.mkdtemp(prefix="xps-bench-redis-")
        cmd = ["redis-server", "--port", str(port), "--bind", "0.0.0.0", "--save", "",
               "--appendonly", "no", "--protected-mode", "no", "--dir", self.dir,
               "--loglevel", "warning"]
        self.netns = netns
        self.host = SRV_IP if netns else "127.0.0.1"
        self.port = port
        self.proc = subprocess.Popen(in_srv(cmd) if netns else ["taskset", "-c", str(SRV_CPU)] + cmd,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if sh(["redis-cli", "-h", self.host, "-p", str(port), "PING"], check=False).stdout.strip() == "PONG":
                return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def cli(self, *args):
        return sh(["redis-cli", "-h", self.host, "-p", str(self.port)] + [str(a) for a in args]).stdout

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def redis_benchmark_parse(stdout):
    rows = list(csv.reader(line for line in stdout.splitlines() if line.strip()))
    head, res = rows[0], {}
    for r in rows[1:]:
        d = dict(zip(head, r))
        res[d["test"]] = {"throughput": float(d["rps"]),
                          "p50_ms": float(d["p50_latency_ms"]),
                          "p99_ms": float(d["p99_latency_ms"])}
    return res


def redis_benchmark(host, port, clients, pipeline, n, size, keyspace=None):
    """One redis-benchmark GET run on the client core: {"GET": {throughput,
    p50_ms, p99_ms}}."""
    cmd = on_cli(["redis-benchmark", "-h", host, "-p", str(port), "-c", str(clients),
                  "-P", str(pipeline), "-n", str(n), "-d", str(size), "-t", "get", "--csv"]
                 + (["-r", str(keyspace)] if keyspace else []))
    try:
        p = sh(cmd, check=False, timeout=60 if n <= 10000 else 900)
    except subprocess.TimeoutExpired:
        # seen once with XPS (stock backend): every request answered at
        # the TCP level, redis-benchmark still waiting for one reply
        raise RuntimeError("redis-benchmark hung (%s)" % " ".join(cmd))
    if p.returncode:
        raise RuntimeError("redis-benchmark failed: " + p.stderr[-300:])
    return redis_benchmark_parse(p.stdout)


# ---- experiments --------------------------------------------------------------

RESULTS = []   # dicts: experiment, backend, variant, metric, value


BACKEND = "stock"   # what this run measures; "native" inside the VM


def record(exp, backend, variant, metrics):
    for k, v in metrics.items():
        RESULTS.append({"experiment": exp, "backend": BACKEND, "variant": variant,
                        "metric": k, "value": v})


NOT_RUN = []   # (experiment, reason)


def measure_redis(exp, backend, variant, srv, clients, pipeline, n, size, handler=None,
                  service=None, keyspace=None):
    """One redis-benchmark GET run on the server, XPS attached if @handler
    (or already running as @service)."""
    name = service
    if handler:
        name = xpsctl("handler", "attach", os.path.join(OUT, "bpf", handler + ".bpf.o"),
                      "--port", srv.port, "--name", "bench")["name"]
    try:
        # the handler's counters over this run only (not the warm-up's misses)
        st0 = xpsctl("stats", "show", name)[0] if name else None
        with profiled(exp, variant):
            b0 = cpu_busy(SRV_CPU)
            res = redis_benchmark(srv.host, srv.port, clients, pipeline, n, size,
                                  keyspace=keyspace)["GET"]
            b1 = cpu_busy(SRV_CPU)
        res["cpu_us_per_req"] = (b1 - b0) * 1e6 / HZ / n
        if name:
            st = xpsctl("stats", "show", name)[0]
            res["kernel_answered"] = (st["tx"] - st0["tx"]) / max(1, st["runs"] - st0["runs"])
        say("  %-34s %-8s %10.0f req/s  p50 %.3f ms  p99 %.3f ms  cpu %.2f us/req"
            % (exp, variant, res["throughput"], res["p50_ms"], res["p99_ms"], res["cpu_us_per_req"]))
        record(exp, backend, variant, res)
        return res
    finally:
        if handler:
            xpsctl("handler", "detach", name)


def exp_ceiling(quick):
    """The hook's ceiling vs Redis answering GETs itself (unpipelined)."""
    n = 20000 if quick else 200000
    for clients in ([50] if quick else [50, 100]):
        srv = RedisServer(17700)
        try:
            srv.cli("SET", "key:__rand_int__", "bar")
            exp = "ceiling_c%d" % clients
            measure_redis(exp, "stock", "baseline", srv, clients, 1, n, 3)
            measure_redis(exp, "stock", "xps", srv, clients, 1, n, 3, handler="ceiling")
        finally:
            srv.stop()


def exp_loopback(quick):
    n = 20000 if quick else 100000
    srv = RedisServer(17701, netns=False)
    try:
        exp = "loopback_ceiling_c50"
        measure_redis(exp, "stock", "baseline", srv, 50, 1, n, 3)
        name = XPSCTL
        res = None
        xps = [XPSCTL, "-j", "handler", "attach", os.path.join(OUT, "bpf", "ceiling.bpf.o"),
               "--port", "17701", "--name", "bench-lo"]
        sh(xps)
        try:
            b0 = cpu_busy(SRV_CPU)
            res = redis_benchmark("127.0.0.1", 17701, 50, 1, n, 3)["GET"]
            res["cpu_us_per_req"] = (cpu_busy(SRV_CPU) - b0) * 1e6 / HZ / n
            record(exp, BACKEND, "xps", res)
            say("  %-34s %-8s %10.0f req/s  p50 %.3f ms  p99 %.3f ms"
                % (exp, "xps", res["throughput"], res["p50_ms"], res["p99_ms"]))
        finally:
            sh([XPSCTL, "handler", "detach", "bench-lo"], check=False)
    finally:
        srv.stop()


def exp_redis(quick):
    why = handler_gate("redis")
    if why:
        NOT_RUN.append(("redis_get*", "the Redis handler does not load: " + why))
        say("  Redis GET experiments NOT RUN: " + why)
        return
    n = 50000 if quick else 300000
    sizes = [128] if quick else [128, 1024]
    clients_l = [50] if quick else [50, 100, 1000]
    for size in sizes:
        for clients in clients_l:
            for pipeline in ([1, 16]):
                srv = RedisServer(17702)
                try:
                    run_redis_pair(srv, size, clients, pipeline, n, quick)
                except RuntimeError as e:
                    exp = "redis_get_%s_d%d_c%d" % ("P16" if pipeline == 16 else "P1", size, clients)
                    NOT_RUN.append((exp, str(e)))
                    say("  %s FAILED: %s" % (exp, e))
                finally:
                    xpsctl("service", "stop", "bench", check=False)
                    srv.stop()


def kvload(host, port, proto, clients, keys, secs, get_pct=100, size=128):
    """Run bench/kvload on the client core: {type: {requests, errors,
    throughput, p50_ms, p99_ms}} for each request type it sent.  On TCP an
    error is a broken connection or an unexpected reply: fatal."""
    p = sh(on_cli([os.path.join(OUT, "bench", "kvload"), host, str(port), proto, str(clients),
                   str(keys), str(secs), str(get_pct), str(size)]), timeout=secs + 60)
    out = {}
    for line in p.stdout.split():
        t, reqs, _, thr, p50, p99, errs = line.split(",")
        if int(errs) and not proto.endswith("udp"):
            raise RuntimeError("kvload: %s errors on %s %ss" % (errs, proto, t))
        out[t] = {"requests": int(reqs), "errors": int(errs), "throughput": float(thr),
                  "p50_ms": float(p50), "p99_ms": float(p99)}
    return out


def redis_preload(srv, size, n):
    """SET every key redis-benchmark -r @n asks for (key:000000000000 ..):
    a random preload leaves about a third of them missing, their GETs are
    nil replies Redis must give, and one such GET makes the handler pass
    its whole pipelined segment."""
    val = "x" * size
    cmds = "".join("*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n"
                   % (i, size, val) for i in range(n))
    p = sh(on_cli(["redis-cli", "-h", srv.host, "-p", str(srv.port), "--pipe"]), input=cmds)
    if "errors: 0" not in p.stdout:
        raise RuntimeError("Redis preload failed: " + p.stdout[-300:])


def warm_until(load, stats, want=0.99, rounds=20, what="the cache"):
    """Run @load until, in one round of it, the kernel answers @want of the
    handler's runs (@stats: the context's `xpsctl stats show` entry); a
    NOTE if no round does."""
    for _ in range(rounds):
        st0 = stats()
        load()
        st = stats()
        runs = st["runs"] - st0["runs"]
        if runs and (st["tx"] - st0["tx"]) / runs >= want:
            return
    say("  NOTE: %s did not warm to %d%% of runs answered" % (what, 100 * want))


def redis_service_warm(srv, size, name="bench", keyspace=1000):
    """Start the Redis service as @name and warm its cache: the filler
    learns what the handler missed from the GETs' replies, until the kernel
    answers 99% of them (the goals count GETs answered after warm-up)."""
    xpsctl("service", "redis", "--port", srv.port, "--name", name)
    warm_until(lambda: redis_benchmark(srv.host, srv.port, 10, 1, 3000, size,
                                       keyspace=keyspace),
               lambda: xpsctl("stats", "show", name)[0], what="the Redis cache")


def run_redis_pair(srv, size, clients, pipeline, n, quick):
    # one baseline and its XPS variant against one fresh server
    redis_preload(srv, size, 1000)
    exp = "redis_get_%s_d%d_c%d" % ("P16" if pipeline == 16 else "P1", size, clients)
    measure_redis(exp, "stock", "baseline", srv, clients, pipeline, n, size, keyspace=1000)
    redis_service_warm(srv, size)
    measure_redis(exp, "stock", "xps", srv, clients, pipeline, n, size,
                  service="bench", keyspace=1000)


def exp_redis_mix(quick):
    """GET/SET mixes: one closed-loop client (kvload) whose connections each
    send a GET or a SET by the mix, so both run for the same time; GET and
    SET reported separately (experiment names end in _GET / _SET)."""
    why = handler_gate("redis")
    if why:
        NOT_RUN.append(("redis_mix*", "the Redis handler does not load: " + why))
        return
    secs, clients, size = (3 if quick else 10), 50, 128
    for get_pct in ([95] if quick else [95, 75]):
        exp = "redis_mix_%d_%d_d%d_c%d" % (get_pct, 100 - get_pct, size, clients)
        srv = RedisServer(17703)
        try:
            redis_preload(srv, size, 1000)
            measure_redis_mix(exp, "baseline", srv, get_pct, secs, size, clients)
            redis_service_warm(srv, size)
            measure_redis_mix(exp, "xps", srv, get_pct, secs, size, clients, service="bench")
        except RuntimeError as e:
            NOT_RUN.append((exp, str(e)))
            say("  %s FAILED: %s" % (exp, e))
        finally:
            xpsctl("service", "stop", "bench", check=False)
            srv.stop()


def measure_redis_mix(exp, variant, srv, get_pct, secs, size, clients, service=None):
    st0 = xpsctl("stats", "show", service)[0] if service else None
    with profiled(exp, variant):
        b0 = cpu_busy(SRV_CPU)
        out = kvload(srv.host, srv.port, "redis", clients, 1000, secs, get_pct, size)
        b1 = cpu_busy(SRV_CPU)
    n = 0
    gets = out.get("GET", {}).get("requests", 0)
    for r in out.values():
        n += r.pop("requests")
        del r["errors"]     # none: kvload() raises on a TCP error
    cpu = (b1 - b0) * 1e6 / HZ / max(1, n)
    for t, res in out.items():
        res["cpu_us_per_req"] = cpu     # of the whole mix, per request
        say("  %-34s %-8s %10.0f req/s  p50 %.3f ms  p99 %.3f ms  cpu %.2f us/req"
            % (exp + "_" + t, variant, res["throughput"], res["p50_ms"], res["p99_ms"], cpu))
        record(exp + "_" + t, BACKEND, variant, res)
    if service:
        st = xpsctl("stats", "show", service)[0]
        tx = st["tx"] - st0["tx"]
        say("  %-34s kernel answered %d of %d GETs (%d handler runs with the SETs)"
            % (exp, tx, gets, st["runs"] - st0["runs"]))
        record(exp, BACKEND, variant, {"gets_answered": tx / max(1, gets)})


def exp_control_plane(quick):
    rounds = 3 if quick else 10
    p = sh(["nsenter", "--net=/run/netns/" + NS, os.path.join(OUT, "bench", "ctlbench"),
            os.path.join(OUT, "bpf", "kv.bpf.o"), "17710", str(rounds)])
    paper = {"create_context": 131.4e3, "update_context": 13.3e3, "data_put": 12.9,
             "data_update": 9.1, "data_delete": 5.9}
    for line in p.stdout.splitlines():
        op, iters, mean, mn, mx = line.split(",")
        mean = float(mean)
        say("  control plane %-28s %12.2f us (paper: %s)" % (op, mean,
            "%.1f us" % paper[op] if op in paper else "-"))
        RESULTS.append({"experiment": "control_" + op, "backend": BACKEND, "variant": "xps",
                        "metric": "mean_us", "value": mean})
        if op in paper:
            RESULTS.append({"experiment": "control_" + op, "backend": "paper", "variant": "baseline",
                            "metric": "mean_us", "value": paper[op]})


def handler_gate(obj):
    """None when @obj loads here, else why not (without even trying while
    the parsers are known to trip this kernel's verifier bug)."""
    known = os.path.join(ROOT, "tests", "verifier", "KNOWN-FAILING")
    if os.path.exists(known):
        return open(known).readline().strip()
    try:
        xpsctl("handler", "attach", os.path.join(OUT, "bpf", obj + ".bpf.o"), "--port", 17798,
               "--name", "probe")
        xpsctl("handler", "detach", "probe")
        return None
    except RuntimeError as e:
        sh([XPSCTL, "reset"], check=False)
        return str(e)


NGINX_CONF = """worker_processes 1;
daemon off;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log;
events { worker_connections 4096; }
http {
    access_log %(dir)s/access.log;
    server {
        listen %(port)d reuseport;
        # the baseline: nginx blocks POST itself
        location / {
            if ($request_method = POST) { return 405; }
            return 200 "ok\\n";
        }
    }
}
"""


def wrk(url, pct, clients, secs):
    env = dict(os.environ, POST_PCT=str(pct))
    p = sh(on_cli(["wrk", "-t1", "-c%d" % clients, "-d%ds" % secs, "--latency",
                   "-s", os.path.join(ROOT, "bench", "post.lua"), url]),
           check=False, env=env, timeout=secs + 60)
    if p.returncode:
        raise RuntimeError("wrk failed: " + p.stderr[-300:])
    res, unit = {}, {"us": 1e-3, "ms": 1.0, "s": 1e3}
    for line in p.stdout.splitlines():
        f = line.split()
        m = re.match(r"\s*(\d+) requests in", line)
        if m:
            res["requests"] = int(m.group(1))
        if line.startswith("Requests/sec:"):
            res["throughput"] = float(f[1])
        elif len(f) == 2 and f[0] in ("50%", "99%"):
            m = re.match(r"([0-9.]+)(us|ms|s)$", f[1])
            if m:
                res["p50_ms" if f[0] == "50%" else "p99_ms"] = float(m.group(1)) * unit[m.group(2)]
    return res


def exp_nginx(quick):
    why = handler_gate("http_filter")
    if why:
        NOT_RUN.append(("nginx_post_*", why))
        say("  nginx experiments NOT RUN: " + why)
        return
    secs = 5 if quick else 20
    for pct in ([100] if quick else [100, 75, 50]):
        d = tempfile.mkdtemp(prefix="xps-bench-nginx-")
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF % {"dir": d, "port": 17720})
        srv = subprocess.Popen(in_srv(["nginx", "-c", os.path.join(d, "nginx.conf")]),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            exp = "nginx_post%d" % pct
            url = "http://%s:17720/" % SRV_IP
            for variant in ("baseline", "xps"):
                if variant == "xps":
                    xpsctl("service", "http", "--port", 17720, "--block", "POST=405", "--name", "bench")
                try:
                    with profiled(exp, variant):
                        b0 = cpu_busy(SRV_CPU)
                        res = wrk(url, pct, 50, secs)
                        b1 = cpu_busy(SRV_CPU)
                    res["cpu_us_per_req"] = (b1 - b0) * 1e6 / HZ / max(
                        1, res["throughput"] * secs)
                    say("  %-34s %-8s %10.0f req/s  p50 %.3f ms  p99 %.3f ms"
                        % (exp, variant, res["throughput"], res.get("p50_ms", 0), res.get("p99_ms", 0)))
                    record(exp, BACKEND, variant, res)
                finally:
                    if variant == "xps":
                        xpsctl("service", "stop", "bench")
        finally:
            srv.terminate()
            srv.wait(10)
            shutil.rmtree(d, ignore_errors=True)


def memcached_warm(proto, want=0.99, rounds=30):
    """Warm the cache until the kernel answers @want of the handler's runs:
    the filler learns a value set before the service started in two looks
    a second apart (services/memcached/xps-memcachedd.c), a few seconds
    for the bench's thousand keys."""
    ctx = "bench-udp" if proto == "udp" else "bench"
    warm_until(lambda: kvload(SRV_IP, 17730, "memcached-" + proto, 10, 1000, 1),
               lambda: xpsctl("stats", "show", ctx)[0], want, rounds, "the memcached cache")


def exp_memcached(quick):
    why = handler_gate("memcached")
    if why:
        NOT_RUN.append(("memcached_*", why))
        say("  memcached experiments NOT RUN: " + why)
        return
    secs = 5 if quick else 20
    for proto in ("tcp", "udp"):
        srv = subprocess.Popen(in_srv(["memcached", "-p", "17730", "-U", "17730", "-u", "nobody",
                                       "-m", "256", "-t", "1"]),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            exp = "memcached_%s_get" % proto
            # 1000 keys of 128 bytes
            fill = "".join("set key:%d 0 0 128\r\n%s\r\n" % (i, "v" * 128) for i in range(1000))
            sh(on_cli(["nc", "-q1", SRV_IP, "17730"]), input=fill)
            for variant in ("baseline", "xps"):
                if variant == "xps":
                    xpsctl("service", "memcached", "--port", 17730, "--udp", "--name", "bench")
                    memcached_warm(proto)
                try:
                    with profiled(exp, variant):
                        b0 = cpu_busy(SRV_CPU)
                        res = kvload(SRV_IP, 17730, "memcached-" + proto, 50, 1000, secs)["GET"]
                        b1 = cpu_busy(SRV_CPU)
                    res["cpu_us_per_req"] = (b1 - b0) * 1e6 / HZ / max(1, res.pop("requests"))
                    lost = res.pop("errors")
                    say("  %-34s %-8s %10.0f req/s  p50 %.3f ms  p99 %.3f ms%s"
                        % (exp, variant, res["throughput"], res["p50_ms"], res["p99_ms"],
                           "  (%d datagrams lost, asked again)" % lost if lost else ""))
                    record(exp, BACKEND, variant, res)
                finally:
                    if variant == "xps":
                        xpsctl("service", "stop", "bench")
        finally:
            srv.terminate()
            srv.wait(10)


def exp_nats(quick):
    """NATS JetStream, idle: three nats-servers in their own namespaces
    (services/nats/test_nats.py's cluster), an R3 stream and R3 durable
    consumers; the follower XPS serves and its receive processing on the
    server CPU, the two others on the client CPU.  Per second of steady
    state: busy time of the follower's CPU, the follower's context
    switches, heartbeats answered by the kernel, duplicate answers it
    dropped on the groups the same server leads, the share of the
    follower's /healthz answers that were not ok; baseline first."""
    sys.path.insert(0, os.path.join(ROOT, "services", "nats"))
    import test_nats as tn
    consumers, secs = (200, 10) if quick else (1000, 30)
    exp = "nats_idle_c%d" % consumers
    if not shutil.which("nats-server"):
        NOT_RUN.append((exp, "no nats-server (scripts/deps.sh test installs it)"))
        return
    for variant in ("baseline", "xps"):
        cl = None
        try:
            t0 = time.time()
            cl = tn.Cluster(consumers, xps=variant == "xps")
            for s in cl.servers:
                sh(["taskset", "-a", "-p", "%x" % (1 << (SRV_CPU if s.i == tn.ACCEL
                                                         else CLI_CPU)), str(s.proc.pid)])
            sh(["ip", "netns", "exec", tn.ns(tn.ACCEL), "sh", "-c",
                "for q in /sys/class/net/eth0/queues/rx-*; do echo %x > $q/rps_cpus; done"
                % (1 << SRV_CPU)], check=False)
            tn.settle(cl, 5)
            say("  %-34s %-8s cluster up, %d consumers, in %.0f s"
                % (exp, variant, consumers, time.time() - t0))
            pid = cl.servers[tn.ACCEL].proc.pid
            st0 = tn.nats_stats() if variant == "xps" else None
            ev0 = cl.leader_events()
            c0, b0, w0 = nats_csw(pid), cpu_busy(SRV_CPU), time.time()
            health = nats_healthz(cl.servers[tn.ACCEL], secs)
            c1, b1, w1 = nats_csw(pid), cpu_busy(SRV_CPU), time.time()
            res = {"follower_cpu_ms_per_s": (b1 - b0) * 1000.0 / HZ / (w1 - w0),
                   "follower_csw_per_s": (c1 - c0) / (w1 - w0),
                   "leader_elections": cl.leader_events() - ev0,
                   "healthz_not_ok_share": health[0] / max(1, health[1])}
            if st0:
                st1 = tn.nats_stats()
                res["heartbeats_answered_per_s"] = \
                    (st1["answered"] - st0["answered"]) / (w1 - w0)
                res["heartbeats_passed_per_s"] = (st1["passed"] - st0["passed"]) / (w1 - w0)
                res["answers_dropped_per_s"] = (st1["dropped"] - st0["dropped"]) / (w1 - w0)
            say("  %-34s %-8s follower CPU %.1f ms/s, %.0f context switches/s, %d elections, "
                "/healthz not ok %d of %d%s"
                % (exp, variant, res["follower_cpu_ms_per_s"], res["follower_csw_per_s"],
                   res["leader_elections"], health[0], health[1],
                   ", kernel answered %.0f heartbeats/s, passed %.0f/s, dropped %.0f "
                   "duplicate answers/s"
                   % (res["heartbeats_answered_per_s"], res["heartbeats_passed_per_s"],
                      res["answers_dropped_per_s"])
                   if st0 else ""))
            record(exp, BACKEND, variant, res)
        except (AssertionError, OSError, RuntimeError) as e:
            NOT_RUN.append((exp + " " + variant, str(e)))
            say("  %s %s FAILED: %s" % (exp, variant, e))
        finally:
            if cl:
                cl.close()


def nats_healthz(server, secs):
    """Ask @server's /healthz every 2 s for @secs (its "current" check of
    every group, docs/nats.md): (answers not ok, answers).  Every other
    heartbeat answered by the kernel leaves a group up to 2 s without
    one the server saw."""
    bad = n = 0
    end = time.time() + secs
    while time.time() < end:
        t = time.time()
        try:
            bad += server.http("/healthz").get("status") != "ok"
        except (OSError, ValueError):
            bad += 1
        n += 1
        time.sleep(max(0, 2 - (time.time() - t)))
    return bad, n


def nats_csw(pid):
    """Context switches of every thread of @pid so far."""
    n = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches",
                                        "nonvoluntary_ctxt_switches")):
                        n += int(line.split()[1])
        except FileNotFoundError:
            pass        # a thread that ended
    return n


def not_implemented():
    # Listed in every table so that a reader sees the gap.
    NOT_RUN.append(("redis 10,000 connections", "not attempted on this 2-core machine"))


ICOUNT_NS, ICOUNT_TAP = "xpsi", "xpsvm0"
ICOUNT_HOST_IP = "10.79.0.1"


def run_icount(quick, outdir, only, profile):
    """The native backend (and the stock one on the patched kernel) by the
    instruction-count model: scripts/bench_icount.py, run inside a network
    namespace of its own whose tap device reaches the guest."""
    if not os.path.exists(os.path.join(ROOT, "kernel-patches", "series")):
        NOT_RUN.append(("icount cost model", "no kernel patch series in this tree"))
        return
    groups = [g for g in only if g in ("ceiling", "redis", "mix", "memcached", "nginx", "nats")]
    if not groups:
        return
    idir = os.path.join(outdir, "icount")
    os.makedirs(idir, exist_ok=True)
    say("== instruction-count model: the patched kernel in a 1-vCPU guest under -icount")
    # the kernel first, with its progress on the terminal (cached after once)
    p = subprocess.run([os.path.join(ROOT, "scripts", "build-kernel.sh")], stdout=subprocess.PIPE,
                       text=True)
    if p.returncode:
        NOT_RUN.append(("icount cost model", "the kernel build failed"))
        return
    icount_topo_down()
    try:
        for c in (["ip", "netns", "add", ICOUNT_NS],
                  ["ip", "-n", ICOUNT_NS, "tuntap", "add", "dev", ICOUNT_TAP, "mode", "tap"],
                  ["ip", "-n", ICOUNT_NS, "addr", "add", ICOUNT_HOST_IP + "/24", "dev", ICOUNT_TAP],
                  ["ip", "-n", ICOUNT_NS, "link", "set", ICOUNT_TAP, "up"],
                  ["ip", "-n", ICOUNT_NS, "link", "set", "lo", "up"]):
            sh(c)
        cmd = ["ip", "netns", "exec", ICOUNT_NS, sys.executable,
               os.path.join(ROOT, "scripts", "bench_icount.py"), "--out", idir,
               "--only", ",".join(groups), "--netns", ICOUNT_NS] + \
            (["--quick"] if quick else []) + (["--profile"] if profile else [])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        for line in p.stdout:
            # bench_icount.py says its own lines with a time stamp
            line = line.rstrip("\n")
            print("  " + line, flush=True)
            log_lines.append("  " + line)
        p.wait()
    finally:
        icount_topo_down()
    raw = os.path.join(idir, "raw.csv")
    if not os.path.exists(raw):
        NOT_RUN.append(("icount cost model", "the run wrote no results (status %d)" % p.returncode))
        return
    with open(raw) as f:
        for r in csv.DictReader(f):
            r["value"] = float(r["value"])
            RESULTS.append(r)
    with open(os.path.join(idir, "not_run.json")) as f:
        NOT_RUN.extend(tuple(x) for x in json.load(f))


def icount_topo_down():
    sh(["ip", "netns", "del", ICOUNT_NS], check=False)


# ---- output ---------------------------------------------------------------------

def summarize(outdir):
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "raw.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["experiment", "backend", "variant", "metric", "value"])
        w.writeheader()
        w.writerows(RESULTS)
    by = {}
    for r in RESULTS:
        by.setdefault((r["experiment"], r["backend"], r["metric"]), {})[r["variant"]] = r["value"]
    summary = []
    for (exp, be, metric), v in sorted(by.items()):
        if "baseline" in v and "xps" in v and metric in ("throughput", "p50_ms", "p99_ms",
                                                        "cpu_us_per_req", "instructions_per_req",
                                                        "follower_cpu_ms_per_s",
                                                        "follower_csw_per_s",
                                                        "instructions_per_s"):
            ratio = v["xps"] / v["baseline"] if v["baseline"] else None
            goal = None
            for (pre, m), g in GOALS.items():
                if exp.startswith(pre) and m == metric:
                    goal = g
            if metric == "instructions_per_req" and exp in ICOUNT_GOALS:
                goal = (ICOUNT_GOALS[exp], "<=")
            summary.append({"experiment": exp, "backend": be, "metric": metric,
                            "baseline": v["baseline"], "xps": v["xps"], "ratio": ratio,
                            "goal": ("%s %.2fx" % (goal[1], goal[0])) if goal else None,
                            "met": (ratio >= goal[0] if goal[1] == ">=" else ratio <= goal[0])
                            if goal and ratio is not None else None})
        elif metric == "gets_answered" and "xps" in v:
            g = next((g for pre, g in GETS_ANSWERED_GOALS.items()
                      if exp.startswith(pre)), None)
            summary.append({"experiment": exp, "backend": be, "metric": metric,
                            "baseline": None, "xps": v["xps"], "ratio": None,
                            "goal": (">= %g" % g) if g else None,
                            "met": (v["xps"] >= g) if g else None})
        elif metric == "handler_instructions_per_run" and "xps" in v:
            g = HANDLER_GOALS.get(exp)
            summary.append({"experiment": exp, "backend": be, "metric": metric,
                            "baseline": None, "xps": v["xps"], "ratio": None,
                            "goal": ("<= %g" % g) if g else None,
                            "met": (v["xps"] <= g) if g else None})
        elif exp.startswith("control_") and "xps" in v:
            goal = {"control_data_put": ("<=", 2.0), "control_create_context": ("<=", 20000.0)}.get(exp)
            summary.append({"experiment": exp, "backend": be, "metric": metric,
                            "baseline": None, "xps": v["xps"], "ratio": None,
                            "goal": ("%s %g us" % goal) if goal else None,
                            "met": (v["xps"] <= goal[1]) if goal else None})
    machine = {"kernel": platform.release(), "cpus": os.cpu_count(),
               "cpu_model": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                  if l.startswith("model name")), "?"),
               "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")}
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump({"machine": machine, "results": summary,
                   "not_run": [{"experiment": e, "reason": r} for e, r in NOT_RUN]}, f, indent=2)
    lines = ["# XPS benchmark results", "",
             "Machine: %s, %d CPUs, kernel %s, %s. Topology: server in a network namespace "
             "on CPU %d (RPS too), client on CPU %d, joined by veth; `loopback_*` without "
             "the namespace." % (machine["cpu_model"], machine["cpus"], machine["kernel"],
                                 machine["date"], SRV_CPU, CLI_CPU), "",
             "| experiment | backend | metric | baseline | XPS | XPS/baseline | goal | met |",
             "|---|---|---|---|---|---|---|---|"]
    for s in summary:
        fmt = lambda x: "-" if x is None else ("%.3f" % x if x < 100 else "%.0f" % x)
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s["experiment"], s["backend"], s["metric"], fmt(s["baseline"]), fmt(s["xps"]),
            "-" if s["ratio"] is None else "%.2fx" % s["ratio"], s["goal"] or "-",
            "-" if s["met"] is None else ("yes" if s["met"] else "**no**")))
    if NOT_RUN:
        lines += ["", "Not run:", ""] + ["* `%s`: %s" % (e, r) for e, r in NOT_RUN]
    with open(os.path.join(outdir, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(outdir, "bench.log"), "w") as f:
        f.write("\n".join(log_lines) + "\n")
    write_ratios(outdir, summary)
    plot(outdir, summary)
    print("\n".join(lines))


def write_ratios(outdir, summary):
    """ratios.md: one row per experiment and backend, XPS/baseline for
    throughput, p99 and server CPU per request; a goal missed is marked."""
    rows = {}
    for s in summary:
        if s["ratio"] is not None:
            rows.setdefault((s["experiment"], s["backend"]), {})[s["metric"]] = s
    lines = ["| experiment | backend | throughput | p99 | server CPU/req | instructions/req |",
             "|---|---|---|---|---|---|"]
    for (exp, be), m in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        def cell(metric):
            x = m.get(metric)
            if not x:
                return "-"
            txt = "%.2fx" % x["ratio"]
            if x["goal"]:
                txt += " (goal %s: %s)" % (x["goal"], "met" if x["met"] else "**missed**")
            return txt
        lines.append("| %s | %s | %s | %s | %s | %s |" % (exp, be, cell("throughput"), cell("p99_ms"),
                                                        cell("cpu_us_per_req"),
                                                        cell("instructions_per_req")))
    with open(os.path.join(outdir, "ratios.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def plot(outdir, summary):
    rows = [s for s in summary if s["ratio"] is not None]
    if not rows or not shutil.which("gnuplot"):
        say("no plot (%s)" % ("no ratios" if not rows else "gnuplot missing"))
        return
    for metric in sorted({s["metric"] for s in rows}):
        data = os.path.join(outdir, "ratio_%s.dat" % metric)
        sel = [s for s in rows if s["metric"] == metric]
        with open(data, "w") as f:
            for i, s in enumerate(sel):
                f.write('%d "%s/%s" %f\n' % (i, s["experiment"], s["backend"], s["ratio"]))
        png = os.path.join(outdir, "ratio_%s.png" % metric)
        width = max(900, 45 * len(sel) + 200)
        script = """set terminal png size %d,650 noenhanced
set output '%s'
set title 'XPS / baseline: %s'
set style fill solid 0.6
set boxwidth 0.6
set yrange [0:*]
set xtics rotate by 90 right
set bmargin 22
set grid ytics
plot '%s' using 1:3:xtic(2) with boxes notitle, 1 with lines lt 2 title 'baseline'
""" % (width, png, metric, data)
        sh(["gnuplot"], input=script)
        say("plot: " + png)


GROUPS = {
    "ceiling": ("hook ceiling (fixed reply) vs Redis", exp_ceiling),
    "loopback": ("loopback reference", exp_loopback),
    "redis": ("Redis GET", exp_redis),
    "mix": ("Redis GET/SET mixes", exp_redis_mix),
    "nginx": ("Nginx blocked POST", exp_nginx),
    "memcached": ("Memcached GET", exp_memcached),
    "control": ("control plane", exp_control_plane),
    "nats": ("NATS JetStream Raft heartbeats, idle cluster", exp_nats),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a smoke run of a few minutes")
    ap.add_argument("--out", default=None, help="results directory")
    ap.add_argument("--no-native", action="store_true",
                    help="skip the instruction-count run on the patched kernel (QEMU)")
    ap.add_argument("--icount-only", action="store_true",
                    help="only the instruction-count run on the patched kernel")
    ap.add_argument("--native-host", action="store_true",
                    help="this machine runs the patched kernel: measure its native "
                         "backend directly (no VM run)")
    ap.add_argument("--only", default=None, metavar="GROUPS",
                    help="comma-separated experiment groups to run, of: " + ", ".join(GROUPS))
    ap.add_argument("--profile", action="store_true",
                    help="perf profiles of the server core, in DIR/profiles/")
    a = ap.parse_args()
    only = a.only.split(",") if a.only else list(GROUPS)
    bad = [g for g in only if g not in GROUPS]
    if bad:
        ap.error("--only: unknown group %s (groups: %s)" % (", ".join(bad), ", ".join(GROUPS)))
    if a.profile and not shutil.which("perf"):
        ap.error("--profile needs perf (apt install linux-perf)")
    # SIGTERM (timeout(1), kill) runs the finally blocks: servers stopped,
    # handlers detached, the namespace removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    global BACKEND
    if a.native_host:
        if not os.path.exists("/sys/kernel/btf/vmlinux") or \
                subprocess.run(["grep", "-q", "BPF_SERVE_TCP", "/sys/kernel/btf/vmlinux"]).returncode:
            sys.exit("bench.py: --native-host: the running kernel has no XPS hook "
                     "(boot the kernel built by scripts/build-kernel.sh)")
        BACKEND = "native"
    if os.geteuid():
        sys.exit("benchmarks need root")
    out = a.out or os.path.join(ROOT, "bench", "results",
                                datetime.datetime.utcnow().strftime("%Y%m%d-%H%M%S"))
    global PROFILE_DIR
    if a.profile:
        PROFILE_DIR = os.path.join(out, "profiles")
        os.makedirs(PROFILE_DIR, exist_ok=True)
    if a.icount_only and (a.no_native or a.native_host):
        ap.error("--icount-only: not with --no-native or --native-host")
    if not a.icount_only:
        sh([XPSCTL, "reset"], check=False)
        say("topology: netns %s, server CPU %d, client CPU %d" % (NS, SRV_CPU, CLI_CPU))
        topo_up()
        try:
            for g in GROUPS:
                if g in only:
                    name, fn = GROUPS[g]
                    say("== " + name)
                    fn(a.quick)
        finally:
            sh([XPSCTL, "reset"], check=False)
            topo_down()
        not_implemented()
    if a.native_host:
        pass
    elif a.no_native:
        NOT_RUN.append(("native backend", "skipped (--no-native)"))
    else:
        run_icount(a.quick, out, only, a.profile)
    summarize(out)
    results = os.path.join(ROOT, "bench", "results")
    if os.path.dirname(os.path.abspath(out)) == results:
        latest = os.path.join(results, "latest")
        if os.path.islink(latest) or os.path.exists(latest):
            os.remove(latest)
        os.symlink(os.path.basename(out), latest)
    say("results in " + out)


if __name__ == "__main__":
    main()
