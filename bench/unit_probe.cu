/* unit_probe.cu: how fast can an SM compute the decode matvec's units when their bytes are
 * already in shared memory? A standalone probe (not part of the engine) for issue 4's loop
 * question (bench/RESULTS.md v17-v22): with every weight byte an L2 hit the decode is only ~12 %
 * faster (GLIM_CUDA_DIAG_WINDOW), so the loops' own compute runs at about the memory's pace and
 * no ring, prefetch or persistent structure can hide a boundary behind a catch-up. This probe
 * times the engine's own unit code (tma_unit_load + dmv_unit_i8: the integer path, MLX 4-bit,
 * groups of 64, bf16 scales: the 30B's products) on units that sit in a per-warp ring of
 * shared memory filled once, with no copies, barriers or waits, and reports units per
 * microsecond per SM against the pace at which the memory delivers them (copy bandwidth / SMs /
 * 1152 bytes per unit). Variants of the loop around the same unit code:
 *   plain     load a unit, compute it (as tma_units does)
 *   ahead     the next unit's registers loaded before this one is computed (software pipeline)
 *   pairs     two units per step into two accumulator sets (two independent chains)
 *   core      plain without the per-group epilogue (scales, the digits' combination, the fp32
 *             sums): the unit's loads, nibble masks and four mma only, their integer sums
 *             carried along the row; plain's rate against core's says what the epilogue costs
 *   span      span-major (RESULTS v23, what comes next 2): per span, the lane's digits loaded
 *             once (dmv_unit_i8_held) for the units of SPAN_RB row blocks (gate/up's 19 per
 *             block), one pair of sums per row block in registers, the row ends once per 52
 *             spans: can a loop that needs span s's digits only when it reaches span s (so
 *             that the staging could run ahead of it, not before it) keep plain's rate?
 * each with 16 warps (the decode's block), 8 (is the SM issue-bound or latency-bound?) and 32 (at
 * most 64 registers a thread: what a 1024-thread decode block, whose prologue would keep half the
 * elements per thread, could have).
 * A row end (the shuffle and a store) every nspan units, as the loop has.
 * Build and run on the GPU machine:
 *   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude -Xptxas -v -o build/unit_probe \
 *        bench/unit_probe.cu && build/unit_probe */
#include <stdio.h>
#include <stdlib.h>

#include "cuda/decode_mv_tma.cuh"

#define PROBE_NAME "unit_probe"
#include "probe_common.cuh"

enum { PPS = 2, NSPAN = 52 /* 6656 / 128: gate/up's and qkvg's row */, RING = 4 /* units per warp (the decode's ring holds 9; for compute the count does not matter) */ };
enum { V_PLAIN, V_AHEAD, V_PAIRS, V_CORE, V_SPAN, NV };
enum { SPAN_RB = 19 }; /* gate/up: 2496 row blocks on 132 blocks, 18-19 each */
enum { CHUNK = 3 }; /* units per bulk copy in the decode (9-unit rings of 3 slots) */
/* Where the decode waits on a chunk's mbarrier (an asm with a memory clobber): the compiler may
 * not move shared-memory loads across it, so the probe keeps the same fence every CHUNK units. */
__device__ __forceinline__ void chunk_fence(int j) {
    if (j % CHUNK == CHUNK - 1) asm volatile("" ::: "memory");
}
static const char *const vname[NV] = {"plain", "ahead", "pairs", "core", "span"};
typedef MvSlot<GCU_KIND_Q, PPS, false> Unit;

/* dmv_unit_i8's integer half alone (V_CORE): the same digit loads, masks and mma, the sums
 * carried in dd across the row instead of scaled per group. The unit's scale words are loaded
 * (tma_unit_load) and folded in by one integer add so that their loads are not dropped. */
__device__ __forceinline__ void unit_core(const Unit &s, const uint4 *dp, bool bvalid, int dd[4]) {
    const uint4 z = make_uint4(0, 0, 0, 0), b01 = bvalid ? dp[0] : z, b23 = bvalid ? dp[DMV_I8_HALF_U4] : z;
#pragma unroll
    for (int i = 0; i < 4; i++) dmv_i8_word_mma(s, b01, b23, i, dd);
    dd[3] += (int)(s.sb[0] ^ s.sb[PPS - 1]);
}

/* Shared memory: the digits of one staged row (NSPAN spans), its (E, sum) per group, then each
 * warp's ring of RING units (72 uint4 each: 64 of nibbles, 8 of scales and biases). */
__host__ __device__ constexpr int dig_u4() { return NSPAN * DMV_I8_SPAN_U4; }
__host__ __device__ constexpr int ex_u4() { return NSPAN * PPS * 8 / 16; }
__host__ __device__ constexpr int unit_u4() { return 72; }

/* A row block's end, as the decode has it: the lanes' sums (acc, cleared) combined by
 * dmv_row_sums, here into keep so that nothing is dropped. */
__device__ __forceinline__ void row_end(float *acc, float &keep) {
    float vg[1], vh[1];
    dmv_row_sums<GCU_KIND_Q, true>(acc, vg, vh);
    keep += vg[0] + vh[0];
}

template <int V, int NT>
__global__ void __launch_bounds__(NT, 1) k_units(const uint4 *src, int units, float *out, unsigned long long *ns) {
    extern __shared__ __align__(16) uint4 sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int total = dig_u4() + ex_u4() + nw * RING * unit_u4();
    for (int i = threadIdx.x; i < total; i += blockDim.x) sm[i] = src[i];
    __syncthreads();
    const uint4 *d0 = sm, *ring = sm + dig_u4() + ex_u4() + warp * RING * unit_u4();
    /* the scales must be finite: the bf16 words of the ring's scale area get a small exponent */
    const float2 *e0 = (const float2 *)(sm + dig_u4());
    const int g = lane >> 2, t = lane & 3;
    const bool dvalid = g < 3, xvalid = t == 0;
    const uint4 *dl = dmv_i8_lane_digits(d0, g, t);
    const float cw = t == 0 ? 1.0f / 128.0f : t == 1 ? 1.0f / 2097152.0f : 0.0f;
    float acc[4] = {0, 0, 0, 0}, acc2[4] = {0, 0, 0, 0}, keep = 0.0f;
    unsigned long long t0 = 0;
    if (threadIdx.x == 0) t0 = gcu_tl_now();
    int sp = 0, k = 0;
    if (V == V_PLAIN) {
        for (int j = 0; j < units; j++) {
            Unit u;
            tma_unit_load(u, ring + k * unit_u4(), lane);
            if (++k == RING) k = 0;
            dmv_unit_i8<PPS, false>(u, dl + sp * DMV_I8_SPAN_U4, dvalid, e0 + sp * PPS, cw, xvalid, acc);
            chunk_fence(j);
            if (++sp == NSPAN) {
                row_end(acc, keep);
                sp = 0;
            }
        }
    } else if (V == V_AHEAD) {
        Unit u;
        tma_unit_load(u, ring, lane);
        k = 1;
        for (int j = 0; j < units; j++) {
            Unit nx;
            chunk_fence(j); /* the next unit's chunk waited for before its load */
            tma_unit_load(nx, ring + k * unit_u4(), lane); /* the next unit (wraps inside the ring) */
            if (++k == RING) k = 0;
            dmv_unit_i8<PPS, false>(u, dl + sp * DMV_I8_SPAN_U4, dvalid, e0 + sp * PPS, cw, xvalid, acc);
            u = nx;
            if (++sp == NSPAN) {
                row_end(acc, keep);
                sp = 0;
            }
        }
    } else if (V == V_CORE) {
        int dd[4] = {0, 0, 0, 0};
        for (int j = 0; j < units; j++) {
            Unit u;
            tma_unit_load(u, ring + k * unit_u4(), lane);
            if (++k == RING) k = 0;
            unit_core(u, dl + sp * DMV_I8_SPAN_U4, dvalid, dd);
            chunk_fence(j);
            if (++sp == NSPAN) {
                acc[0] += (float)(dd[0] * 128 + dd[1]);
                acc[1] += (float)(dd[2] * 128 + dd[3]);
                dd[0] = dd[1] = dd[2] = dd[3] = 0;
                row_end(acc, keep);
                sp = 0;
            }
        }
    } else if (V == V_SPAN) {
        float accs[SPAN_RB][4]; /* [2] and [3] unused: dmv_row_sums clears four */
#pragma unroll
        for (int rb = 0; rb < SPAN_RB; rb++) accs[rb][0] = accs[rb][1] = accs[rb][2] = accs[rb][3] = 0.0f;
        for (int j = 0; j + SPAN_RB <= units; j += SPAN_RB) {
            const uint4 z = make_uint4(0, 0, 0, 0), *dp = dl + sp * DMV_I8_SPAN_U4;
            const uint4 b01 = dvalid ? dp[0] : z, b23 = dvalid ? dp[DMV_I8_HALF_U4] : z;
#pragma unroll
            for (int rb = 0; rb < SPAN_RB; rb++) {
                Unit u;
                tma_unit_load(u, ring + k * unit_u4(), lane);
                if (++k == RING) k = 0;
                dmv_unit_i8_held<PPS, false>(u, b01, b23, e0 + sp * PPS, cw, xvalid, accs[rb]);
                chunk_fence(rb); /* the ring's chunk waits, as the decode has them */
            }
            if (++sp == NSPAN) {
#pragma unroll
                for (int rb = 0; rb < SPAN_RB; rb++) {
                    row_end(accs[rb], keep);
                }
                sp = 0;
            }
        }
        acc[0] += accs[0][0];
    } else {
        for (int j = 0; j + 1 < units; j += 2) { /* NSPAN is even: a pair never crosses a row end */
            Unit u, w;
            tma_unit_load(u, ring + k * unit_u4(), lane);
            if (++k == RING) k = 0;
            tma_unit_load(w, ring + k * unit_u4(), lane);
            if (++k == RING) k = 0;
            dmv_unit_i8<PPS, false>(u, dl + sp * DMV_I8_SPAN_U4, dvalid, e0 + sp * PPS, cw, xvalid, acc);
            dmv_unit_i8<PPS, false>(w, dl + (sp + 1) * DMV_I8_SPAN_U4, dvalid, e0 + (sp + 1) * PPS, cw, xvalid, acc2);
            asm volatile("" ::: "memory"); /* a fence per pair: a little stricter than per chunk */
            sp += 2;
            if (sp == NSPAN) {
#pragma unroll
                for (int e = 0; e < 4; e++) acc[e] += acc2[e], acc2[e] = 0.0f;
                row_end(acc, keep);
                sp = 0;
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) ns[blockIdx.x] = gcu_tl_now() - t0;
    out[blockIdx.x * blockDim.x + threadIdx.x] = keep + acc[0] + acc[1] + acc2[0];
}

template <int V, int NT>
static double run(int sms, int warps, const uint4 *src, float *out, unsigned long long *ns, int units, size_t smem) {
    CK(cudaFuncSetAttribute(k_units<V, NT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    unsigned long long *h = (unsigned long long *)malloc(sizeof *h * sms);
    double best = 1e30;
    for (int rep = 0; rep < 4; rep++) { /* rep 0 warms up */
        k_units<V, NT><<<sms, 32 * warps, smem>>>(src, units, out, ns);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h, ns, sizeof *h * sms, cudaMemcpyDeviceToHost));
        unsigned long long worst = 0;
        for (int b = 0; b < sms; b++)
            if (h[b] > worst) worst = h[b];
        if (rep && worst < best) best = (double)worst;
    }
    free(h);
    return (double)units * warps / (best * 1e-3); /* units per us per SM (the slowest block) */
}

int main(void) {
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    /* the copy bandwidth the engine's floor uses: device to device, read + written */
    const double bw = probe_copy_bandwidth(), pace = bw / sms / 1152.0 / 1e6; /* units / us / SM */
    /* random bytes; the scale and bias words (uint4 64..71 of each unit) and the groups' (E, sum)
     * are set to small finite floats so that no NaN or denormal slows the arithmetic */
    const int maxw = 32, total = dig_u4() + ex_u4() + maxw * RING * unit_u4();
    uint4 *h = (uint4 *)malloc(sizeof(uint4) * total);
    unsigned s = 12345u;
    for (int i = 0; i < total; i++) {
        unsigned *w = (unsigned *)&h[i];
        for (int j = 0; j < 4; j++) s = s * 1664525u + 1013904223u, w[j] = s;
    }
    float *ex = (float *)(h + dig_u4());
    for (int i = 0; i < ex_u4() * 4; i++) ex[i] = i % 2 ? 0.5f : 0.03125f;
    for (int i = dig_u4() + ex_u4(); i < total; i++)
        if ((i - dig_u4() - ex_u4()) % unit_u4() >= 64) h[i] = make_uint4(0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u);
    uint4 *src;
    float *out;
    unsigned long long *ns;
    CK(cudaMalloc(&src, sizeof(uint4) * total));
    CK(cudaMemcpy(src, h, sizeof(uint4) * total, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&out, sizeof(float) * sms * 1024));
    CK(cudaMalloc(&ns, sizeof(unsigned long long) * sms));
    const int units = 4096; /* per warp: ~150 us at the memory's pace */
    printf("unit_probe: %d SMs, copy bandwidth %.0f GB/s: the memory delivers %.1f units (1152 B) per us per SM\n\n",
           sms, bw / 1e9, pace);
    printf("| loop | warps | units / us / SM | x the memory's pace |\n| --- | --- | --- | --- |\n");
    const int wl[3] = {16, 8, 32};
    for (int i = 0; i < 3; i++) {
        const int warps = wl[i];
        const size_t smem = sizeof(uint4) * (dig_u4() + ex_u4() + warps * RING * unit_u4());
        double r[NV];
        if (warps == 32) {
            r[0] = run<V_PLAIN, 1024>(sms, warps, src, out, ns, units, smem);
            r[1] = run<V_AHEAD, 1024>(sms, warps, src, out, ns, units, smem);
            r[2] = run<V_PAIRS, 1024>(sms, warps, src, out, ns, units, smem);
            r[3] = run<V_CORE, 1024>(sms, warps, src, out, ns, units, smem);
            r[4] = run<V_SPAN, 1024>(sms, warps, src, out, ns, units, smem);
        } else {
            r[0] = run<V_PLAIN, 512>(sms, warps, src, out, ns, units, smem);
            r[1] = run<V_AHEAD, 512>(sms, warps, src, out, ns, units, smem);
            r[2] = run<V_PAIRS, 512>(sms, warps, src, out, ns, units, smem);
            r[3] = run<V_CORE, 512>(sms, warps, src, out, ns, units, smem);
            r[4] = run<V_SPAN, 512>(sms, warps, src, out, ns, units, smem);
        }
        for (int v = 0; v < NV; v++) printf("| %s | %d | %.1f | %.2f |\n", vname[v], warps, r[v], r[v] / pace);
        fflush(stdout);
    }
    free(h);
    return 0;
}
