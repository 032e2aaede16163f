/* dtype.h: the element types glimmer reads (the safetensors set) and exact conversions
 * between bf16 / f16 and f32. Conversions to bf16 round to nearest even, as torch does. */
#ifndef GLIM_DTYPE_H
#define GLIM_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum glim_dtype {
    GLIM_DT_BOOL, GLIM_DT_U8, GLIM_DT_I8, GLIM_DT_U16, GLIM_DT_I16, GLIM_DT_F16, GLIM_DT_BF16,
    GLIM_DT_U32, GLIM_DT_I32, GLIM_DT_F32, GLIM_DT_U64, GLIM_DT_I64, GLIM_DT_F64,
    GLIM_DT_COUNT
} glim_dtype;

/* Bytes per element; 0 for an invalid dtype. */
size_t glim_dtype_size(glim_dtype t);
/* The safetensors spelling ("BF16", "F32", ...). */
const char *glim_dtype_name(glim_dtype t);
/* Parses a safetensors dtype string; returns 0 and sets *out, or -1 when unknown. */
int glim_dtype_parse(const char *s, glim_dtype *out);

static inline float glim_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t glim_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Rounds an f32 to the nearest bf16 value, returned as f32. */
static inline float glim_round_bf16(float f) { return glim_bf16_to_f32(glim_f32_to_bf16(f)); }

float glim_f16_to_f32(uint16_t h);
uint16_t glim_f32_to_f16(float f);

/* Element i of an array of a float dtype (F32, F16, BF16, F64) as f32. */
static inline float glim_load_f32(const void *p, int dtype, size_t i) {
    switch (dtype) {
    case GLIM_DT_F32: return ((const float *)p)[i];
    case GLIM_DT_BF16: return glim_bf16_to_f32(((const uint16_t *)p)[i]);
    case GLIM_DT_F16: return glim_f16_to_f32(((const uint16_t *)p)[i]);
    case GLIM_DT_F64: return (float)((const double *)p)[i];
    default: return 0.0f;
    }
}

#endif
