/* Concatenating the segments values[indptr[r]:indptr[r+1]] of many rows r: numpy needs the
 * position of every element first (an array as big as the output) and then a gather; this
 * copies each segment directly. */
#include <stdint.h>

/* out <- the segments of `rows`, in order, for 4- or 8-byte values; returns the count copied
 * (-1: another item size). */
#define COPY_RUNS(T)                                                                          \
    for (int64_t i = 0; i < nrows; i++)                                                       \
        for (int64_t j = indptr[rows[i]], end = indptr[rows[i] + 1]; j < end; j++)            \
            ((T *)out)[k++] = ((const T *)values)[j];

int64_t gather_segments(int64_t nrows, const int64_t *rows, const int64_t *indptr, const void *values,
                        int itemsize, void *out) {
    int64_t k = 0;
    if (itemsize == 8) {
        COPY_RUNS(int64_t)
    } else if (itemsize == 4) {
        COPY_RUNS(int32_t)
    } else {
        return -1;
    }
    return k;
}

/* counts[ids[i]] += 1 for i < n: degrees from an edge stream, a chunk at a time, without a
   counts-sized temporary per chunk (numpy's bincount). Ids are in range (the caller checks). */
void add_counts(int64_t n, const int64_t *ids, int64_t *counts) {
    for (int64_t i = 0; i < n; i++) counts[ids[i]]++;
}

/* Sampled edges of several parts, each part's in the order of its own seeds, merged into seed
 * order without a sort: seed s's counts[s] edges come next from part part_of[s] (its cursor
 * moves on). Up to three int64 arrays a part (a[k][p]: array k of part p; a[2] may be NULL) go
 * to o[k], and each edge's seed position to rows. Returns the edges written, or -1 when a part
 * id is out of range. The caller checks that each part holds exactly its seeds' counts. */
int64_t merge_by_seed(int64_t n, const int64_t *part_of, const int64_t *counts, int64_t nparts,
                      const int64_t *const *a0, const int64_t *const *a1, const int64_t *const *a2,
                      int64_t *o0, int64_t *o1, int64_t *o2, int64_t *rows, int64_t *cursors) {
    int64_t k = 0;
    for (int64_t p = 0; p < nparts; p++) cursors[p] = 0;
    for (int64_t s = 0; s < n; s++) {
        int64_t c = counts[s];
        if (c == 0) continue;
        int64_t p = part_of[s];
        if (p < 0 || p >= nparts) return -1;
        int64_t at = cursors[p];
        for (int64_t j = 0; j < c; j++) {
            o0[k + j] = a0[p][at + j];
            o1[k + j] = a1[p][at + j];
            rows[k + j] = s;
        }
        if (a2 != 0)
            for (int64_t j = 0; j < c; j++) o2[k + j] = a2[p][at + j];
        cursors[p] = at + c;
        k += c;
    }
    return k;
}
