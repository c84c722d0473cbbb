"""`partition_stream`: the partitioner for graphs one process cannot hold. It writes exactly what
`partition_graph` writes (the same files, byte for byte for the same assignment), reading the
edges as a stream and keeping only per-node arrays and one bucket of edges in memory.

1. One pass counts degrees (and the training nodes, for balance and statistics).
2. The assignment: KaMinPar on the undirected graph written by streaming (`adjacency`), METIS
   on that same graph where it fits, random, or one given.
3. Nodes are numbered as `relabel_nodes` numbers them (by part, node type, original id); the
   new id ranges are cut into buckets of at most `bucket_edges` in-edges, never across parts.
4. One pass spreads every edge, as (new destination, new source, original edge id), into its
   destination's bucket file (`buckets`), and counts edges per (part, edge type) and the cut.
5. Each part: its halo from its buckets' sources, then bucket after bucket (ascending
   destinations) its CSC rows, edge ids, id maps and edge data, appended to its files; then its
   node data. Edge ids follow `relabel_edges`: by (part, edge type, new destination, original id).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ...arrays import add_counts, group_keys, inverse_permutation, offsets
from ...errors import PartitionError
from ...files import private_files
from ..assign import SPLIT_MASKS, fill_empty_parts, positive_int
from ..layout import DataSpec, PartMeta, check_name, config_json, part_files
from ..out_folder import check_out, clear_out, write_config
from ..writer import PartitionStats
from .adjacency import kaminpar_parts, row_buckets, write_parhip
from ...files import check_space
from ...malloc import release_freed_memory
from .buckets import Buckets, id_dtype
from .npyfile import NpyFile, save_rows
from .source import StreamSource, from_array_graph

MAX_BUCKETS = 200  # bucket files open at once (3 each): well under a process's open-file limit
STREAM_METHODS = ("kaminpar", "metis", "random")


@dataclass
class Degrees:
    """What one pass over the edges tells: in- and out-degrees (int64 per node)."""

    in_deg: np.ndarray
    out_deg: np.ndarray

    @contextmanager
    def on_disk(self, folder: Path) -> Iterator[None]:
        """Out of memory while the body runs (the partitioner's peak): saved under `folder`,
        dropped, read back after."""
        files = [folder / ".in_degree.npy", folder / ".out_degree.npy"]
        try:
            np.save(files[0], self.in_deg)
            np.save(files[1], self.out_deg)
            self.in_deg = self.out_deg = None
            release_freed_memory()
            yield
        finally:
            if self.in_deg is None:
                self.in_deg, self.out_deg = np.load(files[0]), np.load(files[1])
            for f in files:
                f.unlink(missing_ok=True)


def data_meta(store: dict[str, dict], counts: dict[str, int], kind: str) -> tuple[dict, dict]:
    """Names and (dtype, trailing shape) of each type's data, checked: one row per node or edge."""
    names, meta = {}, {}
    for key, data in store.items():
        names[key] = [check_name(k, "data name") for k in data]
        for k, v in data.items():
            if len(v.shape) == 0 or v.shape[0] != counts[key]:
                raise PartitionError(f"{kind} data {k!r} of type {key!r} has shape {tuple(v.shape)} but the type has "
                                     f"{counts[key]} {kind}s; give it one row per {kind}")
        meta[key] = {k: DataSpec(str(np.dtype(v.dtype)), tuple(v.shape[1:])) for k, v in data.items()}
    return names, meta


def count_degrees(source: StreamSource, progress: bool = False) -> Degrees:
    n = source.num_nodes()
    in_deg, out_deg = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    bar = tqdm(total=source.num_edges(), desc="degrees", unit="edge", unit_scale=True, disable=not progress,
               leave=False)
    for src, dst in source.chunks():
        add_counts(out_deg, src)
        add_counts(in_deg, dst)
        bar.update(src.size)
    bar.close()
    return Degrees(in_deg, out_deg)


def node_flag(source: StreamSource, name: str) -> np.ndarray:
    """Boolean node data `name` (e.g. train_mask) over all nodes, False for types without it."""
    flag = np.zeros(source.num_nodes(), dtype=bool)
    for i, t in enumerate(source.ntypes):
        data = source.node_data.get(t, {})
        if name in data:
            lo, hi = int(source.ntype_offsets[i]), int(source.ntype_offsets[i + 1])
            a = data[name]
            for j in range(0, hi - lo, 1 << 24):
                flag[lo + j:lo + min(j + (1 << 24), hi - lo)] = np.asarray(a[j:min(j + (1 << 24), hi - lo)],
                                                                           dtype=bool).reshape(-1)
    return flag


def combined_weight(num_nodes: int, in_deg: np.ndarray | None, groups) -> np.ndarray:
    """One vertex weight standing for several balance constraints (KaMinPar balances one): each
    node counts 1, plus its in-degree when `in_deg` is given (balance in-edges), plus for each
    boolean mask in `groups` (train, val, test nodes) a weight that gives the masked nodes as
    much total weight as all nodes have, so each such set is spread too."""
    w = np.ones(num_nodes, dtype=np.int64)
    if in_deg is not None:
        w += in_deg
    for flag in groups:
        count = int(flag.sum())
        if count:
            w[flag] += max(1, round(num_nodes / count))
    if int(w.max()) >= 2**31 or int(w.sum()) >= 2**62:
        raise PartitionError("the combined vertex weights overflow; balance fewer things or use --part_method random")
    return w


def split_weight(source: StreamSource, deg: Degrees, balance_train: bool, balance_edges: bool) -> np.ndarray | None:
    """`combined_weight` for `--balance_train` (train/val/test masks) and `--balance_edges`."""
    if not (balance_train or balance_edges):
        return None
    groups = (node_flag(source, name) for name in SPLIT_MASKS) if balance_train else ()
    return combined_weight(source.num_nodes(), deg.in_deg if balance_edges else None, groups)


def kaminpar_assign(g, num_parts: int, seed: int, balance_ntypes=None, balance_edges: bool = False) -> np.ndarray:
    """KaMinPar's parts of an in-memory graph (`partition_graph(part_method="kaminpar")`): its
    undirected graph goes through a scratch file as in the streaming path; `balance_ntypes`
    (categories, e.g. train/val/test) and `balance_edges` fold into the one combined weight."""
    import tempfile

    source = from_array_graph(g)
    deg = count_degrees(source)
    weights = None
    if balance_ntypes is not None or balance_edges:
        cat = np.asarray(balance_ntypes).reshape(-1) if balance_ntypes is not None else np.zeros(0, dtype=np.int64)
        weights = combined_weight(source.num_nodes(), deg.in_deg if balance_edges else None,
                                  (cat == c for c in np.unique(cat[cat > 0])))
    with tempfile.TemporaryDirectory(prefix=".kaminpar-") as scratch:
        return assign(source, deg, num_parts, "kaminpar", seed, Path(scratch), weights,
                      max(1 << 20, source.num_edges() // 10))


def assign(source: StreamSource, deg: Degrees, num_parts: int, method: str, seed: int, scratch: Path,
           weights: np.ndarray | None, bucket_edges: int, threads: int = 1, progress: bool = False) -> np.ndarray:
    """Part id of every node (int64) by `method`."""
    n = source.num_nodes()
    if num_parts == 1:
        return np.zeros(n, dtype=np.int64)
    if method == "random":
        return (np.random.default_rng(seed).permutation(n) % num_parts).astype(np.int64)
    graph = scratch / ".undirected.parhip"
    try:
        write_parhip(source, deg.in_deg + deg.out_deg, graph, weights, 2 * bucket_edges, progress)
        with deg.on_disk(scratch):
            if method == "kaminpar":
                parts = kaminpar_parts(graph, num_parts, seed, threads=threads).astype(np.int64)
            else:
                parts = _metis_on_file(graph, n, num_parts, seed, weights)
    finally:
        graph.unlink(missing_ok=True)
    return fill_empty_parts(parts, num_parts)


def _metis_on_file(graph: Path, n: int, num_parts: int, seed: int, weights: np.ndarray | None) -> np.ndarray:
    from ..metis import part_graph

    raw = np.memmap(graph, dtype=np.uint8, mode="r")
    header = raw[:24].view(np.uint64)
    m = int(header[2])
    start = 24 + 8 * (n + 1)
    xadj = (raw[24:start].view(np.uint64).astype(np.int64) - start) // 4
    adjncy = raw[start:start + 4 * m].view(np.int32)
    return part_graph(xadj, adjncy, num_parts, None if weights is None else weights.reshape(n, 1), seed=seed)[0]


def _buckets_of_parts(in_deg_new: np.ndarray, part_starts: np.ndarray, bucket_edges: int) -> np.ndarray:
    """Bucket boundaries over new node ids: at most `bucket_edges` in-edges each, cut at every part's start."""
    bounds = [np.zeros(1, dtype=np.int64)]
    for p in range(part_starts.size - 1):
        lo, hi = int(part_starts[p]), int(part_starts[p + 1])
        if hi > lo:
            bounds.append(lo + row_buckets(in_deg_new[lo:hi], bucket_edges)[1:])
    return np.concatenate(bounds)


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
        end = np.full(halo + 1, self.edges, dtype=np.int64)
        self.indptr.append(end)
        if self.typed is not None:
            self.typed.append(np.full(halo * self.types + 1, self.edges, dtype=np.int64))
        for f in (self.indices, self.eids, self.indptr, self.typed):
            if f is not None:
                f.close()


@private_files()
def partition_stream(source: StreamSource, graph_name: str, num_parts: int, out_path: str | Path,
                     part_method: str = "kaminpar", balance_train: bool = False, balance_edges: bool = False,
                     seed: int = 0, parts: np.ndarray | None = None, bucket_edges: int | None = None,
                     threads: int = 1, progress: bool = False, overwrite: bool = False) -> PartitionStats:
    """Partition `source` into `num_parts` parts under `out_path` (one-hop halos); `parts`
    gives the assignment instead of `part_method`. A folder holding another graph's partition
    is refused unless `overwrite` (`out_folder`). See the module docstring."""
    t0 = time.perf_counter()
    check_name(graph_name, "graph name", allow_dot=True)
    num_parts = positive_int(num_parts, "num_parts")
    n, m = source.num_nodes(), source.num_edges()
    if num_parts > n:
        raise PartitionError(f"cannot split {n} nodes into {num_parts} parts; use at most {n} parts")
    if part_method not in STREAM_METHODS:
        raise PartitionError(f"unknown part_method {part_method!r} for large graphs; choose one of {STREAM_METHODS}")
    node_names, node_meta = data_meta(source.node_data, {t: int(source.ntype_offsets[i + 1] - source.ntype_offsets[i])
                                                         for i, t in enumerate(source.ntypes)}, "node")
    edge_names, edge_meta = data_meta(source.edge_data, {
        ":".join(c): int(source.etype_offsets[i + 1] - source.etype_offsets[i])
        for i, c in enumerate(source.canonical_etypes)}, "edge")
    out = Path(out_path)
    out.mkdir(parents=True, exist_ok=True)
    check_out(out, graph_name, overwrite)
    T, R = len(source.ntypes), len(source.canonical_etypes)
    if bucket_edges is None:  # about 80 bytes of working memory per edge of a bucket: a twentieth of the
        bucket_edges = int(np.clip(m // 20, 1 << 20, 1 << 23))  # edges, within [1M, 8M], keeps it near 4 B an edge
    bucket_edges = max(bucket_edges, -(-m // MAX_BUCKETS))
    id_t, eid_t = id_dtype(n), id_dtype(m)
    check_space(out, m * (2 * id_t.itemsize + eid_t.itemsize) + m * 8 * (2 if R > 1 else 1) + 16 * n,
                "partitioning (scratch buckets and the partitions)")

    deg = count_degrees(source, progress)
    if parts is None:
        weights = split_weight(source, deg, balance_train, balance_edges)
        parts = assign(source, deg, num_parts, part_method, seed, out, weights, bucket_edges, threads, progress)
    else:
        parts = np.asarray(parts, dtype=np.int64)
        if parts.shape != (n,) or (n and (parts.min() < 0 or parts.max() >= num_parts)):
            raise PartitionError(f"an assignment needs one part id in [0, {num_parts}) per node ({n})")
    t_assign = time.perf_counter() - t0

    # numbering, as relabel_nodes: by (part, node type, original id)
    key = parts * T + source.node_type_ids(np.arange(n)) if T > 1 else parts
    new2old, starts = group_keys(key, num_parts * T)
    del key, parts  # the numbering holds the assignment: part p owns node_ranges[p]
    new2old = new2old.astype(id_t)  # int32 when the ids fit: per-node arrays are the bulk of the memory
    node_ranges = np.stack([starts[:-1], starts[1:]], axis=1).reshape(num_parts, T, 2)
    old2new = inverse_permutation(new2old)
    part_starts = np.concatenate([node_ranges[:, 0, 0], [n]])
    bounds = _buckets_of_parts(deg.in_deg[new2old], part_starts, bucket_edges)
    bucket_part = np.searchsorted(part_starts, bounds[:-1], side="right") - 1
    config_path = out / f"{graph_name}.json"
    clear_out(out, num_parts)  # from here until the new config, nothing here loads
    try:
        metas, node_files, edge_files, edge_ranges, cut = _write_parts(
            source, out, deg, old2new, new2old, node_ranges, bounds, bucket_part, node_names, edge_names,
            (id_t, eid_t), progress)
    except BaseException:
        _remove_files(out, num_parts, source, node_names, edge_names)
        raise

    names_file = None
    if source.node_names is not None:  # an edge list's string ids, by original id (as partition_graph keeps them)
        names_file = "mapping/node_names.npy"
        np.save(out / names_file, np.asarray(source.node_names))
    train = node_flag(source, "train_mask")
    stats = PartitionStats(
        num_parts=num_parts, part_nodes=[pm.num_inner_nodes for pm in metas],
        part_edges=[pm.num_inner_edges for pm in metas],
        part_halo=[pm.num_local_nodes - pm.num_inner_nodes for pm in metas],
        part_train=[int(train[new2old[lo:hi]].sum()) for lo, hi in node_ranges[:, [0, -1], [0, 1]]],
        edge_cut=cut / m if m else 0.0, assign_seconds=t_assign, total_seconds=0.0)
    config = config_json(
        graph_name, n, m, part_method, 1, source.ntypes, source.canonical_etypes,
        node_map={t: node_ranges[:, i].tolist() for i, t in enumerate(source.ntypes)},
        edge_map={":".join(c): edge_ranges[:, i].tolist() for i, c in enumerate(source.canonical_etypes)},
        node_data=node_meta, edge_data=edge_meta,
        mapping={"node": node_files, "edge": edge_files, "node_names": names_file}, partitions=metas)
    stats.total_seconds = time.perf_counter() - t0
    config["stats"] = stats.as_dict()
    write_config(config_path, json.dumps(config, indent=1))  # the partitioning exists, whole, from here on
    return stats


def _remove_files(out: Path, num_parts: int, source: StreamSource, node_names: dict, edge_names: dict) -> None:
    """Remove what a failed run wrote (only the files this partitioning names)."""
    for p in range(num_parts):
        for rel in _flat(part_files(p, node_names, edge_names, typed=len(source.canonical_etypes) > 1)):
            (out / rel).unlink(missing_ok=True)
        try:
            (out / f"part{p}").rmdir()
        except OSError:
            pass
    for rel in [f"mapping/node.{t}.npy" for t in source.ntypes] + \
               [f"mapping/edge.{':'.join(c)}.npy" for c in source.canonical_etypes]:
        (out / rel).unlink(missing_ok=True)


def _flat(files) -> list[str]:
    if isinstance(files, dict):
        return [f for v in files.values() for f in _flat(v)]
    return [files] if isinstance(files, str) else []


def _write_parts(source, out, deg, old2new, new2old, node_ranges, bounds, bucket_part, node_names, edge_names,
                 dtypes, progress):
    """Spread the edges into buckets and write every partition; (their config entries, node map
    files, edge map files, edge ranges, cut edges)."""
    num_parts, R, m = node_ranges.shape[0], len(source.canonical_etypes), source.num_edges()
    part_starts = np.concatenate([node_ranges[:, 0, 0], [source.num_nodes()]])
    id_t, eid_t = dtypes
    per_type = np.zeros(num_parts * R, dtype=np.int64)
    cut = 0
    with Buckets(out, bounds.size - 1, {"dst": id_t, "src": id_t, "eid": eid_t}, "edges") as buckets:
        bar = tqdm(total=m, desc="spread edges", unit="edge", unit_scale=True, disable=not progress, leave=False)
        first = 0
        for src, dst in source.chunks():
            nd, ns = old2new[dst], old2new[src]
            b = np.searchsorted(bounds, nd, side="right") - 1
            p = bucket_part[b]
            eid = np.arange(first, first + src.size, dtype=np.int64)
            et = source.edge_type_ids(eid) if R > 1 else 0
            add_counts(per_type, p * R + et)
            cut += int(((ns < part_starts[p]) | (ns >= part_starts[p + 1])).sum())
            buckets.append(b, {"dst": nd, "src": ns, "eid": eid})
            first += src.size
            bar.update(src.size)
        bar.close()
        buckets.finish()
        edge_ranges = offsets(per_type)
        edge_ranges = np.stack([edge_ranges[:-1], edge_ranges[1:]], axis=1).reshape(num_parts, R, 2)
        writer = _Writer(source, out, buckets, bounds, bucket_part, node_ranges, edge_ranges, new2old, node_names,
                         edge_names, progress)
        metas = [writer.part(p, deg.out_deg) for p in range(num_parts)]
        node_files, edge_files = writer.mappings()
    return metas, node_files, edge_files, edge_ranges, cut


class _Writer:
    """Writes the partitions from the edge buckets."""

    def __init__(self, source, out, buckets, bounds, bucket_part, node_ranges, edge_ranges, new2old, node_names,
                 edge_names, progress):
        self.source, self.out, self.buckets = source, out, buckets
        self.bounds, self.bucket_part = bounds, bucket_part
        self.node_ranges, self.edge_ranges, self.new2old = node_ranges, edge_ranges, new2old
        self.node_names, self.edge_names, self.progress = node_names, edge_names, progress
        self.R = len(source.canonical_etypes)
        self.local = np.full(source.num_nodes(), -1, dtype=new2old.dtype)  # a part's halo nodes -> local ids
        num_parts = node_ranges.shape[0]
        # where each (part, edge type) block starts in that type's id map: earlier parts' blocks
        sizes = edge_ranges[:, :, 1] - edge_ranges[:, :, 0]
        self.type_at = np.cumsum(sizes, axis=0) - sizes
        keys = [":".join(c) for c in source.canonical_etypes]
        self.edge_maps = {k: NpyFile(out / f"mapping/edge.{k}.npy", np.int64, (int(sizes[:, i].sum()),))
                          for i, k in enumerate(keys)}
        self.keys = keys
        self.num_parts = num_parts

    def part(self, p: int, out_deg: np.ndarray) -> PartMeta:
        R, src_eoff = self.R, self.source.etype_offsets
        lo, hi = int(self.node_ranges[p, 0, 0]), int(self.node_ranges[p, -1, 1])
        n_inner = hi - lo
        mine = np.flatnonzero(self.bucket_part == p)
        seen = np.zeros(self.source.num_nodes(), dtype=bool)
        for b in mine:
            s = self.buckets.read(b, ("src",))["src"]
            seen[s[(s < lo) | (s >= hi)]] = True
        halo = np.flatnonzero(seen)
        del seen
        self.local[halo] = n_inner + np.arange(halo.size)
        files = part_files(p, self.node_names, self.edge_names, typed=R > 1)
        if R == 1:
            files["eids"] = None
        n_local = n_inner + halo.size
        gnid = NpyFile(self.out / files["global_nid"], np.int64, (n_local,))
        gnid.append(np.arange(lo, hi, dtype=np.int64))
        gnid.append(halo)
        gnid.close()
        save_rows(self.out / files["out_degree"], self.new2old[lo:hi], out_deg)
        e_lo, e_hi = int(self.edge_ranges[p, 0, 0]), int(self.edge_ranges[p, -1, 1])
        csc = _PartOut(self.out, files, n_local, e_hi - e_lo, R)
        done = np.zeros(R, dtype=np.int64)  # edges of each type of this part written so far
        edge_data = {k: {name: NpyFile(self.out / files["edge_data"][k][name], self.source.edge_data[k][name].dtype,
                                       (int(self.edge_ranges[p, i, 1] - self.edge_ranges[p, i, 0]),
                                        *self.source.edge_data[k][name].shape[1:]))
                         for name in self.edge_names.get(k, ())} for i, k in enumerate(self.keys)}
        for b in mine:
            cols = self.buckets.read(b)
            self.buckets.drop(b)
            blo, bhi = int(self.bounds[b]), int(self.bounds[b + 1])
            rows = bhi - blo
            ldst = cols["dst"].astype(np.int64) - blo
            src = cols["src"].astype(np.int64)
            eid = cols["eid"].astype(np.int64)
            del cols
            et = self.source.edge_type_ids(eid) if R > 1 else np.zeros(eid.size, dtype=np.int64)
            order, starts = group_keys(ldst * R + et, rows * R)  # CSC: by (destination, type, original id)
            inside = (src >= lo) & (src < hi)
            local_src = np.where(inside, src - lo, self.local[src])
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
                    f.write_at(int(done[t]), np.asarray(self.source.edge_data[self.keys[t]][name][orig]))
                done[t] += z - a
            csc.add(starts, local_src[order], new_eid[order] if R > 1 else None)
        csc.finish(halo.size)
        for fs in edge_data.values():
            for f in fs.values():
                f.close()
        self.local[halo] = -1
        for i, t in enumerate(self.source.ntypes):
            start, end = self.node_ranges[p, i]
            rows = self.new2old[start:end] - int(self.source.ntype_offsets[i])
            for name in self.node_names.get(t, ()):
                save_rows(self.out / files["node_data"][t][name], rows, self.source.node_data[t][name])
        return PartMeta(p, n_inner, n_local, e_hi - e_lo, e_hi - e_lo, files)

    def mappings(self) -> tuple[dict, dict]:
        """Finish the edge id maps and write the node id maps; (node files, edge files) by type."""
        for f in self.edge_maps.values():
            f.close()
        node_files = {}
        for i, t in enumerate(self.source.ntypes):
            rel = f"mapping/node.{t}.npy"
            ranges = self.node_ranges[:, i]
            f = NpyFile(self.out / rel, np.int64, (int((ranges[:, 1] - ranges[:, 0]).sum()),))
            for lo, hi in ranges:
                f.append(self.new2old[lo:hi] - int(self.source.ntype_offsets[i]))
            f.close()
            node_files[t] = rel
        return node_files, {k: f"mapping/edge.{k}.npy" for k in self.keys}
