/* decode_mv_tma.cuh: the device pieces of the decode matvec whose weights stream into a
 * shared-memory ring by bulk copies, shared by its one-product kernel (decode_mv_tma.cu,
 * k_dmv_tma) and the chain of a layer's products (decode_chain.cu, k_dmv_chain): the unit's
 * load from the ring, the shared-memory layout, the NORM/RESID prologue from registers, the
 * warps' unit ranges, the loop over a warp's units and the block's merge of split row blocks.
 * Device code, included by those two files only. */
#ifndef GLIM_CUDA_DECODE_MV_TMA_CUH
#define GLIM_CUDA_DECODE_MV_TMA_CUH

#include "cuda/decode_mv.cuh"

#define TMA_SLOTS 16        /* units per warp ring at most */
#define TMA_JM 16           /* NORM/RESID: elements per thread in registers (K <= 8192) */
#define TMA_SMEM_MAX (224 * 1024)

/* One unit from the ring (shared memory) into registers: k_dmv's mv_load_p, from shared. HALF
 * (the integer path, dmv_unit_i8_f's HALF): of the scales only the lane's groups
 * (dmv_i8_lane_group: the pieces from PPS / 2 on the lanes t = 2, 3 where PPS >= 2), into
 * sb[0 ..) in mv_scales_of's order, so that no select picks them per unit (2 a unit, session 48). */
template <int KIND, int PPS, bool SBF32, bool HALF = false>
__device__ __forceinline__ void tma_unit_load(MvSlot<KIND, PPS, SBF32> &s, const uint4 *up, int lane) {
    s.a0 = up[gcu_unit_u4(lane, 0)];
    s.a1 = up[gcu_unit_u4(lane, 1)];
    if (KIND == GCU_KIND_Q) {
        mv_q_rows(s.a0, s.a1);
        constexpr int SBW = MvSlot<KIND, PPS, SBF32>::SBW, NW = HALF && PPS >= 2 ? SBW / 2 : SBW;
        const int g = lane >> 2, h = HALF && PPS >= 2 && (lane & 3) >= 2;
        const uint32_t *sp = (const uint32_t *)(up + 64) + g * SBW + h * NW;
        if (NW == 2) {
            const uint2 v = *(const uint2 *)sp;
            s.sb[0] = v.x;
            s.sb[1] = v.y;
        } else {
#pragma unroll
            for (int k = 0; k < NW / 4; k++) {
                const uint4 v = ((const uint4 *)sp)[k];
                s.sb[4 * k] = v.x;
                s.sb[4 * k + 1] = v.y;
                s.sb[4 * k + 2] = v.z;
                s.sb[4 * k + 3] = v.w;
            }
        }
    }
}

/* Shared memory of k_dmv_tma: the staged hi/lo columns, group and item sums, the fp32 row
 * (NORM/RESID only), then the rings (tring_off, 128-byte aligned). */
__device__ __forceinline__ DmvSmem tma_smem_at(const DmvArgs &d, void *base) {
    DmvSmem m = dmv_smem_at(d, base);
    m.hrow = m.wadd = m.wout = NULL; /* k_dmv's other rows: here in registers */
    return m;
}

/* NORM/RESID in registers: thread tid holds elements tid + DMV_THREADS j of the row for j <
 * tma_elems(K). The element loops test j against this count (a compare with a constant) and
 * address from one pointer per row (a constant offset): with a bounds test and an address per
 * element, the gains' code alone, its loads predicated off or not, took a late-started block
 * ~0.65 us before its PDL wait (RESULTS v39, calls 12 and 14). */
__device__ __forceinline__ int tma_elems(int K) {
    const unsigned tid = threadIdx.x;
    return (unsigned)K > tid ? (int)(((unsigned)K - tid + DMV_THREADS - 1) / DMV_THREADS) : 0;
}

/* NORM/RESID from registers into m.row: the arithmetic of dmv_residual + dmv_prepare_row, in
 * their order. s, h: the inputs (read after the wait); wa, wo: the gains (before it). LN: a.late_norm
 * where the caller knows it (0 or 1: the other path is not compiled; the span kernel's SPEC 3 and
 * 4 know it is 1 here), -1 where it does not. */
template <int LN = -1>
static __device__ __forceinline__ void tma_prepare_row(const DmvArgs &a, const DmvSmem &m, DmvSum *scratch,
                                                       float *s, const float *h, const float *wa,
                                                       const float *wo) {
    const int K = a.K, tid = threadIdx.x, nj = tma_elems(K);
    DmvSum ss = 0;
#pragma unroll
    for (int j = 0; j < TMA_JM; j++)
        if (j < nj) ss += s[j] * s[j];
    if (a.pro == GCU_PRO_RESID) {
        const float inv = dmv_norm_inv(dmv_block_sum(ss, scratch, 0), K, a.eps_add);
        float *hw = blockIdx.x == 0 && a.h_out ? a.h_out + tid : NULL; /* block 0 writes the row */
        ss = 0;
#pragma unroll
        for (int j = 0; j < TMA_JM; j++) {
            if (j >= nj) break;
            const float y = dmv_resid_value(s[j], inv, h[j], wa[j]);
            s[j] = y;
            if (hw) hw[j * DMV_THREADS] = y;
            ss += y * y;
        }
    }
    /* GLIM_CUDA_LATE_NORM: the row staged unscaled, y (1 + w); each warp's part of the sum of
     * squares goes to scratch's second half, published by the barrier below, and tma_units
     * applies the scale to the row sums: the reduction's barrier and the division and square
     * root leave the critical path */
    float inv = 1.0f;
    if (LN >= 0 ? LN == 1 : a.late_norm) dmv_block_put(ss, scratch, 1);
    else inv = dmv_norm_inv(dmv_block_sum(ss, scratch, 1), K, a.eps_out);
    float *row = m.row + tid;
#pragma unroll
    for (int j = 0; j < TMA_JM; j++) {
        if (j >= nj) break;
        row[j * DMV_THREADS] = dmv_norm_value(s[j], inv, wo[j], a.norm_out == GCU_NORM_CENTERED);
    }
    __syncthreads();
}

/* Block-owned row blocks (d.bblocks): the warps of the owner (a block, or a cluster of blocks
 * with d.cluster_rows: nw warps, rank-major) that own units of row block rb. The owner's units
 * are [bu0, bu0 + bun), cut between its warps as stream-K cuts a grid. */
__device__ __forceinline__ long long tma_block_owners(const MvArgs &a, int rb, long long bu0, long long bun, int nw,
                                                      int *wf, int *wl) {
    const long long f = (long long)rb * a.nspan - bu0; /* the owner's units of rb: its first */
    *wf = mv_owner(f, bun, nw);
    *wl = mv_owner(f + a.nspan - 1, bun, nw);
    return f;
}

/* The owner's split row blocks, once every warp's loop is done: each warp leaves its two
 * partials (first and last segment) in its own 64 float2 of `area` (k_dmv_tma: its ring, which
 * no copy fills any more; the chain: a place of their own, since the ring already holds the next
 * step's weights), and row block i of the owner is summed by its warp i % nw in warp order from
 * zero (the order of mv_merge), then written by the epilogue. own > 1: the owner is the cluster;
 * partials of the peers' warps are read from their shared memory between two cluster barriers
 * (the second keeps every block's memory alive until the peers are done with it). wring: the
 * warps' stride in `area`, in uint4. */
static __device__ __noinline__ void tma_block_merge(const MvArgs &a, const uint4 *ring0, int wring, long long bu0,
                                                    long long bun, float2 keep0, float2 keep1, int lane, int warp,
                                                    int own) {
    float2 *mine = (float2 *)(ring0 + (size_t)warp * wring);
    mine[lane] = keep0;
    mine[32 + lane] = keep1;
    if (own > 1) {
        gcu_cluster_arrive();
        gcu_cluster_wait();
    } else {
        __syncthreads();
    }
    const int nw = own * DMV_WARPS, ow = (int)(blockIdx.x % own) * DMV_WARPS + warp;
    /* 32-bit quotients (unit counts fit an int): a 64-bit division is a call of ~100
     * instructions, here in every block's tail */
    const int r0 = (int)bu0 / a.nspan, nr = (int)bun / a.nspan;
    for (int i = ow; i < nr; i += nw) {
        const int rb = r0 + i;
        int wf, wl;
        const long long f = tma_block_owners(a, rb, bu0, bun, nw, &wf, &wl);
        if (wf == wl) continue; /* written by its warp */
        /* wf's range starts before rb unless at its first unit: rb is then wf's last segment */
        const int slot_f = mv_muldiv(bun, wf, nw) < f ? 1 : 0;
        float sg[1] = {0.0f}, sh[1] = {0.0f};
        for (int w = wf; w <= wl; w++) {
            const int at = (w == wf ? slot_f : 0) * 32 + lane;
            const float2 *p = (const float2 *)(ring0 + (size_t)(w % DMV_WARPS) * wring) + at;
            const float2 v = own > 1 ? gcu_ld_cluster_f2(gcu_cluster_map(gcu_smem_addr(p), (unsigned)(w / DMV_WARPS)))
                                     : *p;
            sg[0] += v.x;
            sh[0] += v.y;
        }
        mv_epilogue<1>(a, rb, lane, sg, sh);
    }
    if (own > 1) {
        gcu_cluster_arrive();
        gcu_cluster_wait();
    }
}

/* This warp's units [u0, u1) of a product. d.bblocks > 0: the owner's units [bu0, bu0 + bun)
 * (whole row blocks, R / no each or one more: spread evenly, or with d.front the first R % no
 * owners take one more; the owner is this block, or with own > 1 its cluster, whose nw warps,
 * rank-major, cut them; ow is the warp's index in its owner); else the grid's units cut
 * between the a.W warps (stream-K). */
__device__ __forceinline__ void tma_warp_units(const DmvArgs &d, int own, int ow, int nw, int wg, int *u0, int *u1,
                                               long long *bu0, long long *bun) {
    const MvArgs &a = d.mv;
    *u0 = *u1 = 0;
    *bu0 = *bun = 0;
    if (d.bblocks > 0) {
        const int o = (int)blockIdx.x / own, no = (d.bblocks + own - 1) / own;
        if (o < no) {
            const int R = (int)a.nunits / a.nspan, q = R / no, e = R % no; /* 32 bits, as below */
            const long long r0 = d.front ? o * q + min(o, e) : mv_muldiv(R, o, no);
            const long long r1 = d.front ? r0 + q + (o < e) : mv_muldiv(R, o + 1, no);
            *bu0 = r0 * a.nspan;
            *bun = (r1 - r0) * a.nspan;
            /* d.diag_ring 3 (a timing diagnostic): an owner above the mean share stops there */
            if (d.diag_ring == 3) *bun = min(*bun, (a.nunits + no - 1) / no);
            *u0 = (int)(*bu0 + mv_muldiv(*bun, ow, nw));
            *u1 = (int)(*bu0 + mv_muldiv(*bun, ow + 1, nw));
        }
    } else if (wg < a.W) {
        *u0 = (int)mv_muldiv(a.nunits, wg, a.W);
        *u1 = (int)mv_muldiv(a.nunits, wg + 1, a.W);
    }
}

/* NORM/RESID: the gains (weights: before the wait) into registers, each thread its elements
 * tid + 512 j. */
__device__ __forceinline__ void tma_load_gains(const DmvArgs &d, float *wa, float *wo) {
    /* d.diag_ring 8 (timing, wrong logits): no gains read, what their first read costs */
    const int nj = d.diag_ring != 8 ? tma_elems(d.K) : 0;
    const float *pa = d.pro == GCU_PRO_RESID ? d.w_add + threadIdx.x : NULL;
    const float *po = d.w_out ? d.w_out + threadIdx.x : NULL;
#pragma unroll
    for (int j = 0; j < TMA_JM; j++) {
        wa[j] = pa && j < nj ? __ldg(pa + j * DMV_THREADS) : 0.0f;
        wo[j] = po && j < nj ? __ldg(po + j * DMV_THREADS) : 1.0f;
    }
}
/* NORM/RESID after the wait: the rows the previous kernel (or step) wrote, through L2, then the
 * row the product takes into m.row (tma_prepare_row, LN as there). */
template <int LN = -1>
__device__ __forceinline__ void tma_rows(const DmvArgs &d, const DmvSmem &m, DmvSum *scratch, const float *wa,
                                         const float *wo) {
    float s[TMA_JM], h[TMA_JM];
    const int nj = tma_elems(d.K);
    /* d.diag_ring 6, 7 (timing diagnostics, wrong logits): the residual's read left out (6),
     * both reads (7): what the prologue's L2 reads cost, every block reading the same rows */
    const float *ps = d.diag_ring != 7 ? d.src + threadIdx.x : NULL;
    const float *ph = d.pro == GCU_PRO_RESID && (d.diag_ring < 6 || d.diag_ring == 9) ? d.h_in + threadIdx.x : NULL;
#pragma unroll
    for (int j = 0; j < TMA_JM; j++) {
        s[j] = ps && j < nj ? __ldcg(ps + j * DMV_THREADS) : 0.0f;
        h[j] = ph && j < nj ? __ldcg(ph + j * DMV_THREADS) : 0.0f;
    }
    tma_prepare_row<LN>(d, m, scratch, s, h, wa, wo);
}

/* A warp's ring in shared memory: S slots of C units (one bulk copy each) at base, slot s
 * completing on bar[s]; the consumer's place: unit k of the chunk in `slot`, whose mbarrier
 * phase of parity `phase` it waits for. The consumer's slots run on across products (the
 * chain), so the chunk of a slot is the warp's chunk count modulo S. */
struct TmaRing {
    uint4 *base;
    uint64_t *bar;
    int S, C;
    int slot, k;
    unsigned phase;
};

/* The warp's n units from u0 (one product, its input staged in m): each unit from the ring
 * into registers and through the tensor cores; at the end of each chunk refill(slot) is called
 * by every lane once the chunk's bytes are used (the slot may be requested again). Row blocks
 * end in the epilogue (d.bblocks: whole ones written, split ones kept in keep0 / keep1 for
 * tma_block_merge), in the deferred stream-K merge (d.defer_merge) or in mv_finish.
 * LEAN (k_dmv_tma's lean kernels): 1 or 2, block-owned row blocks only (the other row ends
 * compile out); 2 (AHEAD) also loads unit j + 1 into registers before unit j is computed, so
 * that its shared-memory latency overlaps unit j's arithmetic (a warp issues in order:
 * otherwise every unit's loads stall it); across a chunk's end only if every lane sees the next
 * chunk landed (gcu_mbar_test), else after unit j as without. A chunk's slot is refilled once
 * its last unit is computed, as without. The same arithmetic in the same order: the same
 * bits. */
template <int KIND, int PPS, bool SBF32, bool I8, int LEAN = 0, typename Refill>
__device__ __forceinline__ void tma_units(const DmvArgs &d, const DmvSmem &m, TmaRing &r, int u0, int n,
                                          long long bu0, long long bun, int nw, int wg, float2 &keep0,
                                          float2 &keep1, const DmvSum *late, Refill refill) {
    constexpr bool AHEAD = LEAN == 2;
    const MvArgs &a = d.mv;
    constexpr int SPAN = KIND == GCU_KIND_Q ? 128 : 32;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, uw = a.unit_u4, C = r.C;
    /* lanes of n-column 0 hold hi, column 1 lo; the other columns are zero */
    const bool bvalid = g < 2, xvalid = t == 0;
    const __nv_bfloat16 *b0 = m.sx + (size_t)(bvalid ? g : 0) * a.cs + t * 8;
    int rb = u0 / a.nspan, sp = u0 - rb * a.nspan;
    const __nv_bfloat16 *bp = b0 + sp * SPAN;
    const float *xp = m.xsum + sp * PPS;
    /* the integer path: the lane's digits (decode_mv_i8.cuh) */
    const uint4 *d0 = dmv_i8_lane_digits(m.sx, lane);
    const uint4 *dp = d0 + sp * DMV_I8_SPAN_U4;
    const float2 *e0 = (const float2 *)m.isum, *ep = e0 + sp * PPS;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float osc = 0.0f; /* late: the consumer norm's scale, worked out at the first row end */
    bool first = true;
    int pend = -1; /* GLIM_CUDA_DEFER_MERGE: the split row block whose arrival is deferred */
    keep0 = keep1 = make_float2(0.0f, 0.0f);
    const uint4 *up = r.base + ((size_t)r.slot * C + r.k) * uw; /* the unit's place in the ring */
    /* past unit i: at a chunk's end the ring moves to the next slot, and the slot done is
     * returned (else -1) for refill() once its units are computed (then its bytes are used, not
     * merely loaded: the copy engine may overwrite it) */
    auto advance = [&](int i) -> int {
        if (++r.k < C && i + 1 < n) return -1;
        const int done = r.slot;
        r.k = 0;
        if (++r.slot == r.S) {
            r.slot = 0;
            r.phase ^= 1u;
            up = r.base;
        }
        return done;
    };
    MvSlot<KIND, PPS, SBF32> u; /* unit j (AHEAD: loaded while unit j - 1 was computed, if have) */
    bool have = false;
    int done_u = -1; /* AHEAD: the slot unit j completed when it was loaded, to refill after it */
    for (int j = 0; j < n; j++) {
        if (!have) {
            if (r.k == 0) gcu_mbar_wait(&r.bar[r.slot], r.phase);
            tma_unit_load(u, up, lane);
            up += uw;
            if constexpr (AHEAD) done_u = advance(j);
        }
        if constexpr (AHEAD) {
            MvSlot<KIND, PPS, SBF32> nx;
            int done_nx = -1;
            have = false;
            if (j + 1 < n) {
                const bool landed = r.k == 0 && __all_sync(0xffffffffu, gcu_mbar_test(&r.bar[r.slot], r.phase));
                if (r.k != 0 || landed) {
                    tma_unit_load(nx, up, lane);
                    up += uw;
                    done_nx = advance(j + 1);
                    have = true;
                }
            }
            if constexpr (I8) dmv_unit_i8<PPS, SBF32>(u, dp, ep, acc);
            else mv_unit<KIND, PPS, SBF32, true>(u, bp, bvalid, xp, xvalid, a.qoff, acc);
            if (done_u >= 0) { /* the last unit of its chunk is computed: refill the slot */
                __syncwarp();
                refill(done_u);
            }
            if (have) u = nx, done_u = done_nx;
        } else {
            if constexpr (I8) dmv_unit_i8<PPS, SBF32>(u, dp, ep, acc);
            else mv_unit<KIND, PPS, SBF32, true>(u, bp, bvalid, xp, xvalid, a.qoff, acc);
            if (++r.k == C || j + 1 == n) {
                /* the chunk's bytes are in every lane's registers and used: refill its slot */
                __syncwarp();
                refill(r.slot);
                r.k = 0;
                if (++r.slot == r.S) {
                    r.slot = 0;
                    r.phase ^= 1u;
                    up = r.base;
                }
            }
        }
        if constexpr (I8) {
            dp += DMV_I8_SPAN_U4;
            ep += PPS;
        } else {
            bp += SPAN;
            xp += PPS;
        }
        if (++sp == a.nspan || j + 1 == n) {
            float vg[1], vh[1];
            dmv_row_sums<KIND, I8>(acc, vg, vh);
            if (late) { /* GLIM_CUDA_LATE_NORM: the scale tma_prepare_row left unapplied */
                if (osc == 0.0f) osc = dmv_norm_inv(dmv_block_gather(late, 1), d.K, d.eps_out);
                vg[0] *= osc;
                vh[0] *= osc;
            }
            if (LEAN || d.bblocks > 0) {
                /* whole: written now; split: kept for the block's merge (first / last segment) */
                int wf, wl;
                tma_block_owners(a, rb, bu0, bun, nw, &wf, &wl);
                if (wf == wl) mv_epilogue<1>(a, rb, lane, vg, vh);
                else if (first) keep0 = make_float2(vg[0], vh[0]);
                else keep1 = make_float2(vg[0], vh[0]);
            } else if (d.defer_merge) {
                /* a split row block's arrival waits for the end of the range (the first segment
                 * is the only split one before it), and both go in one round trip */
                const bool split = !mv_put<1>(a, rb, first, wg, lane, vg, vh);
                if (j + 1 == n) {
                    if (pend >= 0 || split) mv_arrive<1>(a, pend >= 0 ? pend : rb, pend >= 0 && split ? rb : -1, lane);
                } else if (split) {
                    if (pend >= 0) mv_arrive<1>(a, pend, -1, lane);
                    pend = rb;
                }
            } else {
                mv_finish<1>(a, rb, first, wg, lane, vg, vh);
            }
            first = false;
            rb++;
            sp = 0;
            bp = b0;
            xp = m.xsum;
            dp = d0;
            ep = e0;
        }
    }
}

#endif
