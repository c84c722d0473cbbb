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

/* Sampled edges of several parts merged into seed order, grouped by seed, without a sort. Part
 * p answered for the seeds at positions pos[p][0..npos[p]) of the n asked for: with counts[p],
 * seed pos[p][i] has counts[p][i] edges; with counts[p] NULL, pos[p] holds each edge's seed
 * position instead (npos[p] = its edges). Either way its edges come seed after seed, nedges[p]
 * of them, in up to three int64 arrays (a[k][p]; a2 may be NULL). Writes them to o0..o2 and each
 * edge's seed position to rows; work holds 2n + nparts int64. Returns the edges written, or
 * -1 - p when part p's answer does not fit: a position out of range, out of order or also
 * another part's, a negative count, or counts that do not add up to its edges. */
int64_t merge_runs(int64_t n, int64_t nparts, const int64_t *const *pos, const int64_t *npos,
                   const int64_t *const *counts, const int64_t *nedges, const int64_t *const *a0,
                   const int64_t *const *a1, const int64_t *const *a2, int64_t *o0, int64_t *o1, int64_t *o2,
                   int64_t *rows, int64_t *work) {
    int64_t *part_of = work, *count = work + n, *cursors = work + 2 * n, k = 0;
    for (int64_t s = 0; s < n; s++) {
        part_of[s] = -1;
        count[s] = 0;
    }
    for (int64_t p = 0; p < nparts; p++) {
        const int64_t *ps = pos[p], *cs = counts[p];
        int64_t total = 0, last = -1;
        for (int64_t i = 0; i < npos[p]; i++) {
            int64_t s = ps[i], c = cs ? cs[i] : 1;
            if (s < 0 || s >= n || c < 0 || s < last || c > nedges[p] - total) return -1 - p; /* (no sum overflows) */
            if (c == 0) continue;
            if (s != last) {
                if (part_of[s] != -1) return -1 - p;  /* another part's seed, or this part's seed twice */
                part_of[s] = p;
            }
            count[s] += c;
            total += c;
            last = s;
        }
        if (total != nedges[p]) return -1 - p;
        cursors[p] = 0;
    }
    for (int64_t s = 0; s < n; s++) {
        int64_t c = count[s];
        if (c == 0) continue;
        int64_t p = part_of[s], at = cursors[p];
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
