/* tokenizer.h: the private layout of a loaded tokenizer.json (byte-level BPE), shared by the
 * loader (tokenizer_load.c, tokenizer_pre.c), the encoder (tokenizer.c) and the decoder
 * (tokenizer_decode.c). Everything is in the raw-byte domain: vocabulary strings are decoded
 * from GPT-2's byte-to-character form once at load, so encoding never builds byte-level
 * strings. The structure is immutable after loading (safe to share between threads). */
#ifndef GLIM_TOKENIZER_H
#define GLIM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "glimmer_text.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

enum {
    TOK_IN_MODEL = 1, /* a model vocabulary entry */
    TOK_ADDED = 2,    /* an added token */
    TOK_SPECIAL = 4,  /* an added token with special=true */
    TOK_RAW = 8,      /* vocabulary string not in byte-level form: bytes are its UTF-8 */
};

typedef enum tok_split_behavior {
    SPLIT_ISOLATED,
    SPLIT_REMOVED,
    SPLIT_MERGED_WITH_PREVIOUS,
    SPLIT_MERGED_WITH_NEXT,
    SPLIT_CONTIGUOUS,
} tok_split_behavior;

/* One pre-tokenizer step. A ByteLevel step with use_regex is stored as a Split with the GPT-2
 * pattern followed by nothing (the byte mapping itself is implicit in the byte domain). */
typedef struct tok_step {
    pcre2_code *re;              /* NULL: this step does not split */
    tok_split_behavior behavior;
    int add_prefix_space;        /* ByteLevel(add_prefix_space=true) */
} tok_step;

#define TOK_MAX_STEPS 8
#define TOK_MAX_TEMPLATE 8

typedef struct tok_trie_node {
    int32_t first_child, next_sibling;
    int32_t token; /* id of the added token ending here, or -1 */
    unsigned char byte;
} tok_trie_node;

typedef struct tok_vslot {
    uint32_t tag; /* high half of the hash */
    int32_t id;   /* -1: empty */
    uint32_t off, len;
} tok_vslot;

typedef struct tok_merge {
    uint64_t key; /* (left << 32 | right) + 1; 0: empty */
    uint32_t rank;
    int32_t new_id;
} tok_merge;

typedef struct tok_added {
    int32_t id;
    unsigned char special, lstrip, rstrip;
} tok_added;

struct glim_tokenizer {
    int n_vocab;              /* max id + 1 */
    uint32_t *tok_off;        /* [n_vocab] offset of the token's bytes in `arena` */
    uint32_t *tok_len;        /* [n_vocab] */
    unsigned char *tok_flags; /* [n_vocab] TOK_* (0: no token has this id) */
    char *arena;
    size_t arena_len;

    /* model vocabulary: raw bytes -> id (open addressing; id -1 = empty). A slot carries the
     * hash tag and the token's bytes so a probe touches one slot and, on a hit, the arena. */
    tok_vslot *vslot;
    uint32_t vmask;

    /* merges: (left id, right id) -> rank and merged id, one 16-byte slot per merge */
    tok_merge *merge;
    uint32_t mmask;
    size_t n_merges;

    int32_t byte_id[256];     /* id of the one-byte token, -1 if none */
    int ignore_merges;
    int32_t unk_id;           /* -1: unknown pieces are dropped (as Hugging Face does) */

    /* added tokens: a byte trie for leftmost-longest matching */
    tok_trie_node *trie;
    int n_trie;
    tok_added *added;         /* indexed by position in added_tokens */
    int n_added;
    int32_t *added_index;     /* [n_vocab] index into `added`, or -1 */
    int any_nonspecial;       /* some added token is not special (always matched) */
    unsigned char first_byte[256]; /* bytes an added token may start with */

    tok_step steps[TOK_MAX_STEPS];
    int n_steps;

    int32_t prefix[TOK_MAX_TEMPLATE], suffix[TOK_MAX_TEMPLATE];
    int n_prefix, n_suffix;
};

/* tokenizer_pre.c: builds the pre-tokenizer steps from the tokenizer.json "pre_tokenizer"
 * value (a jansson json_t *, passed as void * to keep jansson out of this header). */
glim_status tok_parse_pre_tokenizer(glim_tokenizer *tok, const void *json, glim_error *err);
/* Compiles a Hugging Face (Oniguruma-flavoured) regex for PCRE2, translating where the two
 * differ (\s is Unicode White_Space; (?i:...) folds ASCII letters only). */
glim_status tok_compile_regex(const char *pattern, size_t len, int literal, pcre2_code **out,
                              glim_error *err);


/* Hash of a byte string (for the vocabulary table). */
uint64_t tok_hash_bytes(const unsigned char *s, size_t n);
/* Model vocabulary lookup by raw bytes; -1 when absent. */
int32_t tok_vocab_find(const glim_tokenizer *tok, const unsigned char *s, size_t n);

#endif
