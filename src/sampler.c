/* sampler.c: logits -> token on the host (the sampler section of include/glimmer.h).
 *
 * Order of operations, the llama.cpp default chain (penalties, top-k, top-p, min-p, temperature,
 * then a draw), so `--top-p 0.9 --temp 0.7` keeps the same nucleus here as in llama.cpp:
 *
 *   1. penalties, on a copy of the logits, for every token seen in the last penalty_last_n
 *      accepted tokens (0 = all of them), with c = its count in that window:
 *        repetition: l > 0 ? l / repeat_penalty : l * repeat_penalty   (once, whatever c is)
 *        frequency:  l -= c * frequency_penalty
 *        presence:   l -= presence_penalty                             (once)
 *      Penalties apply in greedy mode too (as llama.cpp and transformers do); with the
 *      defaults they are off and greedy is the plain argmax of the logits given.
 *   2. temperature <= 0: greedy, the first maximal index (ties go to the lowest id). Stop here.
 *   3. top-k: keep the k largest logits (ties broken towards the lower id). 0 = off.
 *   4. top-p: softmax over what is left (at temperature 1), keep the smallest prefix, in
 *      descending order, whose probability sums to >= top_p; always at least one token.
 *   5. min-p: drop tokens whose probability is < min_p * (probability of the best token).
 *      The ratio does not depend on renormalisation, so this is exp(l - l_max) < min_p.
 *   6. temperature: p_i proportional to exp((l_i - l_max) / T) over the survivors.
 *   7. draw u in [0, sum) from xoshiro256** (seeded through splitmix64) and walk the survivors.
 *
 * Non-numbers: a NaN logit is never picked (every comparison skips it, like -inf). +inf logits
 * share all the probability equally. If every logit is NaN, sample returns -1 (the header has no
 * error path; callers treat a negative id as "no token").
 *
 * Memory: everything vocab-sized (a work copy of the logits, probabilities, candidate ids,
 * per-token counts in the penalty window) and the history ring are allocated by
 * glim_sampler_create; accept and sample never allocate.
 *
 * Cost per token, O(vocab): top-k is one pass with a k-entry heap, then a sort of k (its best is
 * also the argmax, so with top-k there is no separate argmax pass); top-p
 * without top-k is two passes that keep the tokens whose logit is close enough to the best to be
 * in the nucleus (top_p_candidates), then a quickselect on probability mass over those, not a
 * full sort. Probabilities are expf in float, summed in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "glimmer.h"

/* A window larger than this is surely a mistake (it would be allocated up front); 0 means "all". */
#define GLIM_SAMPLER_MAX_LAST_N (1 << 24)

struct glim_sampler {
    glim_sampler_params p;
    int vocab;
    uint64_t rng[4];     /* xoshiro256** state */
    float *work;         /* [vocab] penalised logits */
    float *prob;         /* [vocab] unnormalised probabilities, by token id */
    int32_t *cand;       /* [vocab] candidate ids */
    uint32_t *counts;    /* [vocab] occurrences of each id in the penalty window */
    int32_t *ring;       /* [penalty_last_n] the window, oldest at ring_head when full */
    int ring_len, ring_head;
    int penalties_on;
};

/* ---- PRNG ------------------------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t s[4]) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

/* Uniform in [0, 1) with 53 random bits. */
static double uniform01(uint64_t s[4]) { return (double)(xoshiro_next(s) >> 11) * 0x1.0p-53; }

/* ---- parameters ------------------------------------------------------------------------------ */

glim_sampler_params glim_sampler_defaults(void) {
    /* llama.cpp's defaults, with penalties off and a fixed seed so library runs repeat. */
    glim_sampler_params p = {
        .temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
        .repeat_penalty = 1.0f, .presence_penalty = 0.0f, .frequency_penalty = 0.0f,
        .penalty_last_n = 64, .seed = 0x5eed5eedull,
    };
    return p;
}

static glim_status check_params(const glim_sampler_params *p, int vocab, glim_error *err) {
    if (vocab <= 0)
        return glim_fail(err, GLIM_E_ARG, "sampler: vocab_size must be > 0, got %d", vocab);
    if (isnan(p->temperature) || isinf(p->temperature))
        return glim_fail(err, GLIM_E_ARG, "sampler: temperature must be a finite number, got %g",
                         (double)p->temperature);
    if (p->top_k < 0)
        return glim_fail(err, GLIM_E_ARG, "sampler: top_k must be >= 0 (0 = off), got %d",
                         p->top_k);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return glim_fail(err, GLIM_E_ARG, "sampler: top_p must be in (0, 1] (1 = off), got %g",
                         (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return glim_fail(err, GLIM_E_ARG, "sampler: min_p must be in [0, 1] (0 = off), got %g",
                         (double)p->min_p);
    if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty))
        return glim_fail(err, GLIM_E_ARG,
                         "sampler: repeat_penalty must be a finite number > 0 (1 = off), got %g",
                         (double)p->repeat_penalty);
    if (!isfinite(p->presence_penalty))
        return glim_fail(err, GLIM_E_ARG, "sampler: presence_penalty must be finite, got %g",
                         (double)p->presence_penalty);
    if (!isfinite(p->frequency_penalty))
        return glim_fail(err, GLIM_E_ARG, "sampler: frequency_penalty must be finite, got %g",
                         (double)p->frequency_penalty);
    if (p->penalty_last_n < 0 || p->penalty_last_n > GLIM_SAMPLER_MAX_LAST_N)
        return glim_fail(err, GLIM_E_ARG,
                         "sampler: penalty_last_n must be in [0, %d] (0 = all history), got %d",
                         GLIM_SAMPLER_MAX_LAST_N, p->penalty_last_n);
    return GLIM_OK;
}

glim_status glim_sampler_create(const glim_sampler_params *params, int vocab_size,
                                glim_sampler **out, glim_error *err) {
    if (!out) return glim_fail(err, GLIM_E_ARG, "sampler: output pointer is NULL");
    *out = NULL;
    glim_sampler_params p = params ? *params : glim_sampler_defaults();
    glim_status st = check_params(&p, vocab_size, err);
    if (st != GLIM_OK) return st;

    glim_sampler *s = calloc(1, sizeof *s);
    if (!s) return glim_fail(err, GLIM_E_NOMEM, "sampler: out of memory");
    s->p = p;
    s->vocab = vocab_size;
    s->work = malloc((size_t)vocab_size * sizeof *s->work);
    s->prob = malloc((size_t)vocab_size * sizeof *s->prob);
    s->cand = malloc((size_t)vocab_size * sizeof *s->cand);
    s->counts = calloc((size_t)vocab_size, sizeof *s->counts);
    if (p.penalty_last_n > 0) s->ring = malloc((size_t)p.penalty_last_n * sizeof *s->ring);
    if (!s->work || !s->prob || !s->cand || !s->counts || (p.penalty_last_n > 0 && !s->ring)) {
        glim_sampler_free(s);
        return glim_fail(err, GLIM_E_NOMEM, "sampler: out of memory for vocab %d, window %d",
                         vocab_size, p.penalty_last_n);
    }
    uint64_t x = p.seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    s->penalties_on = p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f ||
                      p.frequency_penalty != 0.0f;
    *out = s;
    return GLIM_OK;
}

void glim_sampler_free(glim_sampler *s) {
    if (!s) return;
    free(s->work);
    free(s->prob);
    free(s->cand);
    free(s->counts);
    free(s->ring);
    free(s);
}

/* ---- history --------------------------------------------------------------------------------- */

void glim_sampler_accept(glim_sampler *s, int32_t token) {
    /* An id outside the vocabulary cannot be penalised; it is ignored rather than stored. */
    if (!s || token < 0 || token >= s->vocab) return;
    int n = s->p.penalty_last_n;
    if (n == 0) {
        if (s->counts[token] < UINT32_MAX) s->counts[token]++;
        return;
    }
    if (s->ring_len == n) { /* full: evict the oldest */
        s->counts[s->ring[s->ring_head]]--;
        s->ring[s->ring_head] = token;
        s->ring_head = (s->ring_head + 1) % n;
    } else {
        s->ring[(s->ring_head + s->ring_len) % n] = token;
        s->ring_len++;
    }
    s->counts[token]++;
}

/* ---- selection helpers ----------------------------------------------------------------------- */

/* Strict total order on candidates: larger logit first, then lower id. */
static inline int better(const float *l, int32_t a, int32_t b) {
    return l[a] > l[b] || (l[a] == l[b] && a < b);
}

static void swap_i32(int32_t *a, int32_t *b) {
    int32_t t = *a;
    *a = *b;
    *b = t;
}

static void insertion_sort(const float *l, int32_t *c, int n) {
    for (int i = 1; i < n; i++) {
        int32_t v = c[i];
        int j = i - 1;
        while (j >= 0 && better(l, v, c[j])) {
            c[j + 1] = c[j];
            j--;
        }
        c[j + 1] = v;
    }
}

/* Sorts c[0..n) best-first: quicksort with median-of-three, insertion sort for short runs. */
static void sort_cand(const float *l, int32_t *c, int n) {
    while (n > 16) {
        int mid = n / 2;
        if (better(l, c[mid], c[0])) swap_i32(&c[mid], &c[0]);
        if (better(l, c[n - 1], c[0])) swap_i32(&c[n - 1], &c[0]);
        if (better(l, c[n - 1], c[mid])) swap_i32(&c[n - 1], &c[mid]);
        swap_i32(&c[mid], &c[n - 2]); /* pivot (the median) parked at n-2 */
        int32_t pv = c[n - 2];
        int i = 0, j = n - 2;
        for (;;) {
            while (better(l, c[++i], pv)) {}
            while (better(l, pv, c[--j])) {}
            if (i >= j) break;
            swap_i32(&c[i], &c[j]);
        }
        swap_i32(&c[i], &c[n - 2]);
        /* recurse on the smaller side, loop on the larger: O(log n) stack */
        if (i < n - i - 1) {
            sort_cand(l, c, i);
            c += i + 1;
            n -= i + 1;
        } else {
            sort_cand(l, c + i + 1, n - i - 1);
            n = i;
        }
    }
    insertion_sort(l, c, n);
}

/* The k best finite tokens of l[0..vocab), sorted best-first into h; returns how many (< k
 * only when fewer are finite). A heap with the worst kept token at the root: one pass over the
 * logits, and since ids arrive in increasing order a tie never displaces a kept token. */
static int heap_top_k(const float *l, int vocab, int k, int32_t *h) {
    int n = 0;
    for (int32_t id = 0; id < vocab; id++) {
        float x = l[id];
        if (!(x > -INFINITY)) continue; /* -inf and NaN */
        int i;
        if (n < k) { /* sift up */
            i = n++;
            while (i > 0 && better(l, h[(i - 1) / 2], id)) {
                h[i] = h[(i - 1) / 2];
                i = (i - 1) / 2;
            }
            h[i] = id;
        } else if (x > l[h[0]]) { /* sift down from the root */
            i = 0;
            for (;;) {
                int c = 2 * i + 1;
                if (c >= n) break;
                if (c + 1 < n && better(l, h[c], h[c + 1])) c++; /* the worse child */
                if (!better(l, id, h[c])) break;
                h[i] = h[c];
                i = c;
            }
            h[i] = id;
        }
    }
    sort_cand(l, h, n);
    return n;
}

/* Top-p on an unsorted candidate set: rearranges c[0..n) so that c[0..cut) is the smallest
 * best-first prefix whose weight w[] sums to >= target, and returns cut. A quickselect on
 * probability mass (pivots from a fixed-seed generator): expected O(n), deterministic. */
static int mass_select(const float *l, const float *w, int32_t *c, int n, double target) {
    uint64_t pick = 0x243f6a8885a308d3ull;
    int lo = 0, hi = n; /* c[0..lo) are in, with mass acc < target; c[hi..n) are out */
    double acc = 0.0;
    while (hi - lo > 16) {
        int p = lo + (int)(splitmix64(&pick) % (uint64_t)(hi - lo));
        swap_i32(&c[p], &c[hi - 1]);
        int32_t pv = c[hi - 1];
        int store = lo;
        double mb = 0.0;
        for (int i = lo; i < hi - 1; i++)
            if (better(l, c[i], pv)) {
                mb += w[c[i]];
                swap_i32(&c[i], &c[store++]);
            }
        swap_i32(&c[store], &c[hi - 1]);
        if (acc + mb >= target) {
            hi = store; /* the cut is inside the better part */
        } else if (acc + mb + w[pv] >= target) {
            return store + 1; /* the pivot completes the nucleus */
        } else {
            acc += mb + w[pv];
            lo = store + 1;
        }
    }
    insertion_sort(l, c + lo, hi - lo);
    for (int i = lo; i < hi; i++) {
        acc += w[c[i]];
        if (acc >= target) return i + 1;
    }
    return hi > 0 ? hi : 1; /* rounding kept the target out of reach: keep what we have */
}

/* Top-p without top-k over the whole vocabulary: the candidates that can be in the nucleus, into
 * c (returns how many), their weights w[id] = exp(l - lmax) set, *total the mass of every finite
 * token. One pass bins the tokens by how far their logit is below the best (buckets of 1/8 in
 * the logit: a bucket's tokens are all worse than the previous bucket's) and sums each bucket's
 * mass; the nucleus ends in the bucket where the running mass from the top reaches the target,
 * so a second pass keeps only the buckets up to that one (and the next, against rounding) for
 * mass_select. For Muse Glimmer's 202,048 ids (session 17, this repository's 2-core machine, top-p
 * 0.95): 3.6 -> 1.65 ms per token with logits ~ N(0, 3), 2.0 -> 0.99 ms with 50 tokens far
 * ahead; the rest is the expf of every token, which the total mass needs. Same nucleus. */
#define TOP_P_BUCKETS 256
#define TOP_P_PER_LOGIT 8.0f
static inline int top_p_bucket(float lmax, float x) {
    float d = (lmax - x) * TOP_P_PER_LOGIT;
    return d < TOP_P_BUCKETS - 1 ? (int)d : TOP_P_BUCKETS - 1;
}
static int top_p_candidates(const float *l, int vocab, float lmax, double top_p, float *w, int32_t *c,
                            double *total) {
    double mass[TOP_P_BUCKETS] = {0};
    double sum = 0.0;
    for (int i = 0; i < vocab; i++) {
        if (!(l[i] > -INFINITY)) continue; /* -inf and NaN: never candidates */
        const int b = top_p_bucket(lmax, l[i]);
        w[i] = expf(l[i] - lmax);
        mass[b] += w[i];
        sum += w[i];
    }
    *total = sum;
    const double target = top_p * sum;
    int last = TOP_P_BUCKETS - 1;
    double cum = 0.0;
    for (int b = 0; b < TOP_P_BUCKETS; b++) {
        cum += mass[b];
        if (cum >= target) {
            last = b + 1 < TOP_P_BUCKETS ? b + 1 : b;
            break;
        }
    }
    int n = 0;
    for (int i = 0; i < vocab; i++) {
        if (l[i] > -INFINITY && top_p_bucket(lmax, l[i]) <= last) c[n++] = i;
    }
    return n;
}

/* ---- sampling -------------------------------------------------------------------------------- */

/* Work copy of the logits with the penalties applied (NaN stays NaN and is skipped later). */
static void apply_penalties(glim_sampler *s, const float *logits) {
    const glim_sampler_params *p = &s->p;
    memcpy(s->work, logits, (size_t)s->vocab * sizeof *s->work);
    for (int i = 0; i < s->vocab; i++) {
        uint32_t c = s->counts[i];
        if (!c) continue;
        float l = s->work[i];
        l = l > 0.0f ? l / p->repeat_penalty : l * p->repeat_penalty;
        s->work[i] = l - ((float)c * p->frequency_penalty + p->presence_penalty);
    }
}

/* First maximal index of l, NaN skipped; -1 when every entry is NaN. */
static int32_t argmax_first(const float *l, int n) {
    int32_t best = -1;
    for (int i = 0; i < n; i++)
        if (!isnan(l[i]) && (best < 0 || l[i] > l[best])) best = i;
    return best;
}

int32_t glim_sampler_sample(glim_sampler *s, const float *logits) {
    if (!s || !logits) return -1;
    const glim_sampler_params *p = &s->p;
    const float *l = logits;
    if (s->penalties_on) {
        apply_penalties(s, logits);
        l = s->work;
    }
    int32_t *c = s->cand;
    /* top-k's heap orders its tokens best-first (first maximal id, NaN skipped, as argmax_first),
     * so with top-k the best comes from it and the separate argmax pass is saved */
    const int use_k = p->temperature > 0.0f && p->top_k > 0 && p->top_k < s->vocab;
    const int nk = use_k ? heap_top_k(l, s->vocab, p->top_k, c) : 0;
    int32_t best = nk > 0 ? c[0] : argmax_first(l, s->vocab);
    if (p->temperature <= 0.0f || best < 0) return best;
    float lmax = l[best];
    if (lmax == -INFINITY) return best; /* nothing has any probability: greedy's answer */
    if (lmax == INFINITY) {             /* the +inf tokens share all the probability */
        int n_inf = 0;
        for (int i = 0; i < s->vocab; i++) n_inf += l[i] == INFINITY;
        int r = (int)(uniform01(s->rng) * n_inf);
        for (int i = 0; i < s->vocab; i++)
            if (l[i] == INFINITY && r-- == 0) return i;
        return best;
    }

    float *w = s->prob; /* w[id]: exp(l - lmax), the unnormalised probability at T = 1 */
    int n = 0, sorted = 0;
    if (use_k) {
        n = sorted = nk;
        for (int i = 0; i < n; i++) w[c[i]] = expf(l[c[i]] - lmax);
    } else if (p->top_p < 1.0f) {
        double total;
        n = top_p_candidates(l, s->vocab, lmax, p->top_p, w, c, &total);
        if (n > 1) n = mass_select(l, w, c, n, (double)p->top_p * total);
    } else {
        /* with min-p, a token far below its bound (exp(l - lmax) < min_p) never survives it: skip
         * its expf. The margin of 1 in the logit leaves the exact test to the min-p step. */
        const float floor_l = p->min_p > 0.0f ? lmax + logf(p->min_p) - 1.0f : -INFINITY;
        for (int i = 0; i < s->vocab; i++)
            if (l[i] > -INFINITY && l[i] >= floor_l) {
                c[n++] = i;
                w[i] = expf(l[i] - lmax);
            }
    }
    if (p->top_p < 1.0f && sorted && n > 1) { /* top-k's survivors, best-first */
        double total = 0.0;
        for (int i = 0; i < n; i++) total += w[c[i]];
        double target = (double)p->top_p * total, cum = 0.0;
        int i = 0;
        while (i < n) {
            cum += w[c[i++]];
            if (cum >= target) break;
        }
        n = i;
    }
    if (p->min_p > 0.0f && n > 1) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (w[c[i]] >= p->min_p) c[k++] = c[i];
        n = k; /* the best token has w = 1 >= min_p, so k >= 1 */
    }

    /* temperature over the survivors, then the draw */
    double sum = 0.0;
    if (p->temperature != 1.0f) {
        float inv_t = 1.0f / p->temperature;
        for (int i = 0; i < n; i++) w[c[i]] = expf((l[c[i]] - lmax) * inv_t);
    }
    for (int i = 0; i < n; i++) sum += w[c[i]];
    double u = uniform01(s->rng) * sum, cum = 0.0;
    int32_t last = best;
    for (int i = 0; i < n; i++) {
        if (w[c[i]] <= 0.0f) continue;
        last = c[i];
        cum += w[c[i]];
        if (u < cum) return last;
    }
    return last; /* u landed on the rounding edge: the last token with weight */
}
