/* glimmer.h: the public API of glimmer, a C engine for Meta's Muse Glimmer 30B (text path).
 *
 * A model is loaded once and never changes; a session owns one timeline (KV cache, position,
 * scratch, hooks). Many sessions may share one model. Every function that can fail returns a
 * glim_status and, when `err` is not NULL, fills it with a message naming what was wrong.
 * Nothing here exits or prints. */
#ifndef GLIMMER_H
#define GLIMMER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum glim_status {
    GLIM_OK = 0,
    GLIM_E_IO,           /* a file is missing, unreadable, or cannot be mapped */
    GLIM_E_FORMAT,       /* a file is malformed: bad JSON, bad safetensors header, truncated */
    GLIM_E_MODEL,        /* files are well-formed but not a Muse Glimmer we run: missing or
                            misshapen tensor, bad config value, tied head */
    GLIM_E_ARG,          /* the caller passed something invalid: token out of range, position
                            gap, wrong buffer size */
    GLIM_E_CONTEXT_FULL, /* the session has no room for more tokens */
    GLIM_E_NOMEM,        /* an allocation failed (host or device) */
    GLIM_E_BACKEND,      /* the backend is unavailable or the device reported an error */
    GLIM_E_UNSUPPORTED,  /* valid, but not something this build can do */
} glim_status;

typedef struct glim_error {
    glim_status code;
    char message[1024];
} glim_error;

const char *glim_status_name(glim_status s);

/* ---------------------------------------------------------------------------------------------
 * Model */

typedef struct glim_model glim_model;
typedef struct glim_session glim_session;

typedef struct glim_model_params {
    const char *backend; /* "cpu", "cuda", or NULL for the GPU when present, else the CPU */
    int n_threads;       /* CPU worker threads; 0 = one per online core */
} glim_model_params;

typedef struct glim_model_info {
    int vocab_size, hidden_size, intermediate_size;
    int n_layers, n_heads, n_kv_heads, head_dim;
    int sliding_window, max_position;
    int n_full_layers;         /* layers with full (NoPE) attention */
    int bos_id;
    int n_stop_ids;
    int stop_ids[8];           /* from generation_config.json (else config eos ids) */
    const char *layout;        /* "huggingface" or "mlx" */
    int quant_bits;            /* 0 when the text weights are dense */
    int quant_group_size;
    const char *dtype;         /* dense weight dtype, or the dtype of MLX scales/biases */
    int n_tensors;             /* tensors in the checkpoint, vision included */
    int n_text_tensors;        /* tensors bound to the text model */
    uint64_t file_bytes;       /* bytes of all safetensors files */
    uint64_t text_weight_bytes;/* bytes of the bound text tensors */
    const char *backend;       /* backend in use */
} glim_model_info;

/* Opens a checkpoint directory (config.json, generation_config.json, model.safetensors or
 * model.safetensors.index.json with shards). Hugging Face bf16 and MLX affine-quantized layouts
 * are recognised by their tensor names. */
glim_status glim_model_open(const char *dir, const glim_model_params *params, glim_model **out,
                            glim_error *err);
void glim_model_close(glim_model *model);
const glim_model_info *glim_model_get_info(const glim_model *model);

/* Bytes a session of n_ctx tokens (evaluating up to n_batch tokens per call chunk) will allocate
 * on the model's backend: KV cache plus scratch. */
uint64_t glim_session_bytes(const glim_model *model, int n_ctx, int n_batch);

/* ---------------------------------------------------------------------------------------------
 * Sessions */

typedef struct glim_session_params {
    int n_ctx;    /* context length in tokens; 0 = min(4096, max_position) */
    int n_batch;  /* tokens evaluated together per chunk; 0 = 64 */
    int n_rewind; /* tokens glim_session_rewind must always be able to go back (sliding layers
                     keep that many more keys); 0 = only what chunking leaves (a few dozen) */
} glim_session_params;

typedef enum glim_logits_mode {
    GLIM_LOGITS_NONE = 0, /* prefill without the head (the seed's skip_head) */
    GLIM_LOGITS_LAST,     /* logits of the last token: vocab_size floats */
    GLIM_LOGITS_ALL,      /* logits of every token: n * vocab_size floats, row per token */
} glim_logits_mode;

/* Time spent in each phase of the forward, summed over calls; nanoseconds. */
typedef struct glim_timing {
    uint64_t calls, tokens;
    uint64_t total_ns;
    uint64_t embed_ns, attn_ns, ffn_ns, head_ns, hooks_ns;
} glim_timing;

glim_status glim_session_create(glim_model *model, const glim_session_params *params,
                                glim_session **out, glim_error *err);
void glim_session_free(glim_session *session);

/* Position of the next token (the number of tokens already in the cache). */
int glim_session_position(const glim_session *session);
int glim_session_n_ctx(const glim_session *session);

/* Forget everything: position back to 0. */
void glim_session_reset(glim_session *session);

/* Forget the tokens from `position` on (0 <= position <= the current position), keeping the
 * cache before it, so that a new continuation can be evaluated from there (a server reusing the
 * common prefix of two prompts). A sliding layer keeps its keys in a ring of a few rows more than
 * its window, so a long rewind may find keys the window still needs overwritten: then it fails
 * with GLIM_E_UNSUPPORTED, saying how far back it can go, and the session is unchanged (reset
 * and evaluate from 0 instead). glim_session_params.n_rewind sets how far is always possible. */
glim_status glim_session_rewind(glim_session *session, int position, glim_error *err);

/* Evaluates n tokens starting at `position`, which must equal glim_session_position().
 * `logits` must hold exactly logits_len floats: 0 for NONE, vocab for LAST, n*vocab for ALL.
 * On error nothing is added to the cache. */
glim_status glim_eval(glim_session *session, const int32_t *tokens, int n, int position,
                      glim_logits_mode mode, float *logits, size_t logits_len, glim_error *err);

const glim_timing *glim_session_timing(const glim_session *session);

/* ---------------------------------------------------------------------------------------------
 * Sampling (host side) */

typedef struct glim_sampler glim_sampler;

typedef struct glim_sampler_params {
    float temperature;        /* <= 0: greedy (first maximal index) */
    int top_k;                /* 0: off */
    float top_p;              /* 1: off */
    float min_p;              /* 0: off */
    float repeat_penalty;     /* 1: off; divides positive logits, multiplies negative ones */
    float presence_penalty;   /* 0: off; subtracted once from every token seen */
    float frequency_penalty;  /* 0: off; subtracted per occurrence */
    int penalty_last_n;       /* tokens of history the penalties look at; 0 = all */
    uint64_t seed;            /* same seed, same logits, same history: same tokens */
} glim_sampler_params;

glim_sampler_params glim_sampler_defaults(void);
glim_status glim_sampler_create(const glim_sampler_params *params, int vocab_size,
                                glim_sampler **out, glim_error *err);
void glim_sampler_free(glim_sampler *sampler);
/* Records a token in the history the penalties see (prompt tokens too, if wanted). */
void glim_sampler_accept(glim_sampler *sampler, int32_t token);
/* Picks a token from logits (vocab_size floats; left unchanged). */
int32_t glim_sampler_sample(glim_sampler *sampler, const float *logits);

#ifdef __cplusplus
}
#endif
#endif
