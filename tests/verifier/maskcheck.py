#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Guard against the Linux 6.18.y verifier oops in maybe_fork_scalars(): it
# forks the state on "dst &= K" / "dst |= K" (K constant) when dst is known
# to be in [-1, 0], and dereferences NULL when that fork hits the jump
# limit.  Flags such instructions where dst may hold a 0/-1 mask (from
# neg, 0 - x, x - 1, x s>> 63/31).  A linear scan of llvm-objdump output,
# not a CFG analysis: it over-reports; fix the source rather than the
# check.   maskcheck.py OBJ   (exit 1 when anything is flagged)
import re, subprocess, sys
obj = sys.argv[1]
out = subprocess.run(['llvm-objdump', '-d', '--no-show-raw-insn', obj], capture_output=True, text=True).stdout
bad = 0; marked = {}; const = set(); zero = set(); fn = ''
for line in out.splitlines():
    m = re.match(r'^[0-9a-f]+ <(.*)>:', line)
    if m:
        fn = m.group(1); marked = {}; const = set(); zero = set(); continue
    m = re.match(r'^\s*([0-9]+):\s+(.*)$', line)
    if not m: continue
    ins = m.group(2).strip()
    if ins.startswith(('if ', 'goto', 'exit')):
        continue
    if ins.startswith('call'):
        for r in ['r0','r1','r2','r3','r4','r5']:
            marked.pop(r, None); const.discard(r); zero.discard(r)
        continue
    m = re.match(r'^([rw])(\d+) (\S+) (.*)$', ins)
    if not m: continue
    kind, reg, op, src = m.groups()
    r = 'r' + reg
    srcr = re.sub(r'^w', 'r', src)
    srcconst = bool(re.match(r'^-?(0x)?[0-9a-f]+( ll)?$', src)) or srcr in const
    if op in ('&=', '|='):
        if r in marked and srcconst:
            print(f'{obj}: {fn}: {line.strip()}   <- dst may be 0/-1 mask (from: {marked[r]})')
            bad += 1
        marked.pop(r, None); const.discard(r); zero.discard(r)
        continue
    newmark = None
    if op == '=' and re.match(r'^-[rw]\d+$', src): newmark = ins
    elif op == 's>>=' and src in ('63', '31'): newmark = ins
    elif op == '-=' and r in zero: newmark = ins
    elif op == '+=' and src == '-1': newmark = ins
    marked.pop(r, None); const.discard(r); zero.discard(r)
    if newmark: marked[r] = newmark
    if op == '=' and re.match(r'^-?(0x)?[0-9a-f]+( ll)?$', src):
        const.add(r)
        if src == '0': zero.add(r)
    if op == '=' and srcr in marked and srcr != r: marked[r] = marked[srcr]
print(f'maskcheck {obj}: {bad} suspicious')
sys.exit(1 if bad else 0)
