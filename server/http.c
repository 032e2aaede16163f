/* http.c: the HTTP side of `glimmer serve`, on libmicrohttpd with a thread per connection (a
 * request's thread runs its generation; a streamed one generates as the socket drains, one
 * token per read of the response, so a client that goes away stops its generation and frees its
 * slot). Routes: GET /health, GET /v1/models, POST /v1/chat/completions, POST /v1/completions
 * (also without the /v1 prefix). Bodies are capped (413), the API key checked (401), unknown
 * paths 404, wrong methods 405; every error is an OpenAI error object. SIGINT / SIGTERM end the
 * generations in progress and shut down cleanly. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"

#if MHD_VERSION < 0x00097002
typedef int MHD_Result_t;
#else
typedef enum MHD_Result MHD_Result_t;
#endif

typedef struct conn {
    char *body;
    size_t n, cap;
    int too_large;
} conn;

/* A streamed generation: SSE bytes waiting to go out, and where the stream is. */
typedef struct stream {
    srv_engine *e;
    srv_gen *g;
    srv_request *r; /* owned: freed after the generation */
    srv_reply rp;
    int include_usage, started, finished;
    char *out;
    size_t n, at, cap;
    char route[32];
    double t0;
} stream;

/* --cors ORIGIN: set once before the daemon starts, read-only after. */
static const char *cors_origin;

/* Queues a response with the headers every response carries (CORS when asked for). */
static MHD_Result_t queue(struct MHD_Connection *c, int status, struct MHD_Response *r) {
    if (cors_origin) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", cors_origin);
        MHD_add_response_header(r, "Vary", "Origin");
    }
    MHD_Result_t ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static MHD_Result_t send_json(struct MHD_Connection *c, int status, json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}";
        s = strdup(oom);
        status = 500;
        if (!s) return MHD_NO;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (status == 405) MHD_add_response_header(r, "Allow", "GET, POST, OPTIONS");
    return queue(c, status, r);
}

static MHD_Result_t send_error(struct MHD_Connection *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static MHD_Result_t send_error(struct MHD_Connection *c, int status, const char *fmt, ...) {
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return send_json(c, status, srv_error(status, msg));
}

static void log_request(const srv_engine *e, const char *route, int status, const srv_usage *u, const char *finish,
                        double seconds) {
    if (srv_engine_config(e)->quiet) return;
    if (!u) {
        fprintf(stderr, "glimmer serve: %s %d (%.3f s)\n", route, status, seconds);
        return;
    }
    fprintf(stderr, "glimmer serve: %s %d: prompt %d tokens (%d cached) in %.2f s, %d generated in %.2f s "
                    "(%.1f tokens/s), finish %s\n", route, status, u->prompt_tokens, u->cached_tokens,
            u->prompt_seconds, u->completion_tokens, u->gen_seconds,
            u->gen_seconds > 0 ? u->completion_tokens / u->gen_seconds : 0.0, finish ? finish : "-");
}

/* ---- streaming ------------------------------------------------------------------------------- */

static int out_add(stream *s, const char *p, size_t n) {
    if (s->n + n > s->cap) {
        size_t cap = (s->n + n) * 2 + 256;
        char *b = realloc(s->out, cap);
        if (!b) return -1;
        s->out = b, s->cap = cap;
    }
    memcpy(s->out + s->n, p, n);
    s->n += n;
    return 0;
}

static int out_event(stream *s, json_t *j) {
    char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    int bad = !t || out_add(s, "data: ", 6) || out_add(s, t, strlen(t)) || out_add(s, "\n\n", 2);
    free(t);
    return bad ? -1 : 0;
}

/* Produces the next SSE events: the role chunk first, then one token's text per call, and at the
 * end the finish chunk, the usage chunk if asked for, and [DONE]. A failure mid-stream becomes an
 * error event (the status line went out long ago). */
static void stream_more(stream *s) {
    if (!s->started) { /* a chat stream opens with the assistant's role */
        s->started = 1;
        if (s->rp.kind == SRV_CHAT) {
            if (out_event(s, srv_chunk(&s->rp, NULL, 1))) s->finished = -1;
            return;
        }
    }
    srv_event ev;
    glim_error err = {0};
    int st = srv_gen_step(s->g, &ev, &err);
    int bad = 0;
    if (st) {
        bad = out_event(s, srv_error(st, err.message));
        s->finished = 1;
        log_request(s->e, s->route, st, srv_gen_usage(s->g), "error mid-stream", srv_now() - s->t0);
    } else if (!ev.done) {
        if (ev.content_len || ev.reasoning_len || ev.n_lps) bad = out_event(s, srv_chunk(&s->rp, &ev, 0));
    } else {
        if (ev.content_len || ev.reasoning_len || ev.n_lps) {
            srv_event text = ev;
            text.done = 0, text.n_calls = 0;
            bad = out_event(s, srv_chunk(&s->rp, &text, 0));
        }
        ev.content_len = ev.reasoning_len = 0, ev.n_lps = 0;
        bad = bad || out_event(s, srv_chunk(&s->rp, &ev, 0));
        if (s->include_usage) bad = bad || out_event(s, srv_usage_chunk(&s->rp, srv_gen_usage(s->g)));
        s->finished = 1;
        log_request(s->e, s->route, 200, srv_gen_usage(s->g), ev.finish, srv_now() - s->t0);
    }
    if (s->finished) bad = bad || out_add(s, "data: [DONE]\n\n", 14);
    if (bad) s->finished = -1; /* out of memory: end the stream where it is */
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    stream *s = cls;
    while (s->at == s->n && !s->finished) {
        s->n = s->at = 0;
        stream_more(s);
    }
    if (s->at == s->n || s->finished < 0) return MHD_CONTENT_READER_END_OF_STREAM;
    size_t k = s->n - s->at < max ? s->n - s->at : max;
    memcpy(buf, s->out + s->at, k);
    s->at += k;
    return (ssize_t)k;
}

static void stream_free(void *cls) {
    stream *s = cls;
    if (!s->finished) log_request(s->e, s->route, 499, srv_gen_usage(s->g), "client gone", srv_now() - s->t0);
    srv_gen_free(s->g); /* the slot is free again, even if the client left mid-stream */
    srv_request_free(s->r);
    free(s->r);
    free(s->out);
    free(s);
}

/* ---- generation routes ----------------------------------------------------------------------- */

/* Whether the client of a non-streamed request has closed its end (a client that timed out
 * would otherwise keep a slot generating to the end of its max_tokens for nobody). */
static int client_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) return 1;
    char b;
    return (p.revents & POLLIN) && recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static MHD_Result_t generate(srv_engine *e, struct MHD_Connection *c, int kind, const char *route, conn *cn) {
    const double t0 = srv_now();
    /* on the heap: a stream keeps it (the generation points at its stop strings and tools) */
    srv_request *r = calloc(1, sizeof *r);
    if (!r) return send_error(c, 500, "out of memory");
    glim_error err = {0};
    int st = srv_request_parse(r, kind, cn->body ? cn->body : "", cn->n, srv_engine_config(e), &err);
    srv_gen *g = NULL;
    if (!st) st = srv_gen_start(e, r, &g, &err);
    if (st) {
        srv_request_free(r);
        free(r);
        log_request(e, route, st, NULL, NULL, srv_now() - t0);
        return send_error(c, st, "%s", err.message);
    }
    srv_reply rp;
    srv_reply_init(&rp, kind, srv_engine_config(e)->model_name);
    rp.tok = srv_engine_tokenizer(e), rp.logprobs = r->logprobs >= 0, rp.ids_as_tokens = r->ids_as_tokens;
    if (r->stream) {
        stream *s = calloc(1, sizeof *s);
        struct MHD_Response *resp =
            s ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free) : NULL;
        if (!resp) {
            free(s);
            srv_gen_free(g);
            srv_request_free(r);
            free(r);
            return send_error(c, 500, "out of memory");
        }
        *s = (stream){.e = e, .g = g, .r = r, .rp = rp, .include_usage = r->include_usage, .t0 = t0};
        snprintf(s->route, sizeof s->route, "%s", route);
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        return queue(c, 200, resp);
    }
    /* the whole response: the text of every step gathered (after the prompt's, with echo) */
    char *text[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    if (r->echo && !(text[0] = srv_gen_echo(g, &len[0]))) st = 500, snprintf(err.message, sizeof err.message, "out of memory");
    srv_event ev;
    int gone = 0;
    for (unsigned k = 0; !st; k++) {
        if (k % 8 == 7 && (gone = client_gone(c))) break;
        if ((st = srv_gen_step(g, &ev, &err))) break;
        const char *piece[2] = {ev.content, ev.reasoning};
        size_t pn[2] = {ev.content_len, ev.reasoning_len};
        for (int k = 0; k < 2 && !st; k++) {
            if (!pn[k]) continue;
            char *b = realloc(text[k], len[k] + pn[k] + 1);
            if (!b) st = 500, snprintf(err.message, sizeof err.message, "out of memory");
            else memcpy(b + len[k], piece[k], pn[k]), text[k] = b, len[k] += pn[k], b[len[k]] = 0;
        }
        if (st || ev.done) break;
    }
    MHD_Result_t ok;
    if (gone) {
        log_request(e, route, 499, srv_gen_usage(g), "client gone", srv_now() - t0);
        ok = send_error(c, 400, "the client closed the connection"); /* goes nowhere; MHD closes it */
    } else if (st) {
        log_request(e, route, st, srv_gen_usage(g), NULL, srv_now() - t0);
        ok = send_error(c, st, "%s", err.message);
    } else {
        log_request(e, route, 200, srv_gen_usage(g), ev.finish, srv_now() - t0);
        json_t *resp = srv_response(&rp, text[0], len[0], text[1], len[1], &ev, srv_gen_usage(g));
        int n_lp;
        const srv_logprob *lp = srv_gen_logprobs(g, &n_lp);
        if (resp && rp.logprobs)
            json_object_set_new(json_array_get(json_object_get(resp, "choices"), 0), "logprobs", srv_logprobs(&rp, lp, n_lp, 0));
        ok = send_json(c, 200, resp);
    }
    free(text[0]);
    free(text[1]);
    srv_gen_free(g);
    srv_request_free(r);
    free(r);
    return ok;
}

/* ---- the access handler ---------------------------------------------------------------------- */

typedef enum route { R_NONE, R_HEALTH, R_MODELS, R_MODEL, R_CHAT, R_COMPLETIONS } route;

static route route_of(const char *url, const char *model) {
    if (!strcmp(url, "/health")) return R_HEALTH;
    if (!strncmp(url, "/v1/", 4)) url += 3;
    if (!strcmp(url, "/models")) return R_MODELS;
    if (!strncmp(url, "/models/", 8)) return R_MODEL;
    if (!strcmp(url, "/chat/completions")) return R_CHAT;
    if (!strcmp(url, "/completions")) return R_COMPLETIONS;
    return R_NONE;
}

static int authorized(const srv_config *cfg, struct MHD_Connection *c) {
    if (!cfg->api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && !strncmp(h, "Bearer ", 7) && !strcmp(h + 7, cfg->api_key);
}

static MHD_Result_t handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **ctx) {
    srv_engine *e = cls;
    const srv_config *cfg = srv_engine_config(e);
    const route rt = route_of(url, cfg->model_name);
    const int post = !strcmp(method, "POST"), get = !strcmp(method, "GET");
    conn *cn = *ctx;
    if (!cn) { /* headers only: refuse early what needs no body */
        if (!(cn = calloc(1, sizeof *cn))) return MHD_NO;
        *ctx = cn;
        if (rt == R_NONE) return send_error(c, 404, "no route %s %s (try POST /v1/chat/completions)", method, url);
        if (cors_origin && !strcmp(method, "OPTIONS")) { /* a browser's preflight: no key needed */
            struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
            if (!r) return MHD_NO;
            MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
            MHD_add_response_header(r, "Access-Control-Max-Age", "600");
            return queue(c, 204, r);
        }
        const int wants_post = rt == R_CHAT || rt == R_COMPLETIONS;
        if (wants_post ? !post : !get)
            return send_error(c, 405, "%s takes %s, not %s", url, wants_post ? "POST" : "GET", method);
        if (rt != R_HEALTH && !authorized(cfg, c))
            return send_error(c, 401, "a valid API key is required: 'Authorization: Bearer KEY'");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > cfg->max_body)
            return send_error(c, 413, "the request body is %s bytes; at most %zu are accepted (--max-body)", cl,
                              cfg->max_body);
        return MHD_YES;
    }
    if (*upload_size) { /* a piece of the body */
        if (cn->n + *upload_size > cfg->max_body) {
            cn->too_large = 1;
        } else if (!cn->too_large) {
            if (cn->n + *upload_size + 1 > cn->cap) {
                size_t cap = (cn->n + *upload_size + 1) * 2;
                char *b = realloc(cn->body, cap < cfg->max_body + 1 ? cap : cfg->max_body + 1);
                if (!b) return MHD_NO;
                cn->body = b, cn->cap = cap < cfg->max_body + 1 ? cap : cfg->max_body + 1;
            }
            memcpy(cn->body + cn->n, upload, *upload_size);
            cn->n += *upload_size;
            cn->body[cn->n] = 0;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (cn->too_large) return send_error(c, 413, "the request body is over %zu bytes (--max-body)", cfg->max_body);
    switch (rt) {
    case R_HEALTH: return send_json(c, 200, json_pack("{s:s}", "status", "ok"));
    case R_MODELS: return send_json(c, 200, srv_models(cfg));
    case R_MODEL: {
        const char *id = strrchr(url, '/') + 1;
        if (strcmp(id, cfg->model_name)) return send_error(c, 404, "no model '%s' here: this server has '%s'", id, cfg->model_name);
        json_t *list = srv_models(cfg), *m = json_incref(json_array_get(json_object_get(list, "data"), 0));
        json_decref(list);
        return send_json(c, 200, m);
    }
    case R_CHAT: return generate(e, c, SRV_CHAT, "POST /v1/chat/completions", cn);
    case R_COMPLETIONS: return generate(e, c, SRV_COMPLETION, "POST /v1/completions", cn);
    default: return send_error(c, 404, "no route %s", url);
    }
}

static void done(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode why) {
    conn *cn = *ctx;
    if (cn) free(cn->body);
    free(cn);
    *ctx = NULL;
}

int srv_http_run(srv_engine *e) {
    const srv_config *cfg = srv_engine_config(e);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->port);
    int gai = getaddrinfo(cfg->host, port, &hints, &ai);
    if (gai) {
        fprintf(stderr, "glimmer serve: cannot use host '%s': %s\n", cfg->host, gai_strerror(gai));
        return 1;
    }
    cors_origin = cfg->cors;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, handle, e, MHD_OPTION_SOCK_ADDR,
                                            ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
                                            MHD_OPTION_CONNECTION_TIMEOUT, 300u, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) {
        fprintf(stderr, "glimmer serve: cannot listen on %s port %d (in use, or not allowed)\n", cfg->host, cfg->port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    int bound = info ? info->port : cfg->port;
    const int v6 = strchr(cfg->host, ':') != NULL;
    fprintf(stderr, "glimmer serve: listening on http://%s%s%s:%d (model %s, %d slot%s of %d tokens)\n", v6 ? "[" : "",
            cfg->host, v6 ? "]" : "", bound, cfg->model_name, cfg->parallel, cfg->parallel == 1 ? "" : "s", cfg->n_ctx);
    /* the signals were blocked in every thread before any was made (cmd_serve): wait for one here */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "glimmer serve: %s: finishing the requests in progress and stopping\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv_engine_stop(e);
    MHD_stop_daemon(d);
    return 0;
}
