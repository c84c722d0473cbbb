"""`SparseAdagrad` and `SparseAdam` for `DistEmbedding`s (DGL's names and defaults).

`step()` sums the gradients of repeated ids where they are (a trainer's GPU, or the CPU),
then sends each embedding's unique rows and their gradients to the servers owning them, all
slots at once; the servers apply the update with the optimiser state they keep beside the
rows.
"""

from __future__ import annotations

import abc
import math
from typing import Sequence

import torch

from ..distributed.dist_embedding import DistEmbedding
from ..errors import InputError


def coalesce(ids: torch.Tensor, grads: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Unique sorted ids and the sum of the gradient rows of each, on the device of `grads`
    (`ids` are moved there)."""
    ids = ids.to(grads.device)
    uniq, inverse = torch.unique(ids, sorted=True, return_inverse=True)
    if uniq.numel() == ids.numel():  # no repeats: reorder with a gather (faster than a scatter)
        order = torch.empty_like(inverse)
        order[inverse] = torch.arange(inverse.numel(), device=inverse.device)
        return uniq, grads.index_select(0, order)
    return uniq, grads.new_zeros((uniq.numel(), *grads.shape[1:])).index_add_(0, inverse, grads)


class SparseOptimizer(abc.ABC):
    """Base: collects traced gradients and pushes them with this optimiser's spec."""

    def __init__(self, params: Sequence[DistEmbedding], lr: float):
        params = list(params)
        if not params or not all(isinstance(p, DistEmbedding) for p in params):
            raise InputError(f"{type(self).__name__} optimises a list of DistEmbedding, got {params!r}")
        self.params = params
        self.lr = lr
        self._check("lr", lr, minimum=0.0)

    def _check(self, what: str, value: float, minimum: float, maximum: float = math.inf, open_low=False) -> None:
        ok = isinstance(value, (int, float)) and math.isfinite(value) and minimum <= value < maximum
        if not ok or (open_low and value == minimum):
            raise InputError(f"{type(self).__name__}: {what} must be a finite number in "
                             f"{'(' if open_low else '['}{minimum}, {maximum}), got {value!r}")

    @abc.abstractmethod
    def spec(self) -> dict:
        """The hyper-parameters sent with every push (so changing `lr` takes effect at once)."""

    def step(self) -> None:
        """Apply one update to every row that received a gradient since the last step."""
        spec = self.spec()
        with torch.no_grad():
            for emb in self.params:
                found = emb.gradients()
                emb.reset_trace()
                if found is not None:
                    ids, grads = coalesce(*found)  # on the gradients' device: fewer rows travel back
                    emb.weight.push_rows(ids.cpu(), grads.cpu(), spec)

    def zero_grad(self) -> None:
        """Drop gradients already computed (see `DistEmbedding.zero_grad`)."""
        for emb in self.params:
            emb.zero_grad()


class SparseAdagrad(SparseOptimizer):
    """Adagrad on embedding rows; equals dense `torch.optim.Adagrad` on the rows it touches."""

    def __init__(self, params: Sequence[DistEmbedding], lr: float, eps: float = 1e-10):
        super().__init__(params, lr)
        self._check("eps", eps, 0.0, open_low=True)
        self.eps = eps

    def spec(self) -> dict:
        return {"kind": "adagrad", "lr": float(self.lr), "eps": float(self.eps)}


class SparseAdam(SparseOptimizer):
    """Lazy Adam on embedding rows, with a step count per row (as DGL's SparseAdam)."""

    def __init__(self, params: Sequence[DistEmbedding], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-08):
        super().__init__(params, lr)
        self._check("betas[0]", betas[0], 0.0, 1.0)
        self._check("betas[1]", betas[1], 0.0, 1.0)
        self._check("eps", eps, 0.0, open_low=True)
        self.betas, self.eps = (float(betas[0]), float(betas[1])), eps

    def spec(self) -> dict:
        return {"kind": "adam", "lr": float(self.lr), "beta1": self.betas[0], "beta2": self.betas[1],
                "eps": float(self.eps)}
