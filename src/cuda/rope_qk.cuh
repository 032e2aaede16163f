/* rope_qk.cuh: the per-head q/k preparation shared by rope_qk.cu (its own kernel, for chunks
 * of tokens) and attention.cu (fused into decode attention): the weightless RMS norm over the
 * head (sum of squares in double, as the oracle), the q multiplier, NeoX RoPE at `pos`. The
 * products are rounded separately (no fused multiply-add), as the CPU twin computes them. */
#ifndef GLIM_CUDA_ROPE_QK_CUH
#define GLIM_CUDA_ROPE_QK_CUH

#include "cuda/gcu.cuh"

/* RoPE's cosines and sines at `pos` for this lane's pairs d = lane + 32 k (k < 4: D <= 256).
 * They depend on no activation, so decode attention computes them before its PDL wait. */
struct GcuRope {
    float c[4], s[4];
};
__device__ __forceinline__ GcuRope gcu_rope_at(const float *inv_freq, int D, int pos, int lane) {
    GcuRope r;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int d = lane + 32 * k;
        const float angle = d < D / 2 ? __fmul_rn((float)pos, inv_freq[d]) : 0.0f;
        r.c[k] = cosf(angle);
        r.s[k] = sinf(angle);
    }
    return r;
}

/* One warp: dst[0..D) (shared memory) = rope(norm(src) * mul), with rope's factors from
 * gcu_rope_at (has_rope false: no RoPE). W128: D is 128 (the caller knows it at compile time). */
template <bool W128 = false>
__device__ __forceinline__ void gcu_prep_head_at(const float *src, float *dst, int D, float eps, float mul,
                                                 const GcuRope &rope, bool has_rope, int lane) {
    float r[8]; /* D <= 256: all loads first, one memory round trip */
#pragma unroll
    for (int k = 0; k < 8; k++) r[k] = lane + 32 * k < D ? src[lane + 32 * k] : 0.0f;
    double ss = 0.0;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        if (!W128 && lane + 32 * k < D) dst[lane + 32 * k] = r[k];
        ss += (double)r[k] * (double)r[k];
    }
    ss = gcu_warp_sum_d(ss);
    float inv = 1.0f / sqrtf((float)(ss / D) + eps);
    if (W128) {
        /* the model's width (decode attention's SPEC instance): a lane holds both
         * halves of its rotation pairs (d and d + 64 are its k and k + 2), so the same products
         * are taken in registers, without the two passes through dst and their syncwarps */
        float x[4];
#pragma unroll
        for (int k = 0; k < 4; k++) x[k] = __fmul_rn(__fmul_rn(r[k], inv), mul);
        if (has_rope) {
#pragma unroll
            for (int k = 0; k < 2; k++) {
                const float c = rope.c[k], s = rope.s[k], a = x[k], b = x[k + 2];
                x[k] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
                x[k + 2] = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
            }
        }
#pragma unroll
        for (int k = 0; k < 4; k++) dst[lane + 32 * k] = x[k];
        __syncwarp();
        return;
    }
    __syncwarp();
    for (int d = lane; d < D; d += 32) dst[d] = __fmul_rn(__fmul_rn(dst[d], inv), mul);
    __syncwarp();
    if (has_rope) {
        const int half = D / 2;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int d = lane + 32 * k;
            if (d >= half) break;
            const float c = rope.c[k], s = rope.s[k];
            const float a = dst[d], b = dst[d + half];
            dst[d] = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
            dst[d + half] = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
        }
        __syncwarp();
    }
}

/* The same computing the factors here (inv_freq NULL: no RoPE). */
__device__ __forceinline__ void gcu_prep_head(const float *src, float *dst, int D, float eps,
                                              float mul, const float *inv_freq, int pos,
                                              int lane) {
    GcuRope rope = {};
    if (inv_freq) rope = gcu_rope_at(inv_freq, D, pos, lane);
    gcu_prep_head_at(src, dst, D, eps, mul, rope, inv_freq != NULL, lane);
}

/* Writes k and v element o of the cache (bf16, or f32 when kv32). */
__device__ __forceinline__ void gcu_kv_store(const gcu_attn_call &a, size_t o, float k, float v) {
    if (a.kv32) {
        ((float *)a.kc)[o] = k;
        ((float *)a.vc)[o] = v;
    } else {
        ((__nv_bfloat16 *)a.kc)[o] = __float2bfloat16_rn(k);
        ((__nv_bfloat16 *)a.vc)[o] = __float2bfloat16_rn(v);
    }
}

#endif
