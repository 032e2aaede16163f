/* test_tp_split.c: the tensor-parallel split (src/tp_split.c) computes the same model. A
 * tensor-parallel forward is emulated on the CPU with the oracle's kernels: R shards each compute
 * their heads, MLP columns and vocabulary slice, the partial sums after o_proj and down_proj are
 * added (the all-reduce), and the logits must equal the CPU backend's. R = 1, 2 and 4 on a model
 * with 4 query heads over 2 kv heads, so R = 4 replicates kv heads; plus the refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/kernels.h"
#include "glimmer.h"
#include "model.h"
#include "synth.h"
#include "tp_split.h"

static char dir[] = "/tmp/glimmer-test-tp-XXXXXX";

/* logits [T][vocab] of tokens at positions 0..T-1 through R emulated ranks. */
static void tp_forward(const glim_model *m, glim_tp_shard *sh, int R, const int32_t *tok, int T,
                       float *logits) {
    const glim_config *c = &m->cfg;
    int H = c->hidden_size, D = c->head_dim, I = c->intermediate_size, V = c->vocab_size;
    float *x = calloc((size_t)T * H, 4), *xn = calloc((size_t)T * H, 4);
    float *sum = calloc((size_t)T * H, 4), *part = calloc((size_t)T * H, 4);
    size_t big = (size_t)T * (size_t)(I > c->n_heads * D ? I : c->n_heads * D);
    float *q = calloc(big, 4), *g = calloc(big, 4), *a = calloc(big, 4), *u = calloc(big, 4);
    float *k = calloc((size_t)T * c->n_kv_heads * D, 4), *v = calloc((size_t)T * c->n_kv_heads * D, 4);
    float *scores = calloc((size_t)T, 4), *lg = calloc((size_t)T * V, 4);
    float row[4096];
    /* embedding: each rank contributes the rows of its vocabulary slice (zeros elsewhere) */
    for (int t = 0; t < T; t++) {
        for (int r = 0; r < R; r++) {
            const glim_tp_plan *p = &sh[r].plan;
            if (tok[t] < p->vocab0 || tok[t] >= p->vocab0 + p->n_vocab) continue;
            cpu_embed_row(row, &sh[r].w.embed, tok[t] - p->vocab0);
            for (int i = 0; i < H; i++) x[t * H + i] += row[i];
        }
        cpu_rmsnorm(x + t * H, x + t * H, H, NULL, 0, c->rms_eps);
    }
    for (int l = 0; l < c->n_layers; l++) {
        memset(sum, 0, sizeof(float) * T * H);
        for (int t = 0; t < T; t++)
            cpu_rmsnorm(xn + t * H, x + t * H, H, &m->w.layer[l].input_norm, 1, c->rms_eps);
        for (int r = 0; r < R; r++) {
            const glim_config *rc = &sh[r].cfg;
            const glim_layer *w = &sh[r].w.layer[l];
            int Q = rc->n_heads * D, KV = rc->n_kv_heads * D;
            cpu_matmul(NULL, q, xn, T, &w->q);
            cpu_matmul(NULL, k, xn, T, &w->k);
            cpu_matmul(NULL, v, xn, T, &w->v);
            cpu_matmul(NULL, g, xn, T, &w->attn_gate);
            for (int t = 0; t < T; t++) {
                for (int h = 0; h < rc->n_heads; h++) {
                    float *qh = q + t * Q + h * D;
                    cpu_rmsnorm(qh, qh, D, NULL, 0, c->rms_eps);
                    for (int d = 0; d < D; d++) qh[d] *= c->qk_scale;
                }
                for (int h = 0; h < rc->n_kv_heads; h++)
                    cpu_rmsnorm(k + t * KV + h * D, k + t * KV + h * D, D, NULL, 0, c->rms_eps);
                if (!c->layer_is_full[l]) {
                    cpu_rope(q + t * Q, rc->n_heads, D, t, c->inv_freq);
                    cpu_rope(k + t * KV, rc->n_kv_heads, D, t, c->inv_freq);
                }
            }
            for (int t = 0; t < T; t++) {
                int first = c->layer_is_full[l] ? 0 : t - c->sliding_window + 1;
                if (first < 0) first = 0;
                cpu_kv_view kv = {k, v, first, t - first + 1, T, KV};
                cpu_attention(a + t * Q, q + t * Q, &kv, rc->n_heads, rc->n_kv_heads, D,
                              c->attn_scale, scores);
            }
            cpu_sigmoid_gate(a, g, T * Q);
            cpu_matmul(NULL, part, a, T, &w->o);
            for (int i = 0; i < T * H; i++) sum[i] += part[i]; /* the all-reduce */
        }
        for (int t = 0; t < T; t++) {
            cpu_rmsnorm(sum + t * H, sum + t * H, H, &m->w.layer[l].post_attn_norm, 1, c->post_norm_eps);
            for (int i = 0; i < H; i++) x[t * H + i] += sum[t * H + i];
            cpu_rmsnorm(xn + t * H, x + t * H, H, &m->w.layer[l].pre_ffn_norm, 1, c->rms_eps);
        }
        memset(sum, 0, sizeof(float) * T * H);
        for (int r = 0; r < R; r++) {
            const glim_layer *w = &sh[r].w.layer[l];
            int n = sh[r].cfg.intermediate_size;
            cpu_matmul(NULL, g, xn, T, &w->mlp_gate);
            cpu_matmul(NULL, u, xn, T, &w->mlp_up);
            cpu_swiglu(g, g, u, T * n);
            cpu_matmul(NULL, part, g, T, &w->mlp_down);
            for (int i = 0; i < T * H; i++) sum[i] += part[i]; /* the all-reduce */
        }
        for (int t = 0; t < T; t++) {
            cpu_rmsnorm(sum + t * H, sum + t * H, H, &m->w.layer[l].post_ffn_norm, 1, c->post_norm_eps);
            for (int i = 0; i < H; i++) x[t * H + i] += sum[t * H + i];
        }
    }
    for (int t = 0; t < T; t++) cpu_rmsnorm(xn + t * H, x + t * H, H, &m->w.final_norm, 0, c->rms_eps);
    for (int r = 0; r < R; r++) { /* each rank's vocabulary slice of the logits */
        const glim_tp_plan *p = &sh[r].plan;
        cpu_matmul(NULL, lg, xn, T, &sh[r].w.lm_head);
        for (int t = 0; t < T; t++) {
            cpu_logit_softcap(lg + (size_t)t * p->n_vocab, p->n_vocab, c->output_multiplier,
                              c->final_softcap);
            memcpy(logits + (size_t)t * V + p->vocab0, lg + (size_t)t * p->n_vocab,
                   sizeof(float) * p->n_vocab);
        }
    }
    free(x); free(xn); free(sum); free(part); free(q); free(g); free(a); free(u); free(k);
    free(v); free(scores); free(lg);
}

static void check_ranks(const char *name, glim_synth_spec spec, const int *ranks, int n_ranks) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    glim_error err = {0};
    REQUIRE(glim_synth_write(path, &spec, &err) == GLIM_OK, "%s", err.message);
    glim_model *m = NULL;
    glim_model_params mp = {"cpu", 2};
    REQUIRE(glim_model_open(path, &mp, &m, &err) == GLIM_OK, "%s", err.message);
    int T = 20, V = spec.vocab_size;
    int32_t tok[20];
    for (int i = 0; i < T; i++) tok[i] = (i * 97 + 31) % V;
    float *ref = malloc(sizeof(float) * T * V), *got = malloc(sizeof(float) * T * V);
    glim_session *s = NULL;
    glim_session_params sp = {64, 64, 0};
    REQUIRE(glim_session_create(m, &sp, &s, &err) == GLIM_OK, "%s", err.message);
    REQUIRE(glim_eval(s, tok, T, 0, GLIM_LOGITS_ALL, ref, (size_t)T * V, &err) == GLIM_OK, "%s",
            err.message);
    glim_session_free(s);
    for (int i = 0; i < n_ranks; i++) {
        int R = ranks[i];
        glim_tp_shard sh[8];
        int made = 0;
        for (int r = 0; r < R; r++, made++) {
            glim_tp_plan p;
            if (glim_tp_plan_make(&m->cfg, &m->w, R, r, &p, &err) ||
                glim_tp_shard_make(&m->cfg, &m->w, &p, &sh[r], &err))
                break;
        }
        CHECK(made == R, "R=%d: %s", R, err.message);
        if (made == R) {
            memset(got, 0xff, sizeof(float) * T * V); /* NaN: every logit must be written */
            tp_forward(m, sh, R, tok, T, got);
            double d = 0, mx = 0;
            for (int j = 0; j < T * V; j++) {
                double e = fabs((double)got[j] - ref[j]);
                if (!(e <= d)) d = e;
                if (fabs(ref[j]) > mx) mx = fabs(ref[j]);
            }
            printf("  %s, %d ranks (kv heads per rank %d): max |tp - single| = %.3g of max |logit| %.3g\n",
                   name, R, sh[0].plan.n_kv_heads, d, mx);
            /* fp32, only the order of the o_proj / down_proj sums differs */
            CHECK(d <= 1e-4 * (mx > 1 ? mx : 1), "%s R=%d: max diff %g", name, R, d);
        }
        for (int r = 0; r < made; r++) glim_tp_shard_free(&sh[r]);
    }
    free(ref);
    free(got);
    glim_model_close(m);
}

static void tp_bf16_matches_single(void) {
    int ranks[] = {1, 2, 4};
    check_ranks("hf", glim_synth_tiny(), ranks, 3);
}

static void tp_mlx4_matches_single(void) {
    glim_synth_spec s = glim_synth_tiny(); /* q width 128 = 4 x 32: 2 ranks keep groups of 32 */
    s.bits = 4;
    s.group_size = 32;
    s.intermediate_size = 256;
    int ranks[] = {2, 4};
    check_ranks("mlx4", s, ranks, 2);
}

static void tp_refuses_what_does_not_split(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/hf", dir);
    glim_error err = {0};
    glim_model *m = NULL;
    glim_model_params mp = {"cpu", 1};
    REQUIRE(glim_model_open(path, &mp, &m, &err) == GLIM_OK, "%s", err.message);
    glim_tp_plan p;
    glim_status st = glim_tp_plan_make(&m->cfg, &m->w, 3, 0, &p, &err);
    printf("  3 ranks: %s\n", err.message);
    CHECK(st == GLIM_E_UNSUPPORTED && strstr(err.message, "4 query heads"), "%s", err.message);
    st = glim_tp_plan_make(&m->cfg, &m->w, 2, 2, &p, &err);
    CHECK(st == GLIM_E_ARG, "rank 2 of 2 accepted");
    glim_model_close(m);
    /* a quantized down_proj whose per-rank columns are not whole groups */
    glim_synth_spec s = glim_synth_tiny();
    s.bits = 4;
    s.group_size = 64;
    s.hidden_size = 128;
    s.intermediate_size = 192; /* 96 columns per rank of 2: not a multiple of 64 */
    snprintf(path, sizeof path, "%s/odd", dir);
    REQUIRE(glim_synth_write(path, &s, &err) == GLIM_OK, "%s", err.message);
    REQUIRE(glim_model_open(path, &mp, &m, &err) == GLIM_OK, "%s", err.message);
    st = glim_tp_plan_make(&m->cfg, &m->w, 2, 0, &p, &err);
    printf("  2 ranks, groups of 64: %s\n", err.message);
    CHECK(st == GLIM_E_UNSUPPORTED && strstr(err.message, "group"), "%s", err.message);
    glim_model_close(m);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    RUN(tp_bf16_matches_single);
    RUN(tp_mlx4_matches_single);
    RUN(tp_refuses_what_does_not_split);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "cleanup failed\n");
    return CHECK_DONE();
}
