/* cmd_bench.c: `glimmer bench`: decode and prefill speed of the CUDA backend, each decode figure
 * as a fraction of its bandwidth floor = (weight bytes + KV bytes read per token) / the
 * device-to-device copy bandwidth measured in the same run (bytes read + written).
 *   --synthetic   a model with Muse Glimmer 30B's shapes, random MLX 4-bit weights (group 64,
 *                 bf16 scales/biases) generated straight in GPU memory: no file needed
 *   -m DIR        a real checkpoint, opened on the CUDA backend
 * Decode is timed per token through the whole forward (token upload, the graph, the logits back
 * to the host), at contexts 0, 4096 and 32768 or those of --ctx (the KV cache of a long context
 * is filled with random values instead of being prefilled); prefill is one 2048-token prompt. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "glimmer.h"
#include "glimmer_hooks.h"
#include "model.h"   /* --hooks: a session shell that holds the hooks */
#include "hooks_ext.h" /* glim_hooks_free for the shell */
#include "session.h"

#define CMD "glimmer bench"

#ifdef GLIM_HAVE_CUDA
#include "cuda/cuda_api.h"

#define BENCH_MAX_CTX 8        /* --ctx: contexts at most */
#define BENCH_CTX_LIMIT 131072 /* --ctx: the 30B's max_position_embeddings */
#define BENCH_CTX_SPARE 64     /* positions past the longest context's decoded tokens */

typedef struct bench_opts {
    const char *dir;
    int synthetic, layers, n_decode, prompt, variants, bits, group, profile, hooks, timeline;
    const char *out;
    int ctxs[BENCH_MAX_CTX], n_ctxs; /* decode contexts, in the order given */
} bench_opts;

static void bench_help(void) {
    printf("usage: glimmer bench (--synthetic | -m DIR) [options]\n\n"
           "Decode tokens/s at contexts 0, 4096 and 32768 (or --ctx's) and prefill tokens/s of\n"
           "a 2048-token prompt on the CUDA backend, each decode figure as a fraction of the floor\n"
           "(weight + KV bytes read per token over the copy bandwidth measured in this run).\n"
           "The device line also gives the memory's data-sheet peak; the copy bandwidth is\n"
           "what the floor uses; above 32 GB/s of peak per SM (an H200) o_proj takes two row\n"
           "blocks a chunk (GLIM_CUDA_SPAN_TWO=15, else 13; bench/RESULTS.md v52).\n\n"
           "  --synthetic        Muse Glimmer 30B shapes, random 4-bit weights made on the GPU\n"
           "  -m, --model DIR    a checkpoint instead\n"
           "  --layers N         synthetic: only N layers (quick checks; default 52)\n"
           "  --bits B           synthetic: 4 or 8 (default 4); --group G (default 64)\n"
           "  -n N               decode tokens timed per context (default 64)\n"
           "  --ctx LIST         decode contexts, comma-separated (default 0,4096,32768; up to\n"
           "                     8, each at most 131072 less -n and 64)\n"
           "  --prompt N         prefill length (default 2048; 0 skips)\n"
           "  --variants         also time decode at context 0 with each speed switch off\n"
           "  --profile          also time each kind of kernel alone (GB/s of the matvecs), and\n"
           "                     with a prompt each kernel of its last sub-chunk (64 tokens, or\n"
           "                     GLIM_CUDA_PREFILL_T's; GB/s and TFLOPS of its products)\n"
           "  --timeline         also show, at each context, where a token's time goes as the\n"
           "                     graph runs: per kind of kernel its share of the token and the\n"
           "                     latency of the kernel boundary before it\n"
           "  --hooks            also time decode at context 0 with each research hook on\n"
           "                     (steering, residual capture, FFN census), as a fraction of\n"
           "                     the speed without hooks\n"
           "  --out FILE         append the result table to FILE\n");
}

static double now(void) { return args_now(); }

/* The 30B config (MODEL.md 1.1). */
static glim_config config_30b(int layers) {
    glim_config c;
    memset(&c, 0, sizeof c);
    c.vocab_size = 202048;
    c.hidden_size = 6656;
    c.intermediate_size = 19968;
    c.n_layers = layers;
    c.n_heads = 32;
    c.n_kv_heads = 2;
    c.head_dim = 128;
    c.sliding_window = 2048;
    c.max_position = 131072;
    c.rms_eps = 1e-5f;
    c.post_norm_eps = 1e-8f;
    c.qk_scale = 3.87f;
    c.attn_scale = 1.0f / sqrtf(128.0f);
    c.final_softcap = 20.0f;
    c.output_multiplier = 0.19611613513818404f;
    c.rope_theta = 500000.0f;
    c.layer_is_full = calloc((size_t)layers, 1);
    c.layer_rope_theta = calloc((size_t)layers, sizeof(float));
    c.inv_freq = calloc(64, sizeof(float));
    for (int i = 0; i < layers; i++) {
        c.layer_is_full[i] = (layers - 1 - i) % 4 == 0;
        c.layer_rope_theta[i] = c.layer_is_full[i] ? 0.0f : 500000.0f;
    }
    for (int i = 0; i < 64; i++) c.inv_freq[i] = (float)(1.0 / pow(500000.0, (2.0 * i) / 128.0));
    return c;
}

typedef struct decode_res {
    double tok_s, gpu_ms, floor_frac;
    int nonfinite; /* NaN or inf among the last token's logits */
} decode_res;

/* Decodes n tokens at positions pos..pos+n-1 (after 4 warm-up tokens). Counts the non-finite
 * logits of the last token, after the timing: random weights whose sums overflowed, or a
 * diagnostic computing on garbage, would time NaN paths (the divisions' and square roots' slow
 * ones) that no real checkpoint takes. */
static int time_decode(gcu_session *s, const gcu_model *m, int vocab, int pos, int n, double bw,
                       decode_res *r) {
    glim_error err;
    float *logits = malloc(sizeof(float) * vocab);
    int32_t tok = 1;
    double floor_s = 0, gpu = 0, t0 = 0;
    int warm = 4;
    for (int i = -warm; i < n; i++) {
        int p = pos + i + warm;
        if (i == 0) t0 = now();
        tok = (tok * 1103515245 + 12345) & 0x7fffffff;
        int32_t t = tok % vocab;
        if (gcu_forward(s, &t, 1, p, GLIM_LOGITS_LAST, logits, &err) != GLIM_OK) {
            fprintf(stderr, "%s: decode at %d: %s\n", CMD, p, err.message);
            free(logits);
            return -1;
        }
        if (i >= 0) {
            gpu += gcu_session_last_gpu_ms(s);
            floor_s += (double)(gcu_model_weight_bytes(m) + gcu_kv_bytes_read(m, p)) / bw;
        }
    }
    double dt = now() - t0;
    r->tok_s = n / dt;
    r->gpu_ms = gpu / n;
    r->floor_frac = floor_s / dt;
    r->nonfinite = 0;
    for (int v = 0; v < vocab; v++) r->nonfinite += !isfinite(logits[v]);
    free(logits);
    return 0;
}

static void emit(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (f) {
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
    }
}

/* Decode at context 0 with each research hook attached. The hooks live on a session shell (a
 * glim_model holding only the config, a glim_session holding only the sizes) because the
 * synthetic model has no glim_model; the CUDA session runs them as it would for glim_eval. */
static void bench_hooks(gcu_model *m, int vocab, const bench_opts *o, double bw, FILE *out) {
    glim_model shell_m;
    glim_session shell_s;
    memset(&shell_m, 0, sizeof shell_m);
    memset(&shell_s, 0, sizeof shell_s);
    shell_m.cfg = config_30b(o->layers);
    shell_s.model = &shell_m;
    shell_s.n_ctx = 4096;
    shell_s.n_batch = 64;
    glim_error err = {0};
    glim_directions *d = NULL;
    if (glim_directions_create(o->layers, 6656, &d, &err) != GLIM_OK) {
        fprintf(stderr, "%s: --hooks: %s\n", CMD, err.message);
        return;
    }
    float *v = malloc(sizeof(float) * 6656);
    for (int l = 0; l < o->layers; l++) {
        for (int i = 0; i < 6656; i++) v[i] = (float)((i * 7 + l) % 13) / 13.0f - 0.5f;
        glim_directions_set(d, l, v, &err);
    }
    free(v);
    emit(out, "\ndecode @ ctx 0 with research hooks (run on the host between kernels):\n\n"
              "| hook | tok/s | fraction of the speed without hooks |\n| --- | --- | --- |\n");
    double base = 0;
    for (int k = 0; k < 5; k++) {
        const char *name[] = {"none", "steering (add, every layer)", "steering (ablate + gate)",
                              "residual capture (every layer, each decoded token)",
                              "FFN census"};
        glim_steer_params sp = glim_steer_defaults();
        glim_capture_params cp;
        memset(&cp, 0, sizeof cp);
        glim_census_params cc;
        memset(&cc, 0, sizeof cc);
        glim_status st = GLIM_OK;
        if (k == 1) st = glim_session_steer_push(&shell_s, d, &sp, &err);
        if (k == 2) {
            sp.mode = GLIM_STEER_ABLATE;
            sp.gate = GLIM_GATE_ABS;
            sp.threshold = 0.1f;
            st = glim_session_steer_push(&shell_s, d, &sp, &err);
        }
        if (k == 3) {
            cp.select = GLIM_CAPTURE_ALL;
            cp.max_rows = o->n_decode + 8;
            st = glim_session_capture_start(&shell_s, &cp, &err);
        }
        if (k == 4) st = glim_session_census_start(&shell_s, &cc, &err);
        gcu_session *s = NULL;
        if (st == GLIM_OK) st = gcu_session_new(m, 4096, 64, 0, &s, &err);
        if (st != GLIM_OK) {
            fprintf(stderr, "%s: --hooks %s: %s\n", CMD, name[k], err.message);
            break;
        }
        gcu_session_set_hooks(s, shell_s.hooks);
        decode_res r;
        if (time_decode(s, m, vocab, 0, o->n_decode, bw, &r) == 0) {
            if (k == 0) base = r.tok_s;
            emit(out, "| %s | %.1f | %.3f |\n", name[k], r.tok_s, base > 0 ? r.tok_s / base : 0.0);
        }
        gcu_session_free(s);
        glim_session_steer_clear(&shell_s);
        glim_session_capture_stop(&shell_s, &err);
        glim_session_census_stop(&shell_s);
    }
    glim_hooks_free(shell_s.hooks);
    glim_directions_free(d);
    free(shell_m.cfg.layer_is_full), free(shell_m.cfg.layer_rope_theta), free(shell_m.cfg.inv_freq);
}

/* bench --timeline: one table per context (gcu_timeline), after that context's decode row. */
static void timeline_table(FILE *out, gcu_session *s, int pos) {
    gcu_tl_row rows[8];
    double tok = 0;
    glim_error err = {0};
    int n = gcu_timeline(s, pos, 8, rows, 8, &tok, &err);
    if (n < 0) {
        fprintf(stderr, "%s: timeline: %s\n", CMD, err.message);
        return;
    }
    emit(out, "\ntimeline @ ctx %d: %.1f us from the first kernel's start to the head's end "
              "(us per launch, mean of 8 tokens; relative to the previous kernel's last block end; for "
              "attention, the last loop start is when the last block's tiles were done and the block "
              "phases are wait / q and tiles (q preparation + first tile's wait + the tiles' math) / "
              "partials and merge, over the blocks that work)\n\n"
              "| kernel | launches | step (share of token) | first block start | last block start | "
              "past PDL wait | run after wait | block-end spread | last loop start | "
              "block: wait / prologue / loop | block: shortest wait / longest prologue | step x launches |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n", pos, tok);
    for (int i = 0; i < n; i++) {
        char last[32] = "", ph[96] = "", ext[48] = ""; /* decode matvecs and attention only */
        if (rows[i].loop_us > 0) {
            snprintf(last, sizeof last, "%.2f", rows[i].loop_last_us);
            snprintf(ext, sizeof ext, "%.2f / %.2f", rows[i].wait_min_us, rows[i].pro_max_us);
            if (rows[i].q_us > 0 || rows[i].tile_us > 0) /* attention */
                snprintf(ph, sizeof ph, "%.2f / %.2f (%.2f + %.2f + %.2f) / %.2f", rows[i].wait_us, rows[i].pro_us,
                         rows[i].q_us, rows[i].tile_us, rows[i].pro_us - rows[i].q_us - rows[i].tile_us,
                         rows[i].loop_us);
            else
                snprintf(ph, sizeof ph, "%.2f / %.2f / %.2f", rows[i].wait_us, rows[i].pro_us, rows[i].loop_us);
        }
        emit(out, "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %s | %s | %.0f (%.1f%%) |\n",
             rows[i].name, rows[i].count, rows[i].step_us, rows[i].start_us, rows[i].start_last_us, rows[i].release_us,
             rows[i].run_us, rows[i].spread_us, last, ph, ext,
             rows[i].step_us * rows[i].count, tok > 0 ? 100.0 * rows[i].step_us * rows[i].count / tok : 0.0);
    }
    emit(out, "\n| what | tok/s | ms/token (wall) | GPU ms/token | floor ms/token | fraction of floor |\n"
              "| --- | --- | --- | --- | --- | --- |\n");
}

/* The model bench times: the synthetic 30B (o->synthetic) or the checkpoint o->dir on the CUDA
 * backend (*gm then owns *m). Prints what it is; 0, or 1 after saying why not. */
static int bench_model(const bench_opts *o, FILE *out, gcu_model **m, glim_model **gm, int *vocab) {
    glim_error err = {0};
    double t0 = now();
    *m = NULL, *gm = NULL;
    if (o->synthetic) {
        glim_config c = config_30b(o->layers);
        glim_status st = gcu_model_synthetic(&c, o->bits, o->group, 1234, m, &err);
        free(c.layer_is_full), free(c.layer_rope_theta), free(c.inv_freq);
        if (st != GLIM_OK) {
            fprintf(stderr, "%s: %s\n", CMD, err.message);
            return 1;
        }
        *vocab = 202048;
        emit(out, "model: synthetic Muse Glimmer 30B shapes, %d layers, MLX %d-bit group %d, bf16 "
                  "scales/biases (made on the GPU in %.1f s)\n", o->layers, o->bits, o->group, now() - t0);
    } else {
        glim_model_params mp = {"cuda", 0};
        if (glim_model_open(o->dir, &mp, gm, &err) != GLIM_OK) {
            fprintf(stderr, "%s: %s\n", CMD, err.message);
            return 1;
        }
        *m = (gcu_model *)(*gm)->backend_model;
        *vocab = glim_model_get_info(*gm)->vocab_size;
        emit(out, "model: %s (loaded in %.1f s)\n", o->dir, now() - t0);
    }
    return 0;
}

/* --profile: each kind of kernel alone, 20 back to back (gcu_profile), after one token. */
static void bench_profile(gcu_session *s, int vocab, double bw, FILE *out) {
    glim_error err = {0};
    float *lg = malloc(sizeof(float) * vocab);
    int32_t t1 = 1;
    gcu_prof_row rows[32];
    int n = 0;
    if (lg && gcu_forward(s, &t1, 1, 0, GLIM_LOGITS_LAST, lg, &err) == GLIM_OK) n = gcu_profile(s, 0, rows, 32, &err);
    if (err.message[0]) fprintf(stderr, "%s: --profile: %s\n", CMD, err.message);
    emit(out, "| kernel alone (20 back to back, no PDL) | us | GB/s | fraction of copy bw |\n| --- | --- | --- | --- |\n");
    for (int i = 0; i < n; i++) {
        if (rows[i].bytes > 0)
            emit(out, "| %s | %.1f | %.0f | %.1f%% |\n", rows[i].name, rows[i].ms * 1e3,
                 rows[i].bytes / (rows[i].ms * 1e-3) / 1e9, 100.0 * rows[i].bytes / (rows[i].ms * 1e-3) / bw);
        else
            emit(out, "| %s | %.1f | | |\n", rows[i].name, rows[i].ms * 1e3);
    }
    emit(out, "\n");
    free(lg);
}

/* --profile with a prompt: the prompt's last sub-chunk (64 tokens, GLIM_CUDA_PREFILL_T), each
 * kind of kernel alone (gcu_profile_prefill): where a prompt's time goes, and the products' GB/s
 * and TFLOPS. */
static void bench_profile_prefill(gcu_session *s, int prompt, double bw, FILE *out) {
    glim_error err = {0};
    gcu_prof_row rows[16];
    memset(rows, 0, sizeof rows);
    const int sub = gcu_session_prefill_t(s), T = prompt < sub ? prompt : sub;
    const int n = gcu_profile_prefill(s, prompt - T, T, rows, 16, &err);
    if (err.message[0]) fprintf(stderr, "%s: --profile (prefill): %s\n", CMD, err.message);
    emit(out, "\n| prompt sub-chunk, kernel alone (10 back to back, no PDL) | us | GB/s | fraction of copy bw | TFLOPS |\n"
              "| --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < n; i++) {
        const double sec = rows[i].ms * 1e-3;
        if (rows[i].bytes > 0)
            emit(out, "| %s | %.1f | %.0f | %.1f%% | %.1f |\n", rows[i].name, rows[i].ms * 1e3, rows[i].bytes / sec / 1e9,
                 100.0 * rows[i].bytes / sec / bw, rows[i].flops / sec / 1e12);
        else
            emit(out, "| %s | %.1f | | | |\n", rows[i].name, rows[i].ms * 1e3);
    }
    emit(out, "\n");
}

/* The prefill row: a warm-up chunk, then an o->prompt-token prompt from position 0 in chunks of
 * 64 (the server's and the CLI's chunk). 0, or -1 (said on stderr) when it could not be run. */
static int bench_prefill(gcu_session *s, int vocab, const bench_opts *o, FILE *out) {
    glim_error err = {0};
    int32_t *p = malloc(sizeof(int32_t) * o->prompt);
    float *lg = malloc(sizeof(float) * vocab);
    if (!p || !lg) {
        fprintf(stderr, "%s: prefill: out of memory\n", CMD);
        free(p), free(lg);
        return -1;
    }
    for (int i = 0; i < o->prompt; i++) p[i] = (int32_t)((i * 7919u + 13) % (unsigned)vocab);
    gcu_forward(s, p, 32, 0, GLIM_LOGITS_NONE, NULL, &err);
    double a = now();
    glim_status st = GLIM_OK;
    for (int done = 0; done < o->prompt && st == GLIM_OK; done += 64) {
        int n = o->prompt - done < 64 ? o->prompt - done : 64;
        st = gcu_forward(s, p + done, n, done, done + n == o->prompt ? GLIM_LOGITS_LAST : GLIM_LOGITS_NONE, lg, &err);
    }
    double dt = now() - a;
    if (st != GLIM_OK) fprintf(stderr, "%s: prefill: %s\n", CMD, err.message);
    else emit(out, "| prefill %d tokens | %.1f | %.3f | | | |\n", o->prompt, o->prompt / dt, 1e3 * dt / o->prompt);
    free(p), free(lg);
    return st == GLIM_OK ? 0 : -1;
}

/* --variants: decode at context 0 with one switch changed from the defaults per row (the
 * switches of gcu_options, each named with its environment variable and the session that made
 * it the default or refuted it), then the defaults back. A switch that only k_dmv_tma reads runs
 * with GLIM_CUDA_SPAN=0, since the default span kernel ignores it. */
static void bench_variants(gcu_model *m, int vocab, const bench_opts *o, double bw, FILE *out) {
    glim_error err = {0};
    emit(out, "\ndecode @ ctx 0 with one switch changed:\n\n| variant | tok/s | GPU ms/token | fraction of floor |\n| --- | --- | --- | --- |\n");
    gcu_options base = gcu_options_default();
    struct { const char *name; gcu_options o; } v[96]; /* (gcc's -Warray-bounds names a list grown past it) */
    int nv = 0;
    v[nv].name = "default (integer path; qkvg, o_proj, gate/up and down span-major, each warp staging its own spans, the row blocks' sums in shared memory, whole row blocks per block on the fewest blocks with the same largest share; the head on k_dmv_tma's lean kernel, 2-slot shared-memory rings of 2 units; the consumer norm's scale on the row sums after the loop, attention's tiles on the tensor cores in its lean instance, graph, PDL, o_proj launched at attention's start and prefetching every 4th of gate/up's row blocks into L2 during it, gate/up's own blocks every 16th and down's every 6th before their wait)", v[nv++].o = base;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): the merges' fences sequentially consistent (__threadfence; GLIM_CUDA_FENCE_SC=1)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.fence_sc = 1;
    v[nv].name = "register ring of 3 units per warp, bf16 hi/lo (session 5's default: GLIM_CUDA_TMA=0 GLIM_CUDA_I8=0)", v[nv].o = base, v[nv].o.i8 = 0, v[nv++].o.tma = 0;
    v[nv].name = "register ring of 3 units per warp, integer path (GLIM_CUDA_TMA=0)", v[nv].o = base, v[nv++].o.tma = 0;
    v[nv].name = "register ring, integer path, sequentially consistent fences", v[nv].o = base, v[nv].o.tma = 0, v[nv++].o.fence_sc = 1;
    v[nv].name = "bf16 hi/lo on the shared-memory ring (GLIM_CUDA_I8=0)", v[nv].o = base, v[nv++].o.i8 = 0;
    v[nv].name = "shared-memory ring of 3 slots of 2 units", v[nv].o = base, v[nv++].o.tma_slots = 3;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): shared-memory ring of 2 slots of 3 units", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.tma_chunk = 3;
    v[nv].name = "shared-memory ring of 4 slots of 2 units", v[nv].o = base, v[nv++].o.tma_slots = 4;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): shared-memory ring requested whole at block start (GLIM_CUDA_LATE_RING=0, session 6's default)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.late_ring = 0;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): shared-memory ring requested once the prologue's global reads are done (GLIM_CUDA_LATE_RING=1)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.late_ring = 1;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): shared-memory ring requested after staging (GLIM_CUDA_LATE_RING=2)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.late_ring = 2;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): stream-K ranges over the grid, split row blocks merged through global memory at the end of a warp's range (GLIM_CUDA_BLOCK_ROWS=0, session 10's default)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.block_rows = 0;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): stream-K, a warp's split first row block merged as it ends, mid-range (GLIM_CUDA_BLOCK_ROWS=0 GLIM_CUDA_DEFER_MERGE=0, session 7's default)", v[nv].o = base, v[nv].o.span = 0, v[nv].o.block_rows = 0, v[nv++].o.defer_merge = 0;
    v[nv].name = "down's input staged as digits by gate/up's epilogue (GLIM_CUDA_STAGE_I8=1)", v[nv].o = base, v[nv++].o.stage_i8 = 1;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): down's staging in one block each, not shared by a cluster of 2 (GLIM_CUDA_CLUSTER=1, session 8's default)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.cluster = 1;
    v[nv].name = "no PDL", v[nv].o = base, v[nv++].o.pdl = 0;
    v[nv].name = "o_proj launched only as attention exits", v[nv].o = base, v[nv++].o.att_trig = 0;
    v[nv].name = "o_proj launched once every attention block has its q prepared, without its L2 prefetch of gate/up (GLIM_CUDA_ATT_TRIG=2 GLIM_CUDA_L2PF_GU_O=0, sessions 23-37's default)", v[nv].o = base, v[nv].o.att_trig = 2, v[nv++].o.l2pf_gu_o = 0;
    v[nv].name = "o_proj without its L2 prefetch of gate/up during attention (GLIM_CUDA_L2PF_GU_O=0)", v[nv].o = base, v[nv++].o.l2pf_gu_o = 0;
    v[nv].name = "gate/up without its own L2 prefetch before its wait (GLIM_CUDA_L2PF_GU_SELF=0, session 38's default)", v[nv].o = base, v[nv++].o.l2pf_gu_self = 0;
    v[nv].name = "the early L2 prefetches 4000 SM cycles after their blocks' start, attention's loads first (GLIM_CUDA_L2PF_DELAY=4000)", v[nv].o = base, v[nv++].o.l2pf_delay = 4000;
    v[nv].name = "down without its own L2 prefetch before its wait (GLIM_CUDA_L2PF_DOWN_SELF=0)", v[nv].o = base, v[nv++].o.l2pf_down_self = 0;
    v[nv].name = "qkvg's blocks prefetch every 16th of its row blocks before their wait, during down's loop (GLIM_CUDA_L2PF_QKVG_SELF=16)", v[nv].o = base, v[nv++].o.l2pf_qkvg_self = 16;
    v[nv].name = "gate/up's ring 3 slots a warp, not 2 (GLIM_CUDA_TMA_SLOTS_GU=3)", v[nv].o = base, v[nv++].o.tma_slots_gu = 3;
    v[nv].name = "qkvg prefetches every 8th gate/up row block into L2 at its end (GLIM_CUDA_L2PF_GU=8: attention's wait then waits for it)", v[nv].o = base, v[nv++].o.l2pf_gu = 8;
    v[nv].name = "the span kernel's row after the staging area, one row block a chunk (GLIM_CUDA_SPAN_ROW0=0 GLIM_CUDA_SPAN_TWO=0: the default until session 45)", v[nv].o = base, v[nv].o.span_row0 = 0, v[nv++].o.span_two = 0;
    v[nv].name = "each pair of spans' digits made during the previous pair's last chunk (GLIM_CUDA_SPAN_AHEAD=15)", v[nv].o = base, v[nv++].o.span_ahead = 15;
    v[nv].name = "attention's tiles by fp32 dot products, not the tensor cores (GLIM_CUDA_ATT_MMA=0, session 9's default)", v[nv].o = base, v[nv++].o.att_mma = 0;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): down on stream-K, the others with whole row blocks (GLIM_CUDA_BLOCK_ROWS=23)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.block_rows = 23;
    v[nv].name = "the leftover row blocks spread evenly over the blocks (GLIM_CUDA_FRONT_ROWS=0, session 11's default)", v[nv].o = base, v[nv++].o.front_rows = 0;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): down's row blocks owned by each block, not by its cluster of 2 (GLIM_CUDA_CLUSTER_ROWS=0, session 11's default)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.cluster_rows = 0;
    v[nv].name = "o_proj's ring 4 slots of 2 units (GLIM_CUDA_TMA_SLOTS_O=4)", v[nv].o = base, v[nv++].o.tma_slots_o = 4;
    v[nv].name = "o_proj's ring 8 slots of 2 units, its whole share (GLIM_CUDA_TMA_SLOTS_O=8)", v[nv].o = base, v[nv++].o.tma_slots_o = 8;
    v[nv].name = "qkvg's ring 4 slots of 2 units (GLIM_CUDA_TMA_SLOTS_QKVG=4)", v[nv].o = base, v[nv++].o.tma_slots_qkvg = 4;
    v[nv].name = "qkvg's and o_proj's rings 4 slots of 2 units", v[nv].o = base, v[nv].o.tma_slots_qkvg = 4, v[nv++].o.tma_slots_o = 4;
    v[nv].name = "a layer's o / gate-up / down / next qkvg in one launch, each warp's ring running on across them, as many slots of 2 units as fit (GLIM_CUDA_CHAIN=1)", v[nv].o = base, v[nv++].o.chain = 1;
    v[nv].name = "the same chain with 2 slots of 2 units (GLIM_CUDA_CHAIN=1 GLIM_CUDA_CHAIN_SLOTS=2)", v[nv].o = base, v[nv].o.chain = 1, v[nv++].o.chain_slots = 2;
    v[nv].name = "generic path (stage kernels + qmatvec.cu, no PDL)", v[nv].o = base, v[nv].o.fast = 0, v[nv++].o.pdl = 0;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): qkvg and o_proj in clusters of 2 as well, owning their row blocks per cluster, each block staging its own row (GLIM_CUDA_CLUSTER_PRODUCTS=11 GLIM_CUDA_CLUSTER_OWN_STAGE=3)", v[nv].o = base, v[nv].o.span = 0, v[nv].o.cluster_products = 11, v[nv++].o.cluster_own_stage = 3;
    v[nv].name = "k_dmv_tma (GLIM_CUDA_SPAN=0): the same with their staging shared by the cluster (GLIM_CUDA_CLUSTER_PRODUCTS=11)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.cluster_products = 11;
    v[nv].name = "every boundary of a layer (qkvg -> attention -> o_proj -> gate/up -> down -> next qkvg) released by counters in global memory, not the PDL wait (GLIM_CUDA_FLAG_WAIT=1)", v[nv].o = base, v[nv++].o.flag_wait = 1;
    v[nv].name = "the consumer norm's scale on the staged row, not on the row sums after the loop (GLIM_CUDA_LATE_NORM=0, session 17's default)", v[nv].o = base, v[nv++].o.late_norm = 0;
    v[nv].name = "k_dmv_tma's loop loads each unit's registers while the one before it computes, in the lean kernel (GLIM_CUDA_SPAN=0 GLIM_CUDA_UNIT_AHEAD=1)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.unit_ahead = 1;
    v[nv].name = "k_dmv_tma's general kernel, the stream-K row ends and ring diagnostics compiled in (GLIM_CUDA_SPAN=0 GLIM_CUDA_UNIT_AHEAD=0)", v[nv].o = base, v[nv].o.span = 0, v[nv++].o.unit_ahead = 0;
    v[nv].name = "decode attention rehearses its q preparation and first tile before the PDL wait, writing only shared memory (GLIM_CUDA_ATT_WARM=1)", v[nv].o = base, v[nv++].o.att_warm = 1;
    v[nv].name = "decode attention on its kernel instance with the rehearsal and the diagnostic second pass compiled in, off (GLIM_CUDA_ATT_LEAN=0: the default before session 24)", v[nv].o = base, v[nv++].o.att_lean = 0;
    v[nv].name = "decode attention on the instance compiled for the 30B's decode, off (GLIM_CUDA_ATT_SPEC=0: the default before session 33)", v[nv].o = base, v[nv++].o.att_spec = 0;
    v[nv].name = "decode attention's few-key splits on the fp32 tiles (GLIM_CUDA_ATT_SPEC=1: the default in session 33 before the tensor cores took them)", v[nv].o = base, v[nv++].o.att_spec = 1;
    v[nv].name = "decode attention's splits merged after a fence and a counter, not from partials that flag themselves (GLIM_CUDA_ATT_SPEC=2: the default before session 51)", v[nv].o = base, v[nv++].o.att_spec = 2;
    v[nv].name = "decode attention's heads 4 a block at every context, not 8 past 1024 keys (GLIM_CUDA_ATT_GROUP_HALF=0: the default before session 36)", v[nv].o = base, v[nv++].o.att_group_half = 0;
    v[nv].name = "the decode matvecs on k_dmv_tma, not span-major (GLIM_CUDA_SPAN=0: the default before session 22)", v[nv].o = base, v[nv++].o.span = 0;
    v[nv].name = "span-major with the row blocks' sums in registers, the loop over them unrolled (GLIM_CUDA_SPAN_ACC=0)", v[nv].o = base, v[nv++].o.span_acc = 0;
    v[nv].name = "span-major with each block's 16 warps as 4 span groups x 4 row groups: even work where the spans do not divide among 16 warps, each span staged 4 times (GLIM_CUDA_SPAN_ROWS=4)", v[nv].o = base, v[nv++].o.span_rows = 4;
    v[nv].name = "span-major on a block per SM (or per row block), the shares of row blocks uneven (GLIM_CUDA_SPAN_EVEN=0: the default before session 24)", v[nv].o = base, v[nv++].o.span_even = 0;
    v[nv].name = "span-major with qkvg and down on two row blocks per ring slot, their whole ring requested before the PDL wait (GLIM_CUDA_SPAN_TWO=9 GLIM_CUDA_SPAN_LATE=6: the default from session 28 to 33; two kernel instances a layer)", v[nv].o = base, v[nv].o.span_row0 = 0, v[nv].o.span_two = 9, v[nv++].o.span_late = 6;
    v[nv].name = "span-major with the whole ring requested before the PDL wait for every product (GLIM_CUDA_SPAN_LATE=0: the default before session 28)", v[nv].o = base, v[nv++].o.span_late = 0;
    v[nv].name = "span-major on the general instance, its diagnostics and timeline compiled in (GLIM_CUDA_SPAN_SPEC=0: the default before session 34)", v[nv].o = base, v[nv++].o.span_spec = 0;
    v[nv].name = "span-major on the instance without its diagnostics and timeline, the norm's scale and softcap paths kept (GLIM_CUDA_SPAN_SPEC=2)", v[nv].o = base, v[nv++].o.span_spec = 2;
    v[nv].name = "span-major on the instance with the front-owner shares and the inputs' scalar load path kept (GLIM_CUDA_SPAN_SPEC=3: the default in session 34)", v[nv].o = base, v[nv++].o.span_spec = 3;
    v[nv].name = "span-major with two row blocks per ring slot for qkvg, down and o_proj (GLIM_CUDA_SPAN_TWO=11 GLIM_CUDA_SPAN_LATE=4: o_proj's deeper ring, requested while attention runs, slows attention)", v[nv].o = base, v[nv].o.span_row0 = 0, v[nv].o.span_two = 11, v[nv++].o.span_late = 4;
    v[nv].name = "span-major down on at most 84 blocks (5 row blocks each), 48 SMs free for the next qkvg (GLIM_CUDA_SPAN_BLOCKS_DOWN=84)", v[nv].o = base, v[nv++].o.span_blocks[3] = 84;
    /* not a configuration: the token with (nearly) no weight traffic, so what the decode
     * matvecs' instructions and the fixed costs alone allow (session 14) */
    v[nv].name = "TIMING DIAGNOSTIC, wrong logits: every decode matvec reads its weights from the first 4 MB of its matrix, which stay in L2 (GLIM_CUDA_DIAG_WINDOW=4): the token as if weight bytes were free", v[nv].o = base, v[nv++].o.diag_window_mb = 4;
    v[nv].name = "TIMING DIAGNOSTIC, wrong logits: the decode matvecs' rings copy no weight bytes past each slot's first fill (GLIM_CUDA_DIAG_RING=4): the loops' own compute ceiling", v[nv].o = base, v[nv++].o.diag_ring = 4;
    v[nv].name = "TIMING DIAGNOSTIC, wrong logits: the decode matvecs run on k_dmv_tma and skip its prologues (no rows read, normed or staged; GLIM_CUDA_DIAG_RING=5): the token as if the prologues cost nothing", v[nv].o = base, v[nv++].o.diag_ring = 5;
    v[nv].name = "TIMING DIAGNOSTIC, wrong logits: decode attention skips RoPE on every layer (GLIM_CUDA_DIAG_NOPE=1): what RoPE's factors and rotation cost the sliding layers", v[nv].o = base, v[nv++].o.diag_nope = 1;
    v[nv].name = "TIMING DIAGNOSTIC, same logits: decode attention runs its tiles twice, the second pass with its code, constants and data already in the SM's caches (GLIM_CUDA_DIAG_ATT_TWICE=1): the token's time less this row's is what that warm pass costs", v[nv].o = base, v[nv++].o.diag_att_twice = 1;
    for (int i = 0; i < nv; i++) {
        gcu_session *s = NULL;
        gcu_model_set_options(m, &v[i].o);
        if (gcu_session_new(m, 4096, 64, 0, &s, &err) != GLIM_OK) {
            fprintf(stderr, "%s: --variants: %s\n", CMD, err.message);
            break;
        }
        decode_res r;
        if (time_decode(s, m, vocab, 0, o->n_decode, bw, &r) == 0)
            emit(out, "| %s%s | %.1f | %.3f | %.1f%% |\n", v[i].name,
                 r.nonfinite ? " (its last logits not all finite)" : "", r.tok_s, r.gpu_ms, 100.0 * r.floor_frac);
        gcu_session_free(s);
    }
    gcu_model_set_options(m, &base);
}

/* The longest of the decode contexts. */
static int bench_longest_ctx(const bench_opts *o) {
    int most = 0;
    for (int k = 0; k < o->n_ctxs; k++)
        if (o->ctxs[k] > most) most = o->ctxs[k];
    return most;
}

/* The session's positions: the longest context, its decoded tokens and a spare. */
static int bench_positions(const bench_opts *o) { return bench_longest_ctx(o) + o->n_decode + BENCH_CTX_SPARE; }

static int run_bench(const bench_opts *o) {
    glim_error err = {0};
    char dev[160];
    gcu_device_name(dev, sizeof dev);
    FILE *out = o->out ? fopen(o->out, "a") : NULL;
    if (o->out && !out) fprintf(stderr, "%s: cannot open %s for appending\n", CMD, o->out);
    emit(out, "device: %s\n", dev);
    double bw = 0;
    gcu_model *m = NULL;
    glim_model *gm = NULL;
    gcu_session *s = NULL;
    int vocab, rc = 1;
    if (gcu_copy_bandwidth(1ull << 30, 21, &bw, &err) != GLIM_OK) {
        fprintf(stderr, "%s: %s\n", CMD, err.message);
        goto done;
    }
    emit(out, "copy bandwidth (device to device, read + write): %.1f GB/s\n", bw / 1e9);
    if (bench_model(o, out, &m, &gm, &vocab) != 0) goto done;
    uint64_t wb = gcu_model_weight_bytes(m);
    emit(out, "weight bytes read per token: %.3f GB; device bytes: %.3f GB\n", wb / 1e9,
         gcu_model_device_bytes(m) / 1e9);

    if (gcu_session_new(m, bench_positions(o), 64, 0, &s, &err) != GLIM_OK) {
        fprintf(stderr, "%s: %s\n", CMD, err.message);
        goto done;
    }
    emit(out, "\n| what | tok/s | ms/token (wall) | GPU ms/token | floor ms/token | fraction of floor |\n"
              "| --- | --- | --- | --- | --- | --- |\n");
    if (o->profile) bench_profile(s, vocab, bw, out);
    /* a measurement that could not be taken (said on stderr) makes the exit status 1, so that
     * scripts comparing runs do not take a missing row for a result */
    int failed = 0;
    char warn[512] = ""; /* contexts whose last logits were not all finite, said after the table */
    for (int k = 0; k < o->n_ctxs; k++) {
        int pos = o->ctxs[k];
        if (pos && gcu_session_fake_context(s, pos, 99 + k, &err) != GLIM_OK) {
            fprintf(stderr, "%s: %s\n", CMD, err.message);
            failed = 1;
            break;
        }
        decode_res r;
        if (time_decode(s, m, vocab, pos, o->n_decode, bw, &r) != 0) {
            failed = 1;
            break;
        }
        double floor_ms = (double)(wb + gcu_kv_bytes_read(m, pos + o->n_decode / 2)) / bw * 1e3;
        emit(out, "| decode @ ctx %d | %.1f | %.3f | %.3f | %.3f | %.1f%% |\n", pos, r.tok_s,
             1e3 / r.tok_s, r.gpu_ms, floor_ms, 100.0 * r.floor_frac);
        if (r.nonfinite && strlen(warn) < sizeof warn - 64)
            snprintf(warn + strlen(warn), sizeof warn - strlen(warn), "%s%d at ctx %d", *warn ? ", " : "",
                     r.nonfinite, pos);
        if (o->timeline) timeline_table(out, s, pos);
    }
    if (*warn)
        emit(out, "\nwarning: non-finite logits in the last decoded token (%s of %d): those timings ran "
                  "through NaN or inf, which a real checkpoint would not\n", warn, vocab);
    if (o->prompt > 0 && bench_prefill(s, vocab, o, out) != 0) failed = 1;
    if (o->prompt > 0 && o->profile) bench_profile_prefill(s, o->prompt, bw, out);
    gcu_session_free(s);
    s = NULL;
    if (o->hooks) bench_hooks(m, vocab, o, bw, out);
    if (o->variants) bench_variants(m, vocab, o, bw, out);
    rc = failed;
done:
    if (s) gcu_session_free(s);
    if (gm) glim_model_close(gm);
    else if (m) gcu_model_free(m);
    if (out) fclose(out);
    return rc;
}

/* --ctx LIST: comma-separated contexts, each a whole number in [0, BENCH_CTX_LIMIT]; an error
 * sets a->err (the limit with -n is checked once every flag is in: bench_positions). */
static void parse_ctxs(glim_args *a, bench_opts *o) {
    const char *s = a->val;
    o->n_ctxs = 0;
    for (int k = 1;; k++) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (!(isdigit((unsigned char)*s) || *s == '-') || end == s || (*end && *end != ',') || errno == ERANGE) {
            args_error(a, "%s: context %d in '%s' is not a whole number", a->flag, k, a->val);
            return;
        }
        if (v < 0 || v > BENCH_CTX_LIMIT) {
            args_error(a, "%s: context %d is %ld, outside [0, %d]", a->flag, k, v, BENCH_CTX_LIMIT);
            return;
        }
        if (o->n_ctxs == BENCH_MAX_CTX) {
            args_error(a, "%s: more than %d contexts in '%s'", a->flag, BENCH_MAX_CTX, a->val);
            return;
        }
        o->ctxs[o->n_ctxs++] = (int)v;
        if (!*end) return;
        s = end + 1;
    }
}

int cmd_bench(int argc, char **argv) {
    glim_args a;
    args_init(&a, CMD, argc, argv);
    bench_opts o = {NULL, 0, 52, 64, 2048, 0, 4, 64, 0, 0, 0, NULL, {0, 4096, 32768}, 3};
    while (args_next(&a)) {
        if (args_help(&a)) {
            bench_help();
            return 0;
        } else if (args_switch(&a, "--synthetic")) {
            o.synthetic = 1;
        } else if (args_flag(&a, "--model", "-m")) {
            o.dir = a.val;
        } else if (args_flag(&a, "--layers", NULL)) {
            args_int(&a, &o.layers, 1, 52);
        } else if (args_flag(&a, "--bits", NULL)) {
            args_int(&a, &o.bits, 4, 8);
        } else if (args_flag(&a, "--group", NULL)) {
            args_int(&a, &o.group, 32, 128);
        } else if (args_flag(&a, "-n", NULL)) {
            args_int(&a, &o.n_decode, 1, 4096);
        } else if (args_flag(&a, "--ctx", NULL)) {
            parse_ctxs(&a, &o);
        } else if (args_flag(&a, "--prompt", NULL)) {
            args_int(&a, &o.prompt, 0, 32768);
        } else if (args_switch(&a, "--variants")) {
            o.variants = 1;
        } else if (args_switch(&a, "--profile")) {
            o.profile = 1;
        } else if (args_switch(&a, "--timeline")) {
            o.timeline = 1;
        } else if (args_switch(&a, "--hooks")) {
            o.hooks = 1;
        } else if (args_flag(&a, "--out", NULL)) {
            o.out = a.val;
        } else if (!a.err) {
            args_unknown(&a);
        }
        if (a.err) return 2;
    }
    if (!o.synthetic == !o.dir) {
        args_error(&a, "give exactly one of --synthetic and -m DIR");
        return 2;
    }
    if (o.bits != 4 && o.bits != 8) {
        args_error(&a, "--bits must be 4 or 8");
        return 2;
    }
    if (bench_positions(&o) > BENCH_CTX_LIMIT) {
        args_error(&a, "--ctx %d with -n %d needs %d positions; the model has %d", bench_longest_ctx(&o),
                   o.n_decode, bench_positions(&o), BENCH_CTX_LIMIT);
        return 2;
    }
    if (gcu_device_count() <= 0) {
        fprintf(stderr, "%s: no CUDA device\n", CMD);
        return 1;
    }
    return run_bench(&o);
}
#else
int cmd_bench(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "%s: this build has no CUDA backend (nvcc was not found)\n", CMD);
    return 1;
}
#endif
