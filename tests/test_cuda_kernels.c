/* test_cuda_kernels.c: each CUDA kernel against its CPU twin (src/cpu/kernels.h) on fresh random
 * non-zero inputs at odd sizes. Skips without a GPU, unless GLIM_REQUIRE_CUDA=1 (make test-cuda),
 * where a missing GPU is a failure.
 *
 * Tolerances, and why: the matrix-vector kernel feeds x to the tensor cores as bf16 hi + lo
 * (16 bits of mantissa, relative 2^-17) and accumulates in fp32 in another order than the CPU,
 * and applies MLX scales per group (scale * sum(q x) + bias * sum(x)) where the CPU dequantizes
 * first: both are fp32-accurate, so we ask ||gpu - cpu|| / ||cpu|| <= 1e-4 and every element
 * within 1e-3 of the largest. Norms, RoPE and elementwise ops are plain fp32 in the same order:
 * 1e-5 relative. Attention reads K/V from a bf16 cache: the CPU side gets the same bf16-rounded
 * K/V, leaving fp32 differences only (1e-4). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/kernels.h"
#include "quantize.h"

#include "gpu_skip.h"

#ifdef GLIM_HAVE_CUDA

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float urand(void) { /* uniform in [-1, 1), never exactly 0 */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    float v = (float)((rng_state >> 40) & 0xffffff) / 8388608.0f - 1.0f;
    return v == 0.0f ? 0.5f : v;
}
static float *rand_vec(size_t n, float scale) {
    float *v = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) v[i] = urand() * scale;
    return v;
}

typedef struct hmat {
    glim_matrix m;
    void *q, *s, *b;
} hmat;

/* A random [rows][cols] matrix: dense bf16 (bits 0) or MLX affine with scales of dtype sdt. */
static hmat make_mat(int64_t rows, int64_t cols, int bits, int group, glim_dtype sdt, float scale) {
    hmat h;
    memset(&h, 0, sizeof h);
    float *w = rand_vec((size_t)(rows * cols), scale);
    h.m.rows = rows;
    h.m.cols = cols;
    h.m.name = "test";
    if (!bits) {
        uint16_t *d = malloc(2 * (size_t)(rows * cols));
        for (int64_t i = 0; i < rows * cols; i++) d[i] = glim_f32_to_bf16(w[i]);
        h.m.dtype = GLIM_DT_BF16;
        h.m.data = h.q = d;
    } else {
        size_t ng = (size_t)(rows * (cols / group)), es = glim_dtype_size(sdt);
        h.q = malloc(4 * (size_t)(rows * (cols * bits / 32)));
        h.s = malloc(es * ng);
        h.b = malloc(es * ng);
        glim_quantize_affine(w, rows, cols, bits, group, sdt, h.q, h.s, h.b);
        h.m.bits = bits;
        h.m.group_size = group;
        h.m.dtype = sdt;
        h.m.data = h.q;
        h.m.scales = h.s;
        h.m.biases = h.b;
    }
    free(w);
    return h;
}
static void free_mat(hmat *h) { free(h->q), free(h->s), free(h->b); }

/* ||a - b|| / ||b|| and max |a - b| / max |b|; NaN anywhere fails. */
static void compare(const char *what, const float *gpu, const float *ref, size_t n, double rel_tol,
                    double elem_tol) {
    double num = 0, den = 0, mx = 0, mref = 0;
    size_t nan = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(gpu[i] == gpu[i])) nan++;
        double d = fabs((double)gpu[i] - ref[i]);
        num += d * d;
        den += (double)ref[i] * ref[i];
        if (d > mx) mx = d, worst = i;
        if (fabs(ref[i]) > mref) mref = fabs(ref[i]);
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    CHECK(nan == 0, "%s: %zu of %zu outputs are NaN (unwritten?)", what, nan, n);
    CHECK(rel <= rel_tol, "%s: relative error %.3g > %.1g", what, rel, rel_tol);
    CHECK(mx <= elem_tol * (mref > 0 ? mref : 1),
          "%s: element %zu: gpu %.7g vs cpu %.7g (max |ref| %.4g, tol %.1g)", what, worst,
          gpu[worst], ref[worst], mref, elem_tol);
}

static glim_vector vec_f32(const float *v, int n) {
    glim_vector g = {n, GLIM_DT_F32, v, "w"};
    return g;
}

static void check_matvec(int64_t rows, int64_t cols, int bits, int group, glim_dtype sdt, int T,
                         int smem) {
    hmat h = make_mat(rows, cols, bits, group, sdt, 0.1f);
    float *x = rand_vec((size_t)(T * cols), 2.0f);
    float *ref = malloc(sizeof(float) * (size_t)(T * rows)), *out = malloc(sizeof(float) * (size_t)(T * rows));
    cpu_matmul(NULL, ref, x, T, &h.m);
    glim_error err;
    glim_status st = gcu_test_matvec(&h.m, NULL, x, T, GCU_EPI_STORE, 0, 0, smem, out, &err);
    char what[160];
    snprintf(what, sizeof what, "matvec %lldx%lld bits %d group %d %s T %d smem %d", (long long)rows,
             (long long)cols, bits, group, glim_dtype_name(sdt), T, smem);
    CHECK(st == GLIM_OK, "%s: %s", what, err.message);
    if (st == GLIM_OK) compare(what, out, ref, (size_t)(T * rows), 1e-4, 1e-3);
    free(x), free(ref), free(out);
    free_mat(&h);
}

static void matvec_q4_g64(void) {
    NEED_GPU();
    int Ts[] = {1, 2, 3, 5, 32};
    for (int i = 0; i < 5; i++) check_matvec(37, 192, 4, 64, GLIM_DT_BF16, Ts[i], 1);
    check_matvec(37, 192, 4, 64, GLIM_DT_BF16, 1, 0);
    check_matvec(37, 192, 4, 64, GLIM_DT_BF16, 3, 0);
}

static void matvec_formats(void) {
    NEED_GPU();
    check_matvec(45, 96, 4, 32, GLIM_DT_BF16, 1, 1);
    check_matvec(45, 96, 4, 32, GLIM_DT_BF16, 7, 1);
    check_matvec(19, 384, 4, 128, GLIM_DT_F16, 1, 1);
    check_matvec(19, 384, 4, 128, GLIM_DT_F16, 9, 1);
    check_matvec(33, 160, 8, 32, GLIM_DT_BF16, 1, 1);
    check_matvec(33, 160, 8, 32, GLIM_DT_BF16, 4, 1);
    check_matvec(21, 128, 8, 64, GLIM_DT_F32, 2, 1);
    check_matvec(21, 256, 8, 128, GLIM_DT_BF16, 11, 1);
    check_matvec(17, 320, 4, 64, GLIM_DT_F32, 1, 1);
}

static void matvec_dense(void) {
    NEED_GPU();
    check_matvec(29, 75, 0, 0, GLIM_DT_BF16, 1, 1);
    check_matvec(29, 75, 0, 0, GLIM_DT_BF16, 6, 1);
    check_matvec(8, 64, 0, 0, GLIM_DT_BF16, 1, 0);
    check_matvec(130, 2050, 0, 0, GLIM_DT_BF16, 1, 1);
    /* past k_mv's 32 tokens: gcu_mv_launch's parts (32 + 32, 32 + 15), each token's input, sums
     * and outputs at its own offsets */
    check_matvec(29, 75, 0, 0, GLIM_DT_BF16, 64, 1);
    check_matvec(130, 2050, 0, 0, GLIM_DT_BF16, 47, 1);
}

/* Many warps per row block and row blocks cut between warps: the stream-K merge. */
static void matvec_split_rows(void) {
    NEED_GPU();
    check_matvec(1000, 4096, 4, 64, GLIM_DT_BF16, 1, 1);
    check_matvec(300, 1536, 4, 64, GLIM_DT_BF16, 3, 1);
    check_matvec(4099, 640, 8, 64, GLIM_DT_BF16, 1, 1);
    check_matvec(517, 6656, 4, 64, GLIM_DT_BF16, 20, 1);
}

/* The gate/up pair with the SwiGLU epilogue, I outputs of width K, against the CPU. */
static void check_swiglu(int T, int64_t I, int64_t K) {
    hmat g = make_mat(I, K, 4, 64, GLIM_DT_BF16, 0.2f), u = make_mat(I, K, 4, 64, GLIM_DT_BF16, 0.2f);
    float *x = rand_vec((size_t)(T * K), 2.0f);
    float *rg = malloc(sizeof(float) * T * I), *ru = malloc(sizeof(float) * T * I), *out = malloc(sizeof(float) * T * I);
    cpu_matmul(NULL, rg, x, T, &g.m);
    cpu_matmul(NULL, ru, x, T, &u.m);
    cpu_swiglu(rg, rg, ru, (int)(T * I));
    glim_error err;
    glim_status st = gcu_test_matvec(&g.m, &u.m, x, T, GCU_EPI_SWIGLU, 0, 0, 1, out, &err);
    char what[96];
    snprintf(what, sizeof what, "swiglu epilogue %lldx%lld T %d", (long long)I, (long long)K, T);
    CHECK(st == GLIM_OK, "%s: %s", what, err.message);
    if (st == GLIM_OK) compare(what, out, rg, (size_t)(T * I), 1e-4, 1e-3);
    free(x), free(rg), free(ru), free(out);
    free_mat(&g), free_mat(&u);
}

/* The head's epilogue (multiplier, softcap) on V rows of width K, logits large enough to bend. */
static void check_softcap(int T, int64_t V, int64_t K) {
    hmat h = make_mat(V, K, 4, 32, GLIM_DT_BF16, 3.0f * sqrtf(128.0f / (float)K));
    float *xh = rand_vec((size_t)(T * K), 2.0f);
    float *ref = malloc(sizeof(float) * T * V), *o2 = malloc(sizeof(float) * T * V);
    cpu_matmul(NULL, ref, xh, T, &h.m);
    cpu_logit_softcap(ref, (int)(T * V), 0.19611613f, 20.0f);
    glim_error err;
    glim_status st = gcu_test_matvec(&h.m, NULL, xh, T, GCU_EPI_SOFTCAP, 0.19611613f, 20.0f, 1, o2, &err);
    char what[96];
    snprintf(what, sizeof what, "softcap epilogue %lldx%lld T %d", (long long)V, (long long)K, T);
    CHECK(st == GLIM_OK, "%s: %s", what, err.message);
    if (st == GLIM_OK) compare(what, o2, ref, (size_t)(T * V), 1e-4, 1e-3);
    float big = 0;
    for (int64_t i = 0; i < T * V; i++) big = fabsf(ref[i]) > big ? fabsf(ref[i]) : big;
    CHECK(big > 10.0f, "%s: the test should reach the softcap's bend (max |logit| %.2f)", what, big);
    free(xh), free(ref), free(o2);
    free_mat(&h);
}

static void matvec_swiglu_softcap(void) {
    NEED_GPU();
    int Ts[] = {1, 4, 13};
    for (int k = 0; k < 3; k++) {
        check_swiglu(Ts[k], 45, 192);
        check_softcap(Ts[k], 77, 128);
    }
}

/* The prefill GEMM (prefill_gemm.cu: 5..64 tokens of MLX weights; GLIM_CUDA_GEMM=0 sends them to
 * k_mv instead, in parts of 32 tokens past 32): both paths against the CPU, and the GEMM's
 * launch count says which ran. The shapes: row tiles split along the spans (38 row blocks are 3
 * tiles of 16, far fewer than the GPU's places, so split-K and its merge), more tiles than places
 * and no split, rows and tokens off the tiles' multiples (1, 2, 4 and 8 n-blocks of 8 tokens: 64
 * and 41 tokens on the 64-token instance, split-K and stream-K), groups of 128, 64 and 32 (1, 2, 4
 * pieces a span), bf16, f16 and f32 scales, 8-bit weights, and the SwiGLU and softcap epilogues
 * on split tiles; GLIM_CUDA_GEMM=1 (the 32-token instance at two blocks per SM, two stages),
 * 2 (one block, four stages, split-K), 3 (the default: stream-K where split-K would take more
 * than a wave: 38393 x 512 is 150 tiles of 4 spans, 600 tile-spans over one wave of blocks, so
 * blocks cross tiles; split-K on the rest: 2300 x 5120 is 9 tiles of up to 13 parts), 4 and 5
 * (as 3, 17..32 tokens on wgmma, hi and lo as columns of n64 or in turn at n32: groups of 128,
 * 64 and 32, 8 bits, the epilogues). Same tolerance as check_matvec. */
static void matvec_gemm(void) {
    NEED_GPU();
    char *saved = getenv("GLIM_CUDA_GEMM") ? strdup(getenv("GLIM_CUDA_GEMM")) : NULL;
    static const struct { int64_t rows, cols; int bits, group; glim_dtype sdt; int T; } mats[16] = {
        {600, 1536, 4, 64, GLIM_DT_BF16, 32}, {600, 1536, 4, 64, GLIM_DT_BF16, 5}, {37, 640, 4, 64, GLIM_DT_BF16, 13},
        {301, 896, 4, 128, GLIM_DT_F16, 27},  {77, 512, 4, 32, GLIM_DT_F32, 9},    {203, 384, 8, 64, GLIM_DT_BF16, 16},
        {70001, 128, 4, 64, GLIM_DT_BF16, 8}, {2300, 5120, 4, 64, GLIM_DT_BF16, 32},
        {38393, 512, 4, 64, GLIM_DT_BF16, 32}, /* 150 tiles of 4 spans: stream-K */
        {333, 1024, 4, 32, GLIM_DT_F32, 29},    {203, 384, 8, 64, GLIM_DT_BF16, 24}, /* wgmma: 4 pieces, 8 bits */
        {2300, 5120, 4, 64, GLIM_DT_BF16, 64}, {38393, 512, 4, 64, GLIM_DT_BF16, 41}, /* 8 n-blocks */
        {301, 896, 4, 128, GLIM_DT_F16, 57},    {77, 512, 4, 32, GLIM_DT_F32, 35},  {203, 384, 8, 64, GLIM_DT_BF16, 48},
    };
    const int nm = (int)(sizeof mats / sizeof mats[0]);
    const char *settings[6] = {"1", "2", "3", "4", "5", "0"};
    for (int pass = 0; pass < 6; pass++) {
        setenv("GLIM_CUDA_GEMM", settings[pass], 1);
        const long before = gcu_gemm_count();
        for (int i = 0; i < nm; i++)
            check_matvec(mats[i].rows, mats[i].cols, mats[i].bits, mats[i].group, mats[i].sdt, mats[i].T, 1);
        check_swiglu(17, 300, 1024);
        check_swiglu(50, 300, 1024); /* 8 n-blocks (k_mv: 32 + 18) */
        check_softcap(24, 1000, 256);
        /* gcu_test_matvec launches twice (the second run finds the counters left at zero): the
         * matrices, two SwiGLU calls and one softcap call */
        const long ran = gcu_gemm_count() - before, want = pass == 5 ? 0 : 2 * (nm + 3);
        CHECK(ran == want, "GLIM_CUDA_GEMM=%s: %ld GEMM launches, want %ld", settings[pass], ran, want);
    }
    if (saved) setenv("GLIM_CUDA_GEMM", saved, 1), free(saved);
    else unsetenv("GLIM_CUDA_GEMM");
}

/* The decode kernel with its input made in the kernel (decode_mv.cu), against the CPU: the
 * same norms as residual_norms, then the matrix product. pro 0: x = src; 1: x = norm(src);
 * 2: h' = h + centred_norm(src), x = norm(h'). Rings of 2, 3 and 4 units in flight, requested
 * before the wait (ring 2), once the rows are in (3) and after staging (4); all prefetch 2 units
 * past the ring into L2, which must not change a bit.
 * Tolerance as check_matvec: the 4-bit values enter as 128+q and the offset is taken back
 * through sums of the staged x, which must not cost more than the hi/lo split itself. The
 * integer path (i8, MLX 4-bit with groups up to 64) represents x to 2^-21 of each group's
 * largest |x|, finer than hi/lo's 2^-16 for all but the group's smallest values: the same
 * tolerance. */
static void check_decode(int64_t rows, int64_t K, int bits, int group, glim_dtype sdt, int pro,
                         int epi, int centered, int ring, int mode) {
    const int i8 = (mode >= 1 && mode <= 3) || (mode >= 6 && mode != 10), dyn = mode == 2 || mode == 3;
    const int max_blocks = mode == 3 ? 3 : 0, defer_merge = mode >= 7;
    const int cluster = mode == 8 || mode == 9 || mode == 11 || mode == 13 ? 2 : 1;
    const int block_rows = mode >= 9, cluster_rows = mode == 11 || mode == 13, front_rows = mode == 12 || mode >= 14;
    const int span = mode >= 14, span_warps = span && ring == 3 ? 7 : 0, span_acc = mode == 15 || mode == 17;
    const int span_rows = mode == 16 ? 4 : (mode == 15 || mode == 17) && ring == 4 ? 2 : 1, span_even = mode == 17;
    const int own_stage = mode == 13;
    const int tma = mode >= 4, tma_slots = ring == 4 ? 0 : ring, tma_chunk = mode >= 5 ? 2 : 1;
    /* when the ring is first requested (gcu_dmv_call.late_ring): every value on each ring kind */
    const int late_ring = tma ? (ring + 1) % 4 : ring <= 4 ? ring - 2 : 0;
    hmat W = make_mat(rows, K, bits, group, sdt, 0.1f), U;
    int swiglu = epi == GCU_EPI_SWIGLU;
    if (swiglu) U = make_mat(rows, K, bits, group, sdt, 0.1f);
    float *h = rand_vec((size_t)K, 5.0f), *src = rand_vec((size_t)K, pro == 0 ? 2.0f : 0.05f);
    float *wa = rand_vec((size_t)K, 0.3f), *wo = rand_vec((size_t)K, 0.3f);
    if (!centered)
        for (int64_t i = 0; i < K; i++) wo[i] += 1.0f;
    float *x = malloc(sizeof(float) * K), *rh = malloc(sizeof(float) * K), *gh = malloc(sizeof(float) * K);
    float *ref = malloc(sizeof(float) * rows), *ru = malloc(sizeof(float) * rows), *out = malloc(sizeof(float) * rows);
    glim_vector va = vec_f32(wa, (int)K), vo = vec_f32(wo, (int)K);
    if (pro == 0) {
        memcpy(x, src, sizeof(float) * K);
    } else if (pro == 1) {
        cpu_rmsnorm(x, src, (int)K, &vo, centered, 1e-5f);
    } else {
        cpu_rmsnorm(rh, src, (int)K, &va, 1, 1e-6f);
        for (int64_t i = 0; i < K; i++) rh[i] += h[i];
        cpu_rmsnorm(x, rh, (int)K, &vo, centered, 1e-5f);
    }
    cpu_matmul(NULL, ref, x, 1, &W.m);
    if (swiglu) {
        cpu_matmul(NULL, ru, x, 1, &U.m);
        cpu_swiglu(ref, ref, ru, (int)rows);
    }
    if (epi == GCU_EPI_SOFTCAP) cpu_logit_softcap(ref, (int)rows, 0.19611613f, 2.0f);
    gcu_test_dmv p = {pro, (int)K, src, h, wa, 1e-6f, wo, centered, 1e-5f, epi, 0.19611613f, 2.0f, ring, late_ring, i8, dyn,
                      max_blocks, tma, tma_slots, tma_chunk, defer_merge, cluster, block_rows, cluster_rows, front_rows,
                      own_stage, span, span_warps, span_acc, span_rows, span_even};
    glim_error err;
    glim_status st = gcu_test_decode_matvec(&W.m, swiglu ? &U.m : NULL, &p, out, gh, &err);
    char what[400];
    snprintf(what, sizeof what, "decode matvec %lldx%lld bits %d group %d %s input %d epi %d %s "
             "ring %d (first requested: late_ring %d)%s%s%s%s", (long long)rows, (long long)K, bits, group, glim_dtype_name(sdt), pro,
             epi, centered ? "centred" : "plain", ring, late_ring,
             span_even ? (span_rows > 1 ? ", span-major on the fewest blocks with the same largest share, 2 row groups" : ", span-major on the fewest blocks with the same largest share")
             : span ? (span_rows > 1 ? (span_acc ? ", span-major, sums in shared memory, 2 row groups" : ", span-major, 4 row groups")
                     : span_warps ? ", span-major, 7 warps owning spans" : span_acc ? ", span-major, sums in shared memory" : ", span-major")
             : own_stage ? ", whole row blocks per cluster of 2, each block staging its own row"
             : cluster_rows ? ", whole row blocks per cluster of 2" : front_rows ? ", whole row blocks per block, leftovers to the first" : block_rows ? ", whole row blocks per block" : defer_merge ? ", split first row block's arrival deferred" : "",
             cluster == 2 ? ", staging shared by clusters of 2" : "",
             !(i8 && bits == 4 && group <= 64) ? "" : !dyn ? ", integer path" : max_blocks ? ", integer path, chunks over 3 blocks" : ", integer path, chunks",
             !tma ? "" : ring == 4 ? (tma_chunk == 2 ? ", shared-memory ring of as many 2-unit slots as fit" : ", shared-memory ring of as many units as fit")
                                    : (tma_chunk == 2 ? ", shared-memory ring (ring = its 2-unit slots per warp)" : ", shared-memory ring (ring = its units per warp)"));
    CHECK(st == GLIM_OK, "%s: %s", what, err.message);
    if (st == GLIM_OK) {
        compare(what, out, ref, (size_t)rows, 1e-4, 1e-3);
        if (pro == 2) compare("decode matvec: residual written by block 0", gh, rh, (size_t)K, 1e-5, 1e-5);
    }
    free(h), free(src), free(wa), free(wo), free(x), free(rh), free(gh), free(ref), free(ru), free(out);
    free_mat(&W);
    if (swiglu) free_mat(&U);
}

static void decode_matvec(void) {
    NEED_GPU();
    /* modes: 0 bf16 hi/lo; 1 integer path, static shares; 2 integer path, chunks taken at run
     * time; 3 the same on 3 blocks (many chunks each); 4 bf16 hi/lo with the weights in a
     * shared-memory ring by bulk copies (k_dmv_tma), 2 and 3 units per warp (the ring wraps
     * many times) and as many as fit; 5 the same with 2 units per bulk copy (a warp's last
     * chunk may be a single unit); 6 the shared-memory ring of 2-unit slots on the integer path;
     * 7 the same with a warp's split first row block arriving at the end of its range (the default);
     * 8: 7 with the staging shared by clusters of 2 blocks (GLIM_CUDA_CLUSTER); 9: 8 with whole
     * row blocks per block, split ones merged in shared memory (GLIM_CUDA_BLOCK_ROWS); 10: 5
     * (bf16 hi/lo) with whole row blocks per block; 11: 9 with the row blocks owned by the
     * cluster, merged through distributed shared memory (GLIM_CUDA_CLUSTER_ROWS); 12: 9 with the
     * leftover row blocks on the first blocks (GLIM_CUDA_FRONT_ROWS); 13: 11 with each block
     * staging its whole row (GLIM_CUDA_CLUSTER_OWN_STAGE). Shapes with fewer row blocks than SMs
     * and blocks with fewer units than warps are among them. */
    for (int mode = 0; mode < 14; mode++)
    for (int ring = 2; ring <= (mode == 1 ? 6 : 4); ring++) {
        check_decode(37, 192, 4, 64, GLIM_DT_BF16, 0, GCU_EPI_STORE, 1, ring, mode);
        check_decode(45, 96, 4, 32, GLIM_DT_BF16, 1, GCU_EPI_STORE, 0, ring, mode);
        check_decode(19, 384, 4, 128, GLIM_DT_F16, 2, GCU_EPI_STORE, 1, ring, mode);
        check_decode(33, 160, 8, 32, GLIM_DT_BF16, 0, GCU_EPI_STORE, 1, ring, mode);
        check_decode(21, 128, 8, 64, GLIM_DT_F32, 2, GCU_EPI_STORE, 0, ring, mode);
        check_decode(29, 75, 0, 0, GLIM_DT_BF16, 0, GCU_EPI_STORE, 1, ring, mode);
        check_decode(130, 2050, 0, 0, GLIM_DT_BF16, 1, GCU_EPI_STORE, 0, ring, mode);
        check_decode(1000, 4096, 4, 64, GLIM_DT_BF16, 0, GCU_EPI_STORE, 1, ring, mode);
        check_decode(4099, 640, 8, 64, GLIM_DT_BF16, 2, GCU_EPI_STORE, 1, ring, mode);
        check_decode(517, 6656, 4, 64, GLIM_DT_BF16, 2, GCU_EPI_STORE, 1, ring, mode);
        check_decode(300, 1536, 4, 64, GLIM_DT_BF16, 2, GCU_EPI_SWIGLU, 1, ring, mode);
        check_decode(45, 192, 8, 64, GLIM_DT_BF16, 2, GCU_EPI_SWIGLU, 1, ring, mode);
        check_decode(77, 128, 4, 32, GLIM_DT_BF16, 2, GCU_EPI_SOFTCAP, 0, ring, mode);
        check_decode(6656, 19968, 4, 64, GLIM_DT_BF16, 0, GCU_EPI_STORE, 1, ring, mode);
        check_decode(91, 320, 4, 64, GLIM_DT_F32, 1, GCU_EPI_STORE, 1, ring, mode);
        check_decode(203, 2048, 4, 32, GLIM_DT_F16, 0, GCU_EPI_SWIGLU, 1, ring, mode);
        check_decode(37, 12800, 4, 64, GLIM_DT_BF16, 0, GCU_EPI_STORE, 1, ring, mode); /* 2 pieces */
    }
}

/* The span-major kernel (GLIM_CUDA_SPAN, decode_mv_span.cu: each warp owns whole spans of its
 * block's row blocks and stages them itself) on every shape of decode_matvec that has the
 * integer path (MLX 4-bit, groups of 32 or 64), check_decode's tolerance (the same products
 * summed in another order), the residual of RESID against the CPU, the two runs' bits equal,
 * and an error if the span kernel did not take the call. Mode 14: the row blocks' sums in
 * registers, rings of 2 and 3 slots of 2 units per warp and as many as fit, with 3 slots only 7
 * warps owning spans (uneven shares, some ending on a single span); mode 15: the sums in shared
 * memory (GLIM_CUDA_SPAN_ACC), 2 slots and as many as fit (there with 2 row groups), and the
 * 30B's gate/up shape (19 row blocks per block on 132 SMs, more elsewhere); mode 16: the warps as
 * span groups x 4 row groups (GLIM_CUDA_SPAN_ROWS=4: each span staged by 4 warps into their own
 * scratch, a block's row blocks dealt round robin to the row groups); mode 17: mode 15 on the
 * fewest blocks with the same largest share of row blocks (GLIM_CUDA_SPAN_EVEN: the 6656 x
 * 19968 shape's 416 row blocks on 104 blocks of 4 where there are 132 SMs, gate/up's 2496 on
 * 125 of 10 x 2; the small shapes, fewer row blocks than SMs, as before). Spans per warp from 1 (96-wide) to 10 (19968-wide), row blocks per block from 1 to 15
 * (19 with the sums in shared memory). */
static void decode_matvec_span(void) {
    NEED_GPU();
    const long before = gcu_dmv_span_count();
    int calls = 0;
    for (int mode = 14; mode <= 17; mode++)
    for (int ring = 2; ring <= 4; ring += mode >= 15 ? 2 : 1, calls += 11) {
        check_decode(37, 192, 4, 64, GLIM_DT_BF16, 0, GCU_EPI_STORE, 1, ring, mode);
        check_decode(45, 96, 4, 32, GLIM_DT_BF16, 1, GCU_EPI_STORE, 0, ring, mode);
        check_decode(1000, 4096, 4, 64, GLIM_DT_BF16, 0, GCU_EPI_STORE, 1, ring, mode);
        check_decode(517, 6656, 4, 64, GLIM_DT_BF16, 2, GCU_EPI_STORE, 1, ring, mode);
        check_decode(300, 1536, 4, 64, GLIM_DT_BF16, 2, GCU_EPI_SWIGLU, 1, ring, mode);
        check_decode(77, 128, 4, 32, GLIM_DT_BF16, 2, GCU_EPI_SOFTCAP, 0, ring, mode);
        check_decode(6656, 19968, 4, 64, GLIM_DT_BF16, 0, GCU_EPI_STORE, 1, ring, mode);
        check_decode(91, 320, 4, 64, GLIM_DT_F32, 1, GCU_EPI_STORE, 1, ring, mode);
        check_decode(203, 2048, 4, 32, GLIM_DT_F16, 0, GCU_EPI_SWIGLU, 1, ring, mode);
        check_decode(37, 12800, 4, 64, GLIM_DT_BF16, 0, GCU_EPI_STORE, 1, ring, mode);
        /* gate/up-like: 1875 row blocks, 15 per block on 132 SMs (the 30B's 2496 give 19 there,
         * more than SPAN_RB_MAX on GPUs under 125 SMs: with the sums in shared memory only) */
        if (mode == 14 || mode == 16) check_decode(15000, 6656, 4, 64, GLIM_DT_BF16, 2, GCU_EPI_SWIGLU, 1, ring, mode);
        else check_decode(19968, 6656, 4, 64, GLIM_DT_BF16, 2, GCU_EPI_SWIGLU, 1, ring, mode);
    }
    /* two runs per call (gcu_test_decode_matvec) */
    const long ran = gcu_dmv_span_count() - before;
    CHECK(ran == 2L * calls, "span-major kernel: %ld launches for %d calls of two runs", ran, calls);
}

/* The staging shared by a cluster of blocks (GLIM_CUDA_CLUSTER) must change no bit: each block
 * stages 1/n of the row through the same per-item code into every block, and the warps' shares
 * are those of the grid without clusters, so the outputs (and RESID's residual) must equal the
 * unshared ones exactly, not closely. kin < K: a RAW input narrower than the matrix (the zeros
 * past it are staged by the last rank). Small products have fewer blocks than a cluster
 * multiple: the grid is rounded up with blocks that own no units but stage. Clusters of 2 must
 * run (an H200 holds 66 of them, one block per SM); clusters of 4 may not fit a grid of one
 * block per SM (an H200 holds 30: 120 SMs), and then only say so. block_rows: the same with
 * whole row blocks per block (GLIM_CUDA_BLOCK_ROWS), whose shares also come from the grid
 * without clusters. */
static void check_cluster_bits_of(int64_t rows, int64_t K, int64_t kin, int group, int pro, int epi, int block_rows,
                                  int own_stage) {
    const int swiglu = epi == GCU_EPI_SWIGLU;
    hmat W = make_mat(rows, K, 4, group, GLIM_DT_BF16, 0.1f), U;
    if (swiglu) U = make_mat(rows, K, 4, group, GLIM_DT_BF16, 0.1f);
    float *h = rand_vec((size_t)K, 5.0f), *src = rand_vec((size_t)K, pro == 0 ? 2.0f : 0.05f);
    float *wa = rand_vec((size_t)K, 0.3f), *wo = rand_vec((size_t)K, 0.3f);
    float *out[3], *hh[3];
    const int cl[3] = {1, 2, 4};
    glim_status st[3];
    char what[200];
    snprintf(what, sizeof what, "decode matvec %lldx%lld (input %lld wide) group %d input %d epi %d%s%s", (long long)rows,
             (long long)K, (long long)kin, group, pro, epi, block_rows ? ", whole row blocks per block" : "",
             own_stage ? ", each block staging its own row" : "");
    for (int i = 0; i < 3; i++) {
        out[i] = malloc(sizeof(float) * rows);
        hh[i] = malloc(sizeof(float) * K);
        gcu_test_dmv p = {pro, (int)kin, src, h, wa, 1e-6f, wo, 1, 1e-5f, epi, 0.19611613f, 2.0f, 2, 3, 1, 0,
                          0, 1, 2, 2, 1, cl[i], block_rows, 0, 0, own_stage, 0, 0, 0, 0, 0};
        glim_error err;
        st[i] = gcu_test_decode_matvec(&W.m, swiglu ? &U.m : NULL, &p, out[i], hh[i], &err);
        if (cl[i] == 4 && st[i] == GLIM_E_UNSUPPORTED)
            fprintf(stderr, "  info: %s: %s\n", what, err.message);
        else
            CHECK(st[i] == GLIM_OK, "%s, clusters of %d: %s", what, cl[i], err.message);
    }
    if (st[0] == GLIM_OK) {
        int finite = 1, nonzero = 0;
        for (int64_t r = 0; r < rows; r++) finite &= isfinite(out[0][r]) != 0, nonzero |= out[0][r] != 0.0f;
        CHECK(finite && nonzero, "%s: the unshared output is not a finite, non-zero vector", what);
    }
    for (int i = 1; i < 3; i++) {
        if (st[0] != GLIM_OK || st[i] != GLIM_OK) continue;
        CHECK(memcmp(out[0], out[i], sizeof(float) * rows) == 0, "%s: clusters of %d change the output's bits", what,
              cl[i]);
        if (pro == 2)
            CHECK(memcmp(hh[0], hh[i], sizeof(float) * K) == 0, "%s: clusters of %d change the residual's bits",
                  what, cl[i]);
    }
    for (int i = 0; i < 3; i++) free(out[i]), free(hh[i]);
    free(h), free(src), free(wa), free(wo);
    free_mat(&W);
    if (swiglu) free_mat(&U);
}

static void check_cluster_bits(int64_t rows, int64_t K, int64_t kin, int group, int pro, int epi) {
    for (int own = 0; own < 2; own++) {
        check_cluster_bits_of(rows, K, kin, group, pro, epi, 0, own);
        check_cluster_bits_of(rows, K, kin, group, pro, epi, 1, own);
    }
}

static void decode_matvec_cluster_bits(void) {
    NEED_GPU();
    check_cluster_bits(6656, 4096, 4096, 64, 0, GCU_EPI_STORE);   /* the 30B's o_proj */
    check_cluster_bits(6656, 19968, 19968, 64, 0, GCU_EPI_STORE); /* down */
    check_cluster_bits(1000, 4096, 3000, 64, 0, GCU_EPI_STORE);   /* a narrower input */
    check_cluster_bits(517, 6656, 6656, 64, 2, GCU_EPI_STORE);  /* qkvg-like, h written */
    check_cluster_bits(300, 1536, 1536, 32, 2, GCU_EPI_SWIGLU); /* gate/up-like */
    check_cluster_bits(77, 640, 640, 64, 1, GCU_EPI_SOFTCAP);    /* head-like */
    check_cluster_bits(37, 192, 192, 64, 0, GCU_EPI_STORE);       /* 1 block's work, peers idle */
    check_cluster_bits(45, 320, 320, 64, 0, GCU_EPI_STORE);       /* a last half span */
}

/* gate/up's SwiGLU epilogue staging down's input as digits (GLIM_CUDA_STAGE_I8), then down on
 * them: the same bits as down staging the SwiGLU rows itself (both go through dmv_i8_item on
 * the same values, and down's sums are the same), so the two outputs must be equal, not close;
 * the digit buffer is poisoned (E = NaN) before each run, so any span left unstaged shows. The
 * SwiGLU rows against the CPU, and down against the CPU on the GPU's rows, with check_decode's
 * tolerance. N: gate/up rows = down's width (320: a last span of 64 of 128). */
static void check_swiglu_down(int64_t N, int64_t K, int64_t R, int group, int pro, int slots, int defer) {
    hmat W = make_mat(N, K, 4, group, GLIM_DT_BF16, 0.1f), U = make_mat(N, K, 4, group, GLIM_DT_BF16, 0.1f);
    hmat D = make_mat(R, N, 4, group, GLIM_DT_BF16, 0.1f);
    float *h = rand_vec((size_t)K, 5.0f), *src = rand_vec((size_t)K, pro == 0 ? 2.0f : 0.05f);
    float *wa = rand_vec((size_t)K, 0.3f), *wo = rand_vec((size_t)K, 0.3f);
    float *x = malloc(sizeof(float) * K), *rh = malloc(sizeof(float) * K);
    float *ra = malloc(sizeof(float) * N), *ru = malloc(sizeof(float) * N), *act = malloc(sizeof(float) * N);
    float *rd = malloc(sizeof(float) * R), *o1 = malloc(sizeof(float) * R), *o2 = malloc(sizeof(float) * R);
    glim_vector va = vec_f32(wa, (int)K), vo = vec_f32(wo, (int)K);
    if (pro == 0) {
        memcpy(x, src, sizeof(float) * K);
    } else {
        cpu_rmsnorm(rh, src, (int)K, &va, 1, 1e-6f);
        for (int64_t i = 0; i < K; i++) rh[i] += h[i];
        cpu_rmsnorm(x, rh, (int)K, &vo, 1, 1e-5f);
    }
    cpu_matmul(NULL, ra, x, 1, &W.m);
    cpu_matmul(NULL, ru, x, 1, &U.m);
    cpu_swiglu(ra, ra, ru, (int)N);
    gcu_test_dmv p = {pro, (int)K, src, h, wa, 1e-6f, wo, 1, 1e-5f, GCU_EPI_SWIGLU, 0, 0, 2, 3, 1, 0,
                      0, 1, slots, 2, defer >= 1, 1, defer == 2, 0, 0, 0, 0, 0, 0, 0, 0};
    glim_error err;
    glim_status st = gcu_test_swiglu_down(&W.m, &U.m, &D.m, &p, act, o1, o2, &err);
    char what[200];
    snprintf(what, sizeof what, "gate/up %lldx%lld -> down %lldx%lld through staged digits, group %d, input %d, "
             "%d slots%s", (long long)N, (long long)K, (long long)R, (long long)N, group, pro, slots,
             defer == 2 ? ", whole row blocks per block" : defer ? ", deferred arrivals" : "");
    CHECK(st == GLIM_OK, "%s: %s", what, err.message);
    if (st == GLIM_OK) {
        CHECK(memcmp(o1, o2, sizeof(float) * R) == 0, "%s: down on staged digits differs from down "
              "staging the rows itself", what);
        compare(what, act, ra, (size_t)N, 1e-4, 1e-3);
        cpu_matmul(NULL, rd, act, 1, &D.m);
        compare(what, o1, rd, (size_t)R, 1e-4, 1e-3);
    }
    free(h), free(src), free(wa), free(wo), free(x), free(rh), free(ra), free(ru), free(act);
    free(rd), free(o1), free(o2);
    free_mat(&W), free_mat(&U), free_mat(&D);
}

/* The integer path's digits of one group of lp items (8 values each), from their definition
 * (i8_digits.cuh): E = 2^e, the power of two just above max|x| / 119 (e at least -100, at most
 * 126; NaN for an infinite x); per byte j of the weight word, its low element x0 (element 2j)
 * as Zl = x0 2^24 / E rounded to the nearest integer (ties to even), its high one x1 (element
 * 2j + 1) as Zh = x1 2^24 / (16 E) rounded the same; the low rows' digits those of Zl, the high
 * rows' those of Zz = Zh - Zl, each Z as d0 2^24 + d1 2^16 + d2 2^8 + d3 with d1..d3 in
 * [-128, 127] (balanced base 256) and d0 the rest; the group's sum of x in the staging's order
 * (each item's 8 values in turn, then a butterfly over the items). Computed here in double and
 * by division, not by the GPU's bytes, so that a slip in either shows. */
static int ref_digit_range; /* top digits outside [-127, 127] seen by ref_i8_digits */
static void ref_i8_digits(const float *v, int lp, uint32_t *words, float *ex) {
    float mx = 0.0f, s[16];
    for (int i = 0; i < lp; i++) {
        s[i] = 0.0f;
        for (int k = 0; k < 8; k++) mx = fmaxf(mx, fabsf(v[8 * i + k])), s[i] += v[8 * i + k];
    }
    for (int o = 1; o < lp; o <<= 1) {
        float t[16];
        for (int i = 0; i < lp; i++) t[i] = s[i] + s[i ^ o];
        memcpy(s, t, sizeof(float) * lp);
    }
    const float m119 = mx * (1.0f / 119.0f);
    uint32_t mb;
    memcpy(&mb, &m119, 4);
    int be = (int)((mb >> 23) & 255u);
    be = be < 26 ? 26 : be > 252 ? 252 : be;
    const float E = isfinite(mx) ? ldexpf(1.0f, be + 1 - 127) : NAN;
    const double s24 = ldexp(1.0, 150 - be); /* 2^24 / E */
    for (int i = 0; i < lp; i++) {
        uint8_t d[4][8];
        for (int j = 0; j < 4; j++) {
            const double zl = nearbyint((double)v[8 * i + 2 * j] * s24);
            const double zh = nearbyint((double)v[8 * i + 2 * j + 1] * s24 / 16.0);
            const double z[2] = {zl, zh - zl};
            for (int h = 0; h < 2; h++) {
                double r = z[h];
                for (int c = 3; c >= 1; c--) { /* balanced base-256 digits, the lowest first */
                    const double dc = r - 256.0 * floor((r + 128.0) / 256.0);
                    d[c][2 * j + h] = (uint8_t)(int8_t)dc;
                    r = (r - dc) / 256.0;
                }
                if (isfinite(mx) && fabs(r) > 127.0) ref_digit_range++;
                d[0][2 * j + h] = (uint8_t)(int8_t)r;
            }
        }
        for (int c = 0; c < 4; c++)
            for (int h = 0; h < 2; h++)
                words[8 * i + 2 * c + h] = d[c][h] | (uint32_t)d[c][2 + h] << 8 | (uint32_t)d[c][4 + h] << 16 |
                                          (uint32_t)d[c][6 + h] << 24;
        ex[2 * i] = E, ex[2 * i + 1] = s[i];
    }
}

/* dmv_i8_digits (every decode prologue's staging and gate/up's fused one) against the
 * definition, byte for byte: random groups over 100 binades with the low elements negative and
 * the high ones positive (Zh - Zl near its largest, the top digit's range), groups whose Zl and
 * Zh fall on ties (max 100 2^k, so E = 2^k: x0 = (n + 1/2) 2^(k-24), x1 = (n + 1/2) 2^(k-20)),
 * groups with zero items, groups below the 2^-100 floor of E, and one with an infinite value
 * (E must be NaN; its digits say nothing). The definition's top digits must stay within
 * [-127, 127] (ref_digit_range counts those that do not). */
static void i8_digits_bytes(void) {
    NEED_GPU();
    const int lps[3] = {4, 8, 16}, n = 2048;
    float *v = malloc(sizeof(float) * 8 * n), ex[2 * 16], *gex = malloc(sizeof(float) * 2 * n);
    uint32_t *gw = malloc(sizeof(uint32_t) * 8 * n), rw[8 * 16];
    ref_digit_range = 0;
    for (int li = 0; li < 3; li++) {
        const int lp = lps[li], ng = n / lp;
        for (int gi = 0; gi < ng; gi++) {
            float *g = v + (size_t)gi * lp * 8;
            const int kind = gi % 5, k = (int)(urand() * 100.0f);
            for (int j = 0; j < lp * 8; j++) {
                if (kind == 0) g[j] = ldexpf((j & 1 ? 1.0f : -1.0f) * (0.5f + 0.5f * urand()) * 127.0f, k);
                else if (kind == 1) { /* ties (n + 1/2 exact in fp32 for n < 2^22), and values
                                       * near the top of the range between them */
                    const float t = (float)(int)(urand() * 4194304.0f) + 0.5f;
                    g[j] = j % 4 == 0 ? ldexpf(-t, k - 24) : j % 4 == 1 ? ldexpf(t, k - 20)
                           : ldexpf((j & 1 ? 1.0f : -1.0f) * urand() * 99.0f, k);
                }
                else if (kind == 2) g[j] = j / 8 % 3 == 1 ? 0.0f : urand() * 3.0f;
                else if (kind == 3) g[j] = ldexpf(urand(), -110 - (gi % 20));
                else g[j] = urand() * 1000.0f;
            }
            if (kind == 1) g[0] = ldexpf(100.0f, k);
            if (kind == 4 && gi == 4) g[5] = INFINITY;
        }
        glim_error err;
        glim_status st = gcu_test_i8_digits(v, n, lp, gw, gex, &err);
        CHECK(st == GLIM_OK, "digits test, groups of %d items: %s", lp, err.message);
        if (st != GLIM_OK) continue;
        int bad = 0, nan_seen = 0;
        for (int gi = 0; gi < ng && bad < 3; gi++) {
            ref_i8_digits(v + (size_t)gi * lp * 8, lp, rw, ex);
            for (int i = 0; i < lp; i++) {
                const size_t q = (size_t)gi * lp + i;
                const float E = gex[2 * q], S = gex[2 * q + 1];
                if (isnan(ex[2 * i])) { /* the infinite value's group */
                    nan_seen++;
                    CHECK(isnan(E), "digits, groups of %d: group %d holds an infinity but E = %g", lp, gi, E);
                    continue;
                }
                const int same = memcmp(rw + 8 * i, gw + 8 * q, 32) == 0 && memcmp(&E, ex + 2 * i, 4) == 0 &&
                                 memcmp(&S, ex + 2 * i + 1, 4) == 0;
                if (!same && bad++ < 3)
                    CHECK(0, "digits, groups of %d: item %zu (group %d, kind %d): words %08x %08x .. E %a sum %a, "
                          "expected %08x %08x .. E %a sum %a", lp, q, gi, gi % 5, gw[8 * q], gw[8 * q + 1], E, S,
                          rw[8 * i], rw[8 * i + 1], ex[2 * i], ex[2 * i + 1]);
            }
        }
        CHECK(bad == 0, "digits, groups of %d items: %d items differ from the definition", lp, bad);
        CHECK(nan_seen == lp, "digits, groups of %d: the infinite group was not among them (%d)", lp, nan_seen);
    }
    CHECK(ref_digit_range == 0, "digits: %d top digits of the definition outside [-127, 127]", ref_digit_range);
    free(v), free(gex), free(gw);
}

/* defer 0: stream-K merges as each row block ends; 1: a split first row block's arrival
 * deferred; 2: whole row blocks per block (both products), merged in shared memory */
static void swiglu_down_digits(void) {
    NEED_GPU();
    for (int defer = 0; defer < 3; defer++)
        for (int slots = 2; slots <= 3; slots++) {
            check_swiglu_down(384, 1536, 517, 64, 2, slots, defer);
            check_swiglu_down(320, 640, 45, 32, 0, slots, defer);
            check_swiglu_down(1024, 256, 133, 64, 0, slots, defer); /* many spans per warp */
        }
    check_swiglu_down(19968, 6656, 6656, 64, 2, 2, 1); /* the 30B's gate/up and down */
    check_swiglu_down(19968, 6656, 6656, 64, 2, 2, 2);
}

static void residual_norms(void) {
    NEED_GPU();
    int Ks[] = {96, 1001, 6656};
    for (int k = 0; k < 3; k++) {
        for (int centered = 0; centered < 2; centered++) {
            int K = Ks[k];
            float *h = rand_vec(K, 5.0f), *src = rand_vec(K, 0.01f), *wa = rand_vec(K, 0.3f), *wo = rand_vec(K, 0.3f);
            if (!centered)
                for (int i = 0; i < K; i++) wo[i] += 1.0f;
            float *y = malloc(sizeof(float) * K), *rh = malloc(sizeof(float) * K), *rx = malloc(sizeof(float) * K);
            float *gh = malloc(sizeof(float) * K), *gx = malloc(sizeof(float) * K);
            glim_vector va = vec_f32(wa, K), vo = vec_f32(wo, K);
            cpu_rmsnorm(y, src, K, &va, 1, 1e-8f);
            for (int i = 0; i < K; i++) rh[i] = h[i] + y[i];
            cpu_rmsnorm(rx, rh, K, &vo, centered, 1e-5f);
            gcu_test_norm p = {K, h, src, wa, 1e-8f, wo, centered, 1e-5f};
            glim_error err;
            glim_status st = gcu_test_residual_norm(&p, gh, gx, &err);
            CHECK(st == GLIM_OK, "residual norm: %s", err.message);
            if (st == GLIM_OK) {
                compare("residual (h + centred norm)", gh, rh, K, 1e-5, 1e-5);
                compare(centered ? "centred output norm" : "plain output norm", gx, rx, K, 1e-5, 1e-5);
            }
            free(h), free(src), free(wa), free(wo), free(y), free(rh), free(rx), free(gh), free(gx);
        }
    }
}

static void embedding(void) {
    NEED_GPU();
    struct { int64_t K; int bits, group; glim_dtype sdt; } cases[] = {
        {96, 4, 32, GLIM_DT_BF16}, {128, 8, 64, GLIM_DT_F16}, {75, 0, 0, GLIM_DT_BF16}, {192, 4, 64, GLIM_DT_F32}};
    for (int c = 0; c < 4; c++) {
        int64_t V = 53, K = cases[c].K;
        hmat e = make_mat(V, K, cases[c].bits, cases[c].group, cases[c].sdt, 1.0f);
        int tok = 37;
        float *ref = malloc(sizeof(float) * K), *rn = malloc(sizeof(float) * K);
        float *row = malloc(sizeof(float) * K), *nrm = malloc(sizeof(float) * K);
        cpu_embed_row(ref, &e.m, tok);
        cpu_rmsnorm(rn, ref, (int)K, NULL, 0, 1e-5f);
        glim_error err;
        glim_status st = gcu_test_embed(&e.m, tok, 1e-5f, row, nrm, &err);
        CHECK(st == GLIM_OK, "embed: %s", err.message);
        if (st == GLIM_OK) {
            compare("embedding row", row, ref, K, 1e-6, 1e-6);
            compare("embedding norm", nrm, rn, K, 1e-5, 1e-5);
        }
        free(ref), free(rn), free(row), free(nrm);
        free_mat(&e);
    }
}

static void qk_prep(void) {
    NEED_GPU();
    struct { int H, Hkv, D, pos, rope; } cases[] = {{6, 2, 80, 1234, 1}, {32, 2, 128, 31000, 1},
                                                    {4, 2, 32, 0, 1}, {8, 1, 64, 77, 0}};
    for (int c = 0; c < 4; c++) {
        int H = cases[c].H, Hkv = cases[c].Hkv, D = cases[c].D, pos = cases[c].pos;
        float *inv = malloc(sizeof(float) * D / 2);
        for (int i = 0; i < D / 2; i++) inv[i] = 1.0f / powf(500000.0f, (float)(2 * i) / (float)D);
        float *q = rand_vec((size_t)H * D, 4.0f), *k = rand_vec((size_t)Hkv * D, 4.0f);
        float *rq = malloc(sizeof(float) * H * D), *rk = malloc(sizeof(float) * Hkv * D);
        memcpy(rq, q, sizeof(float) * H * D);
        memcpy(rk, k, sizeof(float) * Hkv * D);
        for (int h = 0; h < H; h++) {
            cpu_rmsnorm(rq + h * D, rq + h * D, D, NULL, 0, 1e-5f);
            for (int d = 0; d < D; d++) rq[h * D + d] *= 3.87f;
        }
        for (int h = 0; h < Hkv; h++) cpu_rmsnorm(rk + h * D, rk + h * D, D, NULL, 0, 1e-5f);
        if (cases[c].rope) {
            cpu_rope(rq, H, D, pos, inv);
            cpu_rope(rk, Hkv, D, pos, inv);
        }
        for (int i = 0; i < Hkv * D; i++) rk[i] = glim_round_bf16(rk[i]); /* the cache is bf16 */
        glim_error err;
        glim_status st = gcu_test_qk_prep(q, H, k, Hkv, D, 1e-5f, 3.87f, pos, cases[c].rope ? inv : NULL, &err);
        CHECK(st == GLIM_OK, "qk prep: %s", err.message);
        if (st == GLIM_OK) {
            compare("q: norm, scale, rope", q, rq, (size_t)H * D, 1e-5, 1e-5);
            compare("k in the bf16 cache", k, rk, (size_t)Hkv * D, 4e-3, 4e-3);
        }
        free(inv), free(q), free(k), free(rq), free(rk);
    }
}

static void attention(void) {
    NEED_GPU();
    struct { int H, Hkv, D, n, nsplit; } cases[] = {
        {8, 2, 64, 1, 1}, {8, 2, 64, 37, 4}, {8, 2, 64, 300, 16}, {32, 2, 128, 1000, 8},
        {16, 1, 80, 129, 3}, {4, 2, 32, 70, 128},
        /* many splits: the merge's batches of partials, spread over parts (4 heads of 128: fewer
         * outputs than threads) and over several outputs per thread (16 heads) */
        {8, 2, 128, 4100, 128}, {32, 2, 128, 8192, 128},
        /* splits of 8 tiles: the two tile buffers taking turns */
        {8, 2, 128, 2000, 4},
        /* 8 kv heads x 128 splits of 64 keys outnumber the blocks an H200 holds at once (~396):
         * the splits lengthen to 128 keys (33 of them) instead of running in two waves */
        {32, 8, 128, 4100, 128},
        /* the 30B's full layer at 32k keys (16 heads per kv head, 128 splits of 4 tiles) */
        {32, 2, 128, 32768, 128}};
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        int H = cases[c].H, Hkv = cases[c].Hkv, D = cases[c].D, n = cases[c].n;
        size_t kvn = (size_t)n * Hkv * D;
        float *q = rand_vec((size_t)H * D, 3.0f), *kk = rand_vec(kvn, 1.0f), *vv = rand_vec(kvn, 2.0f);
        float *g = rand_vec((size_t)H * D, 3.0f);
        for (size_t i = 0; i < kvn; i++) kk[i] = glim_round_bf16(kk[i]), vv[i] = glim_round_bf16(vv[i]);
        float *ref = malloc(sizeof(float) * H * D), *out = malloc(sizeof(float) * H * D);
        float *scores = malloc(sizeof(float) * n);
        cpu_kv_view view = {kk, vv, 0, n, n, Hkv * D};
        float scale = 1.0f / sqrtf((float)D);
        cpu_attention(ref, q, &view, H, Hkv, D, scale, scores);
        cpu_sigmoid_gate(ref, g, H * D);
        /* the tiles in fp32 (both ways of scoring short tiles) and on the tensor cores; then
         * the splits merged by the last blocks to arrive, one head each (on both paths) */
        for (int way = 0; way < 5; way++) {
            const int few = way == 1, mma = way == 2 || way == 4, pmerge = way >= 3 ? 16 : 0;
            glim_error err;
            glim_status st = gcu_test_attention(q, kk, vv, g, n, H, Hkv, D, scale, cases[c].nsplit,
                                                few, mma, pmerge, out, &err);
            char what[160];
            snprintf(what, sizeof what, "attention H %d Hkv %d D %d keys %d splits %d%s%s", H, Hkv, D,
                     n, cases[c].nsplit, mma ? ", tensor cores" : few ? ", few-key scoring" : "",
                     pmerge ? ", merged by the last blocks" : "");
            CHECK(st == GLIM_OK, "%s: %s", what, err.message);
            if (st == GLIM_OK) compare(what, out, ref, (size_t)H * D, 1e-4, 1e-4);
        }
        free(q), free(kk), free(vv), free(g), free(ref), free(out), free(scores);
    }
}

static void elementwise(void) {
    NEED_GPU();
    int n = 1001;
    float *a = rand_vec(n, 8.0f), *b = rand_vec(n, 8.0f), *ref = malloc(sizeof(float) * n), *out = malloc(sizeof(float) * n);
    glim_error err;
    memcpy(ref, a, sizeof(float) * n);
    cpu_sigmoid_gate(ref, b, n);
    CHECK(gcu_test_elementwise(GCU_EW_GATE, a, b, n, 0, 0, out, &err) == GLIM_OK, "%s", err.message);
    compare("sigmoid gate", out, ref, n, 1e-6, 1e-6);
    cpu_swiglu(ref, a, b, n);
    CHECK(gcu_test_elementwise(GCU_EW_SWIGLU, a, b, n, 0, 0, out, &err) == GLIM_OK, "%s", err.message);
    compare("swiglu", out, ref, n, 1e-6, 1e-6);
    for (int i = 0; i < n; i++) a[i] *= 40.0f;
    memcpy(ref, a, sizeof(float) * n);
    cpu_logit_softcap(ref, n, 0.19611613f, 20.0f);
    CHECK(gcu_test_elementwise(GCU_EW_SOFTCAP, a, NULL, n, 0.19611613f, 20.0f, out, &err) == GLIM_OK, "%s", err.message);
    compare("softcap", out, ref, n, 1e-6, 1e-6);
    free(a), free(b), free(ref), free(out);
}

int main(void) {
    RUN(matvec_q4_g64);
    RUN(matvec_formats);
    RUN(matvec_dense);
    RUN(matvec_split_rows);
    RUN(matvec_swiglu_softcap);
    RUN(matvec_gemm);
    RUN(decode_matvec);
    RUN(decode_matvec_span);
    RUN(decode_matvec_cluster_bits);
    RUN(swiglu_down_digits);
    RUN(i8_digits_bytes);
    RUN(residual_norms);
    RUN(embedding);
    RUN(qk_prep);
    RUN(attention);
    RUN(elementwise);
    return CHECK_DONE();
}
#else
CUDA_TEST_WITHOUT_CUDA(cuda_kernels)
#endif
