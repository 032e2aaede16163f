/* sampler_bench.c: host time of glim_sampler_sample per token at Muse Glimmer's vocabulary
 * (202,048 ids), for the settings people use. Generation on the GPU samples on the host after
 * every token, so this adds to each token's time (about 5.7 ms of GPU time on an H200).
 *   make build/bench/sampler_bench && build/bench/sampler_bench [--peaked]
 * Logits ~ N(0, 3) (a wide nucleus, the slow case for top-p); --peaked puts 50 tokens far ahead,
 * as a confident model does. Prints ms per token for each setting. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "glimmer.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const int V = 202048, N = 50;
    const int peaked = argc > 1 && !strcmp(argv[1], "--peaked");
    float *l = malloc(sizeof(float) * (size_t)V);
    if (!l) return 1;
    srand(1);
    for (int i = 0; i < V; i++) { /* Box-Muller */
        float u = (rand() + 1.0f) / (RAND_MAX + 2.0f), w = (rand() + 1.0f) / (RAND_MAX + 2.0f);
        l[i] = 3.0f * sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * w);
    }
    if (peaked)
        for (int i = 0; i < 50; i++) l[(i * 7919) % V] = 14.0f + i * 0.05f;
    struct { const char *name; float temp; int top_k; float top_p, min_p, rep; } cases[] = {
        {"greedy", 0.0f, 0, 1.0f, 0.0f, 1.0f},
        {"defaults (k40 p0.95 m0.05)", 0.8f, 40, 0.95f, 0.05f, 1.0f},
        {"top-p 0.95, no top-k", 1.0f, 0, 0.95f, 0.0f, 1.0f},
        {"min-p 0.05, no top-k", 0.8f, 0, 1.0f, 0.05f, 1.0f},
        {"defaults + penalties", 0.8f, 40, 0.95f, 0.05f, 1.1f},
    };
    printf("logits %s, %d ids, %d tokens each\n", peaked ? "N(0,3) with 50 far ahead" : "N(0,3)", V, N);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        glim_sampler_params p = glim_sampler_defaults();
        p.temperature = cases[c].temp, p.top_k = cases[c].top_k, p.top_p = cases[c].top_p, p.min_p = cases[c].min_p;
        p.repeat_penalty = cases[c].rep;
        p.presence_penalty = cases[c].rep != 1.0f ? 0.5f : 0.0f;
        glim_sampler *s = NULL;
        glim_error err;
        if (glim_sampler_create(&p, V, &s, &err) != GLIM_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        for (int i = 0; i < 100; i++) glim_sampler_accept(s, i * 7);
        long sink = 0;
        double t0 = now();
        for (int i = 0; i < N; i++) sink += glim_sampler_sample(s, l);
        printf("  %-28s %.3f ms per token (checksum %ld)\n", cases[c].name, (now() - t0) / N * 1e3, sink % 1000);
        glim_sampler_free(s);
    }
    free(l);
    return 0;
}
