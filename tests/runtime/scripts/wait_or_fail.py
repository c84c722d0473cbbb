"""Connects, then either fails on one rank (exit code 3) or waits to be interrupted."""

import sys
import time

import torch

import distgraph.distributed as dist

torch.set_num_threads(1)
dist.initialize()
print("ready", flush=True)
if sys.argv[1] == "fail" and dist.get_context().rank == 1:
    sys.exit(3)
time.sleep(300)
