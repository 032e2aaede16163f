/* threadpool.h: a fixed set of worker threads for the CPU backend's data-parallel loops.
 * glim_pool_run splits [0, n) into contiguous ranges, one per thread, and waits. */
#ifndef GLIM_THREADPOOL_H
#define GLIM_THREADPOOL_H

#include <stdint.h>

typedef struct glim_pool glim_pool;

/* Runs fn(ctx, begin, end) over a split of [0, n). */
typedef void (*glim_range_fn)(void *ctx, int64_t begin, int64_t end);

/* n_threads <= 0: one per online core. Returns NULL on failure. */
glim_pool *glim_pool_create(int n_threads);
void glim_pool_free(glim_pool *pool);
int glim_pool_size(const glim_pool *pool);
/* pool may be NULL: then fn runs on the caller's thread. */
void glim_pool_run(glim_pool *pool, glim_range_fn fn, void *ctx, int64_t n);

#endif
