/* utf8.h: UTF-8 well-formedness (the Unicode standard's table 3-7: no overlong forms, no
 * surrogates, nothing past U+10FFFF), for the tokenizer's split of text into valid and invalid
 * runs, the lossy conversion of model text (chat_json.c) and the server's check of request
 * bodies (server/openai.c). */
#ifndef GLIM_UTF8_H
#define GLIM_UTF8_H

#include <stddef.h>

/* The character at s[0..n) (n >= 1): its length (1..4) when it is whole and well formed;
 * otherwise 0, with *bad (if not NULL) the length of its maximal ill-formed part (1..3 bytes, or
 * fewer if n ends it), which a lossy conversion replaces by one U+FFFD. */
int utf8_char(const char *s, size_t n, size_t *bad);

/* Length of the longest well-formed UTF-8 prefix of s[0..n). */
size_t utf8_valid_prefix(const char *s, size_t n);

#endif
