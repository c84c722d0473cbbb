"""GraphSAGE training benchmark under `distgraph launch` (DistDGL's train_dist.py setting).

1. Epoch time: 1 machine, 1 server, 2 trainers; GraphSAGE 2 layers, hidden 64, batch 1000,
   fanouts [10, 25]; time of 10 steps per trainer (after one warm-up step).
2. Remote feature rows: 2 machines on loopback, 1 trainer each, one epoch; input-node
   feature rows owned by the other machine, METIS against random partitions.
3. Distributed sampling: seeds/s of each trainer's loader (sampling only, 50 batches) on 2
   machines (METIS, 1 trainer + 1 server each), against the standalone loader in one process.

    python benchmarks/train_graphsage.py [--input g.npz]
Prints `key: value` lines. The trainer side is this same file with --worker.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
# DGL 2.1.0's warm 10 steps on this machine kind, idle, by issue 17 (not measured in this run:
# printed as recorded, no target scored)
DGL_10_STEPS_SECONDS_RECORDED = "0.74-0.82"


def worker(args: argparse.Namespace) -> None:
    """One trainer: time `--steps` steps, or count remote input rows over one epoch."""
    import torch
    import torch.distributed as tdist
    import torch.nn.functional as F

    import distgraph as dg

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    dg.initialize()
    tdist.init_process_group("gloo")
    g = dg.DistGraph("bench")
    book = g.get_partition_book()
    machine = dg.distributed.get_context().machine_id
    train = dg.node_split(g.ndata["train_mask"], book, force_even=True)
    sampler = dg.MultiLayerNeighborSampler([10, 25])
    loader = dg.DistNodeDataLoader(g, train, sampler, batch_size=1000, shuffle=True, drop_last=True)
    model = torch.nn.parallel.DistributedDataParallel(dg.nn.GraphSAGE(g.ndata["feat"].shape[1], 64, 8, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    if args.sample_only:  # seeds/s of the loader alone (sampling, no features, no training)
        from common import time_loader

        seeds, _, _, seconds = time_loader(loader, args.steps)
        print(f"RESULT rank={tdist.get_rank()} seeds={seeds} seconds={seconds:.3f}", flush=True)
        dg.barrier()
        tdist.destroy_process_group()
        return
    remote = total = steps = 0
    start = None
    for inputs, outputs, blocks in loader:
        if args.count_remote:
            owned = book.nid2partid(inputs) == machine
            remote += int((~owned).sum())
            total += inputs.numel()
        loss = F.cross_entropy(model(blocks, g.ndata["feat"][inputs]), g.ndata["label"][outputs])
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        if steps == 1:
            start = time.perf_counter()
        if not args.count_remote and steps == args.steps + 1:
            break
    seconds = time.perf_counter() - start
    print(f"RESULT rank={tdist.get_rank()} steps={steps - 1} seconds={seconds:.3f} remote={remote} total={total}",
          flush=True)
    dg.barrier()
    tdist.destroy_process_group()


def launch(part_config: Path, machines: int, trainers: int, extra: str, workdir: Path) -> list[dict]:
    ip = workdir / f"ip_{machines}.txt"
    subprocess.run([sys.executable, str(ROOT / "examples/graphsage/loopback_ip_config.py"), str(machines), str(ip)],
                   check=True, capture_output=True)
    cmd = [sys.executable, "-m", "distgraph.cli.main", "launch", "--workspace", str(workdir),
           "--num_trainers", str(trainers), "--num_servers", "1", "--num_samplers", "0",
           "--num_omp_threads", "1", "--part_config", str(part_config), "--ip_config", str(ip),
           f"{sys.executable} {HERE} --worker {extra}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"launch failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    rows = [dict(kv.split("=") for kv in m.group(1).split()) for m in re.finditer(r"RESULT (.*)", proc.stdout)]
    return [{k: float(v) for k, v in r.items()} for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", help=".npz graph (default: generate 200,000 nodes, 4,000,000 edges, 100-dim)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--count_remote", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sample_only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    import distgraph as dg

    with tempfile.TemporaryDirectory(prefix="distgraph-bench-") as tmp:
        tmp = Path(tmp)
        g = dg.load_npz(args.input) if args.input else dg.generate_sbm(200_000, 4_000_000, feat_dim=100, seed=0)
        cats = dg.partition.split_categories(g)
        dg.partition_graph(g, "bench", 1, tmp / "p1")
        dg.partition_graph(g, "bench", 2, tmp / "metis", balance_ntypes=cats, balance_edges=True)
        dg.partition_graph(g, "bench", 2, tmp / "random", part_method="random")
        rows = launch(tmp / "p1" / "bench.json", 1, 2, f"--steps {args.steps}", tmp)
        worst = max(r["seconds"] for r in rows)
        per_trainer = " ".join(f"{r['seconds']:.2f}" for r in rows)
        print(f"epoch_{args.steps}_steps_seconds_per_trainer: {per_trainer}")
        print(f"slowest_trainer_{args.steps}_steps_seconds: {worst:.2f}")
        print(f"dgl_2.1.0_10_steps_seconds_recorded: {DGL_10_STEPS_SECONDS_RECORDED}")
        remote = {}
        for method in ("metis", "random"):
            rows = launch(tmp / method / "bench.json", 2, 1, "--count_remote", tmp)
            remote[method] = sum(r["remote"] for r in rows)
            total = sum(r["total"] for r in rows)
            print(f"{method}_remote_feature_rows_per_epoch: {remote[method]:,.0f} of {total:,.0f} input rows "
                  f"({remote[method] / total:.1%})")
        print(f"metis_over_random_remote_rows: {remote['metis'] / remote['random']:.3f} (target <= 0.5)")
        # distributed sampling (2 machines, 1 trainer each, METIS) against standalone, same graph
        sys.path.insert(0, str(HERE.parent))
        from sampling import ours

        npz = tmp / "g.npz"
        dg.save_npz(g, npz)
        alone, _ = ours(npz, tmp / "standalone", "10,25", 1000, 50)
        rows = launch(tmp / "metis" / "bench.json", 2, 1, "--sample_only --steps 50", tmp)
        per_trainer = [r["seeds"] / r["seconds"] for r in rows]
        print(f"standalone_sampling_seeds_per_s: {alone:,.0f}")
        print(f"distributed_sampling_seeds_per_s_per_trainer: {' '.join(f'{r:,.0f}' for r in per_trainer)} "
              f"(2 machines x 1 trainer + 1 server each, on this host's 2 cores)")
        print(f"distributed_sampling_seeds_per_s_total: {sum(per_trainer):,.0f}")
        ratio = min(per_trainer) / alone
        print(f"distributed_per_trainer_over_standalone: {ratio:.2f} (target >= 0.8: "
              f"{'met' if ratio >= 0.8 else 'missed'})")
        print(f"distributed_total_over_standalone: {sum(per_trainer) / alone:.2f}")


if __name__ == "__main__":
    main()
