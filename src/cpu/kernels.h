/* kernels.h: the CPU kernels of the oracle forward, one function per operation of MODEL.md
 * section 2, fp32 activations. They are the twins the CUDA kernels are tested against, so
 * each is written to be read: plain loops, fp32 arithmetic, no tricks. */
#ifndef GLIM_CPU_KERNELS_H
#define GLIM_CPU_KERNELS_H

#include "model.h"
#include "cpu/threadpool.h"

/* out = x * rsqrt(mean(x^2) + eps) * gain, over n elements, where gain is
 *   1          when w == NULL      (weightless: embedding norm, q/k norm)
 *   1 + w[i]   when centered       (the four per-layer norms)
 *   w[i]       otherwise           (the final norm)
 * out may alias x. */
void cpu_rmsnorm(float *out, const float *x, int n, const glim_vector *w, int centered,
                 float eps);

/* out[t][r] = sum_c x[t][c] * W[r][c] for t < T, r < W->rows (W dequantized on the fly).
 * Rows are split over the pool's threads; each weight row is read once for all T tokens. */
void cpu_matmul(glim_pool *pool, float *out, const float *x, int T, const glim_matrix *W);

/* out = row `token` of the embedding matrix (dequantized), W->cols floats. */
void cpu_embed_row(float *out, const glim_matrix *W, int token);

/* NeoX ("rotate_half") RoPE in place on x = [n_heads][head_dim] at position pos:
 * for d < head_dim/2, angle = pos * inv_freq[d]:
 *   y[d] = x[d] cos - x[d+h/2] sin,   y[d+h/2] = x[d+h/2] cos + x[d] sin. */
void cpu_rope(float *x, int n_heads, int head_dim, int pos, const float *inv_freq);

/* One query position's attention for all heads (GQA: head h reads kv-head h / (n_heads /
 * n_kv_heads)). keys/values hold n_keys rows of [n_kv_heads][head_dim], row j at
 * base + ((first + j) % ring) * row_stride floats (ring = capacity of the buffer; full layers
 * pass ring >= first + n_keys so no wrap happens). scores needs n_keys floats.
 * out = [n_heads][head_dim]. */
typedef struct cpu_kv_view {
    const float *k, *v;
    int first;      /* logical index of the first visible key */
    int n_keys;     /* visible keys: first .. first+n_keys-1 */
    int ring;       /* buffer capacity in rows */
    int row_stride; /* floats per row (n_kv_heads * head_dim) */
} cpu_kv_view;

void cpu_attention(float *out, const float *q, const cpu_kv_view *kv, int n_heads,
                   int n_kv_heads, int head_dim, float scale, float *scores);

/* a[i] *= sigmoid(g[i]) */
void cpu_sigmoid_gate(float *a, const float *g, int n);
/* out[i] = silu(gate[i]) * up[i] (out may alias gate) */
void cpu_swiglu(float *out, const float *gate, const float *up, int n);
/* z[i] = cap * tanh(z[i] * mult / cap): the output multiplier first, then the softcap. */
void cpu_logit_softcap(float *z, int n, float mult, float cap);

#endif
