/* test_forward.c: the CPU forward against the naive double-precision forward (tests/support/
 * naive.c) on random models, the fixtures' power to tell the known faults apart, and the
 * session semantics: chunk sizes, prefill-then-decode, ring wrap-around of sliding layers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "glimmer.h"
#include "model.h"
#include "naive.h"
#include "synth.h"

static char tmp_root[] = "/tmp/glimmer-test-forward-XXXXXX";

static const char *make_model(const char *name, glim_synth_spec spec) {
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 512, "%s/%s", tmp_root, name);
    glim_error err = {0};
    if (access(p, F_OK) != 0 && glim_synth_write(p, &spec, &err) != GLIM_OK) {
        fprintf(stderr, "synth %s: %s\n", name, err.message);
        return NULL;
    }
    return p;
}

static glim_model *open_model(const char *dir) {
    glim_error err = {0};
    glim_model *m = NULL;
    glim_model_params mp = {"cpu", 2};
    if (glim_model_open(dir, &mp, &m, &err) != GLIM_OK) fprintf(stderr, "open: %s\n", err.message);
    return m;
}

static void random_tokens(int32_t *t, int n, int vocab, unsigned seed) {
    srand(seed);
    for (int i = 0; i < n; i++) t[i] = rand() % vocab;
}

/* logits [T][vocab] through one session evaluating chunks of `step` tokens (mode ALL). */
static int eval_all(glim_model *m, const int32_t *tok, int T, int n_ctx, int n_batch, int step,
                    float *out) {
    glim_error err = {0};
    glim_session *s = NULL;
    glim_session_params sp = {n_ctx, n_batch, 0};
    int V = glim_model_get_info(m)->vocab_size;
    if (glim_session_create(m, &sp, &s, &err) != GLIM_OK) return -1;
    for (int t = 0; t < T; t += step) {
        int k = T - t < step ? T - t : step;
        if (glim_eval(s, tok + t, k, t, GLIM_LOGITS_ALL, out + (size_t)t * V, (size_t)k * V, &err)) {
            fprintf(stderr, "eval: %s\n", err.message);
            glim_session_free(s);
            return -1;
        }
    }
    glim_session_free(s);
    return 0;
}

static double max_abs_diff(const float *a, const float *b, size_t n, double *max_ref) {
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= d)) d = e; /* NaN propagates as a failure */
        if (fabs(b[i]) > r) r = fabs(b[i]);
    }
    if (max_ref) *max_ref = r;
    return d;
}

/* fp32 with different summation order vs double over ~6 layers of width <= 256: relative errors
 * of a few 1e-6 per op; 1e-4 of the logit scale leaves room and still fails any real bug (the
 * faults below move logits by 1e-2 .. 1e0). */
#define TOL 1e-4

static void check_against_naive(const char *name, glim_synth_spec spec, int T) {
    const char *dir = make_model(name, spec);
    REQUIRE(dir, "cannot write model %s", name);
    glim_model *m = open_model(dir);
    REQUIRE(m, "cannot open %s", name);
    int V = spec.vocab_size;
    int32_t *tok = malloc(sizeof(int32_t) * T);
    float *ours = malloc(sizeof(float) * T * V), *ref = malloc(sizeof(float) * T * V);
    random_tokens(tok, T, V, 7);
    CHECK(eval_all(m, tok, T, 128, 64, T, ours) == 0, "eval failed");
    CHECK(naive_forward(m, tok, T, NULL, ref) == 0, "naive failed");
    double mr, d = max_abs_diff(ours, ref, (size_t)T * V, &mr);
    printf("  %s: max |ours - naive| = %.3g (max |logit| %.3g)\n", name, d, mr);
    CHECK(d <= TOL * (mr > 1 ? mr : 1), "%s: max diff %g", name, d);
    free(tok);
    free(ours);
    free(ref);
    glim_model_close(m);
}

static void forward_matches_naive_hf_bf16(void) {
    check_against_naive("hf", glim_synth_tiny(), 30);
}

static void forward_matches_naive_mlx4(void) {
    glim_synth_spec s = glim_synth_tiny();
    s.bits = 4;
    s.group_size = 32;
    check_against_naive("mlx4", s, 24);
}

static void forward_matches_naive_mlx8_g64_unquantized_embed(void) {
    glim_synth_spec s = glim_synth_tiny();
    s.bits = 8;
    s.group_size = 64;
    s.hidden_size = 128;
    s.quantize_embedding = 0;
    check_against_naive("mlx8", s, 20);
}

static void forward_matches_naive_odd_shapes(void) {
    glim_synth_spec s = glim_synth_tiny();
    s.n_layers = 5; /* full at 0 and 4: counting from the start would give 3 */
    s.n_heads = 8;
    s.n_kv_heads = 1;
    s.head_dim = 16;
    s.hidden_size = 72;
    s.intermediate_size = 200;
    s.sliding_window = 5;
    s.vocab_size = 301;
    check_against_naive("odd", s, 27);
}

/* Each known fault must move the logits far beyond TOL on the demo fixture (30 tokens, window 8),
 * otherwise the fixture could not catch it. */
static void fixture_tells_faults_apart(void) {
    const char *dir = make_model("hf", glim_synth_tiny());
    REQUIRE(dir, "no model");
    glim_model *m = open_model(dir);
    REQUIRE(m, "cannot open");
    int T = 30, V = glim_model_get_info(m)->vocab_size;
    int32_t tok[30];
    random_tokens(tok, T, V, 7);
    float *ref = malloc(sizeof(float) * T * V), *bad = malloc(sizeof(float) * T * V);
    REQUIRE(naive_forward(m, tok, T, NULL, ref) == 0, "naive");
    struct { const char *what; naive_faults f; } faults[] = {
        {"window W+1", {.window_delta = 1}},        {"window W-1", {.window_delta = -1}},
        {"RoPE on full layers", {.rope_on_full = 1}}, {"plain layer norms", {.plain_layer_norms = 1}},
        {"centred final norm", {.centered_final = 1}}, {"swapped epsilons", {.swap_eps = 1}},
        {"pattern from the start", {.pattern_from_start = 1}},
        {"no output multiplier", {.no_multiplier = 1}}, {"softcap before multiplier", {.softcap_first = 1}},
        {"no qk scale", {.no_qk_scale = 1}},         {"no attention gate", {.no_gate = 1}},
        {"no embedding norm", {.no_embed_norm = 1}},
    };
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        REQUIRE(naive_forward(m, tok, T, &faults[i].f, bad) == 0, "naive");
        double d = max_abs_diff(bad, ref, (size_t)T * V, NULL);
        printf("  fault '%s' moves logits by up to %.3g\n", faults[i].what, d);
        CHECK(d > 100 * TOL, "fault '%s' is invisible on this fixture (%g)", faults[i].what, d);
    }
    free(ref);
    free(bad);
    glim_model_close(m);
}

/* Chunking cannot change a single bit: each token's arithmetic is the same whatever the chunk. */
static void chunk_sizes_and_prefill_then_decode_agree(void) {
    const char *dir = make_model("hf", glim_synth_tiny());
    REQUIRE(dir, "no model");
    glim_model *m = open_model(dir);
    REQUIRE(m, "cannot open");
    int T = 40, V = glim_model_get_info(m)->vocab_size;
    int32_t tok[40];
    random_tokens(tok, T, V, 11);
    float *a = malloc(sizeof(float) * T * V), *b = malloc(sizeof(float) * T * V);
    REQUIRE(eval_all(m, tok, T, 64, 64, T, a) == 0, "eval");
    int configs[][2] = {{1, 1}, {3, 3}, {4, 7}, {16, 16}, {64, 13}}; /* n_batch, call size */
    for (size_t c = 0; c < 5; c++) {
        REQUIRE(eval_all(m, tok, T, 64, configs[c][0], configs[c][1], b) == 0, "eval");
        CHECK(memcmp(a, b, sizeof(float) * T * V) == 0,
              "n_batch %d / calls of %d differ from one call (max %g)", configs[c][0],
              configs[c][1], max_abs_diff(a, b, (size_t)T * V, NULL));
    }
    /* prefill without the head, then one token at a time with LAST */
    glim_error err = {0};
    glim_session *s = NULL;
    glim_session_params sp = {64, 8, 0};
    REQUIRE(glim_session_create(m, &sp, &s, &err) == GLIM_OK, "%s", err.message);
    int P = 25;
    CHECK(glim_eval(s, tok, P, 0, GLIM_LOGITS_NONE, NULL, 0, &err) == GLIM_OK, "%s", err.message);
    for (int t = P; t < T; t++) {
        CHECK(glim_eval(s, tok + t, 1, t, GLIM_LOGITS_LAST, b, (size_t)V, &err) == GLIM_OK, "%s",
              err.message);
        CHECK(memcmp(a + (size_t)t * V, b, sizeof(float) * V) == 0,
              "prefill-then-decode differs at position %d", t);
    }
    CHECK(glim_session_position(s) == T, "position %d", glim_session_position(s));
    glim_session_free(s);
    free(a);
    free(b);
    glim_model_close(m);
}

/* The ring tests' model: window 8, layer 0 sliding, layer 1 full, 64 ids. */
static glim_model *open_ring_model(void) {
    glim_synth_spec spec = glim_synth_tiny();
    spec.n_layers = 2;
    spec.vocab_size = 64;
    const char *dir = make_model("ring", spec);
    return dir ? open_model(dir) : NULL;
}

/* A long sequence wraps the sliding ring many times (n_ctx 200, window 8, ring 8 + n_batch). */
static void ring_wraps_correctly(void) {
    glim_model *m = open_ring_model();
    REQUIRE(m, "cannot make or open the ring model");
    int T = 150, V = glim_model_get_info(m)->vocab_size;
    int32_t *tok = malloc(sizeof(int32_t) * T);
    random_tokens(tok, T, V, 3);
    float *a = malloc(sizeof(float) * T * V), *ref = malloc(sizeof(float) * T * V);
    REQUIRE(eval_all(m, tok, T, 200, 4, 5, a) == 0, "eval");
    REQUIRE(naive_forward(m, tok, T, NULL, ref) == 0, "naive");
    double mr, d = max_abs_diff(a, ref, (size_t)T * V, &mr);
    printf("  150 tokens through a ring of 12: max diff %.3g\n", d);
    CHECK(d <= TOL * (mr > 1 ? mr : 1), "ring: max diff %g", d);
    free(tok);
    free(a);
    free(ref);
    glim_model_close(m);
}

/* One rewind case: a session of n_rewind evaluates `first` (T tokens), refuses to go back
 * back + 1 tokens (the session unchanged), goes back `back`, and evaluating a different ending
 * there gives, bit for bit, a fresh session's logits for the whole new sequence. */
static void rewind_case(glim_model *m, const int32_t *first, int T, int back, int n_rewind) {
    const int V = glim_model_get_info(m)->vocab_size;
    int32_t *second = malloc(sizeof(int32_t) * T);
    float *want = malloc(sizeof(float) * (size_t)T * V), *got = malloc(sizeof(float) * (size_t)back * V);
    REQUIRE(second && want && got, "oom");
    memcpy(second, first, sizeof(int32_t) * T);
    for (int t = T - back; t < T; t++) second[t] = (first[t] + 1 + t) % V;
    REQUIRE(eval_all(m, second, T, 64, 4, T, want) == 0, "eval");
    glim_error err = {0};
    glim_session *s = NULL;
    glim_session_params sp = {64, 4, n_rewind};
    REQUIRE(glim_session_create(m, &sp, &s, &err) == GLIM_OK, "%s", err.message);
    REQUIRE(glim_eval(s, first, T, 0, GLIM_LOGITS_NONE, NULL, 0, &err) == GLIM_OK, "%s", err.message);
    CHECK(glim_session_rewind(s, T - back - 1, &err) == GLIM_E_UNSUPPORTED, "n_rewind %d: %d back allowed",
          n_rewind, back + 1);
    char say[64];
    snprintf(say, sizeof say, "at most %d tokens back", back);
    CHECK(strstr(err.message, say) != NULL, "message: %s", err.message);
    CHECK(glim_session_position(s) == T, "a refused rewind moved the session to %d", glim_session_position(s));
    CHECK(glim_session_rewind(s, T + 1, &err) == GLIM_E_ARG, "a rewind forward was allowed");
    CHECK(glim_session_rewind(s, T - back, &err) == GLIM_OK, "n_rewind %d, %d back: %s", n_rewind, back, err.message);
    CHECK(glim_session_position(s) == T - back, "position %d after the rewind", glim_session_position(s));
    CHECK(glim_eval(s, second + T - back, back, T - back, GLIM_LOGITS_ALL, got, (size_t)back * V, &err) == GLIM_OK,
          "%s", err.message);
    CHECK(memcmp(got, want + (size_t)(T - back) * V, sizeof(float) * (size_t)back * V) == 0,
          "n_rewind %d: logits after a %d-token rewind differ from a fresh session's (max %g)", n_rewind, back,
          max_abs_diff(got, want + (size_t)(T - back) * V, (size_t)back * V, NULL));
    /* at the start nothing has wrapped: any rewind is fine */
    glim_session_reset(s);
    REQUIRE(glim_eval(s, first, 10, 0, GLIM_LOGITS_NONE, NULL, 0, &err) == GLIM_OK, "%s", err.message);
    CHECK(glim_session_rewind(s, 0, &err) == GLIM_OK, "rewind of 10 tokens inside the ring: %s", err.message);
    glim_session_free(s);
    free(second);
    free(want);
    free(got);
}

/* Window 8, n_batch 4: the ring has 12 rows, so from 40 tokens the cache can go back
 * 12 - 8 + 1 = 5 tokens, not 6; with n_rewind 20 (28 rows), 21 and not 22. */
static void rewind_then_continue(void) {
    glim_model *m = open_ring_model();
    REQUIRE(m, "cannot make or open the ring model");
    int32_t first[40];
    random_tokens(first, 40, glim_model_get_info(m)->vocab_size, 5);
    rewind_case(m, first, 40, 5, 0);
    rewind_case(m, first, 40, 21, 20);
    glim_model_close(m);
}

static void remove_tree(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_root);
}

int main(void) {
    if (!mkdtemp(tmp_root)) return 1;
    RUN(forward_matches_naive_hf_bf16);
    RUN(forward_matches_naive_mlx4);
    RUN(forward_matches_naive_mlx8_g64_unquantized_embed);
    RUN(forward_matches_naive_odd_shapes);
    RUN(fixture_tells_faults_apart);
    RUN(chunk_sizes_and_prefill_then_decode_agree);
    RUN(ring_wraps_correctly);
    RUN(rewind_then_continue);
    remove_tree();
    return CHECK_DONE();
}
