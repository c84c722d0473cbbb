"""What one host of a distributed partitioning does, operation by operation: it reads its share
of the edge chunks (degrees; pieces of the undirected graph; the shuffle, where each edge goes
to the host writing its destination's part with its rows of the edge data) and of the node
data (each row sent to the host writing its node's part), keeps the buckets of its own parts,
and writes those parts and its pieces of the edge id maps. Of the per-node arrays it holds those
of its share of the old ids only: their in- and out-degrees until the plan (16 bytes a node of
its share, `degrees`: the other ends of its edges it sends their owners a piece at a time) and
their new ids (4 bytes a node of its share, `lookup`: the others' it asks of their owners a
piece at a time); data rows a message at a time, and its share of the edges and their data, on
disk. Over every node it holds only the bits of a part's halo while writing it (`stream.halo`).
It writes in folders it holds for the run (`hostfolders`): its parts in the output folder, its
buckets in a scratch folder of the run's own; whatever ends the run, what it wrote goes unless
its config was written (`cleanup`), and its guard is told where (`report`)."""

from __future__ import annotations

import dataclasses
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import numpy as np

from ...arrays import group_keys
from ...data.chunked import ChunkedGraph, RowReader, npy_file_array
from ...errors import PartitionError
from ...malloc import release_freed_memory
from ...rpc.auth import Credentials
from ...rpc.transport import Connections, Reply, Request
from ...rpc.wire import WireError
from ..out_folder import check_out, clear_out, write_config
from ..stream.adjacency import ADJACENCY_COLUMNS, spread_adjacency
from ..stream.buckets import Buckets, id_dtype
from ..stream.numbering import EdgeRouter, edge_columns
from ..stream.npyfile import NpyFile
from ..stream.partwriter import EDGE_MAP
from ..stream.source import from_chunked
from ..stream.writer import data_specs
from . import datalayout as D
from . import protocol as P
from .degrees import OwnedDegrees
from .hostfolders import SCRATCH_OPTION, HostFolders
from .lookup import NewIdLookup, OwnedNewIds
from .received import EdgeData, NodeDataFiles, ShuffledPartWriter
from .shares import host_of_part, my_parts, my_rows, my_segments, working_edges

EDGE_MAP_SCRATCH = "edge-map.{}.npy"  # (in the run's scratch folder) this host's pieces of an edge id map


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


class _Peers(Connections):
    """Connections to every host for one long operation, whose waits end as soon as this host
    is told to stop (a peer that was lost does not hold it for the whole timeout)."""

    def __init__(self, work: "HostWork"):
        super().__init__(work.hosts, work.timeout, work.credentials, numpy_replies=True)
        self.work = work

    def call(self, requests, timeout: float | None = None, check: Callable[[], None] | None = None) -> list[Reply]:
        return super().call(requests, timeout, check or self.work.check_stopping)


class HostWork:
    """The state of one host's partitioning process between the coordinator's operations;
    `report` tells its guard (`guard`) its folders and, once written, that its config is."""

    def __init__(self, machine: int, credentials: Credentials, timeout: float, report: Callable[[dict], None]):
        self.machine, self.credentials, self.timeout, self.report = machine, credentials, timeout, report
        self.progress = 0  # edges done in the current long operation
        self.stopping = threading.Event()  # the run ends: a running operation stops at its next piece
        self.adjacency = self.buckets = self.node_files = self.edge_data = self.new_ids = self.deg = None
        self.node_names, self.edge_names = {}, {}
        self.committed = False  # its config was written
        self.maps: dict[str, NpyFile] = {}  # id maps being received
        self.folders: HostFolders | None = None
        self._ending = threading.Lock()  # (the clean-up may be called from a lifeline's thread too)

    def check_stopping(self) -> None:
        """End a running operation (at its next piece or wait) once the run ends."""
        if self.stopping.is_set():
            raise PartitionError(f"machine {self.machine}: stopped")

    # -- set-up ------------------------------------------------------------------------------
    def open(self, h: dict, arrays) -> tuple[dict, list]:
        """Read the graph's metadata, take the output and scratch folders (removing what a run
        that died left there) and report this host's share."""
        self.input, self.out = Path(P.field(h, "input", str)), Path(P.field(h, "out", str)).absolute()
        scratch = Path(P.field(h, "scratch", str)).absolute()
        self.graph_name = P.field(h, "graph_name", str)
        self.hosts = P.addresses(P.field(h, "hosts", list))
        self.num_parts = P.field(h, "num_parts", int)
        self.cg = ChunkedGraph(self.input, every_file=False)
        self.source = from_chunked(self.input, every_file=False)
        self.segments = my_segments(self.cg, self.machine, len(self.hosts))
        self.parts = my_parts(self.num_parts, self.machine, len(self.hosts))
        self.piece = working_edges(sum(g.hi - g.lo for g in self.segments))
        self.arrays = D.data_arrays(self.cg)
        self.new_ids = OwnedNewIds(self.machine, self.source.num_nodes(), len(self.hosts))
        self.deg = OwnedDegrees(self.machine, self.source.num_nodes(), len(self.hosts))  # (others may count first)
        made = not self.out.exists()
        self.out.mkdir(parents=True, exist_ok=True)
        self.folders = HostFolders(self.out, scratch, self.machine, made, self.hosts[self.machine].host)
        self.report({"out": str(self.out), "scratch": str(scratch), "machine": self.machine, "made": made})
        self.folders.remove_left()
        check_out(self.out, self.graph_name, bool(h.get("overwrite")))
        self.scratch = self.folders.make_scratch()
        return {"num_nodes": self.source.num_nodes(), "num_edges": self.source.num_edges(),
                "share": sum(g.hi - g.lo for g in self.segments), "data": D.report(self.arrays)}, []

    def layout(self, h: dict, arrays) -> tuple[dict, list]:
        """The node and edge data chunks' layout the coordinator joined from every host's report:
        from here on this host reads the data of its share by it."""
        D.apply(self.arrays, h.get("data"))
        data = {"node": {t: {} for t in self.source.ntypes},
                "edge": {":".join(c): {} for c in self.source.canonical_etypes}}
        for a in self.arrays:
            data[a.kind][a.key][a.name] = a.chunked()
        self.source = dataclasses.replace(self.source, node_data=data["node"], edge_data=data["edge"])
        self.node_names, _, self.edge_names, _ = data_specs(self.source)
        return {}, []

    def _my_rows(self, a: D.DataArray) -> tuple[int, int]:
        """The rows of data array `a` this host reads."""
        offsets = self.source.ntype_offsets if a.kind == "node" else self.source.etype_offsets
        return my_rows(a.kind, offsets, self.machine, len(self.hosts))[a.type_index]

    def _reader(self, a: D.DataArray) -> RowReader:
        data = self.source.node_data if a.kind == "node" else self.source.edge_data
        return RowReader(data[a.key][a.name])

    def data_rows(self, h: dict, arrays) -> tuple[dict, list]:
        """The rows [lo, hi) of a data array that are in this host's share (for the coordinator)."""
        i, lo, hi = P.field(h, "array"), P.field(h, "lo"), P.field(h, "hi")
        if not 0 <= i < len(self.arrays):
            raise WireError(f"no data array {i}")
        mine = self._my_rows(self.arrays[i])
        lo, hi = max(lo, mine[0]), min(hi, mine[1])
        rows = self._reader(self.arrays[i]).read(lo, hi) if hi > lo else np.zeros((0, *self.arrays[i].shape),
                                                                                  self.arrays[i].dtype)
        return {"lo": lo}, [D.as_bytes(rows)]

    def _pieces(self, data: bool = False):
        """(src, dst, first edge id) of this host's edge chunks, homogeneous ids, a piece at a time;
        with `data`, (src, dst, first edge id, edge type, the piece's rows of each data array of
        the type), pieces of at most `D.rows_per_message` rows of data."""
        noff = self.source.ntype_offsets
        readers = {t: [self._reader(a) for a in self.edge_data.names(t)] for t in self.edge_data.types()} \
            if data else {}
        for g in self.segments:
            bs, bd = (int(noff[self.source.ntypes.index(t)]) for t in (g.etype[0], g.etype[2]))
            t = self.source.canonical_etypes.index(g.etype)
            width = sum(a.row_bytes for a in self.edge_data.names(t)) if data else 0
            piece = min(self.piece, D.rows_per_message(width)) if width else self.piece
            at = g.first + g.lo
            for src, dst in self.cg.file_chunks(g.etype, g.index, piece, (g.lo, g.hi)):
                self.check_stopping()
                src += bs  # (fresh arrays: shifted in place, not copied beside them)
                dst += bd
                if data:
                    first = at - int(self.source.etype_offsets[t])
                    yield src, dst, at, t, [r.read(first, first + src.size) for r in readers.get(t, ())]
                else:
                    yield src, dst, at
                at += src.size
                self.progress += src.size

    def _share(self):
        """This host's edges as a `StreamSource` reads them."""
        return dataclasses.replace(self.source, chunks=lambda: ((s, d) for s, d, _ in self._pieces()))

    # -- degrees and the assignment's graph ----------------------------------------------------
    def _held(self, held, what: str, why: str):
        """`held` (this host's degrees or new ids), or one line saying the host holds none now."""
        if held is None:
            raise PartitionError(f"machine {self.machine} holds no {what} now ({why})")
        return held

    def _degrees(self) -> OwnedDegrees:
        return self._held(self.deg, "degrees", "they are counted before the assignment and dropped with its plan")

    @contextmanager
    def _peers(self):
        """Connections to every host for one long operation, closed at its end."""
        conns = _Peers(self)
        try:
            yield conns
        finally:
            conns.close()

    def degrees(self, h: dict, arrays) -> tuple[dict, list]:
        """Count the degrees of this host's share of the edges: the ends of its share of the old
        ids here, the others' sent to their owners, a piece at a time."""
        deg = self._degrees()
        with self._peers() as conns:
            for src, dst, _ in self._pieces():
                conns.call(deg.spread(src, dst))
        return {}, []

    def degree_ids(self, h: dict, arrays) -> tuple[dict, list]:
        """Ends of another host's edges in this host's share of the old ids, counted."""
        return self._degrees().receive(h, arrays)

    def degree_rows(self, h: dict, arrays) -> tuple[dict, list]:
        """Degrees of old ids of this host's share, for the coordinator."""
        return self._degrees().rows(h, arrays)

    def adjacency_rows(self, h: dict, arrays) -> tuple[dict, list]:
        (bounds,) = arrays
        self.adjacency = Buckets(self.scratch, bounds.size - 1, ADJACENCY_COLUMNS, "adjacency", SCRATCH_OPTION)
        spread_adjacency(self._share().chunks(), bounds, self.adjacency)
        self.adjacency.finish()
        return {}, []

    def adjacency_bucket(self, h: dict, arrays) -> tuple[dict, list]:
        b = P.field(h, "bucket")
        cols = self.adjacency.take(b)
        if b == self.adjacency.num - 1:
            self.adjacency.close()
        return {}, [cols["row"], cols["col"]]

    # -- the numbering, the shuffle and the writing ----------------------------------------------
    def _owned(self) -> OwnedNewIds:
        return self._held(self.new_ids, "new ids",
                          "they are sent after the assignment and dropped when every host's edges are shuffled")

    def old2new(self, h: dict, arrays) -> tuple[dict, list]:
        """A piece of the numbering's rows of this host's share of the old ids."""
        return self._owned().put(h, arrays)

    def lookup(self, h: dict, arrays) -> tuple[dict, list]:
        """New ids of old ids of this host's share, for another host's node data or shuffle."""
        return self._owned().answer(h, arrays)

    def clear(self, h: dict, arrays) -> tuple[dict, list]:
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
        n, m = self.source.num_nodes(), self.source.num_edges()
        self.new2old = PartSlices(starts, {p: mine[2 * i] for i, p in enumerate(self.parts)}, id_dtype(n))
        self.out_degree = {p: mine[2 * i + 1] for i, p in enumerate(self.parts)}
        self.deg = None
        release_freed_memory()
        self.columns = edge_columns(n, m)
        self.buckets = Buckets(self.scratch, bounds.size - 1, self.columns, "edges", SCRATCH_OPTION)
        self.edge_data = EdgeData(self.scratch, bounds.size - 1, self.arrays, self.columns["eid"],
                                  self.source.etype_offsets)
        self.node_files = NodeDataFiles(self.out, self.parts, self.node_ranges, self.arrays, self.node_names,
                                        self.edge_names, len(self.source.canonical_etypes) > 1)
        self.part_starts = np.concatenate([self.node_ranges[:, 0, 0], [n]])
        return {}, []

    def node_data(self, h: dict, arrays) -> tuple[dict, list]:
        """Send every row of this host's share of the node data to the host writing its node's
        part, a slice at a time (a part's rows of a slice are one run of its new ids)."""
        H = len(self.hosts)
        with self._peers() as conns:
            new_ids = NewIdLookup(self._owned(), conns)
            for i, a in enumerate(self.arrays):
                if a.kind != "node":
                    continue
                lo, hi = self._my_rows(a)
                base = int(self.source.ntype_offsets[a.type_index])
                reader, step = self._reader(a), D.rows_per_message(a.row_bytes)
                for at in range(lo, hi, step):
                    self.check_stopping()
                    end = min(hi, at + step)
                    rows = D.as_bytes(reader.read(at, end))
                    new = new_ids.range(base + at, base + end)
                    order, starts = group_keys(np.searchsorted(self.part_starts, new, side="right") - 1,
                                               self.num_parts)
                    conns.call([Request(host_of_part(p, H), {"op": P.NODE_ROWS, "array": i, "part": p,
                                                             "start": int(new[order[starts[p]]])},
                                        [rows[order[starts[p]:starts[p + 1]]]])
                                for p in np.flatnonzero(np.diff(starts)).tolist()])
                    self.progress += end - at
        return {}, []

    def node_rows(self, h: dict, arrays) -> tuple[dict, list]:
        """Node data rows another host sends, into their part's file at their place."""
        if len(arrays) != 1:
            raise WireError("node rows are one array")
        self.node_files.put(P.field(h, "array"), P.field(h, "part"), P.field(h, "start"), arrays[0])
        return {}, []

    def shuffle(self, h: dict, arrays) -> tuple[dict, list]:
        """Send every edge of this host's share to the host of its destination's part."""
        H = len(self.hosts)
        with self._peers() as conns:
            router = EdgeRouter(self.source, NewIdLookup(self._owned(), conns).pair, self.bounds, self.bucket_part,
                                self.part_starts)
            for src, dst, first, etype, data in self._pieces(data=True):
                b, cols = router.route(src, dst, first)
                order, starts = group_keys(host_of_part(self.bucket_part[b], H), H)
                grouped = [cols[k][order].astype(self.columns[k], copy=False) for k in ("dst", "src", "eid")]
                grouped += [D.as_bytes(rows)[order] for rows in data]
                conns.call([Request(t, {"op": P.EDGES, "etype": etype}, [a[starts[t]:starts[t + 1]] for a in grouped])
                            for t in range(H) if starts[t + 1] > starts[t]])
        return {"per_type": router.per_type.tolist(), "cut": router.cut}, []

    def edges(self, h: dict, arrays) -> tuple[dict, list]:
        """Edges of one type another host sends (dst, src, eid, then their rows of each data array
        of the type), into the buckets of their destinations."""
        if len(arrays) < 3 or len({a.size for a in arrays[:3]}) != 1:
            raise WireError("edges are three arrays of one length (dst, src, eid), then their data rows")
        dst, src, eid = arrays[:3]
        n, t, eoff = self.source.num_nodes(), P.field(h, "etype"), self.source.etype_offsets
        if not 0 <= t < eoff.size - 1:
            raise WireError(f"no edge type {t}")
        b = np.searchsorted(self.bounds, P.ids(dst, n, "destinations"), side="right") - 1
        if b.size and bool((host_of_part(self.bucket_part[b], len(self.hosts)) != self.machine).any()):
            raise WireError(f"edges sent to machine {self.machine} whose destinations it does not own")
        P.ids(src, n, "sources")
        P.ids(eid - int(eoff[t]), int(eoff[t + 1] - eoff[t]), f"edge ids of type {t}")
        self.edge_data.append(t, b, eid, list(arrays[3:]))
        self.buckets.append(b, {"dst": dst, "src": src, "eid": eid})
        return {}, []

    def write(self, h: dict, arrays) -> tuple[dict, list]:
        """Write this host's parts (`arrays`: the edge id ranges of every part and type)."""
        (ranges,) = arrays
        self.new_ids = None  # every host's shuffle has ended: no host asks for them any more
        release_freed_memory()
        self.buckets.finish()
        self.edge_data.finish()
        self.node_files.close()
        writer = ShuffledPartWriter(self.source, self.out, self.buckets, self.bounds, self.bucket_part,
                                    self.node_ranges, ranges.astype(np.int64).reshape(self.num_parts, -1, 2),
                                    self.new2old, self.node_names, self.edge_names, EDGE_MAP_SCRATCH, self.scratch,
                                    edge_data=self.edge_data)
        metas = []
        for p in self.parts:
            self.check_stopping()
            metas.append(writer.part(p, self.out_degree[p]).json())
            self.progress += metas[-1]["num_inner_edges"]
        writer.close()
        self.buckets.close()
        self.edge_data.close()
        return {"metas": metas, "train": [self.node_files.train[p] for p in self.parts]}, []

    def edge_map_rows(self, h: dict, arrays) -> tuple[dict, list]:
        key, start, count = P.field(h, "key", str), P.field(h, "start"), P.field(h, "count")
        if key not in [":".join(c) for c in self.source.canonical_etypes]:
            raise WireError(f"unknown edge type {key!r}")
        rows = npy_file_array(self.scratch / EDGE_MAP_SCRATCH.format(key))
        return {}, [rows.read(start, start + count)]  # (a positioned read: nothing of the file is mapped)

    def map_rows(self, h: dict, arrays) -> tuple[dict, list]:
        """Rows of an id map (which `distgraph launch` needs on every host), written under a
        temporary name (an `.npy` no config names: removed if the run dies) and renamed into place
        when whole (hosts sharing a folder agree on its bytes)."""
        rel, start, total = P.field(h, "file", str), P.field(h, "start"), P.field(h, "total")
        maps = [f"mapping/node.{t}.npy" for t in self.source.ntypes] + [
            EDGE_MAP.format(":".join(c)) for c in self.source.canonical_etypes]
        if rel not in maps:
            raise WireError(f"{rel!r} is not an id map of this graph")
        (rows,) = arrays
        if start == 0:
            self.maps[rel] = NpyFile(self.out / f"{rel[:-len('.npy')]}.tmp-{self.machine}.npy", rows.dtype, (total,))
        f = self.maps[rel]
        f.append(rows)
        if f.rows == total:
            f.close()
            os.replace(f.path, self.out / rel)
            del self.maps[rel]
        return {}, []

    def commit(self, h: dict, arrays) -> tuple[dict, list]:
        """The config, written last: from here on this host's parts load."""
        write_config(self.out / f"{self.graph_name}.json", P.field(h, "config", str))
        self.committed = True
        self.report({"done": True})
        return {}, []

    # -- the end -----------------------------------------------------------------------------------
    def cleanup(self) -> None:
        """Let go of every file (quietly: what a full disk cannot flush is removed anyway), then of
        the folders: the run's scratch goes and, unless its config was written, its files that no
        config names (and the output folder, if the run made it)."""
        with self._ending:
            held = [self.adjacency, self.buckets, self.edge_data, self.node_files, *self.maps.values()]
            for f in [f for f in held if f is not None]:
                try:
                    f.close()
                except OSError:
                    pass
            self.maps = {}
            folders, self.folders = self.folders, None
            if folders is not None:
                try:
                    folders.release(failed=not self.committed)
                except OSError as exc:
                    raise PartitionError(f"machine {self.machine}: cannot remove what this run wrote in {self.out} "
                                         f"({exc.strerror or exc})") from None
