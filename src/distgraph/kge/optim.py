"""Row-sparse Adagrad applied in place to shared embedding tables (Hogwild across processes).

As in DGL-KE, each row keeps one accumulator, the running sum of the mean squared gradient
of that row, so the state costs 4 bytes per row instead of one float per parameter.
Processes update the same shared tables without locks: rows touched by two processes at
once are rare, and a lost update only slows convergence slightly (Hogwild, Niu et al. 2011).
"""

from __future__ import annotations

import torch
from torch import Tensor


@torch.no_grad()
def sparse_adagrad_(table: Tensor, state: Tensor, rows: Tensor, grad: Tensor, lr: float) -> None:
    """Apply one Adagrad step to `table[rows]` given their gradients; `rows` must be distinct."""
    state.index_add_(0, rows, torch.linalg.vector_norm(grad, dim=1).square_().div_(grad.shape[1]))
    std = state.index_select(0, rows).sqrt_().add_(1e-10)
    table.index_add_(0, rows, grad * (-lr / std).unsqueeze(1))
