/* qmatvec.cu: the matrix-vector kernel for decode (1 token) and small batches, and the prompt's
 * products where prefill_gemm.cu does not take them (up to 32 tokens per launch: each weight is
 * read once per 32 tokens; gcu_mv_launch runs a 64-token sub-chunk as two launches).
 *
 * Tensor cores (mma m16n8k16, bf16 in, fp32 accumulate) do the dot products: A = 16 weight rows
 * (4-bit values as exact small integers, or dense bf16), B = the staged input, two columns per
 * token (hi and lo bf16 parts, so x keeps 16 bits of mantissa). For MLX weights each mma covers
 * one scale group; per group  y += scale * ((q-8) . x) + (bias + 8 scale) * sum(x) (each nibble is
 * centred on 8, so 8-bit values on 8 + 16*8 = 136).
 *
 * Work split ("stream-K"): the units (row block, span) of the tiled matrix are dealt out as
 * equal contiguous ranges, one per warp of a persistent grid, so every SM streams the same
 * number of bytes whatever the matrix shape (narrow k/v and o_proj, or the head). A row block
 * cut between warps is summed by the last warp to finish it, in a fixed order (deterministic).
 * Loads: each lane issues two 16-byte loads per unit, RING units ahead in registers, and lane 0
 * prefetches pf units further into L2; before griddepcontrol.wait (programmatic launch) the
 * kernel already streams its first weights while the previous kernel drains. */
#include "cuda/mv_common.cuh"

/* The staged input, all of it, into shared memory (cp.async: no register round trip); xs, xsum
 * and the column stride cs then point there. */
template <int KIND, int PPS>
__device__ __forceinline__ void mv_stage_smem(const MvArgs &a, uint4 *mv_smem,
                                              const __nv_bfloat16 **xs, const float **xsum, int *cs) {
    const int per = a.kx / 8, ncol = 2 * a.T;
    __nv_bfloat16 *sx = (__nv_bfloat16 *)mv_smem;
    for (int c = threadIdx.x; c < ncol * per; c += blockDim.x) {
        int col = c / per, k = c % per;
        gcu_cp_async16(sx + (size_t)col * a.cs + k * 8, a.xs + (size_t)col * a.kx + k * 8);
    }
    float *sxs = (float *)(sx + (size_t)ncol * a.cs);
    if (KIND == GCU_KIND_Q)
        for (int i = threadIdx.x; i < a.T * a.nspan * PPS; i += blockDim.x) sxs[i] = a.xsum[i];
    gcu_rows_wait();
    *xs = sx;
    *xsum = sxs;
    *cs = a.cs;
}

template <int NB, bool SMEM, int KIND, int PPS, bool SBF32>
__global__ void __launch_bounds__(GCU_MV_WARPS * 32) k_mv(MvArgs a) {
    extern __shared__ uint4 mv_smem[];
    constexpr int RING = NB == 1 ? 4 : 2;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int wg = blockIdx.x * GCU_MV_WARPS + (threadIdx.x >> 5);
    const long long U = a.nunits;
    long long u0 = 0, u1 = 0;
    if (wg < a.W) {
        u0 = U * wg / a.W;
        u1 = U * (wg + 1) / a.W;
    }
    const uint64_t pol = mv_policy();
    const int ub = a.unit_u4 * 16;
    if (lane == 0 && a.pf > 0 && u1 > u0) {
        long long n = u1 - u0 < a.pf ? u1 - u0 : a.pf;
        gcu_l2_prefetch(a.w + u0 * a.unit_u4, (unsigned)(n * ub));
    }
    MvSlot<KIND, PPS, SBF32> ring[RING];
#pragma unroll
    for (int j = 0; j < RING; j++)
        if (u0 + j < u1) mv_load(ring[j], a, u0 + j, lane, pol);

    gcu_pdl_wait();
    const __nv_bfloat16 *xs = a.xs;
    const float *xsum = a.xsum;
    int cs = a.kx;
    if (SMEM) mv_stage_smem<KIND, PPS>(a, mv_smem, &xs, &xsum, &cs);

    float acc[NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; nb++) acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.0f;
    int rb = (int)(u0 / a.nspan), sp = (int)(u0 % a.nspan);
    bool first_seg = true, trig = false;

    for (long long base = u0; base < u1; base += RING) {
#pragma unroll
        for (int j = 0; j < RING; j++) {
            const long long uu = base + j;
            if (uu >= u1) break;
            if (lane == 0 && a.pf > 0 && uu + a.pf < u1)
                gcu_l2_prefetch(a.w + (uu + a.pf) * a.unit_u4, (unsigned)ub);
            MvSlot<KIND, PPS, SBF32> &s = ring[j];
            if (KIND == GCU_KIND_Q) {
                uint32_t pg[16], ph[16]; /* nibble pairs of rows g and g+8, word i pair k */
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int k = 0; k < 4; k++) {
                        pg[i * 4 + k] = gcu_nib2(u4w(s.a0, i), k);
                        ph[i * 4 + k] = gcu_nib2(u4w(s.a1, i), k);
                    }
#pragma unroll
                for (int nb = 0; nb < NB; nb++) {
                    const int col = nb * 8 + g, tok = nb * 4 + t;
                    uint4 b[4];
                    if ((col >> 1) < a.T) {
                        const uint4 *src = (const uint4 *)(xs + (size_t)col * cs + sp * 128 + t * 8);
#pragma unroll
                        for (int i = 0; i < 4; i++) b[i] = src[i * 4];
                    } else {
#pragma unroll
                        for (int i = 0; i < 4; i++) b[i] = make_uint4(0, 0, 0, 0);
                    }
#pragma unroll
                    for (int pc = 0; pc < PPS; pc++) {
                        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                        for (int ii = 0; ii < 4 / PPS; ii++) {
                            const int i = pc * (4 / PPS) + ii;
                            gcu_mma(d, pg[i * 4 + 0], ph[i * 4 + 0], pg[i * 4 + 1], ph[i * 4 + 1], b[i].x, b[i].y);
                            gcu_mma(d, pg[i * 4 + 2], ph[i * 4 + 2], pg[i * 4 + 3], ph[i * 4 + 3], b[i].z, b[i].w);
                        }
                        float sg, bg, sh, bh;
                        mv_scales(s, pc, &sg, &bg, &sh, &bh);
                        float X = tok < a.T ? xsum[((size_t)tok * a.nspan + sp) * PPS + pc] : 0.0f;
                        /* each nibble was centred on 8: w = s*q + b = s*(q - qoff) + (b + qoff*s) */
                        acc[nb][0] += sg * (d[0] + d[1]) + fmaf(a.qoff, sg, bg) * X;
                        acc[nb][1] += sh * (d[2] + d[3]) + fmaf(a.qoff, sh, bh) * X;
                    }
                }
            } else {
#pragma unroll
                for (int nb = 0; nb < NB; nb++) {
                    const int col = nb * 8 + g;
                    uint4 b = make_uint4(0, 0, 0, 0);
                    if ((col >> 1) < a.T) b = *(const uint4 *)(xs + (size_t)col * cs + sp * 32 + t * 8);
                    gcu_mma(acc[nb], s.a0.x, s.a1.x, s.a0.y, s.a1.y, b.x, b.y);
                    gcu_mma(acc[nb], s.a0.z, s.a1.z, s.a0.w, s.a1.w, b.z, b.w);
                }
            }
            if (uu + RING < u1) {
                mv_load(s, a, uu + RING, lane, pol);
            } else if (!trig) {
                gcu_pdl_trigger();
                trig = true;
            }
            if (++sp == a.nspan || uu + 1 == u1) {
                float vg[NB], vh[NB];
#pragma unroll
                for (int nb = 0; nb < NB; nb++) {
                    vg[nb] = KIND == GCU_KIND_Q ? acc[nb][0] : acc[nb][0] + acc[nb][1];
                    vh[nb] = KIND == GCU_KIND_Q ? acc[nb][1] : acc[nb][2] + acc[nb][3];
                    acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.0f;
                }
                mv_finish<NB>(a, rb, first_seg, wg, lane, vg, vh);
                first_seg = false;
                rb++;
                sp = 0;
            }
        }
    }
    if (!trig) gcu_pdl_trigger();
}

/* ---- decode (T <= 4): one n-block, lean loop ------------------------------------------ */

/* The same computation as k_mv for up to 4 tokens, with running pointers instead of index
 * arithmetic, two units in flight per warp and at most 64 registers, so 4 blocks (32 warps)
 * share an SM: the memory system sees enough independent loads. */
template <bool SMEM, int KIND, int PPS, bool SBF32>
__global__ void __launch_bounds__(GCU_MV_WARPS * 32, MV1_MIN_BLOCKS) k_mv1(MvArgs a) {
    extern __shared__ uint4 mv_smem[];
    constexpr int RING = 2, SPAN = KIND == GCU_KIND_Q ? 128 : 32;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int wg = blockIdx.x * GCU_MV_WARPS + (threadIdx.x >> 5);
    const long long U = a.nunits;
    long long u0 = 0, u1 = 0;
    if (wg < a.W) {
        u0 = U * wg / a.W;
        u1 = U * (wg + 1) / a.W;
    }
    const uint64_t pol = mv_policy();
    const int uw = a.unit_u4;
    const uint4 *lp = a.w + u0 * uw;
    if (lane == 0 && a.pf > 0 && u1 > u0) {
        long long n = u1 - u0 < a.pf ? u1 - u0 : a.pf;
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
    const __nv_bfloat16 *xs = a.xs;
    const float *xsum = a.xsum;
    int cs = a.kx;
    if (SMEM) mv_stage_smem<KIND, PPS>(a, mv_smem, &xs, &xsum, &cs);
    const bool bvalid = (g >> 1) < a.T, xvalid = t < a.T;
    const __nv_bfloat16 *b0 = xs + (size_t)(bvalid ? g : 0) * cs + t * 8;
    const float *x0 = xsum + (size_t)(xvalid ? t : 0) * a.nspan * PPS;
    int rb = (int)(u0 / a.nspan), sp = (int)(u0 % a.nspan);
    const __nv_bfloat16 *bp = b0 + sp * SPAN;
    const float *xp = x0 + sp * PPS;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    bool first = true, trig = false;
    for (long long base = u0; base < u1; base += RING) {
#pragma unroll
        for (int j = 0; j < RING; j++) {
            if (base + j >= u1) break;
            MvSlot<KIND, PPS, SBF32> &s = ring[j];
            mv_unit<KIND, PPS, SBF32, false>(s, bp, bvalid, xp, xvalid, a.qoff, acc);
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
                xp = x0;
            }
        }
    }
    if (!trig) gcu_pdl_trigger();
}

/* ---- host side --------------------------------------------------------------------------- */

#define MV_SMEM_MAX (100 * 1024)
#define MV_SMEM_SM (200 * 1024) /* shared memory the staged x of co-resident blocks may take */

template <int NB, bool SM>
static const void *mv_pick(int kind, int pps, int sbf32) {
    if (kind == GCU_KIND_DENSE) return (const void *)k_mv<NB, SM, GCU_KIND_DENSE, 1, false>;
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 2: return (const void *)k_mv<NB, SM, GCU_KIND_Q, 1, false>;
    case 3: return (const void *)k_mv<NB, SM, GCU_KIND_Q, 1, true>;
    case 4: return (const void *)k_mv<NB, SM, GCU_KIND_Q, 2, false>;
    case 5: return (const void *)k_mv<NB, SM, GCU_KIND_Q, 2, true>;
    case 8: return (const void *)k_mv<NB, SM, GCU_KIND_Q, 4, false>;
    case 9: return (const void *)k_mv<NB, SM, GCU_KIND_Q, 4, true>;
    }
    return NULL;
}

template <bool SM>
static const void *mv1_pick(int kind, int pps, int sbf32) {
    if (kind == GCU_KIND_DENSE) return (const void *)k_mv1<SM, GCU_KIND_DENSE, 1, false>;
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 2: return (const void *)k_mv1<SM, GCU_KIND_Q, 1, false>;
    case 3: return (const void *)k_mv1<SM, GCU_KIND_Q, 1, true>;
    case 4: return (const void *)k_mv1<SM, GCU_KIND_Q, 2, false>;
    case 5: return (const void *)k_mv1<SM, GCU_KIND_Q, 2, true>;
    case 8: return (const void *)k_mv1<SM, GCU_KIND_Q, 4, false>;
    case 9: return (const void *)k_mv1<SM, GCU_KIND_Q, 4, true>;
    }
    return NULL;
}

/* Raises the shared-memory limit of every staged-input variant once (outside graph capture). */
extern "C" glim_status gcu_mv_init(glim_error *err) {
    static int done;
    if (done) return GLIM_OK;
    int kinds[2] = {GCU_KIND_Q, GCU_KIND_DENSE}, pps[3] = {1, 2, 4};
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 3; p++)
            for (int f = 0; f < 2; f++) {
                const void *fns[2] = {mv_pick<1, true>(kinds[k], pps[p], f), mv1_pick<true>(kinds[k], pps[p], f)};
                for (int i = 0; i < 2; i++) {
                    cudaError_t e = cudaFuncSetAttribute(fns[i], cudaFuncAttributeMaxDynamicSharedMemorySize, MV_SMEM_MAX);
                    if (e != cudaSuccess) return gcu_check(e, "matvec shared memory", err);
                }
            }
    done = 1;
    return GLIM_OK;
}

extern "C" size_t gcu_mv_partial_bytes(int nsm, int bps) {
    return (size_t)nsm * (size_t)(bps > 0 ? bps : 1) * GCU_MV_WARPS * 2 * 8 * 32 * sizeof(float2);
}

extern "C" glim_status gcu_mv_launch(const gcu_mv_call *c, cudaStream_t st, glim_error *err) {
    const gcu_mat *m = c->m;
    glim_status ist = gcu_mv_init(err);
    if (ist != GLIM_OK) return ist;
    if (c->T < 1 || c->T > GCU_TMAX)
        return glim_fail(err, GLIM_E_ARG, "matvec: %d tokens (1..%d)", c->T, GCU_TMAX);
    if (gcu_gemm_takes(c)) return gcu_gemm_launch(c, st, err);
    if (c->T > GCU_MV_TMAX) {
        /* k_mv holds at most GCU_MV_TMAX tokens' sums: the call in parts of that many tokens,
         * each token's input, sums and outputs at its own offsets (the tokens are independent) */
        glim_status s = GLIM_OK;
        for (int t0 = 0; t0 < c->T && s == GLIM_OK; t0 += GCU_MV_TMAX) {
            gcu_mv_call part = *c;
            part.T = c->T - t0 < GCU_MV_TMAX ? c->T - t0 : GCU_MV_TMAX;
            part.xs = c->xs + (size_t)2 * t0 * m->f.kx;
            part.xsum = c->xsum + (size_t)t0 * gcu_xsum_floats(m->f);
            part.out = c->out + (size_t)t0 * c->ldo;
            s = gcu_mv_launch(&part, st, err);
        }
        return s;
    }
    int nb = c->T <= 4 ? 1 : 8;
    int cs = ((m->f.kx * 2 + 127) / 128 * 128 + 64) / 2;
    size_t smem = (size_t)2 * c->T * cs * 2 +
                  (m->f.kind == GCU_KIND_Q ? (size_t)c->T * m->f.nspan * m->f.pps * 4 : 0);
    int bps = c->bps > 0 ? c->bps : 1;
    if (nb > 1) bps = 1; /* the prefill kernel holds 8 n-blocks of accumulators: 1 block/SM */
    /* x in shared memory when the blocks sharing an SM all fit */
    int use_smem = c->smem && nb == 1 && smem * bps <= MV_SMEM_SM;
    const void *fn = nb == 1 ? (use_smem ? mv1_pick<true>(m->f.kind, m->f.pps, m->sbf32)
                                         : mv1_pick<false>(m->f.kind, m->f.pps, m->sbf32))
                             : mv_pick<8, false>(m->f.kind, m->f.pps, m->sbf32);
    if (!fn) return glim_fail(err, GLIM_E_UNSUPPORTED, "matvec: no kernel for this format");
    if (!use_smem) smem = 0;
    MvArgs a = mv_args_of(c);
    long long blocks = (long long)gcu_sm_count() * bps;
    long long need = (a.nunits + GCU_MV_WARPS - 1) / GCU_MV_WARPS;
    if (blocks > need) blocks = need;
    a.W = (int)(blocks * GCU_MV_WARPS < a.nunits ? blocks * GCU_MV_WARPS : a.nunits);
    a.partial = c->partial;
    a.pf = c->pf_units;
    a.cs = cs;
    a.fuse = c->stage_f && c->T == 1 && c->epi == GCU_EPI_SWIGLU && nb == 1;
    if (a.fuse) {
        int span_el = c->stage_f->kind == GCU_KIND_DENSE ? 32 : 512 / c->stage_f->bits;
        a.span_rbs = span_el / 8;
        a.sf = *c->stage_f;
        a.sxs = c->stage_xs;
        a.sxsum = c->stage_xsum;
        a.span_cnt = c->span_cnt;
    }
    void *args[] = {&a};
    return gcu_check(gcu_launch(fn, dim3((unsigned)blocks), dim3(GCU_MV_WARPS * 32), smem, st,
                                c->pdl, args),
                     "matvec launch", err);
}

/* ---- test wrapper ------------------------------------------------------------------------ */

extern "C" glim_status gcu_test_matvec(const glim_matrix *W, const glim_matrix *W2, const float *x,
                                       int T, int epi, float mult, float cap, int smem, float *out,
                                       glim_error *err) {
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "no CUDA device");
    gcu_mat m;
    memset(&m, 0, sizeof m);
    gcu_xfmt f;
    int sbf32;
    glim_status s = gcu_mat_format_of(W, &f, &sbf32, err);
    if (s != GLIM_OK) return s;
    int swiglu = epi == GCU_EPI_SWIGLU;
    int rows = swiglu ? 16 * (int)((W->rows + 7) / 8) : (int)W->rows;
    int out_rows = (int)W->rows, K = (int)W->cols;
    gcu_mat_geometry(&m, &f, sbf32, rows);
    gcu_mat_pair pair = {W, W2};
    float *dx = NULL, *dout = NULL, *xsum = NULL;
    __nv_bfloat16 *xs = NULL;
    float2 *part = NULL;
    int *cnt = NULL;
    size_t xsn = (size_t)T * gcu_xsum_floats(f);
    if ((s = gcu_mat_upload(&m, swiglu ? gcu_rows_swiglu : gcu_rows_plain, swiglu ? (void *)&pair : (void *)W, err)) ||
        (s = gcu_check(cudaMalloc((void **)&dx, sizeof(float) * T * K), "alloc", err)) ||
        (s = gcu_check(cudaMemcpy(dx, x, sizeof(float) * T * K, cudaMemcpyHostToDevice), "copy", err)) ||
        (s = gcu_check(cudaMalloc((void **)&dout, sizeof(float) * T * out_rows), "alloc", err)) ||
        (s = gcu_check(cudaMemset(dout, 0xff, sizeof(float) * T * out_rows), "poison", err)) ||
        (s = gcu_check(cudaMalloc((void **)&xs, 2ull * 2 * T * f.kx), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&xsum, sizeof(float) * (xsn ? xsn : 1)), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&part, gcu_mv_partial_bytes(gcu_sm_count(), GCU_MV_PART_BPS)), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&cnt, sizeof(int) * m.nrb), "alloc", err)) ||
        (s = gcu_check(cudaMemset(cnt, 0, sizeof(int) * m.nrb), "memset", err)))
        goto out;
    {
        gcu_stage_call sc;
        memset(&sc, 0, sizeof sc);
        sc.op = GCU_ST_PLAIN;
        sc.T = T;
        sc.K = K;
        sc.src = dx;
        sc.ld_src = K;
        sc.norm_out = GCU_NORM_NONE;
        sc.f = &f;
        sc.xs = xs;
        sc.xsum = xsum;
        if ((s = gcu_stage_launch(&sc, 0, err)) != GLIM_OK) goto out;
        gcu_mv_call c;
        memset(&c, 0, sizeof c);
        c.m = &m;
        c.xs = xs;
        c.xsum = xsum;
        c.T = T;
        c.epi = epi;
        c.out = dout;
        c.ldo = out_rows;
        c.out_rows = out_rows;
        c.mult = mult;
        c.cap = cap;
        c.partial = part;
        c.counters = cnt;
        c.smem = smem;
        c.pf_units = 4;
        c.bps = 1;
        /* the session's room (GCU_MV_PART_BPS blocks an SM's worth): the prefill GEMM's stream-K
         * parts (tiles + grid) */
        c.partial_cap = gcu_mv_partial_bytes(gcu_sm_count(), GCU_MV_PART_BPS);
        c.gemm = gcu_options_default().gemm; /* GLIM_CUDA_GEMM 1..5: the GEMM for 5..64 tokens */
        /* twice: the second run checks that the counters were left at zero */
        for (int rep = 0; rep < 2 && s == GLIM_OK; rep++) s = gcu_mv_launch(&c, 0, err);
        if (s != GLIM_OK) goto out;
        if ((s = gcu_check(cudaDeviceSynchronize(), "matvec", err)) != GLIM_OK) goto out;
        s = gcu_check(cudaMemcpy(out, dout, sizeof(float) * T * out_rows, cudaMemcpyDeviceToHost), "copy", err);
    }
out:
    cudaFree(m.w), cudaFree(dx), cudaFree(dout), cudaFree(xs), cudaFree(xsum), cudaFree(part), cudaFree(cnt);
    return s;
}
