/* tokdiff.c: the C side of the differential tokenizer test and of the encode benchmark.
 *
 *   tokdiff TOKENIZER.json CASES.jsonl
 *     Each line of CASES is {"group", "name", "b64" (the text's bytes), "special" (parse special
 *     tokens), "bos" (add BOS), "ids" (what @huggingface/tokenizers produced), "decoded_b64"
 *     (its decode of those ids, or null)}. For every case: our ids must equal "ids", our decode
 *     of our ids must give back the text byte for byte, our decode of the reference ids must
 *     equal the reference decode, and the streaming decoder must agree with the whole decode.
 *     Prints one PASS/FAIL line per group with the counts; details of mismatches on stderr.
 *
 *   tokdiff --chat-tokens TOKENIZER.json
 *     Renders a fixed conversation (system, tools, reasoning, parallel tool calls, tool results,
 *     generation prompt) and prints {"text": rendered text, "ids": glim_chat_tokenize's ids}, for
 *     the script to compare with @huggingface/tokenizers' encode(text, add_special_tokens=false).
 *
 *   tokdiff --write-chat-model DIR
 *     Writes a tiny random Muse Glimmer checkpoint with the full 202,048-id vocabulary (so the
 *     chat special tokens exist) for the `glimmer chat` check; the caller adds tokenizer.json.
 *
 *   tokdiff --bench TOKENIZER.json TEXT_FILE SECONDS
 *     Encodes the file repeatedly for about SECONDS and prints
 *     {"bytes": N, "tokens": N, "seconds": S, "mb_per_s": X, "load_seconds": L}.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glimmer_text.h"
#include "synth.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int b64val(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

static unsigned char *b64decode(const char *s, size_t *len) {
    size_t n = strlen(s);
    unsigned char *out = malloc(n / 4 * 3 + 4);
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64val((unsigned char)s[i]);
        if (v < 0) continue; /* padding */
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    *len = o;
    return out;
}

typedef struct group {
    char name[64];
    int cases, ids_ok, roundtrip_ok, decode_ok, decode_cases, stream_ok;
    long tokens;
} group;

static group *find_group(group *g, int *n, const char *name) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(g[i].name, name)) return &g[i];
    if (*n == 32) return &g[31]; /* more groups than the test has: lump the rest together */
    memset(&g[*n], 0, sizeof g[*n]);
    snprintf(g[*n].name, sizeof g[*n].name, "%s", name);
    return &g[(*n)++];
}

/* Reference lossy UTF-8 conversion (each maximal ill-formed subpart -> one U+FFFD), written
 * from the Unicode rule, independent of the streaming decoder it checks. */
static size_t lossy(const unsigned char *b, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned c = b[i];
        int need = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
        if (need == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3), o += 3, i++;
            continue;
        }
        int j = 1;
        while (j < need && i + (size_t)j < n) {
            unsigned x = b[i + (size_t)j];
            unsigned lo = 0x80, hi = 0xBF;
            if (j == 1 && c == 0xE0) lo = 0xA0;
            if (j == 1 && c == 0xED) hi = 0x9F;
            if (j == 1 && c == 0xF0) lo = 0x90;
            if (j == 1 && c == 0xF4) hi = 0x8F;
            if (x < lo || x > hi) break;
            j++;
        }
        if (j == need) memcpy(out + o, b + i, (size_t)need), o += (size_t)need;
        else memcpy(out + o, "\xEF\xBF\xBD", 3), o += 3;
        i += (size_t)j;
    }
    return o;
}

/* The streaming decoder's pieces, joined, must equal the lossy conversion of the whole decode. */
static int stream_agrees(const glim_tokenizer *tok, const int32_t *ids, size_t n, const char *whole,
                         size_t whole_len) {
    glim_stream_decoder *d = glim_stream_decoder_new(tok, 1);
    char *acc = malloc(whole_len * 3 + 16), *want = malloc(whole_len * 3 + 16);
    size_t a = 0, len;
    for (size_t i = 0; i < n; i++) {
        const char *p = glim_stream_decoder_push(d, ids[i], &len);
        memcpy(acc + a, p, len);
        a += len;
    }
    const char *p = glim_stream_decoder_flush(d, &len);
    memcpy(acc + a, p, len);
    a += len;
    size_t w = lossy((const unsigned char *)whole, whole_len, want);
    int ok = a == w && !memcmp(acc, want, a);
    free(acc);
    free(want);
    glim_stream_decoder_free(d);
    return ok;
}

static void print_ids(const char *what, const int32_t *ids, size_t n) {
    fprintf(stderr, "    %s (%zu):", what, n);
    for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, n > 40 ? " ...\n" : "\n");
}

static int run_case(const glim_tokenizer *tok, json_t *c, group *g) {
    size_t tlen;
    unsigned char *text = b64decode(json_string_value(json_object_get(c, "b64")), &tlen);
    int special = json_is_true(json_object_get(c, "special"));
    int bos = json_is_true(json_object_get(c, "bos"));
    json_t *want = json_object_get(c, "ids");
    const char *name = json_string_value(json_object_get(c, "name"));
    glim_tokens got = {0};
    glim_error err;
    g->cases++;
    if (glim_tokenize(tok, (const char *)text, tlen,
                      (special ? GLIM_TOK_PARSE_SPECIAL : 0) | (bos ? GLIM_TOK_ADD_SPECIAL : 0),
                      &got, &err) != GLIM_OK) {
        fprintf(stderr, "  %s/%s: tokenize failed: %s\n", g->name, name, err.message);
        free(text);
        return 0;
    }
    size_t nw = json_array_size(want);
    int32_t *w = malloc((nw + 1) * sizeof *w);
    for (size_t i = 0; i < nw; i++) w[i] = (int32_t)json_integer_value(json_array_get(want, i));
    int same = got.n == nw && (nw == 0 || !memcmp(got.ids, w, nw * sizeof *w)); /* no ids: NULL */
    g->tokens += (long)nw;
    if (same) {
        g->ids_ok++;
    } else {
        size_t k = 0;
        while (k < got.n && k < nw && got.ids[k] == w[k]) k++;
        fprintf(stderr, "  %s/%s: ids differ from index %zu\n", g->name, name, k);
        print_ids("ours", got.ids + k, got.n - k);
        print_ids("hf  ", w + k, nw - k);
    }
    /* round trip: decode our ids (without what the post-processor added) */
    size_t skip = bos && got.n && glim_tokenizer_bos_id(tok) == got.ids[0] ? 1 : 0;
    char *dec;
    size_t dlen;
    if (glim_detokenize(tok, got.ids + skip, got.n - skip, 0, &dec, &dlen, &err) == GLIM_OK) {
        if (dlen == tlen && !memcmp(dec, text, tlen)) g->roundtrip_ok++;
        else fprintf(stderr, "  %s/%s: decode(encode(x)) != x (%zu vs %zu bytes)\n", g->name, name, dlen, tlen);
        if (stream_agrees(tok, got.ids + skip, got.n - skip, dec, dlen)) g->stream_ok++;
        else fprintf(stderr, "  %s/%s: streaming decode disagrees\n", g->name, name);
        free(dec);
    } else {
        fprintf(stderr, "  %s/%s: detokenize failed: %s\n", g->name, name, err.message);
    }
    /* our decode of the reference ids vs the reference decode */
    json_t *rd = json_object_get(c, "decoded_b64");
    if (json_is_string(rd)) {
        g->decode_cases++;
        size_t rlen;
        unsigned char *ref = b64decode(json_string_value(rd), &rlen);
        if (glim_detokenize(tok, w, nw, 0, &dec, &dlen, &err) == GLIM_OK) {
            if (dlen == rlen && !memcmp(dec, ref, rlen)) g->decode_ok++;
            else fprintf(stderr, "  %s/%s: decode of the reference ids differs\n", g->name, name);
            free(dec);
        }
        free(ref);
    }
    free(w);
    free(text);
    glim_tokens_free(&got);
    return same;
}

static int diff_main(const char *tok_path, const char *cases_path) {
    glim_tokenizer *tok;
    glim_error err;
    if (glim_tokenizer_load(tok_path, &tok, &err) != GLIM_OK) {
        printf("FAIL tokenizer_diff: cannot load %s: %s\n", tok_path, err.message);
        return 1;
    }
    FILE *f = fopen(cases_path, "r");
    if (!f) {
        printf("FAIL tokenizer_diff: cannot open %s\n", cases_path);
        glim_tokenizer_free(tok);
        return 1;
    }
    group groups[32];
    int ng = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        json_error_t jerr;
        json_t *c = json_loadb(line, (size_t)n, 0, &jerr);
        if (!c) continue;
        const char *gname = json_string_value(json_object_get(c, "group"));
        run_case(tok, c, find_group(groups, &ng, gname ? gname : "?"));
        json_decref(c);
    }
    free(line);
    fclose(f);
    int fail = 0;
    for (int i = 0; i < ng; i++) {
        group *g = &groups[i];
        int ok = g->cases > 0 && g->ids_ok == g->cases && g->roundtrip_ok == g->cases &&
                 g->decode_ok == g->decode_cases && g->stream_ok == g->cases;
        fail |= !ok;
        printf("%s tokenizer_diff[%s]: ids identical %d/%d (%ld tokens), decode(encode(x))==x %d/%d, "
               "decode of reference ids %d/%d, streaming %d/%d\n",
               ok ? "PASS" : "FAIL", g->name, g->ids_ok, g->cases, g->tokens, g->roundtrip_ok,
               g->cases, g->decode_ok, g->decode_cases, g->stream_ok, g->cases);
    }
    glim_tokenizer_free(tok);
    return fail;
}

static int bench_main(const char *tok_path, const char *text_path, double seconds) {
    double t0 = now();
    glim_tokenizer *tok;
    glim_error err;
    if (glim_tokenizer_load(tok_path, &tok, &err) != GLIM_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    double load = now() - t0;
    FILE *f = fopen(text_path, "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)len);
    if (fread(text, 1, (size_t)len, f) != (size_t)len) return 1;
    fclose(f);
    glim_tokens ids = {0};
    long reps = 0;
    size_t tokens = 0;
    double t1 = now(), el;
    do {
        ids.n = 0;
        if (glim_tokenize(tok, text, (size_t)len, GLIM_TOK_ADD_SPECIAL | GLIM_TOK_PARSE_SPECIAL, &ids, &err) != GLIM_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        tokens = ids.n;
        reps++;
        el = now() - t1;
    } while (el < seconds);
    printf("{\"bytes\": %ld, \"tokens\": %zu, \"reps\": %ld, \"seconds\": %.3f, \"mb_per_s\": %.2f, "
           "\"load_seconds\": %.3f}\n",
           len, tokens, reps, el, (double)len * (double)reps / el / 1e6, load);
    glim_tokens_free(&ids);
    free(text);
    glim_tokenizer_free(tok);
    return 0;
}

static int chat_tokens(const char *tok_path) {
    glim_tokenizer *tok;
    glim_error err;
    if (glim_tokenizer_load(tok_path, &tok, &err) != GLIM_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    static const glim_chat_tool tools[] = {
        {"functions.get_weather", "Current weather for a city",
         "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}"},
        {"browser.open", "Open a page \u00e9\u00e8 \u65e5\u672c", NULL},
    };
    static const glim_tool_call calls[] = {
        {"functions.get_weather", "{\"city\": \"S\u00e3o Paulo\", \"days\": 3}"},
        {"browser.open", "{\"url\": \"https://example.com/a?b=1\", \"opts\": {\"x\": [1, 2.5, null]}}"},
    };
    static const glim_chat_message msgs[] = {
        {.role = GLIM_ROLE_SYSTEM, .content = "You are a careful assistant.\nAnswer in   French."},
        {.role = GLIM_ROLE_USER, .content = "Quel temps fait-il \u00e0 S\u00e3o Paulo ? \U0001F600\n\n  Merci!"},
        {.role = GLIM_ROLE_ASSISTANT, .reasoning = "I should call the weather tool, and open a page.", .tool_calls = calls,
         .n_tool_calls = 2},
        {.role = GLIM_ROLE_TOOL, .name = "functions.get_weather", .content = "{\"temp_c\": 24.5, \"sky\": \"clear\"}"},
        {.role = GLIM_ROLE_TOOL, .name = "browser.open", .content = "\"<html>ok</html>\""},
        {.role = GLIM_ROLE_ASSISTANT, .reasoning = "Both done.", .content = "Il fait 24,5 \u00b0C, ciel d\u00e9gag\u00e9."},
        {.role = GLIM_ROLE_USER, .content = "Et demain ?"},
    };
    glim_chat_options o = {.reasoning_strength = "medium", .current_date = "11-08-2026", .tools = tools, .n_tools = 2,
                           .add_generation_prompt = 1};
    char *text;
    size_t len;
    glim_tokens ids = {0};
    if (glim_chat_render(msgs, 7, &o, &text, &len, &err) || glim_chat_tokenize(tok, msgs, 7, &o, &ids, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    json_t *out = json_object(), *arr = json_array();
    json_object_set_new(out, "text", json_stringn(text, len));
    for (size_t i = 0; i < ids.n; i++) json_array_append_new(arr, json_integer(ids.ids[i]));
    json_object_set_new(out, "ids", arr);
    char *dump = json_dumps(out, JSON_COMPACT);
    puts(dump);
    free(dump);
    json_decref(out);
    free(text);
    glim_tokens_free(&ids);
    glim_tokenizer_free(tok);
    return 0;
}

static int write_chat_model(const char *dir) {
    glim_synth_spec spec = glim_synth_tiny();
    spec.vocab_size = 202048;
    glim_error err;
    if (glim_synth_write(dir, &spec, &err) != GLIM_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--write-chat-model")) return write_chat_model(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--chat-tokens")) return chat_tokens(argv[2]);
    if (argc == 5 && !strcmp(argv[1], "--bench")) return bench_main(argv[2], argv[3], atof(argv[4]));
    if (argc == 3) return diff_main(argv[1], argv[2]);
    fprintf(stderr, "usage: tokdiff TOKENIZER.json CASES.jsonl | tokdiff --bench TOKENIZER.json TEXT SECONDS | "
                    "tokdiff --write-chat-model DIR\n");
    return 2;
}
