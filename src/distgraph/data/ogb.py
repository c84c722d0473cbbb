"""OGB node-property datasets already on disk, read from OGB's own files (the CSV layout its
`NodePropPredDataset` downloads: `<root>/<name with _>/raw/...` and `.../split/<split>/...`),
without the `ogb` package or any download.

Homogeneous (ogbn-arxiv, ogbn-products, ...): `raw/edge.csv.gz`, `raw/num-node-list.csv.gz`,
`raw/node-feat.csv.gz`, `raw/node-label.csv.gz`. Heterogeneous (ogbn-mag):
`raw/num-node-dict.csv.gz`, `raw/triplet-type-list.csv.gz`,
`raw/relations/<src>___<rel>___<dst>/edge.csv.gz`, `raw/node-feat/<type>/node-feat.csv.gz`,
`raw/nodetype-has-label.csv.gz`, `raw/node-label/<type>/node-label.csv.gz`. Splits become
`train_mask` / `val_mask` / `test_mask` on the labelled node type(s); features `feat`, labels
`label` (a flat int64 column; OGB's NaN for unlabelled nodes becomes -1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..errors import InputError
from ..graph import Graph

SPLITS = {"ogbn-arxiv": "time", "ogbn-mag": "time", "ogbn-products": "sales_ranking", "ogbn-proteins": "species",
          "ogbn-papers100M": "time"}


def _csv(path: Path, dtype, ndmin: int = 2) -> np.ndarray:
    if not path.is_file():
        raise InputError(f"{path} is missing: the OGB dataset folder is incomplete (download it with the ogb package, "
                         f"or check --data_root)")
    return np.loadtxt(path, delimiter=",", dtype=dtype, ndmin=ndmin)


def _header_row(path: Path) -> dict[str, str]:
    """A CSV of one header line and one value line (OGB's per-type dictionaries)."""
    if not path.is_file():
        raise InputError(f"{path} is missing: the OGB dataset folder is incomplete")
    import gzip

    with gzip.open(path, "rt") as f:
        names, values = f.readline().strip().split(","), f.readline().strip().split(",")
    return dict(zip(names, values))


def _labels(path: Path) -> torch.Tensor:
    raw = _csv(path, np.float64).reshape(-1)
    return torch.from_numpy(np.where(np.isnan(raw), -1, raw).astype(np.int64))


def _masks(split_dir: Path, n: int) -> dict[str, torch.Tensor]:
    out = {}
    for key, name in (("train_mask", "train"), ("val_mask", "valid"), ("test_mask", "test")):
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.from_numpy(_csv(split_dir / f"{name}.csv.gz", np.int64, ndmin=1))] = True
        out[key] = mask
    return out


def load_ogb_node(name: str, root: str | Path) -> Graph:
    """The OGB node dataset `name` (e.g. "ogbn-mag") under `root` as a `Graph`."""
    folder = Path(root) / name.replace("-", "_")
    raw = folder / "raw"
    if not raw.is_dir():
        raise InputError(f"no OGB dataset {name} under {root}: expected the folder {raw} (OGB's layout)")
    split = folder / "split" / SPLITS.get(name, "time")
    if (raw / "triplet-type-list.csv.gz").is_file():
        return _hetero(raw, split)
    n = int(_csv(raw / "num-node-list.csv.gz", np.int64).reshape(-1)[0])
    edges = _csv(raw / "edge.csv.gz", np.int64)
    ndata = {"feat": torch.from_numpy(_csv(raw / "node-feat.csv.gz", np.float32))} \
        if (raw / "node-feat.csv.gz").is_file() else {}
    ndata["label"] = _labels(raw / "node-label.csv.gz")
    ndata.update(_masks(split, n))
    return Graph(torch.from_numpy(edges[:, 0]), torch.from_numpy(edges[:, 1]), n, ndata)


def _hetero(raw: Path, split: Path) -> Graph:
    counts = {t: int(v) for t, v in _header_row(raw / "num-node-dict.csv.gz").items()}
    triplets = sorted(tuple(r) for r in _csv(raw / "triplet-type-list.csv.gz", str).tolist())
    edges = {}
    for c in triplets:
        e = _csv(raw / "relations" / "___".join(c) / "edge.csv.gz", np.int64)
        edges[c] = (torch.from_numpy(e[:, 0]), torch.from_numpy(e[:, 1]))
    labelled = [t for t, v in _header_row(raw / "nodetype-has-label.csv.gz").items() if v.strip() in ("True", "1")]
    ndata: dict[str, dict[str, torch.Tensor]] = {t: {} for t in counts}
    for t in counts:
        feat = raw / "node-feat" / t / "node-feat.csv.gz"
        if feat.is_file():
            ndata[t]["feat"] = torch.from_numpy(_csv(feat, np.float32))
    for t in labelled:
        ndata[t]["label"] = _labels(raw / "node-label" / t / "node-label.csv.gz")
        ndata[t].update(_masks(split / t, counts[t]))
    return Graph.from_hetero(edges, dict(sorted(counts.items())), ndata)

