"""`distgraph partition`: read a graph file, partition it, print a readable summary."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..errors import InputError
from ..partition.layout import PART_METHODS


def register(subparsers) -> None:
    p = subparsers.add_parser("partition", help="partition a graph for distributed training",
                              description="Partition a graph (.npz, delimited edge list, or an OGB node dataset "
                                          "on disk) into NUM_PARTS parts.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="graph file: .npz, or an edge list (.csv/.tsv/.txt)")
    source.add_argument("--dataset", help="an OGB node dataset already downloaded under --data_root (e.g. ogbn-mag)")
    p.add_argument("--data_root", default=".", help="the folder holding the --dataset (OGB's layout; nothing is "
                                                    "downloaded)")
    p.add_argument("--add_reverse_edges", action="store_true",
                   help="add a 'rev-REL' edge type reversing every edge type (as DGL's RGCN example does)")
    p.add_argument("--graph_name", required=True, help="name of the graph; the config is OUT/GRAPH_NAME.json")
    p.add_argument("--num_parts", type=int, required=True)
    p.add_argument("--part_method", default="metis", choices=PART_METHODS)
    p.add_argument("--balance_train", action="store_true", help="spread train/val/test nodes evenly (METIS)")
    p.add_argument("--balance_edges", action="store_true", help="balance in-edges per partition (METIS)")
    p.add_argument("--num_hops", "--halo_hops", dest="num_hops", type=int, default=1,
                   help="hops of in-neighbours kept as halo")
    p.add_argument("--num_trainers_per_machine", type=int, default=1,
                   help="METIS parts per machine: each node's part is written as its trainer_id data")
    p.add_argument("--objtype", default="cut", choices=["cut", "vol"], help="METIS's objective")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", "--output", dest="out", required=True, help="output folder")
    el = p.add_argument_group("edge lists")
    el.add_argument("--delimiter", default=None, help="field separator (default: tab, comma or whitespace, detected)")
    el.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                    help="the first line is a header (default: detected)")
    el.add_argument("--num_nodes", type=int, default=None, help="number of nodes (integer ids must be below it)")
    p.set_defaults(func=run)


def summary(stats, load_seconds: float) -> str:
    """A table per partition (`PartitionStats`) plus the figures that judge a partitioning."""
    rows = [f"{'part':>4} {'nodes':>12} {'edges':>13} {'halo':>12} {'train':>10}"]
    for p in range(stats.num_parts):
        rows.append(f"{p:>4} {stats.part_nodes[p]:>12,} {stats.part_edges[p]:>13,} "
                    f"{stats.part_halo[p]:>12,} {stats.part_train[p]:>10,}")
    imb = type(stats).imbalance
    rows += [
        f"edge cut:        {stats.edge_cut:.2%} of edges cross partitions",
        f"halo fraction:   {stats.halo_fraction:.2%} (halo nodes / owned nodes)",
        f"balance max/avg: nodes {imb(stats.part_nodes):.3f}, edges {imb(stats.part_edges):.3f}"
        + (f", train {imb(stats.part_train):.3f}" if sum(stats.part_train) else ""),
        f"time:            load {load_seconds:.1f} s, assign {stats.assign_seconds:.1f} s, "
        f"partition total {stats.total_seconds:.1f} s",
    ]
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    from ..data import add_reverse_edges, load_graph
    from ..partition import partition_graph, split_categories

    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise InputError(f"--out {args.out} is an existing file; pass a folder (it is created if missing)")
    t0 = time.perf_counter()
    if args.dataset:
        from ..data import load_ogb_node

        g = load_ogb_node(args.dataset, args.data_root)
    else:  # numpy arrays: torch (a second or more to import) is never loaded for a file
        g = load_graph(args.input, tensors=False, delimiter=args.delimiter, header=args.header,
                       num_nodes=args.num_nodes)
    if args.add_reverse_edges:
        g = add_reverse_edges(g)
    load_seconds = time.perf_counter() - t0
    print(f"{args.input or args.dataset}: {g.num_nodes():,} nodes, {g.num_edges():,} edges, node types {g.ntypes}")
    stats = partition_graph(
        g, args.graph_name, args.num_parts, args.out, part_method=args.part_method,
        balance_ntypes=split_categories(g) if args.balance_train else None,
        balance_edges=args.balance_edges, num_hops=args.num_hops, seed=args.seed, progress=True,
        num_trainers_per_machine=args.num_trainers_per_machine, objtype=args.objtype,
    )
    print(f"{args.part_method} partitioning into {args.num_parts} parts -> {args.out}/{args.graph_name}.json")
    print(summary(stats, load_seconds))
    from ..partition.report import write_report

    json_path, png_path = write_report(args.out, stats, args.graph_name, args.part_method)
    print(f"report: {json_path}, {png_path}")
    return 0
