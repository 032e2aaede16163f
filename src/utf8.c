/* utf8.c: one UTF-8 character's well-formedness (utf8.h). */
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
    *bad = (size_t)j;
    return 0;
}
