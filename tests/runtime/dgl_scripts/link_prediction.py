"""Unsupervised GraphSAGE in the structure of DGL's distributed link-prediction example
(examples/pytorch/graphsage/dist/train_dist_unsupervised.py): `edge_split`,
`negative_sampler.Uniform`, `DistEdgeDataLoader` with `exclude="reverse_id"`, pair graphs
scored with `apply_edges(fn.u_dot_v(...))` in a `local_scope`. Held-out edges are scored at
the end (AUC). Only the import lines differ from a DGL script."""

import contextlib

import torch as th
import torch.nn as nn
import torch.nn.functional as F

import distgraph as dgl
import distgraph.function as fn
import distgraph.nn.pytorch as dglnn
from common import auc, parse_args, result


class SAGE(nn.Module):
    def __init__(self, in_feats, n_hidden, n_layers, activation):
        super().__init__()
        self.layers = nn.ModuleList([dglnn.SAGEConv(in_feats if i == 0 else n_hidden, n_hidden, "mean")
                                     for i in range(n_layers)])
        self.activation = activation

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = self.activation(h)
        return h


class CrossEntropyLoss(nn.Module):
    def forward(self, block_outputs, pos_graph, neg_graph):
        with pos_graph.local_scope():
            pos_graph.ndata["h"] = block_outputs
            pos_graph.apply_edges(fn.u_dot_v("h", "h", "score"))
            pos_score = pos_graph.edata["score"]
        with neg_graph.local_scope():
            neg_graph.ndata["h"] = block_outputs
            neg_graph.apply_edges(fn.u_dot_v("h", "h", "score"))
            neg_score = neg_graph.edata["score"]
        score = th.cat([pos_score, neg_score])
        label = th.cat([th.ones_like(pos_score), th.zeros_like(neg_score)]).long()
        return F.binary_cross_entropy_with_logits(score, label.float())


def scores(model, g, input_nodes, pair_graph, blocks):
    h = model(blocks, g.ndata["feat"][input_nodes])
    with pair_graph.local_scope():
        pair_graph.ndata["h"] = h
        pair_graph.apply_edges(fn.u_dot_v("h", "h", "score"))
        return pair_graph.edata["score"].flatten()


def main():
    args = parse_args([("--num_negs", int, 2)])
    th.manual_seed(0)
    dgl.distributed.initialize(args.ip_config)
    if not args.standalone:
        th.distributed.init_process_group(backend="gloo")
    g = dgl.distributed.DistGraph(args.graph_name, part_config=args.part_config)
    held_out = th.rand(g.num_edges(), generator=th.Generator().manual_seed(0)) < 0.1
    train_eids = dgl.distributed.edge_split(~held_out, g.get_partition_book(), force_even=True)
    test_eids = dgl.distributed.edge_split(held_out, g.get_partition_book(), force_even=True)
    print("rank {}: {} training edges of {}".format(g.rank(), len(train_eids), g.num_edges()))

    neg_sampler = dgl.dataloading.negative_sampler.Uniform(args.num_negs)
    sampler = dgl.dataloading.NeighborSampler([10, 10])
    dataloader = dgl.dataloading.DistEdgeDataLoader(
        g, train_eids, sampler, negative_sampler=neg_sampler, exclude="reverse_id",
        reverse_eids=th.arange(g.num_edges()), batch_size=args.batch_size, shuffle=True, drop_last=False)
    model = SAGE(g.ndata["feat"].shape[1], 32, 2, F.relu)
    if not args.standalone:
        model = th.nn.parallel.DistributedDataParallel(model)
    loss_fcn = CrossEntropyLoss()
    optimizer = th.optim.Adam(model.parameters(), lr=args.lr)
    join = model.join() if not args.standalone else contextlib.nullcontext()
    with join:
        for epoch in range(args.num_epochs):
            for step, (input_nodes, pos_graph, neg_graph, blocks) in enumerate(dataloader):
                assert th.equal(pos_graph.ndata[dgl.NID], blocks[-1].dstdata[dgl.NID])
                assert pos_graph.num_edges() * args.num_negs == neg_graph.num_edges()
                pos_graph, neg_graph = pos_graph.to("cpu"), neg_graph.to("cpu")
                blocks = [block.to("cpu") for block in blocks]
                batch_pred = model(blocks, g.ndata["feat"][input_nodes])
                loss = loss_fcn(batch_pred, pos_graph, neg_graph)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print("epoch {} loss {:.4f}".format(epoch, loss.item()))
    module = model.module if not args.standalone else model
    pos, neg = [], []
    test_loader = dgl.dataloading.DistEdgeDataLoader(
        g, test_eids, sampler, negative_sampler=dgl.dataloading.negative_sampler.Uniform(1), exclude="self",
        batch_size=1000)
    with th.no_grad():
        for input_nodes, pos_graph, neg_graph, blocks in test_loader:
            pos.append(scores(module, g, input_nodes, pos_graph, blocks))
            neg.append(scores(module, g, input_nodes, neg_graph, blocks))
    result(rank=g.rank(), auc=f"{auc(th.cat(pos), th.cat(neg)):.4f}", test_edges=len(test_eids))
    g.barrier()


if __name__ == "__main__":
    main()
