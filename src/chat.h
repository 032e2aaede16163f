/* chat.h: private helpers shared by the Muse chat renderer (chat.c) and the output parser
 * (chat_parse.c): a growable byte buffer and JSON written the way Python's json.dumps writes it
 * (", " and ": " separators, non-ASCII kept, shortest round-trip floats), which is how the chat
 * template serialises tool schemas and arguments. */
#ifndef GLIM_CHAT_H
#define GLIM_CHAT_H

#include <jansson.h>
#include <stddef.h>

#include "textbuf.h"

/* Appends s[0..n) with every invalid UTF-8 sequence replaced by U+FFFD. */
void cb_add_lossy(textbuf *b, const char *s, size_t n);

/* Appends v as JSON. compact = 0: Python json.dumps style; 1: no spaces. */
void chat_json_dump(const json_t *v, int compact, textbuf *out);

#endif
