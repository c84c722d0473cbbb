"""`partition_graph`: assign, relabel, and write every partition with its halo and data."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..array_graph import ArrayGraph, DataDict
from ..arrays import gather_rows, group_keys, inverse_permutation, offsets, unique_inverse, unique_sorted
from ..errors import PartitionError
from ..files import private_files
from ..graphbolt import note_graphbolt
from ..progress import Progress
from .assign import assign_parts
from .layout import DataSpec, PartMeta, check_name, config_json, etype_key, part_files
from .in_edges import InEdges
from .out_folder import cancelled_on_error, check_out, clear_out, output_folder, write_config
from .parts import node_mask, positive_int
from .relabel import EdgeOrder, NodeOrder, relabel_edges, relabel_nodes
from .report import PartitionStats

if TYPE_CHECKING:
    from ..array_graph import Array


class _PartWriter:
    """Builds and writes one partition's arrays: its node data as soon as the nodes are
    numbered, its structure and edge data once the edges are."""

    def __init__(self, g: ArrayGraph, nodes: NodeOrder, in_edges: InEdges, out: Path, halo_hops: int,
                 node_names: dict, edge_names: dict, node_data: dict[str, DataDict], edge_data: dict[str, DataDict]):
        self.g, self.nodes, self.in_edges, self.out, self.halo_hops = g, nodes, in_edges, out, halo_hops
        self.node_names, self.edge_names = node_names, edge_names
        self.node_data, self.edge_data = node_data, edge_data  # per type (edge types by key): name -> array
        self.edges: EdgeOrder | None = None  # set by `number_edges`
        self._edge_old2new: np.ndarray | None = None
        self._lock = threading.Lock()

    def number_edges(self, parts: np.ndarray) -> EdgeOrder:
        """Number the edges (`relabel_edges`); with a one-hop halo, only the index's degrees are read after."""
        self.edges = relabel_edges(self.g, parts, self.nodes, self.in_edges)
        if self.halo_hops == 1:
            self.in_edges = self.in_edges.degrees_only()
        return self.edges

    def files(self, p: int) -> dict:
        return part_files(p, self.node_names, self.edge_names, typed=len(self.g.canonical_etypes) > 1)

    def edge_types(self, new_eids: np.ndarray) -> np.ndarray:
        """The edge type of each new edge id (new ids run by partition, then type)."""
        starts = self.edges.ranges[:, :, 0].reshape(-1)  # (partition, type) blocks, in id order
        return (np.searchsorted(starts, new_eids, side="right") - 1) % self.edges.ranges.shape[1]

    def new_src(self, new_eids: slice | np.ndarray) -> np.ndarray:
        """New source ids of the edges with these new edge ids."""
        return self.nodes.old2new[self.edges.src[new_eids]]

    def new_dst(self, new_eids: slice | np.ndarray) -> np.ndarray:
        return self.nodes.old2new[np.asarray(self.g.dst)[self.edges.new2old[new_eids]]]

    def _in_edges_of(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(new edge ids, new source ids) of all in-edges of the new ids `nodes` (for halo_hops > 1)."""
        with self._lock:
            if self._edge_old2new is None:
                self._edge_old2new = inverse_permutation(self.edges.new2old)
        eids, srcs = self.in_edges.of(self.nodes.new2old[nodes])
        return self._edge_old2new[eids], self.nodes.old2new[srcs]

    def write_nodes(self, p: int) -> None:
        """Partition p's node data and out-degrees (they need the node numbering only)."""
        files = self.files(p)
        lo, hi = self.nodes.part(p)
        self._save(files["out_degree"], self.in_edges.out_degree[self.nodes.new2old[lo:hi]])
        for t, names in self.node_names.items():
            ti = self.g.get_ntype_id(t)
            start, end = self.nodes.ranges[p, ti]
            rows = self.nodes.new2old[start:end] - int(self.g.ntype_offsets[ti])
            for k in names:
                self._save_rows(files["node_data"][t][k], self.node_data[t][k], rows)

    def write_edges(self, p: int) -> tuple[PartMeta, int]:
        """Partition p's local nodes, CSC and edge data; returns its config entry and its number of cut in-edges."""
        lo, hi = self.nodes.part(p)
        elo, ehi = self.edges.part(p)
        eids = None  # the owned in-edges elo..ehi-1, plus the halo's with halo_hops > 1
        n_inner = hi - lo

        def to_offsets(ids: np.ndarray) -> np.ndarray:
            """ids - lo, in place (an owned node's local id), and where the ids outside [lo, hi) are:
            one unsigned compare, as the negative offsets of lower ids compare as huge."""
            ids -= lo
            return np.flatnonzero(ids.view(np.uint64) >= n_inner)

        def to_local(ids: np.ndarray, outer: np.ndarray, at: np.ndarray | None = None) -> np.ndarray:
            """Offsets from `to_offsets` -> local ids, in place: the outside ids follow the owned ones
            at their place in the sorted `halo` as finally built (`at`, or a search: memory follows it)."""
            ids[outer] = n_inner + (np.searchsorted(halo, ids[outer] + lo) if at is None else at)
            return ids

        src = self.new_src(slice(elo, ehi))
        outer = to_offsets(src)  # owned in-edges from other partitions' nodes
        cut = outer.size
        # with the inverse: faster than a search of every id in the halo afterwards
        halo, halo_at = unique_inverse(src[outer] + lo, self.g.num_nodes())
        if self.halo_hops > 1:
            known = halo
            frontier = halo
            extra = []
            for _ in range(self.halo_hops - 1):
                e, e_src = self._in_edges_of(frontier)
                extra.append(e)
                s = unique_sorted(e_src)
                s = s[(s < lo) | (s >= hi)]
                frontier = np.setdiff1d(s, known, assume_unique=True)
                known = np.union1d(known, frontier)
            halo = known
            eids = np.concatenate([np.arange(elo, ehi, dtype=np.int64), *extra])
            src = self.new_src(eids)
            outer, halo_at = to_offsets(src), None
        global_nid = np.concatenate([np.arange(lo, hi, dtype=np.int64), halo])

        files = self.files(p)
        self._save(files["global_nid"], global_nid)
        num_local_edges = src.size
        if self.edges.by_dst and eids is None:  # already CSC: owned in-degrees, none for the halo
            degree = self.in_edges.in_degree(self.nodes.new2old[lo:hi])
            indptr = np.concatenate([offsets(degree), np.full(halo.size, src.size, dtype=np.int64)])
            order = None
        else:  # stable counting sort by local destination, and with several edge types by
            # (destination, type), so a node's in-edges are one run per type
            ldst = self.new_dst(slice(elo, ehi) if eids is None else eids)
            to_local(ldst, to_offsets(ldst))
            types = len(self.g.canonical_etypes)
            if types > 1:
                ldst *= types
                ldst += self.edge_types(np.arange(elo, ehi) if eids is None else eids)
            order, starts = group_keys(ldst, global_nid.size * types)
            indptr = starts[::types]  # a node's first (node, type) run starts its in-edges
            if types > 1:
                self._save(files["typed_indptr"], starts)
            del ldst, starts
        self._save(files["indptr"], indptr)
        indices = to_local(src, outer, halo_at)
        del outer, halo_at
        self._save(files["indices"], indices if order is None else indices[order])
        del src, indices
        if eids is None and order is None:  # exactly the edge range elo..ehi-1, in order: no file
            files["eids"] = None
        else:
            eids = np.arange(elo, ehi, dtype=np.int64) if eids is None else eids
            self._save(files["eids"], eids if order is None else eids[order])
        del order, eids
        for c in self.g.canonical_etypes:
            key = etype_key(c)
            ci = self.g.get_etype_id(c)
            start, end = self.edges.ranges[p, ci]
            rows = self.edges.new2old[start:end] - int(self.g.etype_offsets[ci])
            for k in self.edge_names.get(key, ()):
                self._save_rows(files["edge_data"][key][k], self.edge_data[key][k], rows)
        return PartMeta(p, int(n_inner), int(global_nid.size), int(ehi - elo), int(num_local_edges), files), cut

    def _path(self, rel: str) -> Path:
        """Where `rel` goes under the output folder (its folder created)."""
        f = self.out / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        return f

    def _save(self, rel: str, a: np.ndarray) -> None:
        np.save(self._path(rel), np.ascontiguousarray(a))

    def _save_rows(self, rel: str, data: Array, rows: np.ndarray, chunk_bytes: int = 8 << 20) -> None:
        """Gather one partition's rows of a data array (or tensor) and write them as .npy through
        one reused buffer of about 8 MB, so a partition's rows are never all in memory at once."""
        a = np.asarray(data)
        step = max(1, chunk_bytes // max(1, a[:1].nbytes))
        buffer = np.empty((min(step, rows.size), *a.shape[1:]), dtype=a.dtype)
        with open(self._path(rel), "wb") as fp:
            np.lib.format.write_array_header_1_0(fp, {"descr": np.lib.format.dtype_to_descr(a.dtype),
                                                      "fortran_order": False, "shape": (rows.size, *a.shape[1:])})
            for i in range(0, rows.size, step):
                fp.write(gather_rows(a, rows[i:i + step], buffer[: min(step, rows.size - i)]).data)

    def write_mapping(self, kind: str, names: list, new2old: np.ndarray, ranges: np.ndarray,
                      type_offsets: Array) -> tuple[dict, dict]:
        """Save the new -> original id map of every node or edge type under mapping/; returns
        (file per type name, map per type)."""
        files, maps = {}, {}
        for i, name in enumerate(names):
            maps[name] = _per_type_orig(new2old, ranges[:, i], int(type_offsets[i]))
            key = etype_key(name) if kind == "edge" else name
            files[key] = f"mapping/{kind}.{key}.npy"
            self._save(files[key], maps[name])
        return files, maps


def _per_type_orig(new2old: np.ndarray, ranges: np.ndarray, type_offset: int) -> np.ndarray:
    """Original per-type id of each of a type's new ids, from its [start, end) in every part.
    With one type the ranges tile all ids, and the map is `new2old` itself (no 32 MB gather)."""
    if ranges[0, 0] == 0 and ranges[-1, 1] == new2old.size and (ranges[1:, 0] == ranges[:-1, 1]).all():
        return new2old - type_offset if type_offset else new2old
    idx = np.concatenate([np.arange(lo, hi) for lo, hi in ranges])
    return new2old[idx] - type_offset


TRAINER_ID = "trainer_id"


def _with_trainer_ids(g: ArrayGraph, parts: np.ndarray, node_store: dict, edge_store: dict) -> tuple[dict, dict]:
    """Copies of the data stores with `trainer_id` added: each node's fine part, and each
    edge's destination's (the input graph's own data dicts are not touched)."""
    by_dst = parts[np.asarray(g.dst)]

    def extended(store: dict[str, DataDict], offsets, values: np.ndarray) -> dict[str, DataDict]:
        out = {}
        for i, (key, data) in enumerate(store.items()):
            out[key] = data.copy()
            out[key][TRAINER_ID] = values[int(offsets[i]):int(offsets[i + 1])]
        return out

    return extended(node_store, g.ntype_offsets, parts), extended(edge_store, g.etype_offsets, by_dst)


def _data_meta(store: dict[str, DataDict]) -> tuple[dict, dict]:
    """Names and (dtype, trailing shape) of each type's data, re-checking the rows (a tensor
    resized in place after assignment would otherwise spill into other partitions' rows)."""
    names, meta = {}, {}
    for key, data in store.items():
        names[key] = [check_name(k, "data name") for k in data]
        for k, v in data.items():
            if len(v.shape) == 0 or v.shape[0] != data.rows:
                raise PartitionError(f"{data.kind} data {k!r} of type {key!r} has shape {tuple(v.shape)} but the type "
                                     f"has {data.rows} {data.kind}s; give it one row per {data.kind}")
        meta[key] = {k: DataSpec(str(np.asarray(v).dtype), tuple(v.shape[1:])) for k, v in data.items()}
    return names, meta


def _assign_and_write(g: ArrayGraph, graph_name: str, num_parts: int, out: Path, part_method: str,
                      balance_ntypes, balance_edges: bool, seed: int, halo_hops: int, per_machine: int,
                      node_weights, objtype: str, progress: bool, t0: float) -> tuple[PartitionStats, dict, dict]:
    """`partition_graph`'s work once its inputs passed their checks: assign, relabel, write the
    parts and the config last; (stats, original node ids, original edge ids) per type."""
    node_store = {t: g.nodes[t].data for t in g.ntypes}
    edge_store = {etype_key(c): g.edges[c].data for c in g.canonical_etypes}
    node_names, node_meta = _data_meta(node_store)
    edge_names, edge_meta = _data_meta(edge_store)
    train = node_mask(g.ntypes, g.ntype_offsets, node_store, "train_mask")
    bar = Progress(3 + num_parts, f"partition {graph_name}", enabled=progress)
    bar.stage(f"assign ({part_method})")
    built: list[InEdges] = []  # the in-edge index needs no assignment: it is built beside METIS
    with bar.ticking():
        parts = assign_parts(g, num_parts * per_machine, part_method, balance_ntypes, balance_edges, seed,
                             alongside=lambda: built.append(InEdges.build(g)), node_weights=node_weights,
                             objtype=objtype)
    if per_machine > 1:
        node_store, edge_store = _with_trainer_ids(g, parts, node_store, edge_store)
        node_names, node_meta = _data_meta(node_store)
        edge_names, edge_meta = _data_meta(edge_store)
        parts = parts // per_machine
    t_assign = time.perf_counter() - t0
    bar.update()
    bar.stage("relabel and write")
    clear_out(out, num_parts)  # the input passed every check: now it replaces what was there
    nodes = relabel_nodes(g, parts, num_parts)
    writer = _PartWriter(g, nodes, built.pop(), out, halo_hops, node_names, edge_names, node_store, edge_store)
    # Writing is gathers, sorts and file writes, which release the GIL: two threads use both cores.
    # Node data needs the node numbering only: it is written while this thread numbers the edges.
    with ThreadPoolExecutor(max_workers=2) as pool, cancelled_on_error(pool):
        node_jobs = [pool.submit(writer.write_nodes, p) for p in range(num_parts)]
        node_map = pool.submit(writer.write_mapping, "node", g.ntypes, nodes.new2old, nodes.ranges, g.ntype_offsets)
        edges = writer.number_edges(parts)
        bar.update()
        edge_jobs = [pool.submit(writer.write_edges, p) for p in range(num_parts)]
        for f in edge_jobs:
            f.add_done_callback(lambda _: bar.update())
        # this thread writes the edge map beside them: queued, it would run alone at the end
        edge_files, orig_eids = writer.write_mapping("edge", g.canonical_etypes, edges.new2old, edges.ranges,
                                                     g.etype_offsets)
        if g.node_names is not None:
            writer._save("mapping/node_names.npy", np.asarray(g.node_names))
        for f in node_jobs:
            f.result()
        partitions, cuts = zip(*(f.result() for f in edge_jobs))
        node_files, orig_nids = node_map.result()
    mapping = {"node": node_files, "edge": edge_files,
               "node_names": "mapping/node_names.npy" if g.node_names is not None else None}
    bar.update()
    bar.close()

    stats = PartitionStats(
        num_parts=num_parts,
        part_nodes=[p.num_inner_nodes for p in partitions],
        part_edges=[p.num_inner_edges for p in partitions],
        part_halo=[p.num_local_nodes - p.num_inner_nodes for p in partitions],
        part_train=np.bincount(parts[train], minlength=num_parts).tolist(),
        edge_cut=sum(cuts) / g.num_edges() if g.num_edges() else 0.0,
        assign_seconds=t_assign,
        total_seconds=0.0,
    )
    config = config_json(
        graph_name, g.num_nodes(), g.num_edges(), part_method, halo_hops, g.ntypes, g.canonical_etypes,
        node_map={t: nodes.ranges[:, i].tolist() for i, t in enumerate(g.ntypes)},
        edge_map={etype_key(c): edges.ranges[:, i].tolist() for i, c in enumerate(g.canonical_etypes)},
        node_data=node_meta, edge_data=edge_meta, mapping=mapping, partitions=list(partitions))
    stats.total_seconds = time.perf_counter() - t0
    config["stats"] = stats.as_dict()
    write_config(out / f"{graph_name}.json", json.dumps(config, indent=1))
    return stats, orig_nids, orig_eids


@private_files()  # the user's graph and features: owner-only files, whatever the caller's umask
def partition_graph(
    g: ArrayGraph,
    graph_name: str,
    num_parts: int,
    out_path: str | Path,
    num_hops: int = 1,
    part_method: str = "metis",
    balance_ntypes: Array | dict | None = None,
    balance_edges: bool = False,
    return_mapping: bool = False,
    num_trainers_per_machine: int = 1,
    objtype: str = "cut",
    graph_formats=None,
    use_graphbolt: bool = False,
    *,
    seed: int = 0,
    progress: bool = False,
    node_weights: np.ndarray | None = None,
    overwrite: bool = False,
):
    """Partition `g` into `num_parts` parts under `out_path` and write `<graph_name>.json`
    (DGL's arguments, in DGL's order). `g` is a `Graph`, or an `ArrayGraph` of numpy arrays:
    the same files either way, and only `return_mapping` imports torch.

    Each partition keeps its nodes' in-edges and the halo up to `num_hops`. Returns the
    `PartitionStats` (also saved in the JSON), or, with `return_mapping`, as DGL does,
    (orig_nids, orig_eids): the original id of every new id, per type (a plain tensor for a
    homogeneous graph). With `num_trainers_per_machine` T > 1, METIS makes num_parts x T parts
    and each machine takes T of them; the part of every node and of every edge's destination
    is written as the `trainer_id` data (`node_split(..., node_trainer_ids=...)` reads it),
    leaving `g` itself unchanged (DGL adds it to `g`). `objtype` is METIS's objective ("cut"
    or "vol"). `node_weights` (one or more non-negative ints per node) replaces the METIS
    balance constraints that `balance_ntypes`/`balance_edges` make. `balance_ntypes` is one
    category per node, or DGL's {node type: categories or mask} (`assign.balance_categories`).
    `graph_formats` and `use_graphbolt` are accepted for DGL's scripts: a partition here always
    serves sampling from its CSC (`use_graphbolt=True` says so in one line). A folder holds one
    graph's partition: an earlier partition of `graph_name` there is replaced, another graph's
    only with `overwrite` (`out_folder`)."""
    t0 = time.perf_counter()
    note_graphbolt(use_graphbolt)
    check_name(graph_name, "graph name", allow_dot=True)
    for t in g.ntypes:
        check_name(t, "node type")
    for c in g.canonical_etypes:
        for part in c:
            check_name(part, "edge type part")
    num_parts = positive_int(num_parts, "num_parts")
    halo_hops = positive_int(num_hops, "num_hops")
    per_machine = positive_int(num_trainers_per_machine, "num_trainers_per_machine")
    node_store = {t: g.nodes[t].data for t in g.ntypes}
    edge_store = {etype_key(c): g.edges[c].data for c in g.canonical_etypes}
    if per_machine > 1 and any(TRAINER_ID in d for d in (*node_store.values(), *edge_store.values())):
        raise PartitionError(f"the graph already has {TRAINER_ID!r} data, which num_trainers_per_machine writes; "
                             f"rename it")
    for store in (node_store, edge_store):  # data names, dtypes and the train mask checked before any file
        _data_meta(store)
    node_mask(g.ntypes, g.ntype_offsets, node_store, "train_mask")
    out = Path(out_path)
    with output_folder(out):  # an unusable folder fails now, not after METIS; one this run made goes on failure
        check_out(out, graph_name, overwrite)
        stats, orig_nids, orig_eids = _assign_and_write(
            g, graph_name, num_parts, out, part_method, balance_ntypes, balance_edges, seed, halo_hops,
            per_machine, node_weights, objtype, progress, t0)
    if not return_mapping:
        return stats
    import torch  # DGL returns tensors

    if g.is_homogeneous:
        return torch.from_numpy(orig_nids[g.ntypes[0]]), torch.from_numpy(orig_eids[g.canonical_etypes[0]])
    return {t: torch.from_numpy(v) for t, v in orig_nids.items()}, {c: torch.from_numpy(v) for c, v in orig_eids.items()}
