"""`distgraph partition`: read a graph file, partition it, print a readable summary."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ..errors import InputError
from ..partition.layout import PART_METHODS
from ..partition.out_folder import check_out
from .copy import add_ssh_args, ssh_options


def register(subparsers) -> None:
    p = subparsers.add_parser("partition", help="partition a graph for distributed training",
                              description="Partition a graph (.npz, delimited edge list, or an OGB node dataset "
                                          "on disk) into NUM_PARTS parts.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="graph: an .npz, an edge list (.csv/.tsv/.txt), or a folder in DGL's chunked "
                                        "format (metadata.json)")
    source.add_argument("--dataset", help="an OGB node dataset already downloaded under --data_root (e.g. ogbn-mag)")
    p.add_argument("--data_root", default=".", help="the folder holding the --dataset (OGB's layout; nothing is "
                                                    "downloaded)")
    p.add_argument("--add_reverse_edges", action="store_true",
                   help="add a 'rev-REL' edge type reversing every edge type (as DGL's RGCN example does)")
    p.add_argument("--graph_name", required=True, help="name of the graph; the config is OUT/GRAPH_NAME.json")
    p.add_argument("--num_parts", type=int, required=True)
    p.add_argument("--part_method", default=None, choices=PART_METHODS,
                   help="default: metis in memory when the graph fits --memory_budget, else kaminpar streaming "
                        "(the command says which and why)")
    p.add_argument("--memory_budget", type=float, default=None, metavar="GIB",
                   help="memory the partitioner may plan to use (default: an eighth of this machine's)")
    p.add_argument("--num_threads", type=int, default=None, help="threads for kaminpar (default: every core)")
    p.add_argument("--balance_train", action="store_true", help="spread train/val/test nodes evenly (METIS)")
    p.add_argument("--balance_edges", action="store_true", help="balance in-edges per partition (METIS)")
    p.add_argument("--num_hops", "--halo_hops", dest="num_hops", type=int, default=1,
                   help="hops of in-neighbours kept as halo")
    p.add_argument("--num_trainers_per_machine", type=int, default=1,
                   help="METIS parts per machine: each node's part is written as its trainer_id data")
    p.add_argument("--objtype", default="cut", choices=["cut", "vol"], help="METIS's objective")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", "--output", dest="out", required=True,
                   help="output folder (it holds one graph's partition; an earlier one of GRAPH_NAME is replaced)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace another graph's partition in --out (refused without it)")
    cl = p.add_argument_group("across hosts", "partition a chunked graph with one process per host of an ip_config, "
                                               "each reading its share of the edge chunks and writing its own "
                                               "partitions (docs/partition.md)")
    cl.add_argument("--ip_config", default=None,
                    help="one `IP [PORT]` line per host (as for distgraph launch); part p is written on host p mod H")
    cl.add_argument("--workspace", default=None,
                    help="the folder relative --input and --out paths are in, on every host (default: this one)")
    cl.add_argument("--scratch_dir", default=None,
                    help="where each host keeps its scratch buckets while it works (as --out: the same path on "
                         "every host, relative ones in --workspace; default: --out)")
    cl.add_argument("--encrypt", action="store_true", help="encrypt the traffic between the hosts (ZeroMQ CURVE)")
    add_ssh_args(cl)
    el = p.add_argument_group("edge lists")
    el.add_argument("--delimiter", default=None, help="field separator (default: tab, comma or whitespace, detected)")
    el.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                    help="the first line is a header (default: detected)")
    el.add_argument("--num_nodes", type=int, default=None, help="number of nodes (integer ids must be below it)")
    el.add_argument("--node_data", metavar="FILE", default=None,
                    help="a CSV or Parquet node table keyed by the edge list's ids: an 'id' column; 'label' (an "
                         "integer class); 'train_mask', 'val_mask', 'test_mask' (0/1 or true/false); every other "
                         "numeric column a feature, in file order, together 'feat' (Parquet may hold 'feat' as one "
                         "list column). Nodes only in this file become isolated nodes; edge-list nodes without a "
                         "row are counted (docs/partition.md)")
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


def _in_memory_only(args: argparse.Namespace) -> str | None:
    """Why these options need the whole graph in memory, if they do."""
    for flag, value, default in (("--num_hops", args.num_hops, 1), ("--num_trainers_per_machine",
                                 args.num_trainers_per_machine, 1), ("--objtype", args.objtype, "cut"),
                                 ("--add_reverse_edges", args.add_reverse_edges, False),
                                 ("--node_data", args.node_data, None)):
        if value != default:
            return f"{flag} {value} needs the whole graph"
    return None


def _streamable(path: str) -> bool:
    """An input the streaming partitioner reads: a chunked-format folder (or its metadata) or an .npz."""
    from ..data import ZIP_MAGIC

    p = Path(path)
    if p.is_dir() or p.name == "metadata.json":
        return True
    with open(p, "rb") as f:
        return f.read(4) in ZIP_MAGIC


def run(args: argparse.Namespace) -> int:
    from ..partition.choose import choose, default_budget

    if args.ip_config:
        return _run_cluster(args)
    if args.scratch_dir:
        raise InputError("--scratch_dir goes with --ip_config (on this host alone the scratch buckets go under --out)")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise InputError(f"--out {args.out} is an existing file; pass a folder (it is created if missing)")
    if args.input and not Path(args.input).exists():
        raise InputError(f"graph file {args.input} does not exist")
    if args.node_data and not args.input:
        raise InputError("--node_data goes with an --input edge list (an OGB --dataset has its own node data)")
    if args.node_data and not Path(args.node_data).is_file():
        raise InputError(f"node data {args.node_data} does not exist")
    if Path(args.out).is_dir():  # before a long load
        check_out(Path(args.out), args.graph_name, args.overwrite)
    budget = int(args.memory_budget * 2**30) if args.memory_budget else default_budget()
    source = None
    if args.input and _streamable(args.input):
        from ..partition.stream import open_source

        source = open_source(args.input)  # headers only: nothing of the edges is read yet
        choice = choose(source.num_edges(), source.num_nodes(), args.part_method, True, _in_memory_only(args), budget)
        if choice.streaming:
            return _run_streaming(args, source, choice)
    return _run_in_memory(args, budget)


def _run_cluster(args: argparse.Namespace) -> int:
    """`--ip_config`: one process per host (`partition.dist`); a lost host ends it with launch's
    exit code for one."""
    from ..cluster.ip_config import parse_ip_config
    from ..launch.remote import LOST_CODE
    from ..partition.choose import choose_cluster
    from ..partition.dist import partition_cluster
    from ..partition.dist.processes import HostLost
    from ..partition.stream import from_chunked

    here = Path(args.workspace or ".")
    local_input = here / args.input if args.input else None  # (absolute paths stay as they are)
    chunked = local_input is not None and (local_input.is_dir() or local_input.name == "metadata.json")
    why_not = _in_memory_only(args) or (args.dataset and "--dataset is read whole") or (
        not chunked and f"{local_input} is not a chunked graph folder here")
    if why_not:
        raise InputError(f"--ip_config partitions a graph in DGL's chunked format on several hosts: {why_not}; "
                         f"drop --ip_config to partition on this host")
    source = from_chunked(local_input, every_file=False)
    machines = parse_ip_config(args.ip_config)
    choice = choose_cluster(source.num_edges(), args.part_method, len(machines))
    print(f"{args.input}: {source.num_nodes():,} nodes, {source.num_edges():,} edges, node types {source.ntypes}, "
          f"on {len(machines)} hosts")
    print(f"partitioner: {choice.why}")
    try:
        stats = partition_cluster(args.input, args.graph_name, args.num_parts, args.out, args.ip_config,
                                  ssh_options(args), args.workspace, part_method=choice.method,
                                  balance_train=args.balance_train, balance_edges=args.balance_edges, seed=args.seed,
                                  threads=args.num_threads or os.cpu_count() or 1, progress=True,
                                  overwrite=args.overwrite, encrypt=args.encrypt, scratch_dir=args.scratch_dir)
    except HostLost as exc:
        print(f"distgraph {args.command}: error: {exc}", file=sys.stderr)
        return LOST_CODE
    return _finish(args, stats, choice.method, 0.0)


def _run_streaming(args: argparse.Namespace, source, choice) -> int:
    from ..partition.stream import partition_stream

    print(f"{args.input}: {source.num_nodes():,} nodes, {source.num_edges():,} edges, node types {source.ntypes}")
    print(f"partitioner: {choice.why}")
    stats = partition_stream(source, args.graph_name, args.num_parts, args.out, part_method=choice.method,
                             balance_train=args.balance_train, balance_edges=args.balance_edges, seed=args.seed,
                             threads=args.num_threads or os.cpu_count() or 1, progress=True, overwrite=args.overwrite)
    return _finish(args, stats, choice.method, 0.0)


def _run_in_memory(args: argparse.Namespace, budget: int) -> int:
    from ..data import add_reverse_edges, load_graph
    from ..malloc import keep_freed_memory
    from ..partition import partition_graph, split_categories
    from ..partition.choose import choose

    # its steps free and take back arrays of tens of MB: kept in the heap, they are not faulted in
    # and zeroed again (0.15-0.2 s of the 200k-node graph's 1.5 s; the streaming path, which plans
    # its memory, hands freed memory back instead)
    keep_freed_memory()

    t0 = time.perf_counter()
    if args.dataset:
        from ..data import load_ogb_node

        g = load_ogb_node(args.dataset, args.data_root)
    else:  # numpy arrays: torch (a second or more to import) is never loaded for a file
        g = load_graph(args.input, tensors=False, delimiter=args.delimiter, header=args.header,
                       num_nodes=args.num_nodes)
    if args.node_data:
        from ..data.node_table import attach_node_data

        g, said = attach_node_data(g, args.node_data)
        print("\n".join(said))
    if args.add_reverse_edges:
        g = add_reverse_edges(g)
    load_seconds = time.perf_counter() - t0
    print(f"{args.input or args.dataset}: {g.num_nodes():,} nodes, {g.num_edges():,} edges, node types {g.ntypes}")
    choice = choose(g.num_edges(), g.num_nodes(), args.part_method, False, _in_memory_only(args), budget)
    print(f"partitioner: {choice.why}")
    stats = partition_graph(
        g, args.graph_name, args.num_parts, args.out, part_method=choice.method,
        balance_ntypes=split_categories(g) if args.balance_train else None,
        balance_edges=args.balance_edges, num_hops=args.num_hops, seed=args.seed, progress=True,
        num_trainers_per_machine=args.num_trainers_per_machine, objtype=args.objtype, overwrite=args.overwrite,
    )
    return _finish(args, stats, choice.method, load_seconds)


def _finish(args: argparse.Namespace, stats, method: str, load_seconds: float) -> int:
    """The summary and the partition report (JSON and SVG) of either path."""
    from ..partition.report import write_report

    print(f"{method} partitioning into {args.num_parts} parts -> {args.out}/{args.graph_name}.json")
    print(summary(stats, load_seconds))
    json_path, svg_path = write_report(args.out, stats, args.graph_name, method)
    print(f"report: {json_path}, {svg_path}")
    return 0
