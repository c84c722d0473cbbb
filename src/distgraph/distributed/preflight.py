"""What a training script checks before its first step, so a job that cannot train stops at
start with one line: the graph has the fields the script reads (`require_fields`), and some
trainer has a batch (`check_train_shares`: every trainer brings its count; trainer 0 says
which trainers have none, and those join the others' steps through DDP's `join`)."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .runtime import all_gather, get_context


def require_fields(g, names: list[str], ntype: str | None = None, script: str = "this script") -> None:
    """Stop with one line naming the node data among `names` that `g` (of node type `ntype`)
    lacks, and how to add it (`distgraph partition --node_data`)."""
    script = Path(script).name if script.endswith(".py") else script
    have = set(g.nodes[ntype].data.keys() if ntype is not None else g.ndata.keys())
    missing = [n for n in names if n not in have]
    if missing:
        where = f" of node type {ntype!r}" if ntype is not None else ""
        raise InputError(f"the graph's nodes{where} have no {', '.join(missing)} (they have {sorted(have) or 'no data'}), "
                         f"which {script} needs: partition with `distgraph partition --node_data nodes.csv` (columns "
                         f"id, label, train_mask, val_mask, test_mask and numeric features; docs/partition.md)")


def check_train_shares(count: int, batch_size: int, what: str = "training node", drop_last: bool = False) -> list[int]:
    """Every trainer's `count` (its share of `what`), in rank order, after checking that some
    trainer has a batch of `batch_size` (whole batches only with `drop_last`). A barrier of
    every trainer: call it from each, before the first step."""
    counts = [int(c) for c in all_gather(int(count))]
    steps = [c // batch_size if drop_last else -(-c // batch_size) for c in counts]
    if not sum(steps):
        whole = f" of batch_size {batch_size} (drop_last)" if drop_last and sum(counts) else ""
        raise InputError(f"cannot train: {sum(counts)} {what}s for {len(counts)} trainers, so no trainer has a "
                         f"batch{whole}; give the graph {what}s (a train mask) or run fewer trainers")
    idle = [r for r, k in enumerate(steps) if not k]
    if idle and get_context().rank == 0:
        print(f"trainers {idle} have no {what} batch ({sum(counts)} {what}s for {len(counts)} trainers): they "
              f"join the others' steps (DDP join)", flush=True)
    return counts
