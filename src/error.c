/* error.c: status names and message formatting for glim_error. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *glim_status_name(glim_status s) {
    switch (s) {
    case GLIM_OK: return "ok";
    case GLIM_E_IO: return "i/o error";
    case GLIM_E_FORMAT: return "malformed file";
    case GLIM_E_MODEL: return "invalid model";
    case GLIM_E_ARG: return "invalid argument";
    case GLIM_E_CONTEXT_FULL: return "context full";
    case GLIM_E_NOMEM: return "out of memory";
    case GLIM_E_BACKEND: return "backend error";
    case GLIM_E_UNSUPPORTED: return "unsupported";
    }
    return "unknown status";
}

glim_status glim_fail(glim_error *err, glim_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

glim_status glim_fail_context(glim_error *err, const char *fmt, ...) {
    if (!err) return GLIM_E_ARG;
    char prefix[256], old[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    /* the prefix goes first; the old message keeps whatever room is left */
    int n = snprintf(err->message, sizeof err->message, "%s: ", prefix);
    if (n > 0 && (size_t)n < sizeof err->message)
        snprintf(err->message + n, sizeof err->message - (size_t)n, "%.*s",
                 (int)(sizeof err->message - (size_t)n - 1), old);
    return err->code;
}
