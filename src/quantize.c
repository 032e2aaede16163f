/* quantize.c: MLX affine quantization, following the algorithm of mlx/ops.cpp affine_quantize as
 * described in MODEL.md 3.3: the group's extreme with the larger magnitude becomes the bias
 * ("edge") and is represented exactly (q = 0), the scale is adjusted so that edge/scale is an
 * integer, and the scale may be negative. */
#include "quantize.h"

#include <math.h>
#include <string.h>

static void store(void *p, glim_dtype t, int64_t i, float v) {
    if (t == GLIM_DT_BF16) ((uint16_t *)p)[i] = glim_f32_to_bf16(v);
    else if (t == GLIM_DT_F16) ((uint16_t *)p)[i] = glim_f32_to_f16(v);
    else ((float *)p)[i] = v;
}

void glim_quantize_affine(const float *w, int64_t rows, int64_t cols, int bits, int group,
                          glim_dtype sdtype, uint32_t *q_out, void *scales, void *biases) {
    int64_t words = cols * bits / 32, groups = cols / group;
    float n_bins = (float)((1 << bits) - 1);
    memset(q_out, 0, sizeof(uint32_t) * (size_t)(rows * words));
    for (int64_t r = 0; r < rows; r++) {
        uint8_t *row = (uint8_t *)(q_out + r * words);
        for (int64_t g = 0; g < groups; g++) {
            const float *x = w + r * cols + g * group;
            float mx = x[0], mn = x[0];
            for (int i = 1; i < group; i++) {
                mx = x[i] > mx ? x[i] : mx;
                mn = x[i] < mn ? x[i] : mn;
            }
            float scale = fmaxf((mx - mn) / n_bins, 1e-7f), edge;
            if (fabsf(mn) > fabsf(mx)) {
                edge = mn;
            } else {
                scale = -scale;
                edge = mx;
            }
            float q0 = nearbyintf(edge / scale);
            if (q0 != 0.0f) scale = edge / q0;
            float bias = q0 == 0.0f ? 0.0f : edge;
            store(scales, sdtype, r * groups + g, scale);
            store(biases, sdtype, r * groups + g, bias);
            for (int i = 0; i < group; i++) {
                float q = nearbyintf((x[i] - bias) / scale);
                q = q < 0 ? 0 : q > n_bins ? n_bins : q;
                uint64_t bit = (uint64_t)(g * group + i) * (uint64_t)bits;
                uint32_t v = (uint32_t)q << (bit & 7);
                row[bit >> 3] |= (uint8_t)v;
                if ((bit & 7) + (uint64_t)bits > 8) row[(bit >> 3) + 1] |= (uint8_t)(v >> 8);
            }
        }
    }
}
