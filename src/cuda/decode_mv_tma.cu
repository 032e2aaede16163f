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
#include "cuda/decode_mv.cuh"

#define TMA_SLOTS 16        /* units per warp ring at most */
#define TMA_JM 16           /* NORM/RESID: elements per thread in registers (K <= 8192) */
#define TMA_SMEM_MAX (224 * 1024)

/* One unit from the ring (shared memory) into registers: k_dmv's mv_load_p, from shared. */
template <int KIND, int PPS, bool SBF32>
__device__ __forceinline__ void tma_unit_load(MvSlot<KIND, PPS, SBF32> &s, const uint4 *up, int lane) {
    s.a0 = up[2 * lane];
    s.a1 = up[2 * lane + 1];
    if (KIND == GCU_KIND_Q) {
        constexpr int SBW = MvSlot<KIND, PPS, SBF32>::SBW;
        const int g = lane >> 2;
        if (SBW == 2) {
            const uint2 v = *(const uint2 *)((const uint32_t *)(up + 64) + g * 2);
            s.sb[0] = v.x;
            s.sb[1] = v.y;
        } else {
#pragma unroll
            for (int k = 0; k < SBW / 4; k++) {
                const uint4 v = up[64 + g * (SBW / 4) + k];
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
    DmvSmem m;
    const int cs = d.mv.cs, np = d.f.nspan * (d.f.kind == GCU_KIND_Q ? d.f.pps : 1);
    m.sx = (__nv_bfloat16 *)base;
    m.xsum = (float *)(m.sx + 2 * (size_t)cs);
    m.isum = m.xsum + ((np + 3) & ~3);
    m.row = m.isum + (d.f.kind == GCU_KIND_Q ? d.f.nspan * 16 : 0);
    m.hrow = m.wadd = m.wout = NULL;
    return m;
}

/* NORM/RESID from registers into m.row: the arithmetic of dmv_residual + dmv_prepare_row, in
 * their order. s, h: the inputs (read after the wait); wa, wo: the gains (before it). */
static __device__ __forceinline__ void tma_prepare_row(const DmvArgs &a, const DmvSmem &m, double *scratch,
                                                       float *s, const float *h, const float *wa,
                                                       const float *wo) {
    const int K = a.K, tid = threadIdx.x;
    double ss = 0.0;
#pragma unroll
    for (int j = 0; j < TMA_JM; j++)
        if (tid + j * DMV_THREADS < K) ss += (double)s[j] * s[j];
    if (a.pro == GCU_PRO_RESID) {
        const float inv = 1.0f / sqrtf((float)(dmv_block_sum(ss, scratch) / K) + a.eps_add);
        const bool writer = blockIdx.x == 0 && a.h_out;
        ss = 0.0;
#pragma unroll
        for (int j = 0; j < TMA_JM; j++) {
            const int i = tid + j * DMV_THREADS;
            if (i >= K) break;
            const float y = dmv_resid_value(s[j], inv, h[j], wa[j]);
            s[j] = y;
            if (writer) a.h_out[i] = y;
            ss += (double)y * y;
        }
    }
    const float inv = 1.0f / sqrtf((float)(dmv_block_sum(ss, scratch) / K) + a.eps_out);
#pragma unroll
    for (int j = 0; j < TMA_JM; j++) {
        const int i = tid + j * DMV_THREADS;
        if (i >= K) break;
        m.row[i] = dmv_norm_value(s[j], inv, wo[j], a.norm_out == GCU_NORM_CENTERED);
    }
    __syncthreads();
}

/* Block-owned row blocks (d.bblocks): the warps of the owner (a block, or a cluster of blocks
 * with d.cluster_rows: nw warps, rank-major) that own units of row block rb. The owner's units
 * are [bu0, bu0 + bun), cut between its warps as stream-K cuts a grid. */
__device__ __forceinline__ void tma_block_owners(const MvArgs &a, int rb, long long bu0, long long bun, int nw,
                                                 int *wf, int *wl) {
    const long long f = (long long)rb * a.nspan - bu0;
    *wf = mv_owner(f, bun, nw);
    *wl = mv_owner(f + a.nspan - 1, bun, nw);
}

/* The owner's split row blocks, once every warp's loop is done: each warp leaves its two
 * partials (first and last segment) in its own ring, which no copy fills any more, and row block
 * i of the owner is summed by its warp i % nw in warp order from zero (the order of mv_merge),
 * then written by the epilogue. own > 1: the owner is the cluster; partials of the peers' warps
 * are read from their shared memory between two cluster barriers (the second keeps every block's
 * memory alive until the peers are done with it). wring: the warp rings' stride in uint4. */
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
    const int r0 = (int)(bu0 / a.nspan), nr = (int)(bun / a.nspan);
    for (int i = ow; i < nr; i += nw) {
        const int rb = r0 + i;
        int wf, wl;
        tma_block_owners(a, rb, bu0, bun, nw, &wf, &wl);
        if (wf == wl) continue; /* written by its warp */
        /* wf's range starts before rb unless at its first unit: rb is then wf's last segment */
        const int slot_f = bun * wf / nw < (long long)rb * a.nspan - bu0 ? 1 : 0;
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

template <int KIND, int PPS, bool SBF32, bool I8>
__global__ void __launch_bounds__(DMV_THREADS, 1) k_dmv_tma(const __grid_constant__ DmvArgs d) {
    extern __shared__ __align__(128) uint4 dmv_smem[];
    __shared__ double scratch[DMV_WARPS];
    __shared__ __align__(8) uint64_t bars[DMV_WARPS][TMA_SLOTS];
    __shared__ __align__(8) uint64_t pbar; /* the input staged as digits (d.pre_dig) */
    __shared__ unsigned long long tl_t[3]; /* timeline: start, past the wait, loop start */
    const MvArgs &a = d.mv;
    constexpr int SPAN = KIND == GCU_KIND_Q ? 128 : 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int wg = blockIdx.x * DMV_WARPS + warp;
    int u0 = 0, u1 = 0; /* this warp's units, as k_dmv's */
    /* d.bblocks: the owner's units (whole row blocks); the owner is this block, or with
     * d.cluster_rows its cluster, whose nw warps (rank-major) cut them */
    long long bu0 = 0, bun = 0;
    const int own = d.cluster_rows ? d.cluster : 1, nw = own * DMV_WARPS;
    const int ow = (int)(blockIdx.x % own) * DMV_WARPS + warp; /* the warp's index in its owner */
    if (d.bblocks > 0) {
        const int o = (int)blockIdx.x / own, no = (d.bblocks + own - 1) / own;
        if (o < no) {
            const long long R = a.nunits / a.nspan, r0 = R * o / no;
            bu0 = r0 * a.nspan;
            bun = (R * (o + 1) / no - r0) * a.nspan;
            u0 = (int)(bu0 + bun * ow / nw);
            u1 = (int)(bu0 + bun * (ow + 1) / nw);
        }
    } else if (wg < a.W) {
        u0 = (int)(a.nunits * wg / a.W);
        u1 = (int)(a.nunits * (wg + 1) / a.W);
    }
    const int n = u1 - u0, S = d.tslots, C = d.tchunk, uw = a.unit_u4;
    const int nch = (n + C - 1) / C; /* this warp's chunks of C units, one bulk copy each */
    const unsigned ub = (unsigned)uw * 16u;
    uint4 *ring = (uint4 *)((char *)dmv_smem + d.tring_off) + (size_t)warp * S * C * uw;
    uint64_t *bar = bars[warp];
    const uint4 *wsrc = a.w + (size_t)u0 * uw;
    const uint64_t pol = mv_policy();
    if (threadIdx.x == 0) dmv_stamp(d, 0);
    gcu_tl_mark(d.tl, GCU_TL_START);
    if (d.tl && threadIdx.x == 0) tl_t[0] = gcu_tl_now();

    /* the ring, requested before anything else: chunk c goes to slot c % S */
    auto request = [&](int c, int slot) {
        const unsigned bytes = (unsigned)min(C, n - c * C) * ub;
        gcu_mbar_expect_tx(&bar[slot], bytes);
        gcu_bulk_g2s(ring + (size_t)slot * C * uw, wsrc + (size_t)c * C * uw, bytes, &bar[slot], pol);
    };
    /* when the ring is requested (d.ring_at): 0 whole at block start; 1 once the prologue's
     * global reads are done (the norms' rows, or a RAW row's staging); 2 after staging; 3 its
     * first slot at block start, the others after staging. Later requests leave the prologue's
     * loads an emptier memory system; earlier ones have weights arriving while it runs. */
    const int ring_at = d.ring_at;
    auto request_ring = [&](int from, int to) {
        if (lane == 0)
            for (int c = from; c < to && c < nch; c++) request(c, c);
    };
    const bool pre = I8 && d.pre_dig != NULL; /* RAW (gcu_dmv_takes_digits) */
    if (lane == 0) {
        for (int j = 0; j < S; j++) gcu_mbar_init(&bar[j], 1);
        if (pre && warp == 0) gcu_mbar_init(&pbar, 1);
        gcu_mbar_init_fence();
    }
    if (ring_at == 0) request_ring(0, S);
    if (ring_at == 3) request_ring(0, 1);
    __syncwarp();
    /* a cluster shares the staging (d.cluster > 1: the integer path, staged here): announce
     * this block's start; the peers wait for it before their first store into its memory */
    const int ncta = I8 && !pre ? d.cluster : 1;
    const int crank = ncta > 1 ? (int)gcu_cluster_rank() : 0;
    if (ncta > 1) gcu_cluster_arrive_relaxed();

    const DmvSmem m = tma_smem_at(d, dmv_smem);
    const bool rows = d.pro != GCU_PRO_RAW;
    float s[TMA_JM], h[TMA_JM], wa[TMA_JM], wo[TMA_JM];
    if (rows) { /* the gains are weights: before the wait */
#pragma unroll
        for (int j = 0; j < TMA_JM; j++) {
            const int i = threadIdx.x + j * DMV_THREADS;
            wa[j] = d.pro == GCU_PRO_RESID && i < d.K ? __ldg(d.w_add + i) : 0.0f;
            wo[j] = d.w_out && i < d.K ? __ldg(d.w_out + i) : 1.0f;
        }
    }
    if (pre) __syncthreads(); /* pbar initialised before any thread waits on it */
    gcu_pdl_wait();
    if (threadIdx.x == 0) dmv_stamp(d, 1);
    gcu_tl_mark(d.tl, GCU_TL_RELEASE);
    if (d.tl && threadIdx.x == 0) tl_t[1] = gcu_tl_now();

    if (rows) {
#pragma unroll
        for (int j = 0; j < TMA_JM; j++) {
            const int i = threadIdx.x + j * DMV_THREADS;
            s[j] = i < d.K ? __ldcg(d.src + i) : 0.0f;
            h[j] = d.pro == GCU_PRO_RESID && i < d.K ? __ldcg(d.h_in + i) : 0.0f;
        }
        tma_prepare_row(d, m, scratch, s, h, wa, wo);
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
        if (rows) dmv_stage_i8_from<false>(d, m, m.row, crank, ncta);
        else dmv_stage_i8_from<true>(d, m, d.src, crank, ncta);
    } else {
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

    /* lanes of n-column 0 hold hi, column 1 lo; the other columns are zero */
    const bool bvalid = g < 2, xvalid = t == 0;
    const __nv_bfloat16 *b0 = m.sx + (size_t)(bvalid ? g : 0) * a.cs + t * 8;
    int rb = u0 / a.nspan, sp = u0 % a.nspan;
    const __nv_bfloat16 *bp = b0 + sp * SPAN;
    const float *xp = m.xsum + sp * PPS;
    /* the integer path: digit column g < 3 (B column g), the lane's weight of its two sums */
    const bool dvalid = g < 3;
    const uint4 *d0 = (const uint4 *)m.sx + ((dvalid ? g : 0) * 4 + t) * 2;
    const uint4 *dp = d0 + sp * DMV_I8_SPAN_U4;
    const float2 *e0 = (const float2 *)m.isum, *ep = e0 + sp * PPS;
    const float cw = t == 0 ? 1.0f / 128.0f : t == 1 ? 1.0f / 2097152.0f : 0.0f;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    bool first = true;
    int pend = -1; /* GLIM_CUDA_DEFER_MERGE: the split row block whose arrival is deferred */
    float2 keep0 = make_float2(0.0f, 0.0f), keep1 = keep0; /* d.bblocks: first, last segment */
    int slot = 0, k = 0; /* unit j is unit k of the chunk in `slot` */
    unsigned phase = 0;
    for (int j = 0; j < n; j++) {
        if (k == 0) gcu_mbar_wait(&bar[slot], phase);
        MvSlot<KIND, PPS, SBF32> u;
        tma_unit_load(u, ring + ((size_t)slot * C + k) * uw, lane);
        if constexpr (I8) dmv_unit_i8<PPS, SBF32>(u, dp, dvalid, ep, cw, xvalid, acc);
        else mv_unit<KIND, PPS, SBF32, true>(u, bp, bvalid, xp, xvalid, a.qoff, acc);
        if (++k == C || j + 1 == n) {
            /* the chunk's bytes are in every lane's registers and used: refill its slot */
            __syncwarp();
            const int c = j / C;
            if (lane == 0 && c + S < nch) {
                gcu_fence_proxy_async();
                request(c + S, slot);
            }
            k = 0;
            if (++slot == S) {
                slot = 0;
                phase ^= 1u;
            }
        }
        if (threadIdx.x == 0 && j == 0) dmv_stamp(d, 4); /* the first unit is in */
        if constexpr (I8) {
            dp += DMV_I8_SPAN_U4;
            ep += PPS;
        } else {
            bp += SPAN;
            xp += PPS;
        }
        if (++sp == a.nspan || j + 1 == n) {
            float vg[1], vh[1];
            vg[0] = KIND == GCU_KIND_Q ? acc[0] : acc[0] + acc[1];
            vh[0] = KIND == GCU_KIND_Q ? acc[1] : acc[2] + acc[3];
            acc[0] = acc[1] = acc[2] = acc[3] = 0.0f;
            if constexpr (I8) { /* lane t = 1's d2 sums into lane t = 0 */
                vg[0] += __shfl_down_sync(0xffffffffu, vg[0], 1);
                vh[0] += __shfl_down_sync(0xffffffffu, vh[0], 1);
            }
            if (d.bblocks > 0) {
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
    if (d.bblocks > 0)
        tma_block_merge(a, (const uint4 *)((const char *)dmv_smem + d.tring_off), S * C * uw, bu0, bun, keep0, keep1,
                        lane, warp, own);
    if (d.stamps) {
        if (threadIdx.x == 0) dmv_stamp(d, 5);
        __syncthreads();
        if (threadIdx.x == 0) {
            dmv_stamp(d, 6);
            d.stamps[blockIdx.x * DMV_NSTAMP + 7] = (long long)gcu_tl_now();
        }
    }
    gcu_tl_block_end(d.tl);
    gcu_tl_phases(d.tl, tl_t);
}

template <bool I8>
static const void *tma_pick(int kind, int pps, int sbf32) {
    if (kind == GCU_KIND_DENSE) return I8 ? NULL : (const void *)k_dmv_tma<GCU_KIND_DENSE, 1, false, false>;
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 2: return (const void *)k_dmv_tma<GCU_KIND_Q, 1, false, I8>;
    case 3: return (const void *)k_dmv_tma<GCU_KIND_Q, 1, true, I8>;
    case 4: return (const void *)k_dmv_tma<GCU_KIND_Q, 2, false, I8>;
    case 5: return (const void *)k_dmv_tma<GCU_KIND_Q, 2, true, I8>;
    case 8: return (const void *)k_dmv_tma<GCU_KIND_Q, 4, false, I8>;
    case 9: return (const void *)k_dmv_tma<GCU_KIND_Q, 4, true, I8>;
    }
    return NULL;
}
const void *dmv_tma_kernel(int kind, int pps, int sbf32, int i8) {
    return i8 ? tma_pick<true>(kind, pps, sbf32) : tma_pick<false>(kind, pps, sbf32);
}

int dmv_tma_smem_cap(void) { return TMA_SMEM_MAX; }

size_t dmv_tma_geometry(const gcu_mat *m, int pro, int K, int cs, int chunk, int max_slots, int *slots,
                        int *ring_off) {
    const gcu_xfmt *f = &m->f;
    if (!dmv_tma_kernel(f->kind, f->pps, m->sbf32, 0) || (pro != GCU_PRO_RAW && K > TMA_JM * DMV_THREADS) ||
        (m->unit_bytes & 15))
        return 0;
    const size_t np = (size_t)f->nspan * (f->kind == GCU_KIND_Q ? f->pps : 1), K4 = (size_t)(K + 3) & ~(size_t)3;
    size_t base = (size_t)2 * cs * 2 + ((np + 3) & ~(size_t)3) * 4 +
                  (f->kind == GCU_KIND_Q ? (size_t)f->nspan * 16 * 4 : 0) + (pro != GCU_PRO_RAW ? K4 * 4 : 0);
    base = (base + 127) & ~(size_t)127;
    if (base >= TMA_SMEM_MAX) return 0;
    if (chunk < 1) return 0;
    long long S = (long long)(TMA_SMEM_MAX - base) / ((long long)DMV_WARPS * chunk * m->unit_bytes);
    if (S > TMA_SLOTS) S = TMA_SLOTS;
    if (max_slots > 0 && S > max_slots) S = max_slots;
    if (S < 2) return 0;
    *slots = (int)S;
    *ring_off = (int)base;
    return base + (size_t)S * DMV_WARPS * chunk * m->unit_bytes;
}
