/* decode_mv_dyn.cu: the decode matvec on the integer path with its work in chunks that blocks
 * take at run time (GLIM_CUDA_DYN, off: measured slower, bench/RESULTS.md v8). */
#include "cuda/decode_mv.cuh"

/* ---- run-time balance: blocks take chunks ----------------------------------------------------
 * In the graph the block ends of one matvec spread over a fifth of its time (gate/up: 11 of 57
 * us), so equal static shares leave most SMs idle while the slowest finish. Here the work is
 * chunks: a row block, or a piece of one along the input (kparts pieces of ~52 units); block b
 * starts with chunk b and takes the next ones from a counter. The 16 warps of a block split
 * each chunk's units in fixed shares, write their sums to shared memory, and after a block
 * barrier one warp (in turn) adds the 16 in warp order: the bits do not depend on which block
 * ran a chunk. Pieces of one row block are merged through global memory by their last finisher,
 * in piece order. No fence on the weight stream: a warp's loads for the next chunks are in
 * flight across the barrier.
 *
 * The chunk ids a block will run are in shared memory (cl, by local index k): warp 0 asks for
 * chunk k + DMV_AHEAD as chunk k starts and writes the answer before chunk k's barrier, so a
 * warp with a share of 1 unit and a ring of 4 still knows the chunks its loads reach. Asking
 * begins after the PDL wait: the counter is reset by the previous launch's last block. */
#define DMV_AHEAD 5
#define DMV_CL 8

template <int PPS, bool SBF32, int RING>
__device__ __forceinline__ void dmv_body_dyn(const DmvArgs &d, uint4 *dmv_smem, DmvSum *scratch) {
    const MvArgs &a = d.mv;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int kp = d.kparts, n = a.nspan / kp, nch = d.nchunks;
    const int off = n * w / DMV_WARPS, S = n * (w + 1) / DMV_WARPS - off; /* this warp's share */
    __shared__ int cl[DMV_CL];
    __shared__ float2 ps[2][DMV_WARPS][32];
    __shared__ unsigned long long tl_t[3];
    const uint64_t pol = mv_policy();
    const int uw = a.unit_u4;
    auto first_unit = [&](int c) { return (long long)(c / kp) * a.nspan + (c % kp) * n + off; };
    auto claim = [&]() { /* warp 0, lane 0 */
        const int v = atomicAdd(d.dyn_ctr, 1);
        return (int)gridDim.x + v < nch ? (int)gridDim.x + v : -1;
    };
    if (threadIdx.x == 0) dmv_stamp(d, 0);
    gcu_tl_mark(d.tl, GCU_TL_START);
    if (d.tl && threadIdx.x == 0) tl_t[0] = gcu_tl_now();
    const DmvSmem m = dmv_smem_at(d, dmv_smem);
    dmv_request_gains(d, m);

    /* the load side: chunk lk (local index) of id lc, unit li of the share, at lp */
    int lk = 0, lc = blockIdx.x, li = 0;
    const uint4 *lp = a.w + first_unit(lc) * uw;
    auto feed = [&](MvSlot<GCU_KIND_Q, PPS, SBF32> &slot) {
        if (S == 0 || lc < 0) return false;
        if (li == S) {
            lc = cl[++lk & (DMV_CL - 1)];
            li = 0;
            if (lc < 0) return false;
            lp = a.w + first_unit(lc) * uw;
        }
        mv_load_p(slot, lp, lane, pol);
        lp += uw;
        li++;
        return true;
    };
    MvSlot<GCU_KIND_Q, PPS, SBF32> ring[RING];
    int filled = 0; /* before the wait: chunk 0 only (no ids yet) */
#pragma unroll
    for (int j = 0; j < RING; j++)
        if (j < S) {
            mv_load_p(ring[j], lp, lane, pol);
            lp += uw;
            li++;
            filled = j + 1;
        }
    gcu_pdl_wait();
    if (threadIdx.x == 0) dmv_stamp(d, 1);
    gcu_tl_mark(d.tl, GCU_TL_RELEASE);
    if (d.tl && threadIdx.x == 0) tl_t[1] = gcu_tl_now();
    bool claiming = true; /* warp 0 lane 0: no chunk past the end yet */
    if (threadIdx.x == 0) { /* the first ids at once (one round trip; one thread's answers rise) */
        int c[DMV_AHEAD];
        for (int k = 1; k < DMV_AHEAD; k++) c[k] = claim();
        cl[0] = blockIdx.x;
        for (int k = 1; k < DMV_AHEAD; k++) cl[k] = c[k];
        claiming = c[DMV_AHEAD - 1] >= 0;
    }
    dmv_request_inputs(d, m);
    gcu_rows_wait();
    if (d.pro != GCU_PRO_RAW) dmv_prepare_row(d, m, scratch);
    if (threadIdx.x == 0) dmv_stamp(d, 2);
    dmv_stage_i8(d, m);
    __syncthreads(); /* the staged row and cl[0..AHEAD-1] */
    if (threadIdx.x == 0) dmv_stamp(d, 3);
    if (d.tl && threadIdx.x == 0) tl_t[2] = gcu_tl_now();
#pragma unroll
    for (int j = 0; j < RING; j++)
        if (j >= filled) feed(ring[j]);

    const uint4 *d0 = dmv_i8_lane_digits(m.sx, lane);
    const float2 *e0 = (const float2 *)m.isum;
    /* the compute side: chunk ck of id cc, unit ci of the share */
    int ck = 0, cc = blockIdx.x, ci = 0, pend = -1;
    int sp = (cc % kp) * n + off;
    const uint4 *dp = d0 + sp * DMV_I8_SPAN_U4;
    const float2 *ep = e0 + sp * PPS;
    float acc[2] = {0.0f, 0.0f};
    bool trig = false;
    if (threadIdx.x == 0 && claiming) pend = claim(); /* chunk AHEAD, written at chunk 0's end */
    while (cc >= 0) {
#pragma unroll
        for (int j = 0; j < RING; j++) {
            if (cc < 0) break;
            if (ci < S) {
                dmv_unit_i8<PPS, SBF32>(ring[j], dp, ep, acc);
                if (!feed(ring[j]) && !trig) {
                    gcu_pdl_trigger();
                    trig = true;
                }
                dp += DMV_I8_SPAN_U4;
                ep += PPS;
                ci++;
            }
            if (ci < S) continue;
            /* the chunk's end: this warp's sums to shared memory, the next id, the barrier */
            float vg = dmv_i8_lane_sum(acc[0]);
            float vh = dmv_i8_lane_sum(acc[1]);
            acc[0] = acc[1] = 0.0f;
            ps[ck & 1][w][lane] = make_float2(vg, vh);
            if (threadIdx.x == 0) {
                cl[(ck + DMV_AHEAD) & (DMV_CL - 1)] = claiming ? pend : -1;
                claiming = claiming && pend >= 0;
            }
            __syncthreads();
            if (w == (ck & (DMV_WARPS - 1))) { /* this warp adds the chunk up */
                float2 sum = make_float2(0.0f, 0.0f);
#pragma unroll
                for (int w2 = 0; w2 < DMV_WARPS; w2++) {
                    const float2 v = ps[ck & 1][w2][lane];
                    sum.x += v.x, sum.y += v.y;
                }
                const int rb = cc / kp;
                if (kp == 1) {
                    mv_epilogue<1>(a, rb, lane, &sum.x, &sum.y);
                } else { /* pieces of a row block: the last one adds them in order */
                    a.partial[((size_t)rb * kp + cc % kp) * 32 + lane] = sum;
                    __threadfence();
                    __syncwarp();
                    int old = 0;
                    if (lane == 0) old = atomicAdd(&a.counters[rb], 1);
                    old = __shfl_sync(0xffffffffu, old, 0);
                    if (old == kp - 1) {
                        __threadfence();
                        sum = make_float2(0.0f, 0.0f);
                        for (int p = 0; p < kp; p++) {
                            const float2 v = __ldcg(a.partial + ((size_t)rb * kp + p) * 32 + lane);
                            sum.x += v.x, sum.y += v.y;
                        }
                        mv_epilogue<1>(a, rb, lane, &sum.x, &sum.y);
                        if (lane == 0) a.counters[rb] = 0;
                    }
                }
            }
            ck++;
            cc = cl[ck & (DMV_CL - 1)];
            ci = 0;
            if (threadIdx.x == 0 && claiming) pend = claim();
            if (cc >= 0) {
                sp = (cc % kp) * n + off;
                dp = d0 + sp * DMV_I8_SPAN_U4;
                ep = e0 + sp * PPS;
            }
        }
    }
    if (!trig) gcu_pdl_trigger();
    /* every claim of this block has been answered: the last block out resets the counter */
    if (threadIdx.x == 0 && atomicAdd(d.dyn_ctr + 1, 1) == (int)gridDim.x - 1) {
        d.dyn_ctr[0] = 0;
        d.dyn_ctr[1] = 0;
    }
    dmv_block_end(d, tl_t);
}

template <int PPS, bool SBF32, int RING>
__global__ void __launch_bounds__(DMV_THREADS, 1) k_dmv_dyn(const __grid_constant__ DmvArgs d) {
    extern __shared__ uint4 dmv_smem[];
    __shared__ DmvSum scratch[DMV_SCRATCH];
    dmv_body_dyn<PPS, SBF32, RING>(d, dmv_smem, scratch);
}

template <int RING>
static const void *dyn_pick_r(int pps, int sbf32) {
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 2: return (const void *)k_dmv_dyn<1, false, RING>;
    case 3: return (const void *)k_dmv_dyn<1, true, RING>;
    case 4: return (const void *)k_dmv_dyn<2, false, RING>;
    case 5: return (const void *)k_dmv_dyn<2, true, RING>;
    case 8: return (const void *)k_dmv_dyn<4, false, RING>;
    case 9: return (const void *)k_dmv_dyn<4, true, RING>;
    }
    return NULL;
}

const void *dmv_dyn_kernel(int pps, int sbf32, int ring) {
    return ring <= 2 ? dyn_pick_r<2>(pps, sbf32) : ring == 3 ? dyn_pick_r<3>(pps, sbf32) : dyn_pick_r<4>(pps, sbf32);
}
