"""Graph operations on a server: `sample` answers for the nodes its machine owns and
`find_edges` for the edges it owns, on the partition's CSC (memory-mapped, so a machine's
servers share one copy)."""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from ..arrays import add_counts
from ..kvstore.handler import MAX_NAME, expect_arrays, field
from ..kvstore.store import KVStore
from ..partition import Partition
from ..rpc.wire import WireError
from .local import sample_partition
from .weights import edge_weights

MAX_FANOUT = 1 << 20
MAX_SEED = 1 << 62  # a request's random seed lies in [0, MAX_SEED)


def graph_ops(part: Partition, store: KVStore) -> dict[str, Callable[[dict, list], tuple[dict, list]]]:
    """Handlers to register on a server's `RequestHandler`."""

    def sample(header: dict, arrays: list) -> tuple[dict, list]:
        (seeds,) = expect_arrays(arrays, 1, "sample")
        if seeds.dtype != torch.int64 or seeds.dim() != 1:
            raise WireError("'sample' seeds must be a 1-D int64 array")
        fanout = field(header, "fanout", (int, list))
        values = fanout if isinstance(fanout, list) else [fanout]
        if not all(type(k) is int and -1 <= k <= MAX_FANOUT for k in values):
            raise WireError(f"fanout must be -1 or in [0, {MAX_FANOUT}] (one, or one per edge type), got {fanout}")
        if isinstance(fanout, list):
            if len(fanout) != len(part.canonical_etypes):
                raise WireError(f"fanout lists {len(fanout)} values but the graph has "
                                f"{len(part.canonical_etypes)} edge types")
            fanout = torch.tensor(fanout, dtype=torch.int64)
        replace = field(header, "replace", bool)
        prob = field(header, "prob", list, optional=True)
        if prob is not None and (len(prob) != len(part.canonical_etypes)
                                 or not all(n is None or isinstance(n, str) and 0 < len(n) <= MAX_NAME for n in prob)):
            raise WireError(f"prob must name one tensor (or none) for each of the graph's "
                            f"{len(part.canonical_etypes)} edge types")
        seed = field(header, "seed", int, optional=True)
        if seed is not None and not 0 <= seed < MAX_SEED:
            raise WireError(f"seed must be in [0, {MAX_SEED}), got {seed}")
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        e = sample_partition(part, seeds, fanout, replace, edge_weights(store, part, prob), generator)
        typed = [] if e.etype is None else [e.etype]
        # each seed's number of edges: its edges come seed after seed, and the asker has the seeds
        counts = np.zeros(seeds.numel(), dtype=np.int64)
        add_counts(counts, e.seed_pos.numpy())
        return {}, [e.src, e.eids, torch.from_numpy(counts), *typed]

    def find_edges(header: dict, arrays: list) -> tuple[dict, list]:
        (eids,) = expect_arrays(arrays, 1, "find_edges")
        if eids.dtype != torch.int64 or eids.dim() != 1:
            raise WireError("'find_edges' edge ids must be a 1-D int64 array")
        lo, hi = part.book.edge_range(part.part_id, None)
        if eids.numel() and (int(eids.min()) < lo or int(eids.max()) >= hi):
            raise WireError(f"machine {part.part_id} owns edges [{lo}, {hi}); 'find_edges' asked for others")
        return {}, list(part.find_owned_edges(eids))

    return {"sample": sample, "find_edges": find_edges}
