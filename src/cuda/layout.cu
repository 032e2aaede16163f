/* layout.cu: the tiled weight format of gcu.cuh: which host matrices map to it, the one-time
 * re-layout at load (host side, into pinned chunks copied while the next chunk is laid out),
 * and random tiles generated on the device for synthetic models.
 *
 * Unit (rb, span), MLX nibble stream: lane (g, t) of the warp owns two 16-byte words, 4 words
 * of row rb*16+g and 4 words of row rb*16+g+8, interleaved as gcu_unit_q_w32 says. Word i
 * of lane t is the original word ow(t, i) of the span, chosen so that the four lanes t = 0..3
 * holding word i all hold the same scale group (an mma sums over those four lanes). After the
 * 1024 bytes of words come the scale/bias pairs, per g, per piece: row g's, then row g+8's
 * (mv_scales_of; so that the integer path's lanes load their own pieces only, with no selects:
 * tma_unit_load's HALF, session 48; until then per g all of row g's pieces, then row g+8's). Dense
 * bf16 unit: lane (g, t) holds columns span*32 + t*8 .. +8 of rows g and g+8, in the same two
 * words. */
#include <stdlib.h>
#include <string.h>

#include "cuda/gcu.cuh"

extern "C" void gcu_progress_add(uint64_t bytes);

extern "C" void gcu_rows_plain(void *ctx, int r, gcu_rowsrc *o) {
    o->m = (const glim_matrix *)ctx;
    o->r = r;
}

extern "C" void gcu_rows_swiglu(void *ctx, int r, gcu_rowsrc *o) {
    const gcu_mat_pair *p = (const gcu_mat_pair *)ctx;
    int rb = r / 16, k = r % 16, row = rb * 8 + (k & 7);
    if (row >= p->gate->rows) return;
    o->m = k < 8 ? p->gate : p->up;
    o->r = row;
}

extern "C" int gcu_xfmt_make(gcu_xfmt *f, int kind, int bits, int group, int K) {
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->K = K;
    if (K <= 0) return -1;
    if (kind == GCU_KIND_DENSE) {
        f->nspan = (K + 31) / 32;
        f->kx = f->nspan * 32;
        return 0;
    }
    if (bits != 4 && bits != 8) return -1;
    if (group <= 0 || K % group) return -1;
    f->bits = bits;
    f->group = group;
    f->gn = group * bits / 4;
    if (f->gn < 32) return -1;
    if (f->gn < 128 ? 128 % f->gn : f->gn % 128) return -1;
    f->pps = f->gn >= 128 ? 1 : 128 / f->gn;
    long nib = (long)K * bits / 4;
    f->nspan = (int)((nib + 127) / 128);
    f->kx = f->nspan * 128;
    return 0;
}

extern "C" void gcu_mat_geometry(gcu_mat *m, const gcu_xfmt *f, int sbf32, int rows) {
    m->f = *f;
    m->sbf32 = sbf32;
    m->rows = rows;
    m->nrb = (rows + 15) / 16;
    m->unit_bytes = f->kind == GCU_KIND_DENSE ? 1024 : 1024 + 16 * f->pps * (sbf32 ? 8 : 4);
    m->bytes = (size_t)m->nrb * (size_t)f->nspan * (size_t)m->unit_bytes;
}

extern "C" glim_status gcu_mat_format_of(const glim_matrix *W, gcu_xfmt *f, int *sbf32,
                                         glim_error *err) {
    const char *name = W->name ? W->name : "(matrix)";
    if (!W->bits) {
        if (W->dtype != GLIM_DT_BF16)
            return glim_fail(err, GLIM_E_UNSUPPORTED,
                             "CUDA backend: dense weights must be BF16; %s is %s", name,
                             glim_dtype_name(W->dtype));
        gcu_xfmt_make(f, GCU_KIND_DENSE, 0, 0, (int)W->cols);
        *sbf32 = 0;
        return GLIM_OK;
    }
    if (W->dtype != GLIM_DT_BF16 && W->dtype != GLIM_DT_F16 && W->dtype != GLIM_DT_F32)
        return glim_fail(err, GLIM_E_UNSUPPORTED, "CUDA backend: scales of %s are %s (expected "
                         "BF16, F16 or F32)", name, glim_dtype_name(W->dtype));
    if (gcu_xfmt_make(f, GCU_KIND_Q, W->bits, W->group_size, (int)W->cols) != 0)
        return glim_fail(err, GLIM_E_UNSUPPORTED,
                         "CUDA backend: %s is %d-bit with group %d over %lld columns; the GPU "
                         "kernels take 4 or 8 bits with groups of 32, 64 or 128", name, W->bits,
                         W->group_size, (long long)W->cols);
    *sbf32 = W->dtype != GLIM_DT_BF16; /* f16 and f32 widen exactly to f32 */
    return GLIM_OK;
}

/* The original 32-bit word (within the span) that lane t holds as its word i. */
static int word_of(int gn, int t, int i) {
    int wpg = gn / 32;
    return wpg >= 4 ? 4 * t + i : (i / wpg) * (gn / 8) + t * wpg + (i % wpg);
}

static float load_sb(const void *p, glim_dtype dt, size_t i) { return glim_load_f32(p, dt, i); }

static uint32_t sb_word_bf16(const glim_matrix *m, size_t i) {
    uint16_t s = ((const uint16_t *)m->scales)[i], b = ((const uint16_t *)m->biases)[i];
    return (uint32_t)s | (uint32_t)b << 16;
}

static void tile_unit_q(const gcu_mat *M, const gcu_rowsrc rs[16], int s, uint8_t *dst) {
    const gcu_xfmt *f = &M->f;
    uint32_t *w = (uint32_t *)dst;
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t = lane & 3;
        for (int half = 0; half < 2; half++) {
            const gcu_rowsrc *r = &rs[g + 8 * half];
            int64_t words = r->m ? r->m->cols * r->m->bits / 32 : 0;
            const uint32_t *row = r->m ? (const uint32_t *)r->m->data + r->r * words : NULL;
            for (int i = 0; i < 4; i++) {
                int64_t ow = (int64_t)s * 16 + word_of(f->gn, t, i);
                w[gcu_unit_q_w32(lane, half, i)] = row && ow < words ? row[ow] : 0u;
            }
        }
    }
    uint8_t *sb = dst + 1024;
    int pn = 128 / f->pps, sbsz = M->sbf32 ? 8 : 4;
    for (int g = 0; g < 8; g++)
        for (int half = 0; half < 2; half++)
            for (int pc = 0; pc < f->pps; pc++) {
                const gcu_rowsrc *r = &rs[g + 8 * half];
                uint8_t *o = sb + ((g * f->pps + pc) * 2 + half) * sbsz;
                int64_t gi = ((int64_t)s * 128 + pc * pn) / f->gn;
                int64_t ng = r->m ? r->m->cols / r->m->group_size : 0;
                if (!r->m || gi >= ng) {
                    memset(o, 0, (size_t)sbsz);
                    continue;
                }
                size_t idx = (size_t)(r->r * ng + gi);
                if (M->sbf32) {
                    float v[2] = {load_sb(r->m->scales, r->m->dtype, idx),
                                  load_sb(r->m->biases, r->m->dtype, idx)};
                    memcpy(o, v, 8);
                } else {
                    uint32_t v = sb_word_bf16(r->m, idx);
                    memcpy(o, &v, 4);
                }
            }
}

static void tile_unit_dense(const gcu_rowsrc rs[16], int s, uint8_t *dst) {
    uint16_t *o = (uint16_t *)dst;
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t = lane & 3;
        for (int half = 0; half < 2; half++) {
            const gcu_rowsrc *r = &rs[g + 8 * half];
            const uint16_t *row = r->m ? (const uint16_t *)r->m->data + r->r * r->m->cols : NULL;
            for (int e = 0; e < 8; e++) {
                int64_t c = (int64_t)s * 32 + t * 8 + e;
                o[gcu_unit_u4(lane, half) * 8 + e] = row && c < r->m->cols ? row[c] : 0;
            }
        }
    }
}

extern "C" void gcu_tile_rows(const gcu_mat *m, void (*src)(void *, int, gcu_rowsrc *), void *ctx,
                              int rb0, int rb1, void *dst) {
    uint8_t *o = (uint8_t *)dst;
    for (int rb = rb0; rb < rb1; rb++) {
        gcu_rowsrc rs[16];
        for (int k = 0; k < 16; k++) {
            int r = rb * 16 + k;
            rs[k].m = NULL;
            rs[k].r = 0;
            if (r < m->rows) src(ctx, r, &rs[k]);
        }
        for (int s = 0; s < m->f.nspan; s++, o += m->unit_bytes) {
            if (m->f.kind == GCU_KIND_DENSE)
                tile_unit_dense(rs, s, o);
            else
                tile_unit_q(m, rs, s, o);
        }
    }
}

#define GCU_UPLOAD_CHUNK (32u << 20)

extern "C" glim_status gcu_mat_upload(gcu_mat *m, void (*src)(void *, int, gcu_rowsrc *),
                                      void *ctx, glim_error *err) {
    static void *pinned[2];
    static cudaEvent_t done[2];
    glim_status s;
    if (!pinned[0]) {
        for (int i = 0; i < 2; i++) {
            if ((s = gcu_check(cudaMallocHost(&pinned[i], GCU_UPLOAD_CHUNK), "pinned upload buffer",
                               err)) != GLIM_OK)
                return s;
            if ((s = gcu_check(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming),
                               "event", err)) != GLIM_OK)
                return s;
        }
    }
    if ((s = gcu_check(cudaMalloc((void **)&m->w, m->bytes), "allocating weights", err)) != GLIM_OK)
        return s;
    size_t rb_bytes = (size_t)m->f.nspan * m->unit_bytes;
    int per = (int)(GCU_UPLOAD_CHUNK / rb_bytes);
    if (per < 1) {
        /* A row block larger than the chunk: lay out on the heap and copy synchronously. */
        void *tmp = malloc(rb_bytes);
        if (!tmp) return glim_fail(err, GLIM_E_NOMEM, "upload: out of host memory");
        for (int rb = 0; rb < m->nrb && s == GLIM_OK; rb++) {
            gcu_tile_rows(m, src, ctx, rb, rb + 1, tmp);
            s = gcu_check(cudaMemcpy((uint8_t *)m->w + rb * rb_bytes, tmp, rb_bytes,
                                     cudaMemcpyHostToDevice), "uploading weights", err);
            gcu_progress_add(rb_bytes);
        }
        free(tmp);
        return s;
    }
    int k = 0;
    for (int rb = 0; rb < m->nrb; rb += per, k ^= 1) {
        int n = m->nrb - rb < per ? m->nrb - rb : per;
        if ((s = gcu_check(cudaEventSynchronize(done[k]), "upload", err)) != GLIM_OK) return s;
        gcu_tile_rows(m, src, ctx, rb, rb + n, pinned[k]);
        if ((s = gcu_check(cudaMemcpyAsync((uint8_t *)m->w + (size_t)rb * rb_bytes, pinned[k],
                                           (size_t)n * rb_bytes, cudaMemcpyHostToDevice, 0),
                           "uploading weights", err)) != GLIM_OK)
            return s;
        cudaEventRecord(done[k], 0);
        gcu_progress_add((uint64_t)n * rb_bytes);
    }
    return gcu_check(cudaStreamSynchronize(0), "uploading weights", err);
}

/* ---- random tiles ------------------------------------------------------------------------ */

__device__ __forceinline__ uint32_t gcu_hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (uint32_t)x;
}

__global__ void k_random_tiles(uint32_t *w, size_t nwords, int unit_words, int kind, int pps,
                               uint64_t seed, float sd) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nwords;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t r = gcu_hash(seed * 0x9e3779b97f4a7c15ull + i);
        int off = (int)(i % (size_t)unit_words);
        if (kind == GCU_KIND_DENSE) {
            /* two bf16 ~ U(-1.7, 1.7) * sd */
            float a = ((r & 0xffff) / 65535.0f * 2.0f - 1.0f) * 1.7f * sd;
            float b = ((r >> 16) / 65535.0f * 2.0f - 1.0f) * 1.7f * sd;
            w[i] = gcu_bf16_bits(a) | gcu_bf16_bits(b) << 16;
        } else if (off < 256) {
            w[i] = r;
        } else {
            /* q uniform on 0..15 has sd 4.6: scale sd/4.6, bias centring the group */
            float s = sd / 4.6f * (0.75f + 0.5f * (r & 0xffff) / 65535.0f);
            float b = -7.5f * s * (0.9f + 0.2f * (r >> 16) / 65535.0f);
            w[i] = gcu_bf16_bits(s) | gcu_bf16_bits(b) << 16;
        }
    }
}

extern "C" glim_status gcu_mat_random(gcu_mat *m, uint64_t seed, float sd, cudaStream_t st,
                                      glim_error *err) {
    glim_status s;
    if ((s = gcu_check(cudaMalloc((void **)&m->w, m->bytes), "allocating weights", err)) != GLIM_OK)
        return s;
    size_t nwords = m->bytes / 4;
    k_random_tiles<<<4 * gcu_sm_count(), 256, 0, st>>>((uint32_t *)m->w, nwords,
                                                       m->unit_bytes / 4, m->f.kind, m->f.pps,
                                                       seed, sd);
    return gcu_check(cudaGetLastError(), "random weights", err);
}
