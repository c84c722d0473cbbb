"""Loaders with DGL's names and arguments: `DistNodeDataLoader`, `DistEdgeDataLoader`, the
generic `DataLoader` (which of the two a sampler calls for) and `DistDataLoader` (batches of
any items through a `collate_fn`).

On a launched trainer with `--num_samplers N`, mini-batches are made by the trainer's
sampler processes; otherwise in this process. Either way they are made on the CPU, then
moved to `device` (default: the sampler's `output_device`, else the CPU) as DGL moves them:
from pinned host buffers (`pin_prefetcher`) with `non_blocking` copies, on a stream of their
own (`use_alternate_streams`), both by default when `device` is a GPU
(`distributed.transfer`); made ahead, the next batches are sampled while the copies and the
step run. `num_workers` and `queue_size` are accepted and do nothing, as in DGL, since the
number of sampler processes is `distgraph launch --num_samplers`."""

from __future__ import annotations

from typing import Callable, Iterator

import torch

from ..dist_graph import DistGraph
from ..distributed.runtime import get_context
from ..distributed.sampler_pool import SamplerPool
from ..distributed.transfer import BatchMover, check_device
from ..errors import InputError
from ..ids import as_id_tensor
from ..sampling.remote import MAX_SEED
from .batch_wire import decode
from .collate import EdgeCollator, NodeCollator
from .edge_prediction import EdgePredictionSampler
from ..sampling.neighbor import homogeneous_ids, type_map
from .neighbor_sampler import NeighborSampler, typed_batch
from .prefetch import BatchThreads, batch_threads, made_ahead


def _mover(device, sampler: NeighborSampler, pin_prefetcher: bool | None,
           use_alternate_streams: bool | None) -> BatchMover:
    """What moves a loader's batches: to `device`, else the sampler's `output_device`, else
    the CPU; pinning and a stream of their own default to whether that is a GPU (DGL's)."""
    target = check_device(device) if device is not None else sampler.output_device or torch.device("cpu")
    gpu = target.type == "cuda"
    return BatchMover(target, gpu if pin_prefetcher is None else bool(pin_prefetcher),
                      gpu if use_alternate_streams is None else bool(use_alternate_streams))


class _SeedLoader:
    """Batches of seeds (shuffled each epoch if asked), each collated into a mini-batch and
    moved by `mover`."""

    def __init__(self, collator, seeds, batch_size: int, shuffle: bool, drop_last: bool,
                 generator: torch.Generator | None, mover: BatchMover):
        self.collator, self.mover = collator, mover
        self.seeds = as_id_tensor(seeds, "seeds")
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size, self.shuffle, self.drop_last, self.generator = batch_size, shuffle, drop_last, generator
        self._threads = BatchThreads()  # this loader's batch threads, from one epoch to the next

    def __len__(self) -> int:
        n = self.seeds.numel()
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def epoch_plan(self) -> list[tuple[torch.Tensor, int]]:
        """What the next epoch samples: each batch's seeds and the seed of its random draws (so
        where a batch is sampled does not matter). Iterating the loader takes the same draws."""
        order = self.seeds[torch.randperm(self.seeds.numel(), generator=self.generator)] if self.shuffle else self.seeds
        batches = [order[i * self.batch_size:(i + 1) * self.batch_size] for i in range(len(self))]
        return list(zip(batches, torch.randint(0, MAX_SEED, (len(batches),), generator=self.generator).tolist()))

    def __iter__(self) -> Iterator:
        plan = self.epoch_plan()
        batches, rng_seeds = [b for b, _ in plan], [r for _, r in plan]
        pool = self._sampler_pool()
        if pool is not None:
            id_map = type_map(self.collator.g)
            pulled = get_context().client.remote_rows
            for header, arrays in pool.run(*self.collator.spec(), batches, rng_seeds):
                for name, n in header.get("remote_rows", {}).items():  # a sampler's pulls for this trainer
                    pulled[name] = pulled.get(name, 0) + n
                yield self.mover.move(self.present(decode(header, arrays, id_map)))
            return
        threads = self._batch_threads()
        for sent in made_ahead(self.made, plan, threads, 2 * threads, self._threads):
            yield self.mover.receive(sent)

    def collate(self, job: tuple[torch.Tensor, int]):
        """The mini-batch of one (seeds, seed of its draws) of `epoch_plan`, made in this thread."""
        return self.collator.collate(job[0], torch.Generator().manual_seed(job[1]))

    def made(self, job: tuple[torch.Tensor, int]) -> tuple:
        """`collate`, as the user sees it, sent on its way to the device (`BatchMover.send`)."""
        return self.mover.send(self.present(self.collate(job)))

    def present(self, batch: tuple) -> tuple:
        """A mini-batch as the user sees it (DGL's typed form on a heterogeneous graph)."""
        return typed_batch(batch, type_map(self.collator.g))

    def _batch_threads(self) -> int:
        """Threads that make this loader's batches ahead of the caller (`prefetch`)."""
        g = self.collator.g
        remote = isinstance(g, DistGraph) and len(g._host_partitions) + 1 < g.get_partition_book().num_partitions()
        return batch_threads(self.collator.runs_user_code, remote)

    def _sampler_pool(self) -> SamplerPool | None:
        """The trainer's sampler processes, or None to sample in this process (standalone,
        `--num_samplers 0`, or an in-memory graph)."""
        if isinstance(self.collator.g, DistGraph):
            return get_context().sampler_pool
        return None


class DistNodeDataLoader(_SeedLoader):
    """Yields (input_nodes, output_nodes, blocks) for node classification: `blocks[0].srcdata[NID]`
    are the input nodes, `blocks[-1].dstdata[NID]` the output nodes (the batch's seeds). On a
    heterogeneous graph `nids` is {node type: ids}, a batch may mix types, and the input and
    output nodes are {node type: ids} too."""

    def __init__(self, g, nids, graph_sampler: NeighborSampler, device=None, batch_size: int = 1,
                 shuffle: bool = False, drop_last: bool = False, generator: torch.Generator | None = None,
                 num_workers: int = 0, queue_size: int | None = None, pin_prefetcher: bool | None = None,
                 use_alternate_streams: bool | None = None):
        if isinstance(graph_sampler, EdgePredictionSampler):
            raise InputError("an edge-prediction sampler makes edge mini-batches: use DistEdgeDataLoader")
        seeds = homogeneous_ids(g, nids, "nids", masks=True)
        super().__init__(NodeCollator(g, graph_sampler), seeds, batch_size, shuffle, drop_last, generator,
                         _mover(device, graph_sampler, pin_prefetcher, use_alternate_streams))


class DistEdgeDataLoader(_SeedLoader):
    """Yields (input_nodes, pair_graph, blocks), or with a `negative_sampler` (input_nodes,
    pair_graph, neg_pair_graph, blocks), for link prediction over the edges `eids`. The
    link-prediction settings (`exclude`, `reverse_eids`, `reverse_etypes`, `negative_sampler`)
    are given here or by passing `as_edge_prediction_sampler(...)` as the sampler. On a
    heterogeneous graph `eids` is {edge type: ids}, and the pair graphs are typed."""

    def __init__(self, g, eids, graph_sampler, device=None, exclude: str | Callable | None = None,
                 reverse_eids: torch.Tensor | None = None, reverse_etypes: dict | None = None, negative_sampler=None,
                 batch_size: int = 1, shuffle: bool = False, drop_last: bool = False,
                 generator: torch.Generator | None = None, num_workers: int = 0, queue_size: int | None = None,
                 pin_prefetcher: bool | None = None, use_alternate_streams: bool | None = None):
        if isinstance(graph_sampler, EdgePredictionSampler):
            if any(x is not None for x in (exclude, reverse_eids, reverse_etypes, negative_sampler)):
                raise InputError("give exclude/reverse_eids/negative_sampler to as_edge_prediction_sampler or to "
                                 "the loader, not both")
            edge_sampler = graph_sampler
        else:
            edge_sampler = EdgePredictionSampler(graph_sampler, exclude, reverse_eids, reverse_etypes, negative_sampler)
        seeds = homogeneous_ids(g, eids, "eids", "edge", masks=True)
        super().__init__(EdgeCollator(g, edge_sampler), seeds, batch_size, shuffle, drop_last, generator,
                         _mover(device, edge_sampler.sampler, pin_prefetcher, use_alternate_streams))


def DataLoader(graph, indices, graph_sampler, device=None, use_ddp: bool = False, ddp_seed: int = 0,  # noqa: N802
               batch_size: int = 1, drop_last: bool = False, shuffle: bool = False, use_prefetch_thread=None,
               use_alternate_streams=None, pin_prefetcher=None, use_uva: bool = False, gpu_cache=None,
               num_workers: int = 0, generator: torch.Generator | None = None):
    """DGL's generic `DataLoader`: an edge loader for an edge-prediction sampler, else a node
    loader. With `use_ddp`, each torch.distributed rank takes its own contiguous share of
    `indices` (DGL's takes a fresh share each epoch). Batches are always made ahead of the
    step (`use_prefetch_thread` is accepted); `use_uva` and `gpu_cache` are refused."""
    if use_uva:
        raise InputError("use_uva samples on the GPU, and graphs are sampled on the CPU here (in C, and by the "
                         "servers of other machines): leave use_uva False and pass device= to move the batches")
    if gpu_cache:
        raise InputError("gpu_cache needs HugeCTR's GPU cache, which distgraph does not use: leave gpu_cache None "
                         "(features come with each batch, moved to device=)")
    if use_ddp:
        import torch.distributed as tdist

        ids = as_id_tensor(indices, "indices")
        r, w = tdist.get_rank(), tdist.get_world_size()
        indices = ids[r * ids.numel() // w:(r + 1) * ids.numel() // w]
    loader = DistEdgeDataLoader if isinstance(graph_sampler, EdgePredictionSampler) else DistNodeDataLoader
    return loader(graph, indices, graph_sampler, device, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                  generator=generator, pin_prefetcher=pin_prefetcher, use_alternate_streams=use_alternate_streams)


NodeDataLoader = DistNodeDataLoader  # DGL 0.x's names
EdgeDataLoader = DistEdgeDataLoader


class _CollateFn:
    """A `collate_fn` over a batch of items, as `_SeedLoader` collates seeds."""

    def __init__(self, fn: Callable | None):
        self.g, self.fn = None, fn

    def collate(self, items: torch.Tensor, generator=None):
        values = items.tolist()
        return self.fn(values) if self.fn is not None else values


class DistDataLoader(_SeedLoader):
    """DGL's `DistDataLoader`: batches of `dataset` (ids: a tensor, an array or a list) given to
    `collate_fn` as a list of ints, in this process. Unlike DGL's, it has a length, batches come
    in order, and it can be iterated again (each time reshuffled with `shuffle`)."""

    def __init__(self, dataset, batch_size: int, shuffle: bool = False, collate_fn: Callable | None = None,
                 drop_last: bool = False, queue_size: int | None = None):
        super().__init__(_CollateFn(collate_fn), dataset, batch_size, shuffle, drop_last, None, BatchMover(None))

    present = staticmethod(lambda batch: batch)  # whatever collate_fn made

    def _batch_threads(self) -> int:
        return 0  # the user's collate_fn runs in the calling thread, when a batch is asked for
