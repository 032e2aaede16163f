/* model.h: the private contract of what a Muse Glimmer model is inside glimmer: its config,
 * its weights bound once to fields (never looked up by name after loading), and the model
 * object the backends receive. MODEL.md is the specification; section numbers refer to it. */
#ifndef GLIM_MODEL_H
#define GLIM_MODEL_H

#include <stdint.h>

#include "dtype.h"
#include "glimmer.h"
#include "safetensors.h"

#define GLIM_MAX_STOP_IDS 8

typedef struct glim_config {
    int vocab_size, hidden_size, intermediate_size;
    int n_layers, n_heads, n_kv_heads, head_dim;
    int sliding_window;       /* W: keys j with i-W < j <= i are visible on sliding layers */
    int max_position;
    float rms_eps;            /* embedding, input, pre-FFN and q/k norms (1e-5) */
    float post_norm_eps;      /* post-attention and post-FFN norms (1e-8) */
    float qk_scale;           /* q multiplier after its norm (3.87) */
    float attn_scale;         /* head_dim^-0.5 */
    float final_softcap;      /* 20 */
    float output_multiplier;  /* 26^-0.5 */
    float rope_theta;         /* rope_parameters.rope_theta (500000 in the release) */
    uint8_t *layer_is_full;   /* [n_layers] 1 = full_attention (NoPE), 0 = sliding (RoPE) */
    float *layer_rope_theta;  /* [n_layers] 0 on full layers */
    float *inv_freq;          /* [head_dim/2] fp32 1/theta^(2i/head_dim), as torch builds it */
    int bos_id, pad_id;
    int n_stop_ids, stop_ids[GLIM_MAX_STOP_IDS];
    /* MLX "quantization" block at the config root (bits 0 when absent). A module is quantized
     * iff "<name>.scales" exists; these say with which bits and group size. */
    int quant_bits, quant_group_size;
    int n_quant_overrides;
    struct glim_quant_override {
        char *module;         /* e.g. "language_model.model.layers.3.mlp.down_proj" */
        int bits, group_size; /* bits 0: the override says "not quantized" */
    } *quant_overrides;
} glim_config;

/* A [rows x cols] weight (PyTorch [out, in]): dense, or MLX affine-quantized along cols. */
typedef struct glim_matrix {
    int64_t rows, cols;
    int bits;                 /* 0: dense; 2..8: w = scale * q + bias, per group of group_size */
    int group_size;
    glim_dtype dtype;         /* dense: element type; quantized: type of scales and biases */
    const void *data;         /* dense [rows][cols]; quantized u32 [rows][cols*bits/32],
                                 element c of a row at bit c*bits of the row's LE bit stream */
    const void *scales;       /* quantized: [rows][cols/group_size] */
    const void *biases;       /* quantized: [rows][cols/group_size] */
    const char *name;         /* checkpoint name, for messages */
} glim_matrix;

/* A weight vector (norm gains). */
typedef struct glim_vector {
    int64_t n;
    glim_dtype dtype;
    const void *data;
    const char *name;
} glim_vector;

typedef struct glim_layer {
    glim_vector input_norm;       /* [hidden] zero-centred, gain 1+w, eps rms_eps */
    glim_matrix q;                /* [n_heads*head_dim, hidden] */
    glim_matrix k;                /* [n_kv_heads*head_dim, hidden] */
    glim_matrix v;                /* [n_kv_heads*head_dim, hidden] */
    glim_matrix attn_gate;        /* [n_heads*head_dim, hidden] sigmoid output gate */
    glim_matrix o;                /* [hidden, n_heads*head_dim] */
    glim_vector post_attn_norm;   /* [hidden] 1+w, eps post_norm_eps */
    glim_vector pre_ffn_norm;     /* [hidden] 1+w, eps rms_eps */
    glim_matrix mlp_gate;         /* [inter, hidden] */
    glim_matrix mlp_up;           /* [inter, hidden] */
    glim_matrix mlp_down;         /* [hidden, inter] */
    glim_vector post_ffn_norm;    /* [hidden] 1+w, eps post_norm_eps */
} glim_layer;

typedef struct glim_weights {
    glim_matrix embed;            /* [vocab, hidden] */
    glim_layer *layer;            /* [n_layers] */
    glim_vector final_norm;       /* [hidden] PLAIN gain w, eps rms_eps */
    glim_matrix lm_head;          /* [vocab, hidden], untied */
} glim_weights;

typedef enum glim_layout { GLIM_LAYOUT_HF, GLIM_LAYOUT_MLX } glim_layout;

struct glim_backend;

struct glim_model {
    glim_config cfg;
    glim_weights w;
    glim_layout layout;
    glim_st_set *st;              /* the mapped checkpoint (owns all weight bytes) */
    glim_model_info info;
    int n_threads;
    const struct glim_backend *backend;
    void *backend_model;          /* the backend's per-model state (device weights, pools) */
};

/* Parses config.json (+ generation_config.json when present) in dir into cfg. */
glim_status glim_config_load(const char *dir, glim_config *cfg, glim_error *err);
/* Same, from JSON text (config) and optional generation-config text (NULL if absent). */
glim_status glim_config_parse(const char *config_json, const char *gen_json, glim_config *cfg,
                              glim_error *err);
void glim_config_free(glim_config *cfg);

/* Binds every text tensor of st to fields of w, checking dtype and shape against cfg. */
glim_status glim_weights_bind(const glim_config *cfg, const glim_st_set *st, glim_weights *w,
                              glim_layout *layout, glim_error *err);

/* Row r of a matrix as f32 (dequantized when quantized). out has m->cols floats. */
void glim_matrix_row_f32(const glim_matrix *m, int64_t r, float *out);
/* Columns c0 .. c0+n-1 of row r as f32. */
void glim_matrix_row_range_f32(const glim_matrix *m, int64_t r, int64_t c0, int64_t n,
                               float *out);
/* Bytes the matrix occupies (weights + scales + biases). */
uint64_t glim_matrix_bytes(const glim_matrix *m);

#endif
