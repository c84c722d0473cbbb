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

import ctypes
from dataclasses import dataclass

import numpy as np
import torch

from ..ids import int64_contiguous
from ..native import CscStruct, kernels



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
    has any edge). `prob` (one weight per CSC slot, >= 0: a tensor, or what gives the float64
    weights of a tensor of slots, as `weights.SlotWeights`) biases the choice; zero-weight
    edges are never drawn.
    """
    seeds = seeds.to(torch.int64)
    start = indptr[seeds]
    deg = indptr[seeds + 1] - start
    if isinstance(prob, torch.Tensor):
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
    if prob is None:
        native = sample_uniform_native([Csc(indptr)], seeds, None, fanout, [generator], with_eids=False)
        if native is not None:
            return native
    return _without_replacement(start, deg, fanout, prob, generator)


@dataclass(frozen=True)
class Csc:
    """A CSC to sample from, and how its slots become global ids. Seed s is row s - row_add.
    With local id l = indices[slot], an edge's source is l + nid_add when l < map_from (a
    partition's owned nodes, whose ids are a range) and nid_map[l] otherwise (its halo nodes;
    never when nid_map is None); its id is eid_map[slot] (slot + eid_add when eid_map is None).
    Without `indices`, the "source" is the slot itself. With `typed_indptr`, a row's in-edges
    are runs of one edge type each, which typed sampling draws from apart."""

    indptr: torch.Tensor
    indices: torch.Tensor | None = None
    nid_map: torch.Tensor | None = None
    nid_add: int = 0
    map_from: int = 0
    eid_map: torch.Tensor | None = None
    eid_add: int = 0
    row_add: int = 0
    typed_indptr: torch.Tensor | None = None  # row r's edges of type e: slots [tp[r*T + e], tp[r*T + e + 1])
    num_etypes: int = 1

    def edge_ids(self, slots: torch.Tensor) -> torch.Tensor:
        return self.eid_map.index_select(0, slots) if self.eid_map is not None else slots + self.eid_add

    def ids(self, slots: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(source ids, edge ids) of `slots` (index_select: a third of `[]`'s time on 1-D gathers)."""
        if self.indices is None:
            return slots, slots + self.eid_add
        local = self.indices.index_select(0, slots)
        if self.nid_map is None:
            src = local + self.nid_add
        elif self.map_from <= 0:
            src = self.nid_map.index_select(0, local)
        else:
            src = local + self.nid_add
            halo = torch.nonzero(local >= self.map_from).flatten()
            src[halo] = self.nid_map.index_select(0, local.index_select(0, halo))
        return src, self.edge_ids(slots)

    def native(self, key: int) -> CscStruct | None:
        """This CSC as the C kernels take it, its seeds' streams keyed by `key`; None when an
        array does not suit them (not int64, not contiguous)."""
        arrays = [a for a in (self.indptr, self.indices, self.nid_map, self.eid_map) if a is not None]
        if not all(a.dtype == torch.int64 and a.is_contiguous() for a in arrays):
            return None
        ptr = lambda a: None if a is None else a.data_ptr()  # noqa: E731
        nslots = int(self.indptr[-1]) if self.indices is None else self.indices.numel()
        if self.eid_map is not None:
            nslots = min(nslots, self.eid_map.numel())
        nlocal = self.nid_map.numel() if self.nid_map is not None else 0
        map_from = self.map_from if self.nid_map is not None else (1 << 63) - 1
        tp = self.typed_indptr
        if tp is not None and (tp.dtype != torch.int64 or not tp.is_contiguous()
                               or tp.numel() != (self.indptr.numel() - 1) * self.num_etypes + 1):
            return None
        return CscStruct(ptr(self.indptr), self.indptr.numel() - 1, nslots, ptr(self.indices), ptr(self.nid_map),
                         nlocal, self.nid_add, map_from, ptr(self.eid_map), self.eid_add, self.row_add, key,
                         ptr(tp), self.num_etypes)


Fanout = "int | torch.Tensor"  # one fanout for every edge type, or one per edge type (-1: all)


def sample_csc_ids(csc: Csc, seeds: torch.Tensor, fanout, replace: bool = False,
                   prob: torch.Tensor | None = None, generator: torch.Generator | None = None
                   ) -> tuple[torch.Tensor, ...]:
    """`sample_csc` on `csc` (seeds are ids: row + row_add), returning (seed position, source
    id, edge id) per sampled edge, grouped by seed in seed order (a merge of several parts'
    answers relies on it); with `fanout` a tensor of one fanout per edge type of a typed CSC,
    each of a seed's runs of one type is sampled apart, and each edge's type comes fourth. In
    one pass of C for uniform sampling without replacement, else through torch (typed: a type
    at a time)."""
    seeds = seeds.to(torch.int64)
    typed = isinstance(fanout, torch.Tensor)
    if not replace and prob is None:
        native = sample_uniform_native([csc], seeds, None, fanout, [generator], with_etypes=typed)
        if native is not None:
            return native
    if not typed:
        seg, slots = sample_csc(csc.indptr, seeds - csc.row_add, fanout, replace, prob, generator)
        return (seg, *csc.ids(slots))
    indptr, types = csc.typed_indptr, csc.num_etypes
    parts = []
    for e, k in enumerate(fanout.tolist()):
        if k != 0:
            seg, slots = sample_csc(indptr, (seeds - csc.row_add) * types + e, k, replace, prob, generator)
            parts.append((seg, *csc.ids(slots), torch.full_like(seg, e)))
    if not parts:
        empty = seeds.new_empty(0)
        return empty, empty, empty, empty
    cols = [torch.cat(col) for col in zip(*parts)]
    order = torch.argsort(cols[0], stable=True)  # seed after seed, then by type, as the C pass writes them
    return tuple(c.index_select(0, order) for c in cols)


def sample_uniform_native(cscs: list[Csc | None], seeds: torch.Tensor, owner: torch.Tensor | None, fanout,
                          generators: list[torch.Generator | None], with_eids: bool = True, with_etypes: bool = False
                          ) -> tuple[torch.Tensor, ...] | None:
    """Uniform sampling without replacement in one pass of C (`native/sampling.c`) over seeds
    of several CSCs: seed i on `cscs[owner[i]]` (on cscs[0] when owner is None; skipped when
    that is None), edges grouped by seed in seed order, then by edge type. `fanout` is an int
    (-1: all), or a tensor of one per edge type (typed CSCs: each type's run of a seed drawn
    apart). Each CSC's seeds draw from one key taken from its generator, as a lone call on
    that CSC would. Returns (seed position, source id[, edge id][, edge type]) per edge; None
    when the kernels are not built, a fanout is beyond them or an array does not suit them
    (the torch path runs)."""
    lib = kernels()
    if lib is None:
        return None
    if isinstance(fanout, torch.Tensor):
        ks = fanout.to(torch.int64).contiguous()
        k, ks_ptr, nks = -1, ks.data_ptr(), ks.numel()
    else:
        k, ks_ptr, nks = int(fanout), None, 0
    table = (CscStruct * len(cscs))()
    for i, (csc, gen) in enumerate(zip(cscs, generators)):
        if csc is not None:
            struct = csc.native(int(torch.randint(0, 1 << 62, (1,), generator=gen)))
            if struct is None:
                return None
            table[i] = struct
    seeds = int64_contiguous(seeds)
    owner_ptr = None
    if owner is not None:
        owner = int64_contiguous(owner)
        owner_ptr = owner.data_ptr()
    args = (len(cscs), ctypes.addressof(table), seeds.numel(), seeds.data_ptr(), owner_ptr, k, ks_ptr, nks)
    total = lib.sample_count(*args)  # exact untyped; a bound with per-type fanouts
    if total == -1:
        return None  # a fanout beyond the kernel's draws: the torch path takes it
    if total == -3:
        raise IndexError("seeds must be rows of the CSC they are sampled on")
    if total == -2:
        raise IndexError("the CSC's indptr points outside its arrays (a corrupt partition?)")
    if total == -4:
        raise ValueError("a typed CSC has more edge types than fanouts were given")
    if total < 0:
        raise MemoryError("sample_count could not allocate its work space")
    # the outputs as rows of one allocation and the counters in numpy: torch calls let other
    # batch threads take Python's lock, so a hop makes as few as it can
    # row 0 is room for a block's local source ids beside the seed positions (`index_room`)
    buffer = torch.empty((3 + with_eids + with_etypes, total), dtype=torch.int64)
    out = buffer.unbind(0)[1:]
    counters = np.zeros(len(cscs), dtype=np.int64)
    got = lib.sample_uniform(*args, counters.ctypes.data, out[0].data_ptr(), out[1].data_ptr(),
                             out[2].data_ptr() if with_eids else None, out[-1].data_ptr() if with_etypes else None)
    if got == -2:
        raise IndexError("the CSC's indices point outside its id map, or its typed runs outside their rows "
                         "(a corrupt partition?)")
    if not 0 <= got <= total:
        raise RuntimeError(f"sample_uniform wrote {got} edges into room for {total}")
    return tuple(a[:got] if got < total else a for a in out)


def index_room(seed_pos: torch.Tensor) -> torch.Tensor | None:
    """The (2, n) tensor whose second row is `seed_pos` and whose first is free, when
    `sample_uniform_native` or a merge laid them out so (row 0 of their buffer), else None."""
    base, n = seed_pos._base, seed_pos.numel()
    if base is None or not n or base.dim() != 2 or base.shape[1] != n or seed_pos.data_ptr() != base.data_ptr() + 8 * n:
        return None
    return base[:2]


def _without_replacement(start, deg, fanout, prob, generator):
    if prob is not None:
        return _weighted_without_replacement(start, deg, fanout, prob, generator)
    full = deg <= fanout
    seg_a, pos_a = _segments(torch.where(full, deg, 0))
    big = torch.nonzero(~full).flatten()
    offsets = _floyd(deg[big], fanout, generator)
    seg_b = big.repeat_interleave(fanout)
    slots_b = (start[big].unsqueeze(1) + offsets).reshape(-1)
    seg, slots = torch.cat([seg_a, seg_b]), torch.cat([start[seg_a] + pos_a, slots_b])
    order = torch.argsort(seg, stable=True)  # seed after seed, as every other draw comes
    return seg.index_select(0, order), slots.index_select(0, order)


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
    w_c = prob[slots_c]
    cum = torch.cumsum(w_c / total_by_seed[seeds_with][seg_c], 0)
    local_seg = torch.arange(seeds_with.numel()).repeat_interleave(fanout)
    idx = torch.searchsorted(cum, local_seg + u, right=True)
    # guard against rounding at a segment's end: stay inside the seed's own range
    first = torch.cumsum(deg[seeds_with], 0) - deg[seeds_with]
    idx = torch.minimum(torch.maximum(idx, first[local_seg]), first[local_seg] + deg[seeds_with][local_seg] - 1)
    # a draw that rounding put on a zero-weight slot moves back to the nearest positive one before it
    zero = w_c[idx] == 0
    if bool(zero.any()):
        positive = torch.where(w_c > 0, torch.arange(slots_c.numel()), -1)
        last_positive = torch.cummax(positive, 0).values
        idx[zero] = last_positive[idx[zero]]
    return seg, slots_c[idx]
