/* test_sampler.c: the sampler (src/sampler.c) against direct computations written here.
 *
 * Distribution checks draw N samples with a fixed seed and compare each token's empirical
 * frequency f with the probability p the test computes itself (penalties, sort, top-k, top-p,
 * min-p, temperature, straight from the definitions). The count is Binomial(N, p), so
 * |f - p| <= 5 sqrt(p (1 - p) / N) + 1/N holds with probability > 1 - 6e-7 per token for a
 * correct sampler (a 5-sigma bound, normal approximation; the 1/N covers tiny p); over the
 * ~300 tokens checked here a false failure has odds < 2e-4, and as the seed is fixed the outcome
 * never flakes. With N = 200000 the bound is <= 0.0056 absolute, so a filter that keeps one token
 * too many or too few, or a wrong temperature, moves some probability by far more than that.
 * Tokens the reference gives probability 0 must never be drawn at all. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "glimmer.h"

/* ---- allocation counter (glibc): sampling must not allocate --------------------------------- */
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static volatile long n_allocs;
void *malloc(size_t n) { n_allocs++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { n_allocs++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { n_allocs++; return __libc_realloc(p, n); }
#define HAVE_ALLOC_COUNT 1
#else
static long n_allocs;
#define HAVE_ALLOC_COUNT 0
#endif

/* ---- test randomness (independent of the sampler's PRNG) ------------------------------------ */
static uint64_t trng = 0x1234567887654321ull;
static uint64_t trand(void) {
    trng ^= trng << 13;
    trng ^= trng >> 7;
    trng ^= trng << 17;
    return trng;
}
static double tunif(void) { return (double)(trand() >> 11) * 0x1.0p-53; }
static float tnormal(void) {
    double u = tunif() + 1e-12, v = tunif();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}
static void random_logits(float *l, int n, float sd) {
    for (int i = 0; i < n; i++) l[i] = sd * tnormal();
}

/* ---- the reference: the documented chain, computed directly --------------------------------- */
static const float *cmp_l;
static int cmp_desc(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    if (cmp_l[x] != cmp_l[y]) return cmp_l[x] > cmp_l[y] ? -1 : 1;
    return x < y ? -1 : 1;
}

/* Fills prob[vocab] with the probability of each token under params p, given history h[nh]. */
static void reference(const glim_sampler_params *p, const float *logits, int vocab,
                      const int *h, int nh, double *prob) {
    float l[4096];
    int idx[4096];
    for (int i = 0; i < vocab; i++) l[i] = logits[i];
    int start = p->penalty_last_n > 0 && nh > p->penalty_last_n ? nh - p->penalty_last_n : 0;
    for (int t = 0; t < vocab; t++) {
        int c = 0;
        for (int j = start; j < nh; j++) c += h[j] == t;
        if (!c) continue;
        l[t] = l[t] > 0 ? l[t] / p->repeat_penalty : l[t] * p->repeat_penalty;
        l[t] -= c * p->frequency_penalty + p->presence_penalty;
    }
    for (int i = 0; i < vocab; i++) idx[i] = i;
    cmp_l = l;
    qsort(idx, vocab, sizeof idx[0], cmp_desc);
    int n = vocab;
    if (p->top_k > 0 && p->top_k < n) n = p->top_k;
    double z = 0, pr[4096];
    for (int i = 0; i < n; i++) z += exp((double)l[idx[i]]);
    for (int i = 0; i < n; i++) pr[i] = exp((double)l[idx[i]]) / z;
    if (p->top_p < 1) {
        double cum = 0;
        for (int i = 0; i < n; i++) {
            cum += pr[i];
            if (cum >= p->top_p) { n = i + 1; break; }
        }
    }
    int keep[4096], nk = 0;
    for (int i = 0; i < n; i++)
        if (!(p->min_p > 0) || pr[i] >= p->min_p * pr[0]) keep[nk++] = idx[i];
    for (int i = 0; i < vocab; i++) prob[i] = 0;
    z = 0;
    for (int i = 0; i < nk; i++) z += exp((double)l[keep[i]] / p->temperature);
    for (int i = 0; i < nk; i++) prob[keep[i]] = exp((double)l[keep[i]] / p->temperature) / z;
}

static glim_sampler_params base_params(void) {
    glim_sampler_params p = glim_sampler_defaults();
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.presence_penalty = 0.0f;
    p.frequency_penalty = 0.0f;
    p.penalty_last_n = 0;
    p.seed = 42;
    return p;
}

/* ---- cases ---------------------------------------------------------------------------------- */

static void greedy_first_max_with_ties_and_nan(void) {
    enum { V = 1000 };
    static float l[V], copy[V];
    glim_sampler_params p = base_params();
    p.temperature = 0.0f;
    glim_sampler *s = NULL;
    glim_error err = {0};
    REQUIRE(glim_sampler_create(&p, V, &s, &err) == GLIM_OK, "%s", err.message);
    for (int trial = 0; trial < 50; trial++) {
        random_logits(l, V, 3.0f);
        float mx = l[0];
        for (int i = 1; i < V; i++) if (l[i] > mx) mx = l[i];
        /* plant the maximum at 3 random places; the lowest of them must win */
        int a = (int)(trand() % V), b = (int)(trand() % V), c = (int)(trand() % V);
        l[a] = l[b] = l[c] = mx + 1.0f;
        int expect = a < b ? (a < c ? a : c) : (b < c ? b : c);
        /* NaNs before and at a spot that would otherwise compare oddly are never picked */
        int nanpos = (int)(trand() % (unsigned)(expect + 1));
        if (nanpos != expect) l[nanpos] = NAN;
        memcpy(copy, l, sizeof l);
        int got = glim_sampler_sample(s, l);
        CHECK(got == expect, "trial %d: got %d, expected the first maximum %d", trial, got, expect);
        CHECK(memcmp(copy, l, sizeof l) == 0, "sample modified the caller's logits");
    }
    l[0] = NAN;
    for (int i = 1; i < V; i++) l[i] = -1.0f;
    CHECK(glim_sampler_sample(s, l) == 1, "NaN at 0 with a flat rest: expected 1, got %d",
          glim_sampler_sample(s, l));
    for (int i = 0; i < V; i++) l[i] = NAN;
    CHECK(glim_sampler_sample(s, l) == -1, "all NaN: expected -1, got %d",
          glim_sampler_sample(s, l));
    glim_sampler_free(s);
}

static void top_k_1_equals_greedy(void) {
    enum { V = 3000 };
    static float l[V];
    glim_sampler_params p = base_params();
    p.top_k = 1;
    p.temperature = 1.5f;
    glim_sampler *s = NULL;
    glim_error err = {0};
    REQUIRE(glim_sampler_create(&p, V, &s, &err) == GLIM_OK, "%s", err.message);
    for (int trial = 0; trial < 200; trial++) {
        random_logits(l, V, 2.0f);
        /* quantise so ties are common */
        for (int i = 0; i < V; i++) l[i] = roundf(l[i] * 2.0f) / 2.0f;
        int expect = 0;
        for (int i = 1; i < V; i++) if (l[i] > l[expect]) expect = i;
        int got = glim_sampler_sample(s, l);
        CHECK(got == expect, "trial %d: top_k=1 gave %d, argmax is %d", trial, got, expect);
    }
    glim_sampler_free(s);
}

/* Draws N tokens with params p after accepting history h, compares with reference(). */
static void check_distribution(const char *what, const glim_sampler_params *p, int vocab,
                               const float *l, const int *h, int nh) {
    enum { N = 200000 };
    static double prob[4096];
    static long count[4096];
    reference(p, l, vocab, h, nh, prob);
    glim_sampler *s = NULL;
    glim_error err = {0};
    REQUIRE(glim_sampler_create(p, vocab, &s, &err) == GLIM_OK, "%s: %s", what, err.message);
    for (int i = 0; i < nh; i++) glim_sampler_accept(s, h[i]);
    memset(count, 0, sizeof count);
    long allocs0 = n_allocs;
    for (int i = 0; i < N; i++) {
        int t = glim_sampler_sample(s, l);
        REQUIRE(t >= 0 && t < vocab, "%s: token %d out of range", what, t);
        count[t]++;
    }
    long allocs = n_allocs - allocs0;
    CHECK(allocs == 0, "%s: sampling allocated %ld times", what, allocs);
    int kept = 0, bad = 0;
    for (int t = 0; t < vocab; t++) {
        double f = (double)count[t] / N, q = prob[t];
        kept += q > 0;
        if (q == 0) {
            if (count[t]) bad++;
            CHECK(count[t] == 0, "%s: token %d has reference probability 0 but was drawn %ld times",
                  what, t, count[t]);
            continue;
        }
        double bound = 5.0 * sqrt(q * (1 - q) / N) + 1.0 / N;
        if (fabs(f - q) > bound) bad++;
        CHECK(fabs(f - q) <= bound, "%s: token %d frequency %.5f vs probability %.5f (bound %.5f)",
              what, t, f, q, bound);
    }
    printf("  %-34s kept %3d of %d tokens, %d outside the bound\n", what, kept, vocab, bad);
    glim_sampler_free(s);
}

static void filters_match_direct_computation(void) {
    enum { V = 40 };
    float l[V];
    random_logits(l, V, 0.8f); /* spread enough that every filter keeps several tokens */
    int h[12];
    for (int i = 0; i < 12; i++) h[i] = (int)(trand() % V);
    glim_sampler_params p;

    p = base_params();
    p.temperature = 0.7f;
    check_distribution("temperature 0.7", &p, V, l, NULL, 0);
    p = base_params();
    p.temperature = 2.0f;
    check_distribution("temperature 2.0", &p, V, l, NULL, 0);
    p = base_params();
    p.top_k = 5;
    check_distribution("top-k 5", &p, V, l, NULL, 0);
    p = base_params();
    p.top_p = 0.6f;
    check_distribution("top-p 0.6", &p, V, l, NULL, 0);
    p = base_params();
    p.min_p = 0.2f;
    check_distribution("min-p 0.2", &p, V, l, NULL, 0);
    p = base_params();
    p.top_k = 12, p.top_p = 0.8f, p.min_p = 0.05f, p.temperature = 1.3f;
    check_distribution("top-k 12, top-p 0.8, min-p 0.05, T 1.3", &p, V, l, NULL, 0);
    p = base_params();
    p.top_p = 0.7f, p.temperature = 0.5f; /* temperature after top-p: the nucleus is at T=1 */
    check_distribution("top-p 0.7 then T 0.5", &p, V, l, NULL, 0);
    p = base_params();
    p.repeat_penalty = 1.3f, p.presence_penalty = 0.4f, p.frequency_penalty = 0.25f;
    p.penalty_last_n = 8;
    check_distribution("penalties, last 8 of 12", &p, V, l, h, 12);
    p.penalty_last_n = 0, p.top_k = 20, p.top_p = 0.9f;
    check_distribution("penalties, all history, k20 p0.9", &p, V, l, h, 12);
}

/* Top-k and top-p on a large vocabulary with many ties: the set drawn (at a temperature so high
 * the survivors are nearly uniform) must be exactly the reference set, ties broken by lower id. */
static void large_vocab_sets_with_ties(void) {
    enum { V = 50000, DRAWS = 6000 };
    static float l[V];
    static int idx[V];
    static char in_set[V], seen[V];
    for (int i = 0; i < V; i++) l[i] = roundf(tnormal() * 4.0f) / 4.0f; /* many ties */
    for (int i = 0; i < 400; i++) l[trand() % V] = 10.0f + roundf(tnormal() * 2.0f) / 4.0f;
    for (int i = 0; i < V; i++) idx[i] = i;
    cmp_l = l;
    qsort(idx, V, sizeof idx[0], cmp_desc);

    for (int mode = 0; mode < 2; mode++) {
        glim_sampler_params p = base_params();
        p.temperature = 1e6f;
        int n;
        if (mode == 0) {
            p.top_k = 150;
            n = 150;
        } else {
            p.top_p = 0.5f;
            double z = 0, cum = 0;
            for (int i = 0; i < V; i++) z += exp((double)l[i]);
            for (n = 0; n < V;) {
                cum += exp((double)l[idx[n++]]) / z;
                if (cum >= 0.5) break;
            }
        }
        memset(in_set, 0, sizeof in_set);
        memset(seen, 0, sizeof seen);
        for (int i = 0; i < n; i++) in_set[idx[i]] = 1;
        glim_sampler *s = NULL;
        glim_error err = {0};
        REQUIRE(glim_sampler_create(&p, V, &s, &err) == GLIM_OK, "%s", err.message);
        int outside = 0, distinct = 0;
        for (int d = 0; d < DRAWS; d++) {
            int t = glim_sampler_sample(s, l);
            REQUIRE(t >= 0 && t < V, "token %d out of range", t);
            if (!in_set[t]) outside++;
            if (!seen[t]) seen[t] = 1, distinct++;
        }
        /* n <= ~300 near-uniform tokens over 6000 draws: P(one never drawn) < 300 e^-20 */
        CHECK(outside == 0, "mode %d: %d draws outside the reference set", mode, outside);
        CHECK(distinct == n, "mode %d: %d distinct tokens drawn, reference set has %d", mode,
              distinct, n);
        printf("  %s: reference set of %d tokens, %d drawn\n", mode ? "top-p 0.5" : "top-k 150",
               n, distinct);
        CHECK(n > 64, "mode %d: set of %d does not exercise selection beyond 64", mode, n);
        glim_sampler_free(s);
    }
}

static void same_seed_same_tokens(void) {
    enum { V = 500, STEPS = 400 };
    static float l[STEPS][V];
    for (int t = 0; t < STEPS; t++) random_logits(l[t], V, 1.0f);
    glim_sampler_params p = base_params();
    p.top_k = 50, p.top_p = 0.95f, p.min_p = 0.01f, p.temperature = 0.9f;
    p.repeat_penalty = 1.1f, p.frequency_penalty = 0.1f, p.penalty_last_n = 32;
    int seq[3][STEPS];
    uint64_t seeds[3] = {7, 7, 8};
    for (int r = 0; r < 3; r++) {
        p.seed = seeds[r];
        glim_sampler *s = NULL;
        glim_error err = {0};
        REQUIRE(glim_sampler_create(&p, V, &s, &err) == GLIM_OK, "%s", err.message);
        for (int t = 0; t < STEPS; t++) {
            seq[r][t] = glim_sampler_sample(s, l[t]);
            glim_sampler_accept(s, seq[r][t]);
        }
        glim_sampler_free(s);
    }
    int diff01 = 0, diff02 = 0;
    for (int t = 0; t < STEPS; t++) diff01 += seq[0][t] != seq[1][t], diff02 += seq[0][t] != seq[2][t];
    CHECK(diff01 == 0, "same seed: %d of %d tokens differ", diff01, STEPS);
    /* ~50 near-equal choices per step: two seeds agreeing on > half the steps is impossible odds */
    CHECK(diff02 > STEPS / 2, "different seeds: only %d of %d tokens differ", diff02, STEPS);
}

/* Probe every token: make it the winner by a margin the penalty can overturn, then greedy shows
 * whether it was penalised. It must be exactly when it is in the window (with the count rule for
 * the frequency penalty). */
static void penalties_touch_exactly_the_history(void) {
    enum { V = 64, LAST_N = 8 };
    int h[14];
    for (int i = 0; i < 14; i++) h[i] = (int)(trand() % 24); /* repeats likely */
    h[13] = h[12] = h[11];                                   /* a count of 3 for sure */
    int cnt[V] = {0};
    for (int i = 14 - LAST_N; i < 14; i++) cnt[h[i]]++;
    struct { const char *name; float rep, pres, freq, top, gap; int min_count; } cases[] = {
        {"repetition, positive logits", 2.0f, 0, 0, 5.0f, 1.0f, 1},
        {"repetition, negative logits", 2.0f, 0, 0, -1.0f, 0.5f, 1},
        {"presence", 1.0f, 0.5f, 0, 5.0f, 0.25f, 1},
        {"frequency (count >= 2 flips)", 1.0f, 0, 0.3f, 5.0f, 0.45f, 2},
    };
    float l[V];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        glim_sampler_params p = base_params();
        p.temperature = 0.0f;
        p.repeat_penalty = cases[c].rep;
        p.presence_penalty = cases[c].pres;
        p.frequency_penalty = cases[c].freq;
        p.penalty_last_n = LAST_N;
        glim_sampler *s = NULL;
        glim_error err = {0};
        REQUIRE(glim_sampler_create(&p, V, &s, &err) == GLIM_OK, "%s", err.message);
        for (int i = 0; i < 14; i++) glim_sampler_accept(s, h[i]);
        glim_sampler_accept(s, -5);  /* out of range: ignored */
        glim_sampler_accept(s, V);
        int wrong = 0;
        for (int t = 0; t < V; t++) {
            /* competitor: the token after t that is not in the window */
            int r = (t + 1) % V;
            while (cnt[r]) r = (r + 1) % V;
            for (int i = 0; i < V; i++) l[i] = cases[c].top - 10.0f - (float)tunif();
            l[t] = cases[c].top;
            l[r] = cases[c].top - cases[c].gap;
            int expect = cnt[t] >= cases[c].min_count ? r : t;
            int got = glim_sampler_sample(s, l);
            if (got != expect) wrong++;
            CHECK(got == expect, "%s: token %d (count %d in window): got %d, expected %d",
                  cases[c].name, t, cnt[t], got, expect);
        }
        printf("  %-34s %d of %d probes wrong\n", cases[c].name, wrong, V);
        glim_sampler_free(s);
    }
}

static void infinities(void) {
    enum { V = 100 };
    float l[V];
    random_logits(l, V, 1.0f);
    l[17] = INFINITY;
    l[60] = INFINITY;
    l[3] = -INFINITY;
    glim_sampler_params p = base_params();
    glim_sampler *s = NULL;
    glim_error err = {0};
    REQUIRE(glim_sampler_create(&p, V, &s, &err) == GLIM_OK, "%s", err.message);
    int c17 = 0, c60 = 0, other = 0;
    for (int i = 0; i < 10000; i++) {
        int t = glim_sampler_sample(s, l);
        if (t == 17) c17++;
        else if (t == 60) c60++;
        else other++;
    }
    CHECK(other == 0, "%d draws were not one of the +inf tokens", other);
    /* Binomial(10000, 0.5): sd 50, 5 sd = 250 */
    CHECK(abs(c17 - 5000) <= 250, "+inf tokens should share equally: %d vs %d", c17, c60);
    for (int i = 0; i < V; i++) l[i] = -INFINITY;
    CHECK(glim_sampler_sample(s, l) == 0, "all -inf: expected greedy's 0, got %d",
          glim_sampler_sample(s, l));
    for (int i = 0; i < V; i++) l[i] = NAN;
    CHECK(glim_sampler_sample(s, l) == -1, "all NaN: expected -1");
    glim_sampler_free(s);
}

/* min-p right at its threshold: ratio exp(+-0.02) away from min_p on either side. */
static void min_p_boundary(void) {
    enum { V = 30 };
    float l[V];
    for (int i = 0; i < V; i++) l[i] = -20.0f;
    glim_sampler_params p = base_params();
    p.min_p = 0.2f;
    l[7] = 1.0f;
    l[3] = 1.0f + logf(0.2f) + 0.02f; /* ratio 0.204: kept */
    l[5] = 1.0f + logf(0.2f) - 0.02f; /* ratio 0.196: dropped */
    glim_sampler *s = NULL;
    glim_error err = {0};
    REQUIRE(glim_sampler_create(&p, V, &s, &err) == GLIM_OK, "%s", err.message);
    int c[V] = {0};
    for (int i = 0; i < 20000; i++) c[glim_sampler_sample(s, l)]++;
    /* kept: 7 with 1/1.204 = 0.83, 3 with 0.17 (sd of its count ~53 over 20000 draws) */
    CHECK(c[5] == 0, "token below min_p drawn %d times", c[5]);
    CHECK(c[3] > 3000 && c[3] < 3800, "token just above min_p drawn %d times, expected ~3390", c[3]);
    CHECK(c[7] + c[3] == 20000, "tokens outside {3, 7} drawn");
    glim_sampler_free(s);
}

static void invalid_params_rejected(void) {
    struct { const char *field; glim_sampler_params p; int vocab; } bad[16];
    int n = 0;
#define BAD(FIELD, EXPR)                      \
    do {                                      \
        bad[n].field = FIELD;                 \
        bad[n].p = base_params();             \
        bad[n].vocab = 10;                    \
        { glim_sampler_params *q = &bad[n].p; EXPR; } \
        n++;                                  \
    } while (0)
    BAD("top_k", q->top_k = -1);
    BAD("top_p", q->top_p = 0.0f);
    BAD("top_p", q->top_p = 1.01f);
    BAD("top_p", q->top_p = NAN);
    BAD("temperature", q->temperature = NAN);
    BAD("temperature", q->temperature = INFINITY);
    BAD("min_p", q->min_p = -0.1f);
    BAD("min_p", q->min_p = 1.5f);
    BAD("repeat_penalty", q->repeat_penalty = 0.0f);
    BAD("repeat_penalty", q->repeat_penalty = NAN);
    BAD("presence_penalty", q->presence_penalty = INFINITY);
    BAD("frequency_penalty", q->frequency_penalty = NAN);
    BAD("penalty_last_n", q->penalty_last_n = -1);
    BAD("vocab_size", (void)q; bad[n].vocab = 0);
#undef BAD
    for (int i = 0; i < n; i++) {
        glim_sampler *s = (glim_sampler *)&bad; /* must be overwritten with NULL */
        glim_error err = {0};
        glim_status st = glim_sampler_create(&bad[i].p, bad[i].vocab, &s, &err);
        CHECK(st == GLIM_E_ARG, "case %d (%s): status %d, expected GLIM_E_ARG", i, bad[i].field,
              (int)st);
        CHECK(err.code == GLIM_E_ARG, "case %d: err.code %d", i, (int)err.code);
        CHECK(strstr(err.message, bad[i].field) != NULL, "case %d: message '%s' does not name %s",
              i, err.message, bad[i].field);
        CHECK(s == NULL, "case %d: *out not cleared", i);
        if (st == GLIM_OK) glim_sampler_free(s);
    }
    /* the boundaries themselves are valid */
    glim_sampler_params p = base_params();
    p.top_p = 1.0f, p.min_p = 1.0f, p.temperature = -1.0f, p.top_k = 0;
    glim_sampler *s = NULL;
    glim_error err = {0};
    CHECK(glim_sampler_create(&p, 10, &s, &err) == GLIM_OK, "boundary params refused: %s",
          err.message);
    glim_sampler_free(s);
}

static void no_allocation_in_sample_or_accept(void) {
    if (!HAVE_ALLOC_COUNT) SKIP("allocation counting needs glibc (and no sanitizer)");
    enum { V = 20000 };
    static float l[V];
    random_logits(l, V, 2.0f);
    glim_sampler_params p = base_params();
    p.top_p = 0.9f, p.min_p = 0.01f, p.repeat_penalty = 1.2f, p.penalty_last_n = 16;
    glim_sampler *s = NULL;
    glim_error err = {0};
    REQUIRE(glim_sampler_create(&p, V, &s, &err) == GLIM_OK, "%s", err.message);
    long a0 = n_allocs;
    for (int i = 0; i < 100; i++) glim_sampler_accept(s, glim_sampler_sample(s, l));
    long a1 = n_allocs;
    CHECK(a1 == a0, "100 sample+accept calls allocated %ld times", a1 - a0);
    glim_sampler_free(s);
}

int main(void) {
    RUN(greedy_first_max_with_ties_and_nan);
    RUN(top_k_1_equals_greedy);
    RUN(filters_match_direct_computation);
    RUN(large_vocab_sets_with_ties);
    RUN(same_seed_same_tokens);
    RUN(penalties_touch_exactly_the_history);
    RUN(infinities);
    RUN(min_p_boundary);
    RUN(invalid_params_rejected);
    RUN(no_allocation_in_sample_or_accept);
    return CHECK_DONE();
}
