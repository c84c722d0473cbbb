"""What the benchmark scripts share: `key: value` output, a rate measured over a minimum
time, loopback ip_configs on free ports."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

from distgraph.cluster.hosts import free_ports

# ../shared beside the checkout (peers' scripts, data sets), found from a worktree nested deeper too
SHARED = next((p / "shared" for p in Path(__file__).resolve().parents[1].parents if (p / "shared").is_dir()),
              Path(__file__).resolve().parents[2] / "shared")


def fresh_dir(path: str | Path) -> Path:
    """`path` emptied (removed if present, then created): a benchmark's working folder."""
    work = Path(path)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def report(key: str, value) -> None:
    print(f"{key}: {value:.4g}" if isinstance(value, float) else f"{key}: {value}", flush=True)


def report_load(when: str) -> float:
    """Print the 1-, 5- and 15-minute load averages (`load_<when>: ...`); returns the 1-minute one.
    Figures are taken on an idle machine: a 1-minute load well above 1 means others ran too."""
    loads = os.getloadavg()
    report(f"load_{when}", " ".join(f"{x:.2f}" for x in loads))
    return loads[0]


def report_ratio(key: str, ours: Sequence[float], limit: Sequence[float], target: float | None = None,
                 at_most: bool = False) -> float:
    """Print each round's figures and ratio, and the median of the rounds' ratios (`key_ratio`):
    each round takes ours and the limit back to back, so a ratio is paired against the load of
    its moment. Scored against `target` (at least, or with `at_most` at most); returns the ratio."""
    runs = lambda xs: " ".join(f"{x:.4g}" for x in xs)  # noqa: E731
    ratios = [o / l for o, l in zip(ours, limit)]
    report(f"{key}_ours_runs", runs(ours))
    report(f"{key}_limit_runs", runs(limit))
    report(f"{key}_ratio_runs", runs(ratios))
    ratio = statistics.median(ratios)
    report(f"{key}_ratio", ratio)
    if target is not None:
        met = ratio <= target if at_most else ratio >= target
        report(f"{key}_target_{'le' if at_most else 'ge'}_{target}", "met" if met else "missed")
    return ratio


def rate(fn: Callable[[], object], n: int, seconds: float) -> float:
    """Items per second of `fn` (which handles n items), after one warm-up call."""
    fn()
    count, start = 0, time.perf_counter()
    while True:
        fn()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and count >= 3:
            return count * n / elapsed


def loopback_ip_config(path: Path, machines: int, servers: int | None = None) -> Path:
    """Write an ip_config of `machines` machines on 127.0.0.1, each on a block of `servers` free ports."""
    tail = "" if servers is None else f" {servers}"
    path.write_text("".join(f"127.0.0.1 {p}{tail}\n" for p in free_ports("127.0.0.1", machines, servers or 1)))
    return path


def count_ids(ids) -> int:
    """Number of ids in a tensor or in a heterogeneous loader's {type: tensor}."""
    return sum(v.numel() for v in ids.values()) if isinstance(ids, dict) else ids.numel()


def time_loader(loader, batches: int) -> tuple[int, int, int, float]:
    """(seeds, sampled edges, input nodes, seconds) of `batches` mini-batches of a node loader
    (homogeneous or typed) after one warm-up batch, starting a new epoch whenever one ends."""
    it = iter(loader)
    next(it)
    seeds = edges = nodes = 0
    start = time.perf_counter()
    for _ in range(batches):
        try:
            inputs, outputs, blocks = next(it)
        except StopIteration:
            it = iter(loader)
            inputs, outputs, blocks = next(it)
        seeds += count_ids(outputs)
        edges += sum(b.num_edges() for b in blocks)
        nodes += count_ids(inputs)
    return seeds, edges, nodes, time.perf_counter() - start


def neutral_npz(npz: Path, out: Path) -> Path:
    """The same graph with bare array names (`feat`, not `ndata/feat`), as the peer reads it;
    our loader reads both (node data is recognised by its row count)."""
    import numpy as np

    with np.load(npz) as d:
        np.savez(out, **{k.removeprefix("ndata/"): d[k] for k in d.files})
    return out



class Busy(NamedTuple):
    """The machine's busy time over a stretch of work (`cores_busy`)."""

    core_seconds: float  # every core's time running anything: processes, the kernel, interrupts
    cores: float  # cores busy on average (os.cpu_count() at most)
    kernel: float  # share of the busy time spent in the kernel (system calls, interrupts, network)
    stolen: float  # cores the hypervisor ran someone else on, on average


def machine_cpu() -> tuple[float, float, float, float]:
    """(busy, kernel, stolen, wall) seconds so far, from /proc/stat: every core's time running
    anything, the part of it in the kernel, time the hypervisor ran someone else on a core,
    and a monotonic clock (`cores_busy` turns two readings into a `Busy`)."""
    with open("/proc/stat") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f.readline().split()[1:9])
    tick = os.sysconf("SC_CLK_TCK")
    kernel = system + irq + softirq
    return (user + nice + kernel) / tick, kernel / tick, steal / tick, time.monotonic()


def cores_busy(before: tuple[float, ...], after: tuple[float, ...]) -> Busy:
    """How much of the machine a stretch of work between two `machine_cpu` readings kept running."""
    busy, kernel, stolen, wall = (b - a for a, b in zip(before, after))
    wall = max(wall, 1e-9)
    return Busy(busy, busy / wall, kernel / max(busy, 1e-9), stolen / wall)
