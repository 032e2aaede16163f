/* tp_split.c: the tensor-parallel split of tp_split.h. Row slices are views into the full
 * model's mapped weights; column slices are copied, row by row, because a row of the full
 * matrix holds every rank's columns. */
#include "tp_split.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

static int split_ok(const glim_matrix *m, int64_t cols) {
    /* a column slice of a quantized matrix must start and end on group boundaries */
    return !m->bits || cols % m->group_size == 0;
}

glim_status glim_tp_plan_make(const glim_config *c, const glim_weights *w, int R, int rank,
                              glim_tp_plan *p, glim_error *err) {
    if (R < 1 || rank < 0 || rank >= R)
        return glim_fail(err, GLIM_E_ARG, "tensor parallel: rank %d of %d ranks", rank, R);
    if (c->n_heads % R)
        return glim_fail(err, GLIM_E_UNSUPPORTED,
                         "tensor parallel: %d query heads do not split over %d ranks", c->n_heads, R);
    if (c->n_kv_heads % R && R % c->n_kv_heads)
        return glim_fail(err, GLIM_E_UNSUPPORTED,
                         "tensor parallel: %d kv heads neither split over nor replicate across %d "
                         "ranks", c->n_kv_heads, R);
    if (c->intermediate_size % R)
        return glim_fail(err, GLIM_E_UNSUPPORTED,
                         "tensor parallel: intermediate size %d does not split over %d ranks",
                         c->intermediate_size, R);
    memset(p, 0, sizeof *p);
    p->n_ranks = R;
    p->rank = rank;
    p->n_q_heads = c->n_heads / R;
    p->q_head0 = rank * p->n_q_heads;
    if (R <= c->n_kv_heads) {
        p->n_kv_heads = c->n_kv_heads / R;
        p->kv_head0 = rank * p->n_kv_heads;
    } else { /* replicated: this rank's query heads all read one kv head */
        p->n_kv_heads = 1;
        p->kv_head0 = rank * c->n_kv_heads / R;
    }
    p->n_inter = c->intermediate_size / R;
    p->inter0 = rank * p->n_inter;
    int chunk = (c->vocab_size + R - 1) / R;
    p->vocab0 = rank * chunk < c->vocab_size ? rank * chunk : c->vocab_size;
    p->n_vocab = c->vocab_size - p->vocab0 < chunk ? c->vocab_size - p->vocab0 : chunk;
    if (p->n_vocab <= 0)
        return glim_fail(err, GLIM_E_UNSUPPORTED,
                         "tensor parallel: vocabulary %d is too small for %d ranks", c->vocab_size, R);
    int64_t qcols = (int64_t)p->n_q_heads * c->head_dim;
    for (int l = 0; l < c->n_layers; l++) {
        if (!split_ok(&w->layer[l].o, qcols))
            return glim_fail(err, GLIM_E_UNSUPPORTED,
                             "tensor parallel: %s: %lld columns per rank are not a multiple of its "
                             "quantization group %d", w->layer[l].o.name, (long long)qcols,
                             w->layer[l].o.group_size);
        if (!split_ok(&w->layer[l].mlp_down, p->n_inter))
            return glim_fail(err, GLIM_E_UNSUPPORTED,
                             "tensor parallel: %s: %d columns per rank are not a multiple of its "
                             "quantization group %d", w->layer[l].mlp_down.name, p->n_inter,
                             w->layer[l].mlp_down.group_size);
    }
    return GLIM_OK;
}

/* Rows [r0, r0+n) of m, as a view. */
static glim_matrix row_slice(const glim_matrix *m, int64_t r0, int64_t n) {
    glim_matrix s = *m;
    s.rows = n;
    if (!m->bits) {
        s.data = (const char *)m->data + (size_t)(r0 * m->cols) * glim_dtype_size(m->dtype);
    } else {
        int64_t words = m->cols * m->bits / 32, groups = m->cols / m->group_size;
        size_t ss = glim_dtype_size(m->dtype);
        s.data = (const uint32_t *)m->data + r0 * words;
        s.scales = (const char *)m->scales + (size_t)(r0 * groups) * ss;
        s.biases = (const char *)m->biases + (size_t)(r0 * groups) * ss;
    }
    return s;
}

/* Copies byte range [off, off+len) of each of `rows` rows of `stride` bytes. */
static void *copy_cols(const void *src, int64_t rows, size_t stride, size_t off, size_t len) {
    char *dst = malloc((size_t)rows * len + 1);
    if (!dst) return NULL;
    for (int64_t r = 0; r < rows; r++)
        memcpy(dst + (size_t)r * len, (const char *)src + (size_t)r * stride + off, len);
    return dst;
}

/* Columns [c0, c0+n) of m, copied into buffers added to the shard's owned list. */
static glim_status col_slice(glim_tp_shard *sh, const glim_matrix *m, int64_t c0, int64_t n,
                             glim_matrix *out, glim_error *err) {
    *out = *m;
    out->cols = n;
    void *bufs[3] = {0};
    int nb;
    if (!m->bits) {
        size_t es = glim_dtype_size(m->dtype);
        bufs[0] = copy_cols(m->data, m->rows, (size_t)m->cols * es, (size_t)c0 * es, (size_t)n * es);
        nb = 1;
    } else {
        size_t ss = glim_dtype_size(m->dtype);
        int64_t G = m->group_size;
        bufs[0] = copy_cols(m->data, m->rows, (size_t)(m->cols * m->bits / 8),
                            (size_t)(c0 * m->bits / 8), (size_t)(n * m->bits / 8));
        bufs[1] = copy_cols(m->scales, m->rows, (size_t)(m->cols / G) * ss, (size_t)(c0 / G) * ss,
                            (size_t)(n / G) * ss);
        bufs[2] = copy_cols(m->biases, m->rows, (size_t)(m->cols / G) * ss, (size_t)(c0 / G) * ss,
                            (size_t)(n / G) * ss);
        nb = 3;
    }
    for (int i = 0; i < nb; i++) {
        if (!bufs[i]) {
            for (int j = 0; j < nb; j++) free(bufs[j]);
            return glim_fail(err, GLIM_E_NOMEM, "tensor parallel: no memory to slice %s", m->name);
        }
        sh->owned[sh->n_owned++] = bufs[i];
    }
    out->data = bufs[0];
    if (m->bits) {
        out->scales = bufs[1];
        out->biases = bufs[2];
    }
    return GLIM_OK;
}

glim_status glim_tp_shard_make(const glim_config *c, const glim_weights *w,
                               const glim_tp_plan *p, glim_tp_shard *sh, glim_error *err) {
    memset(sh, 0, sizeof *sh);
    sh->plan = *p;
    sh->cfg = *c;
    sh->cfg.n_heads = p->n_q_heads;
    sh->cfg.n_kv_heads = p->n_kv_heads;
    sh->cfg.intermediate_size = p->n_inter;
    sh->cfg.vocab_size = p->n_vocab;
    sh->w = *w;
    sh->w.layer = calloc((size_t)c->n_layers, sizeof *sh->w.layer);
    sh->owned = calloc((size_t)c->n_layers * 6 + 1, sizeof(void *));
    if (!sh->w.layer || !sh->owned) {
        glim_tp_shard_free(sh);
        return glim_fail(err, GLIM_E_NOMEM, "tensor parallel: out of memory");
    }
    int64_t D = c->head_dim;
    sh->w.embed = row_slice(&w->embed, p->vocab0, p->n_vocab);
    sh->w.lm_head = row_slice(&w->lm_head, p->vocab0, p->n_vocab);
    for (int l = 0; l < c->n_layers; l++) {
        const glim_layer *f = &w->layer[l];
        glim_layer *y = &sh->w.layer[l];
        *y = *f; /* the four norms are replicated */
        y->q = row_slice(&f->q, p->q_head0 * D, p->n_q_heads * D);
        y->attn_gate = row_slice(&f->attn_gate, p->q_head0 * D, p->n_q_heads * D);
        y->k = row_slice(&f->k, p->kv_head0 * D, p->n_kv_heads * D);
        y->v = row_slice(&f->v, p->kv_head0 * D, p->n_kv_heads * D);
        y->mlp_gate = row_slice(&f->mlp_gate, p->inter0, p->n_inter);
        y->mlp_up = row_slice(&f->mlp_up, p->inter0, p->n_inter);
        glim_status st;
        if ((st = col_slice(sh, &f->o, p->q_head0 * D, p->n_q_heads * D, &y->o, err)) ||
            (st = col_slice(sh, &f->mlp_down, p->inter0, p->n_inter, &y->mlp_down, err))) {
            glim_tp_shard_free(sh);
            return st;
        }
    }
    return GLIM_OK;
}

void glim_tp_shard_free(glim_tp_shard *sh) {
    for (int i = 0; i < sh->n_owned; i++) free(sh->owned[i]);
    free(sh->owned);
    free(sh->w.layer);
    memset(sh, 0, sizeof *sh);
}
