#!/usr/bin/env python3
# paired_groups_check.py (session 16): a lane-level model of bench/wip/paired_groups.patch's
# dmv_unit_i8, checked against a plain dot product, for the fragment bookkeeping the patch
# relies on: which lanes supply which digits as B columns (even groups 0-2, odd groups 4-6,
# columns 3 and 7 zero), which IMMAs share an accumulator, which lanes hold which result
# columns (t = 0, 1 the even group's, t = 2, 3 the odd group's), the scale words and (E, sum)
# each lane picks, and the (t0 + t1) + (t2 + t3) row sum. The IMMA is modelled from the PTX
# ISA's fragment layouts of mma.m16n8k32 (.u8 x .s8 -> .s32); the arithmetic is in doubles, so
# the check is of the bookkeeping (relative error ~1e-16), not of fp32 rounding, which the GPU
# tests cover. Plain python3, no packages: python3 bench/wip/paired_groups_check.py
import random, struct
def f32(x): return struct.unpack('f', struct.pack('f', x))[0]

def imma(afr, bfr, cfr):
    # afr[lane] = 4 lists of 4 bytes (a0..a3), bfr[lane] = 2 lists of 4 signed bytes, cfr[lane] = 4 ints
    A = [[0]*32 for _ in range(16)]; B = [[0]*8 for _ in range(32)]
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(4):
            A[g][4*t+i] = afr[lane][0][i]; A[g+8][4*t+i] = afr[lane][1][i]
            A[g][16+4*t+i] = afr[lane][2][i]; A[g+8][16+4*t+i] = afr[lane][3][i]
            B[4*t+i][g] = bfr[lane][0][i]; B[16+4*t+i][g] = bfr[lane][1][i]
    out = []
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        c = list(cfr[lane])
        for j, (r, n) in enumerate([(g, 2*t), (g, 2*t+1), (g+8, 2*t), (g+8, 2*t+1)]):
            c[j] += sum(A[r][k]*B[k][n] for k in range(32))
        out.append(c)
    return out

def run(PPS, SBF32, seed):
    rnd = random.Random(seed)
    gs = 128 // PPS
    W = [[rnd.randrange(16) for _ in range(128)] for _ in range(16)]
    scale = [[f32(rnd.uniform(-1, 1)) for _ in range(PPS)] for _ in range(16)]
    bias = [[f32(rnd.uniform(-1, 1)) for _ in range(PPS)] for _ in range(16)]
    # digits per group: x = E (d0 + d1/128 + d2/16384)
    E = [2.0 ** rnd.randrange(-3, 3) for _ in range(PPS)]
    d = [[[rnd.randrange(-127, 128) if c == 0 else rnd.randrange(-64, 65) for _ in range(128)] for c in range(3)]]
    d = d[0]
    x = [E[k // gs] * (d[0][k] + d[1][k] / 128 + d[2][k] / 16384) for k in range(128)]
    xsum = [sum(x[p*gs:(p+1)*gs]) for p in range(PPS)]
    ref = [sum(scale[r][k // gs] * W[r][k] * x[k] for k in range(128)) + sum(bias[r][p] * xsum[p] for p in range(PPS)) for r in range(16)]
    # staged digit words: word(h, c, t) = chunk 2h bytes (b0: k=4t.., b1: k=16+4t..) then chunk 2h+1
    def chunk_b(c, chunk, t):
        base = 32 * chunk
        return [[d[c][base + 4*t + i] for i in range(4)], [d[c][base + 16 + 4*t + i] for i in range(4)]]
    acc = [[0.0, 0.0] for _ in range(32)]
    lanes = []
    for lane in range(32):
        g, t = lane >> 2, lane & 3; c = g & 3
        lanes.append(dict(c=(c if c < 3 else 0), ve=g < 3, vo=(4 <= g < 7), cw=(2.0**-21 if t & 1 else 2.0**-7),
                          xvalid=(t & 1) == 0, odd=t >= 2))
    Z = [[0]*4, [0]*4]
    # B per chunk per lane
    bch = [[None]*4 for _ in range(32)]
    for lane in range(32):
        L = lanes[lane]; t = lane & 3
        if PPS == 2:
            be = (chunk_b(L['c'], 0, t), chunk_b(L['c'], 1, t)) if L['ve'] else (Z, Z)
            bo = (chunk_b(L['c'], 2, t), chunk_b(L['c'], 3, t)) if L['vo'] else (Z, Z)
            bch[lane] = [be[0], be[1], bo[0], bo[1]]
        else:
            bch[lane] = [chunk_b(L['c'], 0, t) if L['ve'] else Z, chunk_b(L['c'], 1, t) if L['vo'] else Z,
                         chunk_b(L['c'], 2, t) if L['ve'] else Z, chunk_b(L['c'], 3, t) if L['vo'] else Z]
    dd = [[[0]*4 for _ in range(32)] for _ in range(2)]
    for i in range(4):
        afr = []
        for lane in range(32):
            g, t = lane >> 2, lane & 3; base = 32*i
            afr.append([[W[g][base+4*t+j] for j in range(4)], [W[g+8][base+4*t+j] for j in range(4)],
                        [W[g][base+16+4*t+j] for j in range(4)], [W[g+8][base+16+4*t+j] for j in range(4)]])
        which = (i & 1) if PPS == 2 else (i >> 1)
        dd[which] = imma(afr, [bch[l][i] for l in range(32)], dd[which])
    for lane in range(32):
        L = lanes[lane]; g, t = lane >> 2, lane & 3
        for p in range(PPS // 2):
            D = [dd[0][lane][k] + dd[1][lane][k] for k in range(4)] if PPS == 2 else dd[p][lane]
            grp = 2*p + (1 if L['odd'] else 0)
            odd = L['odd']
            # the unit's scale words as tma_unit_load gives them (mv_scales' layout), picked
            # with the patch's index expressions
            if SBF32:
                sb = [0.0] * (4 * PPS)
                for pc in range(PPS):
                    sb[2*pc], sb[2*pc+1] = scale[g][pc], bias[g][pc]
                    sb[2*PPS+2*pc], sb[2*PPS+2*pc+1] = scale[g+8][pc], bias[g+8][pc]
                e_, o_, r_ = 4*p, 4*p + 2, 2*PPS
                sg = sb[o_] if odd else sb[e_]
                bg = sb[o_+1] if odd else sb[e_+1]
                sh = sb[r_+o_] if odd else sb[r_+e_]
                bh = sb[r_+o_+1] if odd else sb[r_+e_+1]
            else:
                sb = [None] * (2 * PPS)  # (scale, bias) pairs: bf16 lo / hi of one word
                for pc in range(PPS):
                    sb[pc], sb[PPS+pc] = (scale[g][pc], bias[g][pc]), (scale[g+8][pc], bias[g+8][pc])
                wgs = sb[2*p+1] if odd else sb[2*p]
                whs = sb[PPS+2*p+1] if odd else sb[PPS+2*p]
                (sg, bg), (sh, bh) = wgs, whs
            assert (sg, bg, sh, bh) == (scale[g][grp], bias[g][grp], scale[g+8][grp], bias[g+8][grp])
            e = (E[grp], xsum[grp])
            ec = e[0] * L['cw']; X = e[1] if L['xvalid'] else 0.0
            acc[lane][0] += sg * ec * (D[0]*128 + D[1]) + bg * X
            acc[lane][1] += sh * ec * (D[2]*128 + D[3]) + bh * X
    err = 0
    for g in range(8):
        l0 = 4*g
        for j, r in ((0, g), (1, g+8)):
            v = (acc[l0][j] + acc[l0+1][j]) + (acc[l0+2][j] + acc[l0+3][j])
            err = max(err, abs(v - ref[r]) / (abs(ref[r]) + 1e-9))
    return err

for PPS in (2, 4):
    for SBF32 in (False, True):
        for seed in range(4):
            e = run(PPS, SBF32, seed)
            print("groups per span %d, fp32 scales %d, seed %d: largest relative error %.2e" % (PPS, SBF32, seed, e))
            assert e < 1e-9, e
print("ok")
