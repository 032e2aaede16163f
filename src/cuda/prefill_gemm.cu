/* prefill_gemm.cu: the prefill's matrix products on the tensor cores, 5..64 tokens at once, MLX
 * affine weights (4 or 8 bits) in their tiles (GLIM_CUDA_GEMM=3, the default: stream-K where
 * split-K would take more than a wave; 4 and 5: the same with 17..32 tokens on wgmma; 2:
 * split-K; 1: split-K with the 32-token instance at two blocks an SM; 0: k_mv in qmatvec.cu,
 * which ran them before). Written in session 29 with no GPU lent, first run and tuned in
 * session 30 (RESULTS v32: prefill of 2048 tokens on an H100 614 tok/s with k_mv, 1438 with
 * split-K, ~1535 with stream-K), ~1555 in session 31 with stream-K only where it pays; the
 * 64-token instance (session 32, 8 n-blocks) with 64-token prompt sub-chunks: 1900 tok/s on an
 * H200 against 1570 at 32 (RESULTS v34); its four products take 1.71x a 32-token pass's time
 * (506 against 297 us a layer) for twice the tokens. At 32 tokens Nsight Compute put the tensor
 * pipe at 38 % active, with fixed-latency waits and math-pipe throttle the top stall reasons
 * (session 32); the 64-token instance is not profiled yet.
 *
 * Why: k_mv reads the staged x of every token from L2 once per warp and weight unit: at 32
 * tokens 32 16-byte loads per lane per unit, ~16 KB of L2 reads for each 1152-byte unit, behind
 * 255 registers and their spills. A 32-token pass ran ~10x slower than its weights' bytes (the
 * prefill of 2048 tokens ~600 tok/s since session 1, whose note called a GEMM over token tiles
 * the real fix). Here a block owns PF_RBS row blocks (256 rows) for every token of the pass: per
 * span of the input it copies the span's 16 weight units and every token's staged x (hi and lo)
 * into shared memory once (cp.async, a ring of stages: the next spans' copies run under this
 * one's math), and each warp applies its PF_UPW units to every token from there. x is read from
 * L2 once per block and span, 16 units' worth of tokens per read.
 *
 * The tiles' spans are shared among blocks. Stream-K (where split-K's grid would be more than a
 * wave: gate/up, the head): one wave of blocks, each an equal contiguous range of the
 * tile-spans, tile after tile. Split-K (the rest, and everything under GLIM_CUDA_GEMM=2): each
 * tile cut into equal ranges, a block each, where the row tiles are fewer than the GPU's places
 * (qkvg's 34, o_proj's and down's 26 tiles on 132 SMs). Either way, a block that holds part of a tile leaves
 * its sums in the partial buffer, and the tile's last block to arrive adds the parts in order,
 * so the result does not depend on who arrives when, and writes the outputs.
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
/* Tokens a stage holds room for, by the instance's n-blocks of 8 tokens: 32 up to 4 n-blocks
 * (the 32-token instance's four stages fill the SM's shared memory), 64 with 8 (three stages). */
__host__ __device__ constexpr int pf_troom(int nb) { return nb > 4 ? 8 * nb : 32; }
#define PF_WG_TOK 32 /* the wgmma instances' tokens (4 n-blocks) */
/* Bytes from one token's staged span (16 items of 16 bytes) to the next: 256 + 64, so that the
 * two tokens an 8-lane phase of a 16-byte shared load reads (lanes g and g + 1) sit in opposite
 * halves of the banks: at 256 they were a 2-way conflict. */
#define PF_TSTRIDE 320

struct PfArgs {
    MvArgs a;       /* w, nspan, unit_u4, xs, xsum, kx, T, epi, out, ldo, out_rows, mult, cap,
                       qoff, counters (one per row tile, zero, left zero) */
    int nrb;        /* row blocks of the matrix */
    int nsplit;     /* blocks per row tile, each a range of the spans (sk == 0) */
    int sk;         /* 1: stream-K: the grid's blocks share the tiles' spans, tile after tile, in
                       equal contiguous ranges (GLIM_CUDA_GEMM 3-5, where split-K would take
                       more than a wave) */
    int stage;      /* bytes of one stage of shared memory */
    float *part;    /* the parts of shared tiles: [slot][thread][PF_UPW * NB * 4] (pf_merge) */
};

/* A stage of shared memory: the span's PF_RBS units, its x of each token (hi, lo) and its
 * per-piece sums of x [token][piece]. */
struct PfStage {
    uint4 *w;
    unsigned char *bh, *bl;
    float *x;
};
template <int NB>
__device__ __forceinline__ PfStage pf_stage(unsigned char *base, const PfArgs &p, int b) {
    PfStage s;
    unsigned char *o = base + (size_t)b * p.stage;
    s.w = (uint4 *)o;
    s.bh = o + (size_t)PF_RBS * p.a.unit_u4 * 16;
    s.bl = s.bh + pf_troom(NB) * PF_TSTRIDE;
    s.x = (float *)(s.bl + pf_troom(NB) * PF_TSTRIDE);
    return s;
}
__host__ __device__ __forceinline__ int pf_stage_bytes(int unit_bytes, int nb) {
    return (PF_RBS * unit_bytes + 2 * pf_troom(nb) * PF_TSTRIDE + pf_troom(nb) * 4 * 4 + 127) / 128 * 128;
}
/* Stages of the ring: 4 at one block an SM (~40 KB a span: 3 spans in flight under the math, the
 * bytes in flight an SM needs at the memory's latency), 3 for the 64-token instance (~60 KB a
 * span; four would not fit), 2 where two blocks share the SM. */
__host__ __device__ constexpr int pf_stages(int bps, int nb) { return bps == 1 ? (nb > 4 ? 3 : 4) : 2; }

/* ---- the wgmma path (GLIM_CUDA_GEMM 4 and 5: the 32-token instance) -----------------------
 * A warpgroup (4 warps) issues wgmma.m64n64k16: A, 64 rows by 16 inputs, is its 4 warps' units
 * at one PF_UPW index (warp w's rows as rows 16 w ..), from registers in mma.sync's fragment
 * layout (the same nibble pairs gcu_nib2 makes); B, 16 inputs by 64 columns (column 2 tok + 0
 * is token tok's x hi, + 1 its lo), is read by the tensor cores from shared memory; D, 64 x 64
 * fp32, stays in registers. Unlike mma.sync, the warps do not load x themselves, and the
 * tensor cores run while the warps go on until the wait.
 *
 * The k order. In mma.sync's fragments lane t's pairs k = 2t, 2t + 1 and 2t + 8, 2t + 9 are
 * its nibble pairs 2s and 2s + 1 of word i (step s of the word's two 16-input steps), which
 * hold span inputs 32 i + 8 t + 4 s + {0, 1} and {2, 3} (k_mv's x items, as layout.cu lays the
 * words out). So B's row k of step (i, s) is input 32 i + 8 (k / 2 % 4) + 4 s + 2 (k / 8) +
 * k % 2: four-byte pairs from four places, which the copies scatter (gcu_cp_async4) into
 * wgmma's K-major layout without swizzle: 8 x 16-byte core matrices (8 columns, 8 k), the two
 * k halves PF_WG_LBO apart, the 8 column groups PF_WG_SBO apart, the 8 steps PF_WG_STEP apart:
 * 16 KB a span, in the stage's room for x hi and lo. */
#define PF_WG_LBO 128
#define PF_WG_SBO 256
#define PF_WG_STEP (8 * PF_WG_SBO)
#define PF_WG_HALF (4 * PF_WG_SBO) /* WG 2: a step's lo columns after its hi ones */
/* Where B's pair of span inputs rc, rc + 1 (rc even) of column 0 sits in a stage's B. */
__device__ __forceinline__ int pf_wg_off(int rc) {
    const int i = rc >> 5, t = (rc >> 3) & 3, s = (rc >> 2) & 1, half = (rc >> 1) & 1;
    return (2 * i + s) * PF_WG_STEP + half * PF_WG_LBO + t * 4;
}
/* The matrix descriptor of B at shared address `addr` (no swizzle: bits 62-63 zero). */
__device__ __forceinline__ uint64_t pf_wg_desc(const void *b) {
    const uint32_t addr = (uint32_t)__cvta_generic_to_shared(b);
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(PF_WG_LBO >> 4) << 16 | (uint64_t)(PF_WG_SBO >> 4) << 32;
}
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PF_WG_BUILT 1
#else
#define PF_WG_BUILT 0 /* wgmma needs the sm_90a target (the Makefile builds this file for it) */
#endif
__device__ __forceinline__ void pf_wg_fence() {
#if PF_WG_BUILT
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void pf_wg_commit_wait() {
#if PF_WG_BUILT
    asm volatile("wgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}
/* Keeps the compiler from moving register reads or writes across the asynchronous mma: the
 * values pass through an empty asm the ordered wgmma asms sit between. */
__device__ __forceinline__ void pf_wg_pin(float &v) { asm volatile("" : "+f"(v)::"memory"); }
__device__ __forceinline__ void pf_wg_pin(uint32_t &v) { asm volatile("" : "+r"(v)::"memory"); }
/* d (+)= A B: D's 32 values of this thread, A's four registers, B's descriptor; ACC 0 ignores
 * d's old values (the piece's first step). */
template <int ACC>
__device__ __forceinline__ void pf_wg_mma(float d[32], const uint32_t a[4], uint64_t desc) {
#if PF_WG_BUILT
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %37, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                   "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                   "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
                   "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
                   "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(ACC));
#else
    __trap();
#endif
}

/* The same at n32 (16 values of D a thread): GLIM_CUDA_GEMM=5 puts a step's hi and lo columns in
 * two such calls on one D. */
template <int ACC>
__device__ __forceinline__ void pf_wg_mma32(float d[16], const uint32_t a[4], uint64_t desc) {
#if PF_WG_BUILT
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %21, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
                 "{%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                   "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
                   "+f"(d[14]), "+f"(d[15])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(ACC));
#else
    __trap();
#endif
}

/* A thread's 16-byte weight copies per span (16 units of at most 96 words over 256 threads) and
 * where they come from, relative to span 0: worked out once per block, since a division per
 * copy by the unit's width was a quarter of the kernel's instructions (Nsight Compute, session
 * 30). ~0u: none (past the unit's words, or a row block past the matrix's end, whose sums are
 * never written). The host keeps the matrix under 2^32 words (gcu_gemm_takes). */
#define PF_WCOPY 6
struct PfPlan {
    unsigned w[PF_WCOPY];
};
__device__ __forceinline__ PfPlan pf_plan(const PfArgs &p, int rb0) {
    PfPlan pl;
    const int uw = p.a.unit_u4, nw = PF_RBS * uw;
#pragma unroll
    for (int n = 0; n < PF_WCOPY; n++) {
        const int i = threadIdx.x + n * PF_THREADS, r = i / uw, k = i - r * uw, rb = rb0 + r;
        pl.w[n] = i < nw && rb < p.nrb ? (unsigned)rb * (unsigned)p.a.nspan * (unsigned)uw + (unsigned)k : ~0u;
    }
    return pl;
}

/* The copies of span s into stage st: the tile's units (row blocks past the matrix's end are
 * not copied; their sums are never written), each token's 16 items of hi and of lo, the
 * per-piece sums of x. Tokens past T are not copied either: a column of the mma's B only
 * reaches that token's outputs, which are not written. */
template <int PPS, int WG>
__device__ __forceinline__ void pf_load(const PfArgs &p, const PfPlan &pl, const PfStage &st, int s) {
    const MvArgs &a = p.a;
    const int tid = threadIdx.x;
    const uint4 *ws = a.w + (size_t)s * a.unit_u4;
#pragma unroll
    for (int n = 0; n < PF_WCOPY; n++)
        if (pl.w[n] != ~0u) gcu_cp_async16(st.w + tid + n * PF_THREADS, ws + pl.w[n]);
    if (WG) {
        /* wgmma's B: the thread's pair of inputs q (columns 2q, 2q + 1 of the span) of every
         * 4th column n (a token's hi or lo), 4 bytes each, to where pf_wg_off puts them */
        const int q = tid & 63, n0 = tid >> 6;
        unsigned char *dst = st.bh + pf_wg_off(2 * q);
        const __nv_bfloat16 *src = a.xs + (size_t)s * 128 + 2 * q;
#pragma unroll
        for (int j = 0; j < 2 * PF_WG_TOK / 4; j++) {
            const int n = n0 + 4 * j, tok = n >> 1; /* (n & 1 = n0 & 1) */
            /* WG 1: B's column n; WG 2: column tok of the step's hi (n even) or lo half */
            const int o = WG == 1 ? (n >> 3) * PF_WG_SBO + (n & 7) * 16
                                  : (n & 1) * PF_WG_HALF + (tok >> 3) * PF_WG_SBO + (tok & 7) * 16;
            if (n < 2 * a.T) gcu_cp_async4(dst + o, src + (size_t)n * a.kx);
        }
    } else {
        const int item = tid & 15; /* column 2 tok (hi) or 2 tok + 1 (lo), its 16-byte item */
        for (int col = tid >> 4; col < 2 * a.T; col += PF_THREADS / 16) {
            unsigned char *dst = ((col & 1) ? st.bl : st.bh) + (col >> 1) * PF_TSTRIDE + item * 16;
            gcu_cp_async16(dst, a.xs + (size_t)col * a.kx + (size_t)s * 128 + item * 8);
        }
    }
    for (int i = tid; i < a.T * PPS; i += PF_THREADS) {
        const int tok = i / PPS, pc = i - tok * PPS;
        gcu_cp_async4(st.x + i, a.xsum + ((size_t)tok * a.nspan + s) * PPS + pc);
    }
}

/* Zeroes a warp's sums (PF_UPW units x NB n-blocks x 4). */
template <int NB>
__device__ __forceinline__ void pf_zero(float v[PF_UPW][NB][4]) {
#pragma unroll
    for (int k = 0; k < PF_UPW; k++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++) v[k][nb][0] = v[k][nb][1] = v[k][nb][2] = v[k][nb][3] = 0.0f;
}

/* One span from stage st into acc: for each piece, the warp's PF_UPW units times every token's
 * x (NB n-blocks of 8 tokens, hi then lo into the same sums), then the piece's scale and bias.
 * Lane (g, t) holds rows g and g + 8 of its units for tokens nb * 8 + 2t and + 1. With HOLD the
 * lane's two 16-byte words of each unit are read once a span; without (the 2-block instances
 * with 2 or 4 n-blocks, whose 128 registers spill with them held, and the 8-n-block instance,
 * whose 2-piece instances spilled 56 bytes with them held) word i is read where the 32 input
 * columns it covers are used. The scales are read per piece. */
/* Word i of the lane's row g (half 0) or g + 8 (half 1) from its two 16-byte words as laid out
 * (gcu_unit_q_w32). */
__device__ __forceinline__ uint32_t pf_qword(const uint4 hw[2], int half, int i) {
    return u4w(hw[i & 1], (i >> 1) * 2 + half);
}

/* Piece pc's scales of rows g and g + 8 of the unit at u (lane group g's scale words follow the
 * unit's nibbles, as mv_load_p reads them) and the matching bias terms b + qoff s. */
template <int PPS, bool SBF32>
__device__ __forceinline__ void pf_piece_scales(const PfArgs &p, const uint4 *u, int g, int pc, float *sg, float *sh,
                                                float *cg, float *ch) {
    float bg, bh;
    const uint32_t *sb = (const uint32_t *)(u + 64) + g * MvSlot<GCU_KIND_Q, PPS, SBF32>::SBW;
    mv_scales_of<PPS, SBF32>(sb, pc, sg, &bg, sh, &bh);
    *cg = fmaf(p.a.qoff, *sg, bg);
    *ch = fmaf(p.a.qoff, *sh, bh);
}

template <int PPS, bool SBF32, int NB, bool HOLD>
__device__ __forceinline__ void pf_span(const PfArgs &p, const PfStage &st, float acc[PF_UPW][NB][4]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const uint4 *su0 = st.w + (size_t)warp * PF_UPW * p.a.unit_u4; /* the warp's first unit */
    const uint32_t *wl = (const uint32_t *)su0; /* word (half, i) of unit k: wl[k ustep + gcu_unit_q_w32] */
    const int ustep = p.a.unit_u4 * 4; /* 32-bit words from one unit to the next */
    /* HOLD: the lane's two 16-byte words of each unit read whole, once a span (the warp's load is
     * 512 contiguous bytes; word by word, lanes 16 bytes apart met 4 to a bank) */
    uint4 hw[PF_UPW][2];
    if (HOLD)
#pragma unroll
        for (int k = 0; k < PF_UPW; k++) {
            hw[k][0] = su0[(size_t)k * p.a.unit_u4 + gcu_unit_u4(lane, 0)];
            hw[k][1] = su0[(size_t)k * p.a.unit_u4 + gcu_unit_u4(lane, 1)];
        }
    const unsigned char *bh = st.bh + g * PF_TSTRIDE + t * 16, *bl = st.bl + g * PF_TSTRIDE + t * 16;
#pragma unroll
    for (int pc = 0; pc < PPS; pc++) {
        float d[PF_UPW][NB][4];
        pf_zero<NB>(d);
#pragma unroll
        for (int ii = 0; ii < 4 / PPS; ii++) {
            const int i = pc * (4 / PPS) + ii; /* the lane's word i: input columns 32 i .. 32 i + 31 */
            uint32_t pg[PF_UPW][4], ph[PF_UPW][4];
#pragma unroll
            for (int k = 0; k < PF_UPW; k++) {
                const uint32_t wg = HOLD ? pf_qword(hw[k], 0, i) : wl[k * ustep + gcu_unit_q_w32(lane, 0, i)];
                const uint32_t wh = HOLD ? pf_qword(hw[k], 1, i) : wl[k * ustep + gcu_unit_q_w32(lane, 1, i)];
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
                /* the units side by side, so that no mma waits on the one before it */
#pragma unroll
                for (int k = 0; k < PF_UPW; k++) gcu_mma(d[k][nb], pg[k][0], ph[k][0], pg[k][1], ph[k][1], h.x, h.y);
#pragma unroll
                for (int k = 0; k < PF_UPW; k++) gcu_mma(d[k][nb], pg[k][2], ph[k][2], pg[k][3], ph[k][3], h.z, h.w);
#pragma unroll
                for (int k = 0; k < PF_UPW; k++) gcu_mma(d[k][nb], pg[k][0], ph[k][0], pg[k][1], ph[k][1], l.x, l.y);
#pragma unroll
                for (int k = 0; k < PF_UPW; k++) gcu_mma(d[k][nb], pg[k][2], ph[k][2], pg[k][3], ph[k][3], l.z, l.w);
            }
        }
#pragma unroll
        for (int k = 0; k < PF_UPW; k++) {
            float sg, sh, cg, ch;
            pf_piece_scales<PPS, SBF32>(p, su0 + (size_t)k * p.a.unit_u4, g, pc, &sg, &sh, &cg, &ch);
#pragma unroll
            for (int nb = 0; nb < NB; nb++) {
                const int tk = nb * 8 + 2 * t;
                const float X0 = st.x[tk * PPS + pc], X1 = st.x[(tk + 1) * PPS + pc];
                /* two FMAs a sum (written as acc += s d + c X it took an FMUL, an FFMA and an FADD:
                 * a tenth of the loop's instructions) */
                acc[k][nb][0] = fmaf(sg, d[k][nb][0], fmaf(cg, X0, acc[k][nb][0]));
                acc[k][nb][1] = fmaf(sg, d[k][nb][1], fmaf(cg, X1, acc[k][nb][1]));
                acc[k][nb][2] = fmaf(sh, d[k][nb][2], fmaf(ch, X0, acc[k][nb][2]));
                acc[k][nb][3] = fmaf(sh, d[k][nb][3], fmaf(ch, X1, acc[k][nb][3]));
            }
        }
    }
}

/* One span from stage st into acc on wgmma (PF_UPW m64 tiles a warpgroup, 32 tokens): for each
 * piece, every A fragment of the piece from the lane's held words, then the piece's steps on
 * the tensor cores (the first one zeroing D), one wait, and the piece's scale and bias as in
 * pf_span. D's columns 8 j + 2 t and + 1 of lane (g, t) are token 4 j + t's hi and lo sums of
 * rows g and g + 8 (d[4 j] + d[4 j + 1], d[4 j + 2] + d[4 j + 3]); acc[k][nb][e] and [2 + e]
 * keep token 8 nb + 4 e + t's. */
template <int PPS, bool SBF32, int WG>
__device__ __forceinline__ void pf_span_wg(const PfArgs &p, const PfStage &st, float acc[PF_UPW][4][4]) {
    constexpr int WPP = 4 / PPS; /* words (two steps each) a piece */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const uint4 *su0 = st.w + (size_t)warp * PF_UPW * p.a.unit_u4;
    uint4 hw[PF_UPW][2];
#pragma unroll
    for (int k = 0; k < PF_UPW; k++) {
        hw[k][0] = su0[(size_t)k * p.a.unit_u4 + gcu_unit_u4(lane, 0)];
        hw[k][1] = su0[(size_t)k * p.a.unit_u4 + gcu_unit_u4(lane, 1)];
    }
    const uint64_t desc0 = pf_wg_desc(st.bh);
#pragma unroll
    for (int pc = 0; pc < PPS; pc++) {
        uint32_t af[PF_UPW][2 * WPP][4];
#pragma unroll
        for (int k = 0; k < PF_UPW; k++)
#pragma unroll
            for (int ii = 0; ii < WPP; ii++) {
                const uint32_t wg = pf_qword(hw[k], 0, pc * WPP + ii), wh = pf_qword(hw[k], 1, pc * WPP + ii);
#pragma unroll
                for (int s = 0; s < 2; s++) {
                    af[k][2 * ii + s][0] = gcu_nib2(wg, 2 * s);
                    af[k][2 * ii + s][1] = gcu_nib2(wh, 2 * s);
                    af[k][2 * ii + s][2] = gcu_nib2(wg, 2 * s + 1);
                    af[k][2 * ii + s][3] = gcu_nib2(wh, 2 * s + 1);
#pragma unroll
                    for (int r = 0; r < 4; r++) pf_wg_pin(af[k][2 * ii + s][r]);
                }
            }
        constexpr int ND = WG == 1 ? 32 : 16; /* D's values a thread: n64, or n32 (hi and lo in turn) */
        float d[PF_UPW][ND];
        pf_wg_fence();
#pragma unroll
        for (int st_i = 0; st_i < 2 * WPP; st_i++) {
            const uint64_t desc = desc0 + (uint64_t)(((pc * 2 * WPP + st_i) * PF_WG_STEP) >> 4);
#pragma unroll
            for (int k = 0; k < PF_UPW; k++) {
                if constexpr (WG == 1) {
                    if (st_i == 0) pf_wg_mma<0>(d[k], af[k][st_i], desc);
                    else pf_wg_mma<1>(d[k], af[k][st_i], desc);
                } else {
                    if (st_i == 0) pf_wg_mma32<0>(d[k], af[k][st_i], desc);
                    else pf_wg_mma32<1>(d[k], af[k][st_i], desc);
                    pf_wg_mma32<1>(d[k], af[k][st_i], desc + (PF_WG_HALF >> 4));
                }
            }
        }
        pf_wg_commit_wait();
#pragma unroll
        for (int k = 0; k < PF_UPW; k++)
#pragma unroll
            for (int r = 0; r < ND; r++) pf_wg_pin(d[k][r]);
#pragma unroll
        for (int k = 0; k < PF_UPW; k++) {
            float sg, sh, cg, ch;
            pf_piece_scales<PPS, SBF32>(p, su0 + (size_t)k * p.a.unit_u4, g, pc, &sg, &sh, &cg, &ch);
#pragma unroll
            for (int nb = 0; nb < 4; nb++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    if constexpr (WG == 1) {
                        const int j = 2 * nb + e, tk = 4 * j + t;
                        const float X = st.x[tk * PPS + pc];
                        acc[k][nb][e] = fmaf(sg, d[k][4 * j] + d[k][4 * j + 1], fmaf(cg, X, acc[k][nb][e]));
                        acc[k][nb][2 + e] = fmaf(sh, d[k][4 * j + 2] + d[k][4 * j + 3], fmaf(ch, X, acc[k][nb][2 + e]));
                    } else { /* mma.sync's layout: token 8 nb + 2 t + e */
                        const float X = st.x[(nb * 8 + 2 * t + e) * PPS + pc];
                        acc[k][nb][e] = fmaf(sg, d[k][4 * nb + e], fmaf(cg, X, acc[k][nb][e]));
                        acc[k][nb][2 + e] = fmaf(sh, d[k][4 * nb + 2 + e], fmaf(ch, X, acc[k][nb][2 + e]));
                    }
                }
        }
    }
}

/* A tile's span range shared by nparts blocks: this block's sums (the k-th part) into slot
 * first + k of the partial buffer; the tile's last block to arrive gets them all back added in
 * part order (returns true), the others return false. */
template <int NB>
__device__ __forceinline__ bool pf_merge(const PfArgs &p, int tile, int first, int nparts, int k_mine,
                                         float acc[PF_UPW][NB][4]) {
    __shared__ int pf_last;
    constexpr int V4 = PF_UPW * NB; /* float4 per thread */
    const int tid = threadIdx.x;
    float4 *mine = (float4 *)p.part + ((size_t)first + k_mine) * PF_THREADS * V4 + (size_t)tid * V4;
#pragma unroll
    for (int k = 0; k < PF_UPW; k++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++)
            mine[k * NB + nb] = make_float4(acc[k][nb][0], acc[k][nb][1], acc[k][nb][2], acc[k][nb][3]);
    /* one thread's fence releases the block's stores (ordered before it by the barrier) and, on
     * the last block, acquires the others' before its barrier lets the block read them: a fence
     * in every thread was ~2-7 % of the stall samples (Nsight Compute, session 30) */
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        pf_last = atomicAdd(&p.a.counters[tile], 1) == nparts - 1;
        __threadfence();
    }
    __syncthreads();
    if (!pf_last) return false;
    pf_zero<NB>(acc);
    for (int sp = 0; sp < nparts; sp++) {
        const float4 *q = (const float4 *)p.part + ((size_t)first + sp) * PF_THREADS * V4 + (size_t)tid * V4;
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

/* Stream-K's blocks of tile t: the first and last block whose range of the ntiles x nspan
 * tile-spans, [W b / G, W (b + 1) / G), holds one of t's. Their parts go to slots t + b of the
 * partial buffer (unique: t + b grows along the blocks' segments), ntiles + G slots in all. */
__device__ __forceinline__ int pf_sk_block(long long item, long long W, int G) {
    const long long b = ((item + 1) * G + W - 1) / W - 1; /* the last b with W b / G <= item */
    return (int)(b < G - 1 ? b : G - 1);
}

/* The tile-spans [s0, s0 + ns) of row tile `tile` into acc (zeroed first): a ring of NST
 * stages, NST - 1 spans ahead; span j + NST - 1's copies go into the stage span j - 1 left,
 * once every warp is past it (the barrier in the wait). */
template <int PPS, bool SBF32, int NB, int BPS, int WG>
__device__ __forceinline__ void pf_run(const PfArgs &p, unsigned char *smem, int tile, int s0, int ns,
                                       float acc[PF_UPW][NB][4]) {
    constexpr int NST = pf_stages(BPS, NB);
    pf_zero<NB>(acc);
    const PfPlan pl = pf_plan(p, tile * PF_RBS);
#pragma unroll
    for (int j = 0; j < NST - 1; j++) {
        if (j < ns) pf_load<PPS, WG>(p, pl, pf_stage<NB>(smem, p, j), s0 + j);
        gcu_cp_commit();
    }
    for (int j = 0; j < ns; j++) {
        gcu_cp_wait<NST - 2>(); /* span j is in (the NST - 2 after it may be in flight) */
        /* wgmma reads B through the async proxy: the copies' writes are made visible to it */
        if (WG) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (j + NST - 1 < ns) pf_load<PPS, WG>(p, pl, pf_stage<NB>(smem, p, (j + NST - 1) % NST), s0 + j + NST - 1);
        gcu_cp_commit(); /* (empty past the end: the groups stay counted one per span) */
        if constexpr (WG != 0) pf_span_wg<PPS, SBF32, WG>(p, pf_stage<NB>(smem, p, j % NST), acc);
        else pf_span<PPS, SBF32, NB, ((BPS == 1 && NB <= 4) || NB == 1)>(p, pf_stage<NB>(smem, p, j % NST), acc);
    }
}

/* BPS: the blocks per SM the instance is built for: 1 for 4 n-blocks with GLIM_CUDA_GEMM 2-5
 * (158-220 registers, 4 stages), else 2 (128 registers, 2 stages). A block works through one or
 * more segments, each a range of one row tile's spans: under split-K (sk == 0) exactly one,
 * split `blockIdx % nsplit` of tile `blockIdx / nsplit`; under stream-K the segments of its
 * range of tile-spans. A segment that is a whole tile writes the outputs; the others merge. */
template <int PPS, bool SBF32, int NB, int BPS, int WG>
__global__ void __launch_bounds__(PF_THREADS, BPS) k_pf_gemm(const __grid_constant__ PfArgs p) {
    extern __shared__ __align__(128) unsigned char pf_smem[];
    const MvArgs &a = p.a;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int nspan = a.nspan, G = gridDim.x, b = blockIdx.x;
    const long long W = (long long)((p.nrb + PF_RBS - 1) / PF_RBS) * nspan;
    long long item, end;
    if (p.sk) {
        item = W * b / G;
        end = W * (b + 1) / G;
    } else {
        const int tile = b / p.nsplit, split = b % p.nsplit;
        item = (long long)tile * nspan + (long long)nspan * split / p.nsplit;
        end = (long long)tile * nspan + (long long)nspan * (split + 1) / p.nsplit;
    }
    float acc[PF_UPW][NB][4];
    gcu_pdl_wait();
    while (item < end) {
        const int tile = (int)(item / nspan), s0 = (int)(item - (long long)tile * nspan);
        const long long tend = (long long)(tile + 1) * nspan;
        const int ns = (int)((end < tend ? end : tend) - item);
        int first, nparts, k_mine;
        if (p.sk) {
            const int bf = pf_sk_block((long long)tile * nspan, W, G), bl = pf_sk_block(tend - 1, W, G);
            first = tile + bf, nparts = bl - bf + 1, k_mine = b - bf;
        } else {
            first = (b / p.nsplit) * p.nsplit, nparts = p.nsplit, k_mine = b % p.nsplit;
        }
        __syncthreads(); /* every warp is past the last segment's stages before they refill */
        pf_run<PPS, SBF32, NB, BPS, WG>(p, pf_smem, tile, s0, ns, acc);
        item += ns;
        if (item >= end) gcu_pdl_trigger();
        if (nparts > 1 && !pf_merge<NB>(p, tile, first, nparts, k_mine, acc)) continue;
#pragma unroll
        for (int k = 0; k < PF_UPW; k++) {
            const int rb = tile * PF_RBS + warp * PF_UPW + k;
            if (rb >= p.nrb) continue;
#pragma unroll
            for (int nb = 0; nb < NB; nb++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    const int tok = WG == 1 ? nb * 8 + 4 * j + t : nb * 8 + 2 * t + j;
                    if (tok < a.T) mv_out_token(a, rb, g, tok, &acc[k][nb][j], &acc[k][nb][2 + j]);
                }
        }
    }
}

/* ---- host side --------------------------------------------------------------------------- */

template <int NB, int BPS, int WG>
static const void *pf_pick_nb(int pps, int sbf32) {
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 2: return (const void *)k_pf_gemm<1, false, NB, BPS, WG>;
    case 3: return (const void *)k_pf_gemm<1, true, NB, BPS, WG>;
    case 4: return (const void *)k_pf_gemm<2, false, NB, BPS, WG>;
    case 5: return (const void *)k_pf_gemm<2, true, NB, BPS, WG>;
    case 8: return (const void *)k_pf_gemm<4, false, NB, BPS, WG>;
    case 9: return (const void *)k_pf_gemm<4, true, NB, BPS, WG>;
    }
    return NULL;
}
/* n-blocks of 8 tokens: 1, 2, 4 or 8 (T <= 8, 16, 32, 64); blocks per SM 2, or 1 with 4 or 8
 * n-blocks, on wgmma (wg) or mma.sync */
static const void *pf_pick(int nb, int bps, int pps, int sbf32, int wg) {
    if (nb == 8) return pf_pick_nb<8, 1, 0>(pps, sbf32);
    if (nb == 4 && wg) return wg == 1 ? pf_pick_nb<4, 1, 1>(pps, sbf32) : pf_pick_nb<4, 1, 2>(pps, sbf32);
    if (nb == 4) return bps == 1 ? pf_pick_nb<4, 1, 0>(pps, sbf32) : pf_pick_nb<4, 2, 0>(pps, sbf32);
    return nb == 1 ? pf_pick_nb<1, 2, 0>(pps, sbf32) : pf_pick_nb<2, 2, 0>(pps, sbf32);
}

/* The largest unit: MLX with 4 pieces a span and f32 scales (1024 bytes of nibbles, 8 lane
 * groups x 16 words). */
#define PF_UNIT_MAX (1024 + 8 * 16 * 4)
/* the dynamic shared memory of an instance: its ring of stages */
static size_t pf_smem_bytes(int bps, int nb, int unit_bytes) {
    return (size_t)pf_stages(bps, nb) * pf_stage_bytes(unit_bytes, nb);
}

extern "C" glim_status gcu_gemm_init(glim_error *err) {
    static int done;
    if (done) return GLIM_OK;
    const int pps[3] = {1, 2, 4}, nbs[7] = {1, 2, 4, 4, 4, 4, 8}, bps[7] = {2, 2, 2, 1, 1, 1, 1},
              wgs[7] = {0, 0, 0, 0, 1, 2, 0};
    for (int n = 0; n < 7; n++)
        for (int k = 0; k < 3; k++)
            for (int f = 0; f < 2; f++) {
                const void *fn = pf_pick(nbs[n], bps[n], pps[k], f, wgs[n]);
                cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     (int)pf_smem_bytes(bps[n], nbs[n], PF_UNIT_MAX));
                /* all of the SM's L1 as shared memory: two blocks of 77-91 KB or one of 154-200 KB
                 * (the carveout is a hint the driver may otherwise set too small) */
                if (e == cudaSuccess)
                    e = cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
                if (e != cudaSuccess) return gcu_check(e, "prefill GEMM shared memory", err);
            }
    done = 1;
    return GLIM_OK;
}

extern "C" int gcu_gemm_takes(const gcu_mv_call *c) {
    const gcu_mat *m = c->m;
    return c->gemm && c->T > 4 && c->T <= GCU_TMAX && m->f.kind == GCU_KIND_Q &&
           (m->f.pps == 1 || m->f.pps == 2 || m->f.pps == 4) && m->unit_bytes <= PF_UNIT_MAX &&
           c->counters != NULL && (long long)m->nrb * m->f.nspan * (m->unit_bytes / 16) < 0xffffffffLL;
}

/* The call's n-blocks of 8 tokens, the blocks per SM its instance is built for, and whether it
 * runs on wgmma (GLIM_CUDA_GEMM=4 or 5, 17..32 tokens: 1 or 2, pf_span_wg's WG). */
static void pf_shape(const gcu_mv_call *c, int *nb, int *bps, int *wg) {
    *nb = c->T <= 8 ? 1 : c->T <= 16 ? 2 : c->T <= 32 ? 4 : 8;
    /* 8 n-blocks (33..64 tokens) only at one block an SM: 64 sums a thread and the span's 64 */
    *bps = *nb == 8 || (*nb == 4 && c->gemm >= 2) ? 1 : 2;
    *wg = *nb == 4 && c->gemm >= 4 ? c->gemm - 3 : 0;
}

/* Blocks of the call's instance an SM holds at once (0 when the GEMM does not take it): what
 * bench --profile's prompt table reports next to its time. */
extern "C" int gcu_gemm_blocks_per_sm(const gcu_mv_call *c) {
    glim_error err;
    if (!gcu_gemm_takes(c) || gcu_gemm_init(&err) != GLIM_OK) return 0;
    int nb, bps, wg, n = 0;
    pf_shape(c, &nb, &bps, &wg);
    const size_t smem = pf_smem_bytes(bps, nb, c->m->unit_bytes);
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, pf_pick(nb, bps, c->m->f.pps, c->m->sbf32, wg), PF_THREADS, smem) !=
        cudaSuccess)
        return 0;
    return n;
}

static long gemm_count; /* launches (gcu_gemm_count: tests check that the kernel ran) */
extern "C" long gcu_gemm_count(void) { return gemm_count; }

/* A block's cost beyond its spans, in spans: filling the ring (the first span's latency) and
 * the split's partials out and back (32 KB, about two spans' weights). */
#define PF_BLOCK_SPANS 2.0

/* The splits of a row tile. The blocks are alike in work, so a grid of B = tiles x splits
 * blocks on P places (bps per SM) takes ceil(B / P) waves of nspan / splits spans each, plus
 * each block's PF_BLOCK_SPANS: the split count with the least such time, the fewest splits
 * where more save under 3 %, each split at least 3 spans, at most 16, and all of them (`per`
 * bytes each) in the partial buffer. At the 30B's shapes on 132 SMs, one block each and 32 tokens: qkvg 34 tiles
 * x 3 splits, o_proj and down 26 x 5 (one wave each), gate/up 156 x 3 (the buffer's limit), the
 * head's 790 tiles unsplit. (Counted in waves alone, without the block's own cost, qkvg took
 * 15 splits of 3.5 spans in 4 waves; session 29's design, never run before session 30.) */
static int pf_splits(long long ntiles, int nspan, long long places, size_t per, size_t partial_cap) {
    int best = 1;
    double best_t = 0.0;
    for (int ns = 1; ns <= 16 && (ns == 1 || ns * 3 <= nspan); ns++) {
        if (ns > 1 && (size_t)ntiles * ns * per > partial_cap) break;
        const long long B = ntiles * ns, waves = (B + places - 1) / places;
        const double t = (double)waves * ((double)nspan / ns + (ns > 1 ? PF_BLOCK_SPANS : 0.5 * PF_BLOCK_SPANS));
        if (ns == 1 || t < 0.97 * best_t) best = ns, best_t = t;
    }
    return best;
}

extern "C" glim_status gcu_gemm_launch(const gcu_mv_call *c, cudaStream_t st, glim_error *err) {
    const gcu_mat *m = c->m;
    glim_status s = gcu_gemm_init(err);
    if (s != GLIM_OK) return s;
    if (!gcu_gemm_takes(c)) return glim_fail(err, GLIM_E_ARG, "prefill GEMM: call it does not take");
    int nb, bps, wg;
    pf_shape(c, &nb, &bps, &wg);
    const void *fn = pf_pick(nb, bps, m->f.pps, m->sbf32, wg);
    PfArgs p;
    memset(&p, 0, sizeof p);
    p.a = mv_args_of(c);
    p.nrb = m->nrb;
    const long long ntiles = (m->nrb + PF_RBS - 1) / PF_RBS;
    const size_t per = (size_t)PF_THREADS * PF_UPW * nb * 4 * sizeof(float); /* one part of a tile */
    const long long places = (long long)gcu_sm_count() * bps, W = ntiles * m->f.nspan;
    const long long G = W < places ? W : places;
    /* stream-K (GLIM_CUDA_GEMM 3, 4, 5) where split-K's grid is more than one wave: a grid of one
     * wave, ntiles + G slots of partials. Session 30, H100, 32 tokens, against split-K: gate/up
     * (468 split-K blocks, 3.55 waves) 172 -> 137 us, but qkvg 49 -> 49, o_proj 32 -> 36, down
     * 81 -> 84 (split-K's single waves of 130 blocks did better there); session 31, prefill of
     * 2048 tokens, stream-K only where split-K takes more than a wave against stream-K
     * everywhere: 1553-1558 against 1523-1531 tok/s, ahead in each of 3 rounds */
    p.nsplit = c->partial ? pf_splits(ntiles, m->f.nspan, places, per, c->partial_cap) : 1;
    p.sk = c->gemm >= 3 && ntiles * p.nsplit > places && c->partial && (size_t)(ntiles + G) * per <= c->partial_cap;
    if (p.sk) p.nsplit = 1;
    p.stage = pf_stage_bytes(m->unit_bytes, nb);
    p.part = (float *)c->partial;
    const long long blocks = p.sk ? G : ntiles * p.nsplit;
    if (blocks > 0x7fffffffLL) return glim_fail(err, GLIM_E_ARG, "prefill GEMM: %lld blocks", blocks);
    gemm_count++;
    void *args[] = {&p};
    return gcu_check(gcu_launch(fn, dim3((unsigned)blocks), dim3(PF_THREADS), pf_smem_bytes(bps, nb, m->unit_bytes), st, c->pdl, args),
                     "prefill GEMM launch", err);
}
