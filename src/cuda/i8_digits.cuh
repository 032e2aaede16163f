/* i8_digits.cuh: the staged input of the decode matvecs, item by item: where item q's elements
 * are (dmv_item), and the integer path's digits of one item (dmv_i8_digits). One definition
 * for the places that stage digits: a consumer's prologue (decode_mv_i8.cuh, into its own
 * shared memory or, in a cluster, every block's) and gate/up's SwiGLU epilogue (mv_common.cuh,
 * into global memory for down's prologue to copy), so that all give the same bits. Device
 * code; included by mv_common.cuh. */
#ifndef GLIM_CUDA_I8_DIGITS_CUH
#define GLIM_CUDA_I8_DIGITS_CUH

#include "cuda/gcu.cuh"

#define DMV_I8_DIGITS 4   /* digit columns of B (decode_mv_i8.cuh) */
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

/* The digits of item q (its 8 values v, MLX 4-bit) as the four 8-byte words of the span's
 * layout above (DMV_I8_SPAN_U4 words per span), and its group's (E, sum x). The weight word
 * enters the tensor cores whole for the low nibbles' rows (each byte b = ql + 16 qh: no mask)
 * and as 16 qh for the high ones (w & 0xF0F0F0F0; decode_mv_i8.cuh), so the high rows' B takes
 * back the 16 qh x_lo the whole byte adds: with Zl = rint(x_lo 2^24 / E) for the low element of
 * a byte (elements {0,2,4,6}) and Zh = rint(x_hi 2^24 / (16 E)) for its high one ({1,3,5,7}),
 * the low rows carry the digits of Zl and the high rows those of Zz = Zh - Zl, so that
 * b Zl + 16 qh Zz = ql Zl + 16 qh Zh exactly, in the tensor cores' integer sums. A digit
 * column c weighs 2^(-8 c) (x / E = d0 + d1 / 2^8 + d2 / 2^16 + d3 / 2^24), and a value's digits
 * are its bytes: with Y = Z + 0x808080, d0 = Y's top byte (signed) and d1..d3 its bytes 2..0
 * less 128 (the byte xor 0x80), since Y = d0 2^24 + sum (u_i) 2^(8 i) with each u_i in [0, 255].
 * E = 2^e > max / 119 (from the exponent bits; at least 2^-100: smaller groups are zero to fp32
 * anyway; at most 2^126), so that |Zz| <= (119 + 119 / 16) 2^24 keeps d0 within [-127, 127]
 * and every Y within int32. x 2^24 / E is exact (powers of two), and its rounding to an
 * integer (cvt.rni: ties to even) is the one rounding: each x within 2^-25 E, the high ones'
 * within 2^-21 E. A NaN or infinite x makes E NaN, so that the products say so (its digits say
 * nothing). The whole warp calls it: the lp = 16 / pps lanes of a group (consecutive, q % lp ==
 * lane % lp) share its maximum and sum by shuffles, in a fixed tree. Until session 46 the
 * digits were base 2^7 by a floating-point rounding trick, the low nibbles masked (two
 * instructions more per word: 8 per unit) and the high ones' elements' x / 16 digit by digit. */
struct DmvI8Digits {
    uint2 w[DMV_I8_DIGITS]; /* digit c of the item's Zl {0,2,4,6} (x) and Zz {1,3,5,7} (y) */
    float2 ex;  /* the group's (E, sum x) */
};
/* byte b (0..3) of each of four words, as one word */
__device__ __forceinline__ uint32_t dmv_byte4(uint32_t a, uint32_t b, uint32_t c, uint32_t d, unsigned byte) {
    const unsigned s = byte | (byte + 4) << 4; /* a's byte, then b's */
    return __byte_perm(__byte_perm(a, b, s), __byte_perm(c, d, s), 0x5410);
}
__device__ __forceinline__ DmvI8Digits dmv_i8_digits(const float *v, int lp) {
    float mx = 0.0f, sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++) mx = fmaxf(mx, fabsf(v[k])), sum += v[k];
    for (int o = 1; o < lp; o <<= 1) {
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    }
    const int be = min(max((int)((__float_as_uint(mx * (1.0f / 119.0f)) >> 23) & 255u), 26), 252);
    const float E = isfinite(mx) ? __uint_as_float((uint32_t)(be + 1) << 23) : __int_as_float(0x7fc00000);
    /* 2^24 / E and 2^20 / E: exponent fields 277 - be and 273 - be, within [21, 251] */
    const float s24 = __uint_as_float((uint32_t)(277 - be) << 23), s20 = __uint_as_float((uint32_t)(273 - be) << 23);
    /* Zl + 0x808080 at even k, Zh - Zl + 0x808080 at odd k (unsigned: a NaN group's
     * conversions may be anything, and must not overflow a signed sum) */
    uint32_t Y[8];
#pragma unroll
    for (int k = 0; k < 8; k += 2) {
        const uint32_t zl = (uint32_t)__float2int_rn(v[k] * s24), zh = (uint32_t)__float2int_rn(v[k + 1] * s20);
        Y[k] = zl + 0x808080u;
        Y[k + 1] = zh - zl + 0x808080u;
    }
    DmvI8Digits o;
#pragma unroll
    for (int c = 0; c < DMV_I8_DIGITS; c++) {
        const uint32_t flip = c == 0 ? 0u : 0x80808080u;
        o.w[c] = make_uint2(dmv_byte4(Y[0], Y[2], Y[4], Y[6], 3 - c) ^ flip,
                            dmv_byte4(Y[1], Y[3], Y[5], Y[7], 3 - c) ^ flip);
    }
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
