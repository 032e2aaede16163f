/* tokenizer_json.h: fast reading of the big values of a tokenizer.json (tokenizer_json.c). */
#ifndef GLIM_TOKENIZER_JSON_H
#define GLIM_TOKENIZER_JSON_H

#include <stddef.h>

typedef struct tok_jspan {
    const char *p; /* the value's JSON text, inside the document */
    size_t n;
} tok_jspan;

/* Finds model.vocab and model.merges in the document s[0..n). On success returns 0, sets the two
 * spans, and gives a malloc'd copy of the document with those values replaced by {} and [] in
 * *skeleton (NUL-terminated). On a syntax error (or when either value is missing) returns -1
 * with the byte offset in *fail_at. */
int tok_json_locate(const char *s, size_t n, tok_jspan *vocab, tok_jspan *merges, char **skeleton,
                    size_t *skel_len, size_t *fail_at);

/* Calls cb for each member of the object {"key": integer, ...}; the key is decoded and
 * NUL-terminated. Stops at a non-zero return of cb (returned). -1 on a syntax error or a value
 * that is not an integer. */
int tok_json_each_vocab(tok_jspan v, int (*cb)(void *ctx, const char *key, size_t len, long long id), void *ctx);

/* Calls cb for each element of the merges array: ["a", "b"] pairs (pair_form = 1) or "a b"
 * strings (pair_form = 0: a holds the whole string, b is empty). Same returns as above. */
int tok_json_each_merge(tok_jspan m,
                        int (*cb)(void *ctx, size_t index, const char *a, size_t alen, const char *b, size_t blen,
                                  int pair_form),
                        void *ctx);

#endif
