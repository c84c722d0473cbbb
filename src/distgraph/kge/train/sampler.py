"""Training mini-batches with chunked negative sampling, as DGL-KE's edge sampler makes them.

A batch of B positive triples is cut into B / k chunks of k triples (k = neg_sample_size,
DGL-KE's chunk size); the triples of a chunk share the same n negative entities, so the
negative scores of a chunk are one (k x n) matrix product. Batches alternate between
corrupting tails and corrupting heads. With `neg_deg_sample`, the chunk's own heads (or
tails) are added as negatives too, which samples entities in proportion to their degree;
each triple's own entity is masked out of its negatives.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ...distributed.transfer import to_device
from ...errors import InputError


@dataclass
class Batch:
    """Positive triples, their shared negatives per chunk, and which side the negatives replace."""

    h: Tensor
    r: Tensor
    t: Tensor
    neg: Tensor  # (chunks, negatives) entity ids
    corrupt_head: bool
    neg_mask: Tensor | None = None  # (chunks, chunk_size, negatives), False where a negative is excluded
    importance: Tensor | None = None  # one weight per positive (--has_edge_importance)

    @property
    def num_chunks(self) -> int:
        """Number of chunks; each shares one row of `neg`."""
        return self.neg.shape[0]

    def to(self, device: torch.device) -> Batch:
        """This batch with its tensors on `device` (the same tensors on the CPU)."""
        move = lambda x: None if x is None else to_device(x, device)  # noqa: E731
        return Batch(move(self.h), move(self.r), move(self.t), move(self.neg), self.corrupt_head,
                     move(self.neg_mask), move(self.importance))


def chunk_layout(batch_size: int, neg_sample_size: int, num_triples: int) -> tuple[int, int]:
    """(batch size, chunk size): the batch is rounded up to whole chunks as DGL-KE does, and
    shrunk to whole chunks when a process holds fewer triples than one batch."""
    if batch_size < 1 or neg_sample_size < 1:
        raise InputError(f"--batch_size and --neg_sample_size must be positive, got {batch_size} and "
                         f"{neg_sample_size}")
    if num_triples < 1:
        raise InputError("no training triples: the training file is empty or --num_proc exceeds the triples")
    chunk = min(neg_sample_size, batch_size, num_triples)
    batch = -(-batch_size // chunk) * chunk
    if batch > num_triples:
        batch = num_triples // chunk * chunk
    return batch, chunk


class ChunkSampler:
    """Endless stream of batches over one process's triples, reshuffled each epoch; negative
    entities are drawn uniformly from `neg_range` (a machine's own entities in distributed
    training, as DGL-KE's distributed mode samples them from its partition), except a
    `global_share` of each chunk's, drawn from all `num_entities`. With `head_range`, negatives
    replacing heads come from it instead (a bucket's head partition, as PyTorch-BigGraph draws them)."""

    def __init__(self, triples: Tensor, neg_range: tuple[int, int], batch_size: int, neg_sample_size: int,
                 neg_deg_sample: bool = False, seed: int = 0, importance: Tensor | None = None,
                 num_entities: int | None = None, global_share: float = 0.0,
                 head_range: tuple[int, int] | None = None):
        self.triples = triples
        self.neg_range = neg_range
        self.head_range = neg_range if head_range is None else head_range
        # (on one machine every entity is in `neg_range` already)
        self.num_global = round(neg_sample_size * global_share) if num_entities and tuple(neg_range) != (
            0, num_entities) else 0
        self.num_entities = num_entities
        self.importance = importance
        self.batch_size, self.chunk_size = chunk_layout(batch_size, neg_sample_size, len(triples))
        self.neg_sample_size = neg_sample_size
        self.neg_deg_sample = neg_deg_sample
        self.gen = torch.Generator().manual_seed(seed)
        self._new_order()
        self.pos = 0
        self.step = 0
        self._diag = ~torch.eye(self.chunk_size, dtype=torch.bool)

    def _next_ids(self) -> Tensor:
        """Positions of the next batch; a batch that crosses an epoch end continues in a new order."""
        end = self.pos + self.batch_size
        if end <= len(self.order):
            ids = self.order[self.pos:end]
            self.pos = end
            return ids
        head = self.order[self.pos:]
        self._new_order()
        self.pos = self.batch_size - len(head)
        return torch.cat([head, self.order[:self.pos]])

    def _new_order(self) -> None:
        self._order_state = self.gen.get_state()  # the order is drawn again from it on `restore`
        self.order = torch.randperm(len(self.triples), generator=self.gen)

    def state(self) -> dict:
        """Where the stream is (for checkpoints, and for a bucket left until its next visit):
        position, step, the random state and the state the current order was drawn from (a few
        kB, not the order itself)."""
        return {"count": len(self.triples), "order_gen": self._order_state.clone(), "pos": self.pos,
                "step": self.step, "gen": self.gen.get_state()}

    def restore(self, state: dict) -> None:
        """Continue the stream from a `state()`."""
        if int(state["count"]) != len(self.triples):
            raise InputError("the checkpoint's sampler state is for another split of the training triples")
        self.gen.set_state(state["order_gen"])
        self._new_order()
        self.pos, self.step = int(state["pos"]), int(state["step"])
        self.gen.set_state(state["gen"])

    def __iter__(self) -> ChunkSampler:
        return self

    def __next__(self) -> Batch:
        self.step += 1
        ids = self._next_ids()
        h, r, t = self.triples[ids].unbind(1)
        corrupt_head = self.step % 2 == 0  # DGL-KE starts with tails, then alternates
        chunks = self.batch_size // self.chunk_size
        neg = torch.randint(*(self.head_range if corrupt_head else self.neg_range), (chunks, self.neg_sample_size),
                            generator=self.gen)
        if self.num_global:  # one draw for the whole batch: most of these rows live elsewhere, and travel once
            neg[:, :self.num_global] = torch.randint(0, self.num_entities, (1, self.num_global), generator=self.gen)
        mask = None
        if self.neg_deg_sample:
            own = (h if corrupt_head else t).view(chunks, self.chunk_size)
            neg = torch.cat([own, neg], 1)
            mask = torch.ones(chunks, self.chunk_size, neg.shape[1], dtype=torch.bool)
            mask[:, :, :self.chunk_size] = self._diag
        return Batch(h, r, t, neg, corrupt_head, mask, None if self.importance is None else self.importance[ids])
