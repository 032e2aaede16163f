/* pf_gemm_emulate.cu: k_pf_gemm (src/cuda/prefill_gemm.cu) replayed on the CPU, written in
 * session 29 when no GPU was lent, to check the kernel's indexing before its first run: the
 * tiles come from the real gcu_tile_rows, the staged x from the real gcu_stage_spans (its host
 * emulation), and each step of the kernel (the stage copies, the lanes' fragment reads, the
 * mma by PTX's m16n8k16 fragment layout, gcu_nib2's bit trick, the piece epilogue, split-K and
 * its merge, the output rows) is transcribed from the kernel with its own index expressions.
 * Shared memory starts as NaN, so that a read of anything a stage did not copy (rows past the
 * matrix, tokens past T) shows in the outputs that must not see it. Against the CPU's
 * cpu_matmul with check_matvec's tolerance.
 *
 * Build and run (here, no GPU needed; build the library first with make):
 *   nvcc -O2 -std=c++17 -Iinclude -Isrc -DGLIM_HAVE_CUDA bench/wip/pf_gemm_emulate.cu \
 *        build/libglimmer.a -ljansson -lpcre2-8 -lcudart_static -o /tmp/pf_emu && /tmp/pf_emu
 * It prints one line per case and "N cases, N failed". If the kernel changes, change this with
 * it or delete it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gcu.cuh"
extern "C" {
#include "cpu/kernels.h"
#include "quantize.h"
}

#define PF_WARPS 8
#define PF_THREADS (PF_WARPS * 32)
#define PF_UPW 2
#define PF_RBS (PF_WARPS * PF_UPW)
#define PF_TOK 32
#define PF_TSTRIDE 320

static float bf(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t rd32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
/* gcu_nib2: nibbles j and j + 4 of w as the bf16 pair (q - 8) (low half: nibble j) */
static uint32_t nib2(uint32_t w, int j) {
    uint32_t lo = (w >> (4 * j)) & 15u, hi = (w >> (4 * j + 16)) & 15u;
    float a = (float)lo - 8.0f, b = (float)hi - 8.0f;
    uint32_t ua, ub;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    return (ua >> 16) | (ub >> 16) << 16; /* exact: small integers */
}
/* d += A B for a warp: a[lane][4], b[lane][2] as PTX's m16n8k16 .bf16 row.col fragments */
static void mma(float d[32][4], const uint32_t a[32][4], const uint32_t b[32][2]) {
    float A[16][16], B[16][8];
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t = lane & 3;
        for (int h = 0; h < 2; h++) {
            A[g][2 * t + h] = bf((uint16_t)(a[lane][0] >> (16 * h)));
            A[g + 8][2 * t + h] = bf((uint16_t)(a[lane][1] >> (16 * h)));
            A[g][2 * t + 8 + h] = bf((uint16_t)(a[lane][2] >> (16 * h)));
            A[g + 8][2 * t + 8 + h] = bf((uint16_t)(a[lane][3] >> (16 * h)));
            B[2 * t + h][g] = bf((uint16_t)(b[lane][0] >> (16 * h)));
            B[2 * t + 8 + h][g] = bf((uint16_t)(b[lane][1] >> (16 * h)));
        }
    }
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t = lane & 3;
        for (int e = 0; e < 4; e++) {
            int m = g + 8 * (e >> 1), n = 2 * t + (e & 1);
            float s = 0;
            for (int k = 0; k < 16; k++) s += A[m][k] * B[k][n];
            d[lane][e] += s;
        }
    }
}

struct Case {
    int rows, K, bits, group;
    glim_dtype sdt;
    int T, swiglu, nsm;
};

static int run_case(const Case &c) {
    /* the matrix (gate/up pair for SWIGLU: rows 0..7 of each row block gate, 8..15 up) */
    const int I = c.rows;
    glim_matrix M[2];
    void *bufs[6] = {0};
    for (int k = 0; k < 1 + c.swiglu; k++) {
        float *w = (float *)malloc(sizeof(float) * (size_t)I * c.K);
        for (size_t i = 0; i < (size_t)I * c.K; i++) w[i] = (float)((rand() % 2001) - 1000) / 10000.0f;
        size_t ng = (size_t)I * (c.K / c.group), es = glim_dtype_size(c.sdt);
        bufs[3 * k] = malloc(4 * (size_t)I * (c.K * c.bits / 32));
        bufs[3 * k + 1] = malloc(es * ng);
        bufs[3 * k + 2] = malloc(es * ng);
        glim_quantize_affine(w, I, c.K, c.bits, c.group, c.sdt, (uint32_t *)bufs[3 * k], bufs[3 * k + 1], bufs[3 * k + 2]);
        free(w);
        memset(&M[k], 0, sizeof M[k]);
        M[k].rows = I;
        M[k].cols = c.K;
        M[k].bits = c.bits;
        M[k].group_size = c.group;
        M[k].dtype = c.sdt;
        M[k].data = bufs[3 * k];
        M[k].scales = bufs[3 * k + 1];
        M[k].biases = bufs[3 * k + 2];
        M[k].name = "emu";
    }
    gcu_xfmt f;
    int sbf32;
    glim_error err;
    if (gcu_mat_format_of(&M[0], &f, &sbf32, &err) != GLIM_OK) {
        printf("format: %s\n", err.message);
        return 1;
    }
    gcu_mat m;
    memset(&m, 0, sizeof m);
    const int trows = c.swiglu ? 16 * ((I + 7) / 8) : I;
    gcu_mat_geometry(&m, &f, sbf32, trows);
    unsigned char *tiles = (unsigned char *)malloc(m.bytes);
    gcu_mat_pair pair = {&M[0], &M[1]};
    gcu_tile_rows(&m, c.swiglu ? gcu_rows_swiglu : gcu_rows_plain, c.swiglu ? (void *)&pair : (void *)&M[0], 0, m.nrb, tiles);

    /* x and its staging: columns 2 tok (hi) and 2 tok + 1 (lo) of kx bf16 each, xsum [T][nspan][pps] */
    const int T = c.T, K = c.K;
    float *x = (float *)malloc(sizeof(float) * T * K);
    for (int i = 0; i < T * K; i++) x[i] = (float)((rand() % 2001) - 1000) / 500.0f + 0.0001f;
    uint16_t *xs = (uint16_t *)calloc((size_t)2 * T * f.kx, 2);
    float *xsum = (float *)calloc((size_t)T * f.nspan * f.pps, 4);
    for (int tok = 0; tok < T; tok++) {
        const float *xr = x + (size_t)tok * K;
        const int Kl = K;
        auto xf = [&](int e) { return e < Kl ? xr[e] : 0.0f; };
        gcu_stage_spans(f, xf, 0, f.nspan, (__nv_bfloat16 *)(xs + (size_t)(2 * tok) * f.kx),
                        (__nv_bfloat16 *)(xs + (size_t)(2 * tok + 1) * f.kx), xsum + (size_t)tok * f.nspan * f.pps, 0, 1);
    }

    /* the reference */
    const int out_rows = I;
    double *ref = (double *)calloc((size_t)T * out_rows, sizeof(double));
    {
        float *r0 = (float *)malloc(sizeof(float) * T * I), *r1 = (float *)malloc(sizeof(float) * T * I);
        cpu_matmul(NULL, r0, x, T, &M[0]);
        if (c.swiglu) {
            cpu_matmul(NULL, r1, x, T, &M[1]);
            cpu_swiglu(r0, r0, r1, T * I);
        }
        for (int i = 0; i < T * I; i++) ref[i] = r0[i];
        free(r0), free(r1);
    }

    /* the kernel */
    const int PPS = f.pps, uw = m.unit_bytes / 16, nspan = f.nspan, nrb = m.nrb;
    const float qoff = f.bits == 8 ? 136.0f : 8.0f;
    const int NB = T <= 8 ? 1 : T <= 16 ? 2 : 4;
    const long long ntiles = (nrb + PF_RBS - 1) / PF_RBS, places = (long long)c.nsm * 2;
    int nsplit = 1; /* pf_splits (the partial buffer's limit aside) */
    double best_t = 2.0;
    for (int ns = 1; ns <= 16 && (ns == 1 || ns * 3 <= nspan); ns++) {
        const long long B = ntiles * ns, waves = (B + places - 1) / places;
        const double t = (double)waves / ns;
        if (t < 0.97 * best_t) nsplit = ns, best_t = t;
    }
    const int V4 = PF_UPW * NB;
    float *part = (float *)malloc(sizeof(float) * 4 * (size_t)ntiles * nsplit * PF_THREADS * V4);
    int *counters = (int *)calloc((size_t)ntiles, sizeof(int));
    float *out = (float *)malloc(sizeof(float) * T * out_rows);
    for (int i = 0; i < T * out_rows; i++) out[i] = NAN;
    const int stage_bytes = (PF_RBS * m.unit_bytes + 2 * PF_TOK * PF_TSTRIDE + PF_TOK * 4 * 4 + 127) / 128 * 128;
    unsigned char *smem = (unsigned char *)malloc(2 * stage_bytes);
    int writes = 0;
    const long long nblocks = ntiles * nsplit;
    for (long long bi = nblocks - 1; bi >= 0; bi--) { /* the last block first: arrival order differs */
        const int tile = (int)(bi / nsplit), split = (int)(bi % nsplit), rb0 = tile * PF_RBS;
        const int s0 = (int)((long long)nspan * split / nsplit);
        const int ns = (int)((long long)nspan * (split + 1) / nsplit) - s0;
        for (int i = 0; i < 2 * stage_bytes / 4; i++) ((float *)smem)[i] = NAN;
        static float acc[PF_THREADS][PF_UPW][4][4];
        memset(acc, 0, sizeof acc);
        for (int j = 0; j < ns; j++) {
            const int s = s0 + j;
            unsigned char *stw = smem + (size_t)(j & 1) * stage_bytes;
            unsigned char *stbh = stw + (size_t)PF_RBS * uw * 16, *stbl = stbh + PF_TOK * PF_TSTRIDE;
            float *stx = (float *)(stbl + PF_TOK * PF_TSTRIDE);
            /* pf_load */
            for (int i = 0; i < PF_RBS * uw; i++) {
                const int r = i / uw, k = i - r * uw, rb = rb0 + r;
                if (rb < nrb) memcpy(stw + 16 * (size_t)i, tiles + 16 * (((size_t)rb * nspan + s) * uw + k), 16);
            }
            for (int i = 0; i < T * 32; i++) {
                const int col = i >> 4, item = i & 15, tok = col >> 1;
                unsigned char *dst = ((col & 1) ? stbl : stbh) + tok * PF_TSTRIDE + item * 16;
                memcpy(dst, xs + (size_t)col * f.kx + (size_t)s * 128 + item * 8, 16);
            }
            for (int i = 0; i < T * PPS; i++) {
                const int tok = i / PPS, pc = i - tok * PPS;
                stx[i] = xsum[((size_t)tok * nspan + s) * PPS + pc];
            }
            /* pf_span, warp by warp */
            for (int warp = 0; warp < PF_WARPS; warp++) {
                const unsigned char *su0 = stw + (size_t)warp * PF_UPW * uw * 16;
                for (int pc = 0; pc < PPS; pc++) {
                    static float d[PF_UPW][4][32][4];
                    memset(d, 0, sizeof d);
                    for (int ii = 0; ii < 4 / PPS; ii++) {
                        const int i = pc * (4 / PPS) + ii;
                        uint32_t pg[PF_UPW][32][4], ph[PF_UPW][32][4];
                        for (int k = 0; k < PF_UPW; k++)
                            for (int lane = 0; lane < 32; lane++) {
                                const unsigned char *wl0 = su0 + 16 * gcu_unit_u4(lane, 0), *wl1 = su0 + 16 * gcu_unit_u4(lane, 1);
                                const int ustep = uw * 4;
                                const uint32_t wg = rd32(wl0 + 4 * (k * ustep + i)), wh = rd32(wl1 + 4 * (k * ustep + i));
                                for (int jj = 0; jj < 4; jj++) pg[k][lane][jj] = nib2(wg, jj), ph[k][lane][jj] = nib2(wh, jj);
                            }
                        for (int nb = 0; nb < NB; nb++) {
                            uint32_t bh4[32][4], bl4[32][4];
                            for (int lane = 0; lane < 32; lane++) {
                                const int g = lane >> 2, t = lane & 3;
                                const int off = nb * 8 * PF_TSTRIDE + i * 64;
                                memcpy(bh4[lane], stbh + g * PF_TSTRIDE + t * 16 + off, 16);
                                memcpy(bl4[lane], stbl + g * PF_TSTRIDE + t * 16 + off, 16);
                            }
                            for (int k = 0; k < PF_UPW; k++) {
                                uint32_t a1[32][4], a2[32][4], b[32][2];
                                for (int lane = 0; lane < 32; lane++) {
                                    a1[lane][0] = pg[k][lane][0], a1[lane][1] = ph[k][lane][0];
                                    a1[lane][2] = pg[k][lane][1], a1[lane][3] = ph[k][lane][1];
                                    a2[lane][0] = pg[k][lane][2], a2[lane][1] = ph[k][lane][2];
                                    a2[lane][2] = pg[k][lane][3], a2[lane][3] = ph[k][lane][3];
                                }
                                const uint32_t(*src[2])[4] = {bh4, bl4};
                                for (int hl = 0; hl < 2; hl++) {
                                    for (int lane = 0; lane < 32; lane++) b[lane][0] = src[hl][lane][0], b[lane][1] = src[hl][lane][1];
                                    mma(d[k][nb], a1, b);
                                    for (int lane = 0; lane < 32; lane++) b[lane][0] = src[hl][lane][2], b[lane][1] = src[hl][lane][3];
                                    mma(d[k][nb], a2, b);
                                }
                            }
                        }
                    }
                    for (int k = 0; k < PF_UPW; k++)
                        for (int lane = 0; lane < 32; lane++) {
                            const int g = lane >> 2, t = lane & 3, SBW = 2 * PPS * (sbf32 ? 2 : 1);
                            const unsigned char *su = su0 + (size_t)k * uw * 16;
                            const unsigned char *sb = su + 64 * 16 + 4 * g * SBW;
                            float sg, bg, sh, bh2;
                            if (sbf32) {
                                memcpy(&sg, sb + 4 * (2 * pc), 4), memcpy(&bg, sb + 4 * (2 * pc + 1), 4);
                                memcpy(&sh, sb + 4 * (2 * PPS + 2 * pc), 4), memcpy(&bh2, sb + 4 * (2 * PPS + 2 * pc + 1), 4);
                            } else {
                                uint32_t w0 = rd32(sb + 4 * pc), w1 = rd32(sb + 4 * (PPS + pc));
                                sg = bf((uint16_t)w0), bg = bf((uint16_t)(w0 >> 16)), sh = bf((uint16_t)w1), bh2 = bf((uint16_t)(w1 >> 16));
                            }
                            const float cg = fmaf(qoff, sg, bg), ch = fmaf(qoff, sh, bh2);
                            for (int nb = 0; nb < NB; nb++) {
                                const int tk = nb * 8 + 2 * t;
                                const float X0 = stx[tk * PPS + pc], X1 = stx[(tk + 1) * PPS + pc];
                                float *A = acc[warp * 32 + lane][k][nb], *D = d[k][nb][lane];
                                A[0] += sg * D[0] + cg * X0;
                                A[1] += sg * D[1] + cg * X1;
                                A[2] += sh * D[2] + ch * X0;
                                A[3] += sh * D[3] + ch * X1;
                            }
                        }
                }
            }
        }
        /* pf_merge */
        if (nsplit > 1) {
            for (int tid = 0; tid < PF_THREADS; tid++) {
                float *mine = part + 4 * (((size_t)tile * nsplit + split) * PF_THREADS * V4 + (size_t)tid * V4);
                for (int k = 0; k < PF_UPW; k++)
                    for (int nb = 0; nb < NB; nb++) memcpy(mine + 4 * (k * NB + nb), acc[tid][k][nb], 16);
            }
            if (counters[tile]++ != nsplit - 1) continue;
            memset(acc, 0, sizeof acc);
            for (int sp = 0; sp < nsplit; sp++)
                for (int tid = 0; tid < PF_THREADS; tid++) {
                    const float *q = part + 4 * (((size_t)tile * nsplit + sp) * PF_THREADS * V4 + (size_t)tid * V4);
                    for (int k = 0; k < PF_UPW; k++)
                        for (int nb = 0; nb < NB; nb++)
                            for (int e = 0; e < 4; e++) acc[tid][k][nb][e] += q[4 * (k * NB + nb) + e];
                }
            counters[tile] = 0;
        }
        /* the epilogue (mv_out_token) */
        for (int tid = 0; tid < PF_THREADS; tid++) {
            const int lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
            for (int k = 0; k < PF_UPW; k++) {
                const int rb = rb0 + warp * PF_UPW + k;
                if (rb >= nrb) continue;
                for (int nb = 0; nb < NB; nb++)
                    for (int j = 0; j < 2; j++) {
                        const int tok = nb * 8 + 2 * t + j;
                        if (tok >= T) continue;
                        const float vg = acc[tid][k][nb][j], vh = acc[tid][k][nb][2 + j];
                        float *o = out + (size_t)tok * out_rows;
                        if (c.swiglu) {
                            const int r = rb * 8 + g;
                            if (r < out_rows) o[r] = vg / (1.0f + expf(-vg)) * vh, writes++;
                        } else {
                            const int r = rb * 16 + g;
                            if (r < out_rows) o[r] = vg, writes++;
                            if (r + 8 < out_rows) o[r + 8] = vh, writes++;
                        }
                    }
            }
        }
    }
    double num = 0, den = 0, mx = 0, mref = 0;
    int nan = 0;
    for (int i = 0; i < T * out_rows; i++) {
        if (!(out[i] == out[i])) nan++;
        double e = fabs(out[i] - ref[i]);
        num += e * e, den += ref[i] * ref[i];
        if (e > mx) mx = e;
        if (fabs(ref[i]) > mref) mref = fabs(ref[i]);
    }
    const double rel = sqrt(num / (den > 0 ? den : 1));
    const int bad = nan || rel > 1e-4 || mx > 1e-3 * mref || writes != T * out_rows;
    printf("%s rows %d K %d bits %d group %d %s T %d%s: %lld blocks (%lld tiles x %d splits), rel %.2g, max %.2g of %.3g, %d NaN, %d of %d written\n",
           bad ? "FAIL" : "ok  ", c.rows, c.K, c.bits, c.group, glim_dtype_name(c.sdt), T, c.swiglu ? " swiglu" : "", nblocks,
           ntiles, nsplit, rel, mx, mref, nan, writes, T * out_rows);
    free(tiles), free(x), free(xs), free(xsum), free(ref), free(part), free(counters), free(out), free(smem);
    for (int i = 0; i < 6; i++) free(bufs[i]);
    return bad;
}

int main(void) {
    const Case cases[] = {
        {600, 1536, 4, 64, GLIM_DT_BF16, 32, 0, 132}, {600, 1536, 4, 64, GLIM_DT_BF16, 5, 0, 132},
        {37, 640, 4, 64, GLIM_DT_BF16, 13, 0, 132},   {301, 896, 4, 128, GLIM_DT_F16, 27, 0, 132},
        {77, 512, 4, 32, GLIM_DT_F32, 9, 0, 132},     {203, 384, 8, 64, GLIM_DT_BF16, 16, 0, 132},
        {300, 1024, 4, 64, GLIM_DT_BF16, 17, 1, 132}, {1100, 256, 4, 64, GLIM_DT_BF16, 8, 0, 2},
        {45, 192, 4, 64, GLIM_DT_BF16, 13, 1, 132},
        {6656, 4096, 4, 64, GLIM_DT_BF16, 32, 0, 132}, /* the 30B's o_proj: 26 tiles x 11 splits */
    };
    int n = (int)(sizeof cases / sizeof cases[0]), failed = 0;
    for (int i = 0; i < n; i++) failed += run_case(cases[i]);
    printf("%d cases, %d failed\n", n, failed);
    return failed != 0;
}
