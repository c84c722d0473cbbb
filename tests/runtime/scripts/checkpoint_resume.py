"""Two halves of a run under `distgraph launch`: `save OUT` trains 3 steps, checkpoints, trains
3 more and saves the values; `resume OUT` loads the checkpoint into fresh tensors, checks them,
trains the same 3 steps and saves the values. Rank 0 trains; every trainer checkpoints."""

import sys
from pathlib import Path

import torch

import distgraph.distributed as dist
from distgraph.optim import SparseAdagrad, SparseAdam

torch.set_num_threads(1)
mode, out = sys.argv[1], Path(sys.argv[2])
dist.initialize()
ctx = dist.get_context()
n = ctx.book.num_nodes()
emb = dist.DistEmbedding(n, 8, "emb", init_func=dist.Uniform(-0.5, 0.5, seed=3))
emb2 = dist.DistEmbedding(n, 4, "emb2", init_func=dist.Normal(0.0, 0.1, seed=4))
tables = [emb, emb2]


def train(seed: int) -> None:
    if ctx.rank == 0:
        adagrad, adam = SparseAdagrad([emb], lr=0.1), SparseAdam([emb2], lr=0.05)
        gen = torch.Generator().manual_seed(seed)
        for _ in range(3):
            ids = torch.randint(0, n, (400,), generator=gen)
            ((emb(ids) ** 2).sum() + (emb2(ids) - 1).pow(2).sum()).backward()
            adagrad.step()
            adam.step()
    dist.barrier()


def values() -> torch.Tensor:
    every = torch.arange(n)
    return torch.cat([emb.weight[every].flatten(), emb2.weight[every].flatten()])


if mode == "save":
    train(0)
    dist.save_checkpoint(out / "ck", tables, {"rank": ctx.rank})
    saved = values()
    train(1)
    if ctx.rank == 0:
        torch.save({"saved": saved, "final": values()}, out / "first.pt")
else:
    state = dist.load_checkpoint(out / "ck", tables)
    assert state == {"rank": ctx.rank}, state
    loaded = values()
    train(1)
    if ctx.rank == 0:
        torch.save({"saved": loaded, "final": values()}, out / "second.pt")
dist.barrier()
