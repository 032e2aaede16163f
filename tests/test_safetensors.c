/* test_safetensors.c: the safetensors reader and writer: round trips of every dtype (with a
 * scalar and a zero-size tensor) and metadata, sharded directories through an index, every
 * malformed-input check (status and a message naming the file / tensor / field), writer
 * argument checks, and a fixed-seed fuzz loop over corrupted and truncated files.
 * Bad-input files are built by hand here (raw header text), not by the writer under test. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dtype.h"
#include "safetensors.h"

static char tmpdir[256];
static uint64_t rng_state;

static uint64_t rng_next(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill_random(void *p, size_t n) {
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        uint8_t v = (uint8_t)rng_next();
        b[i] = v ? v : 1; /* non-zero, so a zeroed read can never pass a compare */
    }
}

static const char *tpath(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) & 3;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static int write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(sz > 0 ? (size_t)sz : 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)sz;
    return b;
}

/* A raw file: 8-byte little-endian length, the header text as given, then data_len random
 * bytes. */
static int make_raw(const char *path, const char *header, size_t data_len) {
    size_t h = strlen(header), n = 8 + h + data_len;
    uint8_t *b = malloc(n);
    if (!b) return -1;
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    fill_random(b + 8 + h, data_len);
    int r = write_bytes(path, b, n);
    free(b);
    return r;
}

static int file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Opens path (a file, or a directory when dir) expecting failure with code, and a message that
 * contains every non-NULL needle. Prints the message so the table of errors can be read off. */
static void expect_fail(const char *label, const char *path, int dir, glim_status code,
                        const char *n1, const char *n2, const char *n3) {
    glim_st_set *s = (glim_st_set *)0x1;
    glim_error err;
    memset(&err, 0, sizeof err);
    glim_status st = dir ? glim_st_open_dir(path, &s, &err) : glim_st_open_file(path, &s, &err);
    printf("  [%s] %s: %s\n", label, glim_status_name(st), err.message);
    CHECK(st == code, "%s: status %s, expected %s", label, glim_status_name(st),
          glim_status_name(code));
    CHECK(err.code == st, "%s: err.code %d != status %d", label, err.code, st);
    CHECK(s == NULL, "%s: *out not cleared on failure", label);
    CHECK(err.message[0] != '\0', "%s: empty message", label);
    const char *needles[3] = {n1, n2, n3};
    for (int i = 0; i < 3; i++)
        if (needles[i])
            CHECK(strstr(err.message, needles[i]), "%s: message \"%s\" lacks \"%s\"", label,
                  err.message, needles[i]);
    if (st == GLIM_OK) glim_st_close(s);
}

static size_t nelem(const glim_st_out *t) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    return n;
}

/* ---------------------------------------------------------------------------------------------
 * Round trip */

#define RT_N (GLIM_DT_COUNT + 2)

static void test_round_trip(void) {
    glim_st_out t[RT_N];
    void *bufs[RT_N];
    char names[RT_N][64];
    size_t nb[RT_N];
    memset(t, 0, sizeof t);
    for (int i = 0; i < RT_N; i++) {
        t[i].name = names[i];
        if (i < GLIM_DT_COUNT) { /* every dtype, odd shapes of 1..4 dims */
            t[i].dtype = (glim_dtype)i;
            snprintf(names[i], sizeof names[i], "layer.%d.%s", i, glim_dtype_name(t[i].dtype));
            t[i].ndim = 1 + (int)(rng_next() % 4);
            for (int d = 0; d < t[i].ndim; d++) t[i].shape[d] = 1 + 2 * (int64_t)(rng_next() % 4);
        } else if (i == GLIM_DT_COUNT) { /* 0-d scalar */
            t[i].dtype = GLIM_DT_F64;
            snprintf(names[i], sizeof names[i], "scalar");
            t[i].ndim = 0;
        } else { /* zero-size */
            t[i].dtype = GLIM_DT_BF16;
            snprintf(names[i], sizeof names[i], "empty");
            t[i].ndim = 3;
            t[i].shape[0] = 4, t[i].shape[1] = 0, t[i].shape[2] = 3;
        }
        nb[i] = nelem(&t[i]) * glim_dtype_size(t[i].dtype);
        bufs[i] = malloc(nb[i] ? nb[i] : 1);
        fill_random(bufs[i], nb[i]);
        t[i].data = nb[i] ? bufs[i] : NULL;
    }
    const char *mk[] = {"format", "note"}, *mv[] = {"pt", "h\xc3\xa9llo \"quoted\""};
    const char *path = tpath("rt.safetensors");
    glim_error err = {0};
    glim_status st = glim_st_write(path, t, RT_N, mk, mv, 2, &err);
    REQUIRE(st == GLIM_OK, "write: %s", err.message);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(!file_exists(tmp), "tmp file left behind");

    /* Layout read straight from the file, independently of the reader: header length a
     * multiple of 8, data contiguous in the given order, file size exact. */
    size_t fsz;
    uint8_t *raw = read_all(path, &fsz);
    REQUIRE(raw && fsz >= 8, "cannot read back %s", path);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | raw[i];
    CHECK(hlen % 8 == 0, "header length %" PRIu64 " not a multiple of 8", hlen);
    size_t total = 0;
    for (int i = 0; i < RT_N; i++) total += nb[i];
    CHECK(fsz == 8 + hlen + total, "file size %zu, expected %" PRIu64, fsz, 8 + hlen + total);
    size_t off = 8 + (size_t)hlen;
    for (int i = 0; i < RT_N && off + nb[i] <= fsz; i++) {
        CHECK(memcmp(raw + off, bufs[i], nb[i]) == 0, "raw bytes of %s differ", names[i]);
        off += nb[i];
    }
    CHECK(raw[8] == '{', "header does not start with '{'");

    glim_st_set *s = NULL;
    st = glim_st_open_file(path, &s, &err);
    REQUIRE(st == GLIM_OK, "open: %s", err.message);
    CHECK(glim_st_count(s) == RT_N, "count %d, expected %d", glim_st_count(s), RT_N);
    CHECK(glim_st_file_bytes(s) == fsz, "file_bytes %" PRIu64 " != %zu", glim_st_file_bytes(s), fsz);
    for (int i = 0; i < RT_N && i < glim_st_count(s); i++) {
        const glim_tensor *a = glim_st_at(s, i), *f = glim_st_find(s, names[i]);
        REQUIRE(f, "tensor %s not found", names[i]);
        CHECK(a == f, "glim_st_at(%d) is not %s (header order lost)", i, names[i]);
        CHECK(strcmp(f->name, names[i]) == 0, "name %s != %s", f->name, names[i]);
        CHECK(f->name != names[i], "name not owned by the set");
        CHECK(f->dtype == t[i].dtype, "%s: dtype %d != %d", names[i], f->dtype, t[i].dtype);
        CHECK(f->ndim == t[i].ndim, "%s: ndim %d != %d", names[i], f->ndim, t[i].ndim);
        for (int d = 0; d < t[i].ndim; d++)
            CHECK(f->shape[d] == t[i].shape[d], "%s: shape[%d] %" PRId64 " != %" PRId64, names[i],
                  d, f->shape[d], t[i].shape[d]);
        CHECK(f->nbytes == nb[i], "%s: nbytes %" PRIu64 " != %zu", names[i], f->nbytes, nb[i]);
        CHECK(f->file_index == 0, "%s: file_index %d", names[i], f->file_index);
        CHECK(nb[i] == 0 || memcmp(f->data, bufs[i], nb[i]) == 0, "%s: data differs", names[i]);
        size_t want_off = 0;
        for (int k = 0; k < i; k++) want_off += nb[k];
        CHECK((size_t)((const uint8_t *)f->data - (const uint8_t *)glim_st_at(s, 0)->data) ==
                  want_off,
              "%s: data not at offset %zu of the data region", names[i], want_off);
    }
    CHECK(((uintptr_t)glim_st_at(s, 0)->data % 8) == 0, "data region not 8-byte aligned");
    const char *fm = glim_st_metadata(s, "format"), *nm = glim_st_metadata(s, "note");
    CHECK(fm && strcmp(fm, "pt") == 0, "metadata format = %s", fm ? fm : "(null)");
    CHECK(nm && strcmp(nm, mv[1]) == 0, "metadata note = %s", nm ? nm : "(null)");
    CHECK(glim_st_metadata(s, "absent") == NULL, "absent metadata key found");
    CHECK(glim_st_find(s, "absent") == NULL, "absent tensor found");
    CHECK(glim_st_find(s, "layer.0") == NULL, "prefix of a name found");
    CHECK(glim_st_at(s, RT_N) == NULL && glim_st_at(s, -1) == NULL, "out-of-range at()");
    glim_st_close(s);

    /* Writing again over an existing file replaces it; no metadata, no tensors is valid. */
    st = glim_st_write(path, NULL, 0, NULL, NULL, 0, &err);
    CHECK(st == GLIM_OK, "empty write: %s", err.message);
    st = glim_st_open_file(path, &s, &err);
    CHECK(st == GLIM_OK, "empty open: %s", err.message);
    if (st == GLIM_OK) {
        CHECK(glim_st_count(s) == 0, "empty set has %d tensors", glim_st_count(s));
        CHECK(glim_st_metadata(s, "format") == NULL, "stale metadata");
        glim_st_close(s);
    }
    free(raw);
    for (int i = 0; i < RT_N; i++) free(bufs[i]);
}

/* Many names: every one is found through the hash, and each find returns its own entry. */
static void test_many_names(void) {
    enum { N = 3000 };
    static glim_st_out t[N];
    static char names[N][48];
    static uint16_t vals[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "model.language_model.layers.%d.w%d", i / 7, i % 7);
        vals[i] = (uint16_t)(rng_next() | 1);
        t[i].name = names[i];
        t[i].dtype = GLIM_DT_BF16;
        t[i].ndim = 1;
        t[i].shape[0] = 1;
        t[i].data = &vals[i];
    }
    glim_error err = {0};
    const char *path = tpath("many.safetensors");
    REQUIRE(glim_st_write(path, t, N, NULL, NULL, 0, &err) == GLIM_OK, "write: %s", err.message);
    glim_st_set *s = NULL;
    REQUIRE(glim_st_open_file(path, &s, &err) == GLIM_OK, "open: %s", err.message);
    CHECK(glim_st_count(s) == N, "count %d", glim_st_count(s));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        const glim_tensor *f = glim_st_find(s, names[i]);
        if (!f || f != glim_st_at(s, i) || memcmp(f->data, &vals[i], 2) != 0) bad++;
    }
    CHECK(bad == 0, "%d of %d lookups wrong", bad, N);
    CHECK(glim_st_find(s, "model.language_model.layers.0.w7") == NULL, "absent name found");
    glim_st_close(s);
}

/* ---------------------------------------------------------------------------------------------
 * Sharded directories */

#define SH1 "model-00001-of-00002.safetensors"
#define SH2 "model-00002-of-00002.safetensors"

/* Writes shard files into dir: shard 1 holds a, b; shard 2 holds c, d, e (plus extra names). */
static int write_shards(const char *dir, const char *extra1, const char *extra2, float *a_out) {
    static float data[5][6];
    fill_random(data, sizeof data);
    glim_st_out s1[3] = {{"a", GLIM_DT_F32, 2, {2, 3}, data[0]},
                         {"b", GLIM_DT_F32, 1, {5}, data[1]},
                         {extra1, GLIM_DT_F32, 1, {1}, data[4]}};
    glim_st_out s2[3] = {{"c", GLIM_DT_F32, 1, {6}, data[2]},
                         {"d", GLIM_DT_BF16, 2, {3, 2}, data[3]},
                         {extra2, GLIM_DT_F32, 1, {1}, data[4]}};
    const char *mk[] = {"format"}, *mv[] = {"pt"};
    char p[600];
    glim_error err;
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/" SH1, dir);
    if (glim_st_write(p, s1, extra1 ? 3 : 2, mk, mv, 1, &err)) return -1;
    snprintf(p, sizeof p, "%s/" SH2, dir);
    if (glim_st_write(p, s2, extra2 ? 3 : 2, NULL, NULL, 0, &err)) return -1;
    if (a_out) memcpy(a_out, data, sizeof data);
    return 0;
}

static int write_index(const char *dir, const char *weight_map) {
    char p[600], text[2048];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    snprintf(text, sizeof text, "{\"metadata\": {\"total_size\": 104}, \"weight_map\": {%s}}\n",
             weight_map);
    return write_bytes(p, text, strlen(text));
}

#define GOOD_MAP                                                                                  \
    "\"a\": \"" SH1 "\", \"c\": \"" SH2 "\", \"b\": \"" SH1 "\", \"d\": \"" SH2 "\""

static void test_sharded(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/sharded", tmpdir);
    float data[5][6];
    REQUIRE(write_shards(dir, NULL, NULL, &data[0][0]) == 0, "cannot write shards");
    REQUIRE(write_index(dir, GOOD_MAP) == 0, "cannot write index");
    glim_st_set *s = NULL;
    glim_error err = {0};
    REQUIRE(glim_st_open_dir(dir, &s, &err) == GLIM_OK, "open_dir: %s", err.message);
    CHECK(glim_st_count(s) == 4, "count %d, expected 4", glim_st_count(s));
    const char *names[4] = {"a", "b", "c", "d"};
    const size_t sizes[4] = {24, 20, 24, 12};
    for (int i = 0; i < 4; i++) {
        const glim_tensor *t = glim_st_find(s, names[i]);
        REQUIRE(t, "tensor %s not found", names[i]);
        CHECK(t->nbytes == sizes[i], "%s: nbytes %" PRIu64, names[i], t->nbytes);
        CHECK(memcmp(t->data, data[i], sizes[i]) == 0, "%s: data differs", names[i]);
        /* shards open in order of first mention in weight_map: SH1 (a) then SH2 (c) */
        CHECK(t->file_index == (i < 2 ? 0 : 1), "%s: file_index %d", names[i], t->file_index);
    }
    struct stat s1, s2;
    char p[600];
    snprintf(p, sizeof p, "%s/" SH1, dir);
    stat(p, &s1);
    snprintf(p, sizeof p, "%s/" SH2, dir);
    stat(p, &s2);
    CHECK(glim_st_file_bytes(s) == (uint64_t)(s1.st_size + s2.st_size), "file_bytes %" PRIu64,
          glim_st_file_bytes(s));
    const char *ts = glim_st_metadata(s, "total_size"), *fm = glim_st_metadata(s, "format");
    CHECK(ts && strcmp(ts, "104") == 0, "total_size metadata = %s", ts ? ts : "(null)");
    CHECK(fm && strcmp(fm, "pt") == 0, "shard metadata = %s", fm ? fm : "(null)");
    glim_st_close(s);

    /* A directory holding a single model.safetensors. */
    char single[512];
    snprintf(single, sizeof single, "%s/single", tmpdir);
    mkdir(single, 0755);
    float v[3];
    fill_random(v, sizeof v);
    glim_st_out o = {"only", GLIM_DT_F32, 1, {3}, v};
    snprintf(p, sizeof p, "%s/model.safetensors", single);
    REQUIRE(glim_st_write(p, &o, 1, NULL, NULL, 0, &err) == GLIM_OK, "write: %s", err.message);
    REQUIRE(glim_st_open_dir(single, &s, &err) == GLIM_OK, "open single dir: %s", err.message);
    const glim_tensor *t = glim_st_find(s, "only");
    CHECK(glim_st_count(s) == 1 && t && memcmp(t->data, v, sizeof v) == 0, "single dir content");
    glim_st_close(s);

    char empty[512];
    snprintf(empty, sizeof empty, "%s/emptydir", tmpdir);
    mkdir(empty, 0755);
    expect_fail("dir without checkpoint", empty, 1, GLIM_E_IO, "no model.safetensors", empty, NULL);
    snprintf(p, sizeof p, "%s/does-not-exist", tmpdir);
    expect_fail("missing dir", p, 1, GLIM_E_IO, "does-not-exist", NULL, NULL);
}

/* One bad sharded directory: shards (with optional extra tensors) and the given weight_map. */
static void bad_index(const char *label, const char *sub, const char *extra1, const char *extra2,
                      const char *map, glim_status code, const char *n1, const char *n2) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    if (write_shards(dir, extra1, extra2, NULL) || write_index(dir, map)) {
        CHECK(0, "%s: cannot build the directory", label);
        return;
    }
    expect_fail(label, dir, 1, code, n1, n2, NULL);
}

static void test_sharded_errors(void) {
    bad_index("index names a missing tensor", "ix_ghost", NULL, NULL,
              GOOD_MAP ", \"ghost.weight\": \"" SH2 "\"", GLIM_E_FORMAT, "ghost.weight", SH2);
    bad_index("tensor in the wrong shard", "ix_wrong", NULL, NULL,
              "\"a\": \"" SH1 "\", \"c\": \"" SH2 "\", \"b\": \"" SH2 "\", \"d\": \"" SH2 "\"",
              GLIM_E_FORMAT, "'b'", SH1);
    bad_index("missing shard file", "ix_noshard", NULL, NULL,
              GOOD_MAP ", \"z\": \"model-00003-of-00003.safetensors\"", GLIM_E_IO,
              "model-00003-of-00003.safetensors", NULL);
    bad_index("shard name with ..", "ix_dotdot", NULL, NULL,
              GOOD_MAP ", \"z\": \"../sharded/" SH1 "\"", GLIM_E_FORMAT, "../sharded", "'z'");
    bad_index("shard name with /", "ix_slash", NULL, NULL, GOOD_MAP ", \"z\": \"sub/x.safetensors\"",
              GLIM_E_FORMAT, "sub/x.safetensors", NULL);
    bad_index("shard tensor absent from index", "ix_unlisted", "stray.bias", NULL, GOOD_MAP,
              GLIM_E_FORMAT, "stray.bias", SH1);
    bad_index("duplicate name across shards", "ix_dup", "dup.w", "dup.w",
              GOOD_MAP ", \"dup.w\": \"" SH1 "\"", GLIM_E_FORMAT, "dup.w", SH2);
    bad_index("index weight_map value not a string", "ix_nonstr", NULL, NULL, GOOD_MAP ", \"q\": 3",
              GLIM_E_FORMAT, "'q'", NULL);
    bad_index("index with empty weight_map", "ix_emptymap", NULL, NULL, "", GLIM_E_FORMAT,
              "weight_map", NULL);

    char dir[512], p[600];
    snprintf(dir, sizeof dir, "%s/ix_badjson", tmpdir);
    REQUIRE(write_shards(dir, NULL, NULL, NULL) == 0, "shards");
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    write_bytes(p, "{\"weight_map\": {\"a\": ", 21);
    expect_fail("index not valid JSON", dir, 1, GLIM_E_FORMAT, "index.json", "line 1", NULL);
    write_bytes(p, "{\"weight_map\": {\"a\": \"x\", \"a\": \"y\"}}", 36);
    expect_fail("index duplicate key", dir, 1, GLIM_E_FORMAT, "duplicate", "index.json", NULL);
    write_bytes(p, "{\"metadata\": {}}", 16);
    expect_fail("index without weight_map", dir, 1, GLIM_E_FORMAT, "weight_map", NULL, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Malformed single files */

#define T_OK(name, dtype, shape, b, e)                                                            \
    "\"" name "\": {\"dtype\": \"" dtype "\", \"shape\": " shape ", \"data_offsets\": [" #b      \
    ", " #e "]}"

static void bad_file(const char *label, const char *file, const char *header, size_t data_len,
                     const char *n1, const char *n2) {
    const char *path = tpath(file);
    if (make_raw(path, header, data_len)) {
        CHECK(0, "%s: cannot write %s", label, path);
        return;
    }
    expect_fail(label, path, 0, GLIM_E_FORMAT, path, n1, n2);
}

static void test_bad_headers(void) {
    bad_file("invalid JSON", "badjson.st", "{\"w\": {\"dtype\": \"F32\",", 16, "not valid JSON",
             "line 1");
    bad_file("header not an object", "array.st", "[1, 2, 3]", 0, "not a JSON object", NULL);
    bad_file("duplicate names", "dup.st",
             "{" T_OK("w.dup", "F32", "[2]", 0, 8) ", " T_OK("w.dup", "F32", "[2]", 8, 16) "}", 16,
             "duplicate", "w.dup");
    bad_file("unknown dtype", "dtype.st", "{" T_OK("w.f8", "F8", "[2]", 0, 2) "}", 2, "w.f8",
             "\"F8\"");
    bad_file("dtype not a string", "dtype2.st", "{\"w.d\": {\"dtype\": 4, \"shape\": [1], "
             "\"data_offsets\": [0, 4]}}", 4, "w.d", "dtype");
    bad_file("negative shape", "neg.st", "{" T_OK("w.neg", "F32", "[3, -2]", 0, 24) "}", 24,
             "w.neg", "negative");
    bad_file("non-integer shape", "real.st", "{" T_OK("w.real", "F32", "[2.5]", 0, 8) "}", 8,
             "w.real", "shape");
    bad_file("shape not an array", "shapeobj.st", "{" T_OK("w.so", "F32", "7", 0, 28) "}", 28,
             "w.so", "shape");
    bad_file("too many dims", "dims.st",
             "{" T_OK("w.dims", "F32", "[1,1,1,1,1,1,1,1,1]", 0, 4) "}", 4, "w.dims", "9 dims");
    bad_file("shape product overflow", "ovf.st",
             "{" T_OK("w.ovf", "U8", "[4294967296, 4294967296, 4294967296]", 0, 8) "}", 8,
             "w.ovf", "overflow");
    bad_file("shape/size mismatch", "mismatch.st", "{" T_OK("w.mm", "BF16", "[3, 5]", 0, 32) "}",
             32, "w.mm", "30 bytes");
    bad_file("offsets past the end", "past.st",
             "{" T_OK("w.ok", "F32", "[2]", 0, 8) ", " T_OK("w.past", "F32", "[4]", 8, 24) "}", 20,
             "w.past", "past the end");
    bad_file("begin > end", "beginend.st", "{" T_OK("w.rev", "F32", "[2]", 8, 0) "}", 8, "w.rev",
             "begin 8 is after end 0");
    bad_file("negative offset", "negoff.st", "{" T_OK("w.no", "F32", "[2]", -8, 0) "}", 8,
             "w.no", "negative");
    bad_file("data_offsets wrong arity", "arity.st",
             "{\"w.ar\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 4, 8]}}", 8,
             "w.ar", "data_offsets");
    bad_file("overlapping tensors", "overlap.st",
             "{" T_OK("w.first", "F32", "[4]", 0, 16) ", " T_OK("w.zero", "F32", "[0]", 4, 4)
             ", " T_OK("w.second", "F32", "[4]", 12, 28) "}", 28, "w.first", "w.second");
    bad_file("unknown key in entry", "key.st",
             "{\"w.k\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4], "
             "\"offset\": 0}}", 4, "w.k", "\"offset\"");
    bad_file("missing dtype", "nodtype.st", "{\"w.nd\": {\"shape\": [1], \"data_offsets\": [0, 4]}}",
             4, "w.nd", "\"dtype\"");
    bad_file("entry not an object", "entry.st", "{\"w.e\": [1, 2]}", 0, "w.e", "not a JSON object");
    bad_file("empty tensor name", "emptyname.st", "{" T_OK("", "F32", "[1]", 0, 4) "}", 4,
             "empty name", NULL);
    bad_file("metadata not string->string", "meta.st",
             "{\"__metadata__\": {\"format\": 3}, " T_OK("w", "F32", "[1]", 0, 4) "}", 4,
             "__metadata__", "\"format\"");
    bad_file("metadata not an object", "meta2.st",
             "{\"__metadata__\": \"pt\", " T_OK("w", "F32", "[1]", 0, 4) "}", 4, "__metadata__",
             NULL);
    bad_file("empty header", "emptyhdr.st", "", 0, "not valid JSON", NULL);

    /* Valid edge cases: zero-size tensors sharing an offset with others, header padding with
     * spaces, and a hole between tensors are all accepted. */
    const char *path = tpath("edges.st");
    REQUIRE(make_raw(path,
                     "{" T_OK("z1", "F32", "[0, 5]", 4, 4) ", " T_OK("a", "F32", "[1]", 0, 4)
                     ", " T_OK("z2", "I64", "[0]", 4, 4) ", " T_OK("b", "U8", "[3]", 8, 11)
                     "}        ", 11) == 0, "write");
    glim_st_set *s = NULL;
    glim_error err = {0};
    CHECK(glim_st_open_file(path, &s, &err) == GLIM_OK, "edge cases rejected: %s", err.message);
    if (s) {
        CHECK(glim_st_count(s) == 4, "count %d", glim_st_count(s));
        const glim_tensor *z = glim_st_find(s, "z1");
        CHECK(z && z->nbytes == 0 && z->ndim == 2 && z->shape[1] == 5, "zero-size tensor");
        glim_st_close(s);
    }
}

static void test_bad_files(void) {
    /* A valid file, then cut at points inside the length, inside the header, inside the data. */
    float a[4], b[6];
    fill_random(a, sizeof a);
    fill_random(b, sizeof b);
    glim_st_out t[2] = {{"t.a", GLIM_DT_F32, 1, {4}, a}, {"t.b", GLIM_DT_F32, 2, {2, 3}, b}};
    const char *src = tpath("cut_src.st");
    glim_error err = {0};
    REQUIRE(glim_st_write(src, t, 2, NULL, NULL, 0, &err) == GLIM_OK, "write: %s", err.message);
    size_t n;
    uint8_t *raw = read_all(src, &n);
    REQUIRE(raw, "read");
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | raw[i];
    const char *cut = tpath("cut.st");
    const size_t cuts[] = {0, 3, 7};
    for (int i = 0; i < 3; i++) {
        write_bytes(cut, raw, cuts[i]);
        char label[64];
        snprintf(label, sizeof label, "truncated to %zu bytes (inside the length)", cuts[i]);
        expect_fail(label, cut, 0, GLIM_E_FORMAT, cut, "shorter than the 8-byte", NULL);
    }
    write_bytes(cut, raw, 8 + hlen / 2);
    expect_fail("truncated inside the header", cut, 0, GLIM_E_FORMAT, cut, "header length",
                "larger than");
    /* Cut inside t.a's data: t.a (first in the header) is the first one past the end. */
    write_bytes(cut, raw, 8 + hlen + 10);
    expect_fail("truncated inside t.a's data", cut, 0, GLIM_E_FORMAT, cut, "'t.a'", "past the end");
    write_bytes(cut, raw, n - 1);
    expect_fail("truncated by one byte", cut, 0, GLIM_E_FORMAT, cut, "'t.b'", "past the end");

    /* The length prefix lies: larger than the file, and absurdly large. */
    uint8_t *lie = malloc(n);
    REQUIRE(lie, "malloc");
    memcpy(lie, raw, n);
    uint64_t big = n; /* > n - 8 */
    for (int i = 0; i < 8; i++) lie[i] = (uint8_t)(big >> (8 * i));
    write_bytes(cut, lie, n);
    expect_fail("header length larger than file", cut, 0, GLIM_E_FORMAT, cut, "larger than", NULL);
    big = (uint64_t)1 << 40;
    for (int i = 0; i < 8; i++) lie[i] = (uint8_t)(big >> (8 * i));
    write_bytes(cut, lie, n);
    expect_fail("header length absurd", cut, 0, GLIM_E_FORMAT, cut, "1099511627776", "limit");
    free(lie);
    free(raw);

    expect_fail("missing file", tpath("nope.safetensors"), 0, GLIM_E_IO, "nope.safetensors",
                "No such file", NULL);
    expect_fail("directory as file", tmpdir, 0, GLIM_E_IO, "not a regular file", NULL, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Writer argument checks: GLIM_E_ARG, nothing created, no tmp left. */

static void bad_write(const char *label, const glim_st_out *t, int n, const char *const *mk,
                      const char *const *mv, int nm, glim_status code, const char *needle) {
    const char *path = tpath("w_bad.st");
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    glim_error err = {0};
    glim_status st = glim_st_write(path, t, n, mk, mv, nm, &err);
    printf("  [write: %s] %s: %s\n", label, glim_status_name(st), err.message);
    CHECK(st == code, "%s: status %s", label, glim_status_name(st));
    CHECK(strstr(err.message, needle), "%s: message \"%s\" lacks \"%s\"", label, err.message, needle);
    CHECK(!file_exists(path) && !file_exists(tmp), "%s: file left behind", label);
}

static void test_write_errors(void) {
    float v[4];
    fill_random(v, sizeof v);
    glim_st_out dup[2] = {{"w.same", GLIM_DT_F32, 1, {4}, v}, {"w.same", GLIM_DT_F32, 1, {2}, v}};
    bad_write("duplicate name", dup, 2, NULL, NULL, 0, GLIM_E_ARG, "w.same");
    glim_st_out empty = {"", GLIM_DT_F32, 1, {4}, v};
    bad_write("empty name", &empty, 1, NULL, NULL, 0, GLIM_E_ARG, "empty name");
    glim_st_out dt = {"w.dt", (glim_dtype)GLIM_DT_COUNT, 1, {4}, v};
    bad_write("invalid dtype", &dt, 1, NULL, NULL, 0, GLIM_E_ARG, "w.dt");
    glim_st_out neg = {"w.neg", GLIM_DT_F32, 2, {4, -1}, v};
    bad_write("negative shape", &neg, 1, NULL, NULL, 0, GLIM_E_ARG, "w.neg");
    glim_st_out nd = {"w.nd", GLIM_DT_F32, GLIM_MAX_DIMS + 1, {1}, v};
    bad_write("too many dims", &nd, 1, NULL, NULL, 0, GLIM_E_ARG, "w.nd");
    glim_st_out nul = {"w.null", GLIM_DT_F32, 1, {4}, NULL};
    bad_write("NULL data", &nul, 1, NULL, NULL, 0, GLIM_E_ARG, "w.null");
    glim_st_out ok = {"w", GLIM_DT_F32, 1, {4}, v};
    const char *mk[] = {"k", "k"}, *mv[] = {"1", "2"};
    bad_write("duplicate metadata key", &ok, 1, mk, mv, 2, GLIM_E_ARG, "\"k\"");
    glim_st_out utf = {"w.\xff", GLIM_DT_F32, 1, {4}, v};
    bad_write("name not UTF-8", &utf, 1, NULL, NULL, 0, GLIM_E_ARG, "UTF-8");

    glim_error err = {0};
    char path[600];
    snprintf(path, sizeof path, "%s/no-such-dir/x.safetensors", tmpdir);
    glim_status st = glim_st_write(path, &ok, 1, NULL, NULL, 0, &err);
    printf("  [write: missing directory] %s: %s\n", glim_status_name(st), err.message);
    CHECK(st == GLIM_E_IO && strstr(err.message, "no-such-dir"), "unwritable path: %s",
          err.message);
}

/* ---------------------------------------------------------------------------------------------
 * Fuzz: corrupt the header bytes and truncate; every open succeeds or fails with a message. */

static void test_fuzz(void) {
    /* Fixed seed so a failure reproduces; GLIM_FUZZ_SEED=N tries another. */
    const char *env = getenv("GLIM_FUZZ_SEED");
    const uint64_t seed = env && *env ? strtoull(env, NULL, 0) : 0x5afe7e45ull;
    printf("  fuzz seed 0x%" PRIx64 "\n", seed);
    uint64_t saved = rng_state;
    rng_state = seed;
    float a[6], b[5];
    uint16_t c[7];
    fill_random(a, sizeof a);
    fill_random(b, sizeof b);
    fill_random(c, sizeof c);
    glim_st_out t[4] = {{"model.w0", GLIM_DT_F32, 2, {2, 3}, a},
                        {"model.w1", GLIM_DT_F32, 1, {5}, b},
                        {"model.w2", GLIM_DT_BF16, 2, {7, 1}, c},
                        {"model.s", GLIM_DT_F32, 0, {0}, a}};
    const char *mk[] = {"format"}, *mv[] = {"pt"};
    const char *src = tpath("fuzz_src.st"), *path = tpath("fuzz.st");
    glim_error err = {0};
    REQUIRE(glim_st_write(src, t, 4, mk, mv, 1, &err) == GLIM_OK, "write: %s", err.message);
    size_t n;
    uint8_t *raw = read_all(src, &n);
    REQUIRE(raw, "read");
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | raw[i];
    uint8_t *buf = malloc(n);
    REQUIRE(buf, "malloc");
    int ok = 0, failed = 0, bad = 0;
    volatile uint64_t sink = 0;
    for (int it = 0; it < 2000; it++) {
        memcpy(buf, raw, n);
        size_t len = n;
        /* 0: flip bytes; 1: change digits (keeps the JSON valid, exercises the offset and
         * shape checks); 2: truncate anywhere; 3: truncate inside the data; 4: flip + cut. */
        int mode = (int)(rng_next() % 5);
        if (mode == 0 || mode == 4) { /* flip 1..4 bytes in the length prefix + header */
            int flips = 1 + (int)(rng_next() % 4);
            for (int k = 0; k < flips; k++) {
                size_t pos = (size_t)(rng_next() % (8 + hlen));
                if (rng_next() % 2) buf[pos] ^= (uint8_t)(1u << (rng_next() % 8));
                else buf[pos] = (uint8_t)rng_next();
            }
        }
        if (mode == 1) {
            int changes = 1 + (int)(rng_next() % 2);
            for (int k = 0; k < changes; k++) {
                size_t pos = 8 + (size_t)(rng_next() % hlen);
                for (size_t m = 0; m < hlen && !(buf[pos] >= '0' && buf[pos] <= '9'); m++)
                    pos = 8 + (pos - 8 + 1) % hlen;
                if (buf[pos] >= '0' && buf[pos] <= '9') buf[pos] = (uint8_t)('0' + rng_next() % 10);
            }
        }
        if (mode == 2 || mode == 4) len = (size_t)(rng_next() % (n + 1));
        if (mode == 3) len = 8 + (size_t)hlen + (size_t)(rng_next() % (n - 8 - hlen + 1));
        if (write_bytes(path, buf, len)) {
            CHECK(0, "cannot write fuzz file");
            break;
        }
        glim_st_set *s = NULL;
        memset(&err, 0, sizeof err);
        glim_status st = glim_st_open_file(path, &s, &err);
        if (st == GLIM_OK) {
            ok++;
            for (int i = 0; i < glim_st_count(s); i++) { /* touch every byte handed out */
                const glim_tensor *x = glim_st_at(s, i);
                uint64_t elems = 1;
                for (int d = 0; d < x->ndim; d++) elems *= (uint64_t)x->shape[d];
                if (x->nbytes != elems * glim_dtype_size(x->dtype) || glim_st_find(s, x->name) != x)
                    bad++;
                for (uint64_t j = 0; j < x->nbytes; j++) sink += ((const uint8_t *)x->data)[j];
            }
            glim_st_close(s);
        } else {
            failed++;
            if (st != GLIM_E_FORMAT || !err.message[0] || !strstr(err.message, path) || s) {
                bad++;
                fprintf(stderr, "  fuzz iteration %d: status %s, message \"%s\"\n", it,
                        glim_status_name(st), err.message);
            }
        }
    }
    (void)sink;
    printf("  fuzz: 2000 iterations, %d opened, %d rejected\n", ok, failed);
    CHECK(bad == 0, "%d fuzz iterations misbehaved", bad);
    CHECK(ok > 0 && failed > 0, "fuzz never %s", ok ? "failed" : "succeeded");
    free(buf);
    free(raw);
    rng_state = saved;
}

/* ---------------------------------------------------------------------------------------------*/

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

int main(void) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/glim_st_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    rng_state = 0x1234abcdull;
    RUN(test_round_trip);
    RUN(test_many_names);
    RUN(test_sharded);
    RUN(test_sharded_errors);
    RUN(test_bad_headers);
    RUN(test_bad_files);
    RUN(test_write_errors);
    RUN(test_fuzz);
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return CHECK_DONE();
}
