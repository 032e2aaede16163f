/* steering.c: direction sets (llama.cpp control-vector GGUF and safetensors files), the steering
 * ops a session applies at each layer's output, and their math (glim_steer_apply, also the
 * reference for device kernels). Conventions are stated in include/glimmer_hooks.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "error.h"
#include "gguf.h"
#include "hooks_internal.h"
#include "model.h"
#include "safetensors.h"
#include "session.h"

#define DEFAULT_MODEL_HINT "muse-glimmer" /* llama.cpp's architecture name for this model */
#define MAX_FILE_LAYER 100000

struct glim_directions {
    int n_layers, hidden;
    float *data;         /* [n_layers][hidden] */
    uint8_t *present;    /* [n_layers] */
    float *any;          /* [hidden] or NULL */
    char model_hint[128];
};

/* ---- direction sets ----------------------------------------------------------------------- */

glim_status glim_directions_create(int n_layers, int hidden, glim_directions **out,
                                   glim_error *err) {
    *out = NULL;
    if (n_layers < 0 || n_layers > MAX_FILE_LAYER || hidden <= 0 || hidden > (1 << 24))
        return glim_fail(err, GLIM_E_ARG, "directions: bad shape (%d layers, hidden %d)", n_layers,
                         hidden);
    glim_directions *d = calloc(1, sizeof *d);
    if (!d) return glim_fail(err, GLIM_E_NOMEM, "directions: no memory");
    d->n_layers = n_layers;
    d->hidden = hidden;
    d->data = calloc((size_t)(n_layers ? n_layers : 1) * (size_t)hidden, sizeof(float));
    d->present = calloc((size_t)(n_layers ? n_layers : 1), 1);
    if (!d->data || !d->present) {
        glim_directions_free(d);
        return glim_fail(err, GLIM_E_NOMEM, "directions: no memory for %d x %d floats", n_layers,
                         hidden);
    }
    *out = d;
    return GLIM_OK;
}

void glim_directions_free(glim_directions *d) {
    if (!d) return;
    free(d->data);
    free(d->present);
    free(d->any);
    free(d);
}

int glim_directions_hidden(const glim_directions *d) { return d->hidden; }
int glim_directions_n_layers(const glim_directions *d) { return d->n_layers; }
const char *glim_directions_model_hint(const glim_directions *d) { return d->model_hint; }

const float *glim_directions_get(const glim_directions *d, int layer) {
    if (layer == -1) return d->any;
    if (layer < 0 || layer >= d->n_layers || !d->present[layer]) return NULL;
    return d->data + (size_t)layer * d->hidden;
}

glim_status glim_directions_set(glim_directions *d, int layer, const float *v, glim_error *err) {
    if (!v) return glim_fail(err, GLIM_E_ARG, "directions: NULL vector for layer %d", layer);
    for (int i = 0; i < d->hidden; i++)
        if (!isfinite(v[i]))
            return glim_fail(err, GLIM_E_ARG, "directions: layer %d element %d is not finite",
                             layer, i);
    if (layer == -1) {
        if (!d->any && !(d->any = malloc((size_t)d->hidden * sizeof(float))))
            return glim_fail(err, GLIM_E_NOMEM, "directions: no memory");
        memcpy(d->any, v, (size_t)d->hidden * sizeof(float));
        return GLIM_OK;
    }
    if (layer < 0 || layer >= d->n_layers)
        return glim_fail(err, GLIM_E_ARG, "directions: layer %d outside 0..%d", layer,
                         d->n_layers - 1);
    memcpy(d->data + (size_t)layer * d->hidden, v, (size_t)d->hidden * sizeof(float));
    d->present[layer] = 1;
    return GLIM_OK;
}

void glim_directions_unset(glim_directions *d, int layer) {
    if (layer == -1) {
        free(d->any);
        d->any = NULL;
    } else if (layer >= 0 && layer < d->n_layers) {
        d->present[layer] = 0;
        memset(d->data + (size_t)layer * d->hidden, 0, (size_t)d->hidden * sizeof(float));
    }
}

/* "direction.N" -> N (decimal, no sign, no leading zeros but "0"); "direction" -> -1;
 * anything else -> -2. */
static int parse_direction_name(const char *name) {
    if (!strcmp(name, "direction")) return -1;
    if (strncmp(name, "direction.", 10)) return -2;
    const char *p = name + 10;
    if (!*p || (p[0] == '0' && p[1])) return -2;
    long v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return -2;
        v = v * 10 + (*p - '0');
        if (v > MAX_FILE_LAYER) return -2;
    }
    return (int)v;
}

static glim_status load_gguf(const char *path, glim_directions **out, glim_error *err) {
    glim_gguf *g;
    glim_status st = glim_gguf_read_file(path, &g, err);
    if (st) return st;
    const char *arch = glim_gguf_get_str(g, "general.architecture");
    int nt = glim_gguf_n_tensors(g), max_layer = -1, hidden = 0;
    int64_t layer_count = -1;
    const glim_gguf_kv *lc = glim_gguf_find_kv(g, "controlvector.layer_count");
    if (glim_gguf_find_kv(g, "general.architecture") && (!arch || strcmp(arch, "controlvector")))
        st = glim_fail(err, GLIM_E_FORMAT, "%s: not a control vector: general.architecture is "
                       "'%s', expected 'controlvector'", path, arch ? arch : "(not a string)");
    else if (lc && glim_gguf_get_int(g, "controlvector.layer_count", &layer_count))
        st = glim_fail(err, GLIM_E_FORMAT, "%s: controlvector.layer_count has type %s, expected an "
                       "integer", path, glim_gguf_vtype_name(lc->type));
    else if (nt == 0)
        st = glim_fail(err, GLIM_E_FORMAT, "%s: no direction tensors", path);
    else if (lc && layer_count != nt)
        st = glim_fail(err, GLIM_E_FORMAT, "%s: controlvector.layer_count says %lld but the file "
                       "holds %d direction tensors", path, (long long)layer_count, nt);
    for (int i = 0; !st && i < nt; i++) {
        const glim_gguf_tensor *t = glim_gguf_tensor_at(g, i);
        int n = parse_direction_name(t->name);
        uint64_t extra = 1;
        for (int k = 1; k < t->n_dims; k++) extra *= t->ne[k];
        if (n < 1)
            st = glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s' is not direction.N with N >= 1 "
                           "(llama.cpp numbers control-vector layers from 1)", path, t->name);
        else if (t->type != GLIM_GGML_F32)
            st = glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s' has ggml type %u, expected F32 (0)",
                           path, t->name, t->type);
        else if (extra != 1)
            st = glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s' is not 1-D", path, t->name);
        else if (hidden && (uint64_t)hidden != t->ne[0])
            st = glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s' has %llu elements, the others %d",
                           path, t->name, (unsigned long long)t->ne[0], hidden);
        else if (t->ne[0] > (1u << 24))
            st = glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s' is %llu wide", path, t->name,
                           (unsigned long long)t->ne[0]);
        hidden = (int)t->ne[0];
        if (n > max_layer) max_layer = n;
    }
    glim_directions *d = NULL;
    if (!st) st = glim_directions_create(max_layer + 1, hidden, &d, err);
    for (int i = 0; !st && i < nt; i++) {
        const glim_gguf_tensor *t = glim_gguf_tensor_at(g, i);
        float *v = malloc((size_t)hidden * sizeof *v);
        if (!v) {
            st = glim_fail(err, GLIM_E_NOMEM, "no memory");
            break;
        }
        memcpy(v, t->data, (size_t)hidden * sizeof *v);
        st = glim_directions_set(d, parse_direction_name(t->name), v, err);
        if (st) glim_fail_context(err, "%s: tensor '%s'", path, t->name);
        free(v);
    }
    const char *hint = glim_gguf_get_str(g, "controlvector.model_hint");
    if (!st && hint) snprintf(d->model_hint, sizeof d->model_hint, "%s", hint);
    glim_gguf_free(g);
    if (st) {
        glim_directions_free(d);
        return st;
    }
    *out = d;
    return GLIM_OK;
}

static glim_status load_safetensors(const char *path, glim_directions **out, glim_error *err) {
    glim_st_set *set;
    glim_status st = glim_st_open_file(path, &set, err);
    if (st) return st;
    int nt = glim_st_count(set), max_layer = -1, hidden = 0;
    for (int i = 0; !st && i < nt; i++) {
        const glim_tensor *t = glim_st_at(set, i);
        int n = parse_direction_name(t->name);
        if (n < -1)
            st = glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s' is not 'direction' or "
                           "'direction.N'", path, t->name);
        else if (t->dtype != GLIM_DT_F32 && t->dtype != GLIM_DT_BF16 && t->dtype != GLIM_DT_F16 &&
                 t->dtype != GLIM_DT_F64)
            st = glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s' has dtype %s, expected F32", path,
                           t->name, glim_dtype_name(t->dtype));
        else if (t->ndim != 1 || t->shape[0] <= 0 || t->shape[0] > (1 << 24))
            st = glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s' must be 1-D [hidden]", path,
                           t->name);
        else if (hidden && hidden != t->shape[0])
            st = glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s' has %lld elements, the others %d",
                           path, t->name, (long long)t->shape[0], hidden);
        if (!st) hidden = (int)t->shape[0];
        if (n > max_layer) max_layer = n;
    }
    if (!st && nt == 0) st = glim_fail(err, GLIM_E_FORMAT, "%s: no direction tensors", path);
    glim_directions *d = NULL;
    if (!st) st = glim_directions_create(max_layer + 1, hidden, &d, err);
    float *v = st ? NULL : malloc((size_t)hidden * sizeof *v);
    if (!st && !v) st = glim_fail(err, GLIM_E_NOMEM, "no memory");
    for (int i = 0; !st && i < nt; i++) {
        const glim_tensor *t = glim_st_at(set, i);
        for (int k = 0; k < hidden; k++) v[k] = glim_load_f32(t->data, t->dtype, (size_t)k);
        st = glim_directions_set(d, parse_direction_name(t->name), v, err);
        if (st) glim_fail_context(err, "%s: tensor '%s'", path, t->name);
    }
    free(v);
    const char *hint = glim_st_metadata(set, "controlvector.model_hint");
    if (!st && hint) snprintf(d->model_hint, sizeof d->model_hint, "%s", hint);
    glim_st_close(set);
    if (st) {
        glim_directions_free(d);
        return st;
    }
    *out = d;
    return GLIM_OK;
}

glim_status glim_directions_load(const char *path, glim_directions **out, glim_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return glim_fail(err, GLIM_E_IO, "cannot open control vector %s", path);
    char magic[4] = {0};
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    if (got == 4 && !memcmp(magic, "GGUF", 4)) return load_gguf(path, out, err);
    return load_safetensors(path, out, err);
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static glim_status save_gguf(const glim_directions *d, const char *path, const char *hint,
                             glim_error *err) {
    if (d->any)
        return glim_fail(err, GLIM_E_ARG, "%s: a GGUF control vector holds one direction per "
                         "layer; this set has an every-layer vector (save it as .safetensors)", path);
    if (d->n_layers > 0 && d->present[0])
        return glim_fail(err, GLIM_E_ARG, "%s: layer 0 has a direction, but llama.cpp control "
                         "vectors start at direction.1 (layer 0's output is never steered there); "
                         "drop layer 0 or save as .safetensors", path);
    int count = 0;
    for (int l = 1; l < d->n_layers; l++) count += d->present[l];
    if (!count) return glim_fail(err, GLIM_E_ARG, "%s: the direction set is empty", path);
    glim_gguf_writer *w = glim_gguf_writer_new();
    if (!w) return glim_fail(err, GLIM_E_NOMEM, "no memory");
    glim_status st = glim_gguf_set_str(w, "general.architecture", "controlvector", err);
    if (!st) st = glim_gguf_set_str(w, "controlvector.model_hint", hint, err);
    if (!st) st = glim_gguf_set_i32(w, "controlvector.layer_count", count, err);
    for (int l = 1; !st && l < d->n_layers; l++) {
        if (!d->present[l]) continue;
        char name[32];
        snprintf(name, sizeof name, "direction.%d", l);
        uint64_t ne = (uint64_t)d->hidden;
        st = glim_gguf_add_f32(w, name, 1, &ne, d->data + (size_t)l * d->hidden, err);
    }
    if (!st) st = glim_gguf_write(w, path, err);
    glim_gguf_writer_free(w);
    return st;
}

static glim_status save_safetensors(const glim_directions *d, const char *path, const char *hint,
                                    glim_error *err) {
    int n = !!d->any;
    for (int l = 0; l < d->n_layers; l++) n += d->present[l];
    if (!n) return glim_fail(err, GLIM_E_ARG, "%s: the direction set is empty", path);
    glim_st_out *t = calloc((size_t)n, sizeof *t);
    char (*names)[32] = calloc((size_t)n, sizeof *names);
    if (!t || !names) {
        free(t);
        free(names);
        return glim_fail(err, GLIM_E_NOMEM, "no memory");
    }
    int k = 0;
    if (d->any) {
        snprintf(names[k], sizeof names[k], "direction");
        t[k] = (glim_st_out){names[k], GLIM_DT_F32, 1, {d->hidden}, d->any};
        k++;
    }
    for (int l = 0; l < d->n_layers; l++) {
        if (!d->present[l]) continue;
        snprintf(names[k], sizeof names[k], "direction.%d", l);
        t[k] = (glim_st_out){names[k], GLIM_DT_F32, 1, {d->hidden}, d->data + (size_t)l * d->hidden};
        k++;
    }
    char count[32];
    snprintf(count, sizeof count, "%d", n);
    const char *keys[] = {"controlvector.model_hint", "controlvector.layer_count",
                          "glimmer.layer_convention"};
    const char *vals[] = {hint, count,
                          "direction.N is added to the output of decoder layer N (0-based; "
                          "llama.cpp loader numbering; HF hidden_states[N+1])"};
    glim_status st = glim_st_write(path, t, n, keys, vals, 3, err);
    free(t);
    free(names);
    return st;
}

glim_status glim_directions_save(const glim_directions *d, const char *path,
                                 const char *model_hint, glim_error *err) {
    if (!d || !path) return glim_fail(err, GLIM_E_ARG, "directions_save: NULL argument");
    const char *hint = model_hint ? model_hint : DEFAULT_MODEL_HINT;
    return ends_with(path, ".gguf") ? save_gguf(d, path, hint, err)
                                    : save_safetensors(d, path, hint, err);
}

/* ---- the math ----------------------------------------------------------------------------- */

static double dot_d(const float *a, const float *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
    return s;
}

void glim_steer_apply(const glim_steer_op *op, float *x, int n, int hidden) {
    if (op->scale == 0.0f) return; /* bit-identical: never x + 0*d */
    const float a = op->scale, *u = op->u, *v = op->v;
    int need_c = op->gate != GLIM_GATE_NONE || op->mode != GLIM_STEER_ADD;
    for (int r = 0; r < n; r++) {
        float *xr = x + (size_t)r * hidden;
        double c = need_c ? dot_d(xr, u, hidden) : 0.0;
        if ((op->gate == GLIM_GATE_ABS && !(fabs(c) > op->threshold)) ||
            (op->gate == GLIM_GATE_ABOVE && !(c > op->threshold)) ||
            (op->gate == GLIM_GATE_BELOW && !(c < op->threshold)))
            continue;
        switch (op->mode) {
        case GLIM_STEER_ADD:
            for (int i = 0; i < hidden; i++) xr[i] += a * v[i];
            break;
        case GLIM_STEER_ABLATE: {
            float k = (float)((double)a * c);
            for (int i = 0; i < hidden; i++) xr[i] -= k * u[i];
        } break;
        case GLIM_STEER_CLAMP: {
            float k = (float)((double)a * ((double)op->target - c));
            for (int i = 0; i < hidden; i++) xr[i] += k * u[i];
        } break;
        case GLIM_STEER_RENORM: {
            double n0 = dot_d(xr, xr, hidden);
            float k = (float)((double)a * c);
            for (int i = 0; i < hidden; i++) xr[i] -= k * u[i];
            double n1 = dot_d(xr, xr, hidden);
            if (n1 > 0) {
                float f = (float)sqrt(n0 / n1);
                for (int i = 0; i < hidden; i++) xr[i] *= f;
            }
        } break;
        }
    }
}

void glim_steer_layer(const struct glim_hooks *h, int layer, float *x, int n) {
    const glim_steer_op *ops;
    int k = glim_hooks_steer_ops(h, layer, &ops);
    for (int i = 0; i < k; i++) glim_steer_apply(&ops[i], x, n, h->hidden);
}

int glim_hooks_steer_ops(const struct glim_hooks *h, int layer, const glim_steer_op **ops) {
    const glim_steer_state *st = h ? h->steer : NULL;
    if (!st || layer < 0 || layer >= h->n_layers) {
        *ops = NULL;
        return 0;
    }
    *ops = st->ops + st->layer_start[layer];
    return st->layer_start[layer + 1] - st->layer_start[layer];
}

/* ---- configuring a session ---------------------------------------------------------------- */

glim_steer_params glim_steer_defaults(void) {
    glim_steer_params p;
    memset(&p, 0, sizeof p);
    p.mode = GLIM_STEER_ADD;
    p.scale = 1.0f;
    p.layer_first = 0;
    p.layer_last = -1;
    p.gate = GLIM_GATE_NONE;
    return p;
}

void glim_steer_state_free(glim_steer_state *st) {
    if (!st) return;
    for (int i = 0; i < st->n_ops; i++) free((float *)st->ops[i].v);
    free(st->ops);
    free(st->layer_start);
    free(st);
}

static glim_status check_params(const glim_steer_params *p, int n_layers, glim_error *err) {
    if ((unsigned)p->mode > GLIM_STEER_RENORM)
        return glim_fail(err, GLIM_E_ARG, "steer: unknown mode %d", (int)p->mode);
    if ((unsigned)p->gate > GLIM_GATE_BELOW)
        return glim_fail(err, GLIM_E_ARG, "steer: unknown gate %d", (int)p->gate);
    if (!isfinite(p->scale) || !isfinite(p->target) || !isfinite(p->threshold))
        return glim_fail(err, GLIM_E_ARG, "steer: scale %g, target %g and threshold %g must be "
                         "finite", p->scale, p->target, p->threshold);
    int last = p->layer_last < 0 ? n_layers - 1 : p->layer_last;
    if (p->layer_first < 0 || p->layer_first > last || last >= n_layers)
        return glim_fail(err, GLIM_E_ARG, "steer: layer range %d..%d is not inside the model's "
                         "layers 0..%d", p->layer_first, p->layer_last, n_layers - 1);
    if (p->file_offset < 0 || p->file_offset > 1)
        return glim_fail(err, GLIM_E_ARG, "steer: file_offset %d, expected 0 or 1", p->file_offset);
    return GLIM_OK;
}

/* Makes the op for model layer l from vector d (NULL: none); *made = 0 when it is a no-op. */
static glim_status make_op(const glim_steer_params *p, int l, const float *d, int hidden,
                           glim_steer_op *op, int *made, glim_error *err) {
    *made = 0;
    double nn = dot_d(d, d, hidden);
    if (nn == 0.0) {
        if (p->mode == GLIM_STEER_ADD) return GLIM_OK; /* adding zero: nothing to do */
        return glim_fail(err, GLIM_E_ARG, "steer: the direction for layer %d has zero norm; "
                         "there is no component to ablate, clamp or renormalise along", l);
    }
    float *block = malloc(2 * (size_t)hidden * sizeof *block);
    if (!block) return glim_fail(err, GLIM_E_NOMEM, "steer: no memory");
    double inv = 1.0 / sqrt(nn);
    for (int i = 0; i < hidden; i++) block[hidden + i] = (float)(d[i] * inv);
    int raw = p->mode == GLIM_STEER_ADD && !p->unit;
    memcpy(block, raw ? d : block + hidden, (size_t)hidden * sizeof *block);
    *op = (glim_steer_op){l, (int)p->mode, p->scale, p->target, (int)p->gate, p->threshold,
                          block, block + hidden};
    *made = 1;
    return GLIM_OK;
}

/* Merges the new ops (all pushed after the old ones) into the layer-sorted list. */
static glim_status merge_ops(struct glim_hooks *h, glim_steer_op *add, int n_add, glim_error *err) {
    glim_steer_state *st = h->steer;
    int total = st->n_ops + n_add;
    glim_steer_op *ops = malloc((size_t)(total ? total : 1) * sizeof *ops);
    if (!ops) return glim_fail(err, GLIM_E_NOMEM, "steer: no memory");
    int k = 0, i = 0, j = 0;
    for (int l = 0; l < h->n_layers; l++) {
        st->layer_start[l] = k;
        while (i < st->n_ops && st->ops[i].layer == l) ops[k++] = st->ops[i++];
        while (j < n_add && add[j].layer == l) ops[k++] = add[j++];
    }
    st->layer_start[h->n_layers] = k;
    free(st->ops);
    st->ops = ops;
    st->n_ops = total;
    return GLIM_OK;
}

glim_status glim_session_steer_push(glim_session *s, const glim_directions *d,
                                    const glim_steer_params *p, glim_error *err) {
    if (!s || !s->model || !d || !p) return glim_fail(err, GLIM_E_ARG, "steer: NULL argument");
    const glim_config *c = &s->model->cfg;
    glim_status st = check_params(p, c->n_layers, err);
    if (st) return st;
    if (d->hidden != c->hidden_size)
        return glim_fail(err, GLIM_E_ARG, "steer: directions are %d wide, the model's hidden size "
                         "is %d", d->hidden, c->hidden_size);
    for (int n = 0; n < d->n_layers; n++)
        if (d->present[n] && (n - p->file_offset < 0 || n - p->file_offset >= c->n_layers))
            return glim_fail(err, GLIM_E_ARG, "steer: direction.%d would act on layer %d, but the "
                             "model has layers 0..%d (file_offset %d)", n, n - p->file_offset,
                             c->n_layers - 1, p->file_offset);
    int last = p->layer_last < 0 ? c->n_layers - 1 : p->layer_last;
    glim_steer_op *add = calloc((size_t)(last - p->layer_first + 1), sizeof *add);
    if (!add) return glim_fail(err, GLIM_E_NOMEM, "steer: no memory");
    int n_add = 0;
    for (int l = p->layer_first; !st && l <= last && p->scale != 0.0f; l++) {
        const float *v = glim_directions_get(d, l + p->file_offset);
        if (!v) v = d->any;
        int made = 0;
        if (v) st = make_op(p, l, v, d->hidden, &add[n_add], &made, err);
        n_add += made;
    }
    struct glim_hooks *h = NULL;
    if (!st) st = glim_hooks_get(s, &h, err);
    if (!st && !h->steer) {
        h->steer = calloc(1, sizeof *h->steer);
        if (h->steer) h->steer->layer_start = calloc((size_t)h->n_layers + 1, sizeof(int));
        if (!h->steer || !h->steer->layer_start) {
            glim_steer_state_free(h->steer);
            h->steer = NULL;
            st = glim_fail(err, GLIM_E_NOMEM, "steer: no memory");
        }
    }
    if (!st) st = merge_ops(h, add, n_add, err);
    if (st) {
        for (int i = 0; i < n_add; i++) free((float *)add[i].v);
        free(add);
        if (h) glim_hooks_release_if_empty(s);
        return st;
    }
    h->steer->n_pushes++;
    free(add);
    return GLIM_OK;
}

int glim_session_steer_count(const glim_session *s) {
    return s && s->hooks && s->hooks->steer ? s->hooks->steer->n_pushes : 0;
}

void glim_session_steer_clear(glim_session *s) {
    if (!s || !s->hooks || !s->hooks->steer) return;
    glim_steer_state_free(s->hooks->steer);
    s->hooks->steer = NULL;
    glim_hooks_release_if_empty(s);
}
