"""Negative samplers with DGL's names (`dgl.dataloading.negative_sampler`): called as
`sampler(g, eids)`, they return the (src, dst) node pairs scored as non-edges for a batch of
positive edges. Draws come from the batch's generator when the loader passes one, so a
seeded loader gives the same negatives in this process and in sampler processes."""

from __future__ import annotations

import torch

from ..block import first_positions
from ..errors import InputError
from ..tensor_graph import Graph


def _count(k, what: str) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"{what} must be a positive integer, got {k!r}")
    return k


def _call(sampler, g, eids, generator):
    """DGL's call: (src, dst) for a tensor of edge ids, {edge type: (src, dst)} in per-type ids
    for a dict of them (a heterogeneous graph's)."""
    from ..sampling.neighbor import homogeneous_ids, type_map

    homo = homogeneous_ids(g, eids, "edge ids", "edge")
    src, dst = sampler.pairs(g, homo, generator)
    if not isinstance(eids, dict):
        return src, dst
    types = type_map(g)
    if types.is_homogeneous:
        return {types.canonical_etypes[0]: (src, dst)}
    kinds = types.map_to_per_etype(homo)[0].repeat_interleave(sampler.k)
    out = {}
    for i, c in enumerate(types.canonical_etypes):
        at = kinds == i
        if bool(at.any()):
            out[c] = (types.map_to_per_ntype(src[at])[1], types.map_to_per_ntype(dst[at])[1])
    return out


def endpoints(g, eids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Homogeneous (src, dst) of homogeneous edge ids, on a `Graph` or a distributed graph."""
    from ..distributed.partitions import find_edges

    return g.find_edges(eids) if isinstance(g, Graph) else find_edges(g, eids)


class PerSourceUniform:
    """`k` negatives per positive edge (u, v): (u, v') with v' uniform over the nodes of the
    destination type (DGL's `Uniform`)."""

    def __init__(self, k: int):
        self.k = _count(k, "the number of negatives per edge")

    def __call__(self, g, eids, generator: torch.Generator | None = None):
        return _call(self, g, eids, generator)

    def pairs(self, g, eids: torch.Tensor, generator: torch.Generator | None = None):
        """(src, dst) homogeneous ids of the negatives of homogeneous edge ids `eids`."""
        from ..sampling.neighbor import type_map

        src, _ = endpoints(g, eids)
        src = src.repeat_interleave(self.k)
        types = type_map(g)
        if types.is_homogeneous:
            return src, torch.randint(0, g.num_nodes(), (src.numel(),), generator=generator)
        kinds = types.map_to_per_etype(eids)[0].repeat_interleave(self.k)
        dst = torch.empty_like(src)
        for i, c in enumerate(types.canonical_etypes):  # a type at a time: v' among c's destination type
            at = torch.nonzero(kinds == i).flatten()
            if at.numel():
                drawn = torch.randint(0, g.num_nodes(c[2]), (at.numel(),), generator=generator)
                dst[at] = types.map_to_homo_nid(drawn, c[2])
        return src, dst

    def spec(self) -> dict:
        return {"kind": "per_source_uniform", "k": self.k}


Uniform = PerSourceUniform


class GlobalUniform:
    """Up to `k` negatives per positive edge, as node pairs (u', v') drawn uniformly over all
    pairs; self-loops are left out with `exclude_self_loops`, and pairs that are edges of the
    graph always (their in-edges are looked up, on a DistGraph too). With `replace=False` a
    pair is not drawn twice in one batch. Fewer pairs come back when rejections remain after
    the redraws, as in DGL."""

    REDRAWS = 3

    def __init__(self, k: int, exclude_self_loops: bool = True, replace: bool = False):
        self.k = _count(k, "the number of negatives per edge")
        self.exclude_self_loops, self.replace = bool(exclude_self_loops), bool(replace)

    def __call__(self, g, eids, generator: torch.Generator | None = None):
        return _call(self, g, eids, generator)

    def pairs(self, g, eids: torch.Tensor, generator: torch.Generator | None = None):
        """(src, dst) homogeneous ids of up to k negatives per edge of `eids`."""
        from ..sampling import sample_hop

        if not g.is_homogeneous:
            raise InputError("GlobalUniform draws pairs of one node type; use PerSourceUniform on a heterogeneous "
                             "graph")
        n = g.num_nodes()
        want = eids.numel() * self.k
        src = dst = torch.empty(0, dtype=torch.int64)
        for _ in range(self.REDRAWS):
            if src.numel() >= want:
                break
            more = 2 * (want - src.numel())  # draw extra, keep what survives the checks
            u = torch.randint(0, n, (more,), generator=generator)
            v = torch.randint(0, n, (more,), generator=generator)
            keep = u != v if self.exclude_self_loops else torch.ones(more, dtype=torch.bool)
            u, v = u[keep], v[keep]
            found = sample_hop(g, torch.unique(v), -1)  # every in-edge of the candidates' destinations
            keep = ~torch.isin(u * n + v, found.src * n + found.dst)
            u, v = torch.cat([src, u[keep]]), torch.cat([dst, v[keep]])
            if not self.replace:
                first = first_positions(u * n + v)
                u, v = u[first], v[first]
            src, dst = u, v
        return src[:want], dst[:want]

    def spec(self) -> dict:
        return {"kind": "global_uniform", "k": self.k, "exclude_self_loops": self.exclude_self_loops,
                "replace": self.replace}


def from_spec(spec: dict | None):
    """The negative sampler a `spec()` describes (in a sampler process)."""
    if spec is None:
        return None
    if spec["kind"] == "per_source_uniform":
        return PerSourceUniform(spec["k"])
    return GlobalUniform(spec["k"], spec["exclude_self_loops"], spec["replace"])
