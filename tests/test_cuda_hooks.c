/* test_cuda_hooks.c: the research hooks on the CUDA backend (host round trips between kernels,
 * src/cuda/forward_cuda.cu) against the same hooks on the CPU oracle, on the reference fixtures:
 * residual capture, steering (add and ablate), scale 0 bit-identical, and the FFN census.
 * fp32 KV cache on the GPU (GLIM_CUDA_KV32=1) so the only difference from the CPU is the bf16
 * hi+lo input of the matrix units (test_cuda_forward.c's 3e-4 of the logit scale). Skips without
 * a GPU unless GLIM_REQUIRE_CUDA=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "glimmer.h"
#include "glimmer_hooks.h"

static int have_gpu(void) {
    glim_model *m = NULL;
    glim_error err = {0};
    glim_model_params mp = {"cuda", 1};
    glim_status st = glim_model_open("tests/vectors/hf_a", &mp, &m, &err);
    glim_model_close(m);
    return st == GLIM_OK;
}

#define NEED_GPU()                                                                \
    do {                                                                          \
        if (!have_gpu()) {                                                        \
            const char *r = getenv("GLIM_REQUIRE_CUDA");                          \
            if (r && *r == '1') REQUIRE(0, "GLIM_REQUIRE_CUDA=1 but no CUDA device"); \
            SKIP("no CUDA device (or no fixtures)");                              \
        }                                                                         \
    } while (0)

typedef struct run {
    glim_model *m;
    glim_session *s;
    int V, H, L, I;
} run;

static int open_run(run *r, const char *dir, const char *backend) {
    glim_error err = {0};
    glim_model_params mp = {backend, 2};
    memset(r, 0, sizeof *r);
    if (glim_model_open(dir, &mp, &r->m, &err)) {
        fprintf(stderr, "open %s on %s: %s\n", dir, backend, err.message);
        return -1;
    }
    const glim_model_info *in = glim_model_get_info(r->m);
    r->V = in->vocab_size;
    r->H = in->hidden_size;
    r->L = in->n_layers;
    r->I = in->intermediate_size;
    glim_session_params sp = {64, 16, 0};
    if (glim_session_create(r->m, &sp, &r->s, &err)) {
        fprintf(stderr, "session: %s\n", err.message);
        return -1;
    }
    return 0;
}

static void close_run(run *r) {
    glim_session_free(r->s);
    glim_model_close(r->m);
}

/* A prompt, then 4 decoded tokens (the greedy choice of each backend's own logits would diverge;
 * both are fed the same fixed ids). logits of the last call land in out. */
static int drive(run *r, float *all, float *last) {
    glim_error err = {0};
    int32_t tok[24];
    for (int i = 0; i < 24; i++) tok[i] = (i * 37 + 5) % r->V;
    if (glim_eval(r->s, tok, 20, 0, GLIM_LOGITS_ALL, all, (size_t)20 * r->V, &err)) {
        fprintf(stderr, "eval: %s\n", err.message);
        return -1;
    }
    for (int i = 20; i < 24; i++)
        if (glim_eval(r->s, tok + i, 1, i, GLIM_LOGITS_LAST, last, (size_t)r->V, &err)) {
            fprintf(stderr, "eval: %s\n", err.message);
            return -1;
        }
    return 0;
}

static double max_rel(const float *a, const float *b, size_t n) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= d)) d = e;
        if (fabs(b[i]) > m) m = fabs(b[i]);
    }
    return d / (m > 1 ? m : 1);
}

static glim_directions *random_dirs(int L, int H, unsigned seed) {
    glim_directions *d = NULL;
    glim_error err = {0};
    if (glim_directions_create(L, H, &d, &err)) return NULL;
    float *v = malloc(sizeof(float) * H);
    srand(seed);
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < H; i++) v[i] = (float)rand() / RAND_MAX - 0.5f;
        glim_directions_set(d, l, v, &err);
    }
    free(v);
    return d;
}

/* Captures (all positions, all layers) and steering on both backends for one fixture. */
static void hooks_match_cpu(const char *fixture, glim_steer_mode mode, float scale) {
    run r[2]; /* cpu, cuda */
    setenv("GLIM_CUDA_KV32", "1", 1);
    int ok = open_run(&r[0], fixture, "cpu") == 0 && open_run(&r[1], fixture, "cuda") == 0;
    unsetenv("GLIM_CUDA_KV32");
    REQUIRE(ok, "cannot open %s", fixture);
    glim_directions *d = random_dirs(r[0].L, r[0].H, 5);
    REQUIRE(d, "directions");
    float *all[2], *last[2];
    glim_error err = {0};
    for (int b = 0; b < 2; b++) {
        all[b] = malloc(sizeof(float) * 20 * r[b].V);
        last[b] = malloc(sizeof(float) * r[b].V);
        glim_steer_params p = glim_steer_defaults();
        p.mode = mode;
        p.scale = scale;
        p.layer_first = 1;
        CHECK(glim_session_steer_push(r[b].s, d, &p, &err) == GLIM_OK, "steer: %s", err.message);
        glim_capture_params cp = {0};
        cp.select = GLIM_CAPTURE_ALL;
        cp.max_rows = 64;
        CHECK(glim_session_capture_start(r[b].s, &cp, &err) == GLIM_OK, "capture: %s", err.message);
        glim_census_params cc = {0};
        CHECK(glim_session_census_start(r[b].s, &cc, &err) == GLIM_OK, "census: %s", err.message);
        REQUIRE(drive(&r[b], all[b], last[b]) == 0, "drive %s", b ? "cuda" : "cpu");
    }
    glim_capture_view cv[2];
    glim_census_view nv[2];
    for (int b = 0; b < 2; b++) {
        REQUIRE(glim_session_capture_view(r[b].s, &cv[b], &err) == GLIM_OK, "%s", err.message);
        REQUIRE(glim_session_census_view(r[b].s, &nv[b], &err) == GLIM_OK, "%s", err.message);
    }
    CHECK(cv[0].rows == 24 && cv[1].rows == 24, "captured rows cpu %d cuda %d", cv[0].rows, cv[1].rows);
    double dres = max_rel(cv[1].residual, cv[0].residual, (size_t)cv[0].rows * cv[0].n_layers * cv[0].hidden);
    double dall = max_rel(all[1], all[0], (size_t)20 * r[0].V), dlast = max_rel(last[1], last[0], r[0].V);
    double dmass;
    {   /* census mass per neuron (double arrays) */
        double d2 = 0, m2 = 0;
        size_t n = (size_t)nv[0].n_layers * nv[0].inter;
        for (size_t i = 0; i < n; i++) {
            double e = fabs(nv[1].mass[i] - nv[0].mass[i]);
            if (!(e <= d2)) d2 = e;
            if (fabs(nv[0].mass[i]) > m2) m2 = fabs(nv[0].mass[i]);
        }
        dmass = d2 / (m2 > 0 ? m2 : 1);
    }
    printf("  %s %s x%.2f: residual %.3g, logits %.3g / %.3g, census mass %.3g (relative to max); "
           "census decode tokens cpu %llu cuda %llu\n", fixture,
           mode == GLIM_STEER_ADD ? "add" : "ablate", scale, dres, dall, dlast, dmass,
           (unsigned long long)nv[0].decode_tokens, (unsigned long long)nv[1].decode_tokens);
    CHECK(dres <= 3e-4, "residual capture differs by %g", dres);
    CHECK(dall <= 3e-4 && dlast <= 3e-4, "steered logits differ by %g / %g", dall, dlast);
    CHECK(dmass <= 3e-4, "census mass differs by %g", dmass);
    CHECK(nv[0].decode_tokens == nv[1].decode_tokens && nv[0].prefill_tokens == nv[1].prefill_tokens,
          "census bookkeeping differs");
    for (int b = 0; b < 2; b++) {
        free(all[b]);
        free(last[b]);
        close_run(&r[b]);
    }
    glim_directions_free(d);
}

static void cuda_hooks_hf_add(void) {
    NEED_GPU();
    hooks_match_cpu("tests/vectors/hf_a", GLIM_STEER_ADD, 2.0f);
}

static void cuda_hooks_mlx4_ablate(void) {
    NEED_GPU();
    hooks_match_cpu("tests/vectors/mlx4_a", GLIM_STEER_ABLATE, 1.0f);
}

/* Scale 0 steering plus capture leave the CUDA logits bit-identical to a session without hooks
 * (the hooked path splits one kernel in two, with the same arithmetic). */
static void cuda_scale0_bit_identical(void) {
    NEED_GPU();
    run plain, hooked;
    REQUIRE(open_run(&plain, "tests/vectors/mlx8_b", "cuda") == 0, "open");
    REQUIRE(open_run(&hooked, "tests/vectors/mlx8_b", "cuda") == 0, "open");
    glim_directions *d = random_dirs(plain.L, plain.H, 9);
    glim_error err = {0};
    glim_steer_params p = glim_steer_defaults();
    p.scale = 0.0f;
    CHECK(glim_session_steer_push(hooked.s, d, &p, &err) == GLIM_OK, "%s", err.message);
    glim_capture_params cp = {0};
    cp.select = GLIM_CAPTURE_ALL;
    cp.max_rows = 64;
    CHECK(glim_session_capture_start(hooked.s, &cp, &err) == GLIM_OK, "%s", err.message);
    float *a0 = malloc(sizeof(float) * 20 * plain.V), *a1 = malloc(sizeof(float) * 20 * plain.V);
    float *l0 = malloc(sizeof(float) * plain.V), *l1 = malloc(sizeof(float) * plain.V);
    REQUIRE(drive(&plain, a0, l0) == 0 && drive(&hooked, a1, l1) == 0, "drive");
    CHECK(memcmp(a0, a1, sizeof(float) * 20 * plain.V) == 0, "prefill logits differ (max %g)",
          max_rel(a1, a0, (size_t)20 * plain.V));
    /* decode: the plain session replays a graph, the hooked one launches kernels */
    CHECK(memcmp(l0, l1, sizeof(float) * plain.V) == 0, "decode logits differ (max %g)",
          max_rel(l1, l0, plain.V));
    free(a0); free(a1); free(l0); free(l1);
    glim_directions_free(d);
    close_run(&plain);
    close_run(&hooked);
}

int main(void) {
    RUN(cuda_hooks_hf_add);
    RUN(cuda_hooks_mlx4_ablate);
    RUN(cuda_scale0_bit_identical);
    return CHECK_DONE();
}
