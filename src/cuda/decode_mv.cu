/* decode_mv.cu: the matrix-vector product of one decoded token, with its input prepared inside
 * the kernel. Each block (one per SM, 16 warps) reads the raw fp32 row the previous kernel left
 * (the attention output, the SwiGLU output, or the residual plus a sublayer's output), applies
 * the norms itself (post-norm + residual add, then the consumer's pre-norm) and stages the row
 * into its own shared memory; the separate "stage" kernels and their launches disappear from
 * decode. Block 0 writes the updated residual row to a second buffer (the others still read
 * the old one), so consecutive kernels ping-pong between two residual buffers.
 *
 * The weights are the tiles of layout.cu, streamed by warps over equal contiguous unit ranges
 * (stream-K, merged by mv_finish as in qmatvec.cu). A 4-bit value enters the tensor cores as
 * the exact bf16 integer 128+q (one OR into the mantissa of 128.0, no arithmetic); the offset
 * is taken back per group as (bias - 128 scale) * sum(x). That cancellation is exact only when
 * sum(x) is the sum of the values the tensor cores saw, so the staged row is first rounded to
 * its bf16 hi + lo representation and the group sums are taken over those.
 *
 * Launch: weights for the first units are requested (registers, optionally an L2 prefetch)
 * before griddepcontrol.wait, so under programmatic dependent launch a block co-resident with
 * the previous kernel (<= 64 registers, 2 blocks per SM) streams weights while that kernel ends. */
#include "cuda/mv_common.cuh"

#define DMV_WARPS 16
#define DMV_THREADS (DMV_WARPS * 32)
#define DMV_SMEM_MAX (110 * 1024)

struct DmvArgs {
    MvArgs mv;
    int pro, K;
    const float *src, *h_in;
    float *h_out;
    const float *w_add;
    float eps_add;
    int norm_out;
    const float *w_out;
    float eps_out;
    gcu_xfmt f;
    int pf_units;
};

/* x represented as bf16 hi + lo, as a float: what the tensor cores will multiply. */
__device__ __forceinline__ float dmv_hilo(float x) {
    uint32_t h, l;
    gcu_split(x, &h, &l);
    return __uint_as_float(h << 16) + __uint_as_float(l << 16);
}

/* The sum of v over the block (every thread gets it), in double as the CPU oracle sums squares. */
__device__ double dmv_block_sum(double v, double *scratch) {
    v = gcu_warp_sum_d(v);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    double r = 0.0;
#pragma unroll
    for (int w = 0; w < DMV_WARPS; w++) r += scratch[w];
    __syncthreads(); /* scratch is reused by the next call */
    return r;
}

/* The prologue: row[0..K) = the consumer's input, rounded to hi + lo (NORM/RESID modes). */
__device__ void dmv_prepare_row(const DmvArgs &a, float *row, float *hrow, double *scratch) {
    const int K = a.K, tid = threadIdx.x;
    if (a.pro == GCU_PRO_RESID) {
        double ss = 0.0;
        for (int i = tid; i < K; i += DMV_THREADS) {
            float s = a.src[i];
            row[i] = s;
            hrow[i] = a.h_in[i];
            ss += (double)s * s;
        }
        float inv = 1.0f / sqrtf((float)(dmv_block_sum(ss, scratch) / K) + a.eps_add);
        const bool writer = blockIdx.x == 0 && a.h_out;
        ss = 0.0;
        for (int i = tid; i < K; i += DMV_THREADS) {
            float y = row[i] * inv;
            y = hrow[i] + y * (1.0f + a.w_add[i]);
            row[i] = y;
            if (writer) a.h_out[i] = y;
            ss += (double)y * y;
        }
        inv = 1.0f / sqrtf((float)(dmv_block_sum(ss, scratch) / K) + a.eps_out);
        for (int i = tid; i < K; i += DMV_THREADS) {
            float y = row[i] * inv;
            y = a.norm_out == GCU_NORM_CENTERED ? y * (1.0f + a.w_out[i]) : y * a.w_out[i];
            row[i] = dmv_hilo(y);
        }
    } else { /* NORM */
        double ss = 0.0;
        for (int i = tid; i < K; i += DMV_THREADS) {
            float s = a.src[i];
            row[i] = s;
            ss += (double)s * s;
        }
        float inv = 1.0f / sqrtf((float)(dmv_block_sum(ss, scratch) / K) + a.eps_out);
        for (int i = tid; i < K; i += DMV_THREADS) {
            float y = row[i] * inv;
            y = a.norm_out == GCU_NORM_CENTERED ? y * (1.0f + a.w_out[i]) : y * a.w_out[i];
            row[i] = dmv_hilo(y);
        }
    }
    __syncthreads();
}

/* Stages the input into shared memory: hi column [cs], lo column [cs] (bf16), group sums, then
 * the fp32 rows of the NORM/RESID prologue. Returns the group sums. */
__device__ __forceinline__ float *dmv_stage(const DmvArgs &d, __nv_bfloat16 *sx, double *scratch) {
    const int cs = d.mv.cs, np = d.f.nspan * (d.f.kind == GCU_KIND_Q ? d.f.pps : 1);
    float *sxsum = (float *)(sx + 2 * (size_t)cs);
    float *row = sxsum + ((np + 3) & ~3);
    const int K = d.K;
    if (d.pro == GCU_PRO_RAW) {
        const float *src = d.src;
        auto x = [&](int e) { return e < K ? dmv_hilo(src[e]) : 0.0f; };
        gcu_stage_spans(d.f, x, 0, d.f.nspan, sx, sx + cs, sxsum, threadIdx.x, DMV_THREADS);
    } else {
        dmv_prepare_row(d, row, row + K, scratch);
        auto x = [&](int e) { return e < K ? row[e] : 0.0f; };
        gcu_stage_spans(d.f, x, 0, d.f.nspan, sx, sx + cs, sxsum, threadIdx.x, DMV_THREADS);
    }
    __syncthreads();
    return sxsum;
}

/* MINB blocks per SM: 2 caps registers at 64 so the next kernel's block fits beside this one
 * (programmatic launch), 1 leaves 128 (no spills); the bench compares them. */
template <int KIND, int PPS, bool SBF32, int MINB>
__global__ void __launch_bounds__(DMV_THREADS, MINB) k_dmv(DmvArgs d) {
    extern __shared__ uint4 dmv_smem[];
    __shared__ double scratch[DMV_WARPS];
    const MvArgs &a = d.mv;
    constexpr int RING = 2, SPAN = KIND == GCU_KIND_Q ? 128 : 32;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int wg = blockIdx.x * DMV_WARPS + (threadIdx.x >> 5);
    int u0 = 0, u1 = 0; /* this warp's units (ints: even the head has < 2^31) */
    if (wg < a.W) {
        u0 = (int)(a.nunits * wg / a.W);
        u1 = (int)(a.nunits * (wg + 1) / a.W);
    }
    const uint64_t pol = mv_policy();
    const int uw = a.unit_u4;
    const uint4 *lp = a.w + (size_t)u0 * uw;
    if (lane == 0 && d.pf_units > 0 && u1 > u0) {
        int n = u1 - u0 < d.pf_units ? u1 - u0 : d.pf_units;
        gcu_l2_prefetch(lp, (unsigned)(n * uw * 16));
    }
    MvSlot<KIND, PPS, SBF32> ring[RING];
#pragma unroll
    for (int j = 0; j < RING; j++)
        if (u0 + j < u1) {
            mv_load_p(ring[j], lp, lane, pol);
            lp += uw;
        }
    gcu_pdl_wait();

    __nv_bfloat16 *sx = (__nv_bfloat16 *)dmv_smem;
    const int cs = a.cs;
    float *sxsum = dmv_stage(d, sx, scratch);

    /* lanes of n-column 0 hold hi, column 1 lo; the other columns are zero */
    const bool bvalid = g < 2, xvalid = t == 0;
    const __nv_bfloat16 *b0 = sx + (size_t)(bvalid ? g : 0) * cs + t * 8;
    int rb = u0 / a.nspan, sp = u0 % a.nspan;
    const __nv_bfloat16 *bp = b0 + sp * SPAN;
    const float *xp = sxsum + sp * PPS;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    bool first = true, trig = false;
    for (int base = u0; base < u1; base += RING) {
#pragma unroll
        for (int j = 0; j < RING; j++) {
            if (base + j >= u1) break;
            MvSlot<KIND, PPS, SBF32> &s = ring[j];
            if (KIND == GCU_KIND_Q) {
#pragma unroll
                for (int pc = 0; pc < PPS; pc++) {
                    float dd[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                    for (int ii = 0; ii < 4 / PPS; ii++) {
                        const int i = pc * (4 / PPS) + ii;
                        uint4 b = bvalid ? *(const uint4 *)(bp + i * 32) : make_uint4(0, 0, 0, 0);
                        uint32_t wgv = u4w(s.a0, i), whv = u4w(s.a1, i);
                        gcu_mma(dd, gcu_nib2_raw(wgv, 0), gcu_nib2_raw(whv, 0), gcu_nib2_raw(wgv, 1),
                                gcu_nib2_raw(whv, 1), b.x, b.y);
                        gcu_mma(dd, gcu_nib2_raw(wgv, 2), gcu_nib2_raw(whv, 2), gcu_nib2_raw(wgv, 3),
                                gcu_nib2_raw(whv, 3), b.z, b.w);
                    }
                    float sg, bg, sh, bh;
                    if (SBF32) {
                        sg = __uint_as_float(s.sb[2 * pc]);
                        bg = __uint_as_float(s.sb[2 * pc + 1]);
                        sh = __uint_as_float(s.sb[2 * PPS + 2 * pc]);
                        bh = __uint_as_float(s.sb[2 * PPS + 2 * pc + 1]);
                    } else {
                        sg = gcu_bf16lo(s.sb[pc]);
                        bg = gcu_bf16hi(s.sb[pc]);
                        sh = gcu_bf16lo(s.sb[PPS + pc]);
                        bh = gcu_bf16hi(s.sb[PPS + pc]);
                    }
                    float X = xvalid ? xp[pc] : 0.0f;
                    /* A carried 128 + q (per nibble): w = s*q + b = s*A + (b + qoff*s), qoff < 0 */
                    acc[0] += sg * (dd[0] + dd[1]) + fmaf(a.qoff, sg, bg) * X;
                    acc[1] += sh * (dd[2] + dd[3]) + fmaf(a.qoff, sh, bh) * X;
                }
            } else {
                uint4 b = bvalid ? *(const uint4 *)bp : make_uint4(0, 0, 0, 0);
                gcu_mma(acc, s.a0.x, s.a1.x, s.a0.y, s.a1.y, b.x, b.y);
                gcu_mma(acc, s.a0.z, s.a1.z, s.a0.w, s.a1.w, b.z, b.w);
            }
            if (base + j + RING < u1) {
                mv_load_p(s, lp, lane, pol);
                lp += uw;
            } else if (!trig) {
                gcu_pdl_trigger();
                trig = true;
            }
            bp += SPAN;
            xp += PPS;
            if (++sp == a.nspan || base + j + 1 == u1) {
                float vg[1], vh[1];
                vg[0] = KIND == GCU_KIND_Q ? acc[0] : acc[0] + acc[1];
                vh[0] = KIND == GCU_KIND_Q ? acc[1] : acc[2] + acc[3];
                acc[0] = acc[1] = acc[2] = acc[3] = 0.0f;
                mv_finish<1>(a, rb, first, wg, lane, vg, vh);
                first = false;
                rb++;
                sp = 0;
                bp = b0;
                xp = sxsum;
            }
        }
    }
    if (!trig) gcu_pdl_trigger();
}

/* ---- host side --------------------------------------------------------------------------- */

template <int MINB>
static const void *dmv_pick_b(int kind, int pps, int sbf32) {
    if (kind == GCU_KIND_DENSE) return (const void *)k_dmv<GCU_KIND_DENSE, 1, false, MINB>;
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 2: return (const void *)k_dmv<GCU_KIND_Q, 1, false, MINB>;
    case 3: return (const void *)k_dmv<GCU_KIND_Q, 1, true, MINB>;
    case 4: return (const void *)k_dmv<GCU_KIND_Q, 2, false, MINB>;
    case 5: return (const void *)k_dmv<GCU_KIND_Q, 2, true, MINB>;
    case 8: return (const void *)k_dmv<GCU_KIND_Q, 4, false, MINB>;
    case 9: return (const void *)k_dmv<GCU_KIND_Q, 4, true, MINB>;
    }
    return NULL;
}
static const void *dmv_pick(int kind, int pps, int sbf32, int minb) {
    return minb == 1 ? dmv_pick_b<1>(kind, pps, sbf32) : dmv_pick_b<2>(kind, pps, sbf32);
}

static int dmv_cs(const gcu_xfmt *f) { return ((f->kx * 2 + 127) / 128 * 128 + 64) / 2; }

extern "C" size_t gcu_dmv_smem(const gcu_mat *m, int pro, int K) {
    size_t np = (size_t)m->f.nspan * (m->f.kind == GCU_KIND_Q ? m->f.pps : 1);
    return (size_t)2 * dmv_cs(&m->f) * 2 + ((np + 3) & ~(size_t)3) * 4 +
           (pro == GCU_PRO_RAW ? 0 : (size_t)2 * K * 4);
}

extern "C" int gcu_dmv_fits(const gcu_mat *m, int pro, int K) {
    return gcu_dmv_smem(m, pro, K) <= DMV_SMEM_MAX && dmv_pick(m->f.kind, m->f.pps, m->sbf32, 2);
}

extern "C" glim_status gcu_dmv_launch(const gcu_dmv_call *c, cudaStream_t st, glim_error *err) {
    static int raised;
    const gcu_mat *m = c->m;
    const void *fn = dmv_pick(m->f.kind, m->f.pps, m->sbf32, c->minb);
    size_t smem = gcu_dmv_smem(m, c->pro, c->K);
    if (!fn || smem > DMV_SMEM_MAX)
        return glim_fail(err, GLIM_E_UNSUPPORTED, "decode matvec: no kernel for this format or "
                         "width %d (%zu bytes of shared memory, at most %d)", c->K, smem, DMV_SMEM_MAX);
    if (c->K > m->f.K || (c->pro != GCU_PRO_RAW && c->K != m->f.K))
        return glim_fail(err, GLIM_E_ARG, "decode matvec: input width %d for a matrix of width %d",
                         c->K, m->f.K);
    if (!raised) {
        int kinds[2] = {GCU_KIND_Q, GCU_KIND_DENSE}, pps[3] = {1, 2, 4};
        for (int k = 0; k < 2; k++)
            for (int p = 0; p < 3; p++)
                for (int f = 0; f < 4; f++) {
                    cudaError_t e = cudaFuncSetAttribute(dmv_pick(kinds[k], pps[p], f & 1, 1 + (f >> 1)),
                                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                         DMV_SMEM_MAX);
                    if (e != cudaSuccess) return gcu_check(e, "decode matvec shared memory", err);
                }
        raised = 1;
    }
    DmvArgs d;
    memset(&d, 0, sizeof d);
    MvArgs &a = d.mv;
    a.w = m->w;
    a.nunits = (long long)m->nrb * m->f.nspan;
    a.nspan = m->f.nspan;
    a.unit_u4 = m->unit_bytes / 16;
    a.kx = m->f.kx;
    a.T = 1;
    long long blocks = gcu_sm_count();
    long long need = (a.nunits + DMV_WARPS - 1) / DMV_WARPS;
    if (blocks > need) blocks = need;
    a.W = (int)(blocks * DMV_WARPS < a.nunits ? blocks * DMV_WARPS : a.nunits);
    a.epi = c->epi;
    a.out = c->out;
    a.ldo = c->out_rows;
    a.out_rows = c->out_rows;
    a.mult = c->mult;
    a.cap = c->cap;
    a.partial = c->partial;
    a.counters = c->counters;
    a.cs = dmv_cs(&m->f);
    a.qoff = m->f.bits == 8 ? -(128.0f + 16.0f * 128.0f) : -128.0f;
    d.pro = c->pro;
    d.K = c->K;
    d.src = c->src;
    d.h_in = c->h_in;
    d.h_out = c->h_out;
    d.w_add = c->w_add;
    d.eps_add = c->eps_add;
    d.norm_out = c->norm_out;
    d.w_out = c->w_out;
    d.eps_out = c->eps_out;
    d.f = m->f;
    d.pf_units = c->pf_units;
    void *args[] = {&d};
    return gcu_check(gcu_launch(fn, dim3((unsigned)blocks), dim3(DMV_THREADS), smem, st, c->pdl, args),
                     "decode matvec launch", err);
}

/* ---- test wrapper ------------------------------------------------------------------------ */

static glim_status dmv_upload(float **d, const float *h, size_t n, glim_error *err) {
    *d = NULL;
    if (!h) return GLIM_OK;
    glim_status s = gcu_check(cudaMalloc((void **)d, sizeof(float) * (n ? n : 1)), "alloc", err);
    if (s == GLIM_OK) s = gcu_check(cudaMemcpy(*d, h, sizeof(float) * n, cudaMemcpyHostToDevice), "copy", err);
    return s;
}

extern "C" glim_status gcu_test_decode_matvec(const glim_matrix *W, const glim_matrix *W2,
                                              const gcu_test_dmv *p, float *out, float *h_out,
                                              glim_error *err) {
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "no CUDA device");
    gcu_mat m;
    memset(&m, 0, sizeof m);
    gcu_xfmt f;
    const int swiglu = p->epi == GCU_EPI_SWIGLU;
    int sbf32, K = p->K, rows = (int)W->rows, tiled = swiglu ? 16 * ((rows + 7) / 8) : rows;
    glim_status s = gcu_mat_format_of(W, &f, &sbf32, err);
    if (s != GLIM_OK) return s;
    gcu_mat_geometry(&m, &f, sbf32, tiled);
    gcu_mat_pair pair = {W, W2};
    float *src = NULL, *hin = NULL, *wa = NULL, *wo = NULL, *hout = NULL, *dout = NULL;
    float2 *part = NULL;
    int *cnt = NULL;
    if ((s = gcu_mat_upload(&m, swiglu ? gcu_rows_swiglu : gcu_rows_plain,
                                swiglu ? (void *)&pair : (void *)W, err)) ||
        (s = dmv_upload(&src, p->src, (size_t)K, err)) || (s = dmv_upload(&hin, p->h_in, (size_t)K, err)) ||
        (s = dmv_upload(&wa, p->w_add, (size_t)K, err)) || (s = dmv_upload(&wo, p->w_out, (size_t)K, err)) ||
        (s = gcu_check(cudaMalloc((void **)&hout, sizeof(float) * K), "alloc", err)) ||
        (s = gcu_check(cudaMemset(hout, 0xff, sizeof(float) * K), "poison", err)) ||
        (s = gcu_check(cudaMalloc((void **)&dout, sizeof(float) * rows), "alloc", err)) ||
        (s = gcu_check(cudaMemset(dout, 0xff, sizeof(float) * rows), "poison", err)) ||
        (s = gcu_check(cudaMalloc((void **)&part, gcu_mv_partial_bytes(gcu_sm_count(), 2)), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&cnt, sizeof(int) * m.nrb), "alloc", err)) ||
        (s = gcu_check(cudaMemset(cnt, 0, sizeof(int) * m.nrb), "memset", err)))
        goto out;
    {
        gcu_dmv_call c;
        memset(&c, 0, sizeof c);
        c.m = &m;
        c.pro = p->pro;
        c.K = K;
        c.src = src;
        c.h_in = hin;
        c.h_out = p->pro == GCU_PRO_RESID ? hout : NULL;
        c.w_add = wa;
        c.eps_add = p->eps_add;
        c.norm_out = p->out_centered ? GCU_NORM_CENTERED : GCU_NORM_PLAIN;
        c.w_out = wo;
        c.eps_out = p->eps_out;
        c.epi = p->epi;
        c.out = dout;
        c.out_rows = rows;
        c.mult = p->mult;
        c.cap = p->cap;
        c.partial = part;
        c.counters = cnt;
        c.pf_units = 2;
        c.minb = p->minb;
        /* twice: the second run checks that the merge counters were left at zero */
        for (int rep = 0; rep < 2 && s == GLIM_OK; rep++) s = gcu_dmv_launch(&c, 0, err);
        if (s == GLIM_OK) s = gcu_check(cudaDeviceSynchronize(), "decode matvec", err);
        if (s == GLIM_OK)
            s = gcu_check(cudaMemcpy(out, dout, sizeof(float) * rows, cudaMemcpyDeviceToHost), "copy", err);
        if (s == GLIM_OK && h_out)
            s = gcu_check(cudaMemcpy(h_out, hout, sizeof(float) * K, cudaMemcpyDeviceToHost), "copy", err);
    }
out:
    cudaFree(m.w), cudaFree(src), cudaFree(hin), cudaFree(wa), cudaFree(wo), cudaFree(hout);
    cudaFree(dout), cudaFree(part), cudaFree(cnt);
    return s;
}
