/* cmd_chat.c: `glimmer chat`: an interactive conversation in Muse Glimmer's chat format.
 * Each line typed is a user turn; the reply streams as it is generated, the reasoning (to=self)
 * shown apart from the answer (dimmed on a terminal, marked with [reasoning] / [answer]
 * otherwise). The conversation stays in the session's KV cache: each turn evaluates only its
 * new tokens (the user message and "<|start|>assistant"), and the assistant's own tokens are
 * already there from generation. /reset starts over, /quit (or end of input) leaves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "glimmer.h"
#include "glimmer_text.h"
#include "hook_flags.h"

#define CMD "glimmer chat"

typedef struct chat_opts {
    glim_cli_model model;
    glim_cli_sampling samp;
    const char *system, *reasoning, *date;
    int n_predict, ctx, batch, hide_reasoning;
    hook_flags hf;
} chat_opts;

typedef struct chat {
    const chat_opts *o;
    glim_tokenizer *tok;
    glim_model *m;
    const glim_model_info *in;
    glim_session *s;
    glim_sampler *smp;
    float *logits;
    glim_chat_message *hist; /* the conversation so far (strings owned), for rendering */
    int n_hist, cap_hist;
    int32_t eot;   /* <|eot|>: closes every assistant turn in the cache */
    int color;     /* stdout is a terminal: dim the reasoning */
    int turn;
} chat;

static void chat_help(void) {
    printf("usage: glimmer chat -m DIR [options]\n\n"
           "Chats with the model in the Muse chat format, one line per user turn. The reply\n"
           "streams as it is generated; reasoning is shown dimmed (or marked [reasoning]) apart\n"
           "from the answer. History stays in the KV cache, so each turn evaluates only its new\n"
           "tokens. Commands: /reset (new conversation), /quit. Per-turn statistics go to stderr.\n\n"
           "conversation:\n"
           "  --system TEXT          system message (default: the model's default one, with\n"
           "                         knowledge cutoff 04-01-2026 and today's date)\n"
           "  --reasoning R          reasoning strength: low, medium, high (default) or xhigh\n"
           "  --hide-reasoning       do not print the reasoning\n"
           "  --date DD-MM-YYYY      current date for the default system message (default today)\n"
           "generation:\n"
           "  -n, --n-predict N      most tokens per reply (default 4096)\n"
           "  -c, --ctx-size CTX     session context in tokens (default 8192, at most the model's)\n"
           "  -b, --batch-size B     prompt tokens evaluated together per chunk (default 64)\n\n");
    args_model_help();
    args_sampling_help();
    hook_flags_help();
    printf("\nexit status: 0 ok, 1 runtime error (model, memory, backend), 2 usage error\n");
}

static int parse(int argc, char **argv, chat_opts *o) {
    glim_args a;
    args_init(&a, CMD, argc, argv);
    while (args_next(&a)) {
        if (args_help(&a)) {
            chat_help();
            return 0;
        } else if (args_model(&a, &o->model) || args_sampling(&a, &o->samp) ||
                   hook_flags_parse(&a, &o->hf)) {
        } else if (args_flag(&a, "--system", NULL)) {
            o->system = a.val;
        } else if (args_flag(&a, "--reasoning", NULL)) {
            o->reasoning = a.val;
        } else if (args_flag(&a, "--date", NULL)) {
            o->date = a.val;
        } else if (args_flag(&a, "-n", "--n-predict")) {
            args_int(&a, &o->n_predict, 1, 2147483647);
        } else if (args_flag(&a, "-c", "--ctx-size")) {
            args_int(&a, &o->ctx, 16, 2147483647);
        } else if (args_flag(&a, "-b", "--batch-size")) {
            args_int(&a, &o->batch, 1, 2147483647);
        } else if (args_switch(&a, "--hide-reasoning")) {
            o->hide_reasoning = 1;
        } else {
            args_unknown(&a);
        }
    }
    if (a.err) return 2;
    if (!o->model.dir) args_error(&a, "missing -m DIR (the checkpoint directory)");
    else if (o->reasoning && strcmp(o->reasoning, "low") && strcmp(o->reasoning, "medium") &&
             strcmp(o->reasoning, "high") && strcmp(o->reasoning, "xhigh"))
        args_error(&a, "--reasoning '%s': expected low, medium, high or xhigh", o->reasoning);
    if (a.err) return 2;
    args_sampling_done(&o->samp);
    return -1;
}

static int is_stop(const glim_model_info *in, int32_t id) {
    for (int i = 0; i < in->n_stop_ids; i++)
        if (in->stop_ids[i] == id) return 1;
    return 0;
}

static glim_status eval(chat *c, const int32_t *ids, int n, glim_error *err) {
    for (int i = 0; i < n; i++) glim_sampler_accept(c->smp, ids[i]);
    return glim_eval(c->s, ids, n, glim_session_position(c->s), GLIM_LOGITS_LAST, c->logits,
                     (size_t)c->in->vocab_size, err);
}

/* Shows one parser delta: reasoning dimmed or marked, the answer plain, tool calls marked. */
static void show(chat *c, const glim_chat_delta *d, glim_chat_channel *shown) {
    int hide = d->channel == GLIM_CHANNEL_REASONING && c->o->hide_reasoning;
    if (d->new_message && !hide && d->channel != *shown) {
        if (c->color) fputs("\033[0m", stdout);
        if (*shown != GLIM_CHANNEL_HEADER) fputc('\n', stdout);
        if (d->channel == GLIM_CHANNEL_REASONING) fputs(c->color ? "\033[2m" : "[reasoning]\n", stdout);
        else if (d->channel == GLIM_CHANNEL_TOOL)
            printf(c->color ? "\033[2m[call %s]\n" : "[call %s]\n", d->recipient);
        else if (!c->color) fputs("[answer]\n", stdout);
        *shown = d->channel;
    }
    if (!hide && d->len && d->channel != GLIM_CHANNEL_HEADER) fwrite(d->text, 1, d->len, stdout);
    fflush(stdout);
}

static int hist_add(chat *c, glim_chat_role role, const char *content, const char *reasoning) {
    if (c->n_hist == c->cap_hist) {
        int cap = c->cap_hist ? 2 * c->cap_hist : 16;
        glim_chat_message *h = realloc(c->hist, (size_t)cap * sizeof *h);
        if (!h) return 0;
        c->hist = h;
        c->cap_hist = cap;
    }
    c->hist[c->n_hist++] = (glim_chat_message){.role = role, .content = content ? strdup(content) : NULL,
                                                .reasoning = reasoning ? strdup(reasoning) : NULL};
    return 1;
}

static void hist_clear(chat *c) {
    for (int i = 0; i < c->n_hist; i++) {
        free((char *)c->hist[i].content);
        free((char *)c->hist[i].reasoning);
    }
    c->n_hist = 0;
}

/* Generates one reply. Returns 0, or 1 after a runtime error. */
static int reply(chat *c, int n_new, double t_prompt) {
    glim_error err = {0};
    glim_chat_parser *p = glim_chat_parser_new(c->tok, NULL, 0);
    if (!p) return 1;
    glim_chat_channel shown = GLIM_CHANNEL_HEADER;
    int produced = 0, rc = 0;
    const char *why = "-n reached";
    double t0 = args_now();
    while (produced < c->o->n_predict) {
        int32_t id = glim_sampler_sample(c->smp, c->logits);
        if (id < 0) {
            fprintf(stderr, "\n" CMD ": the logits are all NaN: nothing to sample\n");
            rc = 1;
            break;
        }
        produced++;
        glim_chat_delta d;
        int stop = glim_chat_parser_push(p, id, &d);
        show(c, &d, &shown);
        if (stop || is_stop(c->in, id)) {
            why = "stop token";
            break;
        }
        if (glim_session_position(c->s) + 2 > glim_session_n_ctx(c->s)) {
            why = "context full (/reset or a larger -c)";
            break;
        }
        if (eval(c, &id, 1, &err)) {
            fprintf(stderr, "\n" CMD ": decoding failed: %s\n", err.message);
            rc = 1;
            break;
        }
    }
    double t1 = args_now();
    if (c->color) fputs("\033[0m", stdout);
    fputc('\n', stdout);
    glim_chat_result r;
    if (!rc && glim_chat_parser_finish(p, &r, &err) == GLIM_OK) {
        for (int i = 0; i < r.n_calls; i++)
            printf("[tool call] %s %s\n", r.calls[i].name, r.calls[i].arguments);
        hist_add(c, GLIM_ROLE_ASSISTANT, r.answer, r.reasoning);
        if (r.malformed) fprintf(stderr, "(the reply did not follow the chat format: %s)\n", r.problem);
        glim_chat_result_free(&r);
    }
    glim_chat_parser_free(p);
    fflush(stdout);
    /* Close the turn in the cache with <|eot|>: the sampled stop token was never evaluated, and a
     * reply cut short needs closing too. */
    if (!rc && glim_session_position(c->s) < glim_session_n_ctx(c->s) && eval(c, &c->eot, 1, &err)) {
        fprintf(stderr, CMD ": %s\n", err.message);
        rc = 1;
    }
    fprintf(stderr, "[turn %d: %d new prompt tokens in %.2f s, %d generated in %.2f s (%.1f tokens/s), "
                    "%d in cache; stopped: %s]\n", c->turn, n_new, t_prompt, produced, t1 - t0,
            t1 > t0 ? produced / (t1 - t0) : 0.0, glim_session_position(c->s), why);
    return rc;
}

/* One user turn: renders only what is new (the whole header on the first turn), evaluates it,
 * then generates. Returns 0, or 1 after a runtime error. */
static int user_turn(chat *c, const char *text) {
    if (c->n_hist == 0 && c->o->system) hist_add(c, GLIM_ROLE_SYSTEM, c->o->system, NULL);
    int first = c->n_hist == 0 || (c->n_hist == 1 && c->hist[0].role == GLIM_ROLE_SYSTEM) ? 0 : c->n_hist;
    if (!hist_add(c, GLIM_ROLE_USER, text, NULL)) return 1;
    /* the first turn renders the whole header; later ones only the new user message */
    glim_chat_options co = {.reasoning_strength = c->o->reasoning, .current_date = c->o->date,
                            .add_generation_prompt = 1, .first_message = first};
    glim_tokens t = {0};
    glim_error err = {0};
    if (glim_chat_tokenize(c->tok, c->hist, c->n_hist, &co, &t, &err) != GLIM_OK) {
        fprintf(stderr, CMD ": %s\n", err.message);
        return 1;
    }
    int rc = 0;
    int room = glim_session_n_ctx(c->s) - glim_session_position(c->s);
    if ((long long)t.n + 2 > room) {
        fprintf(stderr, CMD ": this turn needs %zu tokens; %d are left in the context. /reset, or "
                        "start with a larger -c\n", t.n, room);
        free((char *)c->hist[--c->n_hist].content); /* the turn did not happen */
    } else {
        c->turn++;
        double t0 = args_now();
        if (eval(c, t.ids, (int)t.n, &err)) {
            fprintf(stderr, CMD ": evaluating the prompt failed: %s\n", err.message);
            rc = 1;
        } else {
            rc = reply(c, (int)t.n, args_now() - t0);
        }
    }
    glim_tokens_free(&t);
    return rc;
}

static int repl(chat *c) {
    char *line = NULL;
    size_t cap = 0;
    int interactive = isatty(0), rc = 0;
    for (;;) {
        if (interactive) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n == 0) continue;
        if (!strcmp(line, "/quit") || !strcmp(line, "/exit")) break;
        if (!strcmp(line, "/reset")) {
            glim_error err = {0};
            glim_session_reset(c->s);
            hist_clear(c);
            glim_sampler_free(c->smp); /* forget the penalties' history too */
            c->smp = NULL;
            if (glim_sampler_create(&c->o->samp.p, c->in->vocab_size, &c->smp, &err) != GLIM_OK) {
                fprintf(stderr, CMD ": %s\n", err.message);
                rc = 1;
                break;
            }
            fprintf(stderr, "[new conversation]\n");
            continue;
        }
        if ((rc = user_turn(c, line)) != 0) break;
    }
    free(line);
    return rc;
}

int cmd_chat(int argc, char **argv) {
    chat_opts o = {.samp = args_sampling_defaults(), .n_predict = 4096, .ctx = 0, .batch = 64};
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    chat c = {.o = &o, .color = isatty(1)};
    glim_error err = {0};
    if (glim_tokenizer_load(o.model.dir, &c.tok, &err) != GLIM_OK) {
        fprintf(stderr, CMD ": %s\n", err.message);
        return 1;
    }
    rc = 1;
    c.eot = glim_tokenizer_find(c.tok, "<|eot|>");
    if (c.eot < 0) {
        fprintf(stderr, CMD ": the tokenizer of %s has no <|eot|>: not a Muse chat model\n", o.model.dir);
        goto out;
    }
    if (!(c.m = args_open_model(CMD, &o.model))) goto out;
    c.in = glim_model_get_info(c.m);
    if (glim_tokenizer_n_vocab(c.tok) > c.in->vocab_size) {
        fprintf(stderr, CMD ": the tokenizer has %d ids but the model only %d\n",
                glim_tokenizer_n_vocab(c.tok), c.in->vocab_size);
        goto out;
    }
    int ctx = o.ctx ? o.ctx : 8192;
    if (ctx > c.in->max_position) ctx = c.in->max_position;
    glim_session_params sp = {ctx, o.batch, 0};
    c.logits = malloc(sizeof(float) * (size_t)c.in->vocab_size);
    if (!c.logits || glim_session_create(c.m, &sp, &c.s, &err) != GLIM_OK) {
        fprintf(stderr, CMD ": cannot create a session of %d tokens: %s\n", ctx,
                c.logits ? err.message : "out of memory");
        goto out;
    }
    if (glim_sampler_create(&o.samp.p, c.in->vocab_size, &c.smp, &err) != GLIM_OK) {
        fprintf(stderr, CMD ": %s\n", err.message);
        rc = 2;
        goto out;
    }
    if (hook_flags_apply(CMD, &o.hf, c.s)) goto out;
    fprintf(stderr, "[context %d tokens, seed %llu; /reset starts over, /quit leaves]\n", ctx,
            (unsigned long long)o.samp.p.seed);
    rc = repl(&c);
    rc |= hook_flags_finish(CMD, &o.hf, c.s);
out:
    hook_flags_free(&o.hf);
    hist_clear(&c);
    free(c.hist);
    glim_sampler_free(c.smp);
    glim_session_free(c.s);
    free(c.logits);
    glim_model_close(c.m);
    glim_tokenizer_free(c.tok);
    return rc;
}
