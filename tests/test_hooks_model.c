/* test_hooks_model.c: the hooks inside the real CPU forward on random synthetic models: scale-0
 * steering (every mode) and capture/census leave every logit bit-identical; the captured last
 * layer is the stream the head reads; an ADD steering changes exactly its layer by a*d;
 * steer-extract's directions equal means computed here, survive a GGUF round trip and apply
 * where they were measured; the census counts decode tokens of a real run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "glimmer.h"
#include "glimmer_hooks.h"
#include "hooks_fixture.h"
#include "model.h"
#include "session.h"
#include "synth.h"

#define T 21
#define GEN 4

static glim_model *model;
static int V, L, H;

static glim_model *open_tiny(void) {
    char dir[256];
    glim_synth_spec spec = glim_synth_tiny();
    spec.n_layers = 5; /* full attention at 0 and 4 counted from the end */
    spec.seed = 77;
    glim_error e = {0};
    fx_path(dir, sizeof dir, "tiny");
    if (glim_synth_write(dir, &spec, &e)) {
        fprintf(stderr, "synth: %s\n", e.message);
        return NULL;
    }
    glim_model_params mp = {"cpu", 2};
    glim_model *m = NULL;
    if (glim_model_open(dir, &mp, &m, &e)) fprintf(stderr, "open: %s\n", e.message);
    return m;
}

static glim_session *new_session(int n_batch) {
    glim_session_params sp = {64, n_batch, 0};
    glim_session *s = NULL;
    glim_error e = {0};
    if (glim_session_create(model, &sp, &s, &e)) fprintf(stderr, "session: %s\n", e.message);
    return s;
}

static void tokens(int32_t *t, int n, int lo, int span) {
    for (int i = 0; i < n; i++) t[i] = lo + (int)(fx_next() % (uint64_t)span);
}

/* The seed's flow: prompt without head but its last token, then GEN decode tokens; logits of
 * the last prompt token and each decode step into out [(1 + GEN)][V]. */
static int run_flow(glim_session *s, const int32_t *prompt, float *out) {
    glim_error e = {0};
    glim_session_reset(s);
    if (glim_eval(s, prompt, T - 1, 0, GLIM_LOGITS_NONE, NULL, 0, &e) ||
        glim_eval(s, prompt + T - 1, 1, T - 1, GLIM_LOGITS_LAST, out, (size_t)V, &e)) {
        fprintf(stderr, "eval: %s\n", e.message);
        return -1;
    }
    for (int g = 0; g < GEN; g++) {
        int32_t next = (int32_t)((g * 131 + 7) % V);
        if (glim_eval(s, &next, 1, T + g, GLIM_LOGITS_LAST, out + (size_t)(g + 1) * V, (size_t)V, &e)) {
            fprintf(stderr, "eval: %s\n", e.message);
            return -1;
        }
    }
    return 0;
}

static void test_scale_zero_and_passive_hooks_keep_logits_bit_identical(void) {
    if (!model) SKIP("no synthetic model (synth or CPU forward unavailable)");
    glim_session *s = new_session(8);
    REQUIRE(s, "session");
    int32_t prompt[T];
    tokens(prompt, T, 0, V);
    float *base = malloc(sizeof(float) * V * (1 + GEN)), *got = malloc(sizeof(float) * V * (1 + GEN));
    REQUIRE(!run_flow(s, prompt, base), "baseline");
    glim_directions *d;
    glim_error e = {0};
    float v[4096];
    REQUIRE(!glim_directions_create(L, H, &d, &e), "dirs");
    for (int l = 0; l < L; l++) {
        fx_fill(v, (size_t)H, 3.0f);
        glim_directions_set(d, l, v, &e);
    }
    for (int m = 0; m < 4; m++) {
        glim_steer_params p = glim_steer_defaults();
        p.mode = (glim_steer_mode)m;
        p.scale = 0.0f;
        p.gate = (glim_steer_gate)(m % 3);
        REQUIRE(!glim_session_steer_push(s, d, &p, &e), "%s", e.message);
    }
    glim_capture_params cp = {GLIM_CAPTURE_ALL, NULL, 0, NULL, 0, 0, NULL, 0};
    REQUIRE(!glim_session_capture_start(s, &cp, &e), "%s", e.message);
    REQUIRE(!glim_session_census_start(s, NULL, &e), "%s", e.message);
    REQUIRE(!run_flow(s, prompt, got), "hooked run");
    CHECK(!memcmp(base, got, sizeof(float) * V * (1 + GEN)), "scale 0 + capture + census changed logits");
    glim_capture_view cv;
    REQUIRE(!glim_session_capture_view(s, &cv, &e), "view");
    CHECK(cv.rows == T + GEN, "captured %d rows, expected %d", cv.rows, T + GEN);
    REQUIRE(!glim_session_hooks_clear(s, &e), "%s", e.message);
    CHECK(!s->hooks, "hooks left");
    REQUIRE(!run_flow(s, prompt, got), "cleared run");
    CHECK(!memcmp(base, got, sizeof(float) * V * (1 + GEN)), "logits after clearing differ");
    /* and a real steering does change them (the comparison above can fail) */
    glim_steer_params p = glim_steer_defaults();
    p.scale = 0.5f;
    REQUIRE(!glim_session_steer_push(s, d, &p, &e), "%s", e.message);
    REQUIRE(!run_flow(s, prompt, got), "steered run");
    CHECK(memcmp(base, got, sizeof(float) * V * (1 + GEN)) != 0, "scale 0.5 left logits unchanged");
    glim_directions_free(d);
    free(base);
    free(got);
    glim_session_free(s);
}

/* The captured last layer, through the final norm and the head in double, gives the logits. */
static void test_captured_last_layer_feeds_the_head(void) {
    if (!model) SKIP("no synthetic model");
    glim_session *s = new_session(8);
    REQUIRE(s, "session");
    int32_t prompt[T];
    tokens(prompt, T, 0, V);
    int32_t last = L - 1;
    glim_capture_params cp = {GLIM_CAPTURE_HEAD, NULL, 0, &last, 1, 0, NULL, 0};
    glim_error e = {0};
    REQUIRE(!glim_session_capture_start(s, &cp, &e), "%s", e.message);
    float *logits = malloc(sizeof(float) * V * (1 + GEN)), *row = malloc(sizeof(float) * H);
    REQUIRE(!run_flow(s, prompt, logits), "run");
    glim_capture_view v;
    REQUIRE(!glim_session_capture_view(s, &v, &e) && v.rows == 1 + GEN, "rows %d", v.rows);
    const glim_config *c = &model->cfg;
    double worst = 0;
    for (int r = 0; r < v.rows; r++) {
        CHECK(v.positions[r] == T - 1 + r, "row %d position %d", r, v.positions[r]);
        const float *x = v.residual + (size_t)r * H;
        double ms = 0;
        for (int i = 0; i < H; i++) ms += (double)x[i] * x[i];
        double inv = 1.0 / sqrt(ms / H + c->rms_eps);
        for (int t = 0; t < V; t++) {
            glim_matrix_row_f32(&model->w.lm_head, t, row);
            double z = 0;
            for (int i = 0; i < H; i++)
                z += x[i] * inv * glim_load_f32(model->w.final_norm.data, model->w.final_norm.dtype, i) * row[i];
            z *= c->output_multiplier;
            z = c->final_softcap * tanh(z / c->final_softcap);
            worst = fmax(worst, fabs(z - logits[(size_t)r * V + t]));
        }
    }
    CHECK(worst < 2e-3, "logits from the captured last layer differ by %g", worst);
    free(logits);
    free(row);
    glim_session_free(s);
}

static void test_add_changes_exactly_its_layer(void) {
    if (!model) SKIP("no synthetic model");
    glim_session *s = new_session(8);
    REQUIRE(s, "session");
    int32_t prompt[T];
    tokens(prompt, T, 0, V);
    glim_capture_params cp = {GLIM_CAPTURE_ALL, NULL, 0, NULL, 0, 0, NULL, 0};
    glim_error e = {0};
    size_t n = (size_t)(T + GEN) * L * H;
    float *base = malloc(n * sizeof(float)), *logits = malloc(sizeof(float) * V * (1 + GEN)), d[4096];
    REQUIRE(!glim_session_capture_start(s, &cp, &e), "%s", e.message);
    REQUIRE(!run_flow(s, prompt, logits), "run");
    glim_capture_view v;
    glim_session_capture_view(s, &v, &e);
    memcpy(base, v.residual, n * sizeof(float));
    glim_session_capture_clear(s);
    glim_directions *ds;
    fx_fill(d, (size_t)H, 1.0f);
    REQUIRE(!glim_directions_create(L, H, &ds, &e) && !glim_directions_set(ds, 2, d, &e), "dirs");
    glim_steer_params p = glim_steer_defaults();
    p.scale = 2.0f;
    REQUIRE(!glim_session_steer_push(s, ds, &p, &e), "%s", e.message);
    REQUIRE(!run_flow(s, prompt, logits), "steered run");
    glim_session_capture_view(s, &v, &e);
    REQUIRE(v.rows == T + GEN, "rows %d", v.rows);
    int diff_before = 0, diff_at = 0, same_after = 1;
    for (int r = 0; r < v.rows; r++)
        for (int l = 0; l < L; l++) {
            const float *a = base + ((size_t)r * L + l) * H, *b = v.residual + ((size_t)r * L + l) * H;
            if (l < 2) diff_before += memcmp(a, b, sizeof(float) * H) != 0;
            if (l == 2)
                for (int i = 0; i < H; i++) diff_at += b[i] != a[i] + 2.0f * d[i];
            if (l > 2 && r > 0) same_after &= !memcmp(a, b, sizeof(float) * H);
        }
    CHECK(diff_before == 0, "%d rows of layers 0-1 changed", diff_before);
    CHECK(diff_at == 0, "%d elements of layer 2 are not base + 2d", diff_at);
    CHECK(!same_after, "layers after 2 did not change");
    glim_directions_free(ds);
    free(base);
    free(logits);
    glim_session_free(s);
}

#define NP 5
#define PL 9

static void test_extract_round_trip(void) {
    if (!model) SKIP("no synthetic model");
    glim_session *s = new_session(4);
    REQUIRE(s, "session");
    int32_t pos[NP][PL], neg[NP][PL];
    const int32_t *pp[NP], *nn[NP];
    int plen[NP], nlen[NP];
    for (int i = 0; i < NP; i++) {
        plen[i] = PL - i % 3;
        nlen[i] = PL - (i + 1) % 3;
        tokens(pos[i], plen[i], 0, 100);
        tokens(neg[i], nlen[i], 300, 100);
        pp[i] = pos[i];
        nn[i] = neg[i];
    }
    glim_error e = {0};
    glim_directions *d = NULL;
    int32_t layers[3] = {3, 0, 1};
    REQUIRE(!glim_directions_extract(s, pp, plen, NP, nn, nlen, NP, layers, 3, 0, &d, &e), "%s", e.message);
    CHECK(!s->hooks, "extract left hooks on the session");
    CHECK(glim_directions_get(d, 2) == NULL && glim_directions_get(d, 4) == NULL, "unrequested layers");
    /* the means, computed here from one-shot evaluations with every logit row */
    double *mp = calloc((size_t)L * H, sizeof *mp), *mn = calloc((size_t)L * H, sizeof *mn);
    float *lg = malloc(sizeof(float) * V * PL);
    glim_capture_params cp = {GLIM_CAPTURE_ALL, NULL, 0, NULL, 0, 0, NULL, 0};
    REQUIRE(!glim_session_capture_start(s, &cp, &e), "%s", e.message);
    for (int set = 0; set < 2; set++)
        for (int i = 0; i < NP; i++) {
            const int32_t *t = set ? nn[i] : pp[i];
            int len = set ? nlen[i] : plen[i];
            glim_session_reset(s);
            glim_session_capture_clear(s);
            REQUIRE(!glim_eval(s, t, len, 0, GLIM_LOGITS_ALL, lg, (size_t)V * len, &e), "%s", e.message);
            glim_capture_view v;
            glim_session_capture_view(s, &v, &e);
            for (int k = 0; k < L * H; k++)
                (set ? mn : mp)[k] += v.residual[(size_t)(len - 1) * L * H + k] / (double)NP;
        }
    glim_session_capture_stop(s, &e);
    for (int k = 0; k < 3; k++) {
        const float *g = glim_directions_get(d, layers[k]);
        REQUIRE(g, "layer %d missing", layers[k]);
        double worst = 0, size = 0;
        for (int i = 0; i < H; i++) {
            double w = mp[layers[k] * H + i] - mn[layers[k] * H + i];
            worst = fmax(worst, fabs(g[i] - w));
            size = fmax(size, fabs(w));
        }
        CHECK(worst <= 1e-4 * size && size > 0, "layer %d: direction off by %g (size %g)", layers[k],
              worst, size);
    }
    /* GGUF round trip (layer 0 cannot go there) and application where it was measured */
    char path[256];
    fx_path(path, sizeof path, "extracted.gguf");
    CHECK(glim_directions_save(d, path, NULL, &e) == GLIM_E_ARG, "layer 0 accepted by GGUF");
    glim_directions_unset(d, 0);
    REQUIRE(!glim_directions_save(d, path, NULL, &e), "%s", e.message);
    glim_directions *back;
    REQUIRE(!glim_directions_load(path, &back, &e), "%s", e.message);
    for (int l = 1; l < L; l++) {
        const float *a = glim_directions_get(d, l), *b = glim_directions_get(back, l);
        CHECK((!a && !b) || (a && b && !memcmp(a, b, sizeof(float) * H)), "layer %d round trip", l);
    }
    int32_t one = 1;
    glim_capture_params c1 = {GLIM_CAPTURE_LAST_PROMPT, NULL, 0, &one, 1, 0, NULL, 0};
    float base[4096];
    REQUIRE(!glim_session_capture_start(s, &c1, &e), "%s", e.message);
    glim_session_reset(s);
    REQUIRE(!glim_eval(s, nn[0], nlen[0], 0, GLIM_LOGITS_LAST, lg, (size_t)V, &e), "%s", e.message);
    glim_capture_view v;
    glim_session_capture_view(s, &v, &e);
    memcpy(base, v.residual, sizeof(float) * H);
    glim_session_capture_clear(s);
    glim_steer_params sp = glim_steer_defaults();
    REQUIRE(!glim_session_steer_push(s, back, &sp, &e), "%s", e.message);
    glim_session_reset(s);
    REQUIRE(!glim_eval(s, nn[0], nlen[0], 0, GLIM_LOGITS_LAST, lg, (size_t)V, &e), "%s", e.message);
    glim_session_capture_view(s, &v, &e);
    const float *d1 = glim_directions_get(back, 1);
    int bad = 0;
    for (int i = 0; i < H; i++) bad += v.residual[i] != base[i] + d1[i];
    CHECK(v.rows == 1 && bad == 0, "layer 1 after applying direction.1: %d elements differ", bad);
    glim_directions_free(back);
    glim_directions_free(d);
    free(mp);
    free(mn);
    free(lg);
    glim_session_free(s);
}

static void test_census_on_a_run(void) {
    if (!model) SKIP("no synthetic model");
    glim_session *s = new_session(8);
    REQUIRE(s, "session");
    int32_t prompt[T];
    tokens(prompt, T, 0, V);
    glim_error e = {0};
    glim_census_params p = {16, 0};
    REQUIRE(!glim_session_census_start(s, &p, &e), "%s", e.message);
    float *lg = malloc(sizeof(float) * V * (1 + GEN));
    REQUIRE(!run_flow(s, prompt, lg), "run");
    glim_census_view v;
    REQUIRE(!glim_session_census_view(s, &v, &e), "view");
    CHECK(v.decode_tokens == 1 + GEN && v.prefill_tokens == T - 1 && v.prefill_passes == 3,
          "decode %llu prefill %llu in %llu chunks", (unsigned long long)v.decode_tokens,
          (unsigned long long)v.prefill_tokens, (unsigned long long)v.prefill_passes);
    for (int l = 0; l < L; l++) {
        uint64_t sum = 0;
        double mass = 0;
        for (int b = 0; b < v.n_bins; b++) sum += v.hist[l * v.n_bins + b];
        for (int j = 0; j < v.inter; j++) mass += v.mass[(size_t)l * v.inter + j];
        CHECK(sum + v.nonfinite[l] == (uint64_t)v.inter * v.decode_tokens, "layer %d histogram "
              "holds %llu values", l, (unsigned long long)sum);
        CHECK(mass > 0 && v.overlap_n[l] == GEN, "layer %d mass %g pairs %llu", l, mass,
              (unsigned long long)v.overlap_n[l]);
    }
    free(lg);
    glim_session_free(s);
}

int main(void) {
    model = open_tiny();
    if (model) {
        V = model->cfg.vocab_size;
        L = model->cfg.n_layers;
        H = model->cfg.hidden_size;
    }
    RUN(test_scale_zero_and_passive_hooks_keep_logits_bit_identical);
    RUN(test_captured_last_layer_feeds_the_head);
    RUN(test_add_changes_exactly_its_layer);
    RUN(test_extract_round_trip);
    RUN(test_census_on_a_run);
    glim_model_close(model);
    return CHECK_DONE();
}
