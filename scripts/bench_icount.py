#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The instruction-count cost model: the server's path length per request
on the patched kernel, baseline and XPS (native and stock backends) in one
guest boot.

The guest is QEMU with one vCPU under `-icount shift=0,sleep=on`: its clock
advances 1 ns per instruction it executes, and it runs only the server
(and, outside measurements, the agent scripts/bench_agent.py).  Busy time
between two marks is therefore the number of instructions the guest
executed: driver, softirq, TCP, sockets, the server process, the handler,
the fillers.  Divided by the requests the client completed, that is the
server's instructions per request.  The clients (redis-benchmark, kvload,
wrk) run on this machine, in the network namespace the caller made, and
reach the guest through a tap device.

Run by scripts/bench.py (`make bench`), which creates the namespace and
the tap device and runs this script inside the namespace:

  bench_icount.py --out DIR [--quick] [--only GROUPS] [--repeats N]

It writes DIR/raw.csv (rows of bench.py's format, backends native-icount
and stock-icount, metric instructions_per_req and friends),
DIR/not_run.json, DIR/profiles/*.txt (in-guest perf, one extra run per
variant, not part of the measured repeats) and DIR/guest-console.log.
"""
import argparse
import contextlib
import csv
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the clients and their parsers)

ROOT = bench.ROOT
GUEST_IP = "10.79.0.2"
AGENT_PORT = 7999
XPSCTL = os.path.join(bench.OUT, "xpsctl")
RESULTS = []
NOT_RUN = []
say = bench.say


class AgentError(RuntimeError):
    pass


class Guest:
    """The guest and its agent."""

    def __init__(self, outdir, netns, timeout):
        self.log = open(os.path.join(outdir, "guest-console.log"), "w")
        cmd = [os.path.join(ROOT, "scripts", "vm-run.sh"), "--icount", "--cpus", "1",
               "--mem", "3072", "--timeout", str(timeout), "--net", netns,
               "--", "python3 scripts/bench_agent.py --addr %s/24 --port %d"
               % (GUEST_IP, AGENT_PORT)]
        say("booting the guest (1 vCPU, -icount shift=0,sleep=on)")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 600
        while True:
            if self.proc.poll() is not None:
                raise AgentError("the guest exited (status %d) before its agent answered; "
                                 "see guest-console.log" % self.proc.returncode)
            try:
                self.sock = socket.create_connection((GUEST_IP, AGENT_PORT), timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    raise AgentError("the guest's agent did not answer in 600 s")
                time.sleep(1)
        self.sock.settimeout(None)
        self.f = self.sock.makefile("rw")
        say("guest up: %s" % self.run(["uname", "-r"])["out"].strip())

    def call(self, **req):
        self.f.write(json.dumps(req) + "\n")
        self.f.flush()
        line = self.f.readline()
        if not line:
            raise AgentError("the guest's agent went away (see guest-console.log)")
        ans = json.loads(line)
        if "error" in ans:
            raise AgentError(ans["error"])
        return ans

    def run(self, argv, env=None, input=None, check=True, timeout=600):
        ans = self.call(op="run", argv=[str(a) for a in argv], env=env or {}, input=input,
                        timeout=timeout)
        if check and ans["rc"]:
            raise AgentError("guest: %s: status %d: %s" % (" ".join(map(str, argv)), ans["rc"],
                                                         (ans["err"] or ans["out"])[-400:]))
        return ans

    def xpsctl(self, *args, backend=None, check=True):
        env = {"XPS_BACKEND": backend} if backend else {}
        ans = self.run([XPSCTL, "-j"] + list(args), env=env, check=False)
        doc = json.loads(ans["out"]) if ans["out"].strip() else None
        if ans["rc"] and check:
            raise AgentError("xpsctl %s: %s" % (" ".join(map(str, args)),
                                                doc.get("error") if doc else ans["err"][-300:]))
        return doc

    def spawn(self, ident, argv, env=None):
        return self.call(op="spawn", id=ident, argv=[str(a) for a in argv], env=env or {})

    def stop(self, ident, sig="TERM"):
        try:
            return self.call(op="stop", id=ident, signal=sig)
        except AgentError:
            return None

    def mark(self):
        return self.call(op="mark")

    def close(self):
        try:
            self.f.write(json.dumps({"op": "quit"}) + "\n")
            self.f.flush()
        except OSError:
            pass
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        return self.proc.returncode


def busy(m0, m1):
    """Instructions executed between two marks, and the busy fraction."""
    wall = m1["mono"] - m0["mono"]
    b = wall - (m1["idle"] - m0["idle"]) - (m1["iowait"] - m0["iowait"])
    return b, b / wall if wall else 0.0


IDLE_SYMS = {"default_idle", "native_safe_halt", "pv_native_safe_halt", "arch_cpu_idle",
             "default_idle_call", "cpu_idle_poll", "acpi_idle_do_entry", "mwait_idle"}


def profile_text(tag, report):
    """`perf report --sort comm,dso,sym` of a profile, idle samples left
    out and the rest in percent of the busy samples: by command, by
    object (every BPF program together and apart), by symbol."""
    rows = []
    for line in report.splitlines():
        f = line.split()
        if len(f) < 5 or not f[0].endswith("%") or line.lstrip().startswith("#"):
            continue
        try:
            pct = float(f[0].rstrip("%"))
        except ValueError:
            continue
        # comm may hold spaces only in theory; dso and [k]/[.] sym follow
        kind = next((i for i, x in enumerate(f) if x in ("[k]", "[.]")), None)
        if kind is None or kind < 3:
            continue
        comm, dso, sym = " ".join(f[1:kind - 1]), f[kind - 1], " ".join(f[kind + 1:])
        if sym in IDLE_SYMS or comm == "perf":    # idle, and the profiler itself
            continue
        rows.append((pct, comm, dso, sym))
    busy = sum(r[0] for r in rows) or 1.0

    def table(title, key, limit):
        agg = {}
        for pct, comm, dso, sym in rows:
            k = key(comm, dso, sym)
            if k is not None:
                agg[k] = agg.get(k, 0.0) + pct
        out = ["## " + title, ""]
        for k, v in sorted(agg.items(), key=lambda kv: -kv[1])[:limit]:
            out.append("%6.2f%%  %s" % (100 * v / busy, k))
        return out + [""]

    lines = ["# %s: in-guest perf, cpu-clock under -icount (samples are instructions);" % tag,
             "# idle and perf itself left out, percent of the remaining samples", ""]
    lines += table("by command", lambda c, d, s: c, 15)
    lines += table("by object (bpf = every BPF program)",
                   lambda c, d, s: "bpf" if d.startswith("bpf_prog_") else d, 15)
    def symname(dso, sym):
        return sym if not dso.startswith("bpf_prog_") else "bpf: " + sym.split("_", 3)[-1]

    lines += table("by symbol", lambda c, d, s: symname(d, s), 150)
    # per command: a softirq is charged to the task it interrupted, so
    # the server's row holds kernel work done while it was on the CPU
    comms = {}
    for pct, comm, _, _ in rows:
        comms[comm] = comms.get(comm, 0.0) + pct
    for comm in sorted((c for c, v in comms.items() if v >= 0.03 * busy),
                       key=lambda c: -comms[c]):
        lines += table("by symbol, %s only (percent of all busy samples)" % comm,
                       lambda c, d, s, want=comm: symname(d, s) if c == want else None, 16)
    return "\n".join(lines) + "\n"


class Bench:
    def __init__(self, guest, outdir, repeats, profile, backends):
        self.backends = backends
        self.g = guest
        self.outdir = outdir
        self.repeats = repeats
        self.profile = profile

    def settle(self, what):
        """Wait until the guest is back to its idle rate (fillers done
        filling): busy fraction over one second under 2%."""
        frac = 1.0
        for _ in range(20):
            m0 = self.g.mark()
            time.sleep(1.0)
            _, frac = busy(m0, self.g.mark())
            if frac < 0.02:
                return frac
        say("  NOTE: %s: the guest did not settle (%.1f%% busy while idle)" % (what, 100 * frac))
        return frac

    def measure(self, exp, backend, variant, client, ctx=None):
        """@client() runs one load from this machine and returns the
        number of requests it completed.  Records the median of the
        repeats' instructions per request, their spread and busy
        fraction; with the handler's context @ctx, also the handler's
        own instructions per run (its run_ns under icount)."""
        per, fracs, hruns = [], [], []
        idle = self.settle("%s %s" % (exp, variant))
        for _ in range(self.repeats):
            st0 = self.g.xpsctl("stats", "show", ctx)[0] if ctx else None
            m0 = self.g.mark()
            n = client()
            m1 = self.g.mark()
            b, frac = busy(m0, m1)
            per.append(b / max(1, n))
            fracs.append(frac)
            if ctx:
                st = self.g.xpsctl("stats", "show", ctx)[0]
                runs = st["runs"] - st0["runs"]
                hruns.append(((st["run_ns"] - st0["run_ns"]) / max(1, runs),
                              (st["tx"] - st0["tx"]) / max(1, runs),
                              (st["tx"] - st0["tx"]) / max(1, getattr(client, "gets", 0))))
        med = statistics.median(per)
        rec = {"instructions_per_req": med,
               "instructions_spread": (max(per) - min(per)) / med if med else 0.0,
               "busy_fraction": statistics.median(fracs),
               "idle_busy_fraction": idle}
        txt = ""
        if hruns:
            rec["handler_instructions_per_run"] = statistics.median(h for h, _, _ in hruns)
            rec["kernel_answered"] = statistics.median(t for _, t, _ in hruns)
            txt = "  handler %.0f/run, kernel answered %.1f%%" % (
                rec["handler_instructions_per_run"], 100 * rec["kernel_answered"])
            if getattr(client, "gets", 0):
                # a mix: the handler's runs include the writes
                rec["gets_answered"] = statistics.median(g for _, _, g in hruns)
                txt += " of runs, %.1f%% of GETs" % (100 * rec["gets_answered"])
        say("  %-30s %-14s %-8s %8.0f instructions/%s (spread %.1f%%, busy %.0f%%)%s"
            % (exp, backend, variant, med, getattr(client, "unit", "req"),
               100 * rec["instructions_spread"], 100 * rec["busy_fraction"], txt))
        for k, v in rec.items():
            RESULTS.append({"experiment": exp, "backend": backend, "variant": variant,
                            "metric": k, "value": v})
        if self.profile:
            self.perf(exp, backend, variant, client)
        return med

    def perf(self, exp, backend, variant, client):
        """One more run under in-guest perf (cpu-clock samples are
        instruction counts here): where the busy instructions go, by
        command, by object and by symbol, saved beside the results."""
        tag = "%s_%s_%s" % (exp, backend, variant)
        data = "/tmp/perf-%s.data" % tag
        try:
            self.g.spawn("perf", ["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000",
                                  "-a", "-o", data])
            time.sleep(1)
            client()
            self.g.stop("perf", "INT")
            ans = self.g.run(["perf", "report", "--stdio", "-i", data, "--sort", "comm,dso,sym",
                              "--percent-limit", "0"], check=False)
            d = os.path.join(self.outdir, "profiles")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, tag + ".txt"), "w") as f:
                f.write(profile_text(tag, ans["out"]))
            self.g.run(["rm", "-f", data], check=False)
        except (AgentError, RuntimeError) as e:
            say("  perf profile of %s failed: %s" % (tag, e))
            self.g.stop("perf")

    # -- the pairs ------------------------------------------------------------

    def threaded_napi(self, on):
        """Receive processing in a kernel thread (1) or in softirq (0, the
        default) on the guest's network devices."""
        self.g.run(["sh", "-c", "for f in /sys/class/net/*/threaded; do "
                    "[ \"$f\" = /sys/class/net/lo/threaded ] || echo %d > \"$f\"; done"
                    % (1 if on else 0)])

    def pair(self, exp, client, attach, detach, warm=None, ctx="bench", threaded_napi=False):
        """The baseline, then XPS on each backend, against one server.
        @threaded_napi: XPS runs with the guest's receive processing in a
        kernel thread; the baseline keeps softirq, its cheaper setting
        (measured under threaded NAPI too, as "baseline_threaded")."""
        first = self.backends[0] + "-icount"
        self.measure(exp, first, "baseline", client)
        rows = [r for r in RESULTS if r["experiment"] == exp and r["variant"] == "baseline"
                and r["backend"] == first]
        try:
            if threaded_napi:
                self.threaded_napi(True)
                self.measure(exp, first, "baseline_threaded", client)
            self.pair_xps(exp, client, attach, detach, warm, ctx, rows)
        finally:
            if threaded_napi:
                self.threaded_napi(False)

    def pair_xps(self, exp, client, attach, detach, warm, ctx, rows):
        for be in self.backends:
            name = be + "-icount"
            if be != self.backends[0]:
                # the same baseline serves every backend's ratio
                for r in rows:
                    RESULTS.append(dict(r, backend=name))
            try:
                attach(be)
                if warm:
                    warm()
                self.measure(exp, name, "xps", client, ctx=ctx)
            except (AgentError, RuntimeError) as e:
                NOT_RUN.append(("%s (%s)" % (exp, name), str(e)))
                say("  %s %s NOT RUN: %s" % (exp, name, e))
            finally:
                detach()


# ---- experiments ------------------------------------------------------------

def redis_bench_client(port, clients, pipeline, n, size, keyspace=1000):
    def run():
        bench.redis_benchmark(GUEST_IP, port, clients, pipeline, n, size, keyspace=keyspace)
        return n
    return run


def redis_server(b, port):
    b.g.spawn("redis", ["redis-server", "--port", port, "--bind", "0.0.0.0", "--save", "",
                        "--appendonly", "no", "--protected-mode", "no", "--dir", "/tmp",
                        "--loglevel", "warning"])
    for _ in range(100):
        p = bench.sh(["redis-cli", "-h", GUEST_IP, "-p", str(port), "PING"], check=False)
        if p.stdout.strip() == "PONG":
            return
        time.sleep(0.2)
    raise AgentError("redis-server did not start in the guest")


def redis_preload(port, size, n):
    val = "x" * size
    cmds = "".join("*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n"
                   % (i, size, val) for i in range(n))
    p = bench.sh(["redis-cli", "-h", GUEST_IP, "-p", str(port), "--pipe"], input=cmds)
    if "errors: 0" not in p.stdout:
        raise AgentError("Redis preload failed: " + p.stdout[-300:])


def service_up(b, kind, args, be):
    b.g.xpsctl("service", kind, *args, "--name", "bench", backend=be)


def service_down(b):
    b.g.xpsctl("service", "stop", "bench", check=False)
    b.g.xpsctl("reset", check=False)


def warm_until(b, load, ctx="bench", want=0.9, rounds=150):
    """Run @load until the kernel answers @want of the handler's runs.
    The guest's clock runs slower than the host's while it is busy (one
    nanosecond per instruction, fewer instructions a second than that
    under TCG), and learning has steps timed by the guest (memcached's
    filler looks at a learned value again more than a second later): a
    round of @load is a fraction of a guest second, hence the many
    rounds."""
    bench.warm_until(load, lambda: b.g.xpsctl("stats", "show", ctx)[0], want, rounds)


@contextlib.contextmanager
def attempt(b, exp, server):
    """One experiment against @server, already spawned in the guest: a
    failure is recorded as not run, and the server is stopped either way.
    A client that fails here (missing, or exiting non-zero) is a failure of
    the experiment, not of the whole run."""
    try:
        yield
    except (AgentError, RuntimeError, subprocess.SubprocessError, OSError) as e:
        NOT_RUN.append((exp, str(e)))
        say("  %s FAILED: %s" % (exp, e))
    finally:
        b.g.stop(server)


def exp_ceiling(b, quick):
    port = 17700
    redis_server(b, port)
    try:
        bench.sh(["redis-cli", "-h", GUEST_IP, "-p", str(port), "SET", "key:__rand_int__", "bar"])
        n = 20000 if quick else 50000
        client = redis_bench_client(port, 50, 1, n, 3, keyspace=None)
        obj = os.path.join(bench.OUT, "bpf", "ceiling.bpf.o")
        b.pair("ceiling_c50", client,
               lambda be: b.g.xpsctl("handler", "attach", obj, "--port", port, "--name", "bench",
                                     backend=be),
               lambda: (b.g.xpsctl("handler", "detach", "bench", check=False),
                        b.g.xpsctl("reset", check=False)))
    finally:
        b.g.stop("redis")


REDIS_SET_QUICK = [(1, 128, 50)]
REDIS_SET_FULL = [(1, 128, 50), (1, 128, 1), (16, 128, 50), (1, 1024, 50), (16, 1024, 50),
                  (1, 128, 1000)]


def exp_redis(b, quick):
    port = 17702
    for pipeline, size, clients in (REDIS_SET_QUICK if quick else REDIS_SET_FULL):
        exp = "redis_get_P%d_d%d_c%d" % (pipeline, size, clients)
        n = (20000 if clients > 1 else 4000) * (4 if pipeline > 1 else 1)
        if quick:
            n //= 2
        redis_server(b, port)
        with attempt(b, exp, "redis"):
            redis_preload(port, size, 1000)
            client = redis_bench_client(port, clients, pipeline, n, size)
            warm = redis_bench_client(port, 10, 1, 3000, size)
            # a pipeline is answered only if every GET in it hits: warm
            # to 99% (0.99 ** 16 = 85% of sixteen-GET segments answered)
            b.pair(exp, client, lambda be: service_up(b, "redis", ["--port", port], be),
                   lambda: service_down(b), warm=lambda: warm_until(b, warm, want=0.99))


def kvload_client(port, proto, clients, secs, get_pct=100, size=128):
    def run():
        out = bench.kvload(GUEST_IP, port, proto, clients, 1000, secs, get_pct, size)
        # a mix: the GETs of the last run, for the share the kernel answered
        run.gets = out.get("GET", {}).get("requests", 0) if get_pct < 100 else 0
        return sum(r["requests"] for r in out.values())
    return run


def exp_redis_mix(b, quick):
    port = 17703
    # 0: SETs alone, every one passed to Redis and written through: what
    # a request the kernel does not answer costs, measured directly.
    # _tnapi: XPS with threaded NAPI (docs/benchmarks.md, "Where the
    # native mixes' misses come from")
    runs = [(95, False), (95, True)] if quick else [(95, False), (95, True), (75, False),
                                                   (75, True), (0, False)]
    for get_pct, tnapi in runs:
        exp = ("redis_mix_%d_%d_d128_c50" % (get_pct, 100 - get_pct) if get_pct
               else "redis_set_d128_c50") + ("_tnapi" if tnapi else "")
        redis_server(b, port)
        with attempt(b, exp, "redis"):
            redis_preload(port, 128, 1000)
            client = kvload_client(port, "redis", 50, 3 if quick else 6, get_pct)
            warm = redis_bench_client(port, 10, 1, 3000, 128)
            # the goal counts GETs answered after warm-up: warm to 99%
            b.pair(exp, client, lambda be: service_up(b, "redis", ["--port", port], be),
                   lambda: service_down(b), warm=lambda: warm_until(b, warm, want=0.99),
                   threaded_napi=tnapi)


def exp_memcached(b, quick):
    port = 17730
    for proto in ("tcp", "udp"):
        exp = "memcached_%s_get" % proto
        b.g.spawn("memcached", ["memcached", "-p", port, "-U", port, "-u", "nobody", "-m", "256",
                                "-t", "1", "-l", "0.0.0.0"])
        with attempt(b, exp, "memcached"):
            time.sleep(1)
            fill = "".join("set key:%d 0 0 128\r\n%s\r\n" % (i, "v" * 128) for i in range(1000))
            bench.sh(["nc", "-q1", GUEST_IP, str(port)], input=fill)
            client = kvload_client(port, "memcached-" + proto, 50, 3 if quick else 6)
            warm = kvload_client(port, "memcached-" + proto, 10, 2)
            # `service memcached --udp` makes a second context for UDP
            ctx = "bench-udp" if proto == "udp" else "bench"
            b.pair(exp, client,
                   lambda be: service_up(b, "memcached", ["--port", port, "--udp"], be),
                   lambda: service_down(b),
                   warm=lambda: warm_until(b, warm, ctx=ctx, want=0.99), ctx=ctx)


def exp_nginx(b, quick):
    port = 17720
    d = "/tmp/xps-bench-nginx"
    conf = bench.NGINX_CONF % {"dir": d, "port": port}
    for pct in ([100] if quick else [100, 75, 50]):
        exp = "nginx_post%d" % pct
        b.g.run(["mkdir", "-p", d])
        b.g.run(["sh", "-c", "cat > %s/nginx.conf" % d], input=conf)
        b.g.spawn("nginx", ["nginx", "-c", d + "/nginx.conf"])
        with attempt(b, exp, "nginx"):
            time.sleep(1)
            url = "http://%s:%d/" % (GUEST_IP, port)

            def client():
                return bench.wrk(url, pct, 50, 3 if quick else 6)["requests"]
            b.pair(exp, client,
                   lambda be: service_up(b, "http", ["--port", port, "--block", "POST=405"], be),
                   lambda: service_down(b))


NATS_LEADERS = ("10.79.0.3", "10.79.0.4")    # on the tap, beside the clients


def exp_nats(b, quick):
    """NATS JetStream, idle: the follower in the guest, the two other
    servers here (their groups' leaders, mostly), an R3 stream and R3
    durable consumers; the guest's instructions per second of steady
    state, a fresh cluster per variant (routes made before the service
    are not served)."""
    sys.path.insert(0, os.path.join(ROOT, "services", "nats"))
    import test_nats as tn
    consumers, secs = (100, 10) if quick else (1000, 20)
    exp = "nats_idle_c%d" % consumers
    peers = (GUEST_IP,) + NATS_LEADERS
    for ip in NATS_LEADERS:
        bench.sh(["ip", "addr", "replace", ip + "/24", "dev", bench.ICOUNT_TAP])
    gdir = "/tmp/xps-bench-nats"

    def cluster_up():
        root = tempfile.mkdtemp(prefix="xps-bench-nats-")
        procs = []
        try:
            return cluster_start(root, procs)
        except BaseException:
            cluster_down(root, procs)
            raise

    def cluster_start(root, procs):
        b.g.run(["rm", "-rf", gdir])
        b.g.run(["mkdir", "-p", gdir])
        b.g.run(["sh", "-c", "cat > %s/conf" % gdir],
                input=tn.server_conf("follower", GUEST_IP, gdir, peers))
        b.g.spawn("nats", ["nats-server", "-c", gdir + "/conf", "-l", gdir + "/log"])
        for k, ip in enumerate(NATS_LEADERS):
            d = os.path.join(root, "s%d" % k)
            os.makedirs(d)
            with open(os.path.join(d, "conf"), "w") as f:
                f.write(tn.server_conf("s%d" % k, ip, d, peers))
            procs.append(subprocess.Popen(["nats-server", "-c", os.path.join(d, "conf"),
                                           "-l", os.path.join(d, "log")]))
        deadline = time.time() + 120
        while not all(_routes(ip) == 2 for ip in NATS_LEADERS):
            if time.time() > deadline:
                raise RuntimeError("the NATS routes did not form in 120 s")
            time.sleep(1)
        c = tn.Client(NATS_LEADERS[0])
        deadline = time.time() + 120
        while not tn.meta_ready(c):
            if time.time() > deadline:
                raise RuntimeError("no JetStream meta leader in 120 s")
            time.sleep(1)
        t0 = time.time()
        tn.make_groups(c, consumers)
        c.close()
        say("  %-30s %d consumers made in %.0f s" % (exp, consumers, time.time() - t0))
        return root, procs

    def cluster_down(root, procs):
        b.g.stop("nats")
        for p in procs:
            p.terminate()
            p.wait(30)
        shutil.rmtree(root, ignore_errors=True)

    def idle():
        time.sleep(secs)
        return secs
    idle.unit = "s"     # an idle cluster's "requests" are its seconds

    def one(variant, be):
        name = be + "-icount"
        if variant == "xps":
            service_up(b, "nats", ["--port", tn.ROUTE], be)
        root, procs = cluster_up()
        try:
            time.sleep(10)      # leaders elected, groups caught up
            st0 = b.g.run(tn.NATS_STATS, check=False)["out"] if variant == "xps" else None
            per = b.measure(exp, name, variant, idle)
            # the "requests" of an idle cluster are its seconds
            for r in RESULTS:
                if r["experiment"] == exp and r["metric"] == "instructions_per_req":
                    r["metric"] = "instructions_per_s"
            if st0:
                st0 = tn.nats_stats(st0)
                st1 = tn.nats_stats(b.g.run(tn.NATS_STATS)["out"])
                # over the repeats and the settling, per second of all of it
                say("  %-30s %-14s %s" % (exp, name, ", ".join(
                    "%s %d" % (k, st1[k] - st0[k]) for k in sorted(st1))))
                # routes that fell back to the slow path, and why
                lost = (b.g.xpsctl("status", check=False) or {}).get("connections_lost_count", {})
                say("  %-30s %-14s connections lost count: %s" % (exp, name, ", ".join(
                    "%s %d" % (k, v) for k, v in sorted(lost.items()) if v) or "none"))
            return per
        finally:
            cluster_down(root, procs)
            if variant == "xps":
                service_down(b)

    first = b.backends[0] + "-icount"
    try:
        one("baseline", b.backends[0])
        base = [r for r in RESULTS if r["experiment"] == exp and r["variant"] == "baseline"]
        for be in b.backends:
            if be != b.backends[0]:
                for r in base:
                    RESULTS.append(dict(r, backend=be + "-icount"))
            one("xps", be)
    except (AgentError, RuntimeError, OSError, AssertionError) as e:
        NOT_RUN.append(("%s (%s)" % (exp, first), str(e)))
        say("  %s FAILED: %s" % (exp, e))
    finally:
        for ip in NATS_LEADERS:
            bench.sh(["ip", "addr", "del", ip + "/24", "dev", bench.ICOUNT_TAP], check=False)


def _routes(ip):
    sys.path.insert(0, os.path.join(ROOT, "services", "nats"))
    import test_nats as tn
    try:
        return tn.monitor(ip, "/routez")["num_routes"]
    except (OSError, ValueError, KeyError):
        return -1


GROUPS = {
    "ceiling": exp_ceiling,
    "redis": exp_redis,
    "mix": exp_redis_mix,
    "memcached": exp_memcached,
    "nginx": exp_nginx,
    "nats": exp_nats,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=",".join(GROUPS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--netns", default="xpsi")
    ap.add_argument("--profile", action="store_true", help="in-guest perf of every variant")
    ap.add_argument("--backends", default=os.environ.get("XPS_ICOUNT_BACKENDS", "native,stock"),
                    help="XPS backends to measure (native, stock; default both, or "
                    "$XPS_ICOUNT_BACKENDS)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    only = [g for g in a.only.split(",") if g in GROUPS]
    guest = None
    try:
        guest = Guest(a.out, a.netns, timeout=1200 if a.quick else 5400)
        b = Bench(guest, a.out, a.repeats, a.profile, a.backends.split(","))
        for g in GROUPS:
            if g in only:
                say("== icount: " + g)
                GROUPS[g](b, a.quick)
    except AgentError as e:
        NOT_RUN.append(("icount cost model", str(e)))
        say("icount run FAILED: %s" % e)
    finally:
        rc = guest.close() if guest else None
        if rc:
            say("the guest run ended with status %s (see guest-console.log)" % rc)
            if rc == 99:
                NOT_RUN.append(("icount cost model", "kernel splat in the guest: results void"))
        with open(os.path.join(a.out, "raw.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["experiment", "backend", "variant", "metric", "value"])
            w.writeheader()
            w.writerows(RESULTS)
        with open(os.path.join(a.out, "not_run.json"), "w") as f:
            json.dump(NOT_RUN, f)


if __name__ == "__main__":
    main()
