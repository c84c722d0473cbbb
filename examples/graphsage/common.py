"""Set-up shared by the GraphSAGE examples: runtime, DDP and the cross-trainer sums."""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as tdist

import distgraph as dg


def add_common_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--graph_name", required=True)
    ap.add_argument("--part_config", help="the 1-part partition, standalone only (a launch passes its own)")
    ap.add_argument("--ip_config", help="set by distgraph launch")
    ap.add_argument("--num_epochs", type=int, default=3)
    ap.add_argument("--num_hidden", type=int, default=64)
    ap.add_argument("--num_layers", type=int, default=2)
    ap.add_argument("--fan_out", default="10,25", help="fanouts, input layer first")
    ap.add_argument("--batch_size", type=int, default=1000)
    ap.add_argument("--batch_size_eval", type=int, default=10000)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--num_threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1")))


def start(args: argparse.Namespace) -> tuple[dg.DistGraph, bool, int]:
    """initialize(), the process group when launched, and the graph: (g, distributed, rank)."""
    torch.set_num_threads(args.num_threads)
    torch.manual_seed(0)
    dg.initialize(args.ip_config, part_config=args.part_config)
    distributed = "RANK" in os.environ and "MASTER_ADDR" in os.environ
    if distributed:
        tdist.init_process_group("gloo")
    g = dg.DistGraph(args.graph_name, part_config=args.part_config)
    return g, distributed, tdist.get_rank() if distributed else 0


def finish(distributed: bool) -> None:
    dg.barrier()
    if distributed:
        tdist.destroy_process_group()


def wrap(model: torch.nn.Module, distributed: bool) -> torch.nn.Module:
    return torch.nn.parallel.DistributedDataParallel(model) if distributed else model


def all_sum(values: list[float], distributed: bool) -> list[float]:
    """Sum over every trainer (identity standalone)."""
    t = torch.tensor(values, dtype=torch.float64)
    if distributed:
        tdist.all_reduce(t)
    return t.tolist()


def fanouts(args: argparse.Namespace) -> list[int]:
    return [int(f) for f in args.fan_out.split(",")]
