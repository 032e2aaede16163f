/* kernels.c: the CPU oracle's kernels (see kernels.h). fp32 throughout; weights are widened or
 * dequantized a chunk at a time and never stored dequantized. */
#include "cpu/kernels.h"

#include <math.h>
#include <string.h>

static float weight_at(const glim_vector *w, int i) { return glim_load_f32(w->data, w->dtype, (size_t)i); }

void cpu_rmsnorm(float *out, const float *x, int n, const glim_vector *w, int centered,
                 float eps) {
    double ss = 0.0; /* double: the mean of squares is the one long reduction here */
    for (int i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
    float inv = 1.0f / sqrtf((float)(ss / n) + eps);
    for (int i = 0; i < n; i++) {
        float y = x[i] * inv;
        if (w) y *= centered ? 1.0f + weight_at(w, i) : weight_at(w, i);
        out[i] = y;
    }
}

/* Columns are processed in chunks so one dequantized piece of a row stays in L1 while every
 * token's dot product uses it. */
#define MATMUL_CHUNK 2048

typedef struct matmul_job {
    float *out;
    const float *x;
    int T;
    const glim_matrix *W;
} matmul_job;

static float dot(const float *a, const float *b, int64_t n) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    for (; i < n; i++) acc[0] += a[i] * b[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static void matmul_rows(void *p, int64_t r0, int64_t r1) {
    const matmul_job *j = p;
    const glim_matrix *W = j->W;
    int64_t C = W->cols, R = W->rows;
    float buf[MATMUL_CHUNK];
    for (int64_t r = r0; r < r1; r++) {
        for (int t = 0; t < j->T; t++) j->out[(size_t)t * R + r] = 0.0f;
        for (int64_t c0 = 0; c0 < C; c0 += MATMUL_CHUNK) {
            int64_t n = C - c0 < MATMUL_CHUNK ? C - c0 : MATMUL_CHUNK;
            glim_matrix_row_range_f32(W, r, c0, n, buf);
            for (int t = 0; t < j->T; t++)
                j->out[(size_t)t * R + r] += dot(buf, j->x + (size_t)t * C + c0, n);
        }
    }
}

void cpu_matmul(glim_pool *pool, float *out, const float *x, int T, const glim_matrix *W) {
    matmul_job j = {out, x, T, W};
    glim_pool_run(pool, matmul_rows, &j, W->rows);
}

void cpu_embed_row(float *out, const glim_matrix *W, int token) {
    glim_matrix_row_f32(W, token, out);
}

void cpu_rope(float *x, int n_heads, int head_dim, int pos, const float *inv_freq) {
    int half = head_dim / 2;
    for (int d = 0; d < half; d++) {
        float angle = (float)pos * inv_freq[d];
        float c = cosf(angle), s = sinf(angle);
        for (int h = 0; h < n_heads; h++) {
            float *v = x + (size_t)h * head_dim;
            float a = v[d], b = v[d + half];
            v[d] = a * c - b * s;
            v[d + half] = b * c + a * s;
        }
    }
}

void cpu_attention(float *out, const float *q, const cpu_kv_view *kv, int n_heads,
                   int n_kv_heads, int head_dim, float scale, float *scores) {
    int group = n_heads / n_kv_heads;
    for (int h = 0; h < n_heads; h++) {
        const float *qh = q + (size_t)h * head_dim;
        int kvh = h / group;
        float mx = -INFINITY;
        for (int j = 0; j < kv->n_keys; j++) {
            size_t row = (size_t)((kv->first + j) % kv->ring) * (size_t)kv->row_stride;
            float s = dot(qh, kv->k + row + (size_t)kvh * head_dim, head_dim) * scale;
            scores[j] = s;
            if (s > mx) mx = s;
        }
        float sum = 0.0f;
        for (int j = 0; j < kv->n_keys; j++) {
            scores[j] = expf(scores[j] - mx);
            sum += scores[j];
        }
        float *oh = out + (size_t)h * head_dim;
        memset(oh, 0, sizeof(float) * (size_t)head_dim);
        for (int j = 0; j < kv->n_keys; j++) {
            size_t row = (size_t)((kv->first + j) % kv->ring) * (size_t)kv->row_stride;
            const float *vh = kv->v + row + (size_t)kvh * head_dim;
            float p = scores[j] / sum;
            for (int d = 0; d < head_dim; d++) oh[d] += p * vh[d];
        }
    }
}

void cpu_sigmoid_gate(float *a, const float *g, int n) {
    for (int i = 0; i < n; i++) a[i] *= 1.0f / (1.0f + expf(-g[i]));
}

void cpu_swiglu(float *out, const float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void cpu_logit_softcap(float *z, int n, float mult, float cap) {
    for (int i = 0; i < n; i++) {
        float v = z[i] * mult;
        z[i] = cap > 0.0f ? cap * tanhf(v / cap) : v;
    }
}
