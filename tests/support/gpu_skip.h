/* gpu_skip.h: how the CUDA tests meet a machine without a GPU (or a build without CUDA): they
 * skip, unless GLIM_REQUIRE_CUDA=1 (make test-cuda), where a missing GPU or a CPU-only build is
 * a failure. Include after check.h. */
#ifndef GLIM_TEST_GPU_SKIP_H
#define GLIM_TEST_GPU_SKIP_H

#include <stdlib.h>
#include <string.h>

static int gpu_required(void) {
    const char *r = getenv("GLIM_REQUIRE_CUDA");
    return r && !strcmp(r, "1");
}

#ifdef GLIM_HAVE_CUDA
#include "cuda/cuda_api.h"

/* 0: a GPU is there; 1: missing and required (a failure was recorded); 2: missing, skip. */
static int no_gpu(void) {
    if (gcu_device_count() > 0) return 0;
    if (gpu_required()) {
        CHECK(0, "GLIM_REQUIRE_CUDA=1 but no CUDA device is present");
        return 1;
    }
    return 2;
}
#define NEED_GPU()                            \
    do {                                      \
        int ng_ = no_gpu();                   \
        if (ng_ == 1) return;                 \
        if (ng_ == 2) SKIP("no CUDA device"); \
    } while (0)
#else
/* The whole main() of a CUDA test in a build without CUDA: one test that skips (or fails). */
#define CUDA_TEST_WITHOUT_CUDA(name)                                                      \
    static void name(void) {                                                              \
        if (gpu_required()) {                                                             \
            CHECK(0, "GLIM_REQUIRE_CUDA=1 but this build has no CUDA backend (nvcc missing)"); \
            return;                                                                       \
        }                                                                                 \
        SKIP("built without CUDA");                                                       \
    }                                                                                     \
    int main(void) {                                                                      \
        RUN(name);                                                                        \
        return CHECK_DONE();                                                              \
    }
#endif
#endif
