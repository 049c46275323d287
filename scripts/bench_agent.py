#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The benchmark's agent inside the instruction-counting guest.

scripts/bench_icount.py boots the patched kernel in a 1-vCPU QEMU guest
under `-icount shift=0,sleep=on` (guest time advances 1 ns per executed
instruction) with this script as the guest's command, and drives it over
one TCP connection on the guest's virtio-net NIC:

  bench_agent.py [--addr ADDR/PREFIX] [--port PORT]

Requests and answers are JSON objects, one per line:

  {"op": "run", "argv": [...], "env": {...}, "input": "..."}
        run a command to completion: {"rc", "out", "err"}
  {"op": "spawn", "id": ID, "argv": [...], "env": {...}}
        start a background process (a server, perf): {"pid"}
  {"op": "stop", "id": ID, "signal": "INT"|"TERM"}
        signal it and wait for it: {"rc"}
  {"op": "mark"}
        {"mono", "idle", "iowait"}: CLOCK_MONOTONIC and the CPU's idle and
        iowait sleep time from /proc/timer_list, in ns.  Between two marks,
        busy = d(mono) - d(idle) - d(iowait) is the number of instructions
        the guest executed, whoever executed them.  A mark costs no fork:
        the agent reads the file itself.
  {"op": "quit"}

Between two marks the agent sleeps in recv(): it executes nothing while a
measurement runs.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import time

PROCS = {}


def timer_list():
    """CLOCK_MONOTONIC now and the idle/iowait sleep time of every CPU."""
    mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    idle = iowait = 0
    seen = 0
    with open("/proc/timer_list") as f:
        for line in f:
            m = re.match(r"\s*\.(idle|iowait)_sleeptime\s*:\s*(\d+) nsecs", line)
            if m:
                seen += 1
                if m.group(1) == "idle":
                    idle += int(m.group(2))
                else:
                    iowait += int(m.group(2))
    if not seen:
        raise RuntimeError("/proc/timer_list has no idle_sleeptime (no NO_HZ?)")
    return {"mono": mono, "idle": idle, "iowait": iowait}


def env_of(req):
    env = dict(os.environ)
    env.update(req.get("env") or {})
    return env


def handle(req):
    op = req.get("op")
    if op == "mark":
        return timer_list()
    if op == "run":
        p = subprocess.run(req["argv"], input=req.get("input"), capture_output=True,
                           text=True, env=env_of(req), timeout=req.get("timeout", 600))
        return {"rc": p.returncode, "out": p.stdout, "err": p.stderr}
    if op == "spawn":
        old = PROCS.pop(req["id"], None)
        if old and old.poll() is None:
            old.kill()
            old.wait()
        log = open(req.get("log", os.devnull), "w")
        PROCS[req["id"]] = subprocess.Popen(req["argv"], env=env_of(req), stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=log)
        log.close()
        return {"pid": PROCS[req["id"]].pid}
    if op == "stop":
        p = PROCS.pop(req["id"], None)
        if not p:
            return {"error": "no process " + req["id"]}
        if p.poll() is None:
            p.send_signal(signal.SIGINT if req.get("signal") == "INT" else signal.SIGTERM)
            try:
                p.wait(req.get("timeout", 60))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return {"rc": p.returncode}
    return {"error": "unknown op %r" % op}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--addr", default="10.79.0.2/24")
    ap.add_argument("--port", type=int, default=7999)
    a = ap.parse_args()
    for cmd in (["ip", "link", "set", "eth0", "up"],
                ["ip", "addr", "add", a.addr, "dev", "eth0"],
                ["sysctl", "-qw", "net.core.bpf_jit_kallsyms=1"],
                ["sysctl", "-qw", "net.core.somaxconn=4096"],
                ["sysctl", "-qw", "kernel.perf_event_paranoid=-1"]):
        subprocess.run(cmd, check=True)
    timer_list()        # fail now, not in the first measurement
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.addr.split("/")[0], a.port))
    ls.listen(1)
    print("bench_agent: listening on %s:%d" % (a.addr.split("/")[0], a.port), flush=True)
    conn, _ = ls.accept()
    ls.close()
    f = conn.makefile("rw")
    try:
        for line in f:
            req = json.loads(line)
            if req.get("op") == "quit":
                break
            try:
                ans = handle(req)
            except Exception as e:      # the driver reports it
                ans = {"error": "%s: %s" % (type(e).__name__, e)}
            f.write(json.dumps(ans) + "\n")
            f.flush()
    finally:
        for p in PROCS.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        conn.close()


if __name__ == "__main__":
    main()
