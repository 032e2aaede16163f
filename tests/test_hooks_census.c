/* test_hooks_census.c: the FFN census on synthetic activations fed through glim_hooks_ffn_act,
 * against mass, histogram and top-K overlap computed here directly (log2 with the libm, top-K by
 * a full sort); prefill rows must not count; the JSON and safetensors outputs and the summary. */
#include <jansson.h>

#include "check.h"
#include "hooks_fixture.h"
#include "safetensors.h"

#define L 3
#define I 200
#define K 8
#define NB 4
#define B GLIM_CENSUS_BINS

static double ref_mass[L][I];
static uint64_t ref_hist[L][B], ref_nhist[L][I][B], ref_nonfinite[L];
static double ref_ov_sum[L];
static uint64_t ref_ov_n[L];
static int ref_prev_top[L][K], ref_prev_pos[L], ref_prev_seq[L];
static int seq_now = -1;

static int ref_bin(float a) {
    if (a == 0.0f) return 0;
    int e = (int)floor(log2(fabs((double)a)));
    if (e < GLIM_CENSUS_EXP_MIN) e = GLIM_CENSUS_EXP_MIN;
    if (e > GLIM_CENSUS_EXP_MAX) e = GLIM_CENSUS_EXP_MAX;
    return 1 + e - GLIM_CENSUS_EXP_MIN;
}

static const float *sort_vals;
static int by_rank(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    float x = isfinite(sort_vals[i]) ? fabsf(sort_vals[i]) : -1.0f;
    float y = isfinite(sort_vals[j]) ? fabsf(sort_vals[j]) : -1.0f;
    if (x != y) return x > y ? -1 : 1;
    return i - j;
}
static int by_index(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void ref_decode_row(int l, const float *row, int pos, int seq) {
    for (int j = 0; j < I; j++) {
        if (!isfinite(row[j])) {
            ref_nonfinite[l]++;
            continue;
        }
        ref_mass[l][j] += fabs((double)row[j]);
        ref_hist[l][ref_bin(row[j])]++;
        ref_nhist[l][j][ref_bin(row[j])]++;
    }
    int idx[I], top[K];
    for (int j = 0; j < I; j++) idx[j] = j;
    sort_vals = row;
    qsort(idx, I, sizeof *idx, by_rank);
    memcpy(top, idx, sizeof top);
    qsort(top, K, sizeof *top, by_index);
    if (ref_prev_pos[l] == pos - 1 && ref_prev_seq[l] == seq) {
        int common = 0;
        for (int a = 0; a < K; a++)
            for (int b = 0; b < K; b++) common += top[a] == ref_prev_top[l][b];
        ref_ov_sum[l] += (double)common / K;
        ref_ov_n[l]++;
    }
    memcpy(ref_prev_top[l], top, sizeof top);
    ref_prev_pos[l] = pos;
    ref_prev_seq[l] = seq;
}

/* Activations with every magnitude class: zeros, subnormals, tiny, normal, huge, negative, and a
 * few shared "hot" neurons so consecutive top-K sets overlap partly. */
static void make_row(float *row, int hot_shift) {
    for (int j = 0; j < I; j++) {
        float u = fx_uniform();
        int kind = (int)(fx_next() % 10);
        row[j] = kind == 0 ? 0.0f
                 : kind == 1 ? u * 1e-40f
                 : kind == 2 ? u * 1e-9f
                 : kind == 3 ? u * 1000.0f
                             : u;
    }
    for (int h = 0; h < K / 2; h++) row[(h * 37 + hot_shift) % I] = 5000.0f + (float)h;
}

static void pass(fx_session *f, int pos0, int n, int is_prefill, int nonfinite) {
    if (pos0 == 0) seq_now++;
    float act[NB * I];
    for (int l = 0; l < L; l++) {
        for (int t = 0; t < n; t++) make_row(act + t * I, (int)(fx_next() % 3));
        if (nonfinite && l == 1) {
            act[(n - 1) * I + 5] = NAN;
            act[(n - 1) * I + 6] = INFINITY;
        }
        glim_hooks_ffn_act(f->s.hooks, l, act, n, pos0, is_prefill);
        if (!is_prefill) ref_decode_row(l, act + (size_t)(n - 1) * I, pos0 + n - 1, seq_now);
    }
    glim_hooks_pass_end(f->s.hooks, pos0, n, is_prefill);
}

static void run_workload(fx_session *f) {
    memset(ref_mass, 0, sizeof ref_mass);
    memset(ref_hist, 0, sizeof ref_hist);
    memset(ref_nhist, 0, sizeof ref_nhist);
    memset(ref_nonfinite, 0, sizeof ref_nonfinite);
    memset(ref_ov_sum, 0, sizeof ref_ov_sum);
    memset(ref_ov_n, 0, sizeof ref_ov_n);
    for (int l = 0; l < L; l++) ref_prev_pos[l] = ref_prev_seq[l] = -1;
    pass(f, 0, 4, 1, 0); /* prefill: counted only */
    pass(f, 4, 3, 0, 0); /* head chunk: its last row (6) is a decode token */
    for (int p = 7; p < 12; p++) pass(f, p, 1, 0, p == 9);
    pass(f, 0, 2, 0, 0); /* a new sequence: its first decode token pairs with nothing */
    for (int p = 2; p < 5; p++) pass(f, p, 1, 0, 0);
}

static void test_census_matches_direct_computation(void) {
    fx_session f;
    fx_init(&f, L, 32, I, 64, NB);
    glim_census_params p = {K, 1};
    glim_error e = {0};
    REQUIRE(!glim_session_census_start(&f.s, &p, &e), "%s", e.message);
    run_workload(&f);
    glim_census_view v;
    REQUIRE(!glim_session_census_view(&f.s, &v, &e), "%s", e.message);
    CHECK(v.decode_tokens == 10 && v.head_passes == 10 && v.prefill_passes == 1 &&
              v.prefill_tokens == 4 + 2 + 1, "counts: decode %llu head %llu prefill %llu/%llu",
          (unsigned long long)v.decode_tokens, (unsigned long long)v.head_passes,
          (unsigned long long)v.prefill_passes, (unsigned long long)v.prefill_tokens);
    int bad = 0;
    for (int l = 0; l < L; l++) {
        for (int j = 0; j < I; j++) {
            double m = v.mass[l * I + j], w = ref_mass[l][j];
            if (fabs(m - w) > 1e-12 * (fabs(w) + 1e-30)) bad++;
            for (int b = 0; b < B; b++) bad += v.neuron_hist[((size_t)l * I + j) * B + b] != ref_nhist[l][j][b];
        }
        for (int b = 0; b < B; b++)
            CHECK(v.hist[l * B + b] == ref_hist[l][b], "layer %d bin %d: %llu vs %llu", l, b,
                  (unsigned long long)v.hist[l * B + b], (unsigned long long)ref_hist[l][b]);
        CHECK(v.nonfinite[l] == ref_nonfinite[l], "layer %d nonfinite %llu vs %llu", l,
              (unsigned long long)v.nonfinite[l], (unsigned long long)ref_nonfinite[l]);
        CHECK(v.overlap_n[l] == ref_ov_n[l] && fabs(v.overlap_sum[l] - ref_ov_sum[l]) < 1e-12,
              "layer %d overlap %g/%llu vs %g/%llu", l, v.overlap_sum[l],
              (unsigned long long)v.overlap_n[l], ref_ov_sum[l], (unsigned long long)ref_ov_n[l]);
    }
    CHECK(bad == 0, "%d mass / neuron-histogram mismatches", bad);
    CHECK(ref_ov_n[0] == 5 + 3, "the workload should make 8 consecutive pairs, made %llu",
          (unsigned long long)ref_ov_n[0]);
    CHECK(ref_nonfinite[1] == 2, "workload nonfinite");
    /* the workload spans the histogram: zero, clamped-low, middle and clamped-high bins */
    CHECK(ref_hist[0][0] && ref_hist[0][1] && ref_hist[0][B - 1] && ref_hist[0][24], "bins used");
    fx_free(&f);
}

static void test_outputs(void) {
    fx_session f;
    fx_init(&f, L, 32, I, 64, NB);
    glim_census_params p = {K, 0};
    glim_error e = {0};
    REQUIRE(!glim_session_census_start(&f.s, &p, &e), "%s", e.message);
    run_workload(&f);
    char jpath[256], spath[256];
    fx_path(jpath, sizeof jpath, "census.json");
    fx_path(spath, sizeof spath, "census.safetensors");
    REQUIRE(!glim_session_census_write(&f.s, jpath, &e), "%s", e.message);
    REQUIRE(!glim_session_census_write(&f.s, spath, &e), "%s", e.message);
    json_error_t je;
    json_t *root = json_load_file(jpath, 0, &je);
    REQUIRE(root, "json: %s", je.text);
    json_t *layers = json_object_get(root, "layers");
    CHECK(json_integer_value(json_object_get(root, "decode_tokens")) == 10, "json decode_tokens");
    REQUIRE(json_array_size(layers) == L, "json layers");
    json_t *l1 = json_array_get(layers, 1);
    CHECK(json_real_value(json_array_get(json_object_get(l1, "mass"), 17)) == ref_mass[1][17],
          "json mass");
    CHECK(json_integer_value(json_array_get(json_object_get(l1, "hist"), 0)) == (json_int_t)ref_hist[1][0],
          "json hist");
    CHECK(fabs(json_real_value(json_object_get(l1, "overlap_mean")) - ref_ov_sum[1] / ref_ov_n[1]) < 1e-12,
          "json overlap");
    json_decref(root);
    glim_st_set *st;
    REQUIRE(!glim_st_open_file(spath, &st, &e), "%s", e.message);
    const glim_tensor *m = glim_st_find(st, "mass"), *h = glim_st_find(st, "hist");
    REQUIRE(m && h && m->dtype == GLIM_DT_F64 && m->shape[0] == L && m->shape[1] == I, "mass tensor");
    CHECK(((const double *)m->data)[2 * I + 5] == ref_mass[2][5], "st mass");
    CHECK(((const uint64_t *)h->data)[B + 3] == ref_hist[1][3], "st hist");
    CHECK(!glim_st_find(st, "neuron_hist"), "neuron_hist written though not kept");
    glim_st_close(st);
    char *text = NULL;
    REQUIRE(!glim_session_census_summary(&f.s, 3, &text, &e), "%s", e.message);
    CHECK(strstr(text, "10 decode tokens") && strstr(text, "layer   2") &&
              strstr(text, "mean top-8 overlap"), "summary:\n%s", text);
    /* the hottest neuron of layer 0 by mass leads its line */
    int best = 0;
    for (int j = 1; j < I; j++)
        if (ref_mass[0][j] > ref_mass[0][best]) best = j;
    char want[64];
    snprintf(want, sizeof want, "by mean |act|: %d (", best);
    CHECK(strstr(text, want), "summary lacks '%s':\n%s", want, text);
    free(text);
    glim_session_census_clear(&f.s);
    glim_census_view v;
    glim_session_census_view(&f.s, &v, &e);
    CHECK(v.decode_tokens == 0 && v.mass[7] == 0 && v.overlap_n[0] == 0, "clear");
    glim_session_census_stop(&f.s);
    CHECK(!f.s.hooks, "hooks left after stop");
    CHECK(glim_session_census_start(&f.s, &(glim_census_params){I + 1, 0}, &e) == GLIM_E_ARG &&
              strstr(e.message, "top_k"), "top_k too big: %s", e.message);
    CHECK(!f.s.hooks, "refused start left hooks");
}


/* The device path (only the head row, through glim_hooks_ffn_act_row) gives the same census as
 * whole chunks through glim_hooks_ffn_act; with glim_eval's tokens noted, only the call's last
 * position of a multi-chunk LOGITS_ALL evaluation is a decode token. */
static void test_row_entry_point_and_noted_extent(void) {
    fx_session a, b;
    fx_init(&a, L, 32, I, 64, NB);
    fx_init(&b, L, 32, I, 64, NB);
    glim_census_params p = {K, 1};
    glim_error e = {0};
    REQUIRE(!glim_session_census_start(&a.s, &p, &e) && !glim_session_census_start(&b.s, &p, &e), "start");
    static float act[NB * I];
    int32_t toks[10] = {0};
    for (int s = 0; s < 2; s++) {
        glim_session_note_tokens(&a.s, toks, 10, 0);
        glim_session_note_tokens(&b.s, toks, 10, 0);
        for (int pos0 = 0; pos0 < 14; pos0 += pos0 < 10 ? (pos0 < 8 ? 4 : 2) : 1) {
            int n = pos0 < 8 ? 4 : pos0 < 10 ? 2 : 1;
            for (int l = 0; l < L; l++) {
                for (int t = 0; t < n; t++) make_row(act + t * I, (int)(fx_next() % 3));
                glim_hooks_ffn_act(a.s.hooks, l, act, n, pos0, 0);
                int r = glim_hooks_head_row(b.s.hooks, pos0, n, 0);
                if (r >= 0) glim_hooks_ffn_act_row(b.s.hooks, l, act + r * I, pos0, n, 0);
            }
            glim_hooks_pass_end(a.s.hooks, pos0, n, 0);
            glim_hooks_pass_end(b.s.hooks, pos0, n, 0);
        }
    }
    glim_census_view va, vb;
    glim_session_census_view(&a.s, &va, &e);
    glim_session_census_view(&b.s, &vb, &e);
    CHECK(va.decode_tokens == 2 * 5 && va.prefill_tokens == 2 * 9, "decode %llu prefill %llu",
          (unsigned long long)va.decode_tokens, (unsigned long long)va.prefill_tokens);
    CHECK(!memcmp(va.mass, vb.mass, sizeof(double) * L * I) &&
              !memcmp(va.hist, vb.hist, sizeof(uint64_t) * L * B) &&
              !memcmp(va.neuron_hist, vb.neuron_hist, sizeof(uint32_t) * L * I * B) &&
              !memcmp(va.overlap_sum, vb.overlap_sum, sizeof(double) * L) &&
              !memcmp(va.overlap_n, vb.overlap_n, sizeof(uint64_t) * L),
          "row entry point differs from whole chunks");
    CHECK(va.overlap_n[0] == 2 * 4, "pairs %llu: positions 9..13 twice, not across sequences",
          (unsigned long long)va.overlap_n[0]);
    fx_free(&a);
    fx_free(&b);
}

int main(void) {
    RUN(test_census_matches_direct_computation);
    RUN(test_outputs);
    RUN(test_row_entry_point_and_noted_extent);
    return CHECK_DONE();
}
