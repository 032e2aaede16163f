/* tokenizer_decode.c: ids back to text. Whole-sequence decoding returns the tokens' bytes
 * exactly (so decode(encode(x)) == x); the streaming decoder hands out text token by token and
 * holds back an incomplete UTF-8 character until it is complete, turning bytes that can never
 * complete one into U+FFFD, as a lossy UTF-8 conversion of the whole text would. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tokenizer.h"

const char *glim_token_bytes(const glim_tokenizer *tok, int32_t id, size_t *len) {
    if (id < 0 || id >= tok->n_vocab || !tok->tok_flags[id]) {
        *len = 0;
        return NULL;
    }
    *len = tok->tok_len[id];
    return tok->arena + tok->tok_off[id];
}

glim_status glim_detokenize(const glim_tokenizer *tok, const int32_t *ids, size_t n,
                            unsigned flags, char **out, size_t *len, glim_error *err) {
    *out = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= tok->n_vocab || !tok->tok_flags[ids[i]])
            return glim_fail(err, GLIM_E_ARG,
                             "detokenize: ids[%zu] = %d is not a token of this vocabulary "
                             "(ids 0..%d, with holes)", i, ids[i], tok->n_vocab - 1);
        total += tok->tok_len[ids[i]];
    }
    char *buf = malloc(total + 1);
    if (!buf) return glim_fail(err, GLIM_E_NOMEM, "detokenize: out of memory (%zu bytes)", total);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char f = tok->tok_flags[ids[i]];
        if ((flags & GLIM_DETOK_SKIP_SPECIAL) && (f & TOK_SPECIAL)) continue;
        memcpy(buf + o, tok->arena + tok->tok_off[ids[i]], tok->tok_len[ids[i]]);
        o += tok->tok_len[ids[i]];
    }
    buf[o] = 0;
    *out = buf;
    *len = o;
    return GLIM_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Streaming */

struct glim_stream_decoder {
    const glim_tokenizer *tok;
    int show_special;
    unsigned char held[4]; /* start of a character still missing bytes */
    int n_held;
    char *buf;
    size_t cap;
};

glim_stream_decoder *glim_stream_decoder_new(const glim_tokenizer *tok, int show_special) {
    glim_stream_decoder *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->tok = tok;
    d->show_special = show_special;
    return d;
}

void glim_stream_decoder_free(glim_stream_decoder *d) {
    if (!d) return;
    free(d->buf);
    free(d);
}

static int reserve(glim_stream_decoder *d, size_t n) {
    if (n <= d->cap) return 1;
    size_t cap = n * 2 + 64;
    char *b = realloc(d->buf, cap);
    if (!b) return 0;
    d->buf = b;
    d->cap = cap;
    return 1;
}

/* Bytes a character starting with c needs (1..4), or 0 if c cannot start one. */
static int lead_len(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c < 0xE0) return 2;
    if (c >= 0xE0 && c < 0xF0) return 3;
    if (c >= 0xF0 && c < 0xF5) return 4;
    return 0;
}

/* Could s[0..n) (n < full length) still grow into a valid character? */
static int valid_start(const unsigned char *s, int n) {
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if (n >= 2) {
        if (s[0] == 0xE0 && s[1] < 0xA0) return 0;
        if (s[0] == 0xED && s[1] >= 0xA0) return 0;
        if (s[0] == 0xF0 && s[1] < 0x90) return 0;
        if (s[0] == 0xF4 && s[1] >= 0x90) return 0;
    }
    return 1;
}

static size_t put_replacement(char *o) {
    memcpy(o, "\xEF\xBF\xBD", 3);
    return 3;
}

/* Appends bytes p[0..n) to the output, emitting whole characters and holding back a tail. */
static size_t feed(glim_stream_decoder *d, const unsigned char *p, size_t n, char *o) {
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (d->n_held) {
            d->held[d->n_held++] = c;
            int need = lead_len(d->held[0]);
            if (!valid_start(d->held, d->n_held)) {
                /* The held lead byte(s) can never complete: U+FFFD for them, then reconsider c. */
                w += put_replacement(o + w);
                d->n_held = 0;
                i--;
                continue;
            }
            if (d->n_held == need) {
                memcpy(o + w, d->held, (size_t)need);
                w += (size_t)need;
                d->n_held = 0;
            }
            continue;
        }
        int need = lead_len(c);
        if (need == 1) {
            o[w++] = (char)c;
        } else if (need == 0) {
            w += put_replacement(o + w);
        } else {
            d->held[0] = c;
            d->n_held = 1;
        }
    }
    return w;
}

const char *glim_stream_decoder_push(glim_stream_decoder *d, int32_t id, size_t *len) {
    size_t n;
    const char *p = glim_token_bytes(d->tok, id, &n);
    *len = 0;
    if (!p) return "";
    if (!d->show_special && (d->tok->tok_flags[id] & TOK_SPECIAL)) return "";
    /* each input byte yields at most 3 output bytes (U+FFFD), plus the held ones */
    if (!reserve(d, 3 * (n + 4) + 1)) return "";
    *len = feed(d, (const unsigned char *)p, n, d->buf);
    d->buf[*len] = 0;
    return d->buf;
}

const char *glim_stream_decoder_flush(glim_stream_decoder *d, size_t *len) {
    *len = 0;
    if (!reserve(d, 8)) return "";
    if (d->n_held) *len = put_replacement(d->buf);
    d->n_held = 0;
    d->buf[*len] = 0;
    return d->buf;
}
