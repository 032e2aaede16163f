/* hook_flags.h: the research-hook flags shared by `run`, `chat` and `logits` (steering, residual
 * capture, FFN census): parsing, applying them to a session, and writing the results. A command
 * adds them with four calls:
 *
 *     hook_flags hf = {0};                                   (in its options struct)
 *     } else if (hook_flags_parse(&a, &o->hf)) {             (in its argument loop)
 *     if (hook_flags_apply(CMD, &o->hf, session)) { fail }   (after glim_session_create)
 *     rc |= hook_flags_finish(CMD, &o->hf, session);         (after the last glim_eval)
 *     hook_flags_free(&o->hf);                               (at the end)
 *
 * and hook_flags_help() in its --help. */
#ifndef GLIM_CLI_HOOK_FLAGS_H
#define GLIM_CLI_HOOK_FLAGS_H

#include <stdint.h>

#include "args.h"
#include "glimmer.h"
#include "glimmer_hooks.h"

#define HOOK_FLAGS_MAX_STEER 16

typedef struct hook_steer_spec {
    const char *path;
    glim_steer_params p;
    int layers_given;         /* layers= was part of the spec */
} hook_steer_spec;

typedef struct hook_flags {
    hook_steer_spec steer[HOOK_FLAGS_MAX_STEER];
    int n_steer;
    int cv_first, cv_last, cv_range_given; /* --control-vector-layer-range */
    const char *capture_path;
    glim_capture_select capture_select;
    int32_t *capture_positions;
    int n_capture_positions;
    int32_t *capture_layers;
    int n_capture_layers;
    int capture_max_rows;
    int capture_stream;
    const char *census_path;
    int census_top_k;
    int census_neuron_hist;
    int any;                  /* some hook flag was given */
} hook_flags;

/* 1 when the current argument was a hook flag (consumed; errors reported through args). */
int hook_flags_parse(glim_args *a, hook_flags *f);
void hook_flags_help(void);
/* Loads control vectors and configures the session's hooks; prints "CMD: ..." and returns 1 on
 * failure, 0 otherwise (also when no hook flag was given). */
int hook_flags_apply(const char *cmd, hook_flags *f, glim_session *s);
/* Writes the capture and census files and prints the census summary to stderr; 0 or 1. */
int hook_flags_finish(const char *cmd, hook_flags *f, glim_session *s);
void hook_flags_free(hook_flags *f);

/* Parses "0-3,7,10-12" into a malloc'd list (ascending as written, no duplicates); 0 on success,
 * else -1 with a message in msg. Used by steer-extract's --layers too. */
int hook_parse_ranges(const char *text, int32_t **out, int *n, char *msg, int msg_len);

#endif
