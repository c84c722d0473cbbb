/* Uniform neighbour sampling without replacement on a CSC, one pass over the seeds: every
 * slot of a seed with at most k in-edges, else k distinct slots by Robert Floyd's algorithm
 * (k draws whatever the degree). Each seed draws from its own splitmix64 stream keyed by
 * (key, seed position), so the result depends on the key alone. */
#include <stdint.h>

static inline uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* uniform in [0, n): the high half of a 64 x 64-bit product (bias below 2^-40 for n < 2^24) */
static inline int64_t below(uint64_t *state, int64_t n) {
    return (int64_t)(((unsigned __int128)splitmix64(state) * (uint64_t)n) >> 64);
}

/* (out_seg[m], out_slot[m]): seed position and CSC slot of every sampled edge, grouped by
 * seed in seed order; the arrays hold sum(min(degree, k)) entries. Returns that count. */
int64_t sample_uniform(int64_t n, const int64_t *indptr, const int64_t *seeds, int64_t k, uint64_t key,
                       int64_t *out_seg, int64_t *out_slot) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t start = indptr[seeds[i]], deg = indptr[seeds[i] + 1] - start;
        if (deg <= k) {
            for (int64_t j = 0; j < deg; j++) {
                out_seg[m] = i;
                out_slot[m++] = start + j;
            }
            continue;
        }
        uint64_t state = key ^ ((uint64_t)i * 0xD1B54A32D192ED03ULL);
        int64_t first = m;
        for (int64_t j = deg - k; j < deg; j++) {
            int64_t t = start + below(&state, j + 1), taken = 0;
            for (int64_t q = first; q < m; q++) {
                if (out_slot[q] == t) {
                    taken = 1;
                    break;
                }
            }
            out_seg[m] = i;
            out_slot[m++] = taken ? start + j : t;
        }
    }
    return m;
}

/* Local ids for a block: the distinct ids of dst (0..nd-1 in order) then of src not in dst
 * (nd, nd+1, ... in order of first appearance). `table` holds `cap` slots (a power of two
 * above twice the ids) of two words, a tag and a local id; a slot is taken in this call when
 * its tag is (id + 1) | (epoch << 40) for the call's `epoch`, so the table never needs
 * clearing between calls (ids must be below 2^40 - 1). out_nodes receives the distinct ids,
 * out_src the local id of each src id. Returns the number of distinct ids; -1 if the table
 * was too small, -2 if dst repeats an id. */
int64_t relabel(int64_t nd, const int64_t *dst, int64_t ns, const int64_t *src, int64_t cap, uint64_t epoch,
                int64_t *table, int64_t *out_nodes, int64_t *out_src) {
    uint64_t mask = (uint64_t)cap - 1, stamp = epoch << 40;
    int64_t n = 0;
    for (int64_t i = 0; i < nd + ns; i++) {
        int64_t id = i < nd ? dst[i] : src[i - nd];
        uint64_t tag = ((uint64_t)id + 1) | stamp, h = (((uint64_t)id + 1) * 0x9E3779B97F4A7C15ULL) & mask;
        int64_t probes = 0;
        while ((uint64_t)table[2 * h] >> 40 == epoch && (uint64_t)table[2 * h] != tag) {
            h = (h + 1) & mask;
            if (++probes > cap) return -1;
        }
        if ((uint64_t)table[2 * h] == tag) {
            if (i < nd) return -2; /* a repeated destination */
        } else {
            table[2 * h] = (int64_t)tag;
            table[2 * h + 1] = n;
            out_nodes[n++] = id;
        }
        if (i >= nd) out_src[i - nd] = table[2 * h + 1];
    }
    return n;
}
