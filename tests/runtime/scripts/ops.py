"""A training-like script run both standalone and under `distgraph launch`: rank 0 updates
tensors (assign, SparseAdagrad, SparseAdam) with ids spanning partitions, then every rank
saves what it reads. The test compares the files of both runs."""

import argparse
import os

import torch

import distgraph.distributed as dist
from distgraph.optim import SparseAdagrad, SparseAdam

torch.set_num_threads(1)
parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--part_config", default=None)
args = parser.parse_args()

dist.initialize(part_config=args.part_config)
ctx = dist.get_context()
n = ctx.book.num_nodes()
feat = dist.DistTensor((n, 16), torch.float32, dist.graph_data_name(dist.node_policy_str(), "feat"))
emb = dist.DistEmbedding(n, 8, "emb", init_func=dist.Uniform(-0.5, 0.5, seed=3))
emb2 = dist.DistEmbedding(n, 4, "emb2", init_func=dist.Normal(0.0, 0.1, seed=4))
counts = dist.DistTensor((n, 3), torch.int64, "counts", init_func=dist.Zeros(), persistent=True)
adagrad, adam = SparseAdagrad([emb], lr=0.1), SparseAdam([emb2], lr=0.01)
if ctx.rank == 0:
    gen = torch.Generator().manual_seed(0)
    for step in range(3):
        ids = torch.randint(0, n, (300,), generator=gen)
        loss = (emb(ids) ** 2).sum() + emb2(ids).sum() ** 2
        loss.backward()
        adagrad.step()
        adam.step()
        counts[ids] = ids.unsqueeze(1).expand(-1, 3) * (step + 1)
dist.barrier()
everything = torch.arange(n)
torch.save({"feat": feat[everything], "emb": emb.weight[everything], "emb2": emb2.weight[everything],
            "counts": counts[everything], "rank": ctx.rank, "role": ctx.role,
            "env": {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}},
           os.path.join(args.out, f"rank{ctx.rank}.pt"))
dist.barrier()
if ctx.role == "trainer":
    import torch.distributed as td
    td.init_process_group("gloo")
    total = torch.tensor([float(ctx.rank + 1)])
    td.all_reduce(total)
    print(f"all_reduce {total.item():g}")
    td.destroy_process_group()
