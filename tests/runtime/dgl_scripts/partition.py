"""The structure of DGL's partitioning script for its distributed GraphSAGE examples
(examples/distributed/graphsage/partition_graph.py): Reddit through `data.RedditDataset`
(DGL's download folder, `DGL_DOWNLOAD_DIR`) or an OGB node dataset through
`DglNodePropPredDataset` (under ./dataset), node data renamed, `to_bidirected` with
`--undirected`, then `distributed.partition_graph`. Only the import lines differ from a DGL
script (`ogb.nodeproppred` -> `distgraph.data`)."""

import argparse

import torch as th

import distgraph as dgl
from distgraph.data import DglNodePropPredDataset, RedditDataset


def load_reddit(self_loop=True):
    data = RedditDataset(self_loop=self_loop)
    g = data[0]
    g.ndata["features"] = g.ndata.pop("feat")
    g.ndata["labels"] = g.ndata.pop("label")
    return g, data.num_classes


def load_ogb(name, root="dataset"):
    data = DglNodePropPredDataset(name=name, root=root)
    splitted_idx = data.get_idx_split()
    graph, labels = data[0]
    labels = labels[:, 0]
    graph.ndata["features"] = graph.ndata.pop("feat")
    graph.ndata["labels"] = labels
    num_labels = len(th.unique(labels[th.logical_not(th.isnan(labels))]))
    for key, split in (("train_mask", "train"), ("val_mask", "valid"), ("test_mask", "test")):
        mask = th.zeros((graph.num_nodes(),), dtype=th.bool)
        mask[splitted_idx[split]] = True
        graph.ndata[key] = mask
    return graph, num_labels


if __name__ == "__main__":
    argparser = argparse.ArgumentParser("Partition graph")
    argparser.add_argument("--dataset", type=str, default="reddit")
    argparser.add_argument("--num_parts", type=int, default=4)
    argparser.add_argument("--part_method", type=str, default="metis")
    argparser.add_argument("--balance_train", action="store_true")
    argparser.add_argument("--undirected", action="store_true")
    argparser.add_argument("--balance_edges", action="store_true")
    argparser.add_argument("--num_trainers_per_machine", type=int, default=1)
    argparser.add_argument("--output", type=str, default="data")
    args = argparser.parse_args()

    if args.dataset == "reddit":
        g, num_classes = load_reddit()
    elif args.dataset in ["ogbn-products", "ogbn-papers100M"]:
        g, num_classes = load_ogb(args.dataset)
    else:
        raise RuntimeError(f"Unknown dataset: {args.dataset}")
    print("|V|={}, |E|={}, classes={}".format(g.num_nodes(), g.num_edges(), num_classes))
    balance_ntypes = g.ndata["train_mask"] if args.balance_train else None
    if args.undirected:
        sym_g = dgl.to_bidirected(g, readonly=True)
        for key in g.ndata:
            sym_g.ndata[key] = g.ndata[key]
        g = sym_g
    print("partitioning |E|={}".format(g.num_edges()))
    dgl.distributed.partition_graph(g, args.dataset, args.num_parts, args.output, part_method=args.part_method,
                                    balance_ntypes=balance_ntypes, balance_edges=args.balance_edges,
                                    num_trainers_per_machine=args.num_trainers_per_machine)
