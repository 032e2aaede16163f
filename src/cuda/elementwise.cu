/* elementwise.cu: the sigmoid output gate, SwiGLU and the head's multiplier + softcap as
 * standalone kernels. The forward fuses all three elsewhere (the gate into the attention merge,
 * SwiGLU and the softcap into the matrix-vector epilogue, through the same device functions);
 * these kernels serve the tests and any unfused path. */
#include "cuda/gcu.cuh"

__global__ void k_elementwise(int op, const float *a, const float *b, int n, float mult,
                              float cap, float *out) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        if (op == GCU_EW_GATE)
            out[i] = a[i] * gcu_sigmoid(b[i]);
        else if (op == GCU_EW_SWIGLU)
            out[i] = gcu_silu(a[i]) * b[i];
        else
            out[i] = cap * tanhf(a[i] * mult / cap);
    }
}

extern "C" glim_status gcu_test_elementwise(int op, const float *a, const float *b, int n,
                                            float mult, float cap, float *out, glim_error *err) {
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "no CUDA device");
    float *da = NULL, *db = NULL, *dout = NULL;
    size_t bytes = sizeof(float) * (size_t)n;
    glim_status s;
    if ((s = gcu_check(cudaMalloc((void **)&da, bytes), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&db, bytes), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&dout, bytes), "alloc", err)) ||
        (s = gcu_check(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice), "copy", err)) ||
        (b && (s = gcu_check(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice), "copy", err))))
        goto out;
    k_elementwise<<<(n + 255) / 256, 256>>>(op, da, db, n, mult, cap, dout);
    if ((s = gcu_check(cudaDeviceSynchronize(), "elementwise", err)) != GLIM_OK) goto out;
    s = gcu_check(cudaMemcpy(out, dout, bytes, cudaMemcpyDeviceToHost), "copy", err);
out:
    cudaFree(da), cudaFree(db), cudaFree(dout);
    return s;
}
