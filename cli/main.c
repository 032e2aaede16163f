/* main.c: the glimmer command-line front end: dispatches to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const glim_command commands[] = {
    {"demo", "make a tiny random Muse Glimmer model and generate from it", cmd_demo},
    {"info", "what a checkpoint is and the memory a session needs", cmd_info},
    {"run", "generate from token ids, streaming ids, then tokens/s", cmd_run},
    {"logits", "write the logits of every position to a safetensors file", cmd_logits},
    {"tokenize", "print the token ids of a text as a JSON array", cmd_tokenize},
    {"detokenize", "print the text of a JSON array of token ids", cmd_detokenize},
    {"chat", "chat with the model in the Muse chat format (streaming, REPL)", cmd_chat},
    {"steer-extract", "difference-of-means steering directions -> control-vector GGUF",
     cmd_steer_extract},
    {"capture", "stream the residual stream of many prompts to a safetensors file", cmd_capture},
    {"serve", "OpenAI-compatible HTTP server (chat, tools, streaming)", cmd_serve},
    {"bench", "decode/prefill speed on the GPU against the memory-bandwidth floor", cmd_bench},
};

static void usage(FILE *f) {
    fprintf(f, "usage: glimmer COMMAND [options]   (glimmer COMMAND --help for more)\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "glimmer: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
