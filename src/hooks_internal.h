/* hooks_internal.h: the private layout of a session's hooks, shared by hooks.c (lifecycle and
 * dispatch), steering.c, capture.c and census.c. Nothing outside those files includes it. */
#ifndef GLIM_HOOKS_INTERNAL_H
#define GLIM_HOOKS_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "glimmer_hooks.h"
#include "hooks.h"
#include "hooks_ext.h"

struct glim_session;

typedef struct glim_steer_state {
    glim_steer_op *ops;   /* sorted by layer, then push order; ops[i].v owns one block of
                             2*hidden floats: v at [0, hidden), u at [hidden, 2*hidden) */
    int n_ops;
    int *layer_start;     /* [n_layers + 1] ops of layer l: ops[layer_start[l] .. layer_start[l+1]) */
    int n_pushes;
} glim_steer_state;

typedef struct glim_capture_state {
    glim_capture_select select;
    int32_t *positions;   /* sorted */
    int n_positions;
    int32_t *layers;      /* [n_slots] model layer of each slot, in the caller's order */
    int n_slots;
    int *slot_of_layer;   /* [n_layers] -1 when not captured */
    int max_rows;
    float *residual;      /* [max_rows][n_slots][hidden] */
    int rows;             /* rows held in memory */
    int32_t *meta_pos, *meta_tok, *meta_seq; /* [meta_cap], index = streamed + row */
    uint64_t meta_cap;
    uint64_t total, dropped;
    int lp_done_seq;      /* LAST_PROMPT: sequence whose row is taken (-1 none) */
    int *sel;             /* [n_batch] scratch for the selection */
    /* stream mode */
    char *stream_path;
    FILE *stream;
    uint64_t streamed;    /* rows already written to the stream */
    uint64_t header_reserve;
} glim_capture_state;

typedef struct glim_census_state {
    int top_k, neuron_hist;
    double *mass;         /* [L][I] */
    uint64_t *hist;       /* [L][B] */
    uint32_t *nhist;      /* [L][I][B] or NULL */
    uint64_t *nonfinite;  /* [L] */
    double *ov_sum;       /* [L] */
    uint64_t *ov_n;       /* [L] */
    int32_t *prev_top;    /* [L][K] sorted ascending */
    int32_t *prev_pos;    /* [L] -1: none */
    int32_t *prev_seq;    /* [L] */
    int32_t *heap_idx;    /* [K] scratch */
    float *heap_val;      /* [K] scratch */
    int32_t *cur_top;     /* [K] scratch */
    uint64_t decode_tokens, prefill_passes, prefill_tokens, head_passes;
} glim_census_state;

struct glim_hooks {
    int n_layers, hidden, inter, n_ctx, n_batch;
    uint64_t generation;
    int seq;              /* sequence of the last completed chunk */
    int any_pass;         /* a chunk has completed since the hooks were made */
    int eval_last;        /* last position of the glim_eval call that noted its tokens, -1 */
    int32_t *tok;         /* [n_ctx] token noted at each position */
    uint8_t *tok_valid;   /* [n_ctx] */
    glim_steer_state *steer;     /* NULL: no steering */
    glim_capture_state *capture; /* NULL: no capture */
    glim_census_state *census;   /* NULL: no census */
};

/* The sequence a chunk starting at pos0 belongs to. */
static inline int glim_hooks_seq_of(const struct glim_hooks *h, int pos0) {
    return (pos0 == 0 && h->any_pass) ? h->seq + 1 : h->seq;
}

/* The row of this chunk that is "the token with the head" (the last prompt token or a fed-back
 * generated token), or -1. When glim_eval noted its tokens, that is the call's last position (so
 * LOGITS_ALL chunks ending mid-call have none); otherwise the last row of a chunk with a head. */
static inline int glim_hooks_head_row_of(const struct glim_hooks *h, int pos0, int n,
                                         int is_prefill) {
    if (is_prefill || n <= 0) return -1;
    if (h->eval_last >= 0) return h->eval_last >= pos0 && h->eval_last < pos0 + n ? h->eval_last - pos0 : -1;
    return n - 1;
}

/* hooks.c: the session's hooks, made on first use; released when nothing is left. */
glim_status glim_hooks_get(struct glim_session *s, struct glim_hooks **out, glim_error *err);
void glim_hooks_release_if_empty(struct glim_session *s);

/* steering.c */
void glim_steer_state_free(glim_steer_state *st);
void glim_steer_layer(const struct glim_hooks *h, int layer, float *x, int n);

/* capture.c */
void glim_capture_state_free(glim_capture_state *c);
void glim_capture_layer(struct glim_hooks *h, int layer, const float *x, int n, int pos0,
                        int is_prefill);
void glim_capture_pass_end(struct glim_hooks *h, int pos0, int n, int is_prefill);
glim_status glim_capture_finish_stream(struct glim_hooks *h, glim_error *err);

/* census.c */
void glim_census_state_free(glim_census_state *c);
void glim_census_act(struct glim_hooks *h, int layer, const float *act, int n, int pos0,
                     int is_prefill);
void glim_census_pass_end(struct glim_hooks *h, int pos0, int n, int is_prefill);

#endif
