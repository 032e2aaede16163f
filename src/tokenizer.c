/* tokenizer.c: encoding text into ids with a loaded tokenizer.json, exactly as Hugging Face
 * tokenizers does for the byte-level BPE family:
 *   1. added tokens are cut out first (leftmost-longest; special ones only when asked),
 *   2. the rest is split by the pre-tokenizer steps (PCRE2 regexes, tokenizer_pre.c),
 *   3. each piece goes through BPE: with ignore_merges a piece that is itself a vocabulary entry
 *      is taken whole; otherwise the lowest-ranked adjacent pair is merged first (leftmost on
 *      ties), with a heap so a long piece costs O(n log n),
 *   4. the post-processor template adds BOS (and whatever else it names).
 * Input may be invalid UTF-8: the regexes run on the valid stretches, and each run of bytes
 * that starts no valid character is one piece on its own, so every byte survives
 * (decode(encode(x)) == x). Hugging Face itself only accepts valid UTF-8. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tokenizer.h"
#include "utf8.h"

/* ---------------------------------------------------------------------------------------------
 * Token vectors */

glim_status glim_tokens_push(glim_tokens *t, int32_t id, glim_error *err) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        int32_t *p = realloc(t->ids, cap * sizeof *p);
        if (!p) return glim_fail(err, GLIM_E_NOMEM, "tokens: out of memory for %zu ids", cap);
        t->ids = p;
        t->cap = cap;
    }
    t->ids[t->n++] = id;
    return GLIM_OK;
}

void glim_tokens_free(glim_tokens *t) {
    free(t->ids);
    t->ids = NULL;
    t->n = t->cap = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Encoding state of one call (the tokenizer itself stays read-only) */

typedef struct heap_entry {
    uint64_t key; /* rank << 32 | position of the left symbol */
    int32_t new_id;
} heap_entry;

/* Per-call cache of BPE results for long inputs, where the same words come back often. */
typedef struct cache_entry {
    uint64_t hash;
    const unsigned char *piece; /* points into the caller's text (valid during the call) */
    uint32_t len, ids_off, n_ids;
} cache_entry;

#define CACHE_SLOTS 4096
#define CACHE_MIN_TEXT 4096          /* shorter texts gain nothing from a cache */
#define CACHE_MAX_IDS (1u << 20)     /* stop caching beyond 4 MiB of ids */

typedef struct enc {
    const glim_tokenizer *tok;
    glim_tokens *out;
    glim_error *err;
    glim_status st;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit_stack;
    int32_t *sym, *prev, *next;
    size_t sym_cap;
    heap_entry *heap;
    size_t heap_n, heap_cap;
    cache_entry *cache;      /* NULL: no cache for this call */
    int32_t *cache_ids;
    uint32_t cache_n, cache_cap;
} enc;

static void emit(enc *e, int32_t id) {
    if (e->st) return;
    e->st = glim_tokens_push(e->out, id, e->err);
}

static int merge_lookup(const glim_tokenizer *tok, int32_t a, int32_t b, uint32_t *rank, int32_t *new_id) {
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & tok->mmask;
    for (;;) {
        const tok_merge *m = &tok->merge[i];
        if (!m->key) return 0;
        if (m->key == key) {
            *rank = m->rank;
            *new_id = m->new_id;
            return 1;
        }
        i = (i + 1) & tok->mmask;
    }
}

static void heap_push(enc *e, uint32_t rank, uint32_t pos, int32_t new_id) {
    if (e->heap_n == e->heap_cap) {
        size_t cap = e->heap_cap ? e->heap_cap * 2 : 256;
        heap_entry *h = realloc(e->heap, cap * sizeof *h);
        if (!h) {
            if (!e->st) e->st = glim_fail(e->err, GLIM_E_NOMEM, "tokenizer: out of memory (BPE heap)");
            return;
        }
        e->heap = h;
        e->heap_cap = cap;
    }
    heap_entry x = {((uint64_t)rank << 32) | pos, new_id};
    size_t i = e->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (e->heap[parent].key <= x.key) break;
        e->heap[i] = e->heap[parent];
        i = parent;
    }
    e->heap[i] = x;
}

static heap_entry heap_pop(enc *e) {
    heap_entry top = e->heap[0], last = e->heap[--e->heap_n];
    size_t i = 0, n = e->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && e->heap[c + 1].key < e->heap[c].key) c++;
        if (last.key <= e->heap[c].key) break;
        e->heap[i] = e->heap[c];
        i = c;
    }
    if (n) e->heap[i] = last;
    return top;
}

static int grow_symbols(enc *e, size_t n) {
    if (n <= e->sym_cap) return 1;
    size_t cap = n * 2;
    int32_t *a = realloc(e->sym, cap * sizeof *a);
    if (a) e->sym = a;
    int32_t *b = a ? realloc(e->prev, cap * sizeof *b) : NULL;
    if (b) e->prev = b;
    int32_t *c = b ? realloc(e->next, cap * sizeof *c) : NULL;
    if (c) e->next = c;
    if (!c) {
        if (!e->st) e->st = glim_fail(e->err, GLIM_E_NOMEM, "tokenizer: out of memory (BPE of %zu bytes)", n);
        return 0;
    }
    e->sym_cap = cap;
    return 1;
}

static void try_pair(enc *e, int32_t left_pos) {
    int32_t right_pos = e->next[left_pos];
    uint32_t rank;
    int32_t new_id;
    if (right_pos >= 0 && merge_lookup(e->tok, e->sym[left_pos], e->sym[right_pos], &rank, &new_id))
        heap_push(e, rank, (uint32_t)left_pos, new_id);
}

static void bpe(enc *e, const unsigned char *s, size_t n);
static void cache_store(enc *e, cache_entry *ce, const unsigned char *s, size_t n, size_t first);

/* The model on one pre-token (raw bytes). */
static void model_piece(enc *e, const unsigned char *s, size_t n) {
    const glim_tokenizer *tok = e->tok;
    if (n == 0 || e->st) return;
    if (tok->ignore_merges || n == 1) {
        int32_t id = tok_vocab_find(tok, s, n);
        if (id >= 0) {
            emit(e, id);
            return;
        }
    }
    cache_entry *ce = NULL;
    if (e->cache) {
        uint64_t h = tok_hash_bytes(s, n);
        ce = &e->cache[h & (CACHE_SLOTS - 1)];
        if (ce->piece && ce->hash == h && ce->len == n && !memcmp(ce->piece, s, n)) {
            for (uint32_t i = 0; i < ce->n_ids; i++) emit(e, e->cache_ids[ce->ids_off + i]);
            return;
        }
        ce->hash = h;
        ce->piece = NULL; /* filled below once the result is stored */
    }
    size_t first_out = e->out->n;
    bpe(e, s, n);
    if (ce && !e->st) cache_store(e, ce, s, n, first_out);
}

/* Remembers the ids BPE just appended for piece s. */
static void cache_store(enc *e, cache_entry *ce, const unsigned char *s, size_t n, size_t first) {
    uint32_t k = (uint32_t)(e->out->n - first);
    if (e->cache_n + k > CACHE_MAX_IDS) return;
    if (e->cache_n + k > e->cache_cap) {
        uint32_t cap = (e->cache_n + k) * 2 + 1024;
        int32_t *p = realloc(e->cache_ids, cap * sizeof *p);
        if (!p) return; /* a cache miss is harmless */
        e->cache_ids = p;
        e->cache_cap = cap;
    }
    memcpy(e->cache_ids + e->cache_n, e->out->ids + first, k * sizeof(int32_t));
    ce->piece = s;
    ce->len = (uint32_t)n;
    ce->ids_off = e->cache_n;
    ce->n_ids = k;
    e->cache_n += k;
}

/* Byte-pair merging of one piece: lowest rank first, leftmost on ties. */
static void bpe(enc *e, const unsigned char *s, size_t n) {
    const glim_tokenizer *tok = e->tok;
    if (!grow_symbols(e, n)) return;
    int32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = tok->byte_id[s[i]];
        if (id < 0) id = tok->unk_id;
        if (id < 0) continue; /* no such byte and no unk: dropped, as Hugging Face does */
        if (id == tok->unk_id && m > 0 && e->sym[m - 1] == id) continue; /* fuse unk */
        e->sym[m++] = id;
    }
    for (int32_t i = 0; i < m; i++) {
        e->prev[i] = i - 1;
        e->next[i] = i + 1 < m ? i + 1 : -1;
    }
    e->heap_n = 0;
    for (int32_t i = 0; i + 1 < m; i++) try_pair(e, i);
    while (e->heap_n && !e->st) {
        heap_entry top = heap_pop(e);
        int32_t pos = (int32_t)(top.key & 0xFFFFFFFFu);
        int32_t nx = e->next[pos];
        uint32_t rank;
        int32_t new_id;
        if (e->sym[pos] < 0 || nx < 0) continue;
        if (!merge_lookup(tok, e->sym[pos], e->sym[nx], &rank, &new_id) || new_id != top.new_id)
            continue; /* stale: one side was merged away since this pair was queued */
        e->sym[pos] = new_id;
        e->sym[nx] = -1;
        e->next[pos] = e->next[nx];
        if (e->next[nx] >= 0) e->prev[e->next[nx]] = pos;
        if (e->prev[pos] >= 0) try_pair(e, e->prev[pos]);
        try_pair(e, pos);
    }
    for (int32_t i = m ? 0 : -1; i >= 0; i = e->next[i]) emit(e, e->sym[i]);
}

/* ---------------------------------------------------------------------------------------------
 * Pre-tokenization */

static void pre_tokenize(enc *e, int k, const unsigned char *s, size_t n);

static int find_match(enc *e, const tok_step *step, const unsigned char *s, size_t n, size_t off,
                      size_t *ms, size_t *me) {
    int rc = pcre2_match(step->re, s, n, off, PCRE2_NO_UTF_CHECK, e->md, e->mctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !e->jit_stack) {
        /* A long run that the JIT's default 32 KiB stack cannot hold: retry with a big one. */
        e->jit_stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, NULL);
        e->mctx = pcre2_match_context_create(NULL);
        if (e->jit_stack && e->mctx) {
            pcre2_jit_stack_assign(e->mctx, NULL, e->jit_stack);
            rc = pcre2_match(step->re, s, n, off, PCRE2_NO_UTF_CHECK, e->md, e->mctx);
        }
    }
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc < 0) {
        PCRE2_UCHAR msg[200];
        pcre2_get_error_message(rc, msg, sizeof msg);
        if (!e->st)
            e->st = glim_fail(e->err, GLIM_E_ARG, "tokenizer: pre-tokenizer regex failed at byte %zu: %s",
                              off, (const char *)msg);
        return 0;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
    *ms = ov[0];
    *me = ov[1];
    return 1;
}

static void split_step(enc *e, int k, const unsigned char *s, size_t n) {
    const tok_step *step = &e->tok->steps[k];
    size_t off = 0, gap = 0;       /* gap: start of the text not matched yet */
    size_t run_s = 0, run_e = 0;   /* Contiguous: pending run of adjacent matches */
    int run = 0;
    size_t next_start = 0;         /* MergedWithNext: start of the current piece */
    while (off < n && !e->st) {
        size_t ms, me;
        if (!find_match(e, step, s, n, off, &ms, &me)) break;
        if (me == ms) { /* empty match: not a split point; step over one character */
            int len = utf8_char((const char *)s + ms, n - ms, NULL);
            off = ms + (size_t)(len ? len : 1);
            continue;
        }
        switch (step->behavior) {
        case SPLIT_ISOLATED:
            pre_tokenize(e, k + 1, s + gap, ms - gap);
            pre_tokenize(e, k + 1, s + ms, me - ms);
            break;
        case SPLIT_REMOVED:
            pre_tokenize(e, k + 1, s + gap, ms - gap);
            break;
        case SPLIT_MERGED_WITH_PREVIOUS:
            pre_tokenize(e, k + 1, s + gap, me - gap);
            break;
        case SPLIT_MERGED_WITH_NEXT:
            pre_tokenize(e, k + 1, s + next_start, ms - next_start);
            next_start = ms;
            break;
        case SPLIT_CONTIGUOUS:
            if (run && ms == run_e) {
                run_e = me;
            } else {
                if (run) pre_tokenize(e, k + 1, s + run_s, run_e - run_s);
                pre_tokenize(e, k + 1, s + gap, ms - gap);
                run = 1, run_s = ms, run_e = me;
            }
            break;
        }
        gap = off = me;
    }
    if (step->behavior == SPLIT_MERGED_WITH_NEXT) {
        pre_tokenize(e, k + 1, s + next_start, n - next_start);
        return;
    }
    if (run) pre_tokenize(e, k + 1, s + run_s, run_e - run_s);
    pre_tokenize(e, k + 1, s + gap, n - gap);
}

static void pre_tokenize(enc *e, int k, const unsigned char *s, size_t n) {
    if (n == 0 || e->st) return;
    if (k == e->tok->n_steps) {
        model_piece(e, s, n);
        return;
    }
    const tok_step *step = &e->tok->steps[k];
    if (step->add_prefix_space && s[0] != ' ') {
        unsigned char *p = malloc(n + 1);
        if (!p) {
            e->st = glim_fail(e->err, GLIM_E_NOMEM, "tokenizer: out of memory");
            return;
        }
        p[0] = ' ';
        memcpy(p + 1, s, n);
        if (step->re) split_step(e, k, p, n + 1);
        else pre_tokenize(e, k + 1, p, n + 1);
        free(p);
        return;
    }
    if (step->re) split_step(e, k, s, n);
    else pre_tokenize(e, k + 1, s, n);
}

/* Text between added tokens: valid UTF-8 goes through the pre-tokenizer, each run of invalid
 * bytes is a piece of its own. */
static void encode_text(enc *e, const unsigned char *s, size_t n) {
    while (n && !e->st) {
        size_t v = utf8_valid_prefix((const char *)s, n);
        pre_tokenize(e, 0, s, v);
        s += v;
        n -= v;
        size_t bad = 0;
        while (bad < n && utf8_char((const char *)s + bad, n - bad, NULL) == 0) bad++;
        model_piece(e, s, bad);
        s += bad;
        n -= bad;
    }
}

/* The added token that starts at s (longest one), or -1; its length in *len. */
static int32_t match_added(const glim_tokenizer *tok, const unsigned char *s, size_t n,
                           int parse_special, size_t *len) {
    int32_t node = 0, best = -1;
    for (size_t i = 0; i < n; i++) {
        int32_t c = tok->trie[node].first_child;
        while (c >= 0 && tok->trie[c].byte != s[i]) c = tok->trie[c].next_sibling;
        if (c < 0) break;
        node = c;
        int32_t id = tok->trie[node].token;
        if (id >= 0 && (parse_special || !(tok->tok_flags[id] & TOK_SPECIAL))) {
            best = id;
            *len = i + 1;
        }
    }
    return best;
}

static int is_ascii_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

glim_status glim_tokenize(const glim_tokenizer *tok, const char *text, size_t len, unsigned flags,
                          glim_tokens *out, glim_error *err) {
    if (!text && len) return glim_fail(err, GLIM_E_ARG, "tokenize: text is NULL with length %zu", len);
    enc e = {.tok = tok, .out = out, .err = err};
    e.md = pcre2_match_data_create(1, NULL);
    if (!e.md) return glim_fail(err, GLIM_E_NOMEM, "tokenizer: out of memory");
    if (len >= CACHE_MIN_TEXT) e.cache = calloc(CACHE_SLOTS, sizeof *e.cache); /* NULL: no cache */
    if (flags & GLIM_TOK_ADD_SPECIAL)
        for (int i = 0; i < tok->n_prefix; i++) emit(&e, tok->prefix[i]);
    const unsigned char *s = (const unsigned char *)text;
    int parse_special = (flags & GLIM_TOK_PARSE_SPECIAL) != 0;
    size_t seg = 0;
    if (tok->n_added && (parse_special || tok->any_nonspecial)) {
        for (size_t i = 0; i < len && !e.st;) {
            size_t mlen = 0;
            int32_t id = tok->first_byte[s[i]] ? match_added(tok, s + i, len - i, parse_special, &mlen) : -1;
            if (id < 0) {
                i++;
                continue;
            }
            const tok_added *a = &tok->added[tok->added_index[id]];
            size_t end = i;
            if (a->lstrip) while (end > seg && is_ascii_space(s[end - 1])) end--;
            encode_text(&e, s + seg, end - seg);
            emit(&e, id);
            i += mlen;
            if (a->rstrip) while (i < len && is_ascii_space(s[i])) i++;
            seg = i;
        }
    }
    encode_text(&e, s + seg, len - seg);
    if (flags & GLIM_TOK_ADD_SPECIAL)
        for (int i = 0; i < tok->n_suffix; i++) emit(&e, tok->suffix[i]);
    pcre2_match_data_free(e.md);
    pcre2_match_context_free(e.mctx);
    pcre2_jit_stack_free(e.jit_stack);
    free(e.sym);
    free(e.prev);
    free(e.next);
    free(e.heap);
    free(e.cache);
    free(e.cache_ids);
    return e.st;
}
