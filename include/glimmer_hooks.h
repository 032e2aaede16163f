/* glimmer_hooks.h: the research hooks of a session, as the seed runtime offers them:
 * activation steering, residual-stream capture and the FFN activation census.
 *
 * Where they act. Every hook sits at the same two points of each decoder layer l (0-based):
 *   - the layer's OUTPUT, right after its FFN residual add (the seed's and llama.cpp's `l_out`):
 *     steering first (it may change the stream), then capture (it sees the steered stream);
 *   - the FFN activation silu(gate_proj(x)) * up_proj(x) of the layer (the census).
 * Layer numbers in this API are 0-based model layers: layer l's output is what Hugging Face
 * transformers returns as hidden_states[l + 1] (hidden_states[0] is the normed embedding), except
 * for the last layer, whose HF entry has the final norm applied.
 *
 * Control-vector files follow llama.cpp's LOADER: tensor `direction.N` (N >= 1) is added to the
 * output of layer N in the numbering above (llama.cpp's graph index il = N; the first layer's
 * output, il = 0, never gets one, and direction.0 is refused). Note that llama.cpp's own
 * cvector-generator writes direction.N from the output of layer N-1, one layer earlier than its
 * loader applies it; set glim_steer_params.file_offset = 1 to apply such files where they were
 * measured. `glimmer steer-extract` writes direction.N measured at layer N, so its files mean the
 * same thing here and in llama.cpp.
 *
 * Cost. A session with no hook has none at all (the forward skips every hook call). All hook
 * memory is allocated when a hook is configured; evaluating tokens allocates nothing. Hooks are
 * per session and not thread-safe: configure them between glim_eval calls. */
#ifndef GLIMMER_HOOKS_H
#define GLIMMER_HOOKS_H

#include <stdint.h>

#include "glimmer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Direction sets: one vector of hidden_size floats per layer (absent layers have none), or one
 * vector for every layer. Loaded from a llama.cpp control-vector GGUF (F32 tensors `direction.N`,
 * KV general.architecture = "controlvector", controlvector.model_hint, controlvector.layer_count)
 * or from a safetensors file with the same tensors (F32 [hidden] `direction.N`, or a single
 * `direction` that applies to every layer). */

typedef struct glim_directions glim_directions;

/* An empty set for layers 0 .. n_layers-1 of width hidden. */
glim_status glim_directions_create(int n_layers, int hidden, glim_directions **out,
                                   glim_error *err);
/* By content: GGUF magic, else safetensors. */
glim_status glim_directions_load(const char *path, glim_directions **out, glim_error *err);
/* By extension: ".gguf" writes a llama.cpp control vector (layer 0, if set, cannot be stored
 * there and is refused), anything else safetensors. model_hint may be NULL ("muse-glimmer"). */
glim_status glim_directions_save(const glim_directions *d, const char *path,
                                 const char *model_hint, glim_error *err);
void glim_directions_free(glim_directions *d);

int glim_directions_hidden(const glim_directions *d);
/* One past the highest layer the set can hold. */
int glim_directions_n_layers(const glim_directions *d);
/* Layer l's vector, or NULL when the set has none for it. l = -1: the every-layer vector. */
const float *glim_directions_get(const glim_directions *d, int layer);
/* Sets (copies) layer l's vector; l = -1 sets the every-layer vector. */
glim_status glim_directions_set(glim_directions *d, int layer, const float *v, glim_error *err);
/* controlvector.model_hint of a loaded file ("" when absent). */
const char *glim_directions_model_hint(const glim_directions *d);

/* ---------------------------------------------------------------------------------------------
 * Steering. With x one position's residual row, d the layer's direction, u = d / |d| and
 * c = x . u (computed in double), each mode does:
 *   ADD     x += scale * d          (d as stored, like llama.cpp; or u when params.unit)
 *   ABLATE  x -= scale * c * u      (scale 1 removes the component)
 *   CLAMP   x += scale * (target - c) * u   (scale 1 sets the component to target)
 *   RENORM  y = x - scale * c * u, then x = y * |x| / |y|   (ablate, keep the norm)
 * A gate makes the op act only on rows where c passes: ABS |c| > threshold, ABOVE c > threshold,
 * BELOW c < threshold (c before this op, after the ops pushed earlier). scale == 0 skips the op
 * entirely, so x is bit-identical (no x + 0*d, which would turn -0.0 into +0.0). A zero-norm
 * direction is a no-op for ADD and refused for the other modes. Several steerings stack and are
 * applied in the order they were pushed. */

typedef enum glim_steer_mode {
    GLIM_STEER_ADD = 0,
    GLIM_STEER_ABLATE,
    GLIM_STEER_CLAMP,
    GLIM_STEER_RENORM,
} glim_steer_mode;

typedef enum glim_steer_gate {
    GLIM_GATE_NONE = 0,
    GLIM_GATE_ABS,   /* |c| > threshold */
    GLIM_GATE_ABOVE, /* c > threshold */
    GLIM_GATE_BELOW, /* c < threshold */
} glim_steer_gate;

typedef struct glim_steer_params {
    glim_steer_mode mode;
    float scale;          /* default 1 */
    float target;         /* CLAMP's target component */
    int layer_first;      /* inclusive range of model layers (0-based); default 0 */
    int layer_last;       /* -1: through the last layer */
    glim_steer_gate gate;
    float threshold;
    int unit;             /* ADD: use u = d/|d| instead of d (default 0: raw, as llama.cpp) */
    int file_offset;      /* direction.N acts on layer N - file_offset (default 0, see above) */
} glim_steer_params;

glim_steer_params glim_steer_defaults(void);
/* Adds a steering (the vectors are copied). Every direction that lands in the layer range must
 * have the model's hidden size and a layer the model has. */
glim_status glim_session_steer_push(glim_session *s, const glim_directions *d,
                                    const glim_steer_params *p, glim_error *err);
int glim_session_steer_count(const glim_session *s);
void glim_session_steer_clear(glim_session *s);

/* Difference-of-means extraction (what `glimmer steer-extract` runs). For each prompt of each
 * set the session is reset, the prompt evaluated (logits of its last token only) and the residual
 * at its last token captured at each layer in layers[] (NULL: all); direction[l] = mean over the
 * positive prompts - mean over the negative ones (in double), scaled to unit length when unit.
 * Steering already on the session stays in effect. The session must not be capturing; it is
 * reset afterwards. The result has every requested layer, layer 0 included (which a GGUF file
 * cannot hold: drop it before saving one). */
glim_status glim_directions_extract(glim_session *s, const int32_t *const *pos, const int *pos_len,
                                    int n_pos, const int32_t *const *neg, const int *neg_len,
                                    int n_neg, const int32_t *layers, int n_layers, int unit,
                                    glim_directions **out, glim_error *err);
/* Removes layer l's vector from a set (to drop layer 0 before saving a GGUF). */
void glim_directions_unset(glim_directions *d, int layer);

/* ---------------------------------------------------------------------------------------------
 * Residual capture: rows of the residual stream at chosen layers' outputs (after steering).
 * A "sequence" starts whenever a chunk starts at position 0 (glim_session_reset + glim_eval).
 * The "head token" of a glim_eval call that computes logits (LAST or ALL) is its last position;
 * a call with GLIM_LOGITS_NONE has none (the seed's prefill passes without a head). */

typedef enum glim_capture_select {
    GLIM_CAPTURE_LAST_PROMPT = 0, /* the seed's default: the head token (below) of the first
                                     glim_eval call with logits in each sequence = the last
                                     prompt token */
    GLIM_CAPTURE_ALL,             /* every evaluated position, prompt and generation */
    GLIM_CAPTURE_POSITIONS,       /* rows whose position is in positions[] (each sequence) */
    GLIM_CAPTURE_HEAD,            /* the head token of every glim_eval call with logits: the
                                     last prompt token and every generated token fed back */
} glim_capture_select;

typedef struct glim_capture_params {
    glim_capture_select select;
    const int32_t *positions;  /* POSITIONS: the positions (copied) */
    int n_positions;
    const int32_t *layers;     /* layers to keep, ascending or not (copied); NULL = all */
    int n_layers;
    int max_rows;              /* rows held in memory (each n_layers*hidden*4 bytes, 1.4 MB at
                                  30B); 0 = 64 for LAST_PROMPT or a stream, else n_ctx but at
                                  most 1 GiB of rows */
    const char *stream_path;   /* non-NULL: rows are streamed to this safetensors file when the
                                  buffer fills, the file is completed by glim_session_capture_stop
                                  or _write; max_rows is then raised to at least n_batch */
    int max_total_rows;        /* stream: rows the file may hold in all (bookkeeping is
                                  preallocated); 0 = 1 << 20 */
} glim_capture_params;

/* Starts (or restarts) capture; replaces an earlier capture spec. */
glim_status glim_session_capture_start(glim_session *s, const glim_capture_params *p,
                                       glim_error *err);

typedef struct glim_capture_view {
    int rows;                 /* rows held in memory now */
    int n_layers, hidden;
    uint64_t total_rows;      /* rows captured since start (streamed ones included) */
    uint64_t dropped;         /* rows that did not fit (max_rows without a stream, or
                                 max_total_rows with one) */
    const float *residual;    /* [rows][n_layers][hidden] */
    const int32_t *positions; /* [rows] */
    const int32_t *tokens;    /* [rows] token id at that position, -1 when not noted */
    const int32_t *sequence;  /* [rows] sequence index (0 = first) */
    const int32_t *layers;    /* [n_layers] model layer of each captured slot */
} glim_capture_view;

glim_status glim_session_capture_view(const glim_session *s, glim_capture_view *out,
                                      glim_error *err);
/* Forgets the rows held in memory (keeps the spec and the buffers). */
void glim_session_capture_clear(glim_session *s);
/* Writes the rows held in memory as safetensors: `residual` F32 [N, Lc, hidden], `positions`,
 * `tokens`, `sequence` I32 [N], `layers` I32 [Lc], with metadata stating the convention. A
 * streaming capture is refused here: glim_session_capture_stop completes its file. */
glim_status glim_session_capture_write(glim_session *s, const char *path, glim_error *err);
/* Ends capture and frees its memory; a stream file is completed first. */
glim_status glim_session_capture_stop(glim_session *s, glim_error *err);
/* Records the token ids of positions position .. position+n-1 for capture's `tokens` (glim_eval
 * does this itself when it knows about hooks; calling it again is harmless). */
void glim_session_note_tokens(glim_session *s, const int32_t *tokens, int n, int position);

/* ---------------------------------------------------------------------------------------------
 * FFN census over decode tokens. Only the head token of a glim_eval call with logits (see
 * capture) is a decode token (the seed runs one token per pass and reads back only those with a
 * head); every other row is prefill: counted, not accumulated. Per layer and neuron:
 * mass = sum |act|; a log2 histogram of |act| with GLIM_CENSUS_BINS bins: bin 0 holds act == 0,
 * bin 1 + (e - GLIM_CENSUS_EXP_MIN) holds floor(log2 |act|) = e clamped to [EXP_MIN, EXP_MAX]
 * (so subnormals and |act| < 2^-24 land in bin 1, |act| >= 2^8 in the last bin); non-finite
 * values are counted apart. Per layer, the overlap |A ∩ B| / K of the top-K neurons by |act| of
 * consecutive decode tokens (positions p-1 and p of one sequence). */

#define GLIM_CENSUS_EXP_MIN (-24)
#define GLIM_CENSUS_EXP_MAX 8
#define GLIM_CENSUS_BINS (2 + GLIM_CENSUS_EXP_MAX - GLIM_CENSUS_EXP_MIN) /* 34 */

typedef struct glim_census_params {
    int top_k;            /* 0 = 32 */
    int neuron_hist;      /* also keep a histogram per neuron: n_layers*inter*34 u32 (141 MB at
                             30B); the per-layer histogram is always kept */
} glim_census_params;

glim_status glim_session_census_start(glim_session *s, const glim_census_params *p,
                                      glim_error *err);

typedef struct glim_census_view {
    int n_layers, inter, top_k, n_bins;
    uint64_t decode_tokens;      /* rows accumulated */
    uint64_t prefill_passes;     /* chunks without a head */
    uint64_t prefill_tokens;     /* rows counted but not accumulated */
    uint64_t head_passes;        /* chunks with a head */
    const double *mass;          /* [n_layers][inter] sum |act| */
    const uint64_t *hist;        /* [n_layers][n_bins] */
    const uint32_t *neuron_hist; /* [n_layers][inter][n_bins], NULL unless asked for */
    const uint64_t *nonfinite;   /* [n_layers] */
    const double *overlap_sum;   /* [n_layers] sum over consecutive pairs of |A∩B|/K */
    const uint64_t *overlap_n;   /* [n_layers] number of pairs */
} glim_census_view;

glim_status glim_session_census_view(const glim_session *s, glim_census_view *out,
                                     glim_error *err);
/* ".json": JSON (jansson) with everything but the per-neuron histograms; otherwise safetensors
 * (`mass` F64 [L, I], `hist` I64 [L, 34], `neuron_hist` U32 [L, I, 34] when kept, `nonfinite`
 * I64 [L], `overlap_sum` F64 [L], `overlap_n` I64 [L]; counts in the metadata). */
glim_status glim_session_census_write(const glim_session *s, const char *path, glim_error *err);
/* A short text summary (top_n neurons by mass per layer, mean overlap): malloc'd, caller frees. */
glim_status glim_session_census_summary(const glim_session *s, int top_n, char **text,
                                        glim_error *err);
void glim_session_census_clear(glim_session *s);
void glim_session_census_stop(glim_session *s);

/* Removes every hook (steering, capture, census): the session runs hook-free again. A capture
 * stream is completed first; its error, if any, is returned. */
glim_status glim_session_hooks_clear(glim_session *s, glim_error *err);

#ifdef __cplusplus
}
#endif
#endif
