/* extract.c: difference-of-means direction extraction (what `glimmer steer-extract` runs): the
 * residual at the last token of every prompt of two sets, captured per layer through the
 * session's capture hook, averaged in double, and subtracted. One model, one session, many
 * prompts: the capture buffer holds one row and is cleared per prompt. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "glimmer_hooks.h"
#include "hooks_internal.h"
#include "model.h"
#include "session.h"

/* Adds the last-token residual of each prompt of one set into sum [Lc][hidden]. */
static glim_status accumulate(glim_session *s, const int32_t *const *prompts, const int *lens,
                              int n, const char *which, float *logits, size_t vocab, double *sum,
                              glim_error *err) {
    for (int i = 0; i < n; i++) {
        if (!prompts[i] || lens[i] <= 0)
            return glim_fail(err, GLIM_E_ARG, "%s prompt %d is empty", which, i + 1);
        if (lens[i] > s->n_ctx)
            return glim_fail(err, GLIM_E_ARG, "%s prompt %d has %d tokens, more than the "
                             "session's context of %d", which, i + 1, lens[i], s->n_ctx);
        glim_session_reset(s);
        glim_session_capture_clear(s);
        glim_session_note_tokens(s, prompts[i], lens[i], 0);
        glim_status st = glim_eval(s, prompts[i], lens[i], 0, GLIM_LOGITS_LAST, logits, vocab, err);
        if (st) return glim_fail_context(err, "%s prompt %d", which, i + 1);
        glim_capture_view v;
        if ((st = glim_session_capture_view(s, &v, err))) return st;
        if (v.rows != 1)
            return glim_fail(err, GLIM_E_BACKEND, "%s prompt %d: captured %d rows, expected 1 (the "
                             "backend did not call the capture hook)", which, i + 1, v.rows);
        size_t m = (size_t)v.n_layers * (size_t)v.hidden;
        for (size_t k = 0; k < m; k++) sum[k] += v.residual[k];
    }
    return GLIM_OK;
}

glim_status glim_directions_extract(glim_session *s, const int32_t *const *pos, const int *pos_len,
                                    int n_pos, const int32_t *const *neg, const int *neg_len,
                                    int n_neg, const int32_t *layers, int n_layers, int unit,
                                    glim_directions **out, glim_error *err) {
    *out = NULL;
    if (!s || !pos || !neg || !pos_len || !neg_len)
        return glim_fail(err, GLIM_E_ARG, "extract: NULL argument");
    if (n_pos <= 0 || n_neg <= 0)
        return glim_fail(err, GLIM_E_ARG, "extract: need at least one positive and one negative "
                         "prompt (got %d and %d)", n_pos, n_neg);
    if (s->hooks && s->hooks->capture)
        return glim_fail(err, GLIM_E_ARG, "extract: the session already captures; stop that first");
    const glim_config *c = &s->model->cfg;
    glim_capture_params cp = {GLIM_CAPTURE_LAST_PROMPT, NULL, 0, layers, layers ? n_layers : 0,
                              1, NULL, 0};
    glim_status st = glim_session_capture_start(s, &cp, err);
    if (st) return st;
    int Lc = layers ? n_layers : c->n_layers, H = c->hidden_size;
    double *sp = calloc((size_t)Lc * H, sizeof *sp), *sn = calloc((size_t)Lc * H, sizeof *sn);
    float *logits = malloc((size_t)c->vocab_size * sizeof *logits);
    float *v = malloc((size_t)H * sizeof *v);
    glim_directions *d = NULL;
    if (!sp || !sn || !logits || !v) st = glim_fail(err, GLIM_E_NOMEM, "extract: no memory");
    if (!st) st = accumulate(s, pos, pos_len, n_pos, "positive", logits, (size_t)c->vocab_size, sp, err);
    if (!st) st = accumulate(s, neg, neg_len, n_neg, "negative", logits, (size_t)c->vocab_size, sn, err);
    if (!st) st = glim_directions_create(c->n_layers, H, &d, err);
    for (int k = 0; !st && k < Lc; k++) {
        int layer = layers ? layers[k] : k;
        double nn = 0;
        for (int i = 0; i < H; i++) {
            double x = sp[(size_t)k * H + i] / n_pos - sn[(size_t)k * H + i] / n_neg;
            v[i] = (float)x;
            nn += x * x;
        }
        if (unit && nn > 0)
            for (int i = 0; i < H; i++) v[i] = (float)(v[i] / sqrt(nn));
        st = glim_directions_set(d, layer, v, err);
    }
    glim_session_reset(s);
    glim_error e2;
    glim_session_capture_stop(s, &e2);
    free(sp);
    free(sn);
    free(logits);
    free(v);
    if (st) {
        glim_directions_free(d);
        return st;
    }
    *out = d;
    return GLIM_OK;
}
