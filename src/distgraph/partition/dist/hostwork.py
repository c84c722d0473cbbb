"""What one host of a distributed partitioning does, operation by operation: it reads its share
of the edge chunks (degrees; pieces of the undirected graph; the shuffle, where each edge goes
to the host writing its destination's part), keeps the buckets of its own parts, and writes
those parts and its pieces of the edge id maps. It holds per-node arrays of 4 to 16 bytes a
node (new ids; degrees while they are counted) and its share of the edges, on disk."""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

import numpy as np

from ...arrays import group_keys
from ...data.chunked import ChunkedGraph, npy_file_array
from ...errors import PartitionError
from ...malloc import release_freed_memory
from ...rpc.auth import Credentials
from ...rpc.transport import Connections, Request
from ...rpc.wire import WireError
from ..out_folder import check_out, clear_out, write_config
from ..stream.adjacency import ADJACENCY_COLUMNS, spread_adjacency
from ..stream.buckets import Buckets, id_dtype
from ..stream.numbering import EdgeRouter, edge_columns
from ..stream.npyfile import NpyFile
from ..stream.partwriter import EDGE_MAP, PartWriter, remove_files
from ..stream.source import from_chunked
from ..stream.writer import count_degrees, data_specs, node_flag
from . import protocol as P
from .shares import host_of_part, my_parts, my_segments, working_edges

EDGE_MAP_SCRATCH = ".edge-map-{host}.{key}.npy"  # this host's pieces of an edge id map, until the coordinator has them


class PartSlices:
    """new2old of the parts a host writes: sliced only within one of them."""

    def __init__(self, starts: dict[int, int], arrays: dict[int, np.ndarray], dtype):
        self.starts, self.arrays, self.dtype = starts, arrays, np.dtype(dtype)

    def __getitem__(self, key: slice) -> np.ndarray:
        for p, lo in self.starts.items():
            a = self.arrays[p]
            if lo <= key.start and key.stop <= lo + a.size:
                return a[key.start - lo:key.stop - lo]
        raise IndexError(f"new ids {key.start}..{key.stop} are not in a part of this host")


class HostWork:
    """The state of one host's partitioning process between the coordinator's operations."""

    def __init__(self, machine: int, credentials: Credentials, timeout: float):
        self.machine, self.credentials, self.timeout = machine, credentials, timeout
        self.progress = 0  # edges done in the current long operation
        self.stopping = threading.Event()  # the run ends: a running operation stops at its next piece
        self.adjacency = self.buckets = None
        self.cleared = self.committed = False  # its output folder was cleared; its config was written
        self.maps: dict[str, NpyFile] = {}  # id maps being received (all of them once any was)
        self.got_maps = False
        self.out = None

    # -- set-up ------------------------------------------------------------------------------
    def open(self, h: dict, arrays) -> tuple[dict, list]:
        self.input, self.out = Path(P.field(h, "input", str)), Path(P.field(h, "out", str))
        self.graph_name = P.field(h, "graph_name", str)
        self.hosts = P.addresses(P.field(h, "hosts", list))
        self.num_parts = P.field(h, "num_parts", int)
        self.cg = ChunkedGraph(self.input, every_edge_file=False)
        self.source = from_chunked(self.input, every_edge_file=False)
        self.segments = my_segments(self.cg, self.machine, len(self.hosts))
        self.parts = my_parts(self.num_parts, self.machine, len(self.hosts))
        self.piece = working_edges(sum(g.hi - g.lo for g in self.segments))
        self.node_names, _, self.edge_names, _ = data_specs(self.source)
        self.out.mkdir(parents=True, exist_ok=True)
        check_out(self.out, self.graph_name, bool(h.get("overwrite")))
        return {"num_nodes": self.source.num_nodes(), "num_edges": self.source.num_edges(),
                "share": sum(g.hi - g.lo for g in self.segments)}, []

    def _pieces(self):
        """(src, dst, first edge id) of this host's edge chunks, homogeneous ids, a piece at a time."""
        noff = self.source.ntype_offsets
        for g in self.segments:
            bs, bd = (int(noff[self.source.ntypes.index(t)]) for t in (g.etype[0], g.etype[2]))
            at = g.first + g.lo
            for src, dst in self.cg.file_chunks(g.etype, g.index, self.piece, (g.lo, g.hi)):
                if self.stopping.is_set():
                    raise PartitionError(f"machine {self.machine}: stopped")
                yield src + bs, dst + bd, at
                at += src.size
                self.progress += src.size

    def _share(self):
        """This host's edges as a `StreamSource` reads them."""
        return dataclasses.replace(self.source, chunks=lambda: ((s, d) for s, d, _ in self._pieces()))

    # -- degrees and the assignment's graph ----------------------------------------------------
    def degrees(self, h: dict, arrays) -> tuple[dict, list]:
        self.deg = count_degrees(self._share())
        return {}, []

    def degree_rows(self, h: dict, arrays) -> tuple[dict, list]:
        lo, hi = P.field(h, "lo"), P.field(h, "hi")
        return {}, [self.deg.in_deg[lo:hi], self.deg.out_deg[lo:hi]]

    def adjacency_rows(self, h: dict, arrays) -> tuple[dict, list]:
        (bounds,) = arrays
        self.adjacency = Buckets(self.out, bounds.size - 1, ADJACENCY_COLUMNS, "adjacency")
        spread_adjacency(self._share().chunks(), bounds, self.adjacency)
        self.adjacency.finish()
        return {}, []

    def adjacency_bucket(self, h: dict, arrays) -> tuple[dict, list]:
        b = P.field(h, "bucket")
        cols = self.adjacency.read(b)
        self.adjacency.drop(b)
        if b == self.adjacency.num - 1:
            self.adjacency.close()
        return {}, [cols["row"], cols["col"]]

    # -- the numbering, the shuffle and the writing ----------------------------------------------
    def old2new(self, h: dict, arrays) -> tuple[dict, list]:
        (piece,) = arrays
        lo, n = P.field(h, "lo"), self.source.num_nodes()
        if lo == 0:
            self.new_ids = np.empty(n, dtype=id_dtype(n))
        self.new_ids[lo:lo + piece.size] = P.ids(piece, n, "new ids")
        return {}, []

    def clear(self, h: dict, arrays) -> tuple[dict, list]:
        self.cleared = True
        clear_out(self.out, self.num_parts)
        return {}, []

    def plan(self, h: dict, arrays) -> tuple[dict, list]:
        """The buckets (boundaries, their parts), the parts' id ranges, and for each part of this
        host its new2old and out-degrees."""
        bounds, bucket_part, node_ranges, *mine = arrays
        self.bounds, self.bucket_part = bounds.astype(np.int64), bucket_part.astype(np.int64)
        self.node_ranges = node_ranges.astype(np.int64).reshape(self.num_parts, len(self.source.ntypes), 2)
        if len(mine) != 2 * len(self.parts):
            raise WireError(f"plan carries {len(mine)} arrays for {len(self.parts)} parts")
        starts = {p: int(self.node_ranges[p, 0, 0]) for p in self.parts}
        self.new2old = PartSlices(starts, {p: mine[2 * i] for i, p in enumerate(self.parts)}, self.new_ids.dtype)
        self.out_degree = {p: mine[2 * i + 1] for i, p in enumerate(self.parts)}
        self.deg = None
        release_freed_memory()
        n, m = self.source.num_nodes(), self.source.num_edges()
        self.columns = edge_columns(n, m)
        self.buckets = Buckets(self.out, bounds.size - 1, self.columns, "edges")
        part_starts = np.concatenate([self.node_ranges[:, 0, 0], [n]])
        self.router = EdgeRouter(self.source, self.new_ids, self.bounds, self.bucket_part, part_starts)
        return {}, []

    def shuffle(self, h: dict, arrays) -> tuple[dict, list]:
        """Send every edge of this host's share to the host of its destination's part."""
        H = len(self.hosts)
        conns = Connections(self.hosts, self.timeout, self.credentials, numpy_replies=True)
        try:
            for src, dst, first in self._pieces():
                b, cols = self.router.route(src, dst, first)
                order, starts = group_keys(host_of_part(self.bucket_part[b], H), H)
                grouped = [cols[k][order].astype(self.columns[k], copy=False) for k in ("dst", "src", "eid")]
                conns.call([Request(t, {"op": P.EDGES}, [a[starts[t]:starts[t + 1]] for a in grouped])
                            for t in range(H) if starts[t + 1] > starts[t]])
        finally:
            conns.close()
        self.new_ids = None
        release_freed_memory()
        return {"per_type": self.router.per_type.tolist(), "cut": self.router.cut}, []

    def edges(self, h: dict, arrays) -> tuple[dict, list]:
        """Edges another host sends (dst, src, eid), into the buckets of their destinations."""
        if len(arrays) != 3 or len({a.size for a in arrays}) != 1:
            raise WireError("edges are three arrays of one length: dst, src, eid")
        dst, src, eid = arrays
        n = self.source.num_nodes()
        b = np.searchsorted(self.bounds, P.ids(dst, n, "destinations"), side="right") - 1
        if b.size and bool((host_of_part(self.bucket_part[b], len(self.hosts)) != self.machine).any()):
            raise WireError(f"edges sent to machine {self.machine} whose destinations it does not own")
        self.buckets.append(b, {"dst": dst, "src": P.ids(src, n, "sources"),
                                "eid": P.ids(eid, self.source.num_edges(), "edge ids")})
        return {}, []

    def write(self, h: dict, arrays) -> tuple[dict, list]:
        """Write this host's parts (`arrays`: the edge id ranges of every part and type)."""
        (ranges,) = arrays
        self.buckets.finish()
        writer = PartWriter(self.source, self.out, self.buckets, self.bounds, self.bucket_part, self.node_ranges,
                            ranges.astype(np.int64).reshape(self.num_parts, -1, 2), self.new2old, self.node_names,
                            self.edge_names, EDGE_MAP_SCRATCH.format(host=self.machine, key="{}"))
        metas, train = [], []
        flag = node_flag(self.source, "train_mask")
        for p in self.parts:
            if self.stopping.is_set():
                raise PartitionError(f"machine {self.machine}: stopped")
            metas.append(writer.part(p, self.out_degree[p]).json())
            lo, hi = int(self.node_ranges[p, 0, 0]), int(self.node_ranges[p, -1, 1])
            train.append(int(flag[self.new2old[lo:hi]].sum()))
            self.progress += metas[-1]["num_inner_edges"]
        writer.close()
        self.buckets.close()
        return {"metas": metas, "train": train}, []

    def edge_map_rows(self, h: dict, arrays) -> tuple[dict, list]:
        key, start, count = P.field(h, "key", str), P.field(h, "start"), P.field(h, "count")
        if key not in [":".join(c) for c in self.source.canonical_etypes]:
            raise WireError(f"unknown edge type {key!r}")
        rows = npy_file_array(self.out / EDGE_MAP_SCRATCH.format(host=self.machine, key=key))
        return {}, [rows.read(start, start + count)]  # (a positioned read: nothing of the file is mapped)

    def map_rows(self, h: dict, arrays) -> tuple[dict, list]:
        """Rows of an id map (which `distgraph launch` needs on every host), written under a
        temporary name and renamed into place when whole (hosts sharing a folder agree on its bytes)."""
        rel, start, total = P.field(h, "file", str), P.field(h, "start"), P.field(h, "total")
        maps = [f"mapping/node.{t}.npy" for t in self.source.ntypes] + [
            EDGE_MAP.format(":".join(c)) for c in self.source.canonical_etypes]
        if rel not in maps:
            raise WireError(f"{rel!r} is not an id map of this graph")
        (rows,) = arrays
        self.got_maps = True
        if start == 0:
            self.maps[rel] = NpyFile(self.out / f"{rel}.tmp-{self.machine}", rows.dtype, (total,))
        f = self.maps[rel]
        f.append(rows)
        if f.rows == total:
            f.close()
            os.replace(f.path, self.out / rel)
            del self.maps[rel]
        return {}, []

    def commit(self, h: dict, arrays) -> tuple[dict, list]:
        """The config, written last: from here on this host's parts load."""
        self._drop_scratch()
        write_config(self.out / f"{self.graph_name}.json", P.field(h, "config", str))
        self.committed = True
        return {}, []

    # -- the end -----------------------------------------------------------------------------------
    def _drop_scratch(self) -> None:
        for c in self.source.canonical_etypes:
            (self.out / EDGE_MAP_SCRATCH.format(host=self.machine, key=":".join(c))).unlink(missing_ok=True)

    def cleanup(self) -> None:
        """Remove scratch, and the partition files this run wrote unless the config that lists them was written."""
        for b in (self.adjacency, self.buckets):
            if b is not None:
                b.close()
        if self.out is None or not hasattr(self, "source"):
            return
        self._drop_scratch()
        for f in self.maps.values():
            f.close()
            f.path.unlink(missing_ok=True)
        if self.cleared and not self.committed:
            try:
                remove_files(self.out, self.parts, self.source, self.node_names, self.edge_names, maps=self.got_maps)
            except OSError as exc:
                raise PartitionError(f"machine {self.machine}: cannot remove its unfinished partition files "
                                     f"({exc})") from None
