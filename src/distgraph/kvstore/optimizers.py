"""Server-side sparse optimisers: Adagrad and Adam, their state kept beside the shard.

A server keeps the state of the rows it is responsible for (its slice of the machine's
rows), so trainers only send summed row gradients and never move optimiser state.
Adam counts steps per row (as DGL's SparseAdam does): a row's bias correction depends on
how often that row was updated, not on a global step. The updates themselves are fused
row kernels (`kernels`); rows are float32 or float64, as in DGL's sparse optimisers.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ..errors import InputError
from . import kernels

DTYPES = (torch.float32, torch.float64)  # row dtypes the optimisers update (`kernels`)
_PARAMS = {"adagrad": ("lr", "eps"), "adam": ("lr", "beta1", "beta2", "eps"), "rowadagrad": ("lr",)}
# `rowadagrad` (DGL-KE's) keeps one accumulator per row in another tensor of the store, named
# by the spec's `state`, so every process that maps the rows can apply it (`optim.row_adagrad`)
SHARED_STATE = {"rowadagrad"}


def check_spec(spec: Any) -> dict:
    """Validate an optimiser spec ({"kind": ..., hyper-parameters}) received from a client."""
    if not isinstance(spec, dict) or spec.get("kind") not in _PARAMS:
        raise InputError(f"optimizer must be a map with 'kind' in {sorted(_PARAMS)}, got {spec!r}")
    kind = spec["kind"]
    names = {"kind", *_PARAMS[kind], *(("state",) if kind in SHARED_STATE else ())}
    if set(spec) != names:
        raise InputError(f"optimizer {kind!r} takes exactly {sorted(names - {'kind'})}")
    for k in _PARAMS[kind]:
        v = spec[k]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise InputError(f"optimizer parameter {k!r} must be a finite number, got {v!r}")
    if kind in SHARED_STATE:
        if not isinstance(spec["state"], str) or not spec["state"]:
            raise InputError(f"optimizer {kind!r} needs 'state', the name of its state tensor")
        if spec["lr"] < 0:
            raise InputError(f"optimizer needs lr >= 0, got lr={spec['lr']}")
        return spec
    if spec["lr"] < 0 or spec["eps"] <= 0:
        raise InputError(f"optimizer needs lr >= 0 and eps > 0, got lr={spec['lr']} eps={spec['eps']}")
    if kind == "adam" and not (0 <= spec["beta1"] < 1 and 0 <= spec["beta2"] < 1):
        raise InputError(f"adam needs betas in [0, 1), got ({spec['beta1']}, {spec['beta2']})")
    return spec


class Adagrad:
    """sum += g²; w -= lr · g / (√sum + eps) — equal to dense `torch.optim.Adagrad` on the rows."""

    FIELDS = ("sum",)  # the state, one row per row of the server's slice (checkpoints save these)

    def __init__(self, rows: int, row_shape: tuple[int, ...], dtype: torch.dtype):
        self.sum = torch.zeros((rows, *row_shape), dtype=dtype)

    def step(self, weight: torch.Tensor, rows: torch.Tensor, state_rows: torch.Tensor, grad: torch.Tensor,
             spec: dict) -> None:
        kernels.adagrad(weight, self.sum, rows, state_rows, grad.contiguous(), spec["lr"], spec["eps"])


class Adam:
    """Lazy Adam with a step count per row (rows without gradient keep their moments)."""

    FIELDS = ("m", "v", "t")

    def __init__(self, rows: int, row_shape: tuple[int, ...], dtype: torch.dtype):
        self.m = torch.zeros((rows, *row_shape), dtype=dtype)
        self.v = torch.zeros((rows, *row_shape), dtype=dtype)
        self.t = torch.zeros(rows, dtype=torch.int64)

    def step(self, weight: torch.Tensor, rows: torch.Tensor, state_rows: torch.Tensor, grad: torch.Tensor,
             spec: dict) -> None:
        kernels.adam(weight, self.m, self.v, self.t, rows, state_rows, grad.contiguous(), spec["lr"],
                     spec["beta1"], spec["beta2"], spec["eps"])


OPTIMIZERS = {"adagrad": Adagrad, "adam": Adam}
