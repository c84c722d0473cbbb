"""Server-side sparse optimisers: Adagrad and Adam, their state kept beside the shard.

A server keeps the state of the rows it is responsible for (its slice of the machine's
rows), so trainers only send summed row gradients and never move optimiser state.
Adam counts steps per row (as DGL's SparseAdam does): a row's bias correction depends on
how often that row was updated, not on a global step.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ..errors import InputError

_PARAMS = {"adagrad": ("lr", "eps"), "adam": ("lr", "beta1", "beta2", "eps")}


def check_spec(spec: Any) -> dict:
    """Validate an optimiser spec ({"kind": ..., hyper-parameters}) received from a client."""
    if not isinstance(spec, dict) or spec.get("kind") not in _PARAMS:
        raise InputError(f"optimizer must be a map with 'kind' in {sorted(_PARAMS)}, got {spec!r}")
    kind = spec["kind"]
    if set(spec) != {"kind", *_PARAMS[kind]}:
        raise InputError(f"optimizer {kind!r} takes exactly {list(_PARAMS[kind])}")
    for k in _PARAMS[kind]:
        v = spec[k]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise InputError(f"optimizer parameter {k!r} must be a finite number, got {v!r}")
    if spec["lr"] < 0 or spec["eps"] <= 0:
        raise InputError(f"optimizer needs lr >= 0 and eps > 0, got lr={spec['lr']} eps={spec['eps']}")
    if kind == "adam" and not (0 <= spec["beta1"] < 1 and 0 <= spec["beta2"] < 1):
        raise InputError(f"adam needs betas in [0, 1), got ({spec['beta1']}, {spec['beta2']})")
    return spec


class Adagrad:
    """sum += g²; w -= lr · g / (√sum + eps) — equal to dense `torch.optim.Adagrad` on the rows."""

    def __init__(self, rows: int, row_shape: tuple[int, ...], dtype: torch.dtype):
        self.sum = torch.zeros((rows, *row_shape), dtype=dtype)

    def step(self, weight: torch.Tensor, rows: torch.Tensor, state_rows: torch.Tensor, grad: torch.Tensor,
             spec: dict) -> None:
        s = self.sum.index_select(0, state_rows).addcmul_(grad, grad)
        self.sum.index_copy_(0, state_rows, s)
        upd = torch.div(grad, s.sqrt_().add_(spec["eps"])).mul_(-spec["lr"])
        weight.index_add_(0, rows, upd)


class Adam:
    """Lazy Adam with a step count per row (rows without gradient keep their moments)."""

    def __init__(self, rows: int, row_shape: tuple[int, ...], dtype: torch.dtype):
        self.m = torch.zeros((rows, *row_shape), dtype=dtype)
        self.v = torch.zeros((rows, *row_shape), dtype=dtype)
        self.t = torch.zeros(rows, dtype=torch.int64)

    def step(self, weight: torch.Tensor, rows: torch.Tensor, state_rows: torch.Tensor, grad: torch.Tensor,
             spec: dict) -> None:
        b1, b2 = spec["beta1"], spec["beta2"]
        t = self.t.index_select(0, state_rows).add_(1)
        self.t.index_copy_(0, state_rows, t)
        m = self.m.index_select(0, state_rows).mul_(b1).add_(grad, alpha=1 - b1)
        v = self.v.index_select(0, state_rows).mul_(b2).addcmul_(grad, grad, value=1 - b2)
        self.m.index_copy_(0, state_rows, m)
        self.v.index_copy_(0, state_rows, v)
        bshape = (-1,) + (1,) * (grad.dim() - 1)
        tf = t.to(torch.float64)
        bc1 = (1 - torch.pow(b1, tf)).to(grad.dtype).view(bshape)
        bc2 = (1 - torch.pow(b2, tf)).to(grad.dtype).view(bshape)
        denom = v.div_(bc2).sqrt_().add_(spec["eps"])
        upd = m.div_(denom).div_(bc1).mul_(-spec["lr"])
        weight.index_add_(0, rows, upd)


OPTIMIZERS = {"adagrad": Adagrad, "adam": Adam}
