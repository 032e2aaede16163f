/* persist_probe.cu: how close to the memory's floor can a persistent decode come? A standalone
 * probe (not part of the engine) for issue 4's structural question (bench/RESULTS.md v19-v20).
 *
 * Today's decode launches 5 kernels per layer, and each boundary (PDL wait, prologue, block-end
 * spread) leaves the memory idle: ~34 us per layer against the 64 us the weights take. A
 * persistent kernel could keep fetching weights through those boundaries, since weights do not
 * depend on the activations: a copy-engine ring per block runs ahead into the next product while
 * the consumers wait at a grid barrier and run the next prologue. This probe measures that
 * structure with the real model's byte counts (MLX 4-bit with bf16 scale and bias per 64: 0.5625
 * bytes per weight) and no real arithmetic:
 *   - one block per SM: a producer warp whose lane 0 issues bulk copies (cp.async.bulk, the copy
 *     engine) into a ring of NS slots of CH bytes, and NW consumer warps that read every slot's
 *     16-byte words from shared memory, spend K dependent-free integer ops per word (the loop's
 *     arithmetic, emulated), and free the slot;
 *   - the token's steps per layer: qkvg (32.6 MB), attention (no weights, a fixed time), o_proj
 *     (15.3 MB), gate/up (149.5 MB), down (74.8 MB); then the head (757 MB); each product's bytes
 *     split evenly over the blocks; a grid barrier after every step, and before each step a
 *     "prologue" (a spin of the step's measured prologue time x F in the consumers; attention's
 *     time x F likewise) while the producer goes on filling the ring;
 *   - the time per token against bytes / copy bandwidth (read + written, as `glimmer bench`).
 * Variants: each block's share of a product an even split ("even"), taken in grabs of 4 slots
 * from a counter per product ("counter": faster SMs take more) or the same grabs dealt round
 * robin ("dealt": the counter's address pattern without its balance) or the even share cut into
 * 16 ranges streamed in turn ("16 ranges": the decode's pattern, each warp its own range); the
 * grid barriers on or off (off:
 * the stream alone, steps back to back); and a plain read of the buffer (k_read) as the best a
 * stream of these bytes does. The slots carry their byte counts, a count of 0 ending a step.
 * Build and run on the GPU machine:
 *   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -o build/persist_probe \
 *        bench/persist_probe.cu && build/persist_probe [layers] [trace]
 * ("trace": only the traced lines, each with the ring's state at the spins: session 20)
 * Each line: split, barriers, consumer warps, NS x CH (ring bytes), K, F, ms/token, tok/s,
 * fraction of the floor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gcu.cuh"

#define PROBE_NAME "persist_probe"
#include "probe_common.cuh"

enum { MAX_STEPS = 52 * 5 + 1 };

/* How a product's bytes are dealt out to the blocks. */
enum Split {
    SPLIT_EVEN,    /* each block one contiguous even share */
    SPLIT_COUNTER, /* grabs of 4 slots taken from a counter per product (cnt[step]) */
    SPLIT_DEALT,   /* the same grabs dealt round robin (block b takes b, b + nb, ..) */
    SPLIT_RANGES,  /* the even share cut into 16 contiguous ranges, a chunk of each in turn
                      (the decode's 16 warps, each its own range) */
};
static const char *const split_name[] = {"even", "counter", "dealt", "16 ranges"};

struct Step {
    unsigned long long off;   /* byte offset of the product in the weight buffer */
    unsigned long long bytes; /* 0: no weights (attention) */
    unsigned delay_ns;        /* spun by the consumers after the barrier before this step */
};

struct Args {
    const unsigned char *w;
    Step step[MAX_STEPS];
    int nsteps, ns, ch, k;
    int split;           /* enum Split */
    int bars;            /* 0: no grid barrier between steps (the stream alone) */
    unsigned *bar;       /* the grid barrier's count, monotonic within a launch */
    unsigned *cnt;       /* per step: grabs taken (SPLIT_COUNTER) */
    unsigned long long *sink;
    unsigned long long *trace; /* per (block, step): TRACE_FIELDS words (trace on), else NULL */
};
/* The trace of one step in one block (thread 32, the first consumer): when the step began (past
 * the previous barrier), when its spin ended, when its last slot was consumed; and the ring at
 * the spin's start and end: slots requested ahead of the consumers, and of those how many had
 * landed (their copy complete). It answers whether the ring fills while the consumers spin. */
enum { TR_T0, TR_T1, TR_T2, TR_RING, TRACE_FIELDS };

/* whether the phase of parity `parity` of bar is complete, without waiting */
__device__ __forceinline__ bool mbar_done(uint64_t *bar, unsigned parity) {
    unsigned ok;
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(ok)
                 : "r"(gcu_smem_addr(bar)), "r"(parity)
                 : "memory");
    return ok != 0;
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(gcu_smem_addr(bar)) : "memory");
}
/* the consumer warps' own barrier (named barrier 1): the producer warp never joins it */
__device__ __forceinline__ void consumers_sync(int nthreads) {
    asm volatile("bar.sync 1, %0;" ::"r"(nthreads) : "memory");
}

/* [lo, hi) of a product's bytes for block b: an even split in 16-byte words */
__device__ __forceinline__ void share_of(unsigned long long bytes, int b, int nb, unsigned long long *lo,
                                         unsigned long long *hi) {
    const unsigned long long words = bytes / 16;
    *lo = words * b / nb * 16;
    *hi = words * (b + 1) / nb * 16;
}

/* The producer's side of the ring: slot k's bytes (meta[slot], 0 = the step's end) */
struct Ring {
    uint64_t *full, *empty;
    unsigned *meta;
    unsigned char *buf;
    unsigned k;
    volatile unsigned *issued; /* r.k published for the trace */
};
__device__ __forceinline__ unsigned ring_claim(const Args &a, Ring &r) {
    const unsigned slot = r.k % a.ns;
    if (r.k >= (unsigned)a.ns) gcu_mbar_wait(&r.empty[slot], (r.k / a.ns - 1) & 1);
    return slot;
}
__device__ __forceinline__ void ring_copy(const Args &a, Ring &r, const unsigned char *src, unsigned n,
                                          uint64_t pol) {
    const unsigned slot = ring_claim(a, r);
    r.meta[slot] = n;
    gcu_mbar_expect_tx(&r.full[slot], n);
    gcu_bulk_g2s(r.buf + (size_t)slot * a.ch, src, n, &r.full[slot], pol);
    r.k++;
    *r.issued = r.k;
}
__device__ __forceinline__ void ring_end(const Args &a, Ring &r) {
    const unsigned slot = ring_claim(a, r);
    r.meta[slot] = 0;
    mbar_arrive(&r.full[slot]);
    r.k++;
    *r.issued = r.k;
}

__global__ void __launch_bounds__(544, 1) k_persist(const Args a) {
    extern __shared__ __align__(128) unsigned char smem[];
    Ring r;
    r.full = (uint64_t *)smem, r.empty = r.full + a.ns;
    r.meta = (unsigned *)(r.empty + a.ns);
    r.buf = smem + 128 * ((20 * a.ns + 127) / 128);
    r.k = 0;
    __shared__ unsigned issued;
    r.issued = &issued;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32 - 1;
    if (threadIdx.x == 0) {
        for (int i = 0; i < a.ns; i++) gcu_mbar_init(&r.full[i], 1), gcu_mbar_init(&r.empty[i], nw);
        gcu_mbar_init_fence();
        issued = 0;
    }
    __syncthreads();
    if (warp == 0) { /* the producer: runs ahead across steps, bounded only by the ring */
        if (lane != 0) return;
        const uint64_t pol = gcu_policy_normal();
        for (int s = 0; s < a.nsteps; s++) {
            const unsigned char *base = a.w + a.step[s].off;
            const unsigned long long bytes = a.step[s].bytes;
            if (a.split == SPLIT_COUNTER || a.split == SPLIT_DEALT) { /* grabs of 4 slots: a counter round trip per 4 copies */
                const unsigned grab = 4u * a.ch;
                for (unsigned next = blockIdx.x;; next += gridDim.x) {
                    const unsigned g = a.split == SPLIT_COUNTER ? atomicAdd(&a.cnt[s], 1u) : next;
                    const unsigned long long p0 = (unsigned long long)g * grab;
                    if (p0 >= bytes) break;
                    const unsigned long long p1 = p0 + grab < bytes ? p0 + grab : bytes;
                    for (unsigned long long p = p0; p < p1; p += a.ch)
                        ring_copy(a, r, base + p, (unsigned)(p1 - p < (unsigned)a.ch ? p1 - p : a.ch), pol);
                }
            } else if (a.split == SPLIT_RANGES) {
                unsigned long long lo, hi, wlo[16], whi[16];
                share_of(bytes, blockIdx.x, gridDim.x, &lo, &hi);
                for (int w = 0; w < 16; w++) {
                    share_of(hi - lo, w, 16, &wlo[w], &whi[w]);
                    wlo[w] += lo, whi[w] += lo;
                }
                for (int left = 1; left;) {
                    left = 0;
                    for (int w = 0; w < 16; w++)
                        if (wlo[w] < whi[w]) {
                            const unsigned n = (unsigned)(whi[w] - wlo[w] < (unsigned)a.ch ? whi[w] - wlo[w] : a.ch);
                            ring_copy(a, r, base + wlo[w], n, pol);
                            wlo[w] += n;
                            left = 1;
                        }
                }
            } else {
                unsigned long long lo, hi;
                share_of(bytes, blockIdx.x, gridDim.x, &lo, &hi);
                for (unsigned long long p = lo; p < hi; p += a.ch)
                    ring_copy(a, r, base + p, (unsigned)(hi - p < (unsigned)a.ch ? hi - p : a.ch), pol);
            }
            ring_end(a, r);
        }
        return;
    }
    const int ct = threadIdx.x - 32, nct = nw * 32;
    unsigned acc0 = 0, acc1 = 1, acc2 = 2, acc3 = 3, passed = 0;
    /* the ring as the first consumer sees it: slots requested ahead of it, and how many of those
     * have landed, packed as ahead | landed << 8 */
    auto ring_state = [&]() -> unsigned {
        const unsigned ahead = issued - r.k;
        unsigned landed = 0;
        while (landed < ahead && mbar_done(&r.full[(r.k + landed) % a.ns], ((r.k + landed) / a.ns) & 1)) landed++;
        return ahead | landed << 8;
    };
    for (int s = 0; s < a.nsteps; s++) {
        unsigned long long *tr = a.trace ? a.trace + ((size_t)blockIdx.x * a.nsteps + s) * TRACE_FIELDS : NULL;
        if (tr && ct == 0) tr[TR_T0] = gcu_tl_now(), tr[TR_RING] = ring_state();
        if (a.step[s].delay_ns) { /* the step's prologue (or attention), while the ring fills */
            if (ct == 0) {
                const unsigned long long t0 = gcu_tl_now();
                while (gcu_tl_now() - t0 < a.step[s].delay_ns) {
                }
            }
            consumers_sync(nct);
        }
        if (tr && ct == 0) tr[TR_T1] = gcu_tl_now(), tr[TR_RING] |= (unsigned long long)ring_state() << 32;
        for (;; r.k++) {
            const unsigned slot = r.k % a.ns;
            gcu_mbar_wait(&r.full[slot], (r.k / a.ns) & 1);
            const unsigned n = r.meta[slot];
            const uint4 *src = (const uint4 *)(r.buf + (size_t)slot * a.ch);
            for (unsigned i = ct; i < n / 16; i += nct) {
                const uint4 v = src[i];
                acc0 += v.x, acc1 ^= v.y, acc2 += v.z, acc3 ^= v.w;
                for (int j = 0; j < a.k; j += 4) { /* the loop's arithmetic, four chains */
                    acc0 = acc0 * 3u + v.y;
                    acc1 = acc1 * 5u + v.z;
                    acc2 = acc2 * 7u + v.w;
                    acc3 = acc3 * 9u + v.x;
                }
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(&r.empty[slot]);
            if (n == 0) {
                r.k++;
                break;
            }
        }
        if (tr && ct == 0) tr[TR_T2] = gcu_tl_now();
        if (!a.bars) continue;
        /* the grid barrier: every block's consumers are past this step */
        consumers_sync(nct);
        passed += gridDim.x;
        if (ct == 0) {
            asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(a.bar) : "memory");
            unsigned v;
            do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a.bar) : "memory");
            while (v < passed);
        }
        consumers_sync(nct);
    }
    if ((acc0 ^ acc1 ^ acc2 ^ acc3) == 0x9e3779b9u) a.sink[0] = acc0; /* keeps the reads */
}

/* The read bandwidth reference: every thread streams 16-byte words with 4 loads in flight. */
__global__ void __launch_bounds__(1024) k_read(const uint4 *w, unsigned long long n, unsigned long long *sink) {
    unsigned acc = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 v[4];
#pragma unroll
        for (int j = 0; j < 4; j++) v[j] = __ldcs(&w[i + j * stride]);
#pragma unroll
        for (int j = 0; j < 4; j++) acc += v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
    for (; i < n; i += stride) acc += __ldcs(&w[i]).x;
    if (acc == 0x9e3779b9u) sink[0] = acc;
}

/* The traced run's last token, per kind of step of the layers (qkvg, attention, o_proj, gate/up, down),
 * means over the blocks and layers: the spin, the ring at its start and end (slots requested
 * ahead of the consumers / of those landed), the consumption after the spin against the block's
 * share at an even 1/sms of the copy bandwidth (less what had landed), and the wait at the
 * barrier after it. If the spin's time is hidden, "consume" is short by what landed during it. */
static void trace_report(const Args &a, const unsigned long long *dtrace, int sms, double bw, const double *pro_us,
                         double att_us, double f) {
    const size_t n = (size_t)TRACE_FIELDS * sms * a.nsteps;
    unsigned long long *tr = (unsigned long long *)malloc(n * sizeof *tr);
    if (!tr || cudaMemcpy(tr, dtrace, n * sizeof *tr, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "persist_probe: trace copy failed\n");
        exit(1);
    }
    static const char *const kind[5] = {"qkvg", "attention", "o_proj", "gate/up", "down"};
    double spin[5] = {0}, cons[5] = {0}, ideal[5] = {0}, barw[5] = {0}, a0[5] = {0}, l0[5] = {0}, a1[5] = {0},
           l1[5] = {0}, cnt[5] = {0};
    for (int b = 0; b < sms; b++)
        for (int s = 0; s + 1 < a.nsteps; s++) { /* the layers' steps (the head has no next start) */
            const int k = s % 5;
            const unsigned long long *t = tr + ((size_t)b * a.nsteps + s) * TRACE_FIELDS, *nx = t + TRACE_FIELDS;
            const unsigned r0 = (unsigned)t[TR_RING], r1 = (unsigned)(t[TR_RING] >> 32);
            spin[k] += (t[TR_T1] - t[TR_T0]) * 1e-3;
            cons[k] += (t[TR_T2] - t[TR_T1]) * 1e-3;
            barw[k] += (nx[TR_T0] - t[TR_T2]) * 1e-3;
            a0[k] += r0 & 0xff, l0[k] += r0 >> 8 & 0xff, a1[k] += r1 & 0xff, l1[k] += r1 >> 8 & 0xff;
            const double share = (double)a.step[s].bytes / sms, have = (double)(r1 >> 8 & 0xff) * a.ch;
            ideal[k] += (share > have ? share - have : 0.0) / (bw / sms) * 1e6;
            cnt[k]++;
        }
    printf("\n  ring trace (F = %.1f; spins as emulated: qkvg %.1f, attention %.1f, o_proj %.1f, gate/up %.1f, down "
           "%.1f us x F):\n\n  | step | spin us | ring at spin start: ahead / landed | at spin end | consume us | "
           "even-rate consume us | barrier wait us |\n  | --- | --- | --- | --- | --- | --- | --- |\n",
           f, pro_us[0], att_us, pro_us[1], pro_us[2], pro_us[3]);
    for (int k = 0; k < 5; k++) {
        const double c = cnt[k] > 0 ? cnt[k] : 1;
        printf("  | %s | %.2f | %.1f / %.1f | %.1f / %.1f | %.2f | %.2f | %.2f |\n", kind[k], spin[k] / c, a0[k] / c,
               l0[k] / c, a1[k] / c, l1[k] / c, cons[k] / c, ideal[k] / c, barw[k] / c);
    }
    printf("\n");
    free(tr);
}

int main(int argc, char **argv) {
    const int L = argc > 1 ? atoi(argv[1]) : 52;
    if (L < 1 || L > 52) {
        fprintf(stderr, "persist_probe: layers must be 1..52\n");
        return 2;
    }
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const double bpw = 0.5625; /* 4-bit weights, bf16 scale and bias per 64 */
    const unsigned long long H = 6656, I = 19968, QKVG = 4096 + 256 + 256 + 4096, V = 202048;
    const unsigned long long prod[4] = {QKVG * H, 4096 * H, 2 * I * H, H * I};
    /* session 15's run 4 at context 0 (us): prologues of qkvg, o_proj, gate/up, down; attention */
    const double pro_us[4] = {3.8, 1.8, 3.9, 4.1}, att_us = 7.8;
    unsigned long long total = 0;
    unsigned long long bytes_of[5];
    for (int i = 0; i < 4; i++) bytes_of[i] = (unsigned long long)(prod[i] * bpw) / 16 * 16;
    bytes_of[4] = (unsigned long long)(V * H * bpw) / 16 * 16;
    for (int i = 0; i < 4; i++) total += bytes_of[i] * L;
    total += bytes_of[4];
    unsigned char *w;
    CK(cudaMalloc(&w, total));
    CK(cudaMemset(w, 0x5a, total));
    /* the copy bandwidth the engine's floor uses: device to device, read + written */
    const double bw = probe_copy_bandwidth();
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const double floor_ms = total / bw * 1e3;
    printf("persist_probe: %d SMs, %d layers, %.2f GB per token, copy bandwidth %.0f GB/s, floor %.3f ms "
           "(%.1f tok/s)\n", sms, L, total / 1e9, bw / 1e9, floor_ms, 1e3 / floor_ms);

    unsigned *bar, *cnt;
    unsigned long long *sink;
    CK(cudaMalloc(&bar, 4));
    CK(cudaMalloc(&cnt, 4 * MAX_STEPS));
    CK(cudaMalloc(&sink, 8));
    {   /* the plain read of the whole buffer: the best a stream of these bytes does */
        float rbest = 1e30f;
        for (int rep = 0; rep < 4; rep++) {
            float ms;
            CK(cudaEventRecord(e0));
            k_read<<<sms * 2, 1024>>>((const uint4 *)w, total / 16, sink);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (ms < rbest) rbest = ms;
        }
        printf("plain read of the %.2f GB (k_read, 16-byte loads): %.3f ms = %.1f %% of the floor's time\n\n",
               total / 1e9, rbest, 100.0 * floor_ms / rbest);
    }
    static Args a;
    a.w = w;
    a.bar = bar;
    a.cnt = cnt;
    a.sink = sink;
    printf("| split | barriers | warps | ring | K | F | ms/token | tok/s | of floor |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    CK(cudaFuncSetAttribute(k_persist, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
    /* argv[2] "trace": only the traced configurations (cheap: ~10 s), each followed by the
     * ring's state per kind of step (trace_report) */
    const int trace_only = argc > 2 && strcmp(argv[2], "trace") == 0;
    unsigned long long *trace;
    CK(cudaMalloc(&trace, sizeof(unsigned long long) * TRACE_FIELDS * sms * MAX_STEPS));
    /* split (enum Split), barriers, consumer warps, slots, slot bytes, K, F, traced */
    struct { int split, bars, nw, ns, ch, k; double f; int trace; } cfg[] = {
        {0, 0, 8, 12, 16384, 0, 0.0}, {2, 0, 8, 12, 16384, 0, 0.0}, {1, 0, 8, 12, 16384, 0, 0.0},
        {0, 0, 8, 24, 8192, 0, 0.0},  {2, 0, 8, 24, 8192, 0, 0.0},  {1, 0, 8, 24, 8192, 0, 0.0},
        {0, 0, 8, 4, 16384, 0, 0.0},  {2, 0, 8, 4, 16384, 0, 0.0},  {2, 1, 8, 12, 16384, 0, 0.0},
        {1, 1, 8, 12, 16384, 0, 0.0}, {2, 1, 8, 12, 16384, 0, 1.0}, {1, 1, 8, 12, 16384, 0, 1.0},
        {0, 0, 8, 12, 16384, 0, 0.0}, {2, 0, 8, 12, 16384, 0, 0.0}, {1, 0, 8, 12, 16384, 0, 0.0},
        {3, 0, 8, 32, 2048, 0, 0.0},  {0, 0, 8, 32, 2048, 0, 0.0},  {1, 0, 8, 32, 2048, 0, 0.0},
        {3, 0, 8, 64, 2048, 0, 0.0},  {3, 0, 8, 24, 8192, 0, 0.0},
        /* the arithmetic budget: how many ops per 16-byte word before the stream slows */
        {1, 1, 16, 12, 16384, 8, 0.0}, {1, 1, 16, 12, 16384, 16, 0.0}, {1, 1, 16, 12, 16384, 24, 0.0},
        /* traced: does the ring fill while the consumers spin (v20's third finding)? */
        {1, 1, 8, 12, 16384, 0, 0.0, 1}, {1, 1, 8, 12, 16384, 0, 1.0, 1}, {2, 1, 8, 12, 16384, 0, 1.0, 1},
        {1, 1, 8, 24, 8192, 0, 1.0, 1},
    };
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        if (trace_only && !cfg[c].trace) continue;
        a.trace = cfg[c].trace ? trace : NULL;
        a.ns = cfg[c].ns, a.ch = cfg[c].ch, a.k = cfg[c].k, a.split = cfg[c].split, a.bars = cfg[c].bars;
        a.nsteps = 0;
        unsigned long long off = 0;
        for (int l = 0; l < L; l++) {
            const unsigned long long o_qkvg = off, o_o = o_qkvg + bytes_of[0], o_gu = o_o + bytes_of[1],
                                     o_d = o_gu + bytes_of[2];
            off = o_d + bytes_of[3];
            a.step[a.nsteps++] = {o_qkvg, bytes_of[0], (unsigned)(pro_us[0] * 1e3 * cfg[c].f)};
            a.step[a.nsteps++] = {0, 0, (unsigned)(att_us * 1e3 * cfg[c].f)};
            a.step[a.nsteps++] = {o_o, bytes_of[1], (unsigned)(pro_us[1] * 1e3 * cfg[c].f)};
            a.step[a.nsteps++] = {o_gu, bytes_of[2], (unsigned)(pro_us[2] * 1e3 * cfg[c].f)};
            a.step[a.nsteps++] = {o_d, bytes_of[3], (unsigned)(pro_us[3] * 1e3 * cfg[c].f)};
        }
        a.step[a.nsteps++] = {off, bytes_of[4], (unsigned)(pro_us[0] * 1e3 * cfg[c].f)};
        const size_t smem = 128 * ((20 * (size_t)a.ns + 127) / 128) + (size_t)a.ns * a.ch;
        const int threads = 32 * (1 + cfg[c].nw);
        float sum = 0;
        const int tokens = 6;
        for (int t = 0; t <= tokens; t++) { /* token 0 warms up */
            float ms;
            CK(cudaMemset(bar, 0, 4));
            CK(cudaMemset(cnt, 0, 4 * MAX_STEPS));
            CK(cudaEventRecord(e0));
            k_persist<<<sms, threads, smem>>>(a);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (t) sum += ms;
        }
        const double ms = sum / tokens;
        printf("| %s | %s | %d | %d x %d KB | %d | %.1f | %.3f | %.1f | %.1f %% |\n", split_name[a.split],
               a.bars ? "yes" : "no", cfg[c].nw, a.ns, a.ch / 1024, a.k, cfg[c].f, ms, 1e3 / ms,
               100.0 * floor_ms / ms);
        if (a.trace) trace_report(a, trace, sms, bw, pro_us, att_us, cfg[c].f);
        fflush(stdout);
    }
    return 0;
}
