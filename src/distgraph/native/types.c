/* Node and edge types of heterogeneous ids. Ids are numbered in blocks of one type (one per
 * (partition, type), or one per type in a whole graph), so an id's type and per-type id come
 * from the block holding it; and a block's per-type lists are a stable counting sort. */
#include <stddef.h>
#include <stdint.h>

/* For each id: b = the last block with starts[b] <= id (starts ascending, starts[0] <= every
 * id), out_type[i] = block_type[b], out_tid[i] = id - shift[b]. A branchless binary search
 * over the (few) blocks. Returns n, or -1 when an id lies before the first block. */
int64_t map_types(int64_t n, const int64_t *ids, int64_t nblocks, const int64_t *starts, const int64_t *block_type,
                  const int64_t *shift, int64_t *out_type, int64_t *out_tid) {
    for (int64_t i = 0; i < n; i++) {
        int64_t id = ids[i], b = 0, len = nblocks;
        if (id < starts[0]) return -1;
        while (len > 1) { /* invariant: starts[b] <= id, the answer lies in [b, b + len) */
            int64_t half = len / 2;
            b = starts[b + half] <= id ? b + half : b;
            len -= half;
        }
        out_type[i] = block_type[b];
        out_tid[i] = id - shift[b];
    }
    return n;
}

/* `values` grouped by their `kinds` (in [0, ntypes)), keeping their order within a kind: out
 * holds kind 0's values, then kind 1's, ...; counts (ntypes + 1 zeroed slots) ends as the
 * offsets of each kind's run. With values NULL, the positions 0..n-1 are grouped (a stable
 * argsort of the kinds). Returns n, or -1 on a kind out of range. */
int64_t group_by_kind(int64_t n, const int64_t *kinds, const int64_t *values, int64_t ntypes, int64_t *counts,
                      int64_t *out) {
    for (int64_t i = 0; i < n; i++) {
        if ((uint64_t)kinds[i] >= (uint64_t)ntypes) return -1;
        counts[kinds[i] + 1]++;
    }
    for (int64_t t = 0; t < ntypes; t++) counts[t + 1] += counts[t];
    if (values == NULL)
        for (int64_t i = 0; i < n; i++) out[counts[kinds[i]]++] = i;
    else
        for (int64_t i = 0; i < n; i++) out[counts[kinds[i]]++] = values[i];
    for (int64_t t = ntypes; t > 0; t--) counts[t] = counts[t - 1]; /* back to run starts */
    counts[0] = 0;
    return n;
}
