"""RGCN entity classification in the structure of DGL's distributed RGCN example
(examples/pytorch/rgcn/experimental/entity_classify_dist.py): each layer is a
`HeteroGraphConv` of per-relation `GraphConv(norm="right", weight=False, bias=False)` fed
weights from a `WeightBasis`, on `block.local_var()`; featureless node types enter through
`DistEmbedding`s (partitioned by `g.get_node_partition_policy`) trained with
`distributed.optim.SparseAdam`, papers through a projection of their features; predictions
go into a persistent `DistTensor` read back by every trainer. Only the import lines differ
from a DGL script."""

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F

import distgraph as dgl
from distgraph import DGLGraph, nn as dglnn  # noqa: F401 (DGL's script imports DGLGraph too)
from common import parse_args, result


class RelGraphConvLayer(nn.Module):
    def __init__(self, in_feat, out_feat, rel_names, num_bases, *, activation=None, self_loop=False, dropout=0.0):
        super().__init__()
        self.rel_names = rel_names
        self.activation = activation
        self.self_loop = self_loop
        self.conv = dglnn.HeteroGraphConv(
            {rel: dglnn.GraphConv(in_feat, out_feat, norm="right", weight=False, bias=False) for rel in rel_names})
        self.use_basis = num_bases < len(self.rel_names)
        if self.use_basis:
            self.basis = dglnn.WeightBasis((in_feat, out_feat), num_bases, len(self.rel_names))
        else:
            self.weight = nn.Parameter(th.Tensor(len(self.rel_names), in_feat, out_feat))
            nn.init.xavier_uniform_(self.weight, gain=nn.init.calculate_gain("relu"))
        self.h_bias = nn.Parameter(th.zeros(out_feat))
        if self.self_loop:
            self.loop_weight = nn.Parameter(th.Tensor(in_feat, out_feat))
            nn.init.xavier_uniform_(self.loop_weight, gain=nn.init.calculate_gain("relu"))
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, inputs):
        g = g.local_var()
        weight = self.basis() if self.use_basis else self.weight
        wdict = {self.rel_names[i]: {"weight": w.squeeze(0)} for i, w in enumerate(th.split(weight, 1, dim=0))}
        if g.is_block:
            inputs_dst = {k: v[: g.number_of_dst_nodes(k)] for k, v in inputs.items()}
        else:
            inputs_dst = inputs
        hs = self.conv(g, inputs, mod_kwargs=wdict)

        def _apply(ntype, h):
            if self.self_loop:
                h = h + th.matmul(inputs_dst[ntype], self.loop_weight)
            h = h + self.h_bias
            if self.activation:
                h = self.activation(h)
            return self.dropout(h)

        return {ntype: _apply(ntype, h) for ntype, h in hs.items()}


class EntityClassify(nn.Module):
    def __init__(self, h_dim, out_dim, rel_names, num_bases, dropout):
        super().__init__()
        self.layers = nn.ModuleList([
            RelGraphConvLayer(h_dim, h_dim, rel_names, num_bases, activation=F.relu, self_loop=True, dropout=dropout),
            RelGraphConvLayer(h_dim, out_dim, rel_names, num_bases, self_loop=True)])

    def forward(self, blocks, feats):
        h = feats
        for layer, block in zip(self.layers, blocks):
            h = layer(block.to("cpu"), h)
        return h


def init_emb(shape, dtype):
    arr = th.zeros(shape, dtype=dtype)
    nn.init.uniform_(arr, -1.0, 1.0)
    return arr


class DistEmbedLayer(nn.Module):
    def __init__(self, g, embed_size, feat_name="feat", embed_name="node_emb"):
        super().__init__()
        self.g = g
        self.feat_name = feat_name
        self.node_projs = nn.ModuleDict()
        self.node_embeds = {}
        for ntype in g.ntypes:
            if feat_name in g.nodes[ntype].data:
                self.node_projs[ntype] = nn.Linear(g.nodes[ntype].data[feat_name].shape[1], embed_size)
                nn.init.xavier_uniform_(self.node_projs[ntype].weight)
            else:
                part_policy = g.get_node_partition_policy(ntype)
                self.node_embeds[ntype] = dgl.distributed.DistEmbedding(
                    g.num_nodes(ntype), embed_size, embed_name + "_" + ntype, init_emb, part_policy)

    def forward(self, node_ids):
        embeds = {}
        for ntype in node_ids:
            if self.feat_name in self.g.nodes[ntype].data:
                embeds[ntype] = self.node_projs[ntype](self.g.nodes[ntype].data[self.feat_name][node_ids[ntype]])
            else:
                embeds[ntype] = self.node_embeds[ntype](node_ids[ntype])
        return embeds


def main():
    args = parse_args([("--n_bases", int, 2), ("--sparse_lr", float, 0.06), ("--fanout", str, "10,10")])
    th.manual_seed(0)
    dgl.distributed.initialize(args.ip_config)
    if not args.standalone:
        th.distributed.init_process_group(backend="gloo")
    g = dgl.distributed.DistGraph(args.graph_name, part_config=args.part_config)
    pb = g.get_partition_book()
    train_nid = dgl.distributed.node_split(g.nodes["paper"].data["train_mask"], pb, ntype="paper", force_even=True)
    val_nid = dgl.distributed.node_split(g.nodes["paper"].data["val_mask"], pb, ntype="paper", force_even=True)
    labels = g.nodes["paper"].data["label"][np.arange(g.num_nodes("paper"))]
    all_val_nid = th.LongTensor(np.nonzero(g.nodes["paper"].data["val_mask"][np.arange(g.num_nodes("paper"))])).squeeze()
    n_classes = len(th.unique(labels[labels >= 0]))

    sampler = dgl.dataloading.MultiLayerNeighborSampler([int(f) for f in args.fanout.split(",")])
    dataloader = dgl.dataloading.DistNodeDataLoader(g, {"paper": train_nid}, sampler, batch_size=args.batch_size,
                                                    shuffle=True, drop_last=False)
    valid_dataloader = dgl.dataloading.DistNodeDataLoader(g, {"paper": val_nid}, sampler, batch_size=500)
    embed_layer = DistEmbedLayer(g, 32)
    model = EntityClassify(32, n_classes, g.etypes, args.n_bases, 0.2)
    if not args.standalone:
        model = th.nn.parallel.DistributedDataParallel(model)
        embed_layer = th.nn.parallel.DistributedDataParallel(embed_layer)  # its projection is dense
    node_embeds = (embed_layer if args.standalone else embed_layer.module).node_embeds
    emb_optimizer = dgl.distributed.optim.SparseAdam(list(node_embeds.values()), lr=args.sparse_lr)
    dense_params = list(model.parameters()) + list(embed_layer.parameters())
    optimizer = th.optim.Adam(dense_params, lr=args.lr)

    for epoch in range(args.num_epochs):
        for step, (input_nodes, seeds, blocks) in enumerate(dataloader):
            feats = embed_layer(input_nodes)
            logits = model(blocks, feats)
            assert len(logits) == 1
            loss = F.cross_entropy(logits["paper"], labels[seeds["paper"]])
            optimizer.zero_grad()
            emb_optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            emb_optimizer.step()
        print("epoch {} loss {:.4f}".format(epoch, loss.item()))

    global_results = dgl.distributed.DistTensor(labels.shape, th.long, "results", persistent=True)
    model.eval()
    with th.no_grad():
        for input_nodes, seeds, blocks in valid_dataloader:
            logits = model(blocks, embed_layer(input_nodes))["paper"]
            global_results[seeds["paper"]] = logits.argmax(dim=1)
    g.barrier()
    val_acc = float((global_results[all_val_nid] == labels[all_val_nid]).float().mean())
    result(rank=g.rank(), val_acc=f"{val_acc:.4f}", classes=n_classes)
    g.barrier()


if __name__ == "__main__":
    main()
