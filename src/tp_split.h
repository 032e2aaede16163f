/* tp_split.h: how a Muse Glimmer model splits over R tensor-parallel ranks (issue 6), as
 * host-side views any backend can upload. Megatron-style:
 *   - query heads split evenly; each rank keeps the kv heads its query heads read (GQA): with
 *     R <= n_kv_heads each rank holds n_kv_heads / R of them, with R > n_kv_heads the kv heads
 *     are replicated (rank r reads kv head r * n_kv_heads / R);
 *   - q, k, v and the attention gate split by rows (heads), o_proj by columns: each rank's o_proj
 *     output is a partial sum, all-reduced before the post-attention norm;
 *   - MLP gate/up split by rows, down_proj by columns: partial sums all-reduced before the
 *     post-FFN norm;
 *   - embedding and head split by vocabulary rows: a rank looks up only tokens in its slice
 *     (zeros elsewhere, all-reduced), and computes the logits of its slice.
 * Norms are replicated: after each all-reduce every rank holds the whole residual stream. */
#ifndef GLIM_TP_SPLIT_H
#define GLIM_TP_SPLIT_H

#include "model.h"

typedef struct glim_tp_plan {
    int n_ranks, rank;
    int q_head0, n_q_heads;   /* this rank's query heads */
    int kv_head0, n_kv_heads; /* the kv heads it holds */
    int inter0, n_inter;      /* its MLP columns */
    int vocab0, n_vocab;      /* its embedding and head rows */
} glim_tp_plan;

/* Checks that the model splits over n_ranks (heads, kv heads, intermediate and quantization
 * groups divide evenly) and fills this rank's plan. */
glim_status glim_tp_plan_make(const glim_config *cfg, const glim_weights *w, int n_ranks,
                              int rank, glim_tp_plan *plan, glim_error *err);

/* One rank's part of a model: a config with the rank's head / kv / intermediate / vocab counts
 * and weights whose row slices point into the full model, while column slices (o_proj,
 * down_proj) are copied into buffers the shard owns. The full model must outlive the shard. */
typedef struct glim_tp_shard {
    glim_tp_plan plan;
    glim_config cfg;     /* shares layer_is_full, layer_rope_theta, inv_freq with the full one */
    glim_weights w;
    void **owned;        /* buffers to free */
    int n_owned;
} glim_tp_shard;

glim_status glim_tp_shard_make(const glim_config *cfg, const glim_weights *w,
                               const glim_tp_plan *plan, glim_tp_shard *out, glim_error *err);
void glim_tp_shard_free(glim_tp_shard *s);

#endif
