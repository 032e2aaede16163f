/* test_cuda_forward.c: the CUDA forward through the public API against (1) the reference logits
 * of every fixture in tests/vectors (transformers, fp32) and (2) the CPU oracle on random models,
 * with greedy generation on the GPU equal to greedy generation on the CPU. Skips without a GPU
 * unless GLIM_REQUIRE_CUDA=1.
 *
 * Tolerances, and why:
 *  - fp32 KV cache (GLIM_CUDA_KV32=1): the GPU differs from fp32 math only in that x enters the
 *    tensor cores as bf16 hi + lo (16 bits of mantissa), the MLX affine is applied per group after
 *    the mma (scale * sum((q-8)x) + (bias + 8 scale) * sum(x)) and sums run in another order:
 *    max |gpu - ref| <= 3e-4 * max(1, max |ref|) (the CPU's rule is 1e-4; measured 4e-5 on the
 *    bf16 fixtures, up to 2.2e-4 on the 4-bit ones before the centring on 8).
 *    Greedy generation must equal the CPU's (a divergence is accepted only at a near-tie).
 *  - bf16 KV cache (the default): keys and values are rounded to bf16 (relative 2^-9) before the
 *    attention reads them, a real change of the function that the fixtures' tiny head_dim and
 *    large q scale amplify (measured 1.6-2.8% of max |ref|): we allow 5e-2 * max(1, max |ref|)
 *    and ask the top-1 of at least 80% of the rows to agree with the reference.
 * The errors measured are printed ("info:"). The bugs the fixtures are built to expose (norm
 * conventions, eps swap on eps_swap, RoPE on NoPE layers, window +-1, head order, missing
 * softcap, ...) move the logits by 0.3 to 26, outside both. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "glimmer.h"
#include "safetensors.h"
#include "synth.h"

#include "gpu_skip.h"

#ifdef GLIM_HAVE_CUDA
#include "cuda/cuda_api.h"
#endif

#ifdef GLIM_HAVE_CUDA

static float max_abs(const float *x, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fabsf(x[i]) > m || x[i] != x[i] ? (x[i] != x[i] ? INFINITY : fabsf(x[i])) : m;
    return m;
}
static float max_diff(const float *a, const float *b, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= m)) m = d == d ? d : INFINITY;
    }
    return m;
}
static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* kv32: fp32 KV cache; generic: decode through the stage kernels and the generic matvec
 * (GLIM_CUDA_FAST=0) with the gate/up matvec staging the down input (GLIM_CUDA_FUSE=1) instead
 * of the default decode_mv.cu path. */
static glim_model *open_model_opts(const char *dir, const char *backend, int kv32, int generic,
                                   glim_status *st, glim_error *err) {
    if (kv32) setenv("GLIM_CUDA_KV32", "1", 1);
    else unsetenv("GLIM_CUDA_KV32");
    if (generic) {
        setenv("GLIM_CUDA_FUSE", "1", 1);
        setenv("GLIM_CUDA_FAST", "0", 1);
    }
    glim_model_params mp = {backend, 2};
    glim_model *m = NULL;
    *st = glim_model_open(dir, &mp, &m, err);
    unsetenv("GLIM_CUDA_KV32");
    unsetenv("GLIM_CUDA_FUSE");
    unsetenv("GLIM_CUDA_FAST");
    return m;
}
static glim_model *open_model(const char *dir, const char *backend, int kv32, glim_status *st,
                              glim_error *err) {
    return open_model_opts(dir, backend, kv32, 0, st, err);
}

/* Logits [T][V] of tokens evaluated `step` at a time (mode ALL), or NULL. */
static float *eval_steps(glim_model *m, const int32_t *tok, int T, int step, int n_batch) {
    const glim_model_info *info = glim_model_get_info(m);
    int V = info->vocab_size;
    glim_session_params sp = {T + 16, n_batch, 0};
    glim_session *s = NULL;
    glim_error err = {0};
    float *out = calloc((size_t)T * V, sizeof(float));
    if (glim_session_create(m, &sp, &s, &err) != GLIM_OK) {
        CHECK(0, "session: %s", err.message);
        free(out);
        return NULL;
    }
    for (int t = 0; t < T; t += step) {
        int n = T - t < step ? T - t : step;
        glim_status st = glim_eval(s, tok + t, n, t, GLIM_LOGITS_ALL, out + (size_t)t * V, (size_t)n * V, &err);
        if (st != GLIM_OK) {
            CHECK(0, "eval at %d: %s", t, err.message);
            free(out);
            out = NULL;
            break;
        }
    }
    glim_session_free(s);
    return out;
}

/* ---- fixtures ----------------------------------------------------------------------------- */

static char g_root[512], g_fixture[128];

static float *read_f32(const glim_st_set *set, const char *name, int64_t *rows, int64_t *cols) {
    const glim_tensor *t = glim_st_find(set, name);
    if (!t || t->dtype != GLIM_DT_F32 || t->ndim != 2) return NULL;
    *rows = t->shape[0];
    *cols = t->shape[1];
    float *v = malloc(sizeof(float) * (size_t)(*rows * *cols));
    memcpy(v, t->data, sizeof(float) * (size_t)(*rows * *cols));
    return v;
}
static int32_t *read_ids(const glim_st_set *set, const char *name, int64_t *n) {
    const glim_tensor *t = glim_st_find(set, name);
    if (!t || t->ndim != 1 || (t->dtype != GLIM_DT_I64 && t->dtype != GLIM_DT_I32)) return NULL;
    *n = t->shape[0];
    int32_t *v = malloc(sizeof(int32_t) * (size_t)(*n + 1));
    for (int64_t i = 0; i < *n; i++) {
        if (t->dtype == GLIM_DT_I64) {
            int64_t x;
            memcpy(&x, (const char *)t->data + 8 * i, 8);
            v[i] = (int32_t)x;
        } else {
            memcpy(&v[i], (const char *)t->data + 4 * i, 4);
        }
    }
    return v;
}

static void fixture_with(int kv32) {
    char dir[700], path[800];
    snprintf(dir, sizeof dir, "%s/%s", g_root, g_fixture);
    snprintf(path, sizeof path, "%s/reference.safetensors", dir);
    glim_error err = {0};
    glim_st_set *set = NULL;
    REQUIRE(glim_st_open_file(path, &set, &err) == GLIM_OK, "%s: %s", g_fixture, err.message);
    int64_t T = 0, V = 0, n = 0, ng = 0, gr = 0, gc = 0;
    int32_t *tok = read_ids(set, "tokens", &n), *greedy = read_ids(set, "greedy", &ng);
    float *ref = read_f32(set, "logits", &T, &V), *gref = read_f32(set, "greedy_logits", &gr, &gc);
    glim_st_close(set);
    if (!tok || !ref || n != T) {
        free(tok), free(greedy), free(ref), free(gref);
        REQUIRE(0, "%s: reference without tokens/logits", g_fixture);
    }
    glim_status st;
    glim_model *m = open_model(dir, "cuda", kv32, &st, &err);
    if (st == GLIM_E_UNSUPPORTED) {
        free(tok), free(greedy), free(ref), free(gref);
        SKIP("%s: %.100s", g_fixture, err.message);
    }
    if (!m) {
        free(tok), free(greedy), free(ref), free(gref);
        REQUIRE(0, "%s: open on cuda: %s", g_fixture, err.message);
    }
    float refmax = max_abs(ref, (size_t)(T * V));
    float tol = (kv32 ? 3e-4f : 5e-2f) * (refmax > 1 ? refmax : 1);
    const char *mode = kv32 ? "fp32 KV" : "bf16 KV";
    /* all tokens in one call; one at a time (the decode graph); chunks of 7 */
    int steps[3] = {(int)T, 1, 7};
    for (int k = 0; k < 3; k++) {
        float *out = eval_steps(m, tok, (int)T, steps[k], 64);
        if (!out) continue;
        float d = max_diff(out, ref, (size_t)(T * V));
        printf("  info: %s %s step %d: max |gpu - ref| %.3g = %.2g of max |ref| %.3g (tol %.3g)\n",
               g_fixture, mode, steps[k], d, d / refmax, refmax, tol);
        CHECK(d <= tol, "%s %s step %d: max |gpu - ref| %g > %g", g_fixture, mode, steps[k], d, tol);
        int agree = 0;
        for (int t = 0; t < T; t++) {
            const float *o = out + (size_t)t * V, *r = ref + (size_t)t * V;
            int a = argmax(o, (int)V), b = argmax(r, (int)V);
            agree += a == b || r[a] >= r[b] - (kv32 ? tol : 0);
            if (kv32)
                CHECK(a == b || r[a] >= r[b] - tol, "%s %s step %d row %d: top-1 %d vs reference %d",
                      g_fixture, mode, steps[k], t, a, b);
        }
        if (!kv32) {
            printf("  info: %s %s step %d: top-1 agrees on %d of %d rows\n", g_fixture, mode, steps[k],
                   agree, (int)T);
            CHECK(agree * 5 >= 4 * T, "%s %s step %d: top-1 agrees on only %d of %d rows", g_fixture,
                  mode, steps[k], agree, (int)T);
        }
        free(out);
    }
    /* teacher-forced greedy continuation (fp32 KV): our pick at each step against HF's */
    if (kv32 && greedy && gref && gr == ng && gc == V) {
        int total = (int)(T + ng);
        int32_t *all = malloc(sizeof(int32_t) * total);
        memcpy(all, tok, sizeof(int32_t) * T);
        memcpy(all + T, greedy, sizeof(int32_t) * ng);
        float *out = eval_steps(m, all, total, 1, 64);
        for (int i = 0; out && i < ng; i++) {
            const float *o = out + (size_t)(T - 1 + i) * V;
            const float *r = i == 0 ? ref + (size_t)(T - 1) * V : gref + (size_t)(i - 1) * V;
            int a = argmax(o, (int)V);
            CHECK(a == greedy[i] || r[a] >= r[greedy[i]] - tol, "%s %s greedy step %d: %d, HF %d",
                  g_fixture, mode, i, a, greedy[i]);
        }
        free(out);
        free(all);
    }
    glim_model_close(m);
    free(tok), free(greedy), free(ref), free(gref);
}

static void fixture_kv32(void) {
    NEED_GPU();
    fixture_with(1);
}
static void fixture_kv_bf16(void) {
    NEED_GPU();
    fixture_with(0);
}

/* ---- random models: GPU against the CPU oracle, greedy equality --------------------------- */

static char tmp_root[] = "/tmp/glimmer-test-cuda-XXXXXX";

/* Greedy tokens of a backend, its own choices fed back; logits of each step in lg [N][V]. */
static int greedy_run(glim_model *m, const int32_t *prompt, int P, int N, int32_t *seq, float *lg) {
    int V = glim_model_get_info(m)->vocab_size;
    glim_session_params sp = {P + N + 4, 16, 0};
    glim_session *s = NULL;
    glim_error err = {0};
    if (glim_session_create(m, &sp, &s, &err) != GLIM_OK) {
        CHECK(0, "session: %s", err.message);
        return 0;
    }
    glim_status e = glim_eval(s, prompt, P, 0, GLIM_LOGITS_LAST, lg, V, &err);
    int i = 0;
    for (; e == GLIM_OK && i < N; i++) {
        seq[i] = argmax(lg + (size_t)i * V, V);
        if (i + 1 < N) e = glim_eval(s, &seq[i], 1, P + i, GLIM_LOGITS_LAST, lg + (size_t)(i + 1) * V, V, &err);
    }
    CHECK(e == GLIM_OK, "greedy: %s", err.message);
    glim_session_free(s);
    return e == GLIM_OK;
}

static void random_vs_cpu(const char *name, glim_synth_spec spec) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", tmp_root, name);
    glim_error err = {0};
    REQUIRE(glim_synth_write(dir, &spec, &err) == GLIM_OK, "synth %s: %s", name, err.message);
    glim_status st;
    /* cpu; cuda fp32 KV; cuda bf16 KV; cuda fp32 KV through the generic decode path */
    glim_model *m[4] = {NULL, NULL, NULL, NULL};
    const char *label[4] = {"cpu", "fp32 KV", "bf16 KV", "fp32 KV generic path"};
    m[0] = open_model(dir, "cpu", 0, &st, &err);
    if (m[0]) m[1] = open_model(dir, "cuda", 1, &st, &err);
    if (m[1]) m[2] = open_model(dir, "cuda", 0, &st, &err);
    if (m[2]) m[3] = open_model_opts(dir, "cuda", 1, 1, &st, &err);
    if (!m[3]) {
        for (int k = 0; k < 4; k++) glim_model_close(m[k]);
        REQUIRE(0, "%s: %s", name, err.message);
    }
    int V = spec.vocab_size, P = 3 * spec.sliding_window + 5, N = 24;
    int32_t *tok = malloc(sizeof(int32_t) * P);
    srand(17);
    tok[0] = 1;
    for (int i = 1; i < P; i++) tok[i] = rand() % V;
    float *a = eval_steps(m[0], tok, P, P, 64);
    for (int k = 1; k < 3 && a; k++) {
        float *b = eval_steps(m[k], tok, P, P, 64);
        if (!b) continue;
        float mx = max_abs(a, (size_t)P * V), d = max_diff(a, b, (size_t)P * V);
        float tol = (k == 1 ? 3e-4f : 5e-2f) * (mx > 1 ? mx : 1);
        printf("  info: %s %s KV, prompt of %d: max |gpu - cpu| %.3g = %.2g of max |cpu| %.3g\n", name,
               k == 1 ? "fp32" : "bf16", P, d, d / mx, mx);
        CHECK(d <= tol, "%s %s KV: prompt logits differ by %g > %g", name, k == 1 ? "fp32" : "bf16", d, tol);
        free(b);
    }
    free(a);
    int32_t seq[4][32];
    float *lg[4];
    for (int k = 0; k < 4; k++) {
        lg[k] = malloc(sizeof(float) * (size_t)N * V);
        if (!greedy_run(m[k], tok, P, N, seq[k], lg[k])) seq[k][0] = -1;
    }
    for (int k = 1; k < 4; k++) {
        int same = 0;
        while (same < N && seq[0][same] == seq[k][same]) same++;
        printf("  info: %s %s greedy: %d of %d tokens equal to the CPU's\n", name, label[k], same, N);
        if (k == 2) continue; /* bf16 KV: a different function, reported only */
        /* decode logits up to the first divergence, fp32-KV tolerance */
        int upto = same < N ? same + 1 : N;
        float mx = max_abs(lg[0], (size_t)upto * V), d = max_diff(lg[0], lg[k], (size_t)upto * V);
        printf("  info: %s %s decode logits: max |gpu - cpu| %.3g = %.2g of max |cpu|\n", name,
               label[k], d, d / mx);
        CHECK(d <= 3e-4f * (mx > 1 ? mx : 1), "%s %s: decode logits differ by %g (max %g)", name,
              label[k], d, mx);
        if (same < N) {
            /* only a near-tie in the CPU's own logits excuses a different pick */
            const float *c = lg[0] + (size_t)same * V;
            float tol = 3e-4f * (max_abs(c, V) > 1 ? max_abs(c, V) : 1);
            CHECK(c[seq[k][same]] >= c[seq[0][same]] - tol,
                  "%s: greedy GPU (%s) diverges from CPU at step %d: %d vs %d (CPU logits %g vs %g)",
                  name, label[k], same, seq[k][same], seq[0][same], c[seq[k][same]], c[seq[0][same]]);
        }
    }
    for (int k = 0; k < 4; k++) {
        free(lg[k]);
        glim_model_close(m[k]);
    }
    free(tok);
}

static void random_hf_bf16(void) {
    NEED_GPU();
    random_vs_cpu("hf", glim_synth_tiny());
}
static void random_mlx4(void) {
    NEED_GPU();
    glim_synth_spec s = glim_synth_tiny();
    s.bits = 4;
    s.group_size = 32;
    s.seed = 99;
    random_vs_cpu("mlx4", s);
}
static void random_mlx8_wide(void) {
    NEED_GPU();
    glim_synth_spec s = glim_synth_tiny();
    s.bits = 8;
    s.group_size = 64;
    s.hidden_size = 256;
    s.intermediate_size = 384;
    s.n_heads = 16;
    s.n_kv_heads = 1;
    s.head_dim = 64;
    s.sliding_window = 16;
    s.seed = 7;
    random_vs_cpu("mlx8", s);
}

/* Environment variables changed for a while and put back as they were: the forward tests run
 * under gpu_check.sh's settings, which a test's own must not leak past it. */
#define ENV_SAVED_MAX 16
typedef struct env_saved {
    const char *const *names;
    int n;
    char val[ENV_SAVED_MAX][32];
    int had[ENV_SAVED_MAX];
} env_saved;
static void env_save(env_saved *e, const char *const *names, int n) {
    /* (10 until session 41, when span_ahead_bits already passed 12: its last two were never set) */
    REQUIRE(n <= ENV_SAVED_MAX, "env_save: %d variables, at most %d", n, ENV_SAVED_MAX);
    e->names = names;
    e->n = n;
    for (int v = 0; v < e->n; v++) {
        const char *x = getenv(names[v]);
        e->had[v] = x != NULL;
        snprintf(e->val[v], sizeof e->val[v], "%s", x ? x : "");
    }
}
static void env_set(const env_saved *e, const char *const *values) {
    for (int v = 0; v < e->n; v++) setenv(e->names[v], values[v], 1);
}
static void env_restore(const env_saved *e) {
    for (int v = 0; v < e->n; v++) {
        if (e->had[v]) setenv(e->names[v], e->val[v], 1);
        else unsetenv(e->names[v]);
    }
}

/* Decodes with a switch off and on (names[0]: its environment variable; want_off / want_on:
 * the values of names[0..nv) for each run, set whatever the run was started with, gpu_check.sh
 * running the forward tests under several, and put back) and checks that every decoded token's
 * logits are equal bit for bit (rel 0) or within rel x the largest |logit| of the decode (a
 * switch that computes the same function with other roundings), and, through count (launches of
 * the switched path this process has enqueued), that the switched path ran at least min_count
 * times and not with it off. */
static void switch_close_of(const char *name, glim_synth_spec spec, int P, int nv, const char *const *names,
                            const char *const *want_off, const char *const *want_on, long (*count)(void),
                            long min_count, double rel) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", tmp_root, name);
    glim_error err = {0};
    REQUIRE(glim_synth_write(dir, &spec, &err) == GLIM_OK, "synth %s: %s", name, err.message);
    glim_status st;
    glim_model *m[2] = {NULL, NULL};
    env_saved env;
    env_save(&env, names, nv);
    for (int k = 0; k < 2; k++) {
        env_set(&env, k ? want_on : want_off);
        m[k] = open_model(dir, "cuda", 0, &st, &err);
        env_restore(&env);
        if (!m[k]) {
            glim_model_close(m[0]);
            REQUIRE(0, "%s: %s", name, err.message);
        }
    }
    const int V = spec.vocab_size, N = 12;
    int32_t *tok = malloc(sizeof(int32_t) * P), seq[2][12];
    float *lg[2] = {malloc(sizeof(float) * (size_t)N * V), malloc(sizeof(float) * (size_t)N * V)};
    srand(23);
    tok[0] = 1;
    for (int i = 1; i < P; i++) tok[i] = rand() % V;
    long before = count();
    int ok0 = greedy_run(m[0], tok, P, N, seq[0], lg[0]);
    CHECK(count() == before, "%s: the switched path ran with %s=%s", name, names[0], want_off[0]);
    before = count();
    int ok1 = greedy_run(m[1], tok, P, N, seq[1], lg[1]);
    const long ran = count() - before;
    printf("  info: %s: %ld launches on the switched path (%s=%s) for %d decoded tokens of %d layers\n", name,
           ran, names[0], want_on[0], N - 1, spec.n_layers);
    CHECK(ran >= min_count, "%s: %s=%s launched %ld times on its path, at least %ld expected", name, names[0],
          want_on[0], ran, min_count);
    if (ok0 && ok1) {
        /* the prompt's logits (row 0) come from the prefill path, the rest from decode */
        size_t diff = 0, first = 0;
        double big = 0.0, worst = 0.0;
        for (size_t i = (size_t)V; i < (size_t)N * V; i++) big = fmax(big, fabs((double)lg[0][i]));
        for (size_t i = (size_t)V; i < (size_t)N * V; i++) {
            const double d = fabs((double)lg[0][i] - (double)lg[1][i]);
            worst = fmax(worst, d);
            const int bad = rel > 0.0 ? !(d <= rel * big) : memcmp(&lg[0][i], &lg[1][i], sizeof(float)) != 0;
            if (bad && diff++ == 0) first = i;
        }
        if (rel > 0.0)
            printf("  info: %s: max |on - off| %.3g over the decoded logits, %.3g of the largest |logit| "
                   "(tolerance %.3g)\n", name, worst, big > 0.0 ? worst / big : 0.0, rel);
        CHECK(diff == 0, "%s: decode with %s=%s differs in %zu logits (first: token %zu, id %zu: %.9g vs %.9g)",
              name, names[0], want_on[0], diff, first / V, first % V, diff ? lg[0][first] : 0.0,
              diff ? lg[1][first] : 0.0);
        CHECK(memcmp(seq[0], seq[1], sizeof seq[0]) == 0, "%s: greedy tokens differ with %s=%s", name, names[0],
              want_on[0]);
    }
    free(lg[0]);
    free(lg[1]);
    free(tok);
    glim_model_close(m[0]);
    glim_model_close(m[1]);
}
static void switch_bits_of(const char *name, glim_synth_spec spec, int P, int nv, const char *const *names,
                           const char *const *want_off, const char *const *want_on, long (*count)(void),
                           long min_count) {
    switch_close_of(name, spec, P, nv, names, want_off, want_on, count, min_count, 0.0);
}

/* The chained decode (GLIM_CUDA_CHAIN=1: a layer's o_proj, gate/up, down and next qkvg or head
 * in one launch, the weights' ring running on across them) computes each product as its own
 * kernel does with whole row blocks per block, so every decoded token's logits must be equal to
 * the separate kernels' bit for bit when those own their row blocks per block too
 * (GLIM_CUDA_CLUSTER_ROWS=0: by default down's are owned by clusters of 2, a different split of
 * its sums) on k_dmv_tma (GLIM_CUDA_SPAN=0: the default span kernel sums in another order); and
 * the chain must really have run (its launch count). The chain needs the integer path on the
 * shared-memory ring with whole row blocks, so the test sets those too. */
static void chain_bits_of(const char *name, glim_synth_spec spec) {
    static const char *const names[] = {"GLIM_CUDA_CHAIN", "GLIM_CUDA_CLUSTER_ROWS", "GLIM_CUDA_TMA", "GLIM_CUDA_I8",
                                        "GLIM_CUDA_BLOCK_ROWS", "GLIM_CUDA_DYN", "GLIM_CUDA_FAST", "GLIM_CUDA_SPAN"};
    static const char *const off[] = {"0", "0", "1", "1", "31", "0", "1", "0"};
    static const char *const on[] = {"1", "0", "1", "1", "31", "0", "1", "0"};
    switch_bits_of(name, spec, 2 * spec.sliding_window + 3, 8, names, off, on, gcu_dmv_chain_count, spec.n_layers);
}

/* The flag release (GLIM_CUDA_FLAG_WAIT=1: qkvg -> attention -> o_proj -> gate/up -> down ->
 * next qkvg or the head released by counters in global memory instead of the PDL wait) changes
 * only when a kernel may go on, never what it computes: every decoded token's logits equal the
 * PDL wait's bit for bit, and the matvecs' flag waits really ran (their launch count: 3 or 4
 * per layer and token, so at least n_layers). The flags need every matvec on the
 * shared-memory ring, so the test pins GLIM_CUDA_DYN=0 too (gpu_check.sh runs this file under
 * GLIM_CUDA_DYN=1, whose decode is not on the ring). */
static void flag_bits_of(const char *name, glim_synth_spec spec) {
    static const char *const names[] = {"GLIM_CUDA_FLAG_WAIT", "GLIM_CUDA_TMA", "GLIM_CUDA_I8", "GLIM_CUDA_FAST",
                                        "GLIM_CUDA_CHAIN", "GLIM_CUDA_PDL", "GLIM_CUDA_DYN"};
    static const char *const off[] = {"0", "1", "1", "1", "0", "1", "0"};
    static const char *const on[] = {"1", "1", "1", "1", "0", "1", "0"};
    switch_bits_of(name, spec, 2 * spec.sliding_window + 3, 7, names, off, on, gcu_dmv_flag_count, spec.n_layers);
}

/* The lean kernels (GLIM_CUDA_UNIT_AHEAD=1: each decode matvec's loop loads the next unit's
 * registers while this one computes; =2: the same lean kernel, block-owned row blocks only,
 * without that) change only when a unit's bytes reach the registers and which paths are compiled
 * in, never the arithmetic or its order: every decoded token's logits equal the general kernel's
 * (=0) bit for bit, and the lean kernel really ran (its launch count: every matvec of a layer,
 * so at least n_layers). They serve the integer path on k_dmv_tma with block rows, which the
 * test pins (GLIM_CUDA_SPAN=0: the span kernel would take the calls). */
static void lean_bits_of(const char *name, glim_synth_spec spec, const char *value) {
    static const char *const names[] = {"GLIM_CUDA_UNIT_AHEAD", "GLIM_CUDA_TMA", "GLIM_CUDA_I8", "GLIM_CUDA_FAST",
                                        "GLIM_CUDA_DYN", "GLIM_CUDA_BLOCK_ROWS", "GLIM_CUDA_CHAIN", "GLIM_CUDA_SPAN"};
    static const char *const off[] = {"0", "1", "1", "1", "0", "31", "0", "0"};
    const char *on[] = {value, "1", "1", "1", "0", "31", "0", "0"};
    switch_bits_of(name, spec, 2 * spec.sliding_window + 3, 8, names, off, on, gcu_dmv_ahead_count, spec.n_layers);
}

/* Decode attention's extra passes must leave every output as it was: GLIM_CUDA_DIAG_ATT_TWICE=1
 * (a timing diagnostic: the tiles a second time from scratch) and GLIM_CUDA_ATT_WARM=1 (q and the
 * first tile rehearsed before the wait on the row as it stands, writing only shared memory).
 * Every decoded token's logits must equal the single pass's bit for bit, on the tensor-core
 * tiles and on the fp32 ones (mma), and the pass must really have run (count: one attention
 * launch per layer and token). A rehearsal that wrote the cache, or left a stale q, maximum or
 * tile row behind, would show in the logits. GLIM_CUDA_ATT_LEAN=1 (the kernel instance with
 * neither pass compiled in) must equal the default instance bit for bit likewise, and run (its
 * count). P: the prompt's length (the keys a split sees). */
static void att_pass_bits_of(const char *name, glim_synth_spec spec, int P, const char *env, const char *mma,
                             long (*count)(void)) {
    const char *const names[] = {env, "GLIM_CUDA_ATT_MMA", "GLIM_CUDA_FAST"};
    const char *off[] = {"0", mma, "1"};
    const char *on[] = {"1", mma, "1"};
    switch_bits_of(name, spec, P, 3, names, off, on, count, spec.n_layers);
}

/* The two MLX 4-bit models the switch tests decode: tiny (groups of 32, 4 parts per span, rows
 * fewer than the SMs, so grids cut to the row blocks) and wide (groups of 64, more row blocks
 * than SMs for gate/up and the head, a 1408-wide down). */
static glim_synth_spec switch_spec(int wide, uint64_t seed) {
    glim_synth_spec s = glim_synth_tiny();
    s.bits = 4;
    s.seed = seed;
    if (wide) {
        s.group_size = 64;
        s.hidden_size = 512;
        s.intermediate_size = 1408;
        s.n_layers = 3;
        s.n_heads = 8;
        s.n_kv_heads = 2;
        s.head_dim = 64;
        s.vocab_size = 4160;
        s.sliding_window = 16;
    }
    return s;
}

/* GLIM_CUDA_SPAN_EVEN=15 (the span kernel on the fewest blocks with the same largest share of
 * row blocks) moves row blocks between blocks, never a row block's sum: each is still one block's
 * spans added in the same order, so every decoded token's logits equal the default grid's bit for
 * bit, and the smaller grid really ran (its launch count: the wide model's gate/up has 176 row
 * blocks, 2 a block on 88 blocks instead of 1 or 2 on 132, so at least one launch per layer where
 * the GPU has more than 88 SMs; on a smaller GPU the count may be 0 and the test says so). Then
 * GLIM_CUDA_SPAN_BLOCKS_GU=40 against no cap, likewise. */
static void span_even_bits(void) {
    NEED_GPU();
    static const char *const names[] = {"GLIM_CUDA_SPAN_EVEN", "GLIM_CUDA_SPAN", "GLIM_CUDA_TMA", "GLIM_CUDA_I8",
                                        "GLIM_CUDA_FAST", "GLIM_CUDA_CHAIN", "GLIM_CUDA_DYN"};
    static const char *const off[] = {"0", "15", "1", "1", "1", "0", "0"};
    static const char *const on[] = {"15", "15", "1", "1", "1", "0", "0"};
    const glim_synth_spec wide = switch_spec(1, 29);
    const int sms = gcu_sm_count();
    if (sms <= 88) {
        SKIP("span_even_bits: %d SMs, the wide model's gate/up (176 row blocks) is already even", sms);
        return;
    }
    switch_bits_of("span_even", wide, 2 * wide.sliding_window + 3, 7, names, off, on, gcu_dmv_even_count,
                   wide.n_layers);
    /* GLIM_CUDA_SPAN_BLOCKS_GU=40 (gate/up's 176 row blocks on at most 40 blocks, with
     * SPAN_EVEN 36 of 5): the same bits again, with that product on the smaller grid */
    static const char *const bnames[] = {"GLIM_CUDA_SPAN_BLOCKS_GU", "GLIM_CUDA_SPAN_EVEN", "GLIM_CUDA_SPAN",
                                         "GLIM_CUDA_TMA", "GLIM_CUDA_I8", "GLIM_CUDA_FAST", "GLIM_CUDA_CHAIN",
                                         "GLIM_CUDA_DYN"};
    static const char *const boff[] = {"0", "0", "15", "1", "1", "1", "0", "0"};
    static const char *const bon[] = {"40", "0", "15", "1", "1", "1", "0", "0"};
    switch_bits_of("span_blocks_gu", wide, 2 * wide.sliding_window + 3, 8, bnames, boff, bon, gcu_dmv_even_count,
                   wide.n_layers);
}

/* GLIM_CUDA_SPAN_TWO=15 (two row blocks per ring slot of the span kernel, one wait and one
 * refill per two) adds each row block's units in the order of one row block a slot, and
 * GLIM_CUDA_SPAN_LATE=15 (one slot requested before the PDL wait, the rest after the prologue)
 * only moves when bytes are requested: both must give the same logits bit for bit as neither, on
 * the wide model with the sums in shared memory (the only place either applies), and must have
 * run (their launch counts: every product fits two slots of two row blocks at these shapes, so
 * at least one launch per layer). */
static void span_chunk_bits(void) {
    NEED_GPU();
    static const char *const names[] = {"GLIM_CUDA_SPAN_TWO", "GLIM_CUDA_SPAN_LATE", "GLIM_CUDA_SPAN",
                                        "GLIM_CUDA_SPAN_ACC", "GLIM_CUDA_TMA", "GLIM_CUDA_I8", "GLIM_CUDA_FAST",
                                        "GLIM_CUDA_CHAIN", "GLIM_CUDA_DYN"};
    static const char *const off[] = {"0", "0", "15", "1", "1", "1", "1", "0", "0"};
    static const char *const two[] = {"15", "0", "15", "1", "1", "1", "1", "0", "0"};
    const glim_synth_spec wide = switch_spec(1, 43);
    switch_bits_of("span_two", wide, 2 * wide.sliding_window + 3, 9, names, off, two, gcu_dmv_two_count,
                   wide.n_layers);
    static const char *const lnames[] = {"GLIM_CUDA_SPAN_LATE", "GLIM_CUDA_SPAN_TWO", "GLIM_CUDA_SPAN",
                                         "GLIM_CUDA_SPAN_ACC", "GLIM_CUDA_TMA", "GLIM_CUDA_I8", "GLIM_CUDA_FAST",
                                         "GLIM_CUDA_CHAIN", "GLIM_CUDA_DYN"};
    static const char *const late[] = {"15", "0", "15", "1", "1", "1", "1", "0", "0"};
    switch_bits_of("span_late", wide, 2 * wide.sliding_window + 3, 9, lnames, off, late, gcu_dmv_late_count,
                   wide.n_layers);
    /* both at once on the general instance (GLIM_CUDA_SPAN_SPEC=0: the two-row LATE kernel with
     * everything compiled in, which the diagnostics and the profiling run) */
    static const char *const bnames[] = {"GLIM_CUDA_SPAN_TWO", "GLIM_CUDA_SPAN_LATE", "GLIM_CUDA_SPAN_SPEC",
                                         "GLIM_CUDA_SPAN", "GLIM_CUDA_SPAN_ACC", "GLIM_CUDA_TMA", "GLIM_CUDA_I8",
                                         "GLIM_CUDA_FAST", "GLIM_CUDA_CHAIN", "GLIM_CUDA_DYN"};
    static const char *const boff[] = {"0", "0", "0", "15", "1", "1", "1", "1", "0", "0"};
    static const char *const both[] = {"15", "15", "0", "15", "1", "1", "1", "1", "0", "0"};
    switch_bits_of("span_two_late", wide, 2 * wide.sliding_window + 3, 10, bnames, boff, both, gcu_dmv_two_count,
                   wide.n_layers);
    /* GLIM_CUDA_SPAN_ROW0=1 (the NORM/RESID row at offset 0, the rings and sums right after it)
     * with two row blocks a chunk on the default instance: only where the bytes lie moves, so the
     * same bits again; a row overlapping a ring, the sums or the scratch would show */
    static const char *const rnames[] = {"GLIM_CUDA_SPAN_ROW0", "GLIM_CUDA_SPAN_TWO", "GLIM_CUDA_SPAN",
                                         "GLIM_CUDA_SPAN_ACC", "GLIM_CUDA_TMA", "GLIM_CUDA_I8", "GLIM_CUDA_FAST",
                                         "GLIM_CUDA_CHAIN", "GLIM_CUDA_DYN"};
    static const char *const row0[] = {"1", "15", "15", "1", "1", "1", "1", "0", "0"};
    switch_bits_of("span_row0_two", wide, 2 * wide.sliding_window + 3, 9, rnames, off, row0, gcu_dmv_two_count,
                   wide.n_layers);
}

/* GLIM_CUDA_SPAN_SPEC=1, 2, 3 and 4 (the LATE instance with the stamps, the no-bytes diagnostic,
 * the flag release and the fused staging compiled out, with 2 the timeline, with 3 the norm's
 * scale before the loop and the softcap epilogue too, with 4 the uneven shares and the inputs'
 * scalar loads too) compile out only what the decode does not use: the same logits bit for bit
 * as the general instance, on the wide model (K 512 and 1408: whole spans, down's 11 odd, so
 * some warps end on one span), every product on the LATE instance; and the instance must have
 * run at the level asked for (its launch count: four products a layer). */
static void span_spec_bits(void) {
    NEED_GPU();
    static const char *const names[] = {"GLIM_CUDA_SPAN_SPEC", "GLIM_CUDA_SPAN_LATE", "GLIM_CUDA_SPAN_TWO",
                                        "GLIM_CUDA_SPAN", "GLIM_CUDA_SPAN_ACC", "GLIM_CUDA_TMA", "GLIM_CUDA_I8",
                                        "GLIM_CUDA_FAST", "GLIM_CUDA_CHAIN", "GLIM_CUDA_DYN"};
    static const char *const off[] = {"0", "15", "0", "15", "1", "1", "1", "1", "0", "0"};
    static const char *const levels[] = {"1", "2", "3", "4"};
    const glim_synth_spec wide = switch_spec(1, 43);
    for (int i = 0; i < 4; i++) {
        const char *on[10]; /* off but for the level */
        memcpy(on, off, sizeof on);
        on[0] = levels[i];
        char name[32];
        snprintf(name, sizeof name, "span_spec%s", levels[i]);
        switch_bits_of(name, wide, 2 * wide.sliding_window + 3, 10, names, off, on, gcu_dmv_spec_count,
                       3 * wide.n_layers);
    }
    /* the same with two row blocks a chunk (GLIM_CUDA_SPAN_TWO=15 on the LATE instance, at the
     * levels the decode and the timeline take): the same bits again, and the two-row SPEC
     * instance must have run (every product fits two slots of two row blocks at these shapes) */
    static const char *const levels2[] = {"1", "4"};
    for (int i = 0; i < 2; i++) {
        const char *on[10];
        memcpy(on, off, sizeof on);
        on[0] = levels2[i];
        on[2] = "15";
        char name[32];
        snprintf(name, sizeof name, "span_spec%s_two", levels2[i]);
        switch_bits_of(name, wide, 2 * wide.sliding_window + 3, 10, names, off, on, gcu_dmv_two_spec_count,
                       3 * wide.n_layers);
    }
}

/* GLIM_CUDA_SPAN_AHEAD=15 (each pair of spans' digits made during the previous pair's last
 * chunk, on the LATE instance's general and SPEC 4 forms) makes the same digits and adds the same
 * products in the same order: every decoded token's logits must equal those without it bit for
 * bit, and the AHEAD instance must have run (four products a layer). The wide model's K (512 and
 * 1408: 4 and 11 spans) gives each of the default 16 span groups one pair at most, so the cases
 * also cut the spans among 1 and 3 groups (GLIM_CUDA_SPAN_WARPS): 2 and 6 pairs a warp, 1-2 and
 * 2 with a single last span, where the next pair's digits are made ahead; and with one and two
 * row blocks a chunk (GLIM_CUDA_SPAN_TWO), whose last chunk of a pair makes them. */
static void span_ahead_bits(void) {
    NEED_GPU();
    static const char *const names[] = {"GLIM_CUDA_SPAN_AHEAD", "GLIM_CUDA_SPAN_SPEC", "GLIM_CUDA_SPAN_WARPS",
                                        "GLIM_CUDA_SPAN_TWO", "GLIM_CUDA_SPAN_LATE", "GLIM_CUDA_SPAN",
                                        "GLIM_CUDA_SPAN_ACC", "GLIM_CUDA_TMA", "GLIM_CUDA_I8", "GLIM_CUDA_FAST",
                                        "GLIM_CUDA_CHAIN", "GLIM_CUDA_DYN"};
    static const struct {
        const char *name, *spec, *warps, *two;
    } cases[] = {{"span_ahead_spec4_w1", "4", "1", "0"},
                 {"span_ahead_spec4_w3_two", "4", "3", "15"},
                 {"span_ahead_general_w1_two", "0", "1", "15"},
                 {"span_ahead_spec4_default", "4", "0", "0"}};
    const glim_synth_spec wide = switch_spec(1, 47);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *off[] = {"0", cases[i].spec, cases[i].warps, cases[i].two, "15", "15", "1", "1", "1", "1", "0", "0"};
        const char *on[12]; /* off but for the switch */
        memcpy(on, off, sizeof on);
        on[0] = "15";
        switch_bits_of(cases[i].name, wide, 2 * wide.sliding_window + 3, 12, names, off, on, gcu_dmv_span_ahead_count,
                       3 * wide.n_layers);
    }
}

/* GLIM_CUDA_L2PF_GU_O, GLIM_CUDA_L2PF_GU and GLIM_CUDA_L2PF_GU_SELF (o_proj's blocks and gate/up's
 * own before their PDL wait, qkvg's at their end, prefetch row blocks of gate/up into L2) only
 * move bytes into the cache: every decoded token's logits must equal those with none bit for bit,
 * on the wide model (gate/up's 176 row blocks, every 2nd, 3rd and 4th), with attention's trigger
 * at its start and after q (ATT_TRIG 1 and 2: where o_proj's blocks issue it) and with the
 * early prefetches 3000 SM cycles late (GLIM_CUDA_L2PF_DELAY), with down's and qkvg's own
 * (GLIM_CUDA_L2PF_DOWN_SELF, _QKVG_SELF), and the prefetching launches must have run (o_proj's,
 * qkvg's, gate/up's and down's of every layer: 4 a layer). */
static void l2pf_bits(void) {
    NEED_GPU();
    static const char *const names[] = {"GLIM_CUDA_L2PF_GU", "GLIM_CUDA_L2PF_GU_O", "GLIM_CUDA_L2PF_GU_SELF",
                                        "GLIM_CUDA_ATT_TRIG", "GLIM_CUDA_SPAN", "GLIM_CUDA_FAST", "GLIM_CUDA_CHAIN",
                                        "GLIM_CUDA_L2PF_DELAY", "GLIM_CUDA_L2PF_DOWN_SELF",
                                        "GLIM_CUDA_L2PF_QKVG_SELF"};
    static const char *const off[] = {"0", "0", "0", "1", "15", "1", "0", "0", "0", "0"};
    static const char *const on[] = {"3", "2", "4", "1", "15", "1", "0", "0", "3", "0"};
    static const char *const on_late[] = {"3", "2", "4", "1", "15", "1", "0", "3000", "3", "0"};
    static const char *const off2[] = {"0", "0", "0", "2", "15", "1", "0", "0", "0", "0"};
    static const char *const on2[] = {"3", "2", "4", "2", "15", "1", "0", "0", "3", "0"};
    /* qkvg's own in place of qkvg's of gate/up (one prefetch a launch) */
    static const char *const on_q[] = {"0", "2", "4", "1", "15", "1", "0", "0", "3", "3"};
    const glim_synth_spec wide = switch_spec(1, 47);
    switch_bits_of("l2pf_trig1", wide, 2 * wide.sliding_window + 3, 10, names, off, on, gcu_dmv_l2pf_count,
                   4 * wide.n_layers);
    switch_bits_of("l2pf_delay", wide, 2 * wide.sliding_window + 3, 10, names, off, on_late, gcu_dmv_l2pf_count,
                   4 * wide.n_layers);
    switch_bits_of("l2pf_trig2", wide, 2 * wide.sliding_window + 3, 10, names, off2, on2, gcu_dmv_l2pf_count,
                   4 * wide.n_layers);
    /* (layer 0's qkvg too: every launch of the four) */
    switch_bits_of("l2pf_self_all", wide, 2 * wide.sliding_window + 3, 10, names, off, on_q, gcu_dmv_l2pf_count,
                   4 * wide.n_layers);
}

/* GLIM_CUDA_DIAG_RING=4 (a timing diagnostic: the decode matvecs' rings copy no weight bytes past
 * each slot's first fill) must time the loops on valid units: before session 54 the rings held
 * whatever an earlier kernel had left in shared memory, and a profile of the 30B showed the
 * norms' divisions and square roots on their slow paths (NaNs and zeros in the sums). Its logits
 * are wrong by design, but every decoded one must be finite, on the span kernel (the default)
 * and on k_dmv_tma (GLIM_CUDA_SPAN=0), and must differ from the real decode's (the diagnostic
 * ran: with its first fills only, the products reuse one chunk's units). */
static void diag_nobytes_finite(void) {
    NEED_GPU();
    static const char *const names[] = {"GLIM_CUDA_DIAG_RING", "GLIM_CUDA_SPAN"};
    static const char *const cases[][2] = {{"0", "15"}, {"4", "15"}, {"4", "0"}};
    const glim_synth_spec wide = switch_spec(1, 47);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/diag_nobytes", tmp_root);
    glim_error err = {0};
    REQUIRE(glim_synth_write(dir, &wide, &err) == GLIM_OK, "synth diag_nobytes: %s", err.message);
    const int V = wide.vocab_size, N = 8, P = 2 * wide.sliding_window + 3;
    int32_t *tok = malloc(sizeof(int32_t) * P), seq[8];
    float *lg[3];
    srand(29);
    tok[0] = 1;
    for (int i = 1; i < P; i++) tok[i] = rand() % V;
    env_saved env;
    env_save(&env, names, 2);
    for (int k = 0; k < 3; k++) {
        lg[k] = malloc(sizeof(float) * (size_t)N * V);
        env_set(&env, cases[k]);
        glim_status st;
        glim_model *m = open_model(dir, "cuda", 0, &st, &err);
        env_restore(&env);
        REQUIRE(m, "diag_nobytes: %s", err.message);
        const int ok = greedy_run(m, tok, P, N, seq, lg[k]);
        glim_model_close(m);
        if (!ok || k == 0) continue;
        size_t bad = 0, same = 0, first = 0;
        for (size_t i = (size_t)V; i < (size_t)N * V; i++) { /* row 0: the prefill's */
            if (!isfinite(lg[k][i]) && bad++ == 0) first = i;
            same += memcmp(&lg[k][i], &lg[0][i], sizeof(float)) == 0;
        }
        CHECK(bad == 0, "diag_nobytes (DIAG_RING=%s, SPAN=%s): %zu decoded logits not finite (first: token %zu, "
              "id %zu: %g)", cases[k][0], cases[k][1], bad, first / V, first % V, bad ? lg[k][first] : 0.0);
        CHECK(same < (size_t)(N - 1) * V / 2, "diag_nobytes (DIAG_RING=%s, SPAN=%s): %zu of %zu decoded logits "
              "equal the real decode's: did the diagnostic run?", cases[k][0], cases[k][1], same, (size_t)(N - 1) * V);
    }
    for (int k = 0; k < 3; k++) free(lg[k]);
    free(tok);
}

/* GLIM_CUDA_TMA_SLOTS_GU and _DOWN (gate/up's and down's rings deeper than the 2 slots a warp of
 * GLIM_CUDA_TMA_SLOTS) change only how many chunks a warp has in flight, never the order of its
 * sums: every decoded token's logits equal the 2-slot rings' bit for bit, with the prefetches on
 * (the L2 hits a deeper ring is for), and the deep rings ran (gate/up's and down's launches of
 * every layer: 2 a layer). */
static void deep_ring_bits(void) {
    NEED_GPU();
    static const char *const names[] = {"GLIM_CUDA_TMA_SLOTS_GU", "GLIM_CUDA_TMA_SLOTS_DOWN", "GLIM_CUDA_L2PF_GU_O",
                                        "GLIM_CUDA_L2PF_GU_SELF", "GLIM_CUDA_SPAN", "GLIM_CUDA_FAST"};
    static const char *const off[] = {"0", "0", "2", "4", "15", "1"};
    static const char *const on[] = {"4", "3", "2", "4", "15", "1"};
    const glim_synth_spec wide = switch_spec(1, 53);
    switch_bits_of("deep_ring", wide, 2 * wide.sliding_window + 3, 6, names, off, on, gcu_dmv_deep_count,
                   2 * wide.n_layers);
}

static void att_pass_bits(void) {
    NEED_GPU();
    const char *twice = "GLIM_CUDA_DIAG_ATT_TWICE", *warm = "GLIM_CUDA_ATT_WARM";
    const glim_synth_spec wide = switch_spec(1, 23), tiny = switch_spec(0, 41);
    const int P = 2 * wide.sliding_window + 3;
    att_pass_bits_of("twice_mma", wide, P, twice, "1", gcu_attn_twice_count);
    att_pass_bits_of("twice_fp32", wide, P, twice, "0", gcu_attn_twice_count);
    att_pass_bits_of("warm_mma", wide, P, warm, "1", gcu_attn_warm_count);
    att_pass_bits_of("warm_fp32", wide, P, warm, "0", gcu_attn_warm_count);
    att_pass_bits_of("warm_tiny", tiny, 2 * tiny.sliding_window + 3, warm, "1", gcu_attn_warm_count);
    /* a long prompt: full layers' splits of whole 64-key tiles, several per split */
    att_pass_bits_of("warm_long", wide, 300, warm, "1", gcu_attn_warm_count);
    att_pass_bits_of("twice_long", wide, 300, twice, "1", gcu_attn_twice_count);
    const char *lean = "GLIM_CUDA_ATT_LEAN";
    att_pass_bits_of("lean_mma", wide, P, lean, "1", gcu_attn_lean_count);
    att_pass_bits_of("lean_fp32", wide, P, lean, "0", gcu_attn_lean_count);
    att_pass_bits_of("lean_long", wide, 300, lean, "1", gcu_attn_lean_count);
}

/* The wide switch model with the 30B's attention heads: 32 query heads over 2 kv heads of 128
 * (16 a kv head), the shapes decode attention's specialised instance and head groups are for. */
static glim_synth_spec heads_30b_spec(uint64_t seed) {
    glim_synth_spec s = switch_spec(1, seed);
    s.n_heads = 32;
    s.n_kv_heads = 2;
    s.head_dim = 128;
    return s;
}

/* GLIM_CUDA_ATT_SPEC=1 (decode attention on the instance compiled for the 30B's decode: D 128,
 * a bf16 cache, the tensor-core tiles, no o_proj staging) computes what the lean instance does,
 * with those fields as constants: every decoded token's logits bit for bit, and it ran (its
 * count: at least a launch per layer). The model has the 30B's heads (32 over 2 kv heads of 128,
 * so 16 a kv head: head groups of 4 at short spans); the cases: a 5-token prompt (splits under
 * the tensor cores' 16 keys: the fp32 tiles), 35 tokens (the 16-key window and a full layer's
 * one tile), and 300 tokens with head groups only up to 64 keys (GLIM_CUDA_ATT_GROUP=64: full
 * layers with all 16 heads a block, several tiles a split, the merge by the last blocks).
 * ATT_SPEC=2 (the default) also takes the splits of fewer than 16 keys to the tensor cores,
 * whose q and probabilities enter as bf16 hi + lo (16 bits of mantissa against fp32's 24, the
 * rounding every split of 16 keys or more has): the same greedy tokens and the logits within
 * 1e-3 of the largest. The two roundings part by ~1e-5 a layer and the random model carries that
 * on through its layers and tokens (session 33 saw 4.0e-4 at the eighth decoded token of the
 * 5-token prompt); a wrong key, mask or merge moves logits by 1e-2 and more. */
static void att_spec_bits(void) {
    NEED_GPU();
    const glim_synth_spec s = heads_30b_spec(29);
    static const char *const names[] = {"GLIM_CUDA_ATT_SPEC", "GLIM_CUDA_ATT_GROUP", "GLIM_CUDA_FAST"};
    static const char *const off[] = {"0", "2048", "1"}, *const on[] = {"1", "2048", "1"};
    static const char *const off64[] = {"0", "64", "1"}, *const on64[] = {"1", "64", "1"};
    switch_bits_of("spec_short", s, 5, 3, names, off, on, gcu_attn_spec_count, s.n_layers);
    switch_bits_of("spec_window", s, 2 * s.sliding_window + 3, 3, names, off, on, gcu_attn_spec_count, s.n_layers);
    switch_bits_of("spec_long", s, 300, 3, names, off64, on64, gcu_attn_spec_count, s.n_layers);
    static const char *const on2[] = {"2", "2048", "1"}, *const on2_64[] = {"2", "64", "1"};
    switch_close_of("spec2_short", s, 5, 3, names, off, on2, gcu_attn_spec_count, s.n_layers, 1e-3);
    switch_close_of("spec2_window", s, 2 * s.sliding_window + 3, 3, names, off, on2, gcu_attn_spec_count,
                    s.n_layers, 1e-3);
    switch_close_of("spec2_long", s, 300, 3, names, off64, on2_64, gcu_attn_spec_count, s.n_layers, 1e-3);
}

/* GLIM_CUDA_ATT_SPEC=3 (SPEC 2 whose splits' partials are their own arrival flags: no fence, no
 * counters, the first splits merging one head each, every word read put back to empty for the
 * next launch) sums what SPEC 2 sums in the same order: every decoded token's logits bit for bit,
 * and the instance ran at every layer. Cases: 35 tokens (the sliding layers' window, head groups),
 * 300 tokens with all 16 heads a block on full layers (GLIM_CUDA_ATT_GROUP=64: several splits
 * each, so the merge runs at every full layer of every token, on buffers the previous layers
 * left empty), and the same with 3 mergers (GLIM_CUDA_ATT_PMERGE=3: each merges several heads in
 * turn). Then a 4200-token prompt at the default head groups (GLIM_CUDA_ATT_GROUP=2048) with
 * the full layers on their 72-split instance from 1 key on (GLIM_CUDA_ATT_WIDE_KEYS=1): their
 * 4201..4212 keys are 66 tiles, one split each where the GPU has 66 SMs or more (a kv head's
 * splits at most: 2 blocks an SM over 2 kv heads), so that merge loads a ninth partial per
 * thread, which no shorter case reaches. A merger reading a word before its
 * split wrote it, a word not emptied, or one emptied twice gives other logits (a stale partial
 * is another layer's). */
static void att_poll_bits(void) {
    NEED_GPU();
    glim_synth_spec s = heads_30b_spec(37);
    s.max_position = 8192; /* the 4200-token case */
    /* the fifth setting (WIDE_KEYS) only in poll_wide: the others pass 4 and run the default */
    static const char *const names[] = {"GLIM_CUDA_ATT_SPEC", "GLIM_CUDA_ATT_GROUP", "GLIM_CUDA_ATT_PMERGE",
                                        "GLIM_CUDA_FAST", "GLIM_CUDA_ATT_WIDE_KEYS"};
    static const char *const off[] = {"2", "2048", "16", "1", "1"}, *const on[] = {"3", "2048", "16", "1", "1"};
    static const char *const off64[] = {"2", "64", "16", "1"}, *const on64[] = {"3", "64", "16", "1"};
    static const char *const off3[] = {"2", "64", "3", "1"}, *const on3[] = {"3", "64", "3", "1"};
    switch_bits_of("poll_window", s, 2 * s.sliding_window + 3, 4, names, off, on, gcu_attn_poll_count, s.n_layers);
    switch_bits_of("poll_long", s, 300, 4, names, off64, on64, gcu_attn_poll_count, s.n_layers);
    switch_bits_of("poll_long_pmerge3", s, 300, 4, names, off3, on3, gcu_attn_poll_count, s.n_layers);
    switch_bits_of("poll_wide", s, 4200, 5, names, off, on, gcu_attn_poll_count, s.n_layers);
}

/* GLIM_CUDA_ATT_GROUP_HALF=8 (a kv head's heads over half as many blocks past 8 keys): on the
 * 30B's heads (16 a kv head; 4 a block by default, so 4 head groups) every decoded position of a
 * 35-token prompt sees more than 8 keys (the sliding layers 16), so each runs the plan of 8
 * heads a block (GLIM_CUDA_ATT_HEADS=8: 2 head groups; the same splits, the same blocks' work,
 * the same merge): the logits bit for bit, and the option was live at every layer. */
static void att_group_half_bits(void) {
    NEED_GPU();
    const glim_synth_spec s = heads_30b_spec(31);
    static const char *const names[] = {"GLIM_CUDA_ATT_GROUP_HALF", "GLIM_CUDA_ATT_HEADS", "GLIM_CUDA_FAST"};
    static const char *const heads8[] = {"0", "8", "1"}, *const half[] = {"8", "4", "1"};
    switch_bits_of("group_half", s, 35, 3, names, heads8, half, gcu_attn_half_count, s.n_layers);
}

static void chain_bits(void) {
    NEED_GPU();
    chain_bits_of("chain_tiny", switch_spec(0, 5));
    chain_bits_of("chain_wide", switch_spec(1, 11));
}

static void flag_bits(void) {
    NEED_GPU();
    flag_bits_of("flag_tiny", switch_spec(0, 5));
    flag_bits_of("flag_wide", switch_spec(1, 13));
}

static void ahead_bits(void) {
    NEED_GPU();
    lean_bits_of("ahead_tiny", switch_spec(0, 5), "1");
    lean_bits_of("ahead_wide", switch_spec(1, 17), "1");
    lean_bits_of("lean_wide", switch_spec(1, 19), "2");
}

/* The span-major decode matvec (GLIM_CUDA_SPAN=15: qkvg, o_proj, gate/up and down on
 * decode_mv_span.cu, each warp owning whole spans of its block's row blocks) sums the same
 * products in another order, so it is checked against the CPU oracle at the fp32-KV tolerance
 * (random_vs_cpu: the prompt's logits, then greedy decoding), and it must have run for all four
 * products of every layer of every decoded token (its launch count: at least 4 n_layers per
 * model, as the graph's capture enqueues a token once). Models: the wide switch model (o_proj
 * and qkvg 4 spans wide, down 11, gate/up 2 row blocks per block); one whose 576-wide hidden
 * size ends in half a span; the first with the sums in shared memory (GLIM_CUDA_SPAN_ACC=1)
 * and with its warps as span groups x 4 row groups (GLIM_CUDA_SPAN_ROWS=4). Then a 2688-wide
 * model (o_proj and down: 168 row blocks) and the wide one with all four products on the fewest
 * blocks with the same largest share (GLIM_CUDA_SPAN_EVEN=15, the sums in shared memory; with 2
 * row groups for the wide one): o_proj's and down's 168 row blocks on 84 blocks of 2, gate/up's
 * 176 on 88, where the GPU has more SMs than that (then their count of smaller grids: at least
 * one product per layer). The path it needs is pinned: the integer path on the shared-memory
 * ring, no chain, down staging its own input. */
static void span_loop(void) {
    NEED_GPU();
    static const char *const names[] = {"GLIM_CUDA_SPAN", "GLIM_CUDA_TMA", "GLIM_CUDA_I8", "GLIM_CUDA_FAST",
                                        "GLIM_CUDA_CHAIN", "GLIM_CUDA_DYN", "GLIM_CUDA_SPAN_ACC",
                                        "GLIM_CUDA_STAGE_I8", "GLIM_CUDA_SPAN_ROWS", "GLIM_CUDA_SPAN_EVEN"};
    /* GLIM_TEST_SPAN: another mask of products for a bisection (default all four) */
    const char *mask = getenv("GLIM_TEST_SPAN");
    const char *on[] = {mask && *mask ? mask : "15", "1", "1", "1", "0", "0", "0", "0", "1", "0"};
    env_saved env;
    env_save(&env, names, (int)(sizeof names / sizeof names[0]));
    glim_synth_spec wide = switch_spec(1, 29), half = switch_spec(1, 31), w2688 = switch_spec(1, 37);
    half.hidden_size = 576;
    half.n_heads = 12;
    w2688.hidden_size = 2688;
    w2688.n_heads = 24; /* o_proj 1536 wide: 12 spans */
    const struct {
        const char *label;
        const glim_synth_spec *spec;
        const char *acc, *rows, *even;
    } cases[6] = {{"span_wide", &wide, "0", "1", "0"},
                  {"span_half", &half, "0", "1", "0"},
                  {"span_wide_smem_sums", &wide, "1", "1", "0"},
                  {"span_wide_4_row_groups", &wide, "0", "4", "0"},
                  {"span_2688_even", &w2688, "1", "1", "15"},
                  {"span_wide_even_2_row_groups", &wide, "1", "2", "15"}};
    for (int k = 0; k < 6; k++) {
        env_set(&env, on);
        setenv("GLIM_CUDA_SPAN_ACC", cases[k].acc, 1);
        setenv("GLIM_CUDA_SPAN_ROWS", cases[k].rows, 1);
        setenv("GLIM_CUDA_SPAN_EVEN", cases[k].even, 1);
        const long before = gcu_dmv_span_count(), evens = gcu_dmv_even_count();
        random_vs_cpu(cases[k].label, *cases[k].spec);
        const long ran = gcu_dmv_span_count() - before, evened = gcu_dmv_even_count() - evens;
        const int L = cases[k].spec->n_layers;
        printf("  info: %s: %ld launches on the span-major kernel, %ld on fewer blocks\n", cases[k].label, ran,
               evened);
        int per_layer = 0; /* the products of the mask (qkvg, o_proj, gate/up, down) */
        for (int bit = 0; bit < 4; bit++) per_layer += atoi(on[0]) >> bit & 1;
        CHECK(ran >= (long)per_layer * L, "%s: %ld launches on the span-major kernel, at least %d expected (its "
              "products in each layer)", cases[k].label, ran, per_layer * L);
        if (strcmp(cases[k].even, "0") != 0 && gcu_sm_count() > 88)
            CHECK(evened >= (long)L, "%s: %ld launches on fewer blocks, at least %d expected (a product in each "
                  "layer)", cases[k].label, evened, L);
    }
    env_restore(&env);
}

/* A prompt of several 64-token sub-chunks (64 + 64 + 22 tokens, the forward's GCU_TMAX), all of
 * its logits against the CPU's at the fp32-KV tolerance of random_vs_cpu: MLX 4-bit (the prefill
 * GEMM's 64-token instance, stream-K or split-K by shape) and the bf16 checkpoint (k_mv in parts
 * of 32 tokens); then the same MLX prompt in sub-chunks of 32 (GLIM_CUDA_PREFILL_T=32), which
 * must agree as well. The window (8) is far shorter than a sub-chunk, so the sliding ring's
 * W + GCU_TMAX rows are what a sub-chunk's first queries read. */
static void long_prompt_of(const char *name, glim_synth_spec spec, const char *prefill_t) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", tmp_root, name);
    glim_error err = {0};
    REQUIRE(glim_synth_write(dir, &spec, &err) == GLIM_OK, "synth %s: %s", name, err.message);
    glim_status st;
    glim_model *cpu = open_model(dir, "cpu", 0, &st, &err);
    REQUIRE(cpu, "%s cpu: %s", name, err.message);
    if (prefill_t) setenv("GLIM_CUDA_PREFILL_T", prefill_t, 1);
    glim_model *gpu = open_model(dir, "cuda", 1, &st, &err);
    unsetenv("GLIM_CUDA_PREFILL_T");
    if (!gpu) glim_model_close(cpu);
    REQUIRE(gpu, "%s cuda: %s", name, err.message);
    enum { P = 150 };
    const int V = spec.vocab_size;
    int32_t tok[P];
    srand(31);
    for (int i = 0; i < P; i++) tok[i] = rand() % V;
    float *a = eval_steps(cpu, tok, P, P, 64), *b = eval_steps(gpu, tok, P, P, 64);
    if (a && b) {
        const float mx = max_abs(a, (size_t)P * V), d = max_diff(a, b, (size_t)P * V);
        printf("  info: %s (sub-chunks of %s): prompt of %d, max |gpu - cpu| %.3g = %.2g of max |cpu| %.3g\n", name,
               prefill_t ? prefill_t : "64", P, d, d / mx, mx);
        CHECK(d <= 3e-4f * (mx > 1 ? mx : 1), "%s: prompt logits differ by %g", name, d);
    }
    free(a), free(b);
    glim_model_close(gpu);
    glim_model_close(cpu);
}
static void long_prompt(void) {
    NEED_GPU();
    glim_synth_spec q = glim_synth_tiny();
    q.bits = 4;
    q.group_size = 32;
    q.seed = 5;
    long_prompt_of("long_mlx4", q, NULL);
    long_prompt_of("long_mlx4_t32", q, "32");
    glim_synth_spec d = glim_synth_tiny();
    d.seed = 6;
    long_prompt_of("long_bf16", d, NULL);
}

/* glim_session_rewind on the GPU: its sliding ring holds W + GCU_TMAX rows (W + n_rewind with
 * more), so from 100 tokens a window-8 model goes back GCU_TMAX + 1 tokens (73 with n_rewind 72)
 * and no further; a rewound session evaluating a different ending gives a fresh session's logits
 * (fp32 KV, the oracle's tolerance: the chunks differ, so the bits may). */
static void rewind_on_gpu(void) {
    NEED_GPU();
    glim_synth_spec spec = glim_synth_tiny();
    spec.bits = 4;
    spec.seed = 7;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/rewind", tmp_root);
    glim_error err = {0};
    REQUIRE(glim_synth_write(dir, &spec, &err) == GLIM_OK, "synth: %s", err.message);
    glim_status st;
    glim_model *m = open_model(dir, "cuda", 1, &st, &err);
    REQUIRE(m, "open: %s", err.message);
    enum { T = 100 };
    _Static_assert(GCU_TMAX + 1 < T && 73 < T, "the rewinds stay inside the prompt");
    const int V = spec.vocab_size;
    int32_t first[T], second[T];
    srand(23);
    for (int i = 0; i < T; i++) first[i] = second[i] = rand() % V;
    const int backs[2] = {GCU_TMAX + 1, 73}, rewinds[2] = {0, 72};
    for (int k = 0; k < 2; k++) {
        const int b = backs[k];
        for (int t = T - b; t < T; t++) second[t] = (first[t] + 1 + t + k) % V;
        float *want = eval_steps(m, second, T, T, 64), *got = malloc(sizeof(float) * (size_t)b * V);
        glim_session_params sp = {T + 20, 64, rewinds[k]};
        glim_session *s = NULL;
        REQUIRE(want && got && glim_session_create(m, &sp, &s, &err) == GLIM_OK, "session: %s", err.message);
        CHECK(glim_eval(s, first, T, 0, GLIM_LOGITS_NONE, NULL, 0, &err) == GLIM_OK, "%s", err.message);
        CHECK(glim_session_rewind(s, T - b - 1, &err) == GLIM_E_UNSUPPORTED, "n_rewind %d: %d back allowed",
              rewinds[k], b + 1);
        CHECK(glim_session_rewind(s, T - b, &err) == GLIM_OK, "n_rewind %d, %d back: %s", rewinds[k], b, err.message);
        CHECK(glim_eval(s, second + T - b, b, T - b, GLIM_LOGITS_ALL, got, (size_t)b * V, &err) == GLIM_OK, "%s",
              err.message);
        const float *w = want + (size_t)(T - b) * V;
        float mx = max_abs(w, (size_t)b * V), d = max_diff(w, got, (size_t)b * V);
        printf("  info: rewind %d (n_rewind %d): max |rewound - fresh| %.3g of max %.3g\n", b, rewinds[k], d, mx);
        CHECK(d <= 3e-4f * (mx > 1 ? mx : 1), "rewound logits differ from a fresh session's by %g", d);
        glim_session_free(s);
        free(want);
        free(got);
    }
    glim_model_close(m);
}

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_names(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

int main(void) {
    const char *vd = getenv("GLIM_VECTORS_DIR");
    snprintf(g_root, sizeof g_root, "%.500s", vd && *vd ? vd : "tests/vectors");
    static char names[64][128];
    int nn = 0;
    DIR *d = opendir(g_root);
    struct dirent *de;
    while (d && (de = readdir(d)) && nn < 64) {
        char p[1400];
        if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof names[0]) continue;
        snprintf(p, sizeof p, "%s/%s/reference.safetensors", g_root, de->d_name);
        if (is_file(p)) strcpy(names[nn++], de->d_name);
    }
    if (d) closedir(d);
    qsort(names, (size_t)nn, sizeof names[0], cmp_names);
    for (int i = 0; i < nn; i++) {
        memcpy(g_fixture, names[i], sizeof g_fixture);
        printf("  fixture %s\n", g_fixture);
        RUN(fixture_kv32);
        RUN(fixture_kv_bf16);
    }
    if (!mkdtemp(tmp_root)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    RUN(random_hf_bf16);
    RUN(random_mlx4);
    RUN(random_mlx8_wide);
    RUN(chain_bits);
    RUN(flag_bits);
    RUN(ahead_bits);
    RUN(att_pass_bits);
    RUN(att_spec_bits);
    RUN(att_poll_bits);
    RUN(att_group_half_bits);
    RUN(span_loop);
    RUN(span_even_bits);
    RUN(span_chunk_bits);
    RUN(span_spec_bits);
    RUN(span_ahead_bits);
    RUN(l2pf_bits);
    RUN(deep_ring_bits);
    RUN(rewind_on_gpu);
    RUN(long_prompt);
    RUN(diag_nobytes_finite);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_root);
    return CHECK_DONE();
}
#else
CUDA_TEST_WITHOUT_CUDA(cuda_forward)
#endif
