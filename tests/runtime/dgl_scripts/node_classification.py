"""GraphSAGE node classification in the structure of DGL's distributed example
(examples/distributed/graphsage/node_classification.py): `NeighborSampler`,
`DistNodeDataLoader`, DDP under `model.join()`, mini-batch ids read from the blocks, and
layer-wise inference over every node into persistent `DistTensor`s with `NeighborSampler([-1])`.
Only the import lines differ from a DGL script."""

import contextlib

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F

import distgraph as dgl
import distgraph.nn.pytorch as dglnn
from common import parse_args, result


class DistSAGE(nn.Module):
    def __init__(self, in_feats, n_hidden, n_classes, n_layers, activation, dropout):
        super().__init__()
        self.n_layers = n_layers
        self.n_hidden = n_hidden
        self.n_classes = n_classes
        self.layers = nn.ModuleList()
        self.layers.append(dglnn.SAGEConv(in_feats, n_hidden, "mean"))
        for _ in range(1, n_layers - 1):
            self.layers.append(dglnn.SAGEConv(n_hidden, n_hidden, "mean"))
        self.layers.append(dglnn.SAGEConv(n_hidden, n_classes, "mean"))
        self.dropout = nn.Dropout(dropout)
        self.activation = activation

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = self.activation(h)
                h = self.dropout(h)
        return h

    def inference(self, g, x, batch_size, device):
        """Layer by layer over all nodes: each trainer computes its share, kept in a DistTensor."""
        nodes = dgl.distributed.node_split(np.arange(g.num_nodes()), g.get_partition_book(), force_even=True)
        y = dgl.distributed.DistTensor((g.num_nodes(), self.n_hidden), th.float32, "h", persistent=True)
        for i, layer in enumerate(self.layers):
            if i == len(self.layers) - 1:
                y = dgl.distributed.DistTensor((g.num_nodes(), self.n_classes), th.float32, "h_last",
                                               persistent=True)
            sampler = dgl.dataloading.NeighborSampler([-1])
            dataloader = dgl.dataloading.DistNodeDataLoader(g, nodes, sampler, batch_size=batch_size, shuffle=False,
                                                            drop_last=False)
            for input_nodes, output_nodes, blocks in dataloader:
                block = blocks[0].to(device)
                h = x[input_nodes].to(device)
                h_dst = h[: block.number_of_dst_nodes()]
                h = layer(block, (h, h_dst))
                if i != len(self.layers) - 1:
                    h = self.activation(h)
                    h = self.dropout(h)
                y[output_nodes] = h.cpu()
            x = y
            g.barrier()
        return y


def compute_acc(pred, labels):
    labels = labels.long()
    return (th.argmax(pred, dim=1) == labels).float().sum() / len(pred)


def main():
    args = parse_args()
    th.manual_seed(0)
    dgl.distributed.initialize(args.ip_config, use_graphbolt=False)
    if not args.standalone:
        th.distributed.init_process_group(backend="gloo")
    g = dgl.distributed.DistGraph(args.graph_name, part_config=args.part_config)
    pb = g.get_partition_book()
    train_nid = dgl.distributed.node_split(g.ndata["train_mask"], pb, force_even=True)
    val_nid = dgl.distributed.node_split(g.ndata["val_mask"], pb, force_even=True)
    test_nid = dgl.distributed.node_split(g.ndata["test_mask"], pb, force_even=True)
    local_nid = pb.partid2nids(pb.partid).detach().numpy()
    print("part {}: train {} (local {}), val {}, test {}".format(
        g.rank(), len(train_nid), len(np.intersect1d(train_nid.numpy(), local_nid)), len(val_nid), len(test_nid)))
    device = th.device("cpu")
    labels = g.ndata["label"][np.arange(g.num_nodes())]
    n_classes = len(th.unique(labels[th.logical_not(th.isnan(labels.float()))]))
    in_feats = g.ndata["feat"].shape[1]

    sampler = dgl.dataloading.NeighborSampler([10, 25])
    dataloader = dgl.dataloading.DistNodeDataLoader(g, train_nid, sampler, batch_size=args.batch_size,
                                                    shuffle=True, drop_last=False)
    model = DistSAGE(in_feats, 32, n_classes, 2, F.relu, 0.2).to(device)
    if not args.standalone:
        model = th.nn.parallel.DistributedDataParallel(model)
    loss_fcn = nn.CrossEntropyLoss().to(device)
    optimizer = th.optim.Adam(model.parameters(), lr=args.lr)
    join = model.join() if not args.standalone else contextlib.nullcontext()
    with join:
        for epoch in range(args.num_epochs):
            for step, (input_nodes, seeds, blocks) in enumerate(dataloader):
                batch_inputs = g.ndata["feat"][input_nodes]
                batch_labels = g.ndata["label"][seeds].long()
                assert th.equal(blocks[-1].dstdata[dgl.NID], seeds) and len(blocks[0].srcdata[dgl.NID]) == \
                    len(input_nodes)
                blocks = [block.to(device) for block in blocks]
                batch_pred = model(blocks, batch_inputs)
                loss = loss_fcn(batch_pred, batch_labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print("epoch {} loss {:.4f}".format(epoch, loss.item()))
    module = model.module if not args.standalone else model
    module.eval()
    with th.no_grad():
        pred = module.inference(g, g.ndata["feat"], 500, device)
    val_acc = compute_acc(pred[val_nid], labels[val_nid])
    test_acc = compute_acc(pred[test_nid], labels[test_nid])
    result(rank=g.rank(), val_acc=f"{float(val_acc):.4f}", test_acc=f"{float(test_acc):.4f}")
    g.barrier()


if __name__ == "__main__":
    main()
