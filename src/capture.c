/* capture.c: residual-stream capture. Rows are chosen per chunk (glim_hooks_capture_select),
 * copied into a preallocated [max_rows][slots][hidden] buffer at each captured layer's output,
 * and committed with their position, token and sequence at the chunk's end (a chunk that fails
 * before its end leaves nothing behind). Optionally the buffer is streamed to a safetensors file
 * whose header is written last into a reserved, space-padded region, so a corpus of any size is
 * captured with a fixed amount of memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hooks_internal.h"
#include "model.h"
#include "safetensors.h"
#include "session.h"

#define STREAM_HEADER_RESERVE 8192
#define DEFAULT_MAX_TOTAL (1 << 20)
#define DEFAULT_BUDGET (1ull << 30) /* bytes of rows held in memory by default */
#define LAYER_CONVENTION                                                                      \
    "layers[i] = l: the residual stream at the output of decoder layer l (0-based), after its " \
    "FFN residual add and after steering; equals Hugging Face hidden_states[l+1] (for the last " \
    "layer HF applies the final norm to that entry)"

static const char *select_name(glim_capture_select s) {
    switch (s) {
    case GLIM_CAPTURE_LAST_PROMPT: return "last_prompt";
    case GLIM_CAPTURE_ALL: return "all";
    case GLIM_CAPTURE_POSITIONS: return "positions";
    case GLIM_CAPTURE_HEAD: return "head";
    }
    return "?";
}

void glim_capture_state_free(glim_capture_state *c) {
    if (!c) return;
    if (c->stream) fclose(c->stream);
    free(c->positions);
    free(c->layers);
    free(c->slot_of_layer);
    free(c->residual);
    free(c->meta_pos);
    free(c->meta_tok);
    free(c->meta_seq);
    free(c->sel);
    free(c->stream_path);
    free(c);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* ---- selection and storing ---------------------------------------------------------------- */

int glim_hooks_capture_select(const struct glim_hooks *h, int pos0, int n, int is_prefill,
                              int *rows) {
    const glim_capture_state *c = h ? h->capture : NULL;
    if (!c || n <= 0) return 0;
    switch (c->select) {
    case GLIM_CAPTURE_ALL:
        for (int t = 0; t < n; t++) rows[t] = t;
        return n;
    case GLIM_CAPTURE_POSITIONS: {
        int k = 0;
        for (int t = 0; t < n; t++) {
            int32_t p = pos0 + t;
            if (bsearch(&p, c->positions, (size_t)c->n_positions, sizeof p, cmp_i32)) rows[k++] = t;
        }
        return k;
    }
    case GLIM_CAPTURE_HEAD:
    case GLIM_CAPTURE_LAST_PROMPT: {
        int r = glim_hooks_head_row_of(h, pos0, n, is_prefill);
        if (r < 0 || (c->select == GLIM_CAPTURE_LAST_PROMPT &&
                      glim_hooks_seq_of(h, pos0) == c->lp_done_seq))
            return 0;
        rows[0] = r;
        return 1;
    }
    }
    return 0;
}

int glim_hooks_capture_layer_slot(const struct glim_hooks *h, int layer) {
    if (!h || !h->capture || layer < 0 || layer >= h->n_layers) return -1;
    return h->capture->slot_of_layer[layer];
}

/* Rows of this chunk that fit: in the buffer, and in the bookkeeping. */
static int room(const glim_capture_state *c) {
    uint64_t r = (uint64_t)(c->max_rows - c->rows);
    uint64_t m = c->meta_cap - (c->streamed + (uint64_t)c->rows);
    return (int)(r < m ? r : m);
}

void glim_hooks_capture_store(struct glim_hooks *h, int layer, int j, const float *row, int pos0,
                              int n, int is_prefill) {
    glim_capture_state *c = h ? h->capture : NULL;
    int slot = glim_hooks_capture_layer_slot(h, layer);
    if (slot < 0 || j < 0 || j >= room(c)) return;
    size_t at = ((size_t)(c->rows + j) * (size_t)c->n_slots + (size_t)slot) * (size_t)h->hidden;
    memcpy(c->residual + at, row, (size_t)h->hidden * sizeof(float));
}

void glim_capture_layer(struct glim_hooks *h, int layer, const float *x, int n, int pos0,
                        int is_prefill) {
    glim_capture_state *c = h->capture;
    if (c->slot_of_layer[layer] < 0) return;
    int k = glim_hooks_capture_select(h, pos0, n, is_prefill, c->sel);
    for (int j = 0; j < k; j++)
        glim_hooks_capture_store(h, layer, j, x + (size_t)c->sel[j] * h->hidden, pos0, n,
                                 is_prefill);
}

/* ---- streaming ---------------------------------------------------------------------------- */

static int stream_flush(struct glim_hooks *h) {
    glim_capture_state *c = h->capture;
    if (!c->stream || c->rows == 0) return 0;
    size_t count = (size_t)c->rows * (size_t)c->n_slots * (size_t)h->hidden;
    if (fwrite(c->residual, sizeof(float), count, c->stream) != count) return -1;
    c->streamed += (uint64_t)c->rows;
    c->rows = 0;
    return 0;
}

void glim_capture_pass_end(struct glim_hooks *h, int pos0, int n, int is_prefill) {
    glim_capture_state *c = h->capture;
    int k = glim_hooks_capture_select(h, pos0, n, is_prefill, c->sel);
    int keep = room(c);
    if (keep > k) keep = k;
    int seq = glim_hooks_seq_of(h, pos0);
    for (int j = 0; j < keep; j++) {
        uint64_t i = c->streamed + (uint64_t)c->rows + (uint64_t)j;
        int p = pos0 + c->sel[j];
        c->meta_pos[i] = p;
        c->meta_tok[i] = (p >= 0 && p < h->n_ctx && h->tok_valid[p]) ? h->tok[p] : -1;
        c->meta_seq[i] = seq;
    }
    c->rows += keep;
    c->total += (uint64_t)keep;
    c->dropped += (uint64_t)(k - keep);
    if (c->select == GLIM_CAPTURE_LAST_PROMPT && k > 0) c->lp_done_seq = seq;
    /* Keep room for a whole chunk; a write error stops the stream (reported at the end). */
    if (c->stream && c->rows + h->n_batch > c->max_rows && stream_flush(h) != 0) {
        fclose(c->stream);
        c->stream = NULL;
        c->max_rows = c->rows; /* nothing more fits: later rows are counted as dropped */
    }
}

/* The safetensors header for n streamed rows (tensor data follows the reserved region). */
static int stream_header(const struct glim_hooks *h, uint64_t n, char *buf, size_t cap) {
    const glim_capture_state *c = h->capture;
    uint64_t r = n * (uint64_t)c->n_slots * (uint64_t)h->hidden * 4, m = n * 4;
    return snprintf(buf, cap,
                    "{\"__metadata__\":{\"format\":\"glimmer-capture\",\"select\":\"%s\","
                    "\"hidden_size\":\"%d\",\"n_model_layers\":\"%d\",\"dropped_rows\":\"%llu\","
                    "\"layer_convention\":\"%s\"},"
                    "\"residual\":{\"dtype\":\"F32\",\"shape\":[%llu,%d,%d],\"data_offsets\":[0,%llu]},"
                    "\"positions\":{\"dtype\":\"I32\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]},"
                    "\"tokens\":{\"dtype\":\"I32\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]},"
                    "\"sequence\":{\"dtype\":\"I32\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]},"
                    "\"layers\":{\"dtype\":\"I32\",\"shape\":[%d],\"data_offsets\":[%llu,%llu]}}",
                    select_name(c->select), h->hidden, h->n_layers,
                    (unsigned long long)c->dropped, LAYER_CONVENTION, (unsigned long long)n,
                    c->n_slots, h->hidden, (unsigned long long)r, (unsigned long long)n,
                    (unsigned long long)r, (unsigned long long)(r + m), (unsigned long long)n,
                    (unsigned long long)(r + m), (unsigned long long)(r + 2 * m),
                    (unsigned long long)n, (unsigned long long)(r + 2 * m),
                    (unsigned long long)(r + 3 * m), c->n_slots, (unsigned long long)(r + 3 * m),
                    (unsigned long long)(r + 3 * m + 4 * (uint64_t)c->n_slots));
}

static glim_status stream_tmp_name(const char *path, char **out, glim_error *err) {
    size_t n = strlen(path);
    *out = malloc(n + 5);
    if (!*out) return glim_fail(err, GLIM_E_NOMEM, "no memory");
    memcpy(*out, path, n);
    memcpy(*out + n, ".tmp", 5);
    return GLIM_OK;
}

glim_status glim_capture_finish_stream(struct glim_hooks *h, glim_error *err) {
    glim_capture_state *c = h->capture;
    if (!c || !c->stream_path) return GLIM_OK;
    char *tmp;
    glim_status st = stream_tmp_name(c->stream_path, &tmp, err);
    if (st) return st;
    FILE *f = c->stream;
    if (!f) {
        st = glim_fail(err, GLIM_E_IO, "capture stream %s: a write failed earlier; %llu rows were "
                       "lost", tmp, (unsigned long long)c->dropped);
    } else {
        int bad = stream_flush(h) != 0;
        c->stream = NULL;
        uint64_t n = c->streamed;
        bad |= fwrite(c->meta_pos, 4, (size_t)n, f) != (size_t)n;
        bad |= fwrite(c->meta_tok, 4, (size_t)n, f) != (size_t)n;
        bad |= fwrite(c->meta_seq, 4, (size_t)n, f) != (size_t)n;
        bad |= fwrite(c->layers, 4, (size_t)c->n_slots, f) != (size_t)c->n_slots;
        char *hdr = malloc(STREAM_HEADER_RESERVE + 1);
        int hl = hdr ? stream_header(h, n, hdr, STREAM_HEADER_RESERVE + 1) : -1;
        if (hl < 0 || hl > STREAM_HEADER_RESERVE) {
            bad = 1;
        } else {
            memset(hdr + hl, ' ', STREAM_HEADER_RESERVE - (size_t)hl);
            uint64_t len = STREAM_HEADER_RESERVE;
            bad |= fseek(f, 0, SEEK_SET) != 0;
            bad |= fwrite(&len, 8, 1, f) != 1;
            bad |= fwrite(hdr, 1, STREAM_HEADER_RESERVE, f) != STREAM_HEADER_RESERVE;
        }
        free(hdr);
        bad |= fclose(f) != 0;
        if (bad)
            st = glim_fail(err, GLIM_E_IO, "capture stream %s: write failed: %s", tmp,
                           strerror(errno));
        else if (rename(tmp, c->stream_path) != 0)
            st = glim_fail(err, GLIM_E_IO, "capture stream: cannot rename %s to %s: %s", tmp,
                           c->stream_path, strerror(errno));
    }
    if (st) remove(tmp);
    free(tmp);
    free(c->stream_path);
    c->stream_path = NULL;
    c->max_rows = c->rows; /* the stream is complete: later rows are dropped */
    return st;
}

/* ---- configuration ------------------------------------------------------------------------ */

static glim_status check_capture_params(const struct glim_hooks *h, const glim_capture_params *p,
                                        glim_error *err) {
    if ((unsigned)p->select > GLIM_CAPTURE_HEAD)
        return glim_fail(err, GLIM_E_ARG, "capture: unknown selection %d", (int)p->select);
    if (p->select == GLIM_CAPTURE_POSITIONS && (p->n_positions <= 0 || !p->positions))
        return glim_fail(err, GLIM_E_ARG, "capture: POSITIONS needs at least one position");
    for (int i = 0; p->select == GLIM_CAPTURE_POSITIONS && i < p->n_positions; i++)
        if (p->positions[i] < 0 || p->positions[i] >= h->n_ctx)
            return glim_fail(err, GLIM_E_ARG, "capture: position %d is outside the context "
                             "0..%d", p->positions[i], h->n_ctx - 1);
    if (p->layers && p->n_layers <= 0)
        return glim_fail(err, GLIM_E_ARG, "capture: an empty layer list (pass NULL for all)");
    for (int i = 0; p->layers && i < p->n_layers; i++) {
        if (p->layers[i] < 0 || p->layers[i] >= h->n_layers)
            return glim_fail(err, GLIM_E_ARG, "capture: layer %d is outside the model's layers "
                             "0..%d", p->layers[i], h->n_layers - 1);
        for (int j = 0; j < i; j++)
            if (p->layers[j] == p->layers[i])
                return glim_fail(err, GLIM_E_ARG, "capture: layer %d is listed twice", p->layers[i]);
    }
    if (p->max_rows < 0 || p->max_total_rows < 0)
        return glim_fail(err, GLIM_E_ARG, "capture: negative max_rows %d / max_total_rows %d",
                         p->max_rows, p->max_total_rows);
    return GLIM_OK;
}

static glim_status alloc_capture(struct glim_hooks *h, const glim_capture_params *p,
                                 glim_capture_state *c, glim_error *err) {
    c->select = p->select;
    c->lp_done_seq = -1;
    c->n_slots = p->layers ? p->n_layers : h->n_layers;
    c->layers = malloc((size_t)c->n_slots * sizeof *c->layers);
    c->slot_of_layer = malloc((size_t)h->n_layers * sizeof *c->slot_of_layer);
    c->sel = malloc((size_t)h->n_batch * sizeof *c->sel);
    if (!c->layers || !c->slot_of_layer || !c->sel) return glim_fail(err, GLIM_E_NOMEM, "capture: no memory");
    for (int l = 0; l < h->n_layers; l++) c->slot_of_layer[l] = -1;
    for (int i = 0; i < c->n_slots; i++) {
        c->layers[i] = p->layers ? p->layers[i] : i;
        c->slot_of_layer[c->layers[i]] = i;
    }
    if (p->select == GLIM_CAPTURE_POSITIONS) {
        c->positions = malloc((size_t)p->n_positions * sizeof *c->positions);
        if (!c->positions) return glim_fail(err, GLIM_E_NOMEM, "capture: no memory");
        memcpy(c->positions, p->positions, (size_t)p->n_positions * sizeof *c->positions);
        qsort(c->positions, (size_t)p->n_positions, sizeof *c->positions, cmp_i32);
        c->n_positions = p->n_positions;
    }
    uint64_t row_floats = (uint64_t)c->n_slots * (uint64_t)h->hidden;
    int max_rows = p->max_rows;
    if (!max_rows && (p->stream_path || p->select == GLIM_CAPTURE_LAST_PROMPT)) max_rows = 64;
    if (!max_rows) { /* the context, but no more than DEFAULT_BUDGET bytes (at least a chunk) */
        uint64_t fit = DEFAULT_BUDGET / (row_floats * sizeof(float));
        max_rows = (uint64_t)h->n_ctx < fit ? h->n_ctx : fit < (uint64_t)h->n_batch ? h->n_batch : (int)fit;
    }
    if (p->stream_path && max_rows < h->n_batch) max_rows = h->n_batch;
    c->max_rows = max_rows;
    c->meta_cap = p->stream_path ? (uint64_t)(p->max_total_rows ? p->max_total_rows : DEFAULT_MAX_TOTAL)
                                 : (uint64_t)max_rows;
    if ((uint64_t)max_rows > (SIZE_MAX / 8) / row_floats)
        return glim_fail(err, GLIM_E_ARG, "capture: %d rows of %llu floats do not fit in memory",
                         max_rows, (unsigned long long)row_floats);
    c->residual = malloc((size_t)max_rows * (size_t)row_floats * sizeof(float));
    c->meta_pos = malloc((size_t)c->meta_cap * 4);
    c->meta_tok = malloc((size_t)c->meta_cap * 4);
    c->meta_seq = malloc((size_t)c->meta_cap * 4);
    if (!c->residual || !c->meta_pos || !c->meta_tok || !c->meta_seq)
        return glim_fail(err, GLIM_E_NOMEM, "capture: no memory for %d rows x %d layers x %d "
                         "floats (%.1f MiB)", max_rows, c->n_slots, h->hidden,
                         (double)max_rows * (double)row_floats * 4 / 1048576.0);
    if (p->stream_path) {
        char *tmp;
        glim_status st = stream_tmp_name(p->stream_path, &tmp, err);
        if (st) return st;
        c->stream = fopen(tmp, "wb");
        int bad = !c->stream;
        if (!bad) { /* the header region, filled in at the end */
            static const char zero[8 + STREAM_HEADER_RESERVE];
            bad = fwrite(zero, 1, sizeof zero, c->stream) != sizeof zero;
        }
        if (bad) st = glim_fail(err, GLIM_E_IO, "capture: cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        if (st) return st;
        if (!(c->stream_path = strdup(p->stream_path))) return glim_fail(err, GLIM_E_NOMEM, "no memory");
    }
    return GLIM_OK;
}

glim_status glim_session_capture_start(glim_session *s, const glim_capture_params *p,
                                       glim_error *err) {
    if (!s || !p) return glim_fail(err, GLIM_E_ARG, "capture: NULL argument");
    struct glim_hooks *h;
    glim_status st = glim_hooks_get(s, &h, err);
    if (st) return st;
    if ((st = check_capture_params(h, p, err))) {
        glim_hooks_release_if_empty(s);
        return st;
    }
    if (h->capture) {
        glim_status st2 = glim_session_capture_stop(s, err);
        if (st2) return st2;
        if ((st = glim_hooks_get(s, &h, err))) return st; /* stop may have released the hooks */
    }
    glim_capture_state *c = calloc(1, sizeof *c);
    if (!c) st = glim_fail(err, GLIM_E_NOMEM, "capture: no memory");
    else st = alloc_capture(h, p, c, err);
    if (st) {
        if (c && c->stream) { /* remove the half-made stream file */
            fclose(c->stream);
            c->stream = NULL;
            char *tmp;
            if (!stream_tmp_name(p->stream_path, &tmp, NULL)) {
                remove(tmp);
                free(tmp);
            }
        }
        glim_capture_state_free(c);
        glim_hooks_release_if_empty(s);
        return st;
    }
    h->capture = c;
    return GLIM_OK;
}

glim_status glim_session_capture_view(const glim_session *s, glim_capture_view *out,
                                      glim_error *err) {
    const glim_capture_state *c = s && s->hooks ? s->hooks->capture : NULL;
    if (!c) return glim_fail(err, GLIM_E_ARG, "capture: not started on this session");
    out->rows = c->rows;
    out->n_layers = c->n_slots;
    out->hidden = s->hooks->hidden;
    out->total_rows = c->total;
    out->dropped = c->dropped;
    out->residual = c->residual;
    out->positions = c->meta_pos + c->streamed;
    out->tokens = c->meta_tok + c->streamed;
    out->sequence = c->meta_seq + c->streamed;
    out->layers = c->layers;
    return GLIM_OK;
}

void glim_session_capture_clear(glim_session *s) {
    if (s && s->hooks && s->hooks->capture) s->hooks->capture->rows = 0;
}

glim_status glim_session_capture_write(glim_session *s, const char *path, glim_error *err) {
    glim_capture_view v = {0}; /* (gcc cannot see that a failed view returns first) */
    glim_status st = glim_session_capture_view(s, &v, err);
    if (st) return st;
    if (s->hooks->capture->stream_path)
        return glim_fail(err, GLIM_E_ARG, "capture: this capture streams to %s, which "
                         "glim_session_capture_stop completes", s->hooks->capture->stream_path);
    if (!path) return glim_fail(err, GLIM_E_ARG, "capture: no output path");
    char hidden[16], layers[16], dropped[32];
    snprintf(hidden, sizeof hidden, "%d", v.hidden);
    snprintf(layers, sizeof layers, "%d", s->hooks->n_layers);
    snprintf(dropped, sizeof dropped, "%llu", (unsigned long long)v.dropped);
    const char *keys[] = {"format", "select", "hidden_size", "n_model_layers", "dropped_rows",
                          "layer_convention"};
    const char *vals[] = {"glimmer-capture", select_name(s->hooks->capture->select), hidden, layers,
                          dropped, LAYER_CONVENTION};
    glim_st_out t[5] = {
        {"residual", GLIM_DT_F32, 3, {v.rows, v.n_layers, v.hidden}, v.residual},
        {"positions", GLIM_DT_I32, 1, {v.rows}, v.positions},
        {"tokens", GLIM_DT_I32, 1, {v.rows}, v.tokens},
        {"sequence", GLIM_DT_I32, 1, {v.rows}, v.sequence},
        {"layers", GLIM_DT_I32, 1, {v.n_layers}, v.layers},
    };
    return glim_st_write(path, t, 5, keys, vals, 6, err);
}

glim_status glim_session_capture_stop(glim_session *s, glim_error *err) {
    if (!s || !s->hooks || !s->hooks->capture) return GLIM_OK;
    glim_status st = glim_capture_finish_stream(s->hooks, err);
    glim_capture_state_free(s->hooks->capture);
    s->hooks->capture = NULL;
    glim_hooks_release_if_empty(s);
    return st;
}
