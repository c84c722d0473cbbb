"""A graph as the streaming partitioner reads it: its types and counts, its edges a chunk at a
time in homogeneous ids and edge-id order, and its data as arrays whose rows are read on demand.

Three kinds of input give one: an `ArrayGraph` (its arrays may be memory-mapped, as `.npz`
members are), an `.npz` file (its members memory-mapped, never loaded whole) and DGL's chunked
format (`ChunkedGraph`, a chunk file at a time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...array_graph import ArrayGraph
from ...arrays import offsets
from ...errors import InputError

CHUNK_EDGES = 1 << 20  # edges per piece read (16 MB of int64 pairs): what a pass holds of the edges at once


@dataclass
class StreamSource:
    """Types, counts and readers of a graph too big to hold."""

    ntypes: list[str]
    canonical_etypes: list[tuple[str, str, str]]
    ntype_offsets: np.ndarray  # (T + 1,) homogeneous node id ranges per type
    etype_offsets: np.ndarray  # (R + 1,) homogeneous edge id ranges per type
    chunks: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]  # (src, dst) homogeneous ids, in edge-id order
    node_data: dict[str, dict[str, Any]] = field(default_factory=dict)  # per type: name -> rows (numpy-indexable)
    edge_data: dict[str, dict[str, Any]] = field(default_factory=dict)  # per "s:r:d" key
    name: str = "graph"
    node_names: np.ndarray | None = None  # string ids of an edge list, kept in the id maps

    def num_nodes(self) -> int:
        return int(self.ntype_offsets[-1])

    def num_edges(self) -> int:
        return int(self.etype_offsets[-1])

    def node_type_ids(self, nodes: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.ntype_offsets, nodes, side="right") - 1

    def edge_type_ids(self, eids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.etype_offsets, eids, side="right") - 1


def _pieces(src, dst, step: int = CHUNK_EDGES) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(src, dst) of two equal-length arrays (in memory, mapped or `FileArray`s), `step` at a time."""
    for i in range(0, len(src), step):
        yield np.array(src[i:i + step], dtype=np.int64), np.array(dst[i:i + step], dtype=np.int64)


def _checked(pieces, num_src: int, num_dst: int, src_base: int, dst_base: int, what: str):
    """Per-type pieces checked in range and moved to homogeneous ids."""
    for src, dst in pieces:
        if src.size and (src.min() < 0 or src.max() >= num_src or dst.min() < 0 or dst.max() >= num_dst):
            raise InputError(f"{what}: node ids outside [0, {num_src}) x [0, {num_dst}); fix the ids or the counts")
        src += src_base
        dst += dst_base
        yield src, dst


def from_array_graph(g: ArrayGraph, name: str = "graph") -> StreamSource:
    """The streaming view of an in-memory (or memory-mapped) graph."""
    from ..layout import etype_key

    src, dst = np.asarray(g.src), np.asarray(g.dst)
    return StreamSource(list(g.ntypes), [tuple(c) for c in g.canonical_etypes], np.asarray(g.ntype_offsets),
                        np.asarray(g.etype_offsets), lambda: _pieces(src, dst),
                        {t: {k: np.asarray(v) for k, v in g.nodes[t].data.items()} for t in g.ntypes},
                        {etype_key(c): {k: np.asarray(v) for k, v in g.edges[c].data.items()}
                         for c in g.canonical_etypes}, name)


def from_columns(src, dst, num_nodes: int, edge_data: dict[str, Any], name: str = "graph") -> StreamSource:
    """A graph of one node type and one edge type from (src, dst) columns of any integer dtype,
    in memory or memory-mapped (e.g. the head and tail columns of a KG's triples), and edge data
    read on demand by rows: nothing is copied whole."""
    if len(src) != len(dst):
        raise InputError(f"{name}: {len(src)} sources but {len(dst)} destinations")
    return StreamSource(["_N"], [("_N", "_E", "_N")], np.array([0, num_nodes], dtype=np.int64),
                        np.array([0, len(src)], dtype=np.int64),
                        lambda: _checked(_pieces(src, dst), num_nodes, num_nodes, 0, 0, f"edges of {name}"),
                        {"_N": {}}, {"_N:_E:_N": dict(edge_data)}, name)


def _typed_source(name: str, num_nodes: dict[str, int], etypes: list[tuple], pieces_of, ndata: dict,
                  edata: dict) -> StreamSource:
    """A source whose edges come per type in per-type ids (`pieces_of(etype)`)."""
    ntypes = list(num_nodes)
    noff = offsets(np.array([num_nodes[t] for t in ntypes], dtype=np.int64))
    base = {t: int(noff[i]) for i, t in enumerate(ntypes)}
    counts = []

    def chunks():
        for c in etypes:
            yield from _checked(pieces_of(c), num_nodes[c[0]], num_nodes[c[2]], base[c[0]], base[c[2]],
                                f"edges of {':'.join(c)} in {name}")

    for c in etypes:
        counts.append(pieces_of.count(c))
    return StreamSource(ntypes, [tuple(c) for c in etypes], noff, offsets(np.array(counts, dtype=np.int64)), chunks,
                        {t: dict(ndata.get(t, {})) for t in ntypes},
                        {":".join(c): dict(edata.get(c, {})) for c in etypes}, name)


class _ArrayPairs:
    """Per-type (src, dst) arrays read `CHUNK_EDGES` at a time."""

    def __init__(self, edges: dict):
        self.edges = edges

    def __call__(self, c):
        return _pieces(*self.edges[c])

    def count(self, c) -> int:
        return len(self.edges[c][0])


class _NpzBuild:
    """What `npz.read_npz` builds for the streaming partitioner: a `StreamSource` over its lazy members."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, src, dst, num_nodes, ndata=None, edata=None) -> StreamSource:
        etype = ("_N", "_E", "_N")
        return _typed_source(self.name, {"_N": int(num_nodes)}, [etype], _ArrayPairs({etype: (src, dst)}),
                             {"_N": ndata or {}}, {etype: edata or {}})

    def from_hetero(self, edges, num_nodes_dict, ndata=None, edata=None) -> StreamSource:
        return _typed_source(self.name, dict(num_nodes_dict), list(edges), _ArrayPairs(dict(edges)), ndata or {},
                             edata or {})


class _ChunkPairs:
    def __init__(self, cg):
        self.cg = cg

    def __call__(self, c):
        return self.cg.edge_chunks(c, CHUNK_EDGES)

    def count(self, c) -> int:
        return self.cg.num_edges[c]


def from_chunked(path: str | Path, every_file: bool = True) -> StreamSource:
    """The streaming view of a graph in DGL's chunked format (a folder or its metadata.json);
    `every_file=False` where only a share of the chunks is at hand (a host of a distributed
    partitioning): no chunk is opened, and the data are left for the caller to attach."""
    from ...data.chunked import ChunkedGraph

    cg = ChunkedGraph(path, every_file)
    return _typed_source(cg.graph_name, cg.num_nodes, cg.canonical_etypes, _ChunkPairs(cg), cg.node_data,
                         cg.edge_data)


def from_npz(path: str | Path) -> StreamSource:
    """The streaming view of an `.npz` exchange file: its stored members read in pieces by
    positioned reads (never mapped, never loaded whole)."""
    from ...data.npz import read_npz

    return read_npz(path, _NpzBuild(Path(path).stem), lazy=True)


def from_ogb_binary(path: str | Path, split: str | None = None) -> StreamSource:
    """The streaming view of an OGB binary node dataset folder (ogbn-papers100M's layout)."""
    from ...data.ogb_binary import OgbBinary

    d = OgbBinary(path, split)
    etype = ("_N", "_E", "_N")
    return _typed_source(Path(path).name, {"_N": d.num_nodes}, [etype], _ArrayPairs({etype: (d.src, d.dst)}),
                         {"_N": d.node_data}, {})


def open_source(path: str | Path) -> StreamSource:
    """The input at `path`: a chunked-format folder (or its metadata.json), an OGB binary dataset
    folder (`raw/data.npz`), or an `.npz` file."""
    from ...data.chunked import METADATA

    p = Path(path)
    if p.is_dir() and (p / "raw" / "data.npz").is_file():
        return from_ogb_binary(p)
    if p.is_dir() or p.name == METADATA:
        return from_chunked(p)
    if p.is_file():
        return from_npz(p)
    raise InputError(f"{p} does not exist: give an .npz file or a chunked graph folder with {METADATA}")
