/* hooks.h: the forward's research hook points (activation steering, residual capture, FFN
 * census), as the seed places them. A session without hooks has s->hooks == NULL and the
 * forward skips every call below. The implementation lives in src/hooks*.c; the public
 * configuration API in include/glimmer_hooks.h. */
#ifndef GLIM_HOOKS_H
#define GLIM_HOOKS_H

#include <stdint.h>

struct glim_hooks;

/* After layer `layer`'s FFN residual add: x is [n][hidden] (row t is position pos0+t).
 * Steering first (may modify x), then residual capture. is_prefill: the pass has no head. */
void glim_hooks_layer_output(struct glim_hooks *h, int layer, float *x, int n, int pos0,
                             int is_prefill);
/* The FFN activation silu(gate)*up of layer `layer`: act is [n][intermediate]. */
void glim_hooks_ffn_act(struct glim_hooks *h, int layer, const float *act, int n, int pos0,
                        int is_prefill);
/* Once per forward chunk, after the last layer (and after the head when there is one). */
void glim_hooks_pass_end(struct glim_hooks *h, int pos0, int n, int is_prefill);

#endif
