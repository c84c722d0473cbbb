"""What a host of a distributed partitioning receives of the node and edge data, and writes its
parts from. Node data rows go straight to their place in their part's files: a part's nodes of
one type are numbered in original id order, so the rows of a contiguous range of original ids
that fall in one part land in one run there. Edge data rows come with their edges and wait in
buckets beside the edges' buckets until the part is written (`ShuffledPartWriter`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...rpc.wire import WireError
from ..layout import part_files
from ..stream.buckets import Buckets
from ..stream.npyfile import NpyFile
from ..stream.partwriter import PartWriter
from .datalayout import DataArray, from_bytes
from .hostfolders import SCRATCH_OPTION

TRAIN = "train_mask"  # the node data whose True rows a part's statistics count


class NodeDataFiles:
    """The node data files of the parts `parts`, filled as their rows arrive; the training
    nodes counted on the way."""

    def __init__(self, out: Path, parts: list[int], node_ranges: np.ndarray, arrays: list[DataArray],
                 node_names: dict, edge_names: dict, typed: bool):
        self.node_ranges, self.arrays = node_ranges, arrays
        self.train = {p: 0 for p in parts}
        self.files: dict[tuple[int, int], NpyFile] = {}
        try:
            for p in parts:
                rel = part_files(p, node_names, edge_names, typed)["node_data"]
                for i, a in enumerate(arrays):
                    if a.kind == "node":
                        lo, hi = node_ranges[p, a.type_index]
                        self.files[p, i] = NpyFile(out / rel[a.key][a.name], a.dtype, (int(hi - lo), *a.shape))
        except BaseException:
            self.close()
            raise

    def put(self, array: int, part: int, start: int, raw: np.ndarray) -> None:
        """Rows of node data array `array` (bytes) for part `part`'s new ids [start, start + count)."""
        f = self.files.get((part, array))
        if f is None:
            raise WireError(f"node data {array} of part {part} is not written here")
        a = self.arrays[array]
        lo, hi = (int(x) for x in self.node_ranges[part, a.type_index])
        count = raw.shape[0] if raw.ndim else 0
        if not lo <= start <= start + count <= hi:
            raise WireError(f"rows {start}..{start + count} of {a.what} are not in part {part}")
        rows = from_bytes(a, raw, count)
        f.write_at(start - lo, rows)
        if a.name == TRAIN:
            self.train[part] += int(np.count_nonzero(rows))

    def close(self) -> None:
        """Finish every file (all of them, even when one fails: the first error is raised after)."""
        files, self.files = self.files, {}
        failed = None
        for f in files.values():
            try:
                f.close()
            except OSError as exc:
                failed = failed or exc
        if failed is not None:
            raise failed


class EdgeData:
    """Edge data rows beside the edge buckets (in `scratch`): per edge type with data, buckets of
    (edge id, the bytes of the type's arrays side by side), read back a bucket at a time."""

    def __init__(self, scratch: Path, num_buckets: int, arrays: list[DataArray], eid_dtype,
                 etype_offsets: np.ndarray):
        self.offsets = etype_offsets
        self.arrays = {}  # edge type -> [(array, its first byte in a row)]
        for a in arrays:
            if a.kind == "edge":
                have = self.arrays.setdefault(a.type_index, [])
                have.append((a, sum(x.row_bytes for x, _ in have)))
        self.width = {t: sum(a.row_bytes for a, _ in have) for t, have in self.arrays.items()}
        self.buckets = {}
        try:
            for t in self.arrays:
                self.buckets[t] = Buckets(scratch, num_buckets, {"eid": eid_dtype,
                                                                 "rows": np.dtype((np.void, self.width[t]))},
                                          "edge-data", SCRATCH_OPTION)
        except BaseException:
            self.close()
            raise
        self._held = (None, None, None)  # (bucket, type) read last: its sorted edge ids and rows

    def types(self) -> list[int]:
        return list(self.arrays)

    def names(self, etype: int) -> list[DataArray]:
        """The data arrays of edge type `etype` (empty for a type without data), in message order."""
        return [a for a, _ in self.arrays.get(etype, ())]

    def append(self, etype: int, bucket: np.ndarray, eid: np.ndarray, raws: list[np.ndarray]) -> None:
        """Edges of type `etype` (their buckets and ids) and their rows of each array (bytes)."""
        if etype not in self.arrays:
            if raws:
                raise WireError(f"edge type {etype} has no data, but rows came with its edges")
            return
        arrays = self.names(etype)
        if len(raws) != len(arrays):
            raise WireError(f"edges of type {etype} come with {len(arrays)} data arrays, not {len(raws)}")
        for a, raw in zip(arrays, raws):
            from_bytes(a, raw, eid.size)
        joined = np.concatenate(raws, axis=1) if len(raws) > 1 else raws[0]
        rows = np.ascontiguousarray(joined).view(np.dtype((np.void, self.width[etype]))).reshape(eid.size)
        self.buckets[etype].append(bucket, {"eid": eid, "rows": rows})

    def finish(self) -> None:
        for b in self.buckets.values():
            b.finish()

    def rows(self, bucket: int, etype: int, name: str, orig: np.ndarray) -> np.ndarray:
        """Rows `orig` (original ids of type `etype`) of edge data `name`, edges of bucket `bucket`."""
        if self._held[0] != (bucket, etype):
            self._held = (None, None, None)
            cols = self.buckets[etype].take(bucket)
            order = np.argsort(cols["eid"])
            self._held = ((bucket, etype), cols["eid"][order], cols["rows"][order])
        _, eids, rows = self._held
        at = np.searchsorted(eids, orig + int(self.offsets[etype]))
        a, first = next((a, first) for a, first in self.arrays[etype] if a.name == name)
        raw = rows[at].view(np.uint8).reshape(at.size, self.width[etype])[:, first:first + a.row_bytes]
        return from_bytes(a, np.ascontiguousarray(raw), at.size)

    def close(self) -> None:
        self._held = (None, None, None)
        for b in self.buckets.values():
            b.close()


class ShuffledPartWriter(PartWriter):
    """A `PartWriter` whose edge data come from the rows that travelled with the edges
    (`EdgeData`) and whose node data files were filled as their rows arrived (`NodeDataFiles`)."""

    def __init__(self, *args, edge_data: EdgeData, **kwargs):
        super().__init__(*args, **kwargs)
        self.received = edge_data

    def edge_rows(self, bucket: int, etype: int, name: str, orig: np.ndarray) -> np.ndarray:
        return self.received.rows(bucket, etype, name, orig)

    def node_data(self, p: int, files: dict) -> None:
        """(Written already, by the node data shuffle.)"""
