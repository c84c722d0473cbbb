"""Whether a job can train on its trainers' shares: every trainer brings its count, the job
stops at start when no trainer has a batch, and trainer 0 says which trainers have none
(they join the others' steps through DDP's `join`, so they never leave the rest waiting)."""

from __future__ import annotations

from ..errors import InputError
from .runtime import all_gather, get_context


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
