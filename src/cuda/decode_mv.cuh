/* decode_mv.cuh: what the decode matrix-vector kernels share (decode_mv.cu: static shares,
 * chained, residual-only; decode_mv_dyn.cu: chunks taken at run time): the argument block, the
 * prologue that makes the input row in shared memory (rows by asynchronous copies, the
 * residual add and the norms), the staging of that row as bf16 hi/lo, and the integer path's
 * staging and unit (decode_mv_i8.cuh). Device code, included by those two files only. */
#ifndef GLIM_CUDA_DECODE_MV_CUH
#define GLIM_CUDA_DECODE_MV_CUH

#include "cuda/mv_common.cuh"

#define DMV_WARPS 16
#define DMV_THREADS (DMV_WARPS * 32)
#define DMV_SMEM_MAX (200 * 1024)
#define DMV_NSTAMP 8
#define DMV_CHAIN 4 /* products one chained launch may carry (decode_chain.cu) */
#define DMV_BATCH 4 /* staging items per thread whose loads are in flight together */

struct DmvArgs {
    MvArgs mv;
    int pro, K;
    const float *src, *h_in;
    float *h_out;
    const float *w_add;
    float eps_add;
    int norm_out;
    const float *w_out;
    float eps_out;
    gcu_xfmt f;
    int pf_units; /* units past the register ring each warp prefetches into L2 before the wait */
    int ring_at;  /* when the ring's first weights are requested: 0 before the PDL wait, 1 once
                   * the prologue's rows are in, 2 after staging */
    long long *stamps; /* profiling: per block DMV_NSTAMP clock64 readings of its phases, or NULL */
    unsigned long long *tl; /* timeline slot, or NULL */
    int i8;                 /* the integer path (MLX 4-bit): dmv_stage_i8, dmv_unit_i8 */
    /* k_dmv_dyn: row blocks (cut in kparts pieces along the input) are chunks that blocks take
     * at run time; dyn_ctr: [claims, blocks done], zero between launches */
    int kparts, nchunks;
    int *dyn_ctr;
    /* k_dmv_tma (decode_mv_tma.cu): units per warp in its shared-memory ring, and the ring's
     * byte offset in dynamic shared memory */
    int tslots, tring_off;
    int tchunk; /* units per slot (one bulk copy) */
    int defer_merge; /* k_dmv_tma: a split first row block arrives at the end of the range */
    int bblocks;     /* k_dmv_tma (gcu_dmv_call.block_rows): the blocks that share the grid's row
                      * blocks (0: stream-K over all warps) */
    int cluster_rows; /* with bblocks: clusters of `cluster` blocks own the row blocks */
    int front;        /* with bblocks: the leftover row blocks go to the first owners */
    int cluster; /* k_dmv_tma, integer path staged in the kernel: blocks per cluster (1: none) */
    int stage_cta; /* of those, the blocks that share the staging (cluster, or 1 with
                    * gcu_dmv_call.cluster_own_stage) */
    unsigned *flag_arrive, *flag_wait; /* k_dmv_tma: gcu_dmv_call's (gcu_flag_wait) */
    unsigned flag_need;
    int late_norm; /* k_dmv_tma and the chain, NORM/RESID: gcu_dmv_call.late_norm */
    const unsigned char *pre_dig; /* k_dmv_tma, integer path, RAW: the input already as digits
                                   * (gcu_dmv_call.pre_dig), copied into shared memory whole */
    /* k_dmv_tma, a timing diagnostic (gcu_dmv_call.diag_window_mb): each warp's weights are read
     * from an offset inside the matrix's first diag_window uint4 (0: off). The loops then read
     * a few MB that stay in L2, so a decode runs as if weight bytes were free: the loops' compute
     * ceiling. The products are wrong. */
    long long diag_window;
    /* k_dmv_tma, timing diagnostics (gcu_dmv_call.diag_ring); the products are wrong. 0: off.
     * 1, 2: does the address pattern of the grid's streams cost bandwidth (bench/persist_probe.cu:
     * 132 contiguous shares streamed at 77 % of the floor, the same bytes dealt round robin in
     * 64 KB pieces at 93 %)? 1: a warp's chunk c is the matrix's chunk c x (the grid's warps) +
     * the warp's index, so the grid reads one window that moves through the matrix; 2: the same
     * over the warps of an owner of row blocks, inside its own rows. Each warp reads as many
     * bytes as its own units. 3: what the row blocks' granularity costs: an owner with more than
     * the mean share of units (e.g. o_proj: 416 row blocks on 132 blocks, 3 or 4 each) stops at
     * the mean. 4: the loops' compute ceiling: no bytes are copied after each slot's first fill
     * (whole, the matrix's first units: the sums stay finite, so no division or square root
     * takes its slow path), each later barrier completes at once and the loop computes on those
     * units again. 5: what the prologues cost: no
     * rows are read, normed or staged, and the loop computes on whatever shared memory holds
     * (the ring is fed as usual). 6, 7 (NORM/RESID prologues, tma_rows; the span kernel too): the
     * residual's read left out (6), the input's too (7), each taken as zeros: what the rows' L2
     * reads cost. 8: the gains' reads left out (tma_load_gains). */
    int diag_ring;
    /* k_dmv_span (GLIM_CUDA_SPAN): the warps that own spans (span groups x row groups; the others
     * only norm and merge); 0 on the other kernels. Its row blocks' sums in shared memory
     * (GLIM_CUDA_SPAN_ACC): their byte offset in dynamic shared memory, and their rows per warp
     * (span_srows float2 x 32 lanes each; 0 with the sums in registers) */
    int span_warps;
    int span_acc_off, span_srows;
    int span_rows;    /* its row groups H: warp sg H + h owns span group sg of row blocks h + i H */
    int span_rpc;     /* its row blocks per chunk (one slot, one barrier): 1 or 2 */
    int span_fewer;   /* host's note: span_even / span_blocks cut the grid (gcu_dmv_even_count) */
    int span_late;    /* host's note: the LATE instance (GLIM_CUDA_SPAN_LATE; gcu_dmv_late_count) */
    int span_scr_off; /* its warps' staging scratch (SPAN_SCRATCH_U4 uint4 each): byte offset */
    int span_spec_run; /* host's note: the SPEC instance's level (GLIM_CUDA_SPAN_SPEC, or lower
                        * where the call needs more of the general one), 0 off it */
    int span_row0; /* k_dmv_span: its NORM/RESID row at offset 0 (gcu_dmv_call.span_row0) */
    int span_ahead_run; /* host's note: on an AHEAD instance (GLIM_CUDA_SPAN_AHEAD) */
    gcu_l2pf l2pf; /* k_dmv_span: the call's L2 prefetch, checked (dmv_args) */
};

/* The integer path's sum of a row over the four lanes t of its group g (decode_mv_i8.cuh: each
 * holds sums of its own group and digits), complete on lane t = 0. One definition for every loop,
 * so that they add in one order (the same bits). */
__device__ __forceinline__ float dmv_i8_lane_sum(float v) {
    v += __shfl_down_sync(0xffffffffu, v, 2);
    return v + __shfl_down_sync(0xffffffffu, v, 1);
}

/* A row block's two sums of this lane (rows g and g + 8) from its accumulators, which restart
 * at zero; on the integer path lane t = 0 gets its group's four lanes' (dmv_i8_lane_sum). */
template <int KIND, bool I8>
__device__ __forceinline__ void dmv_row_sums(float *acc, float *vg, float *vh) {
    vg[0] = KIND == GCU_KIND_Q ? acc[0] : acc[0] + acc[1];
    vh[0] = KIND == GCU_KIND_Q ? acc[1] : acc[2] + acc[3];
    acc[0] = acc[1] = acc[2] = acc[3] = 0.0f;
    if constexpr (I8) {
        vg[0] = dmv_i8_lane_sum(vg[0]);
        vh[0] = dmv_i8_lane_sum(vh[0]);
    }
}

/* Phases a block records when stamps != NULL (see gcu_dmv_call.stamps). */
__device__ __forceinline__ void dmv_stamp(const DmvArgs &d, int k) {
    if (d.stamps) d.stamps[blockIdx.x * DMV_NSTAMP + k] = clock64();
}

/* A block's end (every thread, after its last work): the profiling stamps 5 (thread 0 done), 6
 * (the whole block) and 7 (%globaltimer), and the timeline's block end and phases (t: the
 * block's start, past the wait, its loop's start). */
__device__ __forceinline__ void dmv_block_end(const DmvArgs &d, const unsigned long long *t) {
    if (d.stamps) {
        if (threadIdx.x == 0) dmv_stamp(d, 5);
        __syncthreads();
        if (threadIdx.x == 0) {
            dmv_stamp(d, 6);
            d.stamps[blockIdx.x * DMV_NSTAMP + 7] = (long long)gcu_tl_now();
        }
    }
    gcu_tl_block_end(d.tl);
    gcu_tl_phases(d.tl, t);
}

/* The type of the prologue's sums of squares (per thread, then over the block). float since
 * session 14: double cost a conversion per element (F2F.F64, a slow pipe), twice per RESID
 * prologue; the sums' relative error stays ~1e-7, the order of the digits' own. Every prologue (the
 * matvecs', k_dmv_resid's) sums in this type in the same order, so their bits agree. */
typedef float DmvSum;

/* The sum of v over the block (every thread gets it): warp trees, then the warps' sums in warp
 * order. buf: 0 for the RESID add's sum, 1 for the consumer norm's; scratch holds both
 * (DMV_SCRATCH), so that no barrier is needed after the reads (the prologue's next write to a
 * buffer comes after a later barrier). */
#define DMV_SCRATCH (2 * DMV_WARPS)
/* Its two halves: each warp's sum into scratch (dmv_block_put), and, after a barrier, the warps'
 * sums added in warp order (dmv_block_gather). GLIM_CUDA_LATE_NORM puts before the staging's
 * barrier and gathers only at the loop's first row end (decode_mv_tma.cuh). */
__device__ __forceinline__ void dmv_block_put(DmvSum v, DmvSum *scratch, int buf) {
    v = gcu_warp_sum(v);
    if ((threadIdx.x & 31) == 0) scratch[buf * DMV_WARPS + (threadIdx.x >> 5)] = v;
}
__device__ __forceinline__ DmvSum dmv_block_gather(const DmvSum *scratch, int buf) {
    DmvSum r = 0;
#pragma unroll
    for (int w = 0; w < DMV_WARPS; w++) r += scratch[buf * DMV_WARPS + w];
    return r;
}
static __device__ DmvSum dmv_block_sum(DmvSum v, DmvSum *scratch, int buf) {
    dmv_block_put(v, scratch, buf);
    __syncthreads();
    return dmv_block_gather(scratch, buf);
}
/* An RMS norm's scale from the row's sum of squares (every prologue the same way, so that their
 * bits agree). */
__device__ __forceinline__ float dmv_norm_inv(DmvSum ss, int K, float eps) {
    return 1.0f / sqrtf((float)(ss / K) + eps);
}

/* Shared memory of a block, in this order: hi column [cs] and lo column [cs] (bf16), the group
 * sums [np], the per-item sums [nspan*16], then the fp32 rows of the prologue (row; for RESID
 * h, w_add; w_out last for NORM and RESID). */
struct DmvSmem {
    __nv_bfloat16 *sx;
    float *xsum, *isum, *row, *hrow, *wadd, *wout;
};
__device__ __forceinline__ DmvSmem dmv_smem_at(const DmvArgs &d, void *base) {
    DmvSmem m;
    const int cs = d.mv.cs, np = d.f.nspan * (d.f.kind == GCU_KIND_Q ? d.f.pps : 1);
    m.sx = (__nv_bfloat16 *)base;
    m.xsum = (float *)(m.sx + 2 * (size_t)cs);
    m.isum = m.xsum + ((np + 3) & ~3);
    m.row = m.isum + (d.f.kind == GCU_KIND_Q ? d.f.nspan * 16 : 0);
    const int K4 = (d.K + 3) & ~3;
    m.hrow = m.row + K4;
    m.wadd = m.hrow + K4;
    m.wout = d.pro == GCU_PRO_RESID ? m.wadd + K4 : m.row + K4;
    return m;
}

/* The prologue's rows come into shared memory as asynchronous copies, one round trip for all:
 * the gains are weights (static), so they are requested before the PDL wait; the activations
 * (src, and h_in for RESID) after it. gcu_rows_wait completes both. */
__device__ __forceinline__ void dmv_request_gains(const DmvArgs &a, const DmvSmem &m) {
    if (a.pro == GCU_PRO_RESID) gcu_row_async(a.K, a.w_add, m.wadd);
    if (a.pro != GCU_PRO_RAW && a.w_out) gcu_row_async(a.K, a.w_out, m.wout);
}
__device__ __forceinline__ void dmv_request_inputs(const DmvArgs &a, const DmvSmem &m) {
    gcu_row_async(a.K, a.src, m.row);
    if (a.pro == GCU_PRO_RESID) gcu_row_async(a.K, a.h_in, m.hrow);
}

/* One element of the residual add (y = h + centred_norm(s)) and of the consumer's norm: every
 * prologue (the matvecs', k_dmv_resid's, k_dmv_tma's from registers) computes them with these
 * two expressions, so their bits agree. */
__device__ __forceinline__ float dmv_resid_value(float s, float inv, float h, float wa) {
    const float y = s * inv;
    return h + y * (1.0f + wa);
}
__device__ __forceinline__ float dmv_norm_value(float v, float inv, float w, int centered) {
    const float y = v * inv;
    return centered ? y * (1.0f + w) : y * w;
}

/* RESID, first half (rows already in shared memory): row = h_in + centred_norm(src; w_add)
 * (block 0 writes it to h_out). Returns this thread's part of the sum of squares of the new
 * row. k_dmv_resid runs exactly this code, so that a NORM prologue over its output gives the
 * bits a RESID prologue would. */
static __device__ DmvSum dmv_residual(const DmvArgs &a, const DmvSmem &m, DmvSum *scratch) {
    const int K = a.K, tid = threadIdx.x;
    DmvSum ss = 0;
    for (int i = tid; i < K; i += DMV_THREADS) ss += m.row[i] * m.row[i];
    float inv = dmv_norm_inv(dmv_block_sum(ss, scratch, 0), K, a.eps_add);
    const bool writer = blockIdx.x == 0 && a.h_out;
    ss = 0;
    for (int i = tid; i < K; i += DMV_THREADS) {
        const float y = dmv_resid_value(m.row[i], inv, m.hrow[i], m.wadd[i]);
        m.row[i] = y;
        if (writer) a.h_out[i] = y;
        ss += y * y;
    }
    return ss;
}

/* NORM/RESID (rows already in shared memory): row = the consumer's input in fp32 (and h_out
 * written by block 0). */
static __device__ void dmv_prepare_row(const DmvArgs &a, const DmvSmem &m, DmvSum *scratch) {
    const int K = a.K, tid = threadIdx.x;
    DmvSum ss = 0; /* this thread's part of the sum of squares of the row to norm */
    if (a.pro == GCU_PRO_RESID) {
        ss = dmv_residual(a, m, scratch);
    } else { /* NORM */
        for (int i = tid; i < K; i += DMV_THREADS) ss += m.row[i] * m.row[i];
    }
    /* the consumer's norm: one loop for both, so a NORM over a row k_dmv_resid wrote gives the
     * bits of the RESID prologue */
    float inv = dmv_norm_inv(dmv_block_sum(ss, scratch, 1), K, a.eps_out);
    for (int i = tid; i < K; i += DMV_THREADS)
        m.row[i] = dmv_norm_value(m.row[i], inv, m.wout[i], a.norm_out == GCU_NORM_CENTERED);
    __syncthreads();
}

/* n (4 or 8) consecutive elements from e, zero past K; float4 loads when aligned. GSRC: src is
 * in global memory, written by the previous kernel (read through L2, never a stale L1 line). */
template <bool GSRC>
__device__ __forceinline__ void dmv_load_n(const float *src, int e, int n, int K, float *v) {
    if (e + n <= K && ((((uintptr_t)(src + e)) & 15) == 0)) {
        float4 a = GSRC ? __ldcg((const float4 *)(src + e)) : *(const float4 *)(src + e);
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
        if (n == 8) {
            float4 b = GSRC ? __ldcg((const float4 *)(src + e + 4)) : *(const float4 *)(src + e + 4);
            v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
        }
        return;
    }
    for (int j = 0; j < n; j++) v[j] = e + j < K ? (GSRC ? __ldcg(src + e + j) : src[e + j]) : 0.0f;
}

/* Stages the prologue's fp32 row (src: m.row in shared memory, or with GSRC the raw input in
 * global memory) into the kernel's format:
 * hi/lo columns and, for MLX weights, the per-group sums of the values as represented (hi + lo),
 * which is what the 16+q offset has to be taken back against. Items go in batches of DMV_BATCH per
 * thread, all loads of a batch issued before any use. Deterministic: fixed summation order. */
template <bool GSRC>
static __device__ void dmv_stage_from(const DmvArgs &d, const DmvSmem &m, const float *src) {
    const gcu_xfmt &f = d.f;
    const int K = d.K, tid = threadIdx.x, nitems = f.kx / 8;
    const int eight = f.kind == GCU_KIND_Q && f.bits == 8, ne = eight ? 4 : 8;
    const int cs = d.mv.cs;
    for (int q0 = tid; q0 < nitems; q0 += DMV_BATCH * DMV_THREADS) {
        float v[DMV_BATCH][8];
        int ow[DMV_BATCH] = {0};
#pragma unroll
        for (int b = 0; b < DMV_BATCH; b++) {
            const int q = q0 + b * DMV_THREADS;
            if (q < nitems) dmv_load_n<GSRC>(src, dmv_item(f, q, &ow[b]), ne, K, v[b]);
        }
#pragma unroll
        for (int b = 0; b < DMV_BATCH; b++) {
            const int q = q0 + b * DMV_THREADS;
            if (q >= nitems) break;
            uint32_t h[8], l[8];
            if (f.kind == GCU_KIND_DENSE) {
#pragma unroll
                for (int k = 0; k < 8; k++) gcu_split(v[b][k], &h[k], &l[k]);
            } else {
                const int order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    const int n = order[k];
                    if (eight) gcu_split((n & 1) ? 16.0f * v[b][n >> 1] : v[b][n >> 1], &h[k], &l[k]);
                    else gcu_split(v[b][n], &h[k], &l[k]);
                }
                /* the represented values (hi + lo) of the item's elements, in slot order; for
                 * 8 bits each element once (its low nibble's slot, not the x 16 one) */
                float sum = 0.0f;
#pragma unroll
                for (int k = 0; k < 8; k++)
                    if (!eight || !(order[k] & 1)) sum += __uint_as_float(h[k] << 16) + __uint_as_float(l[k] << 16);
                m.isum[(q >> 4) * 16 + ow[b]] = sum;
            }
            ((uint4 *)m.sx)[q] = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
            ((uint4 *)(m.sx + cs))[q] = make_uint4(l[0] | l[1] << 16, l[2] | l[3] << 16, l[4] | l[5] << 16, l[6] | l[7] << 16);
        }
    }
    if (f.kind == GCU_KIND_DENSE) return;
    __syncthreads();
    /* group sums: piece p of span s covers words [p*wpp, (p+1)*wpp) of the span */
    const int wpp = 16 / f.pps, np = f.nspan * f.pps;
    for (int p = tid; p < np; p += DMV_THREADS) {
        const float *is = m.isum + (p / f.pps) * 16 + (p % f.pps) * wpp;
        float x = 0.0f;
        for (int w = 0; w < wpp; w++) x += is[w];
        m.xsum[p] = x;
    }
}
static __device__ __forceinline__ void dmv_stage(const DmvArgs &d, const DmvSmem &m) {
    dmv_stage_from<false>(d, m, m.row);
}

#include "cuda/decode_mv_i8.cuh"

/* decode_mv_tma.cu: the kernel whose weights stream into a shared-memory ring by bulk copies
 * (i8: on the integer path; NULL when the format has none) and its dynamic shared memory limit;
 * the staging bytes a call needs before its ring (128-aligned; 0: the kernel cannot take it, cs:
 * the staged column stride, dmv_cs), the slots of `chunk` units per warp ring that fit between
 * byte `off` and `cap` (at most max_slots when > 0; 0 if under 2), and both for one call: the bytes of dynamic
 * shared memory it needs (0: it cannot take the call), its slots and the ring's offset. lean 1,
 * 2: the lean kernels (block-owned row blocks only; 2 loads a unit ahead; the integer path only,
 * NULL elsewhere). */
const void *dmv_tma_kernel(int kind, int pps, int sbf32, int i8, int lean);
int dmv_tma_smem_cap(void);
size_t dmv_tma_staging(const gcu_mat *m, int pro, int K, int cs);
int dmv_tma_slots(const gcu_mat *m, size_t off, size_t cap, int chunk, int max_slots);
size_t dmv_tma_geometry(const gcu_mat *m, int pro, int K, int cs, int chunk, int max_slots, int *slots,
                        int *ring_off);

/* decode_mv_span.cu (GLIM_CUDA_SPAN): the span-major kernel for the integer path (pps 2 or 4)
 * whose blocks own at most rb_max row blocks, their sums in registers (SPAN_RB_SMALL or
 * SPAN_RB_MAX of them: NULL past that) or with smem_sums in shared memory (any number); and
 * the slots (rpc row blocks' 2 units each) per warp ring that fit past byte `off` for `warps`
 * warps, leaving `keep` bytes after the rings (at most max_slots when > 0; 0 if under 2). */
#define SPAN_RB_SMALL 4
#define SPAN_RB_MAX 20
#define SPAN_SCRATCH_BYTES 1088 /* a warp's staging scratch in k_dmv_span (SPAN_SCRATCH_U4 x 16) */
/* the span-major kernel for a format, the warp's most row blocks, the sums' place (shared memory
 * or registers), row blocks per chunk (2 only with the sums in shared memory) and late (with the
 * sums in shared memory: one ring slot requested before the PDL wait) */
const void *dmv_span_kernel(int pps, int sbf32, int rb_max, int smem_sums, int rpc, int late);
const void *dmv_span_spec_kernel(int pps, int sbf32, int spec, int rpc);
const void *dmv_span_ahead_kernel(int pps, int sbf32, int spec, int rpc);
int dmv_span_slots(const gcu_mat *m, size_t off, size_t keep, int warps, int rpc, int max_slots);

/* decode_chain.cu: up to DMV_CHAIN products in one cooperative launch, a grid barrier between
 * them, each warp's ring running on across them (the integer path, MLX 4-bit with groups of 32
 * or 64: pps 4 or 2; NULL otherwise). The steps share the ring's geometry (tslots, tchunk,
 * tring_off), each owns whole row blocks (bblocks), and the split row blocks' partials go to
 * merge_off (DMV_WARPS x 64 float2). bar: [2] device words, zero (left zero). */
struct DmvChain {
    DmvArgs step[DMV_CHAIN];
    int n;
    unsigned *bar;
    int merge_off;
};
#define DMV_CHAIN_MERGE (DMV_WARPS * 64 * 8)
/* its dynamic shared memory at most: with its static ~3.5 KB (barriers, the steps' ranges and
 * arguments) under the 227 KB a block may have */
#define DMV_CHAIN_SMEM_MAX (220 * 1024)
const void *dmv_chain_kernel(int pps, int sbf32);

/* The run-time-chunked kernel of decode_mv_dyn.cu for this format and ring (rings 2..4), or
 * NULL. */
const void *dmv_dyn_kernel(int pps, int sbf32, int ring);

#endif
