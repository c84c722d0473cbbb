/* Row kernels: a gather of whole rows, one memcpy a row (numpy's take takes 1.5-2x as long
 * for 400-byte rows), and fused sparse-optimiser row updates (Adagrad, Adam, DGL-KE's row-wise
 * Adagrad): each row's state and weight are read and written once, where the same update in
 * tensor operations takes several random-row passes and temporaries. Rows a few iterations
 * ahead are prefetched, so their cache and TLB misses overlap instead of queueing. Updated rows
 * must be distinct (the caller coalesces them), so the threads of an update never write the
 * same row.
 *
 * Arithmetic follows numpy's promotion of float32 values with Python floats: float32 state in
 * float32, each weight's step in double, rounded once when stored (no fused multiply-adds:
 * built with -ffp-contract=off). */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define AHEAD 8                 /* rows prefetched ahead (4 to 16 measured alike) */
#define LINE 64                 /* bytes per cache line */
#define MIN_ROWS_PER_THREAD 2048 /* below it a thread costs more than it saves */
#define MAX_THREADS 64
/* each update loop built for several instruction sets, the widest the CPU has chosen at load */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define WIDEST __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef WIDEST
#define WIDEST
#endif

#define PREFETCH_BYTES 2048     /* of a longer row, the hardware prefetcher finds the rest */

/* Ask the CPU to start loading a row, for reading (RW 0) or writing (RW 1). */
#define PREFETCH_ROW(row, bytes, RW)                                                              \
    for (int64_t b_ = 0; b_ < (bytes) && b_ < PREFETCH_BYTES; b_ += LINE)                        \
        __builtin_prefetch((const char *)(row) + b_, RW, 3)

/* out <- rows `rows` of a C-ordered array of `row_bytes`-byte rows, in order; rows are not
 * checked. Returns n. */
int64_t gather_rows(int64_t n, const int64_t *rows, const char *values, int64_t row_bytes, char *out) {
    for (int64_t i = 0; i < n; i++) {
        if (i + AHEAD < n) PREFETCH_ROW(values + rows[i + AHEAD] * row_bytes, row_bytes, 0);
        memcpy(out + i * row_bytes, values + rows[i] * row_bytes, (size_t)row_bytes);
    }
    return n;
}

/* out[positions[i]] <- row rows[i], for i < n: one source's rows straight to their places
 * among rows of other sources; neither index is checked. Returns n. */
int64_t gather_rows_at(int64_t n, const int64_t *rows, const int64_t *positions, const char *values,
                       int64_t row_bytes, char *out) {
    for (int64_t i = 0; i < n; i++) {
        if (i + AHEAD < n) PREFETCH_ROW(values + rows[i + AHEAD] * row_bytes, row_bytes, 0);
        memcpy(out + positions[i] * row_bytes, values + rows[i] * row_bytes, (size_t)row_bytes);
    }
    return n;
}

/* b^t for t >= 1 by squaring: ~log2(t) products, several times cheaper than pow() per row,
 * within a few ulps of it */
static inline double power(double b, int64_t t) {
    double r = 1.0;
    for (; t; t >>= 1, b *= b)
        if (t & 1) r *= b;
    return r;
}

typedef struct {
    const int64_t *rows, *state_rows; /* weight row and state row of update i */
    void *weight, *m, *v;             /* Adagrad keeps its sum in m */
    int64_t *steps;                   /* Adam's step count per state row */
    const void *grad;                 /* one row per update, contiguous */
    int64_t dim;                      /* values per row */
    double lr, beta1, beta2, eps;
} update_t;

typedef void (*range_fn)(const update_t *u, int64_t lo, int64_t hi);

typedef struct {
    range_fn fn;
    const update_t *u;
    int64_t lo, hi;
} chunk_t;

static void *run_chunk(void *p) {
    const chunk_t *c = p;
    c->fn(c->u, c->lo, c->hi);
    return NULL;
}

/* fn over updates [0, n) in up to `nthreads` contiguous chunks, this thread taking the first;
 * a thread that cannot be started leaves its chunk to this one. */
static void run_parallel(range_fn fn, const update_t *u, int64_t n, int nthreads) {
    int64_t most = n / MIN_ROWS_PER_THREAD;
    int k = nthreads < most ? nthreads : (int)most;
    if (k > MAX_THREADS) k = MAX_THREADS;
    if (k <= 1) {
        fn(u, 0, n);
        return;
    }
    pthread_t threads[MAX_THREADS];
    chunk_t chunks[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int t = 0; t < k; t++) chunks[t] = (chunk_t){fn, u, n * t / k, n * (t + 1) / k};
    for (int t = 1; t < k; t++) started[t] = pthread_create(&threads[t], NULL, run_chunk, &chunks[t]) == 0;
    run_chunk(&chunks[0]);
    for (int t = 1; t < k; t++) {
        if (started[t])
            pthread_join(threads[t], NULL);
        else
            run_chunk(&chunks[t]);
    }
}

/* One row of each update, its rows never overlapping (restrict: no aliasing checks per row). */
#define ROW_UPDATES(T, SQRT)                                                                      \
    static inline void adagrad_row_##T(T *restrict w, T *restrict sum, const T *restrict g,      \
                                       int64_t dim, double lr, double eps) {                      \
        for (int64_t d = 0; d < dim; d++) {                                                       \
            T total = sum[d] + g[d] * g[d];                                                       \
            sum[d] = total;                                                                       \
            w[d] = (T)((double)w[d] - lr * ((double)g[d] / ((double)SQRT(total) + eps)));         \
        }                                                                                         \
    }                                                                                             \
    static inline void adam_row_##T(T *restrict w, T *restrict m, T *restrict v, const T *restrict g, \
                                    int64_t dim, double keep1, double keep2, double step,         \
                                    double inv_bc2, double eps) {                                 \
        for (int64_t d = 0; d < dim; d++) {                                                       \
            double md = m[d] + keep1 * (T)(g[d] - m[d]);                                          \
            double vd = v[d] + keep2 * (T)(g[d] * g[d] - v[d]);                                   \
            m[d] = (T)md;                                                                         \
            v[d] = (T)vd;                                                                         \
            w[d] = (T)((double)w[d] - step * (md / (sqrt(vd * inv_bc2) + eps)));                  \
        }                                                                                         \
    }                                                                                             \
    static inline double row_adagrad_row_##T(T *restrict w, double s, const T *restrict g,       \
                                             int64_t dim, double lr) {                            \
        double part[8] = {0}, total = 0.0; /* 8 sums: no chain of dependent additions */          \
        int64_t d = 0;                                                                            \
        for (; d + 8 <= dim; d += 8)                                                              \
            for (int k = 0; k < 8; k++) part[k] += g[d + k] * g[d + k];                           \
        for (; d < dim; d++) total += g[d] * g[d];                                                \
        for (int k = 0; k < 8; k++) total += part[k];                                             \
        s += total / (double)dim;                                                                 \
        const double scale = lr / (sqrt(s) + 1e-10);                                              \
        for (d = 0; d < dim; d++) w[d] = (T)((double)w[d] - scale * g[d]);                        \
        return s;                                                                                 \
    }
ROW_UPDATES(float, sqrtf)
ROW_UPDATES(double, sqrt)

/* Updates [lo, hi) of each kind, prefetching the rows AHEAD updates on. */
#define RANGE_UPDATES(T)                                                                          \
    WIDEST static void adagrad_##T(const update_t *u, int64_t lo, int64_t hi) {                  \
        T *w = u->weight, *sum = u->m;                                                            \
        const int64_t dim = u->dim, bytes = dim * (int64_t)sizeof(T);                             \
        for (int64_t i = lo; i < hi; i++) {                                                       \
            if (i + AHEAD < hi) {                                                                 \
                PREFETCH_ROW(w + u->rows[i + AHEAD] * dim, bytes, 1);                             \
                PREFETCH_ROW(sum + u->state_rows[i + AHEAD] * dim, bytes, 1);                     \
            }                                                                                     \
            adagrad_row_##T(w + u->rows[i] * dim, sum + u->state_rows[i] * dim,                   \
                            (const T *)u->grad + i * dim, dim, u->lr, u->eps);                    \
        }                                                                                         \
    }                                                                                             \
    WIDEST static void adam_##T(const update_t *u, int64_t lo, int64_t hi) {                     \
        T *w = u->weight, *m = u->m, *v = u->v;                                                   \
        const int64_t dim = u->dim, bytes = dim * (int64_t)sizeof(T);                             \
        for (int64_t i = lo; i < hi; i++) {                                                       \
            if (i + AHEAD < hi) {                                                                 \
                PREFETCH_ROW(w + u->rows[i + AHEAD] * dim, bytes, 1);                             \
                PREFETCH_ROW(m + u->state_rows[i + AHEAD] * dim, bytes, 1);                       \
                PREFETCH_ROW(v + u->state_rows[i + AHEAD] * dim, bytes, 1);                       \
            }                                                                                     \
            const int64_t s = u->state_rows[i], t = ++u->steps[s];                                \
            adam_row_##T(w + u->rows[i] * dim, m + s * dim, v + s * dim, (const T *)u->grad + i * dim, dim, \
                         1.0 - u->beta1, 1.0 - u->beta2, u->lr / (1.0 - power(u->beta1, t)),      \
                         1.0 / (1.0 - power(u->beta2, t)), u->eps);                               \
        }                                                                                         \
    }                                                                                             \
    WIDEST static void row_adagrad_##T(const update_t *u, int64_t lo, int64_t hi) {              \
        T *w = u->weight;                                                                         \
        float *state = u->m;                                                                      \
        const int64_t dim = u->dim, bytes = dim * (int64_t)sizeof(T);                             \
        for (int64_t i = lo; i < hi; i++) {                                                       \
            if (i + AHEAD < hi) PREFETCH_ROW(w + u->rows[i + AHEAD] * dim, bytes, 1);             \
            const int64_t r = u->rows[i];                                                         \
            state[r] = (float)row_adagrad_row_##T(w + r * dim, state[r], (const T *)u->grad + i * dim, dim, \
                                                  u->lr);                                         \
        }                                                                                         \
    }
RANGE_UPDATES(float)
RANGE_UPDATES(double)

/* The entry points: n updates of `dim`-value rows of 4- or 8-byte floats (`itemsize`), on up
 * to `nthreads` threads; each returns n, or -1 for another item size. */
int64_t adagrad_rows(int64_t n, const int64_t *rows, const int64_t *state_rows, void *weight, void *sum,
                     const void *grad, int64_t dim, int itemsize, double lr, double eps, int nthreads) {
    if (itemsize != 4 && itemsize != 8) return -1;
    update_t u = {.rows = rows, .state_rows = state_rows, .weight = weight, .m = sum, .grad = grad, .dim = dim,
                  .lr = lr, .eps = eps};
    run_parallel(itemsize == 4 ? adagrad_float : adagrad_double, &u, n, nthreads);
    return n;
}

int64_t adam_rows(int64_t n, const int64_t *rows, const int64_t *state_rows, void *weight, void *m, void *v,
                  int64_t *steps, const void *grad, int64_t dim, int itemsize, double lr, double beta1,
                  double beta2, double eps, int nthreads) {
    if (itemsize != 4 && itemsize != 8) return -1;
    update_t u = {.rows = rows, .state_rows = state_rows, .weight = weight, .m = m, .v = v, .steps = steps,
                  .grad = grad, .dim = dim, .lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps};
    run_parallel(itemsize == 4 ? adam_float : adam_double, &u, n, nthreads);
    return n;
}

int64_t row_adagrad_rows(int64_t n, const int64_t *rows, void *weight, float *state, const void *grad,
                         int64_t dim, int itemsize, double lr) {
    if (itemsize != 4 && itemsize != 8) return -1;
    update_t u = {.rows = rows, .weight = weight, .m = state, .grad = grad, .dim = dim, .lr = lr};
    (itemsize == 4 ? row_adagrad_float : row_adagrad_double)(&u, 0, n);
    return n;
}
