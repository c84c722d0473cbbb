"""Neighbour sampling where the CSC is in this process: a whole `Graph`, or a partition's owned nodes."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np
import torch

from ..block import EID
from ..errors import InputError
from ..tensor_graph import Graph
from ..ids import as_id_tensor, int64_contiguous, resolve_etype
from ..partition import Partition
from ..native import kernels
from .kernel import Csc, index_room, sample_csc_ids, sample_uniform_native
from .weights import SlotWeights


class SampledEdges:
    """Sampled edges in global ids: `src[i] -> dst[i]` is edge `eids[i]`; `seed_pos[i]` is the
    position, in the seeds asked for, of the seed the edge was drawn for (None if unknown),
    so that building a block needs no search for each edge's destination. As a frontier (what
    DGL's `sample_neighbors` returns), `edges()` and `edata[EID]` give the same.

    With in-edges, `dst` may be left None and `seeds` given instead: it is then
    `seeds[seed_pos]`, gathered only if asked for (a block never asks). `grouped`: the edges
    are known to come seed after seed (seed_pos ascending), so a block need not check."""

    def __init__(self, src: torch.Tensor, dst: torch.Tensor | None, eids: torch.Tensor,
                 seed_pos: torch.Tensor | None = None, seeds: torch.Tensor | None = None,
                 etype: torch.Tensor | None = None, grouped: bool = False, room: torch.Tensor | None = None):
        if dst is None and (seeds is None or seed_pos is None):
            raise ValueError("SampledEdges needs dst, or the seeds and each edge's seed position")
        self.src, self.eids, self.seed_pos, self._dst, self._seeds = src, eids, seed_pos, dst, seeds
        # a (2, n) tensor whose second row is seed_pos and whose first is free, when they were
        # made so: a block built from these edges takes it as its edge index (`block_from_edges`)
        self.room = room
        self.grouped = grouped and seed_pos is not None
        self.etype = etype  # typed sampling: each edge's type id (in the graph's edge-type order)
        self.graph_num_nodes: int | None = None  # set by sample_neighbors: the frontier holds all nodes
        self.types = None  # set by sample_neighbors on a heterogeneous graph: its id map (per-type views)

    def edges(self, form: str = "uv", order: str = "eid", etype=None):
        """(src, dst) ('uv'), edge ids ('eid'), or (src, dst, edge ids) ('all'): global ids, or on
        a heterogeneous graph the per-type ids of the edges of `etype`."""
        src, dst, eids = self.src, self.dst, self.eids
        if self.types is not None:
            c, at = self._of_type(etype)
            src = self.types.map_to_per_ntype(src[at])[1]
            dst = self.types.map_to_per_ntype(dst[at])[1]
            eids = self.types.map_to_per_etype(eids[at])[1]
        if form == "uv":
            return src, dst
        if form == "eid":
            return eids
        if form == "all":
            return src, dst, eids
        raise InputError(f"form must be 'uv', 'eid' or 'all', got {form!r}")

    def _of_type(self, etype) -> tuple[tuple[str, str, str], torch.Tensor]:
        """The canonical type named and the positions of its edges."""
        canonical = self.types.canonical_etypes
        if etype is None and len(canonical) != 1:
            raise InputError(f"the graph has edge types {canonical}; pass etype=")
        c = canonical[0] if etype is None else resolve_etype(etype, canonical)
        kinds, _ = self.types.map_to_per_etype(self.eids)
        return c, torch.nonzero(kinds == canonical.index(c)).flatten()

    @property
    def edata(self) -> dict:
        """{EID: edge ids}; per edge type ({EID: {type: per-type ids}}) on a heterogeneous graph."""
        if self.types is None:
            return {EID: self.eids}
        kinds, per_type = self.types.map_to_per_etype(self.eids)
        return {EID: {c: per_type[kinds == i] for i, c in enumerate(self.types.canonical_etypes)}}

    def num_edges(self, etype=None) -> int:
        if self.types is None or etype is None:
            return int(self.eids.numel())
        return int(self._of_type(etype)[1].numel())

    def num_nodes(self, ntype=None) -> int:
        """The graph's node count (of `ntype`): a frontier holds all of them, as DGL's does."""
        if self.graph_num_nodes is None:
            raise InputError("these edges were not sampled from a graph by sample_neighbors: no node count")
        if ntype is None or self.types is None:
            return self.graph_num_nodes
        return int(self.types.num_nodes(ntype))

    number_of_edges = num_edges
    number_of_nodes = num_nodes

    @property
    def dst(self) -> torch.Tensor:
        if self._dst is None:
            self._dst = self._seeds.index_select(0, self.seed_pos)
        return self._dst

    def runs(self, positions: torch.Tensor | None = None) -> "SeedRuns":
        """These edges (grouped by seed position, ascending) as `SeedRuns`, where `positions`
        maps the positions they were drawn for into the seeds of the merge (None: the same)."""
        at = self.seed_pos if positions is None else positions.index_select(0, self.seed_pos)
        return SeedRuns(at, None, self.src, self.eids, self.etype)

    @staticmethod
    def merged(seeds: torch.Tensor, runs: list["SeedRuns"]) -> "SampledEdges":
        """The edges of several parts in seed order, grouped by seed as a block wants them: each
        part answered for its own seeds (no seed in two parts), in the order of their positions,
        so one pass over the seeds takes each one's run from its part (C), with no sort. Raises
        `MalformedRuns` naming the first part whose answer does not fit its seeds."""
        typed = runs[0].etype is not None
        for k, r in enumerate(runs):
            if r.eids.numel() != r.src.numel() or (typed and (r.etype is None or r.etype.numel() != r.src.numel())) \
                    or (r.counts is not None and r.counts.numel() != r.pos.numel()):
                raise MalformedRuns(k)
        if len(runs) == 1 and runs[0].counts is None:  # (a fallback path's one part: no merge to make)
            r = runs[0]
            return SampledEdges(r.src, None, r.eids, r.edge_positions(0, seeds.numel()), seeds, r.etype, grouped=True)
        lib = kernels()
        if lib is None:
            taken, parts = torch.zeros(seeds.numel(), dtype=torch.bool), []
            for k, r in enumerate(runs):
                parts.append(r.edge_positions(k, seeds.numel()))
                mine = torch.unique_consecutive(parts[-1])
                if bool(taken[mine].any()):
                    raise MalformedRuns(k)
                taken[mine] = True
            rows = torch.cat(parts)
            order = torch.argsort(rows, stable=True)
            pick = lambda name: torch.cat([getattr(r, name) for r in runs]).index_select(0, order)  # noqa: E731
            return SampledEdges(pick("src"), None, pick("eids"), rows.index_select(0, order), seeds,
                                pick("etype") if typed else None, grouped=True)
        n, nparts = seeds.numel(), len(runs)
        arrays = [[int64_contiguous(a) for a in (r.pos, r.src, r.eids, *([r.etype] if typed else []))]
                  + [None if r.counts is None else int64_contiguous(r.counts)] for r in runs]
        table = lambda k: (ctypes.c_void_p * nparts)(*(None if a[k] is None else a[k].data_ptr()  # noqa: E731
                                                       for a in arrays))
        sizes = np.array([[a[0].numel(), a[1].numel()] for a in arrays], dtype=np.int64).T.copy()
        total = int(sizes[1].sum())
        # one allocation: room for a block's local ids (`index_room`), rows, src, eids, etype
        buffer = torch.empty((4 + typed, total), dtype=torch.int64)
        _, rows, src, *rest = buffer.unbind(0)
        out = [src, rest[0], rows, *rest[1:]]
        work = np.empty(2 * n + nparts, dtype=np.int64)
        got = lib.merge_runs(n, nparts, table(0), sizes[0].ctypes.data, table(-1), sizes[1].ctypes.data, table(1),
                             table(2), table(3) if typed else None, out[0].data_ptr(), out[1].data_ptr(),
                             out[3].data_ptr() if typed else None, out[2].data_ptr(), work.ctypes.data)
        if got < 0:
            raise MalformedRuns(-1 - got)
        if got != total:
            raise RuntimeError(f"merging sampled edges wrote {got} of {total}")
        return SampledEdges(out[0], None, out[1], out[2], seeds, out[3] if typed else None, grouped=True,
                            room=buffer[:2])

    def select(self, keep: torch.Tensor) -> "SampledEdges":
        """The edges where `keep` is true."""
        out = SampledEdges(self.src[keep], self.dst[keep], self.eids[keep],
                           None if self.seed_pos is None else self.seed_pos[keep], None,
                           None if self.etype is None else self.etype[keep], self.grouped)
        out.graph_num_nodes, out.types = self.graph_num_nodes, self.types
        return out


class MalformedRuns(ValueError):
    """Part `part`'s answer does not fit the seeds it was asked for: a position out of range or
    out of order or also another part's, a negative count, or counts that do not add up."""

    def __init__(self, part: int):
        super().__init__(f"part {part}'s sampled edges do not fit the seeds it was asked for")
        self.part = part


@dataclass
class SeedRuns:
    """One part's sampled edges, as it answers: the positions of the seeds it sampled (ascending,
    in the seeds asked for) and each one's number of edges, or with `counts` None each edge's
    seed position; and the edges seed after seed."""

    pos: torch.Tensor
    counts: torch.Tensor | None
    src: torch.Tensor
    eids: torch.Tensor
    etype: torch.Tensor | None = None

    def edge_positions(self, part: int, n: int) -> torch.Tensor:
        """Each edge's seed position, checked as the C merge checks this part's answer (part
        `part` of a merge of n seeds): positions in range and in order, counts that add up."""
        pos = self.pos
        if pos.numel() and (int(pos.min()) < 0 or int(pos.max()) >= n or bool((pos[1:] < pos[:-1]).any())):
            raise MalformedRuns(part)
        if self.counts is None:
            return pos
        if self.counts.numel() and not 0 <= int(self.counts.min()) <= int(self.counts.max()) <= self.src.numel():
            raise MalformedRuns(part)  # (each count bounded first: then their sum cannot wrap)
        if int(self.counts.sum()) != self.src.numel():
            raise MalformedRuns(part)
        return pos.repeat_interleave(self.counts)


def sample_graph(g: Graph, seeds, fanout, edge_dir: str = "in", replace: bool = False,
                 prob: torch.Tensor | None = None, generator: torch.Generator | None = None) -> SampledEdges:
    """Sample up to `fanout` in-edges (or out-edges) of every seed of an in-memory graph; a
    tensor `fanout` gives one per edge type (`etype_fanouts`)."""
    seeds = as_id_tensor(seeds, "seeds")
    if seeds.numel() and (int(seeds.min()) < 0 or int(seeds.max()) >= g.num_nodes()):
        raise InputError(f"seed ids must lie in [0, {g.num_nodes()}), got [{int(seeds.min())}, {int(seeds.max())}]")
    if edge_dir not in ("in", "out"):
        raise InputError(f"edge_dir must be 'in' or 'out', got {edge_dir!r}")
    indptr, other, eids = g.csc() if edge_dir == "in" else g.csr()
    slot_prob = prob[eids] if prob is not None else None
    typed = {} if g.is_homogeneous else {"typed_indptr": g.typed_indptr(edge_dir),
                                         "num_etypes": len(g.canonical_etypes)}
    seg, other_ids, edge_ids, *etype = sample_csc_ids(Csc(indptr, other, eid_map=eids, **typed), seeds, fanout,
                                                      replace, slot_prob, generator)
    etype = etype[0] if etype else None
    if edge_dir == "in":
        return SampledEdges(other_ids, None, edge_ids, seg, seeds, etype, room=index_room(seg))
    return SampledEdges(seeds.index_select(0, seg), other_ids, edge_ids, seg, None, etype)


def partition_csc(part: Partition) -> Csc:
    """A partition's CSC for the kernels: seeds are its global ids, owned sources get their
    ids by an add, halo sources through `global_nid`, edges by an add when they are a range."""
    owned, book, p = part.owned_nid_start, part.book, part.part_id
    return Csc(part.indptr, part.indices, part.global_nid, owned or 0, part.num_inner_nodes if owned is not None else 0,
               None if part.eid_start is not None else part.eids, part.eid_start or 0,
               book.node_range(p, None)[0], part.typed_indptr, len(book.canonical_etypes))


def sample_partition(part: Partition, seeds, fanout, replace: bool = False,
                     weights: list[torch.Tensor | None] | None = None,
                     generator: torch.Generator | None = None) -> SampledEdges:
    """Sample in-edges of seeds owned by `part` (global homogeneous ids) on its local CSC.

    `weights`, if given, holds per edge type the partition's rows of the edges' weights (its
    per-type edge range; None: weight 1), as `weights.edge_weights` reads them from the store.
    """
    seeds = as_id_tensor(seeds, "seeds")
    lo, hi = part.book.node_range(part.part_id, None)
    if seeds.numel():
        low, high = seeds.aminmax()
        if int(low) < lo or int(high) >= hi:
            raise InputError(f"partition {part.part_id} owns nodes [{lo}, {hi}); seeds outside it were sent to it")
    csc = partition_csc(part)
    slot_prob = None if weights is None else SlotWeights(csc, part, weights)
    seg, src, eids, *etype = sample_csc_ids(csc, seeds, fanout, replace, slot_prob, generator)
    return SampledEdges(src, None, eids, seg, seeds, etype[0] if etype else None)


def sample_partitions(jobs: dict[int, tuple[Partition, torch.Generator | None, list | None]],
                      seeds: torch.Tensor, owner: torch.Tensor, fanout, replace: bool = False) -> SampledEdges:
    """Seeds of several partitions at once: seed i on partition `owner[i]`, whose job is
    (partition, generator, its edge weights per type or None); seeds of partitions without a
    job are left out. Each partition's share is what `sample_partition` draws from its generator. Uniform
    draws without replacement run in one pass of C in seed order (edges grouped by seed, as a
    block wants them); the rest partition by partition."""
    if not jobs:
        empty = seeds.new_empty(0)
        return SampledEdges(empty, None, empty, empty, seeds, empty if isinstance(fanout, torch.Tensor) else None,
                            grouped=True)
    if not replace and all(w is None for _, _, w in jobs.values()):
        n = max(jobs) + 1
        cscs, gens = [None] * n, [None] * n
        for m, (part, gen, _) in jobs.items():
            cscs[m], gens[m] = partition_csc(part), gen
        native = sample_uniform_native(cscs, seeds, owner, fanout, gens, with_etypes=isinstance(fanout, torch.Tensor))
        if native is not None:
            seg, src, eids, *etype = native
            return SampledEdges(src, None, eids, seg, seeds, etype[0] if etype else None, grouped=True,
                                room=index_room(seg))
    runs = []
    for m, (part, gen, weights) in jobs.items():
        pos = torch.nonzero(owner == m).flatten()
        e = sample_partition(part, seeds.index_select(0, pos), fanout, replace, weights, gen)
        runs.append(e.runs(pos))
    return SampledEdges.merged(seeds, runs)
