#!/usr/bin/env python3
"""span_sim.py: the index arithmetic of k_dmv_span (src/cuda/decode_mv_span.cu: span_work,
span_chunk, the ring's request order, the block's merge), simulated for the 30B's shapes and the
tests' with 1, 2 and 4 row groups (session 22, no GPU): every unit of a matrix is computed exactly
once, by the block that owns its row block; each chunk is 1 or 2 contiguous units at the pair's
spans; the merge reads each row's sums from the warps and local rows that summed it.
Session 24: even=True (GLIM_CUDA_SPAN_EVEN) runs the fewest blocks with the same largest share
(session 23's pairs of blocks, GLIM_CUDA_SPAN_PAIR, were removed). Session 25: the split tail
(GLIM_CUDA_TAIL_SPLIT) and its piece rows were removed from the kernel, and from here.
Mirrors the C; run: python3 bench/wip/span_sim.py"""
import sys


def muldiv(a, b, c):
    return a * b // c


def span_groups(nspan, want, W):
    if want > 0:
        return min(want, W) if want < nspan else nspan
    if nspan <= W:
        return nspan
    most = (nspan + W - 1) // W
    for w in range(W - W // 4, W):
        if (nspan + w - 1) // w == most:
            return w
    return W


def span_work(R, ns, no, o, warp, NW, H, front):
    G = NW // H
    sg = warp // H
    w = dict(r0=0, nrb=0, H=H, h=warp % H, nw=0)
    w['sA'] = ns * sg // G if warp < NW else 0
    w['sB'] = ns * (sg + 1) // G if warp < NW else 0
    q, e = R // no, R % no
    w['r0'] = o * q + min(o, e) if front else muldiv(R, o, no)
    r1 = w['r0'] + q + (1 if o < e else 0) if front else muldiv(R, o + 1, no)
    w['nrb'] = r1 - w['r0']
    w['nw'] = (w['nrb'] - w['h'] + H - 1) // H if w['h'] < w['nrb'] else 0
    return w


def span_chunk(w, p, item):
    """(row block, first span, units, the warp's local row of its sums) for item < w['nw']"""
    s = w['sA'] + 2 * p
    return (w['r0'] + w['h'] + item * w['H'], s, min(s + 2, w['sB']) - s, item)


def check(name, R, ns, sms, front=1, want=0, H=1, even=False):
    no = min(sms, R)
    if even:  # dmv_span_plan: the same largest share on the fewest blocks
        share = (R + no - 1) // no
        no = (R + share - 1) // share
    NW = H * span_groups(ns, want, 16 // H)
    G = NW // H
    seen = {}
    for o in range(no):
        contrib = {}  # global row -> set of (warp, local row)
        for warp in range(16):
            w = span_work(R, ns, no, o, warp, NW, H, front)
            npair = (w['sB'] - w['sA'] + 1) // 2
            nwr = w['nw']
            order = []
            for p in range(npair):
                s = w['sA'] + 2 * p
                for item in range(nwr):
                    c = span_chunk(w, p, item)
                    rb, sf, n, loc = c
                    assert n in (1, 2) and s <= sf and sf + n <= min(s + 2, w['sB']), (name, c)
                    order.append(c)
                    contrib.setdefault(rb, set()).add((warp, loc))
                    for u in range(n):
                        key = (rb, sf + u)
                        assert key not in seen, (name, key, seen.get(key), (o, warp))
                        seen[key] = (o, warp)
            # the ring's requests (the kernel's request lambda): the same chunks in the same order
            req, rp, ri = [], 0, 0
            while rp < npair and nwr > 0:
                req.append(span_chunk(w, rp, ri))
                ri += 1
                if ri == nwr:
                    ri, rp = 0, rp + 1
            assert req == order, name
        # the merge's reading: row r from warps sg H + r % H at local r / H: every warp that
        # computed a unit of the row must be among them at that local row
        w0 = span_work(R, ns, no, o, 0, NW, H, front)
        reads = {w0['r0'] + r: {(sg * H + r % H, r // H) for sg in range(G)} for r in range(w0['nrb'])}
        for rb, ws in contrib.items():
            assert rb in reads and ws <= reads[rb], (name, o, rb, ws, reads.get(rb))
    missing = [(rb, s) for rb in range(R) for s in range(ns) if (rb, s) not in seen]
    assert not missing, (name, missing[:5])
    print(f"{name}: R {R} x {ns} spans on {no} blocks, {G} span groups x {H} row groups: every unit once, "
          "merged from where it was summed")
    return True


if __name__ == "__main__":
    for sms in (132, 114):
        for H in (1, 2, 4):
            check(f"30B qkvg ({sms} SMs)", 544, 52, sms, H=H)
            check(f"30B o_proj ({sms} SMs)", 416, 32, sms, H=H)
            check(f"30B gate/up ({sms} SMs)", 2496, 52, sms, H=H)
            check(f"30B down ({sms} SMs)", 416, 156, sms, H=H)
            check(f"test 2688-wide model o_proj ({sms} SMs)", 168, 12, sms, H=H)
            check(f"test 2688-wide model down ({sms} SMs)", 168, 11, sms, H=H)
            for nm, R, ns in (("qkvg", 544, 52), ("o_proj", 416, 32), ("gate/up", 2496, 52), ("down", 416, 156)):
                check(f"30B {nm} even ({sms} SMs)", R, ns, sms, H=H, even=True)
    for R, ns in ((3, 2), (3, 1), (63, 32), (33, 52), (416, 156), (1875, 52), (5, 100), (2, 3)):
        for want in (0, 7):
            for H in (1, 2, 4):
                check(f"kernel test {R}x{ns} groups {want or 'auto'}", R, ns, 132, want=want, H=H)
                check(f"kernel test {R}x{ns} groups {want or 'auto'}, no front", R, ns, 132, front=0, want=want, H=H)
                check(f"kernel test {R}x{ns} groups {want or 'auto'} even", R, ns, 132, want=want, H=H, even=True)
    sys.exit(0)
