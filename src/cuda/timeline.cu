/* timeline.cu: where a decoded token's time goes between and inside its kernels, as the graph
 * really runs them (bench --timeline). The decode is captured once more with a timeline slot per
 * launch; each block folds %globaltimer into its kernel's slot (first start, first block past
 * the PDL wait, first and last block end: gcu_tl_mark). The per-kernel "step" (its last block's
 * end minus the previous kernel's) adds up to the token's time, so it says which kernel the
 * critical path spends its time in; "release" (past the wait minus the previous kernel's end) is
 * the price of a kernel boundary. For the decode matvec it adds the block means of waiting,
 * prologue (rows, norms, staging) and loop, the shortest wait and the longest prologue, and when
 * the last block started its loop; for
 * attention (sliding and full layers apart) the means over its working blocks of waiting, q and
 * the tiles (of which the q preparation and the first tile's wait), then the partials and the
 * merge, and when the last block's tiles were done. The in-kernel phase stamps of --profile time
 * kernels alone; this times them in place, with PDL overlap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/model_dev.cuh"

#define TL_SLOTS 1024

static const char *tl_names[GCU_TLK_N] = {"qkvg", "attention (sliding)", "attention (full)", "o_proj",
                                           "gate/up", "down", "head"};

extern "C" int gcu_timeline(gcu_session *s, int pos, int reps, gcu_tl_row *rows, int max,
                            double *token_us, glim_error *err) {
    const size_t words = (size_t)TL_SLOTS * GCU_TL_FIELDS;
    unsigned long long *host = (unsigned long long *)malloc(words * sizeof *host);
    unsigned long long *init = (unsigned long long *)malloc(words * sizeof *init);
    unsigned char kind[TL_SLOTS];
    cudaGraphExec_t exec = NULL;
    int n = 0, nk = 0;
    glim_status st = GLIM_OK;
    *token_us = 0;
    if (!host || !init) {
        glim_fail(err, GLIM_E_NOMEM, "timeline: out of host memory");
        goto out;
    }
    for (size_t i = 0; i < words; i++) { /* minima start high, maxima and sums at zero */
        const int f = (int)(i % GCU_TL_FIELDS);
        init[i] = f == GCU_TL_START || f == GCU_TL_RELEASE || f == GCU_TL_FIRST_END || f == GCU_TL_WAIT_MIN ? ~0ull : 0;
    }
    st = gcu_check(cudaMalloc((void **)&s->tl, words * sizeof *host), "timeline buffer", err);
    if (st != GLIM_OK) goto out;
    s->tl_n = 0;
    s->tl_max = TL_SLOTS;
    s->tl_kind = kind;
    st = gcu_capture_decode(s, &exec, err);
    nk = s->tl_n;
    s->tl_kind = NULL;
    if (st != GLIM_OK) goto out;
    {
        double sum[GCU_TLK_N][14];
        int cnt[GCU_TLK_N];
        memset(sum, 0, sizeof sum);
        memset(cnt, 0, sizeof cnt);
        double tok = 0;
        s->h_step[0] = pos;
        s->h_step[1] = 1;
        for (int r = 0; r <= reps && st == GLIM_OK; r++) { /* r == 0 warms up */
            if ((st = gcu_check(cudaMemcpyAsync(s->d_step, s->h_step, 8, cudaMemcpyHostToDevice, s->st),
                                "step upload", err)) ||
                (st = gcu_check(cudaMemcpyAsync(s->tl, init, words * sizeof *host, cudaMemcpyHostToDevice,
                                                s->st), "timeline reset", err)) ||
                (st = gcu_check(cudaGraphLaunch(exec, s->st), "graph launch", err)) ||
                (st = gcu_check(cudaMemcpyAsync(host, s->tl, words * sizeof *host, cudaMemcpyDeviceToHost,
                                                s->st), "timeline copy", err)) ||
                (st = gcu_check(cudaStreamSynchronize(s->st), "timeline", err)))
                break;
            if (r == 0) continue;
            int prev = -1, first = -1;
            for (int i = 0; i < nk; i++) {
                const unsigned long long *t = host + (size_t)i * GCU_TL_FIELDS;
                if (t[GCU_TL_START] == ~0ull || !t[GCU_TL_END]) continue; /* a slot that did not run */
                if (first < 0) first = i;
                if (prev >= 0) {
                    const double pe = (double)host[(size_t)prev * GCU_TL_FIELDS + GCU_TL_END];
                    double *a = sum[kind[i]];
                    a[0] += (double)t[GCU_TL_END] - pe;
                    a[1] += (double)t[GCU_TL_START] - pe;
                    a[2] += (double)t[GCU_TL_RELEASE] - pe;
                    a[3] += (double)t[GCU_TL_END] - (double)t[GCU_TL_RELEASE];
                    a[4] += (double)t[GCU_TL_END] - (double)t[GCU_TL_FIRST_END];
                    a[11] += (double)t[GCU_TL_START_LAST] - pe;
                    if (t[GCU_TL_NBLK]) { /* the decode matvec's phases, block means */
                        const double nb = (double)t[GCU_TL_NBLK];
                        a[5] += (double)t[GCU_TL_LOOP_LAST] - pe;
                        a[6] += (double)t[GCU_TL_WAIT_SUM] / nb;
                        a[7] += (double)t[GCU_TL_PRO_SUM] / nb;
                        a[8] += (double)t[GCU_TL_LOOP_SUM] / nb;
                        a[9] += (double)t[GCU_TL_Q_SUM] / nb; /* attention only, else 0 */
                        a[10] += (double)t[GCU_TL_TILE_SUM] / nb;
                        a[12] += (double)t[GCU_TL_WAIT_MIN];
                        a[13] += (double)t[GCU_TL_PRO_MAX];
                    }
                    cnt[kind[i]]++;
                }
                prev = i;
            }
            if (first >= 0)
                tok += (double)host[(size_t)prev * GCU_TL_FIELDS + GCU_TL_END] -
                       (double)host[(size_t)first * GCU_TL_FIELDS + GCU_TL_START];
        }
        if (st == GLIM_OK && reps > 0) {
            *token_us = tok / reps / 1e3;
            for (int k = 0; k < GCU_TLK_N && n < max; k++) {
                if (!cnt[k]) continue;
                gcu_tl_row *w = &rows[n++];
                snprintf(w->name, sizeof w->name, "%s", tl_names[k]);
                w->count = cnt[k] / reps;
                w->step_us = sum[k][0] / cnt[k] / 1e3;
                w->start_us = sum[k][1] / cnt[k] / 1e3;
                w->release_us = sum[k][2] / cnt[k] / 1e3;
                w->run_us = sum[k][3] / cnt[k] / 1e3;
                w->spread_us = sum[k][4] / cnt[k] / 1e3;
                w->loop_last_us = sum[k][5] / cnt[k] / 1e3;
                w->wait_us = sum[k][6] / cnt[k] / 1e3;
                w->pro_us = sum[k][7] / cnt[k] / 1e3;
                w->loop_us = sum[k][8] / cnt[k] / 1e3;
                w->q_us = sum[k][9] / cnt[k] / 1e3;
                w->tile_us = sum[k][10] / cnt[k] / 1e3;
                w->start_last_us = sum[k][11] / cnt[k] / 1e3;
                w->wait_min_us = sum[k][12] / cnt[k] / 1e3;
                w->pro_max_us = sum[k][13] / cnt[k] / 1e3;
            }
        }
    }
out:
    if (exec) cudaGraphExecDestroy(exec);
    cudaFree(s->tl);
    s->tl = NULL;
    s->tl_kind = NULL;
    free(host);
    free(init);
    return st == GLIM_OK ? n : -1;
}
