/* threadpool.c: fixed worker threads woken per job by a generation counter. The caller's thread
 * takes the first range itself, so a pool of N threads has N-1 workers. */
#include "cpu/threadpool.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct glim_pool {
    int n;                   /* threads including the caller */
    pthread_t *workers;      /* n - 1 */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation;     /* bumped per job */
    int pending;             /* workers still running the current job */
    int quit;
    glim_range_fn fn;
    void *ctx;
    int64_t total;
};

static void range_of(int64_t total, int parts, int i, int64_t *b, int64_t *e) {
    *b = total * i / parts;
    *e = total * (i + 1) / parts;
}

typedef struct { glim_pool *pool; int index; } worker_arg;

static void *worker_main(void *p) {
    worker_arg a = *(worker_arg *)p;
    free(p);
    glim_pool *pool = a.pool;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool->mu);
        while (pool->generation == seen && !pool->quit) pthread_cond_wait(&pool->wake, &pool->mu);
        if (pool->quit) {
            pthread_mutex_unlock(&pool->mu);
            return NULL;
        }
        seen = pool->generation;
        glim_range_fn fn = pool->fn;
        void *ctx = pool->ctx;
        int64_t total = pool->total;
        pthread_mutex_unlock(&pool->mu);
        int64_t b, e;
        range_of(total, pool->n, a.index, &b, &e);
        if (b < e) fn(ctx, b, e);
        pthread_mutex_lock(&pool->mu);
        if (--pool->pending == 0) pthread_cond_signal(&pool->done);
        pthread_mutex_unlock(&pool->mu);
    }
}

glim_pool *glim_pool_create(int n_threads) {
    if (n_threads <= 0) n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n_threads <= 0) n_threads = 1;
    glim_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->workers = calloc((size_t)n_threads, sizeof *p->workers);
    if (!p->workers) {
        free(p);
        return NULL;
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (a) *a = (worker_arg){p, i};
        if (!a || pthread_create(&p->workers[i - 1], NULL, worker_main, a)) {
            free(a);
            p->n = i; /* run with the threads we got */
            break;
        }
    }
    return p;
}

void glim_pool_free(glim_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->workers[i - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->workers);
    free(p);
}

int glim_pool_size(const glim_pool *p) { return p ? p->n : 1; }

void glim_pool_run(glim_pool *p, glim_range_fn fn, void *ctx, int64_t n) {
    if (n <= 0) return;
    if (!p || p->n == 1 || n == 1) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->total = n;
    p->pending = p->n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    int64_t b, e;
    range_of(n, p->n, 0, &b, &e);
    if (b < e) fn(ctx, b, e);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
