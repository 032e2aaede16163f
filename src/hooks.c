/* hooks.c: a session's hook object (made when the first hook is configured, freed when the last
 * one goes, so a hook-free session has s->hooks == NULL and pays nothing), the three calls the
 * forward makes (hooks.h), sequence and token bookkeeping, and the entry points of hooks_ext.h
 * that are not one hook's own. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hooks_internal.h"
#include "model.h"
#include "session.h"

/* One counter for all sessions, so a backend never mistakes a new hook object for an old one. */
static uint64_t generation_counter;

static uint64_t next_generation(void) { return __atomic_add_fetch(&generation_counter, 1, __ATOMIC_RELAXED); }

glim_status glim_hooks_get(glim_session *s, struct glim_hooks **out, glim_error *err) {
    if (!s || !s->model) return glim_fail(err, GLIM_E_ARG, "hooks: no session");
    if (s->hooks) {
        s->hooks->generation = next_generation();
        *out = s->hooks;
        return GLIM_OK;
    }
    const glim_config *c = &s->model->cfg;
    if (c->n_layers <= 0 || c->hidden_size <= 0 || c->intermediate_size <= 0 || s->n_ctx <= 0 ||
        s->n_batch <= 0)
        return glim_fail(err, GLIM_E_ARG, "hooks: session has no shape (layers %d, hidden %d, "
                         "intermediate %d, n_ctx %d, n_batch %d)", c->n_layers, c->hidden_size,
                         c->intermediate_size, s->n_ctx, s->n_batch);
    struct glim_hooks *h = calloc(1, sizeof *h);
    if (!h) return glim_fail(err, GLIM_E_NOMEM, "hooks: no memory");
    h->n_layers = c->n_layers;
    h->hidden = c->hidden_size;
    h->inter = c->intermediate_size;
    h->n_ctx = s->n_ctx;
    h->n_batch = s->n_batch;
    h->tok = malloc((size_t)s->n_ctx * sizeof *h->tok);
    h->tok_valid = calloc((size_t)s->n_ctx, 1);
    if (!h->tok || !h->tok_valid) {
        glim_hooks_free(h);
        return glim_fail(err, GLIM_E_NOMEM, "hooks: no memory for %d token slots", s->n_ctx);
    }
    h->eval_last = -1;
    h->generation = next_generation();
    s->hooks = h;
    *out = h;
    return GLIM_OK;
}

void glim_hooks_release_if_empty(glim_session *s) {
    struct glim_hooks *h = s ? s->hooks : NULL;
    if (!h) return;
    if (!h->steer && !h->capture && !h->census) {
        glim_hooks_free(h);
        s->hooks = NULL;
    } else {
        h->generation = next_generation();
    }
}

void glim_hooks_free(struct glim_hooks *h) {
    if (!h) return;
    glim_steer_state_free(h->steer);
    if (h->capture) {
        glim_capture_finish_stream(h, NULL); /* best effort: a stream file is completed */
        glim_capture_state_free(h->capture);
    }
    glim_census_state_free(h->census);
    free(h->tok);
    free(h->tok_valid);
    free(h);
}

uint64_t glim_hooks_generation(const struct glim_hooks *h) { return h ? h->generation : 0; }

void glim_hooks_note_tokens(struct glim_hooks *h, const int32_t *tokens, int n, int pos0) {
    if (!h || !tokens || n <= 0) return;
    h->eval_last = pos0 + n - 1;
    for (int i = 0; i < n; i++) {
        int p = pos0 + i;
        if (p < 0 || p >= h->n_ctx) continue;
        h->tok[p] = tokens[i];
        h->tok_valid[p] = 1;
    }
}

void glim_session_note_tokens(glim_session *s, const int32_t *tokens, int n, int position) {
    if (s) glim_hooks_note_tokens(s->hooks, tokens, n, position);
}

/* ---- the forward's calls (hooks.h) -------------------------------------------------------- */

void glim_hooks_layer_output(struct glim_hooks *h, int layer, float *x, int n, int pos0,
                             int is_prefill) {
    if (!h || layer < 0 || layer >= h->n_layers || n <= 0) return;
    if (h->steer) glim_steer_layer(h, layer, x, n);
    if (h->capture) glim_capture_layer(h, layer, x, n, pos0, is_prefill);
}

void glim_hooks_ffn_act(struct glim_hooks *h, int layer, const float *act, int n, int pos0,
                        int is_prefill) {
    if (!h || layer < 0 || layer >= h->n_layers || n <= 0) return;
    if (h->census) glim_census_act(h, layer, act, n, pos0, is_prefill);
}

void glim_hooks_pass_end(struct glim_hooks *h, int pos0, int n, int is_prefill) {
    if (!h || n <= 0) return;
    if (h->capture) glim_capture_pass_end(h, pos0, n, is_prefill);
    if (h->census) glim_census_pass_end(h, pos0, n, is_prefill);
    h->seq = glim_hooks_seq_of(h, pos0);
    h->any_pass = 1;
    if (h->eval_last >= 0 && pos0 + n - 1 >= h->eval_last) h->eval_last = -1; /* used up */
    /* A noted token is good for the one chunk that evaluates its position. */
    for (int i = 0; i < n; i++) {
        int p = pos0 + i;
        if (p >= 0 && p < h->n_ctx) h->tok_valid[p] = 0;
    }
}

int glim_hooks_census_active(const struct glim_hooks *h) { return h && h->census; }

int glim_hooks_head_row(const struct glim_hooks *h, int pos0, int n, int is_prefill) {
    return h ? glim_hooks_head_row_of(h, pos0, n, is_prefill) : -1;
}

glim_status glim_session_hooks_clear(glim_session *s, glim_error *err) {
    if (!s || !s->hooks) return GLIM_OK;
    glim_status st = GLIM_OK;
    if (s->hooks->capture) st = glim_session_capture_stop(s, err);
    glim_session_census_stop(s);
    glim_session_steer_clear(s);
    if (s->hooks) { /* whatever remains */
        glim_hooks_free(s->hooks);
        s->hooks = NULL;
    }
    return st;
}
