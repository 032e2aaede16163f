/* commands.h: the glimmer subcommands; each lives in its own cli/cmd_*.c file. */
#ifndef GLIM_CLI_COMMANDS_H
#define GLIM_CLI_COMMANDS_H

typedef struct glim_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
} glim_command;

int cmd_demo(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_steer_extract(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
