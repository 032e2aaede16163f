/* session.h: the private layout of a session: one timeline over a shared model. */
#ifndef GLIM_SESSION_H
#define GLIM_SESSION_H

#include "glimmer.h"
#include "model.h"

struct glim_hooks; /* hooks.h: steering, residual capture, FFN census */

struct glim_session {
    glim_model *model;
    int n_ctx;            /* tokens the cache holds */
    int n_batch;          /* tokens per forward chunk */
    int n_rewind;         /* tokens a rewind may always go back (glim_session_params) */
    int pos;              /* position of the next token */
    void *backend_state;
    glim_timing timing;
    struct glim_hooks *hooks; /* NULL: no hooks, and no cost */
};

#endif
