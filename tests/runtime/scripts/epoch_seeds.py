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
pool = ctx.sampler_pool
samplers = len(pool.workers) if pool is not None else 0


def flat(batches) -> list[torch.Tensor]:
    return [torch.cat([i, o, *(t.flatten() for b in blocks for t in (b.src_nodes, b.dst_nodes, b.edge_index,
                                                                      b.eids))]) for i, o, blocks in batches]


def seeded(fanouts=(3, 3), batch_size=64):
    return dg.DistNodeDataLoader(g, train, dg.MultiLayerNeighborSampler(list(fanouts)), batch_size=batch_size,
                                 shuffle=True, generator=torch.Generator().manual_seed(5))


if samplers:  # one pool for the trainer: new loaders, even with other settings, start no process
    pids = [w.proc.pid for w in pool.workers]
    alone = {f: flat(seeded(f)) for f in ((3, 3), (2, 5))}
    # two live iterations (of two loaders with different settings) interleave, each getting its own batches
    a, b = iter(seeded((3, 3))), iter(seeded((2, 5)))
    got = {(3, 3): [], (2, 5): []}
    for x, y in zip(a, b):
        got[(3, 3)].append(x)
        got[(2, 5)].append(y)
    got[(3, 3)] += list(a)
    got[(2, 5)] += list(b)
    assert all(len(flat(got[f])) == len(alone[f]) and all(torch.equal(p, q) for p, q in zip(flat(got[f]), alone[f]))
               for f in alone)
    first = iter(loader)
    next(first)
    del first  # an abandoned iteration: its batches still on their way are dropped
    assert torch.equal(torch.cat([out for _, out, _ in loader]).sort().values, outputs[0].sort().values)
    assert [w.proc.pid for w in pool.workers] == pids and all(w.proc.poll() is None for w in pool.workers)
    # a seeded loader gives the same mini-batches in sampler processes as in this process
    ctx.sampler_pool = None  # loaders sample in this process from here on
    here = flat(seeded())
    ctx.sampler_pool = pool
    assert len(alone[(3, 3)]) == len(here) > 1 and all(torch.equal(p, q) for p, q in zip(alone[(3, 3)], here))
np.save(os.path.join(sys.argv[1], f"seeds_{rank}.npy"), outputs[0].numpy())
np.save(os.path.join(sys.argv[1], f"samplers_{rank}.npy"), np.array([samplers]))
dg.barrier()
