/* The undirected simple-graph CSR METIS needs (both directions, no self-loops, no repeats,
 * neighbours ascending), from directed int64 edge lists, with 32-bit output.
 *
 * Each entry (row, col) is first scattered into its block of 2**shift consecutive rows as one
 * uint32 key, (row % 2**shift) << cbits | col; a block (tens of thousands of keys) then sorts in
 * cache: a counting sort on the key's top bits, then an insertion sort inside each (small)
 * bucket, qsort for a rare big one. The caller splits the edges, and then the blocks, between
 * two threads; these functions hold no state and take no locks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIGIT 12    /* top-bit buckets per block: 4096 (a 16 KB histogram on the stack, in L1) */
#define INSERTION_MAX 32

/* Adds to counts[b] the entries both directions of each edge put in block b. Returns 0, or
 * 1 + the index of the first edge with an id outside [0, n) (nothing counted past it). */
int64_t sym_count(int64_t m, const int64_t *src, const int64_t *dst, int64_t n, int shift, int64_t *counts) {
    for (int64_t e = 0; e < m; e++) {
        int64_t u = src[e], v = dst[e];
        if ((uint64_t)u >= (uint64_t)n || (uint64_t)v >= (uint64_t)n) return e + 1;
        if (u != v) { counts[u >> shift]++; counts[v >> shift]++; }
    }
    return 0;
}

/* Writes both directions of each edge as keys to out[cursor[block]++]. */
void sym_scatter(int64_t m, const int64_t *src, const int64_t *dst, int shift, int cbits,
                 int64_t *cursor, uint32_t *out) {
    const uint32_t low = (1u << shift) - 1;
    for (int64_t e = 0; e < m; e++) {
        int64_t u = src[e], v = dst[e];
        if (u != v) {
            out[cursor[u >> shift]++] = ((uint32_t)(u & low) << cbits) | (uint32_t)v;
            out[cursor[v >> shift]++] = ((uint32_t)(v & low) << cbits) | (uint32_t)u;
        }
    }
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Sorts the keys a[0:len) (each below 2**bits) into tmp and returns tmp. */
static uint32_t *sort_block(const uint32_t *a, uint32_t *tmp, int64_t len, int bits, uint32_t *hist) {
    int digit = bits < MAX_DIGIT ? bits : MAX_DIGIT, sh = bits - digit;
    uint32_t nbuckets = 1u << digit, sum = 0;
    memset(hist, 0, sizeof(uint32_t) * nbuckets);
    for (int64_t k = 0; k < len; k++) hist[a[k] >> sh]++;
    for (uint32_t d = 0; d < nbuckets; d++) { uint32_t c = hist[d]; hist[d] = sum; sum += c; }
    for (int64_t k = 0; k < len; k++) { uint32_t x = a[k]; tmp[hist[x >> sh]++] = x; }
    for (uint32_t d = 0, beg = 0; d < nbuckets; beg = hist[d++]) {  /* hist[d]: bucket d's end */
        uint32_t *b = tmp + beg, cnt = hist[d] - beg;
        if (cnt > INSERTION_MAX) { qsort(b, cnt, sizeof(uint32_t), cmp_u32); continue; }
        for (uint32_t i = 1; i < cnt; i++) {
            uint32_t x = b[i], j = i;
            for (; j > 0 && b[j - 1] > x; j--) b[j] = b[j - 1];
            b[j] = x;
        }
    }
    return tmp;
}

/* Blocks [b0, b1) (block b's keys at data[bstart[b]:bstart[b+1]]): sorts each block, drops
 * repeats, and writes the columns as int32 over data from data[bstart[b0]] on (never past what
 * is already read); xadj[row] gets each of their rows' start, counted from there. Returns the
 * number of columns written, or -1 when the sort buffer cannot be allocated. */
int64_t sym_rows(int64_t b0, int64_t b1, const int64_t *bstart, int shift, int cbits, int64_t n,
                 uint32_t *data, int32_t *xadj) {
    const uint32_t cmask = (uint32_t)((1ull << cbits) - 1);
    const int64_t rows = (int64_t)1 << shift;
    int32_t *out = (int32_t *)data + bstart[b0];
    int64_t written = 0, largest = 1;
    uint32_t hist[1 << MAX_DIGIT];
    for (int64_t b = b0; b < b1; b++)
        if (bstart[b + 1] - bstart[b] > largest) largest = bstart[b + 1] - bstart[b];
    uint32_t *scratch = (uint32_t *)malloc((size_t)largest * sizeof(uint32_t));
    if (!scratch) return -1;
    for (int64_t b = b0; b < b1; b++) {
        int64_t len = bstart[b + 1] - bstart[b], r0 = b << shift, nr = n - r0 < rows ? n - r0 : rows, r = 0;
        int rbits = 0;  /* the block's keys lie below 2**(rbits + cbits) */
        while (((int64_t)1 << rbits) < nr) rbits++;
        const uint32_t *a = sort_block(data + bstart[b], scratch, len, rbits + cbits, hist);
        for (int64_t k = 0; k < len; k++) {
            uint32_t x = a[k];
            if (k && x == a[k - 1]) continue;
            for (int64_t row = x >> cbits; r <= row; r++) xadj[r0 + r] = (int32_t)written;
            out[written++] = (int32_t)(x & cmask);
        }
        for (; r < nr; r++) xadj[r0 + r] = (int32_t)written;
    }
    free(scratch);
    return written;
}
