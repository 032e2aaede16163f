/* model_dev.cuh: the CUDA backend's device model and session, shared by forward_cuda.cu
 * (upload, sessions, the forward) and synth.cu (the synthetic 30B-shaped model of the bench). */
#ifndef GLIM_CUDA_MODEL_DEV_CUH
#define GLIM_CUDA_MODEL_DEV_CUH

#include "cuda/gcu.cuh"

typedef struct gcu_layer {
    gcu_mat qkvg, o, gu, down;
    float *w_in, *w_post_attn, *w_pre_ffn, *w_post_ffn;
    int full;
} gcu_layer;

struct gcu_model {
    int vocab, hidden, inter, L, H, Hkv, D, W, max_pos;
    float rms_eps, post_eps, qk_scale, attn_scale, softcap, out_mult;
    int *is_full;
    float *inv_freq; /* device [D/2] */
    gcu_layer *layer;
    gcu_mat head;
    gcu_embed emb;
    float *w_final;
    gcu_options opt;
    int max_nrb;
    uint64_t dev_bytes;
};

struct gcu_session {
    gcu_model *m;
    int n_ctx, n_batch, nsplit_full, nsplit_slide;
    cudaStream_t st;
    void **kc, **vc;       /* per layer [R][Hkv][D], bf16 or f32 (opt.kv32) */
    int kv32;
    int *R;
    float *h, *qkvg, *qn, *aout, *oout, *act, *dout, *logits;
    float *h2;      /* decode_mv.cu path: the second residual buffer (ping-pong with h) */
    int fast;       /* decode runs through decode_mv.cu (opt.fast and every matrix fits) */
    int fast_now;   /* kernels being enqueued belong to that path (PDL applies to them only) */
    int chain;      /* decode chains o, gate/up, down, next qkvg into one launch (opt.chain, fits) */
    unsigned *chain_bar; /* the chain's grid-barrier words [2], zero between launches */
    long long *prof_stamps; /* profiling: decode_mv phase stamps (gcu_dmv_call.stamps), or NULL */
    __nv_bfloat16 *xs_h, *xs_q, *xs_i;
    float *xsum_h, *xsum_q, *xsum_i;
    float *att_part;
    int *att_cnt, *mv_cnt;
    float2 *mv_part;
    int *d_step, *h_step;
    float *h_logits;
    cudaGraphExec_t graph;
    int graph_state; /* 0 not captured, 1 ready, -1 capture failed */
    cudaEvent_t ev0, ev1;
    double last_ms;
    int x_global; /* profiling: matvecs read x from global memory instead of shared */
    int *span_cnt; /* fused SwiGLU staging: per span of the down input, zero */
    /* Research hooks (src/hooks.h), applied on the host between kernels: the residual rows go
     * down to h_host after each layer's FFN residual add and come back steered; the SwiGLU rows
     * go down for the census. NULL: no hooks, and the graph path runs untouched. */
    struct glim_hooks *hooks;
    float *h_host;   /* pinned [GCU_TMAX][max(hidden, intermediate)] */
    /* Tensor parallelism (tp_nccl.cu): all-reduces the partial sums of o_proj and down_proj, in
     * place, on the session's stream. NULL on one GPU. */
    glim_status (*allreduce)(void *ctx, float *buf, size_t count, cudaStream_t st,
                             glim_error *err);
    void *allreduce_ctx;
};

/* Shapes, layer types, RoPE table, options from cfg (allocates the layer array). */
extern "C" glim_status gcu_model_prepare(gcu_model *g, const glim_config *c, glim_error *err);
/* Records derived sizes once every matrix is planned. */
extern "C" void gcu_model_count(gcu_model *g);

#endif
