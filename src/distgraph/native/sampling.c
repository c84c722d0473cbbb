/* Uniform neighbour sampling without replacement, one pass over the seeds, on one CSC or on
 * several (a host's partitions, each seed on its owner's), each seed drawing from its own
 * stream so the result depends on the keys alone. Also the block builder's kernel:
 * relabelling ids into a block's local ids, grouping edges by destination. */
#include <stdint.h>
#include <stdlib.h>

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

/* A CSC to sample from and how its slots become ids (mirrors `Csc` in sampling/kernel.py):
 * seed id s is row s - row_add; for a slot t, the source is t itself when `indices` is NULL,
 * else with local id l = indices[t]: l + nid_add when l < map_from (a partition's owned
 * nodes, a range), else nid_map[l] (its halo nodes); the edge is eid_map[t] (t + eid_add
 * when eid_map is NULL). With `typed_indptr`, a row's slots are one run per edge type: row r's
 * edges of type e are slots [tp[r * netypes + e], tp[r * netypes + e + 1]). Each seed of this
 * CSC draws from a splitmix64 stream keyed by (key, its position among this CSC's seeds). */
typedef struct {
    const int64_t *indptr; /* nrows + 1 entries; NULL: this CSC is not here, its seeds are skipped */
    int64_t nrows, nslots; /* nslots: the length of indices and eid_map */
    const int64_t *indices, *nid_map;
    int64_t nlocal, nid_add, map_from; /* nlocal: the length of nid_map */
    const int64_t *eid_map;
    int64_t eid_add, row_add;
    uint64_t key;
    const int64_t *typed_indptr; /* nrows * netypes + 1 entries, or NULL: one edge type */
    int64_t netypes;
} csc_t;

#define MAX_K 256
#define MAX_TYPES 64
#define SEEDS_AHEAD 4 /* how far ahead a seed's row bounds are prefetched */

/* The CSC of seed i (owner[i] indexes `cscs`; one CSC when owner is NULL), or NULL to skip it. */
static inline const csc_t *csc_of(int64_t i, int64_t ncsc, const csc_t *cscs, const int64_t *owner) {
    int64_t c = owner ? owner[i] : 0;
    if ((uint64_t)c >= (uint64_t)ncsc || !cscs[c].indptr) return 0;
    return cscs + c;
}

static inline int64_t eid_at(const csc_t *c, int64_t t) { return c->eid_map ? c->eid_map[t] : t + c->eid_add; }

/* One seed's plan: its runs of slots, one per edge type (one in all when untyped), each taken
 * whole (picks < 0) or as `count` slots drawn into picks[pick..]. */
typedef struct {
    int64_t start, count, pick, etype;
} run_t;

typedef struct {
    const csc_t *c;
    int64_t i, nruns, npicks;
    run_t runs[MAX_TYPES];
    int64_t picks[MAX_TYPES * MAX_K];
} plan_t;

/* The fanout of edge type e: ks[e] with a typed CSC and per-type fanouts, else k (-1: all). */
static inline int64_t fanout_of(const csc_t *c, const int64_t *ks, int64_t k, int64_t e) {
    return (ks && c->typed_indptr) ? ks[e] : k;
}

/* Fills `p` for seed i of CSC c (row r, its pos-th seed): each type's run, then Floyd's
 * algorithm where a run has more slots than its fanout (k draws whatever the degree), the
 * draws of all runs from the seed's one stream; the drawn slots are prefetched. Returns 0, or
 * -2 when a typed run lies outside the row. */
static int plan_seed(plan_t *p, const csc_t *c, int64_t i, int64_t r, int64_t pos, const int64_t *ks, int64_t k) {
    int64_t start = c->indptr[r], end = c->indptr[r + 1];
    int64_t types = (ks && c->typed_indptr) ? c->netypes : 1;
    uint64_t state = c->key ^ ((uint64_t)pos * 0xD1B54A32D192ED03ULL);
    p->c = c, p->i = i, p->nruns = 0, p->npicks = 0;
    for (int64_t e = 0; e < types; e++) {
        int64_t a = start, b = end, kt = fanout_of(c, ks, k, e);
        if (types > 1) {
            a = c->typed_indptr[r * types + e];
            b = c->typed_indptr[r * types + e + 1];
            if (a < start || b < a || b > end) return -2; /* a typed run outside its row */
        }
        int64_t n = b - a;
        if (kt == 0 || n == 0) continue;
        run_t *run = p->runs + p->nruns++;
        run->start = a, run->etype = e;
        if (kt < 0 || n <= kt) {
            run->count = n, run->pick = -1;
            continue;
        }
        run->count = kt, run->pick = p->npicks;
        int64_t *q = p->picks + p->npicks;
        for (int64_t j = n - kt, q0 = 0; j < n; j++, q0++) {
            int64_t t = a + below(&state, j + 1), taken = 0;
            for (int64_t x = 0; x < q0; x++) {
                if (q[x] == t) {
                    taken = 1;
                    break;
                }
            }
            q[q0] = taken ? a + j : t;
        }
        for (int64_t j = 0; j < kt; j++) {
            if (c->indices) __builtin_prefetch(c->indices + q[j]);
            if (c->eid_map) __builtin_prefetch(c->eid_map + q[j]);
        }
        p->npicks += kt;
    }
    return 0;
}

/* Checks fanouts against the kernels' limits: -1 on a fanout above MAX_K or too many types. */
static int64_t check_fanouts(int64_t k, const int64_t *ks, int64_t nks) {
    if (k < -1 || k > MAX_K || nks > MAX_TYPES) return -1;
    for (int64_t e = 0; ks && e < nks; e++)
        if (ks[e] < -1 || ks[e] > MAX_K) return -1;
    return 0;
}

/* At least the number of edges `sample_uniform` writes for these seeds (the seeds skipped
 * write none): sum(min(degree, k)), or with per-type fanouts sum(min(degree, sum of them)),
 * exact when untyped; -1 if a fanout is above MAX_K (or there are more than MAX_TYPES types),
 * -3 if a seed is not a row of its CSC, -2 if a row's slots lie outside the CSC, -4 if a CSC
 * has more edge types than `ks` has fanouts. Checks what `sample_uniform` then reads
 * unchecked (but a typed CSC's runs, which it checks itself). */
int64_t sample_count(int64_t ncsc, const csc_t *cscs, int64_t n, const int64_t *seeds, const int64_t *owner,
                     int64_t k, const int64_t *ks, int64_t nks) {
    int64_t total = 0, all = k < 0, sum = k;
    if (check_fanouts(k, ks, nks)) return -1;
    for (int64_t x = 0; x < ncsc; x++)
        if (ks && cscs[x].indptr && cscs[x].typed_indptr && (cscs[x].netypes > nks || cscs[x].netypes < 1)) return -4;
    if (ks) {
        all = 0, sum = 0;
        for (int64_t e = 0; e < nks; e++) {
            if (ks[e] < 0) all = 1;
            else sum += ks[e];
        }
    }
    for (int64_t i = 0; i < n; i++) {
        const csc_t *c = csc_of(i, ncsc, cscs, owner);
        if (!c) continue;
        int64_t r = seeds[i] - c->row_add;
        if ((uint64_t)r >= (uint64_t)c->nrows) return -3;
        int64_t start = c->indptr[r], deg = c->indptr[r + 1] - start;
        if (start < 0 || deg < 0 || start + deg > c->nslots) return -2;
        total += (all || deg < sum) ? deg : sum;
    }
    return total;
}

/* Writes the edges of plan `p` at out[m...]; returns the new m, -2 on a bad local id. */
static int64_t emit(const plan_t *p, int64_t m, int64_t *out_seg, int64_t *out_src, int64_t *out_eid,
                    int64_t *out_etype) {
    const csc_t *c = p->c;
    for (int64_t x = 0; x < p->nruns; x++) {
        const run_t *run = p->runs + x;
        for (int64_t j = 0; j < run->count; j++, m++) {
            int64_t t = run->pick < 0 ? run->start + j : p->picks[run->pick + j];
            out_seg[m] = p->i;
            if (!c->indices) {
                out_src[m] = t;
            } else {
                int64_t l = c->indices[t];
                if (l < c->map_from) {
                    out_src[m] = l + c->nid_add;
                } else {
                    if ((uint64_t)l >= (uint64_t)c->nlocal) return -2;
                    out_src[m] = c->nid_map[l];
                }
            }
            if (out_eid) out_eid[m] = eid_at(c, t);
            if (out_etype) out_etype[m] = run->etype;
        }
    }
    return m;
}

/* Every sampled edge m, grouped by seed in seed order (seeds of several CSCs interleaved, as
 * a block wants them) and within a seed by edge type: out_seg[m] its seed's position in
 * `seeds`, out_src[m] its source, out_eid[m] its edge and out_etype[m] its type (each skipped
 * when NULL). Per run of a seed's in-edges of one type (all its in-edges when
 * untyped or without `ks`), up to the fanout (`ks[type]`, else k; -1: all) distinct slots,
 * uniformly. `counters` (ncsc zeros) count each CSC's seeds as they pass, for their streams.
 * Call `sample_count` first, with the same arguments: the arrays hold what it returned (a
 * bound). Returns the number of edges written, -2 if a local id lies beyond its nid_map or a
 * typed run outside its row.
 *
 * The drawn slots are random reads into indices and eid_map (a cache miss each on big
 * graphs), so they are fetched a seed ahead: seed i's slots are drawn and prefetched, then
 * seed i - 1's edges are written, their memory already on its way. */
int64_t sample_uniform(int64_t ncsc, const csc_t *cscs, int64_t n, const int64_t *seeds, const int64_t *owner,
                       int64_t k, const int64_t *ks, int64_t nks, int64_t *counters, int64_t *out_seg,
                       int64_t *out_src, int64_t *out_eid, int64_t *out_etype) {
    int64_t m = 0;
    plan_t *plans;
    int have_before = 0;
    if (check_fanouts(k, ks, nks)) return -1;
    plans = (plan_t *)malloc(2 * sizeof(plan_t));
    if (!plans) return -5;
    for (int64_t i = 0; i <= n; i++) {
        plan_t *now = plans + (i & 1);
        const csc_t *c = i < n ? csc_of(i, ncsc, cscs, owner) : 0;
        if (i + SEEDS_AHEAD < n) { /* a later seed's row bounds, on their way while this one is drawn */
            const csc_t *later = csc_of(i + SEEDS_AHEAD, ncsc, cscs, owner);
            if (later) {
                int64_t r = seeds[i + SEEDS_AHEAD] - later->row_add;
                if ((uint64_t)r < (uint64_t)later->nrows) {
                    __builtin_prefetch(later->indptr + r);
                    if (later->typed_indptr) {
                        __builtin_prefetch(later->typed_indptr + r * later->netypes);
                        __builtin_prefetch(later->typed_indptr + (r + 1) * later->netypes);
                    }
                }
            }
        }
        if (c && plan_seed(now, c, i, seeds[i] - c->row_add, counters[c - cscs]++, ks, k)) {
            m = -2;
            break;
        }
        if (have_before) {
            m = emit(plans + ((i - 1) & 1), m, out_seg, out_src, out_eid, out_etype);
            if (m < 0) break;
        }
        have_before = c != 0;
    }
    free(plans);
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
 * With `rows` (the destination row of each src, in [0, nd)) the edges are first grouped by
 * row, stably (a counting pass, then edge i goes to position counts[rows[i]]++ of out_src,
 * out_rows and out_eids (from `eids`), and out_extra (from `extra`, when given); `counts` holds
 * nd + 1 zeroed slots), and the sources
 * are numbered in that grouped order: the block depends on each destination's edges, not on
 * the order the edges came in (a machine at a time, or in seed order). Returns the number of
 * distinct ids; -1 if the table is too small (more than cap / 2 distinct ids: call again with a
 * bigger one, a new epoch and zeroed counts), -2 if dst repeats an id, -3 if a row is out of
 * range, -4 if an id lies outside [0, MAX_ID] (the caller relabels another way). */
#define AHEAD 8
#define MAX_ID ((1LL << 40) - 2) /* tags hold id + 1 in 40 bits */
static inline uint64_t slot_of(int64_t id, int shift) {
    return (((uint64_t)id + 1) * 0x9E3779B97F4A7C15ULL) >> shift; /* the product's high bits */
}

int64_t relabel(int64_t nd, const int64_t *dst, int64_t ns, const int64_t *src, int64_t cap, uint64_t epoch,
                int64_t *table, int64_t *out_nodes, int64_t *out_src, const int64_t *rows, const int64_t *eids,
                int64_t *counts, int64_t *out_rows, int64_t *out_eids, const int64_t *extra, int64_t *out_extra) {
    uint64_t mask = (uint64_t)cap - 1, stamp = epoch << 40;
    int shift = 64;
    for (int64_t c = cap; c > 1; c >>= 1) shift--;
    if (rows) {
        for (int64_t i = 0; i < ns; i++) {
            if ((uint64_t)rows[i] >= (uint64_t)nd) return -3;
            counts[rows[i] + 1]++;
        }
        for (int64_t r = 0; r < nd; r++) counts[r + 1] += counts[r];
        for (int64_t e = 0; e < ns; e++) {
            int64_t at = counts[rows[e]]++;
            out_src[at] = src[e]; /* the source's id for now: numbered in place below */
            out_rows[at] = rows[e];
            out_eids[at] = eids[e];
            if (extra) out_extra[at] = extra[e];
        }
        src = out_src;
    }
    int64_t n = 0, total = nd + ns;
    for (int64_t i = 0; i < total; i++) {
        if (i + AHEAD < total) {
            int64_t ahead = i + AHEAD < nd ? dst[i + AHEAD] : src[i + AHEAD - nd];
            __builtin_prefetch(table + 2 * slot_of(ahead, shift));
        }
        int64_t id = i < nd ? dst[i] : src[i - nd];
        if ((uint64_t)id > (uint64_t)MAX_ID) return -4;
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
        if (i >= nd) out_src[i - nd] = table[2 * h + 1]; /* src may be out_src: read above, at i */
    }
    return n;
}
