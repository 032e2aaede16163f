#!/usr/bin/env python3
"""Simulates k_dmv_span's ring walk with two row blocks a chunk (RPC 2, GLIM_CUDA_SPAN_TWO;
written as bench/wip/span_two_rows.patch in session 27, landed in session 28): lane 0's requests
(row blocks and units copied into each slot) against the loop's reads (which rows' units it
computes from each slot), for every (pairs, rows, rpc, slots, last pair single) up to small sizes. A mismatch means
the kernel would compute a unit from the wrong bytes."""
import itertools

def run(npair, nwr, rpc, S, single_last):
    n_of = lambda p: 1 if (single_last and p == npair - 1) else 2
    # request state
    st = {"pair": 0, "item": 0}
    slots = [None] * S  # contents: list of (pair, row, unit)
    def request(slot):
        if st["pair"] >= npair or nwr == 0:
            return False
        p, it = st["pair"], st["item"]
        n = n_of(p)
        second = rpc == 2 and it + 1 < nwr
        content = [(p, it, u) for u in range(n)]
        if second:
            content += [(p, it + 1, u) for u in range(n)]
        st["item"] += rpc
        if st["item"] >= nwr:
            st["item"] = 0
            st["pair"] += 1
        slots[slot] = content
        return True
    for j in range(S):
        if not request(j):
            break
    slot = 0
    consumed = []
    for p in range(npair):
        n = n_of(p)
        for r in range(0, nwr, rpc):
            second = rpc == 2 and r + 1 < nwr
            c = slots[slot]
            want = [(p, r, u) for u in range(n)] + ([(p, r + 1, u) for u in range(n)] if second else [])
            # the loop reads row A at offset 0 and row B at offset n units
            got = c[:n] + (c[n:2 * n] if second else [])
            if got != want:
                return f"pair {p} row {r}: slot holds {c}, loop reads {want}"
            consumed += want
            slots[slot] = None
            request(slot)
            slot = (slot + 1) % S
    expect = [(p, r, u) for p in range(npair) for r in range(nwr) for u in range(n_of(p))]
    if consumed != expect:
        return "not every unit consumed once in order"
    if st["pair"] < npair and nwr > 0:
        return "requests left over"
    return None

bad = 0
cases = 0
for npair, nwr, rpc, S, single in itertools.product(range(0, 6), range(0, 8), (1, 2), (2, 3, 5), (False, True)):
    if single and npair == 0:
        continue
    cases += 1
    e = run(npair, nwr, rpc, S, single)
    if e:
        bad += 1
        print("FAIL", npair, nwr, rpc, S, single, e)
print(f"{cases} cases, {bad} failures")
