/* decode_mv.cu: the matrix-vector product of one decoded token, with its input prepared inside
 * the kernel. Each block (one per SM, 16 warps) reads the raw fp32 row the previous kernel left
 * (the attention output, the SwiGLU output, or the residual plus a sublayer's output), applies
 * the norms itself (post-norm + residual add, then the consumer's pre-norm) and stages the row
 * into its own shared memory; the separate "stage" kernels and their launches disappear from
 * decode. Block 0 writes the updated residual row to a second buffer (the others still read
 * the old one), so consecutive kernels ping-pong between two residual buffers.
 *
 * The weights are the tiles of layout.cu, streamed by warps over equal contiguous unit ranges
 * (stream-K, merged by mv_finish as in qmatvec.cu). A 4-bit value enters the tensor cores as
 * the exact bf16 integer 16+q (a shift and one LOP3 per pair, no arithmetic); the offset is
 * taken back per group as (bias - 16 scale) * sum(x). That cancellation is exact only when
 * sum(x) is the sum of the values the tensor cores saw, so the staged row is first rounded to
 * its bf16 hi + lo representation and the group sums are taken over those.
 *
 * Launch: the norm gains (weights) come into shared memory by asynchronous copies and the first
 * RING units of each warp into registers before griddepcontrol.wait; the activations after it,
 * all rows in one round trip. More weight bytes in flight through the prologue (L2 prefetch,
 * bulk copies into shared memory) measured slower: the prologue's own loads queue behind them
 * (bench/RESULTS.md, session 3).
 *
 * Two alternatives, switches off by default because they measured no faster (RESULTS.md v8):
 * the integer path for MLX 4-bit (dmv_stage_i8, dmv_unit_i8) and, on it, k_dmv_dyn, where
 * blocks take row-block chunks at run time instead of static shares. */
#include <stdio.h>

#include "cuda/decode_mv.cuh"

/* Requests the first RING units of this warp's range [u0, u1) into the ring; lp advances. */
template <int KIND, int PPS, bool SBF32, int RING>
__device__ __forceinline__ void dmv_ring_fill(MvSlot<KIND, PPS, SBF32> *ring, const uint4 *&lp, int u0,
                                              int u1, int uw, int lane, uint64_t pol) {
#pragma unroll
    for (int j = 0; j < RING; j++)
        if (u0 + j < u1) {
            mv_load_p(ring[j], lp, lane, pol);
            lp += uw;
        }
}

/* One decode matrix-vector product by the whole grid: the weights' first RING units per warp
 * are requested, then the kernel waits for the previous one (griddepcontrol.wait). RING units in
 * flight per warp (registers): 16 warps x RING x 1.1 KB is what one SM has in flight against the
 * memory latency; the bench compares 2, 3 and 4. */
template <int KIND, int PPS, bool SBF32, int RING, bool I8>
__device__ __forceinline__ void dmv_body(const DmvArgs &d, uint4 *dmv_smem, DmvSum *scratch) {
    const MvArgs &a = d.mv;
    constexpr int SPAN = KIND == GCU_KIND_Q ? 128 : 32;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int wg = blockIdx.x * DMV_WARPS + (threadIdx.x >> 5);
    int u0 = 0, u1 = 0; /* this warp's units (ints: even the head has < 2^31) */
    if (wg < a.W) {
        u0 = (int)(a.nunits * wg / a.W);
        u1 = (int)(a.nunits * (wg + 1) / a.W);
    }
    const uint64_t pol = mv_policy();
    const int uw = a.unit_u4;
    const uint4 *lp = a.w + (size_t)u0 * uw;
    if (threadIdx.x == 0) dmv_stamp(d, 0);
    __shared__ unsigned long long tl_t[3]; /* timeline: start, past the wait, loop start */
    gcu_tl_mark(d.tl, GCU_TL_START);
    if (d.tl && threadIdx.x == 0) tl_t[0] = gcu_tl_now();
    const DmvSmem m = dmv_smem_at(d, dmv_smem);
    dmv_request_gains(d, m);
    const int ring_at = d.ring_at == 3 ? 0 : d.ring_at; /* 3: k_dmv_tma's split request */
    /* weights are static: the copy engine (TMA) can pull a warp's units past its ring into L2
     * while the prologue runs (measured slower: the prologue's own loads queue behind them) */
    if (lane == 0 && d.pf_units > 0) {
        const int p0 = min(u0 + (ring_at == 0 ? RING : 0), u1), n = min(u1 - p0, d.pf_units);
        if (n > 0) gcu_l2_prefetch(a.w + (size_t)p0 * uw, (unsigned)(n * uw * 16));
    }
    MvSlot<KIND, PPS, SBF32> ring[RING];
    if (ring_at == 0) dmv_ring_fill<KIND, PPS, SBF32, RING>(ring, lp, u0, u1, uw, lane, pol);
    gcu_pdl_wait();
    if (threadIdx.x == 0) dmv_stamp(d, 1);
    gcu_tl_mark(d.tl, GCU_TL_RELEASE);
    if (d.tl && threadIdx.x == 0) tl_t[1] = gcu_tl_now();

    dmv_request_inputs(d, m);
    gcu_rows_wait();
    if (ring_at == 1) dmv_ring_fill<KIND, PPS, SBF32, RING>(ring, lp, u0, u1, uw, lane, pol);
    if (d.pro != GCU_PRO_RAW) dmv_prepare_row(d, m, scratch);
    if (threadIdx.x == 0) dmv_stamp(d, 2);
    if (I8) dmv_stage_i8(d, m);
    else dmv_stage(d, m);
    if (ring_at == 2) dmv_ring_fill<KIND, PPS, SBF32, RING>(ring, lp, u0, u1, uw, lane, pol);
    __syncthreads();
    if (threadIdx.x == 0) dmv_stamp(d, 3);
    if (d.tl && threadIdx.x == 0) tl_t[2] = gcu_tl_now();
    const __nv_bfloat16 *sx = m.sx;
    const float *sxsum = m.xsum;
    const int cs = a.cs;

    /* lanes of n-column 0 hold hi, column 1 lo; the other columns are zero */
    const bool bvalid = g < 2, xvalid = t == 0;
    const __nv_bfloat16 *b0 = sx + (size_t)(bvalid ? g : 0) * cs + t * 8;
    int rb = u0 / a.nspan, sp = u0 % a.nspan;
    const __nv_bfloat16 *bp = b0 + sp * SPAN;
    const float *xp = sxsum + sp * PPS;
    /* the integer path: the lane's digits (decode_mv_i8.cuh) */
    const uint4 *d0 = dmv_i8_lane_digits(m.sx, lane);
    const uint4 *dp = d0 + sp * DMV_I8_SPAN_U4;
    const float2 *e0 = (const float2 *)m.isum, *ep = e0 + sp * PPS;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    bool first = true, trig = false;
    for (int base = u0; base < u1; base += RING) {
#pragma unroll
        for (int j = 0; j < RING; j++) {
            if (base + j >= u1) break;
            MvSlot<KIND, PPS, SBF32> &s = ring[j];
            if constexpr (I8) dmv_unit_i8<PPS, SBF32>(s, dp, ep, acc);
            else mv_unit<KIND, PPS, SBF32, true>(s, bp, bvalid, xp, xvalid, a.qoff, acc);
            if (base + j + RING < u1) {
                mv_load_p(s, lp, lane, pol);
                lp += uw;
            } else if (!trig) {
                gcu_pdl_trigger();
                trig = true;
            }
            if constexpr (I8) {
                dp += DMV_I8_SPAN_U4;
                ep += PPS;
            } else {
                bp += SPAN;
                xp += PPS;
            }
            if (threadIdx.x == 0 && base + j == u0) dmv_stamp(d, 4); /* the first unit is in */
            if (++sp == a.nspan || base + j + 1 == u1) {
                float vg[1], vh[1];
                dmv_row_sums<KIND, I8>(acc, vg, vh);
                mv_finish<1>(a, rb, first, wg, lane, vg, vh);
                first = false;
                rb++;
                sp = 0;
                bp = b0;
                xp = sxsum;
                dp = d0;
                ep = e0;
            }
        }
    }
    if (!trig) gcu_pdl_trigger();
    if (d.stamps) {
        if (threadIdx.x == 0) dmv_stamp(d, 5);
        __syncthreads();
        if (threadIdx.x == 0) {
            dmv_stamp(d, 6);
            unsigned long long gt;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gt));
            d.stamps[blockIdx.x * DMV_NSTAMP + 7] = (long long)gt;
        }
    }
    gcu_tl_block_end(d.tl);
    gcu_tl_phases(d.tl, tl_t);
}

template <int KIND, int PPS, bool SBF32, int RING, bool I8>
__global__ void __launch_bounds__(DMV_THREADS, 1) k_dmv(const __grid_constant__ DmvArgs d) {
    extern __shared__ uint4 dmv_smem[];
    __shared__ DmvSum scratch[DMV_SCRATCH];
    dmv_body<KIND, PPS, SBF32, RING, I8>(d, dmv_smem, scratch);
}

/* The residual add alone (one block): h_out = h_in + centred_norm(src; w_add), for decode with
 * research hooks, which must see (and may change) the residual between layers. */
__global__ void __launch_bounds__(DMV_THREADS, 1) k_dmv_resid(const __grid_constant__ DmvArgs d) {
    extern __shared__ uint4 dmv_smem[];
    __shared__ DmvSum scratch[DMV_SCRATCH];
    const DmvSmem m = dmv_smem_at(d, dmv_smem);
    dmv_request_gains(d, m);
    gcu_pdl_wait();
    gcu_pdl_trigger();
    dmv_request_inputs(d, m);
    gcu_rows_wait();
    dmv_residual(d, m, scratch);
}

/* ---- host side --------------------------------------------------------------------------- */

template <int RING, bool I8>
static const void *dmv_pick_r(int kind, int pps, int sbf32) {
    if (kind == GCU_KIND_DENSE) return I8 ? NULL : (const void *)k_dmv<GCU_KIND_DENSE, 1, false, RING, false>;
    switch (pps * 2 + (sbf32 ? 1 : 0)) {
    case 2: return (const void *)k_dmv<GCU_KIND_Q, 1, false, RING, I8>;
    case 3: return (const void *)k_dmv<GCU_KIND_Q, 1, true, RING, I8>;
    case 4: return (const void *)k_dmv<GCU_KIND_Q, 2, false, RING, I8>;
    case 5: return (const void *)k_dmv<GCU_KIND_Q, 2, true, RING, I8>;
    case 8: return (const void *)k_dmv<GCU_KIND_Q, 4, false, RING, I8>;
    case 9: return (const void *)k_dmv<GCU_KIND_Q, 4, true, RING, I8>;
    }
    return NULL;
}
/* i8: the integer path (only MLX 4-bit has one). */
static const void *dmv_pick(int kind, int pps, int sbf32, int ring, int i8 = 0) {
    if (i8) /* fewer registers per unit in flight: rings up to 6 */
        switch (ring) {
        case 2: return dmv_pick_r<2, true>(kind, pps, sbf32);
        case 3: return dmv_pick_r<3, true>(kind, pps, sbf32);
        case 4: return dmv_pick_r<4, true>(kind, pps, sbf32);
        case 5: return dmv_pick_r<5, true>(kind, pps, sbf32);
        default: return dmv_pick_r<6, true>(kind, pps, sbf32);
        }
    return ring <= 2 ? dmv_pick_r<2, false>(kind, pps, sbf32)
                     : ring == 3 ? dmv_pick_r<3, false>(kind, pps, sbf32) : dmv_pick_r<4, false>(kind, pps, sbf32);
}
/* Whether a call takes the integer path: asked for, MLX 4-bit, and groups of at most 64 (the
 * digit sums combined as 256 D0 + D1 stay within int32 up to 64: decode_mv_i8.cuh). */
static int dmv_i8(const gcu_dmv_call *c) {
    return c->i8 && c->m->f.kind == GCU_KIND_Q && c->m->f.bits == 4 && c->m->f.gn <= 64;
}

static int dmv_cs(const gcu_xfmt *f) { return ((f->kx * 2 + 127) / 128 * 128 + 64) / 2; }

extern "C" size_t gcu_dmv_smem(const gcu_mat *m, int pro, int K) {
    const gcu_xfmt *f = &m->f;
    size_t np = (size_t)f->nspan * (f->kind == GCU_KIND_Q ? f->pps : 1), K4 = (size_t)(K + 3) & ~(size_t)3;
    return (size_t)2 * dmv_cs(f) * 2 + ((np + 3) & ~(size_t)3) * 4 +
           (f->kind == GCU_KIND_Q ? (size_t)f->nspan * 16 * 4 : 0) +
           (pro == GCU_PRO_RESID ? 4 * K4 * 4 : pro == GCU_PRO_NORM ? 2 * K4 * 4 : K4 * 4);
}

extern "C" int gcu_dmv_fits(const gcu_mat *m, int pro, int K) {
    return gcu_dmv_smem(m, pro, K) <= DMV_SMEM_MAX && dmv_pick(m->f.kind, m->f.pps, m->sbf32, 2);
}

/* Raises the shared-memory limit of every decode kernel variant once (outside graph capture). */
static glim_status dmv_init(glim_error *err) {
    static int raised;
    if (raised) return GLIM_OK;
    int kinds[2] = {GCU_KIND_Q, GCU_KIND_DENSE}, pps[3] = {1, 2, 4};
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 3; p++)
            for (int f = 0; f < 10; f++) { /* scale type x ring 2..6 */
                const void *fns[8] = {dmv_pick(kinds[k], pps[p], f & 1, 2 + (f >> 1)),
                                      kinds[k] == GCU_KIND_Q ? dmv_chain_kernel(pps[p], f & 1) : NULL,
                                      dmv_pick(kinds[k], pps[p], f & 1, 2 + (f >> 1), 1),
                                      kinds[k] == GCU_KIND_Q ? dmv_dyn_kernel(pps[p], f & 1, 2 + (f >> 1)) : NULL,
                                      dmv_tma_kernel(kinds[k], pps[p], f & 1, 0, 0),
                                      dmv_tma_kernel(kinds[k], pps[p], f & 1, 1, 0),
                                      dmv_tma_kernel(kinds[k], pps[p], f & 1, 1, 1),
                                      dmv_tma_kernel(kinds[k], pps[p], f & 1, 1, 2)};
                for (int i = 0; i < 8; i++) {
                    if (!fns[i]) continue;
                    cudaError_t e = cudaFuncSetAttribute(fns[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                         i == 1 ? DMV_CHAIN_SMEM_MAX
                                                         : i >= 4 ? dmv_tma_smem_cap() : DMV_SMEM_MAX);
                    if (e != cudaSuccess) return gcu_check(e, "decode matvec shared memory", err);
                }
            }
    for (int k = 0; k < 56; k++) { /* the span-major kernels: pps 2, 4 x scale type x the sums' place
                                     * (registers of two sizes; shared memory with 1 or 2 row blocks
                                     * a chunk, each with or without the late ring, the late ones
                                     * also as SPEC 1-4) */
        const int place = k >> 2, pps = 2 << (k & 1), sbf32 = (k >> 1) & 1;
        const void *fn = place >= 10 ? dmv_span_spec_kernel(pps, sbf32, place - 9, 2)
                         : place >= 6 ? dmv_span_spec_kernel(pps, sbf32, place - 5, 1)
                                      : dmv_span_kernel(pps, sbf32, place == 1 ? SPAN_RB_MAX : SPAN_RB_SMALL,
                                                        place >= 2, place == 3 || place == 5 ? 2 : 1,
                                                        place >= 4);
        cudaError_t e = fn ? cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, dmv_tma_smem_cap())
                           : cudaSuccess;
        if (e != cudaSuccess) return gcu_check(e, "decode matvec shared memory", err);
    }
    for (int k = 0; k < 4; k++) { /* GLIM_CUDA_SPAN_AHEAD's: the general LATE one and SPEC 4, 1 or 2 row blocks */
        const void *fn = dmv_span_ahead_kernel(2, 0, k & 1 ? 4 : 0, k & 2 ? 2 : 1);
        cudaError_t e = fn ? cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, dmv_tma_smem_cap())
                           : cudaSuccess;
        if (e != cudaSuccess) return gcu_check(e, "decode matvec shared memory", err);
    }
    cudaError_t e = cudaFuncSetAttribute((const void *)k_dmv_resid,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, DMV_SMEM_MAX);
    if (e != cudaSuccess) return gcu_check(e, "residual add shared memory", err);
    raised = 1;
    return GLIM_OK;
}

/* The kernel arguments of one call; blocks: the grid it wants (<= one per SM), or forced when
 * force_blocks > 0 (the residual add alone runs in one block). */
static glim_status dmv_args(const gcu_dmv_call *c, int force_blocks, DmvArgs *d, int *blocks_out,
                            size_t *smem_out, glim_error *err) {
    const gcu_mat *m = c->m;
    size_t smem = gcu_dmv_smem(m, c->pro, c->K);
    if (!dmv_pick(m->f.kind, m->f.pps, m->sbf32, c->ring) || smem > DMV_SMEM_MAX)
        return glim_fail(err, GLIM_E_UNSUPPORTED, "decode matvec: no kernel for this format or "
                         "width %d (%zu bytes of shared memory, at most %d)", c->K, smem, DMV_SMEM_MAX);
    if (c->K > m->f.K || (c->pro != GCU_PRO_RAW && c->K != m->f.K))
        return glim_fail(err, GLIM_E_ARG, "decode matvec: input width %d for a matrix of width %d",
                         c->K, m->f.K);
    memset(d, 0, sizeof *d);
    MvArgs &a = d->mv;
    a.w = m->w;
    a.nunits = (long long)m->nrb * m->f.nspan;
    a.nspan = m->f.nspan;
    a.unit_u4 = m->unit_bytes / 16;
    a.kx = m->f.kx;
    a.T = 1;
    long long blocks = gcu_sm_count();
    long long need = (a.nunits + DMV_WARPS - 1) / DMV_WARPS;
    if (blocks > need) blocks = need;
    if (force_blocks > 0) blocks = force_blocks;
    a.W = (int)(blocks * DMV_WARPS < a.nunits ? blocks * DMV_WARPS : a.nunits);
    a.epi = c->epi;
    a.out = c->out;
    a.ldo = c->out_rows;
    a.out_rows = c->out_rows;
    a.mult = c->mult;
    a.cap = c->cap;
    a.partial = c->partial;
    a.counters = c->counters;
    a.cs = dmv_cs(&m->f);
    a.fence_sc = c->fence_sc;
    a.qoff = m->f.bits == 8 ? -(16.0f + 16.0f * 16.0f) : -16.0f; /* 16+lo + 16*(16+hi) for 8 bits */
    d->pro = c->pro;
    d->K = c->K;
    d->src = c->src;
    d->h_in = c->h_in;
    d->h_out = c->h_out;
    d->w_add = c->w_add;
    d->eps_add = c->eps_add;
    d->norm_out = c->norm_out;
    d->w_out = c->w_out;
    d->eps_out = c->eps_out;
    d->f = m->f;
    d->pf_units = c->pf_units;
    d->ring_at = c->late_ring < 0 || c->late_ring > 3 ? 0 : c->late_ring;
    d->late_norm = c->late_norm && c->pro != GCU_PRO_RAW; /* cleared off the ring (dmv_plan) */
    d->stamps = c->stamps;
    d->tl = c->tl;
    d->i8 = dmv_i8(c);
    d->defer_merge = c->defer_merge;
    const long long window = (long long)c->diag_window_mb * 65536; /* uint4 in those MB */
    if (window > 0 && window < a.nunits * a.unit_u4 / 2) d->diag_window = window / a.unit_u4 * a.unit_u4;
    d->diag_ring = c->diag_ring;
    const gcu_l2pf *pf = &c->l2pf;
    if (pf->p && pf->n > 0 && pf->bytes > 0) {
        if ((pf->bytes & 15u) || ((uintptr_t)pf->p & 15) || (pf->stride & 15))
            return glim_fail(err, GLIM_E_ARG, "decode matvec: an L2 prefetch of %u-byte pieces %lld bytes apart "
                             "at %p (each must be 16-byte aligned and a multiple of 16 bytes)",
                             pf->bytes, pf->stride, pf->p);
        d->l2pf = *pf;
    }
    if (c->stage_dig) {
        const gcu_xfmt *sf = c->stage_f;
        if (!sf || sf->kind != GCU_KIND_Q || sf->bits != 4 || sf->gn > 64 || c->epi != GCU_EPI_SWIGLU ||
            !c->stage_cnt || sf->K != c->out_rows)
            return glim_fail(err, GLIM_E_ARG, "decode matvec: staging digits needs a SwiGLU product "
                             "feeding an MLX 4-bit consumer (groups <= 64) as wide as its output");
        a.fuse = 2;
        a.span_rbs = 128 / 8; /* a span of the consumer: 128 outputs, 8 per SwiGLU row block */
        a.sf = *sf;
        a.sdig = c->stage_dig;
        a.sex = (float2 *)(c->stage_dig + dmv_i8_ex_offset(*sf));
        a.span_cnt = c->stage_cnt;
    }
    d->pre_dig = c->pre_dig;
    if (d->i8 && c->dyn && c->dyn_ctr && force_blocks <= 0) {
        /* chunks of ~52 units (a row block of a 6656-wide input): pieces of a row block where
         * the input is wider, as many as divide its spans evenly */
        int kp = m->f.nspan / 48 > 1 ? m->f.nspan / 48 : 1;
        while (m->f.nspan % kp) kp--;
        d->kparts = kp;
        d->nchunks = m->nrb * kp;
        d->dyn_ctr = c->dyn_ctr;
        blocks = gcu_sm_count();
        if (c->max_blocks > 0 && blocks > c->max_blocks) blocks = c->max_blocks;
        if (blocks > d->nchunks) blocks = d->nchunks;
        const size_t need = (size_t)d->nchunks * 32 * sizeof(float2);
        if (kp > 1 && need > c->partial_cap)
            return glim_fail(err, GLIM_E_ARG, "decode matvec: %d row-block pieces need %zu bytes of "
                             "merge space, %zu given", d->nchunks, need, c->partial_cap);
    }
    *blocks_out = (int)blocks;
    *smem_out = smem;
    return GLIM_OK;
}

/* The shared-memory ring's geometry for the call (its bytes of shared memory; 0: the call
 * runs elsewhere, on the register ring or in chunks). */
static size_t dmv_tma_plan(const gcu_dmv_call *c, int *slots, int *off, int *chunk) {
    if (!c->tma || (dmv_i8(c) && c->dyn && c->dyn_ctr)) return 0;
    *chunk = c->tma_chunk > 0 ? c->tma_chunk : 1;
    return dmv_tma_geometry(c->m, c->pro, c->K, dmv_cs(&c->m->f), *chunk, c->tma_slots, slots, off);
}

extern "C" size_t gcu_dmv_digits_bytes(const gcu_xfmt *f) {
    return dmv_i8_ex_offset(*f) + dmv_i8_ex_bytes(*f);
}

extern "C" int gcu_dmv_takes_digits(const gcu_dmv_call *c) {
    int slots, off, chunk;
    return c->pro == GCU_PRO_RAW && dmv_i8(c) && c->K == c->m->f.K && dmv_tma_plan(c, &slots, &off, &chunk) > 0;
}

/* The grid of a call whose blocks share the staging in clusters of `want` (k_dmv_tma): rounded
 * up to whole clusters, where the extra blocks own no units (the warps' shares, from the
 * original grid, are unchanged, so the sums and their bits are those without clusters). If the
 * clusters cannot all be resident at once (one block per SM), the call runs without them and
 * says so once on stderr. */
static int dmv_cluster_grid(const void *fn, size_t smem, int blocks, int want, int *cluster) {
    static int told;
    const int nb = (blocks + want - 1) / want * want;
    const int fit = want <= 8 ? gcu_resident(fn, DMV_THREADS, smem, want) : 0;
    if (nb <= gcu_sm_count() && (long long)fit * want >= nb) {
        *cluster = want;
        return nb;
    }
    if (!told) {
        told = 1;
        fprintf(stderr, "glimmer: decode matvec: %d blocks do not fit in resident clusters of %d (at most %d "
                "clusters; sizes 2..8); its staging is not shared\n", blocks, want, fit);
    }
    *cluster = 1;
    return blocks;
}

/* GLIM_CUDA_UNIT_AHEAD (c->unit_ahead 1: loads ahead, LEAN 2; 2: without, LEAN 1): the lean
 * k_dmv_tma for a call on the shared-memory ring planned into d, where one was compiled for it
 * (the integer path, block-owned row blocks, no ring diagnostic); else NULL. */
static const void *dmv_lean_kernel(const gcu_dmv_call *c, const DmvArgs *d) {
    if ((c->unit_ahead != 1 && c->unit_ahead != 2) || !d->i8 || d->bblocks == 0 || c->diag_ring) return NULL;
    return dmv_tma_kernel(c->m->f.kind, c->m->f.pps, c->m->sbf32, 1, 3 - c->unit_ahead);
}

/* GLIM_CUDA_SPAN: the span groups of k_dmv_span among at most W warps (W = DMV_WARPS / its row
 * groups). Balance first: the fewest groups (from 3/4 of W) whose largest share of spans is the
 * least that W groups give (52 spans on 16 warps: 13 of 4, where 16 would leave 12 of them idle
 * a quarter of the time; 156: 16 of 9 or 10). */
static int dmv_span_groups(int nspan, int want, int W) {
    if (want > 0) return want < nspan ? (want < W ? want : W) : nspan;
    if (nspan <= W) return nspan;
    const int most = (nspan + W - 1) / W;
    for (int w = W - W / 4; w < W; w++)
        if ((nspan + w - 1) / w == most) return w;
    return W;
}

/* GLIM_CUDA_SPAN: k_dmv_span's plan for a call on the integer path whose shared-memory ring
 * plan succeeded (decode_mv_span.cu): a block per SM or per row block (with span_even the fewest
 * blocks with the same largest share), each owning whole row blocks. 0 (d untouched) when the
 * kernel cannot take the call. Shared memory: k_dmv_tma's staging area (NORM/RESID's row), the
 * warps' rings, with span_acc their row blocks' sums (a float2 per lane and row), their staging
 * scratch. */
static int dmv_span_plan(const gcu_dmv_call *c, DmvArgs *d, const void **fn, int *blocks, size_t *smem) {
    /* of the ring diagnostics (DmvArgs.diag_ring) it runs 4 (no bytes), the prologue's 6-8 and 9 (an H200's bytes per compute) */
    const int dg = c->diag_ring, diag_ok = dg == 0 || dg == 4 || (dg >= 6 && dg <= 9);
    if (!c->span || !d->i8 || c->pre_dig || d->mv.fuse || !diag_ok || d->diag_window) return 0;
    const gcu_mat *m = c->m;
    const int H = c->span_rows == 2 || c->span_rows == 4 || c->span_rows == 8 ? c->span_rows : 1;
    size_t base = dmv_tma_staging(m, c->pro, c->K, dmv_cs(&m->f));
    const int fits = base != 0;
    /* span_row0: only the row this kernel norms (none for RAW), at offset 0 */
    if (fits && c->span_row0) base = c->pro == GCU_PRO_RAW ? 0 : ((size_t)((c->K + 3) & ~3) * 4 + 127) & ~(size_t)127;
    int nb = gcu_sm_count();
    if (c->max_blocks > 0 && nb > c->max_blocks) nb = c->max_blocks;
    const int most = nb < m->nrb ? nb : m->nrb; /* a block per SM or per row block */
    if (c->span_blocks > 0 && nb > c->span_blocks) nb = c->span_blocks;
    int no = nb; /* owners */
    if (no > m->nrb) no = m->nrb;
    if (c->span_even && no > 0) { /* the same largest share on the fewest owners */
        const int share = (m->nrb + no - 1) / no;
        no = (m->nrb + share - 1) / share;
    }
    nb = no;
    const int rb_max = no > 0 ? (m->nrb + no - 1) / no : 0, per_warp = (rb_max + H - 1) / H;
    const int nw = H * dmv_span_groups(m->f.nspan, c->span_warps, DMV_WARPS / H);
    /* whether an instance takes the call (every row-block and ring choice has one if this does) */
    const void *k = fits && no > 0 ? dmv_span_kernel(m->f.pps, m->sbf32, per_warp, c->span_acc, 1, 0) : NULL;
    const int srows = c->span_acc ? per_warp : 0;
    const size_t acc = (size_t)nw * srows * 32 * 8, scr = (size_t)nw * SPAN_SCRATCH_BYTES;
    /* two row blocks per chunk (one wait and one refill per two; span_chunk 4 or 0, the products
     * of GLIM_CUDA_SPAN_TWO) where two slots of them fit, else one; with the sums in registers,
     * one. With two, a RAW product's rings start at 0: this kernel stages no row for it, so
     * k_dmv_tma's staging area (`base`, 91 KB for down's 19968 columns) is not needed; with one,
     * as before. */
    int rpc = (c->span_chunk == 4 || c->span_chunk == 0) && c->span_acc ? 2 : 1, S = 0;
    size_t off = base;
    if (k && rpc == 2) {
        const size_t off2 = c->pro == GCU_PRO_RAW ? 0 : base;
        S = dmv_span_slots(m, off2, acc + scr, nw, 2, c->tma_slots);
        if (S) off = off2;
        else rpc = 1;
    }
    if (k && rpc == 1) S = dmv_span_slots(m, base, acc + scr, nw, 1, c->tma_slots);
    const size_t slot_bytes = (size_t)2 * rpc * m->unit_bytes;
    /* each warp's sums reach the merge through its ring: 8 float2 per row block */
    if (!S || (size_t)per_warp * 64 > (size_t)S * slot_bytes) return 0;
    /* the instance for the row blocks a chunk and the late ring (sums in shared memory) */
    d->span_late = c->span_late && c->span_acc;
    k = dmv_span_kernel(m->f.pps, m->sbf32, per_warp, c->span_acc, rpc, d->span_late);
    d->span_ahead_run = 0;
    if (d->span_late && c->span_ahead) { /* (NULL for other formats: the plain instance) */
        const void *ka = dmv_span_ahead_kernel(m->f.pps, m->sbf32, 0, rpc);
        if (ka) k = ka, d->span_ahead_run = 1;
    }
    const size_t bytes = off + (size_t)S * nw * slot_bytes + acc + scr;
    *fn = k;
    *blocks = nb;
    *smem = bytes;
    d->span_acc_off = (int)(bytes - acc - scr);
    d->span_scr_off = (int)(bytes - scr);
    d->span_srows = srows;
    d->span_rows = H;
    d->bblocks = nb;
    d->span_warps = nw;
    d->span_fewer = no < most; /* host's note for the launch count: fewer blocks */
    d->tslots = S;
    d->tchunk = 2 * rpc;
    d->span_rpc = rpc;
    d->tring_off = (int)off;
    d->span_row0 = c->span_row0 != 0;
    return 1;
}

/* Everything a launch of the call decides: the kernel, its arguments, grid and shared memory. */
static glim_status dmv_plan(const gcu_dmv_call *c, const void **fn_out, DmvArgs *d, int *blocks, size_t *smem,
                            glim_error *err) {
    glim_status s = dmv_init(err);
    if (s == GLIM_OK) s = dmv_args(c, 0, d, blocks, smem, err);
    if (s != GLIM_OK) return s;
    /* a RESID prologue's residual written over its own input: block 0 writes it while other
     * blocks, some launched later, still read it (session 22 found layer 0's gate/up so) */
    if (c->pro == GCU_PRO_RESID && c->h_out && c->h_out == c->h_in)
        return glim_fail(err, GLIM_E_ARG, "decode matvec: the residual add reads and writes the same "
                         "buffer (h_in == h_out); its blocks would race");
    if (c->pre_dig && !gcu_dmv_takes_digits(c))
        return glim_fail(err, GLIM_E_ARG, "decode matvec: an input staged as digits needs the integer "
                         "path on the shared-memory ring with a raw input of the matrix's width");
    const void *fn = d->nchunks ? dmv_dyn_kernel(c->m->f.pps, c->m->sbf32, c->ring)
                                : dmv_pick(c->m->f.kind, c->m->f.pps, c->m->sbf32, c->ring, d->i8);
    int slots, off, chunk;
    const size_t sm = dmv_tma_plan(c, &slots, &off, &chunk);
    if (sm) { /* else the register ring: the call does not fit the shared-memory one */
        d->tslots = slots;
        d->tchunk = chunk;
        d->tring_off = off;
        fn = dmv_tma_kernel(c->m->f.kind, c->m->f.pps, c->m->sbf32, d->i8, 0);
        *smem = sm;
        /* block-owned row blocks: a warp's ring holds its split partials at the end (64 float2) */
        if (c->block_rows && (size_t)slots * chunk * c->m->unit_bytes >= 64 * sizeof(float2)) {
            if (*blocks > c->m->nrb) *blocks = c->m->nrb;
            d->bblocks = *blocks;
        }
        const void *lean = dmv_lean_kernel(c, d);
        if (lean) fn = lean;
        dmv_span_plan(c, d, &fn, blocks, smem);
    }
    if (!sm) d->late_norm = 0; /* the register ring's prologue (dmv_prepare_row) scales the row */
    d->cluster = 1;
    if (sm && d->i8 && !d->pre_dig && c->cluster > 1 && !d->span_warps)
        *blocks = dmv_cluster_grid(fn, *smem, *blocks, c->cluster, &d->cluster);
    /* k_dmv_tma's uses of its clusters: the shared staging, the row blocks owned together */
    d->stage_cta = c->cluster_own_stage || d->span_warps ? 1 : d->cluster;
    d->cluster_rows = d->bblocks > 0 && d->cluster > 1 && c->cluster_rows && !d->span_warps;
    d->front = c->front_rows;
    /* the flag release (gcu_flag_wait): only k_dmv_tma arrives and waits on a slot, and a
     * boundary whose one side ignored it would hang the other */
    if ((c->flag_arrive || c->flag_wait) && !sm)
        return glim_fail(err, GLIM_E_ARG, "decode matvec: a flag release (GLIM_CUDA_FLAG_WAIT) needs the "
                         "shared-memory ring, which this call does not run on");
    if (c->flag_wait && c->flag_need < 1)
        return glim_fail(err, GLIM_E_ARG, "decode matvec: a flag wait for %d blocks", c->flag_need);
    d->flag_arrive = c->flag_arrive;
    d->flag_wait = c->flag_wait;
    d->flag_need = (unsigned)c->flag_need;
    /* GLIM_CUDA_SPAN_SPEC: the LATE instance without what this call does not use (2 with the
     * timeline on: 1, which keeps it) */
    d->span_spec_run = 0;
    if (c->span_spec && d->span_warps && d->span_late && !d->stamps && !d->diag_ring && !d->flag_wait &&
        !d->flag_arrive && !d->mv.fuse) {
        /* 4 needs the leftover row blocks on the first owners, and every item of the input 8
         * values in range at a 16-byte boundary (4-bit: an item is 8 of a span's 128 columns;
         * span_pair_values); 3 the norm's scale after the loop exactly where there is a row, and
         * no softcap; 2, 3 and 4 no timeline */
        int spec = c->span_spec;
        const gcu_xfmt *f = &c->m->f;
        if (spec == 4 && (!d->front || f->kind != GCU_KIND_Q || f->bits != 4 ||
                          (long long)d->K != 128LL * d->mv.nspan || ((uintptr_t)d->src & 15)))
            spec = 3;
        if (spec >= 3 && (d->late_norm != (d->pro != GCU_PRO_RAW) || d->mv.epi == GCU_EPI_SOFTCAP)) spec = 2;
        if (spec >= 2 && d->tl) spec = 1;
        fn = dmv_span_spec_kernel(f->pps, c->m->sbf32, spec, d->span_rpc);
        d->span_spec_run = spec;
        d->span_ahead_run = 0;
        const void *ka = c->span_ahead && spec == 4 ? dmv_span_ahead_kernel(f->pps, c->m->sbf32, 4, d->span_rpc) : NULL;
        if (ka) fn = ka, d->span_ahead_run = 1;
    }
    *fn_out = fn;
    return GLIM_OK;
}

extern "C" int gcu_dmv_blocks(const gcu_dmv_call *c) {
    const void *fn;
    DmvArgs d;
    int blocks;
    size_t smem;
    glim_error err;
    gcu_dmv_call plain = *c; /* the flags themselves do not change the plan */
    plain.flag_arrive = plain.flag_wait = NULL;
    return dmv_plan(&plain, &fn, &d, &blocks, &smem, &err) == GLIM_OK ? blocks : 0;
}

extern "C" int gcu_dmv_flags_ok(const gcu_dmv_call *c) {
    int slots, off, chunk;
    return gcu_dmv_blocks(c) > 0 && dmv_tma_plan(c, &slots, &off, &chunk) > 0;
}

static long flag_count; /* launches enqueued with a flag wait (gcu_dmv_flag_count) */
extern "C" long gcu_dmv_flag_count(void) { return flag_count; }
static long ahead_count; /* launches enqueued on a lean kernel (gcu_dmv_ahead_count) */
extern "C" long gcu_dmv_ahead_count(void) { return ahead_count; }
static long span_count; /* launches enqueued on the span-major kernel (gcu_dmv_span_count) */
extern "C" long gcu_dmv_span_count(void) { return span_count; }
static long even_count; /* of those, on fewer blocks by span_even or span_blocks (gcu_dmv_even_count) */
extern "C" long gcu_dmv_even_count(void) { return even_count; }
static long two_count; /* of those, two row blocks a chunk (gcu_dmv_two_count) */
extern "C" long gcu_dmv_two_count(void) { return two_count; }
static long late_count; /* of those, on the LATE instance (gcu_dmv_late_count) */
extern "C" long gcu_dmv_late_count(void) { return late_count; }
static long spec_count; /* of those, on its SPEC instance at the level asked for (gcu_dmv_spec_count) */
extern "C" long gcu_dmv_spec_count(void) { return spec_count; }
static long two_spec_count; /* of those, two row blocks a chunk (gcu_dmv_two_spec_count) */
extern "C" long gcu_dmv_two_spec_count(void) { return two_spec_count; }
static long l2pf_count; /* span kernel launches that prefetched into L2 (gcu_dmv_l2pf_count) */
extern "C" long gcu_dmv_l2pf_count(void) { return l2pf_count; }
static long deep_count; /* span kernel launches with a ring of more than 2 slots a warp (gcu_dmv_deep_count) */
extern "C" long gcu_dmv_deep_count(void) { return deep_count; }
static long span_ahead_count; /* span kernel launches on an AHEAD instance (gcu_dmv_span_ahead_count) */
extern "C" long gcu_dmv_span_ahead_count(void) { return span_ahead_count; }

extern "C" glim_status gcu_dmv_launch(const gcu_dmv_call *c, cudaStream_t st, glim_error *err) {
    const void *fn;
    DmvArgs d;
    int blocks;
    size_t smem;
    glim_status s = dmv_plan(c, &fn, &d, &blocks, &smem, err);
    if (s != GLIM_OK) return s;
    void *args[] = {&d};
    s = gcu_check(gcu_launch_cluster(fn, dim3((unsigned)blocks), dim3(DMV_THREADS), smem, st, c->pdl, d.cluster,
                                     args),
                  "decode matvec launch", err);
    if (s == GLIM_OK && d.flag_wait) flag_count++;
    if (s == GLIM_OK && fn == dmv_lean_kernel(c, &d)) ahead_count++; /* (NULL off the lean path) */
    if (s == GLIM_OK && d.span_warps) span_count++;
    if (s == GLIM_OK && d.span_warps && d.span_fewer) even_count++;
    if (s == GLIM_OK && d.span_warps && d.span_rpc == 2) two_count++;
    if (s == GLIM_OK && d.span_warps && d.span_late) late_count++;
    if (s == GLIM_OK && d.span_warps && d.l2pf.n) l2pf_count++;
    if (s == GLIM_OK && d.span_warps && d.tslots > 2) deep_count++;
    if (s == GLIM_OK && d.span_warps && d.span_ahead_run) span_ahead_count++;
    if (s == GLIM_OK && d.span_spec_run == c->span_spec && c->span_spec) {
        spec_count++;
        if (d.span_rpc == 2) two_spec_count++;
    }
    return s;
}

/* The chain's shared memory (DmvChain): the largest step's staging from offset 0, the split
 * row blocks' partials, then the warps' rings of *slots slots of *chunk units (the calls'
 * tma_slots and tma_chunk; ring 2..). 0: the calls cannot share a chain. */
static size_t dmv_chain_geometry(const gcu_dmv_call *c, int n, int *slots, int *chunk, int *merge_off,
                                 int *ring_off) {
    if (n < 1 || n > DMV_CHAIN) return 0;
    size_t base = 0;
    const gcu_mat *m0 = c[0].m;
    for (int i = 0; i < n; i++) {
        const gcu_mat *m = c[i].m;
        const size_t st = dmv_tma_staging(m, c[i].pro, c[i].K, dmv_cs(&m->f));
        if (!c[i].tma || !dmv_i8(&c[i]) || m->f.pps != m0->f.pps || m->sbf32 != m0->sbf32 ||
            m->unit_bytes != m0->unit_bytes || c[i].tma_chunk != c[0].tma_chunk || c[i].tma_slots != c[0].tma_slots ||
            c[i].pre_dig || c[i].dyn || !st || c[i].K > m->f.K || (c[i].pro != GCU_PRO_RAW && c[i].K != m->f.K))
            return 0;
        if (st > base) base = st;
    }
    if (!dmv_chain_kernel(m0->f.pps, m0->sbf32)) return 0;
    *chunk = c[0].tma_chunk > 0 ? c[0].tma_chunk : 1;
    *merge_off = (int)base;
    *ring_off = (int)(base + DMV_CHAIN_MERGE);
    *slots = dmv_tma_slots(m0, (size_t)*ring_off, DMV_CHAIN_SMEM_MAX, *chunk, c[0].tma_slots);
    return *slots ? (size_t)*ring_off + (size_t)*slots * DMV_WARPS * *chunk * m0->unit_bytes : 0;
}

extern "C" int gcu_dmv_chain_ok(const gcu_dmv_call *c, int n) {
    int slots, chunk, merge_off, ring_off;
    return dmv_chain_geometry(c, n, &slots, &chunk, &merge_off, &ring_off) > 0;
}

static long chain_count;
extern "C" long gcu_dmv_chain_count(void) { return chain_count; }

extern "C" glim_status gcu_dmv_chain_launch(const gcu_dmv_call *c, int n, unsigned *bar, cudaStream_t st,
                                            glim_error *err) {
    int slots, chunk, merge_off, ring_off;
    const size_t smem = dmv_chain_geometry(c, n, &slots, &chunk, &merge_off, &ring_off);
    if (!smem)
        return glim_fail(err, GLIM_E_UNSUPPORTED, "decode matvec chain: %d products that do not share the "
                         "integer path's kernel and ring (or more than %d)", n, DMV_CHAIN);
    glim_status s = dmv_init(err);
    if (s != GLIM_OK) return s;
    DmvChain ch;
    memset(&ch, 0, sizeof ch);
    for (int i = 0; i < n && s == GLIM_OK; i++) {
        /* each step's grid and warp ranges as its own kernel's with whole row blocks (so the
         * same bits); the chain's other blocks idle through it */
        int b;
        size_t sm;
        DmvArgs *d = &ch.step[i];
        s = dmv_args(&c[i], 0, d, &b, &sm, err);
        d->tslots = slots;
        d->tchunk = chunk;
        d->tring_off = ring_off;
        d->bblocks = b < c[i].m->nrb ? b : c[i].m->nrb;
        d->cluster = d->stage_cta = 1;
        d->front = c[i].front_rows;
    }
    if (s != GLIM_OK) return s;
    ch.n = n;
    ch.bar = bar;
    ch.merge_off = merge_off;
    /* every block resident at once (one per SM; decode_chain.cu says why not a cooperative
     * launch) */
    const void *fn = dmv_chain_kernel(c[0].m->f.pps, c[0].m->sbf32);
    const int nsm = gcu_sm_count();
    if (gcu_resident(fn, DMV_THREADS, smem, 1) < nsm)
        return glim_fail(err, GLIM_E_UNSUPPORTED, "decode matvec chain: %d blocks of %zu bytes of shared memory "
                         "cannot all be resident", nsm, smem);
    void *args[] = {&ch};
    s = gcu_check(gcu_launch(fn, dim3((unsigned)nsm), dim3(DMV_THREADS), smem, st, c[0].pdl, args),
                  "decode matvec chain launch", err);
    if (s == GLIM_OK) chain_count++;
    return s;
}

extern "C" glim_status gcu_dmv_resid_launch(const gcu_dmv_call *c, cudaStream_t st, glim_error *err) {
    if (c->pro != GCU_PRO_RESID)
        return glim_fail(err, GLIM_E_ARG, "residual add: the call must describe a RESID prologue");
    glim_status s = dmv_init(err);
    DmvArgs d; /* the consumer's arguments: the same shared layout as its matvec */
    int blocks;
    size_t smem;
    if (s == GLIM_OK) s = dmv_args(c, 1, &d, &blocks, &smem, err);
    if (s != GLIM_OK) return s;
    void *args[] = {&d};
    return gcu_check(gcu_launch((const void *)k_dmv_resid, dim3(1), dim3(DMV_THREADS), smem, st, c->pdl, args),
                     "residual add launch", err);
}

/* ---- test wrappers ----------------------------------------------------------------------- */

extern "C" void gcu_test_dmv_call(const gcu_test_dmv *p, const gcu_mat *m, const float *src, const float *h_in,
                                  float *h_out, const float *w_add, const float *w_out, float *out, int out_rows,
                                  float2 *part, size_t part_bytes, int *cnt, gcu_dmv_call *c) {
    memset(c, 0, sizeof *c);
    c->m = m;
    c->pro = p->pro;
    c->K = p->K;
    c->src = src;
    c->h_in = h_in;
    c->h_out = p->pro == GCU_PRO_RESID ? h_out : NULL;
    c->w_add = w_add;
    c->eps_add = p->eps_add;
    c->norm_out = p->out_centered ? GCU_NORM_CENTERED : GCU_NORM_PLAIN;
    c->w_out = w_out;
    c->eps_out = p->eps_out;
    c->epi = p->epi;
    c->out = out;
    c->out_rows = out_rows;
    c->mult = p->mult;
    c->cap = p->cap;
    c->partial = part;
    c->partial_cap = part_bytes;
    c->counters = cnt;
    c->ring = p->ring;
    c->late_ring = p->late_ring;
    c->i8 = p->i8;
    c->dyn = p->dyn;
    c->max_blocks = p->max_blocks;
    c->tma = p->tma;
    c->tma_slots = p->tma_slots;
    c->tma_chunk = p->tma_chunk;
    c->defer_merge = p->defer_merge;
    c->cluster = p->cluster;
    c->cluster_own_stage = p->cluster_own_stage;
    c->block_rows = p->block_rows;
    c->cluster_rows = p->cluster_rows;
    c->front_rows = p->front_rows;
    c->span = p->span;
    c->span_warps = p->span_warps;
    c->span_acc = p->span_acc;
    c->span_rows = p->span_rows;
    c->span_even = p->span_even;
}

extern "C" glim_status gcu_test_upload(float **d, const float *h, size_t n, glim_error *err) {
    *d = NULL;
    if (!h) return GLIM_OK;
    glim_status s = gcu_check(cudaMalloc((void **)d, sizeof(float) * (n ? n : 1)), "alloc", err);
    if (s == GLIM_OK) s = gcu_check(cudaMemcpy(*d, h, sizeof(float) * n, cudaMemcpyHostToDevice), "copy", err);
    return s;
}

extern "C" glim_status gcu_test_decode_matvec(const glim_matrix *W, const glim_matrix *W2,
                                              const gcu_test_dmv *p, float *out, float *h_out,
                                              glim_error *err) {
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "no CUDA device");
    gcu_mat m;
    memset(&m, 0, sizeof m);
    gcu_xfmt f;
    const int swiglu = p->epi == GCU_EPI_SWIGLU;
    int sbf32, K = p->K, rows = (int)W->rows, tiled = swiglu ? 16 * ((rows + 7) / 8) : rows;
    glim_status s = gcu_mat_format_of(W, &f, &sbf32, err);
    if (s != GLIM_OK) return s;
    gcu_mat_geometry(&m, &f, sbf32, tiled);
    gcu_mat_pair pair = {W, W2};
    float *src = NULL, *hin = NULL, *wa = NULL, *wo = NULL, *hout = NULL, *dout = NULL;
    float2 *part = NULL;
    int *cnt = NULL, *dyn = NULL;
    const size_t part_bytes = gcu_mv_partial_bytes(gcu_sm_count(), 2);
    float *first = (float *)malloc(sizeof(float) * (rows > 0 ? rows : 1));
    if (!first) return glim_fail(err, GLIM_E_NOMEM, "out of host memory");
    if ((s = gcu_mat_upload(&m, swiglu ? gcu_rows_swiglu : gcu_rows_plain,
                                swiglu ? (void *)&pair : (void *)W, err)) ||
        (s = gcu_test_upload(&src, p->src, (size_t)K, err)) || (s = gcu_test_upload(&hin, p->h_in, (size_t)K, err)) ||
        (s = gcu_test_upload(&wa, p->w_add, (size_t)K, err)) || (s = gcu_test_upload(&wo, p->w_out, (size_t)K, err)) ||
        (s = gcu_check(cudaMalloc((void **)&hout, sizeof(float) * K), "alloc", err)) ||
        (s = gcu_check(cudaMemset(hout, 0xff, sizeof(float) * K), "poison", err)) ||
        (s = gcu_check(cudaMalloc((void **)&dout, sizeof(float) * rows), "alloc", err)) ||
        (s = gcu_check(cudaMemset(dout, 0xff, sizeof(float) * rows), "poison", err)) ||
        (s = gcu_check(cudaMalloc((void **)&part, part_bytes), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&cnt, sizeof(int) * m.nrb), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&dyn, 2 * sizeof(int)), "alloc", err)) ||
        (s = gcu_check(cudaMemset(dyn, 0, 2 * sizeof(int)), "memset", err)) ||
        (s = gcu_check(cudaMemset(cnt, 0, sizeof(int) * m.nrb), "memset", err)))
        goto out;
    {
        gcu_dmv_call c;
        gcu_test_dmv_call(p, &m, src, hin, hout, wa, wo, dout, rows, part, part_bytes, cnt, &c);
        c.pf_units = 2;
        c.dyn_ctr = dyn;
        if (c.tma) { /* the test is of k_dmv_tma: an error, not the register ring, if it cannot run */
            int slots, off, chunk;
            if (!dmv_tma_plan(&c, &slots, &off, &chunk)) {
                s = glim_fail(err, GLIM_E_UNSUPPORTED, "decode matvec: the shared-memory ring does not fit");
                goto out;
            }
        }
        if (c.span) { /* a test of the span-major kernel: an error if another would run */
            const void *fn;
            DmvArgs d;
            int blocks;
            size_t smem;
            if ((s = dmv_plan(&c, &fn, &d, &blocks, &smem, err)) != GLIM_OK) goto out;
            if (!d.span_warps) {
                s = glim_fail(err, GLIM_E_UNSUPPORTED, "decode matvec: the span-major kernel cannot take this call");
                goto out;
            }
        }
        if (c.cluster > 1) { /* likewise a test of clusters: an error if the launch would run without */
            const void *fn;
            DmvArgs d;
            int blocks;
            size_t smem;
            if ((s = dmv_plan(&c, &fn, &d, &blocks, &smem, err)) != GLIM_OK) goto out;
            if (d.i8 && d.cluster != c.cluster) { /* formats off the integer path run unshared */
                s = glim_fail(err, GLIM_E_UNSUPPORTED, "decode matvec: clusters of %d do not run here "
                              "(%d blocks)", c.cluster, blocks);
                goto out;
            }
        }
        /* twice: the second run checks that the merge counters were left at zero and that
         * the order in which warps finish (different each run) changes no bit */
        for (int rep = 0; rep < 2 && s == GLIM_OK; rep++) {
            if ((s = gcu_dmv_launch(&c, 0, err)) == GLIM_OK) s = gcu_check(cudaDeviceSynchronize(), "decode matvec", err);
            if (s == GLIM_OK)
                s = gcu_check(cudaMemcpy(rep ? out : first, dout, sizeof(float) * rows, cudaMemcpyDeviceToHost),
                              "copy", err);
            if (s == GLIM_OK && rep == 0)
                s = gcu_check(cudaMemset(dout, 0xff, sizeof(float) * rows), "poison", err);
        }
        if (s == GLIM_OK && memcmp(first, out, sizeof(float) * rows) != 0)
            s = glim_fail(err, GLIM_E_BACKEND, "decode matvec: two runs of the same product differ");
        if (s == GLIM_OK && h_out)
            s = gcu_check(cudaMemcpy(h_out, hout, sizeof(float) * K, cudaMemcpyDeviceToHost), "copy", err);
    }
out:
    cudaFree(m.w), cudaFree(src), cudaFree(hin), cudaFree(wa), cudaFree(wo), cudaFree(hout);
    cudaFree(dout), cudaFree(part), cudaFree(cnt), cudaFree(dyn);
    free(first);
    return s;
}
