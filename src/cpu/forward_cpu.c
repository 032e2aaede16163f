/* forward_cpu.c: the CPU backend, glimmer's oracle. One function per stage of MODEL.md
 * section 2, fp32 activations, the weights read in place from the mapped checkpoint.
 *
 * A chunk of n tokens goes through the model layer by layer, so every weight matrix is read
 * once per chunk. KV cache: per layer K (after q/k-norm and RoPE) and V, fp32. Full layers hold
 * the whole context; sliding layers a ring of W + n_batch rows, enough that a whole chunk's
 * keys can be written before any of its queries attends (the oldest key a chunk needs is
 * W-1 rows behind its first token). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "cpu/kernels.h"
#include "error.h"
#include "hooks.h"

typedef struct cpu_session {
    glim_pool *pool;
    int *ring;          /* [n_layers] rows each layer's K/V buffer holds */
    float **k, **v;     /* [n_layers] -> [ring][kv_dim] */
    /* scratch for n_batch tokens */
    float *x;           /* [B][hidden] the residual stream */
    float *xn;          /* [B][hidden] normed input of the current block */
    float *q, *gate;    /* [B][n_heads*head_dim] */
    float *att;         /* [B][n_heads*head_dim] attention output */
    float *kn, *vn;     /* [B][kv_dim] this chunk's new keys and values */
    float *proj;        /* [B][hidden] o_proj / down_proj output */
    float *ffn_g, *ffn_u; /* [B][intermediate] */
    float *scores;      /* [B][max ring] softmax scratch, a row per token */
    int max_ring;
} cpu_session;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A sliding layer's ring: the window, plus a chunk's keys written before its first query
 * attends, or the keys a rewind of n_rewind tokens must find intact, whichever is more. */
static int layer_ring(const glim_config *c, int layer, int n_ctx, int n_batch, int n_rewind) {
    if (c->layer_is_full[layer]) return n_ctx;
    long long r = (long long)c->sliding_window + (n_batch > n_rewind ? n_batch : n_rewind);
    return r < n_ctx ? (int)r : n_ctx;
}

/* Every float the session allocates, in one place, so the plan and the allocation agree. */
typedef struct cpu_plan {
    size_t x, q, kv, inter, scores, cache;
} cpu_plan;

static cpu_plan plan_for(const glim_model *m, int n_ctx, int B, int n_rewind) {
    const glim_config *c = &m->cfg;
    cpu_plan p;
    size_t Q = (size_t)c->n_heads * c->head_dim, KV = (size_t)c->n_kv_heads * c->head_dim;
    int max_ring = 0;
    p.cache = 0;
    for (int l = 0; l < c->n_layers; l++) {
        int r = layer_ring(c, l, n_ctx, B, n_rewind);
        if (r > max_ring) max_ring = r;
        p.cache += 2 * (size_t)r * KV;
    }
    p.x = (size_t)B * c->hidden_size;
    p.q = (size_t)B * Q;
    p.kv = (size_t)B * KV;
    p.inter = (size_t)B * c->intermediate_size;
    p.scores = (size_t)B * max_ring;
    return p;
}

static uint64_t cpu_session_bytes(const glim_model *m, int n_ctx, int n_batch, int n_rewind) {
    cpu_plan p = plan_for(m, n_ctx, n_batch, n_rewind);
    size_t floats = 3 * p.x + 3 * p.q + 2 * p.kv + 2 * p.inter + p.scores + p.cache;
    return (uint64_t)floats * sizeof(float);
}

static void cpu_session_free(glim_session *s, void *state) {
    cpu_session *cs = state;
    if (!cs) return;
    glim_pool_free(cs->pool);
    for (int l = 0; cs->k && l < s->model->cfg.n_layers; l++) {
        free(cs->k[l]);
        free(cs->v[l]);
    }
    free(cs->k);
    free(cs->v);
    free(cs->ring);
    free(cs->x);
    free(cs->xn);
    free(cs->q);
    free(cs->gate);
    free(cs->att);
    free(cs->kn);
    free(cs->vn);
    free(cs->proj);
    free(cs->ffn_g);
    free(cs->ffn_u);
    free(cs->scores);
    free(cs);
}

static glim_status cpu_session_init(glim_session *s, void **state, glim_error *err) {
    const glim_config *c = &s->model->cfg;
    int B = s->n_batch, L = c->n_layers;
    size_t KV = (size_t)c->n_kv_heads * c->head_dim;
    cpu_plan p = plan_for(s->model, s->n_ctx, B, s->n_rewind);
    cpu_session *cs = calloc(1, sizeof *cs);
    if (!cs) return glim_fail(err, GLIM_E_NOMEM, "session: out of memory");
    cs->pool = glim_pool_create(s->model->n_threads);
    cs->ring = calloc((size_t)L, sizeof(int));
    cs->k = calloc((size_t)L, sizeof(float *));
    cs->v = calloc((size_t)L, sizeof(float *));
    int ok = cs->pool && cs->ring && cs->k && cs->v;
    for (int l = 0; ok && l < L; l++) {
        cs->ring[l] = layer_ring(c, l, s->n_ctx, B, s->n_rewind);
        if (cs->ring[l] > cs->max_ring) cs->max_ring = cs->ring[l];
        cs->k[l] = malloc(sizeof(float) * (size_t)cs->ring[l] * KV);
        cs->v[l] = malloc(sizeof(float) * (size_t)cs->ring[l] * KV);
        ok = cs->k[l] && cs->v[l];
    }
#define ALLOC(field, n) if (ok) ok = (cs->field = malloc(sizeof(float) * (n))) != NULL
    ALLOC(x, p.x);
    ALLOC(xn, p.x);
    ALLOC(proj, p.x);
    ALLOC(q, p.q);
    ALLOC(gate, p.q);
    ALLOC(att, p.q);
    ALLOC(kn, p.kv);
    ALLOC(vn, p.kv);
    ALLOC(ffn_g, p.inter);
    ALLOC(ffn_u, p.inter);
    ALLOC(scores, p.scores);
#undef ALLOC
    if (!ok) {
        cpu_session_free(s, cs);
        return glim_fail(err, GLIM_E_NOMEM, "session: cannot allocate %.1f MiB for n_ctx %d",
                         (double)cpu_session_bytes(s->model, s->n_ctx, B, s->n_rewind) / (1 << 20), s->n_ctx);
    }
    *state = cs;
    return GLIM_OK;
}

/* ---- one layer ------------------------------------------------------------------------- */

typedef struct attn_job {
    const glim_config *c;
    cpu_session *cs;
    int layer, pos0;
} attn_job;

/* q/k norm, q scale, RoPE, cache write, attention for tokens [t0, t1) of the chunk. */
static void qk_prepare_rows(void *p, int64_t t0, int64_t t1) {
    const attn_job *j = p;
    const glim_config *c = j->c;
    cpu_session *cs = j->cs;
    int D = c->head_dim, Q = c->n_heads * D, KV = c->n_kv_heads * D;
    int ring = cs->ring[j->layer];
    for (int64_t t = t0; t < t1; t++) {
        int pos = j->pos0 + (int)t;
        float *q = cs->q + t * Q, *k = cs->kn + t * KV;
        for (int h = 0; h < c->n_heads; h++) {
            cpu_rmsnorm(q + h * D, q + h * D, D, NULL, 0, c->rms_eps);
            for (int d = 0; d < D; d++) q[h * D + d] *= c->qk_scale;
        }
        for (int h = 0; h < c->n_kv_heads; h++) cpu_rmsnorm(k + h * D, k + h * D, D, NULL, 0, c->rms_eps);
        if (!c->layer_is_full[j->layer]) { /* full layers are NoPE */
            cpu_rope(q, c->n_heads, D, pos, c->inv_freq);
            cpu_rope(k, c->n_kv_heads, D, pos, c->inv_freq);
        }
        size_t slot = (size_t)(pos % ring) * KV;
        memcpy(cs->k[j->layer] + slot, k, sizeof(float) * KV);
        memcpy(cs->v[j->layer] + slot, cs->vn + t * KV, sizeof(float) * KV);
    }
}

static void attend_rows(void *p, int64_t t0, int64_t t1) {
    const attn_job *j = p;
    const glim_config *c = j->c;
    cpu_session *cs = j->cs;
    int D = c->head_dim, Q = c->n_heads * D;
    for (int64_t t = t0; t < t1; t++) {
        int pos = j->pos0 + (int)t;
        /* sliding: keys j with pos - W < j <= pos (W keys including the current one) */
        int first = c->layer_is_full[j->layer] ? 0 : pos - c->sliding_window + 1;
        if (first < 0) first = 0;
        cpu_kv_view kv = {cs->k[j->layer], cs->v[j->layer], first, pos - first + 1,
                          cs->ring[j->layer], c->n_kv_heads * D};
        cpu_attention(cs->att + t * Q, cs->q + t * Q, &kv, c->n_heads, c->n_kv_heads, D,
                      c->attn_scale, cs->scores + t * cs->max_ring);
    }
}

static void norm_rows(float *out, const float *x, int n, int width, const glim_vector *w,
                      int centered, float eps) {
    for (int t = 0; t < n; t++)
        cpu_rmsnorm(out + (size_t)t * width, x + (size_t)t * width, width, w, centered, eps);
}

static void add_rows(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

static void attention_block(glim_session *s, cpu_session *cs, int l, int n) {
    const glim_config *c = &s->model->cfg;
    const glim_layer *w = &s->model->w.layer[l];
    int H = c->hidden_size, Q = c->n_heads * c->head_dim;
    norm_rows(cs->xn, cs->x, n, H, &w->input_norm, 1, c->rms_eps);
    cpu_matmul(cs->pool, cs->q, cs->xn, n, &w->q);
    cpu_matmul(cs->pool, cs->kn, cs->xn, n, &w->k);
    cpu_matmul(cs->pool, cs->vn, cs->xn, n, &w->v);
    cpu_matmul(cs->pool, cs->gate, cs->xn, n, &w->attn_gate); /* from the normed input */
    attn_job j = {c, cs, l, s->pos};
    glim_pool_run(cs->pool, qk_prepare_rows, &j, n);
    glim_pool_run(cs->pool, attend_rows, &j, n);
    cpu_sigmoid_gate(cs->att, cs->gate, n * Q);
    cpu_matmul(cs->pool, cs->proj, cs->att, n, &w->o);
    norm_rows(cs->proj, cs->proj, n, H, &w->post_attn_norm, 1, c->post_norm_eps);
    add_rows(cs->x, cs->proj, (size_t)n * H);
}

static void ffn_block(glim_session *s, cpu_session *cs, int l, int n, int is_prefill) {
    const glim_config *c = &s->model->cfg;
    const glim_layer *w = &s->model->w.layer[l];
    int H = c->hidden_size, I = c->intermediate_size;
    norm_rows(cs->xn, cs->x, n, H, &w->pre_ffn_norm, 1, c->rms_eps);
    cpu_matmul(cs->pool, cs->ffn_g, cs->xn, n, &w->mlp_gate);
    cpu_matmul(cs->pool, cs->ffn_u, cs->xn, n, &w->mlp_up);
    cpu_swiglu(cs->ffn_g, cs->ffn_g, cs->ffn_u, n * I);
    if (s->hooks) glim_hooks_ffn_act(s->hooks, l, cs->ffn_g, n, s->pos, is_prefill);
    cpu_matmul(cs->pool, cs->proj, cs->ffn_g, n, &w->mlp_down);
    norm_rows(cs->proj, cs->proj, n, H, &w->post_ffn_norm, 1, c->post_norm_eps);
    add_rows(cs->x, cs->proj, (size_t)n * H);
}

/* ---- the whole chunk -------------------------------------------------------------------- */

static glim_status cpu_forward(glim_session *s, const int32_t *tokens, int n,
                               glim_logits_mode mode, float *logits, glim_error *err) {
    cpu_session *cs = s->backend_state;
    const glim_model *m = s->model;
    const glim_config *c = &m->cfg;
    int H = c->hidden_size, is_prefill = mode == GLIM_LOGITS_NONE;
    glim_timing *tm = &s->timing;
    uint64_t t0 = now_ns(), t;

    for (int i = 0; i < n; i++) {
        float *x = cs->x + (size_t)i * H;
        cpu_embed_row(x, &m->w.embed, tokens[i]);
        cpu_rmsnorm(x, x, H, NULL, 0, c->rms_eps); /* embed_norm: weightless, no sqrt(H) */
    }
    tm->embed_ns += (t = now_ns()) - t0;

    for (int l = 0; l < c->n_layers; l++) {
        uint64_t a = now_ns();
        attention_block(s, cs, l, n);
        uint64_t b = now_ns();
        tm->attn_ns += b - a;
        ffn_block(s, cs, l, n, is_prefill);
        uint64_t d = now_ns();
        tm->ffn_ns += d - b;
        if (s->hooks) { /* the layer's output: steering first, then capture (the seed's order) */
            glim_hooks_layer_output(s->hooks, l, cs->x, n, s->pos, is_prefill);
            tm->hooks_ns += now_ns() - d;
        }
    }

    if (mode != GLIM_LOGITS_NONE) {
        uint64_t a = now_ns();
        int first = mode == GLIM_LOGITS_LAST ? n - 1 : 0, rows = n - first;
        /* the final norm is PLAIN (gain w), unlike the four centred per-layer norms */
        norm_rows(cs->xn, cs->x + (size_t)first * H, rows, H, &m->w.final_norm, 0, c->rms_eps);
        cpu_matmul(cs->pool, logits, cs->xn, rows, &m->w.lm_head);
        cpu_logit_softcap(logits, rows * c->vocab_size, c->output_multiplier, c->final_softcap);
        tm->head_ns += now_ns() - a;
    }
    if (s->hooks) glim_hooks_pass_end(s->hooks, s->pos, n, is_prefill);
    (void)err;
    return GLIM_OK;
}

static glim_status cpu_model_init(glim_model *m, void **state, glim_error *err) {
    *state = NULL; /* the CPU reads the mapped weights in place */
    return GLIM_OK;
}

static void cpu_model_free(glim_model *m, void *state) {}

static int cpu_sliding_rows(const glim_session *s) {
    const glim_config *c = &s->model->cfg;
    for (int l = 0; l < c->n_layers; l++)
        if (!c->layer_is_full[l]) return layer_ring(c, l, s->n_ctx, s->n_batch, s->n_rewind);
    return s->n_ctx;
}

const glim_backend glim_backend_cpu = {
    .name = "cpu",
    .model_init = cpu_model_init,
    .model_free = cpu_model_free,
    .session_bytes = cpu_session_bytes,
    .session_init = cpu_session_init,
    .session_free = cpu_session_free,
    .forward = cpu_forward,
    .sliding_rows = cpu_sliding_rows,
};
