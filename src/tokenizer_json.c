/* tokenizer_json.c: a fast path through the two big values of a tokenizer.json, model.vocab
 * (200k entries) and model.merges (450k), which a general JSON library turns into a million
 * small objects (about a second for Muse Glimmer's file). tok_json_locate finds the two values
 * and hands back the rest of the document (small: added tokens, pre-tokenizer, ...) with them
 * emptied, for jansson; tok_json_each_vocab / tok_json_each_merge then walk the two values
 * in place, decoding strings into a scratch buffer. Strict JSON syntax: anything unexpected is a
 * failure with the byte offset, and the caller falls back to jansson's own parse (and error). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_json.h"

typedef struct cur {
    const char *s, *end;
} cur;

static void ws(cur *c) {
    while (c->s < c->end && (*c->s == ' ' || *c->s == '\n' || *c->s == '\r' || *c->s == '\t')) c->s++;
}

static int expect(cur *c, char ch) {
    ws(c);
    if (c->s >= c->end || *c->s != ch) return 0;
    c->s++;
    return 1;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(unsigned cp, char *o) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Reads a string at c->s (after whitespace). With out != NULL decodes it into out (which must
 * hold the raw length + 4) and sets *len; otherwise only skips it. */
static int string(cur *c, char *out, size_t *len) {
    ws(c);
    if (c->s >= c->end || *c->s != '"') return 0;
    const char *p = ++c->s;
    size_t o = 0;
    while (p < c->end) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"') {
            c->s = p + 1;
            if (len) *len = o;
            return 1;
        }
        if (ch < 0x20) return 0;
        if (ch != '\\') {
            if (out) out[o] = (char)ch;
            o++, p++;
            continue;
        }
        if (p + 1 >= c->end) return 0;
        char e = p[1], d = 0;
        p += 2;
        switch (e) {
        case '"': d = '"'; break;
        case '\\': d = '\\'; break;
        case '/': d = '/'; break;
        case 'b': d = '\b'; break;
        case 'f': d = '\f'; break;
        case 'n': d = '\n'; break;
        case 'r': d = '\r'; break;
        case 't': d = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (p + 4 > c->end || !hex4(p, &cp)) return 0;
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair */
                if (p + 6 > c->end || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                    return 0;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                return 0;
            }
            char tmp[4];
            size_t k = put_utf8(cp, out ? out + o : tmp);
            o += k;
            continue;
        }
        default: return 0;
        }
        if (out) out[o] = d;
        o++;
    }
    return 0;
}

static int skip_value(cur *c, int depth);

static int skip_container(cur *c, char close, int is_object, int depth) {
    if (depth > 256) return 0;
    ws(c);
    if (c->s < c->end && *c->s == close) return c->s++, 1;
    for (;;) {
        if (is_object && (!string(c, NULL, NULL) || !expect(c, ':'))) return 0;
        if (!skip_value(c, depth + 1)) return 0;
        ws(c);
        if (c->s >= c->end) return 0;
        if (*c->s == ',') {
            c->s++;
            continue;
        }
        if (*c->s == close) return c->s++, 1;
        return 0;
    }
}

static int skip_value(cur *c, int depth) {
    ws(c);
    if (c->s >= c->end) return 0;
    char ch = *c->s;
    if (ch == '"') return string(c, NULL, NULL);
    if (ch == '{') return c->s++, skip_container(c, '}', 1, depth);
    if (ch == '[') return c->s++, skip_container(c, ']', 0, depth);
    static const char *lits[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lits[i]);
        if ((size_t)(c->end - c->s) >= n && !memcmp(c->s, lits[i], n)) return c->s += n, 1;
    }
    const char *p = c->s;
    if (p < c->end && *p == '-') p++;
    const char *digits = p;
    while (p < c->end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-')) p++;
    if (p == digits) return 0;
    c->s = p;
    return 1;
}

/* Reads a string and returns its raw text (between the quotes, escapes not decoded). */
static int raw_string(cur *c, const char **k, size_t *kn) {
    ws(c);
    const char *start = c->s;
    if (!string(c, NULL, NULL)) return 0;
    *k = start + 1;
    *kn = (size_t)(c->s - start) - 2;
    return 1;
}

static int is_key(const char *k, size_t kn, const char *name) { return kn == strlen(name) && !memcmp(k, name, kn); }

int tok_json_locate(const char *s, size_t n, tok_jspan *vocab, tok_jspan *merges, char **skeleton,
                    size_t *skel_len, size_t *fail_at) {
    cur c = {s, s + n};
    *skeleton = NULL;
    vocab->p = merges->p = NULL;
    vocab->n = merges->n = 0;
    if (!expect(&c, '{')) goto fail;
    ws(&c);
    if (c.s < c.end && *c.s == '}') goto fail; /* no model at all: let jansson's path say so */
    for (;;) {
        const char *k;
        size_t kn;
        if (!raw_string(&c, &k, &kn) || !expect(&c, ':')) goto fail;
        ws(&c);
        if (is_key(k, kn, "model") && c.s < c.end && *c.s == '{') {
            c.s++;
            ws(&c);
            if (c.s < c.end && *c.s == '}') {
                c.s++;
            } else {
                for (;;) {
                    const char *mk;
                    size_t mkn;
                    if (!raw_string(&c, &mk, &mkn) || !expect(&c, ':')) goto fail;
                    ws(&c);
                    const char *v = c.s;
                    if (!skip_value(&c, 1)) goto fail;
                    if (is_key(mk, mkn, "vocab")) *vocab = (tok_jspan){v, (size_t)(c.s - v)};
                    if (is_key(mk, mkn, "merges")) *merges = (tok_jspan){v, (size_t)(c.s - v)};
                    ws(&c);
                    if (c.s < c.end && *c.s == ',') {
                        c.s++;
                        continue;
                    }
                    if (!expect(&c, '}')) goto fail;
                    break;
                }
            }
        } else if (!skip_value(&c, 1)) {
            goto fail;
        }
        ws(&c);
        if (c.s < c.end && *c.s == ',') {
            c.s++;
            continue;
        }
        if (!expect(&c, '}')) goto fail;
        break;
    }
    ws(&c);
    if (c.s != c.end || !vocab->p || !merges->p) goto fail;
    /* the document with the two values replaced by {} and [] */
    char *sk = malloc(n + 8);
    if (!sk) goto fail;
    const tok_jspan *first = vocab->p < merges->p ? vocab : merges, *second = first == vocab ? merges : vocab;
    size_t o = 0, a = (size_t)(first->p - s), b = (size_t)(second->p - s);
    memcpy(sk, s, a), o = a;
    memcpy(sk + o, first == vocab ? "{}" : "[]", 2), o += 2;
    memcpy(sk + o, first->p + first->n, b - (a + first->n)), o += b - (a + first->n);
    memcpy(sk + o, second == vocab ? "{}" : "[]", 2), o += 2;
    size_t rest = n - (b + second->n);
    memcpy(sk + o, second->p + second->n, rest), o += rest;
    sk[o] = 0;
    *skeleton = sk;
    *skel_len = o;
    return 0;
fail:
    *fail_at = (size_t)(c.s - s);
    return -1;
}

int tok_json_each_vocab(tok_jspan v, int (*cb)(void *ctx, const char *key, size_t len, long long id), void *ctx) {
    cur c = {v.p, v.p + v.n};
    char *buf = malloc(v.n + 8);
    int rc = -1;
    if (!buf || !expect(&c, '{')) goto out;
    ws(&c);
    if (c.s < c.end && *c.s == '}') {
        rc = 0;
        goto out;
    }
    for (;;) {
        size_t len;
        if (!string(&c, buf, &len) || !expect(&c, ':')) goto out;
        ws(&c);
        const char *p = c.s;
        long long id = 0;
        int neg = p < c.end && *p == '-';
        if (neg) p++;
        const char *d = p;
        while (p < c.end && *p >= '0' && *p <= '9' && p - d < 12) id = id * 10 + (*p++ - '0');
        if (p == d || (p < c.end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9')))) goto out;
        c.s = p;
        buf[len] = 0;
        if ((rc = cb(ctx, buf, len, neg ? -id : id)) != 0) goto out;
        rc = -1;
        ws(&c);
        if (c.s < c.end && *c.s == ',') {
            c.s++;
            continue;
        }
        if (expect(&c, '}')) rc = 0;
        break;
    }
out:
    free(buf);
    return rc;
}

int tok_json_each_merge(tok_jspan m,
                        int (*cb)(void *ctx, size_t index, const char *a, size_t alen, const char *b, size_t blen,
                                  int pair_form),
                        void *ctx) {
    cur c = {m.p, m.p + m.n};
    char *buf = malloc(2 * m.n + 16);
    int rc = -1;
    if (!buf || !expect(&c, '[')) goto out;
    ws(&c);
    if (c.s < c.end && *c.s == ']') {
        rc = 0;
        goto out;
    }
    for (size_t i = 0;; i++) {
        size_t alen, blen = 0;
        char *a = buf, *b;
        int pair = 0;
        ws(&c);
        if (c.s < c.end && *c.s == '[') { /* ["a", "b"] */
            c.s++;
            if (!string(&c, a, &alen) || !expect(&c, ',')) goto out;
            b = a + alen + 1;
            if (!string(&c, b, &blen) || !expect(&c, ']')) goto out;
            pair = 1;
        } else { /* "a b": the callback splits it */
            if (!string(&c, a, &alen)) goto out;
            b = a + alen;
        }
        a[alen] = 0;
        b[blen] = 0;
        if ((rc = cb(ctx, i, a, alen, b, blen, pair)) != 0) goto out;
        rc = -1;
        ws(&c);
        if (c.s < c.end && *c.s == ',') {
            c.s++;
            continue;
        }
        if (expect(&c, ']')) rc = 0;
        break;
    }
out:
    free(buf);
    return rc;
}
