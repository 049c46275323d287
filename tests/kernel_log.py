#!/usr/bin/env python3
"""Splats in this machine's kernel log, since a mark.

The host suites run XPS's BPF programs on the machine's own kernel; a
WARNING, BUG, KASAN report or refcount complaint logged while a suite ran
fails it, as scripts/vm-run.sh fails a guest run.  tests/run-all.sh marks
the log before each suite and checks it after:

    tests/kernel_log.py mark FILE            remember where the log ends
    tests/kernel_log.py check FILE [--settle SEC]
                                             print the splats logged since,
                                             exit 1 if there is one
    tests/kernel_log.py selftest             check the matching itself

Records are read from /dev/kmsg, whose sequence numbers survive the ring
wrapping (dmesg's line count does not).  SEC (default 1) lets work the
suite left queued, such as a sockmap psock's destruction, run first.

A WARN_ON_ONCE prints once per boot: a splat that already fired before the
mark is not seen again, whichever suite causes it next.
"""
import os
import re
import sys
import time

# Real splats only (the pattern of scripts/vm-run.sh).
SPLAT_RE = re.compile(r"WARNING:|BUG:|KASAN|UBSAN|Oops|general protection fault|"
                      r"kernel BUG|possible circular locking|possible recursive locking|"
                      r"inconsistent lock state|suspicious RCU usage|refcount_t:|"
                      r"INFO: task .* blocked|Kernel panic|stack-protector")
# Lines printed after a splat's first line, to show where it came from.
CONTEXT = 24


def parse(rec):
    """(seq, text) of one /dev/kmsg record: "prio,seq,usec,flags;text\\n..."."""
    head, _, text = rec.partition(";")
    fields = head.split(",")
    return int(fields[1]), text.split("\n", 1)[0]


def records():
    """Every record in the kernel's ring, oldest first; None if unreadable."""
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    out = []
    try:
        while True:
            try:
                rec = os.read(fd, 16384)
            except BlockingIOError:
                break
            except BrokenPipeError:
                # overwritten while we read: go on from the oldest left
                continue
            if not rec:
                break
            out.append(parse(rec.decode(errors="replace")))
    finally:
        os.close(fd)
    return out


def mark(recs=None):
    """The sequence number of the last record (-1: empty); None if unreadable."""
    recs = records() if recs is None else recs
    if recs is None:
        return None
    return recs[-1][0] if recs else -1


def splats(since, recs=None):
    """Splat lines logged after record @since, each with what follows it."""
    recs = records() if recs is None else recs
    if since is None or recs is None:
        return None
    new = [text for seq, text in recs if seq > since]
    out = []
    i = 0
    while i < len(new):
        if SPLAT_RE.search(new[i]):
            out.extend(new[i:i + CONTEXT])
            out.append("")
            i += CONTEXT
        else:
            i += 1
    return out


def selftest():
    recs = [(5, "old: WARNING: before the mark"), (6, "usb 1-1: new device"),
            (7, "------------[ cut here ]------------"),
            (8, "WARNING: CPU: 0 PID: 9 at net/ipv4/af_inet.c:157 inet_sock_destruct"),
            (9, "Workqueue: events sk_psock_destroy"),
            (10, "refcount_t: underflow; use-after-free."),
            (11, "Speculative Return Stack Overflow: Mitigation: off")]
    checks = [
        (mark(recs), 11, "mark is the last sequence number"),
        (mark([]), -1, "mark of an empty log"),
        (splats(11, recs), [], "nothing after the last record"),
        (splats(6, recs)[0], recs[3][1], "a WARNING after the mark"),
        ("Workqueue: events sk_psock_destroy" in splats(6, recs), True,
         "the lines after a splat come with it"),
        (any("old:" in l for l in splats(6, recs)), False,
         "a splat before the mark is not reported"),
        (splats(9, recs)[0], recs[5][1], "a refcount_t complaint"),
        (splats(None, recs), None, "no mark: no check"),
        (parse("4,1234,56789,-;WARNING: x\n SUBSYSTEM=net\n"), (1234, "WARNING: x"),
         "a /dev/kmsg record"),
    ]
    bad = [(what, got, want) for got, want, what in checks if got != want]
    for what, got, want in bad:
        print("FAIL %s: got %r, want %r" % (what, got, want))
    live = mark()
    if live is None:
        print("FAIL /dev/kmsg cannot be read here: the host suites' splat "
              "check cannot run (needs root)")
        return 1
    print("kernel_log selftest: %d of %d checks passed, live log at record %d"
          % (len(checks) - len(bad), len(checks), live))
    return 1 if bad else 0


def main(argv):
    if len(argv) == 2 and argv[1] == "selftest":
        return selftest()
    if len(argv) >= 3 and argv[1] == "mark":
        m = mark()
        with open(argv[2], "w") as f:
            f.write("%s\n" % ("none" if m is None else m))
        return 0
    if len(argv) in (3, 5) and argv[1] == "check" and \
            (len(argv) == 3 or argv[3] == "--settle"):
        time.sleep(float(argv[4]) if len(argv) == 5 else 1.0)
        try:
            with open(argv[2]) as f:
                saved = f.read().strip()
        except OSError as e:
            print("kernel_log: no mark: %s" % e, file=sys.stderr)
            return 2
        found = None if saved == "none" else splats(int(saved))
        if found is None:
            print("NOTE: the kernel log cannot be read here (needs root): "
                  "NO splat check for this suite")
            return 0
        if found:
            print("FAIL: the kernel logged a splat while this suite ran:")
            for line in found:
                print("    " + line)
            return 1
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
