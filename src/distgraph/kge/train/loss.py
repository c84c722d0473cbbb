"""DGL-KE's training objectives: a loss of each positive and each negative score (`--loss_genre`
Logsigmoid, Logistic, BCE or Hinge), or of each positive-minus-negative difference
(`--pairwise`), negatives weighted uniformly or self-adversarially; plus a norm penalty on the
embedding rows a step uses."""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor


def criterion(genre: str = "Logsigmoid", margin: float = 1.0) -> Callable[[Tensor, bool], Tensor]:
    """DGL-KE's loss of scores labelled positive (label 1) or negative: Hinge is
    max(0, margin - label * score) with label -1 for negatives; Logsigmoid
    (-log sigmoid(label * score)), Logistic (log(1 + exp(-label * score))) and BCE
    (-log sigmoid(score) for positives, -log(1 - sigmoid(score)) for negatives) are one
    function, computed here in its stable form."""
    if genre == "Hinge":
        return lambda s, positive: F.relu(margin - s if positive else margin + s)
    return lambda s, positive: -F.logsigmoid(s if positive else -s)


def kge_loss(pos: Tensor, neg: Tensor, adversarial: bool = False, temperature: float = 1.0,
             mask: Tensor | None = None, importance: Tensor | None = None, genre: str = "Logsigmoid",
             margin: float = 1.0, pairwise: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """(loss, pos_loss, neg_loss) as DGL-KE's `LossGenerator` computes them.

    `neg` holds the negative scores of each positive in its last dimension. Point-wise, loss =
    (mean L(pos) + mean_i sum_j w_ij L(neg_ij)) / 2 with weights w uniform, or with
    `adversarial` softmax(temperature * neg) treated as constants (RotatE's self-adversarial
    sampling). With `pairwise`, loss = mean_i mean_j L(pos_i - neg_ij) as a positive, and
    pos_loss, neg_loss are NaN (DGL-KE logs the loss alone). `mask` (same shape as `neg`, bool)
    drops excluded negatives. `importance` (one per positive, --has_edge_importance) scales
    each positive's terms before the means, as DGL-KE does.
    """
    loss_of = criterion(genre, margin)
    if pairwise:
        per_pair = loss_of(pos.view(neg.shape[:-1]).unsqueeze(-1) - neg, True)
        per_pos = _mean_over_negatives(per_pair, mask)
        if importance is not None:
            per_pos = per_pos * importance.view(per_pos.shape)
        nan = pos.new_full((), float("nan"))
        return per_pos.mean(), nan, nan
    neg_losses = loss_of(neg, False)
    if adversarial:
        logits = neg.detach() * temperature
        if mask is not None:
            logits = logits.masked_fill(~mask, float("-inf"))
        per_neg = (torch.softmax(logits, -1) * neg_losses).sum(-1)
    else:
        per_neg = _mean_over_negatives(neg_losses, mask)
    per_pos = loss_of(pos, True)
    if importance is not None:
        per_pos = per_pos * importance
        per_neg = per_neg * importance.view(per_neg.shape)
    pos_loss, neg_loss = per_pos.mean(), per_neg.mean()
    return (pos_loss + neg_loss) / 2, pos_loss, neg_loss


def _mean_over_negatives(losses: Tensor, mask: Tensor | None) -> Tensor:
    """Mean of the last dimension, over the negatives `mask` keeps when given."""
    if mask is None:
        return losses.mean(-1)
    return ((mask / mask.sum(-1, keepdim=True)) * losses).sum(-1)


def add_regularization_grad(x: Tensor, grad: Tensor, coef: float, norm: int) -> Tensor:
    """Add the gradient of coef * sum |x|^norm to `grad` and return the penalty.

    The gradient is coef * norm * |x|^(norm-2) * x, computed without autograd and without
    the slow `sign`/`pow` kernels for DGL-KE's default norm 3 (x * |x|).
    """
    a = x.abs()
    if norm == 1:
        grad.add_(x.sign(), alpha=coef)
        return coef * a.sum()
    scaled = x if norm == 2 else x * (a if norm == 3 else a.pow(norm - 2))
    grad.add_(scaled, alpha=coef * norm)
    return coef * torch.vdot(scaled.reshape(-1), x.reshape(-1))
