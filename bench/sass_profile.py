#!/usr/bin/env python3
"""sass_profile.py: where one profiled kernel launch spends its instructions and its warps'
stall samples, from the SASS page that bench/ncu_stalls.sh writes (NAME_sass.csv: per
instruction "Instructions Executed" and "Warp Stall Sampling (All Samples)").

Instructions that run the same number of times mostly belong to one level of the kernel's loop
nest (once per warp: the prologue; once per pair of spans: the staging; once per chunk: the
loop), so the first table groups the executed instructions by that count: how many static
instructions run that often, their share of all executed instructions and of the samples. The
second lists the instructions with the most samples (a stall is charged to the instruction that
waits, e.g. the branch after an mbarrier try-wait), with its commonest stall reason. --range A:B
adds the totals of the static instructions A..B-1 (indices as printed), e.g. one loop body,
with the samples' reasons (long_sb: a global or shared-memory-barrier wait, e.g. an mbarrier's
phase; wait: a fixed-latency dependency; short_sb: shared memory; barrier: __syncthreads).

--skips N lists the run path's skipped stretches: runs of instructions that never ran lying
between instructions that did, i.e. inlined code the launch jumped over (bench/icache_probe.cu,
session 34: each such jump to a line not in the SM's instruction caches costs ~170 cycles from L2
and ~300 from DRAM, where straight-line code costs nothing cold). It prints their count, the
N longest, and how many are longer than a 128-byte line; the fewer the better for a kernel that
runs once a layer.

--lines FILE adds the source line of each skipped stretch and of the jump before it, from the
kernel's listing by `nvdisasm -g -fun NAME` (bench/sass_lines.sh writes them on the device: the
build carries -lineinfo). The listing's instruction at byte offset 16 i is index i here: both are
the kernel's code in order.

Usage: bench/sass_profile.py NAME_sass.csv [--top N] [--classes N] [--range A:B ...] [--skips N]
       [--lines FILE]"""
import argparse
import collections
import csv
import re
import sys


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    for i, r in enumerate(rows):
        if r and r[0] == "Address":
            head, data = r, rows[i + 1:]
            break
    else:
        sys.exit(f"{path}: no 'Address' header row (not an ncu --page source --csv file?)")
    try:
        ie = head.index("Instructions Executed")
        ss = head.index("Warp Stall Sampling (All Samples)")
    except ValueError as e:
        sys.exit(f"{path}: column missing: {e}")
    reasons = [(c[len("stall_"):], i) for i, c in enumerate(head) if c.startswith("stall_") and "Not Issued" not in c]
    out = []
    for r in data:
        if len(r) <= max([ie, ss] + [i for _, i in reasons]):
            continue
        try:
            why = collections.Counter({n: int(r[i] or 0) for n, i in reasons})
            out.append((r[1].strip(), int(r[ie] or 0), int(r[ss] or 0), why))
        except ValueError:
            sys.exit(f"{path}: a count that is not an integer in row {r[:2]}")
    return out


def load_lines(path):
    """Instruction index -> "file:line" from an nvdisasm -g (or -gi) listing: the first of the
    '//## File' comments before each instruction, which with -gi is the innermost inlined
    function's line (the ones after it are its callers'); '/*0a30*/' offsets in bytes, 16 per
    instruction."""
    where, cur, after_loc = {}, "?", False
    loc = re.compile(r'//## File "([^"]+)", line (\d+)')
    ins = re.compile(r'^\s*/\*([0-9a-f]{4,})\*/')
    with open(path) as f:
        for ln in f:
            m = loc.search(ln)
            if m:
                if not after_loc:
                    cur = f"{m.group(1).rsplit('/', 1)[-1]}:{m.group(2)}"
                after_loc = True
                continue
            after_loc = False
            m = ins.match(ln)
            if m:
                where[int(m.group(1), 16) // 16] = cur
    if not where:
        sys.exit(f"{path}: no instructions with offsets (not an nvdisasm -g listing?)")
    return where


def top_reasons(c, k=5):
    c = +c  # drop zeros
    return ", ".join(f"{n} {v}" for n, v in c.most_common(k)) or "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--range", action="append", default=[])
    ap.add_argument("--skips", type=int, default=0)
    ap.add_argument("--lines")
    a = ap.parse_args()
    where = load_lines(a.lines) if a.lines else None
    ins = load(a.csv)
    tot = sum(x[1] for x in ins) or 1
    stot = sum(x[2] for x in ins) or 1
    print(f"{a.csv}: {len(ins)} static instructions, {sum(1 for x in ins if x[1])} executed; "
          f"{tot} warp instructions, {stot} stall samples")
    cnt, stat, samp = collections.Counter(), collections.Counter(), collections.Counter()
    for _, n, s, _w in ins:
        if n:
            cnt[n] += n
            stat[n] += 1
            samp[n] += s
    print("\n| times run | static instrs | warp instrs | share | samples | share |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n, v in sorted(cnt.items(), key=lambda x: -x[1])[:a.classes]:
        print(f"| {n} | {stat[n]} | {v} | {100 * v / tot:.1f} % | {samp[n]} | {100 * samp[n] / stot:.1f} % |")
    print("\n| index | samples | times run | reasons | instruction |")
    print("| --- | --- | --- | --- | --- |")
    for i in sorted(range(len(ins)), key=lambda i: -ins[i][2])[:a.top]:
        print(f"| {i} | {ins[i][2]} | {ins[i][1]} | {top_reasons(ins[i][3], 2)} | `{ins[i][0][:60]}` |")
    for rg in a.range:
        try:
            lo, hi = (int(x) for x in rg.split(":"))
        except ValueError:
            sys.exit(f"--range {rg}: want A:B (two instruction indices)")
        part = ins[lo:hi]
        n, s = sum(x[1] for x in part), sum(x[2] for x in part)
        why = sum((x[3] for x in part), collections.Counter())
        print(f"\nrange {lo}:{hi}: {n} warp instructions ({100 * n / tot:.1f} %), {s} samples "
              f"({100 * s / stot:.1f} %); reasons: {top_reasons(why, 7)}")
    if a.skips:
        print_skips(ins, a.skips, where)


def skipped_stretches(counts):
    """(first index, length) of each run of never-executed instructions with executed ones on
    both sides: code inlined among the run path and jumped over."""
    out, i, n = [], 0, len(counts)
    while i < n:
        if counts[i] == 0 and i > 0 and counts[i - 1] > 0:
            j = i
            while j < n and counts[j] == 0:
                j += 1
            if j < n:
                out.append((i, j - i))
            i = j
        else:
            i += 1
    return out


def print_skips(ins, k, where=None):
    sk = skipped_stretches([x[1] for x in ins])
    longer = sum(1 for _, n in sk if n * 16 > 128)
    print(f"\nskipped stretches on the run path: {len(sk)} ({longer} longer than a 128-byte line), "
          f"{sum(n for _, n in sk)} instructions jumped over")
    extra = " the jump's line | the stretch's lines |" if where else ""
    print("\n| first index | instructions | bytes | the instruction before (ran) |" + extra)
    print("| --- | --- | --- | --- |" + (" --- | --- |" if where else ""))
    for i, n in sorted(sk, key=lambda x: -x[1])[:k]:
        row = f"| {i} | {n} | {16 * n} | `{ins[i - 1][0][:60]}` |"
        if where:
            lines = sorted({where.get(j, "?") for j in range(i, i + n)})
            shown = ", ".join(lines[:6]) + (f" (+{len(lines) - 6})" if len(lines) > 6 else "")
            row += f" {where.get(i - 1, '?')} | {shown} |"
        print(row)


if __name__ == "__main__":
    main()
