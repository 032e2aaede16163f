/* decode_chain.cu: a layer's products after attention in one launch (GLIM_CUDA_CHAIN): o_proj,
 * gate/up, down and the next layer's qkvg (or the head), a grid barrier between them, on the
 * integer path with the weights in the shared-memory ring of decode_mv_tma.cuh.
 *
 * Why: apart, each product's kernel starts with its ring empty and its first weights a memory
 * round trip away, after the previous kernel's slowest block; the blocks that finish a product
 * early then sit idle, and so does the memory. Here a warp's ring runs on across the products:
 * as it uses a chunk of one product it requests the chunk S slots ahead, which near a product's
 * end is the next product's. A block that finishes early has its first S chunks of the next
 * product landed before the barrier opens. o_proj's first chunks are requested before the PDL
 * wait, while attention runs. Measured ~9 % slower than the separate kernels (session 12,
 * bench/RESULTS.md v15): the barrier is cheap, but the ring (~110 KB per SM) is full before
 * each prologue starts, so the memory idles through the prologues as it does apart, and each
 * loop that prefetches the next product's chunks is longer by about what it prefetched. Kept
 * as a switch: correct, and the skeleton of a persistent decode.
 *
 * Each product is computed exactly as k_dmv_tma computes it with whole row blocks per block
 * (same warp ranges, prologue, units, epilogues and merge order), so a token's logits are bit
 * for bit those of the separate kernels when they too own every row block in one block
 * (GLIM_CUDA_CLUSTER_ROWS=0; test_cuda_forward's chain_bits). The split row blocks' partials go
 * to a place of their own (the ring already holds the next product's weights).
 * All blocks must be resident at once: one per SM (checked from the occupancy at launch), and
 * the kernel is launched as the previous one (attention) lets its dependents start, so its
 * blocks take the SMs that attention leaves; a cooperative launch would wait for attention's
 * last block and lose that (measured, session 12: o_proj's step 11.4 -> 16.4 us). The barrier
 * gives up with a trap after 10 s rather than hang if another process held SMs. */
#include "cuda/decode_mv_tma.cuh"

/* The grid barrier between two steps is gcu_grid_arrive / gcu_grid_wait (gcu.cuh):
 * a block arrives as soon as its step's writes are done and waits only when it needs the
 * others' (the next step's input), its next arguments and gains loaded in between. The count is
 * left at steps * gridDim.x. */
template <int PPS, bool SBF32>
__global__ void __launch_bounds__(DMV_THREADS, 1) k_dmv_chain(const __grid_constant__ DmvChain c) {
    extern __shared__ __align__(128) uint4 dmv_smem[];
    __shared__ DmvSum scratch[DMV_SCRATCH];
    __shared__ __align__(8) uint64_t bars[DMV_WARPS][TMA_SLOTS];
    __shared__ const uint4 *cw[DMV_CHAIN][DMV_WARPS]; /* each warp's first weight unit per step */
    __shared__ int cn[DMV_CHAIN][DMV_WARPS];          /* and its number of units */
    __shared__ unsigned long long tl_t[3]; /* timeline: step start, past the barrier, loop start */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wg = blockIdx.x * DMV_WARPS + warp;
    const int S = c.step[0].tslots, C = c.step[0].tchunk, uw = c.step[0].mv.unit_u4;
    const unsigned ub = (unsigned)uw * 16u;
#pragma unroll
    for (int i = 0; i < DMV_CHAIN; i++)
        if (i < c.n && lane == 0) {
            int u0, u1;
            long long bu0, bun;
            tma_warp_units(c.step[i], 1, warp, DMV_WARPS, wg, &u0, &u1, &bu0, &bun);
            cw[i][warp] = c.step[i].mv.w + (size_t)u0 * uw;
            cn[i][warp] = u1 - u0;
        }
    TmaRing r = {(uint4 *)((char *)dmv_smem + c.step[0].tring_off) + (size_t)warp * S * C * uw, bars[warp], S, C,
                 0, 0, 0u};
    /* lane 0's next request: chunk rq[warp][1] of step rq[warp][0] (the warp's chunks of all
     * steps, in order, go to slots 0, 1, .., S-1, 0, ..: the order in which tma_units uses them).
     * In shared memory, as is the policy made anew: registers are what the loop is short of */
    __shared__ int rq[DMV_WARPS][2];
    auto request_next = [&](int slot) {
        int rs = rq[warp][0], rc = rq[warp][1];
        while (rs < c.n && rc * C >= cn[rs][warp]) {
            rs++;
            rc = 0;
        }
        if (rs >= c.n) return;
        const unsigned bytes = (unsigned)min(C, cn[rs][warp] - rc * C) * ub;
        gcu_mbar_expect_tx(&r.bar[slot], bytes);
        gcu_bulk_g2s(r.base + (size_t)slot * C * uw, cw[rs][warp] + (size_t)rc * C * uw, bytes, &r.bar[slot],
                     mv_policy());
        rq[warp][0] = rs;
        rq[warp][1] = rc + 1;
    };
    if (lane == 0) { /* o_proj's weights (static) are requested before the PDL wait */
        rq[warp][0] = rq[warp][1] = 0;
        for (int j = 0; j < S; j++) gcu_mbar_init(&r.bar[j], 1);
        gcu_mbar_init_fence();
        for (int j = 0; j < S; j++) request_next(j);
    }
    __syncwarp();
    /* unrolled: each step's arguments are the kernel's parameters at fixed places, as in
     * k_dmv_tma (a copy in shared memory was reloaded after every mbarrier wait, and indexing
     * the parameters at run time cost registers the loop spilled) */
#pragma unroll
    for (int i = 0; i < DMV_CHAIN; i++) {
        if (i >= c.n) break;
        const DmvArgs &d = c.step[i];
        gcu_tl_mark(d.tl, GCU_TL_START);
        if (d.tl && threadIdx.x == 0) tl_t[0] = gcu_tl_now();
        int u0, u1;
        long long bu0, bun;
        tma_warp_units(d, 1, warp, DMV_WARPS, wg, &u0, &u1, &bu0, &bun);
        const DmvSmem m = tma_smem_at(d, dmv_smem);
        const bool rows = d.pro != GCU_PRO_RAW;
        float wa[TMA_JM], wo[TMA_JM];
        if (rows) tma_load_gains(d, wa, wo);
        if (i == 0) gcu_pdl_wait();
        else gcu_grid_wait(c.bar, (unsigned)i * gridDim.x); /* also: this block is done with the
                                                            previous step's staging and merge */
        gcu_tl_mark(d.tl, GCU_TL_RELEASE);
        if (d.tl && threadIdx.x == 0) tl_t[1] = gcu_tl_now();
        if (rows) {
            tma_rows(d, m, scratch, wa, wo);
            dmv_stage_i8_from<false>(d, m, m.row);
        } else {
            dmv_stage_i8_from<true>(d, m, d.src);
        }
        __syncthreads();
        if (i + 1 == c.n) gcu_pdl_trigger();
        if (d.tl && threadIdx.x == 0) tl_t[2] = gcu_tl_now();
        float2 keep0, keep1;
        tma_units<GCU_KIND_Q, PPS, SBF32, true>(d, m, r, u0, u1 - u0, bu0, bun, DMV_WARPS, wg, keep0, keep1,
                                                d.late_norm ? scratch : NULL, [&](int slot) {
                                                    if (lane == 0) {
                                                        gcu_fence_proxy_async();
                                                        request_next(slot);
                                                    }
                                                });
        tma_block_merge(d.mv, (const uint4 *)((const char *)dmv_smem + c.merge_off), 64 * (int)sizeof(float2) / 16,
                        bu0, bun, keep0, keep1, lane, warp, 1);
        if (i + 1 < c.n) gcu_grid_arrive(c.bar);
        gcu_tl_block_end(d.tl);
        gcu_tl_phases(d.tl, tl_t);
    }
    if (threadIdx.x == 0 && atomicAdd(c.bar + 1, 1u) == gridDim.x - 1) {
        c.bar[0] = 0; /* every block is past every barrier */
        c.bar[1] = 0;
    }
}

const void *dmv_chain_kernel(int pps, int sbf32) {
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 4: return (const void *)k_dmv_chain<2, false>;
    case 5: return (const void *)k_dmv_chain<2, true>;
    case 8: return (const void *)k_dmv_chain<4, false>;
    case 9: return (const void *)k_dmv_chain<4, true>;
    }
    return NULL;
}
