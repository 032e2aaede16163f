/* gcu.cuh: what the CUDA backend's .cu files share: the device matrix format, the staged-input
 * format the tensor-core matrix-vector kernel reads, launch helpers, and small device
 * functions (bf16 splits, mma, programmatic-launch and L2-prefetch instructions).
 *
 * Matrix format ("tiles"). A weight matrix [rows][K] is cut into row blocks of 16 rows and
 * spans of K; unit (rb, span) is one contiguous piece of memory that one warp reads with two
 * 16-byte loads per lane (plus the scales/biases of the unit), so a warp's range of units is a
 * contiguous address range. The 16-byte words are half-major (gcu_unit_u4): all lanes' first
 * word, then all lanes' second, so that a warp's load of either half from shared memory is 512
 * contiguous bytes, conflict-free (lane-major, 32 bytes apart, every such load took two passes
 * through the banks: session 14's Nsight Compute counted 38 % of the loop's shared wavefronts
 * as conflicts). MLX affine weights (4 and 8 bits) are read as a stream of 4-bit
 * nibbles: an 8-bit value is its low and its high nibble, the high one multiplied by 16 through
 * the staged input. A span is 128 nibbles (64 bytes of a row); dense bf16 spans are 32 columns.
 *
 * Staged input ("xs"). x enters the tensor cores as bf16 hi + lo (x = hi + lo to 16 bits of
 * mantissa), as two columns of the mma's B operand per token; within a span the elements are
 * permuted into the order the lanes need them, so each lane's B operand is one 16-byte load.
 * xsum holds, per token and per piece (the part of a span inside one scale group), the fp32
 * sum of x: the affine bias term is bias * sum(x). */
#ifndef GLIM_CUDA_GCU_CUH
#define GLIM_CUDA_GCU_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/cuda_api.h"

/* The 16-byte word of a unit that lane `lane` holds as its half `half` (dense units: 0 row g,
 * 1 row g + 8; MLX units: see gcu_unit_q_w32). */
#define gcu_unit_u4(lane, half) ((half) * 32 + (lane))
/* MLX (GCU_KIND_Q) units: where lane (g, t)'s word i (< 4) of row g (half 0) or g + 8 (half 1)
 * sits, in 32-bit words from the unit's start. The lane's 16-byte word gcu_unit_u4(lane, i & 1)
 * holds row g's word i, row g + 8's word i, row g's word i + 2, row g + 8's word i + 2 (i = 0, 1):
 * each 16-byte load is then one whole m16n8k32 A operand of the integer path (rows g, g + 8 at
 * k 0..15, the same rows at k 16..31: dmv_i8_pair_mma), which the registers of a load take as
 * they are. Until session 48 a 16-byte word was one row's four words, and every instruction's
 * operand was gathered from two loads by register moves: the span loop's chunk (its SPEC
 * instance, from the wait to the refill) had 55 moves in 372 instructions, 20 in 331 after this
 * change alone (bench/RESULTS.md v51).
 * mv_q_rows (mv_common.cuh) gives the rows back to the other readers. */
#define gcu_unit_q_w32(lane, half, i) (gcu_unit_u4(lane, (i) & 1) * 4 + ((i) >> 1) * 2 + (half))
#ifdef __cplusplus
extern "C" {
#endif
#include "error.h"
#ifdef __cplusplus
}
#endif

#define GCU_MV_WARPS 8          /* warps per matrix-vector block */
#define GCU_MV_TMAX 32          /* tokens one k_mv launch takes (its registers hold 8 n-blocks
                                 * of 4); gcu_mv_launch runs a longer call in such parts */
#define GCU_ATT_THREADS 256
#define GCU_ATT_TILE 64         /* keys per attention tile */

enum { GCU_KIND_Q = 0, GCU_KIND_DENSE = 1 };

/* The staged-input format a matrix wants. */
typedef struct gcu_xfmt {
    int kind;      /* GCU_KIND_Q or GCU_KIND_DENSE */
    int bits;      /* Q: 4 or 8 */
    int group;     /* Q: group size in elements */
    int K;         /* logical input width */
    int nspan;     /* spans per row */
    int gn;        /* Q: group size in nibbles */
    int pps;       /* Q: pieces per span (scale groups a span touches), 1, 2 or 4 */
    int kx;        /* bf16 elements per staged column (nspan * 128 or nspan * 32) */
} gcu_xfmt;
/* Floats of one token's sums of x (xsum) in format f: one per span and piece (dense: per span). */
__host__ __device__ static inline size_t gcu_xsum_floats(const gcu_xfmt &f) {
    return (size_t)f.nspan * (f.pps ? f.pps : 1);
}

/* A matrix on the device in tiles. */
typedef struct gcu_mat {
    gcu_xfmt f;
    int sbf32;       /* Q: scale/bias pairs stored as f32 (else bf16 pairs) */
    int rows;        /* rows in the tiled matrix (fused matrices count all parts) */
    int nrb;         /* row blocks of 16 */
    int unit_bytes;  /* bytes of one (rb, span) unit */
    uint4 *w;        /* [nrb][nspan] units */
    size_t bytes;
} gcu_mat;

/* A source row of a fused matrix: matrix m's row r, or zeros when m == NULL. */
typedef struct gcu_rowsrc {
    const glim_matrix *m;
    int64_t r;
} gcu_rowsrc;

#ifdef __cplusplus
extern "C" {
#endif
/* ---- layout.cu ---- */
/* Fills f for a matrix of width K in the given format; 0, or -1 when unsupported. */
int gcu_xfmt_make(gcu_xfmt *f, int kind, int bits, int group, int K);
/* Sets the geometry of m (no allocation). */
void gcu_mat_geometry(gcu_mat *m, const gcu_xfmt *f, int sbf32, int rows);
/* Which format a host matrix maps to; GLIM_E_UNSUPPORTED with a message when none. */
glim_status gcu_mat_format_of(const glim_matrix *W, gcu_xfmt *f, int *sbf32, glim_error *err);
/* Writes row blocks [rb0, rb1) of the tiled matrix into dst (host), row r of the tiled matrix
 * taken from src(r). */
void gcu_tile_rows(const gcu_mat *m, void (*src)(void *ctx, int r, gcu_rowsrc *out), void *ctx,
                   int rb0, int rb1, void *dst);
/* Row sources: ctx is the glim_matrix itself; or a gate/up pair interleaved by row blocks (rows
 * 0-7 of a block of 16 are gate rows rb*8.., rows 8-15 the same up rows: SwiGLU's epilogue
 * finds both in one lane). */
typedef struct gcu_mat_pair { const glim_matrix *gate, *up; } gcu_mat_pair;
void gcu_rows_plain(void *ctx, int r, gcu_rowsrc *o);
void gcu_rows_swiglu(void *ctx, int r, gcu_rowsrc *o);
/* Uploads a whole tiled matrix (allocates m->w). */
glim_status gcu_mat_upload(gcu_mat *m, void (*src)(void *ctx, int r, gcu_rowsrc *out), void *ctx,
                           glim_error *err);
/* Random tiles on the device (synthetic models). */
glim_status gcu_mat_random(gcu_mat *m, uint64_t seed, float scale, cudaStream_t st,
                           glim_error *err);

/* ---- qmatvec.cu ---- */
typedef struct gcu_mv_call {
    const gcu_mat *m;
    const __nv_bfloat16 *xs;   /* staged input [2T][kx] */
    const float *xsum;         /* [T][nspan][pps] */
    int T;
    int epi;                   /* GCU_EPI_* */
    float *out;                /* out[t * ldo + row] */
    int ldo;
    int out_rows;              /* rows written (SWIGLU: the intermediate width) */
    float mult, cap;
    float2 *partial;           /* stream-K partial sums, gcu_mv_partial_floats() floats */
    size_t partial_cap;        /* bytes of `partial` (the prefill GEMM's split-K fits in it) */
    int *counters;             /* [max row blocks], zero */
    int smem;                  /* stage x in shared memory when it fits */
    int pf_units, bps, pdl;
    int gemm;                  /* 5..64 tokens of MLX weights on prefill_gemm.cu's kernel */
    /* SWIGLU with T == 1: also stage the output for the next matvec (format stage_f) */
    const gcu_xfmt *stage_f;
    __nv_bfloat16 *stage_xs;
    float *stage_xsum;
    int *span_cnt;             /* [stage_f->nspan], zero */
} gcu_mv_call;
size_t gcu_mv_partial_bytes(int nsm, int bps);
/* The merge space a session (and the kernel tests) give the products, in blocks an SM's worth of
 * gcu_mv_partial_bytes: 8, ~35 MB on 132 SMs, so that the prefill GEMM's 64-token stream-K
 * parts fit (gate/up of the 30B: (156 tiles + 132 blocks) x 64 KB, ~19 MB); at 4 (17 MB, before
 * the 64-token instance) they did not, and gate/up fell back to 1.2 waves of whole tiles. */
#define GCU_MV_PART_BPS 8
glim_status gcu_mv_init(glim_error *err);
glim_status gcu_mv_launch(const gcu_mv_call *c, cudaStream_t st, glim_error *err);

/* ---- prefill_gemm.cu: 5..64 tokens of MLX weights (gcu_mv_launch routes them there) ---- */
int gcu_gemm_takes(const gcu_mv_call *c);
glim_status gcu_gemm_init(glim_error *err);
glim_status gcu_gemm_launch(const gcu_mv_call *c, cudaStream_t st, glim_error *err);
int gcu_gemm_blocks_per_sm(const gcu_mv_call *c);

/* ---- decode_mv.cu: one token, the input prepared in the kernel ---- */
enum { GCU_PRO_RAW = 0, GCU_PRO_NORM = 1, GCU_PRO_RESID = 2 };

/* Bytes of a matrix a decode matvec launch prefetches into L2 (GLIM_CUDA_L2PF_*): a later
 * product's, or a thin slice of its own before its wait (_GU_SELF, _DOWN_SELF), so that the
 * memory, idle through attention, the prologues and the tails, serves part of that product
 * before its loop: pieces k < n of `bytes` (a multiple of 16) at p + k stride (16-aligned),
 * dealt over the grid's warps; before the PDL wait (early: while the previous kernel runs) or at
 * each block's end. A grid is complete, and the next kernel past its PDL wait, only once its
 * prefetches are done (session 38: qkvg's at its end held attention's wait back 3.3 us). n 0:
 * none. */
typedef struct gcu_l2pf {
    const void *p;
    unsigned bytes;
    long long stride;
    int n, early;
    /* early only: SM clock cycles from the block's start before its warps issue their pieces
     * (GLIM_CUDA_L2PF_DELAY), so that the previous kernel's own loads (attention's q and first
     * tile) go to memory first; 0 at once */
    unsigned delay;
} gcu_l2pf;

typedef struct gcu_dmv_call {
    const gcu_mat *m;
    int pro;                   /* GCU_PRO_*: how the input row is made */
    int K;                     /* input width (RAW may be narrower than the matrix: zeros) */
    const float *src;          /* RAW: x; NORM: the row to norm; RESID: the sublayer output */
    const float *h_in;         /* RESID: the residual before the add */
    float *h_out;              /* RESID: the residual after it (block 0 writes; may be NULL) */
    const float *w_add;        /* RESID: gain of the centred post-norm applied to src */
    float eps_add;
    int norm_out;              /* NORM/RESID: GCU_NORM_CENTERED or GCU_NORM_PLAIN */
    const float *w_out;
    float eps_out;
    int epi;                   /* GCU_EPI_* */
    float *out;
    int out_rows;
    float mult, cap;
    float2 *partial;           /* stream-K partial sums, gcu_mv_partial_bytes(nsm, 2) */
    int *counters;             /* [row blocks], zero */
    int pf_units, pdl;
    int ring;                  /* units in flight per warp: 2, 3 or 4 */
    int late_ring;             /* when the ring's first weights are requested: 0 before the
                                  PDL wait, 1 once the prologue's rows are in, 2 after staging;
                                  3 (k_dmv_tma; 0 for k_dmv): one slot first, the rest after
                                  staging */
    long long *stamps;         /* profiling, or NULL: per block 8 readings: clock64 at start, after
                                  the PDL wait, after the norms, after staging, when warp 0's first
                                  unit is in, at warp 0's end, at the block's end; globaltimer at
                                  the end */
    unsigned long long *tl;    /* timeline slot (gcu_tl_mark), or NULL */
    int i8;                    /* MLX 4-bit: integer tensor cores, x as three signed 8-bit
                                  digits per group (decode_mv.cu); ignored for other formats */
    int dyn;                   /* with i8: blocks take row-block chunks at run time (k_dmv_dyn) */
    int *dyn_ctr;              /* its counters: 2 device ints, zero (left zero) */
    size_t partial_cap;        /* bytes of `partial` (chunks that cut row blocks merge there) */
    int max_blocks;            /* tests: at most this many blocks (0: one per SM) */
    int tma;                   /* weights into a shared-memory ring by bulk copies (k_dmv_tma)
                                  where the call fits it (the integer path too with i8) */
    int tma_slots;             /* its slots per warp ring at most (0: as many as fit) */
    int tma_chunk;             /* units per slot, one bulk copy each (0: 1) */
    int fence_sc;              /* the merges' fences sequentially consistent (gcu_fence_gpu) */
    int defer_merge;           /* k_dmv_tma: a warp's split first row block arrives at the end
                                  of its range, with its last (mv_arrive) */
    int block_rows;            /* k_dmv_tma: each block owns whole row blocks (its share of the
                                  grid's, in order); its 16 warps cut the block's units as
                                  stream-K cuts the grid's, and split row blocks are summed in
                                  shared memory at the block's end, in warp order (no global
                                  partials or counters). Ignored on other kernels */
    int front_rows;            /* with block_rows: the row blocks left over from an even share
                                  go to the first blocks (launched first: those the previous
                                  kernel's slowest blocks hold back get the smaller shares) */
    int cluster_rows;          /* with block_rows and cluster > 1: the cluster owns the row
                                  blocks, its warps (all blocks') cut them and merge through
                                  distributed shared memory (fewer, larger owners: a better
                                  balance where row blocks are few, as down's 416 on 132 SMs) */
    /* SWIGLU producer (gate/up): its output also staged as the integer path's digits for the
     * consumer of format *stage_f (down; MLX 4-bit, groups <= 64, width out_rows) into
     * stage_dig (gcu_dmv_digits_bytes), by the warp that completes each span's last row block;
     * stage_cnt: [stage_f->nspan] counters, zero (left zero) */
    const gcu_xfmt *stage_f;
    unsigned char *stage_dig;
    int *stage_cnt;
    /* RAW consumer: its input already staged as digits by the producer (k_dmv_tma on the
     * integer path only: gcu_dmv_takes_digits); src is then not read */
    const unsigned char *pre_dig;
    int cluster;               /* k_dmv_tma on the integer path, staging in the kernel: blocks
                                  per cluster that share it, each staging 1/cluster of the row
                                  into all (0, 1: none; more than 8 or clusters that cannot all
                                  be resident: none, said once on stderr) */
    /* GLIM_CUDA_FLAG_WAIT (k_dmv_tma only: gcu_dmv_flags_ok; other kernels ignore them): the
     * boundary to the previous kernel released by a slot of 2 words, zero, that each of its
     * blocks arrives on at its end (flag_arrive of that call), instead of the PDL wait.
     * flag_wait: the slot to wait on, flag_need: the previous call's blocks (gcu_dmv_blocks) */
    unsigned *flag_arrive, *flag_wait;
    int flag_need;
    int late_norm;             /* k_dmv_tma and the chain, NORM/RESID (else ignored): the
                                  consumer norm's scale on the row sums after the loop
                                  (GLIM_CUDA_LATE_NORM; tma_prepare_row) */
    int cluster_own_stage;     /* with cluster > 1: each block stages its whole row itself, the
                                  cluster only owning row blocks together (cluster_rows): the
                                  balance of larger owners without the peers' staging barrier */
    int diag_window_mb;        /* k_dmv_tma: weights read from this many MB at the matrix's start
                                  (DmvArgs.diag_window; timing only, the products are wrong);
                                  0: off */
    int diag_ring;             /* k_dmv_tma: DmvArgs.diag_ring (timing only); 0: off */
    int unit_ahead;            /* 1 (loads a unit ahead) or 2 (without): k_dmv_tma's lean kernel
                                  where it can take the call (the integer path, block-owned row
                                  blocks, no ring diagnostic); else (0 too) its general one */
    /* GLIM_CUDA_SPAN: the span-major kernel (decode_mv_span.cu) where it can take the call (the
     * integer path on the shared-memory ring, at most SPAN_RB_MAX row blocks per block, no
     * digits from the producer, fused staging or ring diagnostic); else ignored.
     * span_warps: its span groups (0: the kernel's choice, DMV_WARPS / span_rows at most);
     * span_acc: its row blocks' sums in shared memory, the loop over them not unrolled (any
     * number of row blocks per block, as shared memory allows; else in registers, at most
     * SPAN_RB_MAX); span_rows: its warps as span groups x this many row groups (1, 2, 4, 8;
     * else 1), each warp owning its span group's spans of every span_rows-th row block;
     * span_even: the fewest blocks that keep the
     * largest share of row blocks (down's 416 on 132 SMs: 104 blocks of 4 instead of 20 of 4 and
     * 112 of 3), so that no block ends early and the SMs left free take the next kernel's blocks
     * (launched under PDL) at once; span_blocks: at most this many blocks (0: one per SM),
     * before span_even's choice (GLIM_CUDA_SPAN_BLOCKS_*: a sweep of the shares) */
    int span, span_warps, span_acc, span_rows, span_even, span_blocks;
    /* span_chunk: the span kernel's units per ring slot with its sums in shared memory, 4 (two
     * row blocks a chunk where two slots of them fit; 0, the tests' zeroed calls, too) or 2
     * (one); the decode sets it per product from GLIM_CUDA_SPAN_TWO */
    int span_chunk;
    /* span_late: with the sums in shared memory (one or two row blocks a chunk), the ring's
     * first slot requested before the PDL wait and the rest after the prologue; span_spec: that
     * instance with the diagnostics compiled out (1), the timeline too (2), the norm's scale
     * before the loop and the softcap too (3), the uneven shares and the inputs' scalar loads
     * too (4; opt.span_spec) */
    int span_late, span_spec;
    /* span_row0: the span kernel's NORM/RESID row at offset 0 of its shared memory, the rest
     * after it, without k_dmv_tma's staging area (which it does not use) */
    int span_row0;
    /* span_ahead: on the LATE instance (general or SPEC 4), each pair's digits made during the
     * previous pair's last chunk (opt.span_ahead, a mask as span) */
    int span_ahead;
    /* GLIM_CUDA_L2PF_*: a later product's bytes this launch prefetches into L2 (the span kernel
     * only; others ignore it) */
    gcu_l2pf l2pf;
} gcu_dmv_call;

/* The call a test's description p makes on m with these device buffers (the test wrappers'
 * common part; memsets the rest). */
void gcu_test_dmv_call(const gcu_test_dmv *p, const gcu_mat *m, const float *src, const float *h_in, float *h_out,
                       const float *w_add, const float *w_out, float *out, int out_rows, float2 *part,
                       size_t part_bytes, int *cnt, gcu_dmv_call *c);
/* n floats of h into a new device buffer *d (NULL, and nothing allocated, when h is NULL). */
glim_status gcu_test_upload(float **d, const float *h, size_t n, glim_error *err);
/* Bytes of one row staged as digits for f; whether the call, given pre_dig, would run the
 * kernel that takes it (and whether f has digits at all). */
size_t gcu_dmv_digits_bytes(const gcu_xfmt *f);
int gcu_dmv_takes_digits(const gcu_dmv_call *c);
/* The grid a call launches (0 if it cannot be planned), and whether it runs k_dmv_tma, the
 * kernel that honours flag_arrive / flag_wait. */
int gcu_dmv_blocks(const gcu_dmv_call *c);
int gcu_dmv_flags_ok(const gcu_dmv_call *c);
/* Shared memory the kernel needs for m with this prologue; whether it fits at all. */
size_t gcu_dmv_smem(const gcu_mat *m, int pro, int K);
int gcu_dmv_fits(const gcu_mat *m, int pro, int K);
glim_status gcu_dmv_launch(const gcu_dmv_call *c, cudaStream_t st, glim_error *err);
/* n (<= 4) products in one cooperative launch with grid barriers between them (each step's
 * input may be the previous step's output; decode_chain.cu): on the integer path, each step
 * computed as its own k_dmv_tma launch with whole row blocks would compute it, bit for bit.
 * Whether the calls can share it (the same MLX 4-bit format, ring settings and fit):
 * gcu_dmv_chain_ok. bar: 2 device words, zero (left zero). */
int gcu_dmv_chain_ok(const gcu_dmv_call *c, int n);
glim_status gcu_dmv_chain_launch(const gcu_dmv_call *c, int n, unsigned *bar, cudaStream_t st,
                                 glim_error *err);
/* Only the residual add of a RESID prologue (h_out = h_in + centred_norm(src)), bit for bit as
 * the matvec would do it; c is the consumer's RESID call (its layout sizes the shared memory;
 * with w_out NULL the output norm's gain is not loaded). */
glim_status gcu_dmv_resid_launch(const gcu_dmv_call *c, cudaStream_t st, glim_error *err);

/* ---- norms.cu ---- */
enum { GCU_ST_PLAIN = 0, GCU_ST_EMBED = 1, GCU_ST_RESID = 2 };
enum { GCU_NORM_NONE = 0, GCU_NORM_WEIGHTLESS = 1, GCU_NORM_CENTERED = 2, GCU_NORM_PLAIN = 3 };
typedef struct gcu_embed {
    int bits, group;           /* bits 0: dense bf16 rows */
    int sdtype;                /* glim_dtype of scales/biases */
    int K;
    const void *q, *scales, *biases;
} gcu_embed;
typedef struct gcu_stage_call {
    int op;                    /* GCU_ST_* */
    int T, K;
    float *h;                  /* residual [T][K] (EMBED writes, RESID updates) */
    const float *src;          /* [T][ld_src] */
    int ld_src;
    const gcu_embed *emb;      /* EMBED: the table; tokens from step (device) */
    const int *tokens;         /* device, [T] */
    const float *w_add;        /* RESID: gain of the centred norm on src */
    float eps_add;
    int norm_out;              /* GCU_NORM_* on h (or on src for PLAIN) */
    const float *w_out;
    float eps_out;
    const gcu_xfmt *f;         /* the consumer's format */
    __nv_bfloat16 *xs;         /* [2T][kx] */
    float *xsum;               /* [T][nspan][pps] */
    int pdl;
} gcu_stage_call;
glim_status gcu_stage_launch(const gcu_stage_call *c, cudaStream_t st, glim_error *err);
glim_status gcu_stage_init(glim_error *err);

/* ---- rope_qk.cu / attention.cu ---- */
typedef struct gcu_attn_call {
    const float *qkvg;         /* [T][ldq]: q | k | v | gate */
    int ldq;
    float *qn;                 /* [T][H*D] prepared q (non-fused path) */
    void *kc, *vc;             /* cache [R][Hkv][D], bf16 (or f32 when kv32) */
    int kv32;
    int R, window;             /* window 0: full attention */
    int H, Hkv, D;
    float eps, qk_scale, scale;
    const float *inv_freq;     /* device [D/2]; NULL: no RoPE (full layers) */
    const int *pos0;           /* device: position of token 0 */
    int T, nsplit;
    float *part;               /* partials */
    float *part_poll;          /* spec 3: partials that are their own arrival flags, every word
                                  empty (GCU_ATT_EMPTY) between launches; NULL: no spec 3 */
    int *counters;             /* [2*T*Hkv*hgroups], zero: the splits' arrivals, then (pmerge)
                                  the mergers' */
    float *aout;               /* [T][H*D] gated output */
    const gcu_xfmt *f;         /* o_proj input format, or NULL: no staging */
    __nv_bfloat16 *xs;
    float *xsum;
    int pdl;
    int hgroups;               /* decode without staging: blocks per kv head, each G/hgroups heads */
    int group_keys;            /* hgroups apply up to this many keys (opt.att_group) */
    int group_half_keys;       /* half as many head groups (twice the heads a block) past this
                                * many keys, up to group_keys (opt.att_group_half; 0: off) */
    int min_chunk;             /* keys per split at least (opt.att_chunk; 0: one tile) */
    int wide_keys;             /* spec 3, full layers (window 0; the launch ignores it on
                                  others): past this many keys up to 72 splits a kv head
                                  (opt.att_wide_keys; 0: 64 at most, as sliding layers) */
    int resident;              /* set by gcu_attn_launch: blocks resident at once (0: unknown);
                                  splits get longer rather than outnumber them */
    int tiles2;                /* two tile buffers (splits of several tiles: the next one arrives
                                  while this one is used); else one, less shared memory */
    int few;                   /* score tiles of <= 8 keys one warp per (head, key) (opt.att_few) */
    int mma;                   /* scores and P V on the tensor cores (opt.att_mma) where the
                                  shapes allow (bf16 cache, D % 16 == 0, D <= 128, G <= 16) */
    int trig_early;            /* PDL: let the next kernel launch as soon as every block started
                                  (1), once every block has its q prepared (2), or its tiles
                                  done (3) */
    int fence_sc;              /* the split merge's fences sequentially consistent (gcu_fence_gpu) */
    int pack;                  /* the blocks with work numbered first (opt.att_pack) */
    int pmerge;                /* decode: the last min(G, splits, pmerge) blocks to arrive merge
                                  one query head each (opt.att_pmerge; 0: the last block merges
                                  all G) */
    unsigned long long *tl;    /* timeline slot (gcu_tl_mark), or NULL */
    int diag_twice;            /* timing diagnostic (opt.diag_att_twice): the tiles twice, the
                                  second pass from scratch; the same outputs */
    int warm;                  /* decode: q and the first tile rehearsed before the wait
                                  (opt.att_warm); the same outputs */
    int lean;                  /* without warm or diag_twice: the kernel instance that has no
                                  extra passes compiled in (opt.att_lean); the same outputs */
    int spec;                  /* decode: the instance specialised to the 30B's decode (opt.att_spec,
                                  where gcu_attn_launch finds the call fits it): 1 the same
                                  outputs, 2 the few-key splits on the tensor cores too, 3 as 2
                                  with the splits merged from part_poll without counters */
    /* GLIM_CUDA_FLAG_WAIT, decode (fused, T = 1) only: as gcu_dmv_call's. Every block of the grid
     * (gcu_attn_blocks) arrives on flag_arrive at its end, the empty ones too; the working
     * blocks wait on flag_wait for flag_need arrivals instead of the PDL wait */
    unsigned *flag_arrive, *flag_wait;
    int flag_need;
} gcu_attn_call;
size_t gcu_attn_part_floats(int T, int Hkv, int nsplit, int G, int D);
/* The word of gcu_attn_call.part_poll that no split writes (a NaN that float arithmetic does not
 * make; a split writing it writes the canonical NaN instead): the buffer is set to it once
 * (every byte 0xff), and each merger puts back what it read. */
#define GCU_ATT_EMPTY 0xffffffffu
/* The blocks gcu_attn_launch launches for the call (0 if it would fail). */
int gcu_attn_blocks(const gcu_attn_call *c, int fused);
glim_status gcu_qk_prep_launch(const gcu_attn_call *c, cudaStream_t st, glim_error *err);
glim_status gcu_attn_launch(const gcu_attn_call *c, int fused, cudaStream_t st, glim_error *err);
glim_status gcu_attn_init(glim_error *err);

/* ---- launch.cu ---- */
/* cudaLaunchKernelEx with the programmatic-serialization attribute when pdl is set. */
cudaError_t gcu_launch(const void *fn, dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                       int pdl, void **args);
/* The same in clusters of `cluster` blocks along x (1: none; grid.x a multiple of it). */
cudaError_t gcu_launch_cluster(const void *fn, dim3 grid, dim3 block, size_t smem, cudaStream_t st,
                               int pdl, int cluster, void **args);
/* How many clusters of `cluster` blocks of fn (block threads, smem bytes each; 1: single
 * blocks) can be resident on the GPU at once (0 if none or on an error). */
int gcu_resident(const void *fn, int block, size_t smem, int cluster);
glim_status gcu_check(cudaError_t e, const char *what, glim_error *err);
#ifdef __cplusplus
}
#endif

/* ---- device helpers --------------------------------------------------------------------- */
#ifdef __CUDACC__

/* Waits for the grids this one depends on (no-op when launched without PDL). */
__device__ __forceinline__ void gcu_pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
/* Lets the next grid in the stream start launching. */
__device__ __forceinline__ void gcu_pdl_trigger() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
/* Timeline (bench --timeline): a kernel's slot is GCU_TL_FIELDS words at tl[i * GCU_TL_FIELDS];
 * block thread 0 folds %globaltimer in with atomicMin/Max. Fields: the first and the last
 * block's start, the first block past the PDL wait, the first block's end, the last block's
 * end; for the decode
 * matvec also the last block's loop start and, summed over blocks, the time each spent waiting
 * (start to past the wait), in its prologue (past the wait to its loop), in its loop (to its
 * end), and the number of blocks; for attention, of its prologue (q and the tiles) the sums of
 * the q preparation (past the wait to q ready) and of the first tile's wait (q ready to the
 * tile in shared memory); and over the same blocks the shortest wait (a block that started
 * after the previous kernel's end: what it does before the wait, which then returns at once) and
 * the longest prologue. */
enum {
    GCU_TL_START = 0, GCU_TL_RELEASE = 1, GCU_TL_FIRST_END = 2, GCU_TL_END = 3, GCU_TL_LOOP_LAST = 4,
    GCU_TL_WAIT_SUM = 5, GCU_TL_PRO_SUM = 6, GCU_TL_LOOP_SUM = 7, GCU_TL_NBLK = 8, GCU_TL_Q_SUM = 9,
    GCU_TL_TILE_SUM = 10, GCU_TL_START_LAST = 11, GCU_TL_WAIT_MIN = 12, GCU_TL_PRO_MAX = 13,
    GCU_TL_FIELDS = 14
};
__device__ __forceinline__ unsigned long long gcu_tl_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ void gcu_tl_mark(unsigned long long *tl, int field) {
    if (!tl || threadIdx.x != 0) return;
    const unsigned long long t = gcu_tl_now();
    if (field == GCU_TL_END) atomicMax(tl + field, t);
    else atomicMin(tl + field, t);
    if (field == GCU_TL_START) atomicMax(tl + GCU_TL_START_LAST, t); /* the last block's start too */
}
/* The end of a block (every thread calls it, after the block's last work). */
__device__ __forceinline__ void gcu_tl_block_end(unsigned long long *tl) {
    if (!tl) return;
    __syncthreads();
    gcu_tl_mark(tl, GCU_TL_FIRST_END);
    gcu_tl_mark(tl, GCU_TL_END);
}
/* A block's phases (thread 0; t: its start, past the wait, loop start; now is its end). */
__device__ __forceinline__ void gcu_tl_phases(unsigned long long *tl, const unsigned long long *t) {
    if (!tl || threadIdx.x != 0) return;
    const unsigned long long now = gcu_tl_now();
    atomicMax(tl + GCU_TL_LOOP_LAST, t[2]);
    atomicAdd(tl + GCU_TL_WAIT_SUM, t[1] - t[0]);
    atomicAdd(tl + GCU_TL_PRO_SUM, t[2] - t[1]);
    atomicAdd(tl + GCU_TL_LOOP_SUM, now - t[2]);
    atomicAdd(tl + GCU_TL_NBLK, 1ull);
    atomicMin(tl + GCU_TL_WAIT_MIN, t[1] - t[0]);
    atomicMax(tl + GCU_TL_PRO_MAX, t[2] - t[1]);
}
/* Attention's parts of its prologue (thread 0; t: start, past the wait, tiles done, q ready,
 * first tile in; the last two 0 when not reached). */
__device__ __forceinline__ void gcu_tl_att_parts(unsigned long long *tl, const unsigned long long *t) {
    if (!tl || threadIdx.x != 0 || !t[3] || !t[4]) return;
    atomicAdd(tl + GCU_TL_Q_SUM, t[3] - t[1]);
    atomicAdd(tl + GCU_TL_TILE_SUM, t[4] - t[3]);
}
/* Asynchronous prefetch of [p, p+bytes) into L2 (bytes a multiple of 16, p 16-aligned). */
__device__ __forceinline__ void gcu_l2_prefetch(const void *p, unsigned bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

/* A count of blocks in global memory that grids synchronise on without the PDL wait (the
 * chain's steps, decode_chain.cu; GLIM_CUDA_FLAG_WAIT's boundaries, gcu_flag_wait). Arrive:
 * count += 1 with release semantics at GPU scope, after a block barrier, so that the writes of
 * all the block's threads go before it. Wait: thread 0 spins with acquire loads until the count
 * reaches target, then a block barrier passes that on. Every arriving block must be resident
 * or bound to become so without the waiting ones leaving (one block per SM, launched as the
 * previous grid lets its dependents start): 10 s of spinning means another process holds SMs,
 * and the wait traps rather than hang. */
__device__ __forceinline__ void gcu_grid_arrive(unsigned *bar) {
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar) : "memory");
}
__device__ __forceinline__ void gcu_grid_wait(unsigned *bar, unsigned target) {
    if (threadIdx.x == 0) {
        const unsigned long long t0 = gcu_tl_now();
        unsigned v, spins = 0;
        for (;;) {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(bar) : "memory");
            if (v >= target) break;
            if (++spins % 1024 == 0 && gcu_tl_now() - t0 > 10000000000ull) __trap();
        }
    }
    __syncthreads();
}

/* GLIM_CUDA_FLAG_WAIT: a decode boundary (qkvg -> attention -> o_proj -> gate/up -> down ->
 * next qkvg or the head) released by the producer's blocks themselves instead of
 * griddepcontrol.wait, which waits for the grid's completion and its memory flush (~0.8-1.2 us
 * after the last block's end in the timeline; the chain's grid barrier took 0.2-0.5, RESULTS.md
 * v15). slot: two words, {arrivals, passes}, zero between uses. Each producer block arrives as
 * its last act (gcu_grid_arrive); each of the consumer's `passers` blocks that wait (all of a
 * matvec's; attention's working ones) waits for `need` arrivals, then counts itself past, and
 * the last one past puts the slot back to zero: every producer block has arrived and every
 * consumer block has read the count, so nothing reads it again this launch, and the slot's
 * next producer (two kernels on: the slots alternate) arrives only after waiting on this
 * consumer's arrivals, which each of its blocks makes after passing. */
__device__ __forceinline__ void gcu_flag_wait(unsigned *slot, unsigned need, unsigned passers) {
    gcu_grid_wait(slot, need);
    if (threadIdx.x == 0 && atomicAdd(slot + 1, 1u) == passers - 1) {
        slot[0] = 0;
        slot[1] = 0;
    }
}

/* The fence of the message-passing pattern the merges use (partials written, fence, counter
 * atomic; the last arrival: fence, partials read): acquire-release at GPU scope is what the
 * pattern needs. __threadfence() is the sequentially consistent fence.sc.gpu (MEMBAR.SC.GPU),
 * which is stronger than needed and waits longer; sc selects it (GLIM_CUDA_FENCE_SC, for the
 * bench's comparison). */
__device__ __forceinline__ void gcu_fence_gpu(int sc) {
    if (sc) __threadfence();
    else asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

/* Bulk asynchronous copies (the copy engine, TMA) into shared memory, completing on an
 * mbarrier: the decode matvec's weight ring (decode_mv_tma.cu). Addresses 16-byte aligned,
 * sizes multiples of 16. */
__device__ __forceinline__ unsigned gcu_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void gcu_mbar_init(uint64_t *bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(gcu_smem_addr(bar)), "r"(count) : "memory");
}
/* Makes this thread's mbarrier.init visible to the copy engine before its first use. */
__device__ __forceinline__ void gcu_mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
/* Arrives once on bar, announcing `bytes` bytes the copy engine will deliver to it. The _sa forms
 * take shared-memory addresses (gcu_smem_addr) that a loop keeps in a register: from a pointer
 * to a static __shared__ array the compiler made the address again at every use (6 instructions
 * a chunk in the span loop, session 48). */
__device__ __forceinline__ void gcu_mbar_expect_tx_sa(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void gcu_mbar_expect_tx(uint64_t *bar, unsigned bytes) {
    gcu_mbar_expect_tx_sa(gcu_smem_addr(bar), bytes);
}
/* Waits until the phase of bar with this parity has completed (its bytes are visible). */
__device__ __forceinline__ void gcu_mbar_wait_sa(unsigned a, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(a), "r"(parity) : "memory");
    } while (!done);
}
__device__ __forceinline__ void gcu_mbar_wait(uint64_t *bar, unsigned parity) {
    gcu_mbar_wait_sa(gcu_smem_addr(bar), parity);
}
/* Whether the phase of bar with this parity has completed, without waiting: a thread that sees
 * it complete has the phase's bytes visible, as after gcu_mbar_wait. */
__device__ __forceinline__ bool gcu_mbar_test(uint64_t *bar, unsigned parity) {
    unsigned done;
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(gcu_smem_addr(bar)), "r"(parity) : "memory");
    return done != 0;
}
/* Orders this thread's (and, after a barrier, its group's) ordinary shared-memory accesses
 * before the copy engine's next writes. */
__device__ __forceinline__ void gcu_fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
/* Orders this thread's view of global memory (written by the previous kernel through the
 * generic proxy) before its bulk copies read it (the async proxy). */
__device__ __forceinline__ void gcu_fence_proxy_async_global() {
    asm volatile("fence.proxy.async.global;" ::: "memory");
}
/* L2 policy for data every block reads once (no hint either way). */
__device__ __forceinline__ uint64_t gcu_policy_normal() {
    uint64_t p;
    asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
    return p;
}
/* Global [src, src+bytes) into shared dst by the copy engine, completing on bar; pol: L2 hint. */
__device__ __forceinline__ void gcu_bulk_g2s_sa(unsigned dst, const void *src, unsigned bytes, unsigned bar,
                                                uint64_t pol) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1], %2, [%3], %4;" ::"r"(dst), "l"(src), "r"(bytes), "r"(bar), "l"(pol)
                 : "memory");
}
__device__ __forceinline__ void gcu_bulk_g2s(void *dst, const void *src, unsigned bytes, uint64_t *bar,
                                             uint64_t pol) {
    gcu_bulk_g2s_sa(gcu_smem_addr(dst), src, bytes, gcu_smem_addr(bar), pol);
}

/* Thread-block clusters (sm_90): the block's rank, the cluster barrier (every thread of every
 * block of the cluster arrives, then waits; release/acquire orders the shared-memory stores of
 * the phase, peers' included) and stores into a peer block's shared memory (distributed shared
 * memory): the decode matvec's prologue shared by the blocks of a cluster (decode_mv_tma.cu). */
__device__ __forceinline__ unsigned gcu_cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
/* Arrival without ordering: "this block has started" (the peers' shared memory is live once the
 * matching wait returns). */
__device__ __forceinline__ void gcu_cluster_arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void gcu_cluster_arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void gcu_cluster_wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
/* The address of shared-memory address `saddr` (gcu_smem_addr) in the block of rank `rank`. */
__device__ __forceinline__ unsigned gcu_cluster_map(unsigned saddr, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(saddr), "r"(rank));
    return r;
}
__device__ __forceinline__ void gcu_st_cluster(unsigned caddr, uint2 v) {
    asm volatile("st.shared::cluster.v2.u32 [%0], {%1, %2};" ::"r"(caddr), "r"(v.x), "r"(v.y) : "memory");
}
__device__ __forceinline__ float2 gcu_ld_cluster_f2(unsigned caddr) {
    float2 v;
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(caddr) : "memory");
    return v;
}

__device__ __forceinline__ float gcu_bf16lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float gcu_bf16hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

/* Round-to-nearest-even f32 -> bf16 bits (host too: the layout tests emulate the kernel). */
__host__ __device__ __forceinline__ uint32_t gcu_bf16_bits(float f) {
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(f));
}
__host__ __device__ __forceinline__ float gcu_bits_f32(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}
/* x = hi + lo with hi, lo bf16: 16 bits of mantissa. */
__host__ __device__ __forceinline__ void gcu_split(float x, uint32_t *hi, uint32_t *lo) {
    uint32_t h = gcu_bf16_bits(x);
    *hi = h;
    *lo = gcu_bf16_bits(x - gcu_bits_f32(h << 16));
}

/* d += A B on the integer tensor cores: A 16x32 unsigned bytes, B 32x8 signed bytes, exact
 * 32-bit sums (lane roles as the bf16 mma, with 4 bytes per register along k). */
__device__ __forceinline__ void gcu_imma(int d[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
/* d += A(16x16 bf16, row) * B(16x8 bf16, col), fp32 accumulate. */
__device__ __forceinline__ void gcu_mma(float d[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                        uint32_t a3, uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* Two nibbles (k and k+4 of word w, k = 0..3) as a bf16 pair of exact integers q-8 in -8..7:
 * OR-ing a nibble into the mantissa of 128.0 gives 128+q exactly; one fma subtracts 136.
 * Centring on 8 keeps scale*sum((q-8)x) and (bias+8*scale)*sum(x) from cancelling. */
__device__ __forceinline__ uint32_t gcu_nib2(uint32_t w, int k) {
    uint32_t v = ((w >> (4 * k)) & 0x000F000Fu) | 0x43004300u;
    uint32_t r;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(v), "r"(0x3F803F80u), "r"(0xC308C308u));
    return r;
}

/* Two nibbles (k and k+4 of word w) as the bf16 pair 16+q, exact, in two instructions: a shift
 * puts each nibble at mantissa bits 3..6 of its half, one LOP3 masks it and ORs in the bits of
 * 16.0 (bf16 0x4180: 16 * (1 + m/128) with m = 8q is 16 + q). The consumer takes the offset 16
 * back through the group sums of x. */
__device__ __forceinline__ uint32_t gcu_nib2_16(uint32_t w, int k) {
    const uint32_t v = k == 0 ? w << 3 : w >> (4 * k - 3);
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(v), "r"(0x00780078u), "r"(0x41804180u));
    return r;
}

__device__ __forceinline__ float gcu_warp_sum(float v) {
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ double gcu_warp_sum_d(double v) {
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float gcu_warp_max(float v) {
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float gcu_silu(float g) { return g / (1.0f + expf(-g)); }
__device__ __forceinline__ float gcu_sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

/* 16 bytes from global src to shared dst (both 16-byte aligned) as an asynchronous copy
 * (LDGSTS, bypassing L1): no register holds them. Complete with gcu_rows_wait. */
__device__ __forceinline__ void gcu_cp_async16(void *dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src) : "memory");
}

/* gcu_cp_async16 where fill, else 16 zero bytes (the copy's source size 0: nothing is read,
 * src need only be an address), and nothing at all where !issue: predicated inside the
 * instruction, no branch around it. Complete as above. */
__device__ __forceinline__ void gcu_cp_async16_zfill(void *dst, const void *src, bool fill, bool issue) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %3, 0;\n\t@p cp.async.cg.shared.global [%0], [%1], 16, %2;\n\t}"
                 ::"r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(fill ? 16 : 0), "r"((int)issue)
                 : "memory");
}

/* 4 bytes from global src to shared dst as an asynchronous copy (through L1); complete as above. */
__device__ __forceinline__ void gcu_cp_async4(void *dst, const void *src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src) : "memory");
}
/* Closes this thread's asynchronous copies issued since the last commit into one group. */
__device__ __forceinline__ void gcu_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
/* Waits until at most PENDING of this thread's groups are in flight. */
template <int PENDING>
__device__ __forceinline__ void gcu_cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory"); }
/* Then for the block's, for a two-deep ring: the tile whose copies were committed before the
 * newest `pending` (0 or 1, chosen at run time) is in; one barrier after either. */
__device__ __forceinline__ void gcu_cp_wait_block(int pending) {
    if (pending) gcu_cp_wait<1>();
    else gcu_cp_wait<0>();
    __syncthreads();
}

/* Row src[0..K) into shared dst[0..K) by the block's threads as asynchronous copies (LDGSTS):
 * every copy of every row in flight at once and no registers held, where loads through
 * registers are cut into rounds by the register budget. Complete with gcu_rows_wait. */
__device__ __forceinline__ void gcu_row_async(int K, const float *src, float *dst) {
    if ((K & 3) == 0 && (((uintptr_t)src | (uintptr_t)dst) & 15) == 0) {
        for (int i = threadIdx.x; i < (K >> 2); i += blockDim.x) gcu_cp_async16(dst + 4 * i, src + 4 * i);
        return;
    }
    for (int i = threadIdx.x; i < K; i += blockDim.x) gcu_cp_async4(dst + i, src + i);
}
/* Waits for this thread's asynchronous copies, then for the block's. */
__device__ __forceinline__ void gcu_rows_wait() {
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
}

/* dst[a][0..K) = src[a][0..K) for n <= 4 rows at once: every thread issues all its loads (4
 * float4 per row) before the first store, so a pass costs one memory round trip, not K/threads. */
__device__ __forceinline__ void gcu_load_rows(int K, int n, const float *const *src, float *const *dst) {
    bool vec = (K & 3) == 0;
    for (int a = 0; a < n; a++) vec = vec && (((uintptr_t)src[a] & 15) == 0);
    if (!vec) {
        for (int a = 0; a < n; a++)
            for (int i = threadIdx.x; i < K; i += blockDim.x) dst[a][i] = src[a][i];
        return;
    }
    const int n4 = K >> 2, step = 4 * blockDim.x;
    for (int base = threadIdx.x; base < n4; base += step) {
        float4 r[4][4];
#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int k = 0; k < 4; k++) {
                int i = base + k * blockDim.x;
                if (a < n && i < n4) r[a][k] = ((const float4 *)src[a])[i];
            }
#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int k = 0; k < 4; k++) {
                int i = base + k * blockDim.x;
                if (a < n && i < n4) ((float4 *)dst[a])[i] = r[a][k];
            }
    }
}

/* Stages elements of spans [s0, s1) of one token's x into the consumer's format: x(e) gives
 * input element e (0 beyond K is implied by the caller's accessor). Threads tid..: stride nt. */
template <typename XF>
__host__ __device__ void gcu_stage_spans(const gcu_xfmt &f, XF x, int s0, int s1, __nv_bfloat16 *xs_hi,
                                __nv_bfloat16 *xs_lo, float *xsum, int tid, int nt) {
    if (f.kind == GCU_KIND_DENSE) {
        for (int q = s0 * 4 + tid; q < s1 * 4; q += nt) {
            uint32_t h[8], l[8];
            for (int p = 0; p < 8; p++) gcu_split(x(q * 8 + p), &h[p], &l[p]);
            uint4 H = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
            uint4 L = make_uint4(l[0] | l[1] << 16, l[2] | l[3] << 16, l[4] | l[5] << 16, l[6] | l[7] << 16);
            ((uint4 *)xs_hi)[q] = H;
            ((uint4 *)xs_lo)[q] = L;
        }
        return;
    }
    const int wpg = f.gn / 32; /* words of a group one lane holds in a span (>= 1) */
    const int eight = f.bits == 8;
    for (int q = s0 * 16 + tid; q < s1 * 16; q += nt) {
        int s = q >> 4, it = q & 15, i = it >> 2, t = it & 3;
        int ow = wpg >= 4 ? 4 * t + i : (i / wpg) * (f.gn / 8) + t * wpg + (i % wpg);
        int e0 = s * 128 + ow * 8;
        const int order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
        uint32_t h[8], l[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int e = e0 + order[k];
            float v = eight ? x(e >> 1) * ((e & 1) ? 16.0f : 1.0f) : x(e);
            gcu_split(v, &h[k], &l[k]);
        }
        ((uint4 *)xs_hi)[q] = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
        ((uint4 *)xs_lo)[q] = make_uint4(l[0] | l[1] << 16, l[2] | l[3] << 16, l[4] | l[5] << 16, l[6] | l[7] << 16);
    }
    /* per-piece sums of x: 8 threads per piece (16 nibbles each), combined with shuffles in a
     * fixed order; the loop runs in whole warps so every shuffle has all its lanes */
    const int pn = 128 / f.pps, sub = pn / 8; /* nibbles per piece, per thread */
    const int np = (s1 - s0) * f.pps;
    for (int q0 = 0; q0 < (np * 8 + 31) / 32 * 32; q0 += nt) {
        int q = q0 + tid;
        int pq = s0 * f.pps + q / 8, part = q & 7;
        float acc = 0.0f;
        if (q < np * 8) {
            int n0 = pq * pn + part * sub;
            if (eight)
                for (int c = n0 >> 1; c < (n0 + sub) >> 1; c++) acc += x(c);
            else
                for (int e = n0; e < n0 + sub; e++) acc += x(e);
        }
#ifdef __CUDA_ARCH__
        acc += __shfl_xor_sync(0xffffffffu, acc, 1);
        acc += __shfl_xor_sync(0xffffffffu, acc, 2);
        acc += __shfl_xor_sync(0xffffffffu, acc, 4);
        if (q < np * 8 && part == 0) xsum[pq] = acc;
#else
        /* host emulation (nt == 1): gather the 8 parts in order */
        if (q < np * 8 && part == 0) {
            float v[8];
            for (int p = 0; p < 8; p++) {
                int n0 = pq * pn + p * sub;
                v[p] = 0.0f;
                if (eight)
                    for (int c = n0 >> 1; c < (n0 + sub) >> 1; c++) v[p] += x(c);
                else
                    for (int e = n0; e < n0 + sub; e++) v[p] += x(e);
            }
            xsum[pq] = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
        }
#endif
    }
}

#endif /* __CUDACC__ */
#endif
