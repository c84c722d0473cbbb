"""`load_partition`: one partition's arrays, memory-mapped (copy-on-write) and checked against the config."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from ..errors import PartitionError
from .book import RangePartitionBook
from ..tensor_graph import typed_indptr
from .layout import PartMeta, PartitionConfig


@dataclass
class Partition:
    """A partition: owned nodes first then halo nodes (local ids), and the in-edges (CSC) of
    its nodes. `node_data[ntype][name]` rows follow the owned per-type id range."""

    part_id: int
    graph_name: str
    book: RangePartitionBook
    global_nid: torch.Tensor  # local id -> global (new homogeneous) id
    num_inner_nodes: int
    num_inner_edges: int
    indptr: torch.Tensor
    indices: torch.Tensor  # local source ids
    stored_eids: torch.Tensor | None  # global edge id of each stored edge; None: its own range, in order
    out_degree: torch.Tensor  # out-degree of each owned node, over the whole graph
    node_data: dict[str, dict[str, torch.Tensor]]
    edge_data: dict[str, dict[str, torch.Tensor]]

    @property
    def ntypes(self) -> list[str]:
        return self.book.ntypes

    @property
    def canonical_etypes(self) -> list[tuple[str, str, str]]:
        return self.book.canonical_etypes

    @property
    def num_local_nodes(self) -> int:
        return int(self.global_nid.numel())

    def in_degree(self) -> torch.Tensor:
        """In-degree of each owned node (all its in-edges are stored here)."""
        return self.indptr[1:self.num_inner_nodes + 1] - self.indptr[:self.num_inner_nodes]

    @cached_property
    def eid_start(self) -> int | None:
        """`eids` is the range eid_start, eid_start + 1, ... (the writer's layout: a stored
        edge's id is its CSC slot plus this), or None; lets sampling add instead of gather."""
        if self.stored_eids is None:
            return self.book.edge_range(self.part_id, None)[0]
        return _range_start(self.stored_eids)

    @cached_property
    def eids(self) -> torch.Tensor:
        """Global edge id of every stored edge. Without an eids file this is a range made on
        first use (8 bytes an edge): hot paths use `eid_start` instead."""
        if self.stored_eids is not None:
            return self.stored_eids
        return torch.arange(self.eid_start, self.eid_start + self.num_edges(), dtype=torch.int64)

    # ---- DGL's view of a partition as a local graph (`DistGraph.local_partition`, `load_partition`)
    @property
    def ndata(self) -> dict[str, torch.Tensor]:
        """`NID` (global id of every local node) and `inner_node` (owned, not halo)."""
        inner = torch.zeros(self.num_local_nodes, dtype=torch.bool)
        inner[:self.num_inner_nodes] = True
        return {"_ID": self.global_nid, "inner_node": inner}

    @property
    def edata(self) -> dict[str, torch.Tensor]:
        """`EID` (global id of every stored edge) and `inner_edge` (owned: its destination is)."""
        lo, hi = self.book.edge_range(self.part_id, None)
        return {"_ID": self.eids, "inner_edge": (self.eids >= lo) & (self.eids < hi)}

    def num_nodes(self) -> int:
        return self.num_local_nodes

    def num_edges(self) -> int:
        return int(self.indices.numel())

    @cached_property
    def typed_indptr(self) -> torch.Tensor | None:
        """With several edge types, the CSC's indptr over (local node, edge type) pairs (a node's
        in-edges are one run per type); from its file, or computed for partitions written
        without it. None with one edge type."""
        if len(self.canonical_etypes) == 1:
            return None
        kinds, _ = self.book.map_to_per_etype(self.eids)
        return typed_indptr(self.indptr, kinds, len(self.canonical_etypes))

    @cached_property
    def _owned_edge_slots(self) -> torch.Tensor:
        """CSC slot of each owned edge, by edge id minus the range's start (8 bytes an owned
        edge, made on first use: only partitions whose stored edges are not their own range in
        order need it)."""
        lo, hi = self.book.edge_range(self.part_id, None)
        inner = torch.nonzero((self.eids >= lo) & (self.eids < hi)).flatten()
        slots = torch.empty(hi - lo, dtype=torch.int64)
        slots[self.eids[inner] - lo] = inner
        return slots

    def find_owned_edges(self, eids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(source, destination) global node ids of edges `eids`, which this partition owns,
        read off its CSC."""
        if self.stored_eids is None:
            slots = eids - self.eid_start
        else:
            slots = self._owned_edge_slots[eids - self.book.edge_range(self.part_id, None)[0]]
        dst_local = torch.searchsorted(self.indptr, slots, right=True) - 1
        return self.global_nid[self.indices[slots]], self.global_nid[dst_local]

    @cached_property
    def owned_nid_start(self) -> int | None:
        """The owned nodes' global ids (`global_nid[:num_inner_nodes]`, the writer's layout) are
        a range from this, or None; lets sampling add instead of gather for all but halo nodes."""
        return _range_start(self.global_nid[:self.num_inner_nodes])


def _range_start(ids: torch.Tensor) -> int | None:
    """The first value of `ids` if they are consecutive increasing integers, else None."""
    if not ids.numel():
        return None
    first = int(ids[0])
    if int(ids[-1]) - first != ids.numel() - 1 or not bool((ids[1:] - ids[:-1] == 1).all()):
        return None
    return first



def _tensor(a: np.ndarray) -> torch.Tensor:
    """Wrap without copying; mapped arrays are copy-on-write, so writes stay in this process."""
    return torch.from_numpy(a)


def _edge_ids(cfg: PartitionConfig, meta: PartMeta, n_edges: int, elo: int, ehi: int,
              mmap: bool) -> torch.Tensor | None:
    """Global id of each stored in-edge from its file, or None when the config lists none: the
    partition's own edge range in order (what the writer leaves out)."""
    if meta.file("eids") is not None:
        return _tensor(cfg.load_array(meta.file("eids"), rows=n_edges, dtype="int64", mmap=mmap))
    if n_edges != ehi - elo:
        raise PartitionError(f"{cfg.path}: partition {meta.part_id} stores {n_edges} edges but lists no eids file, "
                             f"which only fits its own {ehi - elo} edges; re-partition")
    return None


def load_partition(part_config: str | Path, part_id: int, mmap: bool = True) -> Partition:
    """Load partition `part_id` of the partitioning described by `part_config` (the JSON)."""
    cfg = PartitionConfig.load(part_config)
    meta = cfg.part(part_id)
    book = RangePartitionBook(cfg, part_id)
    n_local, n_edges = meta.num_local_nodes, meta.num_local_edges
    n_inner, n_inner_edges = meta.num_inner_nodes, meta.num_inner_edges
    lo, hi = book.node_range(part_id, None)
    elo, ehi = book.edge_range(part_id, None)
    if (hi - lo, ehi - elo) != (n_inner, n_inner_edges):
        raise PartitionError(f"{cfg.path}: partition {part_id} lists {n_inner} nodes / {n_inner_edges} edges "
                             f"but node_map/edge_map give it {hi - lo} / {ehi - elo}")
    load = cfg.load_array
    arrays = {
        "global_nid": load(meta.file("global_nid"), rows=n_local, dtype="int64", mmap=mmap),
        "indptr": load(meta.file("indptr"), rows=n_local + 1, dtype="int64", mmap=mmap),
        "indices": load(meta.file("indices"), rows=n_edges, dtype="int64", mmap=mmap),
        "out_degree": load(meta.file("out_degree"), rows=n_inner, dtype="int64", mmap=mmap),
    }
    if int(arrays["indptr"][-1]) != n_edges:
        raise PartitionError(f"{cfg.dir / meta.file('indptr')} ends at {int(arrays['indptr'][-1])} but the "
                             f"partition has {n_edges} edges; re-partition")
    typed = None
    if meta.file("typed_indptr") is not None:
        typed = _tensor(load(meta.file("typed_indptr"), rows=n_local * len(book.canonical_etypes) + 1,
                             dtype="int64", mmap=mmap))
    node_data: dict[str, dict[str, torch.Tensor]] = {}
    for t, files in meta.file("node_data").items():
        rows = book.node_range(part_id, t)[1] - book.node_range(part_id, t)[0]
        node_data[t] = {k: _tensor(load(f, rows=rows, dtype=cfg.node_data[t][k].dtype, mmap=mmap))
                        for k, f in files.items()}
    edge_data: dict[str, dict[str, torch.Tensor]] = {}
    for key, files in meta.file("edge_data").items():
        rows = book.edge_range(part_id, key)[1] - book.edge_range(part_id, key)[0]
        edge_data[key] = {k: _tensor(load(f, rows=rows, dtype=cfg.edge_data[key][k].dtype, mmap=mmap))
                          for k, f in files.items()}
    part = Partition(
        part_id=part_id,
        graph_name=cfg.graph_name,
        book=book,
        global_nid=_tensor(arrays["global_nid"]),
        num_inner_nodes=n_inner,
        num_inner_edges=n_inner_edges,
        indptr=_tensor(arrays["indptr"]),
        indices=_tensor(arrays["indices"]),
        stored_eids=_edge_ids(cfg, meta, n_edges, elo, ehi, mmap),
        out_degree=_tensor(arrays["out_degree"]),
        node_data=node_data,
        edge_data=edge_data,
    )
    if typed is not None:
        part.__dict__["typed_indptr"] = typed  # the cached property's value, from the file
    return part


def load_partition_book(part_config: str | Path, part_id: int = 0) -> RangePartitionBook:
    """The partition book alone: reads only the JSON, no array files."""
    return RangePartitionBook(PartitionConfig.load(part_config), part_id)
