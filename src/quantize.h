/* quantize.h: MLX affine quantization (MODEL.md 3.3), the project's own implementation: used
 * to make quantized test and demo models, and by `glimmer` to write MLX-layout checkpoints. */
#ifndef GLIM_QUANTIZE_H
#define GLIM_QUANTIZE_H

#include <stdint.h>

#include "dtype.h"

/* Quantizes w [rows][cols] (fp32) in groups of `group` along cols with `bits` bits:
 * q_out u32 [rows][cols*bits/32] (element c at bit c*bits of the row's little-endian bit stream),
 * scales/biases [rows][cols/group] in sdtype (BF16, F16 or F32). Dequantized: scale*q + bias. */
void glim_quantize_affine(const float *w, int64_t rows, int64_t cols, int bits, int group,
                          glim_dtype sdtype, uint32_t *q_out, void *scales, void *biases);

#endif
