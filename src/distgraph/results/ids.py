"""A node type's original ids (the ids of the input file, or the string ids of an edge list)
from the partition's id maps, read through memory maps so a trainer touches only its share."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..partition.layout import PartitionConfig


class OriginalIds:
    """new per-type id -> original id of one node type of a partitioning."""

    def __init__(self, cfg: PartitionConfig, ntype: str):
        rel = cfg.mapping_file("node", ntype)
        if rel is None:
            raise InputError(f"{cfg.path} has no id map for node type {ntype!r}; re-partition with distgraph partition")
        self.ntype = ntype
        self._orig = cfg.load_array(rel)
        names = cfg.raw.get("mapping", {}).get("node_names")
        self._names = cfg.load_array(names) if names else None

    @property
    def named(self) -> bool:
        """Whether the input named its nodes with strings (an edge list's string ids)."""
        return self._names is not None

    def __len__(self) -> int:
        return len(self._orig)

    def index(self, new_ids: np.ndarray) -> np.ndarray:
        """The position of each node in the input (its integer id there)."""
        return np.asarray(self._orig[np.asarray(new_ids, dtype=np.int64)], dtype=np.int64)

    def names(self, index: np.ndarray) -> np.ndarray:
        """The string ids of the nodes at input positions `index`."""
        return np.asarray(self._names[index]).astype(str)
