#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The Debian packages of `make deb` and the systemd unit they ship.

The packages are built once, installed into a throwaway root with
`dpkg --root` (their files where they belong, xpsctl runs from there,
libxps-dev's pkg-config file builds a program against the packaged
library, purging leaves nothing), then installed on this machine with
`dpkg -i`: the unit accelerates a redis-server on a free port and removes
the service on stop, and `dpkg -P` takes every file away again.

systemctl needs systemd as PID 1.  Where it is not (a container), the
unit's ExecStart and ExecStop lines are run as systemd would run them,
with its specifiers and variables expanded, and the test says so."""
import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile

from xpstest import OUT, ROOT, eq, main, redis_cli, stats, test, wait_for, xpsctl

DEB = os.path.join(OUT, "deb")
PACKAGES = ("xps-tools", "libxps0", "libxps-dev")
UNIT = "xps-service@.service"


def run(*cmd, check=True, env=None, cwd=ROOT, timeout=300):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       env=env, cwd=cwd, timeout=timeout)
    if check and p.returncode:
        raise AssertionError("%s: exit %d\n%s%s" % (" ".join(map(str, cmd)), p.returncode,
                                                   p.stdout[-3000:], p.stderr[-3000:]))
    return p


def makefile_var(name):
    m = re.search(r"^%s := (\S+)$" % name, open(os.path.join(ROOT, "Makefile")).read(), re.M)
    if not m:
        raise AssertionError("no %s in the Makefile" % name)
    return m.group(1)


VERSION = makefile_var("XPS_VERSION")
SOVER = makefile_var("LIBXPS_SOVER")
ARCH = run("dpkg", "--print-architecture").stdout.strip()
_built = {}


def debs():
    """The three packages, built by `make deb` the first time."""
    if not _built:
        run("make", "-s", "deb")
        for pkg in PACKAGES:
            path = os.path.join(DEB, "%s_%s_%s.deb" % (pkg, VERSION, ARCH))
            if not os.path.isfile(path):
                raise AssertionError("make deb made no " + path)
            _built[pkg] = path
    return _built


def field(pkg, name):
    return run("dpkg-deb", "-f", debs()[pkg], name).stdout.strip()


def contents(pkg):
    """{path: symlink target or None} of a package's files and links."""
    files = {}
    for line in run("dpkg-deb", "-c", debs()[pkg]).stdout.splitlines():
        if line.startswith("d"):
            continue
        path = line.split(None, 5)[5]
        target = None
        if " -> " in path:
            path, target = path.split(" -> ")
        files[path[2:]] = target
    return files


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@test
def test_control_fields():
    for pkg in PACKAGES:
        eq(field(pkg, "Version"), VERSION, pkg + " Version (XPS_VERSION)")
        eq(field(pkg, "Architecture"), ARCH, pkg + " Architecture")
    for pkg in ("xps-tools", "libxps0"):
        deps = field(pkg, "Depends")
        for want in ("libbpf1", "libc6"):
            if want not in deps:
                raise AssertionError("%s Depends %r lacks %s" % (pkg, deps, want))
    deps = field("libxps-dev", "Depends")
    if "libxps0 (= %s)" % VERSION not in deps or "libbpf-dev" not in deps:
        raise AssertionError("libxps-dev Depends %r" % deps)
    info = run("dpkg-deb", "-I", debs()["libxps0"]).stdout
    for want in ("shlibs", "triggers"):
        if want not in info:
            raise AssertionError("libxps0 has no %s control file:\n%s" % (want, info))
    # lintian's complaints are listed, errors are not accepted
    lint = open(os.path.join(DEB, "lintian.txt")).read()
    errors = [l for l in lint.splitlines() if l.startswith("E:")]
    if errors:
        raise AssertionError("lintian errors:\n" + "\n".join(errors))
    # every program shipped has its man page
    unmanned = [l for l in lint.splitlines() if "no-manual-page" in l]
    if unmanned:
        raise AssertionError("programs without a man page:\n" + "\n".join(unmanned))


@test
def test_files_where_they_belong():
    tools, lib, dev = (contents(p) for p in PACKAGES)
    handlers = {"redis", "memcached", "http_filter", "redis_cluster", "kv", "echo"}
    want_tools = {"usr/sbin/" + b for b in ("xpsctl", "xps-redisd", "xps-memcachedd",
                                              "xps-clusterd")}
    want_tools |= {"usr/lib/xps/bpf/%s.bpf.o" % h for h in handlers}
    want_tools |= {"usr/share/man/man8/%s.gz" % os.path.basename(m)
                   for m in glob.glob(os.path.join(ROOT, "services/*/xps-*.8"))}
    want_tools |= {"lib/systemd/system/" + UNIT, "usr/share/man/man8/xpsctl.8.gz",
                   "usr/share/bash-completion/completions/xpsctl",
                   "usr/share/doc/xps-tools/copyright"}
    missing = want_tools - set(tools)
    if missing:
        raise AssertionError("xps-tools lacks %s" % sorted(missing))
    if any("xps_framework" in f for f in tools):
        raise AssertionError("the framework object is embedded in libxps, not shipped")
    eq(lib.get("usr/lib/libxps.so." + SOVER), "libxps.so." + VERSION, "libxps0 soname link")
    if "usr/lib/libxps.so." + VERSION not in lib:
        raise AssertionError("libxps0 has no library: %s" % sorted(lib))
    shared = ["include/xps/*.h", "services/*/*.h", "bpf/examples/kv.h"]
    headers = {"usr/include/xps/" + os.path.basename(h)
               for g in shared for h in glob.glob(os.path.join(ROOT, g))}
    if len(headers) < 8:
        raise AssertionError("the shared headers were not found: %s" % sorted(headers))
    want_dev = headers | {"usr/include/libxps.h", "usr/include/xps/xps.bpf.h",
                          "usr/include/xps/libxps_kv.h",
                          "usr/include/linux/bpf_serve.h", "usr/lib/libxps.a",
                          "usr/lib/pkgconfig/libxps.pc"}
    missing = want_dev - set(dev)
    if missing:
        raise AssertionError("libxps-dev lacks %s" % sorted(missing))
    eq(dev.get("usr/lib/libxps.so"), "libxps.so." + SOVER, "libxps-dev's link for -lxps")
    for a, b in (("xps-tools", "libxps0"), ("xps-tools", "libxps-dev"),
                 ("libxps0", "libxps-dev")):
        both = {f for f in set(contents(a)) & set(contents(b))
                if not f.startswith("usr/share/doc/")}
        if both:
            raise AssertionError("%s and %s both ship %s" % (a, b, sorted(both)))
    # the library's soname, as the package name says
    with tempfile.TemporaryDirectory() as tmp:
        run("dpkg-deb", "-x", debs()["libxps0"], tmp)
        dyn = run("objdump", "-p", os.path.join(tmp, "usr/lib/libxps.so." + VERSION)).stdout
        if not re.search(r"SONAME\s+libxps\.so\.%s$" % SOVER, dyn, re.M):
            raise AssertionError("libxps.so's SONAME is not libxps.so.%s:\n%s" % (SOVER, dyn))


# a handler built against the packaged BPF headers alone
HANDLER = r"""
#include <xps/xps.bpf.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

XPS_DATA_MAP(__u32, __u64, 16);

SEC("xps")
int pkg_handler(struct __sk_buff *skb)
{
	__u32 key = 0;
	__u64 *v;

	if (xps_proto(skb) != IPPROTO_TCP)
		return xps_pass(skb);
	v = xps_data_lookup(&key);
	if (!v || xps_resize(skb, sizeof(*v)) ||
	    xps_store(skb, 0, v, sizeof(*v)) == XPS_EBUSY)
		return xps_pass(skb);
	return xps_tx(skb);
}
"""

TINY = r"""
#include <stdio.h>
#include <string.h>
#include <libxps.h>
#include <xps/libxps_kv.h>

int main(void)
{
	const char *name = xps_backend__name(XPS_BACKEND_NATIVE);
	/* the paper-era name, exported as an alias */
	const char *alias = xps_backend_name(XPS_BACKEND_NATIVE);

	xps_kvcache__close(NULL);	/* the kv-cache header and symbols */
	if (!name || !alias || strcmp(name, alias))
		name = NULL;
	printf("%s\n", name ? name : "(null)");
	return !name;
}
"""


@test
def test_install_into_a_root_and_purge():
    root = tempfile.mkdtemp(prefix="xps-pkgroot.")
    dpkg = ["dpkg", "--root=" + root, "--force-script-chrootless"]
    try:
        for d in ("info", "updates", "triggers"):
            os.makedirs(os.path.join(root, "var/lib/dpkg", d))
        open(os.path.join(root, "var/lib/dpkg/status"), "w").close()
        # the root has no libc or libbpf of its own: they are this machine's
        run(*dpkg, "--force-depends", "-i", *debs().values())
        for pkg in PACKAGES:
            for path, target in contents(pkg).items():
                full = os.path.join(root, path)
                if not os.path.lexists(full):
                    raise AssertionError("%s: /%s not installed" % (pkg, path))
                if target and os.readlink(full) != target:
                    raise AssertionError("/%s -> %s" % (path, os.readlink(full)))
        sbin = os.path.join(root, "usr/sbin")
        out = run(os.path.join(sbin, "xpsctl"), "--version").stdout
        if VERSION not in out:
            raise AssertionError("xpsctl --version: %r, want %s" % (out, VERSION))
        # xpsctl finds the packaged handler objects relative to itself
        # (http: the one kind that needs no server to start)
        ctl = os.path.join(sbin, "xpsctl")
        out = run(ctl, "-j", "service", "http", "--port", free_port(), "--name", "pkg-http")
        eq(json.loads(out.stdout)["name"], "pkg-http", "service http from the root")
        run(ctl, "service", "stop", "pkg-http")

        # libxps-dev: pkg-config resolves, a program builds, links and runs
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(root, "usr/lib/pkgconfig"),
                   PKG_CONFIG_SYSROOT_DIR=root)
        eq(run("pkg-config", "--modversion", "libxps", env=env).stdout.strip(), VERSION,
           "pkg-config --modversion libxps")
        flags = shlex.split(run("pkg-config", "--cflags", "--libs", "libxps", env=env).stdout)
        if "-I%s/usr/include" % root not in flags or "-lxps" not in flags:
            raise AssertionError("pkg-config libxps: %r" % flags)
        src = os.path.join(root, "tiny.c")
        open(src, "w").write(TINY)
        exe = os.path.join(root, "tiny")
        run("cc", "-Wall", "-Werror", "-o", exe, src, *flags)
        needed = run("objdump", "-p", exe).stdout
        if not re.search(r"NEEDED\s+libxps\.so\.%s$" % SOVER, needed, re.M):
            raise AssertionError("tiny does not need libxps.so.%s:\n%s" % (SOVER, needed))
        out = run(exe, env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(root, "usr/lib")))
        eq(out.stdout.strip(), "native", "xps_backend__name() through the packaged library")
        # and statically, with libbpf's own flags (Requires.private)
        static = shlex.split(run("pkg-config", "--static", "--libs", "libxps",
                                 env=env).stdout)
        run("cc", "-Wall", "-Werror", "-o", exe + "-static", src, *flags[:1],
            os.path.join(root, "usr/lib/libxps.a"), *[f for f in static if f != "-lxps"
                                                      and not f.startswith("-L")])
        eq(run(exe + "-static").stdout.strip(), "native", "the static library")
        os.unlink(src)
        for f in (exe, exe + "-static"):
            os.unlink(f)
        # xps/xps.bpf.h and what it includes (xps/internal, xps/backend)
        src = os.path.join(root, "handler.bpf.c")
        open(src, "w").write(HANDLER)
        triplet = run("cc", "-dumpmachine").stdout.strip()
        run("clang", "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror",
            "-I" + os.path.join(root, "usr/include"), "-I/usr/include/" + triplet,
            "-c", src, "-o", src + ".o")
        syms = run("llvm-objdump", "-t", src + ".o").stdout
        for sym in ("pkg_handler", "xps_backend", "xps_data", "xps_run"):
            if not re.search(r"\s%s$" % sym, syms, re.M):
                raise AssertionError("the packaged headers' handler lacks %s:\n%s"
                                     % (sym, syms))
        for f in (src, src + ".o"):
            os.unlink(f)

        # the unit as installed: systemd-analyze, with the root's xpsctl
        unitdir = tempfile.mkdtemp(dir=root)
        text = open(os.path.join(root, "lib/systemd/system", UNIT)).read()
        open(os.path.join(unitdir, UNIT), "w").write(text.replace("/usr/sbin/", sbin + "/"))
        p = run("systemd-analyze", "verify", "--man=no",
                os.path.join(unitdir, "xps-service@redis-6379.service"), check=False)
        if p.returncode or p.stderr.strip():
            raise AssertionError("systemd-analyze verify: %s" % p.stderr)
        shutil.rmtree(unitdir)

        run(*dpkg, "-P", *PACKAGES)
        left = [os.path.relpath(os.path.join(d, f), root)
                for d, dirs, files in os.walk(root) for f in files + dirs
                if not os.path.relpath(os.path.join(d, f), root).startswith("var")]
        if left:
            raise AssertionError("dpkg -P left %s" % sorted(left))
    finally:
        shutil.rmtree(root)


def unit_commands(unit_text, instance, env):
    """ExecStart and ExecStop of the unit for @instance, expanded as systemd
    expands them: %i and %%, $$, and $VAR as words of the environment."""
    cmds = {}
    for key in ("ExecStart", "ExecStop"):
        m = re.search(r"^%s=(.*)$" % key, unit_text, re.M)
        line = m.group(1).replace("%i", instance).replace("%%", "%")
        words = []
        for w in shlex.split(line.replace("$$", "\0")):
            if w.startswith("$") and not w.startswith("${"):
                words += shlex.split(env.get(w[1:], ""))
            else:
                words.append(w.replace("\0", "$"))
        cmds[key] = words
    return cmds


def alive(pid):
    """@pid runs (a zombie nobody reaps yet does not)."""
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def installed(pkg):
    p = run("dpkg-query", "-W", "-f=${Status}", pkg, check=False)
    return p.returncode == 0 and "installed" in p.stdout.split()


@test
def test_installed_unit_accelerates_redis():
    """dpkg -i, the unit for a redis-server on a free port, dpkg -P."""
    mine = [p for p in PACKAGES if installed(p)]
    if mine:
        raise AssertionError("%s already installed on this machine: this test would "
                             "remove them; not run" % mine)
    port = free_port()
    inst = "redis-%d" % port
    server = subprocess.Popen(["redis-server", "--port", str(port), "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL,
                              start_new_session=True)
    envfile = "/etc/xps/%s.env" % inst
    made_etc = not os.path.isdir("/etc/xps")
    try:
        wait_for(lambda: subprocess.run(["redis-cli", "-p", str(port), "ping"],
                                        capture_output=True).returncode == 0,
                 what="redis-server on %d" % port)
        run("dpkg", "-i", *debs().values())
        out = run("/usr/sbin/xpsctl", "--version").stdout
        if VERSION not in out:
            raise AssertionError("installed xpsctl --version: %r" % out)
        p = run("systemd-analyze", "verify", "xps-service@%s.service" % inst, check=False)
        if p.returncode or p.stderr.strip():
            raise AssertionError("systemd-analyze verify: %s" % p.stderr)

        # the documented environment file: options that reach xpsctl
        os.makedirs("/etc/xps", exist_ok=True)
        with open(envfile, "w") as f:
            f.write('XPS_SERVICE_OPTS="--redis 127.0.0.1:%d"\n' % port)
        env = None
        if os.path.isdir("/run/systemd/system"):
            start = ["systemctl", "start", "xps-service@%s" % inst]
            stop = ["systemctl", "stop", "xps-service@%s" % inst]
        else:
            print("NOTE: systemd is not PID 1 here: the unit's ExecStart and ExecStop "
                  "run as systemd would run them, systemctl itself is not exercised",
                  flush=True)
            env = dict(os.environ)
            env["XPS_SERVICE_OPTS"] = "--redis 127.0.0.1:%d" % port
            cmds = unit_commands(open("/lib/systemd/system/" + UNIT).read(), inst, env)
            start, stop = cmds["ExecStart"], cmds["ExecStop"]
            if "--redis" not in start:
                raise AssertionError("XPS_SERVICE_OPTS did not reach ExecStart: %r" % start)
        run(*start, env=env)
        svc = [s for s in xpsctl("service", "list") if s["name"] == inst]
        if len(svc) != 1 or svc[0]["service"] != "redis" or svc[0]["port"] != port \
                or not svc[0]["daemon_pid"]:
            raise AssertionError("service list after start: %r" % svc)
        daemon = svc[0]["daemon_pid"]
        # the service really answers: a cached GET comes from the kernel
        redis_cli(port, "set", "pkgkey", "pkgvalue")

        def answered():
            eq(redis_cli(port, "get", "pkgkey"), "pkgvalue", "GET through XPS")
            return stats(inst)["tx"] > 0
        wait_for(answered, timeout=10, what="a GET answered from the kernel")
        run(*stop)
        if any(s["name"] == inst for s in xpsctl("service", "list")):
            raise AssertionError("the service survived its unit's stop")
        if alive(daemon):
            raise AssertionError("xps-redisd %d survived its unit's stop" % daemon)
        eq(redis_cli(port, "get", "pkgkey"), "pkgvalue", "GET after the stop")
    finally:
        if os.path.exists(envfile):
            os.unlink(envfile)
        if made_etc and os.path.isdir("/etc/xps"):
            os.rmdir("/etc/xps")
        xpsctl("service", "stop", inst, check=False)
        for ext in ("log", "state", "pid"):     # kept by a stop, for post-mortems
            if os.path.exists("/run/xps/%s.%s" % (inst, ext)):
                os.unlink("/run/xps/%s.%s" % (inst, ext))
        if not mine:
            run("dpkg", "-P", *PACKAGES, check=False)
        os.killpg(server.pid, signal.SIGTERM)
        server.wait()
    for pkg in PACKAGES:
        if installed(pkg):
            raise AssertionError("%s still installed after dpkg -P" % pkg)
    for path in ("/usr/sbin/xpsctl", "/usr/sbin/xps-redisd", "/lib/systemd/system/" + UNIT,
                 "/usr/lib/libxps.so." + SOVER, "/usr/include/libxps.h",
                 "/usr/lib/xps", "/usr/lib/pkgconfig/libxps.pc"):
        if os.path.lexists(path):
            raise AssertionError("%s left after dpkg -P" % path)


if __name__ == "__main__":
    main()
