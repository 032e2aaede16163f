/* request_fuzz.c: `glimmer serve`'s request parser (srv_request_parse, openai.c) on bodies a
 * client may send by mistake or on purpose: valid requests of every shape it accepts, then the
 * same requests with values swapped for other types and sizes, keys dropped or added (on the
 * JSON tree), and with bytes flipped, inserted and cut (on the text). Every parse must answer 0
 * or 400; a 400 must say why and leave the request empty; an accepted request must hold only
 * what the parser promises the engine (roles, tool names in the functions namespace, a forced
 * tool among the tools, logprobs 0..20 or -1, at most 4 non-empty stop strings, sampling values
 * in range, a prompt as text or ids but not both); the same body must give the same answer
 * twice. No model is needed: it links openai.o and the library.
 *   request_fuzz     prints PASS / FAIL lines (names server_request_*); exit 1 on a failure
 * Built and run by tests/server.test.sh, and under ASan + UBSan by tests/sanitize.test.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

static int failed;
static void check(const char *name, int ok, const char *why) {
    if (ok) {
        printf("PASS server_request_%s\n", name);
    } else {
        printf("FAIL server_request_%s: %s\n", name, why);
        failed = 1;
    }
}

/* Requests of every shape the parser accepts (index < N_CHAT: chat, else completion). */
static const char *const seeds[] = {
    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8}",
    "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
    "\"text\":\"what is \"},{\"type\":\"text\",\"text\":\"2+2\"}]}],\"temperature\":0.7,\"top_p\":0.9,\"top_k\":40,"
    "\"min_p\":0.05,\"seed\":7,\"stop\":[\"\\n\\n\",\"END\"],\"stream\":true,\"stream_options\":{\"include_usage\":true},"
    "\"logprobs\":true,\"top_logprobs\":3,\"reasoning_effort\":\"low\",\"presence_penalty\":0.5}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"},{\"role\":\"assistant\",\"content\":null,"
    "\"reasoning_content\":\"I should call it\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":"
    "{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":"
    "\"c1\",\"content\":\"sunny\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
    "\"description\":\"the weather\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}],"
    "\"tool_choice\":\"auto\"}",
    "{\"messages\":[{\"role\":\"developer\",\"content\":\"tools only\"},{\"role\":\"user\",\"content\":\"go\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},{\"type\":\"function\",\"function\":{\"name\":\"b\","
    "\"parameters\":null}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"b\"}},\"max_completion_tokens\":3}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
    "\"tool_choice\":\"required\",\"response_format\":{\"type\":\"text\"},\"n\":1,\"stop\":\"STOP\"}",
    "{\"prompt\":\"Once upon a time\",\"max_tokens\":16,\"logprobs\":5,\"temperature\":0,\"stop\":[\".\"]}",
    "{\"prompt\":[1,2,3,200000],\"max_tokens\":0,\"echo\":true,\"logprobs\":0,\"return_tokens_as_token_ids\":true}",
    "{\"prompt\":[\"a single string in an array\"],\"best_of\":1,\"seed\":-5,\"repetition_penalty\":1.1}",
};
enum { N_SEEDS = sizeof seeds / sizeof seeds[0], N_CHAT = 5 };

/* What an accepted request must hold; NULL if it does, else what it breaks. */
static const char *accepted_ok(const srv_request *r, int kind) {
    if (!r->root) return "no parsed body";
    if (r->logprobs < -1 || r->logprobs > SRV_MAX_TOP) return "logprobs out of -1..20";
    if (r->n_stop < 0 || r->n_stop > SRV_MAX_STOP) return "too many stop strings";
    for (int i = 0; i < r->n_stop; i++)
        if (!r->stop[i] || !*r->stop[i]) return "an empty stop string";
    if (r->max_tokens < 0) return "negative max_tokens";
    const glim_sampler_params *p = &r->samp;
    if (!(p->temperature >= 0 && p->temperature <= 2) || !(p->top_p > 0 && p->top_p <= 1) ||
        !(p->min_p >= 0 && p->min_p <= 1) || p->top_k < 0 || !(p->repeat_penalty >= 0.01f && p->repeat_penalty <= 100))
        return "a sampling value out of range";
    if (kind == SRV_CHAT) {
        if (r->n_messages < 1 || !r->messages) return "no messages";
        for (int i = 0; i < r->n_messages; i++) {
            const glim_chat_message *m = &r->messages[i];
            if (m->role < GLIM_ROLE_SYSTEM || m->role > GLIM_ROLE_TOOL) return "a role out of the enum";
            if (m->role == GLIM_ROLE_SYSTEM && i) return "a system message after the first";
            if (m->role != GLIM_ROLE_ASSISTANT && !m->content) return "a message without content";
            if (m->role == GLIM_ROLE_TOOL && (!m->name || strncmp(m->name, "functions.", 10))) return "a tool message's name";
            for (int k = 0; k < m->n_tool_calls; k++)
                if (!m->tool_calls[k].name || strncmp(m->tool_calls[k].name, "functions.", 10) ||
                    !m->tool_calls[k].arguments)
                    return "a tool call's name or arguments";
        }
        int forced_found = r->force_tool == NULL;
        for (int i = 0; i < r->n_tools; i++) {
            if (!r->tools[i].name || strncmp(r->tools[i].name, "functions.", 10)) return "a tool's name";
            if (r->force_tool == r->tools[i].name) forced_found = 1;
        }
        if (!forced_found) return "the forced tool is not one of the tools";
        if (r->require_tool && r->n_tools < 1) return "a required tool without tools";
        if (r->prompt || r->prompt_ids) return "a chat request with a prompt";
    } else {
        if (!!r->prompt == !!r->prompt_ids) return "the prompt as both or neither text and ids";
        if (r->prompt_ids && r->n_prompt_ids < 1) return "an empty id prompt";
        for (int i = 0; i < r->n_prompt_ids; i++)
            if (r->prompt_ids[i] < 0) return "a negative token id";
        if (r->no_generation && !r->echo) return "max_tokens 0 without echo";
        if (r->stream && r->echo) return "echo with stream";
        if (r->messages || r->n_tools) return "a completion with messages or tools";
    }
    return NULL;
}

static int emptied(const srv_request *r) {
    return !r->root && !r->messages && !r->n_messages && !r->tools && !r->n_tools && !r->prompt_ids && !r->owned &&
           !r->n_owned;
}

typedef struct tally {
    int runs, accepted, rejected;
    char first_bad[1000];
} tally;

/* One body through the parser twice, with every promise checked; the first broken one is kept. */
static void one(tally *t, int kind, const char *body, size_t len) {
    srv_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.samp = glim_sampler_defaults();
    srv_request r, r2;
    glim_error e, e2;
    memset(&e, 0, sizeof e);
    memset(&e2, 0, sizeof e2);
    int st = srv_request_parse(&r, kind, body, len, &cfg, &e);
    const char *bad = NULL;
    if (st != 0 && st != 400) bad = "a status other than 0 or 400";
    else if (st == 400 && (!e.message[0] || !emptied(&r))) bad = "a 400 without a message, or with the request left full";
    else if (st == 0) bad = accepted_ok(&r, kind);
    srv_request_free(&r);
    if (!bad && !emptied(&r)) bad = "srv_request_free left fields set";
    int st2 = srv_request_parse(&r2, kind, body, len, &cfg, &e2);
    if (!bad && (st2 != st || (st && strcmp(e.message, e2.message)))) bad = "a different answer the second time";
    srv_request_free(&r2);
    t->runs++;
    if (st == 0) t->accepted++;
    else t->rejected++;
    if (bad && !t->first_bad[0])
        snprintf(t->first_bad, sizeof t->first_bad, "%s (status %d: %.300s) on %s body: %.300s", bad, st, e.message,
                 kind == SRV_CHAT ? "chat" : "completion", body);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (unsigned)(rng >> 33) % n;
}

/* A value of another type or size for a mutated node. */
static json_t *odd_value(void) {
    static char big[6001];
    if (!big[0]) memset(big, 'z', sizeof big - 1);
    switch (rnd(26)) {
    case 0: return json_null();
    case 1: return json_true();
    case 2: return json_false();
    case 3: return json_integer(0);
    case 4: return json_integer(-1);
    case 5: return json_integer(2147483648ll);
    case 6: return json_integer(INT64_MIN);
    case 7: return json_real(1e308);
    case 8: return json_real(0.5);
    case 9: return json_real(-0.0);
    case 10: return json_string("");
    case 11: return json_string("functions.");
    case 12: return json_string(big);
    case 13: return json_array();
    case 14: return json_pack("[i,s,n]", 1, "two");
    case 15: return json_object();
    case 16: return json_pack("{s:s,s:s}", "type", "text", "text", "part");
    case 17: return json_pack("{s:s,s:{s:s}}", "type", "function", "function", "name", "f");
    case 18: return json_pack("{s:s,s:s}", "role", "tool", "tool_call_id", "nope");
    case 19: return json_pack("{s:s,s:n,s:[{s:s,s:{s:s,s:s}}]}", "role", "assistant", "content", "tool_calls", "id",
                              "c9", "function", "name", "g", "arguments", "[1]");
    case 20: { /* deep nesting */
        json_t *v = json_integer(1);
        for (int i = 0; i < 64; i++) {
            json_t *a = json_array();
            json_array_append_new(a, v);
            v = a;
        }
        return v;
    }
    case 21: return json_integer(21);         /* one past logprobs' and top_logprobs' bound */
    case 22: return json_integer(1073741825); /* one past max_tokens' and top_k's */
    case 23: return json_real(3.0);           /* past temperature's and the penalties' */
    case 24: return json_real(-3.0);
    default: return json_string("\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80");
    }
}

/* Every node of the tree, parents first (arrays and objects as containers to mutate). */
static int collect(json_t *v, json_t **out, int n, int max) {
    if (n < max) out[n++] = v;
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c) n = collect(c, out, n, max);
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) n = collect(json_array_get(v, i), out, n, max);
    }
    return n;
}

static const char *const keys[] = {"messages", "role", "content", "tools", "tool_choice", "tool_calls", "function",
                                   "name", "arguments", "prompt", "max_tokens", "logprobs", "top_logprobs", "echo",
                                   "stream", "stop", "temperature", "top_p", "seed", "n", "tool_call_id", "type",
                                   "text", "parameters", "reasoning_effort", "response_format", "suffix", "best_of"};
enum { N_KEYS = sizeof keys / sizeof keys[0] };

/* One to three changes to the tree: a member or element replaced, dropped or added; half of them
 * at the top level, where most fields and their bounds are. */
static void mutate_tree(json_t *root) {
    for (int m = 1 + (int)rnd(3); m > 0; m--) {
        json_t *nodes[512];
        const int n = collect(root, nodes, 0, 512);
        json_t *c = rnd(2) ? root : nodes[rnd((unsigned)n)];
        if (json_is_object(c)) {
            const char *key = keys[rnd(N_KEYS)];
            if (rnd(4) == 0) json_object_del(c, key);
            else json_object_set_new(c, key, odd_value());
        } else if (json_is_array(c)) {
            const size_t sz = json_array_size(c);
            const unsigned op = rnd(3);
            if (op == 0 && sz) json_array_remove(c, rnd((unsigned)sz));
            else if (op == 1 && sz) json_array_set_new(c, rnd((unsigned)sz), odd_value());
            else json_array_append_new(c, odd_value());
        }
    }
}

/* One to four changes to the text: a byte flipped or set to an awkward value, bytes inserted,
 * a span doubled, or the tail cut. buf holds cap bytes; returns the new length. */
static size_t mutate_bytes(char *buf, size_t len, size_t cap) {
    static const unsigned char awkward[] = {0x00, 0xff, 0xc0, 0x80, 0xed, 0xf4, '"', '\\', '{', '}', '[', ']', ',', ':'};
    for (int m = 1 + (int)rnd(4); m > 0 && len > 0; m--) {
        const size_t at = rnd((unsigned)len);
        switch (rnd(5)) {
        case 0: buf[at] ^= (char)(1u << rnd(8)); break;
        case 1: buf[at] = (char)awkward[rnd(sizeof awkward)]; break;
        case 2:
            if (len + 1 < cap) {
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = (char)awkward[rnd(sizeof awkward)];
                len++;
            }
            break;
        case 3: {
            const size_t n = 1 + rnd(16);
            if (at + n <= len && len + n < cap) {
                memmove(buf + at + n, buf + at, len - at);
                len += n;
            }
            break;
        }
        default: len = at; break;
        }
    }
    return len;
}

int main(void) {
    /* every seed parses, as what it is */
    int seeds_ok = 1;
    char why[1100] = "";
    for (int i = 0; i < N_SEEDS; i++) {
        const int kind = i < N_CHAT ? SRV_CHAT : SRV_COMPLETION;
        tally t = {0};
        one(&t, kind, seeds[i], strlen(seeds[i]));
        if (t.accepted != 1 || t.first_bad[0]) {
            seeds_ok = 0;
            snprintf(why, sizeof why, "seed %d not accepted cleanly: %s", i, t.first_bad[0] ? t.first_bad : "rejected");
            break;
        }
    }
    check("seeds_parse", seeds_ok, why);
    /* a few answers the wire format fixes (the e2e test checks the HTTP side of others) */
    {
        srv_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.samp = glim_sampler_defaults();
        srv_request r;
        glim_error e;
        const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"tool\",\"tool_call_id\":\"c7\","
                           "\"content\":\"y\"}]}";
        int st = srv_request_parse(&r, SRV_CHAT, body, strlen(body), &cfg, &e);
        check("tool_without_call", st == 400 && strstr(e.message, "messages[1].tool_call_id"), e.message);
        body = "{\"prompt\":\"a\",\"max_tokens\":0}";
        st = srv_request_parse(&r, SRV_COMPLETION, body, strlen(body), &cfg, &e);
        check("zero_tokens_without_echo", st == 400 && strstr(e.message, "max_tokens"), e.message);
        body = "{\"prompt\":\"a\xff\"}";
        st = srv_request_parse(&r, SRV_COMPLETION, body, strlen(body), &cfg, &e);
        check("invalid_utf8", st == 400 && strstr(e.message, "UTF-8") && strstr(e.message, "offset 12"), e.message);
    }
    /* the tree mutations, both endpoints for each */
    tally tt = {0};
    for (int it = 0; it < 3000; it++) {
        const int s = (int)rnd(N_SEEDS);
        json_error_t je;
        json_t *root = json_loads(seeds[s], 0, &je);
        mutate_tree(root);
        char *text = json_dumps(root, JSON_COMPACT);
        json_decref(root);
        if (!text) continue;
        one(&tt, SRV_CHAT, text, strlen(text));
        one(&tt, SRV_COMPLETION, text, strlen(text));
        free(text);
    }
    snprintf(why, sizeof why, "%s", tt.first_bad[0] ? tt.first_bad : "the mutations were never both accepted and rejected");
    check("tree_mutations", !tt.first_bad[0] && tt.accepted > 0 && tt.rejected > 0, why);
    printf("  tree mutations: %d parses, %d accepted, %d rejected\n", tt.runs, tt.accepted, tt.rejected);
    /* the byte mutations */
    tally tb = {0};
    char buf[4096];
    for (int it = 0; it < 3000; it++) {
        const int s = (int)rnd(N_SEEDS);
        size_t len = strlen(seeds[s]);
        memcpy(buf, seeds[s], len);
        len = mutate_bytes(buf, len, sizeof buf);
        one(&tb, s < N_CHAT ? SRV_CHAT : SRV_COMPLETION, buf, len);
    }
    snprintf(why, sizeof why, "%s", tb.first_bad[0] ? tb.first_bad : "the mutations were never both accepted and rejected");
    check("byte_mutations", !tb.first_bad[0] && tb.accepted > 0 && tb.rejected > 0, why);
    printf("  byte mutations: %d parses, %d accepted, %d rejected\n", tb.runs, tb.accepted, tb.rejected);
    return failed;
}
