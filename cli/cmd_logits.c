/* cmd_logits.c: `glimmer logits`: evaluates token ids through the path generation uses (one
 * session, glim_eval with GLIM_LOGITS_ALL, which runs them in n_batch chunks) and writes the
 * logits of every position to a safetensors file: `logits` F32 [T, vocab] and `tokens` I32 [T].
 * This is how the engine is compared with reference logits from transformers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "glimmer.h"
#include "hook_flags.h"
#include "safetensors.h" /* private header: only for the writer, glim_st_write */

#define CMD "glimmer logits"

static void logits_help(void) {
    printf("usage: glimmer logits -m DIR --tokens IDS -o OUT.safetensors [options]\n\n"
           "Evaluates the ids in one session the way generation does (glim_eval over all of them,\n"
           "in chunks of -b) and writes a safetensors file with two tensors:\n"
           "  logits   F32 [T, vocab]   row t = the logits after token t (predicting token t+1)\n"
           "  tokens   I32 [T]          the ids evaluated\n"
           "plus metadata: the checkpoint directory, backend and batch size.\n\n"
           "  --tokens IDS           token ids, comma-separated (e.g. 200000,1,2)\n"
           "  -o, --output FILE      where to write (written to FILE.tmp, then renamed)\n"
           "  -c, --ctx-size CTX     session context (default: T)\n"
           "  -b, --batch-size B     tokens evaluated together per chunk (default 64)\n\n");
    args_model_help();
    hook_flags_help();
    printf("\nMemory: the logits need T x vocab x 4 bytes (about 0.8 MB per token for Muse\n"
           "Glimmer's 202048-entry vocabulary).\n\n"
           "exit status: 0 ok, 1 runtime error (model, memory, backend, writing), 2 usage error\n");
}

typedef struct logits_opts {
    glim_cli_model model;
    const char *out;
    int32_t *tokens;
    int n, ctx, batch;
    hook_flags hf;
} logits_opts;

static int parse(int argc, char **argv, logits_opts *o) {
    glim_args a;
    args_init(&a, CMD, argc, argv);
    while (args_next(&a)) {
        if (args_help(&a)) {
            logits_help();
            return 0;
        } else if (args_model(&a, &o->model) || hook_flags_parse(&a, &o->hf)) {
        } else if (args_flag(&a, "--tokens", NULL)) {
            args_tokens(&a, &o->tokens, &o->n);
        } else if (args_flag(&a, "-o", "--output")) {
            if (!a.err && !*a.val) args_error(&a, "%s is empty: give an output file", a.flag);
            o->out = a.val;
        } else if (args_flag(&a, "-c", "--ctx-size")) {
            args_int(&a, &o->ctx, 1, 2147483647);
        } else if (args_flag(&a, "-b", "--batch-size")) {
            args_int(&a, &o->batch, 1, 2147483647);
        } else {
            args_unknown(&a);
        }
    }
    if (a.err) return 2;
    if (!o->model.dir) args_error(&a, "missing -m DIR (the checkpoint directory)");
    else if (!o->tokens) args_error(&a, "missing --tokens IDS");
    else if (!o->out) args_error(&a, "missing -o OUT.safetensors");
    return a.err ? 2 : -1;
}

/* Evaluates and writes; returns the exit status. */
static int evaluate(glim_model *m, logits_opts *o) {
    const glim_model_info *in = glim_model_get_info(m);
    int ctx = o->ctx ? o->ctx : o->n;
    if (o->n > ctx || ctx > in->max_position) {
        fprintf(stderr, CMD ": %d tokens need a context of at least %d; got -c %d (the model's max "
                        "position is %d)\n", o->n, o->n, ctx, in->max_position);
        return 2;
    }
    size_t len = (size_t)o->n * (size_t)in->vocab_size;
    float *logits = malloc(len * sizeof *logits);
    if (!logits) {
        fprintf(stderr, CMD ": out of memory for %d x %d logits (%zu bytes)\n", o->n,
                in->vocab_size, len * sizeof *logits);
        return 1;
    }
    glim_session *s = NULL;
    glim_error err = {0};
    glim_session_params sp = {ctx, o->batch, 0};
    int rc = 1;
    if (glim_session_create(m, &sp, &s, &err) != GLIM_OK) {
        fprintf(stderr, CMD ": cannot create a session of %d tokens: %s\n", ctx, err.message);
        goto out;
    }
    if (hook_flags_apply(CMD, &o->hf, s)) goto out;
    double t0 = args_now();
    if (glim_eval(s, o->tokens, o->n, 0, GLIM_LOGITS_ALL, logits, len, &err) != GLIM_OK) {
        fprintf(stderr, CMD ": evaluating %d tokens failed: %s\n", o->n, err.message);
        goto out;
    }
    double t1 = args_now();
    if (hook_flags_finish(CMD, &o->hf, s)) goto out;

    glim_st_out t[2] = {
        {"logits", GLIM_DT_F32, 2, {o->n, in->vocab_size}, logits},
        {"tokens", GLIM_DT_I32, 1, {o->n}, o->tokens},
    };
    char batch[32];
    snprintf(batch, sizeof batch, "%d", o->batch ? o->batch : 64);
    const char *keys[] = {"checkpoint", "backend", "n_batch", "producer"};
    const char *vals[] = {o->model.dir, in->backend ? in->backend : "", batch, "glimmer logits"};
    if (glim_st_write(o->out, t, 2, keys, vals, 4, &err) != GLIM_OK) {
        fprintf(stderr, CMD ": cannot write '%s': %s\n", o->out, err.message);
        goto out;
    }
    fprintf(stderr, "wrote %s: logits F32 [%d, %d], tokens I32 [%d] (%d tokens in %.3f s)\n",
            o->out, o->n, in->vocab_size, o->n, o->n, t1 - t0);
    rc = 0;
out:
    glim_session_free(s);
    free(logits);
    return rc;
}

int cmd_logits(int argc, char **argv) {
    logits_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc < 0) {
        glim_model *m = args_open_model(CMD, &o.model);
        if (!m) rc = 1;
        else {
            rc = args_check_vocab(CMD, "--tokens", o.tokens, o.n, glim_model_get_info(m)->vocab_size)
                     ? 2
                     : evaluate(m, &o);
            glim_model_close(m);
        }
    }
    hook_flags_free(&o.hf);
    free(o.tokens);
    return rc;
}
