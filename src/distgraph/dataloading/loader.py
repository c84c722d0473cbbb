"""`DistNodeDataLoader` / `DistEdgeDataLoader`: iterate mini-batches over seed nodes or edges."""

from __future__ import annotations

from typing import Iterator

import torch

from ..dist_graph import DistGraph
from ..distributed.runtime import get_context
from ..graph import as_id_tensor
from ..sampling.remote import MAX_SEED
from .collate import EdgeCollator, NodeCollator
from .neighbor_sampler import MultiLayerNeighborSampler
from .workers import SamplerPool


class _SeedLoader:
    """Batches of seeds (shuffled each epoch if asked), each collated into a mini-batch."""

    def __init__(self, collator, seeds, batch_size: int, shuffle: bool, drop_last: bool,
                 generator: torch.Generator | None):
        self.collator = collator
        self.seeds = as_id_tensor(seeds, "seeds")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size, self.shuffle, self.drop_last, self.generator = batch_size, shuffle, drop_last, generator

    def __len__(self) -> int:
        n = self.seeds.numel()
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator:
        order = self.seeds[torch.randperm(self.seeds.numel(), generator=self.generator)] if self.shuffle else self.seeds
        batches = [order[i * self.batch_size:(i + 1) * self.batch_size] for i in range(len(self))]
        # one seed per batch for its random draws, so where it is sampled does not matter
        rng_seeds = torch.randint(0, MAX_SEED, (len(batches),), generator=self.generator).tolist()
        pool = self._sampler_pool()
        if pool is not None:
            yield from pool.run(self.collator.spec(), batches, rng_seeds)
            return
        for seeds, rng_seed in zip(batches, rng_seeds):
            yield self.collator.collate(seeds, torch.Generator().manual_seed(rng_seed))

    def _sampler_pool(self) -> SamplerPool | None:
        """The trainer's sampler processes, or None to sample in this process (standalone,
        `--num_samplers 0`, or an in-memory graph)."""
        if isinstance(self.collator.g, DistGraph):
            return get_context().sampler_pool
        return None


class DistNodeDataLoader(_SeedLoader):
    """Yields (input_nodes, output_nodes, blocks) for node classification."""

    def __init__(self, g, nids, graph_sampler: MultiLayerNeighborSampler, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, generator: torch.Generator | None = None):
        super().__init__(NodeCollator(g, graph_sampler), nids, batch_size, shuffle, drop_last, generator)


class DistEdgeDataLoader(_SeedLoader):
    """Yields (input_nodes, pos_pairs, neg_pairs, blocks) for link prediction."""

    def __init__(self, g, eids, graph_sampler: MultiLayerNeighborSampler, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, num_negs: int = 1, exclude: str | None = "reverse",
                 generator: torch.Generator | None = None):
        collator = EdgeCollator(g, graph_sampler, num_negs, exclude)
        super().__init__(collator, eids, batch_size, shuffle, drop_last, generator)


NodeDataLoader = DistNodeDataLoader
EdgeDataLoader = DistEdgeDataLoader
