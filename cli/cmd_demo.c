/* cmd_demo.c: `glimmer demo`: makes a small random model with Muse Glimmer's structure, opens
 * it like any checkpoint, and generates from it (the README's main command). `--write DIR`
 * only writes the checkpoint, for tests and benchmarks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "glimmer.h"
#include "synth.h"

static void demo_help(void) {
    printf("usage: glimmer demo [options]\n\n"
           "Makes a random model with Muse Glimmer's structure (sandwich norms, q/k norm, sliding\n"
           "and full layers counted from the end, sigmoid attention gate, softcapped head), opens\n"
           "it through the normal loader and generates greedily from a short prompt.\n\n"
           "options:\n"
           "  --write DIR     write the checkpoint to DIR and stop (no generation)\n"
           "  --size S        tiny (default: 6 layers, hidden 96, vocab 512) or 1b (~1B params)\n"
           "  --bits B        MLX layout quantized to B bits (2..8); default: Hugging Face bf16\n"
           "  --group G       MLX group size (32, 64, 128; default 32 tiny, 64 1b)\n"
           "  --seed S        weight seed\n"
           "  -n N            tokens to generate (default 32)\n"
           "  --threads N     CPU threads (default: all cores)\n"
           "  --backend B     cpu, cuda or auto (default auto)\n");
}

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int generate(const char *dir, int n_gen, int threads, const char *backend) {
    glim_error err = {0};
    glim_model *m = NULL;
    glim_session *s = NULL;
    glim_model_params mp = {backend, threads};
    if (glim_model_open(dir, &mp, &m, &err) != GLIM_OK) {
        fprintf(stderr, "glimmer demo: %s\n", err.message);
        return 1;
    }
    const glim_model_info *in = glim_model_get_info(m);
    printf("model: %d layers (%d full, NoPE), hidden %d, %d heads / %d kv heads x %d, window %d, "
           "vocab %d, %s layout%s, backend %s\n", in->n_layers, in->n_full_layers, in->hidden_size,
           in->n_heads, in->n_kv_heads, in->head_dim, in->sliding_window, in->vocab_size,
           in->layout, in->quant_bits ? " (quantized)" : "", in->backend);
    glim_session_params sp = {256, 32, 0};
    float *logits = malloc(sizeof(float) * (size_t)in->vocab_size);
    int rc = 1;
    if (!logits || glim_session_create(m, &sp, &s, &err) != GLIM_OK) {
        fprintf(stderr, "glimmer demo: %s\n", logits ? err.message : "out of memory");
        goto out;
    }
    int32_t prompt[12] = {1};
    for (int i = 1; i < 12; i++) prompt[i] = (int32_t)((i * 37 + 11) % in->vocab_size);
    printf("prompt:");
    for (int i = 0; i < 12; i++) printf(" %d", prompt[i]);
    printf("\ngenerated:");
    fflush(stdout);
    double t0 = seconds();
    if (glim_eval(s, prompt, 12, 0, GLIM_LOGITS_LAST, logits, (size_t)in->vocab_size, &err))
        goto fail;
    double t1 = seconds();
    int produced = 0;
    for (; produced < n_gen; produced++) {
        int32_t best = 0; /* greedy: the first maximal index */
        for (int v = 1; v < in->vocab_size; v++)
            if (logits[v] > logits[best]) best = v;
        printf(" %d", best);
        fflush(stdout);
        if (produced + 1 == n_gen) { produced++; break; }
        if (glim_eval(s, &best, 1, glim_session_position(s), GLIM_LOGITS_LAST, logits,
                      (size_t)in->vocab_size, &err))
            goto fail;
    }
    double t2 = seconds();
    printf("\nprompt: 12 tokens in %.3f s (%.1f tok/s); decode: %d tokens in %.3f s (%.1f tok/s)\n",
           t1 - t0, 12 / (t1 - t0), produced - 1, t2 - t1,
           produced > 1 ? (produced - 1) / (t2 - t1) : 0.0);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "\nglimmer demo: %s\n", err.message);
out:
    glim_session_free(s);
    glim_model_close(m);
    free(logits);
    return rc;
}

int cmd_demo(int argc, char **argv) {
    const char *write_dir = NULL, *backend = NULL;
    glim_synth_spec spec = glim_synth_tiny();
    int n_gen = 32, threads = 0, bits = 0, group = 0;
    long long seed = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            demo_help();
            return 0;
        } else if (v && !strcmp(a, "--write")) write_dir = argv[++i];
        else if (v && !strcmp(a, "--size")) {
            ++i;
            if (!strcmp(v, "1b")) spec = glim_synth_1b();
            else if (strcmp(v, "tiny")) {
                fprintf(stderr, "glimmer demo: --size must be tiny or 1b, not '%s'\n", v);
                return 2;
            }
        } else if (v && !strcmp(a, "--bits")) bits = atoi(argv[++i]);
        else if (v && !strcmp(a, "--group")) group = atoi(argv[++i]);
        else if (v && !strcmp(a, "--seed")) seed = atoll(argv[++i]);
        else if (v && !strcmp(a, "-n")) n_gen = atoi(argv[++i]);
        else if (v && !strcmp(a, "--threads")) threads = atoi(argv[++i]);
        else if (v && !strcmp(a, "--backend")) backend = argv[++i];
        else {
            fprintf(stderr, "glimmer demo: unknown or incomplete option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (bits && (bits < 2 || bits > 8)) {
        fprintf(stderr, "glimmer demo: --bits must be 2..8\n");
        return 2;
    }
    if (n_gen < 1) {
        fprintf(stderr, "glimmer demo: -n must be at least 1\n");
        return 2;
    }
    spec.bits = bits;
    if (group) spec.group_size = group;
    if (seed >= 0) spec.seed = (uint64_t)seed;

    char tmp[] = "/tmp/glimmer-demo-XXXXXX";
    const char *dir = write_dir;
    if (!dir) {
        if (!mkdtemp(tmp)) {
            perror("glimmer demo: mkdtemp");
            return 1;
        }
        dir = tmp;
    }
    glim_error err = {0};
    if (glim_synth_write(dir, &spec, &err) != GLIM_OK) {
        fprintf(stderr, "glimmer demo: %s\n", err.message);
        return 1;
    }
    if (write_dir) {
        printf("wrote a random Muse Glimmer checkpoint to %s\n", write_dir);
        return 0;
    }
    int rc = generate(dir, n_gen, threads, backend);
    char path[4096];
    const char *files[] = {"config.json", "generation_config.json", "model.safetensors"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return rc;
}
