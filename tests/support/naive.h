/* naive.h: a second, deliberately naive forward for tests: double precision, no KV cache (every
 * query attends over an explicit mask), straight from MODEL.md section 2. Options switch on the
 * known ways to get the model wrong (MODEL.md section 7), so tests can show that a fixture tells
 * each of them apart from the right model. */
#ifndef GLIM_TEST_NAIVE_H
#define GLIM_TEST_NAIVE_H

#include "model.h"

typedef struct naive_faults {
    int window_delta;     /* use W + delta keys on sliding layers */
    int rope_on_full;     /* rotate on full layers too */
    int plain_layer_norms;/* w instead of 1 + w on the four layer norms */
    int centered_final;   /* 1 + w on the final norm */
    int swap_eps;         /* 1e-8 where 1e-5 belongs and back */
    int pattern_from_start; /* full layers counted from the start: i % 4 == 3 */
    int no_multiplier;    /* drop output_multiplier */
    int softcap_first;    /* softcap(z) * m instead of softcap(z * m) */
    int no_qk_scale;      /* q not multiplied by qk_scale */
    int no_gate;          /* no sigmoid output gate */
    int no_embed_norm;    /* embedding row not normed */
} naive_faults;

/* logits [T][vocab] for tokens at positions 0..T-1. faults may be NULL. Returns 0, or -1 when
 * out of memory. */
int naive_forward(const glim_model *m, const int32_t *tokens, int T, const naive_faults *faults,
                  float *logits);

#endif
