/* icache_probe.cu: how an SM's instruction caches treat code that runs once per layer. A
 * standalone probe (not part of the engine). Sessions 33-34 found the decode's kernels running
 * cold from the instruction cache every layer (attention 8.5 -> 7.1 us for 13.3 K -> 8.6 K SASS
 * instructions, one span-kernel instance a layer +0.3-1 %), but not why: whether a launch
 * clears the cache, how much code the SM keeps between kernels, and what a cold line costs from
 * L2 and from DRAM. This measures each.
 *
 * k_code<N, V>: one warp per SM runs N straight-line FFMAs (4 independent chains: warm, about
 * one instruction a cycle) between two clock64 reads; its code is ~16 N bytes. V makes distinct
 * kernels of the same size. Every kernel is launched once before anything is timed (lazy
 * module loading). Printed: the median and largest cycles over the SMs of the timed launch.
 *   1. cold vs warm: after a 512 MB streaming kernel (L2 flushed) and then again at once.
 *   2. eviction: the probe (4096 FFMAs, 66 KB of code), then another kernel of E FFMAs, then
 *      the probe again, for E from 256 to 32 K (code 5.6, 18, 35, 66, 130, 264 KB; 32 K runs
 *      its 16 K body twice): the E at which the probe turns cold is the capacity.
 *   3. where a cold line comes from: the probe after a kernel of 32 K other instructions (its
 *      lines out of the SM's caches but in L2) against after the 512 MB stream (in DRAM), and
 *      after the same stream read with an L2 evict_first policy (as the decode's weights are).
 *   4. scattered code: k_hop, 64 runs of 16 FFMAs each followed by a jump over SKIP FFMAs that
 *      never run (the run path among skipped code), cold, warm and after other code.
 * Build and run: nvcc -O3 -arch=sm_90 -o icache_probe bench/icache_probe.cu && ./icache_probe */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#define F4(k) a0 = fmaf(a0, y, z + k), a1 = fmaf(a1, y, z - k), a2 = fmaf(a2, z, y + k), a3 = fmaf(a3, z, y - k)
#define F64 F4(1.f); F4(2.f); F4(3.f); F4(4.f); F4(5.f); F4(6.f); F4(7.f); F4(8.f); \
            F4(9.f); F4(10.f); F4(11.f); F4(12.f); F4(13.f); F4(14.f); F4(15.f); F4(16.f)
#define F256 F64; F64; F64; F64
#define F1024 F256; F256; F256; F256
/* N >= 256 straight-line FFMAs (nvcc unrolls a 64-FFMA body only ~128 times, so the body grows
 * with N and the loop stays short) */
template <int N>
__device__ __forceinline__ void ffmas(float &a0, float &a1, float &a2, float &a3, float y, float z) {
    if constexpr (N >= 1024) {
#pragma unroll
        for (int i = 0; i < N / 1024; i++) {
            F1024;
        }
    } else {
#pragma unroll
        for (int i = 0; i < N / 256; i++) {
            F256;
        }
    }
}

template <int N, int V>
__global__ void k_code(float y, float z, float *sink, unsigned long long *cyc) {
    float a0 = threadIdx.x + V, a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f;
    const long long t0 = clock64();
    ffmas<N>(a0, a1, a2, a3, y, z);
    const long long t1 = clock64();
    if (threadIdx.x == 0) cyc[blockIdx.x] = (unsigned long long)(t1 - t0);
    if (a0 + a1 + a2 + a3 == -1.0f) sink[threadIdx.x] = a0; /* never: keeps the chains */
}

/* N hops: each runs 16 FFMAs, then (y > 0 at run time, which the compiler cannot know) jumps
 * over a block of SKIP FFMAs that never runs: executed code scattered every 16 SKIP + 256 bytes,
 * as a kernel's run path is among code it skips (other configurations' paths, diagnostics). */
#define F16 F4(1.f); F4(2.f); F4(3.f); F4(4.f)
template <int N, int SKIP, int V>
__global__ void k_hop(float y, float z, float *sink, unsigned long long *cyc) {
    float a0 = threadIdx.x + V, a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f;
    const long long t0 = clock64();
#pragma unroll
    for (int i = 0; i < N; i++) {
        if (a0 < -1.0e30f) { /* never: a0 stays finite and small; a value the compiler cannot hoist */
#pragma unroll
            for (int j = 0; j < SKIP / 16; j++) {
                F16;
            }
        }
        F16;
    }
    const long long t1 = clock64();
    if (threadIdx.x == 0) cyc[blockIdx.x] = (unsigned long long)(t1 - t0);
    if (a0 + a1 + a2 + a3 == -1.0f) sink[threadIdx.x] = a0;
}

/* Reads n uint4 once, 4 in flight per thread; evict_first: with the L2 policy the decode's
 * weights carry. */
template <bool EVICT_FIRST>
__global__ void k_stream(const uint4 *p, size_t n, uint4 *sink) {
    uint64_t pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v;
        if (EVICT_FIRST)
            asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + i), "l"(pol));
        else
            v = __ldcg(p + i);
        acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
    }
    if (acc.x == 0x12345678u && acc.y == 1u) sink[0] = acc;
}

static int nsm;
static float *d_sink;
static unsigned long long *d_cyc;
static uint4 *d_buf, *d_bsink;
static size_t buf_n;

typedef void (*kfn)(float, float, float *, unsigned long long *);
static void run(kfn f) {
    f<<<nsm, 32>>>(1.0001f, 0.5f, d_sink, d_cyc);
    CHECK(cudaGetLastError());
}
static void stream(int evict_first) {
    if (evict_first) k_stream<true><<<nsm * 4, 512>>>(d_buf, buf_n, d_bsink);
    else k_stream<false><<<nsm * 4, 512>>>(d_buf, buf_n, d_bsink);
    CHECK(cudaGetLastError());
}
static int cmp(const void *a, const void *b) {
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}
/* The last probe launch's cycles: "median / largest". */
static void report(const char *what, int n) {
    unsigned long long h[1024];
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(h, d_cyc, sizeof(unsigned long long) * nsm, cudaMemcpyDeviceToHost));
    qsort(h, nsm, sizeof h[0], cmp);
    printf("| %s | %d | %llu | %llu | %.2f |\n", what, n, h[nsm / 2], h[nsm - 1], (double)h[nsm / 2] / n);
}

#define PROBE k_code<4096, 0>
int main(void) {
    CHECK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    if (nsm > 1024) nsm = 1024;
    buf_n = (size_t)512 << 20 >> 4;
    CHECK(cudaMalloc((void **)&d_buf, buf_n * 16));
    CHECK(cudaMemset(d_buf, 1, buf_n * 16));
    CHECK(cudaMalloc((void **)&d_bsink, 16));
    CHECK(cudaMalloc((void **)&d_sink, 4096));
    CHECK(cudaMalloc((void **)&d_cyc, sizeof(unsigned long long) * 1024));
    kfn sizes[] = {k_code<1024, 1>, k_code<4096, 1>, k_code<16384, 1>};
    const int size_n[] = {1024, 4096, 16384};
    kfn hops[] = {k_hop<64, 0, 3>, k_hop<64, 16, 3>, k_hop<64, 64, 3>, k_hop<64, 256, 3>};
    const int hop_skip[] = {0, 16, 64, 256};
    kfn others[] = {k_code<256, 2>, k_code<1024, 2>, k_code<2048, 2>, k_code<4096, 2>, k_code<8192, 2>,
                    k_code<16384, 2>, k_code<32768, 2>};
    const int other_n[] = {256, 1024, 2048, 4096, 8192, 16384, 32768};
    /* every kernel once (lazy loading), the streams too */
    for (int i = 0; i < 3; i++) run(sizes[i]);
    for (int i = 0; i < 4; i++) run(hops[i]);
    for (int i = 0; i < 7; i++) run(others[i]);
    run(PROBE);
    stream(0);
    stream(1);
    CHECK(cudaDeviceSynchronize());
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs, L2 %d MB\n\n", prop.name, nsm, prop.l2CacheSize >> 20);
    printf("| probe | FFMAs | median cycles | largest | cycles per FFMA (median) |\n| --- | --- | --- | --- | --- |\n");
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < 3; i++) {
            stream(0);
            run(sizes[i]);
            report("after the 512 MB stream (cold)", size_n[i]);
            run(sizes[i]);
            report("again at once", size_n[i]);
        }
        for (int i = 0; i < 7; i++) {
            run(PROBE);
            run(PROBE);
            run(others[i]);
            char what[96];
            snprintf(what, sizeof what, "the probe after another kernel of %d FFMAs", other_n[i]);
            run(PROBE);
            report(what, 4096);
        }
        for (int i = 0; i < 4; i++) {
            char what[96];
            stream(0);
            run(hops[i]);
            snprintf(what, sizeof what, "64 hops of 16 FFMAs over %d skipped, after the stream (cold)", hop_skip[i]);
            report(what, 1024);
            run(hops[i]);
            snprintf(what, sizeof what, "64 hops of 16 FFMAs over %d skipped, again at once", hop_skip[i]);
            report(what, 1024);
            run(others[6]);
            snprintf(what, sizeof what, "64 hops of 16 FFMAs over %d skipped, after 264 KB of other code", hop_skip[i]);
            run(hops[i]);
            report(what, 1024);
        }
        run(PROBE);
        run(PROBE);
        report("the probe after itself", 4096);
        run(PROBE);
        stream(1);
        run(PROBE);
        report("the probe after the 512 MB stream with evict_first", 4096);
        run(PROBE);
        stream(0);
        run(PROBE);
        report("the probe after the 512 MB stream (normal)", 4096);
    }
    return 0;
}
