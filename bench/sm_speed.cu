/* sm_speed.cu: is the streaming speed of an SM a property of the SM? A standalone probe (not
 * part of the engine): one block per SM streams its own contiguous region of a large buffer
 * the way the decode matvec does (16 warps, 16-byte non-coherent loads, 4 units of 1 KB in
 * flight per warp) and records its SM id and how long it took. The regions rotate between
 * repetitions, so a slow address range and a slow SM are told apart: the correlation of the
 * per-SM times of the even and the odd repetitions says how much of the spread is the SM's.
 * Build and run: nvcc -O3 -arch=sm_90 -o sm_speed bench/sm_speed.cu && ./sm_speed */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 512
#define RING 4

__global__ void __launch_bounds__(THREADS, 1) k_stream(const uint4 *buf, size_t region_u4, int rot,
                                                        unsigned long long *rec, uint4 *sink) {
    /* the launch asks for 120 KB of dynamic shared memory: one block per SM */
    const int nb = gridDim.x, r = (blockIdx.x + rot) % nb;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = THREADS / 32;
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    __syncthreads();
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    const size_t per_warp = region_u4 / nw / 64 * 64; /* whole 1 KB units */
    const uint4 *p = buf + (size_t)r * region_u4 + warp * per_warp + lane * 2;
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (size_t i = 0; i + 64 * RING <= per_warp; i += 64 * RING) {
        uint4 v[2 * RING];
#pragma unroll
        for (int k = 0; k < RING; k++) {
            asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                         : "=r"(v[2 * k].x), "=r"(v[2 * k].y), "=r"(v[2 * k].z), "=r"(v[2 * k].w)
                         : "l"(p + i + 64 * k));
            asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                         : "=r"(v[2 * k + 1].x), "=r"(v[2 * k + 1].y), "=r"(v[2 * k + 1].z), "=r"(v[2 * k + 1].w)
                         : "l"(p + i + 64 * k + 1));
        }
#pragma unroll
        for (int k = 0; k < 2 * RING; k++) acc.x ^= v[k].x, acc.y += v[k].y, acc.z ^= v[k].z, acc.w += v[k].w;
    }
    if (acc.x == 0x12345678u) sink[0] = acc; /* a use of the loaded values */
    __syncthreads();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (threadIdx.x == 0) {
        rec[3 * blockIdx.x] = smid;
        rec[3 * blockIdx.x + 1] = t0;
        rec[3 * blockIdx.x + 2] = t1;
    }
}

int main(int argc, char **argv) {
    int dev = 0, nsm = 0, nsmid = 0;
    cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev);
    const int reps = argc > 1 ? atoi(argv[1]) : 40;
    const size_t region = (size_t)16 << 20; /* 16 MiB per SM, ~2 GiB in all */
    const size_t region_u4 = region / 16;
    uint4 *buf, *sink;
    unsigned long long *rec;
    if (cudaMalloc(&buf, region * nsm) || cudaMalloc(&sink, 64) || cudaMalloc(&rec, 24 * nsm)) {
        fprintf(stderr, "allocation failed\n");
        return 1;
    }
    cudaMemset(buf, 1, region * nsm);
    const int smem = 120 << 10;
    cudaFuncSetAttribute(k_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    unsigned long long *h = (unsigned long long *)malloc(24 * nsm);
    enum { MAXSM = 1024 };
    static double sum[2][MAXSM], cnt[2][MAXSM], all[MAXSM], mn[MAXSM], mx[MAXSM];
    for (int i = 0; i < MAXSM; i++) mn[i] = 1e30, mx[i] = 0;
    double spread_sum = 0, dur_sum = 0;
    for (int rep = -2; rep < reps; rep++) { /* two warm-up repetitions */
        const int rot = rep < 0 ? 0 : (rep * 37) % nsm;
        k_stream<<<nsm, THREADS, smem>>>(buf, region_u4, rot, rec, sink);
        if (cudaDeviceSynchronize() != cudaSuccess) {
            fprintf(stderr, "kernel failed\n");
            return 1;
        }
        if (rep < 0) continue;
        cudaMemcpy(h, rec, 24 * nsm, cudaMemcpyDeviceToHost);
        unsigned long long s0 = ~0ull, e0 = ~0ull, e1 = 0;
        for (int b = 0; b < nsm; b++) {
            unsigned sm = (unsigned)h[3 * b];
            double d = (double)(h[3 * b + 2] - h[3 * b + 1]) / 1e3;
            if (sm >= MAXSM) continue;
            if ((int)sm + 1 > nsmid) nsmid = (int)sm + 1;
            sum[rep & 1][sm] += d, cnt[rep & 1][sm] += 1, all[sm] += d;
            if (d < mn[sm]) mn[sm] = d;
            if (d > mx[sm]) mx[sm] = d;
            if (h[3 * b + 1] < s0) s0 = h[3 * b + 1];
            if (h[3 * b + 2] < e0) e0 = h[3 * b + 2];
            if (h[3 * b + 2] > e1) e1 = h[3 * b + 2];
        }
        spread_sum += (double)(e1 - e0) / 1e3;
        dur_sum += (double)(e1 - s0) / 1e3;
    }
    /* per-SM means of the even and odd repetitions, and their correlation across SMs */
    double a[MAXSM], b[MAXSM], ma = 0, mb = 0, lo = 1e30, hi = 0, mean = 0;
    int n = 0;
    for (int sm = 0; sm < nsmid; sm++) {
        if (!cnt[0][sm] || !cnt[1][sm]) continue;
        a[n] = sum[0][sm] / cnt[0][sm], b[n] = sum[1][sm] / cnt[1][sm];
        ma += a[n], mb += b[n];
        double m = all[sm] / (cnt[0][sm] + cnt[1][sm]);
        mean += m;
        if (m < lo) lo = m;
        if (m > hi) hi = m;
        n++;
    }
    ma /= n, mb /= n, mean /= n;
    double sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) sab += (a[i] - ma) * (b[i] - mb), saa += (a[i] - ma) * (a[i] - ma), sbb += (b[i] - mb) * (b[i] - mb);
    const double gb = (double)region * nsm / 1e9;
    printf("%d SMs (ids < %d), %d repetitions, %.0f MiB per SM\n", n, nsmid, reps, region / 1048576.0);
    printf("kernel: %.1f us mean (%.0f GB/s), block-end spread %.1f us mean\n", dur_sum / reps,
           gb / (dur_sum / reps) * 1e6, spread_sum / reps);
    printf("per-SM mean time: %.1f us, fastest SM %.1f us, slowest %.1f us (slowest / mean %.3f)\n", mean, lo, hi, hi / mean);
    printf("correlation of per-SM times, even vs odd repetitions: %.3f\n", sab / sqrt(saa * sbb));
    printf("smid: mean us (min..max)\n");
    for (int sm = 0; sm < nsmid; sm++)
        if (cnt[0][sm] + cnt[1][sm] > 0)
            printf("%3d: %.1f (%.1f..%.1f)%s", sm, all[sm] / (cnt[0][sm] + cnt[1][sm]), mn[sm], mx[sm], sm % 4 == 3 ? "\n" : "  ");
    printf("\n");
    return 0;
}
