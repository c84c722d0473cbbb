"""The training script of the DistDGL slides, in DGL's idiom: the only change from a DGL
script is the import line (`import dgl` -> `import distgraph as dgl`, and the same for
`dgl.nn.pytorch`). A sampler class of the script's own calls `sample_neighbors` and
`to_block` for a `DistDataLoader`; node features are joined by a `DistEmbedding` trained
with `SparseAdagrad`; predictions go through a persistent `DistTensor`; a second
evaluation uses `NodeDataLoader` with `MultiLayerNeighborSampler`."""

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F

import distgraph as dgl
import distgraph.nn.pytorch as dglnn
from common import parse_args, result


class NeighborSampler(object):
    def __init__(self, g, fanouts, sample_neighbors):
        self.g = g
        self.fanouts = fanouts
        self.sample_neighbors = sample_neighbors

    def sample_blocks(self, seeds):
        seeds = th.LongTensor(np.asarray(seeds))
        blocks = []
        for fanout in self.fanouts:
            frontier = self.sample_neighbors(self.g, seeds, fanout, replace=True)
            block = dgl.to_block(frontier, seeds)
            seeds = block.srcdata[dgl.NID]
            blocks.insert(0, block)
        return blocks


class SAGE(nn.Module):
    def __init__(self, in_feats, n_hidden, n_classes, n_layers, activation, dropout):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers.append(dglnn.SAGEConv(in_feats, n_hidden, "mean"))
        for _ in range(1, n_layers - 1):
            self.layers.append(dglnn.SAGEConv(n_hidden, n_hidden, "mean"))
        self.layers.append(dglnn.SAGEConv(n_hidden, n_classes, "mean"))
        self.dropout = nn.Dropout(dropout)
        self.activation = activation

    def forward(self, blocks, x):
        h = x
        for l, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if l != len(self.layers) - 1:
                h = self.activation(h)
                h = self.dropout(h)
        return h


def initializer(shape, dtype):
    arr = th.zeros(shape, dtype=dtype)
    arr.uniform_(-1, 1)
    return arr


def main():
    args = parse_args()
    th.manual_seed(0)
    dgl.distributed.initialize(args.ip_config)
    if not args.standalone:
        th.distributed.init_process_group(backend="gloo")
    g = dgl.distributed.DistGraph(args.graph_name, part_config=args.part_config)
    pb = g.get_partition_book()
    train_nid = dgl.distributed.node_split(g.ndata["train_mask"], pb, force_even=True)
    val_nid = dgl.distributed.node_split(g.ndata["val_mask"], pb, force_even=True)
    labels = g.ndata["label"][np.arange(g.num_nodes())]
    n_classes = len(th.unique(labels))
    in_feats = g.ndata["feat"].shape[1]
    print("part {}, train: {}, val: {}, clients: {}".format(g.rank(), len(train_nid), len(val_nid),
                                                           dgl.distributed.get_num_client()))

    sampler = NeighborSampler(g, [10, 25], dgl.distributed.sample_neighbors)
    dataloader = dgl.distributed.DistDataLoader(dataset=train_nid.numpy(), batch_size=args.batch_size,
                                                collate_fn=sampler.sample_blocks, shuffle=True, drop_last=False)
    emb = dgl.distributed.DistEmbedding(g.num_nodes(), 8, name="node_emb", init_func=initializer)
    emb_optimizer = dgl.distributed.optim.SparseAdagrad([emb], lr=0.05)
    model = SAGE(in_feats + 8, 32, n_classes, 2, F.relu, 0.2)
    if not args.standalone:
        model = th.nn.parallel.DistributedDataParallel(model)
    optimizer = th.optim.Adam(model.parameters(), lr=args.lr)
    loss_fcn = nn.CrossEntropyLoss()

    def inputs(nids):
        return th.cat([g.ndata["feat"][nids], emb(nids)], 1)

    before = emb.weight[th.arange(g.num_nodes())].clone()
    for epoch in range(args.num_epochs):
        for step, blocks in enumerate(dataloader):
            batch_inputs = inputs(blocks[0].srcdata[dgl.NID])
            batch_labels = g.ndata["label"][blocks[-1].dstdata[dgl.NID]]
            batch_pred = model(blocks, batch_inputs)
            loss = loss_fcn(batch_pred, batch_labels)
            optimizer.zero_grad()
            emb_optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            emb_optimizer.step()
        print("epoch {} loss {:.4f}".format(epoch, loss.item()))
    g.barrier()
    moved = float((emb.weight[th.arange(g.num_nodes())] - before).abs().sum())

    # evaluation 1: predictions into a persistent DistTensor, read back by every trainer
    model.eval()
    pred = dgl.distributed.DistTensor((g.num_nodes(), n_classes), th.float32, "pred", persistent=True)
    eval_sampler = dgl.dataloading.MultiLayerNeighborSampler([25, 25])
    eval_loader = dgl.dataloading.NodeDataLoader(g, val_nid, eval_sampler, batch_size=1000)
    with th.no_grad():
        for input_nodes, seeds, blocks in eval_loader:
            pred[seeds] = model(blocks, inputs(input_nodes))
    g.barrier()
    all_val = th.nonzero(g.ndata["val_mask"][np.arange(g.num_nodes())]).flatten()
    val_acc = float((pred[all_val].argmax(1) == labels[all_val]).float().mean())

    # evaluation 2: the script's own sampler, on this trainer's share
    correct = total = 0
    with th.no_grad():
        for blocks in dgl.distributed.DistDataLoader(dataset=val_nid, batch_size=1000,
                                                     collate_fn=sampler.sample_blocks):
            out = model(blocks, inputs(blocks[0].srcdata[dgl.NID])).argmax(1)
            correct += int((out == g.ndata["label"][blocks[-1].dstdata[dgl.NID]]).sum())
            total += blocks[-1].number_of_dst_nodes()
    result(rank=g.rank(), val_acc=f"{val_acc:.4f}", own_sampler_acc=f"{correct / max(total, 1):.4f}",
           emb_moved=f"{moved:.3f}", train=len(train_nid))
    g.barrier()


if __name__ == "__main__":
    main()
