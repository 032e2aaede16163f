/* decode_mv_span.cu: the decode matvec in span-major order (GLIM_CUDA_SPAN, a mask of products;
 * the default since session 22): MLX 4-bit on the integer path, whole row blocks per block,
 * weights streamed into a shared-memory ring by bulk copies as in k_dmv_tma (decode_mv_tma.cu).
 *
 * Why: k_dmv_tma's warps each walk a contiguous range of the block's units, row block after row
 * block through all of its spans, so every warp needs the whole input staged as digits before
 * its first unit, and the block stages it together behind a barrier: that staging (and a RAW
 * input's load from global memory) sits on every product's critical path, ~1.5-4 us of the
 * ~13 us of prologues per layer (bench/RESULTS.md v23). Here a warp owns whole spans (the
 * input's columns [128 s, 128 s + 128) for s in [sA, sB)) of its row blocks of the block, and
 * stages them itself, two spans at a time, just before it needs them, into its own scratch: no
 * block barrier after the norms, the first unit waits for two spans' staging only, and a warp's
 * staging overlaps the other warps' units. The digits of a pair of spans are loaded into
 * registers once and used for all the warp's row blocks. The warps are G span groups x H row
 * groups (GLIM_CUDA_SPAN_ROWS = H, default 1): warp sg H + h owns span group sg's spans of the
 * block's row blocks h, h + H, ...; H > 1 evens out the warps' work where the spans do not
 * divide among 16 warps (52 spans: 13 warps of 4 with H = 1, 16 of 13 spans x 4-5 row blocks
 * with H = 4), each span then staged by H warps. Each warp keeps one pair of sums per row block
 * (RB of them in registers, hence the template, or in shared memory), adds them across its lanes
 * at its end, and the block adds the span groups' sums in order (deterministic) through shared
 * memory.
 *
 * The grid (the host's plan, GLIM_CUDA_SPAN_EVEN, default): the fewest blocks with the same
 * largest share of row blocks (down's and o_proj's 416 on 132 SMs: 104 blocks of 4, not 20 of 4
 * and 112 of 3), so the blocks end together and the SMs left free take the next kernel's blocks
 * under PDL at once (+2 % at ctx 0, session 24). Evening the shares on every SM instead
 * (session 23's clusters of 2 blocks owning row blocks together, removed) gained nothing.
 *
 * A warp's stream: per pair of spans, per row block, the two units (rb, s) and (rb, s + 1),
 * contiguous in the matrix, one bulk copy (a warp with an odd number of spans ends on a single
 * unit); a chunk, one slot of its ring behind one barrier, is RPC such row blocks (2 for
 * GLIM_CUDA_SPAN_TWO's products where shared memory holds two slots of them: qkvg and down by
 * default; the last of a pair may have one), so that the wait, the refill and the loop's other
 * bookkeeping per chunk, about half of a no-bytes chunk of one row block (RESULTS v29), are paid
 * once per two (qkvg's loop 12.2 -> 10.9 us, down's 25.9 -> 23.6 on an H100; +0.3 % a token,
 * session 28; off by default since session 34, see LATE). The ring is requested before the PDL
 * wait as in k_dmv_tma; with two row blocks a slot its 2 slots hold twice the bytes, which cost
 * attention 2 us a layer where o_proj did it. LATE (GLIM_CUDA_SPAN_LATE's products, all four by
 * default): only the first slot before the wait, the others after the prologue; o_proj's early
 * bytes slowed attention's cold first pass over its tiles (5.3 -> 4.2 us with LATE; +0.5 % a
 * token with gate/up's too, session 28), and with every product on this one instance its code
 * stays warm from product to product (+0.3-1 % at ctx 0 over qkvg and down on the two-row
 * instance, session 34).
 *
 * GLIM_CUDA_SPAN_AHEAD (its products, on the LATE instances, off by default): each pair's digits
 * are made during the previous pair's last chunk, in one basic block with its units, instead of
 * between the pairs, where a warp's staging chain overlapped only the other warps' work (+2.8 %
 * without weight bytes on an H100, -0.3 to -0.5 % with them: the digits delay that chunk's
 * refill; session 40, RESULTS v42).
 *
 * GLIM_CUDA_DIAG_RING=4 (a timing diagnostic, wrong logits) runs here too: no weight bytes are
 * copied after each ring slot's first fill (the matrix's first units, so that the sums stay
 * finite), so the decode shows this loop's own compute ceiling against k_dmv_tma's; and 9 (here
 * only): 2 of every 7 of a warp's chunks without bytes, an H200's bytes per unit of compute on
 * an H100.
 *
 * The sums are the same products added in another order than k_dmv_tma's (per warp over its
 * spans, then over the span groups), so the bits differ from it; test_cuda_kernels (modes
 * 14-17) and test_cuda_forward (span_loop) hold it against the CPU. NORM/RESID prologues are
 * k_dmv_tma's (tma_rows), so the residual written by block 0 and the digits are the same bits. */
#include "cuda/decode_mv_tma.cuh"

#define SPAN_CHUNK 2 /* units per row block of a chunk: one row block at a pair of spans */
#define SPAN_SCRATCH_U4 (SPAN_SCRATCH_BYTES / 16) /* a warp's staging scratch: two spans' digits
                                                 * (2 x 32), (E, sum) of up to 8 groups (4) */
static_assert(SPAN_SCRATCH_U4 == 2 * DMV_I8_SPAN_U4 + 4, "the staging scratch's layout");

/* A block's share and a warp's part of it. Whole row blocks [r0, r0 + nrb): the shares of
 * tma_warp_units with the block as owner; the warp's are r0 + h + i H for i < nw, at its span
 * group's part of the block's spans. A warp's sums: row block r0 + h + i H at its row i. */
struct SpanWork {
    int r0, nrb;
    int h, H, nw;
    int sA, sB; /* the warp's spans */
};

__device__ __forceinline__ SpanWork span_work(const DmvArgs &d, int warp) {
    const MvArgs &a = d.mv;
    const int no = d.bblocks, o = (int)blockIdx.x;
    const int ns = a.nspan, R = (int)(a.nunits / ns), q = R / no, e = R % no;
    SpanWork w;
    w.r0 = w.nrb = w.nw = 0;
    const int NW = d.span_warps, H = d.span_rows, G = NW / H, sg = warp / H;
    w.H = H;
    w.h = warp % H;
    w.sA = warp < NW ? ns * sg / G : 0;
    w.sB = warp < NW ? ns * (sg + 1) / G : 0;
    if (o >= no) return w;
    w.r0 = d.front ? o * q + min(o, e) : (int)mv_muldiv(R, o, no);
    w.nrb = (d.front ? w.r0 + q + (o < e) : (int)mv_muldiv(R, o + 1, no)) - w.r0;
    w.nw = w.h < w.nrb ? (w.nrb - w.h + H - 1) / H : 0;
    return w;
}

/* Item `item` (< w.nw) of the warp's pair p of spans: its row block `item` at both spans (one
 * unit at a single last span). *rb: its row block, *sf: its first span, *n: its units (1 or 2,
 * contiguous). A chunk is d.span_rpc consecutive items; the loop and the ring's requests walk the
 * same items. */
__device__ __forceinline__ void span_chunk(const SpanWork &w, int p, int item, int *rb, int *sf, int *n) {
    const int s = w.sA + 2 * p;
    *rb = w.r0 + w.h + item * w.H;
    *sf = s;
    *n = min(s + 2, w.sB) - s;
}

/* The 8 input values of this lane's item for the pair of spans from s (lanes 16..31: span s + 1,
 * zeros past the warp's spans): from the normed row in shared memory, or (RAW) the previous
 * kernel's output in global memory. WHOLE (SPAN_SPEC 4): the host checked that every item is 8
 * values in range at a 16-byte boundary (4-bit, K = 128 nspan, an aligned input), so the lanes
 * past the warp's spans load their item of span s and take zeros, and no lane takes the scalar
 * path: the run path jumps over neither. */
template <bool WHOLE>
__device__ __forceinline__ void span_pair_values(const DmvArgs &d, const float *row, int s, int sB, int lane,
                                                 float *v) {
    int ow = 0;
    const int e = dmv_item(d.f, s * 16 + lane, &ow);
    if constexpr (WHOLE) {
        const bool in = s + (lane >> 4) < sB;
        const float *p = (row ? row : d.src) + (in ? e : e - 128);
        float4 x, y;
        if (row) {
            x = *(const float4 *)p;
            y = *(const float4 *)(p + 4);
        } else {
            x = __ldcg((const float4 *)p);
            y = __ldcg((const float4 *)(p + 4));
        }
        const float z[8] = {x.x, x.y, x.z, x.w, y.x, y.y, y.z, y.w};
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = in ? z[k] : 0.0f;
    } else if (s + (lane >> 4) >= sB) {
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = 0.0f;
    } else if (row) {
        dmv_load_n<false>(row, e, 8, d.K, v);
    } else {
        dmv_load_n<true>(d.src, e, 8, d.K, v);
    }
}

/* The lane's B operands of the scratch's span j (0, 1) in registers (zeros past the warp's
 * spans: !valid). */
__device__ __forceinline__ I8LaneB span_digits(const uint4 *scr, int j, bool valid, int lane) {
    return dmv_i8_lane_b(dmv_i8_lane_digits(scr, lane) + j * DMV_I8_SPAN_U4, valid, lane >> 2);
}

/* A warp's two sums of its row r (its four lanes t of each group g added, dmv_i8_lane_sum) as 8
 * float2 at mine[8 r]. */
__device__ __forceinline__ void span_put(float2 *mine, int r, float ag, float ah, int lane) {
    const float vg = dmv_i8_lane_sum(ag), vh = dmv_i8_lane_sum(ah);
    if ((lane & 3) == 0) mine[r * 8 + (lane >> 2)] = make_float2(vg, vh);
}

/* This warp's pieces of the launch's L2 prefetch (DmvArgs.l2pf: a later product's bytes, or a
 * slice of this product's own), lane 0; none where its n is 0. Dealt over the blocks first
 * (piece k to block k % grid, its warp k / grid % 16), so that every SM's copy engine issues its
 * share, not the first blocks' all. */
__device__ __forceinline__ void span_l2_prefetch(const gcu_l2pf &pf, int warp, int lane, long long t0) {
    const long long step = (long long)gridDim.x * DMV_WARPS;
    if (pf.delay && lane == 0 && (long long)warp * gridDim.x + blockIdx.x < pf.n)
        while (clock64() - t0 < (long long)pf.delay) {
        }
    for (long long k = (long long)warp * gridDim.x + blockIdx.x; lane == 0 && k < pf.n; k += step)
        gcu_l2_prefetch((const char *)pf.p + k * pf.stride, pf.bytes);
}

/* RB: the warp's row blocks' sums in registers (RB > 0, at most RB) or in shared memory (RB == 0,
 * the d.span_srows rows of its own). RPC: row blocks per chunk (1, or 2 with RB == 0), fixed at
 * compile time: as a run-time value (session 28, call 1) its branches made the one-row
 * instance, which gate/up runs, 0.9 us a layer slower, more than the two-row chunks gave the
 * other products. LATE: the ring's first slot before the PDL wait, the rest after the prologue
 * (GLIM_CUDA_SPAN_LATE's products; one or two row blocks a chunk since session 37, so that
 * GLIM_CUDA_SPAN_TWO's products keep the SPEC instances). */
template <bool B>
struct SpanFlag {
    static constexpr bool value = B;
};

template <int PPS, bool SBF32, int RB, int RPC, bool LATE, int SPEC, bool AHEAD>
__device__ __forceinline__ void span_body(const DmvArgs &d) {
    extern __shared__ __align__(128) uint4 dmv_smem[];
    __shared__ DmvSum scratch[DMV_SCRATCH];
    __shared__ __align__(8) uint64_t bars[DMV_WARPS][TMA_SLOTS];
    __shared__ unsigned long long tl_t[3]; /* timeline: start, past the wait, loop start */
    const MvArgs &a = d.mv;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int NW = d.span_warps, S = d.tslots, uw = a.unit_u4, nspan = a.nspan;
    const SpanWork w = span_work(d, warp); /* warps past NW own no spans: they only norm and merge */
    const int nwr = w.nw; /* the warp's row blocks: <= RB (the host's choice) */
    const int npair = (w.sB - w.sA + 1) / 2;
    const unsigned ub = (unsigned)uw * 16u;
    static_assert(RPC == 1 || (RPC == 2 && RB == 0), "two row blocks a chunk only with the sums in shared memory");
    static_assert(!LATE || RB == 0, "the late ring only on the shared-memory instances");
    static_assert(!AHEAD || (LATE && RB == 0), "the digits ahead only on the late instances");
    constexpr int rpc = RPC; /* d.span_rpc, the host's choice */
    const size_t cstep = (size_t)SPAN_CHUNK * rpc * uw;
    uint4 *ring = (uint4 *)((char *)dmv_smem + d.tring_off) + (size_t)warp * S * cstep;
    uint4 *scr = (uint4 *)((char *)dmv_smem + d.span_scr_off) + (size_t)warp * SPAN_SCRATCH_U4;
    uint64_t *bar = bars[warp];
    const unsigned bar_sa = gcu_smem_addr(bar); /* slot j's barrier at bar_sa + 8 j (gcu_mbar_wait_sa) */
    const uint64_t pol = mv_policy();
    if (threadIdx.x == 0) dmv_stamp(d, 0);
    const long long t_start = clock64(); /* GLIM_CUDA_L2PF_DELAY counts from here */
    gcu_tl_mark(d.tl, GCU_TL_START);
    if (d.tl && threadIdx.x == 0) tl_t[0] = gcu_tl_now();

    /* the ring (lane 0): the warp's chunks in the loop's order (span_chunk's items, pair after
     * pair), chunk c into slot c % S. The next request's source runs on as a pointer (a row
     * block's step within a pair, the next pair's first row block after its last): lane 0 issues
     * a request per chunk, and computed from the item (span_chunk) it took ~35 instructions of
     * 64-bit index arithmetic, which the whole warp waited for (ncu, session 26: a quarter of the
     * loop's instructions were the refill). */
    int rq_pair = 0, rq_item = 0;
    const uint4 *rq_src = a.w;
    const size_t rq_istep = (size_t)w.H * nspan * uw;
    unsigned rq_bytes = 0;
    unsigned rq_n = 0; /* d.diag_ring 4 and 9: the warp's requests so far */
    auto pair_start = [&]() { /* the source and bytes of pair rq_pair's first chunk (span_chunk) */
        if (rq_pair >= npair || nwr == 0) return;
        int rb, sf, n;
        span_chunk(w, rq_pair, 0, &rb, &sf, &n);
        rq_src = a.w + ((size_t)rb * nspan + sf) * uw;
        rq_bytes = (unsigned)n * ub;
    };
    pair_start();
    auto request = [&](unsigned sbar, uint4 *dst) -> bool {
        if (rq_pair >= npair || nwr == 0) return false;
        const bool second = rpc == 2 && rq_item + 1 < nwr; /* the chunk's second row block */
        /* timing diagnostics: 4 no bytes, the phase completes on this arrival; 9 two requests in
         * seven without bytes, the rest with them: the bytes per unit of compute an H200 leaves
         * (its copy bandwidth 1.40 times an H100's: 5/7 = 0.71 of the bytes), so that an H100
         * shows which loops an H200 would find compute-bound */
        const bool nob = d.diag_ring == 4 ? rq_n >= (unsigned)S : d.diag_ring == 9 && rq_n % 7u < 2u;
        rq_n++;
        if (nob) {
            gcu_mbar_expect_tx_sa(sbar, 0);
        } else if (d.diag_ring == 4) {
            /* no bytes, but each slot's first fill (requests 0..S-1 go to slots 0..S-1) is
             * whole and real: the matrix's first units, so that the loop computes on valid units
             * (finite sums of a plausible size) rather than on what an earlier kernel left in
             * shared memory, whose NaNs and zeros sent the norms' divisions and square roots
             * down their slow paths (ncu, session 48: 205 of qkvg's 1560 stall samples) */
            const unsigned fb = (unsigned)min((long long)SPAN_CHUNK * rpc, a.nunits) * ub;
            gcu_mbar_expect_tx_sa(sbar, fb);
            gcu_bulk_g2s_sa(gcu_smem_addr(dst), a.w, fb, sbar, pol);
        } else {
            /* the row blocks' units one after the other in the slot, both copies on one barrier;
             * issued before the source advances, so that no copy of the old source and size is
             * kept across the advance's branches (9 register moves a chunk, session 48) */
            const unsigned dsa = gcu_smem_addr(dst);
            gcu_mbar_expect_tx_sa(sbar, second ? 2 * rq_bytes : rq_bytes);
            gcu_bulk_g2s_sa(dsa, rq_src, rq_bytes, sbar, pol);
            if (second) gcu_bulk_g2s_sa(dsa + rq_bytes, rq_src + rq_istep, rq_bytes, sbar, pol);
        }
        /* (one row block a chunk: `++rq_item == nwr`, main's test before session 28, whose code
         * the one-row instance keeps exactly) */
        if (rpc == 1 ? ++rq_item == nwr : (rq_item += rpc) >= nwr) { /* once per pair: rare */
            rq_item = 0;
            rq_pair++;
            pair_start();
        } else {
            rq_src += rpc * rq_istep;
        }
        return true;
    };
    if (lane == 0) {
        /* (not unrolled: its 4-fold copy, ~300 instructions, was jumped over at every launch
         * with S < 4, a cold line before the first request; ncu, session 35) */
#pragma unroll 1
        for (int j = 0; j < S; j++) gcu_mbar_init(&bar[j], 1);
        gcu_mbar_init_fence();
        /* LATE (GLIM_CUDA_SPAN_LATE's products): one slot before the wait, half the bytes
         * requested while the previous kernel (for o_proj, attention) still runs */
        for (int j = 0; j < (LATE ? 1 : S) && request(bar_sa + 8 * j, ring + j * cstep); j++) {
        }
    }
    __syncwarp();

    DmvSmem m = tma_smem_at(d, dmv_smem);
    if (d.span_row0) m.row = (float *)dmv_smem; /* (the host left no staging area before it) */
    const bool rows = d.pro != GCU_PRO_RAW;
    float wa[TMA_JM], wo[TMA_JM];
    if (rows) tma_load_gains(d, wa, wo); /* weights: before the wait */
    /* bytes into L2 while the previous kernel runs and leaves the memory room: a later
     * product's (o_proj's blocks take gate/up's during attention, whose loads are few) or a
     * slice of this product's own (gate/up's during o_proj's loop, down's during gate/up's tail) */
    if (d.l2pf.early) span_l2_prefetch(d.l2pf, warp, lane, t_start);
    if (d.flag_wait) gcu_flag_wait(d.flag_wait, d.flag_need, gridDim.x); /* GLIM_CUDA_FLAG_WAIT */
    else gcu_pdl_wait();
    if (threadIdx.x == 0) dmv_stamp(d, 1);
    gcu_tl_mark(d.tl, GCU_TL_RELEASE);
    if (d.tl && threadIdx.x == 0) tl_t[1] = gcu_tl_now();
    /* NORM/RESID: the normed row in m.row, as k_dmv_tma makes it (one barrier at its end); RAW:
     * nothing before the loop, each warp reads its own spans from global memory */
    if (rows) tma_rows<SPEC >= 3 ? 1 : -1>(d, m, scratch, wa, wo); /* SPEC 3: late_norm == rows */
    if constexpr (LATE) { /* the ring's other slots, before lane 0's loop refills */
        if (lane == 0)
            for (int j = 1; j < S && request(bar_sa + 8 * j, ring + j * cstep); j++) {
            }
    }
    if (threadIdx.x == 0) dmv_stamp(d, 2);
    gcu_pdl_trigger(); /* every block of this grid is resident: the next kernel may launch */
    if (threadIdx.x == 0) dmv_stamp(d, 3);
    if (d.tl && threadIdx.x == 0) tl_t[2] = gcu_tl_now();
    if (d.stamps && threadIdx.x == 0 && npair > 0) { /* profiling: warp 0's first chunk is in */
        gcu_mbar_wait(&bar[0], 0);
        dmv_stamp(d, 4);
    }

    /* the loop: lane (g, t) of the integer path (decode_mv_i8.cuh) */
    const int lp = dmv_i8_group_lanes(PPS);
    const float *row = rows ? m.row : NULL;
    /* the row blocks' sums: RB > 0 in registers (the loop over row blocks unrolled), RB == 0 in
     * shared memory (GLIM_CUDA_SPAN_ACC: no unrolling, the loop's code stays small), each lane
     * its own float2 per row */
    constexpr int RBR = RB > 0 ? RB : 1;
    float acc[RBR][2];
#pragma unroll
    for (int r = 0; r < RBR; r++) acc[r][0] = acc[r][1] = 0.0f;
    float2 *sacc = (float2 *)((char *)dmv_smem + d.span_acc_off) + (size_t)warp * d.span_srows * 32 + lane;
    if (RB == 0 && warp < NW) {
#pragma unroll 1 /* (unrolled, the run path jumped over its 16- and 8-fold copies) */
        for (int r = 0; r < nwr; r++) sacc[r * 32] = make_float2(0.0f, 0.0f);
    }
    int slot = 0;
    unsigned phase = 0;
    uint4 *up = ring; /* slot's chunk: a running pointer, as the refill's source */
    I8LaneB b[2]; /* the pair's spans' B operands */
    I8SpanF<PPS> f[2]; /* the pair's spans' factors, read once per pair */
    const float2 *ep0 = (const float2 *)(scr + 2 * DMV_I8_SPAN_U4), *ep1 = ep0 + PPS;
    /* AHEAD: the next pair's values (v, loaded at this pair's start) and their digits dn, made in
     * the pair's last chunk */
    float v[8];
    DmvI8Digits dn;
    constexpr int LP = PPS == 1 ? 16 : PPS == 2 ? 8 : 4; /* dmv_i8_group_lanes, as a constant */
    /* one row block's n units (1 or 2, at the pair's spans) at p into a2; with mk's value the next
     * pair's digits too, in the same basic block as the units (each branch its own copy), so
     * that the scheduler interleaves the two independent chains */
    auto units = [&](const uint4 *p, float *a2, int n, auto mk) {
        /* both units' loads before the first's arithmetic where their registers fit (bf16
         * scales in 2 parts: the 30B's format); ptxas spilled 8-148 bytes with the wider
         * scales, which load the second unit after the first's arithmetic */
        constexpr bool BOTH = MvSlot<GCU_KIND_Q, PPS, SBF32>::SBW <= 4;
        MvSlot<GCU_KIND_Q, PPS, SBF32> u0, u1;
        tma_unit_load<GCU_KIND_Q, PPS, SBF32, true>(u0, p, lane);
        if (n == 2) {
            /* both units in one basic block, so that the scheduler can interleave their two
             * independent mma chains (behind `if (n == 2)` the second unit's chain began only
             * after the first's: the loop is latency-bound, ~9 cycles per instruction per warp,
             * RESULTS v28). The sums are added in the same order as before: the same bits. */
            if (BOTH) tma_unit_load<GCU_KIND_Q, PPS, SBF32, true>(u1, p + uw, lane);
            dmv_unit_i8_f<PPS, SBF32, true>(u0, b[0], f[0], a2);
            if (!BOTH) tma_unit_load<GCU_KIND_Q, PPS, SBF32, true>(u1, p + uw, lane);
            dmv_unit_i8_f<PPS, SBF32, true>(u1, b[1], f[1], a2);
            if constexpr (decltype(mk)::value) dn = dmv_i8_digits(v, LP);
        } else {
            dmv_unit_i8_f<PPS, SBF32, true>(u0, b[0], f[0], a2);
            if constexpr (decltype(mk)::value) dn = dmv_i8_digits(v, LP);
        }
    };
    /* one chunk: a row block's n units into aA and, with second, the next row block's into aB
     * (each row block's sums in the same order as with a chunk per row block: the same bits) */
    auto chunk = [&](float *aA, float *aB, int n, bool second, auto mk) {
        gcu_mbar_wait_sa(bar_sa + 8 * slot, phase);
        units(up, aA, n, mk);
        if (second) units(up + n * uw, aB, n, SpanFlag<false>());
        /* the chunk's bytes (and the scratch's group sums) are read by every lane: refill its
         * slot (and, after the pair's last chunk, the scratch may be staged again) */
        __syncwarp();
        if (lane == 0) {
            gcu_fence_proxy_async();
            request(bar_sa + 8 * slot, up);
        }
        up += cstep;
        if (++slot == S) {
            slot = 0;
            phase ^= 1u;
            up = ring;
        }
    };
    /* a chunk into the sums of shared-memory rows r and, with a second row block, r + 1 */
    auto chunk_smem = [&](int r, int n, auto mk) {
        const bool second = rpc == 2 && r + 1 < nwr;
        const float2 x = sacc[r * 32];
        float aA[2] = {x.x, x.y}, aB[2] = {0.0f, 0.0f};
        if (second) {
            const float2 y = sacc[(r + 1) * 32];
            aB[0] = y.x, aB[1] = y.y;
        }
        chunk(aA, aB, n, second, mk);
        sacc[r * 32] = make_float2(aA[0], aA[1]);
        if (second) sacc[(r + 1) * 32] = make_float2(aB[0], aB[1]);
    };
    if (npair > 0) span_pair_values<SPEC >= 4>(d, row, w.sA, w.sB, lane, v);
    /* AHEAD: a warp without row blocks stages nothing (it has no chunk to make the digits in) */
    const int nps = AHEAD && nwr == 0 ? 0 : npair;
    if constexpr (AHEAD) {
        if (nps > 0) dn = dmv_i8_digits(v, LP);
    }
    for (int p = 0; p < nps; p++) {
        const int s = w.sA + 2 * p, two = s + 1 < w.sB ? 2 : 1;
        /* stage the pair into the warp's scratch: item `lane` of the pair (span lane / 16), its
         * digits and its group's (E, sum) at the pair's relative places (AHEAD: made already) */
        if constexpr (AHEAD) dmv_i8_put(dn, lane, s + (lane >> 4) < w.sB, lp, lane, (unsigned char *)scr, (float2 *)ep0);
        else dmv_i8_item(v, lane, s + (lane >> 4) < w.sB, lp, lane, (unsigned char *)scr, (float2 *)ep0);
        if (p + 1 < npair) span_pair_values<SPEC >= 4>(d, row, s + 2, w.sB, lane, v); /* in flight during the units */
        __syncwarp();
        b[0] = span_digits(scr, 0, true, lane);
        b[1] = span_digits(scr, 1, two == 2, lane);
        f[0] = dmv_i8_span_factors<PPS>(ep0, t);
        f[1] = dmv_i8_span_factors<PPS>(ep1, t);
        if constexpr (RB > 0) {
#pragma unroll
            for (int r = 0; r < RB; r++) {
                if (r >= nwr) break; /* warp-uniform */
                chunk(acc[r], acc[r], two, false, SpanFlag<false>()); /* sums in registers: a row block a chunk (rpc 1) */
            }
        } else if constexpr (AHEAD) {
            /* the pair's last chunk also makes the next pair's digits (nwr >= 1 here) */
            const bool ahead = p + 1 < npair;
            const int rl = ahead ? (nwr - 1) / rpc * rpc : nwr;
            for (int r = 0; r < rl; r += rpc) chunk_smem(r, two, SpanFlag<false>());
            if (ahead) chunk_smem(rl, two, SpanFlag<true>());
        } else {
            for (int r = 0; r < nwr; r += rpc) chunk_smem(r, two, SpanFlag<false>());
        }
        __syncwarp(); /* every lane is past its reads of the scratch (a pair may have no chunk) */
    }
    /* the warp's sums per row block into its own ring, whose copies have all landed and been
     * read */
    float2 *mine = (float2 *)ring;
    if (warp < NW) {
        if constexpr (RB > 0) {
#pragma unroll
            for (int r = 0; r < RB; r++) {
                if (r >= nwr) break;
                span_put(mine, r, acc[r][0], acc[r][1], lane);
            }
        } else {
            for (int r = 0; r < nwr; r++) span_put(mine, r, sacc[r * 32].x, sacc[r * 32].y, lane);
        }
    }
    __syncthreads();
    /* the block's merge: row block r0 + r by warp r % 16, the span groups' sums in order, then
     * GLIM_CUDA_LATE_NORM's scale, then the epilogue */
    float osc = 1.0f;
    if (d.late_norm) osc = dmv_norm_inv(dmv_block_gather(scratch, 1), d.K, d.eps_out);
    const uint4 *ring0 = (const uint4 *)((const char *)dmv_smem + d.tring_off);
    /* (the block's share made again: kept live from the top, its registers spilled in the
     * 20-register kernel) */
    const SpanWork wm = span_work(d, warp);
    const int H = d.span_rows, G = NW / H;
    for (int r = warp; r < wm.nrb; r += DMV_WARPS) {
        const int hg = r % H, i = r / H;
        float vg[1] = {0.0f}, vh[1] = {0.0f};
        /* straight-line over every possible group, those past G adding +0 (the same bits: the
         * sums start at +0, so none is ever -0): as a loop to G, unrolled 4-fold with its
         * remainder, the run path jumped over two copies (ncu, session 35) */
#pragma unroll
        for (int sg = 0; sg < DMV_WARPS; sg++) {
            const float2 x = ((const float2 *)(ring0 + (size_t)(min(sg, G - 1) * H + hg) * S * cstep))[i * 8 + g];
            vg[0] += sg < G ? x.x : 0.0f;
            vh[0] += sg < G ? x.y : 0.0f;
        }
        /* (osc is 1 without the late norm, and x 1 is exact: no branch per row) */
        vg[0] *= osc;
        vh[0] *= osc;
        mv_epilogue<1>(a, wm.r0 + r, lane, vg, vh);
    }
    /* or after this block's own loads, which its prefetch should not delay (the next kernel's
     * wait it does: the grid completes once they are done) */
    if (!d.l2pf.early) span_l2_prefetch(d.l2pf, warp, lane, 0);
    /* every output of this block is written: the next kernel may go on (GLIM_CUDA_FLAG_WAIT) */
    if (d.flag_arrive) gcu_grid_arrive(d.flag_arrive);
    dmv_block_end(d, tl_t);
}

/* SPEC (GLIM_CUDA_SPAN_SPEC, the LATE instance only): the profiling stamps, the no-bytes
 * diagnostic, the flag release and the fused staging compiled out (1), the timeline too (2), and
 * the norm's scale before the loop and the softcap epilogue as well (3), and the grid's
 * leftover row blocks on the first owners (front) and the inputs' whole items (span_pair_values)
 * as well (4), so that the run path does not jump over their inlined code at every turn: a taken
 * jump to a line not in the SM's instruction caches cost ~170 cycles from L2 and ~300 from DRAM in
 * bench/icache_probe.cu, where straight-line code ran as fast cold as warm. */
template <int PPS, bool SBF32, int RB, int RPC, bool LATE, int SPEC = 0, bool AHEAD = false>
__global__ void __launch_bounds__(DMV_THREADS, 1) k_dmv_span(const __grid_constant__ DmvArgs d) {
    if constexpr (SPEC == 0) {
        span_body<PPS, SBF32, RB, RPC, LATE, 0, AHEAD>(d);
    } else {
        DmvArgs c = d;
        c.stamps = NULL;
        c.diag_ring = 0;
        c.flag_wait = NULL;
        c.flag_arrive = NULL;
        c.mv.fuse = 0;
        if (SPEC >= 2) c.tl = NULL;
        if (SPEC >= 3) {
            /* the host checks both: the consumer norm's scale after the loop exactly where there
             * is a row (so one test serves both), and no softcap (the head's, not this kernel's) */
            c.late_norm = c.pro != GCU_PRO_RAW;
            c.mv.epi = c.mv.epi == GCU_EPI_SWIGLU ? GCU_EPI_SWIGLU : GCU_EPI_STORE;
        }
        if (SPEC >= 4) c.front = 1; /* (and span_pair_values's whole items: the host checks both) */
        span_body<PPS, SBF32, RB, RPC, LATE, SPEC, AHEAD>(c);
    }
}

template <int RB, int RPC, bool LATE, int SPEC = 0, bool AHEAD = false>
static const void *span_pick(int pps, int sbf32) {
    if constexpr (AHEAD) /* the 30B's format only (groups of 64, bf16 scales): NULL for the others */
        return pps == 2 && !sbf32 ? (const void *)k_dmv_span<2, false, RB, RPC, LATE, SPEC, true> : NULL;
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 4: return (const void *)k_dmv_span<2, false, RB, RPC, LATE, SPEC>;
    case 5: return (const void *)k_dmv_span<2, true, RB, RPC, LATE, SPEC>;
    case 8: return (const void *)k_dmv_span<4, false, RB, RPC, LATE, SPEC>;
    case 9: return (const void *)k_dmv_span<4, true, RB, RPC, LATE, SPEC>;
    }
    return NULL;
}

/* A LATE instance with SPEC 1, 2, 3 or 4 (k_dmv_span's SPEC), for a call whose plan took the LATE
 * instance and uses none of what that SPEC compiles out (dmv_plan checks); rpc: its row blocks a
 * chunk (GLIM_CUDA_SPAN_TWO's products: 2). */
template <int RPC>
static const void *span_spec_pick(int pps, int sbf32, int spec) {
    return spec == 4 ? span_pick<0, RPC, true, 4>(pps, sbf32)
         : spec == 3 ? span_pick<0, RPC, true, 3>(pps, sbf32)
         : spec == 2 ? span_pick<0, RPC, true, 2>(pps, sbf32)
                     : span_pick<0, RPC, true, 1>(pps, sbf32);
}
const void *dmv_span_spec_kernel(int pps, int sbf32, int spec, int rpc) {
    return rpc == 2 ? span_spec_pick<2>(pps, sbf32, spec) : span_spec_pick<1>(pps, sbf32, spec);
}

/* GLIM_CUDA_SPAN_AHEAD's instances (a pair's digits made during the previous pair's last chunk):
 * the general LATE one (spec 0) and SPEC 4, for the 30B's format; NULL where there is none. */
const void *dmv_span_ahead_kernel(int pps, int sbf32, int spec, int rpc) {
    if (spec == 4) return rpc == 2 ? span_pick<0, 2, true, 4, true>(pps, sbf32) : span_pick<0, 1, true, 4, true>(pps, sbf32);
    if (spec == 0) return rpc == 2 ? span_pick<0, 2, true, 0, true>(pps, sbf32) : span_pick<0, 1, true, 0, true>(pps, sbf32);
    return NULL;
}

const void *dmv_span_kernel(int pps, int sbf32, int rb_max, int smem_sums, int rpc, int late) {
    if (smem_sums)
        return rpc == 2 ? (late ? span_pick<0, 2, true>(pps, sbf32) : span_pick<0, 2, false>(pps, sbf32))
               : late   ? span_pick<0, 1, true>(pps, sbf32)
                        : span_pick<0, 1, false>(pps, sbf32);
    if (rb_max <= SPAN_RB_SMALL) return span_pick<SPAN_RB_SMALL, 1, false>(pps, sbf32);
    if (rb_max <= SPAN_RB_MAX) return span_pick<SPAN_RB_MAX, 1, false>(pps, sbf32);
    return NULL;
}

int dmv_span_slots(const gcu_mat *m, size_t off, size_t keep, int warps, int rpc, int max_slots) {
    if (off + keep >= TMA_SMEM_MAX || warps < 1) return 0;
    long long S = (long long)(TMA_SMEM_MAX - off - keep) / ((long long)warps * SPAN_CHUNK * rpc * m->unit_bytes);
    if (S > TMA_SLOTS) S = TMA_SLOTS;
    if (max_slots > 0 && S > max_slots) S = max_slots;
    return S < 2 ? 0 : (int)S;
}
