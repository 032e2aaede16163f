/* textbuf.h: a growing, always NUL-terminated byte buffer for building text (chat rendering,
 * JSON, regex translation, summaries). An allocation failure sets `oom` and later appends do
 * nothing, so callers check once at the end. */
#ifndef GLIM_TEXTBUF_H
#define GLIM_TEXTBUF_H

#include <stddef.h>

#include "error.h"

typedef struct textbuf {
    char *p;      /* NULL until the first append */
    size_t n;     /* bytes used, not counting the NUL */
    size_t cap;
    int oom;
} textbuf;

void textbuf_add(textbuf *b, const char *s, size_t n);
void textbuf_str(textbuf *b, const char *s);
void textbuf_printf(textbuf *b, const char *fmt, ...) GLIM_PRINTF(2, 3);
void textbuf_free(textbuf *b);

#endif
