/* decode_mv_tma.cu: the decode matvec with its weights streamed by the copy engine (TMA) into a
 * ring in shared memory (GLIM_CUDA_TMA, default on), instead of into registers.
 *
 * Why: the register ring of k_dmv holds 3 units (3.4 KB) per warp, ~55 KB per SM, because a
 * deeper ring spills. That is just enough against the memory latency of a kernel running alone,
 * not in the graph, and nothing streams while a block waits for the previous kernel or runs its
 * prologue. Here each warp owns a ring of up to TMA_SLOTS slots of `tchunk` units in shared
 * memory (9 units for the 6656-wide products: ~166 KB per SM in flight); as a slot's chunk is
 * done, lane 0 requests the chunk S slots ahead with one bulk copy, completing on the slot's
 * mbarrier. The whole ring is requested at
 * block start, before the PDL wait: weights do not depend on the previous kernel, and a block
 * only starts once the previous kernel's block on its SM has left (shared memory), so the ring
 * fills while the rest of the grid finishes and while the prologue runs. All of o_proj's share
 * fits in the ring.
 *
 * To leave room for the ring, the prologue keeps no fp32 rows but the one it stages from: the
 * RESID/NORM inputs and gains come into registers (each thread its elements tid + 512 j, the
 * order in which dmv_residual and dmv_prepare_row sum, and through the same expressions, so
 * the bits are those of k_dmv and k_dmv_resid); RAW inputs are staged straight from global
 * memory, or (down, GLIM_CUDA_STAGE_I8) arrive as digits the producer's epilogue staged, by
 * two bulk copies. On the integer path the blocks of a cluster (GLIM_CUDA_CLUSTER) share the
 * staging: each computes 1/n of the digits (from global memory, 1/n of a RAW row) and stores
 * them into every block's shared memory; the norms stay whole in each block (their bits must be
 * those of k_dmv_resid). Warp ranges, the per-unit computation (bf16 hi/lo, or the integer path with
 * GLIM_CUDA_I8), the merge and the epilogues are k_dmv's. */
#include "cuda/decode_mv_tma.cuh"

/* LEAN (the integer path only): 1, a kernel for block-owned row blocks (d.bblocks) without the
 * stream-K row ends or the ring diagnostics, which compile out of it (dmv_plan picks it only for
 * such calls); 2, the same whose loop also loads each unit's registers while the one before it
 * computes (tma_units' AHEAD). Those 12 more registers fit the 128 a thread has only in the lean
 * kernel: with the unused paths in (session 24, the removed split tail's among them), ptxas
 * spilled 130-258 bytes in the loop. GLIM_CUDA_UNIT_AHEAD=2 (the default) runs LEAN 1, =1 LEAN 2,
 * =0 LEAN 0 (every path compiled in) for block-owned calls too. */
template <int KIND, int PPS, bool SBF32, bool I8, int LEAN = 0>
__global__ void __launch_bounds__(DMV_THREADS, 1) k_dmv_tma(const __grid_constant__ DmvArgs d) {
    constexpr bool lean = LEAN > 0;
    extern __shared__ __align__(128) uint4 dmv_smem[];
    __shared__ DmvSum scratch[DMV_SCRATCH];
    __shared__ __align__(8) uint64_t bars[DMV_WARPS][TMA_SLOTS];
    __shared__ __align__(8) uint64_t pbar; /* the input staged as digits (d.pre_dig) */
    __shared__ unsigned long long tl_t[3]; /* timeline: start, past the wait, loop start */
    const MvArgs &a = d.mv;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wg = blockIdx.x * DMV_WARPS + warp;
    /* d.bblocks: the owner is this block, or with d.cluster_rows its cluster */
    const int own = d.cluster_rows ? d.cluster : 1, nw = own * DMV_WARPS;
    const int ow = (int)(blockIdx.x % own) * DMV_WARPS + warp; /* the warp's index in its owner */
    int u0, u1; /* this warp's units, as k_dmv's */
    long long bu0, bun;
    tma_warp_units(d, own, ow, nw, wg, &u0, &u1, &bu0, &bun);
    const int n = u1 - u0, S = d.tslots, C = d.tchunk, uw = a.unit_u4;
    const unsigned ub = (unsigned)uw * 16u;
    TmaRing r = {(uint4 *)((char *)dmv_smem + d.tring_off) + (size_t)warp * S * C * uw, bars[warp], S, C, 0, 0, 0u};
    const uint64_t pol = mv_policy();
    if (threadIdx.x == 0) dmv_stamp(d, 0);
    gcu_tl_mark(d.tl, GCU_TL_START);
    if (d.tl && threadIdx.x == 0) tl_t[0] = gcu_tl_now();

    /* the ring: the warp's chunks of C units (one bulk copy each) are requested in order, chunk c
     * into slot c % S, from a running source. Lane 0 does it in the loop once per chunk, so it is
     * kept to a pointer step (session 14: the SASS had ~40 instructions per unit for a refill
     * that recomputed the source, size and slot in 64 bits). d.diag_window: the source starts
     * inside the first diag_window uint4 of the matrix (a timing diagnostic; see DmvArgs). */
    const uint4 *nsrc = a.w + (d.diag_window ? (size_t)u0 * uw % d.diag_window : (size_t)u0 * uw);
    int nleft = n; /* units not yet requested */
    const size_t cstep = (size_t)C * uw;
    /* d.diag_ring 1, 2 (timing diagnostics, see DmvArgs): the chunks' sources dealt over the
     * grid's (1) or the owner's (2) warps, wrapping inside the matrix (or the owner's rows) */
    const int deal = lean ? 0 /* no diagnostics here */
                     : d.diag_ring == 2 && d.bblocks == 0 ? 1
                     : d.diag_ring <= 2                    ? d.diag_ring
                                                           : 0;
    const uint4 *dbase = deal == 2 ? a.w + (size_t)bu0 * uw : a.w;
    const unsigned dn = deal == 2 ? (unsigned)nw : gridDim.x * DMV_WARPS, dw = deal == 2 ? ow : wg;
    const unsigned dtc = (unsigned)((deal == 2 ? bun : a.nunits) / C); /* whole chunks in the area */
    unsigned dnext = dw; /* the next chunk's index in the area */
    unsigned dfill = 0;  /* d.diag_ring 4: the slots filled once (bit j: slot j) */
    auto request = [&](int slot) {
        const unsigned bytes = (unsigned)min(C, nleft) * ub;
        if (deal && dtc > 0) {
            while (dnext >= dtc) dnext -= dtc;
            nsrc = dbase + (size_t)dnext * cstep;
            dnext += dn;
        }
        if (!lean && d.diag_ring == 4) { /* no bytes: the slot's phase completes on this arrival */
            /* except at the slot's first fill, which is whole and real (the matrix's first
             * units): the loop then computes on valid units, not on what an earlier kernel left
             * in shared memory (its NaNs sent the epilogues down slow paths) */
            const unsigned fb = (dfill >> slot) & 1u ? 0u : (unsigned)min((long long)C, a.nunits) * ub;
            dfill |= 1u << slot;
            gcu_mbar_expect_tx(&r.bar[slot], fb);
            if (fb) gcu_bulk_g2s(r.base + slot * cstep, a.w, fb, &r.bar[slot], pol);
            nleft -= C;
            return;
        }
        gcu_mbar_expect_tx(&r.bar[slot], bytes);
        gcu_bulk_g2s(r.base + slot * cstep, nsrc, bytes, &r.bar[slot], pol);
        nsrc += cstep;
        nleft -= C;
    };
    /* when the ring is requested (d.ring_at): 0 whole at block start; 1 once the prologue's
     * global reads are done (the norms' rows, or a RAW row's staging); 2 after staging; 3 its
     * first slot at block start, the others after staging. Later requests leave the prologue's
     * loads an emptier memory system; earlier ones have weights arriving while it runs. */
    const int ring_at = d.ring_at;
    auto request_ring = [&](int from, int to) {
        if (lane == 0)
            for (int c = from; c < to && nleft > 0; c++) request(c);
    };
    const bool pre = I8 && d.pre_dig != NULL; /* RAW (gcu_dmv_takes_digits) */
    if (lane == 0) {
        for (int j = 0; j < S; j++) gcu_mbar_init(&r.bar[j], 1);
        if (pre && warp == 0) gcu_mbar_init(&pbar, 1);
        gcu_mbar_init_fence();
    }
    if (ring_at == 0) request_ring(0, S);
    if (ring_at == 3) request_ring(0, 1);
    __syncwarp();
    /* a cluster shares the staging (d.stage_cta > 1: the integer path, staged here): announce
     * this block's start; the peers wait for it before their first store into its memory */
    const int ncta = I8 && !pre ? d.stage_cta : 1;
    const int crank = ncta > 1 ? (int)gcu_cluster_rank() : 0;
    if (ncta > 1) gcu_cluster_arrive_relaxed();

    const DmvSmem m = tma_smem_at(d, dmv_smem);
    const bool rows = d.pro != GCU_PRO_RAW;
    float wa[TMA_JM], wo[TMA_JM];
    if (rows) tma_load_gains(d, wa, wo); /* the gains are weights: before the wait */
    if (pre) __syncthreads(); /* pbar initialised before any thread waits on it */
    if (d.flag_wait) gcu_flag_wait(d.flag_wait, d.flag_need, gridDim.x); /* GLIM_CUDA_FLAG_WAIT */
    else gcu_pdl_wait();
    if (threadIdx.x == 0) dmv_stamp(d, 1);
    gcu_tl_mark(d.tl, GCU_TL_RELEASE);
    if (d.tl && threadIdx.x == 0) tl_t[1] = gcu_tl_now();

    /* d.diag_ring 5 (a timing diagnostic): no rows, norms or staging; the loop computes on
     * whatever shared memory holds, so a token runs as if the prologues cost nothing */
    const bool nostage = !lean && d.diag_ring == 5;
    if (rows) {
        if (!nostage) tma_rows(d, m, scratch, wa, wo);
        if (ring_at == 1) request_ring(0, S);
    }
    if (threadIdx.x == 0) dmv_stamp(d, 2);
    if (pre) {
        /* the producer's epilogue staged the digits: one copy of them and one of the groups'
         * (E, sum) into the places dmv_stage_i8_from fills */
        if (threadIdx.x == 0) {
            const unsigned nd = (unsigned)dmv_i8_ex_offset(d.f), ne = (unsigned)dmv_i8_ex_bytes(d.f);
            const uint64_t pn = gcu_policy_normal();
            gcu_fence_proxy_async_global();
            gcu_mbar_expect_tx(&pbar, nd + ne);
            gcu_bulk_g2s(m.sx, d.pre_dig, nd, &pbar, pn);
            gcu_bulk_g2s(m.isum, d.pre_dig + nd, ne, &pbar, pn);
        }
        gcu_mbar_wait(&pbar, 0);
    } else if (I8) {
        if (ncta > 1) gcu_cluster_wait(); /* every peer has started: its shared memory is live */
        if (nostage) {
        } else if (rows) {
            dmv_stage_i8_from<false>(d, m, m.row, crank, ncta);
        } else {
            dmv_stage_i8_from<true>(d, m, d.src, crank, ncta);
        }
    } else if (!nostage) {
        if (rows) dmv_stage_from<false>(d, m, m.row);
        else dmv_stage_from<true>(d, m, d.src);
    }
    if (ring_at == 2 || (ring_at == 1 && !rows)) request_ring(0, S);
    if (ring_at == 3) request_ring(1, S);
    if (ncta > 1) { /* the peers' spans are in this block's memory, and no peer still writes */
        gcu_cluster_arrive();
        gcu_cluster_wait();
    } else {
        __syncthreads();
    }
    /* every block of this grid is resident: the next kernel may launch (its blocks take the SMs
     * this grid's blocks leave) */
    gcu_pdl_trigger();
    if (threadIdx.x == 0) dmv_stamp(d, 3);
    if (d.tl && threadIdx.x == 0) tl_t[2] = gcu_tl_now();

    float2 keep0, keep1; /* d.bblocks: the first and last segments' sums, if split */
    if (d.stamps && threadIdx.x == 0 && n > 0) { /* profiling: warp 0's first chunk is in (a check
                                                   * in the loop cost ~8 instructions per unit) */
        gcu_mbar_wait(&r.bar[0], 0);
        dmv_stamp(d, 4);
    }
    tma_units<KIND, PPS, SBF32, I8, LEAN>(d, m, r, u0, n, bu0, bun, nw, wg, keep0, keep1, d.late_norm ? scratch : NULL,
                                          [&](int slot) {
        if (lane == 0 && nleft > 0) {
            gcu_fence_proxy_async();
            request(slot);
        }
    });
    if (lean || d.bblocks > 0)
        tma_block_merge(a, (const uint4 *)((const char *)dmv_smem + d.tring_off), S * C * uw, bu0, bun, keep0, keep1,
                        lane, warp, own);
    /* every output of this block is written: the next kernel may go on (GLIM_CUDA_FLAG_WAIT) */
    if (d.flag_arrive) gcu_grid_arrive(d.flag_arrive);
    dmv_block_end(d, tl_t);
}

template <bool I8, int LEAN>
static const void *tma_pick(int kind, int pps, int sbf32) {
    if (kind == GCU_KIND_DENSE) return I8 || LEAN ? NULL : (const void *)k_dmv_tma<GCU_KIND_DENSE, 1, false, false>;
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 2: return (const void *)k_dmv_tma<GCU_KIND_Q, 1, false, I8, LEAN>;
    case 3: return (const void *)k_dmv_tma<GCU_KIND_Q, 1, true, I8, LEAN>;
    case 4: return (const void *)k_dmv_tma<GCU_KIND_Q, 2, false, I8, LEAN>;
    case 5: return (const void *)k_dmv_tma<GCU_KIND_Q, 2, true, I8, LEAN>;
    case 8: return (const void *)k_dmv_tma<GCU_KIND_Q, 4, false, I8, LEAN>;
    case 9: /* loads ahead with fp32 scales in 4 parts: 16 bytes spilled (ptxas), so none */
        if constexpr (LEAN == 2) return NULL;
        else return (const void *)k_dmv_tma<GCU_KIND_Q, 4, true, I8, LEAN>;
    }
    return NULL;
}
const void *dmv_tma_kernel(int kind, int pps, int sbf32, int i8, int lean) {
    if (lean == 1) return i8 ? tma_pick<true, 1>(kind, pps, sbf32) : NULL;
    if (lean == 2) return i8 ? tma_pick<true, 2>(kind, pps, sbf32) : NULL;
    return i8 ? tma_pick<true, 0>(kind, pps, sbf32) : tma_pick<false, 0>(kind, pps, sbf32);
}

int dmv_tma_smem_cap(void) { return TMA_SMEM_MAX; }

size_t dmv_tma_staging(const gcu_mat *m, int pro, int K, int cs) {
    const gcu_xfmt *f = &m->f;
    if (!dmv_tma_kernel(f->kind, f->pps, m->sbf32, 0, 0) || (pro != GCU_PRO_RAW && K > TMA_JM * DMV_THREADS) ||
        (m->unit_bytes & 15))
        return 0;
    const size_t np = (size_t)f->nspan * (f->kind == GCU_KIND_Q ? f->pps : 1), K4 = (size_t)(K + 3) & ~(size_t)3;
    size_t base = (size_t)2 * cs * 2 + ((np + 3) & ~(size_t)3) * 4 +
                  (f->kind == GCU_KIND_Q ? (size_t)f->nspan * 16 * 4 : 0) + (pro != GCU_PRO_RAW ? K4 * 4 : 0);
    base = (base + 127) & ~(size_t)127;
    return base < TMA_SMEM_MAX ? base : 0;
}

int dmv_tma_slots(const gcu_mat *m, size_t off, size_t cap, int chunk, int max_slots) {
    if (chunk < 1 || off >= cap) return 0;
    long long S = (long long)(cap - off) / ((long long)DMV_WARPS * chunk * m->unit_bytes);
    if (S > TMA_SLOTS) S = TMA_SLOTS;
    if (max_slots > 0 && S > max_slots) S = max_slots;
    return S < 2 ? 0 : (int)S;
}

size_t dmv_tma_geometry(const gcu_mat *m, int pro, int K, int cs, int chunk, int max_slots, int *slots,
                        int *ring_off) {
    const size_t base = dmv_tma_staging(m, pro, K, cs);
    const int S = base ? dmv_tma_slots(m, base, TMA_SMEM_MAX, chunk, max_slots) : 0;
    if (!S) return 0;
    *slots = S;
    *ring_off = (int)base;
    return base + (size_t)S * DMV_WARPS * chunk * m->unit_bytes;
}
