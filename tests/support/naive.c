/* naive.c: see naive.h. Written independently of src/cpu/ (only the weight accessors are
 * shared), in double precision, recomputing everything for every call. */
#include "naive.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void rms(double *x, int n, const glim_vector *w, int mode, double eps) {
    /* mode 0: weightless, 1: 1 + w, 2: w */
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) {
        double g = 1.0;
        if (mode) {
            double wi = glim_load_f32(w->data, w->dtype, (size_t)i);
            g = mode == 1 ? 1.0 + wi : wi;
        }
        x[i] = x[i] * inv * g;
    }
}

static void linear(const glim_matrix *W, const double *x, double *out, float *row) {
    for (int64_t r = 0; r < W->rows; r++) {
        glim_matrix_row_f32(W, r, row);
        double acc = 0;
        for (int64_t c = 0; c < W->cols; c++) acc += (double)row[c] * x[c];
        out[r] = acc;
    }
}

static void rope(double *v, int D, int pos, const glim_config *c) {
    for (int d = 0; d < D / 2; d++) {
        double f = 1.0 / pow((double)c->rope_theta, (2.0 * d) / D), a = pos * f;
        double x = v[d], y = v[d + D / 2];
        v[d] = x * cos(a) - y * sin(a);
        v[d + D / 2] = y * cos(a) + x * sin(a);
    }
}

int naive_forward(const glim_model *m, const int32_t *tokens, int T, const naive_faults *fp,
                  float *logits) {
    naive_faults none = {0};
    const naive_faults *f = fp ? fp : &none;
    const glim_config *c = &m->cfg;
    int H = c->hidden_size, D = c->head_dim, NH = c->n_heads, NK = c->n_kv_heads;
    int Q = NH * D, KV = NK * D, I = c->intermediate_size, V = c->vocab_size;
    int maxw = H > I ? H : I;
    if (V > maxw) maxw = V;
    if (Q > maxw) maxw = Q;
    double eps = f->swap_eps ? c->post_norm_eps : c->rms_eps;
    double post_eps = f->swap_eps ? c->rms_eps : c->post_norm_eps;
    int layer_mode = f->plain_layer_norms ? 2 : 1;
    double *x = calloc((size_t)T * H, sizeof(double)), *xn = calloc((size_t)maxw, sizeof(double));
    double *q = calloc((size_t)T * Q, sizeof(double)), *k = calloc((size_t)T * KV, sizeof(double));
    double *v = calloc((size_t)T * KV, sizeof(double)), *g = calloc((size_t)T * Q, sizeof(double));
    double *a = calloc((size_t)T * Q, sizeof(double)), *tmp = calloc((size_t)maxw, sizeof(double));
    double *u = calloc((size_t)maxw, sizeof(double)), *p = calloc((size_t)T, sizeof(double));
    float *row = calloc((size_t)maxw, sizeof(float));
    int rc = -1;
    if (!x || !xn || !q || !k || !v || !g || !a || !tmp || !u || !p || !row) goto out;

    for (int t = 0; t < T; t++) {
        glim_matrix_row_f32(&m->w.embed, tokens[t], row);
        for (int i = 0; i < H; i++) x[t * H + i] = row[i];
        if (!f->no_embed_norm) rms(x + t * H, H, NULL, 0, c->rms_eps);
    }
    for (int l = 0; l < c->n_layers; l++) {
        const glim_layer *w = &m->w.layer[l];
        int full = f->pattern_from_start ? l % 4 == 3 : c->layer_is_full[l];
        for (int t = 0; t < T; t++) {
            memcpy(xn, x + t * H, sizeof(double) * H);
            rms(xn, H, &w->input_norm, layer_mode, eps);
            linear(&w->q, xn, q + t * Q, row);
            linear(&w->k, xn, k + t * KV, row);
            linear(&w->v, xn, v + t * KV, row);
            linear(&w->attn_gate, xn, g + t * Q, row);
            for (int h = 0; h < NH; h++) {
                rms(q + t * Q + h * D, D, NULL, 0, eps);
                if (!f->no_qk_scale)
                    for (int d = 0; d < D; d++) q[t * Q + h * D + d] *= c->qk_scale;
                if (!full || f->rope_on_full) rope(q + t * Q + h * D, D, t, c);
            }
            for (int h = 0; h < NK; h++) {
                rms(k + t * KV + h * D, D, NULL, 0, eps);
                if (!full || f->rope_on_full) rope(k + t * KV + h * D, D, t, c);
            }
        }
        int W = c->sliding_window + f->window_delta;
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < NH; h++) {
                int kh = h / (NH / NK);
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= t; j++) {
                    int visible = full || j > t - W;
                    p[j] = visible ? 0 : -INFINITY;
                    if (!visible) continue;
                    double s = 0;
                    for (int d = 0; d < D; d++) s += q[t * Q + h * D + d] * k[j * KV + kh * D + d];
                    p[j] = s / sqrt((double)D);
                    if (p[j] > mx) mx = p[j];
                }
                for (int j = 0; j <= t; j++) sum += p[j] = isinf(p[j]) ? 0 : exp(p[j] - mx);
                for (int d = 0; d < D; d++) {
                    double o = 0;
                    for (int j = 0; j <= t; j++) o += p[j] / sum * v[j * KV + kh * D + d];
                    double gate = f->no_gate ? 1.0 : 1.0 / (1.0 + exp(-g[t * Q + h * D + d]));
                    a[t * Q + h * D + d] = o * gate;
                }
            }
        }
        for (int t = 0; t < T; t++) {
            double *xt = x + t * H;
            linear(&w->o, a + t * Q, tmp, row);
            rms(tmp, H, &w->post_attn_norm, layer_mode, post_eps);
            for (int i = 0; i < H; i++) xt[i] += tmp[i];
            memcpy(xn, xt, sizeof(double) * H);
            rms(xn, H, &w->pre_ffn_norm, layer_mode, eps);
            linear(&w->mlp_gate, xn, tmp, row);
            linear(&w->mlp_up, xn, u, row);
            for (int i = 0; i < I; i++) u[i] *= tmp[i] / (1.0 + exp(-tmp[i]));
            linear(&w->mlp_down, u, tmp, row);
            rms(tmp, H, &w->post_ffn_norm, layer_mode, post_eps);
            for (int i = 0; i < H; i++) xt[i] += tmp[i];
        }
    }
    for (int t = 0; t < T; t++) {
        memcpy(xn, x + t * H, sizeof(double) * H);
        rms(xn, H, &m->w.final_norm, f->centered_final ? 1 : 2, eps);
        linear(&m->w.lm_head, xn, tmp, row);
        double mult = f->no_multiplier ? 1.0 : c->output_multiplier, cap = c->final_softcap;
        for (int i = 0; i < V; i++) {
            double z = f->softcap_first ? cap * tanh(tmp[i] / cap) * mult
                                        : cap * tanh(tmp[i] * mult / cap);
            logits[(size_t)t * V + i] = (float)z;
        }
    }
    rc = 0;
out:
    free(x); free(xn); free(q); free(k); free(v); free(g); free(a); free(tmp); free(u); free(p);
    free(row);
    return rc;
}
