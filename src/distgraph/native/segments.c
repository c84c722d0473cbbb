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
