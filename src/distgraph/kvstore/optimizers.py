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


class _Scratch:
    """Reusable temporaries: a fresh multi-megabyte tensor per push costs page faults."""

    def __init__(self, row_shape: tuple[int, ...], dtype: torch.dtype, count: int):
        self.row_shape, self.dtype = row_shape, dtype
        self.buffers = [torch.empty((0, *row_shape), dtype=dtype) for _ in range(count)]

    def get(self, n: int) -> list[torch.Tensor]:
        if self.buffers[0].shape[0] < n:
            self.buffers = [torch.empty((n, *self.row_shape), dtype=self.dtype) for _ in self.buffers]
        return [b[:n] for b in self.buffers]


class Adagrad:
    """sum += g²; w -= lr · g / (√sum + eps) — equal to dense `torch.optim.Adagrad` on the rows.

    Rows are unique, so the scatters are `index_add_` (much faster than `index_copy_` on CPU)."""

    def __init__(self, rows: int, row_shape: tuple[int, ...], dtype: torch.dtype):
        self.sum = torch.zeros((rows, *row_shape), dtype=dtype)
        self.scratch = _Scratch(row_shape, dtype, 1)

    def step(self, weight: torch.Tensor, rows: torch.Tensor, state_rows: torch.Tensor, grad: torch.Tensor,
             spec: dict) -> None:
        (tmp,) = self.scratch.get(grad.shape[0])
        self.sum.index_add_(0, state_rows, torch.mul(grad, grad, out=tmp))
        std = torch.index_select(self.sum, 0, state_rows, out=tmp).sqrt_().add_(spec["eps"])
        weight.index_add_(0, rows, torch.div(grad, std, out=tmp), alpha=-spec["lr"])


class Adam:
    """Lazy Adam with a step count per row (rows without gradient keep their moments)."""

    def __init__(self, rows: int, row_shape: tuple[int, ...], dtype: torch.dtype):
        self.m = torch.zeros((rows, *row_shape), dtype=dtype)
        self.v = torch.zeros((rows, *row_shape), dtype=dtype)
        self.t = torch.zeros(rows, dtype=torch.int64)
        self.scratch = _Scratch(row_shape, dtype, 3)

    def step(self, weight: torch.Tensor, rows: torch.Tensor, state_rows: torch.Tensor, grad: torch.Tensor,
             spec: dict) -> None:
        b1, b2 = spec["beta1"], spec["beta2"]
        m, v, delta = self.scratch.get(grad.shape[0])
        self.t.index_add_(0, state_rows, torch.ones_like(state_rows))
        tf = self.t.index_select(0, state_rows).to(torch.float64)
        # m += (1 - b1)(g - m) and v += (1 - b2)(g² - v): the moments' updates as scatter-adds
        torch.index_select(self.m, 0, state_rows, out=m)
        torch.sub(grad, m, out=delta).mul_(1 - b1)
        self.m.index_add_(0, state_rows, delta)
        m.add_(delta)
        torch.index_select(self.v, 0, state_rows, out=v)
        torch.mul(grad, grad, out=delta).sub_(v).mul_(1 - b2)
        self.v.index_add_(0, state_rows, delta)
        v.add_(delta)
        bshape = (-1,) + (1,) * (grad.dim() - 1)
        bc1 = (1 - torch.pow(b1, tf)).to(grad.dtype).view(bshape)
        bc2 = (1 - torch.pow(b2, tf)).to(grad.dtype).view(bshape)
        denom = v.div_(bc2).sqrt_().add_(spec["eps"])
        weight.index_add_(0, rows, m.div_(denom).div_(bc1), alpha=-spec["lr"])


OPTIMIZERS = {"adagrad": Adagrad, "adam": Adam}
