/* chat_parse.c: reads what Muse Glimmer generates after the "<|start|>assistant" prompt:
 *
 *    to=self<|message|>{reasoning}<|eom|>
 *   <|start|>assistant to=user<|message|>{answer}<|eot|>
 *   <|start|>assistant to={tool}<|message|><atem:function_calls>...</atem:function_calls><|eom|>
 *   ... (more messages after each <|eom|>) ... <|eot|> or <|end_of_text|>
 *
 * A state machine fed one id at a time (for streaming display) that also keeps every message, so
 * that at the end reasoning, answer and tool calls come out whole. Generation stops on
 * <|eot|> and <|end_of_text|> (200008, 200001), never on <|eom|> (200007): the model goes on
 * after it. Output that breaks the format is parsed as well as possible and flagged. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "error.h"
#include "glimmer_text.h"

#define MAX_HEADER 128 /* longer "headers" are text the model wrote without <|message|> */

typedef struct pmsg {
    glim_chat_channel channel;
    char recipient[MAX_HEADER + 1];
    textbuf text;
} pmsg;

typedef enum pstate { P_HEADER, P_CONTENT, P_BETWEEN, P_DONE } pstate;

struct glim_chat_parser {
    const glim_tokenizer *tok;
    const glim_chat_tool *tools;
    int n_tools;
    int32_t id_start, id_message, id_eom, id_eot, id_eos;
    pstate state;
    textbuf header;
    pmsg *msgs;
    int n_msgs, cap;
    glim_stream_decoder *dec;
    textbuf out; /* the text of the current delta */
    int stopped, malformed;
    char problem[256];
};

static void flag(int *malformed, char *problem, const char *fmt, ...) {
    if (!*malformed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(problem, 256, fmt, ap);
        va_end(ap);
    }
    *malformed = 1;
}

glim_chat_parser *glim_chat_parser_new(const glim_tokenizer *tok, const glim_chat_tool *tools, int n_tools) {
    glim_chat_parser *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->tok = tok;
    p->tools = tools;
    p->n_tools = tools ? n_tools : 0;
    p->id_start = glim_tokenizer_find(tok, "<|start|>");
    p->id_message = glim_tokenizer_find(tok, "<|message|>");
    p->id_eom = glim_tokenizer_find(tok, "<|eom|>");
    p->id_eot = glim_tokenizer_find(tok, "<|eot|>");
    p->id_eos = glim_tokenizer_find(tok, "<|end_of_text|>");
    p->dec = glim_stream_decoder_new(tok, 1);
    p->state = P_HEADER; /* the prompt ended with "<|start|>assistant" */
    if (!p->dec) {
        free(p);
        return NULL;
    }
    return p;
}

void glim_chat_parser_free(glim_chat_parser *p) {
    if (!p) return;
    for (int i = 0; i < p->n_msgs; i++) textbuf_free(&p->msgs[i].text);
    free(p->msgs);
    textbuf_free(&p->header);
    textbuf_free(&p->out);
    glim_stream_decoder_free(p->dec);
    free(p);
}

static pmsg *cur(glim_chat_parser *p) { return p->n_msgs ? &p->msgs[p->n_msgs - 1] : NULL; }

static pmsg *open_message(glim_chat_parser *p, glim_chat_channel ch, const char *recipient, size_t rlen) {
    if (p->n_msgs == p->cap) {
        int cap = p->cap ? p->cap * 2 : 8;
        pmsg *m = realloc(p->msgs, (size_t)cap * sizeof *m);
        if (!m) return NULL;
        p->msgs = m;
        p->cap = cap;
    }
    pmsg *m = &p->msgs[p->n_msgs++];
    memset(m, 0, sizeof *m);
    m->channel = ch;
    if (rlen > MAX_HEADER) rlen = MAX_HEADER;
    memcpy(m->recipient, recipient, rlen);
    m->recipient[rlen] = 0;
    p->state = P_CONTENT;
    return m;
}

/* Header text "assistant to=RECIPIENT" (or " to=RECIPIENT" for the first message). */
static pmsg *open_from_header(glim_chat_parser *p) {
    const char *h = p->header.p ? p->header.p : "";
    const char *to = strstr(h, "to=");
    size_t role_len = to ? (size_t)(to - h) : strlen(h);
    char role[MAX_HEADER + 1];
    size_t a = 0, b = role_len;
    while (a < b && isspace((unsigned char)h[a])) a++;
    while (b > a && isspace((unsigned char)h[b - 1])) b--;
    memcpy(role, h + a, b - a);
    role[b - a] = 0;
    if (role[0] && strcmp(role, "assistant")) {
        flag(&p->malformed, p->problem, "a message from \"%.60s\" instead of the assistant", role);
        return open_message(p, GLIM_CHANNEL_OTHER, role, strlen(role));
    }
    if (!to) {
        flag(&p->malformed, p->problem, "message header \"%.60s\" names no recipient (to=)", h);
        return open_message(p, GLIM_CHANNEL_ANSWER, "user", 4);
    }
    const char *r = to + 3;
    size_t rlen = 0;
    while (r[rlen] && !isspace((unsigned char)r[rlen])) rlen++;
    if (rlen == 4 && !strncmp(r, "self", 4)) return open_message(p, GLIM_CHANNEL_REASONING, r, rlen);
    if (rlen == 4 && !strncmp(r, "user", 4)) return open_message(p, GLIM_CHANNEL_ANSWER, r, rlen);
    if (rlen == 0) flag(&p->malformed, p->problem, "empty recipient in \"%.60s\"", h);
    return open_message(p, GLIM_CHANNEL_TOOL, r, rlen);
}

/* Ends the current message: what the decoder still holds goes into this delta. */
static void close_message(glim_chat_parser *p) {
    size_t n;
    const char *t = glim_stream_decoder_flush(p->dec, &n);
    textbuf_add(&p->out, t, n);
    if (p->state == P_CONTENT) p->state = P_BETWEEN;
}

static void fill_delta(glim_chat_parser *p, glim_chat_delta *d, int new_message) {
    pmsg *m = cur(p);
    d->channel = p->state == P_HEADER ? GLIM_CHANNEL_HEADER : m ? m->channel : GLIM_CHANNEL_HEADER;
    d->text = p->out.p ? p->out.p : "";
    d->len = p->out.n;
    d->new_message = new_message;
    d->recipient = m && p->state != P_HEADER ? m->recipient : "";
}

int glim_chat_parser_push(glim_chat_parser *p, int32_t id, glim_chat_delta *delta) {
    glim_chat_delta scratch;
    glim_chat_delta *d = delta ? delta : &scratch;
    int new_message = 0, stop = 0;
    p->out.n = 0;
    if (p->out.p) p->out.p[0] = 0;
    if (p->state == P_DONE) {
        flag(&p->malformed, p->problem, "tokens after the stop token");
        fill_delta(p, d, 0);
        return 1;
    }
    if (id == p->id_eot || id == p->id_eos) {
        if (p->state == P_HEADER && p->header.n)
            flag(&p->malformed, p->problem, "output ended inside a message header");
        close_message(p);
        p->state = P_DONE;
        p->stopped = 1;
        stop = 1;
    } else if (id == p->id_start) {
        if (p->state == P_CONTENT) {
            flag(&p->malformed, p->problem, "<|start|> inside a message (no <|eom|> before it)");
            close_message(p);
        }
        p->state = P_HEADER;
        p->header.n = 0;
        if (p->header.p) p->header.p[0] = 0;
    } else if (id == p->id_message) {
        if (p->state == P_HEADER) {
            if (!open_from_header(p)) {
                flag(&p->malformed, p->problem, "out of memory");
                return 1;
            }
            new_message = 1;
        } else {
            flag(&p->malformed, p->problem, "<|message|> outside a message header");
        }
    } else if (id == p->id_eom) {
        if (p->state != P_CONTENT) flag(&p->malformed, p->problem, "<|eom|> outside a message");
        close_message(p);
        p->state = P_BETWEEN;
    } else {
        size_t n;
        const char *bytes = glim_token_bytes(p->tok, id, &n);
        if (!bytes) {
            flag(&p->malformed, p->problem, "token id %d is not in the vocabulary", id);
        } else if (p->state == P_HEADER) {
            textbuf_add(&p->header, bytes, n);
            if (p->header.n > MAX_HEADER) { /* no <|message|> coming: take it as the answer */
                flag(&p->malformed, p->problem, "no <|message|> after a message header");
                pmsg *m = open_message(p, GLIM_CHANNEL_ANSWER, "user", 4);
                if (m) textbuf_add(&m->text, p->header.p, p->header.n);
                textbuf_add(&p->out, p->header.p, p->header.n);
                new_message = 1;
            }
        } else {
            if (p->state == P_BETWEEN) {
                flag(&p->malformed, p->problem, "text after <|eom|> without <|start|>");
                pmsg *prev = cur(p);
                glim_chat_channel ch = prev ? prev->channel : GLIM_CHANNEL_ANSWER;
                char r[MAX_HEADER + 1];
                snprintf(r, sizeof r, "%s", prev ? prev->recipient : "user");
                if (!open_message(p, ch, r, strlen(r))) return 1;
                new_message = 1;
            }
            size_t tn;
            const char *t = glim_stream_decoder_push(p->dec, id, &tn);
            textbuf_add(&cur(p)->text, bytes, n);
            textbuf_add(&p->out, t, tn);
        }
    }
    fill_delta(p, d, new_message);
    return stop;
}

/* ---------------------------------------------------------------------------------------------
 * <atem:function_calls> */

static const char *find_in(const char *s, const char *end, const char *needle) {
    size_t n = strlen(needle);
    if (!s || s >= end) return NULL;
    for (const char *q = s; q + n <= end; q++) {
        q = memchr(q, needle[0], (size_t)(end - q));
        if (!q || q + n > end) return NULL;
        if (!memcmp(q, needle, n)) return q;
    }
    return NULL;
}

/* The JSON-schema type of parameter `key` of tool `name`, or NULL. Caller frees *holder. */
static const char *param_type(const glim_chat_tool *tools, int n_tools, const char *name, const char *key,
                              json_t **holder) {
    *holder = NULL;
    for (int i = 0; i < n_tools; i++) {
        if (!tools[i].name || strcmp(tools[i].name, name) || !tools[i].parameters) continue;
        json_t *schema = json_loads(tools[i].parameters, 0, NULL);
        json_t *type = json_object_get(json_object_get(json_object_get(schema, "properties"), key), "type");
        if (json_is_array(type)) { /* ["string", "null"]: the first that is not null */
            size_t k;
            json_t *t;
            json_t *pick = NULL;
            json_array_foreach(type, k, t) if (!pick && json_is_string(t) && strcmp(json_string_value(t), "null")) pick = t;
            type = pick;
        }
        *holder = schema;
        return json_is_string(type) ? json_string_value(type) : NULL;
    }
    return NULL;
}

static json_t *text_value(const char *v, size_t n) {
    textbuf b = {0};
    cb_add_lossy(&b, v, n);
    json_t *s = json_stringn(b.p ? b.p : "", b.n);
    textbuf_free(&b);
    return s;
}

/* A parameter's text as a JSON value: strings as they are; numbers, booleans and null, objects
 * and arrays when the text is exactly that JSON (and the schema, if known, allows it). */
static json_t *param_value(const char *v, size_t n, const char *type, int *malformed, char *problem,
                           const char *key) {
    if (type && !strcmp(type, "string")) return text_value(v, n);
    if (n && !isspace((unsigned char)v[0]) && !isspace((unsigned char)v[n - 1])) {
        json_t *j = json_loadb(v, n, JSON_DECODE_ANY, NULL);
        if (j && !json_is_string(j)) {
            int ok = !type || (!strcmp(type, "object") && json_is_object(j)) ||
                     (!strcmp(type, "array") && json_is_array(j)) ||
                     (!strcmp(type, "integer") && json_is_integer(j)) ||
                     (!strcmp(type, "number") && json_is_number(j)) ||
                     (!strcmp(type, "boolean") && json_is_boolean(j)) || (!strcmp(type, "null") && json_is_null(j));
            if (ok) return j;
        }
        json_decref(j);
    }
    if (type && (!strcmp(type, "object") || !strcmp(type, "array") || !strcmp(type, "integer") ||
                 !strcmp(type, "number") || !strcmp(type, "boolean")))
        flag(malformed, problem, "parameter \"%.40s\" should be %s JSON; kept as a string", key, type);
    return text_value(v, n);
}

static void add_call(glim_chat_result *r, const char *name, size_t nlen, json_t *args) {
    glim_parsed_call *c = realloc(r->calls, (size_t)(r->n_calls + 1) * sizeof *c);
    if (!c) return;
    r->calls = c;
    textbuf a = {0}, nm = {0};
    chat_json_dump(args, 1, &a);
    cb_add_lossy(&nm, name, nlen);
    c[r->n_calls].name = nm.p ? nm.p : strdup("");
    c[r->n_calls].arguments = a.p ? a.p : strdup("{}");
    r->n_calls++;
}

/* Parses the parameters in body[0..end) into args. */
static void parse_params(const char *s, const char *end, const char *name, const glim_chat_tool *tools,
                         int n_tools, json_t *args, glim_chat_result *r) {
    while ((s = find_in(s, end, "<atem:parameter")) != NULL) {
        const char *k = s + strlen("<atem:parameter"), *kend, *v;
        if (k < end && *k == '=') { /* <atem:parameter=key> (a known slip) */
            flag(&r->malformed, r->problem, "parameter written as <atem:parameter=...>");
            k++;
            if (k < end && *k == '"') k++;
            kend = find_in(k, end, ">");
            v = kend ? kend + 1 : NULL;
            if (kend && kend > k && kend[-1] == '"') kend--;
        } else if ((size_t)(end - k) >= 7 && !memcmp(k, " name=\"", 7)) {
            k += 7;
            kend = find_in(k, end, "\"");
            v = kend ? find_in(kend, end, ">") : NULL;
            if (v) v++;
        } else {
            s = k;
            continue;
        }
        if (!kend || !v) {
            flag(&r->malformed, r->problem, "unterminated <atem:parameter> tag");
            return;
        }
        /* the close tag must come before the next parameter (searching only that far keeps
         * the scan linear on long, broken output) */
        const char *next = find_in(v, end, "<atem:parameter");
        const char *vend = find_in(v, next ? next : end, "</atem:parameter>");
        if (!vend) {
            flag(&r->malformed, r->problem, "parameter \"%.*s\" is not closed", (int)(kend - k > 40 ? 40 : kend - k), k);
            vend = next ? next : end;
            while (vend > v && vend[-1] == '\n') vend--;
        }
        char key[256];
        size_t kl = (size_t)(kend - k) < sizeof key ? (size_t)(kend - k) : sizeof key - 1;
        memcpy(key, k, kl);
        key[kl] = 0;
        json_t *holder;
        const char *type = param_type(tools, n_tools, name, key, &holder);
        json_object_set_new(args, key, param_value(v, (size_t)(vend - v), type, &r->malformed, r->problem, key));
        json_decref(holder);
        s = vend;
    }
}

void glim_chat_parse_function_calls(const char *text, size_t len, const char *recipient,
                                    const glim_chat_tool *tools, int n_tools, glim_chat_result *r) {
    const char *s = text, *end = text + len;
    const char *block = find_in(s, end, "<atem:function_calls>");
    if (!block) flag(&r->malformed, r->problem, "a message to %.60s without <atem:function_calls>", recipient);
    else if (!find_in(block, end, "</atem:function_calls>"))
        flag(&r->malformed, r->problem, "<atem:function_calls> is not closed");
    int found = 0;
    while ((s = find_in(s, end, "<atem:invoke name=\"")) != NULL) {
        const char *name = s + strlen("<atem:invoke name=\"");
        const char *nend = find_in(name, end, "\"");
        const char *body = nend ? find_in(nend, end, ">") : NULL;
        if (!body) {
            flag(&r->malformed, r->problem, "unterminated <atem:invoke> tag");
            break;
        }
        body++;
        const char *next = find_in(body, end, "<atem:invoke ");
        const char *close = find_in(body, next ? next : end, "</atem:invoke>");
        const char *bend = close;
        if (!close) {
            flag(&r->malformed, r->problem, "<atem:invoke name=\"%.*s\"> is not closed", (int)(nend - name > 40 ? 40 : nend - name), name);
            bend = next ? next : end;
        }
        char nm[256];
        size_t nl = (size_t)(nend - name) < sizeof nm ? (size_t)(nend - name) : sizeof nm - 1;
        memcpy(nm, name, nl);
        nm[nl] = 0;
        json_t *args = json_object();
        parse_params(body, bend, nm, tools, n_tools, args, r);
        add_call(r, nm, nl, args);
        json_decref(args);
        found = 1;
        s = bend == close ? close + strlen("</atem:invoke>") : bend;
    }
    if (!found) {
        flag(&r->malformed, r->problem, "a message to %.60s without <atem:invoke>", recipient);
        json_t *args = json_object();
        add_call(r, recipient, strlen(recipient), args);
        json_decref(args);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Results */

glim_status glim_chat_parser_finish(glim_chat_parser *p, glim_chat_result *out, glim_error *err) {
    memset(out, 0, sizeof *out);
    textbuf reasoning = {0}, answer = {0};
    out->malformed = p->malformed;
    memcpy(out->problem, p->problem, sizeof out->problem);
    int n_reasoning = 0;
    for (int i = 0; i < p->n_msgs; i++) {
        pmsg *m = &p->msgs[i];
        const char *t = m->text.p ? m->text.p : "";
        if (m->channel == GLIM_CHANNEL_REASONING) {
            if (n_reasoning++) textbuf_add(&reasoning, "\n", 1);
            cb_add_lossy(&reasoning, t, m->text.n);
        } else if (m->channel == GLIM_CHANNEL_ANSWER) {
            cb_add_lossy(&answer, t, m->text.n);
        } else if (m->channel == GLIM_CHANNEL_TOOL) {
            glim_chat_parse_function_calls(t, m->text.n, m->recipient, p->tools, p->n_tools, out);
        }
    }
    textbuf_add(&reasoning, "", 0);
    textbuf_add(&answer, "", 0);
    out->reasoning = reasoning.p;
    out->answer = answer.p;
    out->stopped = p->stopped;
    if (reasoning.oom || answer.oom || !out->reasoning || !out->answer) {
        glim_chat_result_free(out);
        return glim_fail(err, GLIM_E_NOMEM, "chat: out of memory parsing the output");
    }
    return GLIM_OK;
}

void glim_chat_result_free(glim_chat_result *r) {
    if (!r) return;
    free(r->reasoning);
    free(r->answer);
    for (int i = 0; i < r->n_calls; i++) {
        free(r->calls[i].name);
        free(r->calls[i].arguments);
    }
    free(r->calls);
    memset(r, 0, sizeof *r);
}

glim_status glim_chat_parse(const glim_tokenizer *tok, const glim_chat_tool *tools, int n_tools,
                            const int32_t *ids, size_t n, glim_chat_result *out, glim_error *err) {
    memset(out, 0, sizeof *out);
    glim_chat_parser *p = glim_chat_parser_new(tok, tools, n_tools);
    if (!p) return glim_fail(err, GLIM_E_NOMEM, "chat: out of memory");
    for (size_t i = 0; i < n; i++)
        if (glim_chat_parser_push(p, ids[i], NULL)) {
            if (i + 1 < n) flag(&p->malformed, p->problem, "%zu tokens after the stop token", n - i - 1);
            break;
        }
    glim_status s = glim_chat_parser_finish(p, out, err);
    glim_chat_parser_free(p);
    return s;
}
