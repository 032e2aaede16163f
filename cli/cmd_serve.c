/* cmd_serve.c: `glimmer serve`: the OpenAI-compatible HTTP server (server/): flags, then the
 * engine and the listener. Built only where libmicrohttpd was found (GLIM_HAVE_SERVER); elsewhere
 * the command says so and how to get it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "hook_flags.h"

#define CMD "glimmer serve"

#ifndef GLIM_HAVE_SERVER
int cmd_serve(int argc, char **argv) {
    fprintf(stderr, CMD ": this build has no HTTP server: libmicrohttpd (libmicrohttpd-dev) was not found "
                        "when it was built; run `make deps` (or apt-get install libmicrohttpd-dev) and rebuild\n");
    return 1;
}
#else
#include "server.h"

static void serve_help(void) {
    printf("usage: glimmer serve -m DIR [--host H] [--port P] [options]\n\n"
           "Serves the model over HTTP with OpenAI's API, for coding agents and any OpenAI client:\n"
           "  POST /v1/chat/completions   chat in the Muse format: reasoning (reasoning_content),\n"
           "                              tools and tool calls (tool_choice naming a function\n"
           "                              forces that call; \"required\" forces a call to one of\n"
           "                              them, or fails), stop strings, streaming (SSE),\n"
           "                              logprobs / top_logprobs of the answer's tokens\n"
           "  POST /v1/completions        raw text (or token ids) continuation; logprobs (streamed\n"
           "                              too) and echo (max_tokens 0 + echo scores a text, as\n"
           "                              lm-eval does)\n"
           "  GET  /v1/models, GET /health\n"
           "Each request takes a slot (a session); a conversation that grows by a turn reuses the\n"
           "slot's KV cache and evaluates only the new tokens (usage.prompt_tokens_details.\n"
           "cached_tokens says how many were reused). With several slots, requests decode together,\n"
           "taking turns token by token. Logs one line per request to stderr. SIGINT or SIGTERM\n"
           "stops it cleanly.\n\n"
           "example: glimmer serve -m ckpt --port 8080, then a client with base URL\n"
           "         http://127.0.0.1:8080/v1 (any API key, unless --api-key is set)\n\n"
           "listening:\n"
           "  --host H               address to listen on (default 127.0.0.1; 0.0.0.0 for all)\n"
           "  --port P               TCP port (default 8080; 0 picks a free one, printed at start)\n"
           "  --api-key KEY          require 'Authorization: Bearer KEY' (default: the environment's\n"
           "                         GLIMMER_API_KEY, else no key)\n"
           "  --max-body BYTES       largest request body accepted (default 16777216)\n"
           "  --model-name NAME      the model id clients see (default: the checkpoint directory's name)\n"
           "  --cors ORIGIN          let browser pages from ORIGIN call the API (e.g. '*' or\n"
           "                         http://localhost:3000): CORS headers and preflights (default off)\n"
           "  --quiet                no per-request log lines\n"
           "requests:\n"
           "  --parallel N           slots: requests served at once (default 1); each holds its\n"
           "                         own KV cache of -c tokens\n"
           "  --max-queue N          requests that may wait for a slot (default 64); more get 503\n"
           "  -c, --ctx-size CTX     context per slot in tokens (default 8192, at most the model's)\n"
           "  -b, --batch-size B     prompt tokens evaluated together per chunk (default 64)\n"
           "  --rewind N             tokens a slot's cache can always go back to reuse a prefix\n"
           "                         (default 4096): an agent's next request re-renders the last\n"
           "                         reply (without its reasoning), so the cache is reused from\n"
           "                         the previous prompt's end only if the sliding layers still\n"
           "                         hold those keys; costs N more keys per sliding layer\n"
           "  --reasoning R          reasoning effort when a request gives none: low, medium,\n"
           "                         high (default) or xhigh\n"
           "  --date DD-MM-YYYY      current date in the default system message (default today)\n"
           "  sampling flags below: defaults for requests that do not set them; with -s, requests\n"
           "  without a seed use it (else each draws a random one)\n\n");
    args_model_help();
    args_sampling_help();
    printf("\nsteering (every request; capture and census are for run / chat / capture):\n");
    hook_flags_help();
    printf("\nexit status: 0 after SIGINT / SIGTERM, 1 runtime error (model, memory, port), 2 usage error\n");
}

static int parse(int argc, char **argv, srv_config *c, glim_cli_model *model, glim_cli_sampling *samp,
                 hook_flags *hf) {
    glim_args a;
    args_init(&a, CMD, argc, argv);
    int max_body = 16 << 20;
    while (args_next(&a)) {
        if (args_help(&a)) {
            serve_help();
            return 0;
        } else if (args_model(&a, model) || args_sampling(&a, samp) || hook_flags_parse(&a, hf)) {
        } else if (args_flag(&a, "--host", NULL)) {
            c->host = a.val;
        } else if (args_flag(&a, "--port", NULL)) {
            args_int(&a, &c->port, 0, 65535);
        } else if (args_flag(&a, "--api-key", NULL)) {
            c->api_key = a.val;
        } else if (args_flag(&a, "--max-body", NULL)) {
            args_int(&a, &max_body, 1024, 1 << 30);
        } else if (args_flag(&a, "--cors", NULL)) {
            c->cors = a.val;
        } else if (args_flag(&a, "--model-name", NULL)) {
            c->model_name = a.val;
        } else if (args_switch(&a, "--quiet")) {
            c->quiet = 1;
        } else if (args_flag(&a, "--parallel", NULL)) {
            args_int(&a, &c->parallel, 1, 256);
        } else if (args_flag(&a, "--max-queue", NULL)) {
            args_int(&a, &c->max_queue, 0, 1 << 20);
        } else if (args_flag(&a, "-c", "--ctx-size")) {
            args_int(&a, &c->n_ctx, 16, 2147483647);
        } else if (args_flag(&a, "-b", "--batch-size")) {
            args_int(&a, &c->n_batch, 1, 2147483647);
        } else if (args_flag(&a, "--rewind", NULL)) {
            args_int(&a, &c->n_rewind, 0, 2147483647);
        } else if (args_flag(&a, "--reasoning", NULL)) {
            c->reasoning = a.val;
        } else if (args_flag(&a, "--date", NULL)) {
            c->date = a.val;
        } else {
            args_unknown(&a);
        }
    }
    if (a.err) return 2;
    if (!model->dir) args_error(&a, "missing -m DIR (the checkpoint directory)");
    else if (c->reasoning && strcmp(c->reasoning, "low") && strcmp(c->reasoning, "medium") &&
             strcmp(c->reasoning, "high") && strcmp(c->reasoning, "xhigh"))
        args_error(&a, "--reasoning '%s': expected low, medium, high or xhigh", c->reasoning);
    else if (hf->capture_path || hf->census_path)
        args_error(&a, "%s is per run: use glimmer run, chat or capture (serve takes the steering flags)",
                   hf->capture_path ? "--capture" : "--census");
    if (a.err) return 2;
    c->max_body = (size_t)max_body;
    c->seed_given = samp->seed_given;
    args_sampling_done(samp);
    c->samp = samp->p;
    return -1;
}

/* The checkpoint directory's last component, for the model id. */
static const char *dir_name(const char *dir, char *buf, size_t n) {
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/') start--;
    snprintf(buf, n, "%.*s", (int)(len - start), dir + start);
    return buf;
}

/* Every slot's session gets the steering flags. */
static int steer_session(void *ctx, glim_session *s) { return hook_flags_apply(CMD, ctx, s); }

int cmd_serve(int argc, char **argv) {
    glim_cli_model model = {0};
    glim_cli_sampling samp = args_sampling_defaults();
    hook_flags hf = {0};
    srv_config c = {.host = "127.0.0.1", .port = 8080, .parallel = 1, .max_queue = 64, .n_ctx = 8192, .n_batch = 64,
                   .n_rewind = 4096};
    int rc = parse(argc, argv, &c, &model, &samp, &hf);
    if (rc >= 0) {
        hook_flags_free(&hf);
        return rc;
    }
    if (hf.any) c.on_session = steer_session, c.on_session_ctx = &hf;
    char name[256];
    c.model_dir = model.dir, c.backend = model.backend, c.threads = model.threads;
    if (!c.model_name) c.model_name = dir_name(model.dir, name, sizeof name);
    if (!c.api_key && getenv("GLIMMER_API_KEY") && *getenv("GLIMMER_API_KEY")) c.api_key = getenv("GLIMMER_API_KEY");
    /* SIGINT / SIGTERM go to srv_http_run's sigwait: blocked here, before the backend's and the
     * server's threads are made (they inherit the mask); SIGPIPE of a client gone is ignored */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    glim_error err = {0};
    srv_engine *e = srv_engine_open(&c, &err);
    if (!e) {
        fprintf(stderr, CMD ": cannot open model '%s': %s\n", model.dir, err.message);
        hook_flags_free(&hf);
        return 1;
    }
    rc = srv_http_run(e);
    srv_engine_close(e);
    hook_flags_free(&hf);
    return rc;
}
#endif
