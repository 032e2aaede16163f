/* hooks_ext.h: the hook entry points beyond the three forward calls of hooks.h, for the API
 * glue (src/glimmer.c) and for device backends (src/cuda/) that run the hooks' math themselves.
 *
 * API glue (src/glimmer.c does both):
 *   - glim_session_free calls glim_hooks_free(s->hooks);
 *   - glim_eval calls glim_hooks_note_tokens(s->hooks, tokens, n, position) once before its
 *     chunks when s->hooks != NULL: captures record token ids (else -1), and the call's last
 *     position is its head token even when every chunk computes logits.
 *
 * A device backend has two choices per hook:
 *   1. Host fallback: copy the rows to the host and call the hooks.h functions (correct, slow).
 *   2. On the device (what the CUDA backend should do):
 *      - Steering: when glim_hooks_generation() changed since its last upload, fetch every
 *        layer's ops with glim_hooks_steer_ops() and upload op->v / op->u (hidden floats each);
 *        after layer l's FFN residual add, apply the layer's ops in order to each of the n rows
 *        with exactly the math of glim_steer_apply() (the reference its tests compare against:
 *        c = x.u, gate on c, then the mode's update; scale 0 ops never appear in the list).
 *      - Capture (after steering): if glim_hooks_capture_layer_slot(h, l) >= 0, the rows
 *        glim_hooks_capture_select() names must reach the host; call
 *        glim_hooks_capture_store(h, l, j, row, ...) for the j-th selected row (e.g. at the end of
 *        the chunk from a staging buffer of [slots][k][hidden]).
 *      - Census: if glim_hooks_census_active(h) and r = glim_hooks_head_row(h, pos0, n,
 *        is_prefill) >= 0, copy row r of layer l's activation silu(gate)*up to the host and call
 *        glim_hooks_ffn_act_row(h, l, row, pos0, n, is_prefill) (the seed's per-token readback).
 *      - Always: glim_hooks_pass_end(h, pos0, n, is_prefill) once per chunk, after the stores
 *        (capture_select, capture_store and head_row answer for the chunk in flight; pass_end
 *        commits it and moves the sequence / token bookkeeping on).
 *   s->hooks may be freed and made again between calls (NULL when no hook is left): a backend
 *   caches device copies keyed by glim_hooks_generation(), which is unique across hook objects. */
#ifndef GLIM_HOOKS_EXT_H
#define GLIM_HOOKS_EXT_H

#include <stdint.h>

#include "hooks.h"

void glim_hooks_free(struct glim_hooks *h);
void glim_hooks_note_tokens(struct glim_hooks *h, const int32_t *tokens, int n, int pos0);

/* Changes whenever the hook configuration changes (steering pushed or cleared, capture or census
 * started or stopped). */
uint64_t glim_hooks_generation(const struct glim_hooks *h);

/* One steering op on one layer: mode/gate values of glimmer_hooks.h. */
typedef struct glim_steer_op {
    int layer;
    int mode;           /* glim_steer_mode */
    float scale;        /* never 0 in the list */
    float target;       /* CLAMP */
    int gate;           /* glim_steer_gate */
    float threshold;
    const float *v;     /* [hidden] ADD: the vector added (d, or u when unit); others: u */
    const float *u;     /* [hidden] d / |d|: the direction c = x.u is measured along */
} glim_steer_op;

/* The ops of layer l, in application order; returns their count (0: none). */
int glim_hooks_steer_ops(const struct glim_hooks *h, int layer, const glim_steer_op **ops);
/* Applies one op to n rows of x [n][hidden] (the CPU path and the reference). */
void glim_steer_apply(const glim_steer_op *op, float *x, int n, int hidden);

/* Capture slot of layer l (its index in the captured layers), or -1. */
int glim_hooks_capture_layer_slot(const struct glim_hooks *h, int layer);
/* Rows (indices 0..n-1 in the chunk) to capture in this chunk, into rows[] (room for n). */
int glim_hooks_capture_select(const struct glim_hooks *h, int pos0, int n, int is_prefill,
                              int *rows);
/* Stores the j-th selected row of this chunk for layer l (row = hidden floats). */
void glim_hooks_capture_store(struct glim_hooks *h, int layer, int j, const float *row, int pos0,
                              int n, int is_prefill);
int glim_hooks_census_active(const struct glim_hooks *h);
/* The row of a chunk that is a decode token for the census and the LAST_PROMPT / HEAD captures
 * (the last position of the glim_eval call when it noted its tokens, else the last row of a chunk
 * with a head), or -1. */
int glim_hooks_head_row(const struct glim_hooks *h, int pos0, int n, int is_prefill);
/* The census for one chunk given only its head row (hidden = intermediate floats): what
 * glim_hooks_ffn_act does with act + head_row * intermediate. */
void glim_hooks_ffn_act_row(struct glim_hooks *h, int layer, const float *row, int pos0, int n,
                            int is_prefill);

#endif
