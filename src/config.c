/* config.c: config.json and generation_config.json -> glim_config, strictly.
 *
 * The text fields live under "text_config" in a MuseGlimmerForConditionalGeneration checkpoint
 * (or at the root of a text-only one). Every value the forward depends on is read from the file
 * and range-checked; nothing falls back to a library default, because the defaults of
 * MuseGlimmerTextConfig are not the release (rope theta 10000 vs 500000, MODEL.md 1.1). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model.h"

/* Reads a whole small text file; NULL (and err set) on failure. */
static char *read_text_file(const char *path, int required, glim_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (required) glim_fail(err, GLIM_E_IO, "cannot open %s", path);
        return NULL;
    }
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n < 0 || n > (64L << 20) || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        glim_fail(err, GLIM_E_FORMAT, "%s: unreadable or larger than 64 MiB", path);
        return NULL;
    }
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        glim_fail(err, GLIM_E_IO, "%s: read failed", path);
        return NULL;
    }
    buf[n] = 0;
    fclose(f);
    return buf;
}

typedef struct cfg_ctx {
    json_t *text; /* the object holding the text fields */
    const char *where; /* "text_config" or "config" for messages */
    glim_error *err;
} cfg_ctx;

static glim_status get_int(cfg_ctx *c, const char *key, int lo, int hi, int *out) {
    json_t *v = json_object_get(c->text, key);
    if (!v) return glim_fail(c->err, GLIM_E_MODEL, "config.json: %s.%s is missing", c->where, key);
    if (!json_is_integer(v))
        return glim_fail(c->err, GLIM_E_MODEL, "config.json: %s.%s: expected an integer", c->where,
                         key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return glim_fail(c->err, GLIM_E_MODEL,
                         "config.json: %s.%s = %lld is out of range (expected %d..%d)", c->where,
                         key, (long long)x, lo, hi);
    *out = (int)x;
    return GLIM_OK;
}

/* A finite number in (lo, hi]; `null` allowed only when null_ok (then *out = 0). */
static glim_status get_float(cfg_ctx *c, const char *key, double lo, double hi, int null_ok,
                             float *out) {
    json_t *v = json_object_get(c->text, key);
    if (!v) return glim_fail(c->err, GLIM_E_MODEL, "config.json: %s.%s is missing", c->where, key);
    if (json_is_null(v) && null_ok) {
        *out = 0.0f;
        return GLIM_OK;
    }
    if (!json_is_number(v))
        return glim_fail(c->err, GLIM_E_MODEL, "config.json: %s.%s: expected a number", c->where,
                         key);
    double x = json_number_value(v);
    if (!isfinite(x) || x <= lo || x > hi)
        return glim_fail(c->err, GLIM_E_MODEL,
                         "config.json: %s.%s = %g is out of range (expected > %g and <= %g)",
                         c->where, key, x, lo, hi);
    *out = (float)x;
    return GLIM_OK;
}

static glim_status parse_layer_pattern(cfg_ctx *c, glim_config *cfg) {
    int L = cfg->n_layers;
    cfg->layer_is_full = calloc((size_t)L, 1);
    cfg->layer_rope_theta = calloc((size_t)L, sizeof(float));
    if (!cfg->layer_is_full || !cfg->layer_rope_theta)
        return glim_fail(c->err, GLIM_E_NOMEM, "config: out of memory");
    json_t *types = json_object_get(c->text, "layer_types");
    json_t *thetas = json_object_get(c->text, "layer_rope_theta");
    if (types && (!json_is_array(types) || (int)json_array_size(types) != L))
        return glim_fail(c->err, GLIM_E_MODEL,
                         "config.json: %s.layer_types must be an array of %d entries", c->where, L);
    if (thetas && (!json_is_array(thetas) || (int)json_array_size(thetas) != L))
        return glim_fail(c->err, GLIM_E_MODEL,
                         "config.json: %s.layer_rope_theta must be an array of %d entries",
                         c->where, L);
    for (int i = 0; i < L; i++) {
        /* HF's rule when layer_types is absent: full iff (L-1-i) % 4 == 0, counted from the end */
        int full = (L - 1 - i) % 4 == 0;
        if (types) {
            const char *t = json_string_value(json_array_get(types, (size_t)i));
            if (t && !strcmp(t, "full_attention")) full = 1;
            else if (t && !strcmp(t, "sliding_attention")) full = 0;
            else
                return glim_fail(c->err, GLIM_E_MODEL,
                                 "config.json: %s.layer_types[%d]: expected \"full_attention\" or "
                                 "\"sliding_attention\"", c->where, i);
        }
        float theta = full ? 0.0f : cfg->rope_theta;
        if (thetas) {
            json_t *v = json_array_get(thetas, (size_t)i);
            if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
                return glim_fail(c->err, GLIM_E_MODEL,
                                 "config.json: %s.layer_rope_theta[%d]: expected a number >= 0",
                                 c->where, i);
            theta = (float)json_number_value(v);
        }
        if ((theta == 0.0f) != full)
            return glim_fail(c->err, GLIM_E_MODEL,
                             "config.json: layer %d is %s in layer_types but has layer_rope_theta "
                             "%g (full layers are NoPE with theta 0; sliding layers need theta > 0)",
                             i, full ? "full_attention" : "sliding_attention", theta);
        if (!full && theta != cfg->rope_theta)
            return glim_fail(c->err, GLIM_E_UNSUPPORTED,
                             "config.json: layer_rope_theta[%d] = %g differs from "
                             "rope_parameters.rope_theta = %g", i, theta, cfg->rope_theta);
        cfg->layer_is_full[i] = (uint8_t)full;
        cfg->layer_rope_theta[i] = theta;
    }
    return GLIM_OK;
}

static glim_status parse_rope_theta(cfg_ctx *c, glim_config *cfg) {
    json_t *rp = json_object_get(c->text, "rope_parameters");
    json_t *theta = rp ? json_object_get(rp, "rope_theta") : json_object_get(c->text, "rope_theta");
    if (rp) {
        const char *type = json_string_value(json_object_get(rp, "rope_type"));
        if (type && strcmp(type, "default") != 0)
            return glim_fail(c->err, GLIM_E_UNSUPPORTED,
                             "config.json: rope_parameters.rope_type \"%s\" (only \"default\")",
                             type);
    }
    if (!theta)
        return glim_fail(c->err, GLIM_E_MODEL,
                         "config.json: %s.rope_parameters.rope_theta is missing (refusing to "
                         "guess: the library default 10000 is not the release's 500000)",
                         c->where);
    double t = json_number_value(theta);
    if (!json_is_number(theta) || !isfinite(t) || t <= 1.0 || t > 1e12)
        return glim_fail(c->err, GLIM_E_MODEL, "config.json: rope_theta = %g is out of range", t);
    cfg->rope_theta = (float)t;
    /* torch: inv_freq = 1 / base ** (arange(0, dim, 2).float() / dim), in fp32 */
    int half = cfg->head_dim / 2;
    cfg->inv_freq = malloc(sizeof(float) * (size_t)half);
    if (!cfg->inv_freq) return glim_fail(c->err, GLIM_E_NOMEM, "config: out of memory");
    for (int i = 0; i < half; i++) {
        float expo = (float)(2 * i) / (float)cfg->head_dim;
        cfg->inv_freq[i] = 1.0f / powf(cfg->rope_theta, expo);
    }
    return GLIM_OK;
}

/* eos ids: an integer or an array of integers. */
static int parse_ids(json_t *v, int *ids, int max) {
    int n = 0;
    if (json_is_integer(v)) {
        ids[n++] = (int)json_integer_value(v);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (!json_is_integer(e)) return -1;
            if (n < max) ids[n++] = (int)json_integer_value(e);
        }
    } else if (v) {
        return -1;
    }
    return n;
}

static glim_status parse_quantization(json_t *root, glim_config *cfg, glim_error *err) {
    json_t *q = json_object_get(root, "quantization");
    if (!q) q = json_object_get(root, "quantization_config");
    if (!q) return GLIM_OK;
    if (!json_is_object(q))
        return glim_fail(err, GLIM_E_MODEL, "config.json: quantization must be an object");
    const char *mode = json_string_value(json_object_get(q, "mode"));
    if (mode && strcmp(mode, "affine") != 0)
        return glim_fail(err, GLIM_E_UNSUPPORTED,
                         "config.json: quantization.mode \"%s\" (only \"affine\")", mode);
    json_t *b = json_object_get(q, "bits"), *g = json_object_get(q, "group_size");
    if (!json_is_integer(b) || !json_is_integer(g))
        return glim_fail(err, GLIM_E_MODEL,
                         "config.json: quantization needs integer \"bits\" and \"group_size\"");
    cfg->quant_bits = (int)json_integer_value(b);
    cfg->quant_group_size = (int)json_integer_value(g);
    size_t n = json_object_size(q);
    cfg->quant_overrides = calloc(n ? n : 1, sizeof *cfg->quant_overrides);
    if (!cfg->quant_overrides) return glim_fail(err, GLIM_E_NOMEM, "config: out of memory");
    const char *key;
    json_t *v;
    json_object_foreach(q, key, v) {
        if (!json_is_object(v) && !json_is_false(v)) continue; /* bits, group_size, mode */
        struct glim_quant_override *o = &cfg->quant_overrides[cfg->n_quant_overrides++];
        o->module = strdup(key);
        if (!o->module) return glim_fail(err, GLIM_E_NOMEM, "config: out of memory");
        if (json_is_false(v)) continue; /* bits 0: not quantized */
        json_t *ob = json_object_get(v, "bits"), *og = json_object_get(v, "group_size");
        if (!json_is_integer(ob) || !json_is_integer(og))
            return glim_fail(err, GLIM_E_MODEL,
                             "config.json: quantization override \"%s\" needs integer bits and "
                             "group_size", key);
        o->bits = (int)json_integer_value(ob);
        o->group_size = (int)json_integer_value(og);
    }
    return GLIM_OK;
}

static glim_status parse_text_fields(cfg_ctx *c, glim_config *cfg) {
    glim_status st;
#define TRY(x) if ((st = (x)) != GLIM_OK) return st
    TRY(get_int(c, "vocab_size", 1, 1 << 24, &cfg->vocab_size));
    TRY(get_int(c, "hidden_size", 1, 1 << 16, &cfg->hidden_size));
    TRY(get_int(c, "intermediate_size", 1, 1 << 18, &cfg->intermediate_size));
    TRY(get_int(c, "num_hidden_layers", 1, 1024, &cfg->n_layers));
    TRY(get_int(c, "num_attention_heads", 1, 1024, &cfg->n_heads));
    TRY(get_int(c, "num_key_value_heads", 1, 1024, &cfg->n_kv_heads));
    TRY(get_int(c, "head_dim", 2, 1024, &cfg->head_dim));
    TRY(get_int(c, "sliding_window", 1, 1 << 24, &cfg->sliding_window));
    TRY(get_int(c, "max_position_embeddings", 1, 1 << 24, &cfg->max_position));
    TRY(get_float(c, "rms_norm_eps", 0, 0.5, 0, &cfg->rms_eps));
    TRY(get_float(c, "post_norm_eps", 0, 0.5, 0, &cfg->post_norm_eps));
    TRY(get_float(c, "qk_scale_factor", 0, 1e4, 0, &cfg->qk_scale));
    TRY(get_float(c, "final_logit_softcapping", 0, 1e6, 1, &cfg->final_softcap));
    TRY(get_float(c, "output_multiplier", 0, 1e6, 0, &cfg->output_multiplier));
    if (cfg->head_dim % 2)
        return glim_fail(c->err, GLIM_E_MODEL, "config.json: head_dim %d must be even (RoPE halves)",
                         cfg->head_dim);
    if (cfg->n_heads % cfg->n_kv_heads)
        return glim_fail(c->err, GLIM_E_MODEL,
                         "config.json: num_attention_heads %d is not a multiple of "
                         "num_key_value_heads %d", cfg->n_heads, cfg->n_kv_heads);
    json_t *tie = json_object_get(c->text, "tie_word_embeddings");
    if (json_is_true(tie))
        return glim_fail(c->err, GLIM_E_MODEL,
                         "config.json: tie_word_embeddings is true; Muse Glimmer's head is untied "
                         "(a tied head is a different model)");
    if (json_is_true(json_object_get(c->text, "attention_bias")))
        return glim_fail(c->err, GLIM_E_UNSUPPORTED,
                         "config.json: attention_bias true (Muse Glimmer has no biases)");
    const char *act = json_string_value(json_object_get(c->text, "hidden_activation"));
    if (!act) act = json_string_value(json_object_get(c->text, "hidden_act"));
    if (act && strcmp(act, "silu") != 0)
        return glim_fail(c->err, GLIM_E_UNSUPPORTED,
                         "config.json: hidden activation \"%s\" (expected \"silu\")", act);
    cfg->attn_scale = 1.0f / sqrtf((float)cfg->head_dim);
    TRY(parse_rope_theta(c, cfg));
    TRY(parse_layer_pattern(c, cfg));
#undef TRY
    return GLIM_OK;
}

glim_status glim_config_parse(const char *config_json, const char *gen_json, glim_config *cfg,
                              glim_error *err) {
    memset(cfg, 0, sizeof *cfg);
    json_error_t jerr;
    json_t *root = json_loads(config_json, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return glim_fail(err, GLIM_E_FORMAT, "config.json: invalid JSON at line %d column %d: %s",
                         jerr.line, jerr.column, jerr.text);
    glim_status st = GLIM_OK;
    cfg_ctx c = {root, "config", err};
    const char *mt = json_string_value(json_object_get(root, "model_type"));
    json_t *text = json_object_get(root, "text_config");
    if (!json_is_object(root)) {
        st = glim_fail(err, GLIM_E_FORMAT, "config.json: expected a JSON object");
        goto done;
    }
    if (text) {
        if (!json_is_object(text) || (mt && strcmp(mt, "muse_glimmer") != 0)) {
            st = glim_fail(err, GLIM_E_MODEL,
                           "config.json: model_type \"%s\" is not \"muse_glimmer\"",
                           mt ? mt : "(none)");
            goto done;
        }
        c.text = text;
        c.where = "text_config";
        mt = json_string_value(json_object_get(text, "model_type"));
        if (mt && strcmp(mt, "muse_glimmer_text") != 0) {
            st = glim_fail(err, GLIM_E_MODEL,
                           "config.json: text_config.model_type \"%s\" is not "
                           "\"muse_glimmer_text\"", mt);
            goto done;
        }
    } else if (!mt || strcmp(mt, "muse_glimmer_text") != 0) {
        st = glim_fail(err, GLIM_E_MODEL,
                       "config.json: model_type \"%s\" is not a Muse Glimmer model "
                       "(expected \"muse_glimmer\" with a text_config, or \"muse_glimmer_text\")",
                       mt ? mt : "(none)");
        goto done;
    }
    if ((st = parse_text_fields(&c, cfg)) != GLIM_OK) goto done;
    if ((st = parse_quantization(root, cfg, err)) != GLIM_OK) goto done;

    /* Special ids: generation_config.json wins for the stop list (200001 and 200008). */
    json_t *bos = json_object_get(c.text, "bos_token_id");
    if (!bos) bos = json_object_get(root, "bos_token_id");
    cfg->bos_id = json_is_integer(bos) ? (int)json_integer_value(bos) : -1;
    json_t *pad = json_object_get(c.text, "pad_token_id");
    cfg->pad_id = json_is_integer(pad) ? (int)json_integer_value(pad) : -1;
    json_t *eos = json_object_get(root, "eos_token_id");
    if (!eos) eos = json_object_get(c.text, "eos_token_id");
    cfg->n_stop_ids = parse_ids(eos, cfg->stop_ids, GLIM_MAX_STOP_IDS);
    if (cfg->n_stop_ids < 0) {
        st = glim_fail(err, GLIM_E_MODEL, "config.json: eos_token_id must be integers");
        goto done;
    }
    if (gen_json) {
        json_t *gen = json_loads(gen_json, JSON_REJECT_DUPLICATES, &jerr);
        if (!gen) {
            st = glim_fail(err, GLIM_E_FORMAT,
                           "generation_config.json: invalid JSON at line %d column %d: %s",
                           jerr.line, jerr.column, jerr.text);
            goto done;
        }
        json_t *geos = json_object_get(gen, "eos_token_id");
        if (geos) {
            int n = parse_ids(geos, cfg->stop_ids, GLIM_MAX_STOP_IDS);
            if (n < 0) st = glim_fail(err, GLIM_E_MODEL,
                                      "generation_config.json: eos_token_id must be integers");
            else cfg->n_stop_ids = n;
        }
        json_t *gbos = json_object_get(gen, "bos_token_id");
        if (json_is_integer(gbos)) cfg->bos_id = (int)json_integer_value(gbos);
        json_decref(gen);
        if (st != GLIM_OK) goto done;
    }
    for (int i = 0; i < cfg->n_stop_ids; i++) {
        if (cfg->stop_ids[i] < 0 || cfg->stop_ids[i] >= cfg->vocab_size) {
            st = glim_fail(err, GLIM_E_MODEL, "stop id %d is outside the vocabulary (%d)",
                           cfg->stop_ids[i], cfg->vocab_size);
            goto done;
        }
    }
done:
    json_decref(root);
    if (st != GLIM_OK) glim_config_free(cfg);
    return st;
}

glim_status glim_config_load(const char *dir, glim_config *cfg, glim_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = read_text_file(path, 1, err);
    if (!text) return err ? err->code : GLIM_E_IO;
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    char *gen = read_text_file(path, 0, err);
    glim_status st = glim_config_parse(text, gen, cfg, err);
    free(text);
    free(gen);
    return st;
}

void glim_config_free(glim_config *cfg) {
    free(cfg->layer_is_full);
    free(cfg->layer_rope_theta);
    free(cfg->inv_freq);
    for (int i = 0; i < cfg->n_quant_overrides; i++) free(cfg->quant_overrides[i].module);
    free(cfg->quant_overrides);
    cfg->layer_is_full = NULL;
    cfg->layer_rope_theta = NULL;
    cfg->inv_freq = NULL;
    cfg->quant_overrides = NULL;
    cfg->n_quant_overrides = 0;
}
