"""Each trainer gives the graph a DistTensor of edge weights (zero on every third edge) and a
mask at run time, then loads an epoch with each; writes the sampled edge ids of every block,
per loader, to OUT_DIR (whatever made the batches: this process or its sampler processes)."""

import os
import sys

import numpy as np
import torch

import distgraph as dgl

torch.set_num_threads(1)
dgl.distributed.initialize()
g = dgl.distributed.DistGraph("g")
policy = g.get_edge_partition_policy()
eids = torch.arange(g.num_edges())
g.edata["w"] = dgl.distributed.DistTensor((g.num_edges(),), torch.float32, "w", part_policy=policy)
g.edata["keep"] = dgl.distributed.DistTensor((g.num_edges(),), torch.bool, "keep", part_policy=policy)
if g.rank() == 0:
    g.edata["w"][eids] = torch.where(eids % 3 == 0, 0.0, 1.0 + eids % 5)
    g.edata["keep"][eids] = eids % 2 == 1
g.barrier()
train = dgl.distributed.node_split(g.ndata["train_mask"])
for name, sampler in (("prob", dgl.dataloading.NeighborSampler([4, 4], prob="w")),
                      ("mask", dgl.dataloading.NeighborSampler([4, 4], mask="keep"))):
    loader = dgl.dataloading.DistNodeDataLoader(g, train, sampler, batch_size=100, shuffle=True)
    drawn = torch.cat([b.eids for _, _, blocks in loader for b in blocks])
    np.save(os.path.join(sys.argv[1], f"{name}_{g.rank()}.npy"), drawn.numpy())
g.barrier()
