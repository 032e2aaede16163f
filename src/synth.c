/* synth.c: random Muse Glimmer checkpoints (see synth.h). */
#include "synth.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "quantize.h"
#include "safetensors.h"

glim_synth_spec glim_synth_tiny(void) {
    return (glim_synth_spec){.vocab_size = 512, .hidden_size = 96, .intermediate_size = 256,
                             .n_layers = 6, .n_heads = 4, .n_kv_heads = 2, .head_dim = 32,
                             .sliding_window = 8, .max_position = 4096, .rope_theta = 500000.0f,
                             .bits = 0, .group_size = 32, .quantize_embedding = 1,
                             .block_out_scale = 0.003f, .head_scale = 30.0f, .seed = 20261202};
}

glim_synth_spec glim_synth_1b(void) {
    return (glim_synth_spec){.vocab_size = 32768, .hidden_size = 2048, .intermediate_size = 6144,
                             .n_layers = 20, .n_heads = 16, .n_kv_heads = 1, .head_dim = 80,
                             .sliding_window = 2048, .max_position = 131072,
                             .rope_theta = 500000.0f, .bits = 0, .group_size = 64,
                             .quantize_embedding = 1, .block_out_scale = 1.0f, .head_scale = 1.0f,
                             .seed = 1};
}

typedef struct rng { uint64_t s; } rng;

static uint64_t next_u64(rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float normal(rng *r) { /* Box-Muller */
    double u1 = ((next_u64(r) >> 11) + 1.0) / 9007199254740993.0;
    double u2 = (next_u64(r) >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* The tensors being written; data buffers are owned here until the file is written. */
typedef struct synth_out {
    glim_st_out *t;
    int n, cap;
    glim_error *err;
} synth_out;

static int push(synth_out *o, const char *name, glim_dtype dt, int ndim, int64_t d0, int64_t d1,
                void *data) {
    if (!data) return -1;
    if (o->n == o->cap) {
        int cap = o->cap ? o->cap * 2 : 64;
        glim_st_out *t = realloc(o->t, sizeof *t * (size_t)cap);
        if (!t) return -1;
        o->t = t;
        o->cap = cap;
    }
    glim_st_out *t = &o->t[o->n++];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    t->dtype = dt;
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->data = data;
    return t->name ? 0 : -1;
}

static uint16_t *to_bf16(const float *x, size_t n) {
    uint16_t *h = malloc(n * 2);
    if (h)
        for (size_t i = 0; i < n; i++) h[i] = glim_f32_to_bf16(x[i]);
    return h;
}

/* A random matrix [rows][cols] ~ N(0, std^2), written dense bf16 or MLX-quantized. */
static int add_matrix(synth_out *o, rng *r, const char *module, int64_t rows, int64_t cols,
                      float std, int bits, int group) {
    size_t n = (size_t)(rows * cols);
    float *w = malloc(n * sizeof(float));
    if (!w) return -1;
    for (size_t i = 0; i < n; i++) w[i] = normal(r) * std;
    char name[512];
    int rc;
    snprintf(name, sizeof name, "%s.weight", module);
    if (!bits) {
        rc = push(o, name, GLIM_DT_BF16, 2, rows, cols, to_bf16(w, n));
    } else {
        int64_t words = cols * bits / 32, groups = cols / group;
        uint32_t *q = malloc(sizeof(uint32_t) * (size_t)(rows * words));
        uint16_t *s = malloc(2 * (size_t)(rows * groups)), *b = malloc(2 * (size_t)(rows * groups));
        if (q && s && b) glim_quantize_affine(w, rows, cols, bits, group, GLIM_DT_BF16, q, s, b);
        rc = push(o, name, GLIM_DT_U32, 2, rows, words, q);
        snprintf(name, sizeof name, "%s.scales", module);
        rc |= push(o, name, GLIM_DT_BF16, 2, rows, groups, s);
        snprintf(name, sizeof name, "%s.biases", module);
        rc |= push(o, name, GLIM_DT_BF16, 2, rows, groups, b);
    }
    free(w);
    return rc;
}

/* A norm gain [n]: mean `center`, spread 0.3, so (1+w) and w conventions differ visibly. */
static int add_norm(synth_out *o, rng *r, const char *name, int64_t n, float center) {
    float *w = malloc(sizeof(float) * (size_t)n);
    if (!w) return -1;
    for (int64_t i = 0; i < n; i++) w[i] = center + 0.3f * normal(r);
    int rc = push(o, name, GLIM_DT_BF16, 1, n, 0, to_bf16(w, (size_t)n));
    free(w);
    return rc;
}

static json_t *make_config(const glim_synth_spec *s) {
    json_t *types = json_array(), *thetas = json_array();
    for (int i = 0; i < s->n_layers; i++) {
        int full = (s->n_layers - 1 - i) % 4 == 0;
        json_array_append_new(types, json_string(full ? "full_attention" : "sliding_attention"));
        json_array_append_new(thetas, json_real(full ? 0.0 : s->rope_theta));
    }
    json_t *text = json_pack(
        "{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:i, s:f, s:f, s:f, s:f, s:f, s:i, s:o, "
        "s:o, s:{s:s, s:f}, s:b, s:b, s:i, s:i}",
        "model_type", "muse_glimmer_text", "vocab_size", s->vocab_size, "hidden_size",
        s->hidden_size, "intermediate_size", s->intermediate_size, "num_hidden_layers",
        s->n_layers, "num_attention_heads", s->n_heads, "num_key_value_heads", s->n_kv_heads,
        "head_dim", s->head_dim, "hidden_activation", "silu", "max_position_embeddings",
        s->max_position, "rms_norm_eps", 1e-5, "post_norm_eps", 1e-8, "qk_scale_factor", 3.87,
        "final_logit_softcapping", 20.0, "output_multiplier", 0.19611613513818404,
        "sliding_window", s->sliding_window, "layer_types", types, "layer_rope_theta", thetas,
        "rope_parameters", "rope_type", "default", "rope_theta", (double)s->rope_theta,
        "tie_word_embeddings", 0, "attention_bias", 0, "bos_token_id", 1, "eos_token_id", 2);
    json_t *root = json_pack("{s:[s], s:s, s:o, s:[i]}", "architectures",
                             "MuseGlimmerForConditionalGeneration", "model_type", "muse_glimmer",
                             "text_config", text, "eos_token_id", 2);
    if (root && s->bits) {
        json_object_set_new(root, "quantization", json_pack("{s:i, s:i, s:s}", "group_size",
                                                            s->group_size, "bits", s->bits,
                                                            "mode", "affine"));
        json_object_set(root, "quantization_config", json_object_get(root, "quantization"));
    }
    return root;
}

static int build_tensors(synth_out *o, const glim_synth_spec *s) {
    rng r = {s->seed};
    int mlx = s->bits != 0, rc = 0;
    const char *pre = mlx ? "language_model.model." : "model.language_model.";
    int64_t H = s->hidden_size, Q = (int64_t)s->n_heads * s->head_dim;
    int64_t KV = (int64_t)s->n_kv_heads * s->head_dim, I = s->intermediate_size;
    float sh = 1.0f / sqrtf((float)H);
    float sq = s->block_out_scale / sqrtf((float)Q), si = s->block_out_scale / sqrtf((float)I);
    char m[512];
    snprintf(m, sizeof m, "%sembed_tokens", pre);
    rc |= add_matrix(o, &r, m, s->vocab_size, H, 1.0f, s->quantize_embedding ? s->bits : 0,
                     s->group_size);
    for (int l = 0; l < s->n_layers && !rc; l++) {
        struct { const char *name; int64_t rows, cols; float std; } mats[] = {
            {"self_attn.q_proj", Q, H, sh}, {"self_attn.k_proj", KV, H, sh},
            {"self_attn.v_proj", KV, H, sh}, {"self_attn.gate_proj", Q, H, sh},
            {"self_attn.o_proj", H, Q, sq}, {"mlp.gate_proj", I, H, sh},
            {"mlp.up_proj", I, H, sh}, {"mlp.down_proj", H, I, si}};
        const char *norms[] = {"input_layernorm", "post_attention_layernorm",
                               "pre_feedforward_layernorm", "post_feedforward_layernorm"};
        for (int k = 0; k < 8; k++) {
            snprintf(m, sizeof m, "%slayers.%d.%s", pre, l, mats[k].name);
            rc |= add_matrix(o, &r, m, mats[k].rows, mats[k].cols, mats[k].std, s->bits,
                             s->group_size);
        }
        for (int k = 0; k < 4; k++) {
            snprintf(m, sizeof m, "%slayers.%d.%s.weight", pre, l, norms[k]);
            rc |= add_norm(o, &r, m, H, 0.0f); /* zero-centred: gain 1 + w */
        }
    }
    snprintf(m, sizeof m, "%snorm.weight", pre);
    rc |= add_norm(o, &r, m, H, 1.0f); /* plain gain w */
    rc |= add_matrix(o, &r, mlx ? "language_model.lm_head" : "lm_head", s->vocab_size, H,
                     sh * s->head_scale,
                     s->bits, s->group_size);
    /* A vision tensor, as real checkpoints have: the loader must skip it. */
    rc |= add_matrix(o, &r, mlx ? "vision_projection" : "model.vision_projection", H, 64, sh, 0,
                     s->group_size);
    return rc;
}

glim_status glim_synth_write(const char *dir, const glim_synth_spec *s, glim_error *err) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return glim_fail(err, GLIM_E_IO, "cannot create directory %s: %s", dir, strerror(errno));
    if (s->bits && (s->hidden_size % s->group_size || s->intermediate_size % s->group_size ||
                    (s->n_heads * s->head_dim) % s->group_size))
        return glim_fail(err, GLIM_E_ARG, "synth: widths must be multiples of the group size %d",
                         s->group_size);
    char path[4096];
    glim_status st = GLIM_OK;
    json_t *cfg = make_config(s);
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!cfg || json_dump_file(cfg, path, JSON_INDENT(2)) != 0)
        st = glim_fail(err, GLIM_E_IO, "cannot write %s", path);
    json_decref(cfg);
    if (st != GLIM_OK) return st;
    json_t *gen = json_pack("{s:i, s:[i], s:b}", "bos_token_id", 1, "eos_token_id", 2,
                            "do_sample", 0);
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    if (!gen || json_dump_file(gen, path, JSON_INDENT(2)) != 0)
        st = glim_fail(err, GLIM_E_IO, "cannot write %s", path);
    json_decref(gen);
    if (st != GLIM_OK) return st;

    synth_out o = {NULL, 0, 0, err};
    if (build_tensors(&o, s) != 0) {
        st = glim_fail(err, GLIM_E_NOMEM, "synth: out of memory building the tensors");
    } else {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        const char *k[] = {"format"}, *v[] = {"pt"};
        st = glim_st_write(path, o.t, o.n, k, v, 1, err);
    }
    for (int i = 0; i < o.n; i++) {
        free((void *)o.t[i].name);
        free((void *)o.t[i].data);
    }
    free(o.t);
    return st;
}
