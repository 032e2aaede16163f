/* mv_common.cuh: what the two matrix-vector kernels share (qmatvec.cu: prefill and small
 * batches; decode_mv.cu: one token with its input staged in the kernel itself): the argument
 * block, the weight loads, the epilogues, and the stream-K merge of row blocks cut between
 * warps; and (host) the argument block's common fields from a call. Included by those two
 * files and by prefill_gemm.cu. */
#ifndef GLIM_CUDA_MV_COMMON_CUH
#define GLIM_CUDA_MV_COMMON_CUH

#include <string.h>

#include "cuda/gcu.cuh"
#include "cuda/i8_digits.cuh"

#ifndef MV1_MIN_BLOCKS
#define MV1_MIN_BLOCKS 3 /* decode matvec blocks per SM: 80 registers, no spills */
#endif

struct MvArgs {
    const uint4 *w;
    long long nunits;
    int nspan, unit_u4;
    const __nv_bfloat16 *xs;
    const float *xsum;
    int kx, T, W;
    int epi;
    float *out;
    int ldo, out_rows;
    float mult, cap;
    float2 *partial;
    int *counters;
    int pf;
    int cs;     /* shared-memory column stride in bf16 (SMEM variant) */
    float qoff; /* the centring the A values carry: 8 (4-bit), 8 + 16*8 = 136 (8-bit) */
    /* SWIGLU, one token: stage the output for the next matvec here (the warp completing the
     * last row block of a span stages that span) instead of in a separate kernel or in the
     * consumer's prologue. fuse 1: bf16 hi/lo into sxs / sxsum (the generic path's format);
     * 2: the integer path's digits into sdig, (E, sum) per group into sex (down's prologue on
     * the shared-memory ring copies them whole) */
    int fuse, span_rbs;
    gcu_xfmt sf;
    __nv_bfloat16 *sxs;
    float *sxsum;
    unsigned char *sdig;
    float2 *sex;
    int *span_cnt;
    int fence_sc; /* gcu_fence_gpu's choice for the merges below */
};

/* (host) The fields of a call both of qmatvec.cu's launchers fill alike: the matrix, the staged
 * input, the tokens, the epilogue and its output, the counters, the nibbles' offset. */
static inline MvArgs mv_args_of(const gcu_mv_call *c) {
    const gcu_mat *m = c->m;
    MvArgs a;
    memset(&a, 0, sizeof a);
    a.w = m->w;
    a.nunits = (long long)m->nrb * m->f.nspan;
    a.nspan = m->f.nspan;
    a.unit_u4 = m->unit_bytes / 16;
    a.xs = c->xs;
    a.xsum = c->xsum;
    a.kx = m->f.kx;
    a.T = c->T;
    a.epi = c->epi;
    a.out = c->out;
    a.ldo = c->ldo;
    a.out_rows = c->out_rows;
    a.mult = c->mult;
    a.cap = c->cap;
    a.counters = c->counters;
    a.qoff = m->f.bits == 8 ? 136.0f : 8.0f;
    return a;
}

__device__ __forceinline__ uint64_t mv_policy() {
    uint64_t p;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ uint4 mv_ld(const uint4 *p, uint64_t pol) {
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p), "l"(pol));
    return r;
}
__device__ __forceinline__ uint32_t u4w(const uint4 &v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

template <int KIND, int PPS, bool SBF32>
struct MvSlot {
    static constexpr int SBW = KIND == GCU_KIND_Q ? 2 * PPS * (SBF32 ? 2 : 1) : 1;
    uint4 a0, a1;
    uint32_t sb[SBW];
};

/* A lane's rows of an MLX unit in place: from its two 16-byte words as laid out
 * (gcu_unit_q_w32) in a0, a1 to its 4 words of row g in a0 and of row g + 8 in a1. A renaming
 * of registers: where a reader uses the words as laid out (dmv_i8_pair_mma: they are its A
 * operands) no instruction is left. */
__device__ __forceinline__ void mv_q_rows(uint4 &a0, uint4 &a1) {
    const uint4 q0 = a0, q1 = a1;
    a0 = make_uint4(q0.x, q1.x, q0.z, q1.z);
    a1 = make_uint4(q0.y, q1.y, q0.w, q1.w);
}

/* Loads one unit at up (running pointer). */
template <int KIND, int PPS, bool SBF32>
__device__ __forceinline__ void mv_load_p(MvSlot<KIND, PPS, SBF32> &s, const uint4 *up, int lane,
                                          uint64_t pol) {
    s.a0 = mv_ld(up + gcu_unit_u4(lane, 0), pol);
    s.a1 = mv_ld(up + gcu_unit_u4(lane, 1), pol);
    if (KIND == GCU_KIND_Q) {
        mv_q_rows(s.a0, s.a1);
        constexpr int SBW = MvSlot<KIND, PPS, SBF32>::SBW;
        const int g = lane >> 2;
        if (SBW == 2) {
            uint2 v = *(const uint2 *)((const uint32_t *)(up + 64) + g * 2);
            s.sb[0] = v.x;
            s.sb[1] = v.y;
        } else {
#pragma unroll
            for (int k = 0; k < SBW / 4; k++) {
                uint4 v = mv_ld(up + 64 + g * (SBW / 4) + k, pol);
                s.sb[4 * k] = v.x;
                s.sb[4 * k + 1] = v.y;
                s.sb[4 * k + 2] = v.z;
                s.sb[4 * k + 3] = v.w;
            }
        }
    }
}

template <int KIND, int PPS, bool SBF32>
__device__ __forceinline__ void mv_load(MvSlot<KIND, PPS, SBF32> &s, const MvArgs &a, long long u,
                                        int lane, uint64_t pol) {
    mv_load_p(s, a.w + u * a.unit_u4, lane, pol);
}

/* Scale and bias of piece pc for rows g (sg, bg) and g+8 (sh, bh), from lane group g's scale
 * words sb (a unit's, after its nibbles: in registers or, for prefill_gemm.cu, in shared memory;
 * per piece row g's pair, then row g + 8's: layout.cu). */
template <int PPS, bool SBF32>
__device__ __forceinline__ void mv_scales_of(const uint32_t *sb, int pc, float *sg, float *bg, float *sh,
                                             float *bh) {
    if (SBF32) {
        *sg = __uint_as_float(sb[4 * pc]);
        *bg = __uint_as_float(sb[4 * pc + 1]);
        *sh = __uint_as_float(sb[4 * pc + 2]);
        *bh = __uint_as_float(sb[4 * pc + 3]);
    } else {
        *sg = gcu_bf16lo(sb[2 * pc]);
        *bg = gcu_bf16hi(sb[2 * pc]);
        *sh = gcu_bf16lo(sb[2 * pc + 1]);
        *bh = gcu_bf16hi(sb[2 * pc + 1]);
    }
}
/* mv_scales_of for group e, or (up) group e + PPS / 2: the integer path's lanes t = 2, 3 scale
 * the sums of the unit's second half of groups (decode_mv_i8.cuh). Selects, not an index by a
 * run-time value: sb lives in registers. */
template <int PPS, bool SBF32>
__device__ __forceinline__ void mv_scales_pick(const uint32_t *sb, int e, bool up, float *sg, float *bg, float *sh,
                                               float *bh) {
    constexpr int H = PPS / 2;
    if (SBF32) {
        *sg = __uint_as_float(up ? sb[4 * (e + H)] : sb[4 * e]);
        *bg = __uint_as_float(up ? sb[4 * (e + H) + 1] : sb[4 * e + 1]);
        *sh = __uint_as_float(up ? sb[4 * (e + H) + 2] : sb[4 * e + 2]);
        *bh = __uint_as_float(up ? sb[4 * (e + H) + 3] : sb[4 * e + 3]);
    } else {
        const uint32_t wg = up ? sb[2 * (e + H)] : sb[2 * e], wh = up ? sb[2 * (e + H) + 1] : sb[2 * e + 1];
        *sg = gcu_bf16lo(wg);
        *bg = gcu_bf16hi(wg);
        *sh = gcu_bf16lo(wh);
        *bh = gcu_bf16hi(wh);
    }
}
/* The same from a unit loaded into registers. */
template <int KIND, int PPS, bool SBF32>
__device__ __forceinline__ void mv_scales(const MvSlot<KIND, PPS, SBF32> &s, int pc, float *sg,
                                          float *bg, float *sh, float *bh) {
    mv_scales_of<PPS, SBF32>(s.sb, pc, sg, bg, sh, bh);
}

/* One unit of one token (the decode kernels): acc[0] / acc[1] (MLX: rows g and g+8; dense: the
 * mma's four accumulators) += the unit times x. bp: the staged hi/lo columns of this lane,
 * xp: the unit's per-piece sums of x. RAW16: nibbles enter as 16+q (gcu_nib2_16) instead of
 * centred q-8 (gcu_nib2); qoff is the matching offset (negative for RAW16). */
template <int KIND, int PPS, bool SBF32, bool RAW16>
__device__ __forceinline__ void mv_unit(const MvSlot<KIND, PPS, SBF32> &s, const __nv_bfloat16 *bp,
                                        bool bvalid, const float *xp, bool xvalid, float qoff,
                                        float *acc) {
    if (KIND == GCU_KIND_Q) {
#pragma unroll
        for (int pc = 0; pc < PPS; pc++) {
            float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int ii = 0; ii < 4 / PPS; ii++) {
                const int i = pc * (4 / PPS) + ii;
                uint4 b = bvalid ? *(const uint4 *)(bp + i * 32) : make_uint4(0, 0, 0, 0);
                uint32_t wgv = u4w(s.a0, i), whv = u4w(s.a1, i);
                if (RAW16) {
                    gcu_mma(d, gcu_nib2_16(wgv, 0), gcu_nib2_16(whv, 0), gcu_nib2_16(wgv, 1), gcu_nib2_16(whv, 1), b.x, b.y);
                    gcu_mma(d, gcu_nib2_16(wgv, 2), gcu_nib2_16(whv, 2), gcu_nib2_16(wgv, 3), gcu_nib2_16(whv, 3), b.z, b.w);
                } else {
                    gcu_mma(d, gcu_nib2(wgv, 0), gcu_nib2(whv, 0), gcu_nib2(wgv, 1), gcu_nib2(whv, 1), b.x, b.y);
                    gcu_mma(d, gcu_nib2(wgv, 2), gcu_nib2(whv, 2), gcu_nib2(wgv, 3), gcu_nib2(whv, 3), b.z, b.w);
                }
            }
            float sg, bg, sh, bh;
            mv_scales(s, pc, &sg, &bg, &sh, &bh);
            float X = xvalid ? xp[pc] : 0.0f;
            /* A carries q+c (c = -8 centred, or 16): w = s*q + b = s*A + (b + qoff*s) */
            acc[0] += sg * (d[0] + d[1]) + fmaf(qoff, sg, bg) * X;
            acc[1] += sh * (d[2] + d[3]) + fmaf(qoff, sh, bh) * X;
        }
    } else {
        uint4 b = bvalid ? *(const uint4 *)bp : make_uint4(0, 0, 0, 0);
        gcu_mma(acc, s.a0.x, s.a1.x, s.a0.y, s.a1.y, b.x, b.y);
        gcu_mma(acc, s.a0.z, s.a1.z, s.a0.w, s.a1.w, b.z, b.w);
    }
}

/* The fused staging (a.fuse): this warp has written a SwiGLU row block of span `span` of the
 * consumer's input; the warp whose arrival completes the span stages it (fuse 1: bf16 hi/lo,
 * 2: digits) and leaves its counter at zero for the next launch. Out of line: it would bloat
 * every epilogue it is inlined into. */
static __device__ __noinline__ void mv_span_arrive(const MvArgs &a, int span, int lane) {
    gcu_fence_gpu(a.fence_sc);
    __syncwarp();
    const int nrb = (a.out_rows + 7) / 8, need = min(a.span_rbs, nrb - span * a.span_rbs);
    int old = 0;
    if (lane == 0) old = atomicAdd(&a.span_cnt[span], 1);
    old = __shfl_sync(0xffffffffu, old, 0);
    if (old != need - 1) return;
    gcu_fence_gpu(a.fence_sc);
    const float *act = a.out;
    const int n = a.out_rows;
    if (a.fuse == 2) { /* the span's 16 items, one per lane of the first half */
        const int q = span * 16 + lane;
        int ow = 0;
        const int e = dmv_item(a.sf, q, &ow);
        float v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = lane < 16 && e + k < n ? __ldcg(act + e + k) : 0.0f;
        dmv_i8_item(v, q, lane < 16, dmv_i8_group_lanes(a.sf.pps), lane, a.sdig, a.sex);
    } else {
        auto x = [&](int e) { return e < n ? __ldcg(act + e) : 0.0f; };
        gcu_stage_spans(a.sf, x, span, span + 1, a.sxs, a.sxs + a.sf.kx, a.sxsum, lane, 32);
    }
    if (lane == 0) a.span_cnt[span] = 0;
}

/* Writes token tok's two values of row block rb that lane group g holds: rows g and g + 8
 * (*vg, *vh), or SWIGLU's output row rb * 8 + g from its gate row g and up row g + 8. (By
 * pointer: the values are read where each case needs them, as before this was split out of
 * mv_epilogue, so the merges' code did not change.) */
__device__ __forceinline__ void mv_out_token(const MvArgs &a, int rb, int g, int tok, const float *vg,
                                             const float *vh) {
    float *o = a.out + (size_t)tok * a.ldo;
    if (a.epi == GCU_EPI_SWIGLU) {
        int r = rb * 8 + g;
        if (r < a.out_rows) o[r] = gcu_silu(*vg) * *vh;
    } else {
        int r = rb * 16 + g;
        float x = *vg, y = *vh;
        if (a.epi == GCU_EPI_SOFTCAP) {
            x = a.cap * tanhf(x * a.mult / a.cap);
            y = a.cap * tanhf(y * a.mult / a.cap);
        }
        if (r < a.out_rows) o[r] = x;
        if (r + 8 < a.out_rows) o[r + 8] = y;
    }
}

/* Writes the 2 x NB values this lane holds for row block rb. */
template <int NB>
__device__ __forceinline__ void mv_epilogue(const MvArgs &a, int rb, int lane, const float *vg,
                                            const float *vh) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int nb = 0; nb < NB; nb++) {
        int tok = nb * 4 + t;
        if (tok >= a.T) continue;
        mv_out_token(a, rb, g, tok, &vg[nb], &vh[nb]);
    }
    /* SWIGLU, T == 1; every lane of the warp is here */
    if (a.fuse) mv_span_arrive(a, rb / a.span_rbs, lane);
}

/* (a * b - sub) / c for a, b >= 0, c > 0, a * b >= sub, exactly: in 32 bits when the operands
 * fit (the 64-bit division is a long software sequence, and the ranges are computed in the
 * prologue of every launch, some on its critical path). */
__device__ __forceinline__ long long mv_muldiv(long long a, long long b, long long c, long long sub = 0) {
    const unsigned long long p = (unsigned long long)a * (unsigned long long)b - (unsigned long long)sub;
    if (p <= 0xffffffffull && (unsigned long long)c <= 0xffffffffull) return (long long)((unsigned)p / (unsigned)c);
    return (long long)(p / (unsigned long long)c);
}
/* The warp owning unit u (ranges: warp w has [U*w/W, U*(w+1)/W)). */
__device__ __forceinline__ int mv_owner(long long u, long long U, int W) {
    return (int)mv_muldiv(u + 1, W, U, 1);
}

/* The stream-K merge of a row block rb split over warps wf..wl: each writes its partial sums
 * (mv_put), then arrives (mv_arrive: fence, counter); the last to arrive sums the partials in
 * warp order (deterministic) and writes the row block. mv_finish does both at once; k_dmv_tma
 * may defer a warp's first arrival to the end of its range (GLIM_CUDA_DEFER_MERGE), so that
 * the counter's round trip is not paid mid-stream.
 * Out of line: they run once per row block, and inlined into every unrolled slot of the
 * kernels' loops they made them too large for the instruction cache. */
__device__ __forceinline__ void mv_split(const MvArgs &a, int rb, int *wf, int *wl) {
    const long long U = a.nunits;
    *wf = mv_owner((long long)rb * a.nspan, U, a.W);
    *wl = mv_owner((long long)(rb + 1) * a.nspan - 1, U, a.W);
}

/* The last arrival's sum of the partials of rb and its epilogue. Every warp after wf starts its
 * range inside rb, so rb is its first segment (slot 0); wf's slot is 0 only when its range
 * starts exactly at rb. Loads in batches (one round trip per batch, not per warp). */
template <int NB>
__device__ __noinline__ void mv_merge(const MvArgs &a, int rb, int lane) {
    int wf, wl;
    mv_split(a, rb, &wf, &wl);
    float sg[NB], sh[NB];
#pragma unroll
    for (int nb = 0; nb < NB; nb++) sg[nb] = sh[nb] = 0.0f;
    const int slot_f = a.nunits * wf / a.W < (long long)rb * a.nspan ? 1 : 0;
    constexpr int BATCH = NB == 1 ? 8 : 1;
    for (int w0 = wf; w0 <= wl; w0 += BATCH) {
        float2 v[BATCH][NB];
#pragma unroll
        for (int b = 0; b < BATCH; b++) {
            const int wi = w0 + b;
            if (wi > wl) break;
            const float2 *q = a.partial + (size_t)(wi * 2 + (wi == wf ? slot_f : 0)) * NB * 32;
#pragma unroll
            for (int nb = 0; nb < NB; nb++) v[b][nb] = __ldcg(q + nb * 32 + lane);
        }
#pragma unroll
        for (int b = 0; b < BATCH; b++) {
            if (w0 + b > wl) break;
#pragma unroll
            for (int nb = 0; nb < NB; nb++) {
                sg[nb] += v[b][nb].x;
                sh[nb] += v[b][nb].y;
            }
        }
    }
    mv_epilogue<NB>(a, rb, lane, sg, sh);
    if (lane == 0) a.counters[rb] = 0; /* ready for the next launch */
}

/* This warp's sums for rb: written out directly when rb is wholly its own (returns true), else
 * stored as its partial (slot 0 for its first segment, 1 for its last) for mv_arrive. */
template <int NB>
__device__ __noinline__ bool mv_put(const MvArgs &a, int rb, bool first_seg, int wg, int lane, float *vg,
                                    float *vh) {
    int wf, wl;
    mv_split(a, rb, &wf, &wl);
    if (wf == wl) {
        mv_epilogue<NB>(a, rb, lane, vg, vh);
        return true;
    }
    float2 *pp = a.partial + (size_t)(wg * 2 + (first_seg ? 0 : 1)) * NB * 32;
#pragma unroll
    for (int nb = 0; nb < NB; nb++) pp[nb * 32 + lane] = make_float2(vg[nb], vh[nb]);
    return false;
}

/* Arrives at split row blocks rb0 and (if >= 0) rb1 after this warp's partials for them are
 * stored: one fence, both counters in flight together; merges those it completes. */
template <int NB>
__device__ __noinline__ void mv_arrive(const MvArgs &a, int rb0, int rb1, int lane) {
    gcu_fence_gpu(a.fence_sc);
    __syncwarp();
    int o0 = 0, o1 = 0;
    if (lane == 0) {
        o0 = atomicAdd(&a.counters[rb0], 1);
        if (rb1 >= 0) o1 = atomicAdd(&a.counters[rb1], 1);
    }
    o0 = __shfl_sync(0xffffffffu, o0, 0);
    o1 = __shfl_sync(0xffffffffu, o1, 0);
    int wf, wl;
    mv_split(a, rb0, &wf, &wl);
    const bool last0 = o0 == wl - wf;
    bool last1 = false;
    if (rb1 >= 0) {
        mv_split(a, rb1, &wf, &wl);
        last1 = o1 == wl - wf;
    }
    if (!last0 && !last1) return;
    gcu_fence_gpu(a.fence_sc);
    if (last0) mv_merge<NB>(a, rb0, lane);
    if (last1) mv_merge<NB>(a, rb1, lane);
}

template <int NB>
__device__ __forceinline__ void mv_finish(const MvArgs &a, int rb, bool first_seg, int wg, int lane, float *vg,
                                          float *vh) {
    if (!mv_put<NB>(a, rb, first_seg, wg, lane, vg, vh)) mv_arrive<NB>(a, rb, -1, lane);
}

#endif
