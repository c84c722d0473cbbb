"""Set-up shared by the GraphSAGE examples: runtime, device, DDP, the cross-trainer sums, checkpoints."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys

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
    ap.add_argument("--fan_out", default="10,25", help="fanouts, input layer first; -1 takes every in-neighbour")
    ap.add_argument("--eval_fan_out", help="fanouts for evaluation (default: --fan_out; -1,-1 for all neighbours)")
    ap.add_argument("--batch_size", type=int, default=1000)
    ap.add_argument("--batch_size_eval", type=int, default=10000)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--weight_decay", type=float, default=0.0, help="Adam's L2 penalty on the dense weights")
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--num_threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1")))
    ap.add_argument("--num_gpus", type=int, default=0, help="GPUs per machine: a machine's trainer i trains on "
                                                            "cuda:<i %% num_gpus>; 0 or -1: the CPU")
    ap.add_argument("--backend", help="torch.distributed backend of DDP (default: nccl, with gloo for CPU tensors, "
                                      "when every trainer has a GPU; else gloo)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the model's initialisation, sampling and dropout")
    ap.add_argument("--checkpoint_dir", help="save a checkpoint (model, optimizer, random state) into this folder")
    ap.add_argument("--checkpoint_interval", type=int, default=1, help="epochs between checkpoints")
    ap.add_argument("--resume", action="store_true",
                    help="continue from the newest complete checkpoint in --checkpoint_dir (from scratch if none)")
    ap.add_argument("--log_dir", help="write each epoch's metrics as TensorBoard event files and JSON lines "
                                      "(LOG_DIR/trainer-<rank>/)")


NEGATIVE_LIST = re.compile(r"^-\d+(,-?\d+)*$")


def parse(ap: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """`ap.parse_args`, also taking `--fan_out -1,-1` (argparse reads a value that starts with
    '-' and is not one number as an option: such a value is joined to its option here)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and NEGATIVE_LIST.match(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    args = ap.parse_args(out)
    for name in ("fan_out", "eval_fan_out"):
        value = getattr(args, name, None)
        if value is not None and not re.fullmatch(r"-?\d+(,-?\d+)*", value):
            ap.error(f"--{name} takes comma-separated integers (-1: all neighbours), got {value!r}")
    return args


def start(args: argparse.Namespace) -> tuple[dg.DistGraph, bool, int, torch.device]:
    """initialize(), this trainer's device, the process group when launched, and the graph:
    (g, distributed, rank, device)."""
    if args.resume and not args.checkpoint_dir:
        raise SystemExit("--resume needs --checkpoint_dir")
    if args.checkpoint_interval < 1:
        raise SystemExit(f"--checkpoint_interval must be at least 1, got {args.checkpoint_interval}")
    torch.set_num_threads(args.num_threads)
    torch.manual_seed(args.seed)
    dg.initialize(args.ip_config, part_config=args.part_config)
    device = dg.distributed.trainer_device(args.num_gpus)
    distributed = "RANK" in os.environ and "MASTER_ADDR" in os.environ
    backend = args.backend or dg.distributed.ddp_backend(device) if distributed else None
    if distributed:
        tdist.init_process_group(backend)
    rank = tdist.get_rank() if distributed else 0
    if rank == 0:
        print(f"trainer 0 trains on {device}" + (f", DDP over {backend}" if distributed else ""), flush=True)
    return dg.DistGraph(args.graph_name, part_config=args.part_config), distributed, rank, device


def finish(distributed: bool) -> None:
    dg.barrier()
    if distributed:
        tdist.destroy_process_group()


def wrap(model: torch.nn.Module, distributed: bool, device: torch.device) -> torch.nn.Module:
    """The model on `device`; in DDP when launched, summing gradients in rank order so that a
    resumed run equals the uninterrupted one bit for bit with any number of trainers."""
    return dg.distributed.data_parallel(model, device) if distributed else model.to(device)


def joined(model: torch.nn.Module, distributed: bool) -> contextlib.AbstractContextManager:
    """DDP's join around one epoch's steps: a trainer whose share of batches runs out first (or
    that has none) shadows the others' all-reduces instead of leaving them waiting."""
    return model.join() if distributed else contextlib.nullcontext()


def all_sum(values: list[float], distributed: bool) -> list[float]:
    """Sum over every trainer (identity standalone)."""
    t = torch.tensor(values, dtype=torch.float64)
    if distributed:
        tdist.all_reduce(t)
    return t.tolist()


def fanouts(text: str) -> list[int]:
    """'10,25' -> [10, 25]; -1 takes every in-neighbour."""
    return [int(f) for f in text.split(",")]


def optimizer(model: torch.nn.Module, args: argparse.Namespace) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)


class Checkpoints(dg.distributed.EpochCheckpoints):
    """The run's epoch checkpoints from the command line's --checkpoint_dir, --checkpoint_interval, --resume."""

    def __init__(self, args: argparse.Namespace, model: torch.nn.Module, opt: torch.optim.Optimizer,
                 embeddings: list = ()):
        super().__init__(args.checkpoint_dir, model, opt, embeddings, args.checkpoint_interval, args.resume)


digest = dg.distributed.model_digest
