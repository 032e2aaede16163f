/* test_chat.c: golden tests of the Muse chat renderer and output parser (MODEL.md section 4).
 * The expected renders (tests/tokenizer/golden/chat_*.txt) and the expected parses below were
 * written by hand from the format in MODEL.md, not produced by the code. Token-level checks use
 * a tokenizer built here with one token per byte (id = byte value) and Muse's special tokens at
 * 200000 + i, so the expected ids can be spelled out directly. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "glimmer_text.h"

#define BOS 200000
#define EOS 200001
#define EOM 200007
#define EOT 200008
#define START 200022
#define MESSAGE 200023

static glim_tokenizer *byte_tok;

/* GPT-2's byte -> character map, written out for the test. */
static void byte_char(int b, char out[3]) {
    int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    int cp = b;
    if (!printable) {
        int k = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) k++;
        cp = 256 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp, out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6)), out[1] = (char)(0x80 | (cp & 0x3F)), out[2] = 0;
    }
}

static glim_tokenizer *make_byte_tokenizer(void) {
    static const struct { int i; const char *name; } named[] = {
        {0, "<|begin_of_text|>"}, {1, "<|end_of_text|>"}, {7, "<|eom|>"}, {8, "<|eot|>"},
        {18, "<|finetune_right_pad|>"}, {22, "<|start|>"}, {23, "<|message|>"}, {90, "<|image|>"},
    };
    json_t *vocab = json_object();
    for (int b = 0; b < 256; b++) {
        char c[3];
        byte_char(b, c);
        json_object_set_new(vocab, c, json_integer(b));
    }
    json_t *added = json_array();
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        json_t *a = json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", 200000 + named[k].i, "content",
                              named[k].name, "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized", 0, "special", 1);
        json_array_append_new(added, a);
    }
    json_t *root = json_pack(
        "{s:o, s:n, s:{s:s, s:b, s:b}, s:{s:s, s:[{s:{s:s}}, {s:{s:s}}], s:{s:{s:s, s:[i], s:[s]}}},"
        " s:{s:s}, s:{s:s, s:o, s:[], s:b}}",
        "added_tokens", added, "normalizer", "pre_tokenizer", "type", "ByteLevel", "add_prefix_space", 0,
        "use_regex", 1, "post_processor", "type", "TemplateProcessing", "single", "SpecialToken", "id",
        "<|begin_of_text|>", "Sequence", "id", "A", "special_tokens", "<|begin_of_text|>", "id",
        "<|begin_of_text|>", "ids", BOS, "tokens", "<|begin_of_text|>", "decoder", "type", "ByteLevel",
        "model", "type", "BPE", "vocab", vocab, "merges", "ignore_merges", 0);
    char *text = json_dumps(root, 0);
    json_decref(root);
    glim_tokenizer *tok = NULL;
    glim_error err;
    if (!text || glim_tokenizer_load_json(text, strlen(text), &tok, &err) != GLIM_OK)
        fprintf(stderr, "byte tokenizer: %s\n", text ? err.message : "json_pack failed");
    free(text);
    return tok;
}

static char *read_golden(const char *name) {
    char path[256];
    const char *dirs[] = {"tests/tokenizer/golden/", "../tests/tokenizer/golden/"};
    for (int d = 0; d < 2; d++) {
        snprintf(path, sizeof path, "%s%s", dirs[d], name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *buf = malloc((size_t)n + 1);
        size_t got = fread(buf, 1, (size_t)n, f);
        fclose(f);
        if (got && buf[got - 1] == '\n') got--; /* the file's own final newline */
        buf[got] = 0;
        return buf;
    }
    return NULL;
}

static void check_golden(const char *name, const char *got) {
    char *want = read_golden(name);
    if (!want) {
        CHECK(0, "golden file %s is missing", name);
        return;
    }
    if (strcmp(got, want)) {
        size_t k = 0;
        while (got[k] && got[k] == want[k]) k++;
        CHECK(0, "%s differs at byte %zu:\n   got  ...%.60s\n   want ...%.60s", name, k, got + (k > 20 ? k - 20 : 0),
              want + (k > 20 ? k - 20 : 0));
    }
    free(want);
}

/* ---------------------------------------------------------------------------------------------
 * Rendering */

static void test_render_default_system(void) {
    glim_chat_message m[] = {{.role = GLIM_ROLE_USER, .content = "What is 2+2?"}};
    glim_chat_options o = {.current_date = "11-08-2026", .add_generation_prompt = 1};
    char *out;
    size_t len;
    glim_error err;
    REQUIRE(glim_chat_render(m, 1, &o, &out, &len, &err) == GLIM_OK, "%s", err.message);
    CHECK(len == strlen(out), "length");
    check_golden("chat_default.txt", out);
    free(out);
    /* today's date when none is given: DD-MM-YYYY in the same place */
    o.current_date = NULL;
    REQUIRE(glim_chat_render(m, 1, &o, &out, &len, &err) == GLIM_OK, "%s", err.message);
    const char *d = strstr(out, "Current date: ");
    CHECK(d && d[16] == '-' && d[19] == '-' && d[24] == '.', "date format: %.30s", d ? d : "(none)");
    free(out);
}

static const glim_chat_message history[] = {
    {.role = GLIM_ROLE_SYSTEM, .content = "You are terse."},
    {.role = GLIM_ROLE_USER, .content = "Hi"},
    {.role = GLIM_ROLE_ASSISTANT, .reasoning = "Greet back.", .content = "Hello!"},
    {.role = GLIM_ROLE_USER, .content = "Bye"},
};

static void test_render_system_and_history(void) {
    glim_chat_options o = {.reasoning_strength = "low", .add_generation_prompt = 1};
    char *out;
    size_t len;
    glim_error err;
    REQUIRE(glim_chat_render(history, 4, &o, &out, &len, &err) == GLIM_OK, "%s", err.message);
    check_golden("chat_system_history.txt", out);
    free(out);
    /* continuing: only the last user turn and the prompt */
    o.first_message = 3;
    REQUIRE(glim_chat_render(history, 4, &o, &out, &len, &err) == GLIM_OK, "%s", err.message);
    CHECK(!strcmp(out, "<|start|>user<|message|>Bye<|eot|><|start|>assistant"), "continuation: %s", out);
    free(out);
}

static const glim_chat_tool tools[] = {
    {"functions.get_weather", "Current weather for a city",
     "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}},"
     " \"required\": [\"city\"]}"},
    {"web.search", NULL, NULL},
    {"functions.get_time", "Local time",
     "{\"type\":\"object\",\"properties\":{\"tz\":{\"type\":\"string\"},\"opts\":{\"type\":\"object\"}}}"},
};

static const glim_tool_call calls[] = {
    {"functions.get_weather", "{\"city\": \"Paris\", \"days\": 2}"},
    {"functions.get_time", "{\"tz\":\"Europe/Paris\",\"opts\":{\"h24\":true,\"fmt\":[1,2.5,0.1]}}"},
};

static const glim_chat_message tool_conv[] = {
    {.role = GLIM_ROLE_USER, .content = "Weather and time in Paris?"},
    {.role = GLIM_ROLE_ASSISTANT, .reasoning = "Call both tools.", .tool_calls = calls, .n_tool_calls = 2},
    {.role = GLIM_ROLE_TOOL, .name = "functions.get_weather", .content = "{\"temp\": 21}"},
    {.role = GLIM_ROLE_TOOL, .name = "functions.get_time", .content = "\"14:05\""},
    {.role = GLIM_ROLE_ASSISTANT, .reasoning = "Both arrived.", .content = "21 \xc2\xb0" "C, 14:05."},
};

static void test_render_tools_parallel_calls(void) {
    glim_chat_options o = {.reasoning_strength = "xhigh", .current_date = "01-02-2027", .tools = tools,
                           .n_tools = 3, .add_generation_prompt = 1};
    char *out;
    size_t len;
    glim_error err;
    REQUIRE(glim_chat_render(tool_conv, 5, &o, &out, &len, &err) == GLIM_OK, "%s", err.message);
    check_golden("chat_tools.txt", out);
    free(out);
}

static void test_render_errors(void) {
    char *out;
    size_t len;
    glim_error err;
    glim_chat_options o = {.reasoning_strength = "max"};
    glim_chat_message u[] = {{.role = GLIM_ROLE_USER, .content = "x"}};
    CHECK(glim_chat_render(u, 1, &o, &out, &len, &err) == GLIM_E_ARG && strstr(err.message, "\"max\""),
          "bad strength: %s", err.message);
    glim_chat_message t[] = {{.role = GLIM_ROLE_TOOL, .content = "{}"}};
    CHECK(glim_chat_render(t, 1, NULL, &out, &len, &err) == GLIM_E_ARG && strstr(err.message, "messages[0]"),
          "tool without name: %s", err.message);
    glim_tool_call bad = {"f", "[1, 2]"};
    glim_chat_message a[] = {{.role = GLIM_ROLE_USER, .content = "x"},
                             {.role = GLIM_ROLE_ASSISTANT, .tool_calls = &bad, .n_tool_calls = 1}};
    CHECK(glim_chat_render(a, 2, NULL, &out, &len, &err) == GLIM_E_ARG && strstr(err.message, "messages[1]"),
          "non-object arguments: %s", err.message);
    glim_chat_tool bt = {"f", NULL, "not json"};
    glim_chat_options ot = {.tools = &bt, .n_tools = 1};
    CHECK(glim_chat_render(u, 1, &ot, &out, &len, &err) == GLIM_E_ARG && strstr(err.message, "tools[0]"),
          "bad schema: %s", err.message);
}

/* ---------------------------------------------------------------------------------------------
 * Tokenizing the rendered chat */

static void test_chat_tokens(void) {
    REQUIRE(byte_tok, "byte tokenizer");
    glim_chat_message m[] = {{.role = GLIM_ROLE_USER, .content = "Hi <|eot|>"}};
    glim_chat_options o = {.current_date = "11-08-2026", .add_generation_prompt = 1};
    glim_tokens t = {0};
    glim_error err;
    REQUIRE(glim_chat_tokenize(byte_tok, m, 1, &o, &t, &err) == GLIM_OK, "%s", err.message);
    /* starts <|begin_of_text|><|start|>s y s t e m<|message|> */
    const int32_t head[] = {BOS, START, 's', 'y', 's', 't', 'e', 'm', MESSAGE, 'Y', 'o', 'u'};
    REQUIRE(t.n > 20, "%zu tokens", t.n);
    CHECK(!memcmp(t.ids, head, sizeof head), "head of the chat tokens");
    /* ends ...<|start|>user<|message|>Hi <|eot|>(as text)<|eot|><|start|>assistant */
    const int32_t tail[] = {START, 'u', 's', 'e', 'r', MESSAGE, 'H', 'i', ' ', '<', '|', 'e', 'o', 't', '|', '>',
                            EOT, START, 'a', 's', 's', 'i', 's', 't', 'a', 'n', 't'};
    size_t nt = sizeof tail / sizeof tail[0];
    CHECK(!memcmp(t.ids + t.n - nt, tail, sizeof tail), "tail: the user's \"<|eot|>\" stays text");
    int bos = 0, eot = 0;
    for (size_t i = 0; i < t.n; i++) bos += t.ids[i] == BOS, eot += t.ids[i] == EOT;
    CHECK(bos == 1, "exactly one BOS, got %d", bos);
    CHECK(eot == 2, "two <|eot|> (system, user), got %d", eot);
    glim_tokens_free(&t);
    /* without special strings in the messages, the ids equal tokenizing the rendered text with
     * special tokens parsed and no post-processor */
    REQUIRE(glim_chat_tokenize(byte_tok, tool_conv, 5, &(glim_chat_options){.current_date = "01-02-2027",
                               .tools = tools, .n_tools = 3, .add_generation_prompt = 1}, &t, &err) == GLIM_OK,
            "%s", err.message);
    char *text = read_golden("chat_tools.txt");
    glim_tokens t2 = {0};
    REQUIRE(text && glim_tokenize(byte_tok, text, strlen(text), GLIM_TOK_PARSE_SPECIAL, &t2, &err) == GLIM_OK, "tokenize golden");
    /* the golden has reasoning strength xhigh; this render has the default (high) */
    char *out;
    size_t len;
    REQUIRE(glim_chat_render(tool_conv, 5, &(glim_chat_options){.current_date = "01-02-2027", .tools = tools,
                             .n_tools = 3, .add_generation_prompt = 1}, &out, &len, &err) == GLIM_OK, "%s", err.message);
    glim_tokens t3 = {0};
    REQUIRE(glim_tokenize(byte_tok, out, len, GLIM_TOK_PARSE_SPECIAL, &t3, &err) == GLIM_OK, "%s", err.message);
    CHECK(t.n == t3.n && !memcmp(t.ids, t3.ids, t.n * sizeof *t.ids), "chat tokens == tokenize(render, special)");
    CHECK(t2.n == t3.n + 1, "xhigh is one byte longer than high (%zu vs %zu)", t2.n, t3.n);
    free(out);
    free(text);
    glim_tokens_free(&t);
    glim_tokens_free(&t2);
    glim_tokens_free(&t3);
}

/* ---------------------------------------------------------------------------------------------
 * Parsing */

static void ids_of(const char *text, glim_tokens *t) {
    glim_error err;
    t->n = 0;
    if (glim_tokenize(byte_tok, text, strlen(text), GLIM_TOK_PARSE_SPECIAL, t, &err) != GLIM_OK)
        fprintf(stderr, "tokenize: %s\n", err.message);
}

static void test_parse_reasoning_and_answer(void) {
    REQUIRE(byte_tok, "byte tokenizer");
    glim_tokens t = {0};
    ids_of(" to=self<|message|>Let me think.<|eom|><|start|>assistant to=user<|message|>Hello!<|eot|>", &t);
    glim_chat_parser *p = glim_chat_parser_new(byte_tok, NULL, 0);
    REQUIRE(p, "parser");
    char reasoning[64] = "", answer[64] = "";
    int stops = 0, eom_stopped = 0, new_messages = 0;
    for (size_t i = 0; i < t.n; i++) {
        glim_chat_delta d;
        int stop = glim_chat_parser_push(p, t.ids[i], &d);
        stops += stop;
        if (t.ids[i] == EOM && stop) eom_stopped = 1;
        new_messages += d.new_message;
        if (d.channel == GLIM_CHANNEL_REASONING) strncat(reasoning, d.text, d.len);
        if (d.channel == GLIM_CHANNEL_ANSWER) strncat(answer, d.text, d.len);
        if (d.new_message && d.channel == GLIM_CHANNEL_ANSWER) CHECK(!strcmp(d.recipient, "user"), "recipient");
    }
    CHECK(stops == 1 && !eom_stopped, "stops once, on <|eot|>, never on <|eom|>");
    CHECK(new_messages == 2, "two messages, got %d", new_messages);
    CHECK(!strcmp(reasoning, "Let me think."), "streamed reasoning '%s'", reasoning);
    CHECK(!strcmp(answer, "Hello!"), "streamed answer '%s'", answer);
    glim_chat_result r;
    glim_error err;
    REQUIRE(glim_chat_parser_finish(p, &r, &err) == GLIM_OK, "%s", err.message);
    CHECK(!strcmp(r.reasoning, "Let me think.") && !strcmp(r.answer, "Hello!"), "result '%s' / '%s'", r.reasoning, r.answer);
    CHECK(r.stopped && !r.malformed && r.n_calls == 0, "stopped %d malformed %d (%s) calls %d", r.stopped, r.malformed,
          r.problem, r.n_calls);
    glim_chat_result_free(&r);
    glim_chat_parser_free(p);
    /* <|end_of_text|> stops too; a generation cut short is not malformed, just not stopped */
    ids_of(" to=user<|message|>Short.<|end_of_text|>", &t);
    REQUIRE(glim_chat_parse(byte_tok, NULL, 0, t.ids, t.n, &r, &err) == GLIM_OK, "%s", err.message);
    CHECK(r.stopped && !strcmp(r.answer, "Short.") && !r.malformed, "end_of_text");
    glim_chat_result_free(&r);
    ids_of(" to=user<|message|>Cut sh", &t);
    REQUIRE(glim_chat_parse(byte_tok, NULL, 0, t.ids, t.n, &r, &err) == GLIM_OK, "%s", err.message);
    CHECK(!r.stopped && !strcmp(r.answer, "Cut sh") && !r.malformed, "truncated");
    glim_chat_result_free(&r);
    glim_tokens_free(&t);
}

static void test_parse_parallel_tool_calls(void) {
    REQUIRE(byte_tok, "byte tokenizer");
    glim_tokens t = {0};
    ids_of(" to=self<|message|>Need both.<|eom|>"
           "<|start|>assistant to=functions.get_weather<|message|><atem:function_calls>\n"
           "<atem:invoke name=\"functions.get_weather\">\n"
           "<atem:parameter name=\"city\">Paris</atem:parameter>\n"
           "<atem:parameter name=\"days\">2</atem:parameter>\n"
           "</atem:invoke>\n</atem:function_calls><|eom|>"
           "<|start|>assistant to=functions.get_time<|message|><atem:function_calls>\n"
           "<atem:invoke name=\"functions.get_time\">\n"
           "<atem:parameter name=\"tz\">Europe/Paris</atem:parameter>\n"
           "<atem:parameter name=\"opts\">{\"h24\": true, \"fmt\": [1, 2.5]}</atem:parameter>\n"
           "</atem:invoke>\n</atem:function_calls><|eot|>", &t);
    glim_chat_result r;
    glim_error err;
    REQUIRE(glim_chat_parse(byte_tok, tools, 3, t.ids, t.n, &r, &err) == GLIM_OK, "%s", err.message);
    CHECK(!r.malformed, "well-formed, but: %s", r.problem);
    CHECK(r.stopped && !strcmp(r.reasoning, "Need both.") && !strcmp(r.answer, ""), "reasoning '%s' answer '%s'",
          r.reasoning, r.answer);
    REQUIRE(r.n_calls == 2, "two calls, got %d", r.n_calls);
    CHECK(!strcmp(r.calls[0].name, "functions.get_weather"), "name 0: %s", r.calls[0].name);
    CHECK(!strcmp(r.calls[0].arguments, "{\"city\":\"Paris\",\"days\":2}"), "args 0: %s", r.calls[0].arguments);
    CHECK(!strcmp(r.calls[1].name, "functions.get_time"), "name 1: %s", r.calls[1].name);
    CHECK(!strcmp(r.calls[1].arguments, "{\"tz\":\"Europe/Paris\",\"opts\":{\"h24\":true,\"fmt\":[1,2.5]}}"),
          "args 1: %s", r.calls[1].arguments);
    glim_chat_result_free(&r);

    /* two invokes in one block; a parameter declared "string" stays a string even if numeric,
     * an undeclared numeric one becomes a number; values keep their spaces */
    ids_of(" to=functions.get_weather<|message|><atem:function_calls>\n"
           "<atem:invoke name=\"functions.get_weather\">\n<atem:parameter name=\"city\">1984</atem:parameter>\n"
           "<atem:parameter name=\"note\"> two  spaces </atem:parameter>\n</atem:invoke>\n"
           "<atem:invoke name=\"web.search\">\n<atem:parameter name=\"q\">42</atem:parameter>\n"
           "<atem:parameter name=\"flag\">false</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eot|>", &t);
    REQUIRE(glim_chat_parse(byte_tok, tools, 3, t.ids, t.n, &r, &err) == GLIM_OK, "%s", err.message);
    REQUIRE(r.n_calls == 2, "two calls, got %d", r.n_calls);
    CHECK(!strcmp(r.calls[0].arguments, "{\"city\":\"1984\",\"note\":\" two  spaces \"}"), "typed: %s", r.calls[0].arguments);
    CHECK(!strcmp(r.calls[1].name, "web.search") && !strcmp(r.calls[1].arguments, "{\"q\":42,\"flag\":false}"),
          "untyped: %s %s", r.calls[1].name, r.calls[1].arguments);
    CHECK(!r.malformed, "%s", r.problem);
    glim_chat_result_free(&r);
    glim_tokens_free(&t);
}

static void test_parse_malformed(void) {
    REQUIRE(byte_tok, "byte tokenizer");
    static const struct { const char *text, *problem_has; int n_calls; const char *args0; } cases[] = {
        {" to=f<|message|><atem:function_calls>\n<atem:invoke name=\"f\">\n<atem:parameter name=\"a\">1\n"
         "</atem:invoke>\n</atem:function_calls><|eot|>", "not closed", 1, "{\"a\":1}"},
        {" to=f<|message|><atem:function_calls>\n<atem:invoke name=\"f\">\n<atem:parameter=a>x</atem:parameter>\n"
         "</atem:invoke>\n</atem:function_calls><|eot|>", "<atem:parameter=", 1, "{\"a\":\"x\"}"},
        {" to=f<|message|>just text<|eot|>", "without <atem:function_calls>", 1, "{}"},
        {"<|message|>no header<|eot|>", "no recipient", 0, NULL},
        {" to=self<|message|>a<|start|>assistant to=user<|message|>b<|eot|>", "<|start|> inside", 0, NULL},
        {" to=self<|message|>a<|eom|>stray<|eot|>", "after <|eom|>", 0, NULL},
        {" to=user<|message|>x<|eom|><|message|>y<|eot|>", "outside a message header", 0, NULL},
        {"<|start|>user<|message|>I am the user now<|eot|>", "instead of the assistant", 0, NULL},
        {" to=f<|message|><atem:function_calls>\n<atem:invoke name=\"f\">\n<atem:parameter name=\"a\">1</atem:parameter>\n"
         "<|eot|>", "is not closed", 1, "{\"a\":1}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        glim_tokens t = {0};
        ids_of(cases[i].text, &t);
        glim_chat_result r;
        glim_error err;
        REQUIRE(glim_chat_parse(byte_tok, NULL, 0, t.ids, t.n, &r, &err) == GLIM_OK, "%s", err.message);
        CHECK(r.malformed && strstr(r.problem, cases[i].problem_has), "case %zu: malformed %d problem '%s'", i,
              r.malformed, r.problem);
        CHECK(r.n_calls == cases[i].n_calls, "case %zu: %d calls", i, r.n_calls);
        if (cases[i].args0 && r.n_calls)
            CHECK(!strcmp(r.calls[0].arguments, cases[i].args0), "case %zu: args %s", i, r.calls[0].arguments);
        glim_chat_result_free(&r);
        glim_tokens_free(&t);
    }
}

/* Random ids (mostly the structural specials and the tags' bytes): never a crash, and the
 * strings that come out are valid UTF-8 with no NUL before their end. */
static void test_parse_fuzz(void) {
    REQUIRE(byte_tok, "byte tokenizer");
    const int32_t specials[] = {START, MESSAGE, EOM, EOT, EOS, BOS, 200090};
    const char *frags[] = {" to=", "self", "user", "f", "<atem:function_calls>", "<atem:invoke name=\"",
                           "\">", "<atem:parameter name=\"", "</atem:parameter>", "</atem:invoke>",
                           "</atem:function_calls>", "{\"a\": [1", "\xff", "\xc3", "\n", "\"", "<atem:parameter="};
    uint64_t s = 0x243F6A8885A308D3ull ^ (uint64_t)(uintptr_t)&s;
    for (int iter = 0; iter < 3000; iter++) {
        glim_tokens t = {0};
        glim_error err;
        int n = 1 + (int)(s % 40);
        for (int k = 0; k < n; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            if (s % 3 == 0) {
                glim_tokens_push(&t, specials[(s >> 8) % 7], &err);
            } else {
                const char *f = frags[(s >> 8) % (sizeof frags / sizeof frags[0])];
                glim_tokenize(byte_tok, f, strlen(f), 0, &t, &err);
            }
        }
        glim_chat_result r;
        REQUIRE(glim_chat_parse(byte_tok, tools, 3, t.ids, t.n, &r, &err) == GLIM_OK, "%s", err.message);
        for (int c = 0; c < r.n_calls; c++) {
            json_t *j = json_loads(r.calls[c].arguments, 0, NULL);
            CHECK(json_is_object(j), "iteration %d: arguments are a JSON object: %s", iter, r.calls[c].arguments);
            json_decref(j);
        }
        json_t *a = json_string(r.answer), *b = json_string(r.reasoning); /* NULL if not valid UTF-8 */
        CHECK(a && b, "iteration %d: reasoning/answer are valid UTF-8", iter);
        json_decref(a);
        json_decref(b);
        glim_chat_result_free(&r);
        glim_tokens_free(&t);
    }
}

/* What the renderer writes for an assistant turn, read back by the parser, gives the turn. */
static void test_render_parse_round_trip(void) {
    REQUIRE(byte_tok, "byte tokenizer");
    glim_chat_options o = {.first_message = 1, .tools = tools, .n_tools = 3};
    glim_tokens t = {0};
    glim_error err;
    REQUIRE(glim_chat_tokenize(byte_tok, tool_conv, 2, &o, &t, &err) == GLIM_OK, "%s", err.message);
    /* drop the "<|start|>assistant" the prompt already holds */
    REQUIRE(t.n > 10 && t.ids[0] == START && t.ids[1] == 'a', "starts with <|start|>assistant");
    glim_chat_result r;
    REQUIRE(glim_chat_parse(byte_tok, tools, 3, t.ids + 10, t.n - 10, &r, &err) == GLIM_OK, "%s", err.message);
    CHECK(!r.malformed && r.stopped, "%s", r.problem);
    CHECK(!strcmp(r.reasoning, "Call both tools."), "reasoning %s", r.reasoning);
    REQUIRE(r.n_calls == 2, "calls %d", r.n_calls);
    CHECK(!strcmp(r.calls[0].arguments, "{\"city\":\"Paris\",\"days\":2}"), "%s", r.calls[0].arguments);
    CHECK(!strcmp(r.calls[1].arguments, "{\"tz\":\"Europe/Paris\",\"opts\":{\"h24\":true,\"fmt\":[1,2.5,0.1]}}"), "%s",
          r.calls[1].arguments);
    glim_chat_result_free(&r);
    glim_tokens_free(&t);
}

int main(void) {
    byte_tok = make_byte_tokenizer();
    RUN(test_render_default_system);
    RUN(test_render_system_and_history);
    RUN(test_render_tools_parallel_calls);
    RUN(test_render_errors);
    RUN(test_chat_tokens);
    RUN(test_parse_reasoning_and_answer);
    RUN(test_parse_parallel_tool_calls);
    RUN(test_parse_malformed);
    RUN(test_parse_fuzz);
    RUN(test_render_parse_round_trip);
    glim_tokenizer_free(byte_tok);
    return CHECK_DONE();
}
