"""OGB node-property datasets already on disk, built as OGB's own loaders build them, from
the files its `NodePropPredDataset` downloads (`<root>/<name with _>/raw/...` and
`.../split/<split>/...`), without the `ogb` package or any download.

What OGB builds differs by dataset; its `nodeproppred/master.csv` says how, and `DATASETS`
holds those rows: `add_inverse_edge` adds each edge's reverse into the same edge type, right
after it (ogbn-products, ogbn-proteins); "additional" node and edge files become data named
without their `node_`/`edge_` prefix (ogbn-arxiv's `year`, ogbn-proteins' `species`, ogbn-mag's
`year` and `reltype`); ogbn-papers100M is stored as `.npz` (`raw/data.npz`,
`raw/node-label.npz`). Features become `feat` (edge features too: ogbn-proteins' 8 columns,
repeated on the inverse edges), labels `label`: int64, one column flat and several (ogbn-proteins'
112 tasks) as rows, OGB's NaN for an unlabelled node -1. Splits become `train_mask` /
`val_mask` / `test_mask` on the node type(s) OGB splits.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..errors import InputError
from ..tensor_graph import Graph
from .npz import _NpzArrays
from .ogb_binary import OgbBinary, ogb_labels, split_masks


@dataclass(frozen=True)
class OgbDataset:
    """A node dataset's row of OGB's `nodeproppred/master.csv`: what changes the graph built."""

    split: str
    add_inverse_edge: bool = False
    node_files: tuple[str, ...] = ()  # "additional node files": raw/<name>.csv.gz -> data <name without node_>
    edge_files: tuple[str, ...] = ()
    hetero: bool = False
    binary: bool = False  # raw/data.npz and raw/node-label.npz instead of CSV files


DATASETS = {
    "ogbn-proteins": OgbDataset("species", add_inverse_edge=True, node_files=("node_species",)),
    "ogbn-products": OgbDataset("sales_ranking", add_inverse_edge=True),
    "ogbn-arxiv": OgbDataset("time", node_files=("node_year",)),
    "ogbn-mag": OgbDataset("time", node_files=("node_year",), edge_files=("edge_reltype",), hetero=True),
    "ogbn-papers100M": OgbDataset("time", node_files=("node_year",), binary=True),
}
# an additional file by an older name, which OGB renames before reading it
_OLD_NAMES = {"node_species": "species"}


def _need(path: Path) -> Path:
    if not path.is_file():
        raise InputError(f"{path} is missing: the OGB dataset folder is incomplete (download it with the ogb package, "
                         f"or check --data_root)")
    return path


def _csv(path: Path, dtype, ndmin: int = 2) -> np.ndarray:
    """A headerless CSV (features are float32, ids and additional files int64, as OGB reads them)."""
    return np.loadtxt(_need(path), delimiter=",", dtype=dtype, ndmin=ndmin)


def _header_row(path: Path) -> dict[str, str]:
    """A CSV of one header line and one value line (OGB's per-type dictionaries)."""
    with gzip.open(_need(path), "rt") as f:
        names, values = f.readline().strip().split(","), f.readline().strip().split(",")
    return dict(zip(names, values))


def _labels(raw: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(ogb_labels(raw))


def _masks(split_dir: Path, n: int) -> dict[str, torch.Tensor]:
    _need(split_dir / "train.csv.gz")
    return {k: torch.from_numpy(v) for k, v in split_masks(split_dir, n).items()}


def _inverse(src: np.ndarray, dst: np.ndarray, edata: dict[str, np.ndarray]):
    """OGB's `add_inverse_edge`: each edge followed by its reverse, in the same edge type, its
    data repeated."""
    both = np.stack([np.stack([src, dst], 1), np.stack([dst, src], 1)], 1).reshape(-1, 2)
    return both[:, 0], both[:, 1], {k: np.repeat(v, 2, axis=0) for k, v in edata.items()}


def _extra(folder: Path, names: tuple[str, ...], prefix: str) -> dict[str, np.ndarray]:
    """OGB's additional files of a node type or edge type folder that has them, by data name,
    and its features (`node-feat.csv.gz` / `edge-feat.csv.gz`) as `feat`."""
    out = {}
    for n in names:
        for file in (folder / f"{n}.csv.gz", folder / f"{_OLD_NAMES.get(n, n)}.csv.gz"):
            if file.is_file():
                out[n[len(prefix):]] = _csv(file, np.int64)
                break
    feat = folder / f"{prefix[:-1]}-feat.csv.gz"
    if feat.is_file():
        out["feat"] = _csv(feat, np.float32)
    return out


def _tensors(data: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in data.items()}


def load_ogb_node(name: str, root: str | Path) -> Graph:
    """The OGB node dataset `name` (e.g. "ogbn-mag") under `root` as a `Graph`, as OGB builds it."""
    info = DATASETS.get(name)
    if info is None:
        raise InputError(f"{name!r} is not an OGB node dataset this reads; use one of {', '.join(DATASETS)}")
    folder = Path(root) / name.replace("-", "_")
    raw = folder / "raw"
    if not raw.is_dir():
        raise InputError(f"no OGB dataset {name} under {root}: expected the folder {raw} (OGB's layout)")
    split = folder / "split" / info.split
    if info.hetero:
        return _hetero(raw, split, info)
    if info.binary:  # every other node_* / edge_* array of data.npz is data, as OGB reads it
        _need(raw / "node-label.npz")
        binary = OgbBinary(folder, info.split)
        n, src, dst = binary.num_nodes, np.asarray(binary.src, dtype=np.int64), np.asarray(binary.dst, dtype=np.int64)
        ndata = {k: np.asarray(v) for k, v in binary.node_data.items()}
        edata = {k: np.asarray(v) for k, v in binary.edge_data.items()}
        return Graph(torch.from_numpy(src), torch.from_numpy(dst), n, _tensors(ndata), _tensors(edata))
    else:
        n = int(_csv(raw / "num-node-list.csv.gz", np.int64).reshape(-1)[0])
        src, dst = _csv(raw / "edge.csv.gz", np.int64).T
        ndata = _extra(raw, info.node_files, "node_")
        edata = _extra(raw, info.edge_files, "edge_")
        labels = _csv(raw / "node-label.csv.gz", np.float64)
    if info.add_inverse_edge:
        src, dst, edata = _inverse(src, dst, edata)
    nd = _tensors(ndata)
    nd["label"] = _labels(labels)
    nd.update(_masks(split, n))
    return Graph(torch.from_numpy(np.ascontiguousarray(src)), torch.from_numpy(np.ascontiguousarray(dst)), n, nd,
                 _tensors(edata))


def _hetero(raw: Path, split: Path, info: OgbDataset) -> Graph:
    counts = {t: int(v) for t, v in _header_row(raw / "num-node-dict.csv.gz").items()}
    triplets = sorted(tuple(r) for r in _csv(raw / "triplet-type-list.csv.gz", str).tolist())
    edges, edata = {}, {}
    for c in triplets:
        folder = raw / "relations" / "___".join(c)
        e = _csv(folder / "edge.csv.gz", np.int64)
        data = _extra(folder, info.edge_files, "edge_")
        src, dst = e[:, 0], e[:, 1]
        if info.add_inverse_edge:
            src, dst, data = _inverse(src, dst, data)
        edges[c] = (torch.from_numpy(np.ascontiguousarray(src)), torch.from_numpy(np.ascontiguousarray(dst)))
        edata[c] = _tensors(data)
    ndata: dict[str, dict[str, torch.Tensor]] = {}
    for t in counts:
        ndata[t] = _tensors(_extra(raw / "node-feat" / t, info.node_files, "node_"))
    for t, v in _header_row(raw / "nodetype-has-label.csv.gz").items():
        if v.strip() == "True":
            ndata[t]["label"] = _labels(_csv(raw / "node-label" / t / "node-label.csv.gz", np.float64))
    for t, v in _header_row(split / "nodetype-has-split.csv.gz").items():
        if v.strip() == "True":
            ndata[t].update(_masks(split / t, counts[t]))
    return Graph.from_hetero(edges, dict(sorted(counts.items())), ndata, edata)
