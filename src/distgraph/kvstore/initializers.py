"""Named initialisers that servers run themselves: `zeros`, `constant`, `uniform`, `normal`.

A client cannot send code (no pickle), so a tensor's initial values are described by a
small spec. Random values come from a counter-based generator (splitmix64 of the global
element index and the seed), so every element gets the same value however the tensor is
partitioned: standalone and distributed runs start from identical tensors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..errors import InputError

# Elements generated at once: each step of the stream makes float64/uint64 temporaries of
# this many elements (8 MB each at 1M), which a server keeps as free heap afterwards; 4M
# left ~200 MB in every server that created a large table, 1M fills as fast.
_CHUNK_ELEMENTS = 1 << 20
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_PARAMS = {"zeros": (), "constant": ("value",), "uniform": ("low", "high", "seed"), "normal": ("mean", "std", "seed")}


def check_spec(spec: Any) -> dict:
    """Validate an initialiser spec received from a client."""
    if not isinstance(spec, dict) or spec.get("kind") not in _PARAMS:
        raise InputError(f"initializer must be a map with 'kind' in {sorted(_PARAMS)}, got {spec!r}")
    kind = spec["kind"]
    if set(spec) != {"kind", *_PARAMS[kind]}:
        raise InputError(f"initializer {kind!r} takes exactly {list(_PARAMS[kind])}, "
                         f"got {sorted(set(spec) - {'kind'})}")
    for k in _PARAMS[kind]:
        v = spec[k]
        if k == "seed":
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 63:
                raise InputError(f"initializer seed must be an int in [0, 2**63), got {v!r}")
        elif not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise InputError(f"initializer parameter {k!r} must be a finite number, got {v!r}")
    if kind == "uniform" and not spec["low"] <= spec["high"]:
        raise InputError(f"uniform initializer needs low <= high, got {spec['low']} > {spec['high']}")
    if kind == "normal" and spec["std"] < 0:
        raise InputError(f"normal initializer needs std >= 0, got {spec['std']}")
    return spec


def _uniform01(counter: np.ndarray, seed: int) -> np.ndarray:
    """splitmix64 of (counter, seed) mapped to [0, 1): a stateless, reproducible stream."""
    with np.errstate(over="ignore"):
        z = counter * _GOLDEN + np.uint64(seed) * np.uint64(0xBF58476D1CE4E5B9) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def _values(spec: dict, first: int, count: int) -> np.ndarray:
    """Values of global elements [first, first + count) in float64."""
    idx = np.arange(first, first + count, dtype=np.uint64)
    if spec["kind"] == "uniform":
        return spec["low"] + (spec["high"] - spec["low"]) * _uniform01(idx, spec["seed"])
    u1 = 1.0 - _uniform01(idx * np.uint64(2), spec["seed"])  # (0, 1]: log is finite
    u2 = _uniform01(idx * np.uint64(2) + np.uint64(1), spec["seed"])
    return spec["mean"] + spec["std"] * np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def fill(out: torch.Tensor, first_row: int, spec: dict) -> None:
    """Fill `out` (rows first_row.. of the global tensor) as `spec` says, chunk by chunk."""
    kind = spec["kind"]
    if kind == "zeros":
        out.zero_()
        return
    if kind == "constant":
        out.fill_(spec["value"])
        return
    flat = out.view(-1) if out.is_contiguous() else None
    if flat is None:
        raise InputError("initializers need a contiguous tensor")
    row_numel = max(1, math.prod(out.shape[1:]))
    first = first_row * row_numel
    for start in range(0, flat.numel(), _CHUNK_ELEMENTS):
        n = min(_CHUNK_ELEMENTS, flat.numel() - start)
        flat[start:start + n] = torch.from_numpy(_values(spec, first + start, n)).to(out.dtype)
