/* rope_qk.cu: q/k preparation for a chunk of tokens (prefill): per head the weightless norm,
 * q times qk_scale, RoPE on sliding layers; prepared q to a buffer, k and raw v into the bf16
 * KV cache at each token's slot. Decode runs the same steps inside the attention kernel. */
#include "cuda/rope_qk.cuh"

#define QK_THREADS 256

__global__ void __launch_bounds__(QK_THREADS) k_qk_prep(gcu_attn_call a) {
    extern __shared__ float buf[]; /* [warps][D] */
    const int t = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int D = a.D, H = a.H, Hkv = a.Hkv;
    gcu_pdl_wait();
    gcu_pdl_trigger();
    const int pos = *a.pos0 + t;
    const size_t slot = (size_t)(pos % a.R);
    const float *row = a.qkvg + (size_t)t * a.ldq;
    float *mine = buf + warp * D;
    for (int j = warp; j < H + Hkv; j += QK_THREADS / 32) {
        int is_q = j < H;
        gcu_prep_head(row + (size_t)j * D, mine, D, a.eps, is_q ? a.qk_scale : 1.0f, a.inv_freq,
                      pos, lane);
        if (is_q) {
            float *q = a.qn + (size_t)t * H * D + (size_t)j * D;
            for (int d = lane; d < D; d += 32) q[d] = mine[d];
        } else {
            const float *v = row + (size_t)(H + Hkv) * D + (size_t)(j - H) * D;
            size_t o = (slot * Hkv + (j - H)) * D;
            for (int d = lane; d < D; d += 32) gcu_kv_store(a, o + d, mine[d], v[d]);
        }
        __syncwarp();
    }
}

extern "C" glim_status gcu_qk_prep_launch(const gcu_attn_call *c, cudaStream_t st, glim_error *err) {
    gcu_attn_call a = *c;
    void *args[] = {&a};
    size_t smem = (size_t)(QK_THREADS / 32) * c->D * sizeof(float);
    return gcu_check(gcu_launch((const void *)k_qk_prep, dim3(c->T), dim3(QK_THREADS), smem, st,
                                c->pdl, args),
                     "qk prep launch", err);
}

extern "C" glim_status gcu_test_qk_prep(float *q, int n_heads, float *k, int n_kv, int D,
                                        float eps, float qk_scale, int pos, const float *inv_freq,
                                        glim_error *err) {
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "no CUDA device");
    int ldq = (2 * n_heads + 2 * n_kv) * D;
    float *row = NULL, *qn = NULL, *inv = NULL;
    void *kc = NULL, *vc = NULL;
    int *p0 = NULL;
    glim_status s;
    if ((s = gcu_check(cudaMalloc((void **)&row, sizeof(float) * ldq), "alloc", err)) ||
        (s = gcu_check(cudaMemset(row, 0, sizeof(float) * ldq), "memset", err)) ||
        (s = gcu_check(cudaMemcpy(row, q, sizeof(float) * n_heads * D, cudaMemcpyHostToDevice), "copy", err)) ||
        (s = gcu_check(cudaMemcpy(row + n_heads * D, k, sizeof(float) * n_kv * D, cudaMemcpyHostToDevice), "copy", err)) ||
        (s = gcu_check(cudaMalloc((void **)&qn, sizeof(float) * n_heads * D), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&kc, 2 * (size_t)n_kv * D), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&vc, 2 * (size_t)n_kv * D), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&p0, sizeof(int)), "alloc", err)) ||
        (s = gcu_check(cudaMemcpy(p0, &pos, sizeof(int), cudaMemcpyHostToDevice), "copy", err)))
        goto out;
    if (inv_freq &&
        ((s = gcu_check(cudaMalloc((void **)&inv, sizeof(float) * D / 2), "alloc", err)) ||
         (s = gcu_check(cudaMemcpy(inv, inv_freq, sizeof(float) * D / 2, cudaMemcpyHostToDevice), "copy", err))))
        goto out;
    {
        gcu_attn_call c;
        memset(&c, 0, sizeof c);
        c.qkvg = row;
        c.ldq = ldq;
        c.qn = qn;
        c.kc = kc;
        c.vc = vc;
        c.R = 1; /* one slot: the token's k lands in row 0 */
        c.H = n_heads;
        c.Hkv = n_kv;
        c.D = D;
        c.eps = eps;
        c.qk_scale = qk_scale;
        c.inv_freq = inv;
        c.pos0 = p0;
        c.T = 1;
        if ((s = gcu_qk_prep_launch(&c, 0, err)) != GLIM_OK) goto out;
        if ((s = gcu_check(cudaDeviceSynchronize(), "qk prep", err)) != GLIM_OK) goto out;
        cudaMemcpy(q, qn, sizeof(float) * n_heads * D, cudaMemcpyDeviceToHost);
        uint16_t *kh = (uint16_t *)malloc(2 * (size_t)n_kv * D);
        if (!kh) {
            s = glim_fail(err, GLIM_E_NOMEM, "out of memory");
            goto out;
        }
        cudaMemcpy(kh, kc, 2 * (size_t)n_kv * D, cudaMemcpyDeviceToHost);
        for (int i = 0; i < n_kv * D; i++) k[i] = glim_bf16_to_f32(kh[i]);
        free(kh);
    }
out:
    cudaFree(row), cudaFree(qn), cudaFree(inv), cudaFree(kc), cudaFree(vc), cudaFree(p0);
    return s;
}
