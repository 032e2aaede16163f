/* decode_mv_i8.cuh: the integer path of the decode matvec for MLX 4-bit (GLIM_CUDA_I8): the
 * input row staged as signed 8-bit digits, and one weight unit on the integer tensor cores.
 * Included by decode_mv.cuh. */
#ifndef GLIM_CUDA_DECODE_MV_I8_CUH
#define GLIM_CUDA_DECODE_MV_I8_CUH

/* ---- the integer path (MLX 4-bit) ---------------------------------------------------------
 * The 4-bit values enter the integer tensor cores as unsigned bytes, one mask per 8 values: a
 * weight word whole for the rows of its low nibbles (each byte ql + 16 qh) and its high nibbles
 * in place as 16 qh (w & 0xF0F0F0F0), against two instructions per pair for bf16; x as signed
 * bytes, the digits of i8_digits.cuh: per group of the weights E a power of two, per low
 * element Zl = rint(x 2^24 / E), per high one Zh = rint(x 2^24 / (16 E)), the low rows' B the
 * base-256 digits of Zl and the high rows' those of Zh - Zl, so that the whole byte's extra
 * 16 qh Zl cancels inside the integer sums. The digits are four columns of B (column c weighs
 * 2^(-8 c)); each m16n8k32 sums 32 products exactly in 32 bits, and per group lane t = 0 holds
 * the digit 0 and 1 sums (combined as 256 D0 + D1 in int32: |D| <= 2 32 255 128 for groups of
 * 64, so 256 D0 + D1 < 2^30), lane t = 1 the digit 2 and 3 sums (256 D2 + D3, weight 2^-24);
 * each converts to fp32 once (the one rounding of the combination: 2^-24 of it). Each x is
 * within 2^-25 E (the high ones' 2^-21 E) of its digits. No offset on the weights, so the bias
 * term is bias * sum(x) with the plain sum. Until session 45 the high nibbles were shifted down
 * and masked and the low ones masked (24 instructions a unit to widen, now 8), the digits base
 * 2^7 by a floating-point rounding trick; session 46 took the shift, then the low mask.
 *
 * Shared memory: digits at m.sx, [span][half 2][digit 4][t 4][i 2][8 bytes] (i8_digits.cuh):
 * the 8 bytes of (i, t) are the digits of the item's elements {0,2,4,6} (B rows 4t..4t+3) then
 * {1,3,5,7} (rows 16+4t..), the order in which the low and high nibbles of the weight word land
 * in A. (E, sum x) per
 * group as float2 at m.isum (i8_digits.cuh: dmv_i8_item). */

/* Stages the fp32 row src (m.row in shared memory, or with GSRC the raw input in global memory)
 * as digits. Item q (8 elements, one weight word of one lane) is a thread; the items of one
 * group are 16 / pps consecutive lanes, which share the group's maximum and sum by shuffles.
 * Deterministic (fixed shuffle trees). In a cluster of ncta blocks (k_dmv_tma, GLIM_CUDA_CLUSTER)
 * the block of rank `rank` stages spans [nspan rank / ncta, nspan (rank+1) / ncta) into every
 * block's shared memory, so that each computes (and, from global memory, reads) 1/ncta of the
 * row: the same digits, item by item, as one block staging it all. */
#ifndef DMV_I8_BATCH
#define DMV_I8_BATCH 5 /* down's 2496 items in one batch (4: two, the second a round trip more) */
#endif
template <bool GSRC>
static __device__ void dmv_stage_i8_from(const DmvArgs &d, const DmvSmem &m, const float *src, int rank = 0,
                                         int ncta = 1) {
    const gcu_xfmt &f = d.f;
    const int K = d.K, lane = threadIdx.x & 31, lp = dmv_i8_group_lanes(f.pps);
    const int q0 = ncta == 1 ? 0 : 16 * (f.nspan * rank / ncta);
    const int q1 = min(f.kx / 8, ncta == 1 ? 16 * f.nspan : 16 * (f.nspan * (rank + 1) / ncta));
    float2 *ex = (float2 *)m.isum;
    const unsigned cdig = gcu_smem_addr(m.sx), cex = gcu_smem_addr(ex);
    /* rounds of one item per lane, DMV_I8_BATCH rounds' loads issued before the first is used
     * (one round trip per batch: down's 19968-wide row is 5 rounds). The rounds are then staged
     * by one copy of the digits' code, the batch shifted down a round each time (session 12
     * measured that faster than a copy per round and blamed instruction fetch; session 14's
     * rehearsal of the prologue found its time to be execution, not fetch: bench/wip's
     * staging_two_rounds.patch computes two rounds at a time). From shared memory (RESID/NORM)
     * there is no latency to batch against. */
    constexpr int NB = GSRC ? DMV_I8_BATCH : 1;
    for (int base0 = q0 + (threadIdx.x >> 5) * 32; base0 < q1; base0 += NB * DMV_THREADS) {
        float vb[NB][8];
#pragma unroll
        for (int r = 0; r < NB; r++) {
            const int q = base0 + r * DMV_THREADS + lane;
            int ow = 0;
            if (q < q1) dmv_load_n<GSRC>(src, dmv_item(f, q, &ow), 8, K, vb[r]);
            else
                for (int k = 0; k < 8; k++) vb[r][k] = 0.0f;
        }
#pragma unroll 1
        for (int r = 0; r < NB; r++) {
            const int base = base0 + r * DMV_THREADS;
            if (base >= q1) break; /* warp-uniform */
            const int q = base + lane; /* the whole warp runs each round: the shuffles need it */
            if (ncta > 1) dmv_i8_item_cluster(vb[0], q, q < q1, lp, lane, cdig, cex, ncta);
            else dmv_i8_item(vb[0], q, q < q1, lp, lane, (unsigned char *)m.sx, ex);
#pragma unroll
            for (int k = 0; k + 1 < NB; k++)
#pragma unroll
                for (int e = 0; e < 8; e++) vb[k][e] = vb[k + 1][e];
        }
    }
}
static __device__ __forceinline__ void dmv_stage_i8(const DmvArgs &d, const DmvSmem &m) {
    dmv_stage_i8_from<false>(d, m, m.row);
}

/* The lane's digits in the staged row's first span (lane (g, t) reads digit column
 * g < DMV_I8_DIGITS of its items t; the other lanes read zeros in dmv_unit_i8). */
__device__ __forceinline__ const uint4 *dmv_i8_lane_digits(const void *sx, int g, int t) {
    return (const uint4 *)sx + (g < DMV_I8_DIGITS ? g : 0) * 4 + t;
}

/* Lane (g, t)'s weight of its two digit sums, 256 D_2t + D_2t+1: 2^-8 for t = 0 (digits 0 and
 * 1), 2^-24 for t = 1 (digits 2 and 3), 0 for the lanes whose columns hold no digits. One
 * definition for every loop on the integer path, since it follows the digits' base. */
__device__ __forceinline__ float dmv_i8_lane_weight(int t) {
    return t == 0 ? 1.0f / 256.0f : t == 1 ? 1.0f / 16777216.0f : 0.0f;
}

/* Word i (0..3) of a unit on the integer tensor cores: dd += its 32 4-bit values of rows g and
 * g + 8 (the whole bytes, then the high nibbles as 16 q) times the digits of the matching items
 * (half i / 2 of b01 / b23, item i % 2). */
template <int PPS, bool SBF32>
__device__ __forceinline__ void dmv_i8_word_mma(const MvSlot<GCU_KIND_Q, PPS, SBF32> &s, const uint4 &b01,
                                                const uint4 &b23, int i, int dd[4]) {
    const uint32_t M = 0x0F0F0F0Fu;
    const uint32_t wg = u4w(s.a0, i), wh = u4w(s.a1, i);
    const uint4 &b = i < 2 ? b01 : b23;
    const uint32_t bl = (i & 1) ? b.z : b.x, bh = (i & 1) ? b.w : b.y;
    gcu_imma(dd, wg, wh, wg & ~M, wh & ~M, bl, bh);
}

/* One span's per-group factors of a lane on the integer path: ec = E cw (the weight of the lane's
 * 256 D0 + D1 or 256 D2 + D3 sum) and X = sum x (the bias term's factor; 0 but on the lanes t = 0). Loop
 * invariant across the row blocks of a span: the span-major loop (decode_mv_span.cu) keeps them
 * in registers for all of a warp's units of the span instead of reading ep again per unit (the
 * mbarrier waits and the warp syncs between units keep the compiler from hoisting those loads). */
template <int PPS>
struct I8SpanF {
    float ec[PPS], X[PPS];
};
template <int PPS>
__device__ __forceinline__ I8SpanF<PPS> dmv_i8_span_factors(const float2 *ep, float cw, bool xvalid) {
    I8SpanF<PPS> f;
#pragma unroll
    for (int pc = 0; pc < PPS; pc++) {
        const float2 e = ep[pc];
        f.ec[pc] = e.x * cw;
        f.X[pc] = xvalid ? e.y : 0.0f;
    }
    return f;
}

/* One unit on the integer path with the lane's digits of the span in registers (b01, b23: dp[0]
 * and dp[DMV_I8_HALF_U4], zero where !bvalid) and the span's factors f. */
template <int PPS, bool SBF32>
__device__ __forceinline__ void dmv_unit_i8_f(const MvSlot<GCU_KIND_Q, PPS, SBF32> &s, const uint4 &b01,
                                              const uint4 &b23, const I8SpanF<PPS> &f, float *acc) {
#pragma unroll
    for (int pc = 0; pc < PPS; pc++) {
        int dd[4] = {0, 0, 0, 0};
#pragma unroll
        for (int ii = 0; ii < 4 / PPS; ii++) dmv_i8_word_mma(s, b01, b23, pc * (4 / PPS) + ii, dd);
        float sg, bg, sh, bh;
        mv_scales(s, pc, &sg, &bg, &sh, &bh);
        acc[0] = fmaf(sg * f.ec[pc], (float)(dd[0] * 256 + dd[1]), fmaf(bg, f.X[pc], acc[0]));
        acc[1] = fmaf(sh * f.ec[pc], (float)(dd[2] * 256 + dd[3]), fmaf(bh, f.X[pc], acc[1]));
    }
}

/* dmv_unit_i8 (below) with the lane's digits of the span already in registers, the factors read
 * from ep (the span's (E, sum x) per group). */
template <int PPS, bool SBF32>
__device__ __forceinline__ void dmv_unit_i8_held(const MvSlot<GCU_KIND_Q, PPS, SBF32> &s, const uint4 &b01,
                                                 const uint4 &b23, const float2 *ep, float cw, bool xvalid,
                                                 float *acc) {
    dmv_unit_i8_f<PPS, SBF32>(s, b01, b23, dmv_i8_span_factors<PPS>(ep, cw, xvalid), acc);
}
/* One unit on the integer path: acc[0] (row g) and acc[1] (row g+8) += this lane's share.
 * dp: the lane's two 16-byte words of digits for the span, one per half (column g < DMV_I8_DIGITS;
 * others zero), ep: the span's (E, sum x) per group, cw: the lane's weight of its sums
 * (dmv_i8_lane_weight). */
template <int PPS, bool SBF32>
__device__ __forceinline__ void dmv_unit_i8(const MvSlot<GCU_KIND_Q, PPS, SBF32> &s, const uint4 *dp, bool bvalid,
                                            const float2 *ep, float cw, bool xvalid, float *acc) {
    const uint4 z = make_uint4(0, 0, 0, 0), b01 = bvalid ? dp[0] : z, b23 = bvalid ? dp[DMV_I8_HALF_U4] : z;
    dmv_unit_i8_held<PPS, SBF32>(s, b01, b23, ep, cw, xvalid, acc);
}

#endif
