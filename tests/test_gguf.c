/* test_gguf.c: the GGUF reader and writer. Files are composed byte by byte here (independently
 * of the writer) so every header field can be made to lie, and the writer's output is read back
 * and checked against the values put in. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gguf.h"
#include "hooks_fixture.h"

/* ---- a byte builder ---- */
typedef struct img {
    uint8_t b[1 << 16];
    size_t n;
} img;

static void put(img *m, const void *p, size_t n) {
    memcpy(m->b + m->n, p, n);
    m->n += n;
}
static void u32(img *m, uint32_t v) { put(m, &v, 4); }
static void u64(img *m, uint64_t v) { put(m, &v, 8); }
static void str(img *m, const char *s) {
    u64(m, strlen(s));
    put(m, s, strlen(s));
}
static void pad32(img *m) {
    while (m->n % 32) m->b[m->n++] = 0;
}

/* Offsets of fields in the standard image, for tests that patch them. */
typedef struct layout {
    size_t n_tensors_at, n_kv_at, first_str_len_at, t0_info_at, t0_ne_at, t0_type_at,
        t0_off_at, t1_off_at, t1_name_at, data_at, t1_end;
} layout;

/* A control vector like llama.cpp's: 3 KVs, tensors direction.1 and direction.2 of 16 floats. */
static void standard(img *m, layout *L, const float *d1, const float *d2) {
    memset(m, 0, sizeof *m);
    put(m, "GGUF", 4);
    u32(m, 3);
    L->n_tensors_at = m->n;
    u64(m, 2);
    L->n_kv_at = m->n;
    u64(m, 3);
    L->first_str_len_at = m->n;
    str(m, "general.architecture");
    u32(m, GLIM_GGUF_STRING);
    str(m, "controlvector");
    str(m, "controlvector.model_hint");
    u32(m, GLIM_GGUF_STRING);
    str(m, "muse-glimmer");
    str(m, "controlvector.layer_count");
    u32(m, GLIM_GGUF_I32);
    u32(m, 2);
    L->t0_info_at = m->n;
    str(m, "direction.1");
    u32(m, 1);
    L->t0_ne_at = m->n;
    u64(m, 16);
    L->t0_type_at = m->n;
    u32(m, 0);
    L->t0_off_at = m->n;
    u64(m, 0);
    L->t1_name_at = m->n;
    str(m, "direction.2");
    u32(m, 1);
    u64(m, 16);
    u32(m, 0);
    L->t1_off_at = m->n;
    u64(m, 64);
    pad32(m);
    L->data_at = m->n;
    put(m, d1, 64);
    put(m, d2, 64);
    L->t1_end = m->n;
}

static void patch_u64(img *m, size_t at, uint64_t v) { memcpy(m->b + at, &v, 8); }
static void patch_u32(img *m, size_t at, uint32_t v) { memcpy(m->b + at, &v, 4); }

static glim_status parse(const img *m, size_t len, glim_gguf **g, glim_error *e) {
    return glim_gguf_parse(m->b, len, "test.gguf", g, e);
}

static void test_reads_handmade_control_vector(void) {
    float d1[16], d2[16];
    fx_fill(d1, 16, 3.0f);
    fx_fill(d2, 16, 3.0f);
    static img m;
    layout L;
    standard(&m, &L, d1, d2);
    glim_gguf *g;
    glim_error e = {0};
    REQUIRE(parse(&m, m.n, &g, &e) == GLIM_OK, "%s", e.message);
    CHECK(glim_gguf_version(g) == 3, "version %u", glim_gguf_version(g));
    CHECK(glim_gguf_n_kv(g) == 3 && glim_gguf_n_tensors(g) == 2, "%d kv %d tensors",
          glim_gguf_n_kv(g), glim_gguf_n_tensors(g));
    const char *a = glim_gguf_get_str(g, "general.architecture");
    CHECK(a && !strcmp(a, "controlvector"), "arch %s", a ? a : "(null)");
    int64_t lc = 0;
    CHECK(glim_gguf_get_int(g, "controlvector.layer_count", &lc) == 0 && lc == 2, "layer_count %lld",
          (long long)lc);
    const glim_gguf_tensor *t = glim_gguf_find_tensor(g, "direction.2");
    REQUIRE(t && t->n_dims == 1 && t->ne[0] == 16 && t->type == GLIM_GGML_F32 && t->nbytes == 64,
            "direction.2 info");
    CHECK(!memcmp(t->data, d2, 64), "direction.2 data");
    CHECK(!memcmp(glim_gguf_find_tensor(g, "direction.1")->data, d1, 64), "direction.1 data");
    glim_gguf_free(g);
}

static void test_writer_round_trip(void) {
    float a[40], b[6];
    fx_fill(a, 40, 10.0f);
    fx_fill(b, 6, 1.0f);
    glim_gguf_writer *w = glim_gguf_writer_new();
    glim_error e = {0};
    REQUIRE(w, "writer");
    uint64_t ne_a[2] = {8, 5}, ne_b[1] = {6};
    REQUIRE(!glim_gguf_set_str(w, "general.architecture", "controlvector", &e), "%s", e.message);
    REQUIRE(!glim_gguf_set_i32(w, "k.i32", -123456, &e), "%s", e.message);
    REQUIRE(!glim_gguf_set_u32(w, "k.u32", 4000000000u, &e), "%s", e.message);
    REQUIRE(!glim_gguf_set_f32(w, "k.f32", 0.15625f, &e), "%s", e.message);
    REQUIRE(!glim_gguf_add_f32(w, "a", 2, ne_a, a, &e), "%s", e.message);
    REQUIRE(!glim_gguf_add_f32(w, "b", 1, ne_b, b, &e), "%s", e.message);
    CHECK(glim_gguf_set_i32(w, "k.i32", 1, &e) == GLIM_E_ARG && strstr(e.message, "twice"),
          "duplicate key accepted: %s", e.message);
    char path[256];
    fx_path(path, sizeof path, "rt.gguf");
    REQUIRE(!glim_gguf_write(w, path, &e), "%s", e.message);
    glim_gguf_writer_free(w);
    glim_gguf *g;
    REQUIRE(!glim_gguf_read_file(path, &g, &e), "%s", e.message);
    int64_t v;
    CHECK(!glim_gguf_get_int(g, "k.i32", &v) && v == -123456, "i32 %lld", (long long)v);
    CHECK(!glim_gguf_get_int(g, "k.u32", &v) && v == 4000000000ll, "u32 %lld", (long long)v);
    const glim_gguf_kv *f = glim_gguf_find_kv(g, "k.f32");
    CHECK(f && f->type == GLIM_GGUF_F32 && f->v.f == 0.15625, "f32");
    const glim_gguf_tensor *ta = glim_gguf_find_tensor(g, "a"), *tb = glim_gguf_find_tensor(g, "b");
    REQUIRE(ta && tb, "tensors missing");
    CHECK(ta->n_dims == 2 && ta->ne[0] == 8 && ta->ne[1] == 5 && !memcmp(ta->data, a, sizeof a),
          "tensor a");
    CHECK(tb->n_dims == 1 && tb->ne[0] == 6 && !memcmp(tb->data, b, sizeof b), "tensor b");
    CHECK(ta->offset % 32 == 0 && tb->offset % 32 == 0, "offsets %llu %llu not 32-aligned",
          (unsigned long long)ta->offset, (unsigned long long)tb->offset);
    glim_gguf_free(g);
    CHECK(glim_gguf_read_file("/nonexistent/x.gguf", &g, &e) == GLIM_E_IO, "missing file");
}

/* Every prefix that cuts into the tensor data or the header is refused; prefixes that only cut
 * the padding after the last tensor are fine. */
static void test_truncated_files_are_refused(void) {
    float d1[16], d2[16];
    fx_fill(d1, 16, 1.0f);
    fx_fill(d2, 16, 1.0f);
    static img m;
    layout L;
    standard(&m, &L, d1, d2);
    int bad = 0;
    for (size_t len = 0; len < m.n; len++) {
        glim_gguf *g = NULL;
        glim_error e = {0};
        glim_status st = parse(&m, len, &g, &e);
        if (st != GLIM_E_FORMAT || !strstr(e.message, "test.gguf") || g) {
            if (bad++ < 3)
                CHECK(0, "prefix of %zu/%zu bytes: status %d message '%s'", len, m.n, st, e.message);
        }
        glim_gguf_free(g);
    }
    CHECK(bad == 0, "%d prefixes misbehaved", bad);
    glim_error e = {0};
    glim_gguf *g;
    parse(&m, 20, &g, &e);
    CHECK(strstr(e.message, "truncated"), "message for a 20-byte prefix: %s", e.message);
}

typedef void (*patch_fn)(img *m, const layout *L);
static void p_magic(img *m, const layout *L) { m->b[0] = 'X'; }
static void p_version(img *m, const layout *L) { patch_u32(m, 4, 1); }
static void p_ntensors(img *m, const layout *L) { patch_u64(m, L->n_tensors_at, 1ull << 40); }
static void p_nkv(img *m, const layout *L) { patch_u64(m, L->n_kv_at, 1ull << 40); }
static void p_strlen(img *m, const layout *L) { patch_u64(m, L->first_str_len_at, 1ull << 60); }
static void p_offset(img *m, const layout *L) { patch_u64(m, L->t1_off_at, 4096); }
static void p_unaligned(img *m, const layout *L) { patch_u64(m, L->t1_off_at, 8); }
static void p_overlap(img *m, const layout *L) { patch_u64(m, L->t1_off_at, 32); }
static void p_dims(img *m, const layout *L) { patch_u64(m, L->t0_ne_at, 1ull << 62); }
static void p_zero_dim(img *m, const layout *L) { patch_u64(m, L->t0_ne_at, 0); }
static void p_type(img *m, const layout *L) { patch_u32(m, L->t0_type_at, 12); }
static void p_dup_name(img *m, const layout *L) { m->b[L->t1_name_at + 8 + 10] = '1'; }
static void p_ndims(img *m, const layout *L) { patch_u32(m, L->t0_ne_at - 4, 7); }

static void test_lying_files_are_refused(void) {
    struct {
        const char *what;
        patch_fn fn;
        const char *expect;
    } cases[] = {
        {"bad magic", p_magic, "not a GGUF"},
        {"version 1", p_version, "version 1"},
        {"huge tensor count", p_ntensors, "cannot fit"},
        {"huge KV count", p_nkv, "cannot fit"},
        {"huge string", p_strlen, "claims a string"},
        {"offset past the data", p_offset, "data section"},
        {"unaligned offset", p_unaligned, "alignment"},
        {"overlapping tensors", p_overlap, "overlap"},
        {"overflowing dims", p_dims, "too large"},
        {"zero dim", p_zero_dim, "dimension 0"},
        {"quantized type", p_type, "ggml type 12"},
        {"duplicate tensor", p_dup_name, "appears twice"},
        {"7 dims", p_ndims, "7 dimensions"},
    };
    float d1[16], d2[16];
    fx_fill(d1, 16, 1.0f);
    fx_fill(d2, 16, 1.0f);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static img m;
        layout L;
        standard(&m, &L, d1, d2);
        cases[i].fn(&m, &L);
        glim_gguf *g = NULL;
        glim_error e = {0};
        glim_status st = parse(&m, m.n, &g, &e);
        CHECK(st == GLIM_E_FORMAT && strstr(e.message, cases[i].expect), "%s: status %d, '%s'",
              cases[i].what, st, e.message);
        glim_gguf_free(g);
    }
}

static void test_bad_values_are_refused(void) {
    /* Hand-made KV-only files: nested array, bool 2, duplicate key, bad alignment. */
    struct {
        const char *what, *expect;
        int kind;
    } cases[] = {{"nested array", "nested", 0}, {"bool 2", "bool", 1},
                 {"duplicate key", "appears twice", 2}, {"alignment 3", "power of", 3},
                 {"value type 99", "value type 99", 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static img m;
        memset(&m, 0, sizeof m);
        put(&m, "GGUF", 4);
        u32(&m, 3);
        u64(&m, 0);
        u64(&m, cases[i].kind == 2 ? 2 : 1);
        switch (cases[i].kind) {
        case 0:
            str(&m, "a");
            u32(&m, GLIM_GGUF_ARRAY);
            u32(&m, GLIM_GGUF_ARRAY);
            u64(&m, 1);
            break;
        case 1:
            str(&m, "b");
            u32(&m, GLIM_GGUF_BOOL);
            m.b[m.n++] = 2;
            break;
        case 2:
            for (int k = 0; k < 2; k++) {
                str(&m, "same.key");
                u32(&m, GLIM_GGUF_U32);
                u32(&m, 7);
            }
            break;
        case 3:
            str(&m, "general.alignment");
            u32(&m, GLIM_GGUF_U32);
            u32(&m, 3);
            break;
        case 4:
            str(&m, "x");
            u32(&m, 99);
            u32(&m, 0);
            break;
        }
        for (int k = 0; k < 16; k++) m.b[m.n++] = 0; /* slack, so counts are plausible */
        glim_gguf *g = NULL;
        glim_error e = {0};
        glim_status st = parse(&m, m.n, &g, &e);
        CHECK(st == GLIM_E_FORMAT && strstr(e.message, cases[i].expect), "%s: status %d, '%s'",
              cases[i].what, st, e.message);
        glim_gguf_free(g);
    }
    /* Arrays of strings and numbers parse. */
    static img m;
    memset(&m, 0, sizeof m);
    put(&m, "GGUF", 4);
    u32(&m, 3);
    u64(&m, 0);
    u64(&m, 2);
    str(&m, "names");
    u32(&m, GLIM_GGUF_ARRAY);
    u32(&m, GLIM_GGUF_STRING);
    u64(&m, 2);
    str(&m, "alpha");
    str(&m, "be");
    str(&m, "nums");
    u32(&m, GLIM_GGUF_ARRAY);
    u32(&m, GLIM_GGUF_I16);
    u64(&m, 3);
    int16_t nums[3] = {-5, 7, 300};
    put(&m, nums, 6);
    glim_gguf *g;
    glim_error e = {0};
    REQUIRE(parse(&m, m.n, &g, &e) == GLIM_OK, "%s", e.message);
    const glim_gguf_kv *kv = glim_gguf_find_kv(g, "names");
    CHECK(kv && kv->n == 2 && !strcmp(((char **)kv->arr)[1], "be"), "string array");
    kv = glim_gguf_find_kv(g, "nums");
    CHECK(kv && kv->n == 3 && ((int16_t *)kv->arr)[2] == 300, "i16 array");
    glim_gguf_free(g);
}

/* Random byte flips: the reader must answer (OK or a message), never crash or read outside. */
static void test_random_corruption_never_crashes(void) {
    float d1[16], d2[16];
    fx_fill(d1, 16, 1.0f);
    fx_fill(d2, 16, 1.0f);
    static img base, m;
    layout L;
    standard(&base, &L, d1, d2);
    int refused = 0, silent = 0;
    for (int it = 0; it < 3000; it++) {
        m = base;
        int flips = 1 + (int)(fx_next() % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(fx_next() % L.data_at); /* corrupt the header region */
            m.b[at] = (uint8_t)fx_next();
        }
        glim_gguf *g = NULL;
        glim_error e = {0};
        glim_status st = parse(&m, m.n, &g, &e);
        if (st) {
            refused++;
            if (!e.message[0]) silent++;
        }
        glim_gguf_free(g);
    }
    CHECK(silent == 0, "%d refusals without a message", silent);
    CHECK(refused > 1000, "only %d of 3000 corrupted headers refused", refused);
}

int main(void) {
    RUN(test_reads_handmade_control_vector);
    RUN(test_writer_round_trip);
    RUN(test_truncated_files_are_refused);
    RUN(test_lying_files_are_refused);
    RUN(test_bad_values_are_refused);
    RUN(test_random_corruption_never_crashes);
    return CHECK_DONE();
}
