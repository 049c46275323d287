#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""make demo, part 1: Debian's redis-server accelerated by XPS on this
machine's kernel (stock backend), side by side with itself, in the
benchmarks' two-namespace topology (scripts/bench.py):

  redis-server runs in its own network namespace, joined to this one by a
  veth pair; the server and its receive processing (RPS) share CPU 1, the
  client runs on CPU 0.

Loopback would mislead here: a loopback send raises the receive softirq on
the sender's core, so the kernel's answer to a GET would run on the
client's core and the run would measure the client being slowed, not the
server being helped.

Printed for GETs alone (redis-benchmark) and for a 90/10 GET/SET mix
(bench/kvload), plain and accelerated: throughput, p99 latency and the
server core's busy time per request (/proc/stat), with XPS/plain ratios.

  scripts/demo.py [--seconds S] [--requests N] [--port P]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the topology, servers and load generators)

KEYS, SIZE, CLIENTS = 1000, 128, 50


def step(msg):
    print("\n\033[1m== %s\033[0m" % msg, flush=True)


def xpsctl_show(*args, netns=True):
    """An xpsctl command (in the server's namespace), its text output shown."""
    cmd = [bench.XPSCTL] + [str(a) for a in args]
    if netns:
        cmd = ["nsenter", "--net=/run/netns/" + bench.NS] + cmd
    p = bench.sh(cmd, check=False)
    sys.stdout.write("".join("  " + l + "\n" for l in p.stdout.splitlines()))
    if p.returncode:
        raise RuntimeError("xpsctl %s: %s" % (" ".join(map(str, args)), p.stderr.strip()))


def server_gets(srv):
    for line in srv.cli("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_get:calls="):
            return int(line.split("=")[1].split(",")[0])
    return 0


def kernel_tx(service):
    return bench.xpsctl("stats", "show", service)[0]["tx"] if service else 0


def run_gets(srv, n, service=None):
    """redis-benchmark GETs: throughput, p99, server CPU per request, and
    how many GETs Redis and the kernel answered."""
    g0, t0, b0 = server_gets(srv), kernel_tx(service), bench.cpu_busy(bench.SRV_CPU)
    res = bench.redis_benchmark(srv.host, srv.port, CLIENTS, 1, n, SIZE, keyspace=KEYS)["GET"]
    b1, t1, g1 = bench.cpu_busy(bench.SRV_CPU), kernel_tx(service), server_gets(srv)
    res["cpu_us"] = (b1 - b0) * 1e6 / bench.HZ / n
    res["kernel"], res["gets"], res["server_gets"] = t1 - t0, n, g1 - g0
    show(res)
    return res


def run_mix(srv, secs, service=None):
    """bench/kvload, 90% GETs and 10% SETs over the same keys."""
    t0, b0 = kernel_tx(service), bench.cpu_busy(bench.SRV_CPU)
    out = bench.kvload(srv.host, srv.port, "redis", CLIENTS, KEYS, secs, 90, SIZE)
    b1, t1 = bench.cpu_busy(bench.SRV_CPU), kernel_tx(service)
    n = sum(r["requests"] for r in out.values())
    get, setr = out.get("GET", {}), out.get("SET", {})
    res = {"throughput": n / secs,
           "p99_ms": max(r["p99_ms"] for r in out.values()),
           "get_p99_ms": get.get("p99_ms", 0.0), "set_p99_ms": setr.get("p99_ms", 0.0),
           "cpu_us": (b1 - b0) * 1e6 / bench.HZ / max(1, n),
           "kernel": t1 - t0, "gets": get.get("requests", 0)}
    show(res)
    return res


def show(r):
    print("  %9.0f requests/s   p50 %s   p99 %.3f ms   server CPU %.1f us/request"
          % (r["throughput"], "%.3f ms" % r["p50_ms"] if "p50_ms" in r else "-",
             r["p99_ms"], r["cpu_us"]))
    if r.get("kernel"):
        print("  the kernel answered %d of %d GETs (%.0f%%)"
              % (r["kernel"], r["gets"], 100.0 * r["kernel"] / max(1, r["gets"])))
    if "server_gets" in r:
        print("  redis-server answered %d GETs" % r["server_gets"])


def table(rows):
    step("side by side (XPS/plain: above 1 is better for throughput, below 1 for the rest)")
    for name, plain, xps in rows:
        print("  %-28s %12s %12s %10s" % (name, "plain", "XPS", "XPS/plain"))
        for key, label, fmt in (("throughput", "requests/s", "%12.0f"),
                                ("p99_ms", "p99 (ms)", "%12.3f"),
                                ("cpu_us", "server CPU/request (us)", "%12.1f")):
            a, b = plain[key], xps[key]
            ratio = "%9.2fx" % (b / a) if a else "%10s" % "-"
            print("    %-26s " % label + fmt % a + " " + fmt % b + " " + ratio)
        print("    %-26s %12s %11.0f%%" % ("GETs the kernel answered", "-",
                                           100.0 * xps["kernel"] / max(1, xps["gets"])))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("DEMO_SECONDS", "10")),
                    help="length of each mix run (default 10, DEMO_SECONDS)")
    ap.add_argument("--requests", type=int,
                    default=int(os.environ.get("DEMO_REQUESTS", "200000")),
                    help="GETs per redis-benchmark run (default 200000, DEMO_REQUESTS)")
    ap.add_argument("--port", type=int, default=int(os.environ.get("DEMO_PORT", "17900")),
                    help="the server's port inside its namespace (default 17900, DEMO_PORT)")
    a = ap.parse_args()
    if os.geteuid():
        sys.exit("demo: it creates a network namespace and loads BPF programs: run it as root")
    if os.cpu_count() < 2:
        sys.exit("demo: needs two CPUs (server and client on separate cores)")
    if a.seconds < 1 or a.requests < 1000:
        ap.error("--seconds must be >= 1 and --requests >= 1000")
    for tool in ("redis-server", "redis-benchmark", "redis-cli", "nsenter", "taskset"):
        if not bench.shutil.which(tool):
            sys.exit("demo: %s is missing (scripts/deps.sh test installs it)" % tool)
    kvload = os.path.join(bench.OUT, "bench", "kvload")
    if not os.access(kvload, os.X_OK) or not os.access(bench.XPSCTL, os.X_OK):
        sys.exit("demo: build first (make)")
    if os.path.exists("/run/netns/" + bench.NS):
        sys.exit("demo: the network namespace %s exists: is a benchmark running? "
                 "(ip netns del %s removes it)" % (bench.NS, bench.NS))

    step("xpsctl status")
    try:
        xpsctl_show("status", netns=False)
    except RuntimeError as e:
        sys.exit("demo: %s" % e)
    step("topology: redis-server in network namespace %s (%s) behind veth; the server "
         "and its receive processing on CPU %d, the client on CPU %d"
         % (bench.NS, bench.SRV_IP, bench.SRV_CPU, bench.CLI_CPU))
    bench.topo_up()
    srv = None
    try:
        srv = bench.RedisServer(a.port)
        bench.redis_preload(srv, SIZE, KEYS)
        print("  redis-server on %s:%d, %d keys of %d bytes" % (srv.host, a.port, KEYS, SIZE))

        step("plain Redis: redis-benchmark -t get -n %d -c %d -d %d -r %d"
             % (a.requests, CLIENTS, SIZE, KEYS))
        plain_get = run_gets(srv, a.requests)
        step("plain Redis: a 90/10 GET/SET mix, %d connections, %d s (bench/kvload)"
             % (CLIENTS, a.seconds))
        plain_mix = run_mix(srv, a.seconds)

        step("xpsctl service redis --port %d --name demo" % a.port)
        print("  warming the cache (the filler learns values from Redis's replies to the "
              "GETs the kernel passed)...", flush=True)
        bench.redis_service_warm(srv, SIZE, name="demo", keyspace=KEYS)
        xpsctl_show("service", "list")

        step("with XPS: the same GETs")
        xps_get = run_gets(srv, a.requests, "demo")
        step("with XPS: the same mix")
        xps_mix = run_mix(srv, a.seconds, "demo")

        table([("GETs", plain_get, xps_get), ("90/10 mix", plain_mix, xps_mix)])
        step("xpsctl stats show demo")
        xpsctl_show("stats", "show", "demo")
        step("xpsctl stats keys demo --top 3")
        xpsctl_show("stats", "keys", "demo", "--top", "3")
        step("xpsctl service stop demo")
        xpsctl_show("service", "stop", "demo")
    except RuntimeError as e:
        sys.exit("demo: %s" % e)
    finally:
        bench.xpsctl("service", "stop", "demo", check=False)
        if srv:
            srv.stop()
        bench.topo_down()


if __name__ == "__main__":
    main()
