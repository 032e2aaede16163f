/* model.c: binds the tensors of a checkpoint to the fields of glim_weights, once.
 *
 * Two layouts (MODEL.md 3.1 and 3.2): Hugging Face (`model.language_model.*`, `lm_head.weight`)
 * and MLX (`language_model.model.*`, `language_model.lm_head.*`) where a module is quantized iff
 * `<module>.scales` exists. Every dtype and shape is checked against the config and a failure
 * names the tensor with the expected and the actual value. Tensors outside the text model
 * (vision tower, adapter, projector) are never touched, so they cost no memory beyond the map. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model.h"

typedef struct bind_ctx {
    const glim_config *cfg;
    const glim_st_set *st;
    const char *prefix;      /* "model.language_model." or "language_model.model." */
    const char *head;        /* "lm_head" or "language_model.lm_head" */
    unsigned char *used;     /* [n tensors] which tensors were bound */
    glim_error *err;
} bind_ctx;

static void fmt_shape(char *buf, size_t n, const glim_tensor *t) {
    size_t off = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < t->ndim && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%lld", i ? ", " : "",
                                (long long)t->shape[i]);
    if (off < n) snprintf(buf + off, n - off, "]");
}

static const glim_tensor *find_marked(bind_ctx *c, const char *name) {
    const glim_tensor *t = glim_st_find(c->st, name);
    if (t) {
        for (int i = 0; i < glim_st_count(c->st); i++)
            if (glim_st_at(c->st, i) == t) c->used[i] = 1;
    }
    return t;
}

static int is_float_dtype(glim_dtype d) {
    return d == GLIM_DT_BF16 || d == GLIM_DT_F16 || d == GLIM_DT_F32;
}

static glim_status check_2d(bind_ctx *c, const glim_tensor *t, int64_t rows, int64_t cols) {
    if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols) {
        char got[128];
        fmt_shape(got, sizeof got, t);
        return glim_fail(c->err, GLIM_E_MODEL, "tensor %s has shape %s, expected [%lld, %lld]",
                         t->name, got, (long long)rows, (long long)cols);
    }
    return GLIM_OK;
}

/* The bits and group size the config gives module `module` (an override, or the default). */
static void quant_params_for(const glim_config *cfg, const char *module, int *bits, int *group) {
    *bits = cfg->quant_bits;
    *group = cfg->quant_group_size;
    for (int i = 0; i < cfg->n_quant_overrides; i++) {
        if (!strcmp(cfg->quant_overrides[i].module, module)) {
            *bits = cfg->quant_overrides[i].bits;
            *group = cfg->quant_overrides[i].group_size;
        }
    }
}

static glim_status bind_matrix(bind_ctx *c, const char *module, int64_t rows, int64_t cols,
                               glim_matrix *m) {
    char name[512];
    snprintf(name, sizeof name, "%s.weight", module);
    const glim_tensor *w = find_marked(c, name);
    if (!w) return glim_fail(c->err, GLIM_E_MODEL, "missing tensor %s", name);
    memset(m, 0, sizeof *m);
    m->rows = rows;
    m->cols = cols;
    m->name = w->name;
    m->data = w->data;
    snprintf(name, sizeof name, "%s.scales", module);
    const glim_tensor *s = find_marked(c, name);
    if (!s) { /* dense */
        if (!is_float_dtype(w->dtype))
            return glim_fail(c->err, GLIM_E_MODEL,
                             "tensor %s has dtype %s, expected BF16, F16 or F32 (no %s.scales, so "
                             "it is not quantized)", w->name, glim_dtype_name(w->dtype), module);
        m->dtype = w->dtype;
        return check_2d(c, w, rows, cols);
    }
    snprintf(name, sizeof name, "%s.biases", module);
    const glim_tensor *b = find_marked(c, name);
    if (!b) return glim_fail(c->err, GLIM_E_MODEL, "missing tensor %s (%s.scales exists)", name,
                             module);
    int bits, group;
    quant_params_for(c->cfg, module, &bits, &group);
    if (bits == 0)
        return glim_fail(c->err, GLIM_E_MODEL,
                         "%s.scales exists but config.json has no quantization bits for %s", module,
                         module);
    if (bits < 2 || bits > 8 || (group != 32 && group != 64 && group != 128))
        return glim_fail(c->err, GLIM_E_UNSUPPORTED,
                         "%s: quantization bits %d group %d (supported: bits 2..8, group 32/64/128)",
                         module, bits, group);
    if (cols % group || (cols * bits) % 32)
        return glim_fail(c->err, GLIM_E_MODEL,
                         "%s: %lld input columns do not split into groups of %d at %d bits", module,
                         (long long)cols, group, bits);
    if (w->dtype != GLIM_DT_U32)
        return glim_fail(c->err, GLIM_E_MODEL, "tensor %s has dtype %s, expected U32 (quantized)",
                         w->name, glim_dtype_name(w->dtype));
    if (!is_float_dtype(s->dtype) || b->dtype != s->dtype)
        return glim_fail(c->err, GLIM_E_MODEL,
                         "%s: scales %s / biases %s, expected one of BF16, F16, F32 for both",
                         module, glim_dtype_name(s->dtype), glim_dtype_name(b->dtype));
    glim_status st;
    if ((st = check_2d(c, w, rows, cols * bits / 32)) != GLIM_OK) return st;
    if ((st = check_2d(c, s, rows, cols / group)) != GLIM_OK) return st;
    if ((st = check_2d(c, b, rows, cols / group)) != GLIM_OK) return st;
    m->bits = bits;
    m->group_size = group;
    m->dtype = s->dtype;
    m->scales = s->data;
    m->biases = b->data;
    return GLIM_OK;
}

static glim_status bind_vector(bind_ctx *c, const char *name, int64_t n, glim_vector *v) {
    const glim_tensor *t = find_marked(c, name);
    if (!t) return glim_fail(c->err, GLIM_E_MODEL, "missing tensor %s", name);
    if (!is_float_dtype(t->dtype))
        return glim_fail(c->err, GLIM_E_MODEL, "tensor %s has dtype %s, expected BF16, F16 or F32",
                         name, glim_dtype_name(t->dtype));
    if (t->ndim != 1 || t->shape[0] != n) {
        char got[128];
        fmt_shape(got, sizeof got, t);
        return glim_fail(c->err, GLIM_E_MODEL, "tensor %s has shape %s, expected [%lld]", name,
                         got, (long long)n);
    }
    v->n = n;
    v->dtype = t->dtype;
    v->data = t->data;
    v->name = t->name;
    return GLIM_OK;
}

static glim_status bind_layer(bind_ctx *c, int i, glim_layer *l) {
    const glim_config *g = c->cfg;
    int64_t H = g->hidden_size, Q = (int64_t)g->n_heads * g->head_dim;
    int64_t KV = (int64_t)g->n_kv_heads * g->head_dim, I = g->intermediate_size;
    char p[256], n[512];
    snprintf(p, sizeof p, "%slayers.%d.", c->prefix, i);
    glim_status st;
#define VEC(field, suffix)                                                  \
    snprintf(n, sizeof n, "%s%s.weight", p, suffix);                        \
    if ((st = bind_vector(c, n, H, &l->field)) != GLIM_OK) return st;
#define MAT(field, suffix, rows, cols)                                      \
    snprintf(n, sizeof n, "%s%s", p, suffix);                               \
    if ((st = bind_matrix(c, n, rows, cols, &l->field)) != GLIM_OK) return st;
    VEC(input_norm, "input_layernorm");
    MAT(q, "self_attn.q_proj", Q, H);
    MAT(k, "self_attn.k_proj", KV, H);
    MAT(v, "self_attn.v_proj", KV, H);
    MAT(attn_gate, "self_attn.gate_proj", Q, H);
    MAT(o, "self_attn.o_proj", H, Q);
    VEC(post_attn_norm, "post_attention_layernorm");
    VEC(pre_ffn_norm, "pre_feedforward_layernorm");
    MAT(mlp_gate, "mlp.gate_proj", I, H);
    MAT(mlp_up, "mlp.up_proj", I, H);
    MAT(mlp_down, "mlp.down_proj", H, I);
    VEC(post_ffn_norm, "post_feedforward_layernorm");
#undef VEC
#undef MAT
    return GLIM_OK;
}

/* Any tensor under the text model's names that nothing bound means a model we don't know
 * (learned q/k norms, biases, ...): refuse rather than silently ignore it. */
static glim_status check_all_text_bound(bind_ctx *c) {
    for (int i = 0; i < glim_st_count(c->st); i++) {
        const glim_tensor *t = glim_st_at(c->st, i);
        int text = !strncmp(t->name, c->prefix, strlen(c->prefix)) ||
                   !strncmp(t->name, c->head, strlen(c->head));
        if (text && !c->used[i])
            return glim_fail(c->err, GLIM_E_MODEL,
                             "unexpected tensor %s: not part of the Muse Glimmer text model",
                             t->name);
    }
    return GLIM_OK;
}

glim_status glim_weights_bind(const glim_config *cfg, const glim_st_set *st, glim_weights *w,
                              glim_layout *layout, glim_error *err) {
    memset(w, 0, sizeof *w);
    bind_ctx c = {cfg, st, NULL, NULL, NULL, err};
    if (glim_st_find(st, "model.language_model.embed_tokens.weight")) {
        *layout = GLIM_LAYOUT_HF;
        c.prefix = "model.language_model.";
        c.head = "lm_head";
    } else if (glim_st_find(st, "language_model.model.embed_tokens.weight")) {
        *layout = GLIM_LAYOUT_MLX;
        c.prefix = "language_model.model.";
        c.head = "language_model.lm_head";
    } else {
        return glim_fail(err, GLIM_E_MODEL,
                         "no embedding tensor: expected model.language_model.embed_tokens.weight "
                         "(Hugging Face) or language_model.model.embed_tokens.weight (MLX)");
    }
    c.used = calloc((size_t)glim_st_count(st) + 1, 1);
    w->layer = calloc((size_t)cfg->n_layers, sizeof *w->layer);
    if (!c.used || !w->layer) {
        free(c.used);
        free(w->layer);
        w->layer = NULL;
        return glim_fail(err, GLIM_E_NOMEM, "binding weights: out of memory");
    }
    char n[512];
    glim_status s;
    snprintf(n, sizeof n, "%sembed_tokens", c.prefix);
    if ((s = bind_matrix(&c, n, cfg->vocab_size, cfg->hidden_size, &w->embed)) != GLIM_OK) goto out;
    for (int i = 0; i < cfg->n_layers; i++)
        if ((s = bind_layer(&c, i, &w->layer[i])) != GLIM_OK) goto out;
    snprintf(n, sizeof n, "%snorm.weight", c.prefix);
    if ((s = bind_vector(&c, n, cfg->hidden_size, &w->final_norm)) != GLIM_OK) goto out;
    if (!glim_st_find(st, *layout == GLIM_LAYOUT_HF ? "lm_head.weight"
                                                    : "language_model.lm_head.weight")) {
        s = glim_fail(err, GLIM_E_MODEL,
                      "missing tensor %s.weight: the head is untied in Muse Glimmer, and a "
                      "checkpoint without it would need tying, which is a different model", c.head);
        goto out;
    }
    if ((s = bind_matrix(&c, c.head, cfg->vocab_size, cfg->hidden_size, &w->lm_head)) != GLIM_OK)
        goto out;
    if (w->lm_head.data == w->embed.data) {
        s = glim_fail(err, GLIM_E_MODEL, "lm_head shares its data with embed_tokens (tied)");
        goto out;
    }
    s = check_all_text_bound(&c);
out:
    free(c.used);
    if (s != GLIM_OK) {
        free(w->layer);
        w->layer = NULL;
    }
    return s;
}

uint64_t glim_matrix_bytes(const glim_matrix *m) {
    if (!m->bits) return (uint64_t)m->rows * (uint64_t)m->cols * glim_dtype_size(m->dtype);
    uint64_t groups = (uint64_t)m->rows * (uint64_t)(m->cols / m->group_size);
    return (uint64_t)m->rows * (uint64_t)(m->cols * m->bits / 32) * 4 +
           2 * groups * glim_dtype_size(m->dtype);
}

void glim_matrix_row_range_f32(const glim_matrix *m, int64_t r, int64_t c0, int64_t n,
                                float *out) {
    int64_t C = m->cols;
    if (!m->bits) {
        size_t es = glim_dtype_size(m->dtype);
        const char *row = (const char *)m->data + (size_t)r * (size_t)C * es;
        if (m->dtype == GLIM_DT_BF16) {
            const uint16_t *h = (const uint16_t *)row + c0;
            for (int64_t c = 0; c < n; c++) out[c] = glim_bf16_to_f32(h[c]);
        } else {
            for (int64_t c = 0; c < n; c++) out[c] = glim_load_f32(row, m->dtype, (size_t)(c0 + c));
        }
        return;
    }
    int bits = m->bits, G = m->group_size;
    int64_t words = C * bits / 32, groups = C / G;
    const uint8_t *row = (const uint8_t *)((const uint32_t *)m->data + (size_t)r * (size_t)words);
    if ((bits == 4 || bits == 8) && c0 % G == 0 && n % G == 0) {
        /* the common widths, a whole group at a time: byte k holds elements 2k (low nibble) and
         * 2k+1 (high nibble) at 4 bits, element k at 8 bits */
        for (int64_t g = c0 / G; g < (c0 + n) / G; g++) {
            float scale = glim_load_f32(m->scales, m->dtype, (size_t)(r * groups + g));
            float bias = glim_load_f32(m->biases, m->dtype, (size_t)(r * groups + g));
            float *o = out + (g * G - c0);
            if (bits == 4) {
                const uint8_t *p = row + g * G / 2;
                for (int i = 0; i < G / 2; i++) {
                    o[2 * i] = scale * (float)(p[i] & 15) + bias;
                    o[2 * i + 1] = scale * (float)(p[i] >> 4) + bias;
                }
            } else {
                const uint8_t *p = row + g * G;
                for (int i = 0; i < G; i++) o[i] = scale * (float)p[i] + bias;
            }
        }
        return;
    }
    uint64_t row_bytes = (uint64_t)words * 4;
    uint32_t mask = (1u << bits) - 1;
    float scale = 0, bias = 0;
    for (int64_t c = c0; c < c0 + n; c++) {
        if (c == c0 || c % G == 0) {
            scale = glim_load_f32(m->scales, m->dtype, (size_t)(r * groups + c / G));
            bias = glim_load_f32(m->biases, m->dtype, (size_t)(r * groups + c / G));
        }
        /* element c sits at bit c*bits of the row's little-endian bit stream */
        uint64_t bit = (uint64_t)c * (uint64_t)bits, byte = bit >> 3;
        uint32_t two = row[byte] | (byte + 1 < row_bytes ? (uint32_t)row[byte + 1] << 8 : 0u);
        uint32_t q = (two >> (bit & 7)) & mask;
        out[c - c0] = scale * (float)q + bias; /* scale*q is exact in fp32: one rounding */
    }
}

void glim_matrix_row_f32(const glim_matrix *m, int64_t r, float *out) {
    glim_matrix_row_range_f32(m, r, 0, m->cols, out);
}
