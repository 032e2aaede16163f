/* utf8.c: UTF-8 well-formedness (utf8.h). */
#include <stdint.h>
#include <string.h>

#include "utf8.h"

int utf8_char(const char *s, size_t n, size_t *bad) {
    const unsigned char *u = (const unsigned char *)s;
    const unsigned c = u[0];
    const int need = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    int j = 1;
    while (j < need && (size_t)j < n) {
        /* the second byte's range is narrower after E0, ED, F0 and F4 (table 3-7) */
        unsigned x = u[j], lo = 0x80, hi = 0xBF;
        if (j == 1 && c == 0xE0) lo = 0xA0;
        if (j == 1 && c == 0xED) hi = 0x9F;
        if (j == 1 && c == 0xF0) lo = 0x90;
        if (j == 1 && c == 0xF4) hi = 0x8F;
        if (x < lo || x > hi) break;
        j++;
    }
    if (need && j == need) return need;
    if (bad) *bad = (size_t)j;
    return 0;
}

size_t utf8_valid_prefix(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (i + 8 <= n) { /* eight ASCII bytes at once: most text is mostly ASCII */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        const int k = utf8_char(s + i, n - i, NULL);
        if (!k) break;
        i += (size_t)k;
    }
    return i;
}
