"""The undirected simple graph a partitioner reads, built from the edge stream in bounded memory,
written as a ParHIP binary file (the format KaMinPar reads and compresses as it loads).

ParHIP: a header of three uint64 (version bits, n, m = directed entries), the n + 1 byte
offsets of each node's neighbours from the start of the file, the neighbour ids, then the
vertex weights. The version bits say which sections are 32-bit: ids are 32-bit here (the
graph has fewer than 2**31 nodes), offsets 64-bit, vertex weights 32-bit.

Rows are cut into buckets of a bounded number of entries (from the degrees); one pass spreads
both directions of every edge (self-loops dropped) into bucket files; each bucket is then
sorted and its repeats removed (or, for a contracted graph, summed into 32-bit edge weights,
which follow the vertex weights) in memory, and its rows are appended to the file, whose
offsets are written last.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...arrays import unique_counts, unique_sorted
from ...errors import PartitionError
from ...files import check_space
from ...progress import Progress
from .buckets import Buckets
from .source import StreamSource

HEADER_BYTES = 24
_NO_EDGE_WEIGHTS, _NO_VERTEX_WEIGHTS, _EID32, _VID32, _VWGT32, _EWGT32 = 1, 2, 4, 8, 16, 32


def row_buckets(weights: np.ndarray, max_entries: int) -> np.ndarray:
    """Boundaries [0, ..., n] cutting nodes into consecutive ranges of at most `max_entries`
    entries each (a single node heavier than that is a range of its own)."""
    total = np.concatenate([[0], np.cumsum(weights, dtype=np.int64)])
    bounds = [0]
    while bounds[-1] < weights.size:
        nxt = int(np.searchsorted(total, total[bounds[-1]] + max_entries, side="right")) - 1
        bounds.append(max(nxt, bounds[-1] + 1))
    return np.asarray(bounds, dtype=np.int64)


def write_parhip(source: StreamSource, degree: np.ndarray, path: Path, vertex_weights: np.ndarray | None,
                 max_entries: int, progress: bool = False) -> int:
    """Write the undirected simple graph of `source` (no self-loops, no repeats, rows ascending)
    to `path`; `degree` is each node's in- plus out-degree (an upper bound of its row). Returns
    the number of directed entries written."""
    n = source.num_nodes()
    check_nodes(n)
    bounds = row_buckets(degree, max_entries)
    check_space(path.parent, 3 * 4 * int(degree.sum()) + 8 * n, "the partitioner's undirected graph")
    bar = Progress(source.num_edges(), "undirected graph", "edge", enabled=progress, unit_scale=True)
    with Buckets(path.parent, bounds.size - 1, ADJACENCY_COLUMNS, "adjacency") as buckets:
        spread_adjacency(source.chunks(), bounds, buckets, bar)
        buckets.finish()
        m = write_rows(path, n, bounds, buckets.take, vertex_weights)
    bar.close()
    return m


ADJACENCY_COLUMNS = {"row": np.int32, "col": np.int32}


def check_nodes(n: int) -> None:
    if n >= 2**31:
        raise PartitionError(f"the streaming partitioner takes graphs of fewer than 2**31 nodes, this one has {n:,}")


def spread_adjacency(chunks, bounds: np.ndarray, buckets: Buckets, bar=None) -> None:
    """Both directions of every edge of `chunks` (self-loops dropped) into the row buckets cut at `bounds`."""
    for src, dst in chunks:
        keep = src != dst
        rows = np.concatenate([src[keep], dst[keep]])
        cols = np.concatenate([dst[keep], src[keep]])
        buckets.append(np.searchsorted(bounds, rows, side="right") - 1, {"row": rows, "col": cols})
        if bar is not None:
            bar.update(src.size)


def write_rows(path: Path, n: int, bounds: np.ndarray, read_bucket: Callable[[int], dict[str, np.ndarray]],
               vertex_weights: np.ndarray | None, edge_weights: bool = False) -> int:
    """The ParHIP file of the rows whose entries `read_bucket(b)` gives bucket by bucket (rows
    in [bounds[b], bounds[b + 1]), in any order, repeats allowed); the number of entries written.
    `edge_weights`: an entry's repeats become its weight (how many there were) instead of dropped."""
    version = (_VID32 | _VWGT32 | (0 if vertex_weights is not None else _NO_VERTEX_WEIGHTS)
               | (_EWGT32 if edge_weights else _NO_EDGE_WEIGHTS))
    row_len = np.zeros(n, dtype=np.int64)
    start = HEADER_BYTES + 8 * (n + 1)
    weights_file = path.with_name(path.name + ".weights")
    try:
        with open(path, "wb") as f, (open(weights_file, "w+b") if edge_weights else nullcontext()) as wf:
            f.seek(start)
            for b in range(bounds.size - 1):
                lo, hi = int(bounds[b]), int(bounds[b + 1])
                cols = read_bucket(b)
                key = (cols["row"].astype(np.int64) - lo) << 31 | cols["col"].astype(np.int64)
                del cols
                if edge_weights:
                    key, count = unique_counts(key)
                    wf.write(count.astype(np.uint32).data)
                else:
                    key = unique_sorted(key)  # sorted by (row, column), repeats gone
                row_len[lo:hi] = np.bincount(key >> 31, minlength=hi - lo)
                f.write((key & ((1 << 31) - 1)).astype(np.uint32).data)
                del key
            m = int(row_len.sum())
            if vertex_weights is not None:
                f.write(np.ascontiguousarray(vertex_weights, dtype=np.uint32).data)
            if edge_weights:
                wf.seek(0)
                shutil.copyfileobj(wf, f, 1 << 24)
            f.seek(0)
            f.write(np.array([version, n, m], dtype=np.uint64).data)
            at = start
            for i in range(0, n, 1 << 22):  # each row's byte offset, a piece at a time
                rows = row_len[i:i + (1 << 22)]
                f.write((at + 4 * np.concatenate([[0], np.cumsum(rows)])[:-1]).astype(np.uint64).data)
                at += 4 * int(rows.sum())
            f.write(np.array([at], dtype=np.uint64).data)
    finally:
        weights_file.unlink(missing_ok=True)
    return m


@dataclass
class ParhipGraph:
    """A ParHIP file as written by `write_rows` (32-bit ids, 64-bit offsets, no edge weights),
    read a range of rows at a time: nothing of it is held beyond the range asked for."""

    path: Path
    n: int
    m: int
    has_vertex_weights: bool

    @classmethod
    def open(cls, path: Path) -> "ParhipGraph":
        version, n, m = (int(x) for x in np.fromfile(path, dtype=np.uint64, count=3))
        if not version & _VID32 or not version & _NO_EDGE_WEIGHTS:
            raise PartitionError(f"{path} is not an unweighted ParHIP file with 32-bit ids (version bits {version})")
        return cls(path, n, m, not version & _NO_VERTEX_WEIGHTS)

    def offsets(self, lo: int, hi: int) -> np.ndarray:
        """Entry index of rows lo..hi (hi - lo + 1 values: each row's start and the last one's end)."""
        raw = np.fromfile(self.path, dtype=np.uint64, count=hi - lo + 1, offset=HEADER_BYTES + 8 * lo)
        return (raw.astype(np.int64) - (HEADER_BYTES + 8 * (self.n + 1))) // 4

    def degrees(self) -> np.ndarray:
        """Every row's length (int32), read a piece of the offsets at a time."""
        deg = np.empty(self.n, dtype=np.int32)
        for lo in range(0, self.n, 1 << 22):
            hi = min(self.n, lo + (1 << 22))
            deg[lo:hi] = np.diff(self.offsets(lo, hi))
        return deg

    def vertex_weights(self) -> np.ndarray:
        """The vertex weights (int64), ones when the file has none."""
        if not self.has_vertex_weights:
            return np.ones(self.n, dtype=np.int64)
        at = HEADER_BYTES + 8 * (self.n + 1) + 4 * self.m
        return np.fromfile(self.path, dtype=np.uint32, count=self.n, offset=at).astype(np.int64)

    def ranges(self, deg: np.ndarray, max_entries: int) -> "RowRanges":
        """The rows (of degrees `deg`) in consecutive ranges of at most `max_entries` entries and rows
        (a heavier row alone)."""
        return RowRanges(self, row_buckets(deg.astype(np.int64) + 1, max_entries), deg)

    def columns(self, start: int, count: int) -> np.ndarray:
        """`count` entries' columns (int32) from entry `start`."""
        return np.fromfile(self.path, dtype=np.int32, count=count, offset=HEADER_BYTES + 8 * (self.n + 1) + 4 * start)

    def rows(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(offsets of rows lo..hi into the returned entries, int64; the entries' columns, int32)."""
        off = self.offsets(lo, hi)
        return off - off[0], self.columns(int(off[0]), int(off[-1] - off[0]))


@dataclass
class RowRanges:
    """A `ParhipGraph`'s rows in consecutive ranges (`bounds`), read range after range: each range's
    offsets come from the degrees `deg`, so only its columns are read from the file."""

    graph: ParhipGraph
    bounds: np.ndarray
    deg: np.ndarray

    def __iter__(self):
        """(lo, hi, offsets of rows lo..hi into the entries, the entries' columns) of every range."""
        start = 0  # entry index of the range's first row (the ranges start at row 0)
        for lo, hi in zip(self.bounds[:-1].tolist(), self.bounds[1:].tolist()):
            indptr = np.zeros(hi - lo + 1, dtype=np.int64)
            np.cumsum(self.deg[lo:hi], dtype=np.int64, out=indptr[1:])
            yield lo, hi, indptr, self.graph.columns(start, int(indptr[-1]))
            start += int(indptr[-1])
