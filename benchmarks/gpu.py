"""The GPU machine's benchmark (issue 43, item 4): every GPU check and the multi-core figures
that two shared cores cannot give, in one run of about 8 minutes, written as `key: value`
lines and as a JSON record (OUT/gpu.json, rewritten after every part, so a run cut short
keeps what it measured).

How to run it on the lent machine (one H200, 16 cores): the device tool's `run`, from the
repository root, with the wheels and FB15k-237 carried (both git-ignored; see below to make
them):

    run(command="bash benchmarks/gpu_device.sh", carry=[".whl", ".gpu-data"], timeout_s=600)

benchmarks/gpu_device.sh installs .whl/*.whl into /tmp/site, builds the C kernels
(setup.py build_ext --inplace), then at once: starts building PyG's neighbour sampler
(below), generates and partitions the graphs (`gpu.py --prepare_only ...`), and runs the tests
marked gpu (`make test-gpu`'s pytest line, cut at 120 s); then this script with the time left
(`--budget_s`). Its $OUT: gpu.json, gpu.log (this script's lines), tests.log, setup.log,
logs.tar.gz (each run's own output). Here, without a GPU:

    python benchmarks/gpu.py --dry_run        # tiny graphs, few steps, --device cpu, PyG on CPU

To make the carried folders (once, in the repository root; ~31 MB with the tracked files):
`python -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
--platform manylinux_2_28_x86_64 ... -d .whl pyzmq==27.3.0 pymetis==2025.2.2 cmeel-metis==5.2.1.1
cmeel-gklib==0.0.1 cmeel==0.62.0 kaminpar==3.7.3` (the brief's platform list, with
manylinux_2_24 and _2_26 added); .whl/pyg-lib-src: PYG_LIB_SOURCES and the headers they
include from pyg-lib at PYG_LIB_COMMIT (pyg_lib/csrc/{macros.h, random/cpu/rand_engine.h,
sampler/{neighbor.h, subgraph.h, cpu/{neighbor_kernel.h, index_tracker.h, mapper.h}},
utils/{check.h, types.h, cpu/convert.h}}, LICENSE), third_party/parallel-hashmap from
torch-sparse 0.6.18's sdist, and pyg_lib/csrc/config.h defining WITH_MKL_BLAS() 0 and
NO_METIS() 1; `cp -r ../shared/data/FB15k-237 .gpu-data/`.

PyG's sampler: PyG's `NeighborLoader` samples with pyg-lib (or torch-sparse, whose sampler
makes a torch tensor for every random draw: ~1 s a batch, no fair baseline), and pyg-lib has
no wheel for the machine's torch 2.11 (nor is it on PyPI). Its CPU neighbour sampler (three
C++ files and their headers) is built against the machine's torch (`build_pyg_sampler`,
`--prepare_only pyg_sampler`: a few minutes on one core, in gpu_device.sh's preparation) and
PyG is given the flags `import pyg_lib` would set for it, so the loader runs PyG's pyg-lib
path unchanged (`pyg_sampler_backend` says which ran).

Parts (`--parts`; by default env, kge, gnn_200k, cores, gnn_10M, in that order: a part that
would start after the budget is recorded as skipped, one running at the budget is stopped):

- `env`: torch, CUDA device, cores; `h2d_pinned_GBps`: host-to-device copy bandwidth from
  pinned memory (256 MiB copies; `h2d_pageable_GBps`, `d2h_pinned_GBps` beside it); on the
  CPU (dry run) a host copy stands in.
- `gnn_200k`, `gnn_10M`: GraphSAGE (2 layers, hidden 64, fanouts [10, 25], batch 1000, Adam
  0.003, dropout 0.5) on one GPU, `--epochs` epochs, the first a warm-up: the 200k-node
  benchmark graph (`generate sbm --num_nodes 200000 --num_edges 4000000 --feat_dim 100`,
  train_graphsage.py's) and the 10M-edge scale tier (scale.py's generator: 1M nodes, 172
  classes, degree exponent 2.1, 16 features). Each of: `ours_standalone`
  (examples/graphsage/train_dist.py --num_gpus 1 on a 1-part partition, no servers),
  `ours_4_machines` (the same script under `distgraph launch`, 4 machines on this host, METIS,
  1 server + 1 trainer each, all four trainers on the one GPU, DDP over gloo) and `pyg`
  (one process: PyG's NeighborLoader with num_neighbors [25, 10], PyG's order of the same
  fanouts, and SAGEConv, the same model, optimiser, batch and epochs). Per run:
  `_epoch_seconds` (median of the warm epochs; trainer 0's under launch),
  `_seeds_per_s` (training seeds over that), `_gpu_busy_share` (nvidia-smi's utilization
  over the timed epochs' window, validation passes included: the share of time a kernel ran),
  `_val_acc` / `_test_acc` (test at the best validation epoch; sampled [10, 25] evaluation
  in both). Scored: `<run>_over_pyg_epoch` <= 0.7 with the test accuracies within 0.01
  (`..._target_le_0.7_at_equal_accuracy`).
- `kge`: FB15k-237, TransE_l2 at DGL-KE's dimension-400 recipe (benchmarks/kge.py's
  STEP_RECIPES), `kge train --test`, the same positive triples in each run: `gpu` (--gpu 0,
  one process: both tables held on the GPU), `gpu_mix` (--gpu 0 --mix_cpu_gpu: entity rows
  pulled from CPU memory each step, their gradients sent back), `cpu` (the same command without
  --gpu, --num_proc processes on the machine's cores, --max_step split among them).
  `kge_<run>_triples_per_s`, `_MRR`, `_HITS@10`, train and test seconds; `kge_gpu_over_cpu_
  throughput`, `kge_gpu_minus_cpu_mrr`; `kge_gpu_mix_row_bytes_per_s`: bytes of embedding
  rows moved per second (a step's entity rows, positives and negatives, to the device and
  their gradient rows back, times steps/s; relations stay on the device) and
  `kge_gpu_mix_row_bytes_share_of_h2d`: that over `h2d_pinned_GBps`.
- `cores`: on the 200k graph, each launched machine's processes pinned to 4 cores of their
  own (`Pinner`: every thread of a process whose DISTGRAPH_MACHINE_ID is m runs on cores
  4m..4m+3), alternating rounds: `cores_3_machines_over_1_time_per_seed_ratio` (the warm
  epoch's seconds per training seed of each trainer, 3 machines against 1; <= 1.1),
  `pinned_2_step_seconds_over_slowest_stage_ratio` (train_graphsage.py's `step` figure on 2
  machines; <= 1.25), `loopback_{host,wire}_sampling_...` (its `sampling` figure: each
  trainer's seeds/s on 2 machines against the same batches sampled standalone in one
  process), and `sampling_threads_threads_2_over_2x_threads_1_ratio` (benchmarks/sampling.py
  --threads 1 2 with its process on 4 cores: >= 0.9, i.e. 2 threads >= 1.8x one).

Options added elsewhere for this script: none (train_graphsage.py, sampling.py and kge.py
are imported or run as they are).
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from common import SHARED, report  # noqa: E402

FANOUTS = [10, 25]  # input layer first (DGL's order); PyG's num_neighbors is seeds' hop first
BATCH = 1000
TARGET_GNN = 0.7  # our epoch / PyG's, at equal accuracy
ACC_TOLERANCE = 0.01
TARGET_MACHINES = 1.1  # 3-machine time per seed / 1-machine
TARGET_STEP = 1.25  # step / slowest stage
TARGET_THREADS = 1.8  # 2 threads / 1
CORES_PER_MACHINE = 4
# name: (nodes, edges, extra `generate sbm` flags); the dry run divides nodes and edges by DRY
TIERS = {
    "200k": (200_000, 4_000_000, ["--feat_dim", "100", "--seed", "0"]),
    "10M": (1_000_000, 10_000_000, ["--num_classes", "172", "--degree_exponent", "2.1", "--max_weight", "1000",
                                    "--feat_dim", "16", "--seed", "0"]),
}
DRY = 10
PARTS = ["env", "kge", "gnn_200k", "cores", "gnn_10M"]
# pyg-lib's neighbour sampler: its files at this commit, with parallel-hashmap (its submodule,
# as torch-sparse 0.6.18's sdist ships it) and a config.h without MKL, in .whl/pyg-lib-src
PYG_LIB_SRC = "pyg-lib-src"
PYG_LIB_COMMIT = "764e3a492eb0d1ed9616808ec9fec2416f8d6b7d"
PYG_LIB_SOURCES = ["pyg_lib/csrc/sampler/cpu/neighbor_kernel.cpp", "pyg_lib/csrc/sampler/neighbor.cpp",
                   "pyg_lib/csrc/utils/check.cpp"]


# ---------------------------------------------------------------- the record

class Record:
    """Every `key: value` line printed (ours and the reused benchmarks') kept under the part
    that printed it, and written to OUT/gpu.json after each part."""

    def __init__(self, path: Path, meta: dict):
        self.path, self.data, self.part = path, {**meta, "parts": {}}, None

    def start(self, part: str) -> None:
        self.part = part
        self.data["parts"][part] = {"status": "running", "figures": {}}
        self.write()

    def line(self, text: str) -> None:
        m = re.match(r"^([a-z0-9][\w.@%+-]*): (.*)$", text)
        if m and self.part:
            self.data["parts"][self.part]["figures"][m.group(1)] = _number(m.group(2))

    def end(self, status: str, seconds: float, error: str | None = None) -> None:
        entry = self.data["parts"][self.part]
        entry.update(status=status, seconds=round(seconds, 1))
        if error:
            entry["error"] = error
        self.write()
        self.part = None

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        tmp.replace(self.path)


def _number(text: str):
    try:
        return float(text.replace(",", "")) if re.fullmatch(r"-?[\d,]*\.?\d+(e-?\d+)?", text) else text
    except ValueError:
        return text


class Tee:
    """stdout that also hands each complete line to the record."""

    def __init__(self, stream, record: Record):
        self.stream, self.record, self.buf = stream, record, ""

    def write(self, s: str) -> int:
        self.stream.write(s)
        self.buf += s
        while "\n" in self.buf:
            line, self.buf = self.buf.split("\n", 1)
            self.record.line(line)
        return len(s)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()


class PartTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise PartTimeout()


def stop_descendants() -> None:
    """End every process this one started that is still running (a part cut short by the
    budget): SIGTERM (a launcher stops its job and sweeps its shared memory), then SIGKILL."""
    import psutil

    me = psutil.Process()
    procs = me.children(recursive=True)
    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=5)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass


def become_subreaper() -> None:
    """Orphans of our children (a killed launcher's servers) become ours, so `stop_descendants` finds them."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


# ---------------------------------------------------------------- helpers

def run_cmd(cmd: list[str], cwd: Path | None = None, env: dict | None = None, log: Path | None = None,
            on_line=None, cores: list[int] | None = None) -> tuple[int, str, list[tuple[float, str]]]:
    """(exit code, output, [(monotonic time, line)]) of a command, stdout and stderr together,
    each line stamped as it arrives (`on_line(line)` called too); on `cores` only, if given."""
    pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None
    proc = subprocess.Popen(cmd, cwd=cwd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1, preexec_fn=pin)
    stamped = []
    try:
        for line in proc.stdout:
            stamped.append((time.monotonic(), line.rstrip("\n")))
            if on_line:
                on_line(line.rstrip("\n"))
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
    out = "\n".join(line for _, line in stamped)
    if log:
        log.write_text(out)
    return proc.returncode, out, stamped


def dg_cli() -> list[str]:
    return [sys.executable, "-m", "distgraph.cli.main"]


def tier_size(tier: str, dry: bool) -> tuple[int, int, list[str]]:
    nodes, edges, extra = TIERS[tier]
    return (nodes // DRY, edges // DRY, extra) if dry else (nodes, edges, extra)


def prepare_tier(data: Path, tier: str, dry: bool, parts: tuple[int, ...]) -> Path:
    """The tier's graph (DATA/<tier>/g.npz) and its partitions DATA/<tier>/p<k>/bench.json
    (1 part; METIS otherwise, balanced as train_graphsage.py's), made if missing."""
    import distgraph as dg

    root = data / tier
    root.mkdir(parents=True, exist_ok=True)
    npz = root / "g.npz"
    nodes, edges, extra = tier_size(tier, dry)
    if not npz.exists():
        t0 = time.perf_counter()
        code, out, _ = run_cmd([*dg_cli(), "generate", "sbm", "--num_nodes", str(nodes), "--num_edges", str(edges),
                                *extra, "--out", str(root / "g.tmp.npz")])
        if code:
            raise SystemExit(f"generate failed:\n{out[-2000:]}")
        (root / "g.tmp.npz").rename(npz)
        report(f"{tier}_generate_seconds", time.perf_counter() - t0)
    todo = [k for k in parts if not (root / f"p{k}" / "bench.json").exists()]
    if todo:
        g = dg.load_npz(npz)
        cats = dg.partition.split_categories(g)
        for k in todo:
            t0 = time.perf_counter()
            shutil.rmtree(root / f"p{k}", ignore_errors=True)
            if k == 1:
                dg.partition_graph(g, "bench", 1, root / "p1.tmp")
            else:
                dg.partition_graph(g, "bench", k, root / f"p{k}.tmp", balance_ntypes=cats, balance_edges=True)
            (root / f"p{k}.tmp").rename(root / f"p{k}")
            report(f"{tier}_partition_{k}_seconds", time.perf_counter() - t0)
    return root


TIER_PARTS = {"200k": (1, 2, 3, 4), "10M": (1, 4)}


# ---------------------------------------------------------------- GPU watch and bandwidth

class GpuMonitor:
    """nvidia-smi's GPU utilization (the share of each sample period in which a kernel ran) and
    memory in use, sampled every 100 ms in the background; nothing where nvidia-smi is absent."""

    def __init__(self):
        self.samples: list[tuple[float, float, float]] = []
        self.proc = None
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used",
                                          "--format=csv,noheader,nounits", "-lms", "100", "-i", "0"],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                util, mem = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((time.monotonic(), util, mem))

    def window(self, t0: float, t1: float) -> tuple[float | None, float | None]:
        """(mean busy share, peak MiB in use) between two monotonic times."""
        got = [(u, m) for t, u, m in list(self.samples) if t0 <= t <= t1]
        if not got:
            return None, None
        return statistics.mean(u for u, _ in got) / 100, max(m for _, m in got)

    def close(self) -> None:
        if self.proc:
            self.proc.terminate()
            self.proc.wait()


MONITOR: GpuMonitor | None = None


def copy_bandwidth(device: str) -> dict[str, float]:
    """GB/s of 256 MiB copies: host to device from pinned and from pageable memory, device to
    host into pinned memory; on the CPU, a host-to-host copy (the dry run's stand-in)."""
    import torch

    n = (64 if device == "cpu" else 256) * 2**20 // 4

    def timed(dst, src, sync) -> float:
        dst.copy_(src, non_blocking=True)
        sync()
        reps, t0 = 10, time.perf_counter()
        for _ in range(reps):
            dst.copy_(src, non_blocking=True)
        sync()
        return reps * src.numel() * 4 / (time.perf_counter() - t0) / 1e9

    if device == "cpu":
        return {"host_copy_GBps": timed(torch.empty(n), torch.ones(n), lambda: None)}
    sync = torch.cuda.synchronize
    pinned, pageable, dev = torch.ones(n, pin_memory=True), torch.ones(n), torch.empty(n, device=device)
    return {"h2d_pinned_GBps": timed(dev, pinned, sync), "h2d_pageable_GBps": timed(dev, pageable, sync),
            "d2h_pinned_GBps": timed(pinned, dev, sync)}


def part_env(args, ctx: dict) -> None:
    import torch

    report("torch", torch.__version__)
    report("cuda_available", torch.cuda.is_available())
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        report("gpu", f"{p.name}, {p.total_memory / 2**30:.0f} GiB, {torch.cuda.device_count()} device(s)")
        report("cuda", torch.version.cuda)
    report("cores", os.cpu_count())
    report("memory_GiB", os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)
    report("nvidia_smi", "yes" if MONITOR and MONITOR.proc else "no (no GPU busy shares)")
    try:
        import torch_geometric

        report("torch_geometric", torch_geometric.__version__)
    except ImportError:
        report("torch_geometric", "missing")
    for k, v in copy_bandwidth(args.device).items():
        ctx[k] = v
        report(k, v)


# ---------------------------------------------------------------- GraphSAGE: ours and PyG

EPOCH_LINE = re.compile(r"epoch (\d+): (\d+) steps in ([\d.]+) s, loss ([\d.]+), val acc ([\d.]+)")
BEST_LINE = re.compile(r"best val acc ([\d.]+) at epoch (-?\d+); test acc ([\d.]+)")


def epochs_of(stamped: list[tuple[float, str]]) -> list[dict]:
    """The example's (or our PyG role's) epoch lines: seconds, validation accuracy, and the
    monotonic time the line came."""
    out = []
    for t, line in stamped:
        m = EPOCH_LINE.search(line)
        if m:
            out.append({"epoch": int(m.group(1)), "steps": int(m.group(2)), "seconds": float(m.group(3)),
                        "val": float(m.group(5)), "at": t})
    return out


def report_gnn_run(name: str, stamped: list, seeds: int) -> dict:
    """Report one run's warm epochs; returns its figures."""
    rows = epochs_of(stamped)
    best = [BEST_LINE.search(line) for _, line in stamped]
    best = [m for m in best if m]
    if not rows or not best:
        raise SystemExit(f"{name}: no epoch or result lines")
    warm = rows[1:] or rows
    seconds = statistics.median(r["seconds"] for r in warm)
    report(f"{name}_epoch_seconds_runs", " ".join(f"{r['seconds']:.3f}" for r in rows))
    report(f"{name}_epoch_seconds", seconds)
    report(f"{name}_steps_per_epoch", rows[0]["steps"])
    report(f"{name}_seeds_per_s", seeds / seconds)
    busy = peak = None
    if MONITOR:
        # the warm epochs' window: from the first one's line back by its seconds, to the last
        # one's line; each line comes after its epoch's validation pass, so the window holds those
        busy, peak = MONITOR.window(warm[0]["at"] - warm[0]["seconds"], warm[-1]["at"])
    report(f"{name}_gpu_busy_share", busy if busy is not None else "n/a")
    if peak is not None:
        report(f"{name}_gpu_memory_peak_MiB", peak)
    report(f"{name}_val_acc", float(best[-1].group(1)))
    report(f"{name}_test_acc", float(best[-1].group(3)))
    return {"seconds": seconds, "test": float(best[-1].group(3))}


def gnn_flags(args) -> list[str]:
    return ["--graph_name", "bench", "--num_epochs", str(args.epochs), "--fan_out", ",".join(map(str, FANOUTS)),
            "--batch_size", str(BATCH), "--num_hidden", "64", "--lr", "0.003", "--dropout", "0.5",
            "--num_gpus", "0" if args.device == "cpu" else "1"]


EXAMPLE = REPO / "examples" / "graphsage" / "train_dist.py"


def ours_standalone(root: Path, args, work: Path, tier: str) -> list:
    cmd = [sys.executable, str(EXAMPLE), *gnn_flags(args), "--part_config", str(root / "p1" / "bench.json"),
           "--num_threads", str(args.gnn_threads)]
    code, out, stamped = run_cmd(cmd, cwd=work, env={"OMP_NUM_THREADS": str(args.gnn_threads)},
                                 log=work / f"{tier}_ours_standalone.log")
    if code:
        raise SystemExit(f"train_dist.py standalone failed ({code}):\n{out[-3000:]}")
    return stamped


def ours_machines(root: Path, args, work: Path, tier: str, machines: int) -> list:
    from common import loopback_ip_config

    ip = loopback_ip_config(work / f"ip_{machines}.txt", machines)
    threads = max(1, args.gnn_threads // machines)
    cmd = [*dg_cli(), "launch", "--workspace", str(work), "--num_trainers", "1", "--num_servers", "1",
           "--num_samplers", "0", "--num_omp_threads", str(threads), "--part_config",
           str(root / f"p{machines}" / "bench.json"), "--ip_config", str(ip),
           " ".join([sys.executable, str(EXAMPLE), *gnn_flags(args), "--num_threads", str(threads)])]
    code, out, stamped = run_cmd(cmd, cwd=work, log=work / f"{tier}_ours_{machines}_machines.log")
    if code:
        raise SystemExit(f"train_dist.py on {machines} machines failed ({code}):\n{out[-3000:]}")
    return stamped


def _alive(lock: Path) -> bool:
    try:
        os.kill(int(lock.read_text()), 0)
        return True
    except (OSError, ValueError):
        return False


def pyg_sampler(args) -> None:
    """Set args.pyg_sampler: given, built already (`--prepare_only pyg_sampler`), or built now;
    none where pyg-lib is installed. Prints `pyg_sampler_...` lines."""
    try:
        import torch_geometric.typing as pyg_typing

        lock = args.work / "pyg-sampler" / "building"
        while lock.exists() and _alive(lock):  # gpu_device.sh's `--prepare_only pyg_sampler`, still building
            time.sleep(1)
        built = sorted((args.work / "pyg-sampler").glob("pyg_neighbor_sample*.so"))
        if not args.pyg_sampler and built:
            args.pyg_sampler = str(built[0])
        if not args.pyg_sampler and not pyg_typing.WITH_PYG_LIB:
            t0 = time.perf_counter()
            args.pyg_sampler = str(build_pyg_sampler(REPO / ".whl" / PYG_LIB_SRC, args.work / "pyg-sampler"))
            report("pyg_sampler_build_seconds", time.perf_counter() - t0)
    except (ImportError, SystemExit, OSError) as e:
        report("pyg_sampler_build_failed", str(e).splitlines()[0] if str(e) else type(e).__name__)
        print(str(e)[-3000:], flush=True)


def pyg_run(root: Path, args, work: Path, tier: str) -> list:
    args.pyg_build.join()  # the build started with the run
    cmd = [sys.executable, str(HERE), "--role", "pyg", "--npz", str(root / "g.npz"), "--device", args.device,
           "--epochs", str(args.epochs), "--gnn_threads", str(args.gnn_threads), "--pyg_sampler",
           str(args.pyg_sampler or "")]
    code, out, stamped = run_cmd(cmd, cwd=work, env={"OMP_NUM_THREADS": str(args.gnn_threads)},
                                 log=work / f"{tier}_pyg.log")
    if code:
        raise SystemExit(f"the PyG run failed ({code}):\n{out[-3000:]}")
    for _, line in stamped:
        if line.startswith("pyg_sampler_backend:"):
            print(line, flush=True)
    return stamped


def part_gnn(tier: str, args, ctx: dict) -> None:
    import numpy as np

    root = prepare_tier(args.data, tier, args.dry_run, TIER_PARTS[tier])
    work = args.work / f"gnn_{tier}"
    work.mkdir(parents=True, exist_ok=True)
    with np.load(root / "g.npz") as d:
        seeds, nodes, edges = int(d["ndata/train_mask"].sum()), int(d["num_nodes"]), len(d["src"])
    report(f"{tier}_graph", f"{nodes} nodes, {edges} edges, {seeds} training seeds; fanouts {FANOUTS}, "
                            f"batch {BATCH}, {args.epochs} epochs, {args.gnn_threads} threads, device {args.device}")
    got = {}
    for name, fn in (("pyg", lambda: pyg_run(root, args, work, tier)),
                     ("ours_standalone", lambda: ours_standalone(root, args, work, tier)),
                     ("ours_4_machines", lambda: ours_machines(root, args, work, tier, 4))):
        try:
            got[name] = report_gnn_run(f"{tier}_{name}", fn(), seeds)
        except SystemExit as e:  # one run failing keeps the others
            report(f"{tier}_{name}_failed", str(e).splitlines()[0])
            print(str(e), flush=True)
    if "pyg" in got:
        for name in ("ours_standalone", "ours_4_machines"):
            if name in got:
                ratio = got[name]["seconds"] / got["pyg"]["seconds"]
                gap = got[name]["test"] - got["pyg"]["test"]
                report(f"{tier}_{name}_over_pyg_epoch", ratio)
                report(f"{tier}_{name}_minus_pyg_test_acc", gap)
                met = ratio <= TARGET_GNN and gap >= -ACC_TOLERANCE
                report(f"{tier}_{name}_target_le_{TARGET_GNN}_at_equal_accuracy", "met" if met else "missed")


def build_pyg_sampler(src: Path, out: Path) -> Path:
    """pyg-lib's CPU neighbour sampler (its `pyg::neighbor_sample` schema and CPU kernel, the
    files of PYG_LIB_FILES) built against this torch: a .so that registers the op PyG's
    NeighborLoader calls when pyg-lib is installed."""
    done = list(out.glob("pyg_neighbor_sample*.so"))
    if done:
        return done[0]
    out.mkdir(parents=True, exist_ok=True)
    (out / "building").write_text(str(os.getpid()))
    try:
        return _build(src, out)
    finally:
        (out / "building").unlink(missing_ok=True)


def _build(src: Path, out: Path) -> Path:
    (out / "setup_op.py").write_text(
        "from setuptools import setup\n"
        "from torch.utils.cpp_extension import BuildExtension, CppExtension\n"
        f"b = {str(src)!r}\n"
        f"sources = [b + '/' + f for f in {PYG_LIB_SOURCES!r}]\n"
        "setup(name='pyg_neighbor_sample', ext_modules=[CppExtension('pyg_neighbor_sample', sources, "
        "include_dirs=[b, b + '/third_party/parallel-hashmap'], extra_compile_args=['-O3', '-g0'])], "
        "cmdclass={'build_ext': BuildExtension.with_options(use_ninja=False)})\n")
    code, text, _ = run_cmd([sys.executable, "setup_op.py", "build_ext", "--inplace"], cwd=out,
                            log=out / "build.log")
    done = list(out.glob("pyg_neighbor_sample*.so"))
    if code or not done:
        raise SystemExit(f"building pyg-lib's neighbor_sample failed:\n{text[-3000:]}")
    return done[0]


def pyg_role(args) -> None:
    """One process of PyG: NeighborLoader + SAGEConv, DGL's GraphSAGE example's settings;
    prints the example's epoch and result lines."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.gnn_threads)
    torch.manual_seed(0)
    import torch_geometric.typing as pyg_typing

    if pyg_typing.WITH_PYG_LIB:
        backend = "pyg-lib (installed)"
    else:
        if not args.pyg_sampler:
            raise SystemExit("PyG has no pyg-lib here: give --pyg_sampler (the .so build_pyg_sampler makes)")
        torch.ops.load_library(args.pyg_sampler)
        # the flags `import pyg_lib` would set, for the sampler's call (the only pyg-lib op used):
        # torch.ops.pyg.neighbor_sample with edge times and weights in its schema
        pyg_typing.WITH_PYG_LIB = True
        pyg_typing.WITH_EDGE_TIME_NEIGHBOR_SAMPLE = True
        pyg_typing.WITH_WEIGHTED_NEIGHBOR_SAMPLE = True
        backend = f"pyg-lib's CPU neighbor_sample kernel ({PYG_LIB_COMMIT[:10]}), built here"
    print(f"pyg_sampler_backend: {backend}", flush=True)
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    from torch_geometric.nn import SAGEConv

    device = torch.device("cuda" if args.device == "cuda" else "cpu")
    with np.load(args.npz) as d:
        data = Data(x=torch.from_numpy(d["ndata/feat"]).float(), y=torch.from_numpy(d["ndata/label"]),
                    edge_index=torch.stack([torch.from_numpy(d["src"]), torch.from_numpy(d["dst"])]),
                    num_nodes=int(d["num_nodes"]))
        split = {k: torch.nonzero(torch.from_numpy(d[f"ndata/{k}_mask"])).flatten() for k in ("train", "val", "test")}
    classes = int(data.y.max()) + 1

    class SAGE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList([SAGEConv(data.num_features, 64), SAGEConv(64, classes)])

        def forward(self, x, edge_index):
            for i, conv in enumerate(self.convs):
                x = conv(x, edge_index)
                if i < len(self.convs) - 1:
                    x = F.dropout(F.relu(x), 0.5, self.training)
            return x

    model = SAGE().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    hops = list(reversed(FANOUTS))  # PyG: the seeds' hop first

    def loader(nodes, batch, shuffle):
        return NeighborLoader(data, num_neighbors=hops, input_nodes=nodes, batch_size=batch, shuffle=shuffle)

    train_loader = loader(split["train"], BATCH, True)

    def accuracy(nodes) -> float:
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for b in loader(nodes, 10000, False):
                b = b.to(device)
                pred = model(b.x, b.edge_index)[:b.batch_size].argmax(1)
                correct += int((pred == b.y[:b.batch_size]).sum())
                total += b.batch_size
        model.train()
        return correct / max(total, 1)

    best = None
    for epoch in range(args.epochs):
        begin = time.perf_counter()
        steps = loss_sum = seeds = 0
        for b in train_loader:
            b = b.to(device)
            logits, labels = model(b.x, b.edge_index)[:b.batch_size], b.y[:b.batch_size]
            loss = F.cross_entropy(logits, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += loss.item() * labels.numel()
            seeds += labels.numel()
            steps += 1
        seconds = time.perf_counter() - begin
        val = accuracy(split["val"])
        if best is None or val > best[1]:
            best = (epoch, val, accuracy(split["test"]))
        print(f"epoch {epoch}: {steps} steps in {seconds:.2f} s, loss {loss_sum / max(seeds, 1):.3f}, "
              f"val acc {val:.4f}", flush=True)
    print(f"best val acc {best[1]:.4f} at epoch {best[0]}; test acc {best[2]:.4f}", flush=True)


# ---------------------------------------------------------------- KGE

def part_kge(args, ctx: dict) -> None:
    import kge as kge_bench  # benchmarks/kge.py

    src = Path(args.kge_data) / "FB15k-237"
    if not (src / "train.txt").is_file():
        raise SystemExit(f"FB15k-237 is not under {args.kge_data}")
    work = args.work / "kge"
    (work / "data").mkdir(parents=True, exist_ok=True)
    if not (work / "data" / "FB15k-237" / "train.txt").is_file():
        shutil.copytree(src, work / "data" / "FB15k-237", dirs_exist_ok=True)
    recipe = kge_bench.STEP_RECIPES["TransE_l2"]
    steps, procs = args.kge_steps, args.kge_cpu_procs
    base = ["kge", "train", "--dataset", "FB15k-237", "--data_path", str(work / "data"), "--model_name", "TransE_l2",
            *kge_bench.recipe_flags(recipe), "--num_thread", "1", "--batch_size_eval", str(args.kge_batch_eval),
            "--log_interval", str(max(1, steps // 4)), "--test", "--eval_percent", str(args.kge_eval_percent),
            "--no_save_emb"]
    env = {}
    if args.device == "cpu":  # the device path (placement, pinned moves, updates) run on CPUs
        env["DISTGRAPH_KGE_GPU_TYPE"] = "cpu"
    runs = {"gpu": ["--gpu", "0", "--num_proc", "1", "--max_step", str(steps)],
            "gpu_mix": ["--gpu", "0", "--mix_cpu_gpu", "--num_proc", "1", "--max_step", str(steps)],
            "cpu": ["--num_proc", str(procs), "--max_step", str(max(1, steps // procs))]}
    report("kge_recipe", f"TransE_l2 {' '.join(kge_bench.recipe_flags(recipe))}; {steps} steps of "
                         f"{recipe['batch_size']} positives in each run (cpu: {procs} processes x "
                         f"{max(1, steps // procs)}); test on {args.kge_eval_percent:.0%} of FB15k-237's test set")
    got = {}
    for name in args.kge_runs:
        t0 = time.monotonic()
        code, out, _ = run_cmd([*dg_cli(), *base, *runs[name]], cwd=work, env=env, log=work / f"kge_{name}.log")
        t1 = time.monotonic()
        if code:
            report(f"kge_{name}_failed", f"exit {code}")
            print(out[-3000:], flush=True)
            continue
        fig = kge_bench.figures(out)
        got[name] = fig
        report(f"kge_{name}_command", " ".join(["distgraph", *base[:2], "...", *runs[name]]))
        report(f"kge_{name}_wall_seconds", t1 - t0)
        for k, v in fig.items():
            report(f"kge_{name}_{k}", v)
        if MONITOR:
            busy, peak = MONITOR.window(t0, t1)
            if busy is not None:
                report(f"kge_{name}_gpu_busy_share_whole_command", busy)
                report(f"kge_{name}_gpu_memory_peak_MiB", peak)
    if "cpu" in got:
        for name in ("gpu", "gpu_mix"):
            if name in got and "triples_per_s" in got[name]:
                report(f"kge_{name}_over_cpu_throughput", got[name]["triples_per_s"] / got["cpu"]["triples_per_s"])
                report(f"kge_{name}_minus_cpu_mrr", got[name].get("MRR", float("nan")) - got["cpu"].get("MRR", float("nan")))
    if "gpu_mix" in got and "triples_per_s" in got["gpu_mix"]:
        rows = kge_rows_per_step(work / "data", recipe)
        dim = recipe["hidden_dim"]
        step_bytes = 2 * rows * dim * 4  # the rows to the device, their gradients back
        per_s = got["gpu_mix"]["triples_per_s"] / recipe["batch_size"] * step_bytes
        report("kge_gpu_mix_entity_rows_per_step", rows)
        report("kge_gpu_mix_row_bytes_per_step", step_bytes)
        report("kge_gpu_mix_row_bytes_per_s", per_s)
        bw = ctx.get("h2d_pinned_GBps") or ctx.get("host_copy_GBps")
        if bw:
            report("kge_gpu_mix_row_bytes_share_of_h2d", per_s / (bw * 1e9))


def kge_rows_per_step(data: Path, recipe: dict) -> int:
    """Entity rows a step trains (heads, tails, negatives), from a batch of the trainer's sampler."""
    import torch

    from distgraph.kge.data.formats import load_dataset
    from distgraph.kge.train.sampler import ChunkSampler

    kg = load_dataset(data, "FB15k-237")
    b = next(ChunkSampler(torch.from_numpy(kg.train), (0, kg.n_entities), recipe["batch_size"],
                          recipe["neg_sample_size"], seed=1))
    return b.h.numel() + b.t.numel() + b.neg.numel()


# ---------------------------------------------------------------- multi-core figures

def core_sets(machines: int, per: int) -> list[list[int]]:
    """Machine m's cores: per*m .. per*m+per-1, wrapped around the machine's cores."""
    n = os.cpu_count() or 1
    return [sorted({(per * m + i) % n for i in range(per)}) for m in range(machines)]


class Pinner:
    """While active, every thread of each descendant process whose environment names machine m
    (DISTGRAPH_MACHINE_ID) is kept on `sets[m]` (polled every 50 ms: threads inherit the
    affinity of the thread that starts them, and one started before a poll is caught by the
    next)."""

    def __init__(self, sets: list[list[int]]):
        self.sets, self.stop, self.pinned = sets, threading.Event(), set()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self.stop.is_set():
            for p in me.children(recursive=True):
                try:
                    machine = self._machine(p.pid)
                    if machine is None:
                        continue
                    cores = self.sets[machine % len(self.sets)]
                    for tid in os.listdir(f"/proc/{p.pid}/task"):
                        if (p.pid, int(tid)) not in self.pinned:
                            os.sched_setaffinity(int(tid), cores)
                            self.pinned.add((p.pid, int(tid)))
                except (OSError, psutil.Error, ValueError):
                    continue
            self.stop.wait(0.05)

    @staticmethod
    def _machine(pid: int) -> int | None:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"DISTGRAPH_MACHINE_ID="):
                    return int(item.split(b"=", 1)[1])
        return None


def part_cores(args, ctx: dict) -> None:
    import numpy as np

    import train_graphsage as tg
    from common import report_ratio

    root = prepare_tier(args.data, "200k", args.dry_run, TIER_PARTS["200k"])
    work = args.work / "cores"
    work.mkdir(parents=True, exist_ok=True)
    # train_graphsage.py's folder layout: p1/, metis/ (2 machines), p3/
    for name, src in (("p1", "p1"), ("metis", "p2"), ("p3", "p3")):
        if not (work / name).exists():
            shutil.copytree(root / src, work / name)
    with np.load(root / "g.npz") as d:
        seeds = int(d["ndata/train_mask"].sum())
    sets = core_sets(3, args.cores_per_machine)
    report("cores_per_machine", " | ".join(",".join(map(str, s)) for s in sets)
           + ("" if len({c for s in sets for c in s}) == 3 * args.cores_per_machine else " (overlapping: too few cores)"))
    rounds = args.rounds
    with Pinner(sets):
        one, three = [], []
        for r in range(rounds):
            order = [(1, one), (3, three)]
            for machines, out in order[r % 2:] + order[:r % 2]:
                config = work / ("p1" if machines == 1 else "p3") / "bench.json"
                rows = tg.results(tg.launch(config, machines, 1, f"--epochs {args.epochs}", work))
                per_trainer = seeds / machines
                out.append(max(r["seconds"] for r in rows) / per_trainer)
                report(f"cores_{machines}_machines_epoch_seconds_per_trainer",
                       " ".join(f"{r['seconds']:.3f}" for r in rows) + f" ({per_trainer:.0f} seeds each)")
        report_ratio("cores_3_machines_over_1_time_per_seed", three, one, TARGET_MACHINES, at_most=True)
        out = tg.launch(work / "metis" / "bench.json", 2, 1,
                        f"--stages --steps {args.steps} --stage_rounds {rounds}", work)
        report_ratio("pinned_2_step_seconds_over_slowest_stage", *tg.report_stages(out, "pinned_2"), TARGET_STEP,
                     at_most=True)
        tg.distributed_sampling(work, rounds, args.steps)
    threads_cores = core_sets(1, args.cores_per_machine)[0]
    cmd = [sys.executable, str(HERE.parent / "sampling.py"), "--input", str(root / "g.npz"), "--threads", "1", "2",
           "--rounds", str(rounds), "--batches", str(args.steps)]
    code, out, _ = run_cmd(cmd, cwd=work, env={"OMP_NUM_THREADS": "1"}, log=work / "sampling_threads.log",
                           cores=threads_cores)
    if code:
        raise SystemExit(f"sampling.py failed ({code}):\n{out[-3000:]}")
    report("sampling_threads_cores", ",".join(map(str, threads_cores)))
    for line in out.splitlines():
        m = re.match(r"^([\w.@%+-]+): (.*)$", line)
        if m and m.group(1) not in ("command", "load_before", "load_after"):
            report(f"sampling_threads_{m.group(1)}", m.group(2))
    m = re.search(r"^threads_2_over_threads_1: ([\d.]+)", out, re.M)
    if m:
        report(f"sampling_threads_2_over_1_target_ge_{TARGET_THREADS}",
               "met" if float(m.group(1)) >= TARGET_THREADS else "missed")


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dry_run", action="store_true",
                    help=f"tiny graphs (1/{DRY} of each tier), few steps, --device cpu: every path but CUDA's")
    ap.add_argument("--device", choices=["cuda", "cpu"], help="default: cuda, cpu with --dry_run")
    ap.add_argument("--out", default=str(REPO / "bench-out" / "gpu"), help="folder of gpu.json")
    ap.add_argument("--workdir", default="/tmp/distgraph-gpu-bench", help="graphs, partitions, logs")
    ap.add_argument("--budget_s", type=float, default=480, help="no part starts after this many seconds; a part "
                                                               "running then is stopped")
    ap.add_argument("--parts", nargs="+", default=PARTS, choices=PARTS)
    ap.add_argument("--prepare_only", nargs="+", choices=[*TIERS, "pyg_sampler"],
                    help="generate and partition these tiers, or build PyG's sampler, then stop")
    ap.add_argument("--epochs", type=int, help="GraphSAGE epochs per run, the first a warm-up (default 3; dry 2)")
    ap.add_argument("--gnn_threads", type=int, help="torch threads of each GraphSAGE run, ours and PyG's "
                                                    "(default: half the cores; split among 4 machines)")
    ap.add_argument("--pyg_sampler", help="the built pyg-lib neighbor_sample .so (default: built here from "
                                          f".whl/{PYG_LIB_SRC} when pyg-lib is not installed)")
    ap.add_argument("--kge_data", help="folder holding FB15k-237 (default: .gpu-data, else ../shared/data)")
    ap.add_argument("--kge_steps", type=int, help="steps of 1000 positives per KGE run (default 3000; dry 40)")
    ap.add_argument("--kge_cpu_procs", type=int, help="processes of the CPU run (default: half the cores)")
    ap.add_argument("--kge_eval_percent", type=float, help="share of the test set ranked (default 1; dry 0.01)")
    ap.add_argument("--kge_batch_eval", type=int, default=16)
    ap.add_argument("--kge_runs", nargs="+", default=["gpu", "gpu_mix", "cpu"], choices=["gpu", "gpu_mix", "cpu"])
    ap.add_argument("--rounds", type=int, help="alternating rounds of the multi-core ratios (default 2; dry 1)")
    ap.add_argument("--steps", type=int, help="batches per trainer of the step and sampling figures (default 30; "
                                              "dry 4)")
    ap.add_argument("--cores_per_machine", type=int, default=CORES_PER_MACHINE)
    ap.add_argument("--role", choices=["pyg"], help=argparse.SUPPRESS)
    ap.add_argument("--npz", help=argparse.SUPPRESS)
    args = ap.parse_args()
    dry = args.dry_run
    args.device = args.device or ("cpu" if dry else "cuda")
    cores = os.cpu_count() or 1
    args.epochs = args.epochs or (2 if dry else 3)
    args.gnn_threads = args.gnn_threads or max(1, cores // 2)
    if args.role == "pyg":
        pyg_role(args)
        return 0
    args.kge_steps = args.kge_steps or (40 if dry else 3000)
    args.kge_cpu_procs = args.kge_cpu_procs or max(1, cores // 2)
    args.kge_eval_percent = args.kge_eval_percent or (0.01 if dry else 1.0)
    args.rounds = args.rounds or (1 if dry else 2)
    args.steps = args.steps or (4 if dry else 30)
    args.work = Path(args.workdir)
    args.data = args.work / ("data-dry" if dry else "data")
    if args.kge_data is None:
        args.kge_data = str(REPO / ".gpu-data") if (REPO / ".gpu-data" / "FB15k-237").is_dir() else str(SHARED / "data")
    if args.prepare_only:
        for what in args.prepare_only:
            if what == "pyg_sampler":
                build_pyg_sampler(REPO / ".whl" / PYG_LIB_SRC, args.work / "pyg-sampler")
            else:
                prepare_tier(args.data, what, dry, TIER_PARTS[what])
        return 0

    start = time.monotonic()
    deadline = start + args.budget_s
    out = Path(args.out)
    record = Record(out / "gpu.json", {
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "command": " ".join(sys.argv),
        "machine": f"{platform.machine()}, {cores} cores, {platform.platform()}", "dry_run": dry,
        "device": args.device, "budget_s": args.budget_s})
    sys.stdout = Tee(sys.stdout, record)
    become_subreaper()
    global MONITOR
    MONITOR = GpuMonitor()
    signal.signal(signal.SIGALRM, _alarm)
    report("command", " ".join(sys.argv))
    report("load_before", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    ctx: dict = {}
    if "gnn_200k" in args.parts or "gnn_10M" in args.parts:
        # PyG's sampler, built in the background while the parts before the first GraphSAGE one run
        args.pyg_build = threading.Thread(target=pyg_sampler, args=(args,), daemon=True)
        args.pyg_build.start()
    jobs = {"env": lambda: part_env(args, ctx), "gnn_200k": lambda: part_gnn("200k", args, ctx),
            "gnn_10M": lambda: part_gnn("10M", args, ctx), "kge": lambda: part_kge(args, ctx),
            "cores": lambda: part_cores(args, ctx)}
    failed = 0
    for part in args.parts:
        record.start(part)
        left = deadline - time.monotonic()
        if left < 5:
            report(f"{part}_skipped", f"out of budget ({args.budget_s:.0f} s)")
            record.end("skipped: out of budget", 0.0)
            continue
        t0 = time.monotonic()
        signal.alarm(max(1, int(left)))
        try:
            jobs[part]()
            signal.alarm(0)
            report(f"{part}_seconds", time.monotonic() - t0)
            record.end("done", time.monotonic() - t0)
        except PartTimeout:
            stop_descendants()
            report(f"{part}_cut", "at the budget")
            record.end(f"cut at the budget after {time.monotonic() - t0:.0f} s", time.monotonic() - t0)
            failed += 1
        except BaseException as e:  # SystemExit from the reused benchmarks too: the next part still runs
            signal.alarm(0)
            if isinstance(e, KeyboardInterrupt):
                raise
            stop_descendants()
            text = "".join(traceback.format_exception(e))[-4000:]
            print(text, flush=True)
            report(f"{part}_failed", (str(e).splitlines() or [type(e).__name__])[0])
            record.end("failed", time.monotonic() - t0, text)
            failed += 1
    MONITOR.close()
    report("load_after", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    report("total_seconds", time.monotonic() - start)
    record.write()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
