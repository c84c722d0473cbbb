"""The K best scores of a large set, computed a block at a time: ties go to the smaller flat
index, so a result does not depend on how the set was cut into blocks."""

from __future__ import annotations

import torch


def _best(scores: torch.Tensor, index: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k highest of (scores, index) pairs, ties by increasing index."""
    by_index = torch.argsort(index)
    scores, index = scores[by_index], index[by_index]
    order = torch.sort(scores, descending=True, stable=True).indices[:k]
    return scores[order], index[order]


class RunningTopK:
    """Top k over blocks of (scores, flat indices) fed one after another."""

    def __init__(self, k: int):
        self.k = k
        self.scores = torch.empty(0)
        self.index = torch.empty(0, dtype=torch.int64)

    def add(self, scores: torch.Tensor, index: torch.Tensor) -> None:
        scores, index = scores.reshape(-1), index.reshape(-1)
        if scores.numel() > self.k:  # a block's own top k first, keeping every score tied with its k-th
            keep = scores >= torch.topk(scores, self.k, sorted=False).values.min()
            scores, index = scores[keep], index[keep]
        self.scores, self.index = _best(torch.cat([self.scores, scores.float()]), torch.cat([self.index, index]), self.k)


def row_topk(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's k highest scores and their columns (ties by increasing column)."""
    order = torch.sort(scores, dim=1, descending=True, stable=True)
    return order.values[:, :k], order.indices[:, :k]
