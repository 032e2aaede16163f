/* hooks_fixture.h: for the hook tests, a session with a model shape but no weights and no
 * backend (the hooks only read the config and the session's n_ctx / n_batch), random numbers,
 * and a scratch directory. The forward's calls are made by hand through hooks.h. */
#ifndef GLIM_HOOKS_FIXTURE_H
#define GLIM_HOOKS_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glimmer_hooks.h"
#include "hooks.h"
#include "hooks_ext.h"
#include "model.h"
#include "session.h"

typedef struct fx_session {
    glim_model model;
    glim_session s;
} fx_session;

static inline void fx_init(fx_session *f, int n_layers, int hidden, int inter, int n_ctx,
                           int n_batch) {
    memset(f, 0, sizeof *f);
    f->model.cfg.n_layers = n_layers;
    f->model.cfg.hidden_size = hidden;
    f->model.cfg.intermediate_size = inter;
    f->model.cfg.vocab_size = 1000;
    f->s.model = &f->model;
    f->s.n_ctx = n_ctx;
    f->s.n_batch = n_batch;
}

static inline void fx_free(fx_session *f) { glim_session_hooks_clear(&f->s, NULL); }

/* xorshift64*: reproducible test data. */
static uint64_t fx_rng_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t fx_next(void) {
    fx_rng_state ^= fx_rng_state >> 12;
    fx_rng_state ^= fx_rng_state << 25;
    fx_rng_state ^= fx_rng_state >> 27;
    return fx_rng_state * 2685821657736338717ull;
}
/* Uniform in [-1, 1), never exactly 0. */
static inline float fx_uniform(void) {
    float v = (float)((fx_next() >> 40) / 16777216.0) * 2.0f - 1.0f;
    return v == 0.0f ? 0.5f : v;
}
static inline void fx_fill(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * fx_uniform();
}

/* A fresh directory under /tmp for files a test writes. */
static inline const char *fx_tmpdir(void) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/glim_hooks_XXXXXX");
        if (!mkdtemp(dir)) return "/tmp";
    }
    return dir;
}

static inline const char *fx_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", fx_tmpdir(), name);
    return buf;
}

#endif
