/* test_hooks_steer.c: steering on random rows against a double-precision computation written
 * here from the formulas in glimmer_hooks.h; gates, layer ranges, stacking, scale 0, the
 * control-vector files (GGUF and safetensors) and their layer numbering, and refusals. */
#include "check.h"
#include "gguf.h"
#include "hooks_fixture.h"

#define L 5
#define H 48
#define NB 6

static double ddot(const double *a, const double *b) {
    double s = 0;
    for (int i = 0; i < H; i++) s += a[i] * b[i];
    return s;
}

/* The reference: one op on one row, in double. Returns 1 when the gate let it act. */
static int ref_apply(double *x, const float *d, glim_steer_mode mode, double a, double t,
                     glim_steer_gate gate, double thr, int unit) {
    double u[H], dd[H], nn = 0;
    for (int i = 0; i < H; i++) nn += (double)d[i] * d[i];
    for (int i = 0; i < H; i++) {
        u[i] = d[i] / sqrt(nn);
        dd[i] = d[i];
    }
    double c = ddot(x, u);
    if ((gate == GLIM_GATE_ABS && !(fabs(c) > thr)) || (gate == GLIM_GATE_ABOVE && !(c > thr)) ||
        (gate == GLIM_GATE_BELOW && !(c < thr)))
        return 0;
    double n0 = sqrt(ddot(x, x));
    for (int i = 0; i < H; i++) {
        if (mode == GLIM_STEER_ADD) x[i] += a * (unit ? u[i] : dd[i]);
        else if (mode == GLIM_STEER_CLAMP) x[i] += a * (t - c) * u[i];
        else x[i] -= a * c * u[i];
    }
    if (mode == GLIM_STEER_RENORM) {
        double n1 = sqrt(ddot(x, x));
        for (int i = 0; i < H; i++) x[i] *= n0 / n1;
    }
    return 1;
}

static glim_directions *one_layer_dirs(int layer, const float *d) {
    glim_directions *ds;
    glim_error e;
    if (glim_directions_create(L, H, &ds, &e)) return NULL;
    if (glim_directions_set(ds, layer, d, &e)) return NULL;
    return ds;
}

/* Max |got - want| relative to the row's size. */
static double row_err(const float *got, const double *want) {
    double m = 0, n = 0;
    for (int i = 0; i < H; i++) {
        m = fmax(m, fabs(got[i] - want[i]));
        n = fmax(n, fabs(want[i]));
    }
    return m / (n + 1e-30);
}

static void check_mode(glim_steer_mode mode, glim_steer_gate gate, int unit) {
    fx_session f;
    fx_init(&f, L, H, 64, 32, NB);
    float d[H], x[NB * H], x0[NB * H];
    fx_fill(d, H, 0.7f);
    fx_fill(x, NB * H, 2.0f);
    /* row r's component along d is set to r - 3 (-3 .. 2), so the gates split the rows */
    double nd = 0;
    for (int i = 0; i < H; i++) nd += (double)d[i] * d[i];
    nd = sqrt(nd);
    for (int r = 0; r < NB; r++) {
        double c = 0;
        for (int i = 0; i < H; i++) c += x[r * H + i] * (d[i] / nd);
        for (int i = 0; i < H; i++) x[r * H + i] += (float)(((r - 3) - c) * d[i] / nd);
    }
    memcpy(x0, x, sizeof x);
    glim_steer_params p = glim_steer_defaults();
    p.mode = mode;
    p.scale = mode == GLIM_STEER_ADD ? 2.5f : 0.8f;
    p.target = -1.75f;
    p.gate = gate;
    p.threshold = gate == GLIM_GATE_BELOW ? -0.5f : gate == GLIM_GATE_ABOVE ? 0.5f : 1.5f;
    p.unit = unit;
    p.layer_first = p.layer_last = 2;
    glim_directions *ds = one_layer_dirs(2, d);
    glim_error e = {0};
    REQUIRE(ds && !glim_session_steer_push(&f.s, ds, &p, &e), "%s", e.message);
    REQUIRE(f.s.hooks, "hooks made");
    glim_hooks_layer_output(f.s.hooks, 2, x, NB, 0, 1);
    int acted = 0;
    for (int r = 0; r < NB; r++) {
        double want[H];
        for (int i = 0; i < H; i++) want[i] = x0[r * H + i];
        int a = ref_apply(want, d, mode, p.scale, p.target, gate, p.threshold, unit);
        acted += a;
        if (!a)
            CHECK(!memcmp(x + r * H, x0 + r * H, H * sizeof(float)),
                  "mode %d gate %d: row %d changed though the gate is closed", mode, gate, r);
        else
            CHECK(row_err(x + r * H, want) < 2e-6, "mode %d gate %d unit %d row %d: rel err %g",
                  mode, gate, unit, r, row_err(x + r * H, want));
    }
    if (gate != GLIM_GATE_NONE)
        CHECK(acted > 0 && acted < NB, "gate %d acted on %d of %d rows (test needs a split)", gate,
              acted, NB);
    /* other layers untouched */
    memcpy(x, x0, sizeof x);
    for (int l = 0; l < L; l++)
        if (l != 2) glim_hooks_layer_output(f.s.hooks, l, x, NB, 0, 1);
    CHECK(!memcmp(x, x0, sizeof x), "layers outside the range changed x");
    glim_directions_free(ds);
    fx_free(&f);
}

static void test_each_mode_matches_direct_computation(void) {
    glim_steer_mode modes[] = {GLIM_STEER_ADD, GLIM_STEER_ABLATE, GLIM_STEER_CLAMP,
                               GLIM_STEER_RENORM};
    for (int m = 0; m < 4; m++) check_mode(modes[m], GLIM_GATE_NONE, 0);
    check_mode(GLIM_STEER_ADD, GLIM_GATE_NONE, 1);
}

static void test_gates(void) {
    glim_steer_gate gates[] = {GLIM_GATE_ABS, GLIM_GATE_ABOVE, GLIM_GATE_BELOW};
    for (int g = 0; g < 3; g++) {
        check_mode(GLIM_STEER_ADD, gates[g], 0);
        check_mode(GLIM_STEER_ABLATE, gates[g], 0);
        check_mode(GLIM_STEER_CLAMP, gates[g], 0);
        check_mode(GLIM_STEER_RENORM, gates[g], 0);
    }
}

static void test_ablate_removes_and_clamp_sets_the_component(void) {
    fx_session f;
    fx_init(&f, L, H, 64, 32, NB);
    float d[H], x[NB * H];
    fx_fill(d, H, 1.0f);
    fx_fill(x, NB * H, 3.0f);
    glim_directions *ds = one_layer_dirs(1, d);
    glim_steer_params p = glim_steer_defaults();
    p.mode = GLIM_STEER_ABLATE;
    p.layer_first = 1;
    p.layer_last = 1;
    glim_error e;
    REQUIRE(!glim_session_steer_push(&f.s, ds, &p, &e), "%s", e.message);
    p.mode = GLIM_STEER_CLAMP; /* then clamp to 4: stacked, applied in order */
    p.target = 4.0f;
    REQUIRE(!glim_session_steer_push(&f.s, ds, &p, &e), "%s", e.message);
    CHECK(glim_session_steer_count(&f.s) == 2, "count %d", glim_session_steer_count(&f.s));
    glim_hooks_layer_output(f.s.hooks, 1, x, NB, 3, 0);
    double nn = 0;
    for (int i = 0; i < H; i++) nn += (double)d[i] * d[i];
    for (int r = 0; r < NB; r++) {
        double c = 0;
        for (int i = 0; i < H; i++) c += x[r * H + i] * (d[i] / sqrt(nn));
        CHECK(fabs(c - 4.0) < 1e-5, "row %d component %g, expected 4", r, c);
    }
    glim_directions_free(ds);
    fx_free(&f);
}

static void test_stacking_applies_in_push_order(void) {
    fx_session f;
    fx_init(&f, L, H, 64, 32, NB);
    float d1[H], d2[H], x[NB * H], x0[NB * H];
    fx_fill(d1, H, 1.0f);
    fx_fill(d2, H, 1.0f);
    fx_fill(x, NB * H, 1.0f);
    memcpy(x0, x, sizeof x);
    glim_directions *a = one_layer_dirs(3, d1), *b;
    glim_error e;
    REQUIRE(!glim_directions_create(L, H, &b, &e), "create");
    REQUIRE(!glim_directions_set(b, -1, d2, &e), "set any");
    glim_steer_params p = glim_steer_defaults();
    p.scale = 1.5f;
    REQUIRE(!glim_session_steer_push(&f.s, a, &p, &e), "%s", e.message);
    p.mode = GLIM_STEER_RENORM;
    p.scale = 1.0f;
    p.layer_first = 2; /* the every-layer vector acts on layers 2..4 */
    REQUIRE(!glim_session_steer_push(&f.s, b, &p, &e), "%s", e.message);
    const glim_steer_op *ops;
    CHECK(glim_hooks_steer_ops(f.s.hooks, 3, &ops) == 2 && ops[0].mode == GLIM_STEER_ADD &&
              ops[1].mode == GLIM_STEER_RENORM, "layer 3 ops");
    CHECK(glim_hooks_steer_ops(f.s.hooks, 2, &ops) == 1, "layer 2 has the renorm only");
    CHECK(glim_hooks_steer_ops(f.s.hooks, 1, &ops) == 0, "layer 1 has none");
    glim_hooks_layer_output(f.s.hooks, 3, x, NB, 0, 1);
    for (int r = 0; r < NB; r++) {
        double w[H];
        for (int i = 0; i < H; i++) w[i] = x0[r * H + i];
        ref_apply(w, d1, GLIM_STEER_ADD, 1.5, 0, GLIM_GATE_NONE, 0, 0);
        ref_apply(w, d2, GLIM_STEER_RENORM, 1.0, 0, GLIM_GATE_NONE, 0, 0);
        CHECK(row_err(x + r * H, w) < 2e-6, "row %d: rel err %g", r, row_err(x + r * H, w));
    }
    glim_directions_free(a);
    glim_directions_free(b);
    fx_free(&f);
}

static void test_scale_zero_is_bit_identical(void) {
    fx_session f;
    fx_init(&f, L, H, 64, 32, NB);
    float d[H], x[NB * H], x0[NB * H];
    fx_fill(d, H, 1.0f);
    fx_fill(x, NB * H, 1.0f);
    x[0] = -0.0f; /* x + 0*d would turn this into +0.0 */
    x[5] = -0.0f;
    memcpy(x0, x, sizeof x);
    glim_directions *ds;
    glim_error e;
    REQUIRE(!glim_directions_create(L, H, &ds, &e), "create");
    REQUIRE(!glim_directions_set(ds, -1, d, &e), "set");
    for (int m = 0; m < 4; m++) {
        glim_steer_params p = glim_steer_defaults();
        p.mode = (glim_steer_mode)m;
        p.scale = 0.0f;
        REQUIRE(!glim_session_steer_push(&f.s, ds, &p, &e), "%s", e.message);
    }
    for (int l = 0; l < L; l++) glim_hooks_layer_output(f.s.hooks, l, x, NB, 0, 0);
    CHECK(!memcmp(x, x0, sizeof x), "scale 0 changed bits");
    const glim_steer_op *ops;
    CHECK(glim_hooks_steer_ops(f.s.hooks, 0, &ops) == 0, "scale-0 ops listed");
    /* the -0.0 hazard is real: adding +0.0 flips the sign bit */
    float z = -0.0f, y = z + 0.0f * fabsf(d[0]);
    CHECK(memcmp(&z, &y, 4) != 0, "(-0) + 0 kept its sign: the skip would not be needed");
    glim_session_steer_clear(&f.s);
    CHECK(f.s.hooks == NULL, "hooks left after the last one was removed");
    glim_directions_free(ds);
}

static void test_control_vector_files_round_trip(void) {
    glim_directions *ds, *back;
    glim_error e = {0};
    float v[L][H];
    REQUIRE(!glim_directions_create(L, H, &ds, &e), "create");
    for (int l = 1; l < L; l += 2) {
        fx_fill(v[l], H, 5.0f);
        REQUIRE(!glim_directions_set(ds, l, v[l], &e), "%s", e.message);
    }
    char path[256];
    REQUIRE(!glim_directions_save(ds, fx_path(path, sizeof path, "cv.gguf"), NULL, &e), "%s",
            e.message);
    REQUIRE(!glim_directions_load(path, &back, &e), "%s", e.message);
    CHECK(!strcmp(glim_directions_model_hint(back), "muse-glimmer"), "hint '%s'",
          glim_directions_model_hint(back));
    for (int l = 0; l < L; l++) {
        const float *g = glim_directions_get(back, l);
        if (l % 2) CHECK(g && !memcmp(g, v[l], sizeof v[l]), "layer %d differs", l);
        else CHECK(!g, "layer %d appeared", l);
    }
    glim_directions_free(back);
    /* safetensors: the same, plus layer 0 and an every-layer vector */
    float v0[H], any[H];
    fx_fill(v0, H, 1.0f);
    fx_fill(any, H, 1.0f);
    glim_directions_set(ds, 0, v0, &e);
    CHECK(glim_directions_save(ds, path, NULL, &e) == GLIM_E_ARG && strstr(e.message, "layer 0"),
          "GGUF took layer 0: %s", e.message);
    glim_directions_set(ds, -1, any, &e);
    REQUIRE(!glim_directions_save(ds, fx_path(path, sizeof path, "cv.safetensors"), "x", &e),
            "%s", e.message);
    REQUIRE(!glim_directions_load(path, &back, &e), "%s", e.message);
    CHECK(!memcmp(glim_directions_get(back, 0), v0, sizeof v0), "layer 0");
    CHECK(!memcmp(glim_directions_get(back, 3), v[3], sizeof v[3]), "layer 3");
    CHECK(glim_directions_get(back, -1) && !memcmp(glim_directions_get(back, -1), any, sizeof any),
          "every-layer vector");
    CHECK(!strcmp(glim_directions_model_hint(back), "x"), "hint");
    glim_directions_free(back);
    glim_directions_free(ds);
}

/* direction.N acts on layer N (llama.cpp's loader); file_offset 1 moves it to N-1. */
static void test_layer_numbering(void) {
    fx_session f;
    fx_init(&f, L, H, 64, 32, NB);
    float d[H], x[H], x0[H];
    fx_fill(d, H, 1.0f);
    fx_fill(x0, H, 1.0f);
    glim_directions *ds = one_layer_dirs(3, d), *back;
    glim_error e;
    char path[256];
    REQUIRE(!glim_directions_save(ds, fx_path(path, sizeof path, "n.gguf"), NULL, &e), "%s",
            e.message);
    REQUIRE(!glim_directions_load(path, &back, &e), "%s", e.message);
    for (int off = 0; off < 2; off++) {
        glim_steer_params p = glim_steer_defaults();
        p.file_offset = off;
        REQUIRE(!glim_session_steer_push(&f.s, back, &p, &e), "%s", e.message);
        for (int l = 0; l < L; l++) {
            memcpy(x, x0, sizeof x);
            glim_hooks_layer_output(f.s.hooks, l, x, 1, 0, 0);
            int changed = memcmp(x, x0, sizeof x) != 0;
            CHECK(changed == (l == 3 - off), "offset %d: layer %d changed=%d", off, l, changed);
            if (l == 3 - off)
                for (int i = 0; i < H; i++)
                    CHECK(x[i] == x0[i] + d[i], "offset %d: x[%d] != x0 + d", off, i);
        }
        glim_session_steer_clear(&f.s);
    }
    glim_directions_free(back);
    glim_directions_free(ds);
}

static void test_refusals(void) {
    fx_session f;
    fx_init(&f, L, H, 64, 32, NB);
    glim_directions *ds, *wide, *far;
    glim_error e = {0};
    float d[H + 8], zero[H] = {0};
    fx_fill(d, H + 8, 1.0f);
    REQUIRE(!glim_directions_create(L, H, &ds, &e) && !glim_directions_create(L, H + 8, &wide, &e) &&
                !glim_directions_create(L + 3, H, &far, &e), "create");
    glim_directions_set(wide, 1, d, &e);
    glim_directions_set(far, L + 1, d, &e);
    glim_directions_set(ds, 2, zero, &e);
    glim_steer_params p = glim_steer_defaults();
    CHECK(glim_session_steer_push(&f.s, wide, &p, &e) == GLIM_E_ARG && strstr(e.message, "56 wide"),
          "width: %s", e.message);
    CHECK(glim_session_steer_push(&f.s, far, &p, &e) == GLIM_E_ARG &&
              strstr(e.message, "direction.6"), "far layer: %s", e.message);
    p.mode = GLIM_STEER_ABLATE;
    CHECK(glim_session_steer_push(&f.s, ds, &p, &e) == GLIM_E_ARG && strstr(e.message, "zero norm"),
          "zero norm: %s", e.message);
    p.mode = GLIM_STEER_ADD;
    p.scale = NAN;
    CHECK(glim_session_steer_push(&f.s, ds, &p, &e) == GLIM_E_ARG && strstr(e.message, "finite"),
          "nan: %s", e.message);
    p.scale = 1;
    p.layer_first = 3;
    p.layer_last = 9;
    CHECK(glim_session_steer_push(&f.s, ds, &p, &e) == GLIM_E_ARG && strstr(e.message, "3..9"),
          "range: %s", e.message);
    CHECK(f.s.hooks == NULL, "failed pushes left hooks behind");
    p = glim_steer_defaults();
    REQUIRE(!glim_session_steer_push(&f.s, ds, &p, &e), "zero ADD is allowed: %s", e.message);
    const glim_steer_op *ops;
    CHECK(glim_hooks_steer_ops(f.s.hooks, 2, &ops) == 0, "a zero ADD made an op");
    float nan_v[H];
    fx_fill(nan_v, H, 1.0f);
    nan_v[7] = NAN;
    CHECK(glim_directions_set(ds, 1, nan_v, &e) == GLIM_E_ARG && strstr(e.message, "element 7"),
          "nan vector: %s", e.message);
    glim_directions *none = NULL;
    CHECK(glim_directions_load("/nonexistent.gguf", &none, &e) == GLIM_E_IO && !none, "missing file");
    glim_directions_free(ds);
    glim_directions_free(far);
    glim_directions_free(wide);
    fx_free(&f);
}

/* A GGUF that parses but is not a usable control vector. */
static void test_bad_control_vectors(void) {
    glim_error e = {0};
    char path[256];
    fx_path(path, sizeof path, "bad.gguf");
    float v[H];
    fx_fill(v, H, 1.0f);
    uint64_t ne = H, ne2[2] = {H / 2, 2};
    struct {
        const char *arch, *name, *expect;
        int layer_count, two_d;
    } cases[] = {{"llama", "direction.1", "general.architecture is 'llama'", -1, 0},
                 {"controlvector", "direction.0", "N >= 1", -1, 0},
                 {"controlvector", "dir.1", "not direction.N", -1, 0},
                 {"controlvector", "direction.01", "not direction.N", -1, 0},
                 {"controlvector", "direction.2", "layer_count says 3", 3, 0},
                 {"controlvector", "direction.2", "not 1-D", -1, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        glim_gguf_writer *w = glim_gguf_writer_new();
        glim_gguf_set_str(w, "general.architecture", cases[i].arch, &e);
        if (cases[i].layer_count >= 0) glim_gguf_set_i32(w, "controlvector.layer_count", cases[i].layer_count, &e);
        glim_gguf_add_f32(w, cases[i].name, cases[i].two_d ? 2 : 1, cases[i].two_d ? ne2 : &ne, v, &e);
        REQUIRE(!glim_gguf_write(w, path, &e), "%s", e.message);
        glim_gguf_writer_free(w);
        glim_directions *d = NULL;
        glim_status st = glim_directions_load(path, &d, &e);
        CHECK(st == GLIM_E_FORMAT && strstr(e.message, cases[i].expect), "case %zu: %d '%s'", i,
              st, e.message);
        glim_directions_free(d);
    }
}

int main(void) {
    RUN(test_each_mode_matches_direct_computation);
    RUN(test_gates);
    RUN(test_ablate_removes_and_clamp_sets_the_component);
    RUN(test_stacking_applies_in_push_order);
    RUN(test_scale_zero_is_bit_identical);
    RUN(test_control_vector_files_round_trip);
    RUN(test_layer_numbering);
    RUN(test_refusals);
    RUN(test_bad_control_vectors);
    return CHECK_DONE();
}
