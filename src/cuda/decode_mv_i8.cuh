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
 * 2^(-8 c)); each m16n8k32 sums 32 products exactly in 32 bits. Its k rows 0..15 take one word of
 * the unit and rows 16..31 another, of another group (dmv_i8_pair_mma), the first word's digits
 * in columns 0..3 and the second's in 4..7, so that per group the lanes t = 0 / 2 hold the digit
 * 0 and 1 sums (combined as 256 D0 + D1 in int32: |D| <= 2 32 255 128 for groups of 64, so
 * 256 D0 + D1 < 2^30) and t = 1 / 3 the digit 2 and 3 sums (256 D2 + D3, weight 2^-24); each
 * converts to fp32 once (the one rounding of the combination: 2^-24 of it), and a row block's
 * four lanes t add up at its end (dmv_i8_lane_sum, decode_mv.cuh). Each x is within 2^-25 E (the
 * high ones' 2^-21 E) of its digits. No offset on the weights, so the bias term is bias * sum(x)
 * with the plain sum. Until session 45 the high nibbles were shifted down and masked and the low
 * ones masked (24 instructions a unit to widen, now 8), the digits base 2^7 by a floating-point
 * rounding trick; session 46 took the shift, then the low mask; session 47 put two groups in each
 * instruction, halving the conversions and scalings per unit (until then the lanes t = 2, 3 summed
 * zero columns).
 *
 * Shared memory: digits at m.sx, [span][half 2][digit 4][t 4][i 2][8 bytes] (i8_digits.cuh):
 * the 8 bytes of (i, t) are the digits of the item's Zl (for the instruction on the whole
 * bytes) then of Zh - Zl (for the one on the high nibbles), at B rows 4t..4t+3 for the first
 * half's items and 16+4t.. for the second's. (E, sum x) per
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

/* Lane (g, t)'s 16 bytes of digits in the staged row's first span: the word numbered as the lane
 * (half g / 4, digit column g % 4, items t), so a warp reads one span's 512 bytes in one pass.
 * The columns 0..3 of B carry the first half's words (items 0, 1: the unit's words 0 and 1), the
 * columns 4..7 the second half's (words 2 and 3) at the other 16 rows of k: see dmv_i8_pair_mma. */
__device__ __forceinline__ const uint4 *dmv_i8_lane_digits(const void *sx, int lane) {
    return (const uint4 *)sx + lane;
}

/* The lane's B operands from its 16 bytes b: lo (k rows 0..15, the pair's first word) is b on
 * the lanes of columns g < 4 and zero on the others, hi (k rows 16..31, the second word) the
 * opposite; all zero where !valid (a span past the warp's). */
struct I8LaneB {
    uint4 lo, hi;
};
__device__ __forceinline__ I8LaneB dmv_i8_lane_b(const uint4 *dp, bool valid, int g) {
    const uint4 z = make_uint4(0, 0, 0, 0), b = valid ? dp[0] : z;
    I8LaneB r;
    r.lo = g < DMV_I8_DIGITS ? b : z;
    r.hi = g < DMV_I8_DIGITS ? z : b;
    return r;
}

/* Lane (g, t)'s weight of its two digit sums, 256 D + D': 2^-8 for t = 0, 2 (digits 0 and 1 of
 * its group), 2^-24 for t = 1, 3 (digits 2 and 3). One definition for every loop on the integer
 * path, since it follows the digits' base. */
__device__ __forceinline__ float dmv_i8_lane_weight(int t) { return (t & 1) ? 1.0f / 16777216.0f : 1.0f / 256.0f; }

/* Pair j (0, 1) of a unit's words on the integer tensor cores: word j at k rows 0..15 (B columns
 * 0..3 hold its digits) and word j + 2 at k rows 16..31 (columns 4..7 hold theirs), so that one
 * m16n8k32 gives the lanes t = 0, 1 the sums of word j's group and the lanes t = 2, 3 those of
 * word j + 2's, and every lane's output is some group's digit sums (with the digits in columns
 * 0..3 only, as until session 47, the lanes t = 2, 3 summed zeros and each group paid its own
 * conversion and scaling on every lane). Two instructions per pair: the whole bytes against the
 * items' low-row digits (x, z of b), then the high nibbles as 16 q (w & 0xF0F0F0F0) against the
 * high rows' (y, w). dd += rows g and g + 8. The four words of the first instruction are the
 * lane's 16-byte word j of the unit as laid out (gcu_unit_q_w32), so they enter it from the
 * registers of its load as they are (since session 48; before, register moves gathered them:
 * 35 of them a chunk of the span loop). */
template <int PPS, bool SBF32>
__device__ __forceinline__ void dmv_i8_pair_mma(const MvSlot<GCU_KIND_Q, PPS, SBF32> &s, const I8LaneB &b, int j,
                                                int dd[4]) {
    const uint32_t M = 0x0F0F0F0Fu;
    const uint32_t wg0 = u4w(s.a0, j), wh0 = u4w(s.a1, j), wg1 = u4w(s.a0, j + 2), wh1 = u4w(s.a1, j + 2);
    gcu_imma(dd, wg0, wh0, wg1, wh1, j ? b.lo.z : b.lo.x, j ? b.hi.z : b.hi.x);
    gcu_imma(dd, wg0 & ~M, wh0 & ~M, wg1 & ~M, wh1 & ~M, j ? b.lo.w : b.lo.y, j ? b.hi.w : b.hi.y);
}

/* The unit's groups a lane's sums belong to: sums e (0 .. DmvI8Sums::N - 1: one per unit for
 * groups of 64, one per pair for groups of 32) are of group e + PPS / 2 on the lanes t = 2, 3
 * (word j + 2's), of group e on the others. The integer path serves groups of 32 and 64 (PPS 4
 * and 2: dmv_i8 in decode_mv.cu); PPS 1 (groups of 128, one group per span, both words of a pair
 * in it) is instantiated but never run, and kept correct. */
template <int PPS>
struct DmvI8Sums {
    static constexpr int N = PPS > 1 ? PPS / 2 : 1;
};
template <int PPS>
__device__ __forceinline__ int dmv_i8_lane_group(int e, int t) {
    return e + (t >= 2 ? PPS / 2 : 0);
}

/* One span's per-lane factors on the integer path, for each of its sums e: ec = E cw (E of the
 * lane's group, cw its weight of 256 D + D') and X = sum x of that group (the bias term's factor;
 * 0 but on each group's first lane, t = 0 or 2, so that each group's bias enters once). Loop
 * invariant across the row blocks of a span: the span-major loop (decode_mv_span.cu) keeps them
 * in registers for all of a warp's units of the span instead of reading ep again per unit (the
 * mbarrier waits and the warp syncs between units keep the compiler from hoisting those loads). */
template <int PPS>
struct I8SpanF {
    float ec[DmvI8Sums<PPS>::N], X[DmvI8Sums<PPS>::N];
};
template <int PPS>
__device__ __forceinline__ I8SpanF<PPS> dmv_i8_span_factors(const float2 *ep, int t) {
    I8SpanF<PPS> f;
    const float cw = dmv_i8_lane_weight(t);
#pragma unroll
    for (int e = 0; e < DmvI8Sums<PPS>::N; e++) {
        const int gr = dmv_i8_lane_group<PPS>(e, t);
        const float2 v = ep[gr];
        f.ec[e] = v.x * cw;
        f.X[e] = t == 0 || (t == 2 && gr != e) ? v.y : 0.0f;
    }
    return f;
}

/* One unit on the integer path with the lane's B operands of the span in registers (b) and the
 * span's factors f: acc[0] (row g) and acc[1] (row g + 8) += this lane's share (its group's
 * scale and bias picked from the unit's words by t; HALF: s.sb holds the lane's groups only,
 * tma_unit_load's HALF). */
template <int PPS, bool SBF32, bool HALF = false>
__device__ __forceinline__ void dmv_unit_i8_f(const MvSlot<GCU_KIND_Q, PPS, SBF32> &s, const I8LaneB &b,
                                              const I8SpanF<PPS> &f, float *acc) {
    constexpr int NE = DmvI8Sums<PPS>::N;
    int dd[NE][4];
#pragma unroll
    for (int e = 0; e < NE; e++) dd[e][0] = dd[e][1] = dd[e][2] = dd[e][3] = 0;
#pragma unroll
    for (int j = 0; j < 2; j++) dmv_i8_pair_mma(s, b, j, dd[j & (NE - 1)]);
    const int t = threadIdx.x & 3;
#pragma unroll
    for (int e = 0; e < NE; e++) {
        float sg, bg, sh, bh;
        if constexpr (HALF) mv_scales_of<PPS, SBF32>(s.sb, e, &sg, &bg, &sh, &bh);
        else mv_scales_pick<PPS, SBF32>(s.sb, e, dmv_i8_lane_group<PPS>(e, t) != e, &sg, &bg, &sh, &bh);
        acc[0] = fmaf(sg * f.ec[e], (float)(dd[e][0] * 256 + dd[e][1]), fmaf(bg, f.X[e], acc[0]));
        acc[1] = fmaf(sh * f.ec[e], (float)(dd[e][2] * 256 + dd[e][3]), fmaf(bh, f.X[e], acc[1]));
    }
}

/* One unit on the integer path: acc[0] (row g) and acc[1] (row g + 8) += this lane's share.
 * dp: the lane's 16 bytes of digits for the span (dmv_i8_lane_digits), ep: the span's (E, sum x)
 * per group. */
template <int PPS, bool SBF32>
__device__ __forceinline__ void dmv_unit_i8(const MvSlot<GCU_KIND_Q, PPS, SBF32> &s, const uint4 *dp,
                                            const float2 *ep, float *acc) {
    const int lane = threadIdx.x & 31;
    dmv_unit_i8_f<PPS, SBF32>(s, dmv_i8_lane_b(dp, true, lane >> 2), dmv_i8_span_factors<PPS>(ep, lane & 3), acc);
}

#endif
