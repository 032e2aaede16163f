/* hook_flags.c: parsing and applying the research-hook flags (see hook_flags.h). */
#include "hook_flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hook_parse_ranges(const char *text, int32_t **out, int *n, char *msg, int msg_len) {
    *out = NULL;
    *n = 0;
    int cap = 16;
    int32_t *v = malloc((size_t)cap * sizeof *v);
    if (!v) return snprintf(msg, (size_t)msg_len, "out of memory"), -1;
    const char *p = text;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b;
        if (end == p || a < 0 || a > 1000000) goto bad;
        b = a;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
            if (end == p || b < a || b > 1000000) goto bad;
        }
        for (long x = a; x <= b; x++) {
            for (int k = 0; k < *n; k++)
                if (v[k] == x) {
                    snprintf(msg, (size_t)msg_len, "'%s' names %ld twice", text, x);
                    free(v);
                    return -1;
                }
            if (*n == cap) {
                int32_t *w = realloc(v, (size_t)(cap *= 2) * sizeof *v);
                if (!w) {
                    free(v);
                    return snprintf(msg, (size_t)msg_len, "out of memory"), -1;
                }
                v = w;
            }
            v[(*n)++] = (int32_t)x;
        }
        if (*end == ',') end++;
        else if (*end) goto bad;
        p = end;
    }
    if (*n == 0) goto bad;
    *out = v;
    return 0;
bad:
    snprintf(msg, (size_t)msg_len, "'%s' is not a list like 0-3,7,10-12", text);
    free(v);
    *n = 0;
    return -1;
}

/* One option of a --steer spec. */
static int steer_option(glim_args *a, hook_steer_spec *sp, char *opt) {
    char *eq = strchr(opt, '=');
    const char *val = eq ? eq + 1 : "";
    if (eq) *eq = 0;
    char *end = NULL;
    if (!strcmp(opt, "mode")) {
        const char *modes[] = {"add", "ablate", "clamp", "renorm"};
        for (int m = 0; m < 4; m++)
            if (!strcmp(val, modes[m])) return sp->p.mode = (glim_steer_mode)m, 0;
        args_error(a, "%s: mode '%s' is not add, ablate, clamp or renorm", a->flag, val);
    } else if (!strcmp(opt, "scale") || !strcmp(opt, "target")) {
        float x = strtof(val, &end);
        if (!*val || *end) args_error(a, "%s: %s '%s' is not a number", a->flag, opt, val);
        else if (opt[0] == 's') sp->p.scale = x;
        else sp->p.target = x;
    } else if (!strcmp(opt, "layers")) {
        long lo = strtol(val, &end, 10), hi = lo;
        if (end != val && *end == '-') hi = strtol(end + 1, &end, 10);
        if (!*val || *end || lo < 0 || hi < lo)
            args_error(a, "%s: layers '%s' is not A-B or A", a->flag, val);
        sp->p.layer_first = (int)lo;
        sp->p.layer_last = (int)hi;
        sp->layers_given = 1;
    } else if (!strcmp(opt, "gate")) {
        const char *kinds[] = {"abs", "above", "below"};
        const char *colon = strchr(val, ':');
        int g = -1;
        for (int k = 0; k < 3 && colon; k++)
            if ((size_t)(colon - val) == strlen(kinds[k]) && !strncmp(val, kinds[k], (size_t)(colon - val))) g = k;
        float th = colon ? strtof(colon + 1, &end) : 0;
        if (g < 0 || !colon[1] || *end)
            args_error(a, "%s: gate '%s' is not abs:T, above:T or below:T", a->flag, val);
        sp->p.gate = (glim_steer_gate)(g + 1);
        sp->p.threshold = th;
    } else if (!strcmp(opt, "unit") && !eq) {
        sp->p.unit = 1;
    } else if (!strcmp(opt, "offset")) {
        if (strcmp(val, "0") && strcmp(val, "1")) args_error(a, "%s: offset must be 0 or 1", a->flag);
        sp->p.file_offset = val[0] - '0';
    } else {
        args_error(a, "%s: unknown option '%s' (mode, scale, target, layers, gate, unit, offset)",
                   a->flag, opt);
    }
    return a->err ? -1 : 0;
}

/* "FILE[,opt,...]". The options are parsed from a copy; the path points into argv. */
static void parse_steer(glim_args *a, hook_flags *f, const char *spec, float scale) {
    if (f->n_steer == HOOK_FLAGS_MAX_STEER) {
        args_error(a, "at most %d steering vectors", HOOK_FLAGS_MAX_STEER);
        return;
    }
    hook_steer_spec *sp = &f->steer[f->n_steer++];
    sp->p = glim_steer_defaults();
    sp->p.scale = scale;
    char *copy = strdup(spec);
    if (!copy) {
        args_error(a, "out of memory");
        return;
    }
    char *comma = strchr(copy, ',');
    if (comma) *comma = 0;
    if (!copy[0]) args_error(a, "%s needs a file", a->flag);
    /* keep the path: argv outlives the flags; cut at the same comma */
    sp->path = copy;
    for (char *opt = comma ? comma + 1 : NULL; opt && !a->err;) {
        char *next = strchr(opt, ',');
        if (next) *next++ = 0;
        steer_option(a, sp, opt);
        opt = next;
    }
}

/* The second value of a two-valued flag (llama.cpp's --control-vector-scaled FILE SCALE). */
static const char *second_value(glim_args *a) {
    if (a->i + 1 >= a->argc) {
        args_error(a, "%s needs two values", a->flag);
        return NULL;
    }
    return a->argv[++a->i];
}

static int parse_capture_positions(glim_args *a, hook_flags *f) {
    const char *v = a->val;
    char msg[160];
    if (!strcmp(v, "all")) f->capture_select = GLIM_CAPTURE_ALL;
    else if (!strcmp(v, "last")) f->capture_select = GLIM_CAPTURE_LAST_PROMPT;
    else if (!strcmp(v, "head")) f->capture_select = GLIM_CAPTURE_HEAD;
    else if (hook_parse_ranges(v, &f->capture_positions, &f->n_capture_positions, msg, sizeof msg))
        args_error(a, "%s: %s (or all, last, head)", a->flag, msg);
    else f->capture_select = GLIM_CAPTURE_POSITIONS;
    return 1;
}

int hook_flags_parse(glim_args *a, hook_flags *f) {
    char msg[160];
    int hit = 1;
    if (args_flag(a, "--steer", NULL)) {
        if (!a->err) parse_steer(a, f, a->val, 1.0f);
    } else if (args_flag(a, "--control-vector", NULL)) {
        if (!a->err) parse_steer(a, f, a->val, 1.0f);
    } else if (args_flag(a, "--control-vector-scaled", NULL)) {
        const char *file = a->val, *s = a->err ? NULL : second_value(a);
        char *end;
        float scale = s ? strtof(s, &end) : 0;
        if (s && (!*s || *end)) args_error(a, "%s: scale '%s' is not a number", a->flag, s);
        if (!a->err) parse_steer(a, f, file, scale);
    } else if (args_flag(a, "--control-vector-layer-range", NULL)) {
        const char *lo = a->val, *hi = a->err ? NULL : second_value(a);
        char *e1, *e2;
        long x = hi ? strtol(lo, &e1, 10) : 0, y = hi ? strtol(hi, &e2, 10) : 0;
        if (hi && (*e1 || *e2 || !*lo || !*hi || x < 0 || y < x))
            args_error(a, "%s: '%s %s' is not START END (0 <= START <= END)", a->flag, lo, hi);
        f->cv_first = (int)x;
        f->cv_last = (int)y;
        f->cv_range_given = 1;
    } else if (args_flag(a, "--capture", NULL)) {
        f->capture_path = a->val;
    } else if (args_flag(a, "--capture-positions", NULL)) {
        if (!a->err) parse_capture_positions(a, f);
    } else if (args_flag(a, "--capture-layers", NULL)) {
        if (!a->err && hook_parse_ranges(a->val, &f->capture_layers, &f->n_capture_layers, msg, sizeof msg))
            args_error(a, "%s: %s", a->flag, msg);
    } else if (args_flag(a, "--capture-max-rows", NULL)) {
        args_int(a, &f->capture_max_rows, 1, 1 << 30);
    } else if (args_switch(a, "--capture-stream")) {
        f->capture_stream = 1;
    } else if (args_flag(a, "--census", NULL)) {
        f->census_path = a->val;
    } else if (args_flag(a, "--census-top-k", NULL)) {
        args_int(a, &f->census_top_k, 1, 1 << 20);
    } else if (args_switch(a, "--census-neuron-hist")) {
        f->census_neuron_hist = 1;
    } else {
        hit = 0;
    }
    f->any |= hit;
    return hit;
}

void hook_flags_help(void) {
    printf(
        "\nResearch hooks (layer l = 0-based decoder layer; its output, after the FFN residual\n"
        "add, is Hugging Face's hidden_states[l+1]; steering acts there first, capture after):\n"
        "  --steer FILE[,OPT...]  steer with a control vector: a llama.cpp GGUF (direction.N) or a\n"
        "                         safetensors file with the same tensors. Options, comma-separated:\n"
        "                           mode=add|ablate|clamp|renorm (add)  scale=A (1)\n"
        "                           target=T (clamp)  layers=A-B  gate=abs|above|below:T\n"
        "                           unit (add d/|d| instead of d)  offset=1 (see below)\n"
        "                         add: x += A*d; ablate: x -= A*(x.u)u; clamp: x += A*(T - x.u)u;\n"
        "                         renorm: ablate, then restore |x| (u = d/|d|). A gate acts only on\n"
        "                         rows where |x.u| > T (abs), x.u > T (above), x.u < T (below).\n"
        "                         Repeatable; applied in the order given. scale=0 changes nothing.\n"
        "  --control-vector FILE  llama.cpp's spelling of --steer FILE\n"
        "  --control-vector-scaled FILE SCALE\n"
        "  --control-vector-layer-range START END\n"
        "                         layers the control vectors act on (inclusive)\n"
        "  Layer numbering of control-vector files: tensor direction.N is added to the output of\n"
        "  layer N, as llama.cpp's loader applies it (its graph index il = N; the first layer's\n"
        "  output, N = 0, never has one). llama.cpp's cvector-generator writes direction.N from\n"
        "  the output of layer N-1: add offset=1 to apply its files where they were measured.\n"
        "  glimmer steer-extract writes direction.N measured at layer N.\n"
        "  --capture FILE         write the residual stream (after steering) as safetensors:\n"
        "                         residual F32 [N, layers, hidden], positions/tokens/sequence I32 [N],\n"
        "                         layers I32\n"
        "  --capture-positions all|last|head|LIST\n"
        "                         last: the last prompt token (default); head: every position\n"
        "                         whose logits are computed; LIST: e.g. 0-3,9\n"
        "  --capture-layers LIST  e.g. 0-3,20 (default: all layers)\n"
        "  --capture-max-rows N   rows held in memory, layers x hidden x 4 bytes each (default:\n"
        "                         the context, at most 1 GiB; 64 for last or with a stream)\n"
        "  --capture-stream       write rows to FILE as they come (fixed memory, any length)\n"
        "  --census FILE          FFN activation census of decode tokens (silu(gate)*up): per\n"
        "                         neuron sum |act| and a log2 histogram, per layer the top-K\n"
        "                         overlap of consecutive tokens; FILE .json or .safetensors; a\n"
        "                         summary goes to stderr\n"
        "  --census-top-k K       (default 32)\n"
        "  --census-neuron-hist   keep a histogram per neuron as well (L x I x 34 counters)\n");
}

static int apply_steering(const char *cmd, hook_flags *f, glim_session *s) {
    glim_error e = {0};
    for (int i = 0; i < f->n_steer; i++) {
        hook_steer_spec *sp = &f->steer[i];
        glim_directions *d = NULL;
        if (glim_directions_load(sp->path, &d, &e)) {
            fprintf(stderr, "%s: control vector: %s\n", cmd, e.message);
            return 1;
        }
        if (f->cv_range_given && !sp->layers_given) {
            sp->p.layer_first = f->cv_first;
            sp->p.layer_last = f->cv_last;
        }
        const char *hint = glim_directions_model_hint(d);
        if (hint[0] && strcmp(hint, "muse-glimmer"))
            fprintf(stderr, "%s: note: %s was made for '%s' (controlvector.model_hint)\n", cmd,
                    sp->path, hint);
        glim_status st = glim_session_steer_push(s, d, &sp->p, &e);
        glim_directions_free(d);
        if (st) {
            fprintf(stderr, "%s: %s: %s\n", cmd, sp->path, e.message);
            return 1;
        }
    }
    return 0;
}

int hook_flags_apply(const char *cmd, hook_flags *f, glim_session *s) {
    if (!f->any) return 0;
    glim_error e = {0};
    if (apply_steering(cmd, f, s)) return 1;
    if (!f->capture_path && (f->capture_layers || f->capture_positions || f->capture_stream ||
                             f->capture_max_rows)) {
        fprintf(stderr, "%s: --capture-* flags need --capture FILE\n", cmd);
        return 1;
    }
    if (f->capture_path) {
        glim_capture_params p = {f->capture_select, f->capture_positions, f->n_capture_positions,
                                 f->capture_layers, f->n_capture_layers, f->capture_max_rows,
                                 f->capture_stream ? f->capture_path : NULL, 0};
        if (glim_session_capture_start(s, &p, &e)) {
            fprintf(stderr, "%s: --capture: %s\n", cmd, e.message);
            return 1;
        }
    }
    if (f->census_path) {
        glim_census_params p = {f->census_top_k, f->census_neuron_hist};
        if (glim_session_census_start(s, &p, &e)) {
            fprintf(stderr, "%s: --census: %s\n", cmd, e.message);
            return 1;
        }
    }
    return 0;
}

int hook_flags_finish(const char *cmd, hook_flags *f, glim_session *s) {
    if (!f->any) return 0;
    glim_error e = {0};
    int rc = 0;
    if (f->capture_path) {
        glim_capture_view v;
        if (glim_session_capture_view(s, &v, &e) == GLIM_OK) {
            uint64_t rows = v.total_rows, dropped = v.dropped;
            int nl = v.n_layers, hidden = v.hidden;
            glim_status st = f->capture_stream ? glim_session_capture_stop(s, &e)
                                               : glim_session_capture_write(s, f->capture_path, &e);
            if (st) {
                fprintf(stderr, "%s: --capture: %s\n", cmd, e.message);
                rc = 1;
            } else {
                fprintf(stderr, "wrote %s: residual F32 [%llu, %d, %d]", f->capture_path,
                        (unsigned long long)(f->capture_stream ? rows : (uint64_t)v.rows), nl, hidden);
                if (dropped)
                    fprintf(stderr, " (%llu rows did not fit: raise --capture-max-rows or use "
                            "--capture-stream)", (unsigned long long)dropped);
                fputc('\n', stderr);
            }
        }
    }
    if (f->census_path) {
        char *text = NULL;
        if (glim_session_census_write(s, f->census_path, &e)) {
            fprintf(stderr, "%s: --census: %s\n", cmd, e.message);
            rc = 1;
        } else if (glim_session_census_summary(s, 5, &text, &e) == GLIM_OK) {
            fprintf(stderr, "wrote %s\n%s", f->census_path, text);
            free(text);
        }
    }
    return rc;
}

void hook_flags_free(hook_flags *f) {
    for (int i = 0; i < f->n_steer; i++) free((char *)f->steer[i].path);
    free(f->capture_positions);
    free(f->capture_layers);
    memset(f, 0, sizeof *f);
}
