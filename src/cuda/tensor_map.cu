/* tensor_map.cu: the tensor map (the copy engine's description of a tiled array) of an MLX
 * weight matrix, by which the span kernel (decode_mv_span.cu) copies a chunk of 2 x 2 units,
 * row blocks rb, rb + 1 at spans s, s + 1, with one instruction instead of one bulk copy per row
 * block: the two row blocks' units are nspan units apart in memory. The matrix's units seen as a
 * 3-D array of 8-byte elements: [nrb][nspan][unit_bytes / 8], a box of [2][2][unit_bytes / 8],
 * which lands in shared memory in the order of the two bulk copies it replaces (rb's two units,
 * then rb + 1's).
 *
 * The map lives on the device, 128 bytes after the matrix's units in the same allocation
 * (gcu_mat_alloc, layout.cu), so that whoever frees the weights frees it too. It is encoded by
 * the driver's cuTensorMapEncodeTiled, reached through the runtime's entry-point query (the
 * library links no libcuda); where the driver or the shape declines, the matrix has no map and
 * the kernel keeps its bulk copies. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <string.h>

#include "cuda/gcu.cuh"

static PFN_cuTensorMapEncodeTiled_v12000 encode_fn(void) {
    static int tried;
    static PFN_cuTensorMapEncodeTiled_v12000 fn;
    if (!tried) {
        tried = 1;
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
        else
            (void)cudaGetLastError(); /* the query's error is not the caller's */
    }
    return fn;
}

extern "C" glim_status gcu_mat_tmap(gcu_mat *m, void *dev, glim_error *err) {
    m->tmap = NULL;
    const uint64_t ub = (uint64_t)m->unit_bytes;
    /* MLX units only (the span kernel's), a unit a box row of at most 256 elements */
    if (m->f.kind != GCU_KIND_Q || ub % 16 || ub / 8 > 256 || m->f.nspan < 2 || m->nrb < 2) return GLIM_OK;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) return GLIM_OK;
    CUtensorMap map;
    memset(&map, 0, sizeof map);
    const cuuint64_t dim[3] = {ub / 8, (cuuint64_t)m->f.nspan, (cuuint64_t)m->nrb};
    const cuuint64_t stride[2] = {ub, ub * (cuuint64_t)m->f.nspan}; /* bytes, of dims 1 and 2 */
    const cuuint32_t box[3] = {(cuuint32_t)(ub / 8), 2, 2}, estride[3] = {1, 1, 1};
    const CUresult r = fn(&map, CU_TENSOR_MAP_DATA_TYPE_UINT64, 3, (void *)m->w, dim, stride, box, estride,
                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return GLIM_OK; /* the driver declined this shape: bulk copies */
    static_assert(sizeof(CUtensorMap) == GCU_TMAP_BYTES, "the room gcu_mat_alloc leaves for the map");
    glim_status s = gcu_check(cudaMemcpy(dev, &map, sizeof map, cudaMemcpyHostToDevice), "weights' tensor map", err);
    if (s == GLIM_OK) m->tmap = dev;
    return s;
}
