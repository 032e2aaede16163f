/* args.h: option parsing shared by the glimmer subcommands: a small cursor over argv that
 * matches flags (`-n 32`, `--temp 0.7`, `--temp=0.7`), numbers checked against a range, token-id
 * lists, and the sampling flags llama.cpp users expect. Every failure prints one message naming
 * the command, the flag and the bad value to stderr and sets `err`; the caller exits with 2
 * (a usage error). */
#ifndef GLIM_CLI_ARGS_H
#define GLIM_CLI_ARGS_H

#include <stdint.h>

#include "glimmer.h"

typedef struct glim_args {
    const char *cmd;   /* "glimmer run", for messages */
    int argc;
    char **argv;
    int i;             /* index of the argument being looked at */
    const char *flag;  /* the flag matched last, as written (for messages) */
    const char *val;   /* its value */
    int err;           /* set once an error was printed */
} glim_args;

/* argv[0] is the subcommand name. */
void args_init(glim_args *a, const char *cmd, int argc, char **argv);
/* Moves to the next argument; 0 when there are none left or after an error. */
int args_next(glim_args *a);
/* The current argument is -h or --help. */
int args_help(const glim_args *a);
/* The current argument is `name` or `alias` (alias may be NULL), with a value: the next
 * argument, or for a long flag the text after '='. A missing value is an error (returns 1 with
 * err set, so the caller's chain stops). */
int args_flag(glim_args *a, const char *name, const char *alias);
/* The current argument is the value-less switch `name`. */
int args_switch(glim_args *a, const char *name);
/* Prints "unknown option" for the current argument and sets err. */
void args_unknown(glim_args *a);
/* Prints "CMD: MESSAGE (see CMD --help)" and sets err; for checks after parsing. */
void args_error(glim_args *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The value of the flag just matched, parsed whole (no trailing text) and range-checked. */
void args_int(glim_args *a, int *out, long long min, long long max);
void args_u64(glim_args *a, uint64_t *out);
/* A finite float in [min, max]; min_open / max_open exclude the bound itself. */
void args_float(glim_args *a, float *out, double min, int min_open, double max, int max_open);

/* A comma-separated list of non-negative token ids ("200000, 1,2"): malloc'd into *ids. Ids are
 * checked against the vocabulary later (args_check_vocab), once the model is open. */
void args_tokens(glim_args *a, int32_t **ids, int *n);
/* Every id < vocab; otherwise prints which id, where (in `what`: "--tokens", "the prompt"), and
 * the vocabulary size. 0 when fine. */
int args_check_vocab(const char *cmd, const char *what, const int32_t *ids, int n, int vocab);

/* Sampling flags: --temp --top-k --top-p --min-p --repeat-penalty --repeat-last-n
 * --presence-penalty --frequency-penalty -s/--seed. Start from args_sampling_defaults(), call
 * args_sampling for each argument (1 when it was one of these flags), then args_sampling_done.
 * As in llama.cpp, --repeat-last-n 0 turns the penalties off and -1 means the whole history;
 * -s -1 (or no -s) picks a seed from the clock. */
typedef struct glim_cli_sampling {
    glim_sampler_params p;
    int seed_given;
    int penalties_off; /* --repeat-last-n 0 */
} glim_cli_sampling;
glim_cli_sampling args_sampling_defaults(void);
int args_sampling(glim_args *a, glim_cli_sampling *s);
/* Applies --repeat-last-n 0 and picks a seed when none was given. */
void args_sampling_done(glim_cli_sampling *s);
/* Lines for --help describing the sampling flags with their defaults. */
void args_sampling_help(void);

/* Model flags: -m/--model DIR, -t/--threads N, --backend cpu|cuda|auto. */
typedef struct glim_cli_model {
    const char *dir;
    const char *backend; /* NULL = auto */
    int threads;         /* 0 = one per core */
} glim_cli_model;
int args_model(glim_args *a, glim_cli_model *m);
void args_model_help(void);
/* Opens the model, printing "CMD: MESSAGE" on failure (NULL then). */
glim_model *args_open_model(const char *cmd, const glim_cli_model *m);

/* A seed from getrandom (else the clock and the process id), for runs without -s. */
uint64_t args_random_seed(void);

/* Seconds on the monotonic clock. */
double args_now(void);

#endif
