/* gguf.c: the strict GGUF reader and the small writer declared in gguf.h. The reader parses
 * from an in-memory copy with a bounds-checked cursor: every count and length is checked against
 * the bytes that remain before anything is allocated from it. */
#include "gguf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32

struct glim_gguf {
    uint8_t *buf;
    size_t len;
    uint32_t version;
    int n_kv, n_tensors;
    glim_gguf_kv *kv;
    glim_gguf_tensor *tensors;
    uint64_t data_start;
};

static const char *const vtype_names[GLIM_GGUF_VTYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

const char *glim_gguf_vtype_name(glim_gguf_vtype t) {
    return (unsigned)t < GLIM_GGUF_VTYPE_COUNT ? vtype_names[t] : "invalid";
}

/* Bytes of one scalar value; 0 for STRING / ARRAY / invalid. */
static size_t vtype_size(glim_gguf_vtype t) {
    switch (t) {
    case GLIM_GGUF_U8: case GLIM_GGUF_I8: case GLIM_GGUF_BOOL: return 1;
    case GLIM_GGUF_U16: case GLIM_GGUF_I16: return 2;
    case GLIM_GGUF_U32: case GLIM_GGUF_I32: case GLIM_GGUF_F32: return 4;
    case GLIM_GGUF_U64: case GLIM_GGUF_I64: case GLIM_GGUF_F64: return 8;
    default: return 0;
    }
}

static size_t ggml_type_size(uint32_t t) {
    switch (t) {
    case GLIM_GGML_F32: case GLIM_GGML_I32: return 4;
    case GLIM_GGML_F16: case GLIM_GGML_BF16: case GLIM_GGML_I16: return 2;
    case GLIM_GGML_I8: return 1;
    case GLIM_GGML_I64: case GLIM_GGML_F64: return 8;
    default: return 0;
    }
}

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct cursor {
    const uint8_t *p;
    size_t len, off;
    const char *what;
    glim_error *err;
} cursor;

static glim_status truncated(cursor *c, const char *field, uint64_t need) {
    return glim_fail(c->err, GLIM_E_FORMAT,
                     "%s: truncated GGUF: %s needs %llu bytes at offset %zu, but only %zu remain "
                     "(file is %zu bytes)",
                     c->what, field, (unsigned long long)need, c->off, c->len - c->off, c->len);
}

static glim_status take(cursor *c, void *dst, size_t n, const char *field) {
    if (n > c->len - c->off) {
        truncated(c, field, n);
        return GLIM_E_FORMAT; /* (spelled out: callers read dst only when this is GLIM_OK, and the
                               * compiler cannot see that glim_fail returns its code) */
    }
    memcpy(dst, c->p + c->off, n);
    c->off += n;
    return GLIM_OK;
}

/* Little-endian loads (the host is little-endian on every target we build for; memcpy keeps
 * unaligned reads defined). */
static glim_status rd_u32(cursor *c, uint32_t *v, const char *f) { return take(c, v, 4, f); }
static glim_status rd_u64(cursor *c, uint64_t *v, const char *f) { return take(c, v, 8, f); }

/* A GGUF string: u64 length + bytes. Returns a malloc'd NUL-terminated copy. */
static glim_status rd_str(cursor *c, char **out, uint64_t *out_len, const char *field) {
    uint64_t n;
    glim_status st = rd_u64(c, &n, field);
    if (st) return st;
    if (n > c->len - c->off)
        return glim_fail(c->err, GLIM_E_FORMAT,
                         "%s: %s claims a string of %llu bytes at offset %zu, but only %zu bytes "
                         "remain", c->what, field, (unsigned long long)n, c->off, c->len - c->off);
    char *s = malloc((size_t)n + 1);
    if (!s) return glim_fail(c->err, GLIM_E_NOMEM, "%s: no memory for a %llu-byte string",
                             c->what, (unsigned long long)n);
    memcpy(s, c->p + c->off, (size_t)n);
    s[n] = 0;
    c->off += (size_t)n;
    *out = s;
    if (out_len) *out_len = n;
    return GLIM_OK;
}

static glim_status rd_scalar(cursor *c, glim_gguf_kv *kv, const char *key) {
    uint8_t b[8] = {0};
    size_t sz = vtype_size(kv->type);
    glim_status st = take(c, b, sz, key);
    if (st) return st;
    switch (kv->type) {
    case GLIM_GGUF_U8: kv->v.u = b[0]; break;
    case GLIM_GGUF_BOOL:
        if (b[0] > 1)
            return glim_fail(c->err, GLIM_E_FORMAT, "%s: key '%s': bool value is %u, expected 0 or 1",
                             c->what, key, b[0]);
        kv->v.u = b[0];
        break;
    case GLIM_GGUF_I8: kv->v.i = (int8_t)b[0]; break;
    case GLIM_GGUF_U16: { uint16_t x; memcpy(&x, b, 2); kv->v.u = x; } break;
    case GLIM_GGUF_I16: { int16_t x; memcpy(&x, b, 2); kv->v.i = x; } break;
    case GLIM_GGUF_U32: { uint32_t x; memcpy(&x, b, 4); kv->v.u = x; } break;
    case GLIM_GGUF_I32: { int32_t x; memcpy(&x, b, 4); kv->v.i = x; } break;
    case GLIM_GGUF_F32: { float x; memcpy(&x, b, 4); kv->v.f = x; } break;
    case GLIM_GGUF_U64: memcpy(&kv->v.u, b, 8); break;
    case GLIM_GGUF_I64: memcpy(&kv->v.i, b, 8); break;
    case GLIM_GGUF_F64: memcpy(&kv->v.f, b, 8); break;
    default: break;
    }
    return GLIM_OK;
}

static glim_status rd_array(cursor *c, glim_gguf_kv *kv) {
    uint32_t at;
    glim_status st = rd_u32(c, &at, kv->key);
    if (st) return st;
    if (at >= GLIM_GGUF_VTYPE_COUNT)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: key '%s': array element type %u is not a GGUF "
                         "type (0..%d)", c->what, kv->key, at, GLIM_GGUF_VTYPE_COUNT - 1);
    if (at == GLIM_GGUF_ARRAY)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: key '%s': nested arrays are not supported",
                         c->what, kv->key);
    kv->arr_type = (glim_gguf_vtype)at;
    if ((st = rd_u64(c, &kv->n, kv->key))) return st;
    size_t remain = c->len - c->off;
    size_t esz = at == GLIM_GGUF_STRING ? 8 : vtype_size(kv->arr_type); /* min bytes / element */
    if (kv->n > remain / esz)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: key '%s' claims an array of %llu %s elements "
                         "(at least %llu bytes) but only %zu bytes remain", c->what, kv->key,
                         (unsigned long long)kv->n, glim_gguf_vtype_name(kv->arr_type),
                         (unsigned long long)(kv->n * esz), remain);
    if (at == GLIM_GGUF_STRING) {
        char **a = calloc(kv->n ? (size_t)kv->n : 1, sizeof *a);
        if (!a) return glim_fail(c->err, GLIM_E_NOMEM, "%s: no memory for array '%s'", c->what, kv->key);
        kv->arr = a;
        for (uint64_t i = 0; i < kv->n; i++)
            if ((st = rd_str(c, &a[i], NULL, kv->key))) return st;
        return GLIM_OK;
    }
    size_t nb = (size_t)kv->n * esz;
    kv->arr = malloc(nb ? nb : 1);
    if (!kv->arr) return glim_fail(c->err, GLIM_E_NOMEM, "%s: no memory for array '%s'", c->what, kv->key);
    return take(c, kv->arr, nb, kv->key);
}

static glim_status rd_kv(cursor *c, glim_gguf_kv *kv, int index) {
    uint64_t klen;
    glim_status st = rd_str(c, &kv->key, &klen, "a key");
    if (st) return glim_fail_context(c->err, "key %d", index);
    if (klen == 0 || strlen(kv->key) != klen)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: key %d is %s", c->what, index,
                         klen == 0 ? "empty" : "not a C string (holds a NUL byte)");
    uint32_t t;
    if ((st = rd_u32(c, &t, kv->key))) return st;
    if (t >= GLIM_GGUF_VTYPE_COUNT)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: key '%s' has value type %u, not a GGUF type "
                         "(0..%d)", c->what, kv->key, t, GLIM_GGUF_VTYPE_COUNT - 1);
    kv->type = (glim_gguf_vtype)t;
    if (t == GLIM_GGUF_STRING) return rd_str(c, &kv->str, &kv->n, kv->key);
    if (t == GLIM_GGUF_ARRAY) return rd_array(c, kv);
    return rd_scalar(c, kv, kv->key);
}

static glim_status rd_tensor_info(cursor *c, glim_gguf_tensor *t, int index) {
    uint64_t nlen;
    glim_status st = rd_str(c, &t->name, &nlen, "a tensor name");
    if (st) return glim_fail_context(c->err, "tensor info %d", index);
    if (nlen == 0 || strlen(t->name) != nlen)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: tensor %d has %s name", c->what, index,
                         nlen == 0 ? "an empty" : "a NUL byte in its");
    uint32_t nd;
    if ((st = rd_u32(c, &nd, t->name))) return st;
    if (nd < 1 || nd > GLIM_GGUF_MAX_DIMS)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: tensor '%s' has %u dimensions, expected 1..%d",
                         c->what, t->name, nd, GLIM_GGUF_MAX_DIMS);
    t->n_dims = (int)nd;
    uint64_t count = 1;
    for (int d = 0; d < t->n_dims; d++) {
        if ((st = rd_u64(c, &t->ne[d], t->name))) return st;
        if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX / count)
            return glim_fail(c->err, GLIM_E_FORMAT, "%s: tensor '%s' dimension %d is %llu "
                             "(zero, or the element count overflows)", c->what, t->name, d,
                             (unsigned long long)t->ne[d]);
        count *= t->ne[d];
    }
    if ((st = rd_u32(c, &t->type, t->name))) return st;
    size_t esz = ggml_type_size(t->type);
    if (!esz)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: tensor '%s' has ggml type %u, which this reader "
                         "does not support (F32, F16, BF16, F64, I8..I64 only)", c->what, t->name,
                         t->type);
    if (count > (uint64_t)INT64_MAX / esz)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: tensor '%s' is too large (%llu elements)",
                         c->what, t->name, (unsigned long long)count);
    t->nbytes = count * esz;
    return rd_u64(c, &t->offset, t->name);
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Finds a duplicate among n strings in O(n log n); returns it or NULL. */
static const char *find_duplicate(char **names, int n) {
    if (n < 2) return NULL;
    char **s = malloc((size_t)n * sizeof *s);
    if (!s) return NULL;
    memcpy(s, names, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_str_ptr);
    const char *dup = NULL;
    for (int i = 1; i < n && !dup; i++)
        if (!strcmp(s[i - 1], s[i])) dup = s[i];
    free(s);
    return dup;
}

static int cmp_tensor_off(const void *a, const void *b) {
    const glim_gguf_tensor *x = *(glim_gguf_tensor *const *)a, *y = *(glim_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static glim_status check_layout(glim_gguf *g, cursor *c, uint64_t align) {
    uint64_t ds = (c->off + align - 1) / align * align;
    if (ds > g->len && g->n_tensors > 0)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: truncated GGUF: the data section would start "
                         "at %llu but the file is %zu bytes", c->what, (unsigned long long)ds, g->len);
    g->data_start = ds;
    uint64_t data_len = ds <= g->len ? g->len - ds : 0;
    glim_gguf_tensor **by_off = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *by_off);
    if (!by_off) return glim_fail(c->err, GLIM_E_NOMEM, "%s: no memory", c->what);
    glim_status st = GLIM_OK;
    for (int i = 0; i < g->n_tensors && !st; i++) {
        glim_gguf_tensor *t = &g->tensors[i];
        by_off[i] = t;
        if (t->offset % align)
            st = glim_fail(c->err, GLIM_E_FORMAT, "%s: tensor '%s' offset %llu is not a multiple of "
                           "the alignment %llu", c->what, t->name, (unsigned long long)t->offset,
                           (unsigned long long)align);
        else if (t->offset > data_len || t->nbytes > data_len - t->offset)
            st = glim_fail(c->err, GLIM_E_FORMAT, "%s: tensor '%s' needs bytes %llu..%llu of the data "
                           "section, which holds %llu bytes (truncated or lying file)", c->what,
                           t->name, (unsigned long long)t->offset,
                           (unsigned long long)(t->offset + t->nbytes), (unsigned long long)data_len);
        else
            t->data = g->buf + ds + t->offset;
    }
    if (!st && g->n_tensors > 1) {
        qsort(by_off, (size_t)g->n_tensors, sizeof *by_off, cmp_tensor_off);
        for (int i = 1; i < g->n_tensors && !st; i++)
            if (by_off[i - 1]->offset + by_off[i - 1]->nbytes > by_off[i]->offset)
                st = glim_fail(c->err, GLIM_E_FORMAT, "%s: tensors '%s' and '%s' overlap in the data "
                               "section", c->what, by_off[i - 1]->name, by_off[i]->name);
    }
    free(by_off);
    return st;
}

static glim_status parse_body(glim_gguf *g, cursor *c) {
    char magic[4];
    glim_status st = take(c, magic, 4, "the magic");
    if (st) return st;
    if (memcmp(magic, GGUF_MAGIC, 4))
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: not a GGUF file (magic %02x %02x %02x %02x, "
                         "expected \"GGUF\")", c->what, (uint8_t)magic[0], (uint8_t)magic[1],
                         (uint8_t)magic[2], (uint8_t)magic[3]);
    if ((st = rd_u32(c, &g->version, "the version"))) return st;
    if (g->version != 2 && g->version != 3)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: GGUF version %u is not supported (2 or 3)",
                         c->what, g->version);
    uint64_t nt, nkv;
    if ((st = rd_u64(c, &nt, "the tensor count")) || (st = rd_u64(c, &nkv, "the KV count")))
        return st;
    size_t remain = c->len - c->off;
    /* A KV takes at least 13 bytes (key length, type, one-byte value); a tensor info 32. */
    if (nkv > remain / 13 || nt > remain / 32)
        return glim_fail(c->err, GLIM_E_FORMAT, "%s: header claims %llu KV pairs and %llu tensors, "
                         "which cannot fit in the %zu bytes that follow", c->what,
                         (unsigned long long)nkv, (unsigned long long)nt, remain);
    g->n_kv = (int)nkv;
    g->n_tensors = (int)nt;
    g->kv = calloc(nkv ? (size_t)nkv : 1, sizeof *g->kv);
    g->tensors = calloc(nt ? (size_t)nt : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) return glim_fail(c->err, GLIM_E_NOMEM, "%s: no memory", c->what);
    for (int i = 0; i < g->n_kv; i++)
        if ((st = rd_kv(c, &g->kv[i], i))) return st;
    for (int i = 0; i < g->n_tensors; i++)
        if ((st = rd_tensor_info(c, &g->tensors[i], i))) return st;

    char **names = malloc((size_t)(g->n_kv > g->n_tensors ? g->n_kv : g->n_tensors) * sizeof *names + 1);
    if (!names) return glim_fail(c->err, GLIM_E_NOMEM, "%s: no memory", c->what);
    for (int i = 0; i < g->n_kv; i++) names[i] = g->kv[i].key;
    const char *dup = find_duplicate(names, g->n_kv);
    if (dup) st = glim_fail(c->err, GLIM_E_FORMAT, "%s: key '%s' appears twice", c->what, dup);
    for (int i = 0; !st && i < g->n_tensors; i++) names[i] = g->tensors[i].name;
    if (!st && (dup = find_duplicate(names, g->n_tensors)))
        st = glim_fail(c->err, GLIM_E_FORMAT, "%s: tensor '%s' appears twice", c->what, dup);
    free(names);
    if (st) return st;

    uint64_t align = GGUF_DEFAULT_ALIGNMENT;
    const glim_gguf_kv *a = glim_gguf_find_kv(g, "general.alignment");
    if (a) {
        if (a->type != GLIM_GGUF_U32 || a->v.u == 0 || (a->v.u & (a->v.u - 1)))
            return glim_fail(c->err, GLIM_E_FORMAT, "%s: general.alignment must be a u32 power of "
                             "two, got type %s value %llu", c->what, glim_gguf_vtype_name(a->type),
                             (unsigned long long)a->v.u);
        align = a->v.u;
    }
    return check_layout(g, c, align);
}

glim_status glim_gguf_parse(const void *buf, size_t len, const char *what, glim_gguf **out,
                            glim_error *err) {
    *out = NULL;
    glim_gguf *g = calloc(1, sizeof *g);
    if (!g) return glim_fail(err, GLIM_E_NOMEM, "%s: no memory", what);
    g->buf = malloc(len ? len : 1);
    if (!g->buf) {
        free(g);
        return glim_fail(err, GLIM_E_NOMEM, "%s: no memory for %zu bytes", what, len);
    }
    memcpy(g->buf, buf, len);
    g->len = len;
    cursor c = {g->buf, len, 0, what, err};
    glim_status st = parse_body(g, &c);
    if (st) {
        glim_gguf_free(g);
        return st;
    }
    *out = g;
    return GLIM_OK;
}

glim_status glim_gguf_read_file(const char *path, glim_gguf **out, glim_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return glim_fail(err, GLIM_E_IO, "cannot open %s: %s", path, strerror(errno));
    glim_status st = GLIM_OK;
    uint8_t *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0)
        st = glim_fail(err, GLIM_E_IO, "cannot size %s: %s", path, strerror(errno));
    else if (!(buf = malloc(n ? (size_t)n : 1)))
        st = glim_fail(err, GLIM_E_NOMEM, "no memory to read %s (%ld bytes)", path, n);
    else if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        st = glim_fail(err, GLIM_E_IO, "cannot read %s: %s", path, strerror(errno));
    fclose(f);
    if (!st) st = glim_gguf_parse(buf, (size_t)n, path, out, err);
    free(buf);
    return st;
}

void glim_gguf_free(glim_gguf *g) {
    if (!g) return;
    for (int i = 0; g->kv && i < g->n_kv; i++) {
        glim_gguf_kv *kv = &g->kv[i];
        free(kv->key);
        free(kv->str);
        if (kv->type == GLIM_GGUF_ARRAY && kv->arr_type == GLIM_GGUF_STRING && kv->arr)
            for (uint64_t j = 0; j < kv->n; j++) free(((char **)kv->arr)[j]);
        free(kv->arr);
    }
    for (int i = 0; g->tensors && i < g->n_tensors; i++) free(g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    free(g->buf);
    free(g);
}

uint32_t glim_gguf_version(const glim_gguf *g) { return g->version; }
int glim_gguf_n_kv(const glim_gguf *g) { return g->n_kv; }
const glim_gguf_kv *glim_gguf_kv_at(const glim_gguf *g, int i) {
    return i >= 0 && i < g->n_kv ? &g->kv[i] : NULL;
}
int glim_gguf_n_tensors(const glim_gguf *g) { return g->n_tensors; }
const glim_gguf_tensor *glim_gguf_tensor_at(const glim_gguf *g, int i) {
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const glim_gguf_kv *glim_gguf_find_kv(const glim_gguf *g, const char *key) {
    for (int i = 0; i < g->n_kv; i++)
        if (g->kv[i].key && !strcmp(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

const glim_gguf_tensor *glim_gguf_find_tensor(const glim_gguf *g, const char *name) {
    for (int i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].name && !strcmp(g->tensors[i].name, name)) return &g->tensors[i];
    return NULL;
}

const char *glim_gguf_get_str(const glim_gguf *g, const char *key) {
    const glim_gguf_kv *kv = glim_gguf_find_kv(g, key);
    return kv && kv->type == GLIM_GGUF_STRING ? kv->str : NULL;
}

int glim_gguf_get_int(const glim_gguf *g, const char *key, int64_t *out) {
    const glim_gguf_kv *kv = glim_gguf_find_kv(g, key);
    if (!kv) return -1;
    switch (kv->type) {
    case GLIM_GGUF_U8: case GLIM_GGUF_U16: case GLIM_GGUF_U32: *out = (int64_t)kv->v.u; return 0;
    case GLIM_GGUF_U64:
        if (kv->v.u > (uint64_t)INT64_MAX) return -1;
        *out = (int64_t)kv->v.u;
        return 0;
    case GLIM_GGUF_I8: case GLIM_GGUF_I16: case GLIM_GGUF_I32: case GLIM_GGUF_I64:
        *out = kv->v.i;
        return 0;
    default: return -1;
    }
}

/* ---- writing ------------------------------------------------------------------------------ */

typedef struct wkv {
    char *key;
    glim_gguf_vtype type;
    uint8_t val[8];
    char *str;
} wkv;

typedef struct wtensor {
    char *name;
    int n_dims;
    uint64_t ne[GLIM_GGUF_MAX_DIMS];
    float *data;
    uint64_t count;
} wtensor;

struct glim_gguf_writer {
    wkv *kv;
    int n_kv, cap_kv;
    wtensor *t;
    int n_t, cap_t;
};

glim_gguf_writer *glim_gguf_writer_new(void) { return calloc(1, sizeof(glim_gguf_writer)); }

void glim_gguf_writer_free(glim_gguf_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].str);
    }
    for (int i = 0; i < w->n_t; i++) {
        free(w->t[i].name);
        free(w->t[i].data);
    }
    free(w->kv);
    free(w->t);
    free(w);
}

static glim_status add_kv(glim_gguf_writer *w, const char *key, glim_gguf_vtype type,
                          const void *val, size_t vsz, const char *str, glim_error *err) {
    if (!key || !*key) return glim_fail(err, GLIM_E_ARG, "GGUF writer: empty key");
    for (int i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, key))
            return glim_fail(err, GLIM_E_ARG, "GGUF writer: key '%s' set twice", key);
    if (w->n_kv == w->cap_kv) {
        int cap = w->cap_kv ? 2 * w->cap_kv : 8;
        wkv *p = realloc(w->kv, (size_t)cap * sizeof *p);
        if (!p) return glim_fail(err, GLIM_E_NOMEM, "GGUF writer: no memory");
        w->kv = p;
        w->cap_kv = cap;
    }
    wkv *k = &w->kv[w->n_kv];
    memset(k, 0, sizeof *k);
    k->key = strdup(key);
    k->type = type;
    if (val) memcpy(k->val, val, vsz);
    if (str) k->str = strdup(str);
    if (!k->key || (str && !k->str)) {
        free(k->key);
        free(k->str);
        return glim_fail(err, GLIM_E_NOMEM, "GGUF writer: no memory");
    }
    w->n_kv++;
    return GLIM_OK;
}

glim_status glim_gguf_set_str(glim_gguf_writer *w, const char *key, const char *value,
                              glim_error *err) {
    return add_kv(w, key, GLIM_GGUF_STRING, NULL, 0, value ? value : "", err);
}
glim_status glim_gguf_set_i32(glim_gguf_writer *w, const char *key, int32_t v, glim_error *err) {
    return add_kv(w, key, GLIM_GGUF_I32, &v, 4, NULL, err);
}
glim_status glim_gguf_set_u32(glim_gguf_writer *w, const char *key, uint32_t v, glim_error *err) {
    return add_kv(w, key, GLIM_GGUF_U32, &v, 4, NULL, err);
}
glim_status glim_gguf_set_f32(glim_gguf_writer *w, const char *key, float v, glim_error *err) {
    return add_kv(w, key, GLIM_GGUF_F32, &v, 4, NULL, err);
}

glim_status glim_gguf_add_f32(glim_gguf_writer *w, const char *name, int n_dims,
                              const uint64_t *ne, const float *data, glim_error *err) {
    if (!name || !*name) return glim_fail(err, GLIM_E_ARG, "GGUF writer: empty tensor name");
    if (n_dims < 1 || n_dims > GLIM_GGUF_MAX_DIMS)
        return glim_fail(err, GLIM_E_ARG, "GGUF writer: tensor '%s' has %d dims, expected 1..%d",
                         name, n_dims, GLIM_GGUF_MAX_DIMS);
    for (int i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name))
            return glim_fail(err, GLIM_E_ARG, "GGUF writer: tensor '%s' added twice", name);
    uint64_t count = 1;
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > ((uint64_t)1 << 40) / count)
            return glim_fail(err, GLIM_E_ARG, "GGUF writer: tensor '%s' dimension %d is %llu", name,
                             d, (unsigned long long)ne[d]);
        count *= ne[d];
    }
    if (w->n_t == w->cap_t) {
        int cap = w->cap_t ? 2 * w->cap_t : 8;
        wtensor *p = realloc(w->t, (size_t)cap * sizeof *p);
        if (!p) return glim_fail(err, GLIM_E_NOMEM, "GGUF writer: no memory");
        w->t = p;
        w->cap_t = cap;
    }
    wtensor *t = &w->t[w->n_t];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    t->data = malloc((size_t)count * sizeof(float));
    if (!t->name || !t->data) {
        free(t->name);
        free(t->data);
        return glim_fail(err, GLIM_E_NOMEM, "GGUF writer: no memory for tensor '%s'", name);
    }
    memcpy(t->data, data, (size_t)count * sizeof(float));
    t->n_dims = n_dims;
    memcpy(t->ne, ne, (size_t)n_dims * sizeof *ne);
    t->count = count;
    w->n_t++;
    return GLIM_OK;
}

typedef struct obuf {
    uint8_t *p;
    size_t len, cap;
    int oom;
} obuf;

static void put(obuf *b, const void *src, size_t n) {
    if (b->oom) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (src) memcpy(b->p + b->len, src, n);
    else memset(b->p + b->len, 0, n);
    b->len += n;
}
static void put_u32(obuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(obuf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(obuf *b, const char *s) {
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void pad_to(obuf *b, size_t align) { put(b, NULL, (align - b->len % align) % align); }

glim_status glim_gguf_serialize(const glim_gguf_writer *w, uint8_t **out, size_t *len,
                                glim_error *err) {
    obuf b = {0};
    put(&b, GGUF_MAGIC, 4);
    put_u32(&b, 3);
    put_u64(&b, (uint64_t)w->n_t);
    put_u64(&b, (uint64_t)w->n_kv);
    for (int i = 0; i < w->n_kv; i++) {
        const wkv *k = &w->kv[i];
        put_str(&b, k->key);
        put_u32(&b, (uint32_t)k->type);
        if (k->type == GLIM_GGUF_STRING) put_str(&b, k->str);
        else put(&b, k->val, vtype_size(k->type));
    }
    uint64_t off = 0;
    for (int i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        put_str(&b, t->name);
        put_u32(&b, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) put_u64(&b, t->ne[d]);
        put_u32(&b, GLIM_GGML_F32);
        put_u64(&b, off);
        off += (t->count * 4 + GGUF_DEFAULT_ALIGNMENT - 1) / GGUF_DEFAULT_ALIGNMENT * GGUF_DEFAULT_ALIGNMENT;
    }
    pad_to(&b, GGUF_DEFAULT_ALIGNMENT);
    for (int i = 0; i < w->n_t; i++) {
        put(&b, w->t[i].data, (size_t)w->t[i].count * 4);
        pad_to(&b, GGUF_DEFAULT_ALIGNMENT);
    }
    if (b.oom) {
        free(b.p);
        return glim_fail(err, GLIM_E_NOMEM, "GGUF writer: no memory for the file image");
    }
    *out = b.p;
    *len = b.len;
    return GLIM_OK;
}

glim_status glim_gguf_write(const glim_gguf_writer *w, const char *path, glim_error *err) {
    uint8_t *img;
    size_t len;
    glim_status st = glim_gguf_serialize(w, &img, &len, err);
    if (st) return st;
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) {
        free(img);
        return glim_fail(err, GLIM_E_NOMEM, "no memory");
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    if (!f) st = glim_fail(err, GLIM_E_IO, "cannot create %s: %s", tmp, strerror(errno));
    else {
        int bad = fwrite(img, 1, len, f) != len;
        bad |= fclose(f) != 0;
        if (bad) st = glim_fail(err, GLIM_E_IO, "cannot write %s: %s", tmp, strerror(errno));
        else if (rename(tmp, path) != 0)
            st = glim_fail(err, GLIM_E_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        if (st) remove(tmp);
    }
    free(tmp);
    free(img);
    return st;
}
