"""`partition_stream`: the partitioner for graphs one process cannot hold. It writes exactly what
`partition_graph` writes (the same files, byte for byte for the same assignment), reading the
edges as a stream and keeping only per-node arrays and one bucket of edges in memory.

1. One pass counts degrees (and the training nodes, for balance and statistics).
2. The assignment: KaMinPar on the undirected graph written by streaming (`adjacency`), METIS
   on that same graph where it fits, random, or one given.
3. Nodes are numbered as `relabel_nodes` numbers them (by part, node type, original id); the
   new id ranges are cut into buckets of at most `bucket_edges` in-edges, never across parts
   (`numbering`).
4. One pass spreads every edge, as (new destination, new source, original edge id), into its
   destination's bucket file (`buckets`), and counts edges per (part, edge type) and the cut.
5. Each part is written from its buckets (`partwriter`), then the id maps and the config.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...arrays import add_counts
from ...errors import PartitionError
from ...files import check_space, private_files
from ...malloc import release_freed_memory
from ...progress import Progress, wait_for
from ..layout import DataSpec, check_name, config_json
from ..out_folder import check_out, clear_out, output_folder, write_config
from ..parts import SPLIT_MASKS, fill_empty_parts, node_mask, part_count, random_parts
from ..report import PartitionStats
from .adjacency import ParhipGraph, row_buckets, write_parhip
from .kaminpar import kaminpar_parts
from .buckets import Buckets, id_dtype
from .numbering import EdgeRouter, Numbering, edge_columns, edge_ranges, number_nodes
from .partwriter import EDGE_MAP, PartWriter, write_node_maps
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
    bar = Progress(source.num_edges(), "degrees", "edge", enabled=progress, unit_scale=True)
    for src, dst in source.chunks():
        add_counts(out_deg, src)
        add_counts(in_deg, dst)
        bar.update(src.size)
    bar.close()
    return Degrees(in_deg, out_deg)


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
    groups = (node_mask(source.ntypes, source.ntype_offsets, source.node_data, name)
              for name in SPLIT_MASKS) if balance_train else ()
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
           weights: np.ndarray | None, bucket_edges: int, threads: int = 1, progress: bool = False,
           write_graph: Callable[[Path, np.ndarray, int], None] | None = None) -> np.ndarray:
    """Part id of every node (int64) by `method`. The undirected graph a partitioner reads is
    written by `write_graph(path, row buckets' boundaries, max entries)` when given (from
    edges held elsewhere), else from `source`."""
    n = source.num_nodes()
    if num_parts == 1 or method == "random":
        return random_parts(n, num_parts, seed)
    graph = scratch / ".undirected.parhip"
    try:
        if write_graph is None:
            write_parhip(source, deg.in_deg + deg.out_deg, graph, weights, 2 * bucket_edges, progress)
        else:
            write_graph(graph, row_buckets(deg.in_deg + deg.out_deg, 2 * bucket_edges), 2 * bucket_edges)
        with deg.on_disk(scratch), Progress(1, f"assign ({method})", enabled=progress) as bar, bar.ticking():
            if method == "kaminpar":
                parts = kaminpar_parts(graph, num_parts, seed, threads=threads, progress=progress).astype(np.int64)
            else:
                parts = _metis_on_file(graph, n, num_parts, seed, weights)
            bar.update()
    finally:
        graph.unlink(missing_ok=True)
    return fill_empty_parts(parts, num_parts)


def _metis_on_file(graph: Path, n: int, num_parts: int, seed: int, weights: np.ndarray | None) -> np.ndarray:
    from ..metis import part_graph

    xadj, adjncy = ParhipGraph.open(graph).rows(0, n)
    return wait_for(part_graph, xadj, adjncy, num_parts, None if weights is None else weights.reshape(n, 1),
                    seed=seed)[0]


def check_request(source: StreamSource, graph_name: str, num_parts: int, part_method: str):
    """The checked number of parts, and the names and specs of the node and edge data."""
    check_name(graph_name, "graph name", allow_dot=True)
    num_parts = part_count(num_parts, source.num_nodes())
    if part_method not in STREAM_METHODS:
        raise PartitionError(f"unknown part_method {part_method!r} for large graphs; choose one of {STREAM_METHODS}")
    return (num_parts, *data_specs(source))


def data_specs(source: StreamSource) -> tuple[dict, dict, dict, dict]:
    """(node data names, their specs, edge data names, their specs) by type, checked."""
    node_names, node_meta = data_meta(source.node_data, {t: int(source.ntype_offsets[i + 1] - source.ntype_offsets[i])
                                                         for i, t in enumerate(source.ntypes)}, "node")
    edge_names, edge_meta = data_meta(source.edge_data, {
        ":".join(c): int(source.etype_offsets[i + 1] - source.etype_offsets[i])
        for i, c in enumerate(source.canonical_etypes)}, "edge")
    return node_names, node_meta, edge_names, edge_meta


@private_files()
def partition_stream(source: StreamSource, graph_name: str, num_parts: int, out_path: str | Path,
                     part_method: str = "kaminpar", balance_train: bool = False, balance_edges: bool = False,
                     seed: int = 0, parts: np.ndarray | None = None, bucket_edges: int | None = None,
                     threads: int = 1, progress: bool = False, overwrite: bool = False) -> PartitionStats:
    """Partition `source` into `num_parts` parts under `out_path` (one-hop halos); `parts`
    gives the assignment instead of `part_method`. A folder holding another graph's partition
    is refused unless `overwrite` (`out_folder`). See the module docstring."""
    t0 = time.perf_counter()
    num_parts, node_names, node_meta, edge_names, edge_meta = check_request(source, graph_name, num_parts,
                                                                            part_method)
    out = Path(out_path)
    with output_folder(out):  # a folder this run made goes if it fails; so do its files no config names
        check_out(out, graph_name, overwrite)
        return _stream_parts(source, graph_name, num_parts, out, part_method, balance_train, balance_edges, seed,
                             parts, bucket_edges, threads, progress, t0, node_names, node_meta, edge_names, edge_meta)


def _stream_parts(source: StreamSource, graph_name: str, num_parts: int, out: Path, part_method: str,
                  balance_train: bool, balance_edges: bool, seed: int, parts: np.ndarray | None,
                  bucket_edges: int | None, threads: int, progress: bool, t0: float, node_names: dict,
                  node_meta: dict, edge_names: dict, edge_meta: dict) -> PartitionStats:
    """`partition_stream`'s work in its held output folder."""
    n, m = source.num_nodes(), source.num_edges()
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

    numbering = number_nodes(source, parts, num_parts, deg.in_deg, bucket_edges)
    del parts  # the numbering holds the assignment: part p owns node_ranges[p]
    clear_out(out, num_parts)  # from here until the new config, nothing here loads
    metas, ranges, cut = _write_parts(source, out, deg, numbering, node_names, edge_names, progress)
    node_files = write_node_maps(out, source, numbering.node_ranges, numbering.new2old)
    new2old = numbering.new2old
    train = node_mask(source.ntypes, source.ntype_offsets, source.node_data, "train_mask")
    part_train = [int(train[new2old[lo:hi]].sum()) for lo, hi in numbering.node_ranges[:, [0, -1], [0, 1]]]
    return write_partition_config(out, graph_name, source, part_method, node_meta, edge_meta, metas, node_files,
                                  numbering.node_ranges, ranges, cut, part_train, t0, t_assign)



def write_partition_config(out: Path, graph_name: str, source: StreamSource, part_method: str, node_meta: dict,
                           edge_meta: dict, metas: list, node_files: dict, node_ranges: np.ndarray,
                           edge_ranges: np.ndarray, cut: int, part_train: list[int], t0: float,
                           t_assign: float) -> PartitionStats:
    """The id map of an edge list's string ids, then the config (last: the partitioning exists,
    whole, from its writing on); the partitioning's statistics."""
    stats, text = partition_config(out, graph_name, source, part_method, node_meta, edge_meta, metas, node_files,
                                   node_ranges, edge_ranges, cut, part_train, t0, t_assign)
    write_config(out / f"{graph_name}.json", text)
    return stats


def partition_config(out: Path, graph_name: str, source: StreamSource, part_method: str, node_meta: dict,
                     edge_meta: dict, metas: list, node_files: dict, node_ranges: np.ndarray, edge_ranges: np.ndarray,
                     cut: int, part_train: list[int], t0: float, t_assign: float) -> tuple[PartitionStats, str]:
    """The statistics and the config text of a partitioning whose files are written (an edge
    list's string ids are saved here, under `out`)."""
    n, m = source.num_nodes(), source.num_edges()
    names_file = None
    if source.node_names is not None:  # an edge list's string ids, by original id (as partition_graph keeps them)
        names_file = "mapping/node_names.npy"
        np.save(out / names_file, np.asarray(source.node_names))
    stats = PartitionStats(
        num_parts=len(metas), part_nodes=[pm.num_inner_nodes for pm in metas],
        part_edges=[pm.num_inner_edges for pm in metas],
        part_halo=[pm.num_local_nodes - pm.num_inner_nodes for pm in metas], part_train=part_train,
        edge_cut=cut / m if m else 0.0, assign_seconds=t_assign, total_seconds=0.0)
    edge_files = {":".join(c): EDGE_MAP.format(":".join(c)) for c in source.canonical_etypes}
    config = config_json(
        graph_name, n, m, part_method, 1, source.ntypes, source.canonical_etypes,
        node_map={t: node_ranges[:, i].tolist() for i, t in enumerate(source.ntypes)},
        edge_map={":".join(c): edge_ranges[:, i].tolist() for i, c in enumerate(source.canonical_etypes)},
        node_data=node_meta, edge_data=edge_meta,
        mapping={"node": node_files, "edge": edge_files, "node_names": names_file}, partitions=metas)
    stats.total_seconds = time.perf_counter() - t0
    config["stats"] = stats.as_dict()
    return stats, json.dumps(config, indent=1)


def _write_parts(source, out, deg, numbering: Numbering, node_names, edge_names, progress):
    """Spread the edges into buckets and write every partition; (their config entries, edge
    ranges, cut edges)."""
    num_parts, R, m = numbering.node_ranges.shape[0], len(source.canonical_etypes), source.num_edges()
    router = EdgeRouter(source, numbering.pair, numbering.bounds, numbering.bucket_part,
                        numbering.part_starts)
    columns = edge_columns(source.num_nodes(), m)
    with Buckets(out, numbering.bounds.size - 1, columns, "edges") as buckets:
        bar = Progress(m, "spread edges", "edge", enabled=progress, unit_scale=True)
        first = 0
        for src, dst in source.chunks():
            buckets.append(*router.route(src, dst, first))
            first += src.size
            bar.update(src.size)
        bar.close()
        buckets.finish()
        ranges = edge_ranges(router.per_type, num_parts, R)
        writer = PartWriter(source, out, buckets, numbering.bounds, numbering.bucket_part, numbering.node_ranges,
                            ranges, numbering.new2old, node_names, edge_names)
        new2old = numbering.new2old
        metas = [writer.part(p, deg.out_deg[new2old[lo:hi]])
                 for p, (lo, hi) in enumerate(numbering.node_ranges[:, [0, -1], [0, 1]])]
        writer.close()
    return metas, ranges, router.cut
