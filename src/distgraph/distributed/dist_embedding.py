"""`DistEmbedding`: a distributed embedding table trained with sparse optimisers.

Calling it returns the rows of the given ids as a leaf tensor that requires grad and
remembers them; after `backward()`, `distgraph.optim.SparseAdagrad`/`SparseAdam` sum the
gradients of repeated ids and send one gradient per row to the servers that own it. With a
`device` (a trainer's GPU) the rows are gathered on the host and copied there (a pinned
buffer, a `non_blocking` copy), and the gradients are summed there before they travel back.
"""

from __future__ import annotations

from typing import Callable

import torch

from ..dataloading.transfer import BatchMover, check_device
from ..ids import as_id_tensor
from .dist_tensor import DistTensor
from .initializers import Initializer
from .policy import PartitionPolicy


class DistEmbedding:
    """`num_embeddings` x `embedding_dim` float32 rows, partitioned like `part_policy`.
    Pickles as its table does (name, shape, dtype, policy): unpickled in a job, the same table."""

    def __init__(self, num_embeddings: int, embedding_dim: int, name: str | None = None,
                 init_func: Initializer | Callable | None = None, part_policy: PartitionPolicy | str | None = None):
        self._tensor = DistTensor((num_embeddings, embedding_dim), torch.float32, name, init_func, part_policy,
                                  persistent=True)
        self._trace: list[tuple[torch.Tensor, torch.Tensor]] = []

    def __call__(self, idx, device: torch.device | str = "cpu") -> torch.Tensor:
        """The rows of `idx` (ids on any device) on `device`, traced for the sparse optimisers."""
        ids = as_id_tensor(idx, f"ids of DistEmbedding {self.name!r}").cpu()
        target = check_device(device)
        rows = BatchMover(target, pin=target.type == "cuda").move(self._tensor[ids])
        if torch.is_grad_enabled():
            rows.requires_grad_(True)
            self._trace.append((ids, rows))
        return rows

    def __getstate__(self) -> dict:
        return {"tensor": self._tensor}  # the rows handed out for the next step stay here

    def __setstate__(self, state: dict) -> None:
        self._tensor, self._trace = state["tensor"], []

    def reset_trace(self) -> None:
        """Forget the rows handed out since the last optimiser step."""
        self._trace = []

    def zero_grad(self) -> None:
        """Forget the lookups whose gradients were already computed, and keep those still waiting
        for their `backward()`: `zero_grad(); loss.backward(); step()` after the forward pass
        applies this forward's gradients, as with torch's optimisers (and DGL's)."""
        self._trace = [(ids, rows) for ids, rows in self._trace if rows.grad is None]

    def gradients(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(ids, gradient rows) of every traced lookup that received a gradient, concatenated,
        on the device of the first one's gradient (where the optimiser sums them)."""
        pairs = [(ids, rows.grad) for ids, rows in self._trace if rows.grad is not None]
        if not pairs:
            return None
        device = pairs[0][1].device
        return (torch.cat([ids.to(device, non_blocking=True) for ids, _ in pairs]),
                torch.cat([grad.to(device, torch.float32) for _, grad in pairs]))

    @property
    def name(self) -> str:
        return self._tensor.name

    @property
    def num_embeddings(self) -> int:
        return self._tensor.shape[0]

    @property
    def embedding_dim(self) -> int:
        return self._tensor.shape[1]

    @property
    def weight(self) -> DistTensor:
        return self._tensor

    @property
    def part_policy(self) -> PartitionPolicy:
        return self._tensor.part_policy

    def __repr__(self) -> str:
        return f"DistEmbedding({self.num_embeddings}, {self.embedding_dim}, name={self.name!r})"
