/* probe_common.cuh: what the standalone probes (persist_probe.cu, unit_probe.cu) share: a CUDA
 * call checked (the probe named by PROBE_NAME, defined before this is included, exits on a
 * failure) and the copy bandwidth the engine's floor uses. */
#ifndef GLIM_BENCH_PROBE_COMMON_CUH
#define GLIM_BENCH_PROBE_COMMON_CUH

#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                         \
    do {                                                                                              \
        cudaError_t e_ = (x);                                                                         \
        if (e_ != cudaSuccess) {                                                                      \
            fprintf(stderr, "%s: %s: %s\n", PROBE_NAME, #x, cudaGetErrorString(e_));                  \
            exit(1);                                                                                  \
        }                                                                                             \
    } while (0)

/* Bytes per second of a 1 GiB device-to-device copy, read + written (as `glimmer bench`), the
 * best of 5 after a first copy. */
static double probe_copy_bandwidth(void) {
    const size_t cb = 1ull << 30;
    void *c0, *c1;
    CK(cudaMalloc(&c0, cb));
    CK(cudaMalloc(&c1, cb));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaMemcpy(c1, c0, cb, cudaMemcpyDeviceToDevice));
    float best = 1e30f;
    for (int r = 0; r < 5; r++) {
        float ms;
        CK(cudaEventRecord(e0));
        CK(cudaMemcpyAsync(c1, c0, cb, cudaMemcpyDeviceToDevice));
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (ms < best) best = ms;
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFree(c0));
    CK(cudaFree(c1));
    return 2.0 * cb / (best * 1e-3);
}

#endif
