"""Helpers of the partitioning tests: a graph copied into DGL's chunked format, and the check
that two output folders hold the same partitioning, byte for byte."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import numpy as np

from distgraph.data.chunked import ChunkWriter


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
