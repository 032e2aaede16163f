/* test_hooks_capture.c: residual capture bookkeeping. The forward's calls are made by hand with
 * random rows, the rows each call saw (after steering) are remembered here per sequence,
 * position and layer, and every captured row, position, token and sequence is checked against
 * them; also the file written (in memory and streamed), overflow, failed chunks and refusals. */
#include "check.h"
#include "hooks_fixture.h"
#include "safetensors.h"

#define L 4
#define H 16
#define CTX 16
#define NB 4
#define SEQS 8

static float expect[SEQS][CTX][L][H];
static int cur_seq;

/* One chunk: random rows at every layer, then the chunk's end. */
static void chunk(fx_session *f, int pos0, int n, int is_prefill, int finish) {
    if (pos0 == 0 && finish) cur_seq++;
    float x[NB * H];
    for (int l = 0; l < L; l++) {
        fx_fill(x, (size_t)n * H, 4.0f);
        glim_hooks_layer_output(f->s.hooks, l, x, n, pos0, is_prefill);
        for (int t = 0; t < n && finish; t++)
            memcpy(expect[cur_seq][pos0 + t][l], x + t * H, sizeof(float) * H);
    }
    if (finish) glim_hooks_pass_end(f->s.hooks, pos0, n, is_prefill);
}

/* prompt of len tokens (chunks of NB, the last with a head), then `gen` decode tokens. */
static void sequence(fx_session *f, int len, int gen) {
    for (int p = 0; p < len; p += NB) {
        int n = len - p < NB ? len - p : NB;
        chunk(f, p, n, p + n < len, 1);
    }
    for (int g = 0; g < gen; g++) chunk(f, len + g, 1, 0, 1);
}

static int rows_match(fx_session *f, const int *pos, const int *seq, int n) {
    glim_capture_view v;
    glim_error e;
    if (glim_session_capture_view(&f->s, &v, &e)) return 0;
    int ok = v.rows == n;
    CHECK(v.rows == n, "rows %d, expected %d", v.rows, n);
    for (int r = 0; r < n && ok; r++) {
        CHECK(v.positions[r] == pos[r] && v.sequence[r] == seq[r], "row %d: pos %d seq %d, "
              "expected %d %d", r, v.positions[r], v.sequence[r], pos[r], seq[r]);
        for (int s = 0; s < v.n_layers; s++) {
            const float *got = v.residual + ((size_t)r * v.n_layers + s) * H;
            if (memcmp(got, expect[seq[r] + 1][pos[r]][v.layers[s]], sizeof(float) * H)) {
                CHECK(0, "row %d slot %d (layer %d) differs from what the hook saw", r, s,
                      v.layers[s]);
                ok = 0;
            }
        }
    }
    return ok;
}

static void start(fx_session *f, glim_capture_select sel, const int32_t *layers, int nl,
                  const int32_t *pos, int np, int max_rows) {
    fx_init(f, L, H, 32, CTX, NB);
    cur_seq = 0;
    glim_capture_params p = {sel, pos, np, layers, nl, max_rows, NULL, 0};
    glim_error e = {0};
    if (glim_session_capture_start(&f->s, &p, &e)) CHECK(0, "start: %s", e.message);
}

static void test_all_positions_with_layer_subset(void) {
    fx_session f;
    int32_t layers[2] = {2, 0};
    start(&f, GLIM_CAPTURE_ALL, layers, 2, NULL, 0, 0);
    int32_t toks[8] = {11, 12, 13, 14, 15, 16, 17, 18};
    glim_session_note_tokens(&f.s, toks, 8, 0); /* position 8 is not noted */
    sequence(&f, 6, 3); /* chunks 0..3 prefill, 4..5 head, decode 6, 7, 8 */
    sequence(&f, 2, 0);
    int pos[11] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1}, seq[11] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1};
    rows_match(&f, pos, seq, 11);
    glim_capture_view v;
    glim_error e;
    REQUIRE(!glim_session_capture_view(&f.s, &v, &e), "view");
    CHECK(v.n_layers == 2 && v.layers[0] == 2 && v.layers[1] == 0, "layers");
    for (int r = 0; r < 11; r++) {
        int want = r < 8 ? toks[r] : -1; /* 8 not noted; sequence 1's notes were used up */
        CHECK(v.tokens[r] == want, "row %d token %d, expected %d", r, v.tokens[r], want);
    }
    CHECK(glim_hooks_capture_layer_slot(f.s.hooks, 1) == -1 &&
              glim_hooks_capture_layer_slot(f.s.hooks, 0) == 1, "slots");
    fx_free(&f);
}

static void test_last_prompt_head_and_positions(void) {
    fx_session f;
    start(&f, GLIM_CAPTURE_LAST_PROMPT, NULL, 0, NULL, 0, 0);
    sequence(&f, 6, 2);
    sequence(&f, 3, 1);
    sequence(&f, 9, 0);
    int pos_lp[3] = {5, 2, 8}, seq_lp[3] = {0, 1, 2};
    rows_match(&f, pos_lp, seq_lp, 3);
    fx_free(&f);

    start(&f, GLIM_CAPTURE_HEAD, NULL, 0, NULL, 0, 0);
    sequence(&f, 6, 2);
    sequence(&f, 3, 1);
    int pos_h[5] = {5, 6, 7, 2, 3}, seq_h[5] = {0, 0, 0, 1, 1};
    rows_match(&f, pos_h, seq_h, 5);
    fx_free(&f);

    int32_t want[3] = {6, 1, 40};
    start(&f, GLIM_CAPTURE_POSITIONS, NULL, 0, want, 2, 0);
    sequence(&f, 7, 2);
    sequence(&f, 3, 0);
    int pos_p[3] = {1, 6, 1}, seq_p[3] = {0, 0, 1};
    rows_match(&f, pos_p, seq_p, 3);
    fx_free(&f);
    /* a position beyond the context is refused */
    fx_init(&f, L, H, 32, CTX, NB);
    glim_capture_params p = {GLIM_CAPTURE_POSITIONS, want, 3, NULL, 0, 0, NULL, 0};
    glim_error e = {0};
    CHECK(glim_session_capture_start(&f.s, &p, &e) == GLIM_E_ARG && strstr(e.message, "40"),
          "position 40: %s", e.message);
    CHECK(!f.s.hooks, "a refused start left hooks");
}

static void test_capture_sees_steered_stream(void) {
    fx_session f;
    int32_t layers[1] = {1};
    start(&f, GLIM_CAPTURE_ALL, layers, 1, NULL, 0, 0);
    float d[H], x[2 * H], x0[2 * H];
    fx_fill(d, H, 1.0f);
    glim_directions *ds;
    glim_error e;
    REQUIRE(!glim_directions_create(L, H, &ds, &e) && !glim_directions_set(ds, 1, d, &e), "dirs");
    glim_steer_params sp = glim_steer_defaults();
    sp.scale = 3.0f;
    REQUIRE(!glim_session_steer_push(&f.s, ds, &sp, &e), "%s", e.message);
    fx_fill(x, 2 * H, 1.0f);
    memcpy(x0, x, sizeof x);
    glim_hooks_layer_output(f.s.hooks, 1, x, 2, 0, 0);
    glim_hooks_pass_end(f.s.hooks, 0, 2, 0);
    glim_capture_view v;
    REQUIRE(!glim_session_capture_view(&f.s, &v, &e) && v.rows == 2, "rows %d", v.rows);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < H; i++)
            CHECK(v.residual[r * H + i] == x0[r * H + i] + 3.0f * d[i], "row %d [%d] not steered",
                  r, i);
    glim_directions_free(ds);
    fx_free(&f);
}

static void test_overflow_and_failed_chunks(void) {
    fx_session f;
    start(&f, GLIM_CAPTURE_ALL, NULL, 0, NULL, 0, 4);
    chunk(&f, 0, 3, 1, 1);
    chunk(&f, 3, 2, 1, 0); /* fails before its end: leaves nothing */
    chunk(&f, 3, 3, 0, 1); /* only one of its rows fits */
    glim_capture_view v;
    glim_error e;
    REQUIRE(!glim_session_capture_view(&f.s, &v, &e), "view");
    CHECK(v.rows == 4 && v.dropped == 2 && v.total_rows == 4, "rows %d dropped %llu total %llu",
          v.rows, (unsigned long long)v.dropped, (unsigned long long)v.total_rows);
    int pos[4] = {0, 1, 2, 3}, seq[4] = {0, 0, 0, 0};
    rows_match(&f, pos, seq, 4);
    glim_session_capture_clear(&f.s);
    chunk(&f, 6, 1, 0, 1);
    int pos2[1] = {6}, seq2[1] = {0};
    rows_match(&f, pos2, seq2, 1);
    fx_free(&f);
}

/* What a device backend does: select, then store compact rows. */
static void test_device_entry_points(void) {
    fx_session f;
    int32_t want[2] = {2, 3};
    start(&f, GLIM_CAPTURE_POSITIONS, NULL, 0, want, 2, 0);
    int rows[NB];
    int k = glim_hooks_capture_select(f.s.hooks, 0, 4, 1, rows);
    CHECK(k == 2 && rows[0] == 2 && rows[1] == 3, "select k=%d", k);
    float r0[H], r1[H];
    fx_fill(r0, H, 1.0f);
    fx_fill(r1, H, 1.0f);
    for (int l = 0; l < L; l++) {
        glim_hooks_capture_store(f.s.hooks, l, 0, r0, 0, 4, 1);
        glim_hooks_capture_store(f.s.hooks, l, 1, r1, 0, 4, 1);
    }
    glim_hooks_pass_end(f.s.hooks, 0, 4, 1);
    glim_capture_view v;
    glim_error e;
    REQUIRE(!glim_session_capture_view(&f.s, &v, &e) && v.rows == 2, "rows");
    CHECK(v.positions[0] == 2 && v.positions[1] == 3, "positions");
    CHECK(!memcmp(v.residual + 3 * H, r0, sizeof r0) && !memcmp(v.residual + (L + 3) * H, r1, sizeof r1),
          "stored rows");
    fx_free(&f);
}

static void check_file(const char *path, int n, const int *pos, const int *seq, int all_layers) {
    glim_st_set *st;
    glim_error e = {0};
    REQUIRE(!glim_st_open_file(path, &st, &e), "%s", e.message);
    const glim_tensor *r = glim_st_find(st, "residual"), *p = glim_st_find(st, "positions"),
                      *s = glim_st_find(st, "sequence"), *ly = glim_st_find(st, "layers"),
                      *tk = glim_st_find(st, "tokens");
    REQUIRE(r && p && s && ly && tk, "tensors missing");
    int nl = all_layers ? L : 2;
    CHECK(r->dtype == GLIM_DT_F32 && r->ndim == 3 && r->shape[0] == n && r->shape[1] == nl &&
              r->shape[2] == H, "residual shape [%lld %lld %lld]", (long long)r->shape[0],
          (long long)r->shape[1], (long long)r->shape[2]);
    CHECK(p->dtype == GLIM_DT_I32 && p->shape[0] == n && ly->shape[0] == nl, "meta shapes");
    const char *conv = glim_st_metadata(st, "layer_convention");
    CHECK(conv && strstr(conv, "hidden_states[l+1]"), "layer_convention metadata");
    for (int i = 0; i < n && r->shape[0] == n; i++) {
        CHECK(((const int32_t *)p->data)[i] == pos[i] && ((const int32_t *)s->data)[i] == seq[i],
              "row %d pos/seq", i);
        for (int k = 0; k < nl; k++) {
            int layer = ((const int32_t *)ly->data)[k];
            CHECK(!memcmp((const float *)r->data + ((size_t)i * nl + k) * H,
                          expect[seq[i] + 1][pos[i]][layer], H * sizeof(float)),
                  "file row %d layer %d", i, layer);
        }
    }
    glim_st_close(st);
}

static void test_write_and_stream(void) {
    fx_session f;
    int32_t layers[2] = {3, 1};
    start(&f, GLIM_CAPTURE_HEAD, layers, 2, NULL, 0, 0);
    sequence(&f, 5, 2);
    char path[256];
    glim_error e = {0};
    REQUIRE(!glim_session_capture_write(&f.s, fx_path(path, sizeof path, "cap.safetensors"), &e),
            "%s", e.message);
    int pos[3] = {4, 5, 6}, seq[3] = {0, 0, 0};
    check_file(path, 3, pos, seq, 0);
    fx_free(&f);

    /* streamed: 6 sequences of 8 rows through a 4-row buffer */
    fx_init(&f, L, H, 32, CTX, NB);
    cur_seq = 0;
    fx_path(path, sizeof path, "stream.safetensors");
    glim_capture_params p = {GLIM_CAPTURE_ALL, NULL, 0, NULL, 0, 1, path, 0};
    REQUIRE(!glim_session_capture_start(&f.s, &p, &e), "%s", e.message);
    int spos[48], sseq[48];
    for (int q = 0; q < 6; q++) {
        sequence(&f, 5, 3);
        for (int i = 0; i < 8; i++) spos[q * 8 + i] = i, sseq[q * 8 + i] = q;
    }
    CHECK(glim_session_capture_write(&f.s, path, &e) == GLIM_E_ARG && strstr(e.message, "stop"),
          "write on a stream: %s", e.message);
    glim_capture_view v;
    REQUIRE(!glim_session_capture_view(&f.s, &v, &e), "view");
    CHECK(v.rows <= NB && v.total_rows == 48 && v.dropped == 0, "held %d total %llu", v.rows,
          (unsigned long long)v.total_rows);
    REQUIRE(!glim_session_capture_stop(&f.s, &e), "%s", e.message);
    CHECK(!f.s.hooks, "hooks left after stop");
    check_file(path, 48, spos, sseq, 1);
}

static void test_refusals(void) {
    fx_session f;
    fx_init(&f, L, H, 32, CTX, NB);
    glim_error e = {0};
    int32_t bad[2] = {1, 1}, far[1] = {L};
    glim_capture_params p = {GLIM_CAPTURE_ALL, NULL, 0, bad, 2, 0, NULL, 0};
    CHECK(glim_session_capture_start(&f.s, &p, &e) == GLIM_E_ARG && strstr(e.message, "twice"),
          "dup layer: %s", e.message);
    p.layers = far;
    p.n_layers = 1;
    CHECK(glim_session_capture_start(&f.s, &p, &e) == GLIM_E_ARG && strstr(e.message, "layer 4"),
          "far layer: %s", e.message);
    p = (glim_capture_params){GLIM_CAPTURE_POSITIONS, NULL, 0, NULL, 0, 0, NULL, 0};
    CHECK(glim_session_capture_start(&f.s, &p, &e) == GLIM_E_ARG, "no positions");
    p = (glim_capture_params){GLIM_CAPTURE_ALL, NULL, 0, NULL, 0, 0, "/nonexistent/dir/x.st", 0};
    CHECK(glim_session_capture_start(&f.s, &p, &e) == GLIM_E_IO, "bad stream path: %s", e.message);
    glim_capture_view v;
    CHECK(glim_session_capture_view(&f.s, &v, &e) == GLIM_E_ARG && strstr(e.message, "not started"),
          "view without capture");
    CHECK(!f.s.hooks, "refusals left hooks");
}


/* When glim_eval notes its tokens, the head token is the call's last position, even when every
 * chunk computes logits (LOGITS_ALL over several chunks). */
static void test_noted_eval_extent(void) {
    fx_session f;
    for (int sel = 0; sel < 2; sel++) {
        start(&f, sel ? GLIM_CAPTURE_HEAD : GLIM_CAPTURE_LAST_PROMPT, NULL, 0, NULL, 0, 0);
        int32_t toks[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        glim_session_note_tokens(&f.s, toks, 10, 0);
        chunk(&f, 0, 4, 0, 1);
        chunk(&f, 4, 4, 0, 1);
        chunk(&f, 8, 2, 0, 1);
        chunk(&f, 10, 1, 0, 1); /* a decode step fed without noting: its last row */
        int pos[2] = {9, 10}, seq[2] = {0, 0};
        rows_match(&f, pos, seq, sel ? 2 : 1);
        glim_capture_view v;
        glim_error e;
        if (!glim_session_capture_view(&f.s, &v, &e) && v.rows > 0)
            CHECK(v.tokens[0] == 10, "token of position 9: %d", v.tokens[0]);
        fx_free(&f);
    }
}

int main(void) {
    RUN(test_all_positions_with_layer_subset);
    RUN(test_last_prompt_head_and_positions);
    RUN(test_capture_sees_steered_stream);
    RUN(test_overflow_and_failed_chunks);
    RUN(test_device_entry_points);
    RUN(test_noted_eval_extent);
    RUN(test_write_and_stream);
    RUN(test_refusals);
    return CHECK_DONE();
}
