/* error.h: filling a glim_error. Every library failure goes through glim_fail so the message
 * names the thing that was wrong (and, where there is one, the expected and the actual value). */
#ifndef GLIM_ERROR_H
#define GLIM_ERROR_H

#include "glimmer.h"

#if defined(__GNUC__)
#define GLIM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GLIM_PRINTF(a, b)
#endif

/* Sets err (if not NULL) and returns code, so callers can `return glim_fail(...)`. */
glim_status glim_fail(glim_error *err, glim_status code, const char *fmt, ...) GLIM_PRINTF(3, 4);

/* Prefixes an existing message with context ("loading X: "), keeping its code. */
glim_status glim_fail_context(glim_error *err, const char *fmt, ...) GLIM_PRINTF(2, 3);

#endif
