"""DGL-KE's training objective: logistic loss on positives and (adversarially weighted) negatives,
plus a norm penalty on the embedding rows a step uses."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def kge_loss(pos: Tensor, neg: Tensor, adversarial: bool = False, temperature: float = 1.0,
             mask: Tensor | None = None, importance: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """(loss, pos_loss, neg_loss) with loss = (-mean log s(pos) - mean_i sum_j w_ij log s(-neg_ij)) / 2.

    `neg` holds the negative scores of each positive in its last dimension. Weights w are
    uniform, or with `adversarial` softmax(temperature * neg) treated as constants (RotatE's
    self-adversarial sampling). `mask` (same shape, bool) drops excluded negatives.
    `importance` (one per positive, --has_edge_importance) scales both terms of each
    positive before the means, as DGL-KE does.
    """
    logs = F.logsigmoid(-neg)
    if adversarial:
        logits = neg.detach() * temperature
        if mask is not None:
            logits = logits.masked_fill(~mask, float("-inf"))
        per_neg = -(torch.softmax(logits, -1) * logs).sum(-1)
    elif mask is not None:
        per_neg = -((mask / mask.sum(-1, keepdim=True)) * logs).sum(-1)
    else:
        per_neg = -logs.mean(-1)
    per_pos = -F.logsigmoid(pos)
    if importance is not None:
        per_pos = per_pos * importance
        per_neg = per_neg * importance.view(per_neg.shape)
    pos_loss, neg_loss = per_pos.mean(), per_neg.mean()
    return (pos_loss + neg_loss) / 2, pos_loss, neg_loss


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
