/* Concatenating the segments values[indptr[r]:indptr[r+1]] of many rows r: numpy needs the
 * position of every element first (an array as big as the output) and then a gather; this
 * copies each segment directly. */
#include <stdint.h>

/* out <- the segments of `rows`, in order, for 4- or 8-byte values; returns the count copied
 * (-1: another item size). */
int64_t gather_segments(int64_t nrows, const int64_t *rows, const int64_t *indptr, const void *values,
                        int itemsize, void *out) {
    int64_t k = 0;
    if (itemsize == 8) {
        const int64_t *v = (const int64_t *)values;
        int64_t *o = (int64_t *)out;
        for (int64_t i = 0; i < nrows; i++)
            for (int64_t j = indptr[rows[i]], end = indptr[rows[i] + 1]; j < end; j++) o[k++] = v[j];
    } else if (itemsize == 4) {
        const int32_t *v = (const int32_t *)values;
        int32_t *o = (int32_t *)out;
        for (int64_t i = 0; i < nrows; i++)
            for (int64_t j = indptr[rows[i]], end = indptr[rows[i] + 1]; j < end; j++) o[k++] = v[j];
    } else {
        return -1;
    }
    return k;
}
