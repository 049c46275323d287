#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""xpsctl as packaged software: `-o prometheus stats show` read back by a
strict parser of the exposition format and compared with `-j`, the usage
of `xpsctl service`, and the bash completion in contrib/ run in bash."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from xpstest import (BPF, Listener, ROOT, XPSCTL, attach, eq, kv_value_hex, main,
                     obj, recv_exact, tcp_client, test, wait_for, xpsctl)

P = 17800  # base port of this file
COMPLETION = os.path.join(ROOT, "contrib", "bash-completion", "xpsctl")
FAMILIES = {
    "xps_handler_runs_total": "counter",
    "xps_handler_verdicts_total": "counter",
    "xps_handler_errors_total": "counter",
    "xps_handler_run_seconds_total": "counter",
}


def run(*args, cwd=None):
    return subprocess.run([XPSCTL] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=60, cwd=cwd)


# ---- the Prometheus text format ----------------------------------------

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(%s)(?:\{(.*)\})? (\S+)$" % NAME)
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def unescape(s):
    return re.sub(r'\\[\\"n]', lambda m: UNESCAPE[m.group(0)], s)


def parse_labels(text):
    labels, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            raise AssertionError("bad label set at %r" % text[pos:])
        if m.group(1) in labels:
            raise AssertionError("label %s twice" % m.group(1))
        labels[m.group(1)] = unescape(m.group(2))
        pos = m.end()
        if pos < len(text):
            if text[pos] != ",":
                raise AssertionError("no comma after a label: %r" % text)
            pos += 1
    return labels


def parse_exposition(text):
    """{family: {"help", "type", "samples": [(labels, value text)]}}, as
    strict as node-exporter's textfile collector: HELP and TYPE once per
    family and before its samples, a family's samples together, every line
    ended by a newline."""
    fams, current, done = {}, None, set()
    if text and not text.endswith("\n"):
        raise AssertionError("the last line has no newline")
    for line in text.splitlines():
        if line.startswith("#"):
            m = re.match(r"^# (HELP|TYPE) (%s) (.*)$" % NAME, line)
            if not m:
                raise AssertionError("bad comment line %r" % line)
            kind, name, rest = m.groups()
            if name != current:
                if name in done or name in fams:
                    raise AssertionError("family %s is not together" % name)
                if current:
                    done.add(current)
                current = name
                fams[name] = {"help": None, "type": None, "samples": []}
            f = fams[name]
            if f["samples"] or f[kind.lower()] is not None:
                raise AssertionError("%s of %s late or twice" % (kind, name))
            f[kind.lower()] = unescape(rest) if kind == "HELP" else rest
            continue
        m = SAMPLE.match(line)
        if not m:
            raise AssertionError("bad sample line %r" % line)
        name, labels, value = m.groups()
        if name != current or not fams[name]["type"] or not fams[name]["help"]:
            raise AssertionError("sample %r without its HELP and TYPE before" % line)
        float(value)
        fams[name]["samples"].append((parse_labels(labels or ""), value))
    return fams


PARSE = ("import sys\n"
         "from prometheus_client.parser import text_string_to_metric_families as f\n"
         "print(sum(len(m.samples) for m in f(sys.stdin.read())))\n")


def cross_check(text):
    """The official Python client's parser (python3-prometheus-client),
    run by the system's python3 when the one running the tests (a
    virtualenv, pyenv) cannot import it."""
    for py in (sys.executable, "/usr/bin/python3"):
        if not os.access(py, os.X_OK):
            continue
        p = subprocess.run([py, "-c", PARSE], input=text, capture_output=True, text=True)
        if p.returncode == 0:
            eq(int(p.stdout), text.count("\n") - 2 * text.count("# HELP"),
               "samples the client parsed")
            return
        if "ModuleNotFoundError" not in p.stderr:
            raise AssertionError("prometheus_client could not parse the output: " + p.stderr)
    print("   NOTE: python3-prometheus-client is not installed (scripts/deps.sh "
          "installs it): the output was checked by this file's parser only")


def seconds(ns):
    return "%d.%09d" % (ns // 10**9, ns % 10**9)


def round_trip(c, msg):
    c.sendall(msg)
    return recv_exact(c, len(msg))


@test
def test_prometheus_stats_show():
    """Every counter of `-j stats show` is in the prometheus output, labelled
    by its context, and the handler label survives a file name with a quote,
    a backslash and a newline."""
    tmp = tempfile.mkdtemp()
    srv = Listener(P)
    try:
        weird = 've"rd\\ic\nt'
        path = os.path.join(tmp, weird + ".bpf.o")
        shutil.copy(obj("verdict"), path)
        xpsctl("handler", "attach", path, "--port", P, "--name", "promv")
        xpsctl("handler", "attach", obj("echo"), "--port", P + 1, "--proto", "udp",
               "--name", "prome")
        c = tcp_client(P, accepted_by=srv)
        eq(round_trip(c, b"T1\n"), b"T1\n", "TX reply")
        c.sendall(b"Pone\n")
        eq(recv_exact(c, 7), b"S:Pone\n", "PASS reply")
        c.sendall(b"Dgone\n")
        eq(round_trip(c, b"T2\n"), b"T2\n", "TX after DROP")
        c.close()
        wait_for(lambda: srv.bytes == 5, what="listener bytes")

        p = run("-o", "prometheus", "stats", "show")
        eq((p.returncode, p.stderr), (0, ""), "exit status and stderr")
        fams = parse_exposition(p.stdout)
        cross_check(p.stdout)
        eq({n: f["type"] for n, f in fams.items()}, FAMILIES, "families and types")
        js = {s["name"]: s for s in xpsctl("stats", "show")}
        eq(sorted(js), ["prome", "promv"], "contexts")
        for name, s in js.items():
            def value(fam, **want):
                got = [v for lab, v in fams[fam]["samples"]
                       if lab["context"] == name and
                       all(lab.get(k) == w for k, w in want.items())]
                eq(len(got), 1, "%s samples of %s %r" % (fam, name, want))
                return got[0]
            eq(value("xps_handler_runs_total"), str(s["runs"]), name + " runs")
            for v in ("tx", "drop", "pass", "reset"):
                eq(value("xps_handler_verdicts_total", verdict=v), str(s[v]),
                   "%s %s" % (name, v))
            eq(value("xps_handler_errors_total"), str(s["errors"]), name + " errors")
            eq(value("xps_handler_run_seconds_total"), seconds(s["run_ns"]),
               name + " run seconds")
        eq((js["promv"]["tx"], js["promv"]["pass"], js["promv"]["drop"]), (2, 1, 1),
           "verdicts of the traffic sent")
        labels = {lab["context"]: lab for lab, _ in fams["xps_handler_runs_total"]["samples"]}
        eq(labels["promv"], {"context": "promv", "handler": weird, "port": str(P),
                             "proto": "tcp", "backend": js["promv"]["backend"]},
           "labels of promv")
        eq(labels["prome"]["handler"], "echo", "handler label of prome")
        eq(labels["prome"]["proto"], "udp", "proto label of prome")
        for line in p.stdout.splitlines():
            if 'context="promv"' in line and "\\n" not in line:
                raise AssertionError("the newline was not escaped: %r" % line)

        # one context; --output as -o
        p = run("--output", "prometheus", "stats", "show", "prome")
        eq(p.returncode, 0, "stats show NAME")
        one = parse_exposition(p.stdout)
        eq({lab["context"] for f in one.values() for lab, _ in f["samples"]},
           {"prome"}, "contexts of stats show prome")
    finally:
        srv.close()
        shutil.rmtree(tmp)


@test
def test_output_formats_and_refusals():
    xpsctl("handler", "attach", obj("echo"), "--port", P + 2, "--name", "fmt")
    j = xpsctl("stats", "show")
    for args in (["-p"], ["-o", "json"], ["--output", "json"], ["--output=json"],
                 ["-o", "prometheus", "-j"]):
        p = run(*(args + ["stats", "show"]))
        eq(p.returncode, 0, " ".join(args))
        eq(json.loads(p.stdout), j, "stats show with " + " ".join(args))
    eq(run("-o", "text", "stats", "show").stdout, run("stats", "show").stdout, "-o text")
    eq(run("stats", "show").stdout.split()[:4], ["name", "fmt", "handler", "echo"],
       "text output")

    p = run("-o", "yaml", "stats", "show")
    eq(p.returncode, 2, "-o yaml: a usage error")
    if "unknown output format 'yaml'" not in p.stderr or p.stdout:
        raise AssertionError("-o yaml: %r %r" % (p.stdout, p.stderr))
    # commands without prometheus output are refused before they act
    for args in (["status"], ["stats", "keys", "fmt"], ["stats", "watch"],
                 ["handler", "detach", "fmt"], ["handler", "list"]):
        p = run("-o", "prometheus", *args)
        eq(p.returncode, 1, "-o prometheus %s" % " ".join(args))
        eq(p.stdout, "", "stdout of -o prometheus %s" % " ".join(args))
        if "has no prometheus output" not in p.stderr:
            raise AssertionError("-o prometheus %s: %r" % (args, p.stderr))
    eq([c["name"] for c in xpsctl("handler", "list")], ["fmt"],
       "the refused detach detached nothing")
    # what attach reports is the slot the context got (it said 0)
    made = xpsctl("handler", "attach", obj("echo"), "--port", P + 3, "--name", "fmt2")
    listed = {c["name"]: c["slot"] for c in xpsctl("handler", "list")}
    eq(made["slot"], listed["fmt2"], "slot attach reported")
    if listed["fmt2"] == listed["fmt"]:
        raise AssertionError("two contexts in one slot: %r" % listed)
    p = run("-o", "prometheus", "stats", "show", "no-such-context")
    eq((p.returncode, p.stdout), (1, ""), "an error leaves no output")
    if not p.stderr.startswith("Error: "):
        raise AssertionError(p.stderr)


@test
def test_data_put_refuses_an_unsealed_kv_value():
    """A kv-cache handler never serves a value whose sum is not its seal,
    so `data put` refuses one, saying why and what to do; a sealed value is
    put, and `data set` still stores any bytes (tests of the seal need it)."""
    attach("redis", P + 8, name="sealput")
    unsealed = kv_value_hex(b"k", b"v", seal=0)
    for args in ([], ["-j"]):
        p = run(*(args + ["data", "put", "sealput", "k", unsealed]))
        eq((p.returncode, p.stdout if not args else ""), (1, ""),
           "exit status of an unsealed put %s" % args)
        err = json.loads(p.stdout)["error"] if args else p.stderr
        for want in ("'k' is not sealed", "kv-cache", "set the value's sum to the seal"):
            if want not in err:
                raise AssertionError("unsealed put %s: %r lacks %r" % (args, err, want))
    eq(xpsctl("data", "dump", "sealput"), [], "the refused put stored nothing")

    put = xpsctl("data", "put", "sealput", "k", kv_value_hex(b"k", b"v"))
    eq(put["key"], "k", "a sealed put")
    eq(xpsctl("data", "get", "sealput", "k"), put, "get after a sealed put")
    eq(run("data", "set", "sealput", "k", unsealed).returncode, 0,
       "set stores an unsealed value as given")


# ---- xpsctl service usage ------------------------------------------------

KINDS = {
    "redis": ["--port", "--name", "--redis", "--help"],
    "memcached": ["--port", "--udp", "--name", "--memcached", "--help"],
    "http": ["--port", "--block", "--name", "--help"],
    "redis-cluster": ["--port", "--bus-port", "--max-age", "--name", "--help"],
    "nats": ["--port", "--addr", "--name", "--help"],
}


def options_of(usage):
    """The options the usage's "Options:" section lists."""
    sect = usage.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^  (?:-h, )?(--[a-z-]+)", sect, re.M)


@test
def test_service_usage():
    p = run("service", "help")
    eq(p.returncode, 0, "service help")
    for kind in KINDS:
        if "\n  %s " % kind not in p.stdout:
            raise AssertionError("service help does not list %s:\n%s" % (kind, p.stdout))
    eq(run("service").stdout, p.stdout, "service without a command")
    for kind, opts in KINDS.items():
        usage = run("service", kind, "--help")
        eq(usage.returncode, 0, kind + " --help")
        if not usage.stdout.startswith("Usage: xpsctl service %s --port N" % kind):
            raise AssertionError(usage.stdout)
        eq(options_of(usage.stdout), opts, kind + " options")
        for args in ([kind, "-h"], ["help", kind], [kind, "--port", P + 3, "--help"],
                     [kind[:-1], "--help"]):
            q = run("service", *args)
            eq((q.returncode, q.stdout), (0, usage.stdout), "service %s" % args)
    eq(xpsctl("handler", "list"), [], "--help created nothing")
    for cmd in ("stop", "list"):
        q = run("service", cmd, "--help")
        eq(q.returncode, 0, cmd + " --help")
        if not q.stdout.startswith("Usage: xpsctl service " + cmd):
            raise AssertionError(q.stdout)
    for o in ("handler", "stats", "data", "service"):
        q = run(o, "help")
        eq(q.returncode, 0, o + " help")
        for part in ("Usage: xpsctl ", "\nExample"):
            if part not in q.stdout:
                raise AssertionError("%s help has no %r:\n%s" % (o, part, q.stdout))
    q = run("service", "help", "bogus")
    eq((q.returncode, q.stdout), (1, ""), "service help bogus")
    r = xpsctl("service", "redis", "--help", check=False)
    eq(r, {"error": "help is not available in JSON mode"}, "-j service redis --help")


@test
def test_service_list_reads_the_stored_kind():
    """`service list` shows the kind a service was started as, stored with
    its context: not a guess from the context's name or handler file."""
    xpsctl("service", "http", "--port", P + 6, "--name", "foo")
    # the same handler, attached by hand: a context, not a service
    xpsctl("handler", "attach", obj("http_filter"), "--port", P + 7, "--name", "web")
    try:
        eq([(x["name"], x["service"], x["port"], x["state"])
            for x in xpsctl("service", "list")],
           [("foo", "http", P + 6, "running")], "service list")
        # a context made before kinds were stored has no label pin: it is
        # still listed, by the old guess from its handler's file name
        label = "/sys/fs/bpf/xps/ctx/foo/label"
        if not os.path.exists(label):
            raise AssertionError("no label pinned for service foo")
        os.unlink(label)
        eq([(x["name"], x["service"]) for x in xpsctl("service", "list")],
           [("foo", "http")], "service list of an unlabelled context")
        xpsctl("service", "stop", "foo")
        eq([c["name"] for c in xpsctl("handler", "list")], ["web"], "stop foo")
        # the kinds whose old names carried a suffix: memcached's UDP
        # companion NAME-udp, the cluster's NAME-ping (the service is NAME)
        xpsctl("handler", "attach", obj("memcached"), "--port", P + 8,
               "--proto", "udp", "--name", "mc-udp")
        xpsctl("handler", "attach", obj("redis_cluster"), "--port", P + 9,
               "--name", "rc-ping")
        xpsctl("handler", "attach", obj("redis_cluster"), "--port", P + 10,
               "--name", "rc-t2")
        for name in ("web", "mc-udp", "rc-ping", "rc-t2"):
            path = "/sys/fs/bpf/xps/ctx/%s/label" % name
            if os.path.exists(path):
                os.unlink(path)
        eq(sorted((x["name"], x["service"], x["port"])
                  for x in xpsctl("service", "list")),
           [("mc-udp", "memcached-udp", P + 8), ("rc", "redis-cluster", P + 9),
            ("web", "http", P + 7)],
           "service list of unlabelled contexts of every kind")
    finally:
        xpsctl("service", "stop", "foo", check=False)
        for name in ("web", "mc-udp", "rc-ping", "rc-t2"):
            xpsctl("handler", "detach", name, check=False)


# ---- bash completion -----------------------------------------------------

def complete(*words, cwd=ROOT):
    """COMPREPLY for the command line @words, the last one being completed."""
    words = (XPSCTL,) + words
    script = ("source %s && COMP_WORDS=(%s) && COMP_CWORD=%d; _xpsctl; "
              "printf '%%s\\n' \"${COMPREPLY[@]}\""
              % (shlex.quote(COMPLETION), " ".join(shlex.quote(w) for w in words),
                 len(words) - 1))
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script],
                       capture_output=True, text=True, cwd=cwd, timeout=30)
    if p.returncode or p.stderr:
        raise AssertionError("completion of %r: %d %r" % (words, p.returncode, p.stderr))
    return [w for w in p.stdout.split("\n") if w]


def service_kinds():
    """The kinds `xpsctl service help` lists (it prints the table's), in order."""
    text = run("service", "help").stdout
    sect = text.split("\nKinds:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^  ([a-z][a-z0-9-]*) ", sect, re.M)


def table(path, var):
    """The names in a struct cmd table of cli/, in order."""
    src = open(os.path.join(ROOT, "cli", path)).read()
    body = re.search(r"struct cmd %s\[\] = \{(.*?)\n\s*\};" % var, src, re.S)
    return re.findall(r'\{ "([a-z-]+)", do_', body.group(1))


@test
def test_completion_follows_the_dispatch_tables():
    objects = table("xpsctl.c", "objects")
    eq(complete(""), objects, "objects")
    for o, path, var in (("handler", "handler.c", "cmds"), ("stats", "stats.c", "cmds"),
                         ("data", "data.c", "cmds")):
        eq(complete(o, ""), table(path, var), o + " commands")
    # the kinds first, as the dispatcher matches them
    eq(sorted(KINDS), sorted(service_kinds()), "the kinds of service help")
    eq(complete("service", ""), service_kinds() + table("service.c", "svc_cmds"),
       "service commands")
    # prefixes resolve as in the dispatcher: "st" is status, not stats
    eq(complete("st", ""), [], "st (status) takes nothing")
    eq(complete("stats", "s"), ["show"], "stats s")
    eq(complete("h"), ["handler", "help"], "h")
    eq(complete("ser", "r"), ["redis", "redis-cluster"], "ser r")
    eq(complete("service", "help", "m"), ["memcached"], "service help m")
    eq(complete("-o", ""), ["text", "json", "prometheus"], "-o")
    eq(complete("--output", "=", "p"), ["prometheus"], "--output=p")
    eq(complete("-o", "prometheus", "sta", "s"), [], "sta is status")
    eq(complete("-j", "-o", "json", "stats", "w"), ["watch"], "after options")
    if not {"-o", "--output", "-j"} <= set(complete("-")):
        raise AssertionError(complete("-"))
    eq(complete("h", "a", "x.bpf.o", "--proto", ""), ["tcp", "udp"], "--proto")
    eq(complete("h", "a", "x.bpf.o", "--port", ""), [], "--port takes a number")
    for kind, opts in KINDS.items():
        usage = run("service", kind, "--help").stdout
        eq(complete("service", kind, "--"), options_of(usage),
           "completion and usage of " + kind)


@test
def test_completion_of_files_and_contexts():
    tmp = tempfile.mkdtemp()
    try:
        for f in ("a.bpf.o", "b.o", "notes.txt"):
            open(os.path.join(tmp, f), "w").close()
        os.mkdir(os.path.join(tmp, "sub"))
        eq(sorted(complete("handler", "attach", "", cwd=tmp)),
           ["a.bpf.o", "b.o", "sub"], "handler attach OBJ")
        eq(sorted(complete("h", "update", "ctx", "", cwd=tmp)),
           ["a.bpf.o", "b.o", "sub"], "handler update NAME OBJ")
        eq(complete("data", "load", "ctx", "n", cwd=tmp), ["notes.txt"],
           "data load NAME FILE")
    finally:
        shutil.rmtree(tmp)
    eq(complete("stats", "show", ""), [], "no contexts yet")
    xpsctl("handler", "attach", obj("echo"), "--port", P + 4, "--name", "compl-a")
    xpsctl("handler", "comp", "--port", P + 5, "--offset", "0", "--len", "1",
           "--name", "compl-mux")
    eq(complete("stats", "show", ""), ["compl-a", "compl-mux"], "stats show NAME")
    eq(complete("handler", "detach", "compl-m"), ["compl-mux"], "handler detach")
    eq(complete("d", "g", "c"), ["compl-a", "compl-mux"], "data get NAME")
    eq(complete("d", "g", "compl-a", ""), [], "data get NAME KEY")
    eq(complete("handler", "attach", "x.bpf.o", "--parent", "compl-m"),
       ["compl-mux"], "--parent")
    eq(complete("stats", "keys", "compl-a", "--"), ["--top"], "stats keys options")


if __name__ == "__main__":
    main()
