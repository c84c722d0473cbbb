"""DGL-KE's training objective: logistic loss on positives and (adversarially weighted) negatives."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def kge_loss(pos: Tensor, neg: Tensor, adversarial: bool = False, temperature: float = 1.0,
             mask: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """(loss, pos_loss, neg_loss) with loss = (-mean log s(pos) - mean_i sum_j w_ij log s(-neg_ij)) / 2.

    `neg` holds the negative scores of each positive in its last dimension. Weights w are
    uniform, or with `adversarial` softmax(temperature * neg) treated as constants (RotatE's
    self-adversarial sampling). `mask` (same shape, bool) drops excluded negatives.
    """
    pos_loss = -F.logsigmoid(pos).mean()
    logs = F.logsigmoid(-neg)
    if adversarial:
        logits = neg.detach() * temperature
        if mask is not None:
            logits = logits.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(logits, -1)
        neg_loss = -(weights * logs).sum(-1).mean()
    elif mask is not None:
        weights = mask / mask.sum(-1, keepdim=True)
        neg_loss = -(weights * logs).sum(-1).mean()
    else:
        neg_loss = -logs.mean()
    return (pos_loss + neg_loss) / 2, pos_loss, neg_loss


def regularization(tensors: list[Tensor], coef: float, norm: int) -> Tensor:
    """coef * sum |x|^norm over the embedding rows used by a batch (DGL-KE's L3 by default)."""
    return coef * sum(x.abs().pow(norm).sum() for x in tensors)
