"""One epoch of a typed node loader over {"paper": training papers, "author": all authors};
writes this trainer's seeds of each type to OUT_DIR."""

import os
import sys

import numpy as np
import torch

import distgraph as dgl

torch.set_num_threads(1)
dgl.distributed.initialize()
g = dgl.distributed.DistGraph("mag")
rank = g.rank()
train = {"paper": dgl.distributed.node_split(g.nodes["paper"].data["train_mask"], ntype="paper"),
         "author": dgl.distributed.node_split(torch.arange(g.num_nodes("author")), ntype="author")}
sampler = dgl.dataloading.NeighborSampler([{c: 2 for c in g.canonical_etypes}, 3], prefetch_node_feats=["feat"])
loader = dgl.dataloading.DistNodeDataLoader(g, train, sampler, batch_size=64, shuffle=True)
seen = {t: [] for t in train}
for input_nodes, output_nodes, blocks in loader:
    assert torch.equal(blocks[0].srcdata["feat"]["paper"], g.nodes["paper"].data["feat"][input_nodes["paper"]])
    for t in train:
        seen[t].append(output_nodes[t])
for t, ids in seen.items():
    np.save(os.path.join(sys.argv[1], f"{t}_{rank}.npy"), torch.cat(ids).numpy())
g.barrier()
