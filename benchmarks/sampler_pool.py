"""Sampler processes: how long the first mini-batch of a new loader takes against a later one.

DistDGL-style scripts build a new loader per evaluation; with `--num_samplers N` each new
loader used to start its own sampler processes (2-3 s before its first batch). Now the
trainer's pool is started once, by `initialize`, and every loader uses it. This launches 2
machines on this host (1 server, 1 trainer each, `--num_samplers`), and each trainer
builds `--loaders` loaders one after another (alternating two fanout settings, as a
training and an evaluation loader would), timing each loader's first batch (from `iter()`)
and its later batches (`--batches` per loader, sampling only). Target (issue 16): the first
batch of a new loader within 2x the cost of a later batch.

    OMP_NUM_THREADS=1 python benchmarks/sampler_pool.py [--input g.npz] [--num_samplers 1]

Prints `key: value` lines. The trainer side is this same file with --worker.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import loopback_ip_config, report

HERE = Path(__file__).resolve()
TARGET = 2.0


def worker(args: argparse.Namespace) -> None:
    """One trainer: loaders built one after another, each timed on its first and later batches."""
    import torch

    import distgraph as dg

    torch.set_num_threads(1)
    dg.initialize()
    g = dg.DistGraph("bench")
    ctx = dg.distributed.get_context()
    train = dg.node_split(g.ndata["train_mask"], g.get_partition_book(), force_even=True)
    settings = ([10, 25], [25, 25])  # a training and an evaluation fanout
    seeds = train[:1000 * (args.batches + 1)]  # each loader is iterated to its end, as an epoch is
    first, later = [], []
    for i in range(args.loaders):
        loader = dg.DistNodeDataLoader(g, seeds, dg.MultiLayerNeighborSampler(settings[i % 2]), batch_size=1000,
                                       shuffle=True)
        start = time.perf_counter()
        it = iter(loader)
        next(it)
        took = time.perf_counter() - start
        start = time.perf_counter()
        for _ in it:
            pass
        per_batch = (time.perf_counter() - start) / args.batches
        if i >= 2:  # the first use of each setting also waits for the pool to be ready
            first.append(took)
            later.append(per_batch)
        del it, loader
    pids = " ".join(str(w.proc.pid) for w in ctx.sampler_pool.workers) if ctx.sampler_pool else "none"
    print(f"RESULT rank={ctx.rank} first={statistics.median(first):.5f} later={statistics.median(later):.5f} "
          f"pids={pids.replace(' ', ',')}", flush=True)
    dg.barrier()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", help=".npz graph (default: generate 200,000 nodes, 4,000,000 edges, 100-dim)")
    ap.add_argument("--num_samplers", type=int, default=1)
    ap.add_argument("--loaders", type=int, default=8)
    ap.add_argument("--batches", type=int, default=6, help="later batches timed per loader")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    import distgraph as dg

    report("command", " ".join(sys.argv))
    with tempfile.TemporaryDirectory(prefix="distgraph-bench-") as tmp:
        tmp = Path(tmp)
        g = dg.load_npz(args.input) if args.input else dg.generate_sbm(200_000, 4_000_000, feat_dim=100, seed=0)
        dg.partition_graph(g, "bench", 2, tmp / "p", balance_ntypes=dg.partition.split_categories(g))
        ip = loopback_ip_config(tmp / "ip.txt", 2)
        cmd = [sys.executable, "-m", "distgraph.cli.main", "launch", "--workspace", str(tmp), "--num_trainers", "1",
               "--num_servers", "1", "--num_samplers", str(args.num_samplers), "--num_omp_threads", "1",
               "--part_config", str(tmp / "p" / "bench.json"), "--ip_config", str(ip),
               f"{sys.executable} {HERE} --worker --loaders {args.loaders} --batches {args.batches}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"launch failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        rows = [dict(kv.split("=") for kv in m.group(1).split()) for m in re.finditer(r"RESULT (.*)", proc.stdout)]
    report("setting", f"2 machines x 1 trainer, {args.num_samplers} sampler process(es) each; fanouts [10, 25] and "
                      f"[25, 25] alternating over {args.loaders} loaders; batch 1000; sampling only")
    for r in rows:
        ratio = float(r["first"]) / float(r["later"])
        report(f"trainer{r['rank']}_first_batch_ms", f"{1000 * float(r['first']):.1f}")
        report(f"trainer{r['rank']}_later_batch_ms", f"{1000 * float(r['later']):.1f}")
        report(f"trainer{r['rank']}_first_over_later", f"{ratio:.2f} (target <= {TARGET}: "
                                                         f"{'met' if ratio <= TARGET else 'missed'})")
        report(f"trainer{r['rank']}_sampler_pids_for_all_loaders", r["pids"])


if __name__ == "__main__":
    main()
