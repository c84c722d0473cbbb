"""Pulls ROWS random rows of machine 1's share of a 40,000-row table over the wire, COUNT times,
after one pull and after each of two rounds of COUNT pulls prints "pulled" and waits for a line
on stdin."""

import os
import sys

import torch

import distgraph.distributed as dist

torch.set_num_threads(1)
rows, count = int(sys.argv[1]), int(sys.argv[2])
dist.initialize()
big = dist.DistTensor((40000, 64), torch.float32, "big", init_func=lambda shape, dtype: torch.ones(shape, dtype=dtype),
                      part_policy="table~40000")
lo, hi = big.part_policy.bounds[1:3]
gen = torch.Generator().manual_seed(int(os.environ["RANK"]))
for n in (1, count, count):  # a first pull, then twice as many
    for _ in range(n):
        assert big[torch.randint(lo, hi, (rows,), generator=gen)].sum() == rows * 64
    print("pulled", flush=True)
    sys.stdin.readline()
dist.exit_client()
