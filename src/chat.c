/* chat.c: renders a conversation in Muse Glimmer's chat format (MODEL.md section 4):
 *
 *   <|begin_of_text|><|start|>system<|message|>{S}\nReasoning strength: {R}.[\n\n{TOOLS}]
 *   \n\n# Valid recipients: "self"[, "<ns>.*"...], "user".<|eot|>
 *   <|start|>user<|message|>{text}<|eot|>
 *   <|start|>assistant to=self<|message|>{reasoning}<|eom|>
 *   <|start|>assistant to=user<|message|>{answer}<|eot|>
 *   <|start|>assistant to={tool}<|message|><atem:function_calls>...</atem:function_calls><|eom||eot|>
 *   <|start|>tool {name}<|message|><tool_output name="{name}">\n{result}\n</tool_output><|eot|>
 *   <|start|>assistant                                   (generation prompt)
 *
 * with no newline between messages. The renderer keeps track of which stretches are special
 * tokens, so tokenizing gives the template's tokens their ids while message text stays text
 * (a user who types "<|eot|>" does not end the turn). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat.h"
#include "error.h"
#include "glimmer_text.h"

typedef struct span {
    size_t off, len;
} span;

typedef struct render {
    textbuf text;
    span *specials;
    size_t n_specials, cap;
    glim_error *err;
    glim_status st;
} render;

static void tx(render *r, const char *s) { textbuf_str(&r->text, s ? s : ""); }

static void sp(render *r, const char *special) {
    if (r->n_specials == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 32;
        span *p = realloc(r->specials, cap * sizeof *p);
        if (!p) {
            r->text.oom = 1;
            return;
        }
        r->specials = p;
        r->cap = cap;
    }
    r->specials[r->n_specials++] = (span){r->text.n, strlen(special)};
    textbuf_str(&r->text, special);
}

static void fail(render *r, glim_status code, const char *msg, int index) {
    if (r->st) return;
    r->st = glim_fail(r->err, code, "chat: messages[%d]: %s", index, msg);
}

static const char TOOLS_INTRO[] =
    "In this environment you have access to a set of tools you can use to answer the user's question.\n"
    "\n"
    "You can invoke a function by writing a \"<atem:function_calls>\" block like the following:\n"
    "<atem:function_calls>\n"
    "<atem:invoke name=\"$FUNCTION_NAME\">\n"
    "<atem:parameter name=\"$PARAMETER_NAME\">$PARAMETER_VALUE</atem:parameter>\n"
    "...\n"
    "</atem:invoke>\n"
    "</atem:function_calls>\n"
    "\n"
    "String and scalar parameters should be specified as is, while lists and objects should use JSON "
    "format. Note that spaces for string values are not stripped. The output is not expected to be "
    "valid XML and is parsed with regular expressions.\n"
    "Here are the functions available in JSONSchema format:\n"
    "// Tool metadata\n";

static const char TOOLS_EXAMPLE[] =
    "Here's an example of how to call a function in the tool set:\n"
    "(If the tool namespace is not specified, invoke the function directly as `example_function_name` "
    "rather than `example_tool_name.example_function_name`)\n"
    "\n"
    "to=example_tool_name.example_function_name\n"
    "\n"
    "<atem:function_calls>\n"
    "<atem:invoke name=\"example_tool_name.example_function_name\">\n"
    "<atem:parameter name=\"example_parameter_1\">value_1</atem:parameter>\n"
    "<atem:parameter name=\"example_parameter_2\">This is the value for the second parameter\n"
    "that can span\n"
    "\"multiple\" lines\n"
    "</atem:parameter>\n"
    "</atem:invoke>\n"
    "</atem:function_calls>";

/* Length of the namespace part of a tool name ("functions" of "functions.get_weather"). */
static size_t namespace_len(const char *name) {
    const char *dot = strchr(name, '.');
    return dot ? (size_t)(dot - name) : strlen(name);
}

/* Index of the first tool with the same namespace as tools[i] (so namespaces list once). */
static int first_with_namespace(const glim_chat_tool *tools, int i) {
    size_t n = namespace_len(tools[i].name);
    for (int j = 0; j < i; j++)
        if (namespace_len(tools[j].name) == n && !strncmp(tools[j].name, tools[i].name, n)) return j;
    return i;
}

static void tools_section(render *r, const glim_chat_options *o) {
    tx(r, TOOLS_INTRO);
    for (int i = 0; i < o->n_tools; i++) {
        if (first_with_namespace(o->tools, i) != i) continue;
        json_t *meta = json_object();
        json_object_set_new(meta, "name", json_stringn(o->tools[i].name, namespace_len(o->tools[i].name)));
        json_object_set_new(meta, "description", json_string(""));
        chat_json_dump(meta, 0, &r->text);
        json_decref(meta);
        tx(r, "\n");
    }
    tx(r, "// Function schemas\n");
    for (int i = 0; i < o->n_tools && !r->st; i++) {
        const glim_chat_tool *t = &o->tools[i];
        json_t *params = NULL;
        if (t->parameters) {
            json_error_t jerr;
            params = json_loads(t->parameters, 0, &jerr);
            if (!json_is_object(params)) {
                json_decref(params);
                r->st = glim_fail(r->err, GLIM_E_ARG, "chat: tools[%d] (%s): parameters is not a JSON object: %s",
                                  i, t->name, params ? "another JSON value" : jerr.text);
                return;
            }
        }
        json_t *schema = json_object();
        json_object_set_new(schema, "name", json_string(t->name));
        json_object_set_new(schema, "description", json_string(t->description ? t->description : ""));
        json_object_set_new(schema, "parameters", params ? params : json_object());
        chat_json_dump(schema, 0, &r->text);
        json_decref(schema);
        tx(r, "\n");
    }
    tx(r, TOOLS_EXAMPLE);
}

static void system_block(render *r, const glim_chat_message *m, int n, const glim_chat_options *o) {
    sp(r, "<|begin_of_text|>");
    sp(r, "<|start|>");
    tx(r, "system");
    sp(r, "<|message|>");
    if (n > 0 && m[0].role == GLIM_ROLE_SYSTEM) {
        tx(r, m[0].content);
        tx(r, "\n");
    } else {
        char date[48];
        const char *today = o->current_date;
        if (!today) {
            time_t now = time(NULL);
            struct tm tm;
            localtime_r(&now, &tm);
            snprintf(date, sizeof date, "%02d-%02d-%04d", tm.tm_mday, tm.tm_mon + 1, tm.tm_year + 1900);
            today = date;
        }
        tx(r, "You are a helpful AI assistant.\nKnowledge cutoff: ");
        tx(r, o->knowledge_cutoff ? o->knowledge_cutoff : "04-01-2026");
        tx(r, ".\nCurrent date: ");
        tx(r, today);
        tx(r, ".");
    }
    tx(r, "\nReasoning strength: ");
    tx(r, o->reasoning_strength ? o->reasoning_strength : "high");
    tx(r, ".");
    if (o->n_tools > 0) {
        tx(r, "\n\n");
        tools_section(r, o);
    }
    tx(r, "\n\n# Valid recipients: \"self\"");
    for (int i = 0; i < o->n_tools; i++) {
        if (first_with_namespace(o->tools, i) != i) continue;
        tx(r, ", \"");
        textbuf_add(&r->text, o->tools[i].name, namespace_len(o->tools[i].name));
        tx(r, ".*\"");
    }
    tx(r, ", \"user\".");
    sp(r, "<|eot|>");
}

/* One assistant tool call: <|start|>assistant to=NAME<|message|><atem:function_calls>... */
static void tool_call(render *r, const glim_tool_call *c, int index) {
    json_error_t jerr;
    json_t *args = json_loads(c->arguments ? c->arguments : "{}", 0, &jerr);
    if (!c->name || !*c->name || !json_is_object(args)) {
        json_decref(args);
        fail(r, GLIM_E_ARG, !c->name || !*c->name ? "a tool call has no name"
                                                  : "tool call arguments are not a JSON object", index);
        return;
    }
    sp(r, "<|start|>");
    tx(r, "assistant to=");
    tx(r, c->name);
    sp(r, "<|message|>");
    tx(r, "<atem:function_calls>\n<atem:invoke name=\"");
    tx(r, c->name);
    tx(r, "\">\n");
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v) {
        tx(r, "<atem:parameter name=\"");
        tx(r, key);
        tx(r, "\">");
        if (json_is_string(v)) textbuf_add(&r->text, json_string_value(v), json_string_length(v)); /* raw */
        else chat_json_dump(v, 0, &r->text);
        tx(r, "</atem:parameter>\n");
    }
    tx(r, "</atem:invoke>\n</atem:function_calls>");
    json_decref(args);
}

static void assistant(render *r, const glim_chat_message *m, int index) {
    if (m->reasoning && *m->reasoning) {
        sp(r, "<|start|>");
        tx(r, "assistant to=self");
        sp(r, "<|message|>");
        tx(r, m->reasoning);
        sp(r, "<|eom|>");
    }
    int calls = m->tool_calls ? m->n_tool_calls : 0;
    if ((m->content && *m->content) || (!calls && !(m->reasoning && *m->reasoning))) {
        sp(r, "<|start|>");
        tx(r, "assistant to=user");
        sp(r, "<|message|>");
        tx(r, m->content);
        sp(r, calls ? "<|eom|>" : "<|eot|>");
    }
    for (int k = 0; k < calls; k++) {
        tool_call(r, &m->tool_calls[k], index);
        sp(r, k + 1 < calls ? "<|eom|>" : "<|eot|>");
    }
}

static int valid_strength(const char *s) {
    return !s || !strcmp(s, "low") || !strcmp(s, "medium") || !strcmp(s, "high") || !strcmp(s, "xhigh");
}

static glim_status do_render(render *r, const glim_chat_message *m, int n, const glim_chat_options *opt) {
    glim_chat_options none = {0};
    const glim_chat_options *o = opt ? opt : &none;
    if (n < 0 || (n > 0 && !m)) return glim_fail(r->err, GLIM_E_ARG, "chat: %d messages at %p", n, (const void *)m);
    if (!valid_strength(o->reasoning_strength))
        return glim_fail(r->err, GLIM_E_ARG, "chat: reasoning strength \"%s\": expected low, medium, high or xhigh",
                         o->reasoning_strength);
    if (o->n_tools < 0 || (o->n_tools && !o->tools))
        return glim_fail(r->err, GLIM_E_ARG, "chat: n_tools is %d but tools is NULL", o->n_tools);
    for (int i = 0; i < o->n_tools; i++)
        if (!o->tools[i].name || !*o->tools[i].name)
            return glim_fail(r->err, GLIM_E_ARG, "chat: tools[%d] has no name", i);
    if (o->first_message < 0 || o->first_message > n)
        return glim_fail(r->err, GLIM_E_ARG, "chat: first_message %d outside 0..%d", o->first_message, n);
    int i = o->first_message;
    if (i == 0) {
        system_block(r, m, n, o);
        if (n > 0 && m[0].role == GLIM_ROLE_SYSTEM) i = 1;
    }
    for (; i < n && !r->st; i++) {
        switch (m[i].role) {
        case GLIM_ROLE_SYSTEM:
        case GLIM_ROLE_USER:
            sp(r, "<|start|>");
            tx(r, m[i].role == GLIM_ROLE_USER ? "user" : "system");
            sp(r, "<|message|>");
            tx(r, m[i].content);
            sp(r, "<|eot|>");
            break;
        case GLIM_ROLE_ASSISTANT: assistant(r, &m[i], i); break;
        case GLIM_ROLE_TOOL:
            if (!m[i].name || !*m[i].name) {
                fail(r, GLIM_E_ARG, "a tool message needs the tool's name", i);
                break;
            }
            sp(r, "<|start|>");
            tx(r, "tool ");
            tx(r, m[i].name);
            sp(r, "<|message|>");
            tx(r, "<tool_output name=\"");
            tx(r, m[i].name);
            tx(r, "\">\n");
            tx(r, m[i].content);
            tx(r, "\n</tool_output>");
            sp(r, "<|eot|>");
            break;
        default: fail(r, GLIM_E_ARG, "unknown role", i);
        }
    }
    if (o->add_generation_prompt && !r->st) {
        sp(r, "<|start|>");
        tx(r, "assistant");
    }
    if (!r->st && r->text.oom) r->st = glim_fail(r->err, GLIM_E_NOMEM, "chat: out of memory rendering");
    if (!r->st && !r->text.p) textbuf_add(&r->text, "", 0);
    return r->st;
}

glim_status glim_chat_render(const glim_chat_message *messages, int n, const glim_chat_options *opt,
                             char **out, size_t *len, glim_error *err) {
    render r = {.err = err};
    *out = NULL;
    *len = 0;
    glim_status s = do_render(&r, messages, n, opt);
    free(r.specials);
    if (s) {
        textbuf_free(&r.text);
        return s;
    }
    *out = r.text.p;
    *len = r.text.n;
    return GLIM_OK;
}

glim_status glim_chat_tokenize(const glim_tokenizer *tok, const glim_chat_message *messages, int n,
                               const glim_chat_options *opt, glim_tokens *out, glim_error *err) {
    render r = {.err = err};
    glim_status s = do_render(&r, messages, n, opt);
    size_t pos = 0;
    for (size_t k = 0; !s && k <= r.n_specials; k++) {
        size_t end = k < r.n_specials ? r.specials[k].off : r.text.n;
        /* the text between two template tokens, as plain text (no special tokens parsed) */
        s = glim_tokenize(tok, r.text.p + pos, end - pos, 0, out, err);
        if (s || k == r.n_specials) break;
        char name[32];
        size_t l = r.specials[k].len < sizeof name ? r.specials[k].len : sizeof name - 1;
        memcpy(name, r.text.p + end, l);
        name[l] = 0;
        int32_t id = glim_tokenizer_find(tok, name);
        if (id < 0 || !glim_tokenizer_is_special(tok, id)) {
            s = glim_fail(err, GLIM_E_MODEL, "chat: the tokenizer has no special token %s (not a Muse tokenizer?)", name);
            break;
        }
        s = glim_tokens_push(out, id, err);
        pos = end + r.specials[k].len;
    }
    free(r.specials);
    textbuf_free(&r.text);
    return s;
}
