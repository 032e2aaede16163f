/* chat_json.c: lossy UTF-8 appends and the Python-json.dumps-style JSON writer of chat.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "utf8.h"

void cb_add_lossy(textbuf *b, const char *s, size_t n) {
    size_t run = 0, i = 0;
    while (i < n) {
        size_t bad = 0;
        const int len = utf8_char(s + i, n - i, &bad);
        if (len) {
            i += (size_t)len;
            continue;
        }
        textbuf_add(b, s + run, i - run);
        textbuf_add(b, "\xEF\xBF\xBD", 3);
        i += bad; /* one U+FFFD per maximal ill-formed part */
        run = i;
    }
    textbuf_add(b, s + run, n - run);
}

static void dump_string(const char *s, size_t n, textbuf *out) {
    textbuf_add(out, "\"", 1);
    size_t run = 0; /* bytes copied verbatim in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(u, sizeof u, "\\u%04x", c);
                esc = u;
            }
        }
        if (!esc) continue;
        textbuf_add(out, s + run, i - run);
        textbuf_str(out, esc);
        run = i + 1;
    }
    textbuf_add(out, s + run, n - run);
    textbuf_add(out, "\"", 1);
}

/* Python's repr of a float: the shortest digits that read back to the same double, fixed
 * notation for exponents -4..15 (with ".0" when integral), else d.ddde+XX. */
static void dump_real(double v, textbuf *out) {
    char tmp[64];
    if (!isfinite(v)) {
        textbuf_str(out, isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
        return;
    }
    int p = 1;
    for (; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
        if (strtod(tmp, NULL) == v) break;
    }
    /* tmp = [-]d[.ddd]e[+-]XX */
    const char *s = tmp;
    if (*s == '-') textbuf_add(out, s++, 1);
    char digits[32];
    int nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.') digits[nd++] = *s;
    int e = atoi(s + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (e >= -4 && e < 16) {
        if (e < 0) {
            textbuf_str(out, "0.");
            for (int i = 0; i < -e - 1; i++) textbuf_add(out, "0", 1);
            textbuf_add(out, digits, (size_t)nd);
        } else {
            for (int i = 0; i <= e; i++) textbuf_add(out, i < nd ? &digits[i] : "0", 1);
            textbuf_add(out, ".", 1);
            if (nd > e + 1) textbuf_add(out, digits + e + 1, (size_t)(nd - e - 1));
            else textbuf_add(out, "0", 1);
        }
        return;
    }
    textbuf_add(out, digits, 1);
    if (nd > 1) {
        textbuf_add(out, ".", 1);
        textbuf_add(out, digits + 1, (size_t)(nd - 1));
    }
    snprintf(tmp, sizeof tmp, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    textbuf_str(out, tmp);
}

void chat_json_dump(const json_t *v, int compact, textbuf *out) {
    char num[32];
    const char *comma = compact ? "," : ", ", *colon = compact ? ":" : ": ";
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *val;
        int first = 1;
        textbuf_add(out, "{", 1);
        json_object_foreach((json_t *)v, key, val) {
            if (!first) textbuf_str(out, comma);
            first = 0;
            dump_string(key, strlen(key), out);
            textbuf_str(out, colon);
            chat_json_dump(val, compact, out);
        }
        textbuf_add(out, "}", 1);
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *val;
        textbuf_add(out, "[", 1);
        json_array_foreach((json_t *)v, i, val) {
            if (i) textbuf_str(out, comma);
            chat_json_dump(val, compact, out);
        }
        textbuf_add(out, "]", 1);
        break;
    }
    case JSON_STRING: dump_string(json_string_value(v), json_string_length(v), out); break;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        textbuf_str(out, num);
        break;
    case JSON_REAL: dump_real(json_real_value(v), out); break;
    case JSON_TRUE: textbuf_str(out, "true"); break;
    case JSON_FALSE: textbuf_str(out, "false"); break;
    case JSON_NULL: textbuf_str(out, "null"); break;
    }
}
