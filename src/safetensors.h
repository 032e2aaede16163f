/* safetensors.h: reading safetensors files by mmap (one file, or a sharded set through
 * model.safetensors.index.json) and writing them. File formats only: no model knowledge here.
 * Every check is strict (header bounds, JSON, offsets inside the data and not overlapping,
 * byte size = shape x dtype, duplicate names) and failures name the file and the tensor. */
#ifndef GLIM_SAFETENSORS_H
#define GLIM_SAFETENSORS_H

#include <stdint.h>

#include "dtype.h"
#include "glimmer.h"

#define GLIM_MAX_DIMS 8

typedef struct glim_tensor {
    const char *name;
    glim_dtype dtype;
    int ndim;
    int64_t shape[GLIM_MAX_DIMS];
    const void *data;  /* inside the mapping; valid until glim_st_close */
    uint64_t nbytes;
    int file_index;    /* which shard */
} glim_tensor;

typedef struct glim_st_set glim_st_set;

/* Opens one .safetensors file. */
glim_status glim_st_open_file(const char *path, glim_st_set **out, glim_error *err);
/* Opens a checkpoint directory: model.safetensors.index.json (every shard it names, and every
 * tensor it lists must be in the shard it names) or else a single model.safetensors. */
glim_status glim_st_open_dir(const char *dir, glim_st_set **out, glim_error *err);
void glim_st_close(glim_st_set *set);

int glim_st_count(const glim_st_set *set);
const glim_tensor *glim_st_at(const glim_st_set *set, int i);
/* NULL when absent. Hash lookup. */
const glim_tensor *glim_st_find(const glim_st_set *set, const char *name);
uint64_t glim_st_file_bytes(const glim_st_set *set);
/* The "__metadata__" string value for key, or NULL. */
const char *glim_st_metadata(const glim_st_set *set, const char *key);

/* Writing: tensors in the given order, 8-byte-aligned header, optional metadata pairs
 * (meta_keys[i] -> meta_values[i]). Writes to path.tmp then renames, so a failed write never
 * leaves a half file under the real name. */
typedef struct glim_st_out {
    const char *name;
    glim_dtype dtype;
    int ndim;
    int64_t shape[GLIM_MAX_DIMS];
    const void *data; /* nbytes = product(shape) * dtype size */
} glim_st_out;

glim_status glim_st_write(const char *path, const glim_st_out *tensors, int n,
                          const char *const *meta_keys, const char *const *meta_values, int n_meta,
                          glim_error *err);

#endif
