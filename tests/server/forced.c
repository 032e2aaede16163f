/* forced.c: `glimmer serve`'s generation with scripted continuations (srv_gen_push instead of
 * sampling), on a model whose tokenizer has the Muse chat tokens: what a random model never
 * writes. The continuation is the chat renderer's own tokens for an assistant message (the ids
 * past the generation prompt), so the parser, the tool-call naming, the stop strings held back
 * across tokens, the logprobs (which tokens, in which chunk) and the OpenAI JSON are checked
 * against what the format says they must give; tool_choice "required" with replies that are
 * calls and replies that are not.
 *   forced MODEL_DIR     prints PASS / FAIL lines (names server_forced_*); exit 1 on a failure
 * Built and run by tests/server.test.sh (it links the server's objects). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

static int failed;
#define CHECK(name, cond, ...)                                                                                         \
    do {                                                                                                               \
        if (cond) {                                                                                                    \
            printf("PASS server_forced_%s\n", name);                                                                   \
        } else {                                                                                                       \
            printf("FAIL server_forced_%s: ", name);                                                                   \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
            failed = 1;                                                                                                \
        }                                                                                                              \
    } while (0)

typedef struct outcome {
    char content[4096], reasoning[4096];
    size_t nc, nr;
    int pushed;
    srv_event end; /* its calls are the generation's: copied into call_* before it is freed */
    char call_id[64], call_name[64], call_args[256];
    char call2_id[64], call2_name[64], call2_args[256]; /* a second call, when there is one */
    json_t *response, *end_chunk;
    char why[1200];
    int status; /* a step's failure: its HTTP status (err in why), else 0 */
    int emitted; /* content or reasoning text came out before the end or the failure */
    /* logprobs: every event's tokens in order, and after each event the content and the
     * tokens so far; same_lps: srv_gen_logprobs at the end gives the same tokens */
    srv_logprob lps[256];
    int n_lps, n_events, same_lps;
    size_t ev_nc[512];
    int ev_nlp[512];
    json_t *logprobs; /* srv_logprobs of the whole reply */
} outcome;

static srv_engine *E;
static glim_tokenizer *TOK;

/* The ids of `reply` (one assistant message) as the renderer writes them after the generation
 * prompt of `messages`. */
static int continuation(const glim_chat_message *messages, int n, const glim_chat_message *reply, glim_tokens *out,
                        char *why) {
    glim_tokenizer *tok = NULL;
    glim_error err = {0};
    if (glim_tokenizer_load(srv_engine_config(E)->model_dir, &tok, &err)) return sprintf(why, "%s", err.message), -1;
    glim_chat_message all[8];
    memcpy(all, messages, sizeof *all * (size_t)n);
    all[n] = *reply;
    glim_chat_options with = {.current_date = "01-02-2027", .add_generation_prompt = 1};
    glim_chat_options without = {.current_date = "01-02-2027"};
    glim_tokens a = {0}, b = {0};
    int bad = glim_chat_tokenize(tok, messages, n, &with, &a, &err) || glim_chat_tokenize(tok, all, n + 1, &without, &b, &err);
    if (bad) sprintf(why, "render: %s", err.message);
    else if (b.n <= a.n || memcmp(a.ids, b.ids, a.n * sizeof *a.ids))
        bad = 1, sprintf(why, "the reply's rendering does not extend the generation prompt");
    for (size_t i = a.n; !bad && i < b.n; i++) glim_tokens_push(out, b.ids[i], &err);
    glim_tokens_free(&a);
    glim_tokens_free(&b);
    glim_tokenizer_free(tok);
    return bad ? -1 : 0;
}

/* Records one event's logprobs (and where the content was then). */
static int note_logprobs(outcome *o, const srv_event *ev) {
    if (o->n_lps + ev->n_lps > (int)(sizeof o->lps / sizeof *o->lps) || o->n_events == 512)
        return sprintf(o->why, "too many tokens or events"), -1;
    if (ev->n_lps) memcpy(o->lps + o->n_lps, ev->lps, sizeof *ev->lps * (size_t)ev->n_lps);
    o->n_lps += ev->n_lps;
    o->ev_nc[o->n_events] = o->nc;
    o->ev_nlp[o->n_events++] = o->n_lps;
    return 0;
}

/* Pushes ids[from..] into the generation of a parsed request until it ends (or a step fails:
 * o->status). */
static int push_all(srv_request *r, const glim_tokens *ids, size_t from, outcome *o) {
    glim_error err = {0};
    srv_gen *g = NULL;
    if (srv_gen_start(E, r, &g, &err)) return sprintf(o->why, "start: %s", err.message), -1;
    srv_reply rp;
    srv_reply_init(&rp, SRV_CHAT, "m");
    rp.tok = TOK, rp.logprobs = r->logprobs >= 0;
    int rc = 0;
    for (size_t i = from; !rc && i < ids->n; i++) {
        srv_event ev;
        if ((o->status = srv_gen_push(g, ids->ids[i], &ev, &err))) {
            rc = -1, snprintf(o->why, sizeof o->why, "push: %s", err.message);
            break;
        }
        o->pushed++;
        if (ev.content_len + o->nc >= sizeof o->content || ev.reasoning_len + o->nr >= sizeof o->reasoning) {
            rc = -1, sprintf(o->why, "too much text");
            break;
        }
        if (ev.content_len) memcpy(o->content + o->nc, ev.content, ev.content_len), o->nc += ev.content_len;
        if (ev.reasoning_len) memcpy(o->reasoning + o->nr, ev.reasoning, ev.reasoning_len), o->nr += ev.reasoning_len;
        o->emitted |= ev.content_len || ev.reasoning_len;
        if ((rc = note_logprobs(o, &ev))) break;
        if (ev.done) {
            o->end = ev;
            if (ev.n_calls) {
                snprintf(o->call_id, sizeof o->call_id, "%s", ev.calls[0].id);
                snprintf(o->call_name, sizeof o->call_name, "%s", ev.calls[0].name);
                snprintf(o->call_args, sizeof o->call_args, "%s", ev.calls[0].arguments);
            }
            if (ev.n_calls > 1) {
                snprintf(o->call2_id, sizeof o->call2_id, "%s", ev.calls[1].id);
                snprintf(o->call2_name, sizeof o->call2_name, "%s", ev.calls[1].name);
                snprintf(o->call2_args, sizeof o->call2_args, "%s", ev.calls[1].arguments);
            }
            o->end.calls = NULL, o->end.lps = NULL;
            o->response = srv_response(&rp, o->content, o->nc, o->reasoning, o->nr, &ev, srv_gen_usage(g));
            ev.content_len = ev.reasoning_len = 0, ev.n_lps = 0;
            o->end_chunk = srv_chunk(&rp, &ev, 0);
            int n;
            const srv_logprob *all = srv_gen_logprobs(g, &n);
            o->same_lps = n == o->n_lps && (!n || !memcmp(all, o->lps, sizeof *all * (size_t)n));
            if (rp.logprobs) o->logprobs = srv_logprobs(&rp, all, n, 0);
            break;
        }
    }
    if (!rc && !o->end.done) rc = -1, sprintf(o->why, "the generation did not end after the reply's %zu tokens", ids->n);
    srv_gen_free(g);
    return rc;
}

/* The opening of a call to `name` after the generation prompt of r's messages, up to and
 * including <|message|>, from the renderer's whole reply. */
static int opening(const srv_request *r, const char *name, glim_tokens *out, char *why) {
    glim_tool_call call = {name, "{}"};
    glim_chat_message reply = {.role = GLIM_ROLE_ASSISTANT, .tool_calls = &call, .n_tool_calls = 1};
    if (continuation(r->messages, r->n_messages, &reply, out, why)) return -1;
    const int32_t msg = glim_tokenizer_find(TOK, "<|message|>");
    size_t k = 0;
    while (k < out->n && out->ids[k] != msg) k++;
    if (k == out->n) return sprintf(why, "the call to %s has no <|message|>", name), -1;
    out->n = k + 1;
    return 0;
}

/* How many of the reply's first tokens the server put into the prompt for r's tool_choice,
 * worked out here from the renderer's replies: a named function's whole opening; for "required",
 * the tokens that every tool's opening starts with. The reply must start with them. */
static int forced_tokens(const srv_request *r, const glim_tokens *ids, size_t *n, char *why) {
    *n = 0;
    if (!r->force_tool && !r->require_tool) return 0;
    glim_tokens first = {0}, other = {0};
    int rc = opening(r, r->force_tool ? r->force_tool : r->tools[0].name, &first, why);
    size_t k = first.n;
    for (int i = 1; !rc && !r->force_tool && i < r->n_tools; i++) {
        other.n = 0;
        rc = opening(r, r->tools[i].name, &other, why);
        size_t j = 0;
        while (!rc && j < k && j < other.n && other.ids[j] == first.ids[j]) j++;
        k = j;
    }
    if (!rc && (k > ids->n || memcmp(ids->ids, first.ids, k * sizeof *ids->ids)))
        rc = -1, sprintf(why, "the reply does not start with the %zu tokens of the forced opening", k);
    *n = k;
    glim_tokens_free(&first);
    glim_tokens_free(&other);
    return rc;
}

/* Runs a chat request body, pushing the reply's tokens until the generation ends (after the ones
 * the request's tool_choice forced: the server put that opening into the prompt). */
static int run(const char *body, const glim_chat_message *reply, outcome *o) {
    memset(o, 0, sizeof *o);
    srv_request r;
    glim_error err = {0};
    if (srv_request_parse(&r, SRV_CHAT, body, strlen(body), srv_engine_config(E), &err))
        return sprintf(o->why, "parse: %s", err.message), -1;
    glim_tokens ids = {0};
    size_t from = 0;
    int rc = continuation(r.messages, r.n_messages, reply, &ids, o->why);
    if (!rc) rc = forced_tokens(&r, &ids, &from, o->why);
    if (!rc) rc = push_all(&r, &ids, from, o);
    srv_request_free(&r);
    glim_tokens_free(&ids);
    return rc;
}

/* The same with the tokens given: what a model that ignores the format (or the forced opening)
 * might write. */
static int run_ids(const char *body, const glim_tokens *ids, outcome *o) {
    memset(o, 0, sizeof *o);
    srv_request r;
    glim_error err = {0};
    if (srv_request_parse(&r, SRV_CHAT, body, strlen(body), srv_engine_config(E), &err))
        return sprintf(o->why, "parse: %s", err.message), -1;
    int rc = push_all(&r, ids, 0, o);
    srv_request_free(&r);
    return rc;
}

static void free_outcome(outcome *o) {
    json_decref(o->response), json_decref(o->end_chunk), json_decref(o->logprobs);
    o->response = o->end_chunk = o->logprobs = NULL;
}

static const char *jpath(json_t *j, const char *path) { /* "a.0.b": objects by key, arrays by index */
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", path);
    for (char *k = strtok_r(buf, ".", &save); k && j; k = strtok_r(NULL, ".", &save))
        j = json_is_array(j) ? json_array_get(j, (size_t)atoi(k)) : json_object_get(j, k);
    return json_is_string(j) ? json_string_value(j) : json_is_null(j) ? "null" : j ? "(not a string)" : "(absent)";
}

static void tool_call(void) {
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}],"
                       "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather\","
                       "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
                       "\"days\":{\"type\":\"integer\"}}}}}]}";
    glim_tool_call call = {"functions.get_weather", "{\"city\": \"Paris\", \"days\": 2}"};
    glim_chat_message reply = {.role = GLIM_ROLE_ASSISTANT, .reasoning = "Call the tool.", .tool_calls = &call, .n_tool_calls = 1};
    outcome o;
    if (run(body, &reply, &o)) {
        CHECK("tool_call", 0, "%s", o.why);
        return;
    }
    json_t *args = o.end.n_calls == 1 ? json_loads(o.call_args, 0, NULL) : NULL;
    json_t *want = json_pack("{s:s, s:i}", "city", "Paris", "days", 2);
    CHECK("tool_call", o.end.n_calls == 1 && !strcmp(o.end.finish, "tool_calls") && !strcmp(o.call_name, "get_weather") &&
              !strncmp(o.call_id, "call_", 5) && json_equal(args, want),
          "finish %s, %d calls, name %s, arguments %s", o.end.finish, o.end.n_calls, o.call_name, o.call_args);
    CHECK("tool_call_reasoning", o.nr == strlen("Call the tool.") && !memcmp(o.reasoning, "Call the tool.", o.nr) && o.nc == 0,
          "reasoning '%.*s', content '%.*s'", (int)o.nr, o.reasoning, (int)o.nc, o.content);
    CHECK("tool_call_response",
          !strcmp(jpath(o.response, "choices.0.message.content"), "null") &&
              !strcmp(jpath(o.response, "choices.0.message.tool_calls.0.function.name"), "get_weather") &&
              !strcmp(jpath(o.response, "choices.0.message.tool_calls.0.type"), "function") &&
              !strcmp(jpath(o.response, "choices.0.finish_reason"), "tool_calls") &&
              !strcmp(jpath(o.response, "choices.0.message.reasoning_content"), "Call the tool."),
          "%s", json_dumps(o.response, JSON_COMPACT));
    json_t *idx = json_object_get(json_array_get(json_object_get(json_object_get(json_array_get(
                                                                     json_object_get(o.end_chunk, "choices"), 0), "delta"),
                                                                 "tool_calls"), 0), "index");
    CHECK("tool_call_chunk", json_is_integer(idx) && json_integer_value(idx) == 0 &&
                                 !strcmp(jpath(o.end_chunk, "choices.0.delta.tool_calls.0.function.name"), "get_weather"),
          "%s", json_dumps(o.end_chunk, JSON_COMPACT));
    json_decref(args), json_decref(want), json_decref(o.response), json_decref(o.end_chunk);
}

/* Two calls in one turn (parallel tool calls: <|eom|> between them): both come back, in order,
 * with distinct ids. */
static void parallel_calls(void) {
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather and time in Paris?\"}],"
                       "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}},"
                       "{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}]}";
    glim_tool_call calls[2] = {{"functions.get_weather", "{\"city\": \"Paris\"}"}, {"functions.get_time", "{\"tz\": \"Europe/Paris\"}"}};
    glim_chat_message reply = {.role = GLIM_ROLE_ASSISTANT, .tool_calls = calls, .n_tool_calls = 2};
    outcome o;
    if (run(body, &reply, &o)) {
        CHECK("parallel_calls", 0, "%s", o.why);
        return;
    }
    CHECK("parallel_calls", o.end.n_calls == 2 && !strcmp(o.end.finish, "tool_calls") && !strcmp(o.call_name, "get_weather") &&
              !strcmp(o.call2_name, "get_time") && strstr(o.call2_args, "Europe/Paris") && strcmp(o.call_id, o.call2_id),
          "finish %s, %d calls: %s %s (%s), %s %s (%s)", o.end.finish, o.end.n_calls, o.call_id, o.call_name, o.call_args,
          o.call2_id, o.call2_name, o.call2_args);
    json_decref(o.response), json_decref(o.end_chunk);
}

/* tool_choice naming a function: the reply's opening (" to=functions.get_time<|message|>") is
 * the server's, in the prompt; the model writes only the call's body, and the call comes back. */
static void forced_call(void) {
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Time?\"}],"
                       "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}},"
                       "{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}],"
                       "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}}";
    glim_tool_call call = {"functions.get_time", "{\"tz\": \"UTC\"}"};
    glim_chat_message reply = {.role = GLIM_ROLE_ASSISTANT, .tool_calls = &call, .n_tool_calls = 1};
    outcome o;
    if (run(body, &reply, &o)) {
        CHECK("forced_call", 0, "%s", o.why);
        return;
    }
    CHECK("forced_call", o.end.n_calls == 1 && !strcmp(o.end.finish, "tool_calls") && !strcmp(o.call_name, "get_time") &&
              strstr(o.call_args, "UTC"),
          "finish %s, %d calls: %s (%s)", o.end.finish, o.end.n_calls, o.call_name, o.call_args);
    json_decref(o.response), json_decref(o.end_chunk);
}

static void stop_string(void) {
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stop\":[\"zzz\",\"stop here\"]}";
    glim_chat_message reply = {.role = GLIM_ROLE_ASSISTANT, .content = "Hello world, stop here please, more text"};
    outcome o;
    if (run(body, &reply, &o)) {
        CHECK("stop_string", 0, "%s", o.why);
        return;
    }
    CHECK("stop_string", o.nc == 13 && !memcmp(o.content, "Hello world, ", 13) && !strcmp(o.end.finish, "stop"),
          "content '%.*s', finish %s", (int)o.nc, o.content, o.end.finish);
    /* it ended as the stop string completed, not at the end of the message */
    glim_tokens all = {0};
    char why[256];
    continuation((glim_chat_message[]){{.role = GLIM_ROLE_USER, .content = "hi"}}, 1, &reply, &all, why);
    CHECK("stop_string_ends_early", o.pushed > 0 && (size_t)o.pushed + 3 < all.n,
          "pushed %d of the reply's %zu tokens", o.pushed, all.n);
    glim_tokens_free(&all);
    json_decref(o.response), json_decref(o.end_chunk);
}

static void answer_and_length(void) {
    const char *body = "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"hi\"}]}";
    glim_chat_message reply = {.role = GLIM_ROLE_ASSISTANT, .reasoning = "Greet back.", .content = "Hello! How can I help?"};
    outcome o;
    if (run(body, &reply, &o)) {
        CHECK("answer", 0, "%s", o.why);
    } else {
        CHECK("answer", o.nc == strlen(reply.content) && !memcmp(o.content, reply.content, o.nc) &&
                            o.nr == strlen(reply.reasoning) && !memcmp(o.reasoning, reply.reasoning, o.nr) &&
                            !strcmp(o.end.finish, "stop") && o.end.n_calls == 0 &&
                            json_integer_value(json_object_get(json_object_get(o.response, "usage"), "completion_tokens")) == o.pushed,
              "content '%.*s', reasoning '%.*s', finish %s", (int)o.nc, o.content, (int)o.nr, o.reasoning, o.end.finish);
        json_decref(o.response), json_decref(o.end_chunk);
    }
    /* max_tokens 4: ends on the 4th token with "length" */
    const char *body4 = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":4}";
    if (run(body4, &reply, &o)) {
        CHECK("length", 0, "%s", o.why);
        return;
    }
    CHECK("length", o.pushed == 4 && !strcmp(o.end.finish, "length"), "pushed %d, finish %s", o.pushed, o.end.finish);
    json_decref(o.response), json_decref(o.end_chunk);
}

/* ---- tool_choice "required" ------------------------------------------------------------------ */

#define TWO_TOOLS "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}," \
                  "{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}]"

static long long prompt_tokens(const outcome *o) {
    return json_integer_value(json_object_get(json_object_get(o->response, "usage"), "prompt_tokens"));
}

/* "required": the server forces the opening both tools share (fewer tokens than a named call's,
 * more than none), the model names the tool, and the call comes back. Without the forced opening
 * the reply's tokens would not parse as a call; without the check below, a prompt of the same
 * length as "auto"'s would pass unnoticed. */
static void required_call(void) {
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Time?\"}]," TWO_TOOLS ",\"tool_choice\":\"required\"}";
    const char *body_auto = "{\"messages\":[{\"role\":\"user\",\"content\":\"Time?\"}]," TWO_TOOLS ",\"tool_choice\":\"auto\"}";
    glim_tool_call call = {"functions.get_time", "{\"tz\": \"UTC\"}"};
    glim_chat_message reply = {.role = GLIM_ROLE_ASSISTANT, .tool_calls = &call, .n_tool_calls = 1};
    outcome o, a;
    if (run(body, &reply, &o) || run(body_auto, &reply, &a)) {
        CHECK("required_call", 0, "%s%s", o.why, a.why);
        free_outcome(&o), free_outcome(&a);
        return;
    }
    CHECK("required_call", o.end.n_calls == 1 && !strcmp(o.end.finish, "tool_calls") && !strcmp(o.call_name, "get_time") &&
              strstr(o.call_args, "UTC") && o.nc == 0,
          "finish %s, %d calls: %s (%s), content '%.*s'", o.end.finish, o.end.n_calls, o.call_name, o.call_args, (int)o.nc, o.content);
    /* the forced tokens: what "required" adds to the prompt, fewer than the call's whole opening */
    glim_tokens open = {0};
    srv_request r;
    glim_error err = {0};
    char why[300] = "";
    srv_request_parse(&r, SRV_CHAT, body, strlen(body), srv_engine_config(E), &err);
    int rc = opening(&r, "functions.get_time", &open, why);
    long long added = prompt_tokens(&o) - prompt_tokens(&a);
    CHECK("required_opening", !rc && added > 0 && added < (long long)open.n - 1 && o.pushed == a.pushed - added,
          "%s; the prompt grows by %lld tokens (the named opening has %zu); pushed %d against auto's %d", why, added,
          open.n, o.pushed, a.pushed);
    glim_tokens_free(&open);
    srv_request_free(&r);
    free_outcome(&o), free_outcome(&a);
}

/* A reply that is not a call to one of the tools, under "required": an error naming
 * tool_choice, and no text on the way. */
static void check_not_a_call(const char *name, int rc, const outcome *o) {
    CHECK(name, rc && o->status == 500 && strstr(o->why, "'tool_choice' is \"required\"") && !o->emitted && !o->n_lps,
          "status %d, emitted %d, content '%.*s': %s", o->status, o->emitted, (int)o->nc, o->content, o->why);
}

static void required_not_a_call(void) {
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]," TWO_TOOLS ",\"tool_choice\":\"required\","
                       "\"logprobs\":true}";
    glim_error err = {0};
    outcome o;
    /* the renderer's plain answer, as a model that ignores the forced opening writes it */
    glim_chat_message answer = {.role = GLIM_ROLE_ASSISTANT, .content = "Hello! How can I help?"};
    glim_chat_message hi = {.role = GLIM_ROLE_USER, .content = "hi"};
    glim_tokens ids = {0};
    char why[300] = "";
    if (continuation(&hi, 1, &answer, &ids, why)) {
        CHECK("required_plain_answer", 0, "%s", why);
    } else {
        check_not_a_call("required_plain_answer", run_ids(body, &ids, &o), &o);
        free_outcome(&o);
    }
    /* text straight after the opening: short (the message ends inside its header) and long (the
     * parser gives up on the header and takes it as the answer) */
    const char *texts[2] = {"Hi there!", "Sure. Here is a long plain answer that goes on and on without ever naming a tool, "
                                         "well past the longest header the parser will wait for, and then some more words."};
    for (int k = 0; k < 2; k++) {
        glim_tokens t = {0};
        glim_tokenize(TOK, texts[k], strlen(texts[k]), 0, &t, &err);
        glim_tokens_push(&t, glim_tokenizer_find(TOK, "<|eot|>"), &err);
        check_not_a_call(k ? "required_long_text" : "required_short_text", run_ids(body, &t, &o), &o);
        free_outcome(&o);
        glim_tokens_free(&t);
    }
    /* a call, but to a function that is not in tools */
    glim_tool_call call = {"functions.get_stock", "{\"s\": \"X\"}"};
    glim_chat_message stock = {.role = GLIM_ROLE_ASSISTANT, .tool_calls = &call, .n_tool_calls = 1};
    check_not_a_call("required_unknown_tool", run(body, &stock, &o), &o);
    free_outcome(&o);
    glim_tokens_free(&ids);
}

/* ---- logprobs ----------------------------------------------------------------------------------- */

static size_t token_len(int32_t id) {
    size_t n = 0;
    glim_token_bytes(TOK, id, &n);
    return n;
}

/* The chat logprobs of a reply whose answer is `content`: exactly the answer's tokens (want, as
 * the tokenizer splits it, or its first n_want when a stop string cuts it), each reported in the
 * event whose text completes it (never before, never after), and the JSON: token text, exact
 * bytes, top_logprobs sorted. */
static void check_logprobs(const char *name, const outcome *o, const char *content, int n_want, int top) {
    glim_tokens want = {0};
    glim_error err = {0};
    glim_tokenize(TOK, content, strlen(content), 0, &want, &err);
    if (n_want < 0) n_want = (int)want.n;
    char why[600] = "";
    int ok = o->n_lps == n_want && o->same_lps;
    if (!ok) snprintf(why, sizeof why, "%d tokens reported, %d expected (same at the end: %d)", o->n_lps, n_want, o->same_lps);
    for (int i = 0; ok && i < n_want; i++) {
        const srv_logprob *l = &o->lps[i];
        ok = l->id == want.ids[i] && l->lp <= 0 && l->n_top == top;
        for (int k = 0; ok && k < top; k++) ok = l->top_lp[k] <= 0 && (!k || l->top_lp[k] <= l->top_lp[k - 1]) && l->top_lp[0] >= l->lp;
        if (!ok) snprintf(why, sizeof why, "token %d: id %d (expected %d), logprob %g, %d alternatives", i, l->id, want.ids[i], l->lp, l->n_top);
    }
    /* when: after each event, the tokens reported are those whose bytes the content holds whole */
    for (int e = 0; ok && e < o->n_events; e++) {
        size_t done = 0;
        int complete = 0;
        while (complete < n_want && done + token_len(want.ids[complete]) <= o->ev_nc[e]) done += token_len(want.ids[complete++]);
        ok = o->ev_nlp[e] == complete;
        if (!ok) snprintf(why, sizeof why, "after event %d (%zu content bytes) %d tokens reported; %d are complete", e, o->ev_nc[e], o->ev_nlp[e], complete);
    }
    /* the JSON: {"content": [{token, logprob, bytes, top_logprobs}]}, the bytes exact */
    json_t *items = json_object_get(o->logprobs, "content");
    ok = ok && json_is_array(items) && (int)json_array_size(items) == n_want;
    for (int i = 0; ok && i < n_want; i++) {
        json_t *it = json_array_get(items, (size_t)i), *bytes = json_object_get(it, "bytes");
        size_t n = 0;
        const unsigned char *b = (const unsigned char *)glim_token_bytes(TOK, want.ids[i], &n);
        ok = json_is_string(json_object_get(it, "token")) && json_is_real(json_object_get(it, "logprob")) &&
             json_array_size(bytes) == n && (int)json_array_size(json_object_get(it, "top_logprobs")) == top;
        for (size_t j = 0; ok && j < n; j++) ok = json_integer_value(json_array_get(bytes, j)) == b[j];
        if (!ok) snprintf(why, sizeof why, "content[%d] %s", i, json_dumps(it, JSON_COMPACT));
    }
    CHECK(name, ok, "%s", why);
    glim_tokens_free(&want);
}

static void logprobs(void) {
    outcome o;
    const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":true,\"top_logprobs\":2}";
    /* reasoning, then the answer: only the answer's tokens */
    glim_chat_message reply = {.role = GLIM_ROLE_ASSISTANT, .reasoning = "Greet back.", .content = "Hello! How can I help?"};
    if (run(body, &reply, &o)) CHECK("logprobs_answer", 0, "%s", o.why);
    else check_logprobs("logprobs_answer", &o, reply.content, -1, 2);
    free_outcome(&o);
    /* a stop string: the tokens it holds back come with the text that follows, its own never */
    const char *stop = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":true,\"stop\":\"stop here\"}";
    glim_chat_message cut = {.role = GLIM_ROLE_ASSISTANT, .content = "Hello world, stop here please, more text"};
    if (run(stop, &cut, &o)) CHECK("logprobs_stop", 0, "%s", o.why);
    else check_logprobs("logprobs_stop", &o, cut.content, 3, 0); /* "Hello", " world", ","; " stop" is cut */
    free_outcome(&o);
    /* tokens that are pieces of a character: reported with the token that completes it; the
     * JSON's token text is lossy (U+FFFD), its bytes exact */
    glim_chat_message frak = {.role = GLIM_ROLE_ASSISTANT, .content = "\xF0\x9D\x94\x98\xF0\x9D\x94\xAB ok"};
    if (run(body, &frak, &o)) {
        CHECK("logprobs_split_char", 0, "%s", o.why);
    } else {
        check_logprobs("logprobs_split_char", &o, frak.content, -1, 2);
        const char *first = json_string_value(json_object_get(json_array_get(json_object_get(o.logprobs, "content"), 0), "token"));
        CHECK("logprobs_split_char_text", first && strstr(first, "\xEF\xBF\xBD") && o.n_lps > 4,
              "the first token's text is '%s' (%d tokens)", first ? first : "(none)", o.n_lps);
    }
    free_outcome(&o);
    /* a tool call: no answer, no logprobs */
    glim_tool_call call = {"functions.get_time", "{}"};
    glim_chat_message calls = {.role = GLIM_ROLE_ASSISTANT, .reasoning = "Call.", .tool_calls = &call, .n_tool_calls = 1};
    const char *tools = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]," TWO_TOOLS ",\"logprobs\":true}";
    if (run(tools, &calls, &o)) CHECK("logprobs_tool_call", 0, "%s", o.why);
    else CHECK("logprobs_tool_call", o.end.n_calls == 1 && o.n_lps == 0 && json_array_size(json_object_get(o.logprobs, "content")) == 0,
               "%d calls, %d tokens reported", o.end.n_calls, o.n_lps);
    free_outcome(&o);
}

/* Mutated request bodies (bytes flipped, inserted, deleted, cut short) through the parser: each
 * must come back accepted (0) or refused with a 400 and a message, never anything else; under a
 * sanitizer build this is also the check that none of them crashes or leaks. */
static void parse_mutations(void) {
    static const char *seeds[] = {
        "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}],"
        "\"max_tokens\":5,\"temperature\":0.5,\"stop\":[\"a\",\"b\"],\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"w\"},{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"r\","
        "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ok\"}],\"tools\":[{\"type\":\"function\",\"function\":"
        "{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}],\"seed\":7,\"reasoning_effort\":\"low\"}",
    };
    unsigned long long x = 88172645463325252ull;
    int bad = 0, accepted = 0, refused = 0;
    char body[1024], first_bad[300] = "";
    for (int it = 0; it < 20000; it++) {
        const char *seed = seeds[it % 2];
        size_t n = strlen(seed);
        memcpy(body, seed, n);
        for (int k = 0; k < 1 + it % 4 && n > 1; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
            size_t at = (size_t)(x >> 8) % n;
            switch ((x >> 3) % 4) {
            case 0: body[at] = (char)(x >> 40); break;                                                 /* flip */
            case 1: if (n + 1 < sizeof body) memmove(body + at + 1, body + at, n - at), body[at] = (char)(x >> 32), n++; break;
            case 2: memmove(body + at, body + at + 1, n - at - 1), n--; break;                        /* delete */
            case 3: n = at + 1; break;                                                                 /* cut */
            }
        }
        srv_request r;
        glim_error err = {0};
        int st = srv_request_parse(&r, it % 3 ? SRV_CHAT : SRV_COMPLETION, body, n, srv_engine_config(E), &err);
        if (st == 0) accepted++, srv_request_free(&r);
        else if (st == 400 && err.message[0]) refused++;
        else if (!bad++) snprintf(first_bad, sizeof first_bad, "status %d, message '%.200s'", st, err.message);
    }
    CHECK("parse_mutations", !bad && accepted > 0 && refused > 0,
          "%d of 20000 mutated bodies neither accepted nor refused with a 400 (first: %s); %d accepted, %d refused",
          bad, first_bad, accepted, refused);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: forced MODEL_DIR\n");
        return 2;
    }
    srv_config c = {.model_dir = argv[1], .model_name = "m", .backend = "cpu", .threads = 2, .n_ctx = 512, .n_batch = 64,
                    .parallel = 1, .max_queue = 4, .host = "127.0.0.1", .max_body = 1 << 20, .date = "01-02-2027",
                    .samp = glim_sampler_defaults(), .quiet = 1};
    glim_error err = {0};
    E = srv_engine_open(&c, &err);
    if (!E || glim_tokenizer_load(argv[1], &TOK, &err)) {
        printf("FAIL server_forced_open: %s\n", err.message);
        return 1;
    }
    tool_call();
    parallel_calls();
    forced_call();
    stop_string();
    answer_and_length();
    required_call();
    required_not_a_call();
    logprobs();
    parse_mutations();
    srv_engine_close(E);
    glim_tokenizer_free(TOK);
    return failed;
}
