/* tokenizer_pre.c: the pre-tokenizer of a tokenizer.json: Sequence, Split (regex or literal
 * string; Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous) and ByteLevel
 * (add_prefix_space, use_regex with the GPT-2 pattern), compiled for PCRE2 with UTF, UCP and JIT.
 *
 * Hugging Face compiles these patterns with Oniguruma; two of its meanings differ from PCRE2's
 * and are translated here: \s / \S mean Unicode White_Space (PCRE2's \s misses U+0085), and an
 * inline (?i:...) group folds ASCII letters only, as the tiktoken patterns these files come from
 * spell out ('s|'S|...) and as the reference JavaScript implementation does. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "textbuf.h"
#include "tokenizer.h"

static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static int is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Rewrites an Oniguruma-flavoured pattern into PCRE2 syntax with the same meaning (see top). */
static int translate(const char *pat, size_t len, textbuf *out) {
    unsigned char caseless[256]; /* per open group: inside an ASCII-caseless (?i:...) */
    int depth = 0;
    int in_class = 0;
    caseless[0] = 0;
    for (size_t i = 0; i < len; i++) {
        char c = pat[i];
        if (c == '\\' && i + 1 < len) {
            char e = pat[i + 1];
            size_t n = 2;
            if ((e == 'p' || e == 'P' || e == 'x') && i + 2 < len && pat[i + 2] == '{') {
                const char *end = memchr(pat + i, '}', len - i); /* \p{..} \x{..} whole */
                n = end ? (size_t)(end - (pat + i)) + 1 : len - i;
            } else if ((e == 'p' || e == 'P') && i + 2 < len) {
                n = 3; /* \pL */
            }
            if (e == 's') textbuf_add(out, "\\p{White_Space}", 15);
            else if (e == 'S') textbuf_add(out, "\\P{White_Space}", 15);
            else textbuf_add(out, pat + i, n);
            i += n - 1;
            continue;
        }
        if (in_class) {
            if (c == '[' && i + 1 < len && pat[i + 1] == ':') { /* POSIX [:name:] */
                const char *end = strstr(pat + i, ":]");
                size_t n = end ? (size_t)(end - (pat + i)) + 2 : 1;
                textbuf_add(out, pat + i, n);
                i += n - 1;
                continue;
            }
            if (c == ']') in_class--;
            else if (c == '[') in_class++;
            textbuf_add(out, &c, 1);
            if (!in_class && caseless[depth]) textbuf_add(out, ")", 1);
            continue;
        }
        if (c == '[') {
            /* Letters inside a class under (?i:) keep PCRE2's own (Unicode) folding. */
            if (caseless[depth]) textbuf_add(out, "(?i:", 4);
            textbuf_add(out, "[", 1);
            in_class = 1;
            if (i + 1 < len && pat[i + 1] == '^') textbuf_add(out, "^", 1), i++;
            if (i + 1 < len && pat[i + 1] == ']') textbuf_add(out, "]", 1), i++;
            continue;
        }
        if (c == '(') {
            if (depth + 1 >= (int)sizeof caseless) return -1;
            if (i + 3 < len && !strncmp(pat + i, "(?i:", 4)) {
                caseless[++depth] = 1;
                textbuf_add(out, "(?:", 3);
                i += 3;
                continue;
            }
            caseless[depth + 1] = caseless[depth];
            depth++;
            size_t n = 1; /* copy a group prefix such as (?: (?= (?<! (?<name> verbatim */
            if (i + 1 < len && pat[i + 1] == '?') {
                n = 2;
                if (i + 2 < len && pat[i + 2] == '<' && i + 3 < len && is_ascii_letter(pat[i + 3])) {
                    const char *end = memchr(pat + i, '>', len - i);
                    n = end ? (size_t)(end - (pat + i)) + 1 : len - i;
                }
            }
            textbuf_add(out, pat + i, n);
            i += n - 1;
            continue;
        }
        if (c == ')') {
            if (depth > 0) depth--;
            textbuf_add(out, ")", 1);
            continue;
        }
        if (caseless[depth] && is_ascii_letter(c)) {
            char both[4] = {'[', (char)(c | 0x20), (char)(c & ~0x20), ']'};
            textbuf_add(out, both, 4);
            continue;
        }
        textbuf_add(out, &c, 1);
    }
    return out->oom ? -1 : 0;
}

glim_status tok_compile_regex(const char *pattern, size_t len, int literal, pcre2_code **out,
                              glim_error *err) {
    *out = NULL;
    textbuf b = {0};
    uint32_t opts = PCRE2_UTF | PCRE2_UCP;
    if (literal) {
        opts = PCRE2_UTF | PCRE2_LITERAL; /* PCRE2 refuses UCP together with LITERAL */
        textbuf_add(&b, pattern, len);
    } else if (translate(pattern, len, &b) != 0) {
        free(b.p);
        return glim_fail(err, GLIM_E_UNSUPPORTED, "tokenizer.json: regex too deeply nested or out of memory");
    }
    if (b.oom || !b.p) {
        free(b.p);
        return glim_fail(err, GLIM_E_NOMEM, "tokenizer: out of memory compiling a regex");
    }
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)b.p, b.n, opts, &code, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        glim_status s = glim_fail(err, GLIM_E_UNSUPPORTED,
                                  "tokenizer.json: pre-tokenizer regex does not compile at offset "
                                  "%zu of \"%.80s\": %s", (size_t)off, b.p, (const char *)msg);
        free(b.p);
        return s;
    }
    free(b.p);
    /* JIT is an optimisation: without it pcre2_match gives the same answers. */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    *out = re;
    return GLIM_OK;
}

static glim_status add_step(glim_tokenizer *tok, tok_step step, glim_error *err) {
    if (tok->n_steps >= TOK_MAX_STEPS) {
        pcre2_code_free(step.re);
        return glim_fail(err, GLIM_E_UNSUPPORTED, "tokenizer.json: more than %d pre-tokenizer steps",
                         TOK_MAX_STEPS);
    }
    tok->steps[tok->n_steps++] = step;
    return GLIM_OK;
}

static glim_status parse_split(glim_tokenizer *tok, json_t *pt, glim_error *err) {
    json_t *pattern = json_object_get(pt, "pattern");
    json_t *rx = json_object_get(pattern, "Regex");
    json_t *lit = json_object_get(pattern, "String");
    json_t *p = rx ? rx : lit;
    if (!json_is_string(p))
        return glim_fail(err, GLIM_E_FORMAT,
                         "tokenizer.json: Split pre-tokenizer: pattern must be {\"Regex\": ...} or "
                         "{\"String\": ...}");
    if (json_is_true(json_object_get(pt, "invert")))
        return glim_fail(err, GLIM_E_UNSUPPORTED, "tokenizer.json: Split pre-tokenizer: invert=true is not supported");
    static const struct { const char *name; tok_split_behavior b; } behaviors[] = {
        {"Isolated", SPLIT_ISOLATED}, {"Removed", SPLIT_REMOVED},
        {"MergedWithPrevious", SPLIT_MERGED_WITH_PREVIOUS}, {"MergedWithNext", SPLIT_MERGED_WITH_NEXT},
        {"Contiguous", SPLIT_CONTIGUOUS},
    };
    const char *bname = json_string_value(json_object_get(pt, "behavior"));
    tok_step step = {0};
    int found = 0;
    for (size_t i = 0; bname && i < sizeof behaviors / sizeof behaviors[0]; i++)
        if (!strcmp(bname, behaviors[i].name)) step.behavior = behaviors[i].b, found = 1;
    if (!found)
        return glim_fail(err, GLIM_E_FORMAT, "tokenizer.json: Split pre-tokenizer: unknown behavior \"%s\"",
                         bname ? bname : "(none)");
    glim_status s = tok_compile_regex(json_string_value(p), json_string_length(p), lit != NULL,
                                      &step.re, err);
    return s ? s : add_step(tok, step, err);
}

static glim_status parse_one(glim_tokenizer *tok, json_t *pt, int *byte_level, glim_error *err) {
    const char *type = json_string_value(json_object_get(pt, "type"));
    if (!type) return glim_fail(err, GLIM_E_FORMAT, "tokenizer.json: a pre-tokenizer has no type");
    if (!strcmp(type, "Sequence")) {
        json_t *list = json_object_get(pt, "pretokenizers");
        if (!json_is_array(list))
            return glim_fail(err, GLIM_E_FORMAT, "tokenizer.json: Sequence pre-tokenizer without a list");
        size_t i;
        json_t *sub;
        json_array_foreach(list, i, sub) {
            glim_status s = parse_one(tok, sub, byte_level, err);
            if (s) return s;
        }
        return GLIM_OK;
    }
    if (!strcmp(type, "Split")) return parse_split(tok, pt, err);
    if (!strcmp(type, "ByteLevel")) {
        tok_step step = {0};
        json_t *ur = json_object_get(pt, "use_regex");
        step.add_prefix_space = json_is_true(json_object_get(pt, "add_prefix_space"));
        step.behavior = SPLIT_ISOLATED;
        if (!ur || json_is_true(ur)) {
            glim_status s = tok_compile_regex(GPT2_PATTERN, strlen(GPT2_PATTERN), 0, &step.re, err);
            if (s) return s;
        }
        *byte_level = 1;
        if (!step.re && !step.add_prefix_space) return GLIM_OK; /* the byte mapping is implicit */
        return add_step(tok, step, err);
    }
    return glim_fail(err, GLIM_E_UNSUPPORTED,
                     "tokenizer.json: pre-tokenizer \"%s\" is not supported (Sequence, Split and "
                     "ByteLevel are)", type);
}

glim_status tok_parse_pre_tokenizer(glim_tokenizer *tok, const void *json, glim_error *err) {
    json_t *pt = (json_t *)json;
    int byte_level = 0;
    if (pt && !json_is_null(pt)) {
        glim_status s = parse_one(tok, pt, &byte_level, err);
        if (s) return s;
    }
    if (!byte_level)
        return glim_fail(err, GLIM_E_UNSUPPORTED,
                         "tokenizer.json: no ByteLevel pre-tokenizer; only byte-level BPE is supported");
    return GLIM_OK;
}
