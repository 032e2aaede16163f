/* synth.h: writes random Muse Glimmer checkpoints (config.json, generation_config.json,
 * model.safetensors) in the Hugging Face bf16 layout or the MLX quantized layout. The demo, the
 * tests and the CPU benchmark make their models with it; every weight is random and non-zero,
 * norm gains included, so a model that mixes up norm conventions gives different logits. */
#ifndef GLIM_SYNTH_H
#define GLIM_SYNTH_H

#include <stdint.h>

#include "glimmer.h"

typedef struct glim_synth_spec {
    int vocab_size, hidden_size, intermediate_size;
    int n_layers, n_heads, n_kv_heads, head_dim;
    int sliding_window, max_position;
    float rope_theta;
    int bits;        /* 0: Hugging Face layout, bf16; else MLX layout with this many bits */
    int group_size;  /* MLX group size */
    int quantize_embedding; /* MLX: quantize embed_tokens too (the pinned release does) */
    /* Multipliers of the default weight spreads. A small block_out_scale (o_proj, down_proj)
     * makes the post-norm inputs tiny, so eps 1e-5 vs 1e-8 changes the logits; a large
     * head_scale puts the logits where the softcap bends. 1 = plain 1/sqrt(fan_in). */
    float block_out_scale, head_scale;
    uint64_t seed;
} glim_synth_spec;

/* The demo model: 6 layers (full attention at 1 and 5, counted from the end), window 8,
 * 4 heads over 2 KV heads, vocab 512. */
glim_synth_spec glim_synth_tiny(void);
/* About 1B parameters with Muse Glimmer's proportions (q width 0.6 x hidden, GQA 16:1,
 * intermediate 3 x hidden). */
glim_synth_spec glim_synth_1b(void);

/* Creates dir if needed and writes the checkpoint into it. */
glim_status glim_synth_write(const char *dir, const glim_synth_spec *spec, glim_error *err);

#endif
