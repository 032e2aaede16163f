#!/usr/bin/env python3
"""sass_count.py FILE.sass NAME [--from PAT --to PAT]: the instructions of the kernel whose
mangled name contains NAME in nvdisasm's output (bench/sass_local.sh), counted by opcode; with
--from/--to only those from the first instruction matching PAT (a substring) to the first match
of the other after it, both included, e.g. a loop from its mbarrier wait to its refill:
  --from TRYWAIT --to UBLKCP
Prints the total, the register moves (MOV, IMAD.MOV), selects and the commonest opcodes."""
import argparse
import collections
import re
import signal
import sys


def kernel(lines, name):
    out, on = [], False
    for line in lines:
        if line.startswith(".text."):
            if on:
                break
            on = name in line
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if on and m:
            out.append(m.group(1))
    return out


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # (piped into head)
    ap = argparse.ArgumentParser()
    ap.add_argument("sass")
    ap.add_argument("name")
    ap.add_argument("--from", dest="frm")
    ap.add_argument("--to")
    a = ap.parse_args()
    ins = kernel(open(a.sass).read().split("\n"), a.name)
    if not ins:
        sys.exit(f"no kernel matching {a.name}")
    if a.frm:
        i = next((k for k, x in enumerate(ins) if a.frm in x), None)
        if i is None:
            sys.exit(f"nothing matches {a.frm}")
        j = next((k for k in range(i + 1, len(ins)) if a.to and a.to in ins[k]), len(ins) - 1)
        ins = ins[i : j + 1]
    ops = collections.Counter()
    for x in ins:
        w = x.split()
        op = w[1] if w[0].startswith("@") else w[0]
        ops[op.split(".")[0]] += 1
    moves = sum(1 for x in ins if re.search(r"\b(IMAD\.MOV|MOV)\b", x))
    print(f"{len(ins)} instructions, {moves} moves, {ops['SEL']} selects")
    print(", ".join(f"{k} {v}" for k, v in ops.most_common(16)))


if __name__ == "__main__":
    main()
