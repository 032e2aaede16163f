/* test_model_errors.c: bad checkpoints and bad calls get a clear error naming what was wrong
 * (never a crash): config values, missing / misshapen / extra tensors, a tied head, a truncated
 * file, and the session's argument checks. Each case prints the message it got, which is the
 * table of the closing note. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "glimmer.h"
#include "safetensors.h"
#include "synth.h"

static char root[] = "/tmp/glimmer-test-errors-XXXXXX";
static char good[600];

static void copy_file(const char *from, const char *to) {
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    if (system(cmd) != 0) fprintf(stderr, "copy failed: %s\n", cmd);
}

/* A fresh copy of the good model in root/name; returns its path. */
static const char *clone_model(const char *name) {
    static char dir[700];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mkdir(dir, 0755);
    const char *files[] = {"config.json", "generation_config.json", "model.safetensors"};
    for (int i = 0; i < 3; i++) {
        char a[800], b[800];
        snprintf(a, sizeof a, "%s/%s", good, files[i]);
        snprintf(b, sizeof b, "%s/%s", dir, files[i]);
        copy_file(a, b);
    }
    return dir;
}

/* Opens dir, expects failure with `code` and a message containing each of the needles. */
static void expect_open_error(const char *what, const char *dir, glim_status code,
                              const char *needle1, const char *needle2) {
    glim_error err = {0};
    glim_model *m = NULL;
    glim_model_params mp = {"cpu", 1};
    glim_status st = glim_model_open(dir, &mp, &m, &err);
    printf("  | %s | %s: %s |\n", what, glim_status_name(st), st ? err.message : "(opened!)");
    CHECK(st == code, "%s: status %s, expected %s", what, glim_status_name(st), glim_status_name(code));
    CHECK(m == NULL, "%s: model returned on failure", what);
    if (needle1) CHECK(strstr(err.message, needle1), "%s: message lacks '%s'", what, needle1);
    if (needle2) CHECK(strstr(err.message, needle2), "%s: message lacks '%s'", what, needle2);
    glim_model_close(m);
}

/* Edits text_config (or the root when key starts with '/') of a clone's config.json. */
static const char *with_config(const char *name, const char *key, json_t *value) {
    const char *dir = clone_model(name);
    char path[800];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    json_t *obj = key[0] == '/' ? cfg : json_object_get(cfg, "text_config");
    const char *k = key[0] == '/' ? key + 1 : key;
    if (value) json_object_set_new(obj, k, value);
    else json_object_del(obj, k);
    json_dump_file(cfg, path, JSON_INDENT(1));
    json_decref(cfg);
    return dir;
}

static void bad_configs(void) {
    expect_open_error("unknown model_type", with_config("mt", "/model_type", json_string("llama")),
                      GLIM_E_MODEL, "model_type", "llama");
    expect_open_error("tied embeddings", with_config("tie", "tie_word_embeddings", json_true()),
                      GLIM_E_MODEL, "tie_word_embeddings", NULL);
    json_t *types = json_array();
    for (int i = 0; i < 6; i++) json_array_append_new(types, json_string(i == 2 ? "full_attention" : i == 1 || i == 5 ? "full_attention" : "sliding_attention"));
    expect_open_error("layer_types vs layer_rope_theta", with_config("lt", "layer_types", types),
                      GLIM_E_MODEL, "layer 2", "layer_rope_theta");
    expect_open_error("rope theta missing", with_config("rope", "rope_parameters", NULL),
                      GLIM_E_MODEL, "rope_theta", "10000");
    expect_open_error("negative epsilon", with_config("eps", "rms_norm_eps", json_real(-1e-5)),
                      GLIM_E_MODEL, "rms_norm_eps", "out of range");
    expect_open_error("zero heads", with_config("heads", "num_attention_heads", json_integer(0)),
                      GLIM_E_MODEL, "num_attention_heads", "out of range");
    expect_open_error("heads not a multiple of kv heads",
                      with_config("gqa", "num_key_value_heads", json_integer(3)), GLIM_E_MODEL,
                      "num_key_value_heads", NULL);
    /* JSON cannot hold NaN or infinity: 1e999 is refused by the parser, naming the place */
    const char *dir = clone_model("inf");
    char path[800];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "r+");
    REQUIRE(f, "open config");
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    char *p = strstr(buf, "\"qk_scale_factor\": 3.87");
    REQUIRE(p, "qk_scale_factor not found in %s", path);
    memcpy(p + 19, "1e999", 5); /* "3.870..." -> "1e999..." keeps the JSON shape */
    rewind(f);
    fwrite(buf, 1, n, f);
    fclose(f);
    expect_open_error("non-finite scalar (1e999)", dir, GLIM_E_FORMAT, "config.json", "line");
    expect_open_error("hidden size disagrees with tensors",
                      with_config("hid", "hidden_size", json_integer(64)), GLIM_E_MODEL,
                      "embed_tokens", "expected [512, 64]");
}

/* Rewrites a clone's model.safetensors through fn, which may drop or replace tensors. */
typedef int (*tensor_edit)(glim_st_out *t);

static const char *with_tensors(const char *name, tensor_edit edit) {
    const char *dir = clone_model(name);
    char src[800], dst[800];
    snprintf(src, sizeof src, "%s/model.safetensors", good);
    snprintf(dst, sizeof dst, "%s/model.safetensors", dir);
    glim_st_set *st = NULL;
    if (glim_st_open_file(src, &st, NULL) != GLIM_OK) return dir;
    int n = glim_st_count(st), k = 0;
    glim_st_out *out = calloc((size_t)n, sizeof *out);
    for (int i = 0; i < n; i++) {
        const glim_tensor *t = glim_st_at(st, i);
        glim_st_out o = {t->name, t->dtype, t->ndim, {0}, t->data};
        memcpy(o.shape, t->shape, sizeof o.shape);
        if (edit(&o)) out[k++] = o;
    }
    glim_error err = {0};
    if (glim_st_write(dst, out, k, NULL, NULL, 0, &err) != GLIM_OK)
        fprintf(stderr, "rewrite: %s\n", err.message);
    free(out);
    glim_st_close(st);
    return dir;
}

static int drop_v_proj_3(glim_st_out *t) { return strcmp(t->name, "model.language_model.layers.3.self_attn.v_proj.weight") != 0; }
static int drop_head(glim_st_out *t) { return strcmp(t->name, "lm_head.weight") != 0; }
static int reshape_norm(glim_st_out *t) {
    if (!strcmp(t->name, "model.language_model.layers.0.input_layernorm.weight")) {
        t->ndim = 2; /* same bytes, shape [2, 48] instead of [96] */
        t->shape[0] = 2;
        t->shape[1] = 48;
    }
    return 1;
}
static int transpose_o(glim_st_out *t) {
    if (!strcmp(t->name, "model.language_model.layers.1.self_attn.o_proj.weight")) {
        int64_t r = t->shape[0];
        t->shape[0] = t->shape[1];
        t->shape[1] = r;
    }
    return 1;
}
static int retype_gate(glim_st_out *t) {
    if (!strcmp(t->name, "model.language_model.layers.2.mlp.gate_proj.weight")) {
        t->dtype = GLIM_DT_I16; /* same size, wrong type */
    }
    return 1;
}
static int add_q_norm(glim_st_out *t) {
    if (!strcmp(t->name, "model.vision_projection.weight")) {
        t->name = "model.language_model.layers.0.self_attn.q_norm.weight"; /* a learned q norm */
    }
    return 1;
}

static void bad_tensors(void) {
    expect_open_error("missing tensor", with_tensors("miss", drop_v_proj_3), GLIM_E_MODEL,
                      "layers.3.self_attn.v_proj.weight", "missing");
    expect_open_error("no lm_head (tied head)", with_tensors("head", drop_head), GLIM_E_MODEL,
                      "lm_head", "untied");
    expect_open_error("norm with wrong shape", with_tensors("shape", reshape_norm), GLIM_E_MODEL,
                      "input_layernorm", "expected [96]");
    expect_open_error("transposed o_proj", with_tensors("tr", transpose_o), GLIM_E_MODEL,
                      "o_proj", "expected [96, 128]");
    expect_open_error("wrong dtype", with_tensors("dt", retype_gate), GLIM_E_MODEL,
                      "mlp.gate_proj", "I16");
    expect_open_error("extra learned q_norm tensor", with_tensors("qn", add_q_norm), GLIM_E_MODEL,
                      "unexpected tensor", "q_norm");
}

static void truncated_checkpoint(void) {
    const char *dir = clone_model("trunc");
    char path[800];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    struct stat sb;
    REQUIRE(stat(path, &sb) == 0, "stat");
    REQUIRE(truncate(path, sb.st_size - 1000) == 0, "truncate");
    expect_open_error("truncated safetensors", dir, GLIM_E_FORMAT, "model.safetensors", "truncated");
    char gdir[800];
    snprintf(gdir, sizeof gdir, "%s/nothing", root);
    mkdir(gdir, 0755);
    expect_open_error("empty directory", gdir, GLIM_E_IO, "config.json", NULL);
}

static void expect_eval_error(const char *what, glim_status got, glim_status want,
                              const glim_error *err, const char *needle) {
    printf("  | %s | %s: %s |\n", what, glim_status_name(got), got ? err->message : "(accepted!)");
    CHECK(got == want, "%s: %s, expected %s", what, glim_status_name(got), glim_status_name(want));
    CHECK(strstr(err->message, needle), "%s: message lacks '%s'", what, needle);
}

static void bad_calls(void) {
    glim_error err = {0};
    glim_model *m = NULL;
    glim_model_params mp = {"cpu", 1};
    REQUIRE(glim_model_open(good, &mp, &m, &err) == GLIM_OK, "%s", err.message);
    glim_session *s = NULL;
    glim_session_params sp = {16, 4, 0};
    REQUIRE(glim_session_create(m, &sp, &s, &err) == GLIM_OK, "%s", err.message);
    float logits[512 * 16];
    int32_t ok[3] = {1, 2, 3}, bad[3] = {1, 512, 3}, neg[1] = {-1};
    expect_eval_error("token id = vocab", glim_eval(s, bad, 3, 0, GLIM_LOGITS_LAST, logits, 512, &err),
                      GLIM_E_ARG, &err, "token id 512");
    expect_eval_error("negative token id", glim_eval(s, neg, 1, 0, GLIM_LOGITS_LAST, logits, 512, &err),
                      GLIM_E_ARG, &err, "token id -1");
    expect_eval_error("position gap", glim_eval(s, ok, 3, 2, GLIM_LOGITS_LAST, logits, 512, &err),
                      GLIM_E_ARG, &err, "non-sequential position 2");
    expect_eval_error("logits buffer too small",
                      glim_eval(s, ok, 3, 0, GLIM_LOGITS_ALL, logits, 512, &err), GLIM_E_ARG, &err,
                      "expected 1536");
    expect_eval_error("no tokens", glim_eval(s, ok, 0, 0, GLIM_LOGITS_NONE, NULL, 0, &err),
                      GLIM_E_ARG, &err, "n = 0");
    CHECK(glim_session_position(s) == 0, "failed calls moved the position to %d",
          glim_session_position(s));
    int32_t many[16] = {0};
    CHECK(glim_eval(s, many, 15, 0, GLIM_LOGITS_NONE, NULL, 0, &err) == GLIM_OK, "%s", err.message);
    expect_eval_error("context full", glim_eval(s, ok, 2, 15, GLIM_LOGITS_LAST, logits, 512, &err),
                      GLIM_E_CONTEXT_FULL, &err, "n_ctx 16");
    CHECK(glim_eval(s, ok, 1, 15, GLIM_LOGITS_LAST, logits, 512, &err) == GLIM_OK, "last slot: %s",
          err.message);
    glim_session_free(s);
    glim_session_params huge = {1 << 20, 4, 0};
    expect_eval_error("context beyond max_position",
                      glim_session_create(m, &huge, &s, &err), GLIM_E_ARG, &err, "max_position");
    glim_model_params cuda_missing = {"tpu", 1};
    glim_model *m2 = NULL;
    expect_eval_error("unknown backend", glim_model_open(good, &cuda_missing, &m2, &err),
                      GLIM_E_ARG, &err, "tpu");
    glim_model_close(m);
}

int main(void) {
    if (!mkdtemp(root)) return 1;
    snprintf(good, sizeof good, "%s/good", root);
    glim_error err = {0};
    glim_synth_spec spec = glim_synth_tiny(); /* hidden 96, q width 128, vocab 512 */
    if (glim_synth_write(good, &spec, &err) != GLIM_OK) {
        fprintf(stderr, "synth: %s\n", err.message);
        return 1;
    }
    RUN(bad_configs);
    RUN(bad_tensors);
    RUN(truncated_checkpoint);
    RUN(bad_calls);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd)) fprintf(stderr, "cleanup failed\n");
    return CHECK_DONE();
}
