"""`distgraph kge partition` (dglke_partition): a knowledge graph partitioned like any graph.

Entities are nodes and training triples are edges (head -> tail) with the relation id as
edge data (and the importance, with --has_edge_importance), so the project's partitioning
does the work: METIS on the entity graph balanced by triple count (the in-edges a machine
trains on), or random, in memory; a KG too big for that (Freebase's 338M triples) streams
through KaMinPar as any large graph does, read from the memory-mapped triples. Entities are
relabelled so each machine owns a contiguous range, the JSON + `.npy` layout. A machine's
triples are the in-edges of its entities (their tails are its own). What only KGE needs is
attached to the config (so `distgraph copy` sends it): the dictionaries in the original
ids, the valid and test triples in the new ids, and, per part, the known triples whose
head or whose tail it owns (the filter of filtered ranking, cut to the part's candidates).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...array_graph import ArrayGraph
from ...partition import PartitionStats, partition_graph
from ...partition.choose import Choice
from ...partition.layout import PartitionConfig
from ...partition.stream.buckets import Buckets, id_dtype
from ...data.file_array import FileArray, file_columns, unmapped
from .formats import KGData, write_dict

KEY = "kge"
FORMAT_VERSION = 1
CHUNK = 1 << 22  # training triples relabelled and spread at a time


@dataclass
class KGPartitionStats:
    """The share of training triples whose two entities sit on two machines, and the balance."""

    cross_share: float
    triples_per_part: list[int]
    entities_per_part: list[int]
    seconds: float
    why: str = ""  # which partitioner ran, and why

    @property
    def imbalance(self) -> float:
        """Most triples on one machine over the mean (1.0: perfect balance)."""
        return PartitionStats.imbalance(self.triples_per_part)


def partition_folder(data_path: str | Path, dataset: str) -> Path:
    """Where `kge partition` writes a dataset's partition (and `kge dist-train` looks for it)."""
    return Path(data_path) / dataset / "partitions"


def kg_graph(data: KGData, importance: np.ndarray | None = None) -> ArrayGraph:
    """Entities as nodes, training triples as edges with their relation (and importance), in
    numpy arrays: partitioning a KG never imports torch."""
    h, r, t = (np.ascontiguousarray(data.train[:, i], dtype=np.int64) for i in range(3))
    edata = {"rel": r}
    if importance is not None:
        edata["importance"] = np.ascontiguousarray(importance, dtype=np.float32)
    return ArrayGraph(h, t, num_nodes=data.n_entities, edata=edata)


def _save(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        np.save(f, np.ascontiguousarray(array), allow_pickle=False)
    os.replace(tmp, path)


def triple_columns(train) -> tuple:
    """(heads, relations, tails) of the training triples. Triples in a file (the loader's mapped
    cache) are read by positioned reads (`file_columns`): a mapping would keep every page the
    partitioner's passes touched resident, 4 GB at Freebase's size."""
    rows = unmapped(train)
    if isinstance(rows, FileArray) and not rows.transposed:
        return file_columns(rows)
    return train[:, 0], train[:, 1], train[:, 2]


def kg_source(data: KGData, importance: np.ndarray | None = None):
    """The streaming partitioner's view of `data`: heads to tails, the relation (and importance)
    as edge data, read from the triples a piece at a time (the relations whole, once the parts
    are written: `FileColumn`)."""
    from ...partition.stream.source import from_columns

    heads, rels, tails = triple_columns(data.train)
    edata = {"rel": rels}
    if importance is not None:
        edata["importance"] = importance
    return from_columns(heads, tails, data.n_entities, edata, data.name)


def choose_method(data: KGData, requested: str | None, budget: int | None = None) -> Choice:
    """The partitioner for `data`, as `distgraph partition` chooses one: METIS in memory when the
    graph fits the budget (an eighth of this machine's memory by default), else KaMinPar streaming."""
    from ...partition.choose import choose, default_budget

    return choose(len(data.train), data.n_entities, requested, True, None,
                  default_budget() if budget is None else budget)


def partition_kg(data: KGData, num_parts: int, out: str | Path, part_method: str | None = "metis", seed: int = 0,
                 importance: np.ndarray | None = None, progress: bool = False, budget: int | None = None,
                 threads: int = 1) -> KGPartitionStats:
    """Partition `data` into `num_parts` under `out` (config `<out>/<dataset>.json`): in memory
    (METIS balanced by triples, or random) when it fits, else streaming (`choose_method`; a
    `part_method` of None chooses), then the KG's attachments, a chunk of triples at a time."""
    t0 = time.perf_counter()
    out = Path(out)
    choice = choose_method(data, part_method, budget)
    if choice.streaming:
        from ...partition.stream import partition_stream

        partition_stream(kg_source(data, importance), data.name, num_parts, out, part_method=choice.method,
                         balance_edges=True, seed=seed, threads=threads, progress=progress, overwrite=True)
    else:
        g = kg_graph(data, importance)
        # one constraint: triples per part (a machine trains on its entities' in-edges), plus one
        # per entity so that entities without triples still count; two separate constraints
        # (entities, triples) cut nearly twice as many triples on FB15k-237 (26% against 14%)
        weights = g.in_degrees() + 1
        partition_graph(g, data.name, num_parts, out, part_method=choice.method, seed=seed, progress=progress,
                        node_weights=weights)
        del g, weights
    cfg = PartitionConfig.load(out / f"{data.name}.json")
    stats = _attach(cfg, data, num_parts, importance is not None)
    return KGPartitionStats(stats[0], stats[1], stats[2], time.perf_counter() - t0, choice.why)


def _attach(cfg: PartitionConfig, data: KGData, num_parts: int, has_importance: bool) -> tuple:
    """What only KGE needs, attached to the config: the dictionaries, the valid and test triples
    in the new ids and, per part, the known triples whose head or whose tail it owns; a chunk of
    triples at a time (through bucket files). (cross share, triples per part, entities per part)."""
    out = cfg.dir
    new_of = np.empty(data.n_entities, dtype=np.int64)
    new_of[np.load(cfg.dir / cfg.mapping_file("node", "_N"))] = np.arange(data.n_entities)  # original id of new id
    bounds = np.array([start for start, _ in cfg.node_map["_N"]] + [data.n_entities])
    ids = id_dtype(max(data.n_entities, data.n_relations))

    def relabel(triples: np.ndarray) -> np.ndarray:
        t = np.asarray(triples)
        return np.stack([new_of[t[:, 0]], t[:, 1], new_of[t[:, 2]]], 1).astype(ids)

    kg = out / "kg"
    kg.mkdir(exist_ok=True)
    write_dict(kg / "entities.dict", data.entities)
    write_dict(kg / "relations.dict", data.relations)
    empty = np.zeros((0, 3), dtype=ids)
    valid = relabel(data.valid) if data.valid is not None else empty
    test = relabel(data.test) if data.test is not None else empty
    _save(kg / "valid.npy", valid)
    _save(kg / "test.npy", test)
    per_part, cross = np.zeros(num_parts, dtype=np.int64), 0
    with Buckets(out, 2 * num_parts, {"h": ids, "r": ids, "t": ids}, "known") as known:
        def add(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            head = np.searchsorted(bounds, rows[:, 0], side="right") - 1
            tail = np.searchsorted(bounds, rows[:, 2], side="right") - 1
            cols = {"h": rows[:, 0], "r": rows[:, 1], "t": rows[:, 2]}
            known.append(head, cols)  # buckets 0..P-1: by head part; P..2P-1: by tail part
            known.append(tail + num_parts, cols)
            return head, tail

        train = unmapped(data.train)  # read, not mapped: see `triple_columns`
        for s in range(0, len(train), CHUNK):
            head, tail = add(relabel(train[s:s + CHUNK]))
            per_part += np.bincount(tail, minlength=num_parts)
            cross += int(np.count_nonzero(head != tail))
        for rows in (valid, test):
            add(rows)
        known.finish()
        raw = cfg.raw
        for p in range(num_parts):
            for side, bucket in (("head", p), ("tail", num_parts + p)):
                rel = f"part{p}/kge_known_{side}.npy"
                cols = known.take(bucket)
                _save(out / rel, np.stack([cols["h"], cols["r"], cols["t"]], 1))
                raw["partitions"][p][f"kge_known_{side}"] = rel
    raw[KEY] = {"format_version": FORMAT_VERSION, "dataset": data.name, "n_entities": data.n_entities,
                "n_relations": data.n_relations, "has_importance": has_importance}
    raw.setdefault("attachments", {})[KEY] = {"entities": "kg/entities.dict", "relations": "kg/relations.dict",
                                              "valid": "kg/valid.npy", "test": "kg/test.npy"}
    tmp = cfg.path.with_name(cfg.path.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(raw, indent=1))
    os.replace(tmp, cfg.path)
    return cross / max(len(data.train), 1), per_part.tolist(), np.diff(bounds).tolist()
