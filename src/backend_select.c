/* backend_select.c: the CUDA backend's entry point for builds without CUDA. */
#include "backend.h"

#ifndef GLIM_HAVE_CUDA
const glim_backend *glim_backend_cuda_get(void) { return NULL; }
#endif
