/* cpu_bench.c: CPU decode and prefill speed of a checkpoint, beside the machine's memory
 * bandwidth measured in the same run. Decode at batch 1 reads every weight once per token, so
 * the floor is text_weight_bytes / bandwidth; the report gives tokens/s and the fraction of that
 * floor reached. Usage: cpu_bench DIR [decode_tokens] [threads] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glimmer.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read bandwidth: sum a buffer far larger than the caches, with all threads the OS gives one
 * process through memcpy into a second buffer (bytes read + bytes written, as the copy test on
 * the GPU counts them). Best of 5. */
static double copy_bandwidth(void) {
    size_t n = (size_t)1 << 29; /* 512 MiB */
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) return 0;
    memset(a, 1, n);
    memset(b, 2, n);
    double best = 0;
    for (int i = 0; i < 5; i++) {
        double t = now();
        memcpy(b, a, n);
        t = now() - t;
        if (2.0 * n / t > best) best = 2.0 * n / t;
    }
    volatile char sink = b[n / 2];
    (void)sink;
    free(a);
    free(b);
    return best;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: cpu_bench DIR [decode_tokens=16] [threads=0]\n");
        return 2;
    }
    int n_dec = argc > 2 ? atoi(argv[2]) : 16, threads = argc > 3 ? atoi(argv[3]) : 0;
    glim_error err = {0};
    glim_model *m = NULL;
    glim_session *s = NULL;
    glim_model_params mp = {"cpu", threads};
    if (glim_model_open(argv[1], &mp, &m, &err)) {
        fprintf(stderr, "cpu_bench: %s\n", err.message);
        return 1;
    }
    const glim_model_info *in = glim_model_get_info(m);
    glim_session_params sp = {1024, 64};
    if (glim_session_create(m, &sp, &s, &err)) {
        fprintf(stderr, "cpu_bench: %s\n", err.message);
        return 1;
    }
    float *logits = malloc(sizeof(float) * in->vocab_size);
    int32_t prompt[64];
    for (int i = 0; i < 64; i++) prompt[i] = (i * 7919 + 13) % in->vocab_size;
    double bw = copy_bandwidth();
    /* touch the weights once so page faults of the mapping are not timed */
    glim_eval(s, prompt, 1, 0, GLIM_LOGITS_LAST, logits, in->vocab_size, &err);
    glim_session_reset(s);
    double t0 = now();
    if (glim_eval(s, prompt, 64, 0, GLIM_LOGITS_LAST, logits, in->vocab_size, &err)) {
        fprintf(stderr, "cpu_bench: %s\n", err.message);
        return 1;
    }
    double t1 = now();
    int32_t tok = prompt[63];
    for (int i = 0; i < n_dec; i++) {
        if (glim_eval(s, &tok, 1, 64 + i, GLIM_LOGITS_LAST, logits, in->vocab_size, &err)) {
            fprintf(stderr, "cpu_bench: %s\n", err.message);
            return 1;
        }
        tok = (tok + 1) % in->vocab_size;
    }
    double t2 = now();
    double dec = n_dec / (t2 - t1), floor_tps = bw / (double)in->text_weight_bytes;
    printf("model %s: %d layers, hidden %d, vocab %d, %s%s, %.3f GB of text weights\n", argv[1],
           in->n_layers, in->hidden_size, in->vocab_size, in->layout,
           in->quant_bits ? " (quantized)" : " (bf16)", in->text_weight_bytes / 1e9);
    printf("memory copy bandwidth (read+write): %.2f GB/s\n", bw / 1e9);
    printf("prefill: 64 tokens in %.3f s = %.1f tok/s\n", t1 - t0, 64 / (t1 - t0));
    printf("decode:  %d tokens in %.3f s = %.2f tok/s; bandwidth floor %.2f tok/s; %.1f%% of it\n",
           n_dec, t2 - t1, dec, floor_tps, 100.0 * dec / floor_tps);
    free(logits);
    glim_session_free(s);
    glim_model_close(m);
    return 0;
}
