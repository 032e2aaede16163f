#!/usr/bin/env python3
"""span_sim.py: the index arithmetic of k_dmv_span (src/cuda/decode_mv_span.cu: span_work,
span_chunk, the ring's request order, the block's merge) and of its split tail, simulated for
the 30B's shapes and the tests' with 1, 2 and 4 row groups (session 22, no GPU): every unit of a
matrix is computed exactly once, by the block that owns its row block (or, in the leftover
region, by the owner gcu_dmv_tail_plan gives it); each chunk is 1 or 2 contiguous units at the
pair's spans; the merge reads each row's sums from the warps and local rows that summed it;
every slot of the split tail that a consumer adds (tma_tail_sum: owners first..last of each
leftover row block) is written once.
Session 24: even=True (GLIM_CUDA_SPAN_EVEN) runs the fewest blocks with the same largest share
(session 23's pairs of blocks, GLIM_CUDA_SPAN_PAIR, were removed).
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


def span_work(R, ns, no, o, warp, NW, H, front, tail):
    G = NW // H
    sg = warp // H
    w = dict(r0=0, nrb=0, px=[0, 0], pa=[0, 0], pb=[0, 0], H=H, h=warp % H, nw=0, pbase=0)
    w['sA'] = ns * sg // G if warp < NW else 0
    w['sB'] = ns * (sg + 1) // G if warp < NW else 0
    q, e = R // no, R % no
    if tail:
        U = e * ns
        lo0, lo1 = muldiv(U, o, no), muldiv(U, o + 1, no)
        w['r0'], w['nrb'] = o * q, q
        x0 = lo0 // ns
        w['px'] = [q * no + x0, q * no + x0 + 1]
        w['pa'] = [lo0 - x0 * ns, 0]
        w['pb'] = [min(ns, lo1 - x0 * ns), lo1 - (x0 + 1) * ns]
    else:
        w['r0'] = o * q + min(o, e) if front else muldiv(R, o, no)
        r1 = w['r0'] + q + (1 if o < e else 0) if front else muldiv(R, o + 1, no)
        w['nrb'] = r1 - w['r0']
    w['nw'] = (w['nrb'] - w['h'] + H - 1) // H if w['h'] < w['nrb'] else 0
    w['pbase'] = (w['nrb'] + H - 1) // H
    return w


def span_chunk(w, p, item):
    """(row block, first span, units, the warp's local row of its sums) or None"""
    s = w['sA'] + 2 * p
    s2 = min(s + 2, w['sB'])
    if item < w['nw']:
        return (w['r0'] + w['h'] + item * w['H'], s, s2 - s, item)
    k = 1 if item > w['nw'] else 0
    lo, hi = max(s, w['pa'][k]), min(s2, w['pb'][k])
    owner_group = (1 % w['H']) if k else 0
    return (w['px'][k], lo, hi - lo, w['pbase'] + k) if lo < hi and owner_group == w['h'] else None


def owner(x, U, no):  # mv_owner
    return ((x + 1) * no - 1) // U


def check(name, R, ns, sms, front=1, tail=False, tails_compiled=True, want=0, H=1, even=False):
    no = min(sms, R)
    if even and not tail:  # dmv_span_plan: the same largest share on the fewest blocks
        share = (R + no - 1) // no
        no = (R + share - 1) // share
    NW = H * span_groups(ns, want, 16 // H)
    G = NW // H
    q, e = R // no, R % no
    if tail and (e == 0 or e * ns < no):
        print(f"{name}: no tail (e={e})")
        return True
    seen = {}
    slots = set()
    for o in range(no):
      contrib = {}  # global row -> set of (warp, local row)
      if True:
        for warp in range(16):
            w = span_work(R, ns, no, o, warp, NW, H, front, tail)
            npair = (w['sB'] - w['sA'] + 1) // 2
            nitem = w['nw'] + (2 if tails_compiled else 0)
            order = []
            for p in range(npair):
                s = w['sA'] + 2 * p
                for item in range(nitem):
                    c = span_chunk(w, p, item)
                    if c is None:
                        continue
                    rb, sf, n, loc = c
                    assert n in (1, 2) and s <= sf and sf + n <= min(s + 2, w['sB']), (name, c)
                    order.append(c)
                    contrib.setdefault(rb, set()).add((warp, loc))
                    for u in range(n):
                        key = (rb, sf + u)
                        assert key not in seen, (name, key, seen.get(key), (o, warp))
                        seen[key] = (o, warp)
                        if tail and rb >= q * no:  # leftover: the owner must be tail_plan's
                            x = (rb - q * no) * ns + sf + u
                            assert owner(x, e * ns, no) == o, (name, key, o)
                            slots.add((rb, o))
            req, rp, ri = [], 0, 0
            while rp < npair:
                c = span_chunk(w, rp, ri)
                ri += 1
                if ri >= nitem:
                    ri, rp = 0, rp + 1
                if c is not None:
                    req.append(c)
            assert req == order, name
        # the merge's reading: row r (whole) from warps sg H + r % H at local r / H; piece k from
        # warps sg H + k % H at local pbase + k: every warp that computed a unit of the row must
        # be among them at that local row
      w0 = span_work(R, ns, no, o, 0, NW, H, front, tail)
      reads = {}
      for r in range(w0['nrb']):
          reads[w0['r0'] + r] = {(sg * H + r % H, r // H) for sg in range(G)}
      for k in range(2 if tails_compiled else 0):
          if w0['pa'][k] < w0['pb'][k]:
              hg = (1 % H) if k else 0
              reads[w0['px'][k]] = {(sg * H + hg, w0['pbase'] + k) for sg in range(G)}
      for rb, ws in contrib.items():
          assert rb in reads and ws <= reads[rb], (name, o, rb, ws, reads.get(rb))
    missing = [(rb, s) for rb in range(R) for s in range(ns) if (rb, s) not in seen]
    assert not missing, (name, missing[:5])
    if tail:  # every slot a consumer adds was written: owners first..last of each leftover row block
        U = e * ns
        for r in range(e):
            of, ol = owner(r * ns, U, no), owner(r * ns + ns - 1, U, no)
            for o in range(of, ol + 1):
                assert (q * no + r, o) in slots, (name, r, o)
    print(f"{name}: R {R} x {ns} spans on {no} blocks, {G} span groups x {H} row groups: every unit once, "
          "merged from where it was summed" + (f", tail of {e} row blocks: every slot written" if tail else ""))
    return True


if __name__ == "__main__":
    for sms in (132, 114):
        for H in (1, 2, 4):
            check(f"30B qkvg ({sms} SMs)", 544, 52, sms, H=H)
            check(f"30B o_proj ({sms} SMs)", 416, 32, sms, H=H)
            check(f"30B gate/up ({sms} SMs)", 2496, 52, sms, tails_compiled=False, H=H)
            check(f"30B down ({sms} SMs)", 416, 156, sms, H=H)
            check(f"30B o_proj + tail ({sms} SMs)", 416, 32, sms, tail=True, H=H)
            check(f"30B down + tail ({sms} SMs)", 416, 156, sms, tail=True, H=H)
            check(f"test tail model o_proj ({sms} SMs)", 168, 12, sms, tail=True, H=H)
            check(f"test tail model down ({sms} SMs)", 168, 11, sms, tail=True, H=H)
            for nm, R, ns in (("qkvg", 544, 52), ("o_proj", 416, 32), ("gate/up", 2496, 52), ("down", 416, 156)):
                check(f"30B {nm} even ({sms} SMs)", R, ns, sms, H=H, even=True, tails_compiled=nm != "gate/up")
    for R, ns in ((3, 2), (3, 1), (63, 32), (33, 52), (416, 156), (1875, 52), (5, 100), (2, 3)):
        for want in (0, 7):
            for H in (1, 2, 4):
                check(f"kernel test {R}x{ns} groups {want or 'auto'}", R, ns, 132, want=want, H=H)
                check(f"kernel test {R}x{ns} groups {want or 'auto'}, no front", R, ns, 132, front=0, want=want, H=H)
                check(f"kernel test {R}x{ns} groups {want or 'auto'} even", R, ns, 132, want=want, H=H, even=True)
    sys.exit(0)
