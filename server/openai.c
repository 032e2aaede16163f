/* openai.c: the OpenAI wire format of `glimmer serve`: a chat or completion request body into a
 * srv_request (every field checked, the offending one named: a client learns what it sent
 * wrong), and the response, chunk, model list and error objects. Unknown fields are ignored, as
 * OpenAI-compatible servers do; fields that ask for something glimmer does not do (n > 1, JSON
 * output modes, streamed echo) are refused rather than silently dropped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "server.h"
#include "utf8.h"

#define FAIL(...) (snprintf(err->message, sizeof err->message, __VA_ARGS__), err->code = GLIM_E_ARG, 400)

static char *own(srv_request *r, char *s) {
    if (!s) return NULL;
    char **o = realloc(r->owned, (size_t)(r->n_owned + 1) * sizeof *o);
    if (!o) {
        free(s);
        return NULL;
    }
    r->owned = o;
    return r->owned[r->n_owned++] = s;
}

#define TOOL_NS "functions."

/* A tool's name as the chat format writes it: OpenAI functions live in the "functions" namespace. */
static char *tool_name(srv_request *r, const char *name) {
    char *s = malloc(strlen(name) + sizeof TOOL_NS);
    if (s) sprintf(s, TOOL_NS "%s", name);
    return own(r, s);
}

const char *srv_client_tool_name(const char *name) {
    return strncmp(name, TOOL_NS, sizeof TOOL_NS - 1) ? name : name + sizeof TOOL_NS - 1;
}

/* ---- fields ---------------------------------------------------------------------------------- */

/* A number field in [lo, hi] (absent or null: *out unchanged). */
static int num_field(json_t *o, const char *key, double lo, double hi, float *out, glim_error *err) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v)) return FAIL("'%s' must be a number", key);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi) return FAIL("'%s' is %g; it must be between %g and %g", key, x, lo, hi);
    *out = (float)x;
    return 0;
}

static int int_field(json_t *o, const char *key, long long lo, long long hi, long long *out, glim_error *err) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) return FAIL("'%s' must be an integer", key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return FAIL("'%s' is %lld; it must be between %lld and %lld", key, x, lo, hi);
    *out = x;
    return 0;
}

static int bool_field(json_t *o, const char *key, int *out, glim_error *err) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return FAIL("'%s' must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* What both endpoints share: sampling, length (max_tokens 0 marked for completion_fields to judge),
 * n, stop strings, streaming. */
static int common_fields(srv_request *r, json_t *o, const srv_config *cfg, glim_error *err) {
    int st;
    r->samp = cfg->samp;
    glim_sampler_params *p = &r->samp;
    if ((st = num_field(o, "temperature", 0, 2, &p->temperature, err)) || (st = num_field(o, "top_p", 0, 1, &p->top_p, err)) ||
        (st = num_field(o, "min_p", 0, 1, &p->min_p, err)) ||
        (st = num_field(o, "presence_penalty", -2, 2, &p->presence_penalty, err)) ||
        (st = num_field(o, "frequency_penalty", -2, 2, &p->frequency_penalty, err)) ||
        (st = num_field(o, "repetition_penalty", 0.01, 100, &p->repeat_penalty, err)))
        return st;
    if (json_is_number(json_object_get(o, "top_p")) && p->top_p <= 0) return FAIL("'top_p' must be above 0");
    long long v = -1;
    if ((st = int_field(o, "top_k", 0, 1 << 30, &v, err))) return st;
    if (v >= 0) p->top_k = (int)v;
    long long seed = 0;
    if ((st = int_field(o, "seed", INT64_MIN, INT64_MAX, &seed, err))) return st;
    r->seed_given = cfg->seed_given; /* a server started with -s: every request without a seed */
    if (json_is_integer(json_object_get(o, "seed"))) p->seed = (uint64_t)seed, r->seed_given = 1;
    long long mt = -1;
    if ((st = int_field(o, "max_tokens", 0, 1 << 30, &mt, err)) ||
        (st = int_field(o, "max_completion_tokens", 0, 1 << 30, &mt, err)))
        return st;
    r->max_tokens = mt > 0 ? (int)mt : 0;
    r->no_generation = mt == 0; /* allowed with echo only: completion_fields checks */
    long long n = 1;
    if ((st = int_field(o, "n", 1, 1 << 30, &n, err))) return st;
    if (n != 1) return FAIL("'n' is %lld: glimmer generates one choice per request (n = 1)", n);
    json_t *stop = json_object_get(o, "stop");
    if (json_is_string(stop)) {
        if (json_string_length(stop) > 0) r->stop[r->n_stop++] = json_string_value(stop);
    } else if (json_is_array(stop)) {
        if (json_array_size(stop) > SRV_MAX_STOP) return FAIL("'stop' has %zu strings; at most %d", json_array_size(stop), SRV_MAX_STOP);
        for (size_t i = 0; i < json_array_size(stop); i++) {
            json_t *s = json_array_get(stop, i);
            if (!json_is_string(s)) return FAIL("'stop[%zu]' must be a string", i);
            if (json_string_length(s) > 0) r->stop[r->n_stop++] = json_string_value(s);
        }
    } else if (stop && !json_is_null(stop)) {
        return FAIL("'stop' must be a string or an array of strings");
    }
    if ((st = bool_field(o, "stream", &r->stream, err))) return st;
    json_t *so = json_object_get(o, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return FAIL("'stream_options' must be an object");
        if ((st = bool_field(so, "include_usage", &r->include_usage, err))) return st;
    }
    return 0;
}

/* ---- chat messages ----------------------------------------------------------------------- */

/* A message's content: a string, null, or an array of text parts (joined). */
static int content_of(srv_request *r, json_t *m, size_t i, const char **out, glim_error *err) {
    json_t *c = json_object_get(m, "content");
    *out = NULL;
    if (!c || json_is_null(c)) return 0;
    if (json_is_string(c)) {
        *out = json_string_value(c);
        return 0;
    }
    if (!json_is_array(c)) return FAIL("'messages[%zu].content' must be a string, null or an array of parts", i);
    size_t len = 0;
    for (size_t k = 0; k < json_array_size(c); k++) {
        json_t *part = json_array_get(c, k), *text = json_object_get(part, "text");
        const char *type = json_string_value(json_object_get(part, "type"));
        if (!type || strcmp(type, "text") || !json_is_string(text))
            return FAIL("'messages[%zu].content[%zu]': only text parts ({\"type\": \"text\", \"text\": ...}) "
                        "are supported", i, k);
        len += json_string_length(text);
    }
    char *s = own(r, malloc(len + 1));
    if (!s) return FAIL("out of memory");
    len = 0;
    for (size_t k = 0; k < json_array_size(c); k++) {
        json_t *text = json_object_get(json_array_get(c, k), "text");
        memcpy(s + len, json_string_value(text), json_string_length(text));
        len += json_string_length(text);
    }
    s[len] = 0;
    if (strlen(s) != len) return FAIL("'messages[%zu].content' contains a NUL character", i);
    *out = s;
    return 0;
}

/* An assistant message's tool_calls into glim_tool_calls (names in the functions namespace). */
static int tool_calls_of(srv_request *r, json_t *m, size_t i, glim_chat_message *out, glim_error *err) {
    json_t *tc = json_object_get(m, "tool_calls");
    if (!tc || json_is_null(tc)) return 0;
    if (!json_is_array(tc)) return FAIL("'messages[%zu].tool_calls' must be an array", i);
    size_t n = json_array_size(tc);
    if (!n) return 0;
    glim_tool_call *calls = calloc(n, sizeof *calls);
    if (!calls || !own(r, (char *)calls)) return FAIL("out of memory");
    for (size_t k = 0; k < n; k++) {
        json_t *c = json_array_get(tc, k), *f = json_object_get(c, "function");
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *args = json_string_value(json_object_get(f, "arguments"));
        if (!json_is_object(c) || !name || !*name)
            return FAIL("'messages[%zu].tool_calls[%zu]' needs function.name", i, k);
        if (!args) args = "{}";
        json_error_t je;
        json_t *a = json_loads(args, 0, &je);
        int obj = json_is_object(a);
        json_decref(a);
        if (!obj) return FAIL("'messages[%zu].tool_calls[%zu].function.arguments' must be a JSON object text", i, k);
        calls[k].name = tool_name(r, name);
        calls[k].arguments = args;
        if (!calls[k].name) return FAIL("out of memory");
    }
    out->tool_calls = calls;
    out->n_tool_calls = (int)n;
    return 0;
}

/* A tool message's tool name: the call with its tool_call_id among the earlier assistant
 * messages (the chat format names a tool's output by the tool, not by the call). */
static const char *tool_of_call(json_t *msgs, size_t before, const glim_chat_message *parsed, const char *id) {
    for (size_t j = before; j-- > 0;) {
        json_t *tc = json_object_get(json_array_get(msgs, j), "tool_calls");
        for (size_t k = 0; k < json_array_size(tc); k++)
            if (parsed[j].tool_calls && (int)k < parsed[j].n_tool_calls &&
                !strcmp(json_string_value(json_object_get(json_array_get(tc, k), "id")) ?: "", id))
                return parsed[j].tool_calls[k].name;
    }
    return NULL;
}

static int messages_of(srv_request *r, json_t *o, glim_error *err) {
    json_t *msgs = json_object_get(o, "messages");
    if (!msgs) return FAIL("'messages' is required");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0) return FAIL("'messages' must be a non-empty array");
    size_t n = json_array_size(msgs);
    r->messages = calloc(n, sizeof *r->messages);
    if (!r->messages) return FAIL("out of memory");
    r->n_messages = (int)n;
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(msgs, i);
        glim_chat_message *g = &r->messages[i];
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!json_is_object(m) || !role) return FAIL("'messages[%zu]' needs a 'role'", i);
        int st = content_of(r, m, i, &g->content, err);
        if (st) return st;
        if (!strcmp(role, "system") || !strcmp(role, "developer")) {
            if (i) return FAIL("'messages[%zu]': a %s message must come first", i, role);
            g->role = GLIM_ROLE_SYSTEM;
        } else if (!strcmp(role, "user")) {
            g->role = GLIM_ROLE_USER;
        } else if (!strcmp(role, "assistant")) {
            g->role = GLIM_ROLE_ASSISTANT;
            json_t *rc = json_object_get(m, "reasoning_content");
            if (json_is_string(rc) && json_string_length(rc)) g->reasoning = json_string_value(rc);
            if ((st = tool_calls_of(r, m, i, g, err))) return st;
        } else if (!strcmp(role, "tool")) {
            g->role = GLIM_ROLE_TOOL;
            const char *id = json_string_value(json_object_get(m, "tool_call_id"));
            if (!id) return FAIL("'messages[%zu]': a tool message needs 'tool_call_id'", i);
            g->name = tool_of_call(msgs, i, r->messages, id);
            if (!g->name) return FAIL("'messages[%zu].tool_call_id' '%s' matches no earlier assistant tool call", i, id);
            if (!g->content) g->content = "";
        } else {
            return FAIL("'messages[%zu].role' '%s': expected system, developer, user, assistant or tool", i, role);
        }
        if (g->role != GLIM_ROLE_ASSISTANT && !g->content)
            return FAIL("'messages[%zu]' (%s) needs 'content'", i, role);
    }
    return 0;
}

static int tools_of(srv_request *r, json_t *o, glim_error *err) {
    json_t *tools = json_object_get(o, "tools");
    const char *choice = json_string_value(json_object_get(o, "tool_choice"));
    if (choice && !strcmp(choice, "none")) return 0;
    if (!tools || json_is_null(tools)) {
        if (json_is_object(json_object_get(o, "tool_choice"))) return FAIL("'tool_choice' names a function but there are no 'tools'");
        if (choice && !strcmp(choice, "required")) return FAIL("'tool_choice' is \"required\" but there are no 'tools'");
        return 0;
    }
    if (!json_is_array(tools)) return FAIL("'tools' must be an array");
    size_t n = json_array_size(tools);
    r->tools = calloc(n ? n : 1, sizeof *r->tools);
    if (!r->tools) return FAIL("out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(tools, i), *f = json_object_get(t, "function");
        const char *type = json_string_value(json_object_get(t, "type"));
        const char *name = json_string_value(json_object_get(f, "name"));
        if (!type || strcmp(type, "function")) return FAIL("'tools[%zu].type' must be \"function\"", i);
        if (!name || !*name) return FAIL("'tools[%zu].function.name' is required", i);
        json_t *params = json_object_get(f, "parameters");
        if (params && !json_is_null(params) && !json_is_object(params))
            return FAIL("'tools[%zu].function.parameters' must be a JSON schema object", i);
        glim_chat_tool *g = &r->tools[r->n_tools++];
        g->name = tool_name(r, name);
        g->description = json_string_value(json_object_get(f, "description"));
        g->parameters = json_is_object(params) ? own(r, json_dumps(params, JSON_COMPACT)) : NULL;
        if (!g->name || (json_is_object(params) && !g->parameters)) return FAIL("out of memory");
    }
    /* tool_choice: "auto" leaves the choice to the model; a named function is forced (the reply
     * starts as that call's message); "required" forces the opening every call shares, up to
     * the name, which the model picks (engine.c: force_opening), and a reply that still is not a
     * call to one of the tools is an error */
    json_t *tc = json_object_get(o, "tool_choice");
    if (tc && !json_is_null(tc) && !json_is_string(tc)) {
        const char *type = json_string_value(json_object_get(tc, "type"));
        const char *name = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
        if (!json_is_object(tc) || !type || strcmp(type, "function") || !name)
            return FAIL("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                        "\"function\": {\"name\": ...}}");
        for (int i = 0; i < r->n_tools && !r->force_tool; i++)
            if (!strcmp(srv_client_tool_name(r->tools[i].name), name)) r->force_tool = r->tools[i].name;
        if (!r->force_tool) return FAIL("'tool_choice' names '%s', which is not in 'tools'", name);
    } else if (choice && strcmp(choice, "auto") && strcmp(choice, "required")) {
        return FAIL("'tool_choice' '%s': expected \"none\", \"auto\", \"required\" or a function", choice);
    } else if (choice && !strcmp(choice, "required")) {
        if (!r->n_tools) return FAIL("'tool_choice' is \"required\" but 'tools' is empty");
        r->require_tool = 1;
    }
    return 0;
}

/* Chat logprobs: "logprobs": true, with "top_logprobs" alternatives (0..20) per token; as OpenAI,
 * top_logprobs alone is an error rather than a request without logprobs. */
static int chat_logprobs_fields(srv_request *r, json_t *o, glim_error *err) {
    int st, lp = 0;
    long long top = -1;
    if ((st = bool_field(o, "logprobs", &lp, err)) || (st = int_field(o, "top_logprobs", 0, SRV_MAX_TOP, &top, err)) ||
        (st = bool_field(o, "return_tokens_as_token_ids", &r->ids_as_tokens, err)))
        return st;
    if (top >= 0 && !lp) return FAIL("'top_logprobs' needs 'logprobs': true");
    r->logprobs = !lp ? -1 : top > 0 ? (int)top : 0;
    return 0;
}

static int chat_fields(srv_request *r, json_t *o, glim_error *err) {
    int st;
    if ((st = messages_of(r, o, err)) || (st = tools_of(r, o, err)) || (st = chat_logprobs_fields(r, o, err)))
        return st;
    if (r->no_generation) return FAIL("'max_tokens' must be at least 1");
    json_t *re = json_object_get(o, "reasoning_effort");
    if (re && !json_is_null(re)) {
        const char *e = json_string_value(re);
        if (!e || (strcmp(e, "low") && strcmp(e, "medium") && strcmp(e, "high") && strcmp(e, "xhigh")))
            return FAIL("'reasoning_effort' must be \"low\", \"medium\", \"high\" or \"xhigh\" (Muse Glimmer's)");
        r->reasoning = e;
    }
    json_t *rf = json_object_get(o, "response_format");
    const char *rft = json_string_value(json_object_get(rf, "type"));
    if (rf && !json_is_null(rf) && (!rft || strcmp(rft, "text")))
        return FAIL("'response_format' %s is not supported (only {\"type\": \"text\"})", rft ? rft : "without a type");
    return 0;
}

static int completion_fields(srv_request *r, json_t *o, glim_error *err) {
    json_t *p = json_object_get(o, "prompt");
    if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0))) p = json_array_get(p, 0);
    if (!p) return FAIL("'prompt' is required");
    if (json_is_string(p)) {
        if (json_string_length(p) != strlen(json_string_value(p))) return FAIL("'prompt' contains a NUL character");
        r->prompt = json_string_value(p);
    } else if (json_is_array(p) && json_array_size(p) > 0) {
        size_t n = json_array_size(p);
        r->prompt_ids = malloc(n * sizeof *r->prompt_ids);
        if (!r->prompt_ids) return FAIL("out of memory");
        for (size_t i = 0; i < n; i++) {
            json_t *v = json_array_get(p, i);
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
                return FAIL("'prompt[%zu]' must be a token id (a non-negative integer) or the prompt a string", i);
            r->prompt_ids[i] = (int32_t)json_integer_value(v);
        }
        r->n_prompt_ids = (int)n;
    } else {
        return FAIL("'prompt' must be a string or a non-empty array of token ids");
    }
    long long lp = -1;
    int st;
    if ((st = int_field(o, "logprobs", 0, SRV_MAX_TOP, &lp, err)) || (st = bool_field(o, "echo", &r->echo, err)) ||
        (st = bool_field(o, "return_tokens_as_token_ids", &r->ids_as_tokens, err)))
        return st;
    r->logprobs = (int)lp;
    if (r->no_generation && !r->echo) return FAIL("'max_tokens' must be at least 1 (0 only with echo)");
    if (r->stream && r->echo) return FAIL("'echo' with 'stream' is not supported: ask without streaming");
    if (json_is_string(json_object_get(o, "suffix"))) return FAIL("'suffix' is not supported by glimmer serve");
    long long best = 1;
    if (int_field(o, "best_of", 1, 1, &best, err)) return FAIL("'best_of' must be 1");
    return 0;
}

int srv_request_parse(srv_request *r, int kind, const char *body, size_t len, const srv_config *cfg,
                      glim_error *err) {
    memset(r, 0, sizeof *r);
    r->kind = kind;
    size_t ok = utf8_valid_prefix(body, len);
    if (ok < len)
        return FAIL("the request body is not valid UTF-8 (byte 0x%02x at offset %zu)", (unsigned char)body[ok], ok);
    json_error_t je;
    r->root = json_loadb(body, len, 0, &je);
    if (!r->root) return FAIL("malformed JSON at line %d, column %d: %s", je.line, je.column, je.text);
    if (!json_is_object(r->root)) return FAIL("the request body must be a JSON object");
    int st = common_fields(r, r->root, cfg, err);
    if (!st) st = kind == SRV_CHAT ? chat_fields(r, r->root, err) : completion_fields(r, r->root, err);
    if (st) srv_request_free(r);
    return st;
}

void srv_request_free(srv_request *r) {
    for (int i = 0; i < r->n_owned; i++) free(r->owned[i]);
    free(r->owned);
    free(r->messages);
    free(r->tools);
    free(r->prompt_ids);
    json_decref(r->root);
    int kind = r->kind;
    memset(r, 0, sizeof *r);
    r->kind = kind;
}

/* ---- responses ------------------------------------------------------------------------------- */

/* A JSON string of generated text, U+FFFD for each ill-formed byte: the engine hands out whole
 * UTF-8 characters, but a token of logprobs may be a piece of one (its exact bytes go apart). */
static json_t *jtext(const char *s, size_t n) {
    json_t *j = json_stringn(s ? s : "", s ? n : 0);
    if (j) return j;
    char *c = malloc(3 * n + 1);
    size_t k = 0;
    for (size_t i = 0; c && i < n;) {
        size_t ok = utf8_valid_prefix(s + i, n - i);
        memcpy(c + k, s + i, ok);
        k += ok, i += ok;
        if (i < n) memcpy(c + k, "\xEF\xBF\xBD", 3), k += 3, i++;
    }
    j = c ? json_stringn(c, k) : json_string("");
    free(c);
    return j;
}

void srv_reply_init(srv_reply *rp, int kind, const char *model) {
    static const char hex[] = "0123456789abcdef";
    unsigned char b[12] = {0};
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        memcpy(b, &ts, sizeof b < sizeof ts ? sizeof b : sizeof ts);
    }
    int k = snprintf(rp->id, sizeof rp->id, "%s", kind == SRV_CHAT ? "chatcmpl-" : "cmpl-");
    for (size_t i = 0; i < sizeof b; i++) rp->id[k++] = hex[b[i] >> 4], rp->id[k++] = hex[b[i] & 15];
    rp->id[k] = 0;
    rp->kind = kind;
    rp->created = (long long)time(NULL);
    rp->model = model;
    rp->tok = NULL;
    rp->logprobs = rp->ids_as_tokens = 0;
}

static json_t *reply_base(const srv_reply *rp, const char *object) {
    return json_pack("{s:s, s:s, s:I, s:s}", "id", rp->id, "object", object, "created", (json_int_t)rp->created,
                     "model", rp->model);
}

static json_t *calls_json(const srv_event *end, int with_index) {
    json_t *a = json_array();
    for (int i = 0; i < end->n_calls; i++) {
        const srv_call *c = &end->calls[i];
        json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", c->id, "type", "function", "function", "name",
                              c->name, "arguments", c->arguments);
        if (with_index) json_object_set_new(o, "index", json_integer(i));
        json_array_append_new(a, o);
    }
    return a;
}

json_t *srv_usage_json(const srv_usage *u) {
    return json_pack("{s:i, s:i, s:i, s:{s:i}}", "prompt_tokens", u->prompt_tokens, "completion_tokens",
                     u->completion_tokens, "total_tokens", u->prompt_tokens + u->completion_tokens,
                     "prompt_tokens_details", "cached_tokens", u->cached_tokens);
}

json_t *srv_response(const srv_reply *rp, const char *content, size_t content_len, const char *reasoning,
                     size_t reasoning_len, const srv_event *end, const srv_usage *u) {
    json_t *o = reply_base(rp, rp->kind == SRV_CHAT ? "chat.completion" : "text_completion");
    json_t *choice = json_pack("{s:i, s:n, s:s}", "index", 0, "logprobs", "finish_reason", end->finish);
    if (rp->kind == SRV_CHAT) {
        json_t *msg = json_pack("{s:s}", "role", "assistant");
        json_object_set_new(msg, "content", content_len || !end->n_calls ? jtext(content, content_len) : json_null());
        if (reasoning_len) json_object_set_new(msg, "reasoning_content", jtext(reasoning, reasoning_len));
        if (end->n_calls) json_object_set_new(msg, "tool_calls", calls_json(end, 0));
        json_object_set_new(choice, "message", msg);
    } else {
        json_object_set_new(choice, "text", jtext(content, content_len));
    }
    json_object_set_new(o, "choices", json_pack("[o]", choice));
    json_object_set_new(o, "usage", srv_usage_json(u));
    return o;
}

json_t *srv_chunk(const srv_reply *rp, const srv_event *ev, int first) {
    json_t *o = reply_base(rp, rp->kind == SRV_CHAT ? "chat.completion.chunk" : "text_completion");
    json_t *choice = json_pack("{s:i, s:n}", "index", 0, "logprobs");
    if (rp->logprobs && ev && (ev->n_lps || ev->content_len)) /* a text chunk: its tokens, maybe none yet */
        json_object_set_new(choice, "logprobs", srv_logprobs(rp, ev->lps, ev->n_lps, ev->lp_offset));
    json_object_set_new(choice, "finish_reason", ev && ev->done ? json_string(ev->finish) : json_null());
    if (rp->kind == SRV_CHAT) {
        json_t *d = json_object();
        if (first) {
            json_object_set_new(d, "role", json_string("assistant"));
            json_object_set_new(d, "content", json_string(""));
        }
        if (ev && ev->content_len) json_object_set_new(d, "content", jtext(ev->content, ev->content_len));
        if (ev && ev->reasoning_len) json_object_set_new(d, "reasoning_content", jtext(ev->reasoning, ev->reasoning_len));
        if (ev && ev->done && ev->n_calls) json_object_set_new(d, "tool_calls", calls_json(ev, 1));
        json_object_set_new(choice, "delta", d);
    } else {
        json_object_set_new(choice, "text", jtext(ev ? ev->content : "", ev ? ev->content_len : 0));
    }
    json_object_set_new(o, "choices", json_pack("[o]", choice));
    return o;
}

json_t *srv_usage_chunk(const srv_reply *rp, const srv_usage *u) {
    json_t *o = reply_base(rp, rp->kind == SRV_CHAT ? "chat.completion.chunk" : "text_completion");
    json_object_set_new(o, "choices", json_array());
    json_object_set_new(o, "usage", srv_usage_json(u));
    return o;
}

/* A log probability as JSON: null where it is not a number (a prompt's first token, -inf). */
static json_t *jlp(float x) { return isfinite(x) ? json_real(x) : json_null(); }

static json_t *jtoken(const srv_reply *rp, int32_t id) {
    if (rp->ids_as_tokens) {
        char b[32];
        snprintf(b, sizeof b, "token_id:%d", (int)id);
        return json_string(b);
    }
    size_t n = 0;
    const char *s = glim_token_bytes(rp->tok, id, &n);
    return jtext(s, n);
}

/* A completion's logprobs: parallel arrays, alternatives as an object keyed by their text. */
static json_t *completion_logprobs(const srv_reply *rp, const srv_logprob *lp, int n, size_t at) {
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    for (int i = 0; i < n; i++) {
        json_array_append_new(tokens, jtoken(rp, lp[i].id));
        json_array_append_new(lps, jlp(lp[i].lp));
        json_t *top = lp[i].n_top ? json_object() : json_null();
        for (int k = 0; k < lp[i].n_top; k++) {
            json_t *name = jtoken(rp, lp[i].top_id[k]);
            if (!json_object_get(top, json_string_value(name))) /* the likelier of two equal spellings */
                json_object_set_new(top, json_string_value(name), jlp(lp[i].top_lp[k]));
            json_decref(name);
        }
        json_array_append_new(tops, top);
        json_array_append_new(offs, json_integer((json_int_t)at));
        size_t len = 0;
        glim_token_bytes(rp->tok, lp[i].id, &len);
        at += len;
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs", tops,
                     "text_offset", offs);
}

/* One token of a chat's logprobs: its text (lossy where the token is not whole UTF-8 characters),
 * its log probability (OpenAI's -9999 for -inf: clients expect a number) and its exact bytes. */
static json_t *chat_token(const srv_reply *rp, int32_t id, float lp) {
    size_t n = 0;
    const unsigned char *b = (const unsigned char *)glim_token_bytes(rp->tok, id, &n);
    json_t *bytes = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(bytes, json_integer(b[i]));
    return json_pack("{s:o, s:f, s:o}", "token", jtoken(rp, id), "logprob", isfinite(lp) ? (double)lp : -9999.0,
                     "bytes", bytes);
}

static json_t *chat_logprobs(const srv_reply *rp, const srv_logprob *lp, int n) {
    json_t *content = json_array();
    for (int i = 0; i < n; i++) {
        json_t *t = chat_token(rp, lp[i].id, lp[i].lp), *top = json_array();
        for (int k = 0; k < lp[i].n_top; k++) json_array_append_new(top, chat_token(rp, lp[i].top_id[k], lp[i].top_lp[k]));
        json_object_set_new(t, "top_logprobs", top);
        json_array_append_new(content, t);
    }
    return json_pack("{s:o}", "content", content);
}

json_t *srv_logprobs(const srv_reply *rp, const srv_logprob *lp, int n, size_t offset) {
    return rp->kind == SRV_CHAT ? chat_logprobs(rp, lp, n) : completion_logprobs(rp, lp, n, offset);
}

json_t *srv_models(const srv_config *cfg) {
    return json_pack("{s:s, s:[{s:s, s:s, s:I, s:s}]}", "object", "list", "data", "id", cfg->model_name, "object",
                     "model", "created", (json_int_t)time(NULL), "owned_by", "glimmer");
}

json_t *srv_error(int status, const char *message) {
    const char *type = status == 401 ? "authentication_error"
                       : status == 404 ? "not_found_error"
                       : status == 413 ? "request_too_large"
                       : status == 503 ? "server_busy"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    return json_pack("{s:{s:o, s:s, s:n, s:n}}", "error", "message", jtext(message, strlen(message)), "type", type,
                     "param", "code");
}
