/* test_tokenizer.c: the tokenizer on a hand-built tokenizer.json (tests/tokenizer/tiny_tokenizer.json:
 * 39 vocabulary entries, 15 merges, 3 added tokens, the O200K split regex, a BOS template). Every
 * expected id list below was worked out by hand from that file's merges (see the comments), not
 * produced by the code under test. The 200k-vocabulary comparison with Hugging Face is
 * tests/tokenizer.test.sh. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "glimmer_text.h"
#include "tokenizer.h" /* tok_compile_regex: the Oniguruma -> PCRE2 translation */

static char *fixture_text;
static size_t fixture_len;

static int load_fixture(void) {
    const char *paths[] = {"tests/tokenizer/tiny_tokenizer.json", "../tests/tokenizer/tiny_tokenizer.json"};
    for (size_t i = 0; i < 2; i++) {
        FILE *f = fopen(paths[i], "rb");
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        fixture_text = malloc((size_t)n + 1);
        fixture_len = fread(fixture_text, 1, (size_t)n, f);
        fixture_text[fixture_len] = 0;
        fclose(f);
        return 1;
    }
    return 0;
}

/* The fixture with one JSON edit applied (path of keys, new value as JSON text). */
static glim_tokenizer *load_variant(const char *k1, const char *k2, const char *value, glim_error *err) {
    json_t *root = json_loadb(fixture_text, fixture_len, 0, NULL);
    json_t *obj = k2 ? json_object_get(root, k1) : root;
    json_object_set_new(obj, k2 ? k2 : k1, json_loads(value, JSON_DECODE_ANY, NULL));
    char *text = json_dumps(root, 0);
    glim_tokenizer *tok = NULL;
    glim_tokenizer_load_json(text, strlen(text), &tok, err);
    free(text);
    json_decref(root);
    return tok;
}

static int ids_equal(const glim_tokens *t, const int32_t *want, size_t n) {
    if (t->n != n) return 0;
    return n == 0 || !memcmp(t->ids, want, n * sizeof *want);
}

static void show(const char *what, const glim_tokens *t) {
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < t->n; i++) fprintf(stderr, " %d", t->ids[i]);
    fputc('\n', stderr);
}

#define EXPECT_IDS(tok, text, len, flags, ...)                                            \
    do {                                                                                  \
        const int32_t want_[] = {__VA_ARGS__};                                            \
        glim_tokens got_ = {0};                                                           \
        glim_error e_;                                                                    \
        CHECK(glim_tokenize(tok, text, len, flags, &got_, &e_) == GLIM_OK, "%s", e_.message); \
        if (!ids_equal(&got_, want_, sizeof want_ / sizeof want_[0])) {                   \
            show("got", &got_);                                                           \
            CHECK(0, "ids of \"%s\" (flags %u) differ from the hand-derived ones", text, (unsigned)(flags)); \
        }                                                                                 \
        glim_tokens_free(&got_);                                                          \
    } while (0)

static glim_tokenizer *tiny(void) {
    glim_tokenizer *tok = NULL;
    glim_error err;
    if (glim_tokenizer_load_json(fixture_text, fixture_len, &tok, &err) != GLIM_OK) {
        fprintf(stderr, "  load: %s\n", err.message);
        return NULL;
    }
    return tok;
}

static void test_basic_ids(void) {
    glim_tokenizer *tok = tiny();
    REQUIRE(tok, "fixture loads");
    CHECK(glim_tokenizer_n_vocab(tok) == 103, "n_vocab %d, want 103", glim_tokenizer_n_vocab(tok));
    CHECK(glim_tokenizer_bos_id(tok) == 100, "bos %d", glim_tokenizer_bos_id(tok));
    /* "hello" is a vocabulary entry (24); " world's" is one O200K piece that BPE merges
     * Ġ+w(4) o+r(5) Ġw+or(6) +l(7) +d(8) '+s(9) into Ġworld(29) 's(30). */
    EXPECT_IDS(tok, "hello world's", 13, 0, 24, 29, 30);
    EXPECT_IDS(tok, "hello world's", 13, GLIM_TOK_ADD_SPECIAL, 100, 24, 29, 30);
    /* é = C3 A9 = byte-level "Ã©" (34); "12" is a number piece (35) */
    EXPECT_IDS(tok, "\xc3\xa9" "12", 4, 0, 34, 35);
    /* two newlines: one \s*[\r\n]+ piece "ĊĊ" (36) */
    EXPECT_IDS(tok, "\n\n", 2, 0, 36);
    /* three digits "121": \p{N}{1,3} is one piece; BPE 1+2 -> 12, then 1 */
    EXPECT_IDS(tok, "121", 3, 0, 35, 13);
    /* empty text: nothing, or just BOS */
    EXPECT_IDS(tok, "", 0, GLIM_TOK_ADD_SPECIAL, 100);
    glim_tokenizer_free(tok);
}

static void test_special_tokens_are_text_unless_asked(void) {
    glim_tokenizer *tok = tiny();
    REQUIRE(tok, "fixture loads");
    /* as text: "hello" | "<|" (18 19) | "eot" (3 6 37) | "|>" (19 20) */
    EXPECT_IDS(tok, "hello<|eot|>", 12, 0, 24, 18, 19, 3, 6, 37, 19, 20);
    EXPECT_IDS(tok, "hello<|eot|>", 12, GLIM_TOK_PARSE_SPECIAL, 24, 101);
    /* a non-special added token is always recognised */
    EXPECT_IDS(tok, "a<tool>b", 8, 0, 0, 102, 1);
    EXPECT_IDS(tok, "a<tool>b", 8, GLIM_TOK_PARSE_SPECIAL, 0, 102, 1);
    /* leftmost-longest: "<|bos|><|eot|>" back to back */
    EXPECT_IDS(tok, "<|bos|><|eot|>", 14, GLIM_TOK_PARSE_SPECIAL, 100, 101);
    CHECK(glim_tokenizer_find(tok, "<|eot|>") == 101, "find <|eot|>");
    CHECK(glim_tokenizer_find(tok, "\xc4\xa0world") == 29, "find Ġworld (byte-level spelling)");
    CHECK(glim_tokenizer_find(tok, "nothing") == -1, "find of a missing token");
    CHECK(glim_tokenizer_is_special(tok, 101) && !glim_tokenizer_is_special(tok, 102) &&
          !glim_tokenizer_is_special(tok, 24), "special flags");
    glim_tokenizer_free(tok);
}

static void test_ignore_merges(void) {
    glim_error err;
    glim_tokenizer *on = tiny();
    glim_tokenizer *off = load_variant("model", "ignore_merges", "false", &err);
    REQUIRE(on && off, "variants load");
    /* "abba" is in the vocabulary (33): taken whole with ignore_merges; without it BPE runs
     * a+b (rank 10) first, then b+a (rank 11): ab(31) ba(32). */
    EXPECT_IDS(on, "abba", 4, 0, 33);
    EXPECT_IDS(off, "abba", 4, 0, 31, 32);
    /* "hello" comes out the same either way: h+e, l+l, he+ll, hell+o */
    EXPECT_IDS(off, "hello", 5, 0, 24);
    glim_tokenizer_free(on);
    glim_tokenizer_free(off);
}

static void test_merge_forms_and_bytelevel_regex(void) {
    glim_error err;
    glim_tokenizer *pairs = load_variant(
        "model", "merges",
        "[[\"h\",\"e\"],[\"l\",\"l\"],[\"he\",\"ll\"],[\"hell\",\"o\"],[\"\\u0120\",\"w\"],[\"o\",\"r\"],"
        "[\"\\u0120w\",\"or\"],[\"\\u0120wor\",\"l\"],[\"\\u0120worl\",\"d\"],[\"'\",\"s\"],[\"a\",\"b\"],"
        "[\"b\",\"a\"],[\"\\u00c3\",\"\\u00a9\"],[\"1\",\"2\"],[\"\\u010a\",\"\\u010a\"]]", &err);
    REQUIRE(pairs, "pair-form merges load: %s", err.message);
    EXPECT_IDS(pairs, "hello world's", 13, 0, 24, 29, 30);
    glim_tokenizer_free(pairs);
    /* GPT-2 style: ByteLevel does the splitting; " world" and "'s" are separate pieces */
    glim_tokenizer *bl = load_variant("pre_tokenizer", NULL,
                                      "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}", &err);
    REQUIRE(bl, "ByteLevel(use_regex) loads: %s", err.message);
    EXPECT_IDS(bl, "hello world's", 13, 0, 24, 29, 30);
    glim_tokenizer_free(bl);
    /* add_prefix_space: "hello" becomes " hello" = Ġ(11) then h+e, l+l, he+ll, hell+o = hello(24) */
    glim_tokenizer *ps = load_variant("pre_tokenizer", NULL,
                                      "{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":true}", &err);
    REQUIRE(ps, "add_prefix_space loads: %s", err.message);
    EXPECT_IDS(ps, "hello", 5, 0, 11, 24);
    glim_tokenizer_free(ps);
}

static void test_invalid_utf8_round_trip(void) {
    glim_tokenizer *tok = tiny();
    REQUIRE(tok, "fixture loads");
    /* 0xFF is byte-level "ÿ" (38), a piece of its own between "a" and "b" */
    EXPECT_IDS(tok, "a\xff" "b", 3, 0, 0, 38, 1);
    /* a lone C3 (no continuation) is its own piece: Ã(15); then "a" */
    EXPECT_IDS(tok, "\xc3" "a", 2, 0, 15, 0);
    /* property: random strings over the fixture's alphabet (all bytes it has) round-trip */
    const char *alphabet[] = {"a", "b", "d", "e", "h", "l", "o", "r", "s", "w", "'", " ", "\n", "1",
                              "2", "\xc3\xa9", "!", "<", "|", ">", "t", "\xff", "\xc3", "<tool>",
                              "<|eot|>", "hello", " world"};
    uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&seed;
    char buf[512];
    for (int iter = 0; iter < 500; iter++) {
        size_t n = 0;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int parts = 1 + (int)((seed >> 33) % 40);
        for (int p = 0; p < parts; p++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            const char *a = alphabet[(seed >> 33) % (sizeof alphabet / sizeof alphabet[0])];
            memcpy(buf + n, a, strlen(a));
            n += strlen(a);
        }
        for (unsigned flags = 0; flags < 4; flags++) {
            glim_tokens t = {0};
            glim_error err;
            char *back;
            size_t blen;
            REQUIRE(glim_tokenize(tok, buf, n, flags, &t, &err) == GLIM_OK, "%s", err.message);
            size_t skip = (flags & GLIM_TOK_ADD_SPECIAL) ? 1 : 0;
            REQUIRE(glim_detokenize(tok, t.ids + skip, t.n - skip, 0, &back, &blen, &err) == GLIM_OK, "%s", err.message);
            CHECK(blen == n && !memcmp(back, buf, n), "round trip of a %zu-byte random string (flags %u)", n, flags);
            free(back);
            glim_tokens_free(&t);
        }
    }
    glim_tokenizer_free(tok);
}

static void test_decode(void) {
    glim_tokenizer *tok = tiny();
    REQUIRE(tok, "fixture loads");
    const int32_t ids[] = {100, 24, 29, 30, 101};
    char *out;
    size_t len;
    glim_error err;
    REQUIRE(glim_detokenize(tok, ids, 5, 0, &out, &len, &err) == GLIM_OK, "%s", err.message);
    CHECK(len == strlen("<|bos|>hello world's<|eot|>") && !strcmp(out, "<|bos|>hello world's<|eot|>"), "got '%s'", out);
    free(out);
    REQUIRE(glim_detokenize(tok, ids, 5, GLIM_DETOK_SKIP_SPECIAL, &out, &len, &err) == GLIM_OK, "%s", err.message);
    CHECK(!strcmp(out, "hello world's"), "skip special: got '%s'", out);
    free(out);
    const int32_t bad[] = {24, 50}; /* 50 is a hole between the vocabulary and the added tokens */
    CHECK(glim_detokenize(tok, bad, 2, 0, &out, &len, &err) == GLIM_E_ARG, "a hole id must be refused");
    CHECK(strstr(err.message, "ids[1] = 50") != NULL, "message names the id: %s", err.message);
    const int32_t neg[] = {-1};
    CHECK(glim_detokenize(tok, neg, 1, 0, &out, &len, &err) == GLIM_E_ARG, "negative id refused");
    size_t n;
    CHECK(glim_token_bytes(tok, 29, &n) && n == 6 && !memcmp(glim_token_bytes(tok, 29, &n), " world", 6), "bytes of Ġworld");
    CHECK(glim_token_bytes(tok, 77, &n) == NULL && n == 0, "bytes of a hole");
    glim_tokenizer_free(tok);
}

static void test_stream_decoder(void) {
    glim_tokenizer *tok = tiny();
    REQUIRE(tok, "fixture loads");
    glim_stream_decoder *d = glim_stream_decoder_new(tok, 0);
    REQUIRE(d, "decoder");
    size_t n;
    const char *p = glim_stream_decoder_push(d, 24, &n);
    CHECK(n == 5 && !memcmp(p, "hello", 5), "hello");
    p = glim_stream_decoder_push(d, 15, &n); /* C3: first half of é */
    CHECK(n == 0, "half a character is held back (got %zu bytes)", n);
    p = glim_stream_decoder_push(d, 16, &n); /* A9 completes it */
    CHECK(n == 2 && !memcmp(p, "\xc3\xa9", 2), "é completed");
    p = glim_stream_decoder_push(d, 101, &n); /* special, hidden */
    CHECK(n == 0, "special hidden");
    p = glim_stream_decoder_push(d, 15, &n); /* C3 then 'a': C3 can never complete */
    CHECK(n == 0, "held");
    p = glim_stream_decoder_push(d, 0, &n);
    CHECK(n == 4 && !memcmp(p, "\xef\xbf\xbd" "a", 4), "U+FFFD then a (got %zu bytes)", n);
    p = glim_stream_decoder_push(d, 15, &n);
    p = glim_stream_decoder_flush(d, &n);
    CHECK(n == 3 && !memcmp(p, "\xef\xbf\xbd", 3), "flush of a held byte gives U+FFFD");
    p = glim_stream_decoder_push(d, 38, &n); /* FF: never valid */
    CHECK(n == 3 && !memcmp(p, "\xef\xbf\xbd", 3), "FF gives U+FFFD");
    glim_stream_decoder_free(d);
    d = glim_stream_decoder_new(tok, 1);
    p = glim_stream_decoder_push(d, 101, &n);
    CHECK(n == 7 && !memcmp(p, "<|eot|>", 7), "special shown");
    glim_stream_decoder_free(d);
    glim_tokenizer_free(tok);
}

static void test_bad_files(void) {
    glim_error err;
    glim_tokenizer *tok;
    CHECK(glim_tokenizer_load_json("{\"model\": ", 10, &tok, &err) == GLIM_E_FORMAT && !tok, "truncated JSON");
    CHECK(strstr(err.message, "bad JSON") != NULL, "message: %s", err.message);
    tok = load_variant("model", "merges", "[\"h e\", \"q z\"]", &err);
    CHECK(!tok && err.code == GLIM_E_FORMAT && strstr(err.message, "merges[1]") && strstr(err.message, "\"q\""),
          "unknown merge token named: %s", err.message);
    tok = load_variant("model", "merges", "[\"a d\"]", &err);
    CHECK(!tok && strstr(err.message, "not in the vocabulary"), "merge result missing: %s", err.message);
    tok = load_variant("model", "merges", "[\"he\"]", &err);
    CHECK(!tok && strstr(err.message, "two tokens"), "one-token merge: %s", err.message);
    tok = load_variant("model", "type", "\"WordPiece\"", &err);
    CHECK(!tok && err.code == GLIM_E_UNSUPPORTED && strstr(err.message, "WordPiece"), "model type: %s", err.message);
    tok = load_variant("pre_tokenizer", NULL, "{\"type\":\"Whitespace\"}", &err);
    CHECK(!tok && err.code == GLIM_E_UNSUPPORTED && strstr(err.message, "Whitespace"), "pre-tokenizer: %s", err.message);
    tok = load_variant("pre_tokenizer", NULL, "null", &err);
    CHECK(!tok && err.code == GLIM_E_UNSUPPORTED && strstr(err.message, "ByteLevel"), "no ByteLevel: %s", err.message);
    tok = load_variant("pre_tokenizer", NULL,
                       "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},"
                       "\"behavior\":\"Isolated\"},{\"type\":\"ByteLevel\",\"use_regex\":false}]}", &err);
    CHECK(!tok && strstr(err.message, "regex"), "bad regex: %s", err.message);
    tok = load_variant("decoder", NULL, "{\"type\":\"WordPiece\"}", &err);
    CHECK(!tok && err.code == GLIM_E_UNSUPPORTED, "decoder: %s", err.message);
    tok = load_variant("model", "vocab", "{\"a\": \"zero\"}", &err);
    CHECK(!tok && err.code == GLIM_E_FORMAT, "string id: %s", err.message);
    CHECK(glim_tokenizer_load("/nonexistent/dir", &tok, &err) == GLIM_E_IO && strstr(err.message, "/nonexistent/dir"),
          "missing path: %s", err.message);
    CHECK(glim_tokenizer_load("tests", &tok, &err) == GLIM_E_IO && strstr(err.message, "tokenizer.json"),
          "directory without tokenizer.json: %s", err.message);
}

/* The in-place reader of vocab/merges must decode JSON escapes (\\uXXXX, surrogate pairs,
 * \\n ...) exactly as a JSON library does: the fixture written with every non-ASCII character
 * escaped gives the same ids. */
static void test_escaped_json(void) {
    json_t *root = json_loadb(fixture_text, fixture_len, 0, NULL);
    REQUIRE(root, "fixture parses");
    /* an extra entry whose key needs a surrogate pair and a control escape: never matched by
     * byte-level text, but it must load and keep its UTF-8 */
    json_object_set_new(json_object_get(json_object_get(root, "model"), "vocab"), "\xf0\x9f\x98\x80\n\"x", json_integer(60));
    char *text = json_dumps(root, JSON_ENSURE_ASCII | JSON_INDENT(1));
    json_decref(root);
    REQUIRE(text && strstr(text, "\\u0120") && strstr(text, "\\uD83D\\uDE00\\n\\\"x"), "escaped dump");
    glim_tokenizer *tok = NULL;
    glim_error err;
    REQUIRE(glim_tokenizer_load_json(text, strlen(text), &tok, &err) == GLIM_OK, "%s", err.message);
    EXPECT_IDS(tok, "hello world's", 13, GLIM_TOK_ADD_SPECIAL, 100, 24, 29, 30);
    EXPECT_IDS(tok, "\xc3\xa9" "12\n\n", 6, 0, 34, 35, 36);
    size_t n;
    const char *b = glim_token_bytes(tok, 60, &n);
    CHECK(b && n == 7 && !memcmp(b, "\xf0\x9f\x98\x80\n\"x", 7), "raw (non-byte-level) entry keeps its UTF-8");
    glim_tokenizer_free(tok);
    free(text);
    /* a model without merges: named */
    tok = load_variant("model", "merges", "null", &err);
    CHECK(!tok && err.code == GLIM_E_FORMAT && strstr(err.message, "merges"), "no merges: %s", err.message);
}

/* Truncated or corrupted files: an error (or, for a harmless corruption, a tokenizer), never a
 * crash; every truncation is an error. */
static void test_fuzz_files(void) {
    char *buf = malloc(fixture_len + 1);
    int truncated_ok = 0;
    for (size_t n = 0; n < fixture_len - 1; n++) {
        memcpy(buf, fixture_text, n);
        glim_tokenizer *tok = NULL;
        glim_error err;
        if (glim_tokenizer_load_json(buf, n, &tok, &err) == GLIM_OK) truncated_ok++;
        glim_tokenizer_free(tok);
    }
    CHECK(truncated_ok == 0, "%d truncated files loaded", truncated_ok);
    uint64_t seed = 0xD1B54A32D192ED03ull ^ (uint64_t)(uintptr_t)buf;
    for (int iter = 0; iter < 2000; iter++) {
        memcpy(buf, fixture_text, fixture_len);
        for (int k = 0; k < 3; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            buf[(seed >> 33) % fixture_len] = "{}[]\",:\\u0 aZ\xc4"[(seed >> 20) % 14];
        }
        glim_tokenizer *tok = NULL;
        glim_error err;
        if (glim_tokenizer_load_json(buf, fixture_len, &tok, &err) == GLIM_OK) {
            glim_tokens t = {0};
            CHECK(glim_tokenize(tok, "hello world's", 13, GLIM_TOK_ADD_SPECIAL, &t, &err) == GLIM_OK, "%s", err.message);
            glim_tokens_free(&t);
        }
        glim_tokenizer_free(tok);
    }
    free(buf);
}

static int matches(const char *pattern, const char *subject, size_t *len) {
    pcre2_code *re;
    glim_error err;
    if (tok_compile_regex(pattern, strlen(pattern), 0, &re, &err) != GLIM_OK) return -1;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    int rc = pcre2_match(re, (PCRE2_SPTR)subject, strlen(subject), 0, PCRE2_ANCHORED, md, NULL);
    if (rc >= 0) *len = pcre2_get_ovector_pointer(md)[1];
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return rc >= 0;
}

/* Hugging Face's regexes mean what Oniguruma makes of them: \\s is Unicode White_Space (U+0085
 * yes, U+FEFF no) and (?i:...) folds ASCII letters only (tiktoken's 's|'S, not the long s). */
static void test_regex_translation(void) {
    size_t len = 0;
    CHECK(matches("\\s+", "\xc2\x85 x", &len) == 1 && len == 3, "\\s matches U+0085 (NEL) and space");
    CHECK(matches("\\s", "\xef\xbb\xbf", &len) == 0, "\\s does not match U+FEFF");
    CHECK(matches("[^\\s\\p{L}]+", "\xef\xbb\xbf!", &len) == 1 && len == 4, "U+FEFF is not space in a class");
    CHECK(matches("\\S", "\xc2\x85", &len) == 0, "\\S does not match U+0085");
    CHECK(matches("\\s", "\xe3\x80\x80", &len) == 1, "\\s matches U+3000");
    CHECK(matches("x(?i:'s|'ll)", "x'S", &len) == 1 && len == 3, "(?i:) matches 'S");
    CHECK(matches("x(?i:'s|'ll)", "x'lL", &len) == 1 && len == 4, "(?i:) matches 'lL");
    CHECK(matches("x(?i:'s|'ll)", "x'\xc5\xbf", &len) == 0, "(?i:) does not fold the long s (U+017F)");
    CHECK(matches("(?i:k)", "\xe2\x84\xaa", &len) == 0, "(?i:) does not fold the Kelvin sign");
    CHECK(matches("(?i:\\p{Lu})x", "Ax", &len) == 1 && len == 2, "\\p{Lu} survives inside (?i:)");
    CHECK(matches("(?i:a(?:b|c))", "AC", &len) == 1 && len == 2, "nested group inside (?i:)");
    CHECK(matches("(?<name>a)b", "ab", &len) == 1, "named group");
    CHECK(matches("((", "x", &len) == -1, "a bad pattern is an error");
}

static void test_split_behaviors(void) {
    glim_error err;
    /* Split on the literal "l" with each behaviour; ByteLevel after. Worked by hand on "hello":
     *   Isolated:            he | l | l | o        -> he(21) l(5) l(5) o(6)
     *   Removed:             he | o                -> 21 6
     *   MergedWithPrevious:  hel | l | o           -> hel = h+e -> he, l  => 21 5 | 5 | 6
     *   MergedWithNext:      he | l | lo           -> 21 | 5 | l o (no merge) 5 6
     *   Contiguous:          he | ll | o           -> 21 22 6 */
    static const struct { const char *b; int32_t ids[5]; int n; } cases[] = {
        {"Isolated", {21, 5, 5, 6}, 4}, {"Removed", {21, 6}, 2},
        {"MergedWithPrevious", {21, 5, 5, 6}, 4}, {"MergedWithNext", {21, 5, 5, 6}, 4},
        {"Contiguous", {21, 22, 6}, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char pt[400];
        snprintf(pt, sizeof pt,
                 "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"String\":\"l\"},"
                 "\"behavior\":\"%s\",\"invert\":false},{\"type\":\"ByteLevel\",\"use_regex\":false}]}", cases[i].b);
        glim_tokenizer *tok = load_variant("pre_tokenizer", NULL, pt, &err);
        REQUIRE(tok, "%s loads: %s", cases[i].b, err.message);
        glim_tokens t = {0};
        REQUIRE(glim_tokenize(tok, "hello", 5, 0, &t, &err) == GLIM_OK, "%s", err.message);
        if (!ids_equal(&t, cases[i].ids, (size_t)cases[i].n)) {
            show("got", &t);
            CHECK(0, "behavior %s", cases[i].b);
        }
        glim_tokens_free(&t);
        glim_tokenizer_free(tok);
    }
}

int main(void) {
    if (!load_fixture()) {
        printf("FAIL test_tokenizer: tests/tokenizer/tiny_tokenizer.json not found (run from the repo root)\n");
        return 1;
    }
    RUN(test_basic_ids);
    RUN(test_special_tokens_are_text_unless_asked);
    RUN(test_ignore_merges);
    RUN(test_merge_forms_and_bytelevel_regex);
    RUN(test_invalid_utf8_round_trip);
    RUN(test_decode);
    RUN(test_stream_decoder);
    RUN(test_bad_files);
    RUN(test_split_behaviors);
    RUN(test_escaped_json);
    RUN(test_fuzz_files);
    RUN(test_regex_translation);
    free(fixture_text);
    return CHECK_DONE();
}
