"""Knowledge graphs at scale: tiers of one generator (`distgraph generate kg`, seed 0) with
TransE_l2 at dimension 100 (DGL-KE's FB15k recipe otherwise: gamma 19.9, lr 0.25, batch 1000,
200 negatives, -adv, regularisation 1e-9), each tier generated, loaded, trained and evaluated:

- `1m`: 1M entities, 1,000 relations, 10M training triples (udd_hrt files);
- `10m`: 10M entities, 5,000 relations, 100M training triples (udd_hrt files);
- `freebase`: Freebase's shape, 86,054,151 entities, 14,824 relations, 338,586,276 triples
  (DGL-KE's Freebase files), with the entity table on disk as `--memory_budget` chooses.

For each tier: generation seconds, peak RSS and bytes on disk; loading the text (which writes the
loader's cache) and loading again from the cache, seconds and peak RSS; at the tiers of
`--kge_partition_tiers`, `kge partition -k 4` as `kge dist-train` needs it (seconds, peak RSS,
bytes, its cut and balance); an untrained model's MRR
(`--max_step 1`) on the sampled evaluation every run of the tier shares (`--eval_queries` test
triples, each ranked against `--neg_sample_size_eval` sampled entities, filtered); then
`--rounds` alternating rounds (the order rotates each round) of:

- `inmem`: `kge train --num_entity_partitions 1` (the table in memory), at the tiers of `--inmem_tiers`;
- `p`: `kge train --num_entity_partitions P` (`--partitions`; or `--memory_budget`), the entity
  table in P partition files trained bucket by bucket, buckets and partitions in the run's folder;
- `dglke`: DGL-KE 0.1.2's own `dglke_train` (`--dglke_train`, its venv's script: DGL 0.4.3,
  torch 1.6, Python 3.8) with the same recipe and steps, its own sampled evaluation
  (`--eval_percent`, `--neg_sample_size_eval`: the same sizes, its own draw);
- `pbg`: PyTorch-BigGraph 1.0.0 (`--pbg_python`, its Python 3.8 venv with torch 1.6.0, running
  ../shared/peers/kge/pbg_run.py: its TSV importer and trainer), translation + l2 at the same
  dimension, `--partitions` entity partitions, whole epochs only (its evaluator ranks every
  test triple against every entity, so it is not run: `--no_eval`).

Every system runs on `--threads` cores (`--num_thread`, one process; PBG: `--workers`), so
triples/s per core is triples/s over the threads. Each run is one command: its wall time, its
own training seconds and positive triples/s, the peak RSS summed over its process tree (and the
largest process's, and the tree's anonymous memory) sampled every 0.2 s, the peak bytes of its
folder on disk (buckets, partition files, PBG's converted edges and checkpoints) and the 1-minute
load when it started. A peer runs in a memory cgroup capped at `--peer_memory_gb`: where it runs
out of memory, the tier and its message are recorded. Ratios are taken within a round (run back
to back) and scored on their median. Every tier's files (text, the loader's cache
`.distgraph-cache`, buckets, partitions, PBG's files) are deleted when the tier ends.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/kge_scale.py --tiers 1m 10m --rounds 3 \\
        --dglke_train ~/.cache/distgraph-peers/kge/venv_dglke38/bin/dglke_train \\
        --pbg_python ~/.cache/distgraph-peers/kge/venv_pbg38/bin/python
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/kge_scale.py --tiers freebase --rounds 1
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/kge_scale.py --tiers freebase --systems \\
        --kge_partition_tiers freebase   # generation, loading and kge partition only

A run of some `--systems` only keeps the tier's other recorded figures (its own replace theirs).

Prints `key: value` lines prefixed by the tier, and merges them into `--record`
(bench-out/kge_scale.json, one record over all tiers measured; a tier run again replaces its
rows), which `make bench-page` copies into benchmarks/results/ and renders.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from common import SHARED, report

REPO = Path(__file__).resolve().parents[1]
PEERS = Path.home() / ".cache" / "distgraph-peers" / "kge"
CGROUP = Path("/sys/fs/cgroup/memory")
RECIPE = ["--model_name", "TransE_l2", "--gamma", "19.9", "--lr", "0.25", "--batch_size", "1000",
          "--neg_sample_size", "200", "-adv", "--regularization_coef", "1e-9"]
BATCH = 1000
EVAL_BATCH = "100"
SYSTEMS = ("inmem", "p", "dglke", "pbg")


@dataclass(frozen=True)
class Tier:
    name: str
    entities: int
    relations: int
    triples: int
    fmt: str  # udd_hrt or freebase

    @property
    def test(self) -> int:  # the generator's default: min(1 % of the training triples, 50,000)
        return max(1, min(int(self.triples * 0.01), 50_000))


TIERS = {t.name: t for t in (Tier("smoke", 20_000, 50, 200_000, "udd_hrt"),  # a trial of the benchmark itself
                             Tier("1m", 1_000_000, 1_000, 10_000_000, "udd_hrt"),
                             Tier("10m", 10_000_000, 5_000, 100_000_000, "udd_hrt"),
                             Tier("freebase", 86_054_151, 14_824, 338_586_276, "freebase"))}


def load1() -> float:
    return os.getloadavg()[0]


def du(path: Path) -> int:
    """Bytes allocated on disk under `path` (0 when absent)."""
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def free_disk(path: Path) -> int:
    return shutil.disk_usage(path).free


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable"):
            return int(line.split()[1]) * 1024
    return 0


@dataclass
class Run:
    """One command's figures: wall seconds, exit status, output, peaks, the load at its start."""

    wall: float
    rc: int
    out: str
    peak_rss: int  # summed over the process tree
    peak_proc_rss: int  # the largest single process
    peak_anon: int  # anonymous resident memory summed over the tree
    peak_pss: int  # proportional set size summed over the tree (shared pages counted once)
    peak_disk: int
    load: float
    oom: bool = False
    cgroup_peak: int = 0
    killed: str = ""

    def tail(self, n: int = 6) -> str:
        lines = [x for x in self.out.splitlines() if x.strip() and "Swapping" not in x]
        return " / ".join(x.strip()[:200] for x in lines[-n:])


class Watch:
    """Samples the process tree under `pid` every `interval` s (RSS summed, the largest process's
    RSS, anonymous memory summed; PSS summed, a page shared by several processes of the tree, as
    PBG's partitions are, counted once, read when the RSS passes its last reading by 5 %, at
    most every 2 s) and the bytes under `folders` every `disk_interval` s; kills the tree when
    the machine's available memory falls under `floor` bytes (a shared machine)."""

    def __init__(self, pid: int, folders: list[Path], interval: float = 0.2, disk_interval: float = 5.0,
                 floor: int = 1 << 30):
        self.root = psutil.Process(pid)
        self.folders, self.interval, self.disk_interval, self.floor = folders, interval, disk_interval, floor
        self.rss = self.proc_rss = self.anon = self.pss = self.disk = self._pss_at = 0
        self._pss_time = -1e9
        self.killed = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last_disk = 0.0
        while not self._stop.wait(self.interval):
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
            rss = anon = 0
            for p in procs:
                try:
                    r = p.memory_info().rss
                    status = Path(f"/proc/{p.pid}/status").read_text()
                except (psutil.Error, OSError):
                    continue
                rss += r
                self.proc_rss = max(self.proc_rss, r)
                m = re.search(r"RssAnon:\s+(\d+)", status)
                anon += int(m.group(1)) * 1024 if m else 0
            self.rss, self.anon = max(self.rss, rss), max(self.anon, anon)
            # PSS near every new peak only, at most every 2 s: a read walks the page tables (60-75 ms
            # for a 3-5 GB process), time the measured process would otherwise have
            if rss > self._pss_at * 1.05 and time.monotonic() - self._pss_time >= 2.0:
                self._pss_at, self._pss_time = rss, time.monotonic()
                self.pss = max(self.pss, self._sum_pss(procs))
            if time.monotonic() - last_disk >= self.disk_interval:
                self.disk = max(self.disk, sum(du(f) for f in self.folders))
                last_disk = time.monotonic()
            if mem_available() < self.floor and not self.killed:
                self.killed = (f"stopped by the benchmark: the machine's available memory fell under "
                               f"{self.floor / 2**30:.1f} GiB at {rss / 2**30:.1f} GiB of its own")
                for p in reversed(procs):
                    try:
                        p.kill()
                    except psutil.Error:
                        pass

    @staticmethod
    def _sum_pss(procs: list) -> int:
        total = 0
        for p in procs:
            try:
                m = re.search(r"^Pss:\s+(\d+)", Path(f"/proc/{p.pid}/smaps_rollup").read_text(), re.M)
            except OSError:
                continue
            total += int(m.group(1)) * 1024 if m else 0
        return total

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.disk = max(self.disk, sum(du(f) for f in self.folders))


def run(argv: list[str], log: Path, cwd: Path, folders: list[Path] = (), cap_gb: float | None = None,
        env: dict | None = None) -> Run:
    """Run a command (in a memory cgroup capped at `cap_gb` when given and possible), watched."""
    group = None
    if cap_gb and CGROUP.is_dir() and os.access(CGROUP, os.W_OK):
        group = CGROUP / f"distgraph-kge-scale-{os.getpid()}-{time.monotonic_ns()}"
        group.mkdir()
        for limit in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
            if (group / limit).exists():
                (group / limit).write_text(str(int(cap_gb * 2**30)))
        argv = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$0" "$@"', *argv]
    load = load1()
    t0 = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                                env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
                                     **(env or {})})
        watch = Watch(proc.pid, list(folders))
        _, status, usage = os.wait4(proc.pid, 0)  # its own peak RSS too (a short command ends between samples)
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
        watch.stop()
        watch.proc_rss = max(watch.proc_rss, usage.ru_maxrss * 1024)
        watch.rss = max(watch.rss, watch.proc_rss)
    wall = time.perf_counter() - t0
    oom, cg_peak = False, 0
    if group:
        oom = bool(re.search(r"oom_kill [1-9]", (group / "memory.oom_control").read_text()))
        cg_peak = int((group / "memory.max_usage_in_bytes").read_text())
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    return Run(wall, rc, log.read_text(errors="replace"), watch.rss, watch.proc_rss, watch.anon, watch.pss,
               watch.disk, load,
               oom or (rc in (-9, 137) and cap_gb is not None and not watch.killed), cg_peak, watch.killed)


def mb(x: int) -> float:
    return x / 2**20


def fmt_runs(xs: list[float]) -> str:
    return " ".join(f"{x:.4g}" for x in xs)


def parse_ours(out: str) -> dict:
    got = {}
    m = re.search(r"training takes ([\d.]+) seconds \(([\d,]+) positive triples/s\)", out)
    if m:
        got["train_seconds"], got["triples_per_s"] = float(m[1]), float(m[2].replace(",", ""))
    m = re.search(r"Test average MRR\s*:\s*([\d.]+)", out)
    if m:
        got["mrr"] = float(m[1])
    m = re.search(r"Test average HITS@10\s*:\s*([\d.]+)", out)
    if m:
        got["hits10"] = float(m[1])
    m = re.search(r"\(loaded in ([\d.]+) s\)", out)
    if m:
        got["load_seconds"] = float(m[1])
    m = re.search(r"(\d+) x \d+ buckets of [\d,]+ triples in ([\d.]+) s", out)
    if m:
        got["partitions"], got["bucket_seconds"] = int(m[1]), float(m[2])
    m = re.search(r"^(--(?:num_entity_partitions|memory_budget) .*)$", out, re.M)
    if m:
        got["choice"] = m[1].strip()
    m = re.search(r"testing takes ([\d.]+) seconds", out)
    if m:
        got["test_seconds"] = float(m[1])
    return got


def parse_dglke(out: str, steps: int) -> dict:
    got = {}
    m = re.search(r"training takes ([\d.]+) seconds", out)
    if m:
        got["train_seconds"] = float(m[1])
        got["triples_per_s"] = steps * BATCH / got["train_seconds"]
    for key, name in (("mrr", "MRR"), ("hits10", "HITS@10")):
        m = re.search(rf"Test average {name}\s*:\s*([\d.]+)", out)
        if m:
            got[key] = float(m[1])
    m = re.search(r"Total initialize time ([\d.]+) seconds", out)
    if m:
        got["load_seconds"] = float(m[1])
    return got


def parse_pbg(out: str) -> dict:
    m = re.search(r"^\{\n.*?^\}", out, re.M | re.S)
    if not m:
        return {}
    res = json.loads(m[0])
    return {"train_seconds": res["train_s"], "triples_per_s": float(res["pos_triples_per_s"]),
            "load_seconds": res["convert_s"]}


def parse_kv(specs: list[str], cast=float) -> dict:
    """`tier=value` options."""
    out = {}
    for s in specs or []:
        k, _, v = s.partition("=")
        out[k] = cast(v)
    return out


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rows: list[list[str]] = []
        self.py = sys.executable

    def put(self, key: str, value) -> None:
        report(key, value)
        self.rows.append([key, f"{value:.4g}" if isinstance(value, float) else str(value)])

    # --- the tier's files

    def data_flags(self, tier: Tier, root: Path) -> list[str]:
        if tier.fmt == "freebase":
            return ["--dataset", "Freebase", "--data_path", str(root)]
        return ["--format", "udd_hrt", "--dataset", tier.name, "--data_path", str(root / tier.name), "--data_files",
                "entities.dict", "relations.dict", "train.txt", "valid.txt", "test.txt"]

    def text_folder(self, tier: Tier, root: Path) -> Path:
        return root / ("Freebase" if tier.fmt == "freebase" else tier.name)

    def disk_needed(self, tier: Tier, systems: list[str], threads: int) -> int:
        """A generous estimate of the tier's peak bytes on disk: text, cache (none when reused: links),
        the largest run's files."""
        dim = self.args.dim
        text = tier.triples * (2 * len(str(tier.entities)) + len(str(tier.relations)) + 3) + tier.entities * 20
        cache = tier.triples * 3 * 4  # int32 ids (the loader widens them only past 2^31 entities)
        if tier.name in self.args.data:
            text = cache = 0
        table = tier.entities * (dim + 1) * 4
        ours = tier.triples * 4 * 3 + table * 1.3 if "p" in systems else 0  # a partition or two written back
        ours = max(ours, tier.triples * 12 * 4 if tier.name in self.args.kge_partition_tiers else 0)  # kge partition
        pbg = 3 * self.args.partitions ** 2 * 160e6 + tier.triples * 12 + tier.entities * (dim * 4 * 3 + 40) \
            if "pbg" in systems else 0
        return int(text + cache + max(ours, pbg) + 2 * 2**30)

    # --- one tier

    def tier(self, tier: Tier) -> None:
        a = self.args
        t = tier.name
        threads = int(a.threads.get(t, 1))
        systems = [s for s in a.systems if (s != "inmem" or t in a.inmem_tiers)
                   and (s != "dglke" or (a.dglke_train and t in a.peer_tiers))
                   and (s != "pbg" or (a.pbg_python and t in a.peer_tiers))]
        self.systems_run[t] = systems
        work = Path(a.work) / t
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        logs = Path(a.logs) / t
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir(parents=True)
        need, free = self.disk_needed(tier, systems, threads), free_disk(work)
        self.put(f"{t}_disk_free_gb_at_start", free / 1e9)
        self.put(f"{t}_graph", f"{tier.entities:,} entities, {tier.relations:,} relations, {tier.triples:,} training "
                               f"triples ({tier.fmt} files, seed 0); {tier.test:,} test triples")
        if free < need:
            self.put(f"{t}_skipped", f"the tier needs about {need / 1e9:.0f} GB on disk, {free / 1e9:.0f} GB free")
            return
        started, load_start = datetime.datetime.now(datetime.timezone.utc), load1()
        try:
            self._tier(tier, work, logs, systems, threads)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            self.put(f"{t}_disk_free_gb_after_cleanup", free_disk(Path(a.work)) / 1e9)
        self.dates[t] = f"{started:%Y-%m-%d %H:%M}-{datetime.datetime.now(datetime.timezone.utc):%H:%M} UTC"
        self.loads[t] = (load_start, load1())

    def _tier(self, tier: Tier, work: Path, logs: Path, systems: list[str], threads: int) -> None:
        a, t = self.args, tier.name
        data = work / "data"
        if t in a.data:  # an earlier run's files of this tier, hard-linked: its generation and loading rows stay
            shutil.copytree(a.data[t], data, copy_function=os.link)
            self.put(f"{t}_data_reused", f"{a.data[t]} (generated by an earlier run of this benchmark: the generation "
                                         f"and loading figures are that run's)")
        else:
            self._generate_and_load(tier, data, work, logs)
        if t in a.kge_partition_tiers:
            self.kge_partition(tier, data, work, logs)
        if not systems:
            return
        self._train_tier(tier, data, work, logs, systems, threads)

    def _generate_and_load(self, tier: Tier, data: Path, work: Path, logs: Path) -> None:
        """Generate the tier's files, then load them from text (writing the cache) and from the cache."""
        a, t = self.args, tier.name
        data.mkdir()
        out = data if tier.fmt == "freebase" else data / t
        g = run([self.py, "-m", "distgraph.cli.main", "generate", "kg", "--num_entities", str(tier.entities),
                 "--num_relations", str(tier.relations), "--num_triples", str(tier.triples), "--format", tier.fmt,
                 "--seed", "0", "--out", str(out)], logs / "generate.log", work, [data])
        if g.rc:
            raise SystemExit(f"generate kg failed: {g.tail()}")
        text = self.text_folder(tier, data)
        self.put(f"{t}_generate_seconds", f"{g.wall:.1f} (load {g.load:.2f})")
        self.put(f"{t}_generate_peak_rss_mb", f"{mb(g.peak_rss):.0f}")
        self.put(f"{t}_text_bytes_on_disk_gb", f"{du(text) / 1e9:.2f}")
        # loading: the text (writing the cache), then from the cache
        data_path, dataset = (str(data), "Freebase") if tier.fmt == "freebase" else (str(text), t)
        fmt, files = ("built_in", None) if tier.fmt == "freebase" else (
            "udd_hrt", ["entities.dict", "relations.dict", "train.txt", "valid.txt", "test.txt"])
        code = ("import time; from distgraph.kge.data.formats import load_dataset; t = time.perf_counter(); "
                f"d = load_dataset({data_path!r}, {dataset!r}, {fmt!r}, {files!r}); "
                "print('LOADED', time.perf_counter() - t, len(d.train), flush=True)")
        for kind in ("text", "cache"):
            r = run([self.py, "-c", code], logs / f"load_{kind}.log", work, [data])
            m = re.search(r"LOADED ([\d.]+) (\d+)", r.out)
            if r.rc or not m:
                raise SystemExit(f"loading failed: {r.tail()}")
            self.put(f"{t}_load_{kind}_seconds", f"{float(m[1]):.1f} (load {r.load:.2f})")
            self.put(f"{t}_load_{kind}_peak_rss_mb", f"{mb(r.peak_rss):.0f} (anonymous {mb(r.peak_anon):.0f})")
        self.put(f"{t}_loader_cache_on_disk_gb", f"{du(text / '.distgraph-cache') / 1e9:.2f}")

    def _train_tier(self, tier: Tier, data: Path, work: Path, logs: Path, systems: list[str], threads: int) -> None:
        """The tier's training runs: an untrained model's evaluation, then each system's rounds."""
        a, t = self.args, tier.name
        steps = int(a.steps.get(t) or math.ceil(a.epochs * tier.triples / BATCH))
        eval_percent = min(1.0, a.eval_queries / tier.test)
        self.put(f"{t}_steps", f"{steps:,} of batch {BATCH} ({steps * BATCH / tier.triples:.3g} epoch), "
                               f"{threads} thread(s) a system")
        self.put(f"{t}_evaluation", f"{round(eval_percent * tier.test):,} test triples (--eval_percent "
                                    f"{eval_percent:g}), each ranked against {a.neg_sample_size_eval} sampled "
                                    f"entities, filtered, head and tail")
        common = ["kge", "train", *self.data_flags(tier, data), *RECIPE, "--hidden_dim", str(a.dim), "--num_proc", "1",
                  "--num_thread", str(threads), "--test", "--eval_percent", f"{eval_percent:g}",
                  "--neg_sample_size_eval", str(a.neg_sample_size_eval), "--batch_size_eval", EVAL_BATCH,
                  "--no_save_emb", "--seed", "0"]
        budget = a.memory_budget.get(t)
        p_flags = (["--memory_budget", f"{budget:g}"] if budget else ["--num_entity_partitions", str(a.partitions)])

        def ours(kind: str, max_step: int, tag: str) -> Run:
            folder = work / f"run-{tag}"
            folder.mkdir()
            flags = ["--num_entity_partitions", "1"] if kind == "inmem" else [*p_flags, "--bucket_dir",
                                                                                 str(folder / "buckets")]
            r = run([self.py, "-m", "distgraph.cli.main", *common, "--max_step", str(max_step), "--log_interval",
                     str(max(1000, max_step // 100)), "--save_path", str(folder), *flags],
                    logs / f"{tag}.log", work, [folder], cap_gb=a.memory_cap_gb)
            shutil.rmtree(folder, ignore_errors=True)
            return r

        # an untrained model on the same evaluation
        untrained_kind = "p" if "p" in systems else "inmem"
        r = ours(untrained_kind, 1, "untrained")
        got = parse_ours(r.out)
        if r.rc or "mrr" not in got:
            raise SystemExit(f"the untrained run failed: {r.tail()}")
        self.put(f"{t}_untrained_mrr", f"{got['mrr']:.4f} (one step, {untrained_kind}; load {r.load:.2f})")
        untrained = got["mrr"]

        results: dict[str, list[dict]] = {s: [] for s in systems}
        dropped: set[str] = set()
        for rnd in range(a.rounds):
            order = systems[rnd % len(systems):] + systems[:rnd % len(systems)]
            for s in order:
                if s in dropped or s in ("dglke", "pbg") and rnd >= a.peer_rounds.get(s, a.rounds):
                    continue
                tag = f"{s}-r{rnd}"
                if s in ("inmem", "p"):
                    r = ours(s, steps, tag)
                    got = parse_ours(r.out)
                elif s == "dglke":
                    r, got = self.dglke(tier, data, work, logs, tag, steps, threads, eval_percent)
                else:
                    r, got = self.pbg(tier, data, work, logs, tag, threads)
                got.update(wall=r.wall, peak_rss=r.peak_rss, peak_proc_rss=r.peak_proc_rss, peak_anon=r.peak_anon,
                           peak_pss=r.peak_pss, disk=r.peak_disk, load=r.load, round=rnd)
                if r.rc or "triples_per_s" not in got:
                    cap = a.memory_cap_gb if s in ("inmem", "p") else a.peer_memory_gb
                    why = r.killed or (f"out of memory at the {cap:g} GiB cap" if r.oom else f"exit {r.rc}")
                    got["failed"] = (f"{why} after {r.wall:.0f} s (peak {mb(r.peak_rss):,.0f} MB); its last lines: "
                                     f"{r.tail(4)}")
                    self.put(f"{t}_{s}_round{rnd}_failed", got["failed"])
                else:
                    self.put(f"{t}_{s}_round{rnd}", f"{got['triples_per_s']:,.0f} triples/s, peak "
                                                   f"{mb(r.peak_rss):,.0f} MB, load {r.load:.2f}")
                results[s].append(got)
                if "failed" in got and s in ("dglke", "pbg"):
                    dropped.add(s)  # a peer that cannot run the tier is not run again; the others go on
        self.summarise(tier, results, threads, steps, untrained)

    def kge_partition(self, tier: Tier, data: Path, work: Path, logs: Path) -> None:
        """`kge partition -k K` of the tier as `kge dist-train` needs it (METIS in memory or KaMinPar
        streaming, as the command chooses and says), watched like a training run; its output is
        removed afterwards."""
        a, t = self.args, tier.name
        flags = self.data_flags(tier, data)
        out = Path(flags[flags.index("--data_path") + 1]) / flags[flags.index("--dataset") + 1] / "partitions"
        r = run([self.py, "-m", "distgraph.cli.main", "kge", "partition", *flags, "-k", str(a.kge_parts)],
                logs / "kge_partition.log", work, [out], cap_gb=a.memory_cap_gb)
        shutil.rmtree(out, ignore_errors=True)
        if r.rc:
            why = r.killed or (f"out of memory at the {a.memory_cap_gb:g} GiB cap" if r.oom else f"exit {r.rc}")
            self.put(f"{t}_kge_partition_failed", f"{why} after {r.wall:.0f} s; its last lines: {r.tail(4)}")
            return
        self.put(f"{t}_kge_partition_seconds", f"{r.wall:.1f} into {a.kge_parts} parts (load {r.load:.2f})")
        self.put(f"{t}_kge_partition_peak_rss_mb", f"{mb(r.peak_rss):.0f} (anonymous {mb(r.peak_anon):.0f})")
        self.put(f"{t}_kge_partition_disk_gb", f"{r.peak_disk / 1e9:.2f}")
        for key, pattern in (("partitioner", r"^partitioner: (.*)$"),
                             ("cut", r"^triples whose two entities sit in different partitions: (.*)$"),
                             ("balance", r"^triples per partition: .*\(max/mean ([\d.]+)\)")):
            m = re.search(pattern, r.out, re.M)
            if m:
                self.put(f"{t}_kge_partition_{key}", m[1])
        if t == "freebase":
            self.put(f"{t}_kge_partition_peak_rss_gb_target_le_8", "met" if r.peak_rss / 1e9 <= 8 else "missed")
            self.put(f"{t}_kge_partition_minutes_target_le_60", "met" if r.wall <= 3600 else "missed")

    # --- the peers

    def dglke(self, tier: Tier, data: Path, work: Path, logs: Path, tag: str, steps: int, threads: int,
              eval_percent: float) -> tuple[Run, dict]:
        a = self.args
        folder = work / f"run-{tag}"
        folder.mkdir()
        if tier.fmt == "freebase":
            spec = ["--dataset", "Freebase", "--data_path", str(data)]
        else:
            spec = ["--format", "udd_hrt", "--dataset", tier.name, "--data_path", str(data / tier.name),
                    "--data_files", "entities.dict", "relations.dict", "train.txt", "valid.txt", "test.txt"]
        r = run([a.dglke_train, *spec, *RECIPE, "--hidden_dim", str(a.dim), "--max_step", str(steps),
                 "--log_interval", str(max(1000, steps // 10)), "--batch_size_eval", EVAL_BATCH, "--test",
                 "--eval_percent", f"{eval_percent:g}", "--neg_sample_size_eval", str(a.neg_sample_size_eval),
                 "--num_thread", str(threads), "--num_proc", "1", "--no_save_emb", "--save_path", str(folder)],
                logs / f"{tag}.log", folder, [folder], cap_gb=a.peer_memory_gb, env={"DGLBACKEND": "pytorch"})
        shutil.rmtree(folder, ignore_errors=True)
        return r, parse_dglke(r.out, steps)

    def pbg(self, tier: Tier, data: Path, work: Path, logs: Path, tag: str, threads: int) -> tuple[Run, dict]:
        """PBG's trainer, from an untrained model each round (its checkpoint folder removed), on the
        files of PBG's own TSV importer (run by pbg_run.py in the first round; later rounds find
        them and skip it) or, at the tiers not in `--pbg_own_import_tiers`, on the same files
        written by `PBG_IMPORT` first."""
        a = self.args
        folder = work / "pbg"
        if not folder.exists() and tier.name not in a.pbg_own_import_tiers:
            self.pbg_import(tier, data, work, logs)
        folder.mkdir(exist_ok=True)
        shutil.rmtree(folder / "model", ignore_errors=True)
        r = run([a.pbg_python, a.pbg_script, "--data", str(data / tier.name), "--work", str(folder), "--dim",
                 str(a.dim), "--epochs", "1", "--workers", str(threads), "--num_partitions", str(a.partitions),
                 "--no_eval"], logs / f"{tag}.log", folder, [folder], cap_gb=a.peer_memory_gb)
        shutil.rmtree(folder / "model", ignore_errors=True)
        got = parse_pbg(r.out)
        if "already been preprocessed" in r.out:
            got.pop("load_seconds", None)  # this round reused the first round's import
        return r, got

    def pbg_import(self, tier: Tier, data: Path, work: Path, logs: Path) -> None:
        """PBG's input files for its trainer, as its TSV importer writes them, in minutes instead of
        hours: the triples exported from our loader's cache as .npy, then `PBG_IMPORT` in PBG's venv."""
        a, t = self.args, tier.name
        npys = work / "pbg-input"
        npys.mkdir()
        code = ("import numpy as np; from distgraph.kge.data.formats import load_dataset; "
                f"d = load_dataset({str(data / t)!r}, {t!r}, 'udd_hrt', ['entities.dict', 'relations.dict', "
                "'train.txt', 'valid.txt', 'test.txt']); "
                f"[np.save({str(npys)!r} + f'/{{s}}.npy', np.asarray(getattr(d, s), dtype=np.int32)) "
                "for s in ('train', 'valid', 'test')]; print(d.n_entities, d.n_relations)")
        export = run([self.py, "-c", code], logs / "pbg_export.log", work, [npys])
        if export.rc:
            raise SystemExit(f"exporting the triples for PBG failed: {export.tail()}")
        n_ent, n_rel = export.out.split()[-2:]
        (work / "pbg").mkdir()
        conv = run([a.pbg_python, "-c", PBG_IMPORT, str(npys), str(work / "pbg"), str(a.partitions), n_ent, n_rel],
                   logs / "pbg_import.log", work, [work / "pbg"], cap_gb=a.peer_memory_gb)
        shutil.rmtree(npys, ignore_errors=True)
        if conv.rc:
            raise SystemExit(f"writing PBG's files failed: {conv.tail()}")
        self.put(f"{t}_pbg_files_seconds", f"{export.wall + conv.wall:.1f} (export {export.wall:.1f} + write "
                                           f"{conv.wall:.1f}; load {export.load:.2f}), peak "
                                           f"{mb(max(export.peak_rss, conv.peak_rss)):.0f} MB: PBG's input files "
                                           f"as its TSV importer writes them, written vectorised by the benchmark")

    # --- figures

    def summarise(self, tier: Tier, results: dict[str, list[dict]], threads: int, steps: int,
                  untrained: float) -> None:
        t = tier.name
        ok = {s: [g for g in gs if "failed" not in g] for s, gs in results.items()}
        for s, gs in ok.items():
            if not gs:
                continue
            rate = [g["triples_per_s"] for g in gs]
            self.put(f"{t}_{s}_triples_per_s_runs", fmt_runs(rate))
            self.put(f"{t}_{s}_triples_per_s_per_core", statistics.median(rate) / threads)
            self.put(f"{t}_{s}_load_runs", " ".join(f"{g['load']:.2f}" for g in gs))
            self.put(f"{t}_{s}_train_seconds_runs", fmt_runs([g["train_seconds"] for g in gs]))
            self.put(f"{t}_{s}_epoch_seconds", f"{tier.triples / statistics.median(rate):.0f}"
                     + ("" if s == "pbg" or steps * BATCH >= tier.triples else " (from the rate over "
                        f"{steps:,} steps)"))
            self.put(f"{t}_{s}_command_seconds_runs", fmt_runs([g["wall"] for g in gs]))
            if any("load_seconds" in g for g in gs):
                what = {"pbg": "its TSV import", "dglke": "its initialisation"}.get(s, "loading the cache")
                self.put(f"{t}_{s}_load_seconds", f"{statistics.median(g['load_seconds'] for g in gs):.1f} ({what})")
            if any("bucket_seconds" in g for g in gs):
                self.put(f"{t}_{s}_bucket_seconds", f"{statistics.median(g['bucket_seconds'] for g in gs):.1f} "
                                                    f"(P = {gs[0]['partitions']})")
            if gs[0].get("choice"):
                self.put(f"{t}_{s}_partitions", gs[0]["choice"])
            self.put(f"{t}_{s}_peak_rss_mb_runs", fmt_runs([mb(g["peak_rss"]) for g in gs]))
            self.put(f"{t}_{s}_peak_rss_largest_process_mb", f"{mb(max(g['peak_proc_rss'] for g in gs)):.0f}")
            self.put(f"{t}_{s}_peak_anonymous_mb", f"{mb(max(g['peak_anon'] for g in gs)):.0f}")
            self.put(f"{t}_{s}_peak_pss_mb_runs", fmt_runs([mb(g["peak_pss"]) for g in gs]))
            self.put(f"{t}_{s}_disk_gb", f"{max(g['disk'] for g in gs) / 1e9:.2f}")
            if any("mrr" in g for g in gs):
                mrr = [g["mrr"] for g in gs if "mrr" in g]
                note = " (its own sampled evaluation)" if s == "dglke" else ""
                self.put(f"{t}_{s}_mrr_runs", fmt_runs(mrr) + note)
                if s != "dglke":
                    self.put(f"{t}_{s}_mrr_over_untrained", statistics.median(mrr) / untrained)
        fails = {s: gs[0]["failed"] for s, gs in results.items() if gs and not ok[s]}
        for s, why in fails.items():
            self.put(f"{t}_{s}_failed", why)

        def paired(prefix: str, a: str, b: str, fn, target: float | None = None, at_most: bool = False):
            """Per round, fn(a's figures, b's figures): both from the same round."""
            by_round = {g["round"]: g for g in ok.get(b, [])}
            vals = [fn(g, by_round[g["round"]]) for g in ok.get(a, []) if g["round"] in by_round]
            if not vals:
                return
            self.put(f"{prefix}_ratio_runs", fmt_runs(vals))
            med = statistics.median(vals)
            self.put(f"{prefix}_ratio", med)
            if target is not None:
                good = med <= target if at_most else med >= target
                self.put(f"{prefix}_target_{'le' if at_most else 'ge'}_{target:g}", "met" if good else "missed")

        rate = lambda x, y: x["triples_per_s"] / y["triples_per_s"]  # noqa: E731 (threads are the same)
        rss = lambda x, y: x["peak_rss"] / y["peak_rss"]  # noqa: E731
        pss = lambda x, y: x["peak_pss"] / y["peak_pss"]  # noqa: E731
        p = f"p{self.args.partitions}" if not self.args.memory_budget.get(t) else "p"
        paired(f"{t}_{p}_over_inmem_triples_per_s", "p", "inmem", rate, 0.7 if t == "1m" else None)
        by_round = {g["round"]: g for g in ok.get("inmem", [])}
        gaps = [abs(g["mrr"] - by_round[g["round"]]["mrr"]) for g in ok.get("p", [])
                if g["round"] in by_round and "mrr" in g and "mrr" in by_round[g["round"]]]
        if gaps:
            self.put(f"{t}_{p}_minus_inmem_mrr_abs_runs", fmt_runs(gaps))
            if t == "1m":
                self.put(f"{t}_{p}_minus_inmem_mrr_abs_target_le_0.01",
                         "met" if statistics.median(gaps) <= 0.01 else "missed")
        big = t == "10m"
        paired(f"{t}_ours_over_dglke_triples_per_s_per_core", "p", "dglke", rate, 2.0 if big else None)
        paired(f"{t}_ours_over_pbg_triples_per_s_per_core", "p", "pbg", rate, 1.0 if big else None)
        # PBG's trainer and its partition server share the partitions: the memory target is scored on
        # PSS (each page once); the summed RSS counts them in both processes and is printed beside it
        paired(f"{t}_ours_over_pbg_peak_pss", "p", "pbg", pss, 0.5 if big else None, at_most=True)
        paired(f"{t}_ours_over_pbg_peak_rss", "p", "pbg", rss)
        if t == "freebase" and ok.get("p"):
            gs = ok["p"]
            self.put(f"{t}_peak_rss_gb_runs", fmt_runs([g["peak_rss"] / 1e9 for g in gs]))
            self.put(f"{t}_peak_rss_gb_target_le_16", "met" if statistics.median(g["peak_rss"] / 1e9 for g in gs)
                     <= 16 else "missed")
            hours = [g["train_seconds"] / 3600 for g in gs]  # the epoch itself, as `training takes` says
            self.put(f"{t}_epoch_hours_runs", fmt_runs(hours))
            self.put(f"{t}_epoch_hours_target_le_2", "met" if statistics.median(hours) <= 2 else "missed")
            self.put(f"{t}_command_hours_runs", fmt_runs([g["wall"] / 3600 for g in gs]) + " (loading, buckets, "
                     "the epoch and the evaluation)")
            lift = [g["mrr"] / untrained for g in gs if "mrr" in g]
            if lift:
                self.put(f"{t}_mrr_over_untrained_runs", fmt_runs(lift))
                self.put(f"{t}_mrr_over_untrained_target_ge_10", "met" if statistics.median(lift) >= 10 else
                         "missed")


# PBG's TSV importer's output from .npy triples, in PBG's venv (its storage classes): the entities and
# relations named in any split, each shuffled (entity names are the ids, as the importer reads them
# from the udd_hrt files), the entities cut into P equal ranges of that order, every split's edges
# bucketed by (head partition, tail partition) in file order. The importer does this a line and a
# tensor per edge in Python (20 minutes for the 1m tier here; hours for 100M triples).
PBG_IMPORT = r"""
import math, sys, time
from pathlib import Path
import numpy as np, torch
from torchbiggraph.edgelist import EdgeList
from torchbiggraph.entitylist import EntityList
from torchbiggraph.graph_storages import EDGE_STORAGES, ENTITY_STORAGES, RELATION_TYPE_STORAGES
src, work, P, n_ent, n_rel = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
splits = {s: np.load(src / (s + ".npy"), mmap_mode="r") for s in ("train", "valid", "test")}
seen_e, seen_r = np.zeros(n_ent, bool), np.zeros(n_rel, bool)
for a in splits.values():
    for i in range(0, len(a), 1 << 24):
        c = np.asarray(a[i:i + (1 << 24)])
        seen_e[c[:, 0]] = True
        seen_e[c[:, 2]] = True
        seen_r[c[:, 1]] = True
rng = np.random.default_rng(0)
ents, rels = rng.permutation(np.flatnonzero(seen_e)), rng.permutation(np.flatnonzero(seen_r))
size = len(ents)
starts = np.array([math.ceil(p / P * size) for p in range(P + 1)])
part = np.searchsorted(starts, np.arange(size), side="right") - 1
part_of = np.full(n_ent, -1, np.int16)
part_of[ents] = part
off_of = np.full(n_ent, -1, np.int64)
off_of[ents] = np.arange(size) - starts[part]
rel_ix = np.full(n_rel, -1, np.int64)
rel_ix[rels] = np.arange(len(rels))
es = ENTITY_STORAGES.make_instance(work + "/entities")
es.prepare()
for p in range(P):
    es.save_count("all", p, int(starts[p + 1] - starts[p]))
    es.save_names("all", p, [str(x) for x in ents[starts[p]:starts[p + 1]].tolist()])
rs = RELATION_TYPE_STORAGES.make_instance(work + "/entities")
rs.prepare()
rs.save_count(len(rels))
rs.save_names([str(x) for x in rels.tolist()])
for s, a in splits.items():
    st = EDGE_STORAGES.make_instance(work + "/" + s + "_partitioned")
    st.prepare()
    h, r, t = (np.ascontiguousarray(a[:, k]) for k in range(3))
    key = part_of[h] * P + part_of[t]
    order = np.argsort(key, kind="stable")
    bounds = np.searchsorted(key[order], np.arange(P * P + 1))
    del key
    for b in range(P * P):
        sel = order[bounds[b]:bounds[b + 1]]
        if len(sel):
            st.save_edges(b // P, b % P, EdgeList(EntityList.from_tensor(torch.from_numpy(off_of[h[sel]])),
                                                  EntityList.from_tensor(torch.from_numpy(off_of[t[sel]])),
                                                  torch.from_numpy(rel_ix[r[sel]])))
    print(s, len(h), "edges in", P * P, "buckets", flush=True)
"""


def machine() -> str:
    mem = next((int(x.split()[1]) for x in Path("/proc/meminfo").read_text().splitlines()
                if x.startswith("MemTotal")), 0)
    return f"{os.cpu_count()}-core {platform.machine()}, {mem / 2**20:.0f} GiB, shared with other jobs; " \
           f"Python {platform.python_version()}"


def commit() -> str | None:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None


PROVENANCE = ("command", "date", "commit", "machine", "load_average", "peer")


def tier_runs(tier: dict) -> tuple[list[dict], dict[str, int]]:
    """A tier's runs (command, date, commit, ...) and the run each of its rows came from (a tier
    recorded before rows kept their run counts as one run)."""
    if "runs" in tier:
        return tier["runs"], tier["row_run"]
    return [{k: tier[k] for k in PROVENANCE if k in tier}], {row[0]: 0 for row in tier["rows"]}


def merged_tier(earlier: dict | None, run_: dict, rows: list[list], whole: bool) -> dict:
    """A tier after a run: a whole run replaces it; another replaces the rows it measured and keeps
    the others with the runs they came from (a run left with no row is dropped)."""
    if earlier is None or whole or not rows and not earlier["rows"]:
        return {"runs": [run_], "row_run": {row[0]: 0 for row in rows}, "rows": rows}
    runs, row_run = tier_runs(earlier)
    runs, row_run, by_key = runs + [run_], dict(row_run), {row[0]: row for row in earlier["rows"]}
    for row in rows:
        by_key[row[0]], row_run[row[0]] = row, len(runs) - 1
    used = sorted({row_run[k] for k in by_key})
    renumber = {old: i for i, old in enumerate(used)}
    return {"runs": [runs[i] for i in used], "row_run": {k: renumber[row_run[k]] for k in by_key},
            "rows": list(by_key.values())}


def provenance(t: str, tier: dict, key: str) -> str:
    """A tier's `key` for the page: its one run's, or each run's in turn, the command naming the
    figures of every run but the one with the most."""
    runs, row_run = tier_runs(tier)
    if len(runs) == 1 or not row_run:
        return f"{runs[-1].get(key, '')} ({t})"
    counts = [sum(1 for i in row_run.values() if i == k) for k in range(len(runs))]
    main = counts.index(max(counts))
    if key != "command":
        return " + ".join(str(r.get(key, "")) for r in runs) + f" ({t})"
    parts = []
    for k, r in enumerate(runs):
        figures = "the other figures" if k == main else ", ".join(
            name.removeprefix(f"{t}_") for name, i in row_run.items() if i == k)
        parts.append(f"{r['command']} ({t}: {figures})")
    return " + ".join(parts)


def merge_record(path: Path, bench: Bench, tiers: list[str], argv: list[str]) -> None:
    """The record over all tiers: each tier's rows keep the run they came from (`merged_tier`);
    a run of every system and of `kge partition` at a tier replaces it."""
    old = None
    for candidate in (path, REPO / "benchmarks" / "results" / "kge_scale.json"):
        if candidate.is_file():
            old = json.loads(candidate.read_text())
            break
    runs = dict((old or {}).get("tiers", {}))
    peer_bits = []
    if bench.args.dglke_train:
        peer_bits.append("DGL-KE 0.1.2 (its own dglke_train: DGL 0.4.3, torch 1.6, Python 3.8)")
    if bench.args.pbg_python:
        peer_bits.append("../shared/peers/kge/pbg_run.py")
    for t in tiers:
        run_ = {"command": "OMP_NUM_THREADS=1 python benchmarks/kge_scale.py " + " ".join(
                    a.replace(str(Path.home()), "~") for a in argv),
                "date": bench.dates.get(t, ""), "commit": commit(), "machine": machine(),
                "load_average": f"{bench.loads[t][0]:.1f} at the start, {bench.loads[t][1]:.1f} at the end",
                "peer": ("; ".join(peer_bits) + ", measured in the same run") if peer_bits and t != "freebase"
                else "none in this tier's run"}
        rows = [row for row in bench.rows if row[0].startswith(f"{t}_")]
        whole = set(bench.systems_run.get(t, ())) == set(SYSTEMS) and t in bench.args.kge_partition_tiers
        runs[t] = merged_tier(runs.get(t), run_, rows, whole)
    order = [t for t in TIERS if t in runs]
    record = {"name": "kge_scale", "order": 2.7,
              "title": "Knowledge graphs at scale: generation, loading, bucket training on disk, against DGL-KE and "
                       "PyTorch-BigGraph",
              **{key: "; ".join(provenance(t, runs[t], key) for t in order)
                 for key in ("command", "date", "commit", "load_average", "peer")},
              "machine": machine() if tiers else (old or {}).get("machine", machine()),  # the latest run's
              "graph": "generate kg (seed 0): typed entities in communities of 50, community and attribute "
                       "relations, heavy-tailed degrees, Zipf-skewed relation frequencies; TransE_l2, dim "
                       f"{bench.args.dim}, DGL-KE's FB15k recipe otherwise",
              "notes": (old or {}).get("notes", []),
              "tiers": runs,
              "table": {"columns": ["figure", "value"], "rows": [row for t in order for row in runs[t]["rows"]]}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiers", nargs="+", default=["1m", "10m"], choices=list(TIERS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--peer_rounds", nargs="*", default=[],
                    help="rounds the peers take part in: N for both, or dglke=N pbg=M (default all)")
    ap.add_argument("--epochs", type=float, default=1.0, help="training steps: this many epochs of batch 1000")
    ap.add_argument("--steps", nargs="*", default=[], help="TIER=STEPS, overriding --epochs for a tier")
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4, help="P of the disk-partitioned runs (and of PBG)")
    ap.add_argument("--memory_budget", nargs="*", default=["freebase=14"],
                    help="TIER=GIB: the disk-partitioned run chooses P from this budget instead")
    ap.add_argument("--threads", nargs="*", default=["freebase=2"], help="TIER=N cores a system (default 1)")
    ap.add_argument("--systems", nargs="*", default=list(SYSTEMS), choices=SYSTEMS,
                    help="the runs to make (default all; none: generation, loading and kge partition only)")
    ap.add_argument("--kge_partition_tiers", nargs="*", default=["1m", "10m"],
                    help="tiers where `kge partition` is measured (Freebase's: about an hour more)")
    ap.add_argument("--kge_parts", type=int, default=4, help="parts (machines) of `kge partition`")
    ap.add_argument("--inmem_tiers", nargs="*", default=["1m"], help="tiers with the in-memory run")
    ap.add_argument("--peer_tiers", nargs="*", default=["1m", "10m"], help="tiers the peers run at")
    ap.add_argument("--eval_queries", type=int, default=1000, help="test triples of the sampled evaluation")
    ap.add_argument("--neg_sample_size_eval", type=int, default=1000)
    ap.add_argument("--dglke_train", default=None, help="DGL-KE 0.1.2's dglke_train (its Python 3.8 venv)")
    ap.add_argument("--pbg_python", default=None, help="the Python of PBG 1.0.0's venv (torch 1.6.0, Python 3.8)")
    ap.add_argument("--pbg_script", default=str(SHARED / "peers" / "kge" / "pbg_run.py"))
    ap.add_argument("--pbg_own_import_tiers", nargs="*", default=["1m"],
                    help="tiers where pbg_run.py runs PBG's own TSV importer (elsewhere PBG_IMPORT writes its files)")
    ap.add_argument("--peer_memory_gb", type=float, default=16.0, help="the peers' memory cgroup cap")
    ap.add_argument("--memory_cap_gb", type=float, default=20.0, help="ours' memory cgroup cap (a shared machine)")
    ap.add_argument("--data", nargs="*", default=[],
                    help="TIER=DIR: the tier's generated files (DIR/data of an earlier run's --work, kept) instead "
                         "of generating them again")
    ap.add_argument("--work", default="/tmp/distgraph-kge-scale", help="the tiers' files (deleted tier by tier)")
    ap.add_argument("--logs", default=str(REPO / "bench-out" / "kge_scale-logs"))
    ap.add_argument("--record", default=str(REPO / "bench-out" / "kge_scale.json"))
    args = ap.parse_args()
    args.steps = parse_kv(args.steps, int)
    args.memory_budget = parse_kv(args.memory_budget)
    args.threads = parse_kv(args.threads, int)
    args.data = parse_kv(args.data, str)
    plain = [x for x in args.peer_rounds if "=" not in x]  # N: both peers
    args.peer_rounds = {**{peer: int(n) for n in plain for peer in ("dglke", "pbg")},
                        **parse_kv([x for x in args.peer_rounds if "=" in x], int)}
    for exe in (args.dglke_train, args.pbg_python):
        if exe and not Path(exe).expanduser().exists():
            raise SystemExit(f"{exe} does not exist: install the peers with ../shared/peers/kge/run_dglke.sh and "
                             f"run_pbg.sh (../shared/peers/README.md)")
    bench = Bench(args)
    bench.dates, bench.loads, bench.systems_run = {}, {}, {}
    report("date", datetime.datetime.now().isoformat(timespec="seconds"))
    report("machine", machine())
    report("command", " ".join(sys.argv))
    for name in args.tiers:
        bench.tier(TIERS[name])
        merge_record(Path(args.record), bench, [n for n in args.tiers if n in bench.dates], sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
