"""Vectorised neighbour sampling on one CSC (a partition's, or a whole graph's).

Uniform sampling without replacement runs in one pass of C when the package's kernels are
built (`native/sampling.c`). Otherwise, and for the other cases, no Python loop per node:
without replacement, seeds with more in-edges than `fanout` run
Robert Floyd's algorithm side by side (fanout steps, each vectorised over those seeds),
which costs O(fanout^2) per seed whatever its degree and gives a uniform subset; with
replacement, draws are uniform offsets into each seed's range. With edge probabilities,
every candidate edge gets an exponential race key (-log u / p, Efraimidis-Spirakis) and
each seed keeps its smallest keys, and draws with replacement search each seed's
cumulative weights.
"""

from __future__ import annotations

import torch

from ..native import kernels

# Floyd's algorithm checks each draw against the seed's earlier ones: O(fanout^2) per seed,
# fine in C up to this fanout (DGL's [10, 25] and the like); larger ones use the torch path.
NATIVE_MAX_FANOUT = 256


def _segments(counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For segments of the given sizes: segment id of every element and its position inside."""
    seg = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    starts = torch.cumsum(counts, 0) - counts
    return seg, torch.arange(seg.numel()) - starts[seg]


def sample_csc(
    indptr: torch.Tensor,
    seeds: torch.Tensor,
    fanout: int,
    replace: bool = False,
    prob: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample in-edges of `seeds` (rows of a CSC). Returns (seed position, CSC slot) per sampled edge.

    `fanout=-1` takes every in-edge. Without replacement a seed never gets the same slot
    twice and gets min(fanout, degree) edges; with replacement exactly `fanout` (when it
    has any edge). `prob` (one weight per CSC slot, >= 0) biases the choice; zero-weight
    edges are never drawn.
    """
    seeds = seeds.to(torch.int64)
    start = indptr[seeds]
    deg = indptr[seeds + 1] - start
    if prob is not None:
        prob = prob.to(torch.float64)
    if fanout < 0 or (not replace and prob is None and bool((deg <= fanout).all())):
        seg, pos = _segments(deg)
        slots = start[seg] + pos
        if prob is not None:
            keep = prob[slots] > 0
            seg, slots = seg[keep], slots[keep]
        return seg, slots
    if replace:
        return _with_replacement(start, deg, fanout, prob, generator)
    if prob is None and fanout <= NATIVE_MAX_FANOUT:
        native = _native_uniform(indptr, seeds, deg, fanout, generator)
        if native is not None:
            return native
    return _without_replacement(start, deg, fanout, prob, generator)


def _native_uniform(indptr: torch.Tensor, seeds: torch.Tensor, deg: torch.Tensor, fanout: int,
                    generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Uniform sampling without replacement in one pass of C (`native/sampling.c`), keyed by
    one draw from `generator`; None when the kernels are not built (the torch path runs)."""
    lib = kernels()
    if lib is None or indptr.dtype != torch.int64 or not indptr.is_contiguous():
        return None
    seeds = seeds.contiguous()
    if seeds.numel() and not 0 <= int(seeds.min()) <= int(seeds.max()) < indptr.numel() - 1:
        raise IndexError(f"seeds must be rows of the CSC, in [0, {indptr.numel() - 1})")  # C reads unchecked
    total = int(torch.clamp(deg, max=fanout).sum())
    seg, slots = torch.empty(total, dtype=torch.int64), torch.empty(total, dtype=torch.int64)
    key = int(torch.randint(0, 1 << 62, (1,), generator=generator))
    got = lib.sample_uniform(seeds.numel(), indptr.data_ptr(), seeds.data_ptr(), fanout, key, seg.data_ptr(),
                             slots.data_ptr())
    if got != total:
        raise RuntimeError(f"sample_uniform wrote {got} edges, expected {total}")
    return seg, slots


def _without_replacement(start, deg, fanout, prob, generator):
    if prob is not None:
        return _weighted_without_replacement(start, deg, fanout, prob, generator)
    full = deg <= fanout
    seg_a, pos_a = _segments(torch.where(full, deg, 0))
    big = torch.nonzero(~full).flatten()
    offsets = _floyd(deg[big], fanout, generator)
    seg_b = big.repeat_interleave(fanout)
    slots_b = (start[big].unsqueeze(1) + offsets).reshape(-1)
    return torch.cat([seg_a, seg_b]), torch.cat([start[seg_a] + pos_a, slots_b])


def _floyd(deg: torch.Tensor, k: int, generator) -> torch.Tensor:
    """(n, k) distinct offsets in [0, deg) per row, uniformly chosen (Floyd's algorithm, all rows at once)."""
    chosen = torch.empty(deg.numel(), k, dtype=torch.int64)
    for i in range(k):
        j = deg - k + i  # candidate range [0, j]
        t = (torch.rand(deg.numel(), generator=generator, dtype=torch.float64) * (j + 1)).to(torch.int64)
        t = torch.minimum(t, j)
        taken = (chosen[:, :i] == t.unsqueeze(1)).any(1)
        chosen[:, i] = torch.where(taken, j, t)
    return chosen


def _weighted_without_replacement(start, deg, fanout, prob, generator):
    seg, pos = _segments(deg)
    slots = start[seg] + pos
    w = prob[slots]
    u = torch.rand(seg.numel(), generator=generator, dtype=torch.float64)
    keys = torch.where(w > 0, -torch.log1p(-u) / w, torch.inf)
    # order by (seed, key): sort by key, then stably by seed
    order = torch.argsort(keys)
    order = order[torch.argsort(seg[order], stable=True)]
    _, rank = _segments(torch.bincount(seg, minlength=deg.numel()))
    keep = (rank < fanout) & torch.isfinite(keys[order])
    chosen = order[keep]
    return seg[chosen], slots[chosen]


def _with_replacement(start, deg, fanout, prob, generator):
    has = deg > 0
    if prob is not None:
        # a seed whose weights are all zero has nothing to draw
        total_by_seed = torch.zeros(deg.numel(), dtype=torch.float64)
        seg_all, pos_all = _segments(deg)
        total_by_seed.index_add_(0, seg_all, prob[start[seg_all] + pos_all])
        has &= total_by_seed > 0
    seeds_with = torch.nonzero(has).flatten()
    seg = seeds_with.repeat_interleave(fanout)
    u = torch.rand(seg.numel(), generator=generator, dtype=torch.float64)
    if prob is None:
        offset = torch.clamp((u * deg[seg]).to(torch.int64), max=deg[seg] - 1)
        return seg, start[seg] + offset
    # each seed's weights normalised to sum to 1, so seed i owns [i, i+1) of one cumulative
    # sum whatever the spread of weights across seeds; one searchsorted for all draws
    seg_c, pos_c = _segments(deg[seeds_with])
    slots_c = start[seeds_with][seg_c] + pos_c
    cum = torch.cumsum(prob[slots_c] / total_by_seed[seeds_with][seg_c], 0)
    local_seg = torch.arange(seeds_with.numel()).repeat_interleave(fanout)
    idx = torch.searchsorted(cum, local_seg + u, right=True)
    # guard against rounding at a segment's end: stay inside the seed's own range
    first = torch.cumsum(deg[seeds_with], 0) - deg[seeds_with]
    idx = torch.minimum(torch.maximum(idx, first[local_seg]), first[local_seg] + deg[seeds_with][local_seg] - 1)
    # a draw that rounding put on a zero-weight slot moves back to the nearest positive one before it
    zero = prob[slots_c[idx]] == 0
    if bool(zero.any()):
        positive = torch.where(prob[slots_c] > 0, torch.arange(slots_c.numel()), -1)
        last_positive = torch.cummax(positive, 0).values
        idx[zero] = last_positive[idx[zero]]
    return seg, slots_c[idx]
