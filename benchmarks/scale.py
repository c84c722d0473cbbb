"""Scale benchmark: tiers of one generator (10M, 100M, 1B edges), each generated in DGL's chunked
format, partitioned into 4 by `distgraph partition` as a user runs it (no method flag), and by the
in-memory METIS path where it fits, for the edge-cut ratio; then trained on: 4 machines launched on
this host (1 server, 1 trainer each), each trainer sampling `--steps` batches alone and then
taking `--steps` GraphSAGE steps ([10, 25], batch 1000). Each partition command runs as a child
under `/usr/bin/time`, so its peak RSS is its own; the training job's processes are watched for
their peak RSS and PSS (shared pages counted once), and the job's total. Every tier's files are
removed before the next.

The graph is `generate sbm` shaped like ogbn-papers100M: 10 edges a node, 172 communities, a
heavy degree tail (exponent 2.1, weights up to 1000x), 16 float16 features.

    python benchmarks/scale.py --tiers 10M 100M --workdir /var/tmp/distgraph-scale [--metis_up_to 100M]

Prints `key: value` lines per tier (tier_<E>_...): partition seconds and peak RSS, bytes per
edge at the peak, bytes on disk, edge cut, METIS's cut and ratio where measured, and the training
job's seeds/s, step time, start-up and memory. With `--peer_python`, DGL 2.1.0's `partition_graph`
(METIS, 4 parts, ../shared/peers/dgl/partition_bench.py) on the same graph up to `--peer_up_to`,
in a memory cgroup capped at `--peer_memory_gb` so an out-of-memory end is its own and recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from common import loopback_ip_config, report

HERE = Path(__file__).resolve().parent

SUFFIX = {"K": 10**3, "M": 10**6, "B": 10**9}


def count(text: str) -> int:
    return int(float(text[:-1]) * SUFFIX[text[-1]]) if text[-1] in SUFFIX else int(text)


def timed(argv: list[str], log: Path, cap_gb: float | None = None) -> tuple[float, int, int, str]:
    """(wall seconds, peak RSS bytes, peak anonymous bytes, stdout) of a child command, run in a
    memory cgroup capped at `cap_gb` when given; its output kept in `log`. RSS counts the file
    pages a process maps (KaMinPar maps its input file), which the kernel reclaims under a cap;
    anonymous memory (sampled every 0.1 s) it cannot, without swap."""
    t0 = time.perf_counter()
    with capped(cap_gb) as enter:
        proc = subprocess.Popen([*enter, "/usr/bin/time", "-f", "PEAK_KB %M", *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        anon = AnonPeak(proc.pid)
        out, err = proc.communicate()
        anon.stop()
    seconds = time.perf_counter() - t0
    log.write_text(out + err)
    if proc.returncode != 0:
        why = " (out of memory at the cap)" if enter.oom() else ""
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}){why}; see {log}")
    peak = int(re.findall(r"PEAK_KB (\d+)", err)[-1]) * 1024
    return seconds, peak, anon.peak, out


class Capped(list):
    """The argv prefix that starts a command inside a memory cgroup (empty: no cap), and what the
    cgroup saw: its peak usage and whether it killed for memory."""

    def __init__(self, group: Path | None):
        super().__init__(["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$0" "$@"'] if group else [])
        self.group = group

    def peak(self) -> int:
        return int((self.group / "memory.max_usage_in_bytes").read_text()) if self.group else 0

    def oom(self) -> bool:
        return bool(self.group) and "oom_kill 1" in (self.group / "memory.oom_control").read_text()


@contextmanager
def capped(cap_gb: float | None, tag: str = "partition") -> Iterator[Capped]:
    """A v1 memory cgroup limited to `cap_gb` (swap too, where accounted) for the body's command."""
    if cap_gb is None:
        yield Capped(None)
        return
    group = CGROUP / f"distgraph-scale-{tag}-{os.getpid()}"
    group.mkdir()
    try:
        for limit in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
            if (group / limit).exists():
                (group / limit).write_text(str(int(cap_gb * 2**30)))
        yield Capped(group)
    finally:
        group.rmdir()


class Poller:
    """Calls `sample(processes)` every `interval` seconds on a thread, with the processes under
    `pid`, until `stop()`."""

    def __init__(self, pid: int, interval: float, sample: Callable[[list[psutil.Process]], None]):
        self.root, self.interval, self.sample = psutil.Process(pid), interval, sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                processes = self.root.children(recursive=True)
            except psutil.NoSuchProcess:  # a child that ended while the tree was listed: list it again next time
                continue
            self.sample(processes)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class AnonPeak(Poller):
    """The peak of the anonymous resident memory summed over the processes under `pid`."""

    def __init__(self, pid: int, interval: float = 0.1):
        self.peak = 0
        super().__init__(pid, interval, self.add)

    def add(self, processes: list[psutil.Process]) -> None:
        total = 0
        for p in processes:
            try:
                status = Path(f"/proc/{p.pid}/status").read_text()
            except OSError:
                continue
            found = re.search(r"RssAnon:\s+(\d+)", status)  # none in an exited, unreaped process
            total += int(found.group(1)) * 1024 if found else 0
        self.peak = max(self.peak, total)


class TreeMemory(Poller):
    """Peak RSS and PSS of every process under `pid`, and the peak of their PSS sum, polled."""

    def __init__(self, pid: int, interval: float = 1.0):
        self.peak: dict[int, tuple[str, int, int]] = {}  # pid -> (name, rss, pss)
        self.total_pss = 0
        super().__init__(pid, interval, self.add)

    def add(self, processes: list[psutil.Process]) -> None:
        total = 0
        for p in processes:
            try:
                info, cmd = p.memory_full_info(), " ".join(p.cmdline()[1:4])
            except psutil.Error:
                continue
            name, rss, pss = self.peak.get(p.pid, (cmd, 0, 0))
            self.peak[p.pid] = (name, max(rss, info.rss), max(pss, info.pss))
            total += info.pss
        self.total_pss = max(self.total_pss, total)


def train(parts: Path, tier: str, machines: int, steps: int, workdir: Path, on_disk: bool = False) -> None:
    """Launch `machines` machines on this host on the tier's partitions and report the trainers'
    figures and the job's memory."""
    ip = loopback_ip_config(workdir / "ip_config.txt", machines)
    cmd = [sys.executable, "-m", "distgraph.cli.main", "launch", "--workspace", str(workdir),
           "--num_trainers", "1", "--num_servers", "1", "--num_samplers", "0", "--num_omp_threads", "1",
           "--part_config", str(parts / "g.json"), "--ip_config", str(ip),
           *(["--features_on_disk"] if on_disk else []),
           f"{sys.executable} {HERE / 'scale_train.py'} --graph_name g --steps {steps} --num_classes 172"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(HERE)})
    memory = TreeMemory(proc.pid)
    out, err = proc.communicate()
    memory.stop()
    wall = time.perf_counter() - t0
    (workdir / "train.log").write_text(out + err)
    if proc.returncode:
        raise SystemExit(f"training on the {tier} tier failed ({proc.returncode}); see {workdir / 'train.log'}")
    rows = [dict(kv.split("=") for kv in m.group(1).split()) for m in re.finditer(r"RESULT (.*)", out)]
    seeds_per_s = [float(r["seeds"]) / float(r["sample_seconds"]) for r in rows]
    report(f"tier_{tier}_features_on_disk", on_disk)
    report(f"tier_{tier}_train_wall_seconds", wall)
    report(f"tier_{tier}_trainer_ready_seconds_max", max(float(r["ready"]) for r in rows))
    report(f"tier_{tier}_sampled_seeds_per_s_total_first_pass", sum(seeds_per_s))
    warm = sum(float(r["warm_seeds"]) / float(r["warm_seconds"]) for r in rows)
    report(f"tier_{tier}_sampled_seeds_per_s_total_warm", warm)
    report(f"tier_{tier}_warm_major_faults_total", sum(int(r["warm_majflt"]) for r in rows))
    report(f"tier_{tier}_warm_minor_faults_total", sum(int(r["warm_minflt"]) for r in rows))
    report(f"tier_{tier}_step_seconds_max", max(float(r["train_seconds"]) / float(r["steps"]) for r in rows))
    report(f"tier_{tier}_final_loss", float(rows[0]["loss"]))
    servers = [v for v in memory.peak.values() if "server" in v[0] or "serve" in v[0]]
    trainers = [v for v in memory.peak.values() if "scale_train" in v[0]]
    for kind, group in (("server", servers), ("trainer", trainers)):
        if group:
            report(f"tier_{tier}_{kind}_peak_rss_mb_max", max(v[1] for v in group) / 2**20)
            report(f"tier_{tier}_{kind}_peak_pss_mb_max", max(v[2] for v in group) / 2**20)
    report(f"tier_{tier}_job_peak_pss_gb", memory.total_pss / 2**30)


PEER_SCRIPT = HERE.parents[1] / "shared" / "peers" / "dgl" / "partition_bench.py"
CGROUP = Path("/sys/fs/cgroup/memory")


def peer_npz(graph: Path, out: Path) -> Path:
    """The tier's graph as the peer's script reads it (src, dst, num_nodes, node arrays), written
    a piece at a time (an .npz is a zip of .npy members), so a tier larger than memory can be
    handed to the peer to measure how it ends."""
    import zipfile

    import numpy as np

    from distgraph.data.chunked import ChunkedGraph

    g = ChunkedGraph(graph)
    (c,) = g.canonical_etypes
    edges = g.num_edges[c]

    def member(zf: zipfile.ZipFile, name: str, dtype, shape: tuple, pieces) -> None:
        with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_2_0(f, {"descr": np.dtype(dtype).str, "fortran_order": False,
                                                     "shape": shape})
            for piece in pieces:
                f.write(np.ascontiguousarray(piece, dtype=dtype).data)

    with zipfile.ZipFile(out, "w") as zf:
        for side in (0, 1):
            member(zf, ("src", "dst")[side], np.int64, (edges,), (pair[side] for pair in g.edge_chunks(c, 1 << 24)))
        member(zf, "num_nodes", np.int64, (), [np.int64(g.num_nodes["_N"])])
        for k, v in g.node_data["_N"].items():
            member(zf, k, v.dtype, tuple(v.shape), (v[i:i + (1 << 24)] for i in range(0, v.shape[0], 1 << 24)))
    return out


def dgl_partition(python: str, npz: Path, parts: int, out: Path, cap_gb: float, tier: str) -> None:
    """DGL's partition_graph (METIS) on `npz`, in its own memory cgroup; its figures or its end."""
    with capped(cap_gb, "peer") as enter:
        t0 = time.perf_counter()
        done = subprocess.run([*enter, python, str(PEER_SCRIPT), "--method", "metis", "--parts", str(parts),
                               "--npz", str(npz), "--out-root", str(out)],
                              capture_output=True, text=True, env={**os.environ, "DGLBACKEND": "pytorch"})
        seconds = time.perf_counter() - t0
        peak, oom = enter.peak(), enter.oom() or done.returncode in (-9, 137)
    wall = re.search(r"partition_graph_wall_s: ([\d.]+)", done.stdout)
    if done.returncode or not wall:
        why = f"out of memory at the {cap_gb:g} GB cap" if oom else f"failed ({done.returncode})"
        report(f"tier_{tier}_dgl_partition", f"{why} after {seconds:.0f} s (cgroup peak {peak / 2**30:.1f} GB)")
        return
    report(f"tier_{tier}_dgl_partition_graph_seconds", float(wall.group(1)))
    report(f"tier_{tier}_dgl_command_seconds", seconds)
    rss = re.search(r"peak_rss_mb: (\d+)", done.stdout)
    report(f"tier_{tier}_dgl_peak_rss_mb", float(rss.group(1)) if rss else float("nan"))
    cut = re.search(r"edge_cut_frac: ([\d.]+)", done.stdout)
    if cut:
        report(f"tier_{tier}_dgl_edge_cut", float(cut.group(1)))


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiers", nargs="+", default=["10M", "100M"])
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--workdir", default="/var/tmp/distgraph-scale")
    ap.add_argument("--metis_up_to", default="100M", help="measure the in-memory METIS path up to this tier")
    ap.add_argument("--keep", action="store_true", help="keep each tier's files")
    ap.add_argument("--steps", type=int, default=200, help="batches sampled, then GraphSAGE steps, per trainer")
    ap.add_argument("--skip_training", action="store_true")
    ap.add_argument("--reuse_input", action="store_true", help="partition the graph an earlier --keep run generated")
    ap.add_argument("--features_on_disk", action="store_true", help="train with `launch --features_on_disk`")
    ap.add_argument("--train_only", action="store_true", help="train on partitions an earlier --keep run left")
    ap.add_argument("--peer_python", help="DGL 2.1.0's interpreter (../shared/peers/dgl/install.sh)")
    ap.add_argument("--peer_up_to", default="100M", help="measure DGL's partition_graph up to this tier")
    ap.add_argument("--peer_memory_gb", type=float, default=20.0)
    ap.add_argument("--memory_cap_gb", type=float, help="run `distgraph partition` in a memory cgroup of this size")
    ap.add_argument("--cap_from", default="1B", help="the smallest tier partitioned under --memory_cap_gb")
    args = ap.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "distgraph.cli.main"]
    report("load_average", os.getloadavg()[0])
    for tier in args.tiers:
        edges = count(tier)
        root = work / tier
        if args.train_only:
            if not (root / "parts" / "g.json").is_file():
                raise SystemExit(f"--train_only needs {root / 'parts'} from an earlier run with --keep")
            train(root / "parts", tier, args.parts, args.steps, root, args.features_on_disk)
            continue
        if not partition_tier(cli, work, tier, edges, args):
            continue
        if not args.skip_training:
            train(root / "parts", tier, args.parts, args.steps, root, args.features_on_disk)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def partition_tier(cli: list[str], work: Path, tier: str, edges: int, args: argparse.Namespace) -> bool:
    """Generate the tier's graph, measure DGL where asked (first: its input file and ours need not
    be on disk together), partition it as a user would, and measure METIS where asked; False if
    the disk cannot hold the tier."""
    nodes = edges // 10
    root = work / tier
    reuse = args.reuse_input and (root / "graph" / "metadata.json").is_file()
    if reuse:
        for old in root.iterdir():  # everything but the tier's generated graph
            if old.name != "graph":
                shutil.rmtree(old) if old.is_dir() else old.unlink()
    need = edges * 16 * 3 + nodes * 64 - (du(root / "graph") if reuse else 0)
    free = shutil.disk_usage(work).free
    if need > free:
        report(f"tier_{tier}_skipped", f"needs about {need / 2**30:.0f} GiB of disk, {free / 2**30:.0f} free")
        return False
    if not reuse:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        t0 = time.perf_counter()
        subprocess.run([*cli, "generate", "sbm", "--num_nodes", str(nodes), "--num_edges", str(edges),
                        "--num_classes", "172", "--degree_exponent", "2.1", "--max_weight", "1000",
                        "--feat_dim", "16", "--out", str(root / "graph")], check=True, capture_output=True)
        report(f"tier_{tier}_generate_seconds", time.perf_counter() - t0)
    report(f"tier_{tier}_input_bytes", du(root / "graph"))
    if args.peer_python and edges <= count(args.peer_up_to):
        npz = peer_npz(root / "graph", root / "peer.npz")
        dgl_partition(args.peer_python, npz, args.parts, root / "dgl", args.peer_memory_gb, tier)
        npz.unlink()
        shutil.rmtree(root / "dgl", ignore_errors=True)
    base = [*cli, "partition", "--input", str(root / "graph"), "--graph_name", "g", "--num_parts",
            str(args.parts)]
    seconds, peak, anon, out = timed([*base, "--out", str(root / "parts")], root / "partition.log",
                                     args.memory_cap_gb if edges >= count(args.cap_from) else None)
    config = json.loads((root / "parts" / "g.json").read_text())
    report(f"tier_{tier}_partitioner", re.search(r"partitioner: ([^(]+)", out).group(1).strip())
    report(f"tier_{tier}_partition_seconds", seconds)
    report(f"tier_{tier}_partition_peak_rss_mb", peak / 2**20)
    report(f"tier_{tier}_partition_bytes_per_edge", peak / edges)
    report(f"tier_{tier}_partition_peak_anon_mb", anon / 2**20)
    if args.memory_cap_gb and edges >= count(args.cap_from):
        report(f"tier_{tier}_partition_memory_cap_gb", args.memory_cap_gb)
    report(f"tier_{tier}_partitions_bytes", du(root / "parts"))
    report(f"tier_{tier}_edge_cut", config["stats"]["edge_cut"])
    stats = config["stats"]
    report(f"tier_{tier}_edge_imbalance", max(stats["part_edges"]) / (sum(stats["part_edges"]) / args.parts))
    if edges <= count(args.metis_up_to):
        m_seconds, m_peak, _, _ = timed([*base, "--part_method", "metis", "--memory_budget", "1000",
                                      "--out", str(root / "metis")], root / "metis.log")
        metis = json.loads((root / "metis" / "g.json").read_text())["stats"]["edge_cut"]
        report(f"tier_{tier}_metis_seconds", m_seconds)
        report(f"tier_{tier}_metis_peak_rss_mb", m_peak / 2**20)
        report(f"tier_{tier}_metis_edge_cut", metis)
        report(f"tier_{tier}_cut_vs_metis", config["stats"]["edge_cut"] / metis)
        shutil.rmtree(root / "metis", ignore_errors=True)
    return True


if __name__ == "__main__":
    main()
