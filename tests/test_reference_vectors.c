/* test_reference_vectors.c: every fixture under tests/vectors (made by scripts/make_vectors.py,
 * described in tests/vectors/README.md) run through the PUBLIC API on the CPU backend and
 * compared with the logits transformers computed (fp32, eager attention):
 *   1. all T prompt tokens in one call (GLIM_LOGITS_ALL) against `logits`, row by row;
 *   2. prefill of T-5 tokens without the head (GLIM_LOGITS_NONE, chunked by n_batch 7), then the
 *      last 5 one at a time (GLIM_LOGITS_LAST), against the same rows;
 *   3. every token one at a time (GLIM_LOGITS_LAST) against every row;
 *   4. the 8 greedy tokens HF decoded (teacher-forced: we feed HF's tokens) against
 *      `greedy_logits`, and our first-maximal-index choice against `greedy`.
 *
 * Tolerance: max |ours - ref| <= 1e-4 * max(1, max |ref|). Both sides are fp32 over the same bf16
 * (or dequantized) weights; they differ only in accumulation order inside dot products, sums of
 * squares and softmax, which gives a few ulps per op. The models are a handful of layers deep and
 * every sub-layer ends in a norm, so that noise stays relative: the generator measured HF fp32
 * against the same model cast to fp64 at about 5e-6 relative to max |logit|, and it reports how
 * far each known bug moves the logits (eps swap, theta, window +-1, RoPE on NoPE layers, head
 * order, ...): all of those are > 10x this tolerance on the fixtures built to show them.
 * Top-1 must agree on every row, except where the reference itself has a near-tie: our pick is
 * accepted when ref[ours] >= ref[max] - tol.
 *
 * A fixture whose directory is missing SKIPs with the reason; one the engine refuses with
 * GLIM_E_UNSUPPORTED (e.g. 3/5/6-bit in mlx_bits on a build without them) SKIPs with the message.
 * GLIM_VECTORS_DIR overrides the default directory tests/vectors. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "dtype.h"
#include "glimmer.h"
#include "safetensors.h"

#define MAX_FIXTURES 64
#define DECODE_TAIL 5

static char g_root[1024];
static char g_names[MAX_FIXTURES][128];
static int g_n_names;
static json_t *g_manifest;       /* the whole manifest.json, or NULL */
static const char *g_fixture;    /* the fixture the current case checks */

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---------------------------------------------------------------------------------------------
 * reading the reference file (copied out element by element: the mapping gives no alignment) */

static float elem_f32(const glim_tensor *t, int64_t i) {
    const unsigned char *p = (const unsigned char *)t->data;
    switch (t->dtype) {
    case GLIM_DT_F32: { float f; memcpy(&f, p + 4 * i, 4); return f; }
    case GLIM_DT_F64: { double d; memcpy(&d, p + 8 * i, 8); return (float)d; }
    case GLIM_DT_BF16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return glim_bf16_to_f32(h); }
    case GLIM_DT_F16: { uint16_t h; memcpy(&h, p + 2 * i, 2); return glim_f16_to_f32(h); }
    default: return NAN;
    }
}

/* A float matrix [rows][cols] (a 1-D tensor is [n][1]); NULL when absent or not a float tensor. */
static float *read_matrix(const glim_st_set *set, const char *name, int64_t *rows, int64_t *cols) {
    const glim_tensor *t = glim_st_find(set, name);
    if (!t || t->ndim < 1 || t->ndim > 2) return NULL;
    if (t->dtype != GLIM_DT_F32 && t->dtype != GLIM_DT_F64 && t->dtype != GLIM_DT_BF16 &&
        t->dtype != GLIM_DT_F16)
        return NULL;
    *rows = t->shape[0];
    *cols = t->ndim == 2 ? t->shape[1] : 1;
    float *v = malloc((size_t)(*rows * *cols) * sizeof *v + 1);
    if (!v) return NULL;
    for (int64_t i = 0; i < *rows * *cols; i++) v[i] = elem_f32(t, i);
    return v;
}

/* An integer vector (I64 or I32) as int32; NULL when absent. */
static int32_t *read_ids(const glim_st_set *set, const char *name, int64_t *n) {
    const glim_tensor *t = glim_st_find(set, name);
    if (!t || t->ndim != 1 || (t->dtype != GLIM_DT_I64 && t->dtype != GLIM_DT_I32)) return NULL;
    *n = t->shape[0];
    int32_t *v = malloc((size_t)*n * sizeof *v + 1);
    if (!v) return NULL;
    const unsigned char *p = (const unsigned char *)t->data;
    for (int64_t i = 0; i < *n; i++) {
        if (t->dtype == GLIM_DT_I64) {
            int64_t x;
            memcpy(&x, p + 8 * i, 8);
            v[i] = (int32_t)x;
        } else {
            memcpy(&v[i], p + 4 * i, 4);
        }
    }
    return v;
}

/* ---------------------------------------------------------------------------------------------
 * comparisons */

static int argmax_first(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static float max_abs(const float *x, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++)
        if (fabsf(x[i]) > m || x[i] != x[i]) m = x[i] != x[i] ? INFINITY : fabsf(x[i]);
    return m;
}

static float max_abs_diff(const float *a, const float *b, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= m)) m = d == d ? d : INFINITY; /* NaN counts as infinitely wrong */
    }
    return m;
}

/* 1: same top-1; 2: different but the reference has a near-tie within tol; 0: disagreement. */
static int top1_agrees(const float *ours, const float *ref, int vocab, float tol, int *ours_id,
                       int *ref_id) {
    *ours_id = argmax_first(ours, vocab);
    *ref_id = argmax_first(ref, vocab);
    if (*ours_id == *ref_id) return 1;
    return ref[*ours_id] >= ref[*ref_id] - tol ? 2 : 0;
}

/* ---------------------------------------------------------------------------------------------
 * manifest */

static json_t *manifest_entry(const char *name) {
    json_t *arr = g_manifest ? json_object_get(g_manifest, "fixtures") : NULL;
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n && !strcmp(n, name)) return e;
    }
    return NULL;
}

static int cmp_names(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* Fixture names from manifest.json, or else every sub-directory holding reference.safetensors. */
static void list_fixtures(void) {
    char path[1300];
    snprintf(path, sizeof path, "%s/manifest.json", g_root);
    json_error_t jerr;
    g_manifest = is_file(path) ? json_load_file(path, 0, &jerr) : NULL;
    json_t *arr = g_manifest ? json_object_get(g_manifest, "fixtures") : NULL;
    if (json_is_array(arr)) {
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e) {
            const char *n = json_string_value(json_object_get(e, "name"));
            if (n && g_n_names < MAX_FIXTURES && strlen(n) < sizeof g_names[0])
                strcpy(g_names[g_n_names++], n);
        }
        return;
    }
    DIR *d = opendir(g_root);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) && g_n_names < MAX_FIXTURES) {
        if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof g_names[0]) continue;
        snprintf(path, sizeof path, "%s/%s/reference.safetensors", g_root, de->d_name);
        if (is_file(path)) strcpy(g_names[g_n_names++], de->d_name);
    }
    closedir(d);
    qsort(g_names, (size_t)g_n_names, sizeof g_names[0], cmp_names);
}

/* ---------------------------------------------------------------------------------------------
 * one fixture */

typedef struct ref_set {
    int T, V, n_greedy;
    int32_t *tokens, *greedy;
    float *logits, *logits_f64, *greedy_logits;
    float tol, ref_max;
} ref_set;

static void ref_free(ref_set *r) {
    free(r->tokens);
    free(r->greedy);
    free(r->logits);
    free(r->logits_f64);
    free(r->greedy_logits);
}

/* The model's description must match what the generator made (when the manifest says). */
static void check_info(const glim_model_info *info, json_t *e, const ref_set *r) {
    CHECK(info->vocab_size == r->V, "%s: vocab %d, reference logits have %d columns", g_fixture,
          info->vocab_size, r->V);
    if (!e) return;
    const char *layout = json_string_value(json_object_get(e, "layout"));
    if (layout && info->layout)
        CHECK(!strcmp(layout, info->layout), "%s: layout \"%s\", generator made \"%s\"", g_fixture,
              info->layout, layout);
    json_t *text = json_object_get(e, "text");
    json_t *v;
    if ((v = json_object_get(text, "num_hidden_layers")))
        CHECK(info->n_layers == (int)json_integer_value(v), "%s: %d layers, expected %d", g_fixture,
              info->n_layers, (int)json_integer_value(v));
    if ((v = json_object_get(text, "full_attention_layers")))
        CHECK(info->n_full_layers == (int)json_array_size(v), "%s: %d full layers, expected %d",
              g_fixture, info->n_full_layers, (int)json_array_size(v));
    if ((v = json_object_get(text, "sliding_window")))
        CHECK(info->sliding_window == (int)json_integer_value(v), "%s: window %d, expected %d",
              g_fixture, info->sliding_window, (int)json_integer_value(v));
    if ((v = json_object_get(text, "head_dim")))
        CHECK(info->head_dim == (int)json_integer_value(v), "%s: head_dim %d, expected %d", g_fixture,
              info->head_dim, (int)json_integer_value(v));
    if ((v = json_object_get(text, "num_key_value_heads")))
        CHECK(info->n_kv_heads == (int)json_integer_value(v), "%s: %d kv heads, expected %d",
              g_fixture, info->n_kv_heads, (int)json_integer_value(v));
    json_t *q = json_object_get(e, "quantization");
    if (json_is_object(q)) {
        CHECK(info->quant_bits == (int)json_integer_value(json_object_get(q, "bits")),
              "%s: quant bits %d, expected %d", g_fixture, info->quant_bits,
              (int)json_integer_value(json_object_get(q, "bits")));
        CHECK(info->quant_group_size == (int)json_integer_value(json_object_get(q, "group_size")),
              "%s: group size %d, expected %d", g_fixture, info->quant_group_size,
              (int)json_integer_value(json_object_get(q, "group_size")));
    } else if (layout && !strcmp(layout, "huggingface")) {
        CHECK(info->quant_bits == 0, "%s: dense checkpoint reported as %d-bit", g_fixture,
              info->quant_bits);
    }
    json_t *stops = json_object_get(e, "stop_ids");
    if (json_is_array(stops)) {
        CHECK(info->n_stop_ids == (int)json_array_size(stops), "%s: %d stop ids, expected %d",
              g_fixture, info->n_stop_ids, (int)json_array_size(stops));
        for (int i = 0; i < info->n_stop_ids && i < (int)json_array_size(stops); i++)
            CHECK(info->stop_ids[i] == (int)json_integer_value(json_array_get(stops, i)),
                  "%s: stop id %d is %d, expected %d", g_fixture, i, info->stop_ids[i],
                  (int)json_integer_value(json_array_get(stops, i)));
    }
}

static int load_reference(const char *dir, ref_set *r, glim_error *err) {
    char path[1300];
    snprintf(path, sizeof path, "%s/reference.safetensors", dir);
    glim_st_set *set = NULL;
    if (glim_st_open_file(path, &set, err) != GLIM_OK) return 0;
    int64_t n = 0, rows = 0, cols = 0, gr = 0, gc = 0;
    r->tokens = read_ids(set, "tokens", &n);
    r->logits = read_matrix(set, "logits", &rows, &cols);
    int ok = r->tokens && r->logits && rows == n && n > DECODE_TAIL && cols > 1;
    if (ok) {
        r->T = (int)rows;
        r->V = (int)cols;
        int64_t fr = 0, fc = 0;
        r->logits_f64 = read_matrix(set, "logits_f64", &fr, &fc);
        if (r->logits_f64 && (fr != rows || fc != cols)) {
            free(r->logits_f64);
            r->logits_f64 = NULL;
        }
        int64_t ng = 0;
        r->greedy = read_ids(set, "greedy", &ng);
        r->greedy_logits = read_matrix(set, "greedy_logits", &gr, &gc);
        if (r->greedy && r->greedy_logits && gr == ng && gc == cols) {
            r->n_greedy = (int)ng;
        } else {
            r->n_greedy = 0;
        }
        r->ref_max = max_abs(r->logits, (size_t)r->T * (size_t)r->V);
        r->tol = 1e-4f * (r->ref_max > 1.0f ? r->ref_max : 1.0f);
    } else {
        snprintf(err->message, sizeof err->message,
                 "%.600s: needs I64 tokens [T] and F32 logits [T, vocab] with T > %d (tokens %s, logits "
                 "[%lld, %lld])", path, DECODE_TAIL, r->tokens ? "ok" : "missing", (long long)rows,
                 (long long)cols);
    }
    glim_st_close(set);
    return ok;
}

/* Running results of one way of evaluating a fixture. */
typedef struct tally {
    float maxd;
    int agree, ties, bad_rows;
} tally;

/* Compares one row of ours with the reference. The first 3 bad rows of a tally are reported in
 * full; later ones only count (they still fail the case). */
static void compare_row(const char *what, int row, const float *ours, const float *ref, const ref_set *r,
                        tally *t) {
    float d = max_abs_diff(ours, ref, (size_t)r->V);
    if (!(d <= t->maxd)) t->maxd = d;
    int oi, ri;
    int a = top1_agrees(ours, ref, r->V, r->tol, &oi, &ri);
    if (a == 1) t->agree++;
    if (a == 2) t->ties++;
    if (d <= r->tol && a != 0) return;
    if (t->bad_rows++ >= 3) {
        check_case_failures++;
        return;
    }
    CHECK(d <= r->tol, "%s %s row %d: max |diff| %g > tol %g", g_fixture, what, row, d, r->tol);
    CHECK(a != 0, "%s %s row %d: top-1 %d (ref %g) but reference top-1 %d (ref %g)", g_fixture, what,
          row, oi, ref[oi], ri, ref[ri]);
}

static void check_fixture(void) {
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/%s", g_root, g_fixture);
    if (!is_dir(dir)) SKIP("fixture directory %.150s is missing (scripts/make_vectors.py makes it)", dir);

    glim_error err = {0};
    ref_set r = {0};
    if (!load_reference(dir, &r, &err)) {
        ref_free(&r);
        REQUIRE(0, "%s: reference unreadable: %s", g_fixture, err.message);
    }
    glim_model_params mp = {.backend = "cpu", .n_threads = 0};
    glim_model *model = NULL;
    glim_status st = glim_model_open(dir, &mp, &model, &err);
    if (st == GLIM_E_UNSUPPORTED) {
        ref_free(&r);
        SKIP("%.30s: engine refuses it as unsupported: %.150s", g_fixture, err.message);
    }
    if (st != GLIM_OK) {
        ref_free(&r);
        REQUIRE(0, "%s: glim_model_open: %s: %s", g_fixture, glim_status_name(st), err.message);
    }
    const glim_model_info *info = glim_model_get_info(model);
    check_info(info, manifest_entry(g_fixture), &r);
    if (info->vocab_size != r.V) {
        glim_model_close(model);
        ref_free(&r);
        return;
    }

    const int T = r.T, V = r.V, P = T - DECODE_TAIL;
    float *all = malloc((size_t)T * V * sizeof *all), *row = malloc((size_t)V * sizeof *row);
    glim_session *s = NULL;
    glim_session_params sp = {.n_ctx = T + r.n_greedy + 8, .n_batch = 0};
    tally all_t = {0}, pd_t = {0}, tbt_t = {0}, greedy_t = {0};
    float d_self = 0;
    CHECK(all && row, "out of memory");
    if (!all || !row) goto out;

    /* 1. everything in one call */
    st = glim_session_create(model, &sp, &s, &err);
    CHECK(st == GLIM_OK, "%s: session: %s", g_fixture, err.message);
    if (st != GLIM_OK) goto out;
    st = glim_eval(s, r.tokens, T, 0, GLIM_LOGITS_ALL, all, (size_t)T * V, &err);
    CHECK(st == GLIM_OK, "%s: eval ALL: %s", g_fixture, err.message);
    if (st == GLIM_OK)
        for (int t = 0; t < T; t++)
            compare_row("all", t, all + (size_t)t * V, r.logits + (size_t)t * V, &r, &all_t);
    glim_session_free(s);
    s = NULL;

    /* 2. prefill without the head (chunks of 7), then decode the tail one token at a time, then
     *    the greedy continuation teacher-forced with HF's tokens */
    sp.n_batch = 7;
    st = glim_session_create(model, &sp, &s, &err);
    CHECK(st == GLIM_OK, "%s: session: %s", g_fixture, err.message);
    if (st != GLIM_OK) goto out;
    st = glim_eval(s, r.tokens, P, 0, GLIM_LOGITS_NONE, NULL, 0, &err);
    CHECK(st == GLIM_OK, "%s: prefill NONE: %s", g_fixture, err.message);
    for (int t = P; st == GLIM_OK && t < T; t++) {
        st = glim_eval(s, r.tokens + t, 1, t, GLIM_LOGITS_LAST, row, (size_t)V, &err);
        CHECK(st == GLIM_OK, "%s: decode at %d: %s", g_fixture, t, err.message);
        if (st != GLIM_OK) break;
        compare_row("prefill+decode", t, row, r.logits + (size_t)t * V, &r, &pd_t);
        float ds = max_abs_diff(row, all + (size_t)t * V, (size_t)V);
        if (ds > d_self) d_self = ds;
        if (r.n_greedy > 0 && t == T - 1) {
            int oi, ri;
            int a = top1_agrees(row, r.greedy_logits, V, r.tol, &oi, &ri);
            CHECK(a != 0 && (oi == r.greedy[0] || a == 2), "%s: greedy step 0: ours %d, HF %d",
                  g_fixture, oi, r.greedy[0]);
        }
    }
    for (int k = 1; st == GLIM_OK && k < r.n_greedy; k++) {
        int pos = T + k - 1;
        st = glim_eval(s, &r.greedy[k - 1], 1, pos, GLIM_LOGITS_LAST, row, (size_t)V, &err);
        CHECK(st == GLIM_OK, "%s: greedy decode at %d: %s", g_fixture, pos, err.message);
        if (st != GLIM_OK) break;
        compare_row("greedy", k, row, r.greedy_logits + (size_t)k * V, &r, &greedy_t);
    }
    if (st == GLIM_OK)
        CHECK(glim_session_position(s) == T + (r.n_greedy > 0 ? r.n_greedy - 1 : 0),
              "%s: position %d after the decode", g_fixture, glim_session_position(s));
    glim_session_free(s);
    s = NULL;

    /* 3. token by token from the start */
    sp.n_batch = 0;
    st = glim_session_create(model, &sp, &s, &err);
    CHECK(st == GLIM_OK, "%s: session: %s", g_fixture, err.message);
    if (st != GLIM_OK) goto out;
    for (int t = 0; t < T; t++) {
        st = glim_eval(s, r.tokens + t, 1, t, GLIM_LOGITS_LAST, row, (size_t)V, &err);
        CHECK(st == GLIM_OK, "%s: token-by-token at %d: %s", g_fixture, t, err.message);
        if (st != GLIM_OK) break;
        compare_row("token-by-token", t, row, r.logits + (size_t)t * V, &r, &tbt_t);
    }

    printf("  vectors %-10s %-11s %2d-bit T %2d V %4d | all: max|diff| %.3g (tol %.3g; HF fp32 vs "
           "f64 %.3g) top-1 %d/%d (+%d near-tie) | prefill+decode %.3g top-1 %d/%d | token-by-token "
           "%.3g top-1 %d/%d | decode vs all %.3g | greedy %d/%d max|diff| %.3g | bad rows %d\n",
           g_fixture, info->layout ? info->layout : "?", info->quant_bits, T, V, all_t.maxd, r.tol,
           r.logits_f64 ? max_abs_diff(r.logits, r.logits_f64, (size_t)T * V) : NAN, all_t.agree, T,
           all_t.ties, pd_t.maxd, pd_t.agree + pd_t.ties, DECODE_TAIL, tbt_t.maxd,
           tbt_t.agree + tbt_t.ties, T, d_self, greedy_t.agree + greedy_t.ties + (r.n_greedy > 0),
           r.n_greedy, greedy_t.maxd, all_t.bad_rows + pd_t.bad_rows + tbt_t.bad_rows + greedy_t.bad_rows);
    fflush(stdout);
out:
    if (s) glim_session_free(s);
    free(all);
    free(row);
    glim_model_close(model);
    ref_free(&r);
}

/* Like RUN, with the fixture's name in the PASS / FAIL / SKIP line. */
static void run_fixture(const char *name) {
    check_case_failures = 0;
    check_case_skipped = 0;
    g_fixture = name;
    check_fixture();
    if (check_case_failures) {
        check_total_fail++;
        printf("FAIL reference_vectors/%s\n", name);
    } else if (check_case_skipped) {
        check_total_skip++;
        printf("SKIP reference_vectors/%s: %s\n", name, check_skip_reason);
    } else {
        check_total_pass++;
        printf("PASS reference_vectors/%s\n", name);
    }
    fflush(stdout);
}

static void reference_vectors_present(void) {
    if (!is_dir(g_root))
        SKIP("no %.150s directory (run from the repository root, or set GLIM_VECTORS_DIR)", g_root);
    if (g_n_names == 0) SKIP("%.150s holds no fixtures (scripts/make_vectors.py makes them)", g_root);
    CHECK(g_n_names > 0, "no fixtures");
}

int main(void) {
    const char *env = getenv("GLIM_VECTORS_DIR");
    snprintf(g_root, sizeof g_root, "%s", env && *env ? env : "tests/vectors");
    if (is_dir(g_root)) list_fixtures();
    RUN(reference_vectors_present);
    for (int i = 0; i < g_n_names; i++) run_fixture(g_names[i]);
    if (g_manifest) json_decref(g_manifest);
    return CHECK_DONE();
}
