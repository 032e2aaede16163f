/* gguf.h: a minimal, strict GGUF (v2/v3) reader and writer, enough for llama.cpp control
 * vectors (KV metadata + a few F32 tensors). File format only: no model knowledge here.
 *
 * Layout (little-endian): "GGUF" u32 version, u64 n_tensors, u64 n_kv; n_kv pairs of
 * (string key, u32 type, value); n_tensors infos of (string name, u32 n_dims, u64 ne[n_dims],
 * u32 ggml type, u64 offset); padding to `general.alignment` (default 32); tensor data, each
 * tensor at data_start + offset. Strings are u64 length + bytes (no terminator).
 *
 * The reader checks every length against the bytes that remain, so a truncated or lying file
 * (counts, string lengths, array lengths, dims, offsets that point outside the data, overlapping
 * tensors, duplicate keys or names) is refused with a message naming the field and the values. */
#ifndef GLIM_GGUF_H
#define GLIM_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "glimmer.h"

/* GGUF value types (gguf.h of ggml). */
typedef enum glim_gguf_vtype {
    GLIM_GGUF_U8 = 0, GLIM_GGUF_I8 = 1, GLIM_GGUF_U16 = 2, GLIM_GGUF_I16 = 3,
    GLIM_GGUF_U32 = 4, GLIM_GGUF_I32 = 5, GLIM_GGUF_F32 = 6, GLIM_GGUF_BOOL = 7,
    GLIM_GGUF_STRING = 8, GLIM_GGUF_ARRAY = 9, GLIM_GGUF_U64 = 10, GLIM_GGUF_I64 = 11,
    GLIM_GGUF_F64 = 12, GLIM_GGUF_VTYPE_COUNT
} glim_gguf_vtype;

/* The ggml tensor types this reader can size (others are refused by name/number). */
#define GLIM_GGML_F32 0
#define GLIM_GGML_F16 1
#define GLIM_GGML_I8 24
#define GLIM_GGML_I16 25
#define GLIM_GGML_I32 26
#define GLIM_GGML_I64 27
#define GLIM_GGML_F64 28
#define GLIM_GGML_BF16 30

#define GLIM_GGUF_MAX_DIMS 4

typedef struct glim_gguf_kv {
    char *key;               /* NUL-terminated copy */
    glim_gguf_vtype type;
    glim_gguf_vtype arr_type; /* for ARRAY */
    uint64_t n;              /* ARRAY: element count; STRING: byte length */
    union {
        uint64_t u;          /* U8..U64, BOOL */
        int64_t i;           /* I8..I64 */
        double f;            /* F32, F64 */
    } v;
    char *str;               /* STRING: NUL-terminated copy (may hold inner NULs; use n) */
    void *arr;               /* ARRAY of numbers: raw little-endian elements; of strings: char*[n] */
} glim_gguf_kv;

typedef struct glim_gguf_tensor {
    char *name;
    int n_dims;
    uint64_t ne[GLIM_GGUF_MAX_DIMS]; /* ne[0] is the innermost (contiguous) dimension */
    uint32_t type;                   /* ggml type */
    uint64_t offset;                 /* from the start of the data section */
    uint64_t nbytes;
    const void *data;                /* inside the reader's buffer */
} glim_gguf_tensor;

typedef struct glim_gguf glim_gguf;

/* Reads and validates a whole file (kept in memory: control vectors are small). */
glim_status glim_gguf_read_file(const char *path, glim_gguf **out, glim_error *err);
/* Same, from a buffer (copied); `what` names it in messages. */
glim_status glim_gguf_parse(const void *buf, size_t len, const char *what, glim_gguf **out,
                            glim_error *err);
void glim_gguf_free(glim_gguf *g);

uint32_t glim_gguf_version(const glim_gguf *g);
int glim_gguf_n_kv(const glim_gguf *g);
const glim_gguf_kv *glim_gguf_kv_at(const glim_gguf *g, int i);
const glim_gguf_kv *glim_gguf_find_kv(const glim_gguf *g, const char *key);
/* The value as a string / signed integer (any integer type that fits); NULL / -1 when the key is
 * absent or has another type. */
const char *glim_gguf_get_str(const glim_gguf *g, const char *key);
int glim_gguf_get_int(const glim_gguf *g, const char *key, int64_t *out);
int glim_gguf_n_tensors(const glim_gguf *g);
const glim_gguf_tensor *glim_gguf_tensor_at(const glim_gguf *g, int i);
const glim_gguf_tensor *glim_gguf_find_tensor(const glim_gguf *g, const char *name);
const char *glim_gguf_vtype_name(glim_gguf_vtype t);

/* Writing. Values and tensor data are copied when added; the file goes to path.tmp and is
 * renamed, so a failed write never leaves a half file under the real name. */
typedef struct glim_gguf_writer glim_gguf_writer;

glim_gguf_writer *glim_gguf_writer_new(void);
void glim_gguf_writer_free(glim_gguf_writer *w);
glim_status glim_gguf_set_str(glim_gguf_writer *w, const char *key, const char *value,
                              glim_error *err);
glim_status glim_gguf_set_i32(glim_gguf_writer *w, const char *key, int32_t value,
                              glim_error *err);
glim_status glim_gguf_set_u32(glim_gguf_writer *w, const char *key, uint32_t value,
                              glim_error *err);
glim_status glim_gguf_set_f32(glim_gguf_writer *w, const char *key, float value, glim_error *err);
/* An F32 tensor with ne[0..n_dims) (ne[0] innermost). */
glim_status glim_gguf_add_f32(glim_gguf_writer *w, const char *name, int n_dims,
                              const uint64_t *ne, const float *data, glim_error *err);
glim_status glim_gguf_write(const glim_gguf_writer *w, const char *path, glim_error *err);
/* The bytes the file would hold (for tests that corrupt them): malloc'd, caller frees. */
glim_status glim_gguf_serialize(const glim_gguf_writer *w, uint8_t **out, size_t *len,
                                glim_error *err);

#endif
