"""The end of DGL's unsupervised distributed GraphSAGE example
(examples/pytorch/graphsage/dist/train_dist_unsupervised.py) after a short link-prediction
training: layer-wise inference over every node with `NeighborSampler([-1])` into persistent
`DistTensor`s, `g._client.barrier()`, and `th.save(pred, "emb.pt")` of the `DistTensor` by
trainer 0. Then every trainer loads `emb.pt` back inside the job (the same tensor, read by
name) and scores the embeddings with a logistic regression. Only the import lines differ from
a DGL script."""

import contextlib
import os

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F

import distgraph as dgl
import distgraph.function as fn
import distgraph.nn.pytorch as dglnn
from common import parse_args, result


class DistSAGE(nn.Module):
    def __init__(self, in_feats, n_hidden, n_layers, activation):
        super().__init__()
        self.n_hidden = n_hidden
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

    def inference(self, g, x, batch_size):
        nodes = dgl.distributed.node_split(np.arange(g.num_nodes()), g.get_partition_book(), force_even=True)
        y = dgl.distributed.DistTensor((g.num_nodes(), self.n_hidden), th.float32, "h", persistent=True)
        for i, layer in enumerate(self.layers):
            if i == len(self.layers) - 1:
                y = dgl.distributed.DistTensor((g.num_nodes(), self.n_hidden), th.float32, "h_last", persistent=True)
            sampler = dgl.dataloading.NeighborSampler([-1])
            dataloader = dgl.dataloading.DistNodeDataLoader(g, nodes, sampler, batch_size=batch_size, shuffle=False,
                                                            drop_last=False)
            for input_nodes, output_nodes, blocks in dataloader:
                block = blocks[0].to("cpu")
                h = x[input_nodes]
                h_dst = h[: block.number_of_dst_nodes()]
                h = layer(block, (h, h_dst))
                if i != len(self.layers) - 1:
                    h = self.activation(h)
                y[output_nodes] = h.cpu()
            x = y
            g.barrier()
        return y


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


def compute_acc(emb, labels, train_nids, val_nids):
    """A logistic regression on the standardised embeddings (in torch: no sklearn here)."""
    emb = emb[np.arange(labels.shape[0])]
    emb = (emb - emb.mean(0, keepdim=True)) / emb.std(0, keepdim=True)
    lr = nn.Linear(emb.shape[1], int(labels.max()) + 1)
    opt = th.optim.Adam(lr.parameters(), lr=0.05)
    for _ in range(300):
        loss = F.cross_entropy(lr(emb[train_nids]), labels[train_nids])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float((lr(emb[val_nids]).argmax(1) == labels[val_nids]).float().mean())


def main():
    args = parse_args()
    th.manual_seed(0)
    dgl.distributed.initialize(args.ip_config)
    if not args.standalone:
        th.distributed.init_process_group(backend="gloo")
    g = dgl.distributed.DistGraph(args.graph_name, part_config=args.part_config)
    train_eids = dgl.distributed.edge_split(th.ones((g.num_edges(),), dtype=th.bool), g.get_partition_book(),
                                            force_even=True)
    global_train_nid = th.LongTensor(np.nonzero(g.ndata["train_mask"][np.arange(g.num_nodes())])).squeeze()
    global_valid_nid = th.LongTensor(np.nonzero(g.ndata["val_mask"][np.arange(g.num_nodes())])).squeeze()
    labels = g.ndata["label"][np.arange(g.num_nodes())]

    sampler = dgl.dataloading.NeighborSampler([10, 10])
    dataloader = dgl.dataloading.DistEdgeDataLoader(
        g, train_eids, sampler, negative_sampler=dgl.dataloading.negative_sampler.Uniform(1),
        batch_size=args.batch_size, shuffle=True, drop_last=False)
    model = DistSAGE(g.ndata["feat"].shape[1], 32, 2, F.relu)
    if not args.standalone:
        model = th.nn.parallel.DistributedDataParallel(model)
    loss_fcn = CrossEntropyLoss()
    optimizer = th.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.num_epochs):
        with model.join() if not args.standalone else contextlib.nullcontext():
            for step, (input_nodes, pos_graph, neg_graph, blocks) in enumerate(dataloader):
                batch_pred = model(blocks, g.ndata["feat"][input_nodes])
                loss = loss_fcn(batch_pred, pos_graph, neg_graph)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        print("epoch {} loss {:.4f}".format(epoch, loss.item()))

    module = model if args.standalone else model.module
    module.eval()
    with th.no_grad():
        pred = module.inference(g, g.ndata["feat"], 500)
    if not args.standalone:
        th.distributed.barrier()
    path = os.path.join(args.out_dir, "emb.pt")
    if not args.standalone:
        g._client.barrier()
        if g.rank() == 0:
            th.save(pred, path)
    else:
        th.save(pred, path)
    g._client.barrier()

    loaded = th.load(path, weights_only=False)  # a reference: the job's tensor, by name
    same = bool(th.equal(loaded[np.arange(g.num_nodes())], pred[np.arange(g.num_nodes())]))
    with th.enable_grad():
        acc = compute_acc(loaded, labels, global_train_nid, global_valid_nid)
    result(rank=g.rank(), emb_acc=f"{acc:.4f}", same_tensor=int(same and loaded.name == "h_last"),
           file_bytes=os.path.getsize(path))
    g.barrier()


if __name__ == "__main__":
    main()
