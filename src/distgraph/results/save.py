"""`save_embeddings` / `save_predictions`: each trainer writes its share of a node type's rows
of a `DistTensor` (the output of `layerwise_inference`) into a results folder, keyed by the
nodes' original ids, one batch at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import torch

from ..dataloading.split import even_split, trainer_rank
from ..distributed.runtime import get_context
from ..errors import InputError
from ..partition.layout import PartitionConfig
from .ids import OriginalIds
from .write import ResultWriter


def _save(path, g, rows, ntype: str | None, columns: dict, values: Callable, kind: str, batch_size: int) -> int:
    if ntype is None:
        if len(g.ntypes) > 1:
            raise InputError(f"the graph has node types {g.ntypes}: name the one whose results to save (ntype=...)")
        ntype = g.ntypes[0]
    ids = OriginalIds(PartitionConfig.load(get_context().part_config), ntype)
    rank, world_size = trainer_rank()
    share = even_split(g.num_nodes(ntype), rank, world_size)
    writer = ResultWriter(Path(path), ids, columns, rank, world_size, share.numel(), kind)
    for i in range(0, share.numel(), batch_size):
        new_ids = share[i:i + batch_size]
        writer.add(new_ids.numpy(), values(rows[new_ids]))
    writer.close()
    return share.numel()


def save_embeddings(path: str | Path, g, emb, ntype: str | None = None, batch_size: int = 10000) -> int:
    """This trainer's share of `emb` (a (nodes, dim) DistTensor of `ntype`) as column `emb`;
    returns the number of rows written. Every trainer calls it with the same folder."""
    columns = {"emb": (np.float32, emb.shape[1])}
    return _save(path, g, emb, ntype, columns, lambda x: {"emb": x.float().numpy()}, "embeddings", batch_size)


def save_predictions(path: str | Path, g, logits, ntype: str | None = None, batch_size: int = 10000) -> int:
    """This trainer's share of the classes predicted from `logits` (a (nodes, classes)
    DistTensor of `ntype`): `pred` (the arg-max class) and `prob` (each class's softmax
    probability); returns the number of rows written."""
    columns = {"pred": (np.int64, None), "prob": (np.float32, logits.shape[1])}

    def values(x: torch.Tensor) -> dict:
        return {"pred": x.argmax(1).numpy(), "prob": torch.softmax(x.float(), 1).numpy()}

    return _save(path, g, logits, ntype, columns, values, "predictions", batch_size)
