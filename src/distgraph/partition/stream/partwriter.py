"""Writing partitions from edge buckets: a part's halo, CSC rows, edge ids, edge id map pieces
and data, bucket after bucket (ascending destinations), appended to its files. Used by
`partition_stream` for every part and by a host of a distributed partitioning for its own.

Edge ids follow `relabel_edges`: by (part, edge type, new destination, original id).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...arrays import group_keys
from ..layout import PartMeta, part_files
from .halo import Halo
from .npyfile import NpyFile, save_rows
from .source import StreamSource

EDGE_MAP = "mapping/edge.{}.npy"  # the id map of edge type "s:r:d", under the output folder


def _append_same(f: NpyFile, count: int, value: int, piece: int = 1 << 20) -> None:
    """`count` rows of `value` appended to `f`, a million at a time."""
    for at in range(0, count, piece):
        f.append(np.full(min(piece, count - at), value, dtype=np.int64))


class _PartOut:
    """One partition's CSC files, filled bucket by bucket."""

    def __init__(self, out: Path, files: dict, n_local: int, num_edges: int, types: int):
        self.types = types
        self.indices = NpyFile(out / files["indices"], np.int64, (num_edges,))
        self.eids = NpyFile(out / files["eids"], np.int64, (num_edges,)) if types > 1 else None
        self.indptr = NpyFile(out / files["indptr"], np.int64, (n_local + 1,))
        self.typed = NpyFile(out / files["typed_indptr"], np.int64, (n_local * types + 1,)) if types > 1 else None
        self.edges = 0

    def add(self, starts: np.ndarray, local_src: np.ndarray, new_eids: np.ndarray | None) -> None:
        """A bucket's rows: `starts` the (node, type) run offsets within it (len rows * types + 1)."""
        runs = starts[:-1] + self.edges
        if self.typed is not None:
            self.typed.append(runs)
            self.eids.append(new_eids)
        self.indptr.append(runs[::self.types])
        self.indices.append(local_src)
        self.edges += local_src.size

    def finish(self, halo: int) -> None:
        """Halo nodes have no in-edges here: their runs all start (and end) at the last edge."""
        _append_same(self.indptr, halo + 1, self.edges)
        if self.typed is not None:
            _append_same(self.typed, halo * self.types + 1, self.edges)
        for f in (self.indices, self.eids, self.indptr, self.typed):
            if f is not None:
                f.close()


class PartWriter:
    """Writes partitions from the edge buckets (`Buckets` of dst, src, eid in new ids, each
    bucket inside one part). `new2old` is indexed only by slices inside a part this writer
    writes; the edge id maps go to `edge_map` (a path pattern under `edge_map_root`, by default
    `out`) at their place in the whole map, so several writers' pieces make the one file. Node
    and edge data are read from `source` by original id (`node_data`, `edge_rows`: a subclass
    may take them elsewhere)."""

    def __init__(self, source: StreamSource, out: Path, buckets, bounds: np.ndarray, bucket_part: np.ndarray,
                 node_ranges: np.ndarray, edge_ranges: np.ndarray, new2old, node_names: dict, edge_names: dict,
                 edge_map: str = EDGE_MAP, edge_map_root: Path | None = None):
        self.source, self.out, self.buckets = source, out, buckets
        self.bounds, self.bucket_part = bounds, bucket_part
        self.node_ranges, self.edge_ranges, self.new2old = node_ranges, edge_ranges, new2old
        self.node_names, self.edge_names = node_names, edge_names
        self.R = len(source.canonical_etypes)
        self.halo = Halo(source.num_nodes())
        # where each (part, edge type) block starts in that type's id map: earlier parts' blocks
        sizes = edge_ranges[:, :, 1] - edge_ranges[:, :, 0]
        self.type_at = np.cumsum(sizes, axis=0) - sizes
        self.keys = [":".join(c) for c in source.canonical_etypes]
        root = edge_map_root or out
        self.edge_maps = {k: NpyFile(root / edge_map.format(k), np.int64, (int(sizes[:, i].sum()),))
                          for i, k in enumerate(self.keys)}

    def part(self, p: int, out_degree: np.ndarray) -> PartMeta:
        """Write part `p` (`out_degree`: its inner nodes' out-degrees, in new id order)."""
        R, src_eoff = self.R, self.source.etype_offsets
        lo, hi = int(self.node_ranges[p, 0, 0]), int(self.node_ranges[p, -1, 1])
        n_inner = hi - lo
        mine = np.flatnonzero(self.bucket_part == p)
        for b in mine:
            s = self.buckets.read(b, ("src",))["src"]
            self.halo.add(s[(s < lo) | (s >= hi)])
        num_halo = self.halo.count()
        files = part_files(p, self.node_names, self.edge_names, typed=R > 1)
        if R == 1:
            files["eids"] = None
        n_local = n_inner + num_halo
        gnid = NpyFile(self.out / files["global_nid"], np.int64, (n_local,))
        gnid.append(np.arange(lo, hi, dtype=np.int64))
        for ids in self.halo.ids():
            gnid.append(ids)
        gnid.close()
        save_rows(self.out / files["out_degree"], np.arange(n_inner), out_degree)
        e_lo, e_hi = int(self.edge_ranges[p, 0, 0]), int(self.edge_ranges[p, -1, 1])
        csc = _PartOut(self.out, files, n_local, e_hi - e_lo, R)
        done = np.zeros(R, dtype=np.int64)  # edges of each type of this part written so far
        edge_data = {k: {name: NpyFile(self.out / files["edge_data"][k][name], self.source.edge_data[k][name].dtype,
                                       (int(self.edge_ranges[p, i, 1] - self.edge_ranges[p, i, 0]),
                                        *self.source.edge_data[k][name].shape[1:]))
                         for name in self.edge_names.get(k, ())} for i, k in enumerate(self.keys)}
        for b in mine:
            cols = self.buckets.take(b)
            blo, bhi = int(self.bounds[b]), int(self.bounds[b + 1])
            rows = bhi - blo
            ldst = cols["dst"].astype(np.int64) - blo
            src = cols["src"].astype(np.int64)
            eid = cols["eid"].astype(np.int64)
            del cols
            if eid.size > 1 and bool((eid[1:] < eid[:-1]).any()):  # pieces from several hosts: edge-id order
                by_eid = np.argsort(eid)
                ldst, src, eid = ldst[by_eid], src[by_eid], eid[by_eid]
            et = self.source.edge_type_ids(eid) if R > 1 else np.zeros(eid.size, dtype=np.int64)
            order, starts = group_keys(ldst * R + et, rows * R)  # CSC: by (destination, type, original id)
            local_src = self.halo.local_ids(src, lo, hi)
            # edge ids: by (type, destination, original id) within the part
            by_type, tstarts = group_keys(et * rows + ldst, R * rows)
            new_eid = np.empty(eid.size, dtype=np.int64)
            for t in range(R):
                a, z = int(tstarts[t * rows]), int(tstarts[(t + 1) * rows])
                if z == a:
                    continue
                block = by_type[a:z]
                new_eid[block] = self.edge_ranges[p, t, 0] + done[t] + np.arange(z - a)
                orig = eid[block] - int(src_eoff[t])
                self.edge_maps[self.keys[t]].write_at(int(self.type_at[p, t] + done[t]), orig)
                for name, f in edge_data[self.keys[t]].items():
                    f.write_at(int(done[t]), self.edge_rows(b, t, name, orig))
                done[t] += z - a
            csc.add(starts, local_src[order], new_eid[order] if R > 1 else None)
        csc.finish(num_halo)
        for fs in edge_data.values():
            for f in fs.values():
                f.close()
        self.halo.clear()
        self.node_data(p, files)
        return PartMeta(p, n_inner, n_local, e_hi - e_lo, e_hi - e_lo, files)

    def edge_rows(self, bucket: int, etype: int, name: str, orig: np.ndarray) -> np.ndarray:
        """Rows `orig` (original ids of type `etype`, edges of bucket `bucket`) of edge data `name`."""
        return np.asarray(self.source.edge_data[self.keys[etype]][name][orig])

    def node_data(self, p: int, files: dict) -> None:
        """Part `p`'s node data files: the rows of its inner nodes, in new id order."""
        for i, t in enumerate(self.source.ntypes):
            start, end = self.node_ranges[p, i]
            rows = self.new2old[start:end] - int(self.source.ntype_offsets[i])
            for name in self.node_names.get(t, ()):
                save_rows(self.out / files["node_data"][t][name], rows, self.source.node_data[t][name])

    def close(self) -> None:
        """Finish the edge id map files (at their full size)."""
        for f in self.edge_maps.values():
            f.close()


def write_node_maps(out: Path, source: StreamSource, node_ranges: np.ndarray, new2old: np.ndarray) -> dict[str, str]:
    """The node id maps (each type's original ids in new id order); their files by type."""
    node_files = {}
    for i, t in enumerate(source.ntypes):
        rel = f"mapping/node.{t}.npy"
        ranges = node_ranges[:, i]
        f = NpyFile(out / rel, np.int64, (int((ranges[:, 1] - ranges[:, 0]).sum()),))
        for lo, hi in ranges:
            f.append(new2old[lo:hi] - int(source.ntype_offsets[i]))
        f.close()
        node_files[t] = rel
    return node_files
