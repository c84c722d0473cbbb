"""`make bench`: run the benchmark scripts and record each one's figures as
`bench-out/<name>.json` (command, machine, date, commit, load average, peer, and a table of the
`key: value` lines the script printed), which `benchmarks/page.py` turns into
docs/benchmarks.md. A benchmark whose data or privileges are missing is skipped with the reason."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
PEER = Path.home() / ".cache" / "distgraph-peers" / "dgl" / "venv" / "bin" / "python"
LINE = re.compile(r"^([A-Za-z0-9_.\-]+): (.+)$")

# name: (title, script arguments, what it needs: None, "peer", "root" or a data folder, order on the page)
BENCHMARKS = {
    "partition": ("Partitioning: the whole step against the bare METIS call",
                  ["partition.py", "--repeat", "3", "--plot", "bench-out/partition_times.png"], None, 1),
    "partition_memory": ("Partitioning memory: a 20M-edge graph by the plain command against KaMinPar alone",
                         ["partition_memory.py", "--rounds", "3"], None, 1.55),
    "kge": ("Knowledge-graph embeddings: TransE_l2 on FB15k-237, 2 processes", ["kge.py"], DATA / "FB15k-237", 2),
    "kge_limits": ("Knowledge-graph embeddings: the training step against its arithmetic alone",
                   ["kge.py", "--measure", "limits", "--rounds", "3", "--max_step", "600", "--rotate_steps", "6"],
                   DATA / "FB15k-237", 2.5),
    "sampling": ("Standalone sampling, 1 and 2 threads", ["sampling.py", "--threads", "1", "2", "--rounds", "5"],
                 "peer", 4),
    "train_graphsage": ("GraphSAGE training: epoch, remote rows, sampling and the step against their limits",
                        ["train_graphsage.py", "--rounds", "3"], "peer", 4),
    "sampler_pool": ("Sampler processes started once per trainer", ["sampler_pool.py"], None, 4),
    "hetero_accuracy": ("Heterogeneous graphs: accuracy on the generated ogbn-mag-shaped graph",
                        ["hetero.py", "--papers", "20000", "--measure", "accuracy"], None, 6),
    "hetero": ("Heterogeneous graphs: typed sampling and RGCN training",
               ["hetero.py", "--papers", "200000", "--rounds", "3"], "peer", 7),
    "kvstore": ("KVStore: pulls and pushes of 128-dim rows", ["kvstore.py"], None, 8),
    "row_kernels": ("Optimiser row kernels", ["row_kernels.py"], None, 8.5),
    "cluster": ("Across hosts: pull, push, sampling, step and epoch against their limits; authentication, encryption",
                ["cluster.py"], "root", 9),
}


def machine() -> str:
    mem = next((int(x.split()[1]) for x in Path("/proc/meminfo").read_text().splitlines()
                if x.startswith("MemTotal")), 0)
    import torch

    return (f"{os.cpu_count()}-core {platform.machine()}, {mem / 2**20:.0f} GiB; Python {platform.python_version()}, "
            f"torch {torch.__version__}")


def commit() -> str | None:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None


def run(name: str, out: Path) -> dict | None:
    """Run one benchmark; its record, or None (with the reason printed) when it cannot run here."""
    title, args, needs, order = BENCHMARKS[name]
    argv = [sys.executable, str(ROOT / "benchmarks" / args[0]), *args[1:]]
    peer = None
    if needs == "root" and os.geteuid() != 0:
        print(f"{name}: skipped (needs root for the test bed's network namespaces)")
        return None
    if isinstance(needs, Path) and not needs.exists():
        print(f"{name}: skipped ({needs} is absent)")
        return None
    if needs == "peer" and PEER.exists():
        argv += ["--peer_python", str(PEER)]
        peer = "DGL 2.1.0, measured in the same run"
    load_before = os.getloadavg()[0]
    start = datetime.datetime.now(datetime.timezone.utc)
    print(f"{name}: {' '.join(argv)}", flush=True)
    done = subprocess.run(argv, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True)
    end = datetime.datetime.now(datetime.timezone.utc)
    if done.returncode != 0:
        print(f"{name}: failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        return None
    rows = [list(m.groups()) for m in map(LINE.match, done.stdout.splitlines()) if m]
    record = {"name": name, "order": order, "title": title,
              "command": "OMP_NUM_THREADS=1 python " + " ".join(["benchmarks/" + args[0], *argv[2:]]),
              "machine": machine(), "date": f"{start:%Y-%m-%d %H:%M}-{end:%H:%M} UTC", "commit": commit(),
              "load_average": f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end",
              "peer": peer or "none in this run (references, where a figure has one, are in its value)",
              "table": {"columns": ["figure", "value"], "rows": rows}}
    (out / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("names", nargs="*", help=f"benchmarks to run (default all: {', '.join(BENCHMARKS)})")
    ap.add_argument("--out", type=Path, default=ROOT / "bench-out")
    args = ap.parse_args()
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark {unknown[0]!r}; one of {', '.join(BENCHMARKS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names or BENCHMARKS:
        run(name, args.out)


if __name__ == "__main__":
    main()
