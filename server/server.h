/* server.h: glimmer's OpenAI-compatible HTTP server (`glimmer serve`): what its three parts share.
 *   engine.c   the model, the tokenizer and a pool of sessions ("slots"); one generation at a
 *              time per slot, token by token, reusing the longest cached prefix of a prompt
 *   openai.c   OpenAI request JSON -> srv_request, and the response / chunk / error JSON
 *   http.c     libmicrohttpd: routes, body limits, the API key, SSE streaming, shutdown
 * A front end: it sees only include/glimmer.h and glimmer_text.h. */
#ifndef GLIM_SERVER_H
#define GLIM_SERVER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "glimmer.h"
#include "glimmer_text.h"

typedef struct srv_config {
    const char *model_dir, *model_name;
    const char *backend; /* NULL: the GPU when present */
    int threads;
    int n_ctx, n_batch;  /* per slot */
    int n_rewind;        /* tokens a slot's cache can always go back (glim_session_params) */
    int parallel;        /* slots: requests generated at once (their tokens interleave) */
    int max_queue;       /* requests that may wait for a slot; more get 503 */
    const char *host;
    int port;            /* 0: any free port */
    size_t max_body;     /* bytes of a request body */
    const char *api_key; /* NULL: no key needed */
    const char *cors;    /* Access-Control-Allow-Origin for browsers (NULL: no CORS headers) */
    const char *date, *reasoning; /* chat defaults: "DD-MM-YYYY" (NULL today), effort (NULL high) */
    glim_sampler_params samp;     /* sampling defaults a request may override */
    int seed_given;               /* samp.seed is for every request without one (else random) */
    int quiet;                    /* no per-request log lines */
    /* called on each slot's session once it is made (glimmer serve: the steering flags); non-zero
     * fails the start */
    int (*on_session)(void *ctx, glim_session *s);
    void *on_session_ctx;
} srv_config;

/* ---- requests (openai.c) ------------------------------------------------------------------ */

enum { SRV_CHAT = 0, SRV_COMPLETION = 1 };
#define SRV_MAX_STOP 4 /* stop strings per request, as OpenAI allows */
#define SRV_MAX_TOP 20 /* logprobs' alternatives per token */

typedef struct srv_request {
    int kind;
    json_t *root; /* the parsed body: the strings below point into it */
    /* chat */
    glim_chat_message *messages;
    int n_messages;
    glim_chat_tool *tools;
    int n_tools;
    const char *reasoning; /* reasoning_effort, or NULL */
    const char *force_tool; /* tool_choice naming a function: its tools[] name ("functions.X") */
    int require_tool;       /* tool_choice "required": the reply must call one of the tools */
    /* completion: text (tokenized with BOS) or ids */
    const char *prompt;
    int32_t *prompt_ids;
    int n_prompt_ids;
    int echo;          /* completion: the prompt's tokens (text and logprobs) come first */
    int no_generation; /* completion: max_tokens 0 with echo (scoring a text: lm-eval's loglikelihood) */
    /* both */
    int logprobs;      /* alternatives per token in logprobs (0..20; chat: top_logprobs); -1: none */
    int ids_as_tokens; /* logprobs name tokens "token_id:N" (return_tokens_as_token_ids) */
    glim_sampler_params samp;
    int seed_given; /* samp.seed holds the seed to use; else the engine draws one */
    int max_tokens; /* 0: until the context is full */
    const char *stop[SRV_MAX_STOP];
    int n_stop;
    int stream, include_usage;
    char **owned; /* strings allocated while parsing (tool names), freed with the request */
    int n_owned;
} srv_request;

/* Parses a request body. On failure returns the HTTP status (400) and fills err with a message
 * naming the field; the request is then empty. */
int srv_request_parse(srv_request *r, int kind, const char *body, size_t len, const srv_config *cfg,
                      glim_error *err);
void srv_request_free(srv_request *r);
/* A tool's name as the client declared it: the chat format's name ("functions.X", OpenAI
 * functions live in the "functions" namespace) without its namespace; other names as they are. */
const char *srv_client_tool_name(const char *name);

/* ---- generation (engine.c) ---------------------------------------------------------------- */

typedef struct srv_engine srv_engine;
typedef struct srv_gen srv_gen;

typedef struct srv_call {
    char *id;        /* "call_..." */
    char *name;      /* as the client declared it ("functions." removed) */
    char *arguments; /* a JSON object text */
} srv_call;

/* One token's log probability under the model (log-softmax of the raw logits, before any
 * sampling setting) and the most likely alternatives at its position. */
typedef struct srv_logprob {
    int32_t id;
    float lp; /* NAN for a prompt's first token: nothing predicts it */
    int n_top;
    int32_t top_id[SRV_MAX_TOP];
    float top_lp[SRV_MAX_TOP];
} srv_logprob;

/* What one step produced: text for one of the channels (content, reasoning), and at the end the
 * finish reason, the tool calls and the counts. With logprobs, the tokens whose text has now all
 * gone out (the text of this event, or held back by the stop strings before it): a chunk carries
 * the log probabilities of the tokens it completes. */
typedef struct srv_event {
    const char *content, *reasoning;
    size_t content_len, reasoning_len;
    int done;
    const char *finish; /* "stop", "length", "tool_calls" (done only) */
    const srv_call *calls;
    int n_calls;
    const srv_logprob *lps; /* valid until the next step */
    int n_lps;
    size_t lp_offset;       /* completions' text_offset of lps[0] */
} srv_event;

typedef struct srv_usage {
    int prompt_tokens, cached_tokens, completion_tokens;
    double prompt_seconds, gen_seconds;
} srv_usage;

srv_engine *srv_engine_open(const srv_config *cfg, glim_error *err);
void srv_engine_close(srv_engine *e);
const srv_config *srv_engine_config(const srv_engine *e);
/* Asks every generation in progress to end at its next token (shutdown). */
void srv_engine_stop(srv_engine *e);

/* Tokenizes the prompt, waits for a slot, evaluates what the slot's cache does not already
 * hold. The generation keeps pointers into r (stop strings, tools): r must outlive it. Returns 0, or the HTTP status of the failure (400 bad prompt, 503 busy or stopping,
 * 500 engine) with err filled. */
int srv_gen_start(srv_engine *e, const srv_request *r, srv_gen **out, glim_error *err);
/* Generates one token: fills ev (text of that token, if any, or the end). Returns 0, or the HTTP
 * status of a failure (err filled). After ev->done, do not call again. */
int srv_gen_step(srv_gen *g, srv_event *ev, glim_error *err);
/* The same with the token given instead of sampled (srv_gen_step is sample + push): what comes
 * out for a known continuation, which a test can script (a random model never calls a tool). */
int srv_gen_push(srv_gen *g, int32_t id, srv_event *ev, glim_error *err);
const srv_usage *srv_gen_usage(const srv_gen *g);
/* With r->logprobs >= 0: the tokens reported so far, each with its log probability: the prompt's
 * first when r->echo, then the generated tokens whose text has gone out (the answer's, for a chat:
 * not reasoning, tool calls or the format's tokens; a stop string's are never reported); NULL
 * otherwise (or before the first). */
const srv_logprob *srv_gen_logprobs(const srv_gen *g, int *n);
/* With r->echo: the prompt's tokens as text (every token's bytes, specials included, so that the
 * logprobs' text offsets hold), malloc'd; NULL otherwise or out of memory. */
char *srv_gen_echo(const srv_gen *g, size_t *len);
const glim_tokenizer *srv_engine_tokenizer(const srv_engine *e);
/* Seconds on the monotonic clock (the usage's timings, the request log). */
double srv_now(void);
/* Releases the slot (its cache stays for the next request). */
void srv_gen_free(srv_gen *g);

/* ---- responses (openai.c) ----------------------------------------------------------------- */

/* The id, creation time and model name a response and all its chunks carry, and how they write
 * logprobs (set by the caller after srv_reply_init when the request asks for them). */
typedef struct srv_reply {
    int kind;
    char id[40];
    long long created;
    const char *model;
    const glim_tokenizer *tok; /* names the tokens of logprobs */
    int logprobs, ids_as_tokens;
} srv_reply;
void srv_reply_init(srv_reply *rp, int kind, const char *model);

/* The whole (non-streamed) response, from the text gathered over every step. */
json_t *srv_response(const srv_reply *rp, const char *content, size_t content_len, const char *reasoning,
                     size_t reasoning_len, const srv_event *end, const srv_usage *u);
/* A streamed chunk: the first one (role), a step's text (and its tokens' logprobs), or the end
 * (finish reason, tool calls). */
json_t *srv_chunk(const srv_reply *rp, const srv_event *ev, int first);
/* The last chunk of a stream that asked for usage: no choices, the counts. */
json_t *srv_usage_chunk(const srv_reply *rp, const srv_usage *u);
json_t *srv_usage_json(const srv_usage *u);
json_t *srv_models(const srv_config *cfg);
/* A choice's "logprobs" object for lp[0..n): a chat's {"content": [{token, logprob, bytes,
 * top_logprobs}...]}, a completion's {tokens, token_logprobs, top_logprobs, text_offset} (the
 * offsets counted from `offset`, lp[0]'s). */
json_t *srv_logprobs(const srv_reply *rp, const srv_logprob *lp, int n, size_t offset);
/* {"error": {"message", "type", "param", "code"}}; type follows the status. */
json_t *srv_error(int status, const char *message);

/* ---- HTTP (http.c) ------------------------------------------------------------------------ */

/* Serves until SIGINT or SIGTERM; returns the process exit status (0 after a clean shutdown). */
int srv_http_run(srv_engine *e);

#endif
