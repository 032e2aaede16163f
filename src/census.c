/* census.c: the FFN activation census (the seed's ffn_hist): per layer and neuron the mass
 * sum |act| and a log2 magnitude histogram, and per layer the overlap of the top-K neurons of
 * consecutive decode tokens. Only decode tokens (the last row of a chunk with a head) are
 * accumulated; prefill is counted. Output as JSON or safetensors, plus a text summary. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hooks_internal.h"
#include "model.h"
#include "safetensors.h"
#include "session.h"
#include "textbuf.h"

#define DEFAULT_TOP_K 32

void glim_census_state_free(glim_census_state *c) {
    if (!c) return;
    free(c->mass);
    free(c->hist);
    free(c->nhist);
    free(c->nonfinite);
    free(c->ov_sum);
    free(c->ov_n);
    free(c->prev_top);
    free(c->prev_pos);
    free(c->prev_seq);
    free(c->heap_idx);
    free(c->heap_val);
    free(c->cur_top);
    free(c);
}

/* Histogram bin of a finite value (see glimmer_hooks.h): from the float's exponent bits, which
 * are floor(log2 |a|) for normal numbers; subnormals clamp to the lowest bin. */
static inline int bin_of(float a) {
    uint32_t u;
    memcpy(&u, &a, 4);
    u &= 0x7fffffffu;
    if (u == 0) return 0;
    int e = (int)(u >> 23) - 127;
    if (e < GLIM_CENSUS_EXP_MIN) e = GLIM_CENSUS_EXP_MIN;
    if (e > GLIM_CENSUS_EXP_MAX) e = GLIM_CENSUS_EXP_MAX;
    return 1 + e - GLIM_CENSUS_EXP_MIN;
}

/* Heap order: a is "less" than b when it ranks lower (smaller |act|, or equal and larger index,
 * so that among equals the lower index is kept). */
static inline int ranks_below(float va, int ia, float vb, int ib) {
    return va < vb || (va == vb && ia > ib);
}

static void sift_down(float *v, int32_t *idx, int k, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < k && ranks_below(v[l], idx[l], v[m], idx[m])) m = l;
        if (r < k && ranks_below(v[r], idx[r], v[m], idx[m])) m = r;
        if (m == i) return;
        float tv = v[i]; v[i] = v[m]; v[m] = tv;
        int32_t ti = idx[i]; idx[i] = idx[m]; idx[m] = ti;
        i = m;
    }
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The top-K neuron indices of one activation row by |act| (non-finite ranks lowest), sorted
 * ascending into out. */
static void top_k(glim_census_state *c, const float *act, int n, float *hv, int32_t *hi,
                  int32_t *out) {
    int k = c->top_k;
    for (int i = 0; i < k; i++) {
        hv[i] = isfinite(act[i]) ? fabsf(act[i]) : -1.0f;
        hi[i] = i;
    }
    for (int i = k / 2 - 1; i >= 0; i--) sift_down(hv, hi, k, i);
    for (int i = k; i < n; i++) {
        float a = isfinite(act[i]) ? fabsf(act[i]) : -1.0f;
        if (ranks_below(hv[0], hi[0], a, i)) {
            hv[0] = a;
            hi[0] = i;
            sift_down(hv, hi, k, 0);
        }
    }
    memcpy(out, hi, (size_t)k * sizeof *out);
    qsort(out, (size_t)k, sizeof *out, cmp_i32);
}

static int sorted_overlap(const int32_t *a, const int32_t *b, int k) {
    int i = 0, j = 0, n = 0;
    while (i < k && j < k) {
        if (a[i] == b[j]) n++, i++, j++;
        else if (a[i] < b[j]) i++;
        else j++;
    }
    return n;
}

void glim_census_act(struct glim_hooks *h, int layer, const float *act, int n, int pos0,
                     int is_prefill) {
    int r = glim_hooks_head_row_of(h, pos0, n, is_prefill);
    if (r >= 0 && act) glim_hooks_ffn_act_row(h, layer, act + (size_t)r * h->inter, pos0, n, is_prefill);
}

void glim_hooks_ffn_act_row(struct glim_hooks *h, int layer, const float *row, int pos0, int n,
                            int is_prefill) {
    glim_census_state *c = h ? h->census : NULL;
    int r = c ? glim_hooks_head_row_of(h, pos0, n, is_prefill) : -1;
    if (r < 0 || !row || layer < 0 || layer >= h->n_layers) return;
    int pos = pos0 + r, I = h->inter, seq = glim_hooks_seq_of(h, pos0);
    double *mass = c->mass + (size_t)layer * I;
    uint64_t *hist = c->hist + (size_t)layer * GLIM_CENSUS_BINS;
    uint32_t *nh = c->nhist ? c->nhist + (size_t)layer * I * GLIM_CENSUS_BINS : NULL;
    for (int j = 0; j < I; j++) {
        float a = row[j];
        if (!isfinite(a)) {
            c->nonfinite[layer]++;
            continue;
        }
        mass[j] += fabs((double)a);
        int b = bin_of(a);
        hist[b]++;
        if (nh) nh[(size_t)j * GLIM_CENSUS_BINS + b]++;
    }
    int32_t *prev = c->prev_top + (size_t)layer * c->top_k;
    top_k(c, row, I, c->heap_val, c->heap_idx, c->cur_top);
    if (c->prev_pos[layer] >= 0 && c->prev_pos[layer] == pos - 1 && c->prev_seq[layer] == seq) {
        c->ov_sum[layer] += (double)sorted_overlap(prev, c->cur_top, c->top_k) / c->top_k;
        c->ov_n[layer]++;
    }
    memcpy(prev, c->cur_top, (size_t)c->top_k * sizeof *prev);
    c->prev_pos[layer] = pos;
    c->prev_seq[layer] = seq;
}

void glim_census_pass_end(struct glim_hooks *h, int pos0, int n, int is_prefill) {
    glim_census_state *c = h->census;
    if (is_prefill) {
        c->prefill_passes++;
        c->prefill_tokens += (uint64_t)n;
    } else {
        int decode = glim_hooks_head_row_of(h, pos0, n, is_prefill) >= 0;
        c->head_passes++;
        c->prefill_tokens += (uint64_t)(n - decode);
        c->decode_tokens += (uint64_t)decode;
    }
}

/* ---- configuration and results ------------------------------------------------------------ */

glim_status glim_session_census_start(glim_session *s, const glim_census_params *p,
                                      glim_error *err) {
    if (!s) return glim_fail(err, GLIM_E_ARG, "census: NULL session");
    glim_census_params d = {0, 0};
    if (!p) p = &d;
    struct glim_hooks *h;
    glim_status st = glim_hooks_get(s, &h, err);
    if (st) return st;
    int K = p->top_k ? p->top_k : DEFAULT_TOP_K;
    if (K < 1 || K > h->inter) {
        int inter = h->inter;
        glim_hooks_release_if_empty(s);
        return glim_fail(err, GLIM_E_ARG, "census: top_k %d outside 1..%d (intermediate size)",
                         p->top_k, inter);
    }
    glim_census_state_free(h->census);
    h->census = NULL;
    glim_census_state *c = calloc(1, sizeof *c);
    size_t L = (size_t)h->n_layers, I = (size_t)h->inter;
    if (c) {
        c->top_k = K;
        c->neuron_hist = !!p->neuron_hist;
        c->mass = calloc(L * I, sizeof *c->mass);
        c->hist = calloc(L * GLIM_CENSUS_BINS, sizeof *c->hist);
        c->nhist = p->neuron_hist ? calloc(L * I * GLIM_CENSUS_BINS, sizeof *c->nhist) : NULL;
        c->nonfinite = calloc(L, sizeof *c->nonfinite);
        c->ov_sum = calloc(L, sizeof *c->ov_sum);
        c->ov_n = calloc(L, sizeof *c->ov_n);
        c->prev_top = calloc(L * (size_t)K, sizeof *c->prev_top);
        c->prev_pos = malloc(L * sizeof *c->prev_pos);
        c->prev_seq = malloc(L * sizeof *c->prev_seq);
        c->heap_idx = malloc((size_t)K * sizeof *c->heap_idx);
        c->heap_val = malloc((size_t)K * sizeof *c->heap_val);
        c->cur_top = malloc((size_t)K * sizeof *c->cur_top);
    }
    if (!c || !c->mass || !c->hist || (p->neuron_hist && !c->nhist) || !c->nonfinite ||
        !c->ov_sum || !c->ov_n || !c->prev_top || !c->prev_pos || !c->prev_seq || !c->heap_idx ||
        !c->heap_val || !c->cur_top) {
        glim_census_state_free(c);
        glim_hooks_release_if_empty(s);
        return glim_fail(err, GLIM_E_NOMEM, "census: no memory for %zu layers x %zu neurons%s", L,
                         I, p->neuron_hist ? " with per-neuron histograms" : "");
    }
    for (size_t l = 0; l < L; l++) c->prev_pos[l] = c->prev_seq[l] = -1;
    h->census = c;
    return GLIM_OK;
}

glim_status glim_session_census_view(const glim_session *s, glim_census_view *out,
                                     glim_error *err) {
    const glim_census_state *c = s && s->hooks ? s->hooks->census : NULL;
    if (!c) return glim_fail(err, GLIM_E_ARG, "census: not started on this session");
    *out = (glim_census_view){s->hooks->n_layers, s->hooks->inter, c->top_k, GLIM_CENSUS_BINS,
                              c->decode_tokens, c->prefill_passes, c->prefill_tokens,
                              c->head_passes, c->mass, c->hist, c->nhist, c->nonfinite,
                              c->ov_sum, c->ov_n};
    return GLIM_OK;
}

void glim_session_census_clear(glim_session *s) {
    glim_census_state *c = s && s->hooks ? s->hooks->census : NULL;
    if (!c) return;
    size_t L = (size_t)s->hooks->n_layers, I = (size_t)s->hooks->inter;
    memset(c->mass, 0, L * I * sizeof *c->mass);
    memset(c->hist, 0, L * GLIM_CENSUS_BINS * sizeof *c->hist);
    if (c->nhist) memset(c->nhist, 0, L * I * GLIM_CENSUS_BINS * sizeof *c->nhist);
    memset(c->nonfinite, 0, L * sizeof *c->nonfinite);
    memset(c->ov_sum, 0, L * sizeof *c->ov_sum);
    memset(c->ov_n, 0, L * sizeof *c->ov_n);
    for (size_t l = 0; l < L; l++) c->prev_pos[l] = c->prev_seq[l] = -1;
    c->decode_tokens = c->prefill_passes = c->prefill_tokens = c->head_passes = 0;
}

void glim_session_census_stop(glim_session *s) {
    if (!s || !s->hooks || !s->hooks->census) return;
    glim_census_state_free(s->hooks->census);
    s->hooks->census = NULL;
    glim_hooks_release_if_empty(s);
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static glim_status write_json(const glim_census_view *v, const char *path, glim_error *err) {
    json_t *root = json_object(), *layers = json_array();
    json_object_set_new(root, "format", json_string("glimmer-ffn-census"));
    json_object_set_new(root, "bins", json_string(
        "bin 0: act == 0; bin 1+e-(-24): floor(log2|act|) = e clamped to [-24, 8]"));
    json_object_set_new(root, "exp_min", json_integer(GLIM_CENSUS_EXP_MIN));
    json_object_set_new(root, "exp_max", json_integer(GLIM_CENSUS_EXP_MAX));
    json_object_set_new(root, "top_k", json_integer(v->top_k));
    json_object_set_new(root, "decode_tokens", json_integer((json_int_t)v->decode_tokens));
    json_object_set_new(root, "head_passes", json_integer((json_int_t)v->head_passes));
    json_object_set_new(root, "prefill_passes", json_integer((json_int_t)v->prefill_passes));
    json_object_set_new(root, "prefill_tokens", json_integer((json_int_t)v->prefill_tokens));
    for (int l = 0; l < v->n_layers; l++) {
        json_t *o = json_object(), *mass = json_array(), *hist = json_array();
        for (int j = 0; j < v->inter; j++)
            json_array_append_new(mass, json_real(v->mass[(size_t)l * v->inter + j]));
        for (int b = 0; b < v->n_bins; b++)
            json_array_append_new(hist, json_integer((json_int_t)v->hist[(size_t)l * v->n_bins + b]));
        json_object_set_new(o, "layer", json_integer(l));
        json_object_set_new(o, "mass", mass);
        json_object_set_new(o, "hist", hist);
        json_object_set_new(o, "nonfinite", json_integer((json_int_t)v->nonfinite[l]));
        json_object_set_new(o, "overlap_pairs", json_integer((json_int_t)v->overlap_n[l]));
        json_object_set_new(o, "overlap_mean", v->overlap_n[l]
                                ? json_real(v->overlap_sum[l] / (double)v->overlap_n[l])
                                : json_null());
        json_array_append_new(layers, o);
    }
    json_object_set_new(root, "layers", layers);
    int rc = json_dump_file(root, path, JSON_COMPACT);
    json_decref(root);
    if (rc) return glim_fail(err, GLIM_E_IO, "census: cannot write %s", path);
    return GLIM_OK;
}

static glim_status write_safetensors(const glim_census_view *v, const char *path,
                                     glim_error *err) {
    char counts[4][32], k[16];
    snprintf(counts[0], 32, "%llu", (unsigned long long)v->decode_tokens);
    snprintf(counts[1], 32, "%llu", (unsigned long long)v->head_passes);
    snprintf(counts[2], 32, "%llu", (unsigned long long)v->prefill_passes);
    snprintf(counts[3], 32, "%llu", (unsigned long long)v->prefill_tokens);
    snprintf(k, sizeof k, "%d", v->top_k);
    const char *keys[] = {"format", "decode_tokens", "head_passes", "prefill_passes",
                          "prefill_tokens", "top_k", "bins"};
    const char *vals[] = {"glimmer-ffn-census", counts[0], counts[1], counts[2], counts[3], k,
                          "bin 0: act == 0; bin 1+e+24: floor(log2|act|) = e clamped to [-24, 8]"};
    glim_st_out t[7] = {
        {"mass", GLIM_DT_F64, 2, {v->n_layers, v->inter}, v->mass},
        {"hist", GLIM_DT_I64, 2, {v->n_layers, v->n_bins}, v->hist},
        {"nonfinite", GLIM_DT_I64, 1, {v->n_layers}, v->nonfinite},
        {"overlap_sum", GLIM_DT_F64, 1, {v->n_layers}, v->overlap_sum},
        {"overlap_n", GLIM_DT_I64, 1, {v->n_layers}, v->overlap_n},
        {"neuron_hist", GLIM_DT_U32, 3, {v->n_layers, v->inter, v->n_bins}, v->neuron_hist},
    };
    return glim_st_write(path, t, v->neuron_hist ? 6 : 5, keys, vals, 7, err);
}

glim_status glim_session_census_write(const glim_session *s, const char *path, glim_error *err) {
    glim_census_view v = {0};
    glim_status st = glim_session_census_view(s, &v, err);
    if (st) return st;
    if (!path) return glim_fail(err, GLIM_E_ARG, "census: no output path");
    return ends_with(path, ".json") ? write_json(&v, path, err) : write_safetensors(&v, path, err);
}

glim_status glim_session_census_summary(const glim_session *s, int top_n, char **text,
                                        glim_error *err) {
    glim_census_view v = {0};
    glim_status st = glim_session_census_view(s, &v, err);
    if (st) return st;
    if (top_n < 0 || top_n > 64) return glim_fail(err, GLIM_E_ARG, "census: top_n %d outside 0..64", top_n);
    if (top_n > v.inter) top_n = v.inter;
    textbuf b = {0};
    int32_t best[64];
    textbuf_printf(&b, "FFN census: %llu decode tokens, %llu prefill tokens (%llu chunks without a head); "
            "top-K %d\n", (unsigned long long)v.decode_tokens, (unsigned long long)v.prefill_tokens,
            (unsigned long long)v.prefill_passes, v.top_k);
    double ov_all = 0;
    int ov_layers = 0;
    double dt = v.decode_tokens ? (double)v.decode_tokens : 1.0;
    for (int l = 0; l < v.n_layers; l++) {
        const double *m = v.mass + (size_t)l * v.inter;
        int nb = 0; /* insertion into a short descending list */
        for (int j = 0; j < v.inter; j++) {
            int at = nb;
            while (at > 0 && m[best[at - 1]] < m[j]) at--;
            if (at >= top_n) continue;
            if (nb < top_n) nb++;
            memmove(best + at + 1, best + at, (size_t)(nb - 1 - at) * sizeof *best);
            best[at] = j;
        }
        if (v.overlap_n[l]) {
            double o = v.overlap_sum[l] / (double)v.overlap_n[l];
            textbuf_printf(&b, "layer %3d: top-%d overlap %.3f (%llu pairs)", l, v.top_k, o,
                    (unsigned long long)v.overlap_n[l]);
            ov_all += o;
            ov_layers++;
        } else {
            textbuf_printf(&b, "layer %3d: top-%d overlap n/a (no consecutive decode tokens)", l, v.top_k);
        }
        if (v.nonfinite[l]) textbuf_printf(&b, ", %llu non-finite", (unsigned long long)v.nonfinite[l]);
        if (top_n) textbuf_printf(&b, "; top neurons by mean |act|:");
        for (int i = 0; i < nb; i++) textbuf_printf(&b, " %d (%.4g)", best[i], m[best[i]] / dt);
        textbuf_printf(&b, "\n");
    }
    if (ov_layers) textbuf_printf(&b, "mean top-%d overlap over %d layers: %.3f\n", v.top_k, ov_layers,
                           ov_all / ov_layers);
    if (b.oom) {
        free(b.p);
        return glim_fail(err, GLIM_E_NOMEM, "census: no memory for the summary");
    }
    *text = b.p;
    return GLIM_OK;
}
