"""Partition benchmark: our whole METIS partition step against a bare METIS call, same graph, same run.

Each measurement runs in a fresh child process, so its peak RSS is its own. With plain balance,
the whole `distgraph partition` command as a user runs it (interpreter start-up, loading, the
report) is also measured against the bare call, round by round (the median of the rounds'
ratios and their range). Prints
`key: value` lines; `--plot FILE` draws time and memory per configuration.

With `--peer_python` (../shared/peers/dgl's venv), the whole `distgraph partition` command
(interpreter start-up, loading the .npz and writing the parts included) is timed against
DGL 2.1.0's `partition_graph` call alone (../shared/peers/dgl/partition_bench.py), METIS
into 2 parts on the same .npz, runs alternating.

    python benchmarks/partition.py [--nodes 200000 --edges 4000000 --feat_dim 100 --parts 2 4 --repeat 3]
        [--peer_python ~/.cache/distgraph-peers/dgl/venv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import neutral_npz, report_ratio


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(args: argparse.Namespace) -> None:
    """One measurement in this process; prints a JSON line with seconds and peak RSS."""
    from distgraph.data import load_npz
    from distgraph.partition import partition_graph, split_categories

    g = load_npz(args.input)
    method, balance = args.child.split(":")
    categories = split_categories(g) if balance == "balanced" else None
    out: dict = {}
    cpu0 = _cpu_seconds()
    t0 = time.perf_counter()
    if method in ("bare", "bare64"):
        # The bare METIS call: the same adjacency and the same vertex weights as our step.
        # "bare" is the library our step uses (choose_library: cmeel-metis's 32-bit build when
        # the graph fits); "bare64" is pymetis's 64-bit build, for reference.
        from distgraph.partition.assign import balance_weights
        from distgraph.partition.metis import choose_library, library64, part_graph
        from distgraph.partition.symmetric import symmetric_adjacency

        xadj, adjncy = symmetric_adjacency(g.src.numpy(), g.dst.numpy(), g.num_nodes())
        weights = balance_weights(g, categories, balance == "balanced")
        weights = weights if weights.shape[1] > 1 else None  # as assign_parts passes them
        out["symmetrize_seconds"] = time.perf_counter() - t0
        if method == "bare":
            lib = choose_library(xadj.size - 1, adjncy.size, None if weights is None else weights.sum(0))
        else:
            lib = library64()
            xadj, adjncy = xadj.astype(lib.idx), adjncy.astype(lib.idx)  # its idx_t, converted before timing
        out["library"] = lib.name
        cpu0 = _cpu_seconds()
        t1 = time.perf_counter()
        if method == "bare64" and weights is None:  # pymetis's own API, as a user would call it
            import pymetis

            pymetis.part_graph(args.num_parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy))
        else:  # pymetis's Python API takes one constraint; ctypes takes several
            part_graph(xadj, adjncy, args.num_parts, weights, library=lib)
        out["seconds"] = time.perf_counter() - t1
    else:
        stats = partition_graph(g, "bench", args.num_parts, args.out, part_method=method,
                                balance_ntypes=categories, balance_edges=balance == "balanced")
        out.update(seconds=time.perf_counter() - t0, assign_seconds=stats.assign_seconds,
                   edge_cut=stats.edge_cut, halo_fraction=stats.halo_fraction,
                   node_imbalance=stats.imbalance(stats.part_nodes), edge_imbalance=stats.imbalance(stats.part_edges),
                   train_imbalance=stats.imbalance(stats.part_train))
    out["cpu_seconds"] = _cpu_seconds() - cpu0  # all threads, over the timed section
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def command(graph: Path, parts: int, out: Path) -> dict:
    """`distgraph partition` as a user runs it (METIS, the default options): wall seconds from
    starting the process to its exit, its CPU seconds and peak RSS."""
    cmd = [sys.executable, "-m", "distgraph.cli.main", "partition", "--input", str(graph), "--graph_name", "g",
           "--num_parts", str(parts), "--part_method", "metis", "--out", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()  # to its end, which is the process's: a full pipe would stall it
    proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU time and peak RSS
    seconds = time.perf_counter() - t0
    if status:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.decode(errors='replace')[-2000:]}")
    return {"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024}


def measure(kinds: list[str], graph: Path, parts: int, out: Path, repeat: int) -> list[dict]:
    """Best of `repeat` fresh child processes per kind (the machine is shared: the minimum is
    the least disturbed). The kinds take turns, run after run, so a slow spell of the machine
    hits them alike instead of only the ones that happened to run then, and the order rotates
    each round, so no kind always follows the same one.

    Every run writes to an empty folder, as a first partitioning does: the previous run's files
    are deleted before the next starts, so no run pays for truncating them."""
    runs: list[list[dict]] = [[] for _ in kinds]
    for r in range(repeat):
        for i in ((j + r) % len(kinds) for j in range(len(kinds))):
            kind = kinds[i]
            shutil.rmtree(out, ignore_errors=True)
            if kind == "command":
                runs[i].append(command(graph, parts, out))
                continue
            cmd = [sys.executable, __file__, "--child", kind, "--input", str(graph), "--num_parts", str(parts),
                   "--out", str(out)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode:
                raise SystemExit(f"{kind} failed:\n{proc.stderr}")
            runs[i].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    best = []
    for kind_runs in runs:
        b = min(kind_runs, key=lambda r: r["seconds"])
        b["peak_rss_mb"] = max(r["peak_rss_mb"] for r in kind_runs)
        b["round_seconds"] = [r["seconds"] for r in kind_runs]  # in round order, for paired ratios
        best.append(b)
    return best


PEER_SCRIPT = Path(__file__).resolve().parents[2] / "shared" / "peers" / "dgl" / "partition_bench.py"
COMMAND_TARGET = 0.5  # our whole command / DGL's partition_graph call, issue 17
COMMAND_OVER_BARE = 1.5  # our whole command / the bare METIS call, issue 44


def versus_dgl(python: str, graph: Path, tmp: Path, repeat: int) -> None:
    """`distgraph partition` as a user runs it against DGL's partition_graph call alone, METIS, 2 parts."""
    ours_s, ours_rss, theirs_s, theirs_rss = [], [], [], []
    for _ in range(repeat):
        shutil.rmtree(tmp / "ours", ignore_errors=True)
        ours = command(graph, 2, tmp / "ours")
        ours_s.append(ours["seconds"])
        ours_rss.append(ours["peak_rss_mb"])
        done = subprocess.run([python, str(PEER_SCRIPT), "--method", "metis", "--parts", "2", "--npz", str(graph),
                               "--out-root", str(tmp / "dgl")], capture_output=True, text=True,
                              env={**os.environ, "DGLBACKEND": "pytorch"})
        m = re.search(r"partition_graph_wall_s: ([\d.]+)", done.stdout)
        rss = re.search(r"peak_rss_mb: (\d+)", done.stdout)
        if done.returncode or not m:
            raise SystemExit(f"the DGL peer failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        theirs_s.append(float(m.group(1)))
        theirs_rss.append(float(rss.group(1)) if rss else float("nan"))
    print(f"command_seconds_runs: {' '.join(f'{t:.2f}' for t in ours_s)}")
    print(f"dgl_2.1.0_partition_graph_seconds_runs: {' '.join(f'{t:.2f}' for t in theirs_s)}")
    ratio = statistics.median(ours_s) / statistics.median(theirs_s)
    print(f"command_over_dgl_partition_graph: {ratio:.2f} (target <= {COMMAND_TARGET}: "
          f"{'met' if ratio <= COMMAND_TARGET else 'missed'})")
    print(f"command_peak_rss_mb: {max(ours_rss):.0f}")
    print(f"dgl_2.1.0_peak_rss_mb: {max(theirs_rss):.0f}")


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(results)
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5))
    a.bar(labels, [r["seconds"] for r in results.values()], color="tab:blue")
    a.set_ylabel("seconds")
    a.set_title("partition step vs bare METIS call")
    b.bar(labels, [r["peak_rss_mb"] for r in results.values()], color="tab:orange")
    b.axhline(800, color="red", linestyle="--", label="target 800 MB")
    b.set_ylabel("peak RSS (MB)")
    b.legend()
    for ax in (a, b):
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--edges", type=int, default=4_000_000)
    ap.add_argument("--feat_dim", type=int, default=100)
    ap.add_argument("--parts", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--input", help="use this .npz instead of generating one")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest is kept")
    ap.add_argument("--plot", help="write a PNG of times and peak memory")
    ap.add_argument("--peer_python", help="DGL 2.1.0's interpreter (../shared/peers/dgl/install.sh)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--num_parts", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    with tempfile.TemporaryDirectory(prefix="distgraph-bench-") as tmp:
        graph = Path(args.input) if args.input else Path(tmp) / "graph.npz"
        if not args.input:
            from distgraph.data import generate_sbm, save_npz

            save_npz(generate_sbm(args.nodes, args.edges, feat_dim=args.feat_dim, seed=0), graph)
        print(f"graph: {graph.name} nodes={args.nodes} edges={args.edges} feat_dim={args.feat_dim}")
        if args.peer_python:
            versus_dgl(args.peer_python, neutral_npz(graph, Path(tmp) / "peer.npz"), Path(tmp), args.repeat)
        results = {}
        for k in args.parts:
            for balance in ("plain", "balanced"):
                # the 64-bit reference runs apart: after its 1.1 GB process, the next one starts on colder memory
                kinds = [f"bare:{balance}", f"metis:{balance}"] + (["command"] if balance == "plain" else [])
                bare, ours, *whole = measure(kinds, graph, k, Path(tmp) / f"m{k}", args.repeat)
                bare64, = measure([f"bare64:{balance}"], graph, k, Path(tmp) / f"m{k}", args.repeat)
                results.update({f"bare METIS {balance} k={k}": bare, f"bare METIS 64-bit {balance} k={k}": bare64,
                                f"ours METIS {balance} k={k}": ours})
                tag = f"parts{k}_{balance}"
                print(f"{tag}_metis_library: {bare['library']}")
                print(f"{tag}_bare_metis_seconds: {bare['seconds']:.2f}")
                print(f"{tag}_ours_whole_step_seconds: {ours['seconds']:.2f}")
                print(f"{tag}_ours_over_bare_metis: {ours['seconds'] / bare['seconds']:.2f}")
                # the same two kinds, round by round (each round's pair ran back to back): less
                # at the mercy of one lucky bare run than the ratio of the two bests
                rounds = [o / b for o, b in zip(ours["round_seconds"], bare["round_seconds"])]
                print(f"{tag}_ours_over_bare_metis_median_of_rounds: {statistics.median(rounds):.2f}")
                if whole:  # the command as a user runs it (start-up, loading, the report) against the bare call
                    report_ratio(f"{tag}_command_over_bare_metis", whole[0]["round_seconds"], bare["round_seconds"],
                                 COMMAND_OVER_BARE, at_most=True)
                    print(f"{tag}_command_cpu_seconds: {whole[0]['cpu_seconds']:.2f}")
                    print(f"{tag}_command_peak_rss_mb: {whole[0]['peak_rss_mb']:.0f}")
                print(f"{tag}_bare_metis_cpu_seconds: {bare['cpu_seconds']:.2f}")
                print(f"{tag}_ours_whole_step_cpu_seconds: {ours['cpu_seconds']:.2f}")
                print(f"{tag}_bare_metis_peak_rss_mb: {bare['peak_rss_mb']:.0f}")
                print(f"{tag}_ours_peak_rss_mb: {ours['peak_rss_mb']:.0f}")
                print(f"{tag}_bare_metis64_library: {bare64['library']}")
                print(f"{tag}_bare_metis64_seconds: {bare64['seconds']:.2f}")
                print(f"{tag}_ours_over_bare_metis64: {ours['seconds'] / bare64['seconds']:.2f}")
                print(f"{tag}_bare_metis64_peak_rss_mb: {bare64['peak_rss_mb']:.0f}")
                print(f"{tag}_edge_cut: {ours['edge_cut']:.4f}")
                print(f"{tag}_halo_fraction: {ours['halo_fraction']:.4f}")
                print(f"{tag}_imbalance_nodes_edges_train: {ours['node_imbalance']:.3f} "
                      f"{ours['edge_imbalance']:.3f} {ours['train_imbalance']:.3f}")
            rand, = measure(["random:plain"], graph, k, Path(tmp) / f"r{k}", args.repeat)
            results[f"ours random k={k}"] = rand
            print(f"parts{k}_random_step_seconds: {rand['seconds']:.2f}")
            print(f"parts{k}_random_edge_cut: {rand['edge_cut']:.4f}")
            print(f"parts{k}_random_halo_fraction: {rand['halo_fraction']:.4f}")
            print(f"parts{k}_random_peak_rss_mb: {rand['peak_rss_mb']:.0f}")
        if args.plot:
            plot(results, args.plot)
            print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
