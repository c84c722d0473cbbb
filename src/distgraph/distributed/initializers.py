"""Initialisers for `DistTensor`/`DistEmbedding` that the servers run themselves.

`init_func` may be any callable `f(shape, dtype)` (DGL's convention; it runs in the
creating trainer, once per machine, on that machine's rows), or one of these, which
travel as a small spec and give every element the same value however the tensor is
partitioned, so standalone and distributed runs start identical.
"""

from __future__ import annotations

import torch

from ..kvstore import initializers


class Initializer:
    """A server-side initialiser; also callable as `f(shape, dtype)` for the full tensor."""

    def __init__(self, **spec):
        self._spec = initializers.check_spec(spec)

    def spec(self) -> dict:
        return dict(self._spec)

    def __call__(self, shape, dtype: torch.dtype) -> torch.Tensor:
        out = torch.empty(tuple(shape), dtype=dtype)
        initializers.fill(out, 0, self._spec)
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._spec.items() if k != "kind")
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    def __init__(self):
        super().__init__(kind="zeros")


class Constant(Initializer):
    def __init__(self, value: float):
        super().__init__(kind="constant", value=value)


class Uniform(Initializer):
    """Uniform in [low, high), reproducible from `seed` and each element's global index."""

    def __init__(self, low: float, high: float, seed: int = 0):
        super().__init__(kind="uniform", low=low, high=high, seed=seed)


class Normal(Initializer):
    """Normal(mean, std), reproducible from `seed` and each element's global index."""

    def __init__(self, mean: float = 0.0, std: float = 1.0, seed: int = 0):
        super().__init__(kind="normal", mean=mean, std=std, seed=seed)
