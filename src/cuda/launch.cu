/* launch.cu: device discovery, error mapping and the one kernel-launch path of the CUDA
 * backend (cudaLaunchKernelEx, with programmatic dependent launch when asked: the next kernel
 * may start its weight prefetch while this one drains; it waits with griddepcontrol.wait before
 * touching anything the previous kernels wrote), in thread-block clusters when asked. */
#include <stdio.h>
#include <string.h>

#include "cuda/gcu.cuh"

extern "C" int gcu_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear: "no driver" must not poison later calls */
        return 0;
    }
    return n;
}

extern "C" void gcu_device_name(char *buf, int len) {
    cudaDeviceProp p;
    if (len <= 0) return;
    if (gcu_device_count() <= 0 || cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        snprintf(buf, (size_t)len, "no CUDA device");
        return;
    }
    const int n = snprintf(buf, (size_t)len, "%s, %d SMs, %.1f GiB, sm_%d%d", p.name, p.multiProcessorCount,
                           (double)p.totalGlobalMem / (1u << 30), p.major, p.minor);
    const double peak = gcu_peak_memory_gbps();
    if (peak > 0 && n >= 0 && n < len)
        snprintf(buf + n, (size_t)(len - n), ", %.0f GB/s peak memory bandwidth", peak);
}

/* The memory's peak bandwidth by its data sheet (the driver's clock and bus width, two
 * transfers a clock), GB/s; 0 where the driver does not say. Not the floor's bandwidth, which
 * the bench measures: a property of the kind of device, which defaults may follow
 * (gcu_options_default). */
extern "C" double gcu_peak_memory_gbps(void) {
    int dev = 0, khz = 0, bits = 0;
    if (gcu_device_count() <= 0 || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev) != cudaSuccess || khz <= 0 || bits <= 0) {
        cudaGetLastError();
        return 0.0;
    }
    return 2.0 * khz * 1e3 * (bits / 8) / 1e9;
}

extern "C" int gcu_sm_count(void) {
    static int n = 0;
    if (!n) {
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0)
            n = 1;
    }
    return n;
}

extern "C" glim_status gcu_check(cudaError_t e, const char *what, glim_error *err) {
    if (e == cudaSuccess) return GLIM_OK;
    cudaGetLastError();
    return glim_fail(err, e == cudaErrorMemoryAllocation ? GLIM_E_NOMEM : GLIM_E_BACKEND,
                     "CUDA: %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* The launch attribute that groups blocks along x into clusters of n. */
static cudaLaunchAttribute cluster_attr(int n) {
    cudaLaunchAttribute a;
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = (unsigned)n;
    a.val.clusterDim.y = 1;
    a.val.clusterDim.z = 1;
    return a;
}

extern "C" cudaError_t gcu_launch_cluster(const void *fn, dim3 grid, dim3 block, size_t smem,
                                          cudaStream_t st, int pdl, int cluster, void **args) {
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cudaLaunchAttribute attr[2];
    int na = 0;
    if (pdl) {
        attr[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[na++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster > 1) attr[na++] = cluster_attr(cluster);
    cfg.attrs = na ? attr : NULL;
    cfg.numAttrs = (unsigned)na;
    return cudaLaunchKernelExC(&cfg, fn, args);
}

extern "C" cudaError_t gcu_launch(const void *fn, dim3 grid, dim3 block, size_t smem,
                                  cudaStream_t st, int pdl, void **args) {
    return gcu_launch_cluster(fn, grid, block, smem, st, pdl, 1, args);
}

/* Cached per (kernel, threads, shared memory, cluster size): launches ask it every time (the
 * decode matvec's clusters, attention's split cap), and the answer does not change within a
 * process. */
extern "C" int gcu_resident(const void *fn, int block, size_t smem, int cluster) {
    static struct { const void *fn; size_t smem; int block, cluster, n; } memo[32];
    static int nmemo;
    for (int i = 0; i < nmemo; i++)
        if (memo[i].fn == fn && memo[i].smem == smem && memo[i].block == block && memo[i].cluster == cluster)
            return memo[i].n;
    int n = 0;
    cudaError_t e;
    if (cluster <= 1) {
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, block, smem);
        n *= gcu_sm_count();
    } else {
        cudaLaunchConfig_t cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDim = dim3((unsigned)cluster);
        cfg.blockDim = dim3((unsigned)block);
        cfg.dynamicSmemBytes = smem;
        cudaLaunchAttribute attr = cluster_attr(cluster);
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        e = cudaOccupancyMaxActiveClusters(&n, fn, &cfg);
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        n = 0;
    }
    if (nmemo < 32) memo[nmemo++] = {fn, smem, block, cluster, n};
    return n;
}
