/* cmd_steer.c: the corpus drivers of the research hooks, one model load for many prompts:
 *   `glimmer steer-extract`: difference-of-means steering directions from two prompt sets,
 *     written as a llama.cpp control-vector GGUF (or safetensors) that --steer loads
 *     (glim_directions_extract);
 *   `glimmer capture`: the residual stream of every prompt of a file, streamed to one
 *     safetensors file (with any steering / census flags of run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "glimmer.h"
#include "glimmer_hooks.h"
#include "glimmer_text.h"
#include "hook_flags.h"

#define CMD "glimmer steer-extract"

static void help(void) {
    printf("usage: glimmer steer-extract -m DIR --positive FILE --negative FILE -o OUT.gguf [options]\n\n"
           "For every prompt of each file, evaluates it from position 0 and takes the residual stream\n"
           "at its last token at the output of each layer; the direction of layer l is\n"
           "mean(positive) - mean(negative) (averaged in double). The result is a llama.cpp control\n"
           "vector (OUT.gguf: general.architecture = controlvector, tensors direction.N F32 [hidden])\n"
           "or, for any other extension, a safetensors file with the same tensors.\n\n"
           "Layer numbering: direction.N is measured at, and applies to, the output of layer N\n"
           "(0-based, as llama.cpp's control-vector loader applies direction.N; HF hidden_states[N+1]).\n"
           "A GGUF cannot hold layer 0 (llama.cpp refuses direction.0), so it gets layers 1..L-1;\n"
           "safetensors output gets 0..L-1.\n\n"
           "  --positive FILE        one prompt per line: token ids (\"200000, 17, 4\") or text,\n"
           "  --negative FILE        tokenized with the checkpoint's tokenizer.json (BOS added,\n"
           "                         special tokens parsed; \\n \\t \\\\ escapes). Empty lines skipped.\n"
           "  -o, --output FILE      .gguf (llama.cpp control vector) or .safetensors\n"
           "  --layers LIST          layers to extract, e.g. 10-30 or 4,8,12 (default: all)\n"
           "  --unit                 scale each direction to unit length (llama.cpp's cvector-generator\n"
           "                         does; by default the raw difference is kept, so --steer FILE with\n"
           "                         scale 1 moves the negative mean onto the positive one)\n"
           "  -c, --ctx-size N       session context (default: the longest prompt)\n"
           "  -b, --batch-size N     tokens per chunk (default 64)\n\n");
    args_model_help();
    printf("\nexit status: 0 ok, 1 runtime error, 2 usage error\n");
}

typedef struct prompts {
    int32_t **ids;
    int *len;
    int n, cap;
    int has_text;
} prompts;

typedef struct opts {
    glim_cli_model model;
    const char *pos_path, *neg_path, *out;
    int32_t *layers;
    int n_layers, unit, ctx, batch;
} opts;

static void prompts_free(prompts *p) {
    for (int i = 0; i < p->n; i++) free(p->ids[i]);
    free(p->ids);
    free(p->len);
    memset(p, 0, sizeof *p);
}

/* A line of ids: digits, commas and blanks only, with at least one digit. */
static int is_id_line(const char *s) {
    int digit = 0;
    for (; *s; s++) {
        if (*s >= '0' && *s <= '9') digit = 1;
        else if (*s != ',' && *s != ' ' && *s != '\t' && *s != '\r') return 0;
    }
    return digit;
}

static void unescape(char *s) {
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r == '\\' && r[1]) {
            r++;
            *w++ = *r == 'n' ? '\n' : *r == 't' ? '\t' : *r == 'r' ? '\r' : *r;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
}

static int push_prompt(prompts *p, int32_t *ids, int n) {
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        int32_t **a = realloc(p->ids, (size_t)cap * sizeof *a);
        if (a) p->ids = a;
        int *b = realloc(p->len, (size_t)cap * sizeof *b);
        if (b) p->len = b;
        if (!a || !b) return -1;
        p->cap = cap;
    }
    p->ids[p->n] = ids;
    p->len[p->n++] = n;
    return 0;
}

/* Reads one prompt file; text lines need the tokenizer, loaded on first use. */
static int read_prompts(const char *path, const char *dir, glim_tokenizer **tok, prompts *p) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, CMD ": cannot open %s\n", path);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int lineno = 0, rc = 0;
    while (!rc && (got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
        if (strspn(line, " \t") == (size_t)got) continue;
        int32_t *ids = NULL;
        int n = 0;
        glim_error e = {0};
        if (is_id_line(line)) {
            char *s = line;
            ids = malloc(((size_t)got / 2 + 1) * sizeof *ids);
            for (char *end; ids && *s;) {
                s += strspn(s, " \t\r,");
                if (!*s) break;
                long v = strtol(s, &end, 10);
                if (end == s || v > 2147483647L) {
                    fprintf(stderr, CMD ": %s:%d: bad token id list\n", path, lineno);
                    rc = 1;
                    break;
                }
                ids[n++] = (int32_t)v;
                s = end;
            }
        } else {
            if (!*tok && glim_tokenizer_load(dir, tok, &e) != GLIM_OK) {
                fprintf(stderr, CMD ": %s:%d is text, which needs the tokenizer of '%s': %s\n"
                        "(or write the prompt as token ids)\n", path, lineno, dir, e.message);
                rc = 1;
                break;
            }
            unescape(line);
            glim_tokens t = {0};
            if (glim_tokenize(*tok, line, strlen(line), GLIM_TOK_ADD_SPECIAL | GLIM_TOK_PARSE_SPECIAL,
                              &t, &e) != GLIM_OK) {
                fprintf(stderr, CMD ": %s:%d: %s\n", path, lineno, e.message);
                rc = 1;
                break;
            }
            ids = t.ids;
            n = (int)t.n;
            p->has_text = 1;
        }
        if (!rc && (!ids || n == 0 || push_prompt(p, ids, n))) {
            fprintf(stderr, CMD ": %s:%d: %s\n", path, lineno, ids && n == 0 ? "empty prompt" : "out of memory");
            rc = 1;
        }
        if (rc) free(ids);
    }
    free(line);
    fclose(f);
    if (!rc && p->n == 0) {
        fprintf(stderr, CMD ": %s holds no prompts\n", path);
        rc = 1;
    }
    return rc;
}

static int parse(int argc, char **argv, opts *o) {
    glim_args a;
    char msg[160];
    args_init(&a, CMD, argc, argv);
    while (args_next(&a)) {
        if (args_help(&a)) {
            help();
            return 0;
        } else if (args_model(&a, &o->model)) {
        } else if (args_flag(&a, "--positive", NULL)) {
            o->pos_path = a.val;
        } else if (args_flag(&a, "--negative", NULL)) {
            o->neg_path = a.val;
        } else if (args_flag(&a, "-o", "--output")) {
            o->out = a.val;
        } else if (args_flag(&a, "--layers", NULL)) {
            if (!a.err && hook_parse_ranges(a.val, &o->layers, &o->n_layers, msg, sizeof msg))
                args_error(&a, "--layers: %s", msg);
        } else if (args_switch(&a, "--unit")) {
            o->unit = 1;
        } else if (args_flag(&a, "-c", "--ctx-size")) {
            args_int(&a, &o->ctx, 1, 2147483647);
        } else if (args_flag(&a, "-b", "--batch-size")) {
            args_int(&a, &o->batch, 1, 2147483647);
        } else {
            args_unknown(&a);
        }
    }
    if (a.err) return 2;
    if (!o->model.dir) args_error(&a, "missing -m DIR (the checkpoint directory)");
    else if (!o->pos_path || !o->neg_path) args_error(&a, "missing --positive FILE or --negative FILE");
    else if (!o->out || !*o->out) args_error(&a, "missing -o OUT.gguf");
    return a.err ? 2 : -1;
}

static int is_gguf(const char *path) {
    size_t n = strlen(path);
    return n >= 5 && !strcmp(path + n - 5, ".gguf");
}

/* The layers to extract: the requested ones in range, without 0 for a GGUF. */
static int pick_layers(const opts *o, int L, int32_t *out) {
    int n = 0;
    for (int k = 0; k < (o->layers ? o->n_layers : L); k++) {
        int l = o->layers ? o->layers[k] : k;
        if (l >= L) {
            fprintf(stderr, CMD ": --layers names layer %d; the model has layers 0..%d\n", l, L - 1);
            return -1;
        }
        if (l == 0 && is_gguf(o->out)) {
            if (o->layers)
                fprintf(stderr, CMD ": note: layer 0 left out (a GGUF control vector starts at "
                        "direction.1)\n");
            continue;
        }
        out[n++] = l;
    }
    if (!n) fprintf(stderr, CMD ": no layers left to extract\n");
    return n ? n : -1;
}

static int extract(glim_model *m, const opts *o, prompts *pos, prompts *neg) {
    const glim_model_info *in = glim_model_get_info(m);
    int longest = 0;
    for (int s = 0; s < 2; s++) {
        prompts *p = s ? neg : pos;
        for (int i = 0; i < p->n; i++) {
            if (p->len[i] > longest) longest = p->len[i];
            if (args_check_vocab(CMD, s ? "--negative" : "--positive", p->ids[i], p->len[i], in->vocab_size))
                return 2;
        }
    }
    int ctx = o->ctx ? o->ctx : longest;
    if (ctx < longest || ctx > in->max_position) {
        fprintf(stderr, CMD ": the longest prompt has %d tokens; -c %d does not hold it (max %d)\n",
                longest, ctx, in->max_position);
        return 2;
    }
    int32_t *layers = malloc((size_t)in->n_layers * sizeof *layers);
    int nl = layers ? pick_layers(o, in->n_layers, layers) : -1;
    glim_session *s = NULL;
    glim_directions *d = NULL;
    glim_error e = {0};
    glim_session_params sp = {ctx, o->batch, 0};
    int rc = 1;
    if (nl < 0) goto out;
    if (glim_session_create(m, &sp, &s, &e)) {
        fprintf(stderr, CMD ": cannot create a session of %d tokens: %s\n", ctx, e.message);
        goto out;
    }
    double t0 = args_now();
    if (glim_directions_extract(s, (const int32_t *const *)pos->ids, pos->len, pos->n,
                                (const int32_t *const *)neg->ids, neg->len, neg->n, layers, nl,
                                o->unit, &d, &e)) {
        fprintf(stderr, CMD ": %s\n", e.message);
        goto out;
    }
    double t1 = args_now();
    if (glim_directions_save(d, o->out, NULL, &e)) {
        fprintf(stderr, CMD ": cannot write %s: %s\n", o->out, e.message);
        goto out;
    }
    for (int k = 0; k < nl; k++) {
        const float *v = glim_directions_get(d, layers[k]);
        double nn = 0;
        for (int i = 0; i < in->hidden_size; i++) nn += (double)v[i] * v[i];
        fprintf(stderr, "layer %3d: |direction| %.6g\n", layers[k], sqrt(nn));
    }
    fprintf(stderr, "wrote %s: %d directions of %d floats from %d positive and %d negative prompts "
            "(%.2f s)\n", o->out, nl, in->hidden_size, pos->n, neg->n, t1 - t0);
    rc = 0;
out:
    glim_directions_free(d);
    glim_session_free(s);
    free(layers);
    return rc;
}

int cmd_steer_extract(int argc, char **argv) {
    opts o = {0};
    prompts pos = {0}, neg = {0};
    glim_tokenizer *tok = NULL;
    int rc = parse(argc, argv, &o);
    if (rc < 0) {
        rc = read_prompts(o.pos_path, o.model.dir, &tok, &pos) ||
             read_prompts(o.neg_path, o.model.dir, &tok, &neg);
        if (!rc) {
            glim_model *m = args_open_model(CMD, &o.model);
            rc = m ? extract(m, &o, &pos, &neg) : 1;
            glim_model_close(m);
        }
    }
    glim_tokenizer_free(tok);
    prompts_free(&pos);
    prompts_free(&neg);
    free(o.layers);
    return rc;
}

/* ---- glimmer capture ------------------------------------------------------------------------ */

#undef CMD
#define CMD "glimmer capture"

static void capture_help(void) {
    printf("usage: glimmer capture -m DIR --prompts FILE -o OUT.safetensors [options]\n\n"
           "Evaluates every prompt of FILE from position 0 (logits of its last token only) in one\n"
           "session and streams the residual stream at the chosen layer outputs into OUT: residual\n"
           "F32 [N, layers, hidden], positions, tokens and sequence I32 [N] (sequence = the prompt's\n"
           "index in FILE, from 0), layers I32. Memory stays fixed however long the corpus is.\n\n"
           "  --prompts FILE         one prompt per line: token ids or text (as steer-extract)\n"
           "  -o, --output FILE      the safetensors file\n"
           "  -c, --ctx-size N       session context (default: the longest prompt)\n"
           "  -b, --batch-size N     tokens per chunk (default 64)\n"
           "Which rows: --capture-positions (default last: each prompt's last token) and\n"
           "--capture-layers below; --steer and --census work as in run.\n");
    hook_flags_help();
    printf("\n");
    args_model_help();
    printf("\nexit status: 0 ok, 1 runtime error, 2 usage error\n");
}

int cmd_capture(int argc, char **argv) {
    glim_cli_model model = {0};
    hook_flags hf = {0};
    const char *prompts_path = NULL, *out = NULL;
    int ctx = 0, batch = 0, rc = -1;
    glim_args a;
    args_init(&a, CMD, argc, argv);
    while (args_next(&a)) {
        if (args_help(&a)) {
            capture_help();
            hook_flags_free(&hf);
            return 0;
        } else if (args_model(&a, &model) || hook_flags_parse(&a, &hf)) {
        } else if (args_flag(&a, "--prompts", NULL)) {
            prompts_path = a.val;
        } else if (args_flag(&a, "-o", "--output")) {
            out = a.val;
        } else if (args_flag(&a, "-c", "--ctx-size")) {
            args_int(&a, &ctx, 1, 2147483647);
        } else if (args_flag(&a, "-b", "--batch-size")) {
            args_int(&a, &batch, 1, 2147483647);
        } else {
            args_unknown(&a);
        }
    }
    if (!a.err && !model.dir) args_error(&a, "missing -m DIR (the checkpoint directory)");
    else if (!a.err && !prompts_path) args_error(&a, "missing --prompts FILE");
    else if (!a.err && (!out || !*out)) args_error(&a, "missing -o OUT.safetensors");
    else if (!a.err && hf.capture_path) args_error(&a, "give the output with -o, not --capture");
    if (a.err) {
        hook_flags_free(&hf);
        return 2;
    }
    hf.capture_path = out;
    hf.capture_stream = 1;
    hf.any = 1;
    prompts p = {0};
    glim_tokenizer *tok = NULL;
    glim_model *m = NULL;
    glim_session *s = NULL;
    glim_error e = {0};
    float *logits = NULL;
    if (read_prompts(prompts_path, model.dir, &tok, &p)) rc = 1;
    else if (!(m = args_open_model(CMD, &model))) rc = 1;
    if (rc < 0) {
        const glim_model_info *in = glim_model_get_info(m);
        int longest = 0;
        for (int i = 0; i < p.n && rc < 0; i++) {
            if (p.len[i] > longest) longest = p.len[i];
            if (args_check_vocab(CMD, "--prompts", p.ids[i], p.len[i], in->vocab_size)) rc = 2;
        }
        glim_session_params sp = {ctx ? ctx : longest, batch, 0};
        if (rc < 0 && (sp.n_ctx < longest || sp.n_ctx > in->max_position)) {
            fprintf(stderr, CMD ": the longest prompt has %d tokens; -c %d does not hold it\n",
                    longest, sp.n_ctx);
            rc = 2;
        }
        if (rc < 0 && !(logits = malloc(sizeof(float) * (size_t)in->vocab_size))) rc = 1;
        if (rc < 0 && glim_session_create(m, &sp, &s, &e)) {
            fprintf(stderr, CMD ": cannot create a session of %d tokens: %s\n", sp.n_ctx, e.message);
            rc = 1;
        }
        if (rc < 0 && hook_flags_apply(CMD, &hf, s)) rc = 1;
        double t0 = args_now();
        for (int i = 0; i < p.n && rc < 0; i++) {
            glim_session_reset(s);
            if (glim_eval(s, p.ids[i], p.len[i], 0, GLIM_LOGITS_LAST, logits,
                          (size_t)in->vocab_size, &e)) {
                fprintf(stderr, CMD ": prompt %d: %s\n", i + 1, e.message);
                rc = 1;
            }
        }
        if (rc < 0) {
            fprintf(stderr, "%d prompts in %.2f s\n", p.n, args_now() - t0);
            rc = hook_flags_finish(CMD, &hf, s);
        }
    }
    glim_session_free(s);
    glim_model_close(m);
    glim_tokenizer_free(tok);
    prompts_free(&p);
    free(logits);
    hook_flags_free(&hf);
    return rc;
}
