/* check.h: the test harness. A test program runs named cases with RUN(case); a case passes
 * when none of its CHECKs failed, and may SKIP with a reason. Each case prints one line
 * (PASS / FAIL / SKIP name) that tests/run.sh counts; a failed CHECK prints where and why.
 * CHECK_ONLY=name1,name2 in the environment runs only those cases (a quick look at one kernel
 * on the GPU machine); the others print nothing and count nothing. */
#ifndef GLIM_CHECK_H
#define GLIM_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_case_failures, check_case_skipped;
static int check_total_pass, check_total_fail, check_total_skip;
static char check_skip_reason[256];

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            check_case_failures++;                                                \
            fprintf(stderr, "  check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
        }                                                                         \
    } while (0)

/* Fails the case and returns from it (for checks later lines depend on). */
#define REQUIRE(cond, ...)                                                        \
    do {                                                                          \
        if (!(cond)) {                                                            \
            CHECK(cond, __VA_ARGS__);                                             \
            return;                                                               \
        }                                                                         \
    } while (0)

#define SKIP(...)                                                                 \
    do {                                                                          \
        check_case_skipped = 1;                                                   \
        snprintf(check_skip_reason, sizeof check_skip_reason, __VA_ARGS__);       \
        return;                                                                   \
    } while (0)

/* Whether case `name` runs under CHECK_ONLY (a comma-separated list; unset: every case). */
static int check_selected(const char *name) {
    const char *only = getenv("CHECK_ONLY");
    if (!only || !*only) return 1;
    const size_t n = strlen(name);
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += n)
        if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

#define RUN(fn)                                                                   \
    do {                                                                          \
        if (!check_selected(#fn)) break;                                          \
        check_case_failures = 0;                                                  \
        check_case_skipped = 0;                                                   \
        fn();                                                                     \
        if (check_case_failures) {                                                \
            check_total_fail++;                                                   \
            printf("FAIL %s\n", #fn);                                             \
        } else if (check_case_skipped) {                                          \
            check_total_skip++;                                                   \
            printf("SKIP %s: %s\n", #fn, check_skip_reason);                      \
        } else {                                                                  \
            check_total_pass++;                                                   \
            printf("PASS %s\n", #fn);                                             \
        }                                                                         \
        fflush(stdout);                                                           \
    } while (0)

#define CHECK_DONE() (check_total_fail ? 1 : 0)

#endif
