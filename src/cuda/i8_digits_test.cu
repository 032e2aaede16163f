/* i8_digits_test.cu: the test wrapper of the integer path's digits (i8_digits.cuh): a kernel
 * that runs dmv_i8_digits on given items, as a prologue's staging does (one item per lane, the
 * items of a group on consecutive lanes), and hands back each item's four digit words and its
 * group's (E, sum x), for the tests to hold against the decomposition's definition byte for
 * byte. */
#include "cuda/i8_digits.cuh"
#include "cuda/cuda_api.h"

/* Item q = thread q: v[8 q .. 8 q + 7]; nitems a multiple of 32 (whole warps: the shuffles). */
__global__ void k_test_i8_digits(const float *v, int lp, uint2 *words, float2 *ex) {
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    float x[8];
#pragma unroll
    for (int k = 0; k < 8; k++) x[k] = v[(size_t)q * 8 + k];
    const DmvI8Digits o = dmv_i8_digits(x, lp);
#pragma unroll
    for (int c = 0; c < DMV_I8_DIGITS; c++) words[(size_t)q * DMV_I8_DIGITS + c] = o.w[c];
    ex[q] = o.ex;
}

extern "C" glim_status gcu_test_i8_digits(const float *v, int nitems, int lp, uint32_t *words, float *ex,
                                          glim_error *err) {
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "no CUDA device");
    if (nitems <= 0 || nitems % 32 || (lp != 4 && lp != 8 && lp != 16))
        return glim_fail(err, GLIM_E_ARG, "digits test: %d items in groups of %d lanes (whole warps; 4, 8 or 16)",
                         nitems, lp);
    float *dv = NULL;
    uint2 *dw = NULL;
    float2 *de = NULL;
    glim_status s;
    if (!(s = gcu_check(cudaMalloc((void **)&dv, sizeof(float) * 8 * (size_t)nitems), "alloc", err)) &&
        !(s = gcu_check(cudaMalloc((void **)&dw, sizeof(uint2) * DMV_I8_DIGITS * (size_t)nitems), "alloc", err)) &&
        !(s = gcu_check(cudaMalloc((void **)&de, sizeof(float2) * (size_t)nitems), "alloc", err)) &&
        !(s = gcu_check(cudaMemcpy(dv, v, sizeof(float) * 8 * (size_t)nitems, cudaMemcpyHostToDevice), "copy", err))) {
        k_test_i8_digits<<<nitems / 32, 32>>>(dv, lp, dw, de);
        if (!(s = gcu_check(cudaGetLastError(), "digits test launch", err)) &&
            !(s = gcu_check(cudaMemcpy(words, dw, sizeof(uint2) * DMV_I8_DIGITS * (size_t)nitems, cudaMemcpyDeviceToHost), "copy",
                            err)))
            s = gcu_check(cudaMemcpy(ex, de, sizeof(float2) * (size_t)nitems, cudaMemcpyDeviceToHost), "copy", err);
    }
    cudaFree(dv), cudaFree(dw), cudaFree(de);
    return s;
}
