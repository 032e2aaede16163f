/* dtype.c: dtype names and sizes, and the f16 conversions (bf16 ones are inline in dtype.h). */
#include "dtype.h"

#include <math.h>

static const struct { const char *name; size_t size; } dtype_table[GLIM_DT_COUNT] = {
    [GLIM_DT_BOOL] = {"BOOL", 1}, [GLIM_DT_U8] = {"U8", 1},     [GLIM_DT_I8] = {"I8", 1},
    [GLIM_DT_U16] = {"U16", 2},   [GLIM_DT_I16] = {"I16", 2},   [GLIM_DT_F16] = {"F16", 2},
    [GLIM_DT_BF16] = {"BF16", 2}, [GLIM_DT_U32] = {"U32", 4},   [GLIM_DT_I32] = {"I32", 4},
    [GLIM_DT_F32] = {"F32", 4},   [GLIM_DT_U64] = {"U64", 8},   [GLIM_DT_I64] = {"I64", 8},
    [GLIM_DT_F64] = {"F64", 8},
};

size_t glim_dtype_size(glim_dtype t) {
    return (unsigned)t < GLIM_DT_COUNT ? dtype_table[t].size : 0;
}

const char *glim_dtype_name(glim_dtype t) {
    return (unsigned)t < GLIM_DT_COUNT ? dtype_table[t].name : "?";
}

int glim_dtype_parse(const char *s, glim_dtype *out) {
    for (int t = 0; t < GLIM_DT_COUNT; t++) {
        if (strcmp(s, dtype_table[t].name) == 0) {
            *out = (glim_dtype)t;
            return 0;
        }
    }
    return -1;
}

float glim_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0) { /* zero or subnormal: mant * 2^-24 */
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    uint32_t u = exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                           : (sign | ((exp + 112) << 23) | (mant << 13));
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t glim_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    float a = fabsf(f);
    if (isnan(f)) return sign | 0x7e00;
    if (a >= 65520.0f) return sign | 0x7c00; /* rounds to infinity */
    if (a < 6.103515625e-05f) {              /* subnormal range: quantum 2^-24 */
        float q = nearbyintf(a * 16777216.0f);
        return sign | (uint16_t)q;
    }
    uint32_t e = ((u >> 23) & 0xff) - 112, m = u & 0x7fffff;
    uint32_t r = (e << 10) | (m >> 13);
    uint32_t rest = m & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1))) r++;
    return sign | (uint16_t)r;
}
