"""One epoch of a node loader; writes this trainer's seeds (and what sampled them) to OUT_DIR."""

import os
import sys

import numpy as np
import torch

import distgraph as dg

torch.set_num_threads(1)
dg.initialize()
ctx = dg.distributed.get_context()
g = dg.DistGraph("g")
rank, world = ctx.rank, ctx.num_trainers
train = dg.node_split(g.ndata["train_mask"], g.get_partition_book(), rank=rank, world_size=world)
loader = dg.DistNodeDataLoader(g, train, dg.MultiLayerNeighborSampler([3, 3]), batch_size=64, shuffle=True)
outputs = []
for epoch in range(2):
    seen = []
    for inputs, out, blocks in loader:
        assert torch.equal(blocks[-1].dst_nodes, out) and torch.equal(blocks[0].src_nodes, inputs)
        seen.append(out)
    outputs.append(torch.cat(seen))
assert torch.equal(outputs[0].sort().values, outputs[1].sort().values)
samplers = len(loader._pool.workers) if loader._pool is not None else 0
if samplers:
    first = iter(loader)
    next(first)
    try:
        next(iter(loader))
        raise AssertionError("a second live iteration must be refused")
    except dg.DistGraphError as exc:
        assert "already being iterated" in str(exc), exc
    del first  # dropping the first iteration frees the loader
    assert torch.equal(torch.cat([out for _, out, _ in loader]).sort().values, outputs[0].sort().values)
if samplers:  # a seeded loader gives the same mini-batches in sampler processes as in this process
    def flat(loader) -> list[torch.Tensor]:
        return [torch.cat([i, o, *(t.flatten() for b in blocks for t in (b.src_nodes, b.dst_nodes, b.edge_index,
                                                                          b.eids))]) for i, o, blocks in loader]

    def seeded():
        return dg.DistNodeDataLoader(g, train, dg.MultiLayerNeighborSampler([3, 3]), batch_size=64, shuffle=True,
                                     generator=torch.Generator().manual_seed(5))

    pooled = flat(seeded())
    ctx.num_samplers = 0  # loaders made from here on sample in this process
    here = flat(seeded())
    assert len(pooled) == len(here) > 1 and all(torch.equal(a, b) for a, b in zip(pooled, here))
np.save(os.path.join(sys.argv[1], f"seeds_{rank}.npy"), outputs[0].numpy())
np.save(os.path.join(sys.argv[1], f"samplers_{rank}.npy"), np.array([samplers]))
dg.barrier()
