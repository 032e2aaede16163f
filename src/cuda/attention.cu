/* attention.cu: attention of each query token over the bf16 KV cache, GQA (one block serves
 * the G = H/Hkv query heads of one kv head), split across blocks along the keys for long
 * contexts (flash-decoding): each block keeps a running max / sum / weighted V over tiles of 64
 * keys; the last block of a (token, kv head) to finish merges the splits in a fixed order (in
 * decode, the last few to finish, one query head each: gcu_attn_call.pmerge; in the decode
 * instance SPEC 3, the default, the first few, from partials that flag their own arrival:
 * at_finish_poll), applies the
 * sigmoid output gate and, when the slice is whole spans, stages its part of the o_proj input.
 * Sliding layers see keys pos-W+1..pos of a ring of R rows; full layers 0..pos.
 * Decode (fused): q/k norm, q scale and RoPE are done here, and the block holding the newest
 * key writes it (and v) into the cache first. Scores in fp32 from fp32 q and bf16 k; on the
 * tensor cores (gcu_attn_call.mma) q and the probabilities enter as bf16 hi + lo (16 bits of
 * mantissa), K and V as they are, with fp32 sums.
 * Each tile's keys and values come into shared memory by asynchronous copies, one round trip
 * per tile: read from global memory one group at a time they were a chain of ~80 dependent
 * loads per tile, 61 us per layer at 4k keys (bench/RESULTS.md v7). */
#include "cuda/rope_qk.cuh"

#define AT_WARPS (GCU_ATT_THREADS / 32)
#define AT_MAXC 4 /* (G*D/4) / threads: G*D <= 4096 */
#define AT_FEW 8 /* tiles with at most this many keys score one warp per (head, key) */

#define AT_SMEM_MAX (200 * 1024)
#define AT_PROW (GCU_ATT_TILE + 8) /* bf16 per row of the probabilities' hi / lo (mma path): rows
                                    * 4 banks apart, so a fragment's 8 rows hit 32 banks */
#define AT_BATCH 4 /* partials of one thread the merge has in flight together (outputs < threads) */
#define AT_MLOADS 12 /* the same with several outputs per thread: loads in flight over all of them */

/* Shared memory: q [G*D], the merge's partial sums [4*threads], the tile's keys and values
 * [TILE] rows each (the cache's bytes, rows padded by 16 bytes so that lanes reading different
 * rows hit different banks), scores [G*TILE], m, l, corr [G], the newest k and v [D], a flag,
 * then the merge's per-(split, head) max / weight and sum [nsplit*G] each, then (mma path) q's
 * fragments [D/16][32 lanes][8 words] and the probabilities' hi and lo [16][AT_PROW] bf16 each.
 * at_smem_floats (host) sizes it for G = H/Hkv. */
struct AtSmem {
    float *qs, *red, *S, *m, *l, *corr, *kbuf, *vbuf, *mw, *ml;
    uint4 *qa;                   /* mma path: q as the scores' A fragments, hi then lo */
    __nv_bfloat16 *ph, *pl;      /* mma path: the tile's probabilities [16][AT_PROW], hi and lo */
    char *kt0, *vt0, *kt1, *vt1; /* two tiles (one consumed while the next arrives), or one twice */
    int rowb; /* bytes from one tile row to the next */
    int *flag;
};

__host__ __device__ __forceinline__ int at_row_bytes(int D, int kv32) { return D * (kv32 ? 4 : 2) + 16; }

__device__ __forceinline__ AtSmem at_smem(float *base, int G, int D, int nsplit, int kv32, int tiles2) {
    AtSmem s;
    s.qs = base;
    s.red = s.qs + G * D; /* 16-byte aligned: D % 8 == 0 */
    s.rowb = at_row_bytes(D, kv32);
    s.kt0 = (char *)(s.red + 4 * GCU_ATT_THREADS);
    s.vt0 = s.kt0 + GCU_ATT_TILE * s.rowb;
    s.kt1 = tiles2 ? s.vt0 + GCU_ATT_TILE * s.rowb : s.kt0;
    s.vt1 = tiles2 ? s.kt1 + GCU_ATT_TILE * s.rowb : s.vt0;
    s.S = (float *)(s.vt1 + GCU_ATT_TILE * s.rowb);
    s.m = s.S + G * GCU_ATT_TILE;
    s.l = s.m + G;
    s.corr = s.l + G;
    s.kbuf = s.corr + G;
    s.vbuf = s.kbuf + D;
    s.flag = (int *)(s.vbuf + D);
    s.mw = (float *)(s.flag + 4);
    s.ml = s.mw + G * nsplit;
    s.qa = (uint4 *)(((uintptr_t)(s.ml + G * nsplit) + 15) & ~(uintptr_t)15);
    s.ph = (__nv_bfloat16 *)(s.qa + (D / 16) * 32 * 2);
    s.pl = s.ph + 16 * AT_PROW;
    return s;
}
static size_t at_smem_floats(int G, int D, int nsplit, int kv32, int tiles2) {
    return (size_t)G * D + 4 * GCU_ATT_THREADS +
           (tiles2 ? 4 : 2) * GCU_ATT_TILE * (size_t)at_row_bytes(D, kv32) / 4 +
           (size_t)G * GCU_ATT_TILE + 3 * G + 2 * D + 4 + 2 * (size_t)G * nsplit +
           4 + (size_t)(D / 16) * 32 * 8 + 16 * AT_PROW; /* alignment, q's fragments, P hi + lo */
}

/* ---- the tile on the tensor cores (mma.m16n8k16, bf16 in, fp32 sums) ----------------------
 * Rows of A and of the accumulators are query heads (16, those past G zero), the scores' n the
 * tile's 64 keys (warp w: keys 8w..8w+7), P V's n the head dimension (warp w: columns 8w.. and
 * 8(w+8)..). Lane roles as in gcu_mma: g = lane / 4 (a row, or B's column), t = lane % 4. */

/* Whether the block's tiles go on the tensor cores (block-uniform): shapes the fragments cover,
 * and a split of at least AT_MMA_MIN keys (a handful, as at context 0, costs the whole tile's
 * fix-ups and barriers on the tensor cores; the fp32 path walks only the keys there are). */
#define AT_MMA_MIN 16
__device__ __forceinline__ bool at_use_mma(const gcu_attn_call &a, int G, int nkeys) {
    return a.mma && !a.kv32 && a.D % 16 == 0 && a.D <= 128 && G <= 16 && nkeys >= AT_MMA_MIN;
}

/* q (sm.qs, fp32) as A fragments, once per block: thread (k step ks, lane) packs rows g and g+8,
 * columns 16 ks + 2t (+1) and + 8 (+9), hi then lo. Zero rows past G. */
__device__ void at_q_fragments(const AtSmem &sm, int G, int D) {
    const int ks = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    if (ks >= D / 16) return;
    uint32_t hi[4], lo[4];
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const int h = g + (r & 1) * 8, col = 16 * ks + 2 * t + (r >> 1) * 8;
        const float x0 = h < G ? sm.qs[h * D + col] : 0.0f, x1 = h < G ? sm.qs[h * D + col + 1] : 0.0f;
        uint32_t h0, l0, h1, l1;
        gcu_split(x0, &h0, &l0);
        gcu_split(x1, &h1, &l1);
        hi[r] = h0 | h1 << 16;
        lo[r] = l0 | l1 << 16;
    }
    sm.qa[(ks * 32 + lane) * 2] = make_uint4(hi[0], hi[1], hi[2], hi[3]);
    sm.qa[(ks * 32 + lane) * 2 + 1] = make_uint4(lo[0], lo[1], lo[2], lo[3]);
}

/* Scores of one tile (buffer b): warp w's 8 keys against the 16 rows of q, hi and lo. */
__device__ void at_scores_mma(const gcu_attn_call &a, const AtSmem &sm, int b, int G, int tile0, int k1) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3, D = a.D;
    /* B column g = key 8w + g: the bf16 pair (d 16 ks + 2t, +1) and the one 8 further */
    const char *kr = (b ? sm.kt1 : sm.kt0) + (8 * warp + g) * sm.rowb + 4 * t;
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int ks = 0; ks < D / 16; ks++) {
        const uint4 ah = sm.qa[(ks * 32 + lane) * 2], al = sm.qa[(ks * 32 + lane) * 2 + 1];
        const uint32_t b0 = *(const uint32_t *)(kr + 32 * ks), b1 = *(const uint32_t *)(kr + 32 * ks + 16);
        gcu_mma(c, ah.x, ah.y, ah.z, ah.w, b0, b1);
        gcu_mma(c, al.x, al.y, al.z, al.w, b0, b1);
    }
#pragma unroll
    for (int e = 0; e < 4; e++) { /* c: (row g, key 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1) */
        const int h = g + (e >> 1) * 8, kl = 8 * warp + 2 * t + (e & 1);
        if (h < G) sm.S[h * GCU_ATT_TILE + kl] = tile0 + kl < k1 ? c[e] * a.scale : -INFINITY;
    }
}

/* o (rows g, g+8 of warp w's two column tiles, as acc[nt][4]) = o * corr + P V over the tile
 * (buffer b); P from sm.ph / sm.pl, V's B fragments by ldmatrix.trans from the tile rows. */
__device__ void at_pv_mma(const gcu_attn_call &a, const AtSmem &sm, int b, int G, float acc[2][4]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3, D = a.D;
    const float cg = g < G ? sm.corr[g] : 0.0f, cg8 = g + 8 < G ? sm.corr[g + 8] : 0.0f;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        acc[i][0] *= cg;
        acc[i][1] *= cg;
        acc[i][2] *= cg8;
        acc[i][3] *= cg8;
    }
    const int ntiles = D / 8, nt0 = warp, nt1 = warp + AT_WARPS < ntiles ? warp + AT_WARPS : warp;
    if (nt0 >= ntiles) return;
    /* ldmatrix x4: matrix m = lane / 8 takes keys 8 (m & 1) + lane % 8 of the k step at column
     * tile m < 2 ? nt0 : nt1; its registers are then B's b0, b1 for nt0 and for nt1 */
    const int m = lane >> 3, key = 8 * (m & 1) + (lane & 7), col = 8 * (m < 2 ? nt0 : nt1);
    const unsigned vaddr = gcu_smem_addr((b ? sm.vt1 : sm.vt0) + key * sm.rowb + col * 2);
    const uint32_t *ph = (const uint32_t *)sm.ph, *pl = (const uint32_t *)sm.pl;
#pragma unroll
    for (int ks = 0; ks < GCU_ATT_TILE / 16; ks++) {
        /* A: rows g, g+8, keys 16 ks + 2t (+1) and + 8 (+9), words of AT_PROW / 2 per row */
        const int w0 = g * (AT_PROW / 2) + 8 * ks + t, w8 = w0 + 8 * (AT_PROW / 2);
        const uint32_t h0 = ph[w0], h1 = ph[w8], h2 = ph[w0 + 4], h3 = ph[w8 + 4];
        const uint32_t l0 = pl[w0], l1 = pl[w8], l2 = pl[w0 + 4], l3 = pl[w8 + 4];
        uint32_t r0, r1, r2, r3;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                     : "r"(vaddr + (unsigned)(16 * ks * sm.rowb)));
        gcu_mma(acc[0], h0, h1, h2, h3, r0, r1);
        gcu_mma(acc[0], l0, l1, l2, l3, r0, r1);
        if (nt1 != nt0) {
            gcu_mma(acc[1], h0, h1, h2, h3, r2, r3);
            gcu_mma(acc[1], l0, l1, l2, l3, r2, r3);
        }
    }
}

/* The tile loop's o in the fp32 path's layout (thread: float4 idx = tid + c * threads of
 * [G][D]) through sm.qs, which q no longer needs once its fragments are made. */
__device__ void at_pv_mma_out(const gcu_attn_call &a, const AtSmem &sm, int G, const float acc[2][4],
                              float4 o[AT_MAXC]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3, D = a.D;
    const int ntiles = D / 8;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int nt = warp + i * AT_WARPS;
        if (nt >= ntiles) break;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int h = g + (e >> 1) * 8, d = 8 * nt + 2 * t + (e & 1);
            if (h < G) sm.qs[h * D + d] = acc[i][e];
        }
    }
    __syncthreads();
    const int D4 = D / 4;
#pragma unroll
    for (int c = 0; c < AT_MAXC; c++) {
        const int idx = threadIdx.x + c * GCU_ATT_THREADS;
        if (idx / D4 >= G) break;
        o[c] = ((const float4 *)sm.qs)[idx];
    }
    __syncthreads();
}

/* Requests keys and values [tile0, tile0 + nv) of kv head kvh into tile buffer b (asynchronous
 * copies of 16 bytes, committed as one group: gcu_cp_wait_block completes it; nv 0: an empty
 * group). W128 (the decode instance: D 128, a bf16 cache): a whole tile's 2 x 64 rows x 16 copies
 * are 8 a thread, unrolled and predicated on the row, straight-line: the loop to 2 nv (16 nv)
 * was unrolled 4-fold with its remainder, ~350 instructions a copy, and the run path jumped over
 * one or two such copies per tile (ncu, session 35; each a cold line, bench/icache_probe.cu).
 * The ring's row: tile0 % R once, then wrapped by one subtraction (a tile's nv <= R keys are
 * distinct rows). The same copies as the loop's: the same bits. Its rows past nv are written
 * zero by the same copies (source size 0) where nv > 0, so that the tensor cores' whole tile
 * needs no zeroing after the wait (at_tiles: at ctx 0 ~31 two-byte stores a thread on the
 * critical path, the first tile being requested before the PDL wait). */
template <bool W128 = false>
__device__ __forceinline__ void at_tile_request(const gcu_attn_call &a, const AtSmem &sm, int kvh,
                                                int tile0, int nv, int b) {
    if constexpr (W128) {
        constexpr int RB = 128 * 2, C16 = RB / 16, PER = GCU_ATT_TILE * C16; /* a row's bytes, its copies, a tile's */
        static_assert(2 * PER % GCU_ATT_THREADS == 0 && PER % GCU_ATT_THREADS == 0, "whole rounds, K then V");
        char *kd = b ? sm.kt1 : sm.kt0, *vd = b ? sm.vt1 : sm.vt0;
        const int row0 = tile0 % a.R;
#pragma unroll
        for (int k = 0; k < 2 * PER / GCU_ATT_THREADS; k++) {
            constexpr int KR = PER / GCU_ATT_THREADS; /* rounds of keys, then as many of values */
            const bool v = k >= KR;
            const int r = threadIdx.x + (v ? k - KR : k) * GCU_ATT_THREADS, kl = r / C16, c = r % C16;
            const int row = row0 + kl >= a.R ? row0 + kl - a.R : row0 + kl;
            const char *src = (const char *)(v ? a.vc : a.kc) + ((size_t)row * a.Hkv + kvh) * RB + c * 16;
            gcu_cp_async16_zfill((v ? vd : kd) + kl * sm.rowb + c * 16, src, kl < nv, nv > 0);
        }
        gcu_cp_commit();
        return;
    }
    const int rb = a.D * (a.kv32 ? 4 : 2), c16 = rb / 16, per = nv * c16;
    for (int i = threadIdx.x; i < 2 * per; i += GCU_ATT_THREADS) {
        const int v = i >= per, r = v ? i - per : i, kl = r / c16, c = r % c16;
        const char *src = (const char *)(v ? a.vc : a.kc) +
                          ((size_t)((tile0 + kl) % a.R) * a.Hkv + kvh) * rb + (size_t)c * 16;
        gcu_cp_async16((v ? (b ? sm.vt1 : sm.vt0) : (b ? sm.kt1 : sm.kt0)) + kl * sm.rowb + c * 16, src);
    }
    gcu_cp_commit();
}

/* Scores of one tile (its keys in the tile rows): warp (kg, hg) takes keys kg*32+lane and heads
 * hg, hg+4, ... newest >= 0: that key is not read from the cache but from kbuf (this block's own
 * copy, rounded as the cache rounds it), so blocks that do not write the cache need not wait
 * for it. */
template <bool KV32>
__device__ void at_scores(const gcu_attn_call &a, const AtSmem &sm, int b, int G, int tile0, int k1,
                          int newest) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, D = a.D;
    const int kg = warp & 1, hg = warp >> 1;
    const int kl = kg * 32 + lane, j = tile0 + kl;
    const bool valid = j < k1, own = j == newest;
    const char *kr = (b ? sm.kt1 : sm.kt0) + kl * sm.rowb;
    for (int hc = 0; hc < G; hc += 16) {
        float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int d8 = 0; valid && d8 < D / 8; d8++) {
            float kf[8];
            if (own) {
#pragma unroll
                for (int e = 0; e < 8; e++) kf[e] = sm.kbuf[d8 * 8 + e];
            } else if (KV32) {
                const float4 k0 = *(const float4 *)(kr + d8 * 32), k1v = *(const float4 *)(kr + d8 * 32 + 16);
                kf[0] = k0.x, kf[1] = k0.y, kf[2] = k0.z, kf[3] = k0.w;
                kf[4] = k1v.x, kf[5] = k1v.y, kf[6] = k1v.z, kf[7] = k1v.w;
            } else {
                const uint4 kv = *(const uint4 *)(kr + d8 * 16);
                kf[0] = gcu_bf16lo(kv.x), kf[1] = gcu_bf16hi(kv.x), kf[2] = gcu_bf16lo(kv.y);
                kf[3] = gcu_bf16hi(kv.y), kf[4] = gcu_bf16lo(kv.z), kf[5] = gcu_bf16hi(kv.z);
                kf[6] = gcu_bf16lo(kv.w), kf[7] = gcu_bf16hi(kv.w);
            }
#pragma unroll
            for (int m = 0; m < 4; m++) {
                int h = hc + hg + 4 * m;
                if (h >= G) break;
                const float4 *q = (const float4 *)(sm.qs + h * D + d8 * 8);
                float4 q0 = q[0], q1 = q[1];
                s[m] += q0.x * kf[0] + q0.y * kf[1] + q0.z * kf[2] + q0.w * kf[3] +
                        q1.x * kf[4] + q1.y * kf[5] + q1.z * kf[6] + q1.w * kf[7];
            }
        }
#pragma unroll
        for (int m = 0; m < 4; m++) {
            int h = hc + hg + 4 * m;
            if (h < G) sm.S[h * GCU_ATT_TILE + kg * 32 + lane] = valid ? s[m] * a.scale : -INFINITY;
        }
    }
}

/* Scores of a tile with few keys (nv <= AT_FEW): one warp per (head, key) pair, the lanes
 * splitting the head dimension, so that a lone new key costs a few shuffles rather than one
 * thread walking G x D products. Keys past nv get -inf, as at_scores leaves them. */
__device__ void at_scores_few(const gcu_attn_call &a, const AtSmem &sm, int kvh, int G, int tile0,
                              int nv, int newest) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, D = a.D;
    for (int p = warp; p < G * nv; p += AT_WARPS) {
        const int h = p / nv, kl = p % nv, j = tile0 + kl;
        const size_t kro = ((size_t)(j % a.R) * a.Hkv + kvh) * D;
        float acc = 0.0f;
        for (int d = lane; d < D; d += 32) {
            float kv = j == newest ? sm.kbuf[d]
                       : a.kv32 ? ((const float *)a.kc)[kro + d]
                                : __bfloat162float(((const __nv_bfloat16 *)a.kc)[kro + d]);
            acc += sm.qs[h * D + d] * kv;
        }
        acc = gcu_warp_sum(acc);
        if (lane == 0) sm.S[h * GCU_ATT_TILE + kl] = acc * a.scale;
    }
    for (int i = threadIdx.x; i < G * GCU_ATT_TILE; i += GCU_ATT_THREADS)
        if (i % GCU_ATT_TILE >= nv) sm.S[i] = -INFINITY;
}

/* Online softmax over the tile's scores; S becomes probabilities (relative to the new max), and
 * on the mma path they also go to sm.ph / sm.pl as bf16 hi + lo. */
__device__ void at_softmax(const AtSmem &sm, int G, bool mma) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int h = warp; h < G; h += AT_WARPS) {
        float *row = sm.S + h * GCU_ATT_TILE;
        float v0 = row[lane], v1 = row[lane + 32];
        float mo = sm.m[h], mn = fmaxf(mo, gcu_warp_max(fmaxf(v0, v1)));
        float corr = mo == -INFINITY ? 0.0f : expf(mo - mn);
        float p0 = v0 == -INFINITY ? 0.0f : expf(v0 - mn), p1 = v1 == -INFINITY ? 0.0f : expf(v1 - mn);
        row[lane] = p0;
        row[lane + 32] = p1;
        if (mma) {
            uint32_t h0, l0, h1, l1;
            gcu_split(p0, &h0, &l0);
            gcu_split(p1, &h1, &l1);
            unsigned short *ph = (unsigned short *)sm.ph + h * AT_PROW, *pl = (unsigned short *)sm.pl + h * AT_PROW;
            ph[lane] = (unsigned short)h0, pl[lane] = (unsigned short)l0;
            ph[lane + 32] = (unsigned short)h1, pl[lane + 32] = (unsigned short)l1;
        }
        float sum = gcu_warp_sum(p0 + p1);
        __syncwarp();
        if (lane == 0) {
            sm.l[h] = sm.l[h] * corr + sum;
            sm.m[h] = mn;
            sm.corr[h] = corr;
        }
    }
}

/* The weighted sum of the nsp splits' outputs for this thread's NC outputs (float4 idx = tid +
 * c * threads, c < NC): the loads of AT_MLOADS / NC splits x NC outputs in flight together, so a
 * thread with two outputs (16 heads of 128) waits 128 / 6 round trips for 128 splits, not
 * 2 x 128 / AT_BATCH. Split order and per-output sums as the one-output loop, so the same bits. */
template <int NC>
__device__ __forceinline__ void at_merge_outputs(const float *base, size_t pstride, const AtSmem &sm, int G,
                                                 int D4, int nsp, float4 o[AT_MAXC]) {
    constexpr int SB = NC >= 3 ? 2 : AT_MLOADS / NC; /* splits per batch (3-4 outputs: registers) */
    int hc[NC];
    float4 acc[NC];
#pragma unroll
    for (int c = 0; c < NC; c++) {
        hc[c] = ((int)threadIdx.x + c * GCU_ATT_THREADS) / D4;
        acc[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    for (int s0 = 0; s0 < nsp; s0 += SB) {
        float4 v[SB][NC];
#pragma unroll
        for (int i = 0; i < SB; i++)
#pragma unroll
            for (int c = 0; c < NC; c++)
                if (s0 + i < nsp)
                    v[i][c] = __ldcg((const float4 *)(base + (s0 + i) * pstride) + threadIdx.x + c * GCU_ATT_THREADS);
#pragma unroll
        for (int i = 0; i < SB; i++) {
            if (s0 + i >= nsp) break;
#pragma unroll
            for (int c = 0; c < NC; c++) {
                const float e = sm.mw[(s0 + i) * G + hc[c]];
                acc[c].x += v[i][c].x * e;
                acc[c].y += v[i][c].y * e;
                acc[c].z += v[i][c].z * e;
                acc[c].w += v[i][c].w * e;
            }
        }
    }
#pragma unroll
    for (int c = 0; c < NC; c++) o[c] = acc[c];
}

/* The last block of a (token, kv head[, head group]) merges the nsp splits' partials at base
 * (o [G*D], m [G], l [G] each, pstride apart) into o (this thread's outputs, as the tile loop
 * holds them) and sm.l (the merged sums). Every load is issued in parallel: the maxima and sums
 * of all splits in one round trip, then the weighted outputs in batches of AT_BATCH splits,
 * spread over all threads when the outputs are fewer than the threads (parts summed in order
 * through sm.red). Deterministic: fixed order everywhere. */
__device__ void at_merge(const float *base, size_t pstride, const AtSmem &sm, int G, int D, int nsp,
                         float4 o[AT_MAXC]) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, D4 = D / 4;
    for (int i = tid; i < nsp * G; i += GCU_ATT_THREADS) {
        const int s = i / G, h = i % G;
        sm.mw[i] = __ldcg(base + s * pstride + G * D + h);
        sm.ml[i] = __ldcg(base + s * pstride + G * D + G + h);
    }
    __syncthreads();
    for (int h = warp; h < G; h += AT_WARPS) { /* mw becomes each split's weight exp(m - M) */
        float M = -INFINITY;
        for (int s = lane; s < nsp; s += 32) M = fmaxf(M, sm.mw[s * G + h]);
        M = gcu_warp_max(M);
        float L = 0.0f;
        for (int s = lane; s < nsp; s += 32) {
            const float e = expf(sm.mw[s * G + h] - M);
            sm.mw[s * G + h] = e;
            L += sm.ml[s * G + h] * e;
        }
        L = gcu_warp_sum(L);
        if (lane == 0) sm.l[h] = L;
    }
    __syncthreads();
    const int nout = G * D4, P = nout < GCU_ATT_THREADS ? GCU_ATT_THREADS / nout : 1;
    const int part = P > 1 ? tid / nout : 0;
    if (P == 1) { /* every thread has outputs: nc of them (the last ones may be past G) */
        const int nc = (nout - tid + GCU_ATT_THREADS - 1) / GCU_ATT_THREADS;
        switch (nc < AT_MAXC ? nc : AT_MAXC) {
        case 1: at_merge_outputs<1>(base, pstride, sm, G, D4, nsp, o); break;
        case 2: at_merge_outputs<2>(base, pstride, sm, G, D4, nsp, o); break;
        case 3: at_merge_outputs<3>(base, pstride, sm, G, D4, nsp, o); break;
        default: at_merge_outputs<4>(base, pstride, sm, G, D4, nsp, o); break;
        }
        return;
    }
#pragma unroll
    for (int c = 0; c < AT_MAXC; c++) {
        const int idx = P > 1 ? tid % nout : tid + c * GCU_ATT_THREADS, h = idx / D4;
        if ((P > 1 && (c > 0 || part >= P)) || h >= G) break;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int s0 = part; s0 < nsp; s0 += AT_BATCH * P) {
            float4 v[AT_BATCH];
#pragma unroll
            for (int i = 0; i < AT_BATCH; i++) {
                const int s = s0 + i * P;
                if (s < nsp) v[i] = __ldcg((const float4 *)(base + s * pstride) + idx);
            }
#pragma unroll
            for (int i = 0; i < AT_BATCH; i++) {
                const int s = s0 + i * P;
                if (s >= nsp) break;
                const float e = sm.mw[s * G + h];
                acc.x += v[i].x * e;
                acc.y += v[i].y * e;
                acc.z += v[i].z * e;
                acc.w += v[i].w * e;
            }
        }
        o[c] = acc;
    }
    if (P > 1) {
        float4 *red = (float4 *)sm.red;
        if (part < P) red[part * nout + tid % nout] = o[0];
        __syncthreads();
        if (part == 0) {
            float4 acc = red[tid];
            for (int p = 1; p < P; p++) {
                const float4 v = red[p * nout + tid];
                acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
            }
            o[0] = acc;
        }
    }
}

/* A merge's weights, by warp 0 between the block's barriers: the splits' maxima sm.mw[0..nsp)
 * become exp(m - max), and sm.l[h] the sum of the splits' sums sm.ml so weighted. */
__device__ __forceinline__ void at_merge_weights(const AtSmem &sm, int nsp, int h) {
    const int tid = threadIdx.x, lane = tid & 31;
    if (tid < 32) {
        float M = -INFINITY;
        for (int s = lane; s < nsp; s += 32) M = fmaxf(M, sm.mw[s]);
        M = gcu_warp_max(M);
        float L = 0.0f;
        for (int s = lane; s < nsp; s += 32) {
            const float e = expf(sm.mw[s] - M);
            sm.mw[s] = e;
            L += sm.ml[s] * e;
        }
        L = gcu_warp_sum(L);
        if (lane == 0) sm.l[h] = L;
    }
}

/* The P parts' weighted sums of output idx (acc, part's) added in part order through sm.red:
 * output tid (< D4) in *o. */
__device__ __forceinline__ void at_merge_parts(const AtSmem &sm, int D4, int P, int part, int idx, float4 acc,
                                               float4 *o) {
    const int tid = threadIdx.x;
    float4 *red = (float4 *)sm.red;
    if (part < P) red[part * D4 + idx] = acc;
    __syncthreads();
    if (tid < D4) {
        acc = red[tid];
        for (int p = 1; p < P; p++) {
            const float4 v = red[p * D4 + tid];
            acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
        }
        *o = acc;
    }
}

/* The parallel merge (gcu_attn_call.pmerge): head h of the nsp splits' partials at base, by the
 * whole block. Thread (part p, output d4) sums splits p, p + P, ... (P = threads / (D/4)),
 * AT_PM_LOADS at a time; with PRE (the decode instance, SPEC 2: in the others the registers
 * spilled) its first AT_PM_LOADS partials are loaded before, and so in flight with, the splits'
 * maxima and sums of head h, which warp 0 turns into weights and the merged sum
 * sm.l[h] as at_merge does for each head: one round trip from the mergers' acquire to the
 * weighted sums where nsp <= AT_PM_LOADS * P (64 splits of D 128: every split plan of the 30B),
 * not two (session 49; the weights apply to the loaded values in the same order as before: the
 * same bits). The parts are summed in order through sm.red. Returns the weighted sum of output
 * tid (< D/4) in *o. (Session 13, run 5 issued 16 outputs' loads with the maxima's and measured
 * a sliding layer at 4k keys 16.2 -> 19.3 us, then with the whole-block merge.) */
#define AT_PM_LOADS 8
#define AT_POLL_LAST 4 /* SPEC 3: a merger polls whole partials once at most this many are out */
/* SPEC 3's full layers past gcu_attn_call.wide_keys keys: their merge has 9 partials a thread in
 * registers, 72 splits of D 128, so that a full layer on 132 SMs keeps at_plan's 65-66 splits a
 * kv head instead of 64 or fewer of more tiles (at 32k 57 splits of nine tiles: a full layer
 * 36.7 -> 33.7 us, decode +0.6 % on an H100). Not at 4k: there 65 one-tile splits against 33 of
 * two made the launch 0.9 us shorter but the token 0.7 % slower, o_proj starting later behind
 * blocks that held every SM (RESULTS v55). The sliding layers (a window of 64 tiles at most)
 * keep AT_PM_LOADS: with 9 loads the kernel spills 24 bytes in the merge. */
#define AT_POLL_LOADS_FULL 9
template <bool PRE>
__device__ void at_merge_head(const float *base, size_t pstride, const AtSmem &sm, int G, int D, int nsp, int h,
                              float4 *o) {
    const int tid = threadIdx.x, D4 = D / 4;
    const int P = GCU_ATT_THREADS / D4, part = tid / D4, idx = tid % D4;
    const float *ob = base + h * D; /* split s's outputs of head h: (const float4 *)(ob + s pstride) */
    float4 v[AT_PM_LOADS];
    if (PRE) {
#pragma unroll
        for (int i = 0; i < AT_PM_LOADS; i++) {
            const int s = part + i * P;
            if (part < P && s < nsp) v[i] = __ldcg((const float4 *)(ob + s * pstride) + idx);
        }
    }
    for (int s = tid; s < nsp; s += GCU_ATT_THREADS) {
        sm.mw[s] = __ldcg(base + s * pstride + G * D + h);
        sm.ml[s] = __ldcg(base + s * pstride + G * D + G + h);
    }
    __syncthreads();
    at_merge_weights(sm, nsp, h);
    __syncthreads();
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (part < P)
        for (int s0 = part; s0 < nsp; s0 += AT_PM_LOADS * P) {
            if (!PRE || s0 != part) { /* past the first AT_PM_LOADS: a round trip each */
#pragma unroll
                for (int i = 0; i < AT_PM_LOADS; i++) {
                    const int s = s0 + i * P;
                    if (s < nsp) v[i] = __ldcg((const float4 *)(ob + s * pstride) + idx);
                }
            }
#pragma unroll
            for (int i = 0; i < AT_PM_LOADS; i++) {
                const int s = s0 + i * P;
                if (s >= nsp) break;
                const float e = sm.mw[s];
                acc.x += v[i].x * e;
                acc.y += v[i].y * e;
                acc.z += v[i].z * e;
                acc.w += v[i].w * e;
            }
        }
    at_merge_parts(sm, D4, P, part, idx, acc, o);
    __syncthreads(); /* sm.mw, sm.ml and sm.red are reused by the next head */
}

/* The gate of output d4 of the block's head h: elements 4 d4 .. of the head's gate in the qkvg
 * row (the previous kernel's output: read after the wait). A merger of the decode instance loads
 * its first head's before it waits for the other splits, so that the round trip overlaps the wait
 * instead of following the merge (at_finish; session 49). A single split's block loading its
 * gates before its tiles saved their round trip after them (0.9 -> 0.7 us a block at context 0
 * on an H100) but its q preparation took ~0.3 us longer, loaded before it or after it: not kept
 * (session 49, calls 2-3). */
__device__ __forceinline__ float4 at_gate_load(const gcu_attn_call &a, const float *row, int head0, int h, int d4) {
    return ((const float4 *)(row + (size_t)(a.H + 2 * a.Hkv) * a.D + (size_t)(head0 + h) * a.D))[d4];
}

/* Output d4 of the block's head h: the merged sum o over the weights' sum sm.l[h], times the
 * sigmoid of its gate g (at_gate_load), stored to aout (and to out when out != NULL). */
__device__ __forceinline__ void at_gate_store(const gcu_attn_call &a, const AtSmem &sm, float4 g, int t, int head0,
                                              int h, int d4, float4 o, float *out) {
    const int D = a.D;
    const float inv = 1.0f / sm.l[h];
    float4 r = make_float4(o.x * inv, o.y * inv, o.z * inv, o.w * inv);
    r.x *= gcu_sigmoid(g.x);
    r.y *= gcu_sigmoid(g.y);
    r.z *= gcu_sigmoid(g.z);
    r.w *= gcu_sigmoid(g.w);
    const int idx = h * (D / 4) + d4;
    ((float4 *)(a.aout + (size_t)t * a.H * D + (size_t)head0 * D))[idx] = r;
    if (out) ((float4 *)out)[idx] = r;
}

/* The split plan of a token seeing n keys (HG: the launch's head groups): over how many
 * head-group blocks its heads spread (*hg: HG up to a.group_half_keys keys, HG / 2 past them
 * where HG is even, 1 past a.group_keys: each group reads the keys, and more groups shorten the
 * latency chain only over few keys), the keys per split (*chunk, whole tiles), the splits that
 * fit the GPU at once (*per, 0: unknown), and the number of splits. */
__device__ __forceinline__ int at_plan(const gcu_attn_call &a, int HG, int n, int *hg, int *chunk, int *per) {
    *hg = HG > 1 && n <= a.group_keys ? HG : 1;
    if (*hg > 1 && a.group_half_keys > 0 && n > a.group_half_keys && HG % 2 == 0) *hg = HG / 2;
    int c = (n + a.nsplit - 1) / a.nsplit;
    if (c < a.min_chunk) c = a.min_chunk;
    /* no more working blocks than fit the GPU at once: a second wave doubles the latency
     * (session 9, run 4: a full layer at 4k keys, 520 working blocks of 64 keys for 264 places,
     * took 32.4 us; in splits of 128 keys, 26.1) */
    *per = a.resident > 0 ? a.resident / (a.Hkv * *hg * a.T) : 0;
    if (*per > 0) {
        const int fit = (n + *per - 1) / *per;
        if (c < fit) c = fit;
    }
    c = (c + GCU_ATT_TILE - 1) / GCU_ATT_TILE * GCU_ATT_TILE;
    *chunk = c;
    return (n + c - 1) / c;
}

/* What one block serves: token t at position pos, its keys' plan (at_plan), and its (kv head,
 * head group, split) with the keys [my0, my1) and query heads head0 .. head0 + G - 1. */
struct AtRole {
    int t, pos, n, nsp, chunk, per, G, ng, kvh, hgi, sp, head0, my0, my1;
    int hg; /* the head groups this position's heads spread over (at_plan) */
};

/* The block's role (at_body's first step, before the wait: everything here is known from the
 * host's position); false for a block of the grid with no work at this position. */
__device__ __forceinline__ bool at_role(const gcu_attn_call &a, int HG, AtRole *r) {
    r->t = blockIdx.z;
    /* the position comes from the host before the graph starts: it may be read before the wait */
    r->pos = *a.pos0 + r->t;
    const int k0 = a.window > 0 && r->pos - a.window + 1 > 0 ? r->pos - a.window + 1 : 0, k1 = r->pos + 1;
    r->n = k1 - k0;
    r->nsp = at_plan(a, HG, r->n, &r->hg, &r->chunk, &r->per);
    r->G = a.H / a.Hkv / r->hg;
    /* which (kv head, head group, split) this block serves. The grid is sized for the most
     * splits and groups any position may need; a.pack numbers its blocks split-major over the
     * groups in use, so that the blocks with work come first and the hardware starts them
     * first (numbered as launched, the working blocks of a long full layer without head groups
     * sat among three times as many empty ones, and the last started ~12 us late). */
    r->ng = a.Hkv * r->hg; /* the (kv head, head group) pairs in use */
    if (a.pack) {
        const int b = blockIdx.x + gridDim.x * blockIdx.y;
        if (b >= r->ng * r->nsp) return false;
        r->sp = b / r->ng;
        r->kvh = (b % r->ng) / r->hg;
        r->hgi = (b % r->ng) % r->hg;
    } else {
        r->kvh = blockIdx.x / HG, r->hgi = blockIdx.x % HG, r->sp = blockIdx.y;
        if (r->hgi >= r->hg || r->sp >= r->nsp) return false;
    }
    r->head0 = r->kvh * (a.H / a.Hkv) + r->hgi * r->G; /* this block's first query head */
    r->my0 = k0 + r->sp * r->chunk;
    r->my1 = r->my0 + r->chunk < k1 ? r->my0 + r->chunk : k1;
    return true;
}

/* The online softmax's running maximum and sum of each of the G heads, before a block's first
 * tile (published by the barrier that follows). */
__device__ __forceinline__ void at_softmax_reset(const AtSmem &sm, int G) {
    for (int h = threadIdx.x; h < G; h += GCU_ATT_THREADS) {
        sm.m[h] = -INFINITY;
        sm.l[h] = 0.0f;
    }
}

/* q of the block's G query heads into sm.qs (fused: normed, scaled and rotated here; in the
 * last split's blocks also the newest k and v, which head group 0 writes to the cache unless
 * !store), the running max and sum reset, and on the tensor cores q's fragments. Ends past a
 * barrier. */
template <int SPEC>
__device__ __forceinline__ void at_prepare(const gcu_attn_call &a, const AtSmem &sm, const AtRole &r,
                                           const float *row, int fused, const GcuRope &rope, bool mma,
                                           bool store) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, D = a.D, G = r.G;
    if (fused) {
        const bool rp = a.inv_freq != NULL;
        for (int h = warp; h < G; h += AT_WARPS)
            gcu_prep_head_at<SPEC != 0>(row + (size_t)(r.head0 + h) * D, sm.qs + h * D, D, a.eps, a.qk_scale, rope, rp, lane);
        if (r.sp == r.nsp - 1 && warp == AT_WARPS - 1) {
            /* the newest key and value: head group 0 writes them to the cache; every block of
             * the last split keeps its own copy, rounded as the cache stores it */
            gcu_prep_head_at<SPEC != 0>(row + (size_t)a.H * D + (size_t)r.kvh * D, sm.kbuf, D, a.eps, 1.0f, rope, rp, lane);
            size_t slot = (size_t)(r.pos % a.R);
            const float *v = row + (size_t)(a.H + a.Hkv) * D + (size_t)r.kvh * D;
            for (int d = lane; d < D; d += 32) {
                float kv = sm.kbuf[d], vv = v[d];
                if (store && r.hgi == 0) gcu_kv_store(a, (slot * a.Hkv + r.kvh) * D + d, kv, vv);
                sm.kbuf[d] = a.kv32 ? kv : __bfloat162float(__float2bfloat16_rn(kv));
                sm.vbuf[d] = a.kv32 ? vv : __bfloat162float(__float2bfloat16_rn(vv));
            }
        }
    } else {
        const float *q = a.qn + (size_t)r.t * a.H * D + (size_t)r.head0 * D;
        for (int i = tid; i < G * D; i += GCU_ATT_THREADS) sm.qs[i] = q[i];
    }
    at_softmax_reset(sm, G);
    if (mma) /* the probabilities' rows past G stay zero */
        for (int i = G * AT_PROW + tid; i < 16 * AT_PROW; i += GCU_ATT_THREADS)
            sm.ph[i] = sm.pl[i] = __float2bfloat16_rn(0.0f);
    __syncthreads();
    if (mma) {
        at_q_fragments(sm, G, D);
        __syncthreads();
    }
}

/* The block's keys, a tile at a time: scores, online softmax, the weighted values into o (fp32
 * path: this thread's float4 outputs) or omma (tensor cores: the fragments). The first tile was
 * requested by at_body. newest: the key read from kbuf / vbuf (-1: none). tl_t: the timeline's
 * stamps (NULL: none taken). */
template <int SPEC>
__device__ __forceinline__ void at_tiles(const gcu_attn_call &a, const AtSmem &sm, const AtRole &r,
                                         bool mma, int newest, float4 o[AT_MAXC], float omma[2][4],
                                         unsigned long long *tl_t) {
    const int tid = threadIdx.x, D = a.D, D4 = D / 4, G = r.G, my0 = r.my0, my1 = r.my1, kvh = r.kvh;
    for (int tile0 = my0; tile0 < my1; tile0 += GCU_ATT_TILE) {
        const int nv_t = my1 - tile0 < GCU_ATT_TILE ? my1 - tile0 : GCU_ATT_TILE;
        const int next = tile0 + GCU_ATT_TILE, b = a.tiles2 ? ((tile0 - my0) / GCU_ATT_TILE) & 1 : 0;
        /* two buffers: the next tile into the other one, consumed by the previous pass; one
         * buffer: this tile (the first came from at_body) once the previous one is consumed. One
         * request site, none where nothing is due (the decode instance: an empty one, its copies
         * predicated off, so that its run path jumps over no copy of the request) */
        const int rq_t = a.tiles2 ? next : tile0, rq_b = a.tiles2 ? b ^ 1 : 0;
        const int rq_n = a.tiles2 ? (next < my1 ? min(my1 - next, GCU_ATT_TILE) : 0) : (tile0 != my0 ? nv_t : 0);
        if (SPEC || rq_n > 0) at_tile_request<SPEC != 0>(a, sm, kvh, rq_t, rq_n, rq_b);
        gcu_cp_wait_block(a.tiles2 && next < my1);
        if (tl_t && a.tl && tid == 0 && tile0 == my0) tl_t[4] = gcu_tl_now(); /* the first tile is in */
        if (mma) {
            /* the tensor cores read whole tiles: the newest key and value from this block's
             * copies, rows past the split's end zero (stale rows could hold NaNs, and 0 x NaN
             * is NaN; the decode instance's requests wrote them zero already); the scores mask
             * those keys by position */
            const bool own = newest >= tile0 && newest < tile0 + nv_t;
            const bool tail = !SPEC && nv_t < GCU_ATT_TILE;
            if (own || tail) {
                char *kt = b ? sm.kt1 : sm.kt0, *vt = b ? sm.vt1 : sm.vt0;
                if (own)
                    for (int d = tid; d < D; d += GCU_ATT_THREADS) {
                        const int kl = newest - tile0;
                        ((__nv_bfloat16 *)(kt + kl * sm.rowb))[d] = __float2bfloat16_rn(sm.kbuf[d]);
                        ((__nv_bfloat16 *)(vt + kl * sm.rowb))[d] = __float2bfloat16_rn(sm.vbuf[d]);
                    }
                if (tail)
                    for (int i = nv_t * D + tid; i < GCU_ATT_TILE * D; i += GCU_ATT_THREADS)
                        ((__nv_bfloat16 *)(vt + (i / D) * sm.rowb))[i % D] = __float2bfloat16_rn(0.0f);
                __syncthreads();
            }
            at_scores_mma(a, sm, b, G, tile0, my1);
        } else if (a.few && nv_t <= AT_FEW) {
            at_scores_few(a, sm, kvh, G, tile0, nv_t, newest);
        } else if (a.kv32) {
            at_scores<true>(a, sm, b, G, tile0, my1, newest);
        } else {
            at_scores<false>(a, sm, b, G, tile0, my1, newest);
        }
        __syncthreads();
        at_softmax(sm, G, mma);
        __syncthreads();
        if (mma) {
            at_pv_mma(a, sm, b, G, omma);
            __syncthreads();
            continue;
        }
        const int nv = my1 - tile0 < GCU_ATT_TILE ? my1 - tile0 : GCU_ATT_TILE;
#pragma unroll
        for (int c = 0; c < AT_MAXC; c++) {
            int idx = tid + c * GCU_ATT_THREADS, h = idx / D4, d4 = idx % D4;
            if (h >= G) break;
            float corr = sm.corr[h];
            float4 acc = make_float4(o[c].x * corr, o[c].y * corr, o[c].z * corr, o[c].w * corr);
            const float *p = sm.S + h * GCU_ATT_TILE;
            const char *vr = (b ? sm.vt1 : sm.vt0) + (a.kv32 ? 16 : 8) * d4;
            for (int kl = 0; kl < nv; kl++, vr += sm.rowb) {
                float4 v;
                if (tile0 + kl == newest) { /* vbuf need not be 16-byte aligned */
                    const float *vb = sm.vbuf + 4 * d4;
                    v = make_float4(vb[0], vb[1], vb[2], vb[3]);
                } else if (a.kv32) {
                    v = *(const float4 *)vr;
                } else {
                    const uint2 vv = *(const uint2 *)vr;
                    v = make_float4(gcu_bf16lo(vv.x), gcu_bf16hi(vv.x), gcu_bf16lo(vv.y), gcu_bf16hi(vv.y));
                }
                const float pk = p[kl];
                acc.x += pk * v.x;
                acc.y += pk * v.y;
                acc.z += pk * v.z;
                acc.w += pk * v.w;
            }
            o[c] = acc;
        }
        __syncthreads();
    }
}

/* ---- SPEC 3: the splits' partials as their own arrival flags --------------------------------
 * In SPEC 2 a split's partial reaches its mergers through a fence and a counter: the last split
 * stores, waits for its stores (fence), counts itself (an atomic round trip), and only then do
 * the mergers load the partials (a third round trip), ~4 us from the last tile to the block's
 * end at 4k keys on an H100 (RESULTS v53). Here the partials land in part_poll, whose words are
 * all GCU_ATT_EMPTY between launches: the split stores them (relaxed, no fence, no counter) and
 * the first min(G, splits, pmerge) splits merge one query head each, loading the head's words of
 * every split until none is empty; those loads are the merge's own, so the last split's stores
 * are a merger's data one L2 trip after they land. Every word is a 32-bit access of its own,
 * written once and read until it is not empty: a partly arrived float4 is loaded again. Each
 * merger then puts GCU_ATT_EMPTY back in the words it read (every word written is read by one
 * merger), for the next launch, which the stream orders after this one's end. The sums are
 * those of at_merge_head in the same order: the same bits as SPEC 2. */
__device__ __forceinline__ float at_not_empty(float x) {
    return __float_as_uint(x) == GCU_ATT_EMPTY ? __uint_as_float(0x7fffffffu) : x;
}
__device__ __forceinline__ bool at_arrived(float x) { return __float_as_uint(x) != GCU_ATT_EMPTY; }
__device__ __forceinline__ bool at_arrived4(float4 v) {
    return at_arrived(v.x) && at_arrived(v.y) && at_arrived(v.z) && at_arrived(v.w);
}
__device__ __forceinline__ void at_st_relaxed(float *p, float v) {
    asm volatile("st.relaxed.gpu.global.f32 [%0], %1;" ::"l"(p), "f"(at_not_empty(v)) : "memory");
}
__device__ __forceinline__ void at_st_relaxed4(float4 *p, float4 v) {
    asm volatile("st.relaxed.gpu.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(at_not_empty(v.x)),
                 "f"(at_not_empty(v.y)), "f"(at_not_empty(v.z)), "f"(at_not_empty(v.w))
                 : "memory");
}
__device__ __forceinline__ float at_ld_relaxed(const float *p) {
    float v;
    asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ float4 at_ld_relaxed4(const float4 *p) {
    float4 v;
    asm volatile("ld.relaxed.gpu.global.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

/* Head h merged from the nsp splits' partials at base (part_poll's layout is a.part's), by the
 * whole block, nsp <= NL * P (P = threads / (D/4): 64 or, NL 9, 72 splits of D 128): thread
 * (part p, output d4) loads splits p,
 * p + P, ..., the first nsp threads each split's maximum and sum, again until all have arrived
 * (the maxima and sums alone until at most AT_POLL_LAST splits are out); then at_merge_head's
 * weights and sums, and the words read are emptied. */
template <int NL>
__device__ void at_merge_head_poll(float *base, size_t pstride, const AtSmem &sm, int G, int D, int nsp, int h,
                                   float4 *o) {
    const int tid = threadIdx.x, D4 = D / 4;
    const int P = GCU_ATT_THREADS / D4, part = tid / D4, idx = tid % D4;
    /* this thread's first split's output d4 of head h, and the step to its next (P splits on) */
    float4 *pv = (float4 *)(base + (size_t)part * pstride + h * D) + idx;
    const int step = P * (int)pstride / 4;
    float *mlp = base + (size_t)tid * pstride + G * D + h; /* split tid's maximum; its sum G on */
    float4 v[NL];
    float m = 0.0f, l = 0.0f;
    const unsigned long long t0 = gcu_tl_now();
    /* first the maxima and sums alone (8 bytes a split a poll, against a whole partial's 32 KB a
     * merger), while more than AT_POLL_LAST splits are out, so that the polls stay off the
     * other splits' tile loads in L2. (Session 51's call 2, polling whole partials from the
     * start, saw full layers' tiles slower; call 3 found the split plan behind that, not the
     * polls. This order is the one measured and landed.) */
    bool ml_out = tid < nsp;
    for (unsigned spins = 1;; spins++) {
        if (ml_out) {
            m = at_ld_relaxed(mlp), l = at_ld_relaxed(mlp + G);
            ml_out = !(at_arrived(m) && at_arrived(l));
        }
        if (__syncthreads_count(ml_out) <= AT_POLL_LAST) break;
        /* every split is resident at once (the host's check): 10 s without them means another
         * process holds the SMs */
        if (spins % 1024 == 0 && gcu_tl_now() - t0 > 10000000000ull) __trap();
    }
    unsigned need = ml_out ? 1u << 31 : 0u; /* bit i: v[i] still to arrive; bit 31: m and l */
#pragma unroll
    for (int i = 0; i < NL; i++)
        if (part < P && part + i * P < nsp) need |= 1u << i;
    for (unsigned spins = 1;; spins++) {
#pragma unroll
        for (int i = 0; i < NL; i++)
            if (need >> i & 1) v[i] = at_ld_relaxed4(pv + i * step);
        if (need >> 31) m = at_ld_relaxed(mlp), l = at_ld_relaxed(mlp + G);
#pragma unroll
        for (int i = 0; i < NL; i++)
            if ((need >> i & 1) && at_arrived4(v[i])) need &= ~(1u << i);
        if ((need >> 31) && at_arrived(m) && at_arrived(l)) need &= ~(1u << 31);
        if (__syncthreads_and(need == 0)) break;
        if (spins % 1024 == 0 && gcu_tl_now() - t0 > 10000000000ull) __trap();
    }
    if (tid < nsp) {
        sm.mw[tid] = m;
        sm.ml[tid] = l;
        mlp[0] = __uint_as_float(GCU_ATT_EMPTY);
        mlp[G] = __uint_as_float(GCU_ATT_EMPTY);
    }
    __syncthreads();
    at_merge_weights(sm, nsp, h);
    __syncthreads();
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float E = __uint_as_float(GCU_ATT_EMPTY);
#pragma unroll
    for (int i = 0; i < NL; i++) {
        const int s = part + i * P;
        if (part >= P || s >= nsp) break;
        const float e = sm.mw[s];
        acc.x += v[i].x * e;
        acc.y += v[i].y * e;
        acc.z += v[i].z * e;
        acc.w += v[i].w * e;
        pv[i * step] = make_float4(E, E, E, E);
    }
    at_merge_parts(sm, D4, P, part, idx, acc, o);
    __syncthreads(); /* sm.mw, sm.ml and sm.red are reused by the next head */
}

/* SPEC 3's finish with several splits (nsp <= NL * P: k_attention's plan): this
 * block's partial into part_poll, then, for the first Mg splits, their heads merged, gated and
 * stored (at_finish's other paths stage nothing in decode either). */
template <int NL>
__device__ __forceinline__ void at_finish_poll(const gcu_attn_call &a, const AtSmem &sm, const AtRole &r,
                                               const float *row, const float4 o[AT_MAXC]) {
    const int tid = threadIdx.x, D = a.D, D4 = D / 4, G = r.G, nsp = r.nsp;
    const size_t pstride = (size_t)G * D + 2 * G;
    const int grp = r.kvh * r.hg + r.hgi; /* T 1 */
    float *base = a.part_poll + (size_t)grp * a.nsplit * pstride, *mine = base + (size_t)r.sp * pstride;
#pragma unroll
    for (int c = 0; c < AT_MAXC; c++) {
        const int idx = tid + c * GCU_ATT_THREADS;
        if (idx / D4 >= G) break;
        at_st_relaxed4((float4 *)mine + idx, o[c]);
    }
    for (int h = tid; h < G; h += GCU_ATT_THREADS) {
        at_st_relaxed(mine + G * D + h, sm.m[h]);
        at_st_relaxed(mine + G * D + G + h, sm.l[h]);
    }
    const int Mg = min(min(G, nsp), a.pmerge);
    if (r.sp >= Mg) return;
    /* the gate of this merger's first head, in flight while the splits arrive */
    float4 g0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (tid < D4) g0 = at_gate_load(a, row, r.head0, r.sp, tid);
    for (int h = r.sp; h < G; h += Mg) {
        float4 ov;
        at_merge_head_poll<NL>(base, pstride, sm, G, D, nsp, h, &ov);
        if (tid < D4)
            at_gate_store(a, sm, h == r.sp ? g0 : at_gate_load(a, row, r.head0, h, tid), 0, r.head0, h, tid, ov, NULL);
    }
}

/* After the tiles (o: this thread's float4 outputs): with several splits, this block's partial
 * goes to a.part and the last blocks of its (token, kv head[, head group]) to arrive merge them;
 * the merged outputs are normalised, gated (at_gate_store) and, with has_f, this kv head's slice
 * of the o_proj input is staged. Every return is the whole block's. */
template <int SPEC, int NL>
__device__ __forceinline__ void at_finish(const gcu_attn_call &a, const gcu_xfmt &f, int has_f, const AtSmem &sm,
                                          const AtRole &r, int HG, const float *row, float4 o[AT_MAXC]) {
    const int tid = threadIdx.x, D = a.D, D4 = D / 4, G = r.G, t = r.t, kvh = r.kvh, hgi = r.hgi, nsp = r.nsp;
    /* merge the splits: partial layout per (t, kvh, sp): o [G*D], m [G], l [G] */
    const size_t pstride = (size_t)G * D + 2 * G;
    /* (token, kv head[, head group]): G*D + 2G floats per split for each of the hg groups fit
     * the buffer whatever hg is (G = the kv head's heads / hg; head groups are decode's, T 1) */
    const int grp = (t * a.Hkv + kvh) * r.hg + hgi;
    const int ngrp = a.T * a.Hkv * r.hg; /* the mergers' counters follow */
    /* pmerge: one token, every split resident at once (per > 0), no o_proj staging here; the
     * decode instance (SPEC) always, the host having checked per > 0, G >= 2 and pmerge >= 2
     * (gcu_attn_launch), so that the whole-block merge (at_merge, ~2.5 K instructions) is not
     * compiled in */
    const bool pm = SPEC || (a.pmerge > 1 && a.T == 1 && !has_f && r.per > 0);
    /* SPEC 3: the partials flag themselves (at most NL * P splits: k_attention's plan) */
    if (SPEC == 3 && nsp > 1) {
        at_finish_poll<NL>(a, sm, r, row, o);
        return;
    }
    float *mine = a.part + ((size_t)grp * a.nsplit + r.sp) * pstride;
    if (nsp > 1) {
#pragma unroll
        for (int c = 0; c < AT_MAXC; c++) {
            int idx = tid + c * GCU_ATT_THREADS;
            if (idx / D4 >= G) break;
            ((float4 *)mine)[idx] = o[c];
        }
        for (int h = tid; h < G; h += GCU_ATT_THREADS) {
            mine[G * D + h] = sm.m[h];
            mine[G * D + G + h] = sm.l[h];
        }
        gcu_fence_gpu(a.fence_sc);
        __syncthreads();
        /* the last Mg blocks to arrive merge (the last one alone without pmerge, or where the
         * splits are not all resident at once: a merger waits for the others to arrive) */
        const int Mg = pm ? min(min(G, nsp), a.pmerge) : 1;
        if (tid == 0) {
            const int old = atomicAdd(&a.counters[grp], 1);
            *sm.flag = old - (nsp - Mg);
            /* the last to arrive read nsp - 1: with this fence its read is an acquire of every
             * split's fenced partial, as the others' ld.acquire below is (bar.sync carries it to
             * the block) */
            if (old == nsp - 1) gcu_fence_gpu(a.fence_sc);
        }
        __syncthreads();
        const int role = *sm.flag;
        if (role < 0) return;
        if (SPEC || Mg > 1) { /* SPEC: Mg >= 2 by the host's checks; said so, the whole-block merge
                               * below is not compiled in (with Mg 1 this branch is still right) */
            /* the decode instance (SPEC 2; in SPEC 1 the registers spilled): the gate of this
             * merger's first head, in flight while it waits for the others */
            constexpr bool PRE = SPEC >= 2;
            float4 g0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (PRE && tid < D4 && role < G) g0 = at_gate_load(a, row, r.head0, role, tid);
            /* the last to arrive (role Mg - 1) has every split already: no round trip to learn it */
            if (tid == 0 && role != Mg - 1) {
                const unsigned long long t0 = gcu_tl_now();
                unsigned v, spins = 0;
                for (;;) {
                    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(&a.counters[grp]) : "memory");
                    if ((int)v >= nsp) break;
                    /* the splits fit the GPU at once (a.resident): 10 s without them means
                     * another process holds the SMs */
                    if (++spins % 1024 == 0 && gcu_tl_now() - t0 > 10000000000ull) __trap();
                }
            }
            __syncthreads();
            gcu_fence_gpu(a.fence_sc);
            /* a merger past the arrivals reads no counter again: it counts itself done now, and
             * the last of them resets both counters for the next launch once its merge is over.
             * The decode instance issues that atomic before its merge and looks at the result
             * after it, so that the round trip overlaps the merge's loads instead of ending the
             * block (session 49); the others count at the end, as before */
            int done = -1;
            if (PRE && tid == 0) done = atomicAdd(&a.counters[ngrp + grp], 1);
            const float *base = a.part + (size_t)grp * a.nsplit * pstride;
            for (int h = role; h < G; h += Mg) {
                float4 ov;
                at_merge_head<PRE>(base, pstride, sm, G, D, nsp, h, &ov);
                if (tid < D4)
                    at_gate_store(a, sm, PRE && h == role ? g0 : at_gate_load(a, row, r.head0, h, tid), t, r.head0, h, tid, ov, NULL);
            }
            if (!PRE && tid == 0) done = atomicAdd(&a.counters[ngrp + grp], 1);
            if (tid == 0 && done == Mg - 1) {
                a.counters[grp] = 0;
                a.counters[ngrp + grp] = 0;
            }
            return;
        }
        gcu_fence_gpu(a.fence_sc);
    }
    /* q is no longer needed: the gated output goes here for the staging below (has_f; the
     * decode instance stages nothing) */
    float *out = SPEC ? NULL : sm.qs;
    if (nsp > 1) at_merge(a.part + (size_t)grp * a.nsplit * pstride, pstride, sm, G, D, nsp, o);
#pragma unroll
    for (int c = 0; c < AT_MAXC; c++) {
        int idx = tid + c * GCU_ATT_THREADS, h = idx / D4, d4 = idx % D4;
        if (h >= G) break;
        at_gate_store(a, sm, at_gate_load(a, row, r.head0, h, d4), t, r.head0, h, d4, o[c], out);
    }
    if (nsp > 1 && tid == 0) a.counters[grp] = 0;
    if (!has_f) return;
    __syncthreads();
    /* stage this kv head's slice of the o_proj input (whole spans: checked by the host) */
    const int span_el = f.kind == GCU_KIND_DENSE ? 32 : 128 * 4 / f.bits;
    const int e0 = r.head0 * D;
    auto x = [&](int e) { return out[e - e0]; };
    gcu_stage_spans(f, x, e0 / span_el, (e0 + G * D) / span_el, a.xs + (size_t)(2 * t) * f.kx,
                    a.xs + (size_t)(2 * t + 1) * f.kx, a.xsum + (size_t)t * f.nspan * f.pps,
                    tid, GCU_ATT_THREADS);
}

/* The kernel's work; every return is taken by the whole block. tl_t (timeline, thread 0): past
 * the wait, then the tiles done (a block that returns before its tiles leaves them 0). PASSES:
 * the rehearsal and DIAG_ATT_TWICE's second pass compiled in (false: pass 1 alone, the loop
 * folded away, for GLIM_CUDA_ATT_LEAN; session 23 found the kernel 13160 -> 13904 SASS
 * instructions since the passes came, and attention's q preparation slower). */
template <bool PASSES, int SPEC, int NL>
__device__ __forceinline__ void at_body(const gcu_attn_call &a, const gcu_xfmt &f, int has_f, int fused,
                                        unsigned long long *tl_t) {
    extern __shared__ float at_base[];
    /* blockIdx.x: kv head x head group. Over short spans of keys (a.group_keys) the HG blocks
     * of a kv head take G/HG query heads each (more blocks for a short latency chain); over long
     * ones only group 0 runs, with all G heads, so K and V are read once. */
    const int HG = a.hgroups > 1 ? a.hgroups : 1;
    const int tid = threadIdx.x, lane = tid & 31;
    /* early: the next kernel (a whole-SM matvec) may launch once every block of this grid has
     * started (the trigger counts only then, so none of these still waits for an SM) and streams
     * its first weights on the SMs these blocks leave free; otherwise it launches as they exit */
    if (a.trig_early == 1) gcu_pdl_trigger();
    AtRole r;
    const bool work = at_role(a, HG, &r);
    AtSmem sm = at_smem(at_base, r.G, a.D, a.nsplit, a.kv32, a.tiles2);
    if (!work) return;
    const int kvh = r.kvh;
    const float *row = a.qkvg + (size_t)r.t * a.ldq;
    /* Decode: the cache rows of every key but the newest (which this kernel writes, and which
     * is read from kbuf instead) were written by earlier tokens, so the first tile is requested
     * before the wait and arrives while the previous kernel drains. Prefill writes the chunk's
     * keys in the kernel before: after the wait. */
    const int nv0 = r.my1 - r.my0 < GCU_ATT_TILE ? r.my1 - r.my0 : GCU_ATT_TILE;
    if (fused) at_tile_request<SPEC != 0>(a, sm, kvh, r.my0, nv0, 0);
    /* RoPE's factors depend on the position only: before the wait, off the critical path (at
     * context 0 a sliding layer's q and tile phase took 1.2 us longer than a NoPE layer's) */
    GcuRope rope = {};
    if (fused && a.inv_freq) rope = gcu_rope_at(a.inv_freq, a.D, r.pos, lane);
    const int newest = fused && r.sp == r.nsp - 1 ? r.pos : -1;
    /* SPEC 2: every split on the tensor cores, the few-key ones too, so that the fp32 tiles' code
     * is not compiled in */
    const bool mma = SPEC >= 2 || at_use_mma(a, r.G, r.my1 - r.my0);
    float4 o[AT_MAXC];
    float omma[2][4]; /* mma path: o as fragments */
    /* The passes: 1 is the work. 0 (GLIM_CUDA_ATT_WARM, decode) is its rehearsal before the
     * wait, while the previous kernel's last blocks finish: q from the row as it stands (the
     * previous token's) and the split's first tile only, nothing written but this block's shared
     * memory (no cache store), so that pass 1 runs the same instructions with them, and the
     * kernel's constants, already in the SM's caches; pass 1 rewrites all it reads. 2
     * (GLIM_CUDA_DIAG_ATT_TWICE, timing only) runs the tiles again from scratch, the first one
     * requested anew (the single buffer holds the split's last), so that "tiles' math" (first
     * tile in -> tiles done) spans two passes. One loop, not several calls, so that every pass
     * runs the same code. */
    const bool warm = PASSES && fused && a.warm, twice = PASSES && a.diag_twice;
    for (int pass = warm ? 0 : 1;; pass++) {
        AtRole rr = r;
        if (pass == 0) rr.my1 = r.my0 + nv0;
        if (pass == 1) {
            /* GLIM_CUDA_FLAG_WAIT: the working blocks (kv heads x head groups in use x splits)
             * wait on the previous matvec's arrivals instead of its grid's completion */
            if (a.flag_wait) gcu_flag_wait(a.flag_wait, (unsigned)a.flag_need, (unsigned)(r.ng * r.nsp));
            else gcu_pdl_wait();
            gcu_tl_mark(a.tl, GCU_TL_RELEASE);
            if (a.tl && tid == 0) tl_t[1] = gcu_tl_now();
            if (!fused) at_tile_request(a, sm, kvh, r.my0, nv0, 0);
        }
        if (pass < 2) {
            at_prepare<SPEC>(a, sm, rr, row, fused, rope, mma, pass == 1);
            /* GLIM_CUDA_ATT_TRIG=2: o_proj's blocks, whose rings stream weights as they start,
             * launch only now, off the q preparation's loads (session 23: its third ring slot
             * made that phase 1 us longer) */
            if (pass == 1 && a.trig_early == 2) gcu_pdl_trigger();
        } else {
            __syncthreads();
            at_tile_request(a, sm, kvh, r.my0, nv0, 0);
            at_softmax_reset(sm, r.G);
        }
#pragma unroll
        for (int c = 0; c < AT_MAXC; c++) o[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int e = 0; e < 4; e++) omma[i][e] = 0.0f;
        if (pass == 1 && a.tl && tid == 0) tl_t[3] = gcu_tl_now(); /* q ready (every thread is past its barrier) */
        at_tiles<SPEC>(a, sm, rr, mma, newest, o, omma, pass == 1 ? tl_t : NULL);
        if (pass == 2 || (pass == 1 && !twice)) break;
    }
    if (a.trig_early == 3) gcu_pdl_trigger(); /* GLIM_CUDA_ATT_TRIG=3: once the tiles are done */
    if (mma) at_pv_mma_out(a, sm, r.G, omma, o);
    if (a.tl && tid == 0) tl_t[2] = gcu_tl_now();
    at_finish<SPEC, NL>(a, f, has_f, sm, r, HG, row, o);
}

/* SPEC (1, 2, 3): the instance for the 30B's decode (gcu_attn_spec_fits): the call's fields that
 * select a path are constants here, so the paths it never takes (the fp32 cache, D other than
 * 128, the few-key scores, the rehearsal, the flags, o_proj's staging, the whole-block merge)
 * and the divisions by D fold away: 6.1 K SASS instructions against 13.3 K (sm_90). The kernel
 * runs cold from the instruction cache every layer (RESULTS v28), so its size is on the
 * critical path (at 8.6 K, before the merge went: attention 8.5 -> 7.1 us a layer on an H200,
 * RESULTS v35). SPEC 2 also takes splits of fewer than AT_MMA_MIN keys to the tensor cores
 * (other bits there), leaving the fp32 tiles out: 5.2 K. SPEC 3 is SPEC 2 with at_finish_poll's merge,
 * NL partials a thread (AT_PM_LOADS; the full layers' instance AT_POLL_LOADS_FULL). */
template <bool PASSES, int SPEC, int NL = AT_PM_LOADS>
__global__ void __launch_bounds__(GCU_ATT_THREADS, 2) k_attention(gcu_attn_call a_in, gcu_xfmt f, int has_f, int fused) {
    /* timeline: start, past the wait, tiles done, q ready, the first tile in */
    __shared__ unsigned long long tl_t[5];
    gcu_attn_call a = a_in;
    if (SPEC) {
        a.D = 128;
        a.kv32 = 0;
        a.few = 0;
        a.warm = 0;
        a.diag_twice = 0;
        a.T = 1;
        a.mma = 1;
        a.pack = 1;
        a.fence_sc = 0;
        a.flag_wait = NULL;
        a.flag_arrive = NULL;
        has_f = 0;
        fused = 1;
    }
    /* SPEC 3's merge loads every split's partial in one round (at_finish_poll): no more splits
     * than that (at_plan's splits at once; a full layer of 4k + 1..128 keys on 132 SMs would take
     * 65 or 66, and then splits of two tiles). The full layers' instance takes 72 past
     * a.wide_keys keys (a full layer: position + 1 keys, T 1), 64 up to them. */
    if (SPEC == 3) {
        const int nl = NL > AT_PM_LOADS && *a.pos0 + 1 > a.wide_keys ? NL : AT_PM_LOADS;
        const int most = nl * GCU_ATT_THREADS / 32; /* the splits of one round, D 128 */
        if (a.resident > most * a.Hkv) a.resident = most * a.Hkv;
    }
    gcu_tl_mark(a.tl, GCU_TL_START);
    if (a.tl && threadIdx.x == 0) tl_t[0] = gcu_tl_now(), tl_t[2] = tl_t[3] = tl_t[4] = 0;
    at_body<PASSES, SPEC, NL>(a, f, has_f, fused, tl_t);
    /* every block, the empty ones too (a fixed count for the next kernel to wait for), once its
     * output is written (GLIM_CUDA_FLAG_WAIT; every return of at_body is the whole block's) */
    if (a.flag_arrive) gcu_grid_arrive(a.flag_arrive);
    gcu_tl_block_end(a.tl);
    if (a.tl && threadIdx.x == 0 && tl_t[2]) { /* the blocks that worked */
        gcu_tl_phases(a.tl, tl_t);
        gcu_tl_att_parts(a.tl, tl_t);
    }
}

extern "C" glim_status gcu_attn_init(glim_error *err) {
    static int raised;
    if (raised) return GLIM_OK;
    glim_status s = GLIM_OK;
    const void *fns[6] = {(const void *)k_attention<true, 0>, (const void *)k_attention<false, 0>,
                          (const void *)k_attention<false, 1>, (const void *)k_attention<false, 2>,
                          (const void *)k_attention<false, 3>,
                          (const void *)k_attention<false, 3, AT_POLL_LOADS_FULL>};
    for (int i = 0; i < 6 && s == GLIM_OK; i++)
        s = gcu_check(cudaFuncSetAttribute(fns[i], cudaFuncAttributeMaxDynamicSharedMemorySize, AT_SMEM_MAX),
                      "attention shared memory", err);
    raised = s == GLIM_OK;
    return s;
}

extern "C" size_t gcu_attn_part_floats(int T, int Hkv, int nsplit, int G, int D) {
    return (size_t)T * Hkv * nsplit * ((size_t)G * D + 2 * G);
}

/* Decode without staging: the G heads of a kv head over several blocks (4 heads each). */
static int at_hgroups(const gcu_attn_call *c, int G, int fused) {
    return fused && !c->f && c->hgroups > 1 && G % c->hgroups == 0 ? c->hgroups : 1;
}
/* The grid: (kv heads x head groups, splits, tokens). Packed (split-major) numbering: as many
 * blocks as the most any position can use, head groups (up to group_keys keys, so at most that
 * many keys / a tile splits) or not (nsplit splits): the blocks past them start and exit at once,
 * but the next kernel launches only once every block has started (session 13, run 10: a full
 * layer at 32k keys 46.5 -> 43.3 us with half the empty blocks). */
static dim3 at_grid(const gcu_attn_call *c, int HG) {
    unsigned ny = (unsigned)c->nsplit;
    if (c->pack && HG > 1) {
        int gsp = (c->group_keys + GCU_ATT_TILE - 1) / GCU_ATT_TILE; /* a grouped position's splits */
        if (gsp > c->nsplit) gsp = c->nsplit;
        const int most = c->Hkv * (HG * gsp > c->nsplit ? HG * gsp : c->nsplit); /* working blocks */
        ny = (unsigned)((most + c->Hkv * HG - 1) / (c->Hkv * HG));
    }
    return dim3((unsigned)(c->Hkv * HG), ny, (unsigned)c->T);
}

static long twice_count; /* launches enqueued with diag_twice (gcu_attn_twice_count) */
static long warm_count;  /* decode launches enqueued with the rehearsal (gcu_attn_warm_count) */
extern "C" long gcu_attn_twice_count(void) { return twice_count; }
extern "C" long gcu_attn_warm_count(void) { return warm_count; }
static long lean_count; /* launches enqueued on the kernel without the passes (gcu_attn_lean_count) */
extern "C" long gcu_attn_lean_count(void) { return lean_count; }
static long spec_count; /* launches enqueued on the decode instance (gcu_attn_spec_count) */
extern "C" long gcu_attn_spec_count(void) { return spec_count; }
static long poll_count; /* launches enqueued on SPEC 3, the self-flagging partials (gcu_attn_poll_count) */
extern "C" long gcu_attn_poll_count(void) { return poll_count; }
static long half_count; /* launches whose head groups may halve (gcu_attn_half_count) */
extern "C" long gcu_attn_half_count(void) { return half_count; }
/* Whether a call is the one k_attention<false, 1, 2 or 3> is compiled for: every field it fixes,
 * and what its merge needs (at_finish<SPEC>: by the last blocks, or SPEC 3's by the first from
 * part_poll): at least 2 heads a block (HG head groups) and PMERGE >= 2. gcu_attn_launch checks
 * the rest, every working block resident. */
static bool gcu_attn_spec_fits(const gcu_attn_call *c, int fused, int HG) {
    return (c->spec == 1 || c->spec == 2 || (c->spec == 3 && c->part_poll)) && fused && c->T == 1 && c->D == 128 && c->Hkv > 0 &&
           c->H / c->Hkv <= 16 && c->H / c->Hkv / HG >= 2 && c->pmerge >= 2 && !c->kv32 && !c->few &&
           !c->warm && !c->diag_twice && c->mma && c->pack && !c->fence_sc && !c->flag_wait &&
           !c->flag_arrive && c->f == NULL;
}

extern "C" glim_status gcu_attn_launch(const gcu_attn_call *c, int fused, cudaStream_t st,
                                       glim_error *err) {
    int G = c->H / c->Hkv;
    if (c->H % c->Hkv || c->D % 8 || c->D > 256 || G * c->D > AT_MAXC * 4 * GCU_ATT_THREADS || G > 64)
        return glim_fail(err, GLIM_E_UNSUPPORTED,
                         "attention: %d heads over %d kv heads of width %d (need D %% 8 == 0, "
                         "G*D <= %d)", c->H, c->Hkv, c->D, AT_MAXC * 4 * GCU_ATT_THREADS);
    const int HG = at_hgroups(c, G, fused);
    size_t smem = sizeof(float) * at_smem_floats(G, c->D, c->nsplit, c->kv32, c->tiles2);
    if (smem > AT_SMEM_MAX)
        return glim_fail(err, GLIM_E_UNSUPPORTED, "attention: %d heads per kv head of width %d over "
                         "%d splits need %zu bytes of shared memory (at most %d)", G, c->D,
                         c->nsplit, smem, AT_SMEM_MAX);
    if ((c->flag_arrive || c->flag_wait) && (!fused || c->T != 1))
        return glim_fail(err, GLIM_E_ARG, "attention: a flag release (GLIM_CUDA_FLAG_WAIT) is for decode only");
    if (c->flag_wait && c->flag_need < 1)
        return glim_fail(err, GLIM_E_ARG, "attention: a flag wait for %d blocks", c->flag_need);
    glim_status ist = gcu_attn_init(err);
    if (ist != GLIM_OK) return ist;
    gcu_attn_call a = *c;
    a.hgroups = HG;
    /* GLIM_CUDA_ATT_LEAN: the instance without the extra passes where neither is asked for */
    const bool lean = c->lean && !(c->warm && fused) && !c->diag_twice;
    /* the decode instance's mergers wait for the other splits (the last blocks to arrive, or in
     * SPEC 3 the first splits): every working block must be resident at once (at_plan's per > 0) */
    /* SPEC 3: a full layer (window 0: its keys are position + 1, as k_attention's cap assumes)
     * with wide_keys on the instance whose merge takes 72 splits */
    const void *fn = c->spec == 3 && c->window == 0 && c->wide_keys > 0
                         ? (const void *)k_attention<false, 3, AT_POLL_LOADS_FULL>
                     : c->spec == 3                 ? (const void *)k_attention<false, 3>
                     : c->spec == 2                 ? (const void *)k_attention<false, 2>
                                                    : (const void *)k_attention<false, 1>;
    bool spec = lean && gcu_attn_spec_fits(c, fused, HG);
    if (spec) spec = (a.resident = gcu_resident(fn, GCU_ATT_THREADS, smem, 1)) >= c->Hkv * HG;
    if (!spec) {
        fn = lean ? (const void *)k_attention<false, 0> : (const void *)k_attention<true, 0>;
        a.resident = gcu_resident(fn, GCU_ATT_THREADS, smem, 1); /* 0: no cap */
    }
    gcu_xfmt f;
    memset(&f, 0, sizeof f);
    int has_f = c->f != NULL;
    if (has_f) f = *c->f;
    a.f = NULL;
    void *args[] = {&a, &f, &has_f, &fused};
    glim_status s = gcu_check(gcu_launch(fn, at_grid(c, HG), dim3(GCU_ATT_THREADS), smem, st,
                                         c->pdl, args),
                              "attention launch", err);
    if (s == GLIM_OK && a.diag_twice) twice_count++;
    if (s == GLIM_OK && a.warm && fused) warm_count++;
    if (s == GLIM_OK && lean) lean_count++;
    if (s == GLIM_OK && spec) spec_count++;
    if (s == GLIM_OK && spec && c->spec == 3) poll_count++;
    if (s == GLIM_OK && c->group_half_keys > 0 && HG > 1 && HG % 2 == 0) half_count++;
    return s;
}

extern "C" int gcu_attn_blocks(const gcu_attn_call *c, int fused) {
    const int G = c->Hkv > 0 ? c->H / c->Hkv : 0;
    if (G < 1 || c->H % c->Hkv) return 0;
    const dim3 g = at_grid(c, at_hgroups(c, G, fused));
    return (int)(g.x * g.y * g.z);
}

/* ---- test wrapper ------------------------------------------------------------------------ */

extern "C" glim_status gcu_test_attention(const float *q, const float *keys, const float *values,
                                          const float *gate, int n_keys, int H, int Hkv, int D,
                                          float scale, int nsplit, int few, int mma, int pmerge,
                                          float *out, glim_error *err) {
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "no CUDA device");
    int ldq = (2 * H + 2 * Hkv) * D, G = H / Hkv, pos = n_keys - 1;
    size_t kvn = (size_t)n_keys * Hkv * D;
    uint16_t *kh = (uint16_t *)malloc(2 * kvn), *vh = (uint16_t *)malloc(2 * kvn);
    float *row = NULL, *qn = NULL, *part = NULL, *ao = NULL;
    void *kc = NULL, *vc = NULL;
    int *p0 = NULL, *cnt = NULL;
    glim_status s = GLIM_OK;
    if (!kh || !vh) {
        s = glim_fail(err, GLIM_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < kvn; i++) {
        kh[i] = glim_f32_to_bf16(keys[i]);
        vh[i] = glim_f32_to_bf16(values[i]);
    }
    if ((s = gcu_check(cudaMalloc((void **)&row, sizeof(float) * ldq), "alloc", err)) ||
        (s = gcu_check(cudaMemcpy(row + (H + 2 * Hkv) * D, gate, sizeof(float) * H * D, cudaMemcpyHostToDevice), "copy", err)) ||
        (s = gcu_check(cudaMalloc((void **)&qn, sizeof(float) * H * D), "alloc", err)) ||
        (s = gcu_check(cudaMemcpy(qn, q, sizeof(float) * H * D, cudaMemcpyHostToDevice), "copy", err)) ||
        (s = gcu_check(cudaMalloc((void **)&kc, 2 * kvn), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&vc, 2 * kvn), "alloc", err)) ||
        (s = gcu_check(cudaMemcpy(kc, kh, 2 * kvn, cudaMemcpyHostToDevice), "copy", err)) ||
        (s = gcu_check(cudaMemcpy(vc, vh, 2 * kvn, cudaMemcpyHostToDevice), "copy", err)) ||
        (s = gcu_check(cudaMalloc((void **)&part, sizeof(float) * gcu_attn_part_floats(1, Hkv, nsplit, G, D)), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&ao, sizeof(float) * H * D), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&p0, sizeof(int)), "alloc", err)) ||
        (s = gcu_check(cudaMemcpy(p0, &pos, sizeof(int), cudaMemcpyHostToDevice), "copy", err)) ||
        (s = gcu_check(cudaMalloc((void **)&cnt, sizeof(int) * 2 * Hkv), "alloc", err)) ||
        (s = gcu_check(cudaMemset(cnt, 0, sizeof(int) * 2 * Hkv), "memset", err)))
        goto out;
    {
        gcu_attn_call c;
        memset(&c, 0, sizeof c);
        c.qkvg = row;
        c.ldq = ldq;
        c.qn = qn;
        c.kc = kc;
        c.vc = vc;
        c.R = n_keys;
        c.H = H;
        c.Hkv = Hkv;
        c.D = D;
        c.scale = scale;
        c.pos0 = p0;
        c.T = 1;
        c.nsplit = nsplit;
        c.tiles2 = 1;
        c.few = few;
        c.mma = mma;
        c.pmerge = pmerge;
        c.pack = pmerge; /* the tests' merge by the last blocks runs with the packed numbering */
        c.part = part;
        c.counters = cnt;
        c.aout = ao;
        if ((s = gcu_attn_launch(&c, 0, 0, err)) != GLIM_OK) goto out;
        if ((s = gcu_check(cudaDeviceSynchronize(), "attention", err)) != GLIM_OK) goto out;
        s = gcu_check(cudaMemcpy(out, ao, sizeof(float) * H * D, cudaMemcpyDeviceToHost), "copy", err);
    }
out:
    free(kh), free(vh);
    cudaFree(row), cudaFree(qn), cudaFree(part), cudaFree(ao), cudaFree(kc), cudaFree(vc);
    cudaFree(p0), cudaFree(cnt);
    return s;
}
