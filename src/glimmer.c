/* glimmer.c: the public API glue. Opening a model = config + mapped checkpoint + bound weights +
 * backend init. A session = a memory plan made once. glim_eval validates everything the
 * backends are allowed to trust, then runs the tokens in chunks of n_batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "error.h"
#include "hooks_ext.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const glim_backend *pick_backend(const char *name, glim_error *err) {
    const glim_backend *cuda = glim_backend_cuda_get();
    if (!name || !*name || !strcmp(name, "auto")) return cuda ? cuda : &glim_backend_cpu;
    if (!strcmp(name, "cpu")) return &glim_backend_cpu;
    if (!strcmp(name, "cuda")) {
        if (!cuda)
            glim_fail(err, GLIM_E_BACKEND,
#ifdef GLIM_HAVE_CUDA
                      "backend \"cuda\": no usable CUDA device was found"
#else
                      "backend \"cuda\": this build has no CUDA backend (nvcc was not found)"
#endif
            );
        return cuda;
    }
    glim_fail(err, GLIM_E_ARG, "unknown backend \"%s\" (expected cpu, cuda or auto)", name);
    return NULL;
}

static void fill_info(glim_model *m) {
    const glim_config *c = &m->cfg;
    glim_model_info *i = &m->info;
    i->vocab_size = c->vocab_size;
    i->hidden_size = c->hidden_size;
    i->intermediate_size = c->intermediate_size;
    i->n_layers = c->n_layers;
    i->n_heads = c->n_heads;
    i->n_kv_heads = c->n_kv_heads;
    i->head_dim = c->head_dim;
    i->sliding_window = c->sliding_window;
    i->max_position = c->max_position;
    for (int l = 0; l < c->n_layers; l++) i->n_full_layers += c->layer_is_full[l];
    i->bos_id = c->bos_id;
    i->n_stop_ids = c->n_stop_ids;
    memcpy(i->stop_ids, c->stop_ids, sizeof i->stop_ids);
    i->layout = m->layout == GLIM_LAYOUT_HF ? "huggingface" : "mlx";
    const glim_matrix *q = &m->w.layer[0].q;
    i->quant_bits = q->bits;
    i->quant_group_size = q->group_size;
    i->dtype = glim_dtype_name(q->dtype);
    i->n_tensors = glim_st_count(m->st);
    i->file_bytes = glim_st_file_bytes(m->st);
    uint64_t bytes = glim_matrix_bytes(&m->w.embed) + glim_matrix_bytes(&m->w.lm_head);
    int n = 3; /* embed, final norm, head */
    bytes += (uint64_t)m->w.final_norm.n * glim_dtype_size(m->w.final_norm.dtype);
    for (int l = 0; l < c->n_layers; l++) {
        const glim_layer *w = &m->w.layer[l];
        const glim_matrix *mats[] = {&w->q, &w->k, &w->v, &w->attn_gate, &w->o,
                                     &w->mlp_gate, &w->mlp_up, &w->mlp_down};
        const glim_vector *vecs[] = {&w->input_norm, &w->post_attn_norm, &w->pre_ffn_norm,
                                     &w->post_ffn_norm};
        for (int k = 0; k < 8; k++) {
            bytes += glim_matrix_bytes(mats[k]);
            n += mats[k]->bits ? 3 : 1;
        }
        for (int k = 0; k < 4; k++) bytes += (uint64_t)vecs[k]->n * glim_dtype_size(vecs[k]->dtype);
        n += 4;
    }
    n += m->w.embed.bits ? 2 : 0;
    n += m->w.lm_head.bits ? 2 : 0;
    i->n_text_tensors = n;
    i->text_weight_bytes = bytes;
    i->backend = m->backend->name;
}

glim_status glim_model_open(const char *dir, const glim_model_params *params, glim_model **out,
                            glim_error *err) {
    if (!dir || !out) return glim_fail(err, GLIM_E_ARG, "glim_model_open: dir and out are required");
    *out = NULL;
    glim_model *m = calloc(1, sizeof *m);
    if (!m) return glim_fail(err, GLIM_E_NOMEM, "model: out of memory");
    m->n_threads = params ? params->n_threads : 0;
    glim_status st;
    m->backend = pick_backend(params ? params->backend : NULL, err);
    if (!m->backend) {
        free(m);
        return err ? err->code : GLIM_E_BACKEND;
    }
    if ((st = glim_config_load(dir, &m->cfg, err)) != GLIM_OK) {
        free(m);
        return st;
    }
    if ((st = glim_st_open_dir(dir, &m->st, err)) != GLIM_OK ||
        (st = glim_weights_bind(&m->cfg, m->st, &m->w, &m->layout, err)) != GLIM_OK) {
        glim_model_close(m);
        return st;
    }
    fill_info(m);
    if ((st = m->backend->model_init(m, &m->backend_model, err)) != GLIM_OK) {
        m->backend_model = NULL;
        glim_model_close(m);
        return st;
    }
    *out = m;
    return GLIM_OK;
}

void glim_model_close(glim_model *m) {
    if (!m) return;
    if (m->backend_model) m->backend->model_free(m, m->backend_model);
    free(m->w.layer);
    glim_st_close(m->st);
    glim_config_free(&m->cfg);
    free(m);
}

const glim_model_info *glim_model_get_info(const glim_model *m) { return m ? &m->info : NULL; }

static void session_defaults(const glim_model *m, const glim_session_params *p, int *n_ctx,
                             int *n_batch) {
    *n_ctx = p && p->n_ctx > 0 ? p->n_ctx : 4096;
    if (!(p && p->n_ctx > 0) && *n_ctx > m->cfg.max_position) *n_ctx = m->cfg.max_position;
    *n_batch = p && p->n_batch > 0 ? p->n_batch : 64;
    if (*n_batch > *n_ctx) *n_batch = *n_ctx;
}

uint64_t glim_session_bytes(const glim_model *m, int n_ctx, int n_batch) {
    glim_session_params p = {n_ctx, n_batch, 0};
    session_defaults(m, &p, &n_ctx, &n_batch);
    return m->backend->session_bytes(m, n_ctx, n_batch, 0);
}

glim_status glim_session_create(glim_model *m, const glim_session_params *params,
                                glim_session **out, glim_error *err) {
    if (!m || !out) return glim_fail(err, GLIM_E_ARG, "glim_session_create: model and out are required");
    *out = NULL;
    int n_ctx, n_batch;
    session_defaults(m, params, &n_ctx, &n_batch);
    if (n_ctx > m->cfg.max_position)
        return glim_fail(err, GLIM_E_ARG, "context %d exceeds the model's max_position_embeddings %d",
                         n_ctx, m->cfg.max_position);
    glim_session *s = calloc(1, sizeof *s);
    if (!s) return glim_fail(err, GLIM_E_NOMEM, "session: out of memory");
    s->model = m;
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    s->n_rewind = params && params->n_rewind > 0 ? params->n_rewind : 0;
    glim_status st = m->backend->session_init(s, &s->backend_state, err);
    if (st != GLIM_OK) {
        free(s);
        return st;
    }
    *out = s;
    return GLIM_OK;
}

void glim_session_free(glim_session *s) {
    if (!s) return;
    s->model->backend->session_free(s, s->backend_state);
    glim_hooks_free(s->hooks); /* research hooks (src/hooks.c); NULL when none */
    free(s);
}

int glim_session_position(const glim_session *s) { return s->pos; }
int glim_session_n_ctx(const glim_session *s) { return s->n_ctx; }
void glim_session_reset(glim_session *s) { s->pos = 0; }

glim_status glim_session_rewind(glim_session *s, int position, glim_error *err) {
    if (!s) return glim_fail(err, GLIM_E_ARG, "glim_session_rewind: no session");
    if (position < 0 || position > s->pos)
        return glim_fail(err, GLIM_E_ARG, "cannot rewind to position %d: the cache holds %d tokens",
                         position, s->pos);
    const glim_config *c = &s->model->cfg;
    int sliding = 0;
    for (int l = 0; l < c->n_layers; l++) sliding |= !c->layer_is_full[l];
    if (sliding) {
        /* The next query at `position` needs keys max(0, position - W + 1) .. position - 1; the
         * tokens evaluated since overwrote ring rows of keys up to pos - 1 - rows. */
        const int rows = s->model->backend->sliding_rows(s), W = c->sliding_window;
        const int need = position - W + 1 > 0 ? position - W + 1 : 0;
        if (need <= s->pos - 1 - rows)
            return glim_fail(err, GLIM_E_UNSUPPORTED,
                             "cannot rewind from %d to %d tokens: the sliding layers' rings (%d rows, "
                             "window %d) no longer hold key %d; at most %d tokens back, or reset",
                             s->pos, position, rows, W, need, rows - W + 1);
    }
    s->pos = position;
    return GLIM_OK;
}
const glim_timing *glim_session_timing(const glim_session *s) { return &s->timing; }

glim_status glim_eval(glim_session *s, const int32_t *tokens, int n, int position,
                      glim_logits_mode mode, float *logits, size_t logits_len, glim_error *err) {
    if (!s || !tokens || n <= 0)
        return glim_fail(err, GLIM_E_ARG, "glim_eval: need a session and at least one token (n = %d)", n);
    const glim_config *c = &s->model->cfg;
    if (position != s->pos)
        return glim_fail(err, GLIM_E_ARG,
                         "non-sequential position %d; the KV cache is at %d", position, s->pos);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
            return glim_fail(err, GLIM_E_ARG, "token id %d (at index %d) is outside the vocabulary "
                             "of %d", tokens[i], i, c->vocab_size);
    if ((int64_t)s->pos + n > s->n_ctx)
        return glim_fail(err, GLIM_E_CONTEXT_FULL,
                         "no room: %d tokens cached + %d new > n_ctx %d", s->pos, n, s->n_ctx);
    size_t want = mode == GLIM_LOGITS_NONE ? 0
                  : mode == GLIM_LOGITS_LAST ? (size_t)c->vocab_size
                  : (size_t)n * (size_t)c->vocab_size;
    if (mode != GLIM_LOGITS_NONE && mode != GLIM_LOGITS_LAST && mode != GLIM_LOGITS_ALL)
        return glim_fail(err, GLIM_E_ARG, "glim_eval: unknown logits mode %d", (int)mode);
    if (logits_len != want || (want && !logits))
        return glim_fail(err, GLIM_E_ARG,
                         "logits buffer holds %zu floats, expected %zu (vocab %d, %d tokens, mode %s)",
                         logits_len, want, c->vocab_size, n,
                         mode == GLIM_LOGITS_NONE ? "none" : mode == GLIM_LOGITS_LAST ? "last" : "all");
    uint64_t t0 = now_ns();
    if (s->hooks) glim_hooks_note_tokens(s->hooks, tokens, n, position); /* capture's token ids */
    for (int done = 0; done < n;) {
        int k = n - done < s->n_batch ? n - done : s->n_batch;
        int last_chunk = done + k == n;
        glim_logits_mode m = mode == GLIM_LOGITS_ALL ? GLIM_LOGITS_ALL
                             : (mode == GLIM_LOGITS_LAST && last_chunk) ? GLIM_LOGITS_LAST
                             : GLIM_LOGITS_NONE;
        float *out = m == GLIM_LOGITS_ALL ? logits + (size_t)done * c->vocab_size
                     : m == GLIM_LOGITS_LAST ? logits : NULL;
        glim_status st = s->model->backend->forward(s, tokens + done, k, m, out, err);
        if (st != GLIM_OK) return st; /* s->pos stays at the last completed chunk */
        s->pos += k;
        done += k;
    }
    s->timing.calls++;
    s->timing.tokens += (uint64_t)n;
    s->timing.total_ns += now_ns() - t0;
    return GLIM_OK;
}
