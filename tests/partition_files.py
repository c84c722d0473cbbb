"""Helpers of the partitioning tests: a graph copied into DGL's chunked format, and the check
that two output folders hold the same partitioning, byte for byte."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import numpy as np

from distgraph.arrays import offsets
from distgraph.data.chunked import ChunkedGraph, ChunkWriter
from distgraph.partition.dist.datalayout import data_arrays
from distgraph.partition.dist.shares import my_rows, my_segments


def same_partitions(a: Path, b: Path, name: str = "g") -> None:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert files_a == files_b
    differ = [f for f in files_a if f.suffix == ".npy" and not filecmp.cmp(a / f, b / f, shallow=False)]
    assert not differ, differ
    configs = [json.loads((d / f"{name}.json").read_text()) for d in (a, b)]
    for c in configs:
        for timing in ("assign_seconds", "total_seconds"):
            del c["stats"][timing]
    assert configs[0] == configs[1]


def chunked_copy(g, root: Path, edge_chunks: int = 3) -> Path:
    """`g` in DGL's chunked format: `edge_chunks` files per edge type, node data in two chunks."""
    w = ChunkWriter(root, "g")
    for i, c in enumerate(g.canonical_etypes):
        lo, hi = int(g.etype_offsets[i]), int(g.etype_offsets[i + 1])
        src = np.asarray(g.src[lo:hi]) - int(g.ntype_offsets[g.get_ntype_id(c[0])])
        dst = np.asarray(g.dst[lo:hi]) - int(g.ntype_offsets[g.get_ntype_id(c[2])])
        for idx in np.array_split(np.arange(src.size), edge_chunks):
            w.add_edges(":".join(c), src[idx], dst[idx])
    for t in g.ntypes:
        n = g.num_nodes(t)
        data = {k: np.asarray(v) for k, v in g.nodes[t].data.items()}
        for lo, hi in ((0, n // 2), (n // 2, n)):
            w.add_nodes(t, hi - lo, {k: v[lo:hi] for k, v in data.items()})
    return w.finish()


def share_files(root: Path, host: int, num_hosts: int) -> list[str]:
    """The chunk files (relative to `root`) that host `host` of `num_hosts` reads in a
    distributed partitioning: its share of the edge chunks and of the node and edge data."""
    cg = ChunkedGraph(root)
    files = [cg.edge_files[g.etype][g.index].path for g in my_segments(cg, host, num_hosts)]
    counts = {"node": offsets(np.array([cg.num_nodes[t] for t in cg.ntypes], dtype=np.int64)),
              "edge": offsets(np.array([cg.num_edges[c] for c in cg.canonical_etypes], dtype=np.int64))}
    data = {"node": lambda a: cg.node_data[a.key], "edge": lambda a: cg.edge_data[tuple(a.key.split(":"))]}
    for a in data_arrays(cg):
        a.rows = [c.rows for c in data[a.kind](a)[a.name].chunks]
        lo, hi = my_rows(a.kind, counts[a.kind], host, num_hosts)[a.type_index]
        files += [a.files[f][0] for f in a.files_of(lo, hi)]
    return sorted({str(Path(f).relative_to(root)) for f in files})
