/* tokenizer_load.c: reads a Hugging Face tokenizer.json into the byte-domain tables of
 * tokenizer.h: the BPE vocabulary (decoded from GPT-2 byte-level characters), merges (both the
 * "a b" string form and the ["a","b"] pair form), added tokens, the post-processor template and
 * the decoder. The pre-tokenizer lives in tokenizer_pre.c. Anything outside the byte-level BPE
 * family is refused with GLIM_E_UNSUPPORTED naming the field, never guessed at. */
#include <errno.h>
#include <pthread.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "tokenizer.h"
#include "tokenizer_json.h"

/* ---------------------------------------------------------------------------------------------
 * Byte-level characters: GPT-2 maps every byte to a printable code point; printable Latin-1
 * bytes map to themselves, the other 68 to U+0100 upwards in byte order. */

static int16_t char_to_byte[324]; /* code point -> byte, -1 if not a byte-level character */

static void build_byte_level(void) {
    int extra = 0;
    for (int i = 0; i < 324; i++) char_to_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        char_to_byte[printable ? b : 256 + extra++] = (int16_t)b;
    }
}

static void init_byte_level(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* loaders may run in several threads */
    pthread_once(&once, build_byte_level);
}

/* Decodes a UTF-8 byte-level string into raw bytes (out must hold n bytes). Returns the byte
 * count, or -1 if some character is not a byte-level character. */
static long byte_level_decode(const char *s, size_t n, unsigned char *out) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    long o = 0;
    while (i < n) {
        unsigned cp;
        if (p[i] < 0x80) {
            cp = p[i++];
        } else if ((p[i] & 0xE0) == 0xC0 && i + 1 < n) {
            cp = ((p[i] & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu);
            i += 2;
        } else {
            return -1; /* byte-level characters are all below U+0800 */
        }
        if (cp >= 324 || char_to_byte[cp] < 0) return -1;
        out[o++] = (unsigned char)char_to_byte[cp];
    }
    return o;
}

/* ---------------------------------------------------------------------------------------------
 * Hash tables */

uint64_t tok_hash_bytes(const unsigned char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    for (size_t i = 0; i < n; i++) w |= (uint64_t)s[i] << (8 * i);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 32;
    return h * 0x9E3779B97F4A7C15ull;
}

int32_t tok_vocab_find(const glim_tokenizer *tok, const unsigned char *s, size_t n) {
    uint64_t h = tok_hash_bytes(s, n);
    uint32_t tag = (uint32_t)(h >> 32), i = (uint32_t)h & tok->vmask;
    for (;;) {
        const tok_vslot *v = &tok->vslot[i];
        if (v->id < 0) return -1;
        if (v->tag == tag && v->len == n && !memcmp(tok->arena + v->off, s, n)) return v->id;
        i = (i + 1) & tok->vmask;
    }
}

static uint32_t table_size(size_t n) {
    uint32_t size = 16;
    while (size < 2 * n + 16) size <<= 1;
    return size;
}

static void vocab_insert(glim_tokenizer *tok, int32_t id) {
    const unsigned char *s = (const unsigned char *)tok->arena + tok->tok_off[id];
    uint64_t h = tok_hash_bytes(s, tok->tok_len[id]);
    uint32_t i = (uint32_t)h & tok->vmask;
    while (tok->vslot[i].id >= 0) i = (i + 1) & tok->vmask;
    tok->vslot[i] = (tok_vslot){(uint32_t)(h >> 32), id, tok->tok_off[id], tok->tok_len[id]};
}

static inline uint32_t merge_slot(uint64_t key, uint32_t mask) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

/* ---------------------------------------------------------------------------------------------
 * Loading */

typedef struct loader {
    glim_tokenizer *tok;
    size_t arena_cap;
    glim_error *err;
} loader;

static glim_status arena_add(loader *L, const void *bytes, size_t n, uint32_t *off) {
    glim_tokenizer *tok = L->tok;
    if (tok->arena_len + n > L->arena_cap) {
        size_t cap = L->arena_cap ? L->arena_cap * 2 : 1 << 20;
        while (cap < tok->arena_len + n) cap *= 2;
        char *a = realloc(tok->arena, cap);
        if (!a) return glim_fail(L->err, GLIM_E_NOMEM, "tokenizer: out of memory (%zu bytes)", cap);
        tok->arena = a;
        L->arena_cap = cap;
    }
    memcpy(tok->arena + tok->arena_len, bytes, n);
    *off = (uint32_t)tok->arena_len;
    tok->arena_len += n;
    return GLIM_OK;
}

static int json_bool(json_t *obj, const char *key, int dflt) {
    json_t *v = json_object_get(obj, key);
    return v && json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* ---- the vocabulary (walked in place by tokenizer_json.c) ---- */

typedef struct vocab_walk {
    loader *L;
    long long max_id;
    size_t n;
    unsigned char *buf;
    size_t cap;
    glim_status st;
} vocab_walk;

static int vocab_max_cb(void *ctx, const char *key, size_t len, long long id) {
    vocab_walk *w = ctx;
    if (id < 0 || id >= (1 << 30)) {
        w->st = glim_fail(w->L->err, GLIM_E_FORMAT,
                          "tokenizer.json: model.vocab[\"%.60s\"] = %lld: expected an id in [0, 2^30)", key, id);
        return 1;
    }
    if (id > w->max_id) w->max_id = id;
    w->n++;
    return 0;
}

static int vocab_add_cb(void *ctx, const char *key, size_t len, long long id64) {
    vocab_walk *w = ctx;
    glim_tokenizer *tok = w->L->tok;
    int32_t id = (int32_t)id64;
    if (tok->tok_flags[id] & TOK_IN_MODEL) {
        w->st = glim_fail(w->L->err, GLIM_E_FORMAT,
                          "tokenizer.json: model.vocab: id %d is used by two entries (\"%.60s\" and another)", id, key);
        return 1;
    }
    if (len > w->cap) {
        w->cap = len * 2 + 64;
        unsigned char *nb = realloc(w->buf, w->cap);
        if (!nb) {
            w->st = glim_fail(w->L->err, GLIM_E_NOMEM, "tokenizer: out of memory");
            return 1;
        }
        w->buf = nb;
    }
    long n = byte_level_decode(key, len, w->buf);
    unsigned char flags = TOK_IN_MODEL;
    if (n < 0) { /* not byte-level: keep its UTF-8 (the ByteLevel decoder does the same) */
        memcpy(w->buf, key, len);
        n = (long)len;
        flags |= TOK_RAW;
    }
    if ((w->st = arena_add(w->L, w->buf, (size_t)n, &tok->tok_off[id]))) return 1;
    tok->tok_len[id] = (uint32_t)n;
    tok->tok_flags[id] = flags;
    return 0;
}

/* Largest id of the vocabulary and the added tokens, and the vocabulary's entry count. */
static glim_status scan_ids(loader *L, tok_jspan vocab, json_t *added, size_t *n_entries) {
    vocab_walk w = {.L = L, .max_id = -1};
    int rc = tok_json_each_vocab(vocab, vocab_max_cb, &w);
    if (w.st) return w.st;
    if (rc) return glim_fail(L->err, GLIM_E_FORMAT, "tokenizer.json: model.vocab: every value must be an integer id");
    size_t i;
    json_t *v;
    json_array_foreach(added, i, v) {
        json_t *id = json_object_get(v, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= (1 << 30))
            return glim_fail(L->err, GLIM_E_FORMAT,
                             "tokenizer.json: added_tokens[%zu].id: expected an id in [0, 2^30)", i);
        if (json_integer_value(id) > w.max_id) w.max_id = json_integer_value(id);
    }
    if (w.max_id < 0) return glim_fail(L->err, GLIM_E_FORMAT, "tokenizer.json: the vocabulary is empty");
    L->tok->n_vocab = (int)w.max_id + 1;
    *n_entries = w.n;
    return GLIM_OK;
}

static glim_status load_vocab(loader *L, tok_jspan vocab, size_t n_entries) {
    glim_tokenizer *tok = L->tok;
    vocab_walk w = {.L = L};
    int rc = tok_json_each_vocab(vocab, vocab_add_cb, &w);
    free(w.buf);
    if (w.st) return w.st;
    if (rc) return glim_fail(L->err, GLIM_E_FORMAT, "tokenizer.json: model.vocab is malformed");
    tok->vmask = table_size(n_entries) - 1;
    tok->vslot = malloc(sizeof *tok->vslot * (tok->vmask + 1));
    if (!tok->vslot) return glim_fail(L->err, GLIM_E_NOMEM, "tokenizer: out of memory");
    for (uint32_t i = 0; i <= tok->vmask; i++) tok->vslot[i].id = -1;
    for (int id = 0; id < tok->n_vocab; id++) {
        if (!(tok->tok_flags[id] & TOK_IN_MODEL) || (tok->tok_flags[id] & TOK_RAW)) continue;
        const unsigned char *s = (const unsigned char *)tok->arena + tok->tok_off[id];
        if (tok_vocab_find(tok, s, tok->tok_len[id]) >= 0)
            return glim_fail(L->err, GLIM_E_FORMAT,
                             "tokenizer.json: model.vocab: two entries (one is id %d) decode to the same bytes", id);
        vocab_insert(tok, id);
        if (tok->tok_len[id] == 1) tok->byte_id[s[0]] = id;
    }
    return GLIM_OK;
}

/* ---- merges ---- */

typedef struct merge_walk {
    loader *L;
    size_t count;
    unsigned char *buf;
    size_t cap;
    glim_status st;
} merge_walk;

static int merge_count_cb(void *ctx, size_t index, const char *a, size_t alen, const char *b, size_t blen, int pair) {
    ((merge_walk *)ctx)->count++;
    return 0;
}

/* Looks up one side of a merge given in byte-level form. */
static int32_t merge_side(glim_tokenizer *tok, const char *s, size_t n, unsigned char *buf) {
    long len = byte_level_decode(s, n, buf);
    if (len < 0) return -1;
    return tok_vocab_find(tok, buf, (size_t)len);
}

static int merge_add_cb(void *ctx, size_t r, const char *a, size_t alen, const char *b, size_t blen, int pair) {
    merge_walk *w = ctx;
    glim_tokenizer *tok = w->L->tok;
    if (!pair) { /* "a b": exactly one space */
        const char *sp = memchr(a, ' ', alen);
        if (!sp || memchr(sp + 1, ' ', alen - (size_t)(sp + 1 - a))) {
            w->st = glim_fail(w->L->err, GLIM_E_FORMAT,
                              "tokenizer.json: model.merges[%zu]: \"%.60s\" is not two tokens separated by one space",
                              r, a);
            return 1;
        }
        b = sp + 1;
        blen = alen - (size_t)(b - a);
        alen = (size_t)(sp - a);
    }
    if (alen + blen > w->cap) {
        w->cap = 2 * (alen + blen) + 64;
        unsigned char *nb = realloc(w->buf, w->cap);
        if (!nb) {
            w->st = glim_fail(w->L->err, GLIM_E_NOMEM, "tokenizer: out of memory");
            return 1;
        }
        w->buf = nb;
    }
    int32_t left = merge_side(tok, a, alen, w->buf), right = merge_side(tok, b, blen, w->buf);
    if (left < 0 || right < 0) {
        size_t bad_len = left < 0 ? alen : blen;
        w->st = glim_fail(w->L->err, GLIM_E_FORMAT,
                          "tokenizer.json: model.merges[%zu]: token \"%.*s\" is not in the vocabulary", r,
                          (int)(bad_len > 60 ? 60 : bad_len), left < 0 ? a : b);
        return 1;
    }
    size_t ll = tok->tok_len[left], rl = tok->tok_len[right];
    memcpy(w->buf, tok->arena + tok->tok_off[left], ll);
    memcpy(w->buf + ll, tok->arena + tok->tok_off[right], rl);
    int32_t merged = tok_vocab_find(tok, w->buf, ll + rl);
    if (merged < 0) {
        w->st = glim_fail(w->L->err, GLIM_E_FORMAT,
                          "tokenizer.json: model.merges[%zu]: the merge of \"%.*s\" and \"%.*s\" is not in the "
                          "vocabulary", r, (int)(alen > 40 ? 40 : alen), a, (int)(blen > 40 ? 40 : blen), b);
        return 1;
    }
    uint64_t key = (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
    uint32_t i = merge_slot(key, tok->mmask);
    while (tok->merge[i].key && tok->merge[i].key != key) i = (i + 1) & tok->mmask;
    if (!tok->merge[i].key) /* a repeated merge keeps its first (lowest) rank */
        tok->merge[i] = (tok_merge){key, (uint32_t)r, merged};
    return 0;
}

static glim_status load_merges(loader *L, tok_jspan merges) {
    glim_tokenizer *tok = L->tok;
    merge_walk w = {.L = L};
    if (tok_json_each_merge(merges, merge_count_cb, &w))
        return glim_fail(L->err, GLIM_E_FORMAT,
                         "tokenizer.json: model.merges: expected an array of \"a b\" strings or [\"a\", \"b\"] pairs");
    tok->n_merges = w.count;
    tok->mmask = table_size(w.count) - 1;
    tok->merge = calloc((size_t)tok->mmask + 1, sizeof *tok->merge);
    if (!tok->merge) return glim_fail(L->err, GLIM_E_NOMEM, "tokenizer: out of memory for %zu merges", w.count);
    int rc = tok_json_each_merge(merges, merge_add_cb, &w);
    free(w.buf);
    if (w.st) return w.st;
    return rc ? glim_fail(L->err, GLIM_E_FORMAT, "tokenizer.json: model.merges is malformed") : GLIM_OK;
}

static glim_status trie_add(loader *L, const unsigned char *s, size_t n, int32_t id) {
    glim_tokenizer *tok = L->tok;
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t c = tok->trie[node].first_child;
        while (c >= 0 && tok->trie[c].byte != s[i]) c = tok->trie[c].next_sibling;
        if (c < 0) {
            tok_trie_node *t = realloc(tok->trie, sizeof *t * (size_t)(tok->n_trie + 1));
            if (!t) return glim_fail(L->err, GLIM_E_NOMEM, "tokenizer: out of memory");
            tok->trie = t;
            c = tok->n_trie++;
            t[c].first_child = -1;
            t[c].token = -1;
            t[c].byte = s[i];
            t[c].next_sibling = t[node].first_child;
            t[node].first_child = c;
        }
        node = c;
    }
    tok->trie[node].token = id;
    return GLIM_OK;
}

static glim_status load_added(loader *L, json_t *added) {
    glim_tokenizer *tok = L->tok;
    size_t n = json_array_size(added);
    tok->added = calloc(n ? n : 1, sizeof *tok->added);
    tok->trie = malloc(sizeof *tok->trie);
    if (!tok->added || !tok->trie) return glim_fail(L->err, GLIM_E_NOMEM, "tokenizer: out of memory");
    tok->trie[0] = (tok_trie_node){-1, -1, -1, 0};
    tok->n_trie = 1;
    size_t i;
    json_t *a;
    json_array_foreach(added, i, a) {
        json_t *content = json_object_get(a, "content");
        if (!json_is_string(content) || json_string_length(content) == 0)
            return glim_fail(L->err, GLIM_E_FORMAT,
                             "tokenizer.json: added_tokens[%zu].content: expected a non-empty string", i);
        if (json_bool(a, "single_word", 0))
            return glim_fail(L->err, GLIM_E_UNSUPPORTED,
                             "tokenizer.json: added_tokens[%zu] (\"%.60s\"): single_word=true is "
                             "not supported", i, json_string_value(content));
        int32_t id = (int32_t)json_integer_value(json_object_get(a, "id"));
        tok_added *t = &tok->added[tok->n_added];
        t->id = id;
        t->special = (unsigned char)json_bool(a, "special", 0);
        t->lstrip = (unsigned char)json_bool(a, "lstrip", 0);
        t->rstrip = (unsigned char)json_bool(a, "rstrip", 0);
        if (!t->special) tok->any_nonspecial = 1;
        const unsigned char *s = (const unsigned char *)json_string_value(content);
        size_t len = json_string_length(content);
        /* An id that is also a model entry keeps the model's bytes (the vocabulary hash is keyed
         * by them); in real files the two spell the same text. */
        glim_status st = GLIM_OK;
        if (!(tok->tok_flags[id] & TOK_IN_MODEL)) {
            if ((st = arena_add(L, s, len, &tok->tok_off[id]))) return st;
            tok->tok_len[id] = (uint32_t)len;
        }
        tok->tok_flags[id] = (unsigned char)((tok->tok_flags[id] & ~TOK_RAW) | TOK_ADDED |
                                             (t->special ? TOK_SPECIAL : 0));
        tok->added_index[id] = tok->n_added++;
        tok->first_byte[s[0]] = 1;
        if ((st = trie_add(L, s, len, id))) return st;
    }
    return GLIM_OK;
}

/* The post-processor: which ids go before and after the text ("single" template). */
static glim_status template_item(loader *L, json_t *item, json_t *specials, int *seen_seq) {
    glim_tokenizer *tok = L->tok;
    json_t *st = json_object_get(item, "SpecialToken");
    if (json_object_get(item, "Sequence")) {
        *seen_seq = 1;
        return GLIM_OK;
    }
    const char *name = json_string_value(json_object_get(st, "id"));
    json_t *ids = json_object_get(json_object_get(specials, name ? name : ""), "ids");
    if (!name || !json_is_array(ids))
        return glim_fail(L->err, GLIM_E_FORMAT,
                         "tokenizer.json: post_processor: template item names special token "
                         "\"%s\" that special_tokens does not define", name ? name : "?");
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) {
        int32_t *dst = *seen_seq ? tok->suffix : tok->prefix;
        int *n = *seen_seq ? &tok->n_suffix : &tok->n_prefix;
        int32_t id = (int32_t)json_integer_value(v);
        if (*n >= TOK_MAX_TEMPLATE || id < 0 || id >= tok->n_vocab || !tok->tok_flags[id])
            return glim_fail(L->err, GLIM_E_FORMAT,
                             "tokenizer.json: post_processor: special token \"%s\" has id %d, "
                             "not in the vocabulary (or too many template tokens)", name, id);
        dst[(*n)++] = id;
    }
    return GLIM_OK;
}

static glim_status load_post_processor(loader *L, json_t *pp) {
    if (!pp || json_is_null(pp)) return GLIM_OK;
    const char *type = json_string_value(json_object_get(pp, "type"));
    if (!type) return glim_fail(L->err, GLIM_E_FORMAT, "tokenizer.json: post_processor has no type");
    if (!strcmp(type, "ByteLevel")) return GLIM_OK; /* offsets only: no effect on ids */
    if (!strcmp(type, "Sequence")) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(pp, "processors"), i, p) {
            glim_status s = load_post_processor(L, p);
            if (s) return s;
        }
        return GLIM_OK;
    }
    if (!strcmp(type, "TemplateProcessing")) {
        if (L->tok->n_prefix || L->tok->n_suffix)
            return glim_fail(L->err, GLIM_E_UNSUPPORTED,
                             "tokenizer.json: post_processor: more than one TemplateProcessing");
        json_t *single = json_object_get(pp, "single");
        json_t *specials = json_object_get(pp, "special_tokens");
        if (!json_is_array(single))
            return glim_fail(L->err, GLIM_E_FORMAT,
                             "tokenizer.json: post_processor.single: expected an array");
        int seen_seq = 0;
        size_t i;
        json_t *item;
        json_array_foreach(single, i, item) {
            glim_status s = template_item(L, item, specials, &seen_seq);
            if (s) return s;
        }
        if (!seen_seq)
            return glim_fail(L->err, GLIM_E_FORMAT,
                             "tokenizer.json: post_processor.single has no $A sequence");
        return GLIM_OK;
    }
    return glim_fail(L->err, GLIM_E_UNSUPPORTED,
                     "tokenizer.json: post_processor type \"%s\" is not supported (TemplateProcessing, "
                     "ByteLevel, Sequence are)", type);
}

static glim_status check_model(loader *L, json_t *model) {
    const char *type = json_string_value(json_object_get(model, "type"));
    if (type && strcmp(type, "BPE"))
        return glim_fail(L->err, GLIM_E_UNSUPPORTED,
                         "tokenizer.json: model.type is \"%s\"; only byte-level \"BPE\" is supported", type);
    if (!json_is_object(json_object_get(model, "vocab")) || !json_is_array(json_object_get(model, "merges")))
        return glim_fail(L->err, GLIM_E_FORMAT,
                         "tokenizer.json: model needs a \"vocab\" object and a \"merges\" array");
    if (json_bool(model, "byte_fallback", 0))
        return glim_fail(L->err, GLIM_E_UNSUPPORTED, "tokenizer.json: model.byte_fallback=true is not supported");
    json_t *d = json_object_get(model, "dropout");
    if (d && json_is_number(d) && json_number_value(d) > 0)
        return glim_fail(L->err, GLIM_E_UNSUPPORTED, "tokenizer.json: model.dropout is not supported");
    const char *fields[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const char *s = json_string_value(json_object_get(model, fields[i]));
        if (s && *s)
            return glim_fail(L->err, GLIM_E_UNSUPPORTED, "tokenizer.json: model.%s is not supported",
                             fields[i]);
    }
    return GLIM_OK;
}

static glim_status check_top(loader *L, json_t *root) {
    json_t *norm = json_object_get(root, "normalizer");
    if (norm && !json_is_null(norm))
        return glim_fail(L->err, GLIM_E_UNSUPPORTED,
                         "tokenizer.json: normalizer \"%s\" is not supported (byte-level BPE "
                         "tokenizers have none)", json_string_value(json_object_get(norm, "type")) ?
                         json_string_value(json_object_get(norm, "type")) : "?");
    json_t *dec = json_object_get(root, "decoder");
    const char *type = json_string_value(json_object_get(dec, "type"));
    if (!type || strcmp(type, "ByteLevel"))
        return glim_fail(L->err, GLIM_E_UNSUPPORTED,
                         "tokenizer.json: decoder \"%s\" is not supported (expected ByteLevel)",
                         type ? type : "null");
    return GLIM_OK;
}

static glim_status load_root(loader *L, json_t *root, tok_jspan vocab, tok_jspan merges) {
    glim_tokenizer *tok = L->tok;
    if (!json_is_object(root))
        return glim_fail(L->err, GLIM_E_FORMAT, "tokenizer.json: the top level is not an object");
    json_t *model = json_object_get(root, "model");
    json_t *added = json_object_get(root, "added_tokens");
    if (added && !json_is_null(added) && !json_is_array(added))
        return glim_fail(L->err, GLIM_E_FORMAT, "tokenizer.json: added_tokens is not an array");
    glim_status s;
    if ((s = check_model(L, model)) || (s = check_top(L, root))) return s;
    json_t *empty = json_array();
    json_t *added_list = json_is_array(added) ? added : empty;
    size_t n_entries = 0;
    if ((s = scan_ids(L, vocab, added_list, &n_entries))) {
        json_decref(empty);
        return s;
    }
    size_t nv = (size_t)tok->n_vocab;
    tok->tok_off = calloc(nv, sizeof(uint32_t));
    tok->tok_len = calloc(nv, sizeof(uint32_t));
    tok->tok_flags = calloc(nv, 1);
    tok->added_index = malloc(nv * sizeof(int32_t));
    if (!tok->tok_off || !tok->tok_len || !tok->tok_flags || !tok->added_index) {
        json_decref(empty);
        return glim_fail(L->err, GLIM_E_NOMEM, "tokenizer: out of memory for %zu tokens", nv);
    }
    memset(tok->added_index, 0xFF, nv * sizeof(int32_t));
    for (int b = 0; b < 256; b++) tok->byte_id[b] = -1;
    tok->ignore_merges = json_bool(model, "ignore_merges", 0);
    tok->unk_id = -1;
    s = load_vocab(L, vocab, n_entries);
    if (!s) s = load_merges(L, merges);
    if (!s) s = load_added(L, added_list);
    json_decref(empty);
    if (s) return s;
    const char *unk = json_string_value(json_object_get(model, "unk_token"));
    if (unk) tok->unk_id = glim_tokenizer_find(tok, unk);
    if ((s = tok_parse_pre_tokenizer(tok, json_object_get(root, "pre_tokenizer"), L->err))) return s;
    return load_post_processor(L, json_object_get(root, "post_processor"));
}

/* Parses the document: the fast path reads model.vocab / model.merges in place and gives jansson
 * only the rest; if it does not apply, jansson parses everything (and names any syntax error),
 * and the two values are re-serialised for the same in-place readers. */
static glim_status parse_document(const char *json, size_t len, json_t **root, tok_jspan *vocab, tok_jspan *merges,
                                  char **owned, glim_error *err) {
    json_error_t jerr;
    char *skel;
    size_t skel_len, fail_at;
    *owned = NULL;
    if (tok_json_locate(json, len, vocab, merges, &skel, &skel_len, &fail_at) == 0) {
        *root = json_loadb(skel, skel_len, 0, &jerr);
        free(skel);
        if (*root) return GLIM_OK;
    }
    *root = json_loadb(json, len, 0, &jerr);
    if (!*root)
        return glim_fail(err, GLIM_E_FORMAT, "tokenizer.json: bad JSON at line %d column %d: %s", jerr.line,
                         jerr.column, jerr.text);
    json_t *model = json_object_get(*root, "model");
    char *v = json_dumps(json_object_get(model, "vocab"), JSON_ENCODE_ANY | JSON_COMPACT);
    char *m = json_dumps(json_object_get(model, "merges"), JSON_ENCODE_ANY | JSON_COMPACT);
    size_t vl = v ? strlen(v) : 0, ml = m ? strlen(m) : 0;
    *owned = malloc(vl + ml + 2);
    if (*owned) {
        memcpy(*owned, v ? v : "", vl);
        memcpy(*owned + vl, m ? m : "", ml);
        *vocab = (tok_jspan){*owned, vl};
        *merges = (tok_jspan){*owned + vl, ml};
    }
    free(v);
    free(m);
    return *owned ? GLIM_OK : glim_fail(err, GLIM_E_NOMEM, "tokenizer: out of memory");
}

glim_status glim_tokenizer_load_json(const char *json, size_t len, glim_tokenizer **out,
                                     glim_error *err) {
    *out = NULL;
    init_byte_level();
    json_t *root;
    tok_jspan vocab, merges;
    char *owned;
    glim_status s = parse_document(json, len, &root, &vocab, &merges, &owned, err);
    if (s) return s;
    glim_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) {
        json_decref(root);
        free(owned);
        return glim_fail(err, GLIM_E_NOMEM, "tokenizer: out of memory");
    }
    loader L = {tok, 0, err};
    s = load_root(&L, root, vocab, merges);
    json_decref(root);
    free(owned);
    if (s) {
        glim_tokenizer_free(tok);
        return s;
    }
    *out = tok;
    return GLIM_OK;
}

glim_status glim_tokenizer_load(const char *path, glim_tokenizer **out, glim_error *err) {
    *out = NULL;
    struct stat st;
    char file[4096];
    if (stat(path, &st) != 0)
        return glim_fail(err, GLIM_E_IO, "tokenizer: cannot open %s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        snprintf(file, sizeof file, "%s/tokenizer.json", path);
        if (stat(file, &st) != 0)
            return glim_fail(err, GLIM_E_IO, "tokenizer: %s has no tokenizer.json: %s", path, strerror(errno));
    } else {
        snprintf(file, sizeof file, "%s", path);
    }
    FILE *f = fopen(file, "rb");
    if (!f) return glim_fail(err, GLIM_E_IO, "tokenizer: cannot open %s: %s", file, strerror(errno));
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        fclose(f);
        return glim_fail(err, GLIM_E_NOMEM, "tokenizer: out of memory reading %s", file);
    }
    size_t got = fread(buf, 1, (size_t)st.st_size, f);
    fclose(f);
    if (got != (size_t)st.st_size) {
        free(buf);
        return glim_fail(err, GLIM_E_IO, "tokenizer: read %zu of %lld bytes of %s", got,
                         (long long)st.st_size, file);
    }
    glim_status s = glim_tokenizer_load_json(buf, got, out, err);
    free(buf);
    if (s) glim_fail_context(err, "%s: ", file);
    return s;
}

void glim_tokenizer_free(glim_tokenizer *tok) {
    if (!tok) return;
    free(tok->tok_off);
    free(tok->tok_len);
    free(tok->tok_flags);
    free(tok->arena);
    free(tok->vslot);
    free(tok->merge);
    free(tok->trie);
    free(tok->added);
    free(tok->added_index);
    for (int i = 0; i < tok->n_steps; i++) pcre2_code_free(tok->steps[i].re);
    free(tok);
}

int glim_tokenizer_n_vocab(const glim_tokenizer *tok) { return tok->n_vocab; }

int glim_tokenizer_bos_id(const glim_tokenizer *tok) { return tok->n_prefix ? tok->prefix[0] : -1; }

int glim_tokenizer_is_special(const glim_tokenizer *tok, int32_t id) {
    return id >= 0 && id < tok->n_vocab && (tok->tok_flags[id] & TOK_SPECIAL);
}

int32_t glim_tokenizer_find(const glim_tokenizer *tok, const char *text) {
    size_t n = strlen(text);
    /* added tokens by content */
    int32_t node = 0;
    for (size_t i = 0; i < n && node >= 0; i++) {
        int32_t c = tok->trie ? tok->trie[node].first_child : -1;
        while (c >= 0 && tok->trie[c].byte != (unsigned char)text[i]) c = tok->trie[c].next_sibling;
        node = c;
    }
    if (n && node > 0 && tok->trie[node].token >= 0) return tok->trie[node].token;
    /* model entries by their byte-level spelling */
    init_byte_level();
    unsigned char *buf = malloc(n + 1);
    if (!buf) return -1;
    long len = byte_level_decode(text, n, buf);
    int32_t id = len >= 0 ? tok_vocab_find(tok, buf, (size_t)len) : -1;
    free(buf);
    return id;
}
