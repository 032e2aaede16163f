/* session_cuda.cu: a CUDA session's memory: the plan of every buffer a session of n_ctx tokens
 * needs (the bf16 or fp32 KV cache as rings for the sliding layers, the activations, the staged
 * inputs, attention's partials, the matvecs' merge space), its size for the memory check
 * before anything is allocated, and the allocation itself, all up front: the forward
 * (forward_cuda.cu) allocates nothing per token. */
#include <stdlib.h>
#include <string.h>

#include "cuda/model_dev.cuh"

extern "C" int gcu_ring_rows(const gcu_model *g, int l, int n_ctx, int n_rewind) {
    if (g->is_full[l]) return n_ctx;
    /* a whole sub-chunk's keys fit before its first query attends; or the keys a rewind of
     * n_rewind tokens must find intact (glim_session_params.n_rewind), whichever is more */
    long long r = (long long)g->W + (GCU_TMAX > n_rewind ? GCU_TMAX : n_rewind);
    return r < n_ctx ? (int)r : n_ctx;
}

static void nsplits(const gcu_model *g, int n_ctx, int *full, int *slide) {
    int f = (n_ctx + GCU_ATT_TILE - 1) / GCU_ATT_TILE;
    *full = f < 1 ? 1 : f > 128 ? 128 : f;
    int w = g->W < n_ctx ? g->W : n_ctx;
    int sl = (w + GCU_ATT_TILE - 1) / GCU_ATT_TILE;
    *slide = sl < 1 ? 1 : sl > 32 ? 32 : sl;
}

typedef struct sess_plan {
    size_t kv, h, qkvg, q, inter, logits, xs_h, xs_q, xs_i, xsum_h, xsum_q, xsum_i, att, mv;
    size_t att_poll; /* decode attention's SPEC 3 partials: one token's (nsplit_full >= nsplit_slide) */
    size_t dig; /* down's input staged as digits by gate/up (GLIM_CUDA_STAGE_I8) */
} sess_plan;

static sess_plan plan_session(const gcu_model *g, int n_ctx, int n_rewind) {
    sess_plan p;
    memset(&p, 0, sizeof p);
    const int T = GCU_TMAX;
    for (int l = 0; l < g->L; l++)
        p.kv += 2ull * gcu_ring_rows(g, l, n_ctx, n_rewind) * g->Hkv * g->D * (g->opt.kv32 ? 4 : 2);
    p.h = (size_t)T * g->hidden * 4;
    p.qkvg = (size_t)T * gcu_qkvg_rows(g) * 4;
    p.q = (size_t)T * g->H * g->D * 4;
    p.inter = (size_t)T * g->inter * 4;
    p.logits = (size_t)T * g->vocab * 4;
    size_t kxh = 0, kxq = 0, kxi = 0, xh = 0, xq = 0, xi = 0;
#define SZ(KXV, xsm, M)                                                                          \
    do {                                                                                       \
        if ((size_t)(M).f.kx > KXV) KXV = (M).f.kx;                                            \
        if (gcu_xsum_floats((M).f) > xsm) xsm = gcu_xsum_floats((M).f);                        \
    } while (0)
    for (int l = 0; l < g->L; l++) {
        SZ(kxh, xh, g->layer[l].qkvg);
        SZ(kxh, xh, g->layer[l].gu);
        SZ(kxq, xq, g->layer[l].o);
        SZ(kxi, xi, g->layer[l].down);
    }
    SZ(kxh, xh, g->head);
#undef SZ
    p.xs_h = 2ull * T * kxh * 2;
    p.xs_q = 2ull * T * kxq * 2;
    p.xs_i = 2ull * T * kxi * 2;
    p.xsum_h = (size_t)T * xh * 4;
    p.xsum_q = (size_t)T * xq * 4;
    p.xsum_i = (size_t)T * xi * 4;
    int nf, ns;
    nsplits(g, n_ctx, &nf, &ns);
    int np = nf < 8 ? nf : 8, G = g->H / g->Hkv;
    size_t a1 = gcu_attn_part_floats(1, g->Hkv, nf, G, g->D), a2 = gcu_attn_part_floats(T, g->Hkv, np, G, g->D);
    p.att = (a1 > a2 ? a1 : a2) * 4;
    p.att_poll = a1 * 4;
    p.mv = gcu_sess_mv_part_bytes(g);
    for (int l = 0; l < g->L; l++) {
        const size_t b = gcu_dmv_digits_bytes(&g->layer[l].down.f);
        if (b > p.dig) p.dig = b;
    }
    return p;
}

extern "C" uint64_t gcu_session_bytes(const gcu_model *g, int n_ctx, int n_batch, int n_rewind) {
    sess_plan p = plan_session(g, n_ctx, n_rewind);
    /* every buffer gcu_session_new allocates; the last line: d_step, the three 16-byte words
     * (chain_bar, flag_slot, dyn_cnt) and span_cnt's bound */
    return p.kv + 4 * p.h + p.qkvg + 2 * p.q + p.inter + p.logits + p.xs_h + p.xs_q + p.xs_i + p.xsum_h + p.xsum_q +
           p.xsum_i + p.att + p.att_poll + p.mv + p.dig + 4ull * g->max_nrb + 8ull * GCU_TMAX * g->Hkv +
           4ull * (GCU_TMAX + 1) + 3 * 16 + 4ull * (g->inter / 32 + 2);
}

extern "C" void gcu_session_free(gcu_session *s) {
    if (!s) return;
    if (s->graph) cudaGraphExecDestroy(s->graph);
    for (int l = 0; s->kc && l < s->m->L; l++) cudaFree(s->kc[l]), cudaFree(s->vc[l]);
    free(s->kc), free(s->vc), free(s->R);
    void *bufs[] = {s->h, s->h2, s->qkvg, s->qn, s->aout, s->oout, s->act, s->dout, s->logits,
                    s->xs_h, s->xs_q, s->xs_i, s->xsum_h, s->xsum_q, s->xsum_i, s->att_part,
                    s->att_poll, s->att_cnt, s->mv_cnt, s->mv_part, s->d_step, s->span_cnt, s->chain_bar,
                    s->flag_slot, s->dyn_cnt, s->act_dig};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
    cudaFreeHost(s->h_step), cudaFreeHost(s->h_logits), cudaFreeHost(s->h_host);
    if (s->ev0) cudaEventDestroy(s->ev0);
    if (s->ev1) cudaEventDestroy(s->ev1);
    if (s->st) cudaStreamDestroy(s->st);
    free(s);
}

extern "C" glim_status gcu_session_new(gcu_model *g, int n_ctx, int n_batch, int n_rewind, gcu_session **out,
                                       glim_error *err) {
    *out = NULL;
    glim_status ist;
    if ((ist = gcu_mv_init(err)) || (ist = gcu_stage_init(err)) || (ist = gcu_attn_init(err)))
        return ist;
    uint64_t need = gcu_session_bytes(g, n_ctx, n_batch, n_rewind);
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    if (need + (256ull << 20) > fr)
        return glim_fail(err, GLIM_E_NOMEM, "CUDA: a session of %d tokens needs %.2f GiB on the "
                         "device but %.2f GiB are free", n_ctx, (double)need / (1u << 30),
                         (double)fr / (1u << 30));
    gcu_session *s = (gcu_session *)calloc(1, sizeof *s);
    if (!s) return glim_fail(err, GLIM_E_NOMEM, "out of host memory");
    s->m = g;
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    nsplits(g, n_ctx, &s->nsplit_full, &s->nsplit_slide);
    sess_plan p = plan_session(g, n_ctx, n_rewind);
    glim_status st = GLIM_OK;
    s->kv32 = g->opt.kv32;
    s->kc = (void **)calloc((size_t)g->L, sizeof(void *));
    s->vc = (void **)calloc((size_t)g->L, sizeof(void *));
    s->R = (int *)calloc((size_t)g->L, sizeof(int));
    if (!s->kc || !s->vc || !s->R) st = glim_fail(err, GLIM_E_NOMEM, "out of host memory");
    for (int l = 0; st == GLIM_OK && l < g->L; l++) {
        s->R[l] = gcu_ring_rows(g, l, n_ctx, n_rewind);
        size_t b = (size_t)s->R[l] * g->Hkv * g->D * (s->kv32 ? 4 : 2);
        if ((st = gcu_check(cudaMalloc((void **)&s->kc[l], b), "KV cache", err)) == GLIM_OK)
            st = gcu_check(cudaMalloc((void **)&s->vc[l], b), "KV cache", err);
        if (st == GLIM_OK) st = gcu_check(cudaMemset(s->kc[l], 0, b), "KV cache", err);
        if (st == GLIM_OK) st = gcu_check(cudaMemset(s->vc[l], 0, b), "KV cache", err);
    }
#define DA(ptr, bytes) \
    if (st == GLIM_OK) st = gcu_check(cudaMalloc((void **)&(ptr), (bytes) ? (bytes) : 16), "session buffer " #ptr, err)
    DA(s->h, p.h);
    DA(s->h2, p.h);
    DA(s->qkvg, p.qkvg);
    DA(s->qn, p.q);
    DA(s->aout, p.q);
    DA(s->oout, p.h);
    DA(s->act, p.inter);
    DA(s->dout, p.h);
    DA(s->logits, p.logits);
    DA(s->xs_h, p.xs_h);
    DA(s->xs_q, p.xs_q);
    DA(s->xs_i, p.xs_i);
    DA(s->xsum_h, p.xsum_h);
    DA(s->xsum_q, p.xsum_q);
    DA(s->xsum_i, p.xsum_i);
    DA(s->att_part, p.att);
    /* decode attention's SPEC 3: its partials' words start empty (GCU_ATT_EMPTY) */
    DA(s->att_poll, p.att_poll);
    if (st == GLIM_OK) st = gcu_check(cudaMemset(s->att_poll, 0xff, p.att_poll), "memset", err);
    DA(s->att_cnt, 8ull * GCU_TMAX * g->Hkv);
    DA(s->mv_cnt, 4ull * g->max_nrb);
    DA(s->mv_part, p.mv);
    DA(s->act_dig, p.dig);
    DA(s->d_step, 4ull * (GCU_TMAX + 1));
    DA(s->chain_bar, 16);
    if (st == GLIM_OK) st = gcu_check(cudaMemset(s->chain_bar, 0, 16), "memset", err);
    DA(s->flag_slot, 16);
    if (st == GLIM_OK) st = gcu_check(cudaMemset(s->flag_slot, 0, 16), "memset", err);
    DA(s->dyn_cnt, 16);
    if (st == GLIM_OK) st = gcu_check(cudaMemset(s->dyn_cnt, 0, 16), "memset", err);
    int max_span = 1;
    for (int l = 0; l < g->L; l++)
        if (g->layer[l].down.f.nspan > max_span) max_span = g->layer[l].down.f.nspan;
    DA(s->span_cnt, 4ull * max_span);
    if (st == GLIM_OK) st = gcu_check(cudaMemset(s->span_cnt, 0, 4ull * max_span), "memset", err);
#undef DA
    gcu_session_pick_decode(s);
    if (st == GLIM_OK) st = gcu_check(cudaMemset(s->att_cnt, 0, 8ull * GCU_TMAX * g->Hkv), "memset", err);
    if (st == GLIM_OK) st = gcu_check(cudaMemset(s->mv_cnt, 0, 4ull * g->max_nrb), "memset", err);
    if (st == GLIM_OK) st = gcu_check(cudaMallocHost((void **)&s->h_step, 4ull * (GCU_TMAX + 1)), "pinned", err);
    if (st == GLIM_OK) st = gcu_check(cudaMallocHost((void **)&s->h_logits, 4ull * g->vocab), "pinned", err);
    size_t hook_row = (size_t)(g->hidden > g->inter ? g->hidden : g->inter);
    if (st == GLIM_OK)
        st = gcu_check(cudaMallocHost((void **)&s->h_host, 4ull * GCU_TMAX * hook_row), "pinned", err);
    if (st == GLIM_OK) st = gcu_check(cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking), "stream", err);
    if (st == GLIM_OK) st = gcu_check(cudaEventCreate(&s->ev0), "event", err);
    if (st == GLIM_OK) st = gcu_check(cudaEventCreate(&s->ev1), "event", err);
    if (st == GLIM_OK) st = gcu_check(cudaDeviceSynchronize(), "session init", err);
    if (st != GLIM_OK) {
        gcu_session_free(s);
        return st;
    }
    *out = s;
    return GLIM_OK;
}
