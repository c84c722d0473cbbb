"""`DglNodePropPredDataset`: OGB's DGL loader under its name (`ogb.nodeproppred`), over an
already-downloaded copy in OGB's own layout read by `load_ogb_node` (never a download):
`dataset[0]` is (graph, labels), `get_idx_split()` the train/valid/test ids, as OGB gives them.

Labels come as OGB's: one row per node, one column per task, int64, or float with NaN where a
node is unlabelled; on a heterogeneous graph both are dicts by node type. The graph keeps the
features (`feat`), not the labels or the split.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..errors import InputError
from ..tensor_graph import Graph
from .ogb import DATASETS, load_ogb_node

_SPLIT = {"train": "train_mask", "valid": "val_mask", "test": "test_mask"}


def _expected_files(folder: Path, split: str) -> str:
    return ", ".join(str(folder / f) for f in ("raw/edge.csv.gz", "raw/num-node-list.csv.gz", "raw/node-label.csv.gz",
                                               f"split/{split}/train.csv.gz", f"split/{split}/valid.csv.gz",
                                               f"split/{split}/test.csv.gz"))


def _ogb_labels(label: torch.Tensor) -> torch.Tensor:
    """(nodes, tasks) labels; unlabelled nodes (-1 here) as NaN in float, as OGB reads them."""
    label = label.reshape(label.shape[0], -1)
    if label.dtype.is_floating_point or not bool((label < 0).any()):
        return label
    return torch.where(label < 0, torch.tensor(float("nan")), label.to(torch.float64))


class DglNodePropPredDataset:
    """`DglNodePropPredDataset(name, root="dataset")`: OGB node dataset `name` from
    `<root>/<name with _>` (OGB's folder)."""

    def __init__(self, name: str, root: str | Path = "dataset", meta_dict: dict | None = None):
        if meta_dict is not None:
            raise InputError("meta_dict describes a dataset to download; distgraph reads OGB's files as they are "
                             "on disk: leave it out")
        self.name, self.root = name, Path(root)
        folder = self.root / name.replace("-", "_")
        if not (folder / "raw").is_dir():
            expected = _expected_files(folder, DATASETS[name].split if name in DATASETS else "time")
            raise InputError(f"no OGB dataset {name} under {self.root}: distgraph reads an already-downloaded copy "
                             f"and never downloads; expected OGB's files, e.g. {expected} (ogbn-mag: "
                             f"raw/relations/..., raw/num-node-dict.csv.gz as OGB lays it out)")
        self.graph = load_ogb_node(name, root)
        self.is_hetero = not self.graph.is_homogeneous
        self.labels, self._split = {}, {key: {} for key in _SPLIT}
        for t in self.graph.ntypes:
            data = self.graph.nodes[t].data
            if "label" not in data:
                continue
            self.labels[t] = _ogb_labels(data.pop("label"))
            for key, mask in _SPLIT.items():
                self._split[key][t] = torch.nonzero(data.pop(mask)).flatten()
        if not self.labels:
            raise InputError(f"OGB dataset {name} under {self.root} has no labelled node type")

    def _per_type(self, value: dict):
        return value if self.is_hetero else next(iter(value.values()))

    @property
    def num_classes(self) -> int:
        """Classes of the labelled nodes (one more than the largest label)."""
        known = [x[~torch.isnan(x)] if x.dtype.is_floating_point else x for x in self.labels.values()]
        return int(max(int(x.max()) for x in known if x.numel())) + 1

    def get_idx_split(self) -> dict:
        """{"train"/"valid"/"test": node ids} (a dict by node type on a heterogeneous graph)."""
        return {key: self._per_type(ids) for key, ids in self._split.items()}

    def __getitem__(self, idx: int) -> tuple[Graph, torch.Tensor | dict]:
        if idx != 0:
            raise IndexError(f"{self.name} has one graph (index 0)")
        return self.graph, self._per_type(self.labels)

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"DglNodePropPredDataset({self.name!r}, root={str(self.root)!r})"
