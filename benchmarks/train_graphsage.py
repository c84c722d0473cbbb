"""GraphSAGE training benchmark under `distgraph launch` (DistDGL's train_dist.py setting).

1. Epoch time: 1 machine, 1 server, 2 trainers; GraphSAGE 2 layers, hidden 64, batch 1000,
   fanouts [10, 25]; time of the second (warm) epoch, slowest trainer: 10 steps per trainer
   on the default graph (10% training nodes). With `--peer_python` (../shared/peers/dgl's
   venv), DGL 2.1.0 runs the same epochs on the same .npz through its own launch.py
   (../shared/peers/dgl/run_dist.sh), alternating with ours (`--rounds`); without it,
   DGL's figure is printed as recorded and no target is scored.
2. Remote feature rows: 2 machines on loopback, 1 trainer each, one epoch; input-node
   feature rows owned by the other machine, METIS against random partitions.
3. Distributed sampling: seeds/s of each trainer's loader (sampling only, 200 batches) on 2
   machines (METIS, 1 trainer + 1 server each), against the standalone loader in one process:
   as launched (a trainer samples its host's partitions itself), and with the other
   machine's seeds sent to its server (DISTGRAPH_HOST_SHM=0, the path between hosts).

    python benchmarks/train_graphsage.py [--input g.npz] \
        [--peer_python ~/.cache/distgraph-peers/dgl/venv/bin/python --rounds 2]
Prints `key: value` lines. The trainer side is this same file with --worker.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
PEER_SCRIPTS = ROOT.parent / "shared" / "peers" / "dgl"
# DGL 2.1.0's warm epoch (10 steps) on this machine kind, idle, by issue 17: printed as
# recorded when the peer is not measured in this run
DGL_10_STEPS_SECONDS_RECORDED = "0.74-0.82"
TARGET = 0.7  # our warm epoch / DGL's, issue 17


def worker(args: argparse.Namespace) -> None:
    """One trainer: time its last of `--epochs` epochs, count remote input rows over one epoch, or
    time `--steps` batches of sampling alone."""
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
    loader = dg.DistNodeDataLoader(g, train, sampler, batch_size=1000, shuffle=True,
                                   drop_last=args.sample_only)  # DGL's example keeps the last batch
    model = torch.nn.parallel.DistributedDataParallel(dg.nn.GraphSAGE(g.ndata["feat"].shape[1], 64, 8, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    if args.sample_only:  # seeds/s of the loader alone (sampling, no features, no training)
        from common import time_loader

        cpu = time.process_time()
        seeds, _, _, seconds = time_loader(loader, args.steps)
        cpu = time.process_time() - cpu  # includes the warm-up batch
        print(f"RESULT rank={tdist.get_rank()} seeds={seeds} seconds={seconds:.3f} cpu={cpu:.3f}", flush=True)
        dg.barrier()
        tdist.destroy_process_group()
        return
    remote = total = steps = 0
    for _ in range(1 if args.count_remote else args.epochs):  # the last epoch is timed
        start, steps = time.perf_counter(), 0
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
        seconds = time.perf_counter() - start
    print(f"RESULT rank={tdist.get_rank()} steps={steps} seconds={seconds:.3f} remote={remote} total={total}",
          flush=True)
    dg.barrier()
    tdist.destroy_process_group()


def launch(part_config: Path, machines: int, trainers: int, extra: str, workdir: Path,
           env: dict | None = None) -> list[dict]:
    ip = workdir / f"ip_{machines}.txt"
    subprocess.run([sys.executable, str(ROOT / "examples/graphsage/loopback_ip_config.py"), str(machines), str(ip)],
                   check=True, capture_output=True)
    cmd = [sys.executable, "-m", "distgraph.cli.main", "launch", "--workspace", str(workdir),
           "--num_trainers", str(trainers), "--num_servers", "1", "--num_samplers", "0",
           "--num_omp_threads", "1", "--part_config", str(part_config), "--ip_config", str(ip),
           f"{sys.executable} {HERE} --worker {extra}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if proc.returncode:
        raise SystemExit(f"launch failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    rows = [dict(kv.split("=") for kv in m.group(1).split()) for m in re.finditer(r"RESULT (.*)", proc.stdout)]
    return [{k: float(v) for k, v in r.items()} for r in rows]


def peer_dir(python: str) -> Path:
    """The peer's folder (PEER_DIR of ../shared/peers/dgl): its venv's parent."""
    return Path(python).parents[2]  # not resolved: the venv's python is a link out of it


def dgl_warm_epoch(python: str, epochs: int) -> float:
    """DGL's last-epoch time, slowest trainer (1 machine, 1 server, 2 trainers, its launch.py)."""
    env = {**os.environ, "PEER_DIR": str(peer_dir(python)), "NUM_TRAINERS": "2", "NUM_SERVERS": "1",
           "NUM_SAMPLERS": "0", "OMP": "1"}
    done = subprocess.run(["bash", str(PEER_SCRIPTS / "run_dist.sh"), str(epochs)], capture_output=True, text=True,
                          env=env)
    m = re.search(rf"epoch{epochs - 1}_time_s_max: ([\d.]+)", done.stdout)
    if done.returncode or not m:
        raise SystemExit(f"the DGL peer failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    steps = re.search(rf"epoch{epochs - 1}_steps_rank0: (\d+)", done.stdout)
    print(f"dgl_warm_epoch_seconds: {float(m.group(1)):.2f} ({steps.group(1) if steps else '?'} steps per trainer)",
          flush=True)
    return float(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", help=".npz graph (default: generate 200,000 nodes, 4,000,000 edges, 100-dim)")
    ap.add_argument("--epochs", type=int, default=2, help="epochs per run; the last one is timed")
    ap.add_argument("--peer_python", help="DGL 2.1.0's interpreter (../shared/peers/dgl/install.sh)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="alternating runs of each system (of each setting, for the sampling figure)")
    ap.add_argument("--measure", nargs="+", default=["epoch", "remote", "sampling"],
                    choices=["epoch", "remote", "sampling"], help="which of the three figures (default all)")
    ap.add_argument("--steps", type=int, default=50, help=argparse.SUPPRESS)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--count_remote", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sample_only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    import distgraph as dg

    with tempfile.TemporaryDirectory(prefix="distgraph-bench-") as tmp:
        tmp = Path(tmp)
        npz = Path(args.input) if args.input else None
        if args.peer_python and npz is None:  # the peer's own graph, which its scripts read
            npz = peer_dir(args.peer_python) / "data" / "synth.npz"
            if not npz.exists():
                subprocess.run([args.peer_python, str(PEER_SCRIPTS / "gen_graph.py"), "--out", str(npz)], check=True)
        g = dg.load_npz(npz) if npz else dg.generate_sbm(200_000, 4_000_000, feat_dim=100, seed=0)
        cats = dg.partition.split_categories(g)
        dg.partition_graph(g, "bench", 1, tmp / "p1")
        dg.partition_graph(g, "bench", 2, tmp / "metis", balance_ntypes=cats, balance_edges=True)
        dg.partition_graph(g, "bench", 2, tmp / "random", part_method="random")
        mine, theirs = [], []
        for _ in range((args.rounds if args.peer_python else 1) if "epoch" in args.measure else 0):
            rows = launch(tmp / "p1" / "bench.json", 1, 2, f"--epochs {args.epochs}", tmp)
            mine.append(max(r["seconds"] for r in rows))
            each = " ".join(f"{r['seconds']:.2f}" for r in rows)
            print(f"warm_epoch_seconds_per_trainer: {each} ({int(rows[0]['steps'])} steps each)", flush=True)
            if args.peer_python:
                theirs.append(dgl_warm_epoch(args.peer_python, args.epochs))
        if mine:
            print(f"warm_epoch_seconds_slowest_trainer_runs: {' '.join(f'{t:.2f}' for t in mine)}")
            print(f"warm_epoch_seconds: {statistics.median(mine):.2f}")
        if theirs:
            print(f"dgl_2.1.0_warm_epoch_seconds_runs: {' '.join(f'{t:.2f}' for t in theirs)}")
            ratio = statistics.median(mine) / statistics.median(theirs)
            print(f"ratio_vs_dgl_2.1.0: {ratio:.2f} (target <= {TARGET}: {'met' if ratio <= TARGET else 'missed'})")
        elif mine:
            print(f"dgl_2.1.0_warm_epoch_seconds_recorded: {DGL_10_STEPS_SECONDS_RECORDED}")
        if "remote" in args.measure:
            remote_rows(tmp)
        if "sampling" in args.measure:
            distributed_sampling(g, npz, tmp, args.rounds)


def remote_rows(tmp: Path) -> None:
    """Input feature rows owned by the other machine over one epoch, METIS against random."""
    remote = {}
    for method in ("metis", "random"):
        rows = launch(tmp / method / "bench.json", 2, 1, "--count_remote", tmp)
        remote[method] = sum(r["remote"] for r in rows)
        total = sum(r["total"] for r in rows)
        print(f"{method}_remote_feature_rows_per_epoch: {remote[method]:,.0f} of {total:,.0f} input rows "
              f"({remote[method] / total:.1%})")
    print(f"metis_over_random_remote_rows: {remote['metis'] / remote['random']:.3f} (target <= 0.5)")


def distributed_sampling(g, npz: Path | None, tmp: Path, rounds: int) -> None:
    """Seeds/s of each trainer's loader on 2 machines (METIS, 1 trainer + 1 server each) against
    the standalone loader in one process, same graph; `rounds` alternating runs, medians."""
    import distgraph as dg

    sys.path.insert(0, str(HERE.parent))
    from sampling import ours

    if npz is None:
        npz = tmp / "g.npz"
        dg.save_npz(g, npz)
    # by default a trainer samples the partitions of its host's machines itself; with
    # DISTGRAPH_HOST_SHM=0 the other machine's seeds go to its server, as from another host
    paths = {"host": {}, "wire": {"DISTGRAPH_HOST_SHM": "0"}}
    alone, slowest, total, cpu = [], {p: [] for p in paths}, {p: [] for p in paths}, {p: [] for p in paths}
    for _ in range(rounds):
        alone.append(ours(npz, tmp / "standalone", "10,25", 1000, 200)[0])
        for path, env in paths.items():
            rows = launch(tmp / "metis" / "bench.json", 2, 1, "--sample_only --steps 200", tmp, env)
            per_trainer = [r["seeds"] / r["seconds"] for r in rows]
            slowest[path].append(min(per_trainer))
            total[path].append(sum(per_trainer))
            cpu[path] += [r["cpu"] / r["seconds"] for r in rows]
    runs = lambda xs: " ".join(f"{x:,.0f}" for x in xs)  # noqa: E731
    base = statistics.median(alone)
    print(f"standalone_sampling_seeds_per_s: {base:,.0f} (runs {runs(alone)})")
    for path in paths:
        ratio = statistics.median(slowest[path]) / base
        print(f"distributed_{path}_sampling_seeds_per_s_slowest_trainer: {statistics.median(slowest[path]):,.0f} "
              f"(runs {runs(slowest[path])}; 2 machines x 1 trainer + 1 server each, on this host's 2 cores)")
        print(f"distributed_{path}_trainer_cpu_seconds_per_second: "
              f"{' '.join(f'{c:.0%}' for c in cpu[path])} (all of a trainer's threads)")
        scored = f"target >= 0.8: {'met' if ratio >= 0.8 else 'missed'}" if path == "host" else "not scored"
        print(f"distributed_{path}_per_trainer_over_standalone: {ratio:.2f} ({scored})")
        print(f"distributed_{path}_total_over_standalone: {statistics.median(total[path]) / base:.2f}")


if __name__ == "__main__":
    main()
