"""Distributed partitioning benchmark: one tier of the scale generator (DGL's chunked format),
partitioned into 3 by `distgraph partition` on one host (streaming) and by `distgraph partition
--ip_config` with 3 hosts' processes on this machine (loopback), with KaMinPar and with random
assignment. Reports wall seconds, peak RSS of the single-host command, of the coordinator and of
each host's process, the edge cut, and whether the random runs wrote the same bytes.

    python benchmarks/dist_partition.py --edges 10M --workdir /var/tmp/distgraph-dist
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import fresh_dir, loopback_ip_config, report
from scale import count, timed

HOSTS = 3


def same_npy(a: Path, b: Path) -> bool:
    files = sorted(p.relative_to(a) for p in a.rglob("*.npy"))
    return files == sorted(p.relative_to(b) for p in b.rglob("*.npy")) and all(
        filecmp.cmp(a / f, b / f, shallow=False) for f in files)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edges", default="10M")
    ap.add_argument("--workdir", default="/var/tmp/distgraph-dist")
    args = ap.parse_args()
    edges = count(args.edges)
    work = fresh_dir(args.workdir)
    cli = [sys.executable, "-m", "distgraph.cli.main"]
    report("load_average", os.getloadavg()[0])
    t0 = time.perf_counter()
    subprocess.run([*cli, "generate", "sbm", "--num_nodes", str(edges // 10), "--num_edges", str(edges),
                    "--num_classes", "172", "--degree_exponent", "2.1", "--max_weight", "1000", "--feat_dim", "16",
                    "--out", str(work / "graph")], check=True, capture_output=True)
    report("generate_seconds", time.perf_counter() - t0)
    ip_config = loopback_ip_config(work / "ip_config.txt", HOSTS)
    base = [*cli, "partition", "--input", str(work / "graph"), "--graph_name", "g", "--num_parts", str(HOSTS)]
    for method in ("kaminpar", "random"):
        seconds, peak, _, _ = timed([*base, "--part_method", method, "--memory_budget", "0.001",
                                  "--out", str(work / f"single-{method}")], work / f"single-{method}.log")
        report(f"{method}_single_seconds", seconds)
        report(f"{method}_single_peak_rss_mb", peak / 2**20)
        cut = json.loads((work / f"single-{method}" / "g.json").read_text())["stats"]["edge_cut"]
        report(f"{method}_single_edge_cut", cut)
        seconds, _, _, out = timed([*base, "--part_method", method, "--ip_config", str(ip_config),
                                 "--out", str(work / f"dist-{method}")], work / f"dist-{method}.log")
        line = next(x for x in out.splitlines() if x.startswith("peak memory per host"))
        hosts = [int(v) for v in re.findall(r"machine \d+ (\d+) MB", line)]
        report(f"{method}_dist_seconds", seconds)
        report(f"{method}_dist_host_peak_rss_mb", max(hosts))
        report(f"{method}_dist_host_peaks_mb", hosts)
        report(f"{method}_dist_coordinator_peak_rss_mb", int(re.search(r"coordinator\) (\d+) MB", line).group(1)))
        cut = json.loads((work / f"dist-{method}" / "g.json").read_text())["stats"]["edge_cut"]
        report(f"{method}_dist_edge_cut", cut)
        if method == "random":
            report("random_same_bytes", same_npy(work / "single-random", work / "dist-random"))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
