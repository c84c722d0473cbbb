"""Peak memory of a plain `distgraph partition --num_parts 4` (no method flag) on a 20M-edge graph
(2M nodes, 4-dim features, an .npz), against the same command with KaMinPar alone on the whole
graph (the streamed coarse level switched off), rounds alternating. Target: peak RSS <= 100 MB +
16 bytes an edge.

    python benchmarks/partition_memory.py --workdir /var/tmp/distgraph-pmem [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from common import fresh_dir, report, report_load
from scale import count, timed

ALONE = ("import sys; import distgraph.partition.stream.kaminpar as k; k.COARSEN_ABOVE_ENTRIES = 1 << 62; "
         "from distgraph.cli.main import main; sys.exit(main(sys.argv[1:]))")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edges", default="20M")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir", default="/var/tmp/distgraph-pmem")
    args = ap.parse_args()
    edges = count(args.edges)
    work = fresh_dir(args.workdir)
    report_load("start")
    graph = work / "sbm.npz"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "distgraph.cli.main", "generate", "sbm", "--num_nodes", str(edges // 10),
                    "--num_edges", str(edges), "--num_classes", "64", "--feat_dim", "4", "--out", str(graph)],
                   check=True, capture_output=True)
    report("generate_seconds", time.perf_counter() - t0)
    command = ["partition", "--input", str(graph), "--graph_name", "g", "--num_parts", "4", "--overwrite"]
    runs = {"ours": [], "alone": []}
    for r in range(args.rounds):
        for name in ("ours", "alone") if r % 2 == 0 else ("alone", "ours"):
            head = [sys.executable, "-m", "distgraph.cli.main"] if name == "ours" else [sys.executable, "-c", ALONE]
            out = work / name
            seconds, peak, anon, _ = timed([*head, *command, "--out", str(out)], work / f"{name}.log")
            cut = json.loads((out / "g.json").read_text())["stats"]["edge_cut"]
            runs[name].append((seconds, peak, anon, cut))
    for name, rows in runs.items():
        report(f"{name}_seconds_runs", " ".join(f"{s:.1f}" for s, *_ in rows))
        report(f"{name}_peak_rss_mb_runs", " ".join(f"{p / 2**20:.0f}" for _, p, *_ in rows))
        report(f"{name}_peak_anonymous_mb_runs", " ".join(f"{a / 2**20:.0f}" for *_, a, _ in rows))
        report(f"{name}_edge_cut_runs", " ".join(f"{c:.5f}" for *_, c in rows))
        report(f"{name}_peak_rss_mb", statistics.median(p for _, p, *_ in rows) / 2**20)
    limit = 100 * 2**20 + 16 * edges
    worst = max(p for _, p, *_ in runs["ours"])
    report("target_peak_rss_mb", limit / 2**20)
    report("peak_rss_ratio_to_alone", statistics.median(o[1] / a[1] for o, a in zip(runs["ours"], runs["alone"])))
    report("edge_cut_ratio_to_alone", statistics.median(o[3] / a[3] for o, a in zip(runs["ours"], runs["alone"])))
    report(f"peak_target_le_{limit / 2**20:.0f}MB", "met" if worst <= limit else "missed")
    report_load("end")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
