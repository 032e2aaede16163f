/* norms.cu: the "stage" kernel: everything between two matrix products that needs a whole
 * row — the embedding lookup and its weightless norm, the centred post-norm plus residual add,
 * the pre-norm of the next block, the plain final norm — ending with the row staged (bf16
 * hi/lo, permuted, group sums) for the next matrix-vector product. One block per token; sums
 * of squares in double, as the CPU oracle does. */
#include "cuda/gcu.cuh"

#define ST_THREADS 512
#define ST_SMEM_MAX (200 * 1024)

struct StArgs {
    int op, T, K;
    float *h;
    const float *src;
    int ld_src;
    gcu_embed emb;
    const int *tokens;
    const float *w_add;
    float eps_add;
    int norm_out;
    const float *w_out;
    float eps_out;
    gcu_xfmt f;
    __nv_bfloat16 *xs;
    float *xsum;
    float *xout; /* tests: the normed row, fp32 */
};

/* 1 / sqrt(mean(x^2) + eps) over x[0..K), every thread gets it. */
__device__ float st_inv_rms(const float *x, int K, float eps) {
    __shared__ double part[32];
    __shared__ float res;
    double s = 0.0;
    for (int i = threadIdx.x; i < K; i += blockDim.x) s += (double)x[i] * (double)x[i];
    s = gcu_warp_sum_d(s);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        double v = threadIdx.x < (blockDim.x + 31) / 32 ? part[threadIdx.x] : 0.0;
        v = gcu_warp_sum_d(v);
        if (threadIdx.x == 0) res = 1.0f / sqrtf((float)(v / K) + eps);
    }
    __syncthreads();
    float r = res;
    __syncthreads(); /* part/res are reused by the next call */
    return r;
}

__device__ __forceinline__ float st_sb(const void *p, int dt, size_t i) {
    if (dt == GLIM_DT_BF16) return __uint_as_float((uint32_t)((const uint16_t *)p)[i] << 16);
    if (dt == GLIM_DT_F16) return __half2float(((const __half *)p)[i]);
    return ((const float *)p)[i];
}

__device__ void st_embed_row(const gcu_embed &e, int token, float *out) {
    const int K = e.K;
    if (!e.bits) {
        const uint16_t *row = (const uint16_t *)e.q + (size_t)token * K;
        for (int c = threadIdx.x; c < K; c += blockDim.x) out[c] = __uint_as_float((uint32_t)row[c] << 16);
        return;
    }
    if ((e.bits == 4 || e.bits == 8) && K % 32 == 0) {
        /* one 32-bit word per thread: 8 (or 4) elements of one group, one scale/bias */
        const int per = 32 / e.bits, nw = K / per, ng = K / e.group;
        const uint32_t *row = (const uint32_t *)e.q + (size_t)token * nw;
        const uint32_t mask = (1u << e.bits) - 1;
        for (int w = threadIdx.x; w < nw; w += blockDim.x) {
            uint32_t v = row[w];
            size_t gi = (size_t)token * ng + (size_t)w * per / e.group;
            float sc = st_sb(e.scales, e.sdtype, gi), bi = st_sb(e.biases, e.sdtype, gi);
            for (int k = 0; k < per; k++) out[w * per + k] = sc * (float)((v >> (k * e.bits)) & mask) + bi;
        }
        return;
    }
    const uint8_t *row = (const uint8_t *)e.q + (size_t)token * K * e.bits / 8;
    const size_t row_bytes = (size_t)K * e.bits / 8;
    const int ng = K / e.group;
    const uint32_t mask = (1u << e.bits) - 1;
    for (int c = threadIdx.x; c < K; c += blockDim.x) {
        size_t bit = (size_t)c * e.bits, byte = bit >> 3;
        uint32_t two = row[byte] | (byte + 1 < row_bytes ? (uint32_t)row[byte + 1] << 8 : 0u);
        uint32_t q = (two >> (bit & 7)) & mask;
        size_t gi = (size_t)token * ng + c / e.group;
        out[c] = st_sb(e.scales, e.sdtype, gi) * (float)q + st_sb(e.biases, e.sdtype, gi);
    }
}

__global__ void __launch_bounds__(ST_THREADS) k_stage(StArgs a) {
    extern __shared__ float sx[]; /* [K] the row; RESID also [K] h, [K] w_add, [K] w_out */
    const int t = blockIdx.x, K = a.K;
    float *sh = sx + K, *swa = sx + 2 * K, *swo = sx + 3 * K;
    gcu_pdl_wait();
    gcu_pdl_trigger();
    if (a.op == GCU_ST_EMBED) {
        st_embed_row(a.emb, a.tokens[t], sx);
        if (a.norm_out == GCU_NORM_CENTERED || a.norm_out == GCU_NORM_PLAIN) {
            const float *src[1] = {a.w_out};
            float *dst[1] = {swo};
            gcu_load_rows(K, 1, src, dst);
        }
        __syncthreads();
        if (a.xout) /* tests: the raw row */
            for (int i = threadIdx.x; i < K; i += blockDim.x) a.xout[(size_t)t * K + i] = sx[i];
    } else {
        const float *src[4] = {a.src + (size_t)t * a.ld_src, NULL, NULL, NULL};
        float *dst[4] = {sx, NULL, NULL, NULL};
        int n = 1;
        if (a.op == GCU_ST_RESID) {
            src[n] = a.h + (size_t)t * K, dst[n++] = sh;
            src[n] = a.w_add, dst[n++] = swa;
        }
        if (a.norm_out == GCU_NORM_CENTERED || a.norm_out == GCU_NORM_PLAIN) src[n] = a.w_out, dst[n++] = swo;
        gcu_load_rows(K, n, src, dst);
        __syncthreads();
    }
    if (a.op != GCU_ST_PLAIN) {
        float *h = a.h + (size_t)t * K;
        float inv = st_inv_rms(sx, K, a.eps_add); /* EMBED: the weightless embed_norm */
        for (int i = threadIdx.x; i < K; i += blockDim.x) {
            float y = sx[i] * inv;
            if (a.op == GCU_ST_RESID) y = sh[i] + y * (1.0f + swa[i]);
            h[i] = y;
            sx[i] = y;
        }
        __syncthreads();
    }
    if (a.norm_out != GCU_NORM_NONE) {
        float inv = st_inv_rms(sx, K, a.eps_out);
        for (int i = threadIdx.x; i < K; i += blockDim.x) {
            float y = sx[i] * inv;
            if (a.norm_out == GCU_NORM_CENTERED) y *= 1.0f + swo[i];
            else if (a.norm_out == GCU_NORM_PLAIN) y *= swo[i];
            sx[i] = y;
        }
        __syncthreads();
    }
    if (a.xout && a.op != GCU_ST_EMBED) /* tests: the normed row */
        for (int i = threadIdx.x; i < K; i += blockDim.x) a.xout[(size_t)t * K + i] = sx[i];
    if (!a.xs) return;
    auto x = [&](int e) { return e < K ? sx[e] : 0.0f; };
    gcu_stage_spans(a.f, x, 0, a.f.nspan, a.xs + (size_t)(2 * t) * a.f.kx,
                    a.xs + (size_t)(2 * t + 1) * a.f.kx,
                    a.xsum + (size_t)t * gcu_xsum_floats(a.f), threadIdx.x,
                    blockDim.x);
}

extern "C" glim_status gcu_stage_init(glim_error *err) {
    static int raised;
    if (raised) return GLIM_OK;
    glim_status s = gcu_check(cudaFuncSetAttribute((const void *)k_stage,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                   ST_SMEM_MAX),
                              "stage shared memory", err);
    raised = s == GLIM_OK;
    return s;
}

static glim_status stage_launch(const gcu_stage_call *c, float *xout, cudaStream_t st,
                                glim_error *err) {
    /* shared rows: the row at 0, h at K and w_add at 2K (RESID), w_out at 3K whenever there is
     * an output norm with a gain (PLAIN included), so the size follows the highest slot used */
    int has_w_out = c->norm_out == GCU_NORM_CENTERED || c->norm_out == GCU_NORM_PLAIN;
    int rows = has_w_out || c->op == GCU_ST_EMBED ? 4 : c->op == GCU_ST_RESID ? 3 : 1;
    size_t smem = (size_t)c->K * sizeof(float) * rows;
    if (smem > ST_SMEM_MAX)
        return glim_fail(err, GLIM_E_UNSUPPORTED, "stage: width %d needs %zu bytes of shared "
                         "memory, the kernel has %d", c->K, smem, ST_SMEM_MAX);
    glim_status ist = gcu_stage_init(err);
    if (ist != GLIM_OK) return ist;
    StArgs a;
    memset(&a, 0, sizeof a);
    a.op = c->op;
    a.T = c->T;
    a.K = c->K;
    a.h = c->h;
    a.src = c->src;
    a.ld_src = c->ld_src;
    if (c->emb) a.emb = *c->emb;
    a.tokens = c->tokens;
    a.w_add = c->w_add;
    a.eps_add = c->eps_add;
    a.norm_out = c->norm_out;
    a.w_out = c->w_out;
    a.eps_out = c->eps_out;
    if (c->f) a.f = *c->f;
    a.xs = c->xs;
    a.xsum = c->xsum;
    a.xout = xout;
    void *args[] = {&a};
    return gcu_check(gcu_launch((const void *)k_stage, dim3(c->T), dim3(ST_THREADS), smem, st,
                                c->pdl, args),
                     "stage launch", err);
}

extern "C" glim_status gcu_stage_launch(const gcu_stage_call *c, cudaStream_t st, glim_error *err) {
    return stage_launch(c, NULL, st, err);
}

/* ---- test wrappers ----------------------------------------------------------------------- */

static glim_status upload(float **d, const float *h, int n, glim_error *err) {
    glim_status s = gcu_check(cudaMalloc((void **)d, sizeof(float) * (n > 0 ? n : 1)), "alloc", err);
    if (s == GLIM_OK && h) s = gcu_check(cudaMemcpy(*d, h, sizeof(float) * n, cudaMemcpyHostToDevice), "copy", err);
    return s;
}

extern "C" glim_status gcu_test_residual_norm(const gcu_test_norm *p, float *h_out, float *x_out,
                                              glim_error *err) {
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "no CUDA device");
    float *h = NULL, *src = NULL, *wa = NULL, *wo = NULL, *xo = NULL;
    glim_status s;
    if ((s = upload(&h, p->h, p->K, err)) || (s = upload(&src, p->src, p->K, err)) ||
        (s = upload(&wa, p->w_add, p->K, err)) || (s = upload(&wo, p->w_out, p->K, err)) ||
        (s = upload(&xo, NULL, p->K, err)))
        goto out;
    {
        gcu_stage_call c;
        memset(&c, 0, sizeof c);
        c.op = GCU_ST_RESID;
        c.T = 1;
        c.K = p->K;
        c.h = h;
        c.src = src;
        c.ld_src = p->K;
        c.w_add = wa;
        c.eps_add = p->eps_add;
        c.norm_out = p->out_centered ? GCU_NORM_CENTERED : GCU_NORM_PLAIN;
        c.w_out = wo;
        c.eps_out = p->eps_out;
        if ((s = stage_launch(&c, xo, 0, err)) != GLIM_OK) goto out;
        if ((s = gcu_check(cudaDeviceSynchronize(), "stage", err)) != GLIM_OK) goto out;
        cudaMemcpy(h_out, h, sizeof(float) * p->K, cudaMemcpyDeviceToHost);
        s = gcu_check(cudaMemcpy(x_out, xo, sizeof(float) * p->K, cudaMemcpyDeviceToHost), "copy", err);
    }
out:
    cudaFree(h), cudaFree(src), cudaFree(wa), cudaFree(wo), cudaFree(xo);
    return s;
}

static size_t host_matrix_bytes(const glim_matrix *m, size_t *sb) {
    *sb = m->bits ? (size_t)m->rows * (m->cols / m->group_size) * glim_dtype_size(m->dtype) : 0;
    return m->bits ? (size_t)m->rows * (m->cols * m->bits / 32) * 4
                   : (size_t)m->rows * m->cols * glim_dtype_size(m->dtype);
}

extern "C" glim_status gcu_test_embed(const glim_matrix *E, int token, float eps, float *row_out,
                                      float *normed_out, glim_error *err) {
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "no CUDA device");
    if (!E->bits && E->dtype != GLIM_DT_BF16)
        return glim_fail(err, GLIM_E_UNSUPPORTED, "embed: dense table must be BF16");
    size_t sbb, qb = host_matrix_bytes(E, &sbb);
    void *q = NULL, *sc = NULL, *bi = NULL;
    float *h = NULL, *xo = NULL;
    int *tok = NULL;
    glim_status s;
    if ((s = gcu_check(cudaMalloc(&q, qb), "alloc", err)) ||
        (s = gcu_check(cudaMemcpy(q, E->data, qb, cudaMemcpyHostToDevice), "copy", err)))
        goto out;
    if (E->bits &&
        ((s = gcu_check(cudaMalloc(&sc, sbb), "alloc", err)) || (s = gcu_check(cudaMalloc(&bi, sbb), "alloc", err)) ||
         (s = gcu_check(cudaMemcpy(sc, E->scales, sbb, cudaMemcpyHostToDevice), "copy", err)) ||
         (s = gcu_check(cudaMemcpy(bi, E->biases, sbb, cudaMemcpyHostToDevice), "copy", err))))
        goto out;
    if ((s = upload(&h, NULL, (int)E->cols, err)) || (s = upload(&xo, NULL, (int)E->cols, err)) ||
        (s = gcu_check(cudaMalloc((void **)&tok, sizeof(int)), "alloc", err)) ||
        (s = gcu_check(cudaMemcpy(tok, &token, sizeof(int), cudaMemcpyHostToDevice), "copy", err)))
        goto out;
    {
        gcu_embed e = {E->bits, E->group_size, (int)E->dtype, (int)E->cols, q, sc, bi};
        gcu_stage_call c;
        memset(&c, 0, sizeof c);
        c.op = GCU_ST_EMBED;
        c.T = 1;
        c.K = (int)E->cols;
        c.h = h;
        c.emb = &e;
        c.tokens = tok;
        c.eps_add = eps;
        c.norm_out = GCU_NORM_NONE;
        if ((s = stage_launch(&c, xo, 0, err)) != GLIM_OK) goto out;
        if ((s = gcu_check(cudaDeviceSynchronize(), "embed", err)) != GLIM_OK) goto out;
        cudaMemcpy(normed_out, h, sizeof(float) * E->cols, cudaMemcpyDeviceToHost);
        s = gcu_check(cudaMemcpy(row_out, xo, sizeof(float) * E->cols, cudaMemcpyDeviceToHost), "copy", err);
    }
out:
    cudaFree(q), cudaFree(sc), cudaFree(bi), cudaFree(h), cudaFree(xo), cudaFree(tok);
    return s;
}
