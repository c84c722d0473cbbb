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

CHUNK_EDGES = 1 << 22  # edges per chunk when the input is one array (64 MB of int64 pairs)


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

    def num_nodes(self) -> int:
        return int(self.ntype_offsets[-1])

    def num_edges(self) -> int:
        return int(self.etype_offsets[-1])

    def node_type_ids(self, nodes: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.ntype_offsets, nodes, side="right") - 1

    def edge_type_ids(self, eids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.etype_offsets, eids, side="right") - 1


def _sliced(src, dst, step: int = CHUNK_EDGES) -> Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]:
    def chunks():
        for i in range(0, len(src), step):
            yield np.asarray(src[i:i + step], dtype=np.int64), np.asarray(dst[i:i + step], dtype=np.int64)
    return chunks


def from_array_graph(g: ArrayGraph, name: str = "graph") -> StreamSource:
    """The streaming view of an in-memory (or memory-mapped) graph."""
    from ..layout import etype_key

    return StreamSource(list(g.ntypes), [tuple(c) for c in g.canonical_etypes], np.asarray(g.ntype_offsets),
                        np.asarray(g.etype_offsets), _sliced(np.asarray(g.src), np.asarray(g.dst)),
                        {t: {k: np.asarray(v) for k, v in g.nodes[t].data.items()} for t in g.ntypes},
                        {etype_key(c): {k: np.asarray(v) for k, v in g.edges[c].data.items()}
                         for c in g.canonical_etypes}, name)


def from_chunked(path: str | Path) -> StreamSource:
    """The streaming view of a graph in DGL's chunked format (a folder or its metadata.json)."""
    from ...data.chunked import ChunkedGraph

    cg = ChunkedGraph(path)
    noff = offsets(np.array([cg.num_nodes[t] for t in cg.ntypes], dtype=np.int64))
    eoff = offsets(np.array([cg.num_edges[c] for c in cg.canonical_etypes], dtype=np.int64))
    base = {t: int(noff[i]) for i, t in enumerate(cg.ntypes)}

    def chunks():
        for c in cg.canonical_etypes:
            for src, dst in cg.edge_chunks(c):
                src += base[c[0]]
                dst += base[c[2]]
                yield src, dst

    return StreamSource(cg.ntypes, cg.canonical_etypes, noff, eoff, chunks, cg.node_data,
                        {":".join(c): d for c, d in cg.edge_data.items()}, cg.graph_name)


def from_npz(path: str | Path) -> StreamSource:
    """The streaming view of an `.npz` exchange file: its members memory-mapped (stored
    uncompressed, as `np.savez` writes them), edges read a chunk at a time."""
    from ...data.npz import load_npz

    g = load_npz(path, tensors=False)  # every member memory-mapped: nothing is read here but headers
    return from_array_graph(g, Path(path).stem)


def open_source(path: str | Path) -> StreamSource:
    """The input at `path`: a chunked-format folder (or its metadata.json), or an `.npz` file."""
    from ...data.chunked import METADATA

    p = Path(path)
    if p.is_dir() or p.name == METADATA:
        return from_chunked(p)
    if p.is_file():
        return from_npz(p)
    raise InputError(f"{p} does not exist: give an .npz file or a chunked graph folder with {METADATA}")
