/* model_dev.cuh: the CUDA backend's device model and session, shared by forward_cuda.cu
 * (upload, the forward), session_cuda.cu (a session's buffers) and synth.cu (the synthetic
 * 30B-shaped model of the bench). */
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
    int flags;            /* decode releases qkvg -> attention -> o_proj -> gate/up -> down ->
                             next qkvg / head by flag slots instead of the PDL wait
                             (opt.flag_wait, flags_fit) */
    unsigned *flag_slot;  /* their 2 slots of 2 words (gcu_flag_wait), zero between uses */
    int flags_now;        /* a whole decoded token is being enqueued with them (enqueue_decode:
                             every arrival then has its wait; a layer alone, as --profile times
                             it, would leave a slot counted or wait on one nobody fills) */
    unsigned *flag_pend;  /* while enqueuing: the slot the last launch arrives on (NULL: none) */
    int flag_pend_blocks; /* and its grid, which the next launch waits for */
    int *dyn_cnt;   /* decode matvecs' chunk counters (gcu_dmv_call.dyn_ctr), zero between launches */
    long long *prof_stamps; /* profiling: decode_mv phase stamps (gcu_dmv_call.stamps), or NULL */
    /* timeline (timeline.cu): while a decode is captured for it, each launch takes the next slot
     * of tl (device, GCU_TL_FIELDS words each) and records its kind in tl_kind; else tl NULL */
    unsigned long long *tl;
    int tl_n, tl_max;
    unsigned char *tl_kind;
    __nv_bfloat16 *xs_h, *xs_q, *xs_i;
    float *xsum_h, *xsum_q, *xsum_i;
    float *att_part;
    float *att_poll; /* decode attention's SPEC 3 partials, every word GCU_ATT_EMPTY between launches */
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
    unsigned char *act_dig; /* down's input as digits, staged by gate/up (gcu_dmv_call.pre_dig) */
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

/* Kinds of decode kernel a timeline tells apart. */
enum { GCU_TLK_QKVG, GCU_TLK_ATT, GCU_TLK_ATT_FULL, GCU_TLK_O, GCU_TLK_GU, GCU_TLK_DOWN, GCU_TLK_HEAD, GCU_TLK_N };
/* The next timeline slot for a kernel of this kind, or NULL (no timeline, or full). */
static inline unsigned long long *gcu_tl_take(gcu_session *s, int kind) {
    if (!s->tl || s->tl_n >= s->tl_max) return NULL;
    s->tl_kind[s->tl_n] = (unsigned char)kind;
    return s->tl + (size_t)GCU_TL_FIELDS * s->tl_n++;
}
/* Captures one decoded token (position and id from d_step, logits copied to h_logits) as a
 * graph, with the session's current settings (forward_cuda.cu). */
extern "C" glim_status gcu_capture_decode(gcu_session *s, cudaGraphExec_t *exec, glim_error *err);

/* Rows of the fused q/k/v/gate matrix (q and its gate, k, v). */
static inline int gcu_qkvg_rows(const gcu_model *g) { return 2 * g->H * g->D + 2 * g->Hkv * g->D; }
/* Bytes of the matvecs' merge space (mv_part): what the session allocates and what each decode
 * call is told it has. */
static inline size_t gcu_sess_mv_part_bytes(const gcu_model *g) {
    return gcu_mv_partial_bytes(gcu_sm_count(), g->opt.bps > GCU_MV_PART_BPS ? g->opt.bps : GCU_MV_PART_BPS);
}
/* KV rows of layer l in a session of n_ctx tokens that may rewind n_rewind (session_cuda.cu):
 * every position for a full layer, a ring for a sliding one. */
extern "C" int gcu_ring_rows(const gcu_model *g, int l, int n_ctx, int n_rewind);
/* Sets s->fast, s->chain and s->flags for a new session (forward_cuda.cu). */
extern "C" void gcu_session_pick_decode(gcu_session *s);

/* Shapes, layer types, RoPE table, options from cfg (allocates the layer array). */
extern "C" glim_status gcu_model_prepare(gcu_model *g, const glim_config *c, glim_error *err);
/* Records derived sizes once every matrix is planned. */
extern "C" void gcu_model_count(gcu_model *g);

#endif
