/* test_hooks_reference.c: captured residuals against Hugging Face transformers' per-layer hidden
 * states on every fixture of tests/vectors (scripts/make_vectors.py; GLIM_VECTORS_DIR overrides).
 * Per tests/vectors/README.md, `hidden_states` F32 [L+1, T, hidden] holds at index i (1 <= i <=
 * L-1) the output of decoder layer i-1 and at index L the FINAL NORM of the last layer's output;
 * the raw output of layer L-1 is `last_layer_output` F32 [T, hidden]. So capture of layer l is
 * compared with hidden_states[l+1] for l < L-1 and with last_layer_output for l = L-1, and
 * hidden_states[L] with the plain final RMS norm of our layer L-1 capture.
 * Two evaluation paths are captured: all T tokens in one call (LOGITS_ALL), and a prefill without
 * head in chunks of 7 followed by the last 5 tokens one at a time (the generation path).
 * Tolerance, as the logits test: max |ours - ref| <= 1e-4 * max(1, max |ref|) per layer. A
 * missing directory SKIPs with the reason. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "dtype.h"
#include "glimmer.h"
#include "glimmer_hooks.h"
#include "model.h"
#include "safetensors.h"

#define TAIL 5

static char g_root[1024];
static char g_fixture[128];
static char g_names[64][128];
static int g_n;

static int has_reference(const char *dir) {
    char p[2048];
    struct stat st;
    snprintf(p, sizeof p, "%.1900s/reference.safetensors", dir);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

static void find_fixtures(void) {
    const char *env = getenv("GLIM_VECTORS_DIR");
    snprintf(g_root, sizeof g_root, "%s", env && *env ? env : "tests/vectors");
    DIR *d = opendir(g_root);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && g_n < 64) {
        if (e->d_name[0] == '.') continue;
        char p[1400];
        snprintf(p, sizeof p, "%.1000s/%.300s", g_root, e->d_name);
        if (has_reference(p)) snprintf(g_names[g_n++], sizeof g_names[0], "%.120s", e->d_name);
    }
    closedir(d);
    qsort(g_names, (size_t)g_n, sizeof g_names[0], cmp_name);
}

static float f32_at(const glim_tensor *t, size_t i) {
    float v;
    memcpy(&v, (const char *)t->data + 4 * i, 4);
    return v;
}

static int64_t token_at(const glim_tensor *t, size_t i) {
    if (t->dtype == GLIM_DT_I64) {
        int64_t v;
        memcpy(&v, (const char *)t->data + 8 * i, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, (const char *)t->data + 4 * i, 4);
    return v;
}

/* Captures every layer at every position, evaluating either in one call or the generation way. */
static int capture_run(glim_model *m, const int32_t *tok, int T, int generation, float *out,
                       glim_error *e) {
    const glim_model_info *in = glim_model_get_info(m);
    glim_session_params sp = {T, generation ? 7 : 0, 0};
    glim_session *s = NULL;
    float *logits = malloc(sizeof(float) * (size_t)in->vocab_size * T);
    int rc = -1;
    glim_capture_params cp = {GLIM_CAPTURE_ALL, NULL, 0, NULL, 0, T, NULL, 0};
    if (!logits || glim_session_create(m, &sp, &s, e) || glim_session_capture_start(s, &cp, e))
        goto out;
    if (!generation) {
        if (glim_eval(s, tok, T, 0, GLIM_LOGITS_ALL, logits, (size_t)in->vocab_size * T, e)) goto out;
    } else {
        int pre = T > TAIL ? T - TAIL : 0;
        if (pre && glim_eval(s, tok, pre, 0, GLIM_LOGITS_NONE, NULL, 0, e)) goto out;
        for (int t = pre; t < T; t++)
            if (glim_eval(s, tok + t, 1, t, GLIM_LOGITS_LAST, logits, (size_t)in->vocab_size, e)) goto out;
    }
    glim_capture_view v;
    if (glim_session_capture_view(s, &v, e)) goto out;
    if (v.rows != T) {
        snprintf(e->message, sizeof e->message, "captured %d rows, expected %d", v.rows, T);
        goto out;
    }
    memcpy(out, v.residual, sizeof(float) * (size_t)T * in->n_layers * in->hidden_size);
    rc = 0;
out:
    glim_session_free(s);
    free(logits);
    return rc;
}

/* Worst per-layer relative error of a run against the reference; also HF's last entry against
 * the final norm of our last layer. */
static void compare(const glim_model *m, const float *cap, int T, const glim_tensor *hs,
                    const glim_tensor *last, const char *how) {
    const glim_config *c = &m->cfg;
    int L = c->n_layers, H = c->hidden_size;
    double worst = 0;
    int worst_layer = -1;
    for (int l = 0; l <= L; l++) {
        double maxref = 0, maxdiff = 0;
        for (int t = 0; t < T; t++) {
            const float *ours = cap + ((size_t)t * L + (l < L ? l : L - 1)) * H;
            double ms = 0;
            if (l == L)
                for (int i = 0; i < H; i++) ms += (double)ours[i] * ours[i];
            double inv = l == L ? 1.0 / sqrt(ms / H + c->rms_eps) : 1.0;
            for (int i = 0; i < H; i++) {
                double ref, x = ours[i];
                if (l < L - 1) ref = f32_at(hs, ((size_t)(l + 1) * T + t) * H + i);
                else if (l == L - 1) ref = last ? f32_at(last, (size_t)t * H + i) : NAN;
                else {
                    ref = f32_at(hs, ((size_t)L * T + t) * H + i);
                    x = ours[i] * inv * glim_load_f32(m->w.final_norm.data, m->w.final_norm.dtype, (size_t)i);
                }
                if (isnan(ref)) continue;
                maxref = fmax(maxref, fabs(ref));
                maxdiff = fmax(maxdiff, fabs(x - ref));
            }
        }
        double rel = maxdiff / fmax(1.0, maxref);
        CHECK(rel <= 1e-4, "%s, %s: layer %d%s: max diff %.3g, max |ref| %.3g", g_fixture, how,
              l < L ? l : L - 1, l == L ? " (final norm vs hidden_states[L])" : "", maxdiff, maxref);
        if (rel > worst) worst = rel, worst_layer = l;
    }
    printf("  %s, %s: worst relative difference %.3g (at %s %d)%s\n", g_fixture, how, worst,
           worst_layer == L ? "the final norm after layer" : "layer",
           worst_layer == L ? L - 1 : worst_layer, last ? "" : "; no last_layer_output in the file");
}

static void check_fixture(void) {
    char dir[1400], ref[1500];
    snprintf(dir, sizeof dir, "%.1000s/%.120s", g_root, g_fixture);
    snprintf(ref, sizeof ref, "%.1400s/reference.safetensors", dir);
    glim_error e = {0};
    glim_st_set *st = NULL;
    REQUIRE(!glim_st_open_file(ref, &st, &e), "%s", e.message);
    const glim_tensor *tk = glim_st_find(st, "tokens"), *hs = glim_st_find(st, "hidden_states"),
                      *last = glim_st_find(st, "last_layer_output");
    if (!hs) {
        glim_st_close(st);
        SKIP("%.60s: reference.safetensors has no hidden_states", g_fixture);
    }
    glim_model *m = NULL;
    glim_model_params mp = {"cpu", 0};
    glim_status s = glim_model_open(dir, &mp, &m, &e);
    if (s == GLIM_E_UNSUPPORTED) {
        glim_st_close(st);
        SKIP("%.60s: %.180s", g_fixture, e.message);
    }
    REQUIRE(s == GLIM_OK, "%s: %s", g_fixture, e.message);
    int L = m->cfg.n_layers, H = m->cfg.hidden_size;
    int T = tk ? (int)tk->shape[tk->ndim - 1] : 0;
    CHECK(tk && hs->ndim == 3 && hs->shape[0] == L + 1 && hs->shape[1] == T && hs->shape[2] == H &&
              hs->dtype == GLIM_DT_F32, "%s: hidden_states is not F32 [L+1=%d, T=%d, %d]", g_fixture,
          L + 1, T, H);
    if (!check_case_failures && last)
        CHECK(last->dtype == GLIM_DT_F32 && last->ndim == 2 && last->shape[0] == T && last->shape[1] == H,
              "%s: last_layer_output is not F32 [T, hidden]", g_fixture);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(T ? T : 1));
    float *cap = malloc(sizeof(float) * (size_t)(T ? T : 1) * L * H);
    if (!check_case_failures && tok && cap) {
        for (int t = 0; t < T; t++) tok[t] = (int32_t)token_at(tk, (size_t)t);
        if (capture_run(m, tok, T, 0, cap, &e)) CHECK(0, "%s: one call: %s", g_fixture, e.message);
        else compare(m, cap, T, hs, last, "one call");
        if (capture_run(m, tok, T, 1, cap, &e)) CHECK(0, "%s: prefill + decode: %s", g_fixture, e.message);
        else compare(m, cap, T, hs, last, "prefill + decode");
    }
    free(tok);
    free(cap);
    glim_model_close(m);
    glim_st_close(st);
}

static void no_fixtures(void) {
    SKIP("no fixtures with reference.safetensors under %.120s (made by scripts/make_vectors.py)", g_root);
}

int main(void) {
    find_fixtures();
    if (!g_n) RUN(no_fixtures);
    for (int i = 0; i < g_n; i++) {
        memcpy(g_fixture, g_names[i], sizeof g_fixture);
        RUN(check_fixture);
    }
    return CHECK_DONE();
}
