/* cmd_info.c: `glimmer info`: what a checkpoint is (layout, quantization, shapes, layer pattern,
 * tensors, bytes, stop ids) and how much memory a session of a given context needs, as text or
 * as JSON (--json). Everything comes from glim_model_get_info and glim_session_bytes. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "glimmer.h"

#define CMD "glimmer info"

static void info_help(void) {
    printf("usage: glimmer info -m DIR [-c CTX] [-b BATCH] [--json] [--backend B] [--threads N]\n\n"
           "Opens a checkpoint and prints what it is: layout (huggingface or mlx), quantization\n"
           "(bits, group size, dtype of the weights or of the MLX scales/biases), shapes, how many\n"
           "layers use full (NoPE) and sliding-window attention, tensor counts (all, and those the\n"
           "text model uses; the rest, e.g. vision, is never loaded), bytes on disk and of the text\n"
           "weights, the BOS and stop ids, the backend, and the memory a session of CTX tokens\n"
           "needs (KV cache plus scratch, on the backend).\n\n");
    args_model_help();
    printf("session:\n"
           "  -c, --ctx-size CTX     context for the memory estimate (default: min(4096, the\n"
           "                         model's max position))\n"
           "  -b, --batch-size B     tokens evaluated together per chunk (default 64)\n"
           "output:\n"
           "  --json                 one JSON object instead of text\n\n"
           "exit status: 0 ok, 1 the model could not be opened, 2 usage error\n");
}

static void human(char *buf, size_t n, uint64_t bytes) {
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, u++;
    if (u == 0) snprintf(buf, n, "%llu B", (unsigned long long)bytes);
    else snprintf(buf, n, "%.2f %s", v, unit[u]);
}

static void quant_text(char *buf, size_t n, const glim_model_info *in) {
    if (in->quant_bits)
        snprintf(buf, n, "affine %d-bit, group %d, scales/biases %s", in->quant_bits,
                 in->quant_group_size, in->dtype);
    else
        snprintf(buf, n, "none (dense %s)", in->dtype);
}

static void print_text(const char *dir, const glim_model_info *in, int ctx, int batch,
                       uint64_t sess) {
    char a[64], b[64], q[160];
    quant_text(q, sizeof q, in);
    printf("checkpoint         %s\n", dir);
    printf("layout             %s\n", in->layout);
    printf("quantization       %s\n", q);
    printf("vocab              %d\n", in->vocab_size);
    printf("hidden             %d\n", in->hidden_size);
    printf("intermediate       %d\n", in->intermediate_size);
    printf("layers             %d: %d full attention (NoPE), %d sliding (window %d)\n",
           in->n_layers, in->n_full_layers, in->n_layers - in->n_full_layers, in->sliding_window);
    printf("attention heads    %d query, %d key/value (GQA %d:1), head dim %d\n", in->n_heads,
           in->n_kv_heads, in->n_kv_heads ? in->n_heads / in->n_kv_heads : 0, in->head_dim);
    printf("max position       %d\n", in->max_position);
    printf("bos id             %d\n", in->bos_id);
    printf("stop ids          ");
    for (int i = 0; i < in->n_stop_ids; i++) printf(" %d", in->stop_ids[i]);
    printf("%s\n", in->n_stop_ids ? "" : " (none)");
    printf("tensors            %d in the checkpoint, %d used by the text model\n", in->n_tensors,
           in->n_text_tensors);
    human(a, sizeof a, in->file_bytes);
    human(b, sizeof b, in->text_weight_bytes);
    printf("file bytes         %llu (%s)\n", (unsigned long long)in->file_bytes, a);
    printf("text weight bytes  %llu (%s)\n", (unsigned long long)in->text_weight_bytes, b);
    human(a, sizeof a, sess);
    printf("session memory     %llu (%s) for a context of %d tokens, batch %d\n",
           (unsigned long long)sess, a, ctx, batch);
    printf("backend            %s\n", in->backend);
}

static int print_json(const char *dir, const glim_model_info *in, int ctx, int batch,
                      uint64_t sess) {
    json_t *stops = json_array();
    for (int i = 0; i < in->n_stop_ids; i++) json_array_append_new(stops, json_integer(in->stop_ids[i]));
    json_t *o = json_object();
    json_object_set_new(o, "checkpoint", json_string(dir));
    json_object_set_new(o, "layout", json_string(in->layout));
    json_t *q = json_object();
    json_object_set_new(q, "bits", json_integer(in->quant_bits));
    json_object_set_new(q, "group_size", in->quant_bits ? json_integer(in->quant_group_size)
                                                         : json_null());
    json_object_set_new(q, "dtype", json_string(in->dtype ? in->dtype : ""));
    json_object_set_new(o, "quantization", q);
    json_object_set_new(o, "vocab_size", json_integer(in->vocab_size));
    json_object_set_new(o, "hidden_size", json_integer(in->hidden_size));
    json_object_set_new(o, "intermediate_size", json_integer(in->intermediate_size));
    json_object_set_new(o, "n_layers", json_integer(in->n_layers));
    json_object_set_new(o, "n_full_layers", json_integer(in->n_full_layers));
    json_object_set_new(o, "n_sliding_layers", json_integer(in->n_layers - in->n_full_layers));
    json_object_set_new(o, "sliding_window", json_integer(in->sliding_window));
    json_object_set_new(o, "n_heads", json_integer(in->n_heads));
    json_object_set_new(o, "n_kv_heads", json_integer(in->n_kv_heads));
    json_object_set_new(o, "head_dim", json_integer(in->head_dim));
    json_object_set_new(o, "max_position", json_integer(in->max_position));
    json_object_set_new(o, "bos_id", json_integer(in->bos_id));
    json_object_set_new(o, "stop_ids", stops);
    json_object_set_new(o, "n_tensors", json_integer(in->n_tensors));
    json_object_set_new(o, "n_text_tensors", json_integer(in->n_text_tensors));
    json_object_set_new(o, "file_bytes", json_integer((json_int_t)in->file_bytes));
    json_object_set_new(o, "text_weight_bytes", json_integer((json_int_t)in->text_weight_bytes));
    json_t *s = json_object();
    json_object_set_new(s, "n_ctx", json_integer(ctx));
    json_object_set_new(s, "n_batch", json_integer(batch));
    json_object_set_new(s, "bytes", json_integer((json_int_t)sess));
    json_object_set_new(o, "session", s);
    json_object_set_new(o, "backend", json_string(in->backend ? in->backend : ""));
    int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    putchar('\n');
    if (rc) {
        fprintf(stderr, CMD ": cannot write JSON to stdout\n");
        return 1;
    }
    return 0;
}

int cmd_info(int argc, char **argv) {
    glim_args a;
    glim_cli_model mc = {0};
    int ctx = 0, batch = 0, json = 0;
    args_init(&a, CMD, argc, argv);
    while (args_next(&a)) {
        if (args_help(&a)) {
            info_help();
            return 0;
        } else if (args_model(&a, &mc)) {
        } else if (args_flag(&a, "-c", "--ctx-size")) {
            args_int(&a, &ctx, 1, 2147483647);
        } else if (args_flag(&a, "-b", "--batch-size")) {
            args_int(&a, &batch, 1, 2147483647);
        } else if (args_switch(&a, "--json")) {
            json = 1;
        } else {
            args_unknown(&a);
        }
    }
    if (!a.err && !mc.dir) args_error(&a, "missing -m DIR (the checkpoint directory)");
    if (a.err) return 2;

    glim_model *m = args_open_model(CMD, &mc);
    if (!m) return 1;
    const glim_model_info *in = glim_model_get_info(m);
    /* the session's own defaults, spelled out so the estimate says what it is for */
    if (!ctx) ctx = in->max_position < 4096 ? in->max_position : 4096;
    if (!batch) batch = 64;
    if (batch > ctx) batch = ctx;
    int rc = 0;
    if (ctx > in->max_position) {
        fprintf(stderr, CMD ": -c %d is larger than the model's max position %d\n", ctx,
                in->max_position);
        rc = 2;
    } else {
        uint64_t sess = glim_session_bytes(m, ctx, batch);
        if (json) rc = print_json(mc.dir, in, ctx, batch, sess);
        else print_text(mc.dir, in, ctx, batch, sess);
    }
    if (fflush(stdout) != 0) rc = 1;
    glim_model_close(m);
    return rc;
}
