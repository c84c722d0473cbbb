"""Sampling benchmark: seeds/s of the 2-layer neighbour sampler on a standalone DistGraph.

Fanouts [10, 25], 1000 seeds per batch, seeds drawn from the training nodes, as in DGL's
GraphSAGE example. The graph is read from an .npz (generated when --input is not given).

    python benchmarks/sampling.py [--input g.npz] [--batches 50] [--threads 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

DGL_SEEDS_PER_SECOND = 9_100  # DGL 2.1.0 on this machine, from the issue


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", help=".npz graph (default: generate 200,000 nodes, 4,000,000 edges, 100-dim)")
    ap.add_argument("--batches", type=int, default=50)
    ap.add_argument("--batch_size", type=int, default=1000)
    ap.add_argument("--fan_out", default="10,25")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import distgraph as dg

    with tempfile.TemporaryDirectory(prefix="distgraph-bench-") as tmp:
        if args.input:
            g0 = dg.load_npz(args.input)
        else:
            g0 = dg.generate_sbm(200_000, 4_000_000, feat_dim=100, seed=0)
        dg.partition_graph(g0, "bench", 1, Path(tmp) / "p")
        dg.initialize(part_config=str(Path(tmp) / "p" / "bench.json"))
        g = dg.DistGraph("bench")
        train = torch.nonzero(g.ndata["train_mask"][torch.arange(g.num_nodes())]).flatten()
        sampler = dg.MultiLayerNeighborSampler([int(f) for f in args.fan_out.split(",")])
        loader = dg.DistNodeDataLoader(g, train, sampler, batch_size=args.batch_size, shuffle=True, drop_last=True)
        it = iter(loader)
        next(it)  # warm-up
        seeds = edges = nodes = 0
        start = time.perf_counter()
        for _ in range(args.batches):
            try:
                inputs, outputs, blocks = next(it)
            except StopIteration:
                it = iter(loader)
                inputs, outputs, blocks = next(it)
            seeds += outputs.numel()
            edges += sum(b.num_edges for b in blocks)
            nodes += inputs.numel()
        seconds = time.perf_counter() - start
        rate = seeds / seconds
        print(f"graph: {g.num_nodes()} nodes, {g.num_edges()} edges; fanouts {args.fan_out}; "
              f"batch {args.batch_size}; threads {args.threads}")
        print(f"seeds_per_second: {rate:,.0f}")
        print(f"sampled_edges_per_second: {edges / seconds:,.0f}")
        print(f"input_nodes_per_batch: {nodes / args.batches:,.0f}")
        print(f"ratio_vs_dgl_2.1.0: {rate / DGL_SEEDS_PER_SECOND:.2f} (target >= 2)")
        dg.exit_client()


if __name__ == "__main__":
    main()
