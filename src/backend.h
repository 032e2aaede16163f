/* backend.h: the backend contract. A backend runs the forward of a bound model for a session;
 * the CPU backend (src/cpu/) is the oracle, the CUDA backend (src/cuda/) the fast path. The API
 * glue (glimmer.c) validates every argument before calling in, so backends trust their inputs:
 * 1 <= n <= session->n_batch, tokens in range, position == session->pos, room in the context. */
#ifndef GLIM_BACKEND_H
#define GLIM_BACKEND_H

#include "model.h"
#include "session.h"

typedef struct glim_backend {
    const char *name;
    /* Per-model state (for CUDA: the weights on the device). */
    glim_status (*model_init)(glim_model *m, void **state, glim_error *err);
    void (*model_free)(glim_model *m, void *state);
    /* Bytes session_init will allocate for (n_ctx, n_batch, n_rewind). */
    uint64_t (*session_bytes)(const glim_model *m, int n_ctx, int n_batch, int n_rewind);
    /* Allocates every byte the session will use (KV cache, scratch); nothing after this. */
    glim_status (*session_init)(glim_session *s, void **state, glim_error *err);
    void (*session_free)(glim_session *s, void *state);
    /* Runs tokens[0..n) at positions s->pos .. s->pos+n-1 and writes logits per mode
     * (LAST: the last row; ALL: n rows). Does not advance s->pos (the caller does). */
    glim_status (*forward)(glim_session *s, const int32_t *tokens, int n, glim_logits_mode mode,
                           float *logits, glim_error *err);
    /* Rows of a sliding layer's KV ring (key at position j lives in row j % rows): how far back
     * glim_session_rewind may go. At least window + n_rewind. */
    int (*sliding_rows)(const glim_session *s);
} glim_backend;

extern const glim_backend glim_backend_cpu;
/* NULL in a build without CUDA. */
const glim_backend *glim_backend_cuda_get(void);

#endif
