"""`RangePartitionBook`: which partition owns an id, from range offsets alone.

After relabelling, partition p owns one contiguous range of ids per type, so every
question (owner, local index, owned ids, type of a homogeneous id) is a `searchsorted`
over (num_parts x num_types) offsets: memory grows with the number of parts, not ids.
"""

from __future__ import annotations

import numpy as np
import torch

from ..arrays import offsets
from ..errors import InputError, PartitionError
from ..tensor_graph import per_type
from ..ids import DEFAULT_ETYPE, DEFAULT_NTYPE, as_id_tensor, resolve_etype
from .layout import PartitionConfig, etype_key

HOMOGENEOUS = None  # a `type` argument meaning "ids are homogeneous ids, not per-type ids"


class TypedRanges:
    """Ranges of one kind of id (nodes or edges): per type, one [start, end) per partition,
    in homogeneous ids ordered by (partition, type)."""

    def __init__(self, kind: str, types: list[str], ranges: dict[str, np.ndarray], source: str):
        self.kind, self.types = kind, types
        homo = np.stack([np.asarray(ranges[t], dtype=np.int64).reshape(-1, 2) for t in types], axis=1)  # (P, T, 2)
        sizes = homo[..., 1] - homo[..., 0]
        flat_starts = homo[..., 0].reshape(-1)
        if (flat_starts != offsets(sizes.reshape(-1))[:-1]).any():
            raise PartitionError(f"{source}: {kind} ranges must tile the id space in (partition, type) order")
        self.num_parts = homo.shape[0]
        self.part_offsets = torch.from_numpy(offsets(sizes.sum(1)))
        self.typed_offsets = {t: torch.from_numpy(offsets(sizes[:, i])) for i, t in enumerate(types)}
        self.homo_starts = {t: torch.from_numpy(homo[:, i, 0].copy()) for i, t in enumerate(types)}
        self.block_starts = torch.from_numpy(flat_starts.copy())
        nt = len(types)
        typed_block_starts = np.stack([offsets(sizes[:, i])[:-1] for i in range(nt)], axis=1)
        self.block_typed_starts = torch.from_numpy(typed_block_starts.reshape(-1).copy())
        self.block_type = torch.arange(self.num_parts * nt) % nt
        self.block_shift = self.block_starts - self.block_typed_starts  # homogeneous id - per-type id, per block
        # the same offsets as Python ints, for the questions asked on every mini-batch (a tensor
        # read made the id count 14 % of a batch's time under Python's lock)
        self._bounds = {HOMOGENEOUS: self.part_offsets.tolist(), **{t: o.tolist() for t, o in self.typed_offsets.items()}}

    def count(self, t: str | None) -> int:
        return self._bounds[t][-1]

    def _checked(self, ids, t: str | None) -> torch.Tensor:
        ids = as_id_tensor(ids, f"{self.kind} ids")
        n = self.count(t)
        lo, hi = torch.aminmax(ids) if ids.numel() else (0, -1)  # one torch call where min and max were two
        if int(lo) < 0 or int(hi) >= n:
            bad = ids[(ids < 0) | (ids >= n)][0].item()
            what = f"{self.kind} type {t!r}" if t is not HOMOGENEOUS else "the graph"
            raise InputError(f"{self.kind} id {bad} is out of range: {what} has {self.kind} ids 0..{n - 1}")
        return ids

    def to_partid(self, ids, t: str | None) -> torch.Tensor:
        bounds = self.part_offsets if t is HOMOGENEOUS else self.typed_offsets[t]
        return torch.searchsorted(bounds, self._checked(ids, t), right=True) - 1

    def to_local(self, ids, partid: int, t: str | None) -> torch.Tensor:
        """Index within the partition's owned ids of that type (homogeneous: within all its ids)."""
        ids = self._checked(ids, t)
        lo, hi = self.part_range(partid, t)
        if ids.numel() and (int(ids.min()) < lo or int(ids.max()) >= hi):
            raise InputError(f"some {self.kind} ids are not owned by partition {partid} (it owns [{lo}, {hi}))")
        return ids - lo

    def part_range(self, partid: int, t: str | None) -> tuple[int, int]:
        if not 0 <= partid < self.num_parts:
            raise InputError(f"partition id {partid} is out of range; there are {self.num_parts} partitions")
        bounds = self._bounds[t]
        return bounds[partid], bounds[partid + 1]

    def to_per_type(self, ids) -> tuple[torch.Tensor, torch.Tensor]:
        """Homogeneous ids -> (type index, per-type id)."""
        return per_type(self._checked(ids, HOMOGENEOUS), self.block_starts, self.block_type, self.block_shift)

    def to_homo(self, ids, t: str) -> torch.Tensor:
        """Per-type ids of type t -> homogeneous ids."""
        ids = self._checked(ids, t)
        if t is HOMOGENEOUS:
            return ids
        part = torch.searchsorted(self.typed_offsets[t], ids, right=True) - 1
        return ids - self.typed_offsets[t][part] + self.homo_starts[t][part]


class RangePartitionBook:
    """DGL-style partition book over contiguous ranges (`nid2partid`, `nid2localnid`, ...)."""

    def __init__(self, cfg: PartitionConfig, partid: int = 0):
        self.ntypes = cfg.ntypes
        self.canonical_etypes = cfg.canonical_etypes
        self.partid = partid
        source = str(cfg.path)
        self._nodes = TypedRanges("node", self.ntypes, cfg.node_map, source)
        self._edges = TypedRanges("edge", [etype_key(c) for c in self.canonical_etypes], cfg.edge_map, source)
        self._metadata = [
            {"machine_id": p, "num_nodes": int(self._nodes.part_offsets[p + 1] - self._nodes.part_offsets[p]),
             "num_edges": int(self._edges.part_offsets[p + 1] - self._edges.part_offsets[p])}
            for p in range(cfg.num_parts)
        ]

    @property
    def etypes(self) -> list[str]:
        return [c[1] for c in self.canonical_etypes]

    @property
    def is_homogeneous(self) -> bool:
        return self.ntypes == [DEFAULT_NTYPE] and self.canonical_etypes == [DEFAULT_ETYPE]

    # -------------------------------------------------------------- type arguments
    def _ntype(self, ntype: str | None) -> str | None:
        """A node type name; `None` or '_N' on a heterogeneous graph mean homogeneous ids."""
        if ntype in self.ntypes:
            return ntype
        if ntype in (None, DEFAULT_NTYPE):
            return HOMOGENEOUS
        raise InputError(f"unknown node type {ntype!r}; the graph has {self.ntypes}")

    def _etype(self, etype) -> str | None:
        if etype in (None, "_E", DEFAULT_ETYPE) and not self.is_homogeneous:
            return HOMOGENEOUS
        return etype_key(resolve_etype(DEFAULT_ETYPE if etype in (None, "_E") else etype, self.canonical_etypes))

    # ------------------------------------------------------------------- queries
    def num_partitions(self) -> int:
        return self._nodes.num_parts

    def metadata(self) -> list[dict]:
        return self._metadata

    def num_nodes(self, ntype: str | None = None) -> int:
        return self._nodes.count(self._ntype(ntype))

    def num_edges(self, etype=None) -> int:
        return self._edges.count(self._etype(etype))

    def nid2partid(self, nids, ntype: str | None = DEFAULT_NTYPE) -> torch.Tensor:
        return self._nodes.to_partid(nids, self._ntype(ntype))

    def eid2partid(self, eids, etype=None) -> torch.Tensor:
        return self._edges.to_partid(eids, self._etype(etype))

    def nid2localnid(self, nids, partid: int, ntype: str | None = DEFAULT_NTYPE) -> torch.Tensor:
        return self._nodes.to_local(nids, partid, self._ntype(ntype))

    def eid2localeid(self, eids, partid: int, etype=None) -> torch.Tensor:
        return self._edges.to_local(eids, partid, self._etype(etype))

    def node_range(self, partid: int, ntype: str | None = DEFAULT_NTYPE) -> tuple[int, int]:
        """[start, end) of the ids of `ntype` (homogeneous ids for None) owned by `partid`."""
        return self._nodes.part_range(partid, self._ntype(ntype))

    def edge_range(self, partid: int, etype=None) -> tuple[int, int]:
        return self._edges.part_range(partid, self._etype(etype))

    def partid2nids(self, partid: int, ntype: str | None = DEFAULT_NTYPE) -> torch.Tensor:
        return torch.arange(*self.node_range(partid, ntype))

    def partid2eids(self, partid: int, etype=None) -> torch.Tensor:
        return torch.arange(*self.edge_range(partid, etype))

    def map_to_per_ntype(self, nids) -> tuple[torch.Tensor, torch.Tensor]:
        return self._nodes.to_per_type(nids)

    def map_to_per_etype(self, eids) -> tuple[torch.Tensor, torch.Tensor]:
        return self._edges.to_per_type(eids)

    def map_to_homo_nid(self, nids, ntype: str) -> torch.Tensor:
        return self._nodes.to_homo(nids, self._ntype(ntype))

    def map_to_homo_eid(self, eids, etype) -> torch.Tensor:
        return self._edges.to_homo(eids, self._etype(etype))
