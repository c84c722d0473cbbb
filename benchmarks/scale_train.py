"""One trainer of the scale benchmark (started by `distgraph launch` from benchmarks/scale.py):
seeds/s of its loader alone (the first pass, when the partitions' pages may still be on disk),
then GraphSAGE training steps ([10, 25], batch 1000, DDP), then seeds/s again (warm), then its
own peak RSS. Prints one `RESULT key=value ...` line.

    distgraph launch ... "python benchmarks/scale_train.py --graph_name g --steps 200 --num_classes 172"
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import torch
import torch.distributed as tdist
import torch.nn.functional as F

import distgraph as dg
from common import time_loader


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--graph_name", required=True)
    ap.add_argument("--steps", type=int, default=200, help="batches sampled alone, then training steps")
    ap.add_argument("--num_classes", type=int, required=True)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    started = time.perf_counter()
    dg.initialize()
    tdist.init_process_group("gloo")
    g = dg.DistGraph(args.graph_name)
    train = dg.node_split(g.ndata["train_mask"], g.get_partition_book(), force_even=True)
    ready = time.perf_counter() - started
    loader = dg.DistNodeDataLoader(g, train, dg.MultiLayerNeighborSampler([10, 25]), batch_size=1000,
                                   shuffle=True, drop_last=True)
    seeds, edges, _, sample_seconds = time_loader(loader, args.steps)
    feat = g.ndata["feat"]
    model = torch.nn.parallel.DistributedDataParallel(dg.nn.GraphSAGE(feat.shape[1], 64, args.num_classes, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    steps, start = 0, time.perf_counter()
    while steps < args.steps:
        for inputs, outputs, blocks in loader:
            loss = F.cross_entropy(model(blocks, feat[inputs].float()), g.ndata["label"][outputs].long())
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            if steps == args.steps:
                break
    train_seconds = time.perf_counter() - start
    before = resource.getrusage(resource.RUSAGE_SELF)
    warm_seeds, _, _, warm_seconds = time_loader(loader, args.steps)
    after = resource.getrusage(resource.RUSAGE_SELF)
    faults = after.ru_majflt - before.ru_majflt  # pages read from disk while warm
    mapped = after.ru_minflt - before.ru_minflt  # pages in the page cache, mapped on first touch
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"RESULT rank={tdist.get_rank()} ready={ready:.3f} seeds={seeds} edges={edges} "
          f"sample_seconds={sample_seconds:.3f} steps={steps} train_seconds={train_seconds:.3f} "
          f"warm_seeds={warm_seeds} warm_seconds={warm_seconds:.3f} warm_majflt={faults} warm_minflt={mapped} loss={loss.item():.4f} peak_rss={peak}", flush=True)
    dg.barrier()
    tdist.destroy_process_group()


if __name__ == "__main__":
    main()
