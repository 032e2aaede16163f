/* cmd_tokenize.c: `glimmer tokenize` (text -> JSON array of ids) and `glimmer detokenize`
 * (JSON array of ids -> text), with a model directory or a tokenizer.json. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "glimmer_text.h"

/* Reads all of stdin into a malloc'd buffer. */
static char *read_stdin(size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) break;
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (got == 0) {
            *len = n;
            return buf;
        }
    }
    free(buf);
    return NULL;
}

static void tokenize_usage(FILE *f) {
    fprintf(f,
            "usage: glimmer tokenize -m DIR_OR_TOKENIZER_JSON [--no-bos] [--special] [--text T]\n"
            "Prints the token ids of the text (--text, else all of stdin) as a JSON array.\n"
            "  -m PATH      model directory (holding tokenizer.json) or a tokenizer.json file\n"
            "  --no-bos     do not run the post-processor (no <|begin_of_text|> in front)\n"
            "  --special    special tokens written in the text (e.g. <|eot|>) become their ids;\n"
            "               without it they are tokenized as ordinary text\n"
            "  --text T     the text to tokenize\n");
}

static void detokenize_usage(FILE *f) {
    fprintf(f,
            "usage: glimmer detokenize -m DIR_OR_TOKENIZER_JSON [--ids JSON] [--skip-special]\n"
            "Prints the text of a JSON array of token ids (--ids, else read from stdin).\n"
            "  -m PATH          model directory (holding tokenizer.json) or a tokenizer.json file\n"
            "  --ids JSON       the ids, e.g. \"[200000, 13225]\"\n"
            "  --skip-special   leave special tokens out\n");
}

static glim_tokenizer *load(const char *path) {
    glim_tokenizer *tok;
    glim_error err;
    if (glim_tokenizer_load(path, &tok, &err) != GLIM_OK) {
        fprintf(stderr, "glimmer: %s\n", err.message);
        return NULL;
    }
    return tok;
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL;
    unsigned flags = GLIM_TOK_ADD_SPECIAL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            tokenize_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            model = argv[++i];
        } else if (!strcmp(argv[i], "--text") && i + 1 < argc) {
            text = argv[++i];
        } else if (!strcmp(argv[i], "--no-bos")) {
            flags &= ~(unsigned)GLIM_TOK_ADD_SPECIAL;
        } else if (!strcmp(argv[i], "--special")) {
            flags |= GLIM_TOK_PARSE_SPECIAL;
        } else {
            fprintf(stderr, "glimmer tokenize: unknown or incomplete option '%s'\n", argv[i]);
            tokenize_usage(stderr);
            return 2;
        }
    }
    if (!model) {
        fprintf(stderr, "glimmer tokenize: -m is required\n");
        tokenize_usage(stderr);
        return 2;
    }
    glim_tokenizer *tok = load(model);
    if (!tok) return 1;
    size_t len;
    char *owned = NULL;
    if (text) {
        len = strlen(text);
    } else {
        owned = read_stdin(&len);
        if (!owned) {
            fprintf(stderr, "glimmer tokenize: cannot read stdin\n");
            glim_tokenizer_free(tok);
            return 1;
        }
        text = owned;
    }
    glim_tokens ids = {0};
    glim_error err;
    int rc = 0;
    if (glim_tokenize(tok, text, len, flags, &ids, &err) != GLIM_OK) {
        fprintf(stderr, "glimmer: %s\n", err.message);
        rc = 1;
    } else {
        putchar('[');
        for (size_t i = 0; i < ids.n; i++) printf(i ? ", %d" : "%d", ids.ids[i]);
        puts("]");
    }
    glim_tokens_free(&ids);
    free(owned);
    glim_tokenizer_free(tok);
    return rc;
}

int cmd_detokenize(int argc, char **argv) {
    const char *model = NULL, *ids_text = NULL;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            detokenize_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            model = argv[++i];
        } else if (!strcmp(argv[i], "--ids") && i + 1 < argc) {
            ids_text = argv[++i];
        } else if (!strcmp(argv[i], "--skip-special")) {
            flags |= GLIM_DETOK_SKIP_SPECIAL;
        } else {
            fprintf(stderr, "glimmer detokenize: unknown or incomplete option '%s'\n", argv[i]);
            detokenize_usage(stderr);
            return 2;
        }
    }
    if (!model) {
        fprintf(stderr, "glimmer detokenize: -m is required\n");
        detokenize_usage(stderr);
        return 2;
    }
    char *owned = NULL;
    size_t len = 0;
    if (!ids_text) {
        if (!(owned = read_stdin(&len))) {
            fprintf(stderr, "glimmer detokenize: cannot read stdin\n");
            return 1;
        }
        ids_text = owned;
    } else {
        len = strlen(ids_text);
    }
    json_error_t jerr;
    json_t *arr = json_loadb(ids_text, len, 0, &jerr);
    free(owned);
    if (!json_is_array(arr)) {
        fprintf(stderr, "glimmer detokenize: expected a JSON array of ids: %s\n",
                arr ? "got another JSON value" : jerr.text);
        json_decref(arr);
        return 2;
    }
    size_t n = json_array_size(arr);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    for (size_t i = 0; ids && i < n; i++) {
        json_t *v = json_array_get(arr, i);
        if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN || json_integer_value(v) > INT32_MAX) {
            fprintf(stderr, "glimmer detokenize: element %zu is not an integer id\n", i);
            free(ids);
            json_decref(arr);
            return 2;
        }
        ids[i] = (int32_t)json_integer_value(v);
    }
    json_decref(arr);
    glim_tokenizer *tok = ids ? load(model) : NULL;
    if (!tok) {
        free(ids);
        return 1;
    }
    char *out;
    glim_error err;
    int rc = 0;
    if (glim_detokenize(tok, ids, n, flags, &out, &len, &err) != GLIM_OK) {
        fprintf(stderr, "glimmer: %s\n", err.message);
        rc = 1;
    } else {
        fwrite(out, 1, len, stdout);
        free(out);
    }
    free(ids);
    glim_tokenizer_free(tok);
    return rc;
}
