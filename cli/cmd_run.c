/* cmd_run.c: `glimmer run`: prefill a prompt (token ids, or text through the checkpoint's
 * tokenizer), then generate with the sampler, streaming each id (or, for a text prompt, the text)
 * to stdout as it is picked, until a stop id, -n tokens, or a full context. Prompt and decode
 * speeds (monotonic wall clock) go to stderr, so stdout is only the output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "glimmer.h"
#include "glimmer_text.h"
#include "hook_flags.h"

#define CMD "glimmer run"

static void run_help(void) {
    printf("usage: glimmer run -m DIR --tokens IDS [-n N] [options]\n\n"
           "Evaluates the prompt ids (prefill), then generates up to N ids, printing each to stdout\n"
           "as soon as it is picked (space-separated, one line). Generation stops at a stop id of\n"
           "the model (from generation_config.json; the stop id is printed), after N ids, or when\n"
           "the context is full. Then stderr gets the prompt and decode speed in tokens/s.\n\n"
           "example: glimmer run -m ckpt --tokens 200000,1,2 -n 32 --temp 0 (greedy)\n\n"
           "prompt:\n"
           "  --tokens IDS           prompt token ids, comma-separated (e.g. 200000,1,2; BOS is\n"
           "                         not added for you: 200000 is Muse Glimmer's BOS)\n"
           "  -p, --prompt TEXT      text prompt, tokenized with the checkpoint's tokenizer.json\n"
           "                         (BOS added; special tokens such as <|eot|> in the text are\n"
           "                         parsed, as llama.cpp does); the output is text\n"
           "  --ids                  with -p: print the generated ids instead of text\n"
           "generation:\n"
           "  -n, --n-predict N      ids to generate, >= 0 (default 32)\n"
           "  --ignore-eos           do not stop at stop ids (for timing)\n"
           "  -c, --ctx-size CTX     session context (default: prompt + N, at most the model's max\n"
           "                         position); generation stops when it is full\n"
           "  -b, --batch-size B     prompt tokens evaluated together per chunk (default 64)\n\n");
    args_model_help();
    args_sampling_help();
    hook_flags_help();
    printf("\nexit status: 0 ok, 1 runtime error (model, memory, backend), 2 usage error\n");
}

/* ---- text prompts: -p is handled HERE ------------------------------------------------------
 * The text is tokenized with the checkpoint's tokenizer.json (include/glimmer_text.h): BOS added
 * by the post-processor, special tokens written in the text parsed as such (what llama.cpp does
 * with a prompt). A checkpoint without a usable tokenizer.json makes -p an error that says so.
 * Returns an exit status (0 = *ids / *n filled). */
static int prompt_from_text(const char *dir, const char *text, int32_t **ids, int *n,
                            glim_tokenizer **tok_out) {
    glim_tokenizer *tok = NULL;
    glim_tokens t = {0};
    glim_error err = {0};
    if (glim_tokenizer_load(dir, &tok, &err) != GLIM_OK) {
        fprintf(stderr, CMD ": -p (text prompt) needs the tokenizer of '%s': %s\n", dir,
                err.message);
        return 1;
    }
    int rc = 0;
    if (glim_tokenize(tok, text, strlen(text), GLIM_TOK_ADD_SPECIAL | GLIM_TOK_PARSE_SPECIAL, &t,
                      &err) != GLIM_OK) {
        fprintf(stderr, CMD ": cannot tokenize the prompt: %s\n", err.message);
        rc = 1;
    } else if (t.n == 0 || t.n > 2147483647u) {
        fprintf(stderr, CMD ": the prompt tokenizes to %zu tokens\n", t.n);
        rc = 2;
    } else {
        *ids = t.ids; /* ownership moves to the caller (freed with free) */
        *n = (int)t.n;
        t.ids = NULL;
    }
    glim_tokens_free(&t);
    if (rc == 0) *tok_out = tok; /* kept to print the output as text */
    else glim_tokenizer_free(tok);
    return rc;
}

typedef struct run_opts {
    glim_cli_model model;
    glim_cli_sampling samp;
    const char *text;
    int32_t *prompt;
    int n_prompt, n_predict, ctx, batch, ignore_eos, print_ids;
    glim_tokenizer *tok;  /* set for a text prompt: the output is printed as text */
    hook_flags hf;
} run_opts;

static int parse(int argc, char **argv, run_opts *o) {
    glim_args a;
    args_init(&a, CMD, argc, argv);
    while (args_next(&a)) {
        if (args_help(&a)) {
            run_help();
            return 0;
        } else if (args_model(&a, &o->model) || args_sampling(&a, &o->samp)) {
        } else if (args_flag(&a, "--tokens", NULL)) {
            args_tokens(&a, &o->prompt, &o->n_prompt);
        } else if (args_flag(&a, "-p", "--prompt")) {
            o->text = a.val;
        } else if (args_flag(&a, "-n", "--n-predict")) {
            args_int(&a, &o->n_predict, 0, 2147483647);
        } else if (args_flag(&a, "-c", "--ctx-size")) {
            args_int(&a, &o->ctx, 1, 2147483647);
        } else if (args_flag(&a, "-b", "--batch-size")) {
            args_int(&a, &o->batch, 1, 2147483647);
        } else if (args_switch(&a, "--ids")) {
            o->print_ids = 1;
        } else if (hook_flags_parse(&a, &o->hf)) {
        } else if (args_switch(&a, "--ignore-eos")) {
            o->ignore_eos = 1;
        } else {
            args_unknown(&a);
        }
    }
    if (a.err) return 2;
    if (!o->model.dir) args_error(&a, "missing -m DIR (the checkpoint directory)");
    else if (o->text && o->prompt) args_error(&a, "give either --tokens or -p, not both");
    else if (!o->text && !o->prompt) args_error(&a, "missing the prompt: --tokens IDS");
    if (a.err) return 2;
    args_sampling_done(&o->samp);
    return -1; /* parsed: go on */
}

static int is_stop(const glim_model_info *in, int32_t id) {
    for (int i = 0; i < in->n_stop_ids; i++)
        if (in->stop_ids[i] == id) return 1;
    return 0;
}

/* Prefill, then the sample/print/evaluate loop. Returns the exit status. */
static int generate(glim_model *m, glim_session *s, glim_sampler *smp, const run_opts *o) {
    const glim_model_info *in = glim_model_get_info(m);
    size_t vocab = (size_t)in->vocab_size;
    float *logits = malloc(vocab * sizeof *logits);
    if (!logits) {
        fprintf(stderr, CMD ": out of memory for %zu logits\n", vocab);
        return 1;
    }
    glim_error err = {0};
    int rc = 1, produced = 0, decoded = 0;
    const char *why = "-n reached";
    /* a text prompt prints text: pieces of UTF-8 only once complete */
    glim_stream_decoder *text = o->tok && !o->print_ids ? glim_stream_decoder_new(o->tok, 0) : NULL;
    for (int i = 0; i < o->n_prompt; i++) glim_sampler_accept(smp, o->prompt[i]);

    double t0 = args_now();
    if (glim_eval(s, o->prompt, o->n_prompt, 0, GLIM_LOGITS_LAST, logits, vocab, &err)) {
        fprintf(stderr, CMD ": prefill of %d tokens failed: %s\n", o->n_prompt, err.message);
        goto out;
    }
    double t1 = args_now();
    char stop_note[64] = "";
    while (produced < o->n_predict) {
        int32_t id = glim_sampler_sample(smp, logits);
        if (id < 0) {
            fprintf(stderr, "\n" CMD ": the logits at position %d are all NaN: nothing to sample\n",
                    glim_session_position(s));
            goto out;
        }
        if (text) {
            size_t len;
            const char *piece = glim_stream_decoder_push(text, id, &len);
            fwrite(piece, 1, len, stdout);
        } else {
            printf(produced ? " %d" : "%d", id);
        }
        fflush(stdout);
        produced++;
        glim_sampler_accept(smp, id);
        if (!o->ignore_eos && is_stop(in, id)) {
            snprintf(stop_note, sizeof stop_note, "stop id %d", id);
            why = stop_note;
            break;
        }
        if (produced == o->n_predict) break;
        int pos = glim_session_position(s);
        if (pos >= glim_session_n_ctx(s)) {
            why = "context full (see -c)";
            break;
        }
        if (glim_eval(s, &id, 1, pos, GLIM_LOGITS_LAST, logits, vocab, &err)) {
            fprintf(stderr, "\n" CMD ": decoding at position %d failed: %s\n", pos, err.message);
            goto out;
        }
        decoded++;
    }
    double t2 = args_now();
    if (text) {
        size_t len;
        const char *rest = glim_stream_decoder_flush(text, &len);
        fwrite(rest, 1, len, stdout);
    }
    printf("\n");
    if (fflush(stdout) != 0) {
        fprintf(stderr, CMD ": cannot write to stdout\n");
        goto out;
    }
    double tp = t1 - t0, td = t2 - t1;
    fprintf(stderr, "prompt: %d tokens in %.3f s, %.1f tokens/s\n", o->n_prompt, tp,
            tp > 0 ? o->n_prompt / tp : 0.0);
    fprintf(stderr, "decode: %d tokens in %.3f s, %.1f tokens/s (%d generated; stopped: %s)\n",
            decoded, td, decoded && td > 0 ? decoded / td : 0.0, produced, why);
    rc = 0;
out:
    glim_stream_decoder_free(text);
    free(logits);
    return rc;
}

int cmd_run(int argc, char **argv) {
    run_opts o = {.samp = args_sampling_defaults(), .n_predict = 32};
    int rc = parse(argc, argv, &o);
    if (rc >= 0) goto done;
    if (o.text &&
        (rc = prompt_from_text(o.model.dir, o.text, &o.prompt, &o.n_prompt, &o.tok)) != 0)
        goto done;

    glim_model *m = args_open_model(CMD, &o.model);
    glim_session *s = NULL;
    glim_sampler *smp = NULL;
    glim_error err = {0};
    rc = 1;
    if (!m) goto done;
    const glim_model_info *in = glim_model_get_info(m);
    if (args_check_vocab(CMD, o.text ? "the prompt" : "--tokens", o.prompt, o.n_prompt,
                         in->vocab_size)) {
        rc = 2;
        goto close;
    }
    long long need = (long long)o.n_prompt + o.n_predict;
    int ctx = o.ctx ? o.ctx : (int)(need < in->max_position ? need : in->max_position);
    if (o.n_prompt > ctx || ctx > in->max_position) {
        fprintf(stderr, CMD ": the prompt has %d tokens; the context is %d (-c) and the model's "
                        "max position %d\n", o.n_prompt, ctx, in->max_position);
        rc = 2;
        goto close;
    }
    glim_session_params sp = {ctx, o.batch, 0};
    if (glim_session_create(m, &sp, &s, &err) != GLIM_OK) {
        fprintf(stderr, CMD ": cannot create a session of %d tokens: %s\n", ctx, err.message);
        goto close;
    }
    if (glim_sampler_create(&o.samp.p, in->vocab_size, &smp, &err) != GLIM_OK) {
        fprintf(stderr, CMD ": %s\n", err.message);
        rc = 2;
        goto close;
    }
    fprintf(stderr, "seed: %llu\n", (unsigned long long)o.samp.p.seed);
    if (hook_flags_apply(CMD, &o.hf, s)) goto close;
    rc = generate(m, s, smp, &o);
    rc |= hook_flags_finish(CMD, &o.hf, s);
close:
    glim_sampler_free(smp);
    glim_session_free(s);
    glim_model_close(m);
done:
    hook_flags_free(&o.hf);
    glim_tokenizer_free(o.tok);
    free(o.prompt);
    return rc;
}
