/* generate.c: glimmer from your own C program, start to finish: open a checkpoint and its
 * tokenizer, make a session, evaluate a text prompt, then sample and print the continuation as it
 * comes. Greedy by default, so its output equals `glimmer run -m DIR -p TEXT -n N --temp 0`.
 *
 *   cc -Iinclude examples/generate.c build/libglimmer.a $(make -s link-flags) -o generate
 *   ./generate DIR "The capital of France is" 32 [temperature]
 *
 * Every call that can fail returns a glim_status and fills a glim_error with what was wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glimmer.h"
#include "glimmer_text.h"

static int fail(const char *what, const glim_error *err) {
    fprintf(stderr, "generate: %s: %s\n", what, err->message);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: generate DIR PROMPT N [TEMPERATURE]\n");
        return 2;
    }
    const char *dir = argv[1], *prompt = argv[2];
    const int n_new = atoi(argv[3]);
    glim_error err = {0};
    glim_tokenizer *tok = NULL;
    glim_model *model = NULL;
    glim_session *session = NULL;
    glim_sampler *sampler = NULL;
    glim_tokens ids = {0};
    float *logits = NULL;
    int rc = 1;

    /* the tokenizer (DIR/tokenizer.json) and the model (the GPU when there is one) */
    if (glim_tokenizer_load(dir, &tok, &err) != GLIM_OK) return fail("tokenizer", &err);
    if (glim_model_open(dir, NULL, &model, &err) != GLIM_OK) {
        rc = fail("model", &err);
        goto out;
    }
    const glim_model_info *info = glim_model_get_info(model);

    /* the prompt's ids, BOS first */
    if (glim_tokenize(tok, prompt, strlen(prompt), GLIM_TOK_ADD_SPECIAL, &ids, &err) != GLIM_OK) {
        rc = fail("tokenize", &err);
        goto out;
    }

    /* a session with room for the prompt and the answer: every byte it needs is allocated here */
    glim_session_params sp = {.n_ctx = (int)ids.n + n_new + 1};
    glim_sampler_params samp = glim_sampler_defaults();
    samp.temperature = argc > 4 ? (float)atof(argv[4]) : 0.0f; /* 0: greedy */
    logits = malloc(sizeof(float) * (size_t)info->vocab_size);
    if (!logits || glim_session_create(model, &sp, &session, &err) != GLIM_OK ||
        glim_sampler_create(&samp, info->vocab_size, &sampler, &err) != GLIM_OK) {
        rc = fail("session", &err);
        goto out;
    }

    /* prefill: the whole prompt at once, the logits of its last token back */
    if (glim_eval(session, ids.ids, (int)ids.n, 0, GLIM_LOGITS_LAST, logits, (size_t)info->vocab_size, &err) != GLIM_OK) {
        rc = fail("prompt", &err);
        goto out;
    }

    /* decode: pick a token, print its text (whole UTF-8 characters only), feed it back */
    glim_stream_decoder *text = glim_stream_decoder_new(tok, 0);
    for (int i = 0; i < n_new; i++) {
        int32_t id = glim_sampler_sample(sampler, logits);
        int stop = id < 0;
        for (int k = 0; k < info->n_stop_ids; k++) stop |= id == info->stop_ids[k];
        if (stop) break;
        size_t len;
        const char *piece = glim_stream_decoder_push(text, id, &len);
        fwrite(piece, 1, len, stdout);
        fflush(stdout);
        glim_sampler_accept(sampler, id);
        if (i + 1 < n_new && glim_eval(session, &id, 1, glim_session_position(session), GLIM_LOGITS_LAST, logits,
                                       (size_t)info->vocab_size, &err) != GLIM_OK) {
            glim_stream_decoder_free(text);
            rc = fail("decode", &err);
            goto out;
        }
    }
    size_t len;
    const char *rest = glim_stream_decoder_flush(text, &len);
    fwrite(rest, 1, len, stdout);
    putchar('\n');
    glim_stream_decoder_free(text);
    rc = 0;
out:
    free(logits);
    glim_sampler_free(sampler);
    glim_session_free(session);
    glim_model_close(model);
    glim_tokens_free(&ids);
    glim_tokenizer_free(tok);
    return rc;
}
