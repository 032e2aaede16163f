/* synth.cu: what `glimmer bench` needs besides the forward: a synthetic model with a config's
 * shapes whose random MLX-quantized weights are generated straight into GPU memory (no file, no
 * host copy), a KV cache filled as if a long context had been evaluated, and the device-to-
 * device copy bandwidth that defines the floor. */
#include <stdlib.h>
#include <string.h>

#include "cuda/model_dev.cuh"

__device__ __forceinline__ uint32_t sy_hash(uint64_t x) {
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    x ^= x >> 33;
    return (uint32_t)x;
}
__device__ __forceinline__ float sy_unit(uint64_t seed, size_t i) { /* in [-1, 1) */
    return (float)(sy_hash(seed * 0x9e3779b97f4a7c15ull + i) >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void k_fill_f32(float *p, size_t n, uint64_t seed, float center, float spread) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = center + spread * sy_unit(seed, i);
}
__global__ void k_fill_u32(uint32_t *p, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = sy_hash(seed * 0x9e3779b97f4a7c15ull + i);
}
/* MLX scales/biases of a random table: scale ~ sd/4.6, bias centring q on 7.5 */
__global__ void k_fill_sb(uint16_t *s, uint16_t *b, size_t n, uint64_t seed, float sd) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float sc = sd / 4.6f * (1.0f + 0.25f * sy_unit(seed, i));
        s[i] = (uint16_t)gcu_bf16_bits(sc);
        b[i] = (uint16_t)gcu_bf16_bits(-7.5f * sc * (1.0f + 0.1f * sy_unit(seed + 1, i)));
    }
}
__global__ void k_fill_bf16(__nv_bfloat16 *p, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16_rn(1.7f * sy_unit(seed, i));
}

static unsigned fill_blocks(void) { return 4u * (unsigned)gcu_sm_count(); }

static glim_status synth_vec(float **d, int n, uint64_t seed, float center, float spread,
                             glim_error *err) {
    glim_status s = gcu_check(cudaMalloc((void **)d, sizeof(float) * n), "synthetic norms", err);
    if (s == GLIM_OK) k_fill_f32<<<fill_blocks(), 256>>>(*d, (size_t)n, seed, center, spread);
    return s;
}

static glim_status synth_mat(gcu_mat *M, int kind, int bits, int group, int K, int rows,
                             uint64_t seed, uint64_t *total, glim_error *err) {
    gcu_xfmt f;
    if (gcu_xfmt_make(&f, kind, bits, group, K) != 0)
        return glim_fail(err, GLIM_E_UNSUPPORTED, "synthetic model: %d-bit group %d over %d columns",
                         bits, group, K);
    gcu_mat_geometry(M, &f, 0, rows);
    *total += M->bytes;
    return gcu_mat_random(M, seed, 1.0f / sqrtf((float)K), 0, err);
}

extern "C" glim_status gcu_model_synthetic(const glim_config *c, int bits, int group, uint64_t seed,
                                           gcu_model **out, glim_error *err) {
    *out = NULL;
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "CUDA: no device");
    gcu_model *g = (gcu_model *)calloc(1, sizeof *g);
    if (!g) return glim_fail(err, GLIM_E_NOMEM, "out of host memory");
    glim_status s = gcu_model_prepare(g, c, err);
    int kind = bits ? GCU_KIND_Q : GCU_KIND_DENSE;
    int Q = g->H * g->D, KV = g->Hkv * g->D;
    uint64_t total = 0, sd = seed;
    /* check memory first: every matrix's tile bytes from the geometry alone */
    if (s == GLIM_OK) {
        gcu_xfmt fh, fq, fi;
        gcu_mat a;
        if (gcu_xfmt_make(&fh, kind, bits, group, g->hidden) || gcu_xfmt_make(&fq, kind, bits, group, Q) ||
            gcu_xfmt_make(&fi, kind, bits, group, g->inter)) {
            s = glim_fail(err, GLIM_E_UNSUPPORTED, "synthetic model: %d-bit group %d", bits, group);
        } else {
            uint64_t need = 0;
            gcu_mat_geometry(&a, &fh, 0, 2 * Q + 2 * KV), need += a.bytes;
            gcu_mat_geometry(&a, &fq, 0, g->hidden), need += a.bytes;
            gcu_mat_geometry(&a, &fh, 0, 16 * ((g->inter + 7) / 8)), need += a.bytes;
            gcu_mat_geometry(&a, &fi, 0, g->hidden), need += a.bytes;
            need *= (uint64_t)g->L;
            gcu_mat_geometry(&a, &fh, 0, g->vocab), need += 2 * a.bytes; /* head + embedding */
            size_t fr = 0, tot = 0;
            cudaMemGetInfo(&fr, &tot);
            if (need + (1ull << 30) > fr)
                s = glim_fail(err, GLIM_E_NOMEM, "synthetic model needs %.2f GiB, %.2f GiB free",
                              (double)need / (1u << 30), (double)fr / (1u << 30));
        }
    }
    for (int l = 0; s == GLIM_OK && l < g->L; l++) {
        gcu_layer *y = &g->layer[l];
        if ((s = synth_mat(&y->qkvg, kind, bits, group, g->hidden, 2 * Q + 2 * KV, ++sd, &total, err)) ||
            (s = synth_mat(&y->o, kind, bits, group, Q, g->hidden, ++sd, &total, err)) ||
            (s = synth_mat(&y->gu, kind, bits, group, g->hidden, 16 * ((g->inter + 7) / 8), ++sd, &total, err)) ||
            (s = synth_mat(&y->down, kind, bits, group, g->inter, g->hidden, ++sd, &total, err)) ||
            (s = synth_vec(&y->w_in, g->hidden, ++sd, 0.0f, 0.3f, err)) ||
            (s = synth_vec(&y->w_post_attn, g->hidden, ++sd, 0.0f, 0.3f, err)) ||
            (s = synth_vec(&y->w_pre_ffn, g->hidden, ++sd, 0.0f, 0.3f, err)) ||
            (s = synth_vec(&y->w_post_ffn, g->hidden, ++sd, 0.0f, 0.3f, err)))
            break;
        total += 16ull * g->hidden;
    }
    if (s == GLIM_OK) s = synth_mat(&g->head, kind, bits, group, g->hidden, g->vocab, ++sd, &total, err);
    if (s == GLIM_OK) s = synth_vec(&g->w_final, g->hidden, ++sd, 1.0f, 0.3f, err);
    if (s == GLIM_OK) {
        /* the embedding in the checkpoint's own layout: MLX 4-bit (or bits) rows, bf16 scales */
        int eb = bits ? bits : 0;
        size_t nq = eb ? (size_t)g->vocab * g->hidden * eb / 32 : (size_t)g->vocab * g->hidden / 2;
        size_t ns = eb ? (size_t)g->vocab * (g->hidden / group) : 0;
        void *q = NULL, *sc = NULL, *bi = NULL;
        s = gcu_check(cudaMalloc(&q, nq * 4), "synthetic embedding", err);
        if (s == GLIM_OK && ns) s = gcu_check(cudaMalloc(&sc, ns * 2), "synthetic embedding", err);
        if (s == GLIM_OK && ns) s = gcu_check(cudaMalloc(&bi, ns * 2), "synthetic embedding", err);
        if (s == GLIM_OK) {
            if (eb) {
                k_fill_u32<<<fill_blocks(), 256>>>((uint32_t *)q, nq, ++sd);
                k_fill_sb<<<fill_blocks(), 256>>>((uint16_t *)sc, (uint16_t *)bi, ns, ++sd, 1.0f);
            } else {
                k_fill_bf16<<<fill_blocks(), 256>>>((__nv_bfloat16 *)q, nq * 2, ++sd);
            }
            total += nq * 4 + ns * 4;
        }
        g->emb.bits = eb;
        g->emb.group = group;
        g->emb.sdtype = GLIM_DT_BF16;
        g->emb.K = g->hidden;
        g->emb.q = q;
        g->emb.scales = sc;
        g->emb.biases = bi;
    }
    if (s == GLIM_OK) s = gcu_check(cudaDeviceSynchronize(), "synthetic model", err);
    if (s != GLIM_OK) {
        gcu_model_free(g);
        return s;
    }
    g->dev_bytes = total;
    gcu_model_count(g);
    *out = g;
    return GLIM_OK;
}

extern "C" glim_status gcu_session_fake_context(gcu_session *s, int n, uint64_t seed,
                                                glim_error *err) {
    const gcu_model *g = s->m;
    if (n > s->n_ctx) return glim_fail(err, GLIM_E_ARG, "fake context %d > n_ctx %d", n, s->n_ctx);
    for (int l = 0; l < g->L; l++) {
        size_t rows = (size_t)(g->is_full[l] ? n : (n < s->R[l] ? n : s->R[l]));
        size_t cnt = rows * g->Hkv * g->D;
        if (!cnt) continue;
        if (s->kv32) {
            k_fill_f32<<<fill_blocks(), 256, 0, s->st>>>((float *)s->kc[l], cnt, seed + 2 * l, 0.0f, 1.7f);
            k_fill_f32<<<fill_blocks(), 256, 0, s->st>>>((float *)s->vc[l], cnt, seed + 2 * l + 1, 0.0f, 1.7f);
        } else {
            k_fill_bf16<<<fill_blocks(), 256, 0, s->st>>>((__nv_bfloat16 *)s->kc[l], cnt, seed + 2 * l);
            k_fill_bf16<<<fill_blocks(), 256, 0, s->st>>>((__nv_bfloat16 *)s->vc[l], cnt, seed + 2 * l + 1);
        }
    }
    return gcu_check(cudaStreamSynchronize(s->st), "fake context", err);
}

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

extern "C" glim_status gcu_copy_bandwidth(uint64_t bytes, int reps, double *bw, glim_error *err) {
    void *a = NULL, *b = NULL;
    cudaEvent_t e0, e1;
    float *ms = (float *)calloc((size_t)(reps > 0 ? reps : 1), sizeof(float));
    glim_status s = ms ? GLIM_OK : glim_fail(err, GLIM_E_NOMEM, "out of host memory");
    if (s == GLIM_OK) s = gcu_check(cudaMalloc(&a, bytes), "bandwidth buffer", err);
    if (s == GLIM_OK) s = gcu_check(cudaMalloc(&b, bytes), "bandwidth buffer", err);
    if (s == GLIM_OK) {
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        k_fill_u32<<<fill_blocks(), 256>>>((uint32_t *)a, bytes / 4, 7);
        cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice); /* warm-up */
        for (int i = 0; i < reps; i++) {
            cudaEventRecord(e0);
            cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice);
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            cudaEventElapsedTime(&ms[i], e0, e1);
        }
        s = gcu_check(cudaGetLastError(), "bandwidth copy", err);
        qsort(ms, (size_t)reps, sizeof(float), cmp_f);
        *bw = 2.0 * (double)bytes / (ms[reps / 2] * 1e-3);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
    }
    cudaFree(a), cudaFree(b);
    free(ms);
    return s;
}
