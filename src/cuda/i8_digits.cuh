/* i8_digits.cuh: the staged input of the decode matvecs, item by item: where item q's elements
 * are (dmv_item), and the integer path's digits of one item (dmv_i8_digits). One definition
 * for the places that stage digits: a consumer's prologue (decode_mv_i8.cuh, into its own
 * shared memory or, in a cluster, every block's) and gate/up's SwiGLU epilogue (mv_common.cuh,
 * into global memory for down's prologue to copy), so that all give the same bits. Device
 * code; included by mv_common.cuh. */
#ifndef GLIM_CUDA_I8_DIGITS_CUH
#define GLIM_CUDA_I8_DIGITS_CUH

#include "cuda/gcu.cuh"

#define DMV_I8_DIGITS 4   /* digit columns of B (decode_mv_i8.cuh: the fourth only for the high nibbles) */
#define DMV_I8_SPAN_U4 32 /* 16-byte words of digits per span: 2 halves x 4 digits x 4 t x 16 bytes */
/* A span's digits are [half 2][digit 4][t 4][16 bytes]: half h holds items i = 2h, 2h + 1 (8
 * bytes each) of lane t, so that the 16 lanes reading one half read 256 contiguous bytes, free of
 * bank conflicts ([digit][t][i] put a lane's 32 bytes 32 apart: two passes per load) */
#define DMV_I8_HALF_U4 16 /* 16-byte words from a half to the next */
#define DMV_I8_DIGIT_U2 8 /* 8-byte words from digit c of an item to digit c + 1 */

/* Item q of the staged row (the 16 bytes of hi and of lo one lane reads): for MLX weights the 8
 * nibble positions e0 + {0,4,1,5,2,6,3,7} of span s = q / 16, word ow (the layout of gcu.cuh),
 * i.e. 8 elements (4-bit) or 4 elements as low and high nibble (8-bit, the high one x 16); for
 * dense weights 8 columns. Returns the first element and sets *ow. */
__device__ __forceinline__ int dmv_item(const gcu_xfmt &f, int q, int *ow) {
    if (f.kind == GCU_KIND_DENSE) return q * 8;
    /* gn is a power of two (32 .. 256: gcu_xfmt_make), so the words per group and their
     * quotients are shifts: a division by a run-time value is a conversion and a reciprocal on
     * the slow pipes, per item, on every prologue's critical path */
    const int s = q >> 4, it = q & 15, i = it >> 2, t = it & 3, wpg = f.gn >> 5, lw = __ffs(wpg) - 1;
    *ow = wpg >= 4 ? 4 * t + i : (i >> lw) * (f.gn >> 3) + t * wpg + (i & (wpg - 1));
    const int e0 = s * 128 + *ow * 8;
    return f.bits == 8 ? e0 >> 1 : e0;
}

/* The lanes of one group of the staged row, 16 / pps (pps 1, 2 or 4: the lanes are a power of
 * two), and the group of item q when groups are lp lanes: shifts, since a run-time division sits
 * on the staging's critical path. */
__device__ __forceinline__ int dmv_i8_group_lanes(int pps) { return 16 >> (__ffs(pps) - 1); }
__device__ __forceinline__ int dmv_i8_group(int q, int lp) { return q >> (__ffs(lp) - 1); }

/* The low bytes of four ints as one word (two byte permutes and a third to join them). */
__device__ __forceinline__ uint32_t dmv_pack4(int a, int b, int c, int d) {
    return __byte_perm(__byte_perm(a, b, 0x0040), __byte_perm(c, d, 0x0040), 0x5410);
}

/* The digits of item q (its 8 values v, MLX 4-bit) as the four 8-byte words of the span's
 * layout above (DMV_I8_SPAN_U4 words per span), and its group's (E, sum x). The elements
 * {0,2,4,6} (the weight word's low nibbles) are y = x / E as three digits, d0 + d1 / 2^7 +
 * d2 / 2^14 (digit 3 zero); the elements {1,3,5,7} (the high nibbles, which enter the tensor
 * cores as 16 q, the nibble unshifted: decode_mv_i8.cuh) are y / 16 as four, e0 + e1 / 2^7 +
 * e2 / 2^14 + e3 / 2^21 with |e0| <= 8, so that 16 q e sums to q y on the same columns, and to
 * a finer grain than the low nibbles' (2^-17 of E against 2^-15). The whole warp calls it: the
 * lp = 16 / pps lanes of a group (consecutive, q % lp == lane % lp) share its maximum and sum
 * by shuffles, in a fixed tree.
 * E = 2^e >= max / 127 from the exponent bits (at least 2^-100: smaller groups are zero to fp32
 * anyway; at most 2^126); a NaN or infinite x makes E NaN, so that the products say so. Digits
 * by the 1.5 * 2^23 rounding trick: exact for |y| < 2^22. t = y + R rounds y to the integer n
 * with t's bits 0x4B400000 + n, so n's byte is t's low byte (0x4B400000's is zero: no
 * subtraction before dmv_pack4 keeps the low bytes); the remainder 128 (y - n) is one fma of y
 * with -128 n = fma(t, -128, 128 R), both exact (|n| <= 127, and y - n is a multiple of y's
 * ulp no larger than 1/2), so it equals (y - (t - R)) * 128 bit for bit in one op fewer; and
 * y = x / E itself is folded into the first two fmas (x times the powers of two 1/E and 128/E),
 * which changes a remainder only where x / E underflows (|y| < 2^-126: every digit 0 either
 * way). Session 16 checked on the CPU that the digit bytes equal the old formula's for 26.5 M
 * values (ties, tiny and random bit patterns, E from 2^-100 to 2^126), and test_cuda_kernels'
 * i8_digits_bytes holds the GPU's against the definition: the staging runs 512 threads x ~200
 * instructions per round (two rounds for a 6656-wide row) in every block's prologue, and these
 * were 48 of them per item before session 46's fourth digit of the high elements (3 more fmas
 * and an add each). */
struct DmvI8Digits {
    uint2 w[DMV_I8_DIGITS]; /* digit c of the item's elements {0,2,4,6} (x) and {1,3,5,7} (y) */
    float2 ex;  /* the group's (E, sum x) */
};
__device__ __forceinline__ DmvI8Digits dmv_i8_digits(const float *v, int lp) {
    float mx = 0.0f, sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++) mx = fmaxf(mx, fabsf(v[k])), sum += v[k];
    for (int o = 1; o < lp; o <<= 1) {
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    }
    const int be = min(max((int)((__float_as_uint(mx * (1.0f / 127.0f)) >> 23) & 255u), 26), 252);
    const float E = isfinite(mx) ? __uint_as_float((uint32_t)(be + 1) << 23) : __int_as_float(0x7fc00000);
    const float inv = __uint_as_float((uint32_t)(253 - be) << 23), R = 12582912.0f, R128 = 128.0f * R;
    int dg[4][8]; /* the digits in their low bytes (the rest is t's exponent: dmv_pack4 drops it) */
#pragma unroll
    for (int k = 0; k < 8; k++) {
        /* y = v inv is never formed: t0 = fma(v, inv, R), r0 = fma(v, 128 inv, -128 n); the high
         * nibbles' elements (odd k) take inv / 16, a power of two too (inv >= 2^-126, so inv / 16
         * is at least 2^-130: subnormal, kept, since this code is not compiled to flush them) */
        const float iv = (k & 1) ? inv * 0.0625f : inv;
        const float t0 = __fmaf_rn(v[k], iv, R), r0 = __fmaf_rn(v[k], iv * 128.0f, __fmaf_rn(t0, -128.0f, R128));
        const float t1 = r0 + R, r1 = __fmaf_rn(r0, 128.0f, __fmaf_rn(t1, -128.0f, R128)), t2 = r1 + R;
        dg[0][k] = __float_as_int(t0);
        dg[1][k] = __float_as_int(t1);
        dg[2][k] = __float_as_int(t2);
        if (k & 1) dg[3][k] = __float_as_int(__fmaf_rn(r1, 128.0f, __fmaf_rn(t2, -128.0f, R128)) + R);
    }
    DmvI8Digits o;
#pragma unroll
    for (int c = 0; c < 3; c++)
        o.w[c] = make_uint2(dmv_pack4(dg[c][0], dg[c][2], dg[c][4], dg[c][6]),
                            dmv_pack4(dg[c][1], dg[c][3], dg[c][5], dg[c][7]));
    o.w[3] = make_uint2(0u, dmv_pack4(dg[3][1], dg[3][3], dg[3][5], dg[3][7]));
    o.ex = make_float2(E, sum);
    return o;
}

/* Where item q's words go: the uint2 index of digit 0 from the row's start (digit c is
 * DMV_I8_DIGIT_U2 further on per c). */
__device__ __forceinline__ int dmv_i8_word(int q) {
    const int s = q >> 4, i = (q >> 2) & 3, t = q & 3;
    return s * DMV_I8_SPAN_U4 * 2 + (i >> 1) * DMV_I8_HALF_U4 * 2 + t * 2 + (i & 1);
}

/* Item q's digits o (dmv_i8_digits) written at dig (digits) and ex (the groups' (E, sum), by
 * each group's first lane), shared or global memory; lanes with valid == false write nothing.
 * The second half of dmv_i8_item, apart so that the span kernel can make a pair's digits during
 * the previous pair's units and write them once that pair is done (GLIM_CUDA_SPAN_AHEAD). */
__device__ __forceinline__ void dmv_i8_put(const DmvI8Digits &o, int q, bool valid, int lp, int lane,
                                           unsigned char *dig, float2 *ex) {
    if (!valid) return;
    uint2 *dst = (uint2 *)dig + dmv_i8_word(q);
#pragma unroll
    for (int c = 0; c < DMV_I8_DIGITS; c++) dst[c * DMV_I8_DIGIT_U2] = o.w[c];
    if ((lane & (lp - 1)) == 0) ex[dmv_i8_group(q, lp)] = o.ex;
}
/* Item q's values v made into digits and written as dmv_i8_put writes them; lanes with valid ==
 * false take part (the group's shuffles) with zeros and write nothing. */
__device__ __forceinline__ void dmv_i8_item(const float *v, int q, bool valid, int lp, int lane, unsigned char *dig,
                                            float2 *ex) {
    dmv_i8_put(dmv_i8_digits(v, lp), q, valid, lp, lane, dig, ex);
}

/* The same into the shared memory of every block of the cluster (ranks 0..ncta-1), at the
 * blocks' common offsets dig and ex (this block's shared-memory addresses, gcu_smem_addr). */
__device__ __forceinline__ void dmv_i8_item_cluster(const float *v, int q, bool valid, int lp, int lane,
                                                    unsigned dig, unsigned ex, int ncta) {
    const DmvI8Digits o = dmv_i8_digits(v, lp);
    if (!valid) return;
    const unsigned dst = dig + 8u * (unsigned)dmv_i8_word(q), ed = ex + 8u * (unsigned)dmv_i8_group(q, lp);
    const bool head = (lane & (lp - 1)) == 0;
    for (int r = 0; r < ncta; r++) {
#pragma unroll
        for (int c = 0; c < DMV_I8_DIGITS; c++) gcu_st_cluster(gcu_cluster_map(dst + 8u * DMV_I8_DIGIT_U2 * c, (unsigned)r), o.w[c]);
        if (head) gcu_st_cluster(gcu_cluster_map(ed, (unsigned)r), make_uint2(__float_as_uint(o.ex.x), __float_as_uint(o.ex.y)));
    }
}

/* Bytes of a row staged as digits for format f: the digits, then (16-byte aligned) the float2
 * (E, sum) per group; dmv_i8_ex_offset is where the latter begin. */
__host__ __device__ __forceinline__ size_t dmv_i8_ex_offset(const gcu_xfmt &f) {
    return (size_t)f.nspan * DMV_I8_SPAN_U4 * 16;
}
__host__ __device__ __forceinline__ size_t dmv_i8_ex_bytes(const gcu_xfmt &f) {
    return ((size_t)f.nspan * f.pps * 8 + 15) & ~(size_t)15;
}

#endif
