/* prefill_gemm.cu: the prefill's matrix products on the tensor cores, 5..32 tokens at once, MLX
 * affine weights (4 or 8 bits) in their tiles (GLIM_CUDA_GEMM=1; 0, the default until the
 * kernel's first GPU run: k_mv in qmatvec.cu, which ran them before). Written in session 29
 * with no GPU lent: bench/wip/pf_gemm_emulate.cu replays it on the CPU.
 *
 * Why: k_mv reads the staged x of every token from L2 once per warp and weight unit: at 32
 * tokens 32 16-byte loads per lane per unit, ~16 KB of L2 reads for each 1152-byte unit, behind
 * 255 registers and their spills. A 32-token pass ran ~10x slower than its weights' bytes (the
 * prefill of 2048 tokens ~600 tok/s since session 1, whose note called a GEMM over token tiles
 * the real fix). Here a block owns PF_RBS row blocks (256 rows) for every token of the pass: per
 * span of the input it copies the span's 16 weight units and every token's staged x (hi and lo)
 * into shared memory once (cp.async, two stages: the next span's copies run under this one's
 * math), and each warp applies its PF_UPW units to every token from there. x is read from L2
 * once per block and span, 16 units' worth of tokens per read.
 *
 * Where the row tiles are fewer than the GPU's places (qkvg's 34, o_proj's and down's 26 tiles
 * on 132 SMs), the spans are split among blocks (split-K): each split leaves its sums in the
 * partial buffer, and the last block of a tile to arrive adds the splits in split order, so the
 * result does not depend on who arrives when, and writes the outputs.
 *
 * The arithmetic is k_mv's: a nibble enters the bf16 mma as the exact integer q - 8 (an 8-bit
 * value as two nibbles, the staged x carrying the high one's 16), x as bf16 hi + lo (16 bits of
 * mantissa), fp32 sums per scale group (piece), then w = s (q - qoff) + (b + qoff s):
 * y += s * d + (b + qoff s) * sum(x). hi and lo go into one accumulator here (k_mv keeps them in
 * two columns and adds them after), so the bits differ from k_mv's by fp32 rounding;
 * test_cuda_kernels holds both against the CPU with the same tolerance. */
#include "cuda/mv_common.cuh"

#define PF_WARPS 8
#define PF_THREADS (PF_WARPS * 32)
#define PF_UPW 2                   /* row blocks (units at a span) per warp */
#define PF_RBS (PF_WARPS * PF_UPW) /* row blocks per block: 256 rows */
#define PF_TOK GCU_TMAX            /* tokens a stage holds room for */
/* Bytes from one token's staged span (16 items of 16 bytes) to the next: 256 + 64, so that the
 * two tokens an 8-lane phase of a 16-byte shared load reads (lanes g and g + 1) sit in opposite
 * halves of the banks: at 256 they were a 2-way conflict. */
#define PF_TSTRIDE 320

struct PfArgs {
    MvArgs a;       /* w, nspan, unit_u4, xs, xsum, kx, T, epi, out, ldo, out_rows, mult, cap,
                       qoff, counters (one per row tile, zero, left zero) */
    int nrb;        /* row blocks of the matrix */
    int nsplit;     /* blocks per row tile, each a range of the spans */
    int stage;      /* bytes of one stage of shared memory */
    float *part;    /* split-K: [tile][split][thread][PF_UPW * NB * 4] */
};

/* A stage of shared memory: the span's PF_RBS units, its x of each token (hi, lo) and its
 * per-piece sums of x [token][piece]. */
struct PfStage {
    uint4 *w;
    unsigned char *bh, *bl;
    float *x;
};
__device__ __forceinline__ PfStage pf_stage(unsigned char *base, const PfArgs &p, int b) {
    PfStage s;
    unsigned char *o = base + (size_t)b * p.stage;
    s.w = (uint4 *)o;
    s.bh = o + (size_t)PF_RBS * p.a.unit_u4 * 16;
    s.bl = s.bh + PF_TOK * PF_TSTRIDE;
    s.x = (float *)(s.bl + PF_TOK * PF_TSTRIDE);
    return s;
}
__host__ __device__ __forceinline__ int pf_stage_bytes(int unit_bytes) {
    return (PF_RBS * unit_bytes + 2 * PF_TOK * PF_TSTRIDE + PF_TOK * 4 * 4 + 127) / 128 * 128;
}

/* The copies of span s into stage st: the tile's units (row blocks past the matrix's end are
 * not copied; their sums are never written), each token's 16 items of hi and of lo, the
 * per-piece sums of x. Tokens past T are not copied either: a column of the mma's B only
 * reaches that token's outputs, which are not written. */
template <int PPS>
__device__ __forceinline__ void pf_load(const PfArgs &p, const PfStage &st, int rb0, int s) {
    const MvArgs &a = p.a;
    const int uw = a.unit_u4, tid = threadIdx.x;
    const int nw = PF_RBS * uw;
    for (int i = tid; i < nw; i += PF_THREADS) {
        const int r = i / uw, k = i - r * uw, rb = rb0 + r;
        if (rb < p.nrb) gcu_cp_async16(st.w + i, a.w + ((size_t)rb * a.nspan + s) * uw + k);
    }
    for (int i = tid; i < a.T * 32; i += PF_THREADS) { /* column 2 tok (hi) or 2 tok + 1 (lo) */
        const int col = i >> 4, item = i & 15, tok = col >> 1;
        unsigned char *dst = ((col & 1) ? st.bl : st.bh) + tok * PF_TSTRIDE + item * 16;
        gcu_cp_async16(dst, a.xs + (size_t)col * a.kx + (size_t)s * 128 + item * 8);
    }
    for (int i = tid; i < a.T * PPS; i += PF_THREADS) {
        const int tok = i / PPS, pc = i - tok * PPS;
        gcu_cp_async4(st.x + i, a.xsum + ((size_t)tok * a.nspan + s) * PPS + pc);
    }
}

/* One span from stage st into acc: for each piece, the warp's PF_UPW units times every token's
 * x (NB n-blocks of 8 tokens, hi then lo into the same sums), then the piece's scale and bias.
 * Lane (g, t) holds rows g and g + 8 of its units for tokens nb * 8 + 2t and + 1. The units'
 * words are read from shared memory as they are needed (word i of the lane's two 16-byte words
 * per 32 input columns, the scales per piece), not held for the span: at 4 n-blocks the
 * kernel's 128 registers spilled with them held. */
template <int PPS, bool SBF32, int NB>
__device__ __forceinline__ void pf_span(const PfArgs &p, const PfStage &st, float acc[PF_UPW][NB][4]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const uint4 *su0 = st.w + (size_t)warp * PF_UPW * p.a.unit_u4; /* the warp's first unit */
    const uint32_t *wl0 = (const uint32_t *)(su0 + gcu_unit_u4(lane, 0)), *wl1 = (const uint32_t *)(su0 + gcu_unit_u4(lane, 1));
    const int ustep = p.a.unit_u4 * 4; /* 32-bit words from one unit to the next */
    const unsigned char *bh = st.bh + g * PF_TSTRIDE + t * 16, *bl = st.bl + g * PF_TSTRIDE + t * 16;
#pragma unroll
    for (int pc = 0; pc < PPS; pc++) {
        float d[PF_UPW][NB][4];
#pragma unroll
        for (int k = 0; k < PF_UPW; k++)
#pragma unroll
            for (int nb = 0; nb < NB; nb++) d[k][nb][0] = d[k][nb][1] = d[k][nb][2] = d[k][nb][3] = 0.0f;
#pragma unroll
        for (int ii = 0; ii < 4 / PPS; ii++) {
            const int i = pc * (4 / PPS) + ii; /* the lane's word i: input columns 32 i .. 32 i + 31 */
            uint32_t pg[PF_UPW][4], ph[PF_UPW][4];
#pragma unroll
            for (int k = 0; k < PF_UPW; k++) {
                const uint32_t wg = wl0[k * ustep + i], wh = wl1[k * ustep + i];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    pg[k][j] = gcu_nib2(wg, j);
                    ph[k][j] = gcu_nib2(wh, j);
                }
            }
#pragma unroll
            for (int nb = 0; nb < NB; nb++) {
                const int off = nb * 8 * PF_TSTRIDE + i * 64; /* token nb * 8 + g, item 4 i + t */
                const uint4 h = *(const uint4 *)(bh + off), l = *(const uint4 *)(bl + off);
#pragma unroll
                for (int k = 0; k < PF_UPW; k++) {
                    gcu_mma(d[k][nb], pg[k][0], ph[k][0], pg[k][1], ph[k][1], h.x, h.y);
                    gcu_mma(d[k][nb], pg[k][2], ph[k][2], pg[k][3], ph[k][3], h.z, h.w);
                    gcu_mma(d[k][nb], pg[k][0], ph[k][0], pg[k][1], ph[k][1], l.x, l.y);
                    gcu_mma(d[k][nb], pg[k][2], ph[k][2], pg[k][3], ph[k][3], l.z, l.w);
                }
            }
        }
#pragma unroll
        for (int k = 0; k < PF_UPW; k++) {
            float sg, bg, sh, bh2;
            /* lane group g's scale words follow the unit's nibbles (as mv_load_p reads them) */
            const uint32_t *sb = (const uint32_t *)(su0 + (size_t)k * p.a.unit_u4 + 64) +
                                 g * MvSlot<GCU_KIND_Q, PPS, SBF32>::SBW;
            mv_scales_of<PPS, SBF32>(sb, pc, &sg, &bg, &sh, &bh2);
            const float cg = fmaf(p.a.qoff, sg, bg), ch = fmaf(p.a.qoff, sh, bh2);
#pragma unroll
            for (int nb = 0; nb < NB; nb++) {
                const int tk = nb * 8 + 2 * t;
                const float X0 = st.x[tk * PPS + pc], X1 = st.x[(tk + 1) * PPS + pc];
                acc[k][nb][0] += sg * d[k][nb][0] + cg * X0;
                acc[k][nb][1] += sg * d[k][nb][1] + cg * X1;
                acc[k][nb][2] += sh * d[k][nb][2] + ch * X0;
                acc[k][nb][3] += sh * d[k][nb][3] + ch * X1;
            }
        }
    }
}

/* Split-K: this block's sums into the partial buffer; the tile's last block to arrive gets them
 * all back added in split order (returns true), the others return false. */
template <int NB>
__device__ __forceinline__ bool pf_merge(const PfArgs &p, int tile, int split, float acc[PF_UPW][NB][4]) {
    __shared__ int pf_last;
    constexpr int V4 = PF_UPW * NB; /* float4 per thread */
    const int tid = threadIdx.x;
    float4 *mine = (float4 *)p.part + ((size_t)tile * p.nsplit + split) * PF_THREADS * V4 + (size_t)tid * V4;
#pragma unroll
    for (int k = 0; k < PF_UPW; k++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++)
            mine[k * NB + nb] = make_float4(acc[k][nb][0], acc[k][nb][1], acc[k][nb][2], acc[k][nb][3]);
    __threadfence();
    __syncthreads();
    if (tid == 0) pf_last = atomicAdd(&p.a.counters[tile], 1) == p.nsplit - 1;
    __syncthreads();
    if (!pf_last) return false;
    __threadfence();
#pragma unroll
    for (int k = 0; k < PF_UPW; k++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++) acc[k][nb][0] = acc[k][nb][1] = acc[k][nb][2] = acc[k][nb][3] = 0.0f;
    for (int sp = 0; sp < p.nsplit; sp++) {
        const float4 *q = (const float4 *)p.part + ((size_t)tile * p.nsplit + sp) * PF_THREADS * V4 + (size_t)tid * V4;
#pragma unroll
        for (int k = 0; k < PF_UPW; k++)
#pragma unroll
            for (int nb = 0; nb < NB; nb++) {
                const float4 v = __ldcg(q + k * NB + nb);
                acc[k][nb][0] += v.x;
                acc[k][nb][1] += v.y;
                acc[k][nb][2] += v.z;
                acc[k][nb][3] += v.w;
            }
    }
    if (tid == 0) p.a.counters[tile] = 0; /* ready for the next launch */
    return true;
}

/* BPS: the blocks per SM the instance is built for: 2 (128 registers; the 4-n-block instances
 * spill a few words), or 1 for 4 n-blocks with GLIM_CUDA_GEMM=2 (no spills, 8 warps an SM).
 * Which is faster is the first GPU run's question. */
template <int PPS, bool SBF32, int NB, int BPS>
__global__ void __launch_bounds__(PF_THREADS, BPS) k_pf_gemm(const __grid_constant__ PfArgs p) {
    extern __shared__ __align__(128) unsigned char pf_smem[];
    const MvArgs &a = p.a;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int tile = blockIdx.x / p.nsplit, split = blockIdx.x % p.nsplit, rb0 = tile * PF_RBS;
    const int s0 = (int)((long long)a.nspan * split / p.nsplit);
    const int ns = (int)((long long)a.nspan * (split + 1) / p.nsplit) - s0;
    float acc[PF_UPW][NB][4];
#pragma unroll
    for (int k = 0; k < PF_UPW; k++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++) acc[k][nb][0] = acc[k][nb][1] = acc[k][nb][2] = acc[k][nb][3] = 0.0f;

    gcu_pdl_wait();
    /* two stages: span j + 2's copies go into stage j % 2 once every warp is past span j */
    if (ns > 0) pf_load<PPS>(p, pf_stage(pf_smem, p, 0), rb0, s0);
    gcu_cp_commit();
    if (ns > 1) pf_load<PPS>(p, pf_stage(pf_smem, p, 1), rb0, s0 + 1);
    gcu_cp_commit();
    for (int j = 0; j < ns; j++) {
        const PfStage st = pf_stage(pf_smem, p, j & 1);
        gcu_cp_wait_block(1); /* span j is in (j + 1 may still be in flight) */
        pf_span<PPS, SBF32, NB>(p, st, acc);
        __syncthreads();
        if (j + 2 < ns) pf_load<PPS>(p, st, rb0, s0 + j + 2);
        gcu_cp_commit(); /* (empty past the end: the groups stay counted one per span) */
    }
    gcu_pdl_trigger();
    if (p.nsplit > 1 && !pf_merge<NB>(p, tile, split, acc)) return;
#pragma unroll
    for (int k = 0; k < PF_UPW; k++) {
        const int rb = rb0 + warp * PF_UPW + k;
        if (rb >= p.nrb) continue;
#pragma unroll
        for (int nb = 0; nb < NB; nb++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const int tok = nb * 8 + 2 * t + j;
                if (tok < a.T) mv_out_token(a, rb, g, tok, &acc[k][nb][j], &acc[k][nb][2 + j]);
            }
    }
}

/* ---- host side --------------------------------------------------------------------------- */

template <int NB, int BPS>
static const void *pf_pick_nb(int pps, int sbf32) {
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 2: return (const void *)k_pf_gemm<1, false, NB, BPS>;
    case 3: return (const void *)k_pf_gemm<1, true, NB, BPS>;
    case 4: return (const void *)k_pf_gemm<2, false, NB, BPS>;
    case 5: return (const void *)k_pf_gemm<2, true, NB, BPS>;
    case 8: return (const void *)k_pf_gemm<4, false, NB, BPS>;
    case 9: return (const void *)k_pf_gemm<4, true, NB, BPS>;
    }
    return NULL;
}
/* n-blocks of 8 tokens: 1, 2 or 4 (T <= 8, 16, 32); blocks per SM 2, or 1 with 4 n-blocks */
static const void *pf_pick(int nb, int bps, int pps, int sbf32) {
    if (nb == 4) return bps == 1 ? pf_pick_nb<4, 1>(pps, sbf32) : pf_pick_nb<4, 2>(pps, sbf32);
    return nb == 1 ? pf_pick_nb<1, 2>(pps, sbf32) : pf_pick_nb<2, 2>(pps, sbf32);
}

/* The largest unit: MLX with 4 pieces a span and f32 scales (1024 bytes of nibbles, 8 lane
 * groups x 16 words). */
#define PF_UNIT_MAX (1024 + 8 * 16 * 4)
#define PF_SMEM_MAX (2 * pf_stage_bytes(PF_UNIT_MAX))

extern "C" glim_status gcu_gemm_init(glim_error *err) {
    static int done;
    if (done) return GLIM_OK;
    const int pps[3] = {1, 2, 4}, nbs[4] = {1, 2, 4, 4}, bps[4] = {2, 2, 2, 1};
    for (int n = 0; n < 4; n++)
        for (int k = 0; k < 3; k++)
            for (int f = 0; f < 2; f++) {
                const void *fn = pf_pick(nbs[n], bps[n], pps[k], f);
                cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, PF_SMEM_MAX);
                /* all of the SM's L1 as shared memory: two blocks of 77-91 KB (the carveout is a
                 * hint the driver may otherwise set for one) */
                if (e == cudaSuccess)
                    e = cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
                if (e != cudaSuccess) return gcu_check(e, "prefill GEMM shared memory", err);
            }
    done = 1;
    return GLIM_OK;
}

extern "C" int gcu_gemm_takes(const gcu_mv_call *c) {
    const gcu_mat *m = c->m;
    return c->gemm && c->T > 4 && c->T <= PF_TOK && m->f.kind == GCU_KIND_Q &&
           (m->f.pps == 1 || m->f.pps == 2 || m->f.pps == 4) && m->unit_bytes <= PF_UNIT_MAX &&
           c->counters != NULL;
}

/* The call's n-blocks of 8 tokens and the blocks per SM its instance is built for. */
static void pf_shape(const gcu_mv_call *c, int *nb, int *bps) {
    *nb = c->T <= 8 ? 1 : c->T <= 16 ? 2 : 4;
    *bps = *nb == 4 && c->gemm == 2 ? 1 : 2;
}

/* Blocks of the call's instance an SM holds at once (0 when the GEMM does not take it): what
 * bench --profile's prompt table reports next to its time. */
extern "C" int gcu_gemm_blocks_per_sm(const gcu_mv_call *c) {
    glim_error err;
    if (!gcu_gemm_takes(c) || gcu_gemm_init(&err) != GLIM_OK) return 0;
    int nb, bps, n = 0;
    pf_shape(c, &nb, &bps);
    const size_t smem = (size_t)2 * pf_stage_bytes(c->m->unit_bytes);
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, pf_pick(nb, bps, c->m->f.pps, c->m->sbf32), PF_THREADS, smem) !=
        cudaSuccess)
        return 0;
    return n;
}

static long gemm_count; /* launches (gcu_gemm_count: tests check that the kernel ran) */
extern "C" long gcu_gemm_count(void) { return gemm_count; }

/* The splits of a row tile. The blocks are alike in work, so a grid of B = tiles x splits
 * blocks on P places (bps per SM) takes ceil(B / P) waves of 1 / splits of a tile's work each:
 * the split count with the least such time, the fewest splits where more save under 3 % (each
 * split adds its partials and a shorter pipeline), each split at least 3 spans, at most 16, and
 * all of them in the partial buffer. At the 30B's shapes on 132 SMs, 2 blocks each and 32
 * tokens: qkvg 34 tiles x 15 splits, o_proj and down 26 x 10, gate/up 156 x 3 (the buffer's
 * limit), the head's 790 tiles unsplit. */
static int pf_splits(long long ntiles, int nspan, int nb, int bps, size_t partial_cap) {
    const long long places = (long long)gcu_sm_count() * bps;
    const size_t per = (size_t)PF_THREADS * PF_UPW * nb * 4 * sizeof(float); /* one tile's split */
    int best = 1;
    double best_t = 2.0;
    for (int ns = 1; ns <= 16 && (ns == 1 || ns * 3 <= nspan); ns++) {
        if (ns > 1 && (size_t)ntiles * ns * per > partial_cap) break;
        const long long B = ntiles * ns, waves = (B + places - 1) / places;
        const double t = (double)waves / ns; /* in blocks' worth of one unsplit tile */
        if (t < 0.97 * best_t) best = ns, best_t = t;
    }
    return best;
}

extern "C" glim_status gcu_gemm_launch(const gcu_mv_call *c, cudaStream_t st, glim_error *err) {
    const gcu_mat *m = c->m;
    glim_status s = gcu_gemm_init(err);
    if (s != GLIM_OK) return s;
    if (!gcu_gemm_takes(c)) return glim_fail(err, GLIM_E_ARG, "prefill GEMM: call it does not take");
    int nb, bps;
    pf_shape(c, &nb, &bps);
    const void *fn = pf_pick(nb, bps, m->f.pps, m->sbf32);
    PfArgs p;
    memset(&p, 0, sizeof p);
    p.a = mv_args_of(c);
    p.nrb = m->nrb;
    const long long ntiles = (m->nrb + PF_RBS - 1) / PF_RBS;
    p.nsplit = c->partial ? pf_splits(ntiles, m->f.nspan, nb, bps, c->partial_cap) : 1;
    p.stage = pf_stage_bytes(m->unit_bytes);
    p.part = (float *)c->partial;
    const long long blocks = ntiles * p.nsplit;
    if (blocks > 0x7fffffffLL) return glim_fail(err, GLIM_E_ARG, "prefill GEMM: %lld blocks", blocks);
    gemm_count++;
    void *args[] = {&p};
    return gcu_check(gcu_launch(fn, dim3((unsigned)blocks), dim3(PF_THREADS), (size_t)2 * p.stage, st, c->pdl, args),
                     "prefill GEMM launch", err);
}
