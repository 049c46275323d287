#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The README's first example runs as written: the shell block under
"## Usage" is run as it is, and the kernel answers what the README says it
answers."""
import os
import re
import signal
import subprocess
import tempfile

from xpstest import ROOT, main, stats, test, xpsctl


def usage_block():
    text = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"^## Usage\n\n```sh\n(.*?)^```", text, re.S | re.M)
    if not m:
        raise AssertionError("README.md has no ```sh block under ## Usage")
    return m.group(1)


@test
def test_usage_example_runs_as_written():
    block = usage_block()
    # a session of its own: whatever the block left running (its server,
    # when a step failed before the block's own kill) is killed with it.
    # Output goes to files, not pipes: a server left running would hold a
    # pipe open and turn a failed step into a timeout.
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        p = subprocess.Popen(["bash", "-e", "-c", block], cwd=ROOT, stdout=fo,
                             stderr=fe, text=True, start_new_session=True)
        try:
            p.wait(timeout=120)
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    if p.returncode:
        raise AssertionError("the README example failed (%d): %s\n%s"
                             % (p.returncode, out[-2000:], err[-2000:]))
    for want in ("value of alpha\n", "(miss)\n", "detached cache"):
        if want not in out:
            raise AssertionError("the README example printed no %r:\n%s" % (want, out))
    # "value of alpha" came from the kernel: tx counted before the detach
    m = re.search(r"name cache .*? tx (\d+) .*? pass (\d+)", out)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise AssertionError("stats show: want tx >= 1 and pass >= 1:\n%s" % out)


if __name__ == "__main__":
    main()
