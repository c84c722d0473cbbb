/* Uniform neighbour sampling without replacement on a CSC, one pass over the seeds: every
 * slot of a seed with at most k in-edges, else k distinct slots by Robert Floyd's algorithm
 * (k draws whatever the degree). Each seed draws from its own splitmix64 stream keyed by
 * (key, seed position), so the result depends on the key alone. Also the block builder's
 * kernel: relabelling ids into a block's local ids, grouping edges by destination. */
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

/* Every sampled edge m, grouped by seed in seed order: out_seg[m] its seed's position, and
 * for its CSC slot t: out_src[m] = t when `indices` is NULL, else the source's id: with local
 * id l = indices[t], l + nid_add when l < map_from (a partition's owned nodes, a range), else
 * nid_map[l] (its halo nodes); out_eid[m] (skipped when NULL) = eid_map[t] (or t + eid_add).
 * Mapping here, slot by slot, saves a pass and a temporary array per lookup. The arrays hold sum(min(degree, k)) entries; returns that count,
 * -1 if k is above MAX_K, -2 if the CSC points outside itself (a slot beyond `nslots`, the
 * length of indices and eid_map, or a local id beyond `nlocal`, the length of nid_map): the
 * caller checks the seeds, this checks every other index it follows. */
#define MAX_K 256

/* Writes seed i's edges from its slots `picks` at out[m...]; returns the new m, -2 on a bad local id. */
static inline int64_t emit(int64_t i, const int64_t *picks, int64_t got, int64_t m, const int64_t *indices,
                           const int64_t *nid_map, int64_t nlocal, int64_t nid_add, int64_t map_from,
                           const int64_t *eid_map, int64_t eid_add, int64_t *out_seg, int64_t *out_src,
                           int64_t *out_eid) {
    for (int64_t j = 0; j < got; j++, m++) {
        int64_t t = picks[j];
        out_seg[m] = i;
        if (indices == 0) {
            out_src[m] = t;
        } else {
            int64_t l = indices[t];
            if (l < map_from) {
                out_src[m] = l + nid_add;
            } else {
                if ((uint64_t)l >= (uint64_t)nlocal) return -2;
                out_src[m] = nid_map[l];
            }
        }
        if (out_eid) out_eid[m] = eid_map ? eid_map[t] : t + eid_add;
    }
    return m;
}

/* The slots are random reads into indices and eid_map (a cache miss each on big graphs), so
 * they are fetched a seed ahead: seed i's slots are drawn and prefetched, then seed i - 1's
 * edges are written, their memory already on its way. */
int64_t sample_uniform(int64_t n, const int64_t *indptr, const int64_t *seeds, int64_t k, uint64_t key,
                       int64_t nslots, const int64_t *indices, const int64_t *nid_map, int64_t nlocal, int64_t nid_add,
                       int64_t map_from, const int64_t *eid_map, int64_t eid_add, int64_t *out_seg, int64_t *out_src,
                       int64_t *out_eid) {
    int64_t m = 0, picks[2][MAX_K], got_before = 0;
    if (k > MAX_K) return -1;
    for (int64_t i = 0; i <= n; i++) {
        int64_t *p = picks[i & 1], got = 0;
        if (i < n) {
            int64_t start = indptr[seeds[i]], deg = indptr[seeds[i] + 1] - start;
            if (start < 0 || deg < 0 || start + deg > nslots) return -2;
            got = deg <= k ? deg : k;
            if (deg <= k) {
                for (int64_t j = 0; j < deg; j++) p[j] = start + j;
            } else {
                uint64_t state = key ^ ((uint64_t)i * 0xD1B54A32D192ED03ULL);
                for (int64_t j = deg - k, q0 = 0; j < deg; j++, q0++) {
                    int64_t t = start + below(&state, j + 1), taken = 0;
                    for (int64_t q = 0; q < q0; q++) {
                        if (p[q] == t) {
                            taken = 1;
                            break;
                        }
                    }
                    p[q0] = taken ? start + j : t;
                }
            }
            for (int64_t j = 0; j < got; j++) {
                if (indices) __builtin_prefetch(indices + p[j]);
                if (eid_map) __builtin_prefetch(eid_map + p[j]);
            }
        }
        if (i > 0) {
            m = emit(i - 1, picks[(i - 1) & 1], got_before, m, indices, nid_map, nlocal, nid_add, map_from, eid_map,
                     eid_add, out_seg, out_src, out_eid);
            if (m < 0) return m;
        }
        got_before = got;
    }
    return m;
}

/* Local ids for a block: the distinct ids of dst (0..nd-1 in order) then of src not in dst
 * (nd, nd+1, ... in order of first appearance). `table` holds `cap` slots (a power of two) of
 * two words, a tag and a local id; a slot is taken in this call when its tag is
 * (id + 1) | (epoch << 40) for the call's `epoch`, so the table never needs clearing between
 * calls (ids must be below 2^40 - 1). It is kept at most half full, so it can be sized for the
 * distinct ids rather than all of them (a smaller table stays in cache); each id's slot is
 * prefetched AHEAD ids early. out_nodes receives the distinct ids, out_src the local id of
 * each src id.
 *
 * With `rows` (the destination row of each src, in [0, nd)) the edges also come out grouped
 * by row, stably, in the same pass: edge i goes to position counts[rows[i]]++ of out_src,
 * out_rows and out_eids (from `eids`), after a counting pass; `counts` holds nd + 1 zeroed
 * slots. Returns the number of distinct ids; -1 if the table is too small (more than cap / 2
 * distinct ids: call again with a bigger one and a new epoch), -2 if dst repeats an id, -3 if a
 * row is out of range. */
#define AHEAD 8
static inline uint64_t slot_of(int64_t id, int shift) {
    return (((uint64_t)id + 1) * 0x9E3779B97F4A7C15ULL) >> shift; /* the product's high bits */
}

int64_t relabel(int64_t nd, const int64_t *dst, int64_t ns, const int64_t *src, int64_t cap, uint64_t epoch,
                int64_t *table, int64_t *out_nodes, int64_t *out_src, const int64_t *rows, const int64_t *eids,
                int64_t *counts, int64_t *out_rows, int64_t *out_eids) {
    uint64_t mask = (uint64_t)cap - 1, stamp = epoch << 40;
    int shift = 64;
    for (int64_t c = cap; c > 1; c >>= 1) shift--;
    if (rows) {
        for (int64_t i = 0; i < ns; i++) {
            if ((uint64_t)rows[i] >= (uint64_t)nd) return -3;
            counts[rows[i] + 1]++;
        }
        for (int64_t r = 0; r < nd; r++) counts[r + 1] += counts[r];
    }
    int64_t n = 0, total = nd + ns;
    for (int64_t i = 0; i < total; i++) {
        if (i + AHEAD < total) {
            int64_t ahead = i + AHEAD < nd ? dst[i + AHEAD] : src[i + AHEAD - nd];
            __builtin_prefetch(table + 2 * slot_of(ahead, shift));
        }
        int64_t id = i < nd ? dst[i] : src[i - nd];
        uint64_t tag = ((uint64_t)id + 1) | stamp, h = slot_of(id, shift);
        while ((uint64_t)table[2 * h] >> 40 == epoch && (uint64_t)table[2 * h] != tag) h = (h + 1) & mask;
        if ((uint64_t)table[2 * h] == tag) {
            if (i < nd) return -2; /* a repeated destination */
        } else {
            if (2 * (n + 1) > cap) return -1;
            table[2 * h] = (int64_t)tag;
            table[2 * h + 1] = n;
            out_nodes[n++] = id;
        }
        if (i < nd) continue;
        if (rows) {
            int64_t e = i - nd, at = counts[rows[e]]++;
            out_src[at] = table[2 * h + 1];
            out_rows[at] = rows[e];
            out_eids[at] = eids[e];
        } else {
            out_src[i - nd] = table[2 * h + 1];
        }
    }
    return n;
}
