/* forced.c: `glimmer serve`'s generation with scripted continuations (srv_gen_push instead of
 * sampling), on a model whose tokenizer has the Muse chat tokens: what a random model never
 * writes. The continuation is the chat renderer's own tokens for an assistant message (the ids
 * past the generation prompt), so the parser, the tool-call naming, the stop strings held back
 * across tokens and the OpenAI JSON are checked against what the format says they must give.
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
} outcome;

static srv_engine *E;

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

/* Runs a chat request body, pushing the reply's tokens until the generation ends (from after the
 * reply's first <|message|> when the request forces a call: the server put that opening into the
 * prompt). */
static int run(const char *body, const glim_chat_message *reply, outcome *o) {
    memset(o, 0, sizeof *o);
    srv_request r;
    glim_error err = {0};
    if (srv_request_parse(&r, SRV_CHAT, body, strlen(body), srv_engine_config(E), &err))
        return sprintf(o->why, "parse: %s", err.message), -1;
    glim_tokens ids = {0};
    srv_gen *g = NULL;
    int rc = continuation(r.messages, r.n_messages, reply, &ids, o->why);
    size_t from = 0;
    if (!rc && r.force_tool) {
        glim_tokenizer *tok = NULL;
        rc = glim_tokenizer_load(srv_engine_config(E)->model_dir, &tok, &err) ? -1 : 0;
        const int32_t msg = tok ? glim_tokenizer_find(tok, "<|message|>") : -1;
        while (from < ids.n && ids.ids[from] != msg) from++;
        from++;
        glim_tokenizer_free(tok);
        if (!rc && from > ids.n) rc = -1, sprintf(o->why, "the reply has no <|message|>");
    }
    if (!rc && srv_gen_start(E, &r, &g, &err)) rc = -1, sprintf(o->why, "start: %s", err.message);
    srv_reply rp;
    srv_reply_init(&rp, SRV_CHAT, "m");
    for (size_t i = from; !rc && i < ids.n; i++) {
        srv_event ev;
        if (srv_gen_push(g, ids.ids[i], &ev, &err)) {
            rc = -1, sprintf(o->why, "push: %s", err.message);
            break;
        }
        o->pushed++;
        if (ev.content_len + o->nc >= sizeof o->content || ev.reasoning_len + o->nr >= sizeof o->reasoning) {
            rc = -1, sprintf(o->why, "too much text");
            break;
        }
        if (ev.content_len) memcpy(o->content + o->nc, ev.content, ev.content_len), o->nc += ev.content_len;
        if (ev.reasoning_len) memcpy(o->reasoning + o->nr, ev.reasoning, ev.reasoning_len), o->nr += ev.reasoning_len;
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
            o->end.calls = NULL;
            o->response = srv_response(&rp, o->content, o->nc, o->reasoning, o->nr, &ev, srv_gen_usage(g));
            ev.content_len = ev.reasoning_len = 0;
            o->end_chunk = srv_chunk(&rp, &ev, 0);
            break;
        }
    }
    if (!rc && !o->end.done) rc = -1, sprintf(o->why, "the generation did not end after the reply's %zu tokens", ids.n);
    srv_gen_free(g);
    srv_request_free(&r);
    glim_tokens_free(&ids);
    return rc;
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
    if (!E) {
        printf("FAIL server_forced_open: %s\n", err.message);
        return 1;
    }
    tool_call();
    parallel_calls();
    forced_call();
    stop_string();
    answer_and_length();
    parse_mutations();
    srv_engine_close(E);
    return failed;
}
