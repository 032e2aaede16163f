/* args.c: option parsing shared by the glimmer subcommands (see args.h). Only the CLI prints;
 * everything here reports to stderr and leaves exiting to the command. */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void args_init(glim_args *a, const char *cmd, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->argc = argc;
    a->argv = argv;
    a->i = 0; /* argv[0] is the subcommand */
}

int args_next(glim_args *a) {
    if (a->err) return 0;
    a->flag = a->val = NULL;
    return ++a->i < a->argc;
}

int args_help(const glim_args *a) {
    const char *s = a->argv[a->i];
    return !strcmp(s, "-h") || !strcmp(s, "--help");
}

void args_error(glim_args *a, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", a->cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see %s --help)\n", a->cmd);
    a->err = 1;
}

int args_flag(glim_args *a, const char *name, const char *alias) {
    const char *s = a->argv[a->i];
    const char *names[2] = {name, alias};
    for (int k = 0; k < 2; k++) {
        const char *n = names[k];
        if (!n) continue;
        size_t len = strlen(n);
        if (!strcmp(s, n)) {
            a->flag = n;
            if (a->i + 1 >= a->argc) {
                args_error(a, "%s needs a value", n);
                return 1;
            }
            a->val = a->argv[++a->i];
            return 1;
        }
        if (n[0] == '-' && n[1] == '-' && !strncmp(s, n, len) && s[len] == '=') {
            a->flag = n;
            a->val = s + len + 1;
            return 1;
        }
    }
    return 0;
}

int args_switch(glim_args *a, const char *name) {
    if (strcmp(a->argv[a->i], name)) return 0;
    a->flag = name;
    return 1;
}

void args_unknown(glim_args *a) {
    const char *s = a->argv[a->i];
    if (s[0] == '-') args_error(a, "unknown option '%s'", s);
    else args_error(a, "unexpected argument '%s' (options take the form -x VALUE)", s);
}

/* ---- numbers --------------------------------------------------------------------------------- */

static int all_space(const char *s) {
    while (*s && isspace((unsigned char)*s)) s++;
    return *s == 0;
}

void args_int(glim_args *a, int *out, long long min, long long max) {
    if (a->err) return;
    char *end;
    errno = 0;
    long long v = strtoll(a->val, &end, 10);
    if (end == a->val || !all_space(end) || errno == ERANGE) {
        args_error(a, "%s expects an integer, got '%s'", a->flag, a->val);
        return;
    }
    if (v < min || v > max) {
        if (max >= 2147483647LL)
            args_error(a, "%s must be >= %lld, got %lld", a->flag, min, v);
        else
            args_error(a, "%s must be in [%lld, %lld], got %lld", a->flag, min, max, v);
        return;
    }
    *out = (int)v;
}

void args_u64(glim_args *a, uint64_t *out) {
    if (a->err) return;
    const char *s = a->val;
    while (isspace((unsigned char)*s)) s++;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '-' || end == s || !all_space(end) || errno == ERANGE) {
        args_error(a, "%s expects an integer in [0, 18446744073709551615], got '%s'", a->flag,
                    a->val);
        return;
    }
    *out = (uint64_t)v;
}

void args_float(glim_args *a, float *out, double min, int min_open, double max, int max_open) {
    if (a->err) return;
    char *end;
    errno = 0;
    double v = strtod(a->val, &end);
    if (end == a->val || !all_space(end)) {
        args_error(a, "%s expects a number, got '%s'", a->flag, a->val);
        return;
    }
    if (!isfinite(v) || !isfinite((float)v)) {
        args_error(a, "%s must be a finite number, got '%s'", a->flag, a->val);
        return;
    }
    if ((min_open ? v <= min : v < min) || (max_open ? v >= max : v > max)) {
        char lo[48] = "", hi[48] = "";
        if (isfinite(min)) snprintf(lo, sizeof lo, "%s %g", min_open ? ">" : ">=", min);
        if (isfinite(max)) snprintf(hi, sizeof hi, "%s %g", max_open ? "<" : "<=", max);
        args_error(a, "%s must be %s%s%s, got %s", a->flag, lo, *lo && *hi ? " and " : "", hi,
                   a->val);
        return;
    }
    *out = (float)v;
}

/* ---- token lists ----------------------------------------------------------------------------- */

void args_tokens(glim_args *a, int32_t **ids, int *n) {
    if (a->err) return;
    const char *s = a->val;
    int cap = 0, count = 0;
    int32_t *v = NULL;
    if (all_space(s)) {
        args_error(a, "%s is empty: give token ids separated by commas, e.g. 200000,1,2", a->flag);
        return;
    }
    for (int pos = 1;; pos++) {
        while (isspace((unsigned char)*s)) s++;
        const char *start = s;
        while (*s && *s != ',') s++;
        int len = (int)(s - start);
        while (len > 0 && isspace((unsigned char)start[len - 1])) len--;
        if (len == 0) {
            args_error(a, "%s: token %d is empty (in '%s')", a->flag, pos, a->val);
            goto fail;
        }
        char buf[32];
        char *end = buf;
        long long id = 0;
        errno = 0;
        if (len < (int)sizeof buf) { /* longer cannot be an id */
            memcpy(buf, start, (size_t)len);
            buf[len] = 0;
            id = strtoll(buf, &end, 10);
        }
        if (len < (int)sizeof buf && end != buf && !*end && errno == ERANGE) id = INT64_MAX;
        else if (len >= (int)sizeof buf || end == buf || *end || buf[0] == '+') {
            args_error(a, "%s: token %d '%.*s' is not a token id (a non-negative integer)",
                       a->flag, pos, (int)(s - start), start);
            goto fail;
        }
        if (id < 0 || id > INT32_MAX) {
            args_error(a, "%s: token %d is %.*s, outside [0, %d]", a->flag, pos, len, start,
                       INT32_MAX);
            goto fail;
        }
        if (count == cap) {
            cap = cap ? 2 * cap : 16;
            int32_t *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) {
                args_error(a, "out of memory reading %s", a->flag);
                goto fail;
            }
            v = nv;
        }
        v[count++] = (int32_t)id;
        if (!*s) break;
        s++; /* the comma */
    }
    free(*ids); /* a repeated --tokens replaces the earlier list */
    *ids = v;
    *n = count;
    return;
fail:
    free(v);
}

int args_check_vocab(const char *cmd, const char *what, const int32_t *ids, int n, int vocab) {
    for (int i = 0; i < n; i++)
        if (ids[i] >= vocab) {
            fprintf(stderr,
                    "%s: token id %d (token %d of %s) is outside the vocabulary: the model's "
                    "vocab size is %d (ids 0..%d)\n",
                    cmd, ids[i], i + 1, what, vocab, vocab - 1);
            return -1;
        }
    return 0;
}

/* ---- sampling -------------------------------------------------------------------------------- */

glim_cli_sampling args_sampling_defaults(void) {
    glim_cli_sampling s = {glim_sampler_defaults(), 0, 0};
    return s;
}

int args_sampling(glim_args *a, glim_cli_sampling *s) {
    glim_sampler_params *p = &s->p;
    if (args_flag(a, "--temp", "--temperature"))
        args_float(a, &p->temperature, -INFINITY, 0, INFINITY, 0);
    else if (args_flag(a, "--top-k", NULL)) args_int(a, &p->top_k, 0, 2147483647);
    else if (args_flag(a, "--top-p", NULL)) args_float(a, &p->top_p, 0, 1, 1, 0);
    else if (args_flag(a, "--min-p", NULL)) args_float(a, &p->min_p, 0, 0, 1, 0);
    else if (args_flag(a, "--repeat-penalty", NULL))
        args_float(a, &p->repeat_penalty, 0, 1, INFINITY, 0);
    else if (args_flag(a, "--presence-penalty", NULL))
        args_float(a, &p->presence_penalty, -INFINITY, 0, INFINITY, 0);
    else if (args_flag(a, "--frequency-penalty", NULL))
        args_float(a, &p->frequency_penalty, -INFINITY, 0, INFINITY, 0);
    else if (args_flag(a, "--repeat-last-n", NULL)) {
        int n = 0;
        args_int(a, &n, -1, 1 << 24);
        if (!a->err) {
            s->penalties_off = n == 0;
            p->penalty_last_n = n < 0 ? 0 : n == 0 ? 64 : n;
        }
    } else if (args_flag(a, "-s", "--seed")) {
        if (!a->err && !strcmp(a->val, "-1")) {
            s->seed_given = 0;
        } else {
            args_u64(a, &p->seed);
            if (!a->err) s->seed_given = 1;
        }
    } else {
        return 0;
    }
    return 1;
}

void args_sampling_done(glim_cli_sampling *s) {
    if (s->penalties_off) {
        s->p.repeat_penalty = 1.0f;
        s->p.presence_penalty = 0.0f;
        s->p.frequency_penalty = 0.0f;
    }
    if (!s->seed_given) s->p.seed = args_random_seed();
}

void args_sampling_help(void) {
    glim_sampler_params d = glim_sampler_defaults();
    printf("sampling (applied in llama.cpp's order: penalties, top-k, top-p, min-p, temperature):\n"
           "  --temp T               temperature; <= 0 is greedy, the first maximal id (default %g)\n"
           "  --top-k K              keep the K most likely ids; 0 = off (default %d)\n"
           "  --top-p P              keep the smallest set with probability >= P, in (0, 1];\n"
           "                         1 = off (default %g)\n"
           "  --min-p P              drop ids less likely than P x the best, in [0, 1]; 0 = off\n"
           "                         (default %g)\n"
           "  --repeat-penalty R     divide positive / multiply negative logits of recent ids by\n"
           "                         R > 0; 1 = off (default %g)\n"
           "  --presence-penalty X   subtract X once from every recent id (default %g)\n"
           "  --frequency-penalty X  subtract X per occurrence of a recent id (default %g)\n"
           "  --repeat-last-n N      how many recent ids (prompt included) the penalties see;\n"
           "                         0 = penalties off, -1 = all (default %d)\n"
           "  -s, --seed S           random seed, 0..2^64-1; the same seed, model and flags give\n"
           "                         the same ids; -1 = from the clock (default; printed)\n",
           (double)d.temperature, d.top_k, (double)d.top_p, (double)d.min_p,
           (double)d.repeat_penalty, (double)d.presence_penalty, (double)d.frequency_penalty,
           d.penalty_last_n);
}

/* ---- model ----------------------------------------------------------------------------------- */

int args_model(glim_args *a, glim_cli_model *m) {
    if (args_flag(a, "-m", "--model")) {
        if (!a->err && !*a->val) args_error(a, "%s is empty: give a checkpoint directory", a->flag);
        m->dir = a->val;
    } else if (args_flag(a, "-t", "--threads")) {
        args_int(a, &m->threads, 0, 4096);
    } else if (args_flag(a, "--backend", NULL)) {
        if (a->err) return 1;
        if (!strcmp(a->val, "auto")) m->backend = NULL;
        else if (!strcmp(a->val, "cpu") || !strcmp(a->val, "cuda")) m->backend = a->val;
        else args_error(a, "--backend must be cpu, cuda or auto, got '%s'", a->val);
    } else {
        return 0;
    }
    return 1;
}

void args_model_help(void) {
    printf("model:\n"
           "  -m, --model DIR        checkpoint directory: config.json, generation_config.json and\n"
           "                         model.safetensors or model.safetensors.index.json + shards\n"
           "                         (Hugging Face bf16 or MLX quantized layout); required\n"
           "  -t, --threads N        CPU worker threads; 0 = one per core (default 0)\n"
           "  --backend B            cpu, cuda or auto: the GPU when there is one (default auto)\n");
}

glim_model *args_open_model(const char *cmd, const glim_cli_model *m) {
    glim_model_params mp = {m->backend, m->threads};
    glim_model *model = NULL;
    glim_error err = {0};
    if (glim_model_open(m->dir, &mp, &model, &err) != GLIM_OK) {
        fprintf(stderr, "%s: cannot open model '%s': %s\n", cmd, m->dir, err.message);
        return NULL;
    }
    return model;
}

uint64_t args_random_seed(void) {
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed) return seed;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^
           ((uint64_t)getpid() << 32);
}

double args_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
