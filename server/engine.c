/* engine.c: generation for `glimmer serve`. One model and tokenizer, and `parallel` sessions
 * ("slots"), each remembering the token ids its KV cache holds. A request takes the free slot
 * whose cache shares the longest prefix with its prompt (a conversation that grows by a turn
 * re-evaluates only the turn), rewinds it to that prefix, evaluates the rest, then generates
 * token by token. Evaluations of all slots take turns under one lock, a token or a batch of
 * prompt tokens at a time, so concurrent requests interleave instead of queueing whole.
 * Chat output goes through the Muse chat parser (reasoning, answer, tool calls); stop strings
 * are matched on the answer text, holding back what could be the start of one. A tool_choice
 * puts the opening of a call into the prompt. With logprobs, each generated token's log
 * probability is held until its text goes out, so that a streamed chunk carries the tokens of
 * its text and a stop string's tokens are never reported. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "server.h"

typedef struct slot {
    glim_session *s;
    int32_t *ids; /* what the cache holds: ids[0 .. position) */
    int cap;
    int busy;
    unsigned long long used; /* request counter when last taken (least recently used first) */
} slot;

struct srv_engine {
    srv_config cfg;
    glim_model *m;
    const glim_model_info *in;
    glim_tokenizer *tok;
    int chat_ok; /* the tokenizer has the Muse chat tokens */
    slot *slots;
    pthread_mutex_t lock; /* slots' busy flags, waiting, stopping */
    pthread_cond_t freed;
    int waiting, stopping;
    unsigned long long requests;
    pthread_mutex_t eval_lock; /* one evaluation at a time on the model */
};

/* Stop strings over a stream of text: hands out what can no longer be the start of one. */
typedef struct stopper {
    const char *const *stop;
    int n_stop;
    size_t longest;
    char *buf;
    size_t n, sent, cap;
    int hit;
} stopper;

/* A generated token's log probability waiting for its text to go out (logprobs). `out`: its
 * text is the output's (the answer of a chat, a completion's text) and ends at g->st.buf + b;
 * b is OPEN while the token ends inside a character the decoder still holds. */
typedef struct held {
    srv_logprob lp;
    int out;
    size_t b;
} held;
#define OPEN SIZE_MAX

struct srv_gen {
    srv_engine *e;
    slot *sl;
    int kind;
    glim_sampler *smp;
    float *logits;
    glim_chat_parser *parser;  /* chat */
    glim_stream_decoder *dec;  /* completion */
    int max_tokens;
    stopper st;
    srv_usage u;
    double t0;
    srv_call *calls;
    int n_calls;
    glim_tokens out; /* the ids generated */
    int reasoned;    /* some reasoning text went out */
    /* logprobs (r->logprobs >= 0: alternatives per token): lps the reported ones (an echo's
     * prompt first), held the generated ones from next_held on, not reported yet */
    int top, no_generation;
    srv_logprob *lps;
    int n_lps, cap_lps;
    size_t lp_bytes; /* the reported tokens' bytes: the next one's text_offset */
    held *held;
    int n_held, cap_held, next_held;
    glim_tokens prompt; /* kept for the echo */
    /* tool_choice "required": the tools, and whether a message to one of them has begun */
    const glim_chat_tool *tools;
    int n_tools, require_call, called;
};

double srv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A failure whose message the library already wrote: only its HTTP status. */
static int keep(glim_error *err, int status) { return status; }

static int fail(glim_error *err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(glim_error *err, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->code = status == 400 ? GLIM_E_ARG : GLIM_E_BACKEND;
    return status;
}

/* ---- the engine ------------------------------------------------------------------------------ */

srv_engine *srv_engine_open(const srv_config *cfg, glim_error *err) {
    srv_engine *e = calloc(1, sizeof *e);
    if (!e) {
        fail(err, 500, "out of memory");
        return NULL;
    }
    e->cfg = *cfg;
    pthread_mutex_init(&e->lock, NULL);
    pthread_mutex_init(&e->eval_lock, NULL);
    pthread_cond_init(&e->freed, NULL);
    if (glim_tokenizer_load(cfg->model_dir, &e->tok, err) != GLIM_OK) goto bad;
    glim_model_params mp = {cfg->backend, cfg->threads};
    if (glim_model_open(cfg->model_dir, &mp, &e->m, err) != GLIM_OK) goto bad;
    e->in = glim_model_get_info(e->m);
    if (glim_tokenizer_n_vocab(e->tok) > e->in->vocab_size) {
        fail(err, 500, "the tokenizer has %d ids but the model only %d", glim_tokenizer_n_vocab(e->tok),
             e->in->vocab_size);
        goto bad;
    }
    e->chat_ok = glim_tokenizer_find(e->tok, "<|eot|>") >= 0 && glim_tokenizer_find(e->tok, "<|start|>") >= 0;
    if (e->cfg.n_ctx <= 0) e->cfg.n_ctx = 8192;
    if (e->cfg.n_ctx > e->in->max_position) e->cfg.n_ctx = e->in->max_position;
    e->slots = calloc((size_t)cfg->parallel, sizeof *e->slots);
    if (!e->slots) {
        fail(err, 500, "out of memory");
        goto bad;
    }
    glim_session_params sp = {e->cfg.n_ctx, cfg->n_batch, cfg->n_rewind};
    for (int i = 0; i < cfg->parallel; i++) {
        slot *s = &e->slots[i];
        s->cap = e->cfg.n_ctx;
        s->ids = malloc(sizeof(int32_t) * (size_t)s->cap);
        if (!s->ids) {
            fail(err, 500, "out of memory");
            goto bad;
        }
        if (glim_session_create(e->m, &sp, &s->s, err) != GLIM_OK) {
            char why[900];
            snprintf(why, sizeof why, "%.899s", err->message);
            fail(err, 500, "slot %d of %d (context %d tokens): %.900s", i + 1, cfg->parallel, e->cfg.n_ctx, why);
            goto bad;
        }
        if (cfg->on_session && cfg->on_session(cfg->on_session_ctx, s->s)) {
            fail(err, 500, "setting up slot %d's session failed (see above)", i + 1);
            goto bad;
        }
    }
    return e;
bad:
    srv_engine_close(e);
    return NULL;
}

void srv_engine_close(srv_engine *e) {
    if (!e) return;
    for (int i = 0; e->slots && i < e->cfg.parallel; i++) {
        glim_session_free(e->slots[i].s);
        free(e->slots[i].ids);
    }
    free(e->slots);
    glim_model_close(e->m);
    glim_tokenizer_free(e->tok);
    pthread_cond_destroy(&e->freed);
    pthread_mutex_destroy(&e->eval_lock);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

const srv_config *srv_engine_config(const srv_engine *e) { return &e->cfg; }

void srv_engine_stop(srv_engine *e) {
    pthread_mutex_lock(&e->lock);
    e->stopping = 1;
    pthread_cond_broadcast(&e->freed);
    pthread_mutex_unlock(&e->lock);
}

static int stopping(srv_engine *e) {
    pthread_mutex_lock(&e->lock);
    int s = e->stopping;
    pthread_mutex_unlock(&e->lock);
    return s;
}

/* ---- slots ----------------------------------------------------------------------------------- */

static int common_prefix(const slot *s, const int32_t *ids, int n) {
    int pos = glim_session_position(s->s), k = 0;
    while (k < pos && k < n && s->ids[k] == ids[k]) k++;
    return k;
}

/* The free slot sharing the longest prefix with ids (least recently used among equals); waits for
 * one when all are busy. 0, or 503 when the queue is full or the server stops. */
static int take_slot(srv_engine *e, const int32_t *ids, int n, slot **out, glim_error *err) {
    pthread_mutex_lock(&e->lock);
    if (e->waiting >= e->cfg.max_queue) {
        pthread_mutex_unlock(&e->lock);
        return fail(err, 503, "the server is busy: %d requests are already waiting for a slot (--parallel %d)",
                    e->waiting, e->cfg.parallel);
    }
    e->waiting++;
    slot *best = NULL;
    for (;;) {
        int best_k = -1;
        for (int i = 0; i < e->cfg.parallel; i++) {
            slot *s = &e->slots[i];
            if (s->busy) continue;
            int k = common_prefix(s, ids, n);
            if (k > best_k || (k == best_k && s->used < best->used)) best = s, best_k = k;
        }
        if (best || e->stopping) break;
        pthread_cond_wait(&e->freed, &e->lock);
    }
    e->waiting--;
    if (e->stopping) {
        pthread_mutex_unlock(&e->lock);
        return fail(err, 503, "the server is shutting down");
    }
    best->busy = 1;
    best->used = ++e->requests;
    pthread_mutex_unlock(&e->lock);
    *out = best;
    return 0;
}

static void give_slot(srv_engine *e, slot *s) {
    pthread_mutex_lock(&e->lock);
    s->busy = 0;
    pthread_cond_signal(&e->freed);
    pthread_mutex_unlock(&e->lock);
}

static int record_logprob(srv_gen *g, int32_t id, const float *logits, int first);

/* Evaluates ids on the slot, recording them as cached, in batches of the session's size, each
 * under the evaluation lock, so that other slots' tokens run in between. The last token's logits
 * go to `logits` (when not NULL). With `score` (echo with logprobs) every position's logits come
 * back, and each next token's log probability is recorded in it. */
static int slot_eval(srv_engine *e, slot *s, const int32_t *ids, int n, float *logits, srv_gen *score,
                     glim_error *err) {
    const int batch = e->cfg.n_batch > 0 ? e->cfg.n_batch : 64;
    const size_t V = (size_t)e->in->vocab_size;
    float *rows = score ? malloc(sizeof(float) * V * (size_t)(n < batch ? n : batch)) : NULL;
    if (score && !rows) return fail(err, 500, "out of memory for the prompt's logits");
    int st = 0;
    for (int done = 0; done < n && !st;) {
        int k = n - done < batch ? n - done : batch, last = done + k == n;
        int pos = glim_session_position(s->s);
        glim_logits_mode mode = rows ? GLIM_LOGITS_ALL : last && logits ? GLIM_LOGITS_LAST : GLIM_LOGITS_NONE;
        float *out = rows ? rows : mode == GLIM_LOGITS_LAST ? logits : NULL;
        size_t len = mode == GLIM_LOGITS_ALL ? V * (size_t)k : mode == GLIM_LOGITS_LAST ? V : 0;
        pthread_mutex_lock(&e->eval_lock);
        glim_status gs = glim_eval(s->s, ids + done, k, pos, mode, out, len, err);
        pthread_mutex_unlock(&e->eval_lock);
        if (gs != GLIM_OK) {
            char why[900];
            snprintf(why, sizeof why, "%.899s", err->message);
            st = fail(err, gs == GLIM_E_ARG ? 400 : 500, "evaluating tokens %d..%d failed: %.900s", pos, pos + k - 1, why);
            break;
        }
        memcpy(s->ids + pos, ids + done, sizeof(int32_t) * (size_t)k);
        for (int j = 0; rows && j < k && !st; j++)
            if (done + j + 1 < n && record_logprob(score, ids[done + j + 1], rows + V * (size_t)j, 0))
                st = fail(err, 500, "out of memory");
        if (rows && last && logits) memcpy(logits, rows + V * (size_t)(k - 1), sizeof(float) * V);
        done += k;
    }
    free(rows);
    return st;
}

/* ---- stop strings ---------------------------------------------------------------------------- */

static void stopper_init(stopper *f, const char *const *stop, int n) {
    memset(f, 0, sizeof *f);
    f->stop = stop;
    f->n_stop = n;
    for (int i = 0; i < n; i++)
        if (strlen(stop[i]) > f->longest) f->longest = strlen(stop[i]);
}

/* Adds text and moves `sent` to the end of what may be handed out: all of it without stop
 * strings; else up to a stop string (then `hit`, and `n` cut there: nothing after it is ever
 * output), or short of a tail that could still begin one, on a character boundary. The output is
 * always buf[0 .. sent): a caller hands out buf[old sent .. sent). -1: out of memory. */
static int stopper_push(stopper *f, const char *t, size_t n) {
    if (f->hit) return 0;
    if (f->n + n + 1 > f->cap) {
        size_t cap = (f->n + n + 1) * 2;
        char *b = realloc(f->buf, cap);
        if (!b) return -1;
        f->buf = b, f->cap = cap;
    }
    memcpy(f->buf + f->n, t, n);
    f->n += n;
    f->buf[f->n] = 0;
    /* a match starts at or after sent: earlier text was held back while it could begin one */
    for (int i = 0; i < f->n_stop; i++) {
        const char *hit = memmem(f->buf + f->sent, f->n - f->sent, f->stop[i], strlen(f->stop[i]));
        if (hit) f->n = (size_t)(hit - f->buf), f->hit = 1;
    }
    size_t end = f->n;
    if (!f->hit && f->longest > 1) {
        end = f->n >= f->sent + f->longest - 1 ? f->n - (f->longest - 1) : f->sent;
        while (end > f->sent && (f->buf[end] & 0xC0) == 0x80) end--; /* whole characters only */
    }
    f->sent = end;
    return 0;
}

/* The end: everything held back goes out. */
static void stopper_flush(stopper *f) { f->sent = f->n; }

/* ---- log probabilities ----------------------------------------------------------------------- */

/* Token id's log probability under `logits` (a log-softmax in double) and the k most likely
 * tokens there; logits NULL: a prompt's first token, which nothing predicts. */
static void logprob_of(const srv_engine *e, int k, int32_t id, const float *logits, srv_logprob *r) {
    memset(r, 0, sizeof *r);
    r->id = id;
    r->lp = NAN;
    if (!logits) return;
    const int V = e->in->vocab_size;
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < V; i++)
        if (logits[i] > mx) mx = logits[i];
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
    const double lse = mx + log(sum);
    r->lp = (float)(logits[id] - lse);
    for (int i = 0; i < V && k > 0; i++) { /* the k largest, first index first among equals */
        if (r->n_top == k && !(logits[i] > logits[r->top_id[k - 1]])) continue;
        int j = r->n_top < k ? r->n_top++ : k - 1;
        while (j > 0 && logits[i] > logits[r->top_id[j - 1]]) r->top_id[j] = r->top_id[j - 1], j--;
        r->top_id[j] = i;
    }
    for (int j = 0; j < r->n_top; j++) r->top_lp[j] = (float)(logits[r->top_id[j]] - lse);
}

/* Appends r to the reported tokens. */
static int report_logprob(srv_gen *g, const srv_logprob *r) {
    if (g->n_lps == g->cap_lps) {
        int cap = g->cap_lps ? 2 * g->cap_lps : 64;
        srv_logprob *p = realloc(g->lps, sizeof *p * (size_t)cap);
        if (!p) return -1;
        g->lps = p, g->cap_lps = cap;
    }
    g->lps[g->n_lps++] = *r;
    size_t n = 0;
    glim_token_bytes(g->e->tok, r->id, &n);
    g->lp_bytes += n;
    return 0;
}

/* A prompt token's score (echo): reported at once. */
static int record_logprob(srv_gen *g, int32_t id, const float *logits, int first) {
    srv_logprob r;
    logprob_of(g->e, g->top, id, first ? NULL : logits, &r);
    return report_logprob(g, &r);
}

/* A generated token's log probability under g->logits, held until held_is says what it is. */
static int hold_logprob(srv_gen *g, int32_t id) {
    if (g->n_held == g->cap_held) {
        int cap = g->cap_held ? 2 * g->cap_held : 64;
        held *p = realloc(g->held, sizeof *p * (size_t)cap);
        if (!p) return -1;
        g->held = p, g->cap_held = cap;
    }
    held *h = &g->held[g->n_held++];
    logprob_of(g->e, g->top, id, g->logits, &h->lp);
    h->out = 0, h->b = OPEN;
    return 0;
}

/* Says whether the token just held is output text, which starts at the output's end (g->st.n).
 * A token without text there (a special one in a completion) is complete at once; one with text
 * ends with the next text that goes in (add_text), which may be a later token's when this one
 * ends inside a character. */
static void held_is(srv_gen *g, int out) {
    if (g->top < 0) return;
    held *h = &g->held[g->n_held - 1];
    size_t n = 0;
    glim_token_bytes(g->e->tok, h->lp.id, &n);
    h->out = out;
    h->b = glim_tokenizer_is_special(g->e->tok, h->lp.id) || !n ? g->st.n : OPEN;
}

/* Output text in: through the stop strings, and the end of every held token still open. */
static int add_text(srv_gen *g, const char *t, size_t n) {
    size_t at = g->st.n;
    if (stopper_push(&g->st, t, n)) return -1;
    for (int i = g->next_held; i < g->n_held; i++)
        if (g->held[i].out && g->held[i].b == OPEN) g->held[i].b = at + n;
    return 0;
}

/* The chat answer became the raw text of the whole generation (finish): every token that is not
 * special is output text, its bytes in order from `at` on. */
static void held_as_raw(srv_gen *g, size_t at) {
    for (int i = 0; i < g->n_held; i++) {
        held *h = &g->held[i];
        size_t n = 0;
        if (!glim_tokenizer_is_special(g->e->tok, h->lp.id)) glim_token_bytes(g->e->tok, h->lp.id, &n);
        h->out = n > 0;
        h->b = at += n;
    }
    g->next_held = 0;
}

/* Reports the held tokens whose text has all gone out (up to g->st.sent), in order, and points ev
 * at them; tokens that are not output text are dropped as they come. A token the stop strings
 * cut (even in part) never ends before `sent`: a stop string's tokens are not reported. */
static int release_logprobs(srv_gen *g, srv_event *ev) {
    const int first = g->n_lps;
    ev->lp_offset = g->lp_bytes;
    for (; g->next_held < g->n_held; g->next_held++) {
        const held *h = &g->held[g->next_held];
        if (!h->out) continue;
        if (h->b == OPEN || h->b > g->st.sent) break;
        if (report_logprob(g, &h->lp)) return -1;
    }
    ev->lps = g->lps ? g->lps + first : NULL;
    ev->n_lps = g->n_lps - first;
    return 0;
}

const srv_logprob *srv_gen_logprobs(const srv_gen *g, int *n) {
    *n = g->top >= 0 ? g->n_lps : 0;
    return g->top >= 0 ? g->lps : NULL;
}

char *srv_gen_echo(const srv_gen *g, size_t *len) {
    char *text = NULL;
    *len = 0;
    if (!g->prompt.n || glim_detokenize(g->e->tok, g->prompt.ids, g->prompt.n, 0, &text, len, NULL) != GLIM_OK)
        return NULL;
    return text;
}

const glim_tokenizer *srv_engine_tokenizer(const srv_engine *e) { return e->tok; }

/* ---- generation ------------------------------------------------------------------------------ */

/* The tokens that open an assistant message calling `name`, as the renderer writes them after
 * the generation prompt ("<|start|>assistant"), up to and including <|message|>. The renderer
 * tokenizes the text between template tokens piece by piece, so the opening does not depend on
 * the conversation before it: a one-message conversation without tools gives the same tokens at
 * a fraction of the cost (tool_choice "required" renders every tool's). */
static int call_opening(srv_engine *e, const char *name, glim_tokens *out, glim_error *err) {
    glim_tool_call call = {name, "{}"};
    const glim_chat_message m[2] = {{.role = GLIM_ROLE_USER, .content = ""},
                                    {.role = GLIM_ROLE_ASSISTANT, .tool_calls = &call, .n_tool_calls = 1}};
    glim_chat_options co = {.current_date = "01-01-2026", .add_generation_prompt = 1};
    glim_tokens a = {0}, b = {0};
    int st = glim_chat_tokenize(e->tok, m, 1, &co, &a, err) != GLIM_OK ? keep(err, 500) : 0;
    co.add_generation_prompt = 0;
    if (!st && glim_chat_tokenize(e->tok, m, 2, &co, &b, err) != GLIM_OK) st = keep(err, 500);
    const int32_t msg = glim_tokenizer_find(e->tok, "<|message|>");
    size_t end = a.n;
    while (!st && end < b.n && b.ids[end] != msg) end++;
    if (!st && (b.n <= a.n || memcmp(b.ids, a.ids, a.n * sizeof *a.ids) || end == b.n))
        st = fail(err, 500, "the chat renderer's call to %s does not continue the generation prompt", name);
    for (size_t i = a.n; !st && i <= end; i++)
        if (glim_tokens_push(out, b.ids[i], err) != GLIM_OK) st = fail(err, 500, "out of memory");
    glim_tokens_free(&a);
    glim_tokens_free(&b);
    return st;
}

/* tool_choice forcing a call: its opening joins the prompt t (*n tokens), and the model writes
 * the rest. A named function: the whole opening (" to=functions.NAME<|message|>"), the model
 * writes the call's body. "required": the longest prefix that every tool's opening shares, in
 * tokens, so the model still picks the name (and writes <|message|>) itself. Cut in tokens, not
 * text: the tokenizer merges the dot with a name's start (".get" + "_weather"), so a text cut at
 * " to=functions." would leave the model a spelling of the name it never wrote in training; the
 * common token prefix ends where the names' own tokens begin (with one tool, it is that tool's
 * whole opening, as OpenAI's "required" then is a forced call). No grammar constrains the rest:
 * finish() checks that a call to one of the tools came out. */
static int force_opening(srv_engine *e, const srv_request *r, glim_tokens *t, int *n, glim_error *err) {
    glim_tokens common = {0}, one = {0};
    const int n_names = r->force_tool ? 1 : r->n_tools;
    size_t k = 0;
    int st = 0;
    for (int i = 0; i < n_names && !st; i++) {
        glim_tokens *dst = i ? &one : &common;
        dst->n = 0;
        st = call_opening(e, r->force_tool ? r->force_tool : r->tools[i].name, dst, err);
        size_t j = 0;
        while (i && !st && j < k && j < one.n && one.ids[j] == common.ids[j]) j++;
        k = i ? j : common.n;
    }
    *n = 0;
    for (size_t i = 0; !st && i < k; i++, ++*n)
        if (glim_tokens_push(t, common.ids[i], err) != GLIM_OK) st = fail(err, 500, "out of memory");
    glim_tokens_free(&common);
    glim_tokens_free(&one);
    return st;
}

static int prompt_ids(srv_engine *e, const srv_request *r, glim_tokens *t, int *n_forced, glim_error *err) {
    *n_forced = 0;
    if (r->kind == SRV_CHAT) {
        if (!e->chat_ok)
            return fail(err, 400, "this checkpoint's tokenizer has no Muse chat tokens (<|start|>, <|eot|>): "
                                  "use /v1/completions");
        glim_chat_options co = {.reasoning_strength = r->reasoning ? r->reasoning : e->cfg.reasoning,
                                .current_date = e->cfg.date, .tools = r->tools, .n_tools = r->n_tools,
                                .add_generation_prompt = 1};
        if (glim_chat_tokenize(e->tok, r->messages, r->n_messages, &co, t, err) != GLIM_OK)
            return keep(err, 400);
        if (r->force_tool || r->require_tool) {
            int st = force_opening(e, r, t, n_forced, err);
            if (st) return st;
        }
    } else if (r->prompt) {
        if (glim_tokenize(e->tok, r->prompt, strlen(r->prompt), GLIM_TOK_ADD_SPECIAL, t, err) != GLIM_OK)
            return keep(err, 400);
    } else {
        for (int i = 0; i < r->n_prompt_ids; i++) {
            if (r->prompt_ids[i] >= e->in->vocab_size)
                return fail(err, 400, "'prompt[%d]' is token id %d, outside the vocabulary of %d", i, r->prompt_ids[i],
                            e->in->vocab_size);
            if (glim_tokens_push(t, r->prompt_ids[i], err) != GLIM_OK) return fail(err, 500, "out of memory");
        }
    }
    if (t->n == 0) return fail(err, 400, "the prompt is empty");
    if ((long long)t->n + 1 > e->cfg.n_ctx)
        return fail(err, 400, "the prompt is %zu tokens; the context holds %d (one more is needed to generate): "
                              "shorten it, or start the server with a larger -c", t->n, e->cfg.n_ctx);
    return 0;
}

/* Whether a call's name (with or without the "functions." namespace) is one of the request's tools. */
static int declared(const srv_gen *g, const char *name) {
    name = srv_client_tool_name(name);
    for (int i = 0; i < g->n_tools; i++)
        if (!strcmp(srv_client_tool_name(g->tools[i].name), name)) return 1;
    return 0;
}

/* A message to one of the tools has begun: under tool_choice "required", answer text may follow. */
static void note_message(srv_gen *g, const glim_chat_delta *d) {
    if (d->new_message && d->channel == GLIM_CHANNEL_TOOL && declared(g, d->recipient)) g->called = 1;
}

/* tool_choice "required", and the reply is not (or does not start with) a call to one of the
 * tools: an error, never an answer the client did not allow; it quotes what the model wrote. */
static int not_a_call(srv_gen *g, glim_error *err) {
    char *raw = NULL;
    size_t n = 0;
    glim_detokenize(g->e->tok, g->out.ids, g->out.n, 0, &raw, &n, NULL);
    int st = fail(err, 500, "'tool_choice' is \"required\" but the model did not call one of the 'tools': after the "
                            "call's opening it wrote \"%.300s\"", raw ? raw : "");
    free(raw);
    return st;
}

int srv_gen_start(srv_engine *e, const srv_request *r, srv_gen **out, glim_error *err) {
    *out = NULL;
    glim_tokens t = {0};
    int n_forced;
    int st = prompt_ids(e, r, &t, &n_forced, err);
    srv_gen *g = st ? NULL : calloc(1, sizeof *g);
    if (!st && !g) st = fail(err, 500, "out of memory");
    if (st) {
        glim_tokens_free(&t);
        return st;
    }
    g->e = e;
    g->kind = r->kind;
    g->max_tokens = r->max_tokens;
    g->top = r->logprobs;
    g->no_generation = r->no_generation;
    g->tools = r->tools, g->n_tools = r->n_tools, g->require_call = r->require_tool;
    g->u.prompt_tokens = (int)t.n;
    stopper_init(&g->st, r->stop, r->n_stop);
    glim_sampler_params sp = r->samp;
    if (!r->seed_given && getrandom(&sp.seed, sizeof sp.seed, 0) != (ssize_t)sizeof sp.seed)
        sp.seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)g;
    g->logits = malloc(sizeof(float) * (size_t)e->in->vocab_size);
    if (!g->logits) st = fail(err, 500, "out of memory");
    else if (glim_sampler_create(&sp, e->in->vocab_size, &g->smp, err) != GLIM_OK) st = keep(err, 400);
    else if (g->kind == SRV_CHAT && !(g->parser = glim_chat_parser_new(e->tok, r->tools, r->n_tools)))
        st = fail(err, 500, "out of memory");
    else if (g->kind == SRV_COMPLETION && !(g->dec = glim_stream_decoder_new(e->tok, 0)))
        st = fail(err, 500, "out of memory");
    /* a forced call's opening is the prompt's end: the parser reads it as the reply's start */
    for (int i = (int)t.n - n_forced; !st && i < (int)t.n; i++) {
        glim_chat_delta d;
        glim_chat_parser_push(g->parser, t.ids[i], &d);
        note_message(g, &d);
    }
    if (!st && r->kind == SRV_COMPLETION && r->echo) { /* the echo's text is the prompt's tokens */
        for (size_t i = 0; i < t.n && !st; i++)
            if (glim_tokens_push(&g->prompt, t.ids[i], err) != GLIM_OK) st = fail(err, 500, "out of memory");
    }
    if (!st) st = take_slot(e, t.ids, (int)t.n, &g->sl, err);
    if (!st && g->top >= 0 && r->echo) { /* every prompt position's logits: nothing reused */
        double t0 = srv_now();
        glim_session_reset(g->sl->s);
        st = record_logprob(g, t.ids[0], NULL, 1) ? fail(err, 500, "out of memory")
                                                  : slot_eval(e, g->sl, t.ids, (int)t.n, g->logits, g, err);
        g->u.prompt_seconds = srv_now() - t0;
        g->t0 = srv_now();
    } else if (!st) {
        /* reuse the longest cached prefix, but evaluate at least the last prompt token: its logits
         * are not kept */
        slot *s = g->sl;
        int reuse = common_prefix(s, t.ids, (int)t.n);
        if (reuse == (int)t.n) reuse--;
        glim_error rw;
        if (glim_session_rewind(s->s, reuse, &rw) != GLIM_OK) { /* the sliding ring moved on */
            glim_session_reset(s->s);
            reuse = 0;
        }
        g->u.cached_tokens = reuse;
        double t0 = srv_now();
        st = slot_eval(e, s, t.ids + reuse, (int)t.n - reuse, g->logits, NULL, err);
        g->u.prompt_seconds = srv_now() - t0;
        g->t0 = srv_now();
    }
    glim_tokens_free(&t);
    if (st) {
        srv_gen_free(g);
        return st;
    }
    *out = g;
    return 0;
}

static int is_stop_id(const srv_engine *e, int32_t id) {
    for (int i = 0; i < e->in->n_stop_ids; i++)
        if (e->in->stop_ids[i] == id) return 1;
    return 0;
}

/* The parsed tool calls, named as the client declared them, with fresh ids. */
static int take_calls(srv_gen *g, const glim_chat_result *res) {
    if (!res->n_calls) return 0;
    g->calls = calloc((size_t)res->n_calls, sizeof *g->calls);
    if (!g->calls) return -1;
    for (int i = 0; i < res->n_calls; i++) {
        srv_call *c = &g->calls[g->n_calls++];
        const char *name = srv_client_tool_name(res->calls[i].name);
        unsigned char b[12];
        if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) memset(b, i, sizeof b);
        c->id = malloc(5 + 2 * sizeof b + 1);
        c->name = strdup(name);
        c->arguments = strdup(res->calls[i].arguments ? res->calls[i].arguments : "{}");
        if (!c->id || !c->name || !c->arguments) return -1;
        int k = sprintf(c->id, "call_");
        for (size_t j = 0; j < sizeof b; j++) k += sprintf(c->id + k, "%02x", b[j]);
    }
    return 0;
}

/* Whether some parsed call names one of the tools. */
static int called_a_tool(const srv_gen *g) {
    for (int i = 0; i < g->n_calls; i++)
        if (declared(g, g->calls[i].name)) return 1;
    return 0;
}

/* The end of a generation: what the stop strings held back goes out with this token's text
 * (answer text from `from` on, and the logprobs of the tokens it completes), then the tool calls
 * and the finish reason. */
static int finish(srv_gen *g, srv_event *ev, size_t from, const char *why, glim_error *err) {
    stopper_flush(&g->st);
    ev->content = g->st.buf ? g->st.buf + from : NULL, ev->content_len = g->st.sent - from;
    if (g->st.hit) why = "stop";
    if (g->kind == SRV_CHAT) {
        glim_chat_result res;
        if (glim_chat_parser_finish(g->parser, &res, err) != GLIM_OK) return keep(err, 500);
        int bad = take_calls(g, &res), silent = !g->st.n && !g->reasoned && !g->n_calls;
        glim_chat_result_free(&res);
        if (bad) return fail(err, 500, "out of memory");
        if (g->require_call && !called_a_tool(g)) return not_a_call(g, err);
        if (silent) {
            /* nothing came out of the parser (the model did not follow the chat format, or was cut
             * inside a message header): the raw text is the answer, rather than an empty message
             * that hides what it wrote */
            char *raw = NULL;
            size_t n = 0;
            if (glim_detokenize(g->e->tok, g->out.ids, g->out.n, GLIM_DETOK_SKIP_SPECIAL, &raw, &n, err) != GLIM_OK)
                return keep(err, 500);
            if (g->top >= 0) held_as_raw(g, g->st.n);
            bad = stopper_push(&g->st, raw, n);
            free(raw);
            if (bad) return fail(err, 500, "out of memory");
            stopper_flush(&g->st);
            ev->content = g->st.buf ? g->st.buf + from : NULL, ev->content_len = g->st.sent - from;
            if (g->st.hit) why = "stop";
        }
        if (g->n_calls && !g->st.hit) why = "tool_calls";
    }
    if (release_logprobs(g, ev)) return fail(err, 500, "out of memory");
    ev->done = 1;
    ev->finish = why;
    ev->calls = g->calls, ev->n_calls = g->n_calls;
    g->u.gen_seconds = srv_now() - g->t0;
    return 0;
}

int srv_gen_step(srv_gen *g, srv_event *ev, glim_error *err) {
    memset(ev, 0, sizeof *ev);
    if (g->no_generation) return finish(g, ev, 0, "length", err); /* echo with max_tokens 0 */
    if (stopping(g->e)) return fail(err, 503, "the server is shutting down");
    int32_t id = glim_sampler_sample(g->smp, g->logits);
    if (id < 0) return fail(err, 500, "the logits are all NaN: nothing to sample");
    return srv_gen_push(g, id, ev, err);
}

int srv_gen_push(srv_gen *g, int32_t id, srv_event *ev, glim_error *err) {
    srv_engine *e = g->e;
    memset(ev, 0, sizeof *ev);
    if (id < 0 || id >= e->in->vocab_size) return fail(err, 400, "token id %d is outside the vocabulary of %d", id, e->in->vocab_size);
    if (g->top >= 0 && hold_logprob(g, id)) return fail(err, 500, "out of memory");
    glim_sampler_accept(g->smp, id);
    g->u.completion_tokens++;
    g->u.gen_seconds = srv_now() - g->t0;
    if (glim_tokens_push(&g->out, id, err) != GLIM_OK) return fail(err, 500, "out of memory");
    int stop = is_stop_id(e, id);
    const char *text = NULL;
    size_t len = 0, from = g->st.sent;
    if (g->kind == SRV_CHAT) {
        /* logprobs cover the answer's tokens (content), as OpenAI and vLLM report them: not the
         * reasoning, the tool calls or the format's own tokens (headers, <|eot|>) */
        glim_chat_delta d;
        stop |= glim_chat_parser_push(g->parser, id, &d);
        note_message(g, &d);
        if (d.channel == GLIM_CHANNEL_REASONING) ev->reasoning = d.text, ev->reasoning_len = d.len, g->reasoned |= d.len > 0;
        else if (d.channel == GLIM_CHANNEL_ANSWER) text = d.text, len = d.len;
        if (len && g->require_call && !g->called) return not_a_call(g, err); /* text, not the call */
        held_is(g, d.channel == GLIM_CHANNEL_ANSWER && !glim_tokenizer_is_special(e->tok, id));
    } else if (!stop) {
        text = glim_stream_decoder_push(g->dec, id, &len);
        held_is(g, 1);
    }
    if (len && add_text(g, text, len)) return fail(err, 500, "out of memory");
    slot *s = g->sl;
    int limit = (g->max_tokens && g->u.completion_tokens >= g->max_tokens) ||
                glim_session_position(s->s) + 1 > e->cfg.n_ctx;
    if (!stop && !g->st.hit && !limit) {
        ev->content = g->st.buf ? g->st.buf + from : NULL, ev->content_len = g->st.sent - from;
        if (release_logprobs(g, ev)) return fail(err, 500, "out of memory");
        return slot_eval(e, s, &id, 1, g->logits, NULL, err);
    }
    if (g->kind == SRV_COMPLETION && !stop) { /* a character the limit cut short: U+FFFD */
        const char *f = glim_stream_decoder_flush(g->dec, &len);
        if (len && add_text(g, f, len)) return fail(err, 500, "out of memory");
    }
    const char *r = ev->reasoning;
    size_t rn = ev->reasoning_len;
    int st = finish(g, ev, from, stop ? "stop" : "length", err);
    ev->reasoning = r, ev->reasoning_len = rn;
    return st;
}
const srv_usage *srv_gen_usage(const srv_gen *g) { return &g->u; }

void srv_gen_free(srv_gen *g) {
    if (!g) return;
    if (g->sl) give_slot(g->e, g->sl);
    for (int i = 0; i < g->n_calls; i++) {
        free(g->calls[i].id);
        free(g->calls[i].name);
        free(g->calls[i].arguments);
    }
    free(g->calls);
    glim_tokens_free(&g->out);
    glim_tokens_free(&g->prompt);
    free(g->lps);
    free(g->held);
    free(g->st.buf);
    glim_chat_parser_free(g->parser);
    glim_stream_decoder_free(g->dec);
    glim_sampler_free(g->smp);
    free(g->logits);
    free(g);
}
