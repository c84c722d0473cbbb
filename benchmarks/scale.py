"""Scale benchmark: tiers of one generator (10M, 100M, 1B edges), each generated in DGL's chunked
format, partitioned into 4 by `distgraph partition` as a user runs it (no method flag), and by the
in-memory METIS path where it fits, for the edge-cut ratio. Each command runs as a child under
`/usr/bin/time`, so its peak RSS is its own. Every tier's files are removed before the next.

The graph is `generate sbm` shaped like ogbn-papers100M: 10 edges a node, 172 communities, a
heavy degree tail (exponent 2.1, weights up to 1000x), 16 float16 features.

    python benchmarks/scale.py --tiers 10M 100M --workdir /var/tmp/distgraph-scale [--metis_up_to 100M]

Prints `key: value` lines per tier (tier_<E>_...): partition seconds and peak RSS, bytes per
edge at the peak, bytes on disk, edge cut, and METIS's cut and ratio where measured.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import report

SUFFIX = {"K": 10**3, "M": 10**6, "B": 10**9}


def count(text: str) -> int:
    return int(float(text[:-1]) * SUFFIX[text[-1]]) if text[-1] in SUFFIX else int(text)


def timed(argv: list[str], log: Path) -> tuple[float, int, str]:
    """(wall seconds, peak RSS bytes, stdout) of a child command; its output kept in `log`."""
    t0 = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "PEAK_KB %M", *argv], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    log.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}); see {log}")
    peak = int(re.findall(r"PEAK_KB (\d+)", done.stderr)[-1]) * 1024
    return seconds, peak, done.stdout


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiers", nargs="+", default=["10M", "100M"])
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--workdir", default="/var/tmp/distgraph-scale")
    ap.add_argument("--metis_up_to", default="100M", help="measure the in-memory METIS path up to this tier")
    ap.add_argument("--keep", action="store_true", help="keep each tier's files")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "distgraph.cli.main"]
    report("load_average", os.getloadavg()[0])
    for tier in args.tiers:
        edges = count(tier)
        nodes = edges // 10
        need = edges * 16 * 3 + nodes * 64
        free = shutil.disk_usage(work).free
        if need > free:
            report(f"tier_{tier}_skipped", f"needs about {need / 2**30:.0f} GiB of disk, {free / 2**30:.0f} free")
            continue
        root = work / tier
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        t0 = time.perf_counter()
        subprocess.run([*cli, "generate", "sbm", "--num_nodes", str(nodes), "--num_edges", str(edges),
                        "--num_classes", "172", "--degree_exponent", "2.1", "--max_weight", "1000", "--feat_dim", "16",
                        "--out", str(root / "graph")], check=True, capture_output=True)
        report(f"tier_{tier}_generate_seconds", time.perf_counter() - t0)
        report(f"tier_{tier}_input_bytes", du(root / "graph"))
        base = [*cli, "partition", "--input", str(root / "graph"), "--graph_name", "g", "--num_parts",
                str(args.parts)]
        seconds, peak, out = timed([*base, "--out", str(root / "parts")], root / "partition.log")
        config = json.loads((root / "parts" / "g.json").read_text())
        report(f"tier_{tier}_partitioner", re.search(r"partitioner: (\S+ \S+)", out).group(1))
        report(f"tier_{tier}_partition_seconds", seconds)
        report(f"tier_{tier}_partition_peak_rss_mb", peak / 2**20)
        report(f"tier_{tier}_partition_bytes_per_edge", peak / edges)
        report(f"tier_{tier}_partitions_bytes", du(root / "parts"))
        report(f"tier_{tier}_edge_cut", config["stats"]["edge_cut"])
        stats = config["stats"]
        report(f"tier_{tier}_edge_imbalance", max(stats["part_edges"]) / (sum(stats["part_edges"]) / args.parts))
        if edges <= count(args.metis_up_to):
            m_seconds, m_peak, _ = timed([*base, "--part_method", "metis", "--memory_budget", "1000",
                                          "--out", str(root / "metis")], root / "metis.log")
            metis = json.loads((root / "metis" / "g.json").read_text())["stats"]["edge_cut"]
            report(f"tier_{tier}_metis_seconds", m_seconds)
            report(f"tier_{tier}_metis_peak_rss_mb", m_peak / 2**20)
            report(f"tier_{tier}_metis_edge_cut", metis)
            report(f"tier_{tier}_cut_vs_metis", config["stats"]["edge_cut"] / metis)
            shutil.rmtree(root / "metis", ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
