"""`kge train`, `kge dist-train` and `kge eval` end to end: one trainer code path
(`kge.train.worker`) on the runtime, whatever the number of processes and machines.

- `kge train --num_proc 1`: the dataset is partitioned into one part (a temporary folder)
  and the trainer runs in this process on the standalone runtime.
- `kge train --num_proc N`: the same partition, served on this host by one server, with N
  trainers, started and supervised by the launcher (`launch.runner`) like any job.
- `kge dist-train`: the partition made by `kge partition`, on the machines of ip_config.
The trainers report through events that a `Reporter` prints DGL-KE's way; trainer 0
saves the model. `kge eval` ranks a saved model's test triples in this process, with the
same ranking code and the whole table as one shard.

Everything is checked (`kge.prepare`) before torch is imported or a process starts; a job
of several processes never imports torch here at all, only its processes do (except to check
that the GPUs of --gpu exist, before they start).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from ..cluster.env import KGE_GPU_TYPE, kge_gpu_type
from ..errors import DistGraphError, InputError
from ..launch.ssh import SshOptions
from .config import EvalConfig, TrainConfig, gpu_ids, inert_flags, with_gpus
from .data.formats import KGData
from .data.partition import partition_folder, partition_kg
from .prepare import prepare_eval, prepare_train
from .saved_model import next_model_dir
from .train.buckets import PartitionChoice, choose_partitions
from .train.report import EVENT, JOB_ENV, Reporter, job_env

SERVING = ": serving"


@dataclass
class RunResult:
    """Figures of a run: timings, metrics per label ("Test", "Valid (step N)"), where it was saved."""

    save_dir: Path | None
    train_time: float | None
    test_time: float | None
    triples_per_s: float | None
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    remote_rows_per_step: float | None = None  # entity rows a trainer pulled from other machines, mean per step


@dataclass
class DistOptions:
    """What `kge dist-train` adds to `kge train`: DGL-KE's `dglke_dist_train` flags, and ours for ssh."""

    path: str  # the workspace on every machine
    ip_config: str
    num_client_proc: int = 1
    part_config: str | None = None  # default: <data_path>/<dataset>/partitions/<dataset>.json
    ssh: SshOptions = field(default_factory=SshOptions)


def _describe(data: KGData, seconds: float) -> str:
    sizes = ", ".join(f"{len(a):,} {name}" for name, a in (("train", data.train), ("valid", data.valid),
                                                          ("test", data.test)) if a is not None)
    return (f"{data.name}: {data.n_entities:,} entities, {data.n_relations:,} relations, {sizes} triples "
            f"(loaded in {seconds:.1f} s)")


def _result(reporter: Reporter, save_dir: Path | None) -> RunResult:
    return RunResult(save_dir, reporter.train_time, reporter.test_time,
                     reporter.triples / reporter.train_time if reporter.train_time else None, reporter.results,
                     sum(reporter.remote_rows) / len(reporter.remote_rows) if reporter.remote_rows else None)


def _relay(reporter: Reporter):
    """The launcher's output sink of a KGE job: events to the reporter, other lines printed."""
    def sink(label: str, is_err: bool, text: str) -> None:
        if text.startswith(EVENT):
            try:
                event = tuple(json.loads(text[len(EVENT):]))
            except ValueError:  # not an event after all: shown as it came
                reporter.write(f"[{label}] {text}", err=is_err)
                return
            reporter(event)
        elif not text.endswith(SERVING):
            reporter.write(f"[{label}] {text}", err=is_err)
    return sink


def _launch(cfg: TrainConfig, save_dir: Path | None, reporter: Reporter, workspace: str, part_config: str,
            ip_config: str, trainers: int, ssh: SshOptions = SshOptions()) -> None:
    """Run the trainers as a job of the launcher; an error if one of them fails."""
    from ..launch import LaunchOptions, make_plan, run

    envs = [f"{JOB_ENV}={job_env(cfg, None if save_dir is None else str(save_dir))}"]
    envs += [f"{KGE_GPU_TYPE}={kge_gpu_type()}"] if KGE_GPU_TYPE in os.environ else []
    opts = LaunchOptions(workspace=workspace, command=f"{sys.executable} -m distgraph.kge.train.worker",
                         part_config=part_config, ip_config=ip_config, num_trainers=trainers,
                         num_omp_threads=cfg.num_thread, ssh=ssh, extra_envs=envs, fork_trainers=True)
    code = run(make_plan(opts), opts.ssh, _relay(reporter))
    if code:
        raise DistGraphError(f"KGE training stopped (exit code {code}); the messages above say why")


def train_kge(cfg: TrainConfig, out: TextIO | None = None) -> RunResult:
    """Train with `cfg.num_proc` processes on this machine (fewer if the triples are fewer; at
    least one per GPU of --gpu), or bucket by bucket with the entity table on disk
    (--num_entity_partitions, --memory_budget), save, and evaluate as the flags ask."""
    t0 = time.perf_counter()
    cfg.check()
    cfg, data = prepare_train(with_gpus(cfg))
    reporter = Reporter(cfg.num_proc, cfg.max_step, out=out, began=t0)
    reporter.write(_describe(data, time.perf_counter() - t0))
    for line in inert_flags(cfg, cfg.num_proc):
        reporter.write(line, err=True)
    save_dir = None if cfg.no_save_emb else next_model_dir(cfg.save_path, cfg.model_name, cfg.dataset).absolute()
    choice = partitions_for(cfg, data)
    if cfg.num_entity_partitions > 1 or cfg.memory_budget is not None:
        reporter.write(choice.why)
    if gpu_ids(cfg.gpu):
        from .train.device import check_gpus

        check_gpus(cfg.gpu)
    if choice.num_parts > 1:
        try:
            _train_buckets(cfg, data, choice.num_parts, save_dir, reporter)
        finally:
            reporter.close()
        return _result(reporter, save_dir)
    with tempfile.TemporaryDirectory(prefix="distgraph-kge-") as tmp:
        partition_kg(data, 1, tmp, part_method="random", seed=cfg.seed, importance=data.importance)
        part_config = str(Path(tmp) / f"{data.name}.json")
        reporter.t_start = time.perf_counter()
        try:
            if cfg.num_proc == 1:
                _standalone(cfg, save_dir, reporter, part_config)
            else:
                from ..cluster.hosts import free_port

                ip_config = Path(tmp) / "ip_config.txt"
                ip_config.write_text(f"127.0.0.1 {free_port('127.0.0.1')}\n")
                _launch(cfg, save_dir, reporter, tmp, part_config, str(ip_config), cfg.num_proc)
        finally:
            reporter.close()
    return _result(reporter, save_dir)


def partitions_for(cfg: TrainConfig, data: KGData) -> PartitionChoice:
    """The entity partitions of a run (1: the table in memory), and why."""
    choice = choose_partitions(cfg.num_entity_partitions, cfg.memory_budget, data.n_entities, len(data.train),
                               cfg.table_widths()["entity"], cfg.relation_bytes(data.n_relations))
    if choice.num_parts > 1 and cfg.num_proc > 1:
        raise InputError(f"bucket training (the entity table on disk, P = {choice.num_parts}) runs in one process: "
                         f"drop --num_proc {cfg.num_proc} and give the cores to it with --num_thread")
    if choice.num_parts > 1:
        _bucket_flags(cfg, f"bucket training (the entity table on disk, P = {choice.num_parts})")
    return choice


def _bucket_flags(cfg: TrainConfig, what: str, machines: bool = False) -> None:
    """Refuse the flags that bucket training (`what`) cannot honour, one line each."""
    if gpu_ids(cfg.gpu):
        raise InputError(f"{what} runs on the CPU: drop --gpu, or train with the table in memory (no "
                         f"--num_entity_partitions or --memory_budget)")
    if cfg.async_update:
        raise InputError(f"{what} applies each step's updates before the next: drop --async_update")
    if machines and cfg.rel_part:
        raise InputError(f"{what} gives each trainer the triples of its machine's buckets: drop --rel_part")


def _shares_on_disk(cfg: TrainConfig, part_config: Path) -> bool:
    """Whether `kge dist-train`'s trainers will keep each machine's entities on its disk (`job_plan`,
    from the partition's config when this host has it; without it, as soon as a flag asks)."""
    if cfg.num_entity_partitions == 1 and cfg.memory_budget is None:
        return False
    if cfg.memory_budget is None or not part_config.is_file():  # a P asked for is a P on disk
        return True
    from ..partition.layout import PartitionConfig
    from .train.dist_buckets import job_plan

    return job_plan(cfg, PartitionConfig.load(part_config)) is not None


def _train_buckets(cfg: TrainConfig, data: KGData, num_parts: int, save_dir: Path | None, reporter: Reporter) -> None:
    """Build the buckets (reusing those of the same data in --bucket_dir or --checkpoint_dir),
    train them in this process, save and test; a temporary folder is removed at the end."""
    from ..data.file_array import unmapped
    from ..files import check_space
    from .saved_model import save_model
    from .train.bucket_trainer import BucketTrainer, EvalData
    from .train.buckets import BucketLayout, build_buckets

    chosen = cfg.bucket_dir or (str(Path(cfg.checkpoint_dir) / "buckets") if cfg.checkpoint_dir else None)
    if chosen is None:
        Path(cfg.save_path).mkdir(parents=True, exist_ok=True)
    work = Path(chosen) if chosen else Path(tempfile.mkdtemp(prefix=".buckets-", dir=cfg.save_path))
    try:
        layout = None
        if (work / "buckets" / "buckets.json").is_file():
            layout = BucketLayout.load(work / "buckets")
            if layout.num_parts != num_parts or layout.n_entities != data.n_entities or \
                    int(layout.offsets[-1]) != len(data.train):
                layout = None
        if layout is None:
            work.mkdir(parents=True, exist_ok=True)
            table = data.n_entities * (cfg.table_widths()["entity"] + 1) * 4
            # a partition is written back to a new file renamed over the old one (one at a time), and
            # each of the two checkpoints kept holds on to the rows it linked until they are replaced
            copies = 2 * table if cfg.checkpoint_dir else 2 * -(-table // num_parts)
            check_space(work, len(data.train) * 16 + table + copies,
                        "the buckets and the entity partitions (and their copies while written back)")
            t = time.perf_counter()
            # read, not mapped: the mapping's pages would stay resident through training (4 GB at Freebase's shape)
            layout = build_buckets(unmapped(data.train), data.n_entities, num_parts, work / "buckets",
                                   importance=None if data.importance is None else unmapped(data.importance))
            reporter.write(f"{num_parts} x {num_parts} buckets of {len(data.train):,} triples in "
                           f"{time.perf_counter() - t:.1f} s ({work / 'buckets'})")
        trainer = BucketTrainer(cfg, layout, data.n_relations, work, reporter, EvalData(data.valid, data.test))
        reporter.t_start = time.perf_counter()
        trainer.run()

        def save(tables: dict) -> None:
            save_model(save_dir, cfg, tables, data.entities, data.relations)
            reporter(("saved", 0, str(save_dir)))

        trainer.finish(None if save_dir is None else save)
    finally:
        if chosen is None:
            shutil.rmtree(work, ignore_errors=True)


def _standalone(cfg: TrainConfig, save_dir: Path | None, reporter: Reporter, part_config: str) -> None:
    """The one trainer in this process, on the standalone runtime (restoring torch's thread count)."""
    import torch

    from .. import distributed as dist
    from .train.worker import run_trainer

    if dist.is_initialized():
        raise InputError("kge train runs its own runtime; call it in a process that did not call "
                         "distgraph.initialize()")
    threads = torch.get_num_threads()
    dist.initialize(part_config=part_config)
    try:
        run_trainer(cfg, None if save_dir is None else str(save_dir), reporter)
    finally:
        dist.exit_client()
        torch.set_num_threads(threads)


def dist_train_kge(cfg: TrainConfig, opts: DistOptions, out: TextIO | None = None) -> RunResult:
    """`dglke_dist_train`: train on the machines of ip_config, over the partition of `kge partition`."""
    from ..cluster.ip_config import parse_ip_config

    t0 = time.perf_counter()
    cfg = with_gpus(replace(cfg, num_proc=opts.num_client_proc).check(), "--num_client_proc")
    opts = replace(opts, num_client_proc=cfg.num_proc)
    part_config = opts.part_config or str(partition_folder(cfg.data_path, cfg.dataset) / f"{cfg.dataset}.json")
    if _shares_on_disk(cfg, Path(part_config)):
        _bucket_flags(cfg, "training with each machine's entities on its disk", machines=True)
    machines = parse_ip_config(opts.ip_config)
    reporter = Reporter(len(machines) * opts.num_client_proc, cfg.max_step, out=out, began=t0)
    reporter.write(f"{cfg.dataset}: training on {len(machines)} machines x {opts.num_client_proc} trainers "
                   f"({part_config})")
    for line in inert_flags(cfg, len(machines) * opts.num_client_proc):
        reporter.write(line, err=True)
    # trainer 0 saves on its machine, in the workspace (named here from what this host's copy holds)
    local = Path(opts.path).expanduser() / cfg.save_path
    save_dir = None if cfg.no_save_emb else next_model_dir(cfg.save_path, cfg.model_name, cfg.dataset).parent / \
        next_model_dir(local, cfg.model_name, cfg.dataset).name
    reporter.t_start = time.perf_counter()
    try:
        _launch(cfg, save_dir, reporter, opts.path, part_config, opts.ip_config, opts.num_client_proc, opts.ssh)
    finally:
        reporter.close()
    return _result(reporter, save_dir)


def eval_kge(cfg: EvalConfig, out: TextIO | None = None) -> RunResult:
    """Filtered ranking of a saved model on its dataset's test triples, in this process."""
    t0 = time.perf_counter()
    inputs = prepare_eval(cfg)
    reporter = Reporter(1, 0, out=out)
    reporter.write(_describe(inputs.data, time.perf_counter() - t0))
    from .evaluate.link_prediction import rank_saved  # torch: only once everything is checked

    try:
        reporter.t_trained = time.perf_counter()
        reporter(("metrics", 0, "Test", rank_saved(cfg, inputs.saved, inputs.data)))
    finally:
        reporter.close()
    return RunResult(Path(cfg.model_path), None, reporter.test_time, None, reporter.results)
