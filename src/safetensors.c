/* safetensors.c: the safetensors reader (mmap, strict header validation, sharded checkpoints
 * through model.safetensors.index.json, hash lookup by name) and writer (tmp file + rename).
 *
 * File layout: an 8-byte little-endian u64 header length N, N bytes of JSON (an object of
 * name -> {"dtype", "shape", "data_offsets"} plus an optional "__metadata__" string map), then
 * the data region; data_offsets are relative to the start of the data region.
 *
 * Endianness: we assume a little-endian host (x86-64, arm64). The length prefix is decoded
 * explicitly, but tensor data is handed out as mapped, i.e. in the file's little-endian order. */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host"
#endif

/* A header larger than this is corrupt, not a checkpoint (the reference reader's limit). */
#define ST_MAX_HEADER 100000000ull
#define ST_INDEX_NAME "model.safetensors.index.json"
#define ST_SINGLE_NAME "model.safetensors"

typedef struct st_file {
    char *path;
    void *map;
    size_t size;
} st_file;

struct glim_st_set {
    glim_tensor *tensors;
    int n, cap;
    st_file *files;
    int n_files, cap_files;
    uint32_t *slots; /* open addressing: tensor index + 1, 0 = empty */
    size_t mask;     /* slot count - 1 (a power of two) */
    char **meta_keys, **meta_values;
    int n_meta, cap_meta;
};

/* ---------------------------------------------------------------------------------------------
 * Small helpers */

static char *st_strdup(const char *s) {
    size_t len = strlen(s) + 1;
    char *p = malloc(len);
    if (p) memcpy(p, s, len);
    return p;
}

static char *st_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

static uint64_t st_hash(const char *s) { /* FNV-1a, 64-bit */
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Grows *arr (of elem bytes each) so it holds at least need elements. */
static int st_reserve(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return 0;
    int nc = *cap ? *cap : 16;
    while (nc < need) nc *= 2;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

static glim_st_set *st_new(void) { return calloc(1, sizeof(glim_st_set)); }

void glim_st_close(glim_st_set *set) {
    if (!set) return;
    for (int i = 0; i < set->n; i++) free((char *)set->tensors[i].name);
    for (int i = 0; i < set->n_files; i++) {
        if (set->files[i].map) munmap(set->files[i].map, set->files[i].size);
        free(set->files[i].path);
    }
    for (int i = 0; i < set->n_meta; i++) {
        free(set->meta_keys[i]);
        free(set->meta_values[i]);
    }
    free(set->tensors);
    free(set->files);
    free(set->slots);
    free(set->meta_keys);
    free(set->meta_values);
    free(set);
}

/* Adds key -> value unless key is already present (first writer wins). */
static int st_add_meta(glim_st_set *s, const char *key, const char *value) {
    if (glim_st_metadata(s, key)) return 0;
    int cap = s->cap_meta;
    if (st_reserve((void **)&s->meta_keys, &cap, s->n_meta + 1, sizeof(char *))) return -1;
    cap = s->cap_meta;
    if (st_reserve((void **)&s->meta_values, &cap, s->n_meta + 1, sizeof(char *))) return -1;
    s->cap_meta = cap;
    char *k = st_strdup(key), *v = st_strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    s->meta_keys[s->n_meta] = k;
    s->meta_values[s->n_meta] = v;
    s->n_meta++;
    return 0;
}

/* Builds the name index. A name seen twice is an error naming both files. */
static glim_status st_build_hash(glim_st_set *s, glim_error *err) {
    size_t cap = 16;
    while (cap < (size_t)s->n * 2) cap *= 2;
    free(s->slots);
    s->slots = calloc(cap, sizeof(uint32_t));
    if (!s->slots) return glim_fail(err, GLIM_E_NOMEM, "safetensors: out of memory for the name index");
    s->mask = cap - 1;
    for (int i = 0; i < s->n; i++) {
        const char *name = s->tensors[i].name;
        size_t h = (size_t)st_hash(name) & s->mask;
        while (s->slots[h]) {
            const glim_tensor *o = &s->tensors[s->slots[h] - 1];
            if (strcmp(o->name, name) == 0)
                return glim_fail(err, GLIM_E_FORMAT, "tensor '%s' appears twice: in %s and in %s",
                                 name, s->files[o->file_index].path,
                                 s->files[s->tensors[i].file_index].path);
            h = (h + 1) & s->mask;
        }
        s->slots[h] = (uint32_t)i + 1;
    }
    return GLIM_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Parsing one tensor entry */

/* Reads a JSON array of non-negative integers that must fit json_int_t. */
static glim_status st_parse_shape(const char *path, const char *name, json_t *shape, glim_tensor *t,
                                  uint64_t *elems, glim_error *err) {
    if (!json_is_array(shape))
        return glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s': \"shape\" is not an array", path, name);
    size_t nd = json_array_size(shape);
    if (nd > GLIM_MAX_DIMS)
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: tensor '%s': \"shape\" has %zu dims, at most %d are supported", path,
                         name, nd, GLIM_MAX_DIMS);
    uint64_t prod = 1;
    int overflow = 0;
    for (size_t d = 0; d < nd; d++) {
        json_t *v = json_array_get(shape, d);
        if (!json_is_integer(v))
            return glim_fail(err, GLIM_E_FORMAT,
                             "%s: tensor '%s': \"shape\"[%zu] is not an integer", path, name, d);
        json_int_t x = json_integer_value(v);
        if (x < 0)
            return glim_fail(err, GLIM_E_FORMAT,
                             "%s: tensor '%s': \"shape\"[%zu] is negative (%lld)", path, name, d,
                             (long long)x);
        t->shape[d] = (int64_t)x;
        if (x != 0 && prod > UINT64_MAX / (uint64_t)x) overflow = 1;
        else prod *= (uint64_t)x;
    }
    /* A zero dimension makes the product 0 whatever the others are, overflow or not. */
    for (size_t d = 0; d < nd; d++)
        if (t->shape[d] == 0) overflow = 0, prod = 0;
    if (overflow)
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: tensor '%s': \"shape\" element count overflows 64 bits", path, name);
    t->ndim = (int)nd;
    *elems = prod;
    return GLIM_OK;
}

/* Reads [begin, end] and checks them against the data region and the byte size. */
static glim_status st_parse_offsets(const char *path, const char *name, json_t *offs,
                                    uint64_t data_size, uint64_t nbytes, uint64_t *begin_out,
                                    glim_error *err) {
    if (!json_is_array(offs) || json_array_size(offs) != 2)
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: tensor '%s': \"data_offsets\" is not an array [begin, end]", path, name);
    json_t *jb = json_array_get(offs, 0), *je = json_array_get(offs, 1);
    if (!json_is_integer(jb) || !json_is_integer(je))
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: tensor '%s': \"data_offsets\" entries are not integers", path, name);
    json_int_t b = json_integer_value(jb), e = json_integer_value(je);
    if (b < 0 || e < 0)
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: tensor '%s': \"data_offsets\" [%lld, %lld] has a negative offset", path,
                         name, (long long)b, (long long)e);
    if (b > e)
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: tensor '%s': \"data_offsets\" begin %lld is after end %lld", path, name,
                         (long long)b, (long long)e);
    if ((uint64_t)e > data_size)
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: tensor '%s': \"data_offsets\" end %lld is past the end of the data "
                         "region (%llu bytes; file truncated?)",
                         path, name, (long long)e, (unsigned long long)data_size);
    if ((uint64_t)(e - b) != nbytes)
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: tensor '%s': \"data_offsets\" span %lld bytes but shape x dtype needs "
                         "%llu bytes",
                         path, name, (long long)(e - b), (unsigned long long)nbytes);
    *begin_out = (uint64_t)b;
    return GLIM_OK;
}

static glim_status st_parse_tensor(const char *path, const char *name, json_t *entry,
                                   uint64_t data_size, glim_tensor *t, uint64_t *begin,
                                   glim_error *err) {
    if (name[0] == '\0')
        return glim_fail(err, GLIM_E_FORMAT, "%s: a tensor has an empty name", path);
    if (!json_is_object(entry))
        return glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s': entry is not a JSON object", path,
                         name);
    const char *key;
    json_t *v;
    json_object_foreach(entry, key, v) {
        if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
            return glim_fail(err, GLIM_E_FORMAT,
                             "%s: tensor '%s': unknown key \"%s\" (expected dtype, shape, "
                             "data_offsets)",
                             path, name, key);
    }
    json_t *jd = json_object_get(entry, "dtype"), *js = json_object_get(entry, "shape"),
           *jo = json_object_get(entry, "data_offsets");
    const char *missing = !jd ? "dtype" : !js ? "shape" : !jo ? "data_offsets" : NULL;
    if (missing)
        return glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s': missing \"%s\"", path, name, missing);
    if (!json_is_string(jd))
        return glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s': \"dtype\" is not a string", path,
                         name);
    if (glim_dtype_parse(json_string_value(jd), &t->dtype) != 0)
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: tensor '%s': unknown dtype \"%s\" (expected one of BOOL U8 I8 U16 "
                         "I16 F16 BF16 U32 I32 F32 U64 I64 F64)",
                         path, name, json_string_value(jd));
    uint64_t elems = 0;
    glim_status st = st_parse_shape(path, name, js, t, &elems, err);
    if (st) return st;
    uint64_t esize = glim_dtype_size(t->dtype);
    if (elems > UINT64_MAX / esize)
        return glim_fail(err, GLIM_E_FORMAT, "%s: tensor '%s': byte size overflows 64 bits", path,
                         name);
    t->nbytes = elems * esize;
    return st_parse_offsets(path, name, jo, data_size, t->nbytes, begin, err);
}

static glim_status st_parse_metadata(glim_st_set *s, const char *path, json_t *meta,
                                     glim_error *err) {
    if (!json_is_object(meta))
        return glim_fail(err, GLIM_E_FORMAT, "%s: \"__metadata__\" is not a JSON object", path);
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        if (!json_is_string(v))
            return glim_fail(err, GLIM_E_FORMAT,
                             "%s: \"__metadata__\" value for \"%s\" is not a string", path, key);
        if (st_add_meta(s, key, json_string_value(v)))
            return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory reading metadata", path);
    }
    return GLIM_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Mapping one file and adding its tensors */

typedef struct st_range {
    uint64_t begin, end;
    int idx;
} st_range;

static int st_range_cmp(const void *a, const void *b) {
    const st_range *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

/* Tensors [first, s->n) came from one file with the given begins; no two byte ranges may share
 * a byte (zero-size tensors share none). */
static glim_status st_check_overlap(glim_st_set *s, const char *path, int first,
                                    const uint64_t *begins, glim_error *err) {
    int n = s->n - first;
    if (n < 2) return GLIM_OK;
    st_range *r = malloc((size_t)n * sizeof *r);
    if (!r) return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", path);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (s->tensors[first + i].nbytes == 0) continue;
        r[m].begin = begins[i];
        r[m].end = begins[i] + s->tensors[first + i].nbytes;
        r[m].idx = first + i;
        m++;
    }
    qsort(r, (size_t)m, sizeof *r, st_range_cmp);
    glim_status st = GLIM_OK;
    for (int i = 1; i < m; i++) {
        if (r[i].begin < r[i - 1].end) {
            st = glim_fail(err, GLIM_E_FORMAT,
                           "%s: tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap", path,
                           s->tensors[r[i - 1].idx].name, (unsigned long long)r[i - 1].begin,
                           (unsigned long long)r[i - 1].end, s->tensors[r[i].idx].name,
                           (unsigned long long)r[i].begin, (unsigned long long)r[i].end);
            break;
        }
    }
    free(r);
    return st;
}

/* Walks the header object and appends its tensors (file index fi) to s. */
static glim_status st_add_header(glim_st_set *s, int fi, json_t *root, const uint8_t *data,
                                 uint64_t data_size, glim_error *err) {
    const char *path = s->files[fi].path;
    size_t count = json_object_size(root);
    uint64_t *begins = malloc((count ? count : 1) * sizeof *begins);
    if (!begins) return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", path);
    int first = s->n;
    glim_status st = GLIM_OK;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            st = st_parse_metadata(s, path, v, err);
            if (st) break;
            continue;
        }
        if (s->n >= INT32_MAX - 1 || st_reserve((void **)&s->tensors, &s->cap, s->n + 1,
                                                sizeof(glim_tensor))) {
            st = glim_fail(err, GLIM_E_NOMEM, "%s: out of memory for tensor '%s'", path, key);
            break;
        }
        glim_tensor t;
        memset(&t, 0, sizeof t);
        uint64_t begin = 0;
        st = st_parse_tensor(path, key, v, data_size, &t, &begin, err);
        if (st) break;
        t.name = st_strdup(key);
        if (!t.name) {
            st = glim_fail(err, GLIM_E_NOMEM, "%s: out of memory for tensor '%s'", path, key);
            break;
        }
        t.data = data + begin;
        t.file_index = fi;
        begins[s->n - first] = begin;
        s->tensors[s->n++] = t;
    }
    if (!st) st = st_check_overlap(s, path, first, begins, err);
    free(begins);
    return st;
}

/* Maps path read-only and appends its tensors and metadata to s. */
static glim_status st_add_file(glim_st_set *s, const char *path, glim_error *err) {
    if (st_reserve((void **)&s->files, &s->cap_files, s->n_files + 1, sizeof(st_file)))
        return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", path);
    int fi = s->n_files;
    st_file *f = &s->files[fi];
    memset(f, 0, sizeof *f);
    f->path = st_strdup(path);
    if (!f->path) return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", path);
    s->n_files++; /* from here on glim_st_close releases it */

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return glim_fail(err, GLIM_E_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return glim_fail(err, GLIM_E_IO, "cannot stat %s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return glim_fail(err, GLIM_E_IO, "%s is not a regular file", path);
    }
    uint64_t size = (uint64_t)sb.st_size;
    if (size < 8) {
        close(fd);
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: file is %llu bytes, shorter than the 8-byte header length", path,
                         (unsigned long long)size);
    }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd); /* the mapping stays valid without the descriptor */
    if (map == MAP_FAILED)
        return glim_fail(err, GLIM_E_IO, "cannot mmap %s: %s", path, strerror(map_errno));
    f->map = map;
    f->size = (size_t)size;

    const uint8_t *p = map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | p[i]; /* little-endian u64 */
    if (hlen > ST_MAX_HEADER)
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: header length %llu exceeds the %llu-byte limit (corrupt file?)", path,
                         (unsigned long long)hlen, ST_MAX_HEADER);
    if (hlen > size - 8)
        return glim_fail(err, GLIM_E_FORMAT,
                         "%s: header length %llu is larger than the %llu bytes after the length "
                         "(file truncated?)",
                         path, (unsigned long long)hlen, (unsigned long long)(size - 8));
    json_error_t jerr;
    json_t *root = json_loadb((const char *)p + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return glim_fail(err, GLIM_E_FORMAT, "%s: header %s (line %d, column %d): %s", path,
                         json_error_code(&jerr) == json_error_duplicate_key
                             ? "names a tensor twice"
                             : "is not valid JSON",
                         jerr.line, jerr.column, jerr.text);
    glim_status st;
    if (!json_is_object(root))
        st = glim_fail(err, GLIM_E_FORMAT, "%s: header is not a JSON object", path);
    else
        st = st_add_header(s, fi, root, p + 8 + hlen, size - 8 - hlen, err);
    json_decref(root);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Opening */

glim_status glim_st_open_file(const char *path, glim_st_set **out, glim_error *err) {
    if (!out || !path) return glim_fail(err, GLIM_E_ARG, "glim_st_open_file: NULL argument");
    *out = NULL;
    glim_st_set *s = st_new();
    if (!s) return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", path);
    glim_status st = st_add_file(s, path, err);
    if (!st) st = st_build_hash(s, err);
    if (st) {
        glim_st_close(s);
        return st;
    }
    *out = s;
    return GLIM_OK;
}

/* Reads a whole (small) text file; NUL-terminated. */
static glim_status st_read_text(const char *path, char **buf, size_t *len, glim_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return glim_fail(err, GLIM_E_IO, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (n + 1 >= cap) {
            if (cap >= ST_MAX_HEADER) {
                free(b);
                fclose(f);
                return glim_fail(err, GLIM_E_FORMAT, "%s: larger than %llu bytes", path,
                                 ST_MAX_HEADER);
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (!b) return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", path);
    if (bad) {
        free(b);
        return glim_fail(err, GLIM_E_IO, "error reading %s", path);
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return GLIM_OK;
}

/* A shard name must be a plain file name inside the checkpoint directory. */
static int st_plain_name(const char *s) {
    return s[0] != '\0' && !strchr(s, '/') && !strstr(s, "..");
}

/* Every weight_map entry is in the shard it names, and every shard tensor is in weight_map. */
static glim_status st_check_index(glim_st_set *s, const char *index_path, json_t *wmap,
                                  char **shards, glim_error *err) {
    const char *name;
    json_t *v;
    json_object_foreach(wmap, name, v) {
        const glim_tensor *t = glim_st_find(s, name);
        const char *want = json_string_value(v);
        if (!t)
            return glim_fail(err, GLIM_E_FORMAT,
                             "%s: tensor '%s' is listed in shard %s but that shard has no such "
                             "tensor",
                             index_path, name, want);
        if (strcmp(shards[t->file_index], want) != 0)
            return glim_fail(err, GLIM_E_FORMAT,
                             "%s: tensor '%s' is listed in shard %s but is in shard %s",
                             index_path, name, want, shards[t->file_index]);
    }
    for (int i = 0; i < s->n; i++) {
        if (!json_object_get(wmap, s->tensors[i].name))
            return glim_fail(err, GLIM_E_FORMAT,
                             "%s: tensor '%s' in shard %s is not listed in the index's weight_map",
                             index_path, s->tensors[i].name, shards[s->tensors[i].file_index]);
    }
    return GLIM_OK;
}

/* The index's optional "metadata": string and integer values are kept (total_size is an
 * integer in Hugging Face indexes); other kinds are ignored. */
static glim_status st_index_metadata(glim_st_set *s, const char *index_path, json_t *meta,
                                     glim_error *err) {
    if (!meta) return GLIM_OK;
    if (!json_is_object(meta))
        return glim_fail(err, GLIM_E_FORMAT, "%s: \"metadata\" is not a JSON object", index_path);
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        char num[32];
        const char *val = NULL;
        if (json_is_string(v)) val = json_string_value(v);
        else if (json_is_integer(v)) {
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
            val = num;
        }
        if (val && st_add_meta(s, key, val))
            return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", index_path);
    }
    return GLIM_OK;
}

/* Opens every distinct shard named in weight_map (in order of first mention) into s;
 * shards[] receives the shard names by file index. */
static glim_status st_open_shards(glim_st_set *s, const char *dir, const char *index_path,
                                  json_t *wmap, char ***shards_out, int *n_shards,
                                  glim_error *err) {
    size_t cap = json_object_size(wmap);
    char **shards = calloc(cap ? cap : 1, sizeof(char *));
    if (!shards) return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", index_path);
    *shards_out = shards;
    *n_shards = 0;
    const char *name;
    json_t *v;
    json_object_foreach(wmap, name, v) {
        if (!json_is_string(v))
            return glim_fail(err, GLIM_E_FORMAT,
                             "%s: weight_map entry for tensor '%s' is not a string", index_path,
                             name);
        const char *shard = json_string_value(v);
        if (!st_plain_name(shard))
            return glim_fail(err, GLIM_E_FORMAT,
                             "%s: tensor '%s': shard name \"%s\" is not a plain file name (no '/' "
                             "or '..' allowed)",
                             index_path, name, shard);
        int known = 0;
        for (int i = 0; i < *n_shards && !known; i++) known = strcmp(shards[i], shard) == 0;
        if (known) continue;
        shards[*n_shards] = st_strdup(shard);
        if (!shards[*n_shards]) return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", index_path);
        (*n_shards)++;
        char *path = st_join(dir, shard);
        if (!path) return glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", index_path);
        glim_status st = st_add_file(s, path, err);
        free(path);
        if (st) {
            if (err) glim_fail_context(err, "shard of %s", index_path);
            return st;
        }
    }
    return GLIM_OK;
}

static glim_status st_open_index(const char *dir, const char *index_path, glim_st_set *s,
                                 glim_error *err) {
    char *text = NULL;
    size_t len = 0;
    glim_status st = st_read_text(index_path, &text, &len, err);
    if (st) return st;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!root)
        return glim_fail(err, GLIM_E_FORMAT, "%s: not valid JSON (line %d, column %d): %s",
                         index_path, jerr.line, jerr.column, jerr.text);
    json_t *wmap = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    char **shards = NULL;
    int n_shards = 0;
    if (!json_is_object(root))
        st = glim_fail(err, GLIM_E_FORMAT, "%s: not a JSON object", index_path);
    else if (!json_is_object(wmap))
        st = glim_fail(err, GLIM_E_FORMAT, "%s: \"weight_map\" is missing or not a JSON object",
                       index_path);
    else if (json_object_size(wmap) == 0)
        st = glim_fail(err, GLIM_E_FORMAT, "%s: \"weight_map\" lists no tensors", index_path);
    if (!st) st = st_index_metadata(s, index_path, json_object_get(root, "metadata"), err);
    if (!st) st = st_open_shards(s, dir, index_path, wmap, &shards, &n_shards, err);
    if (!st) st = st_build_hash(s, err);
    if (!st) st = st_check_index(s, index_path, wmap, shards, err);
    for (int i = 0; i < n_shards; i++) free(shards[i]);
    free(shards);
    json_decref(root);
    return st;
}

glim_status glim_st_open_dir(const char *dir, glim_st_set **out, glim_error *err) {
    if (!out || !dir) return glim_fail(err, GLIM_E_ARG, "glim_st_open_dir: NULL argument");
    *out = NULL;
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return glim_fail(err, GLIM_E_IO, "cannot open checkpoint directory %s: %s", dir,
                         strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return glim_fail(err, GLIM_E_IO, "checkpoint path %s is not a directory", dir);
    char *index_path = st_join(dir, ST_INDEX_NAME);
    char *single_path = st_join(dir, ST_SINGLE_NAME);
    glim_status st = GLIM_OK;
    if (!index_path || !single_path) {
        st = glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", dir);
    } else if (stat(index_path, &sb) == 0) {
        glim_st_set *s = st_new();
        if (!s) st = glim_fail(err, GLIM_E_NOMEM, "%s: out of memory", dir);
        else st = st_open_index(dir, index_path, s, err);
        if (st) glim_st_close(s);
        else *out = s;
    } else if (stat(single_path, &sb) == 0) {
        st = glim_st_open_file(single_path, out, err);
    } else {
        st = glim_fail(err, GLIM_E_IO, "no %s or %s in %s", ST_SINGLE_NAME, ST_INDEX_NAME, dir);
    }
    free(index_path);
    free(single_path);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Queries */

int glim_st_count(const glim_st_set *set) { return set ? set->n : 0; }

const glim_tensor *glim_st_at(const glim_st_set *set, int i) {
    return set && i >= 0 && i < set->n ? &set->tensors[i] : NULL;
}

const glim_tensor *glim_st_find(const glim_st_set *set, const char *name) {
    if (!set || !name || !set->slots) return NULL;
    size_t h = (size_t)st_hash(name) & set->mask;
    while (set->slots[h]) {
        const glim_tensor *t = &set->tensors[set->slots[h] - 1];
        if (strcmp(t->name, name) == 0) return t;
        h = (h + 1) & set->mask;
    }
    return NULL;
}

uint64_t glim_st_file_bytes(const glim_st_set *set) {
    uint64_t total = 0;
    for (int i = 0; set && i < set->n_files; i++) total += set->files[i].size;
    return total;
}

const char *glim_st_metadata(const glim_st_set *set, const char *key) {
    for (int i = 0; set && key && i < set->n_meta; i++)
        if (strcmp(set->meta_keys[i], key) == 0) return set->meta_values[i];
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Writing */

/* Checks the tensors and computes each one's byte size. */
static glim_status st_validate_out(const char *path, const glim_st_out *t, int n, uint64_t *nbytes,
                                   glim_error *err) {
    for (int i = 0; i < n; i++) {
        if (!t[i].name || !t[i].name[0])
            return glim_fail(err, GLIM_E_ARG, "writing %s: tensor #%d has an empty name", path, i);
        if (strcmp(t[i].name, "__metadata__") == 0)
            return glim_fail(err, GLIM_E_ARG, "writing %s: \"__metadata__\" is not a tensor name",
                             path);
        size_t es = glim_dtype_size(t[i].dtype);
        if (!es)
            return glim_fail(err, GLIM_E_ARG, "writing %s: tensor '%s': invalid dtype %d", path,
                             t[i].name, (int)t[i].dtype);
        if (t[i].ndim < 0 || t[i].ndim > GLIM_MAX_DIMS)
            return glim_fail(err, GLIM_E_ARG, "writing %s: tensor '%s': ndim %d not in [0, %d]",
                             path, t[i].name, t[i].ndim, GLIM_MAX_DIMS);
        uint64_t b = es;
        int zero = 0;
        for (int d = 0; d < t[i].ndim; d++) {
            int64_t x = t[i].shape[d];
            if (x < 0)
                return glim_fail(err, GLIM_E_ARG,
                                 "writing %s: tensor '%s': shape[%d] is negative (%lld)", path,
                                 t[i].name, d, (long long)x);
            if (x == 0) zero = 1;
            else if (b > (uint64_t)INT64_MAX / (uint64_t)x)
                return glim_fail(err, GLIM_E_ARG, "writing %s: tensor '%s': byte size overflows",
                                 path, t[i].name);
            else b *= (uint64_t)x;
        }
        nbytes[i] = zero ? 0 : b;
        if (nbytes[i] && !t[i].data)
            return glim_fail(err, GLIM_E_ARG, "writing %s: tensor '%s': data is NULL", path,
                             t[i].name);
    }
    return GLIM_OK;
}

/* Builds the header: "__metadata__" first (if any), then the tensors in order. */
static glim_status st_build_header(const char *path, const glim_st_out *t, int n,
                                   const uint64_t *nbytes, const char *const *mk,
                                   const char *const *mv, int n_meta, char **out, size_t *out_len,
                                   glim_error *err) {
    json_t *root = json_object();
    glim_status st = GLIM_OK;
    if (!root) return glim_fail(err, GLIM_E_NOMEM, "writing %s: out of memory", path);
    if (n_meta > 0) {
        json_t *meta = json_object();
        if (!meta || json_object_set_new(root, "__metadata__", meta))
            st = glim_fail(err, GLIM_E_NOMEM, "writing %s: out of memory", path);
        for (int i = 0; !st && i < n_meta; i++) {
            if (!mk[i] || !mv[i])
                st = glim_fail(err, GLIM_E_ARG, "writing %s: metadata #%d is NULL", path, i);
            else if (json_object_get(meta, mk[i]))
                st = glim_fail(err, GLIM_E_ARG, "writing %s: metadata key \"%s\" given twice",
                               path, mk[i]);
            else if (json_object_set_new(meta, mk[i], json_string(mv[i])))
                st = glim_fail(err, GLIM_E_ARG,
                               "writing %s: metadata \"%s\" is not valid UTF-8", path, mk[i]);
        }
    }
    uint64_t off = 0;
    for (int i = 0; !st && i < n; i++) {
        if (json_object_get(root, t[i].name)) {
            st = glim_fail(err, GLIM_E_ARG, "writing %s: tensor name '%s' given twice", path,
                           t[i].name);
            break;
        }
        json_t *shape = json_array();
        for (int d = 0; shape && d < t[i].ndim; d++)
            json_array_append_new(shape, json_integer((json_int_t)t[i].shape[d]));
        json_t *e = json_pack("{s:s, s:o, s:[I, I]}", "dtype", glim_dtype_name(t[i].dtype),
                              "shape", shape, "data_offsets", (json_int_t)off,
                              (json_int_t)(off + nbytes[i]));
        if (!e || json_object_set_new(root, t[i].name, e))
            st = glim_fail(err, GLIM_E_ARG,
                           "writing %s: tensor '%s': cannot encode (name not valid UTF-8?)", path,
                           t[i].name);
        off += nbytes[i];
    }
    if (!st) {
        char *s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!s) st = glim_fail(err, GLIM_E_NOMEM, "writing %s: out of memory", path);
        *out = s;
        *out_len = s ? strlen(s) : 0;
    }
    json_decref(root);
    return st;
}

static glim_status st_write_body(FILE *f, const char *tmp, const char *header, size_t hlen,
                                 const glim_st_out *t, int n, const uint64_t *nbytes,
                                 glim_error *err) {
    size_t padded = (hlen + 7) & ~(size_t)7; /* keeps the data region 8-byte aligned */
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    static const char spaces[8] = "        ";
    if (fwrite(len8, 1, 8, f) != 8 || fwrite(header, 1, hlen, f) != hlen ||
        fwrite(spaces, 1, padded - hlen, f) != padded - hlen)
        return glim_fail(err, GLIM_E_IO, "writing %s: %s", tmp, strerror(errno));
    for (int i = 0; i < n; i++) {
        if (nbytes[i] && fwrite(t[i].data, 1, nbytes[i], f) != nbytes[i])
            return glim_fail(err, GLIM_E_IO, "writing %s (tensor '%s'): %s", tmp, t[i].name,
                             strerror(errno));
    }
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
        return glim_fail(err, GLIM_E_IO, "writing %s: %s", tmp, strerror(errno));
    return GLIM_OK;
}

glim_status glim_st_write(const char *path, const glim_st_out *tensors, int n,
                          const char *const *meta_keys, const char *const *meta_values, int n_meta,
                          glim_error *err) {
    if (!path || n < 0 || (n > 0 && !tensors) || n_meta < 0 ||
        (n_meta > 0 && (!meta_keys || !meta_values)))
        return glim_fail(err, GLIM_E_ARG, "glim_st_write: invalid arguments");
    uint64_t *nbytes = malloc((size_t)(n ? n : 1) * sizeof *nbytes);
    if (!nbytes) return glim_fail(err, GLIM_E_NOMEM, "writing %s: out of memory", path);
    char *header = NULL, *tmp = NULL;
    size_t hlen = 0;
    glim_status st = st_validate_out(path, tensors, n, nbytes, err);
    if (!st)
        st = st_build_header(path, tensors, n, nbytes, meta_keys, meta_values, n_meta, &header,
                             &hlen, err);
    if (!st) {
        size_t pl = strlen(path);
        tmp = malloc(pl + 5);
        if (!tmp) st = glim_fail(err, GLIM_E_NOMEM, "writing %s: out of memory", path);
        else memcpy(tmp, path, pl), memcpy(tmp + pl, ".tmp", 5);
    }
    if (!st) {
        FILE *f = fopen(tmp, "wb");
        if (!f) {
            st = glim_fail(err, GLIM_E_IO, "cannot create %s: %s", tmp, strerror(errno));
        } else {
            st = st_write_body(f, tmp, header, hlen, tensors, n, nbytes, err);
            if (fclose(f) != 0 && !st)
                st = glim_fail(err, GLIM_E_IO, "closing %s: %s", tmp, strerror(errno));
            if (!st && rename(tmp, path) != 0)
                st = glim_fail(err, GLIM_E_IO, "renaming %s to %s: %s", tmp, path,
                               strerror(errno));
            if (st) unlink(tmp);
        }
    }
    free(tmp);
    free(header);
    free(nbytes);
    return st;
}
