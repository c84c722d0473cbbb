"""`kge train`, `kge dist-train` and `kge eval` end to end: one trainer code path
(`kge.worker`) on the runtime, whatever the number of processes and machines.

- `kge train --num_proc 1`: the dataset is partitioned into one part (a temporary folder)
  and the trainer runs in this process on the standalone runtime.
- `kge train --num_proc N`: the same partition, served on this host by one server, with N
  trainers, started and supervised by the launcher (`launch.runner`) like any job.
- `kge dist-train`: the partition made by `kge partition`, on the machines of ip_config.
The trainers report through events that a `Reporter` prints DGL-KE's way; trainer 0
saves the model. `kge eval` ranks a saved model's test triples in this process, with the
same ranking code and the whole table as one shard.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

import numpy as np
import torch

from ..errors import DistGraphError, InputError
from ..launch.ssh import SshOptions
from .config import EvalConfig, TrainConfig
from .data import KGData, load_dataset
from .evaluate import eval_share, evaluate
from .models import create_model
from .partition import partition_kg
from .ranking import TripleFilter, shard_counts
from .report import Reporter
from .save import load_model, next_model_dir
from .worker import EVENT, JOB_ENV, job_env, run_trainer

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


def partition_folder(data_path: str | Path, dataset: str) -> Path:
    """Where `kge partition` writes a dataset's partition (and `kge dist-train` looks for it)."""
    return Path(data_path) / dataset / "partitions"


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
            reporter(tuple(json.loads(text[len(EVENT):])))
        elif not text.endswith(SERVING):
            reporter.write(f"[{label}] {text}", err=is_err)
    return sink


def _launch(cfg: TrainConfig, save_dir: Path | None, reporter: Reporter, workspace: str, part_config: str,
            ip_config: str, trainers: int, ssh: SshOptions = SshOptions()) -> None:
    """Run the trainers as a job of the launcher; an error if one of them fails."""
    from ..launch import LaunchOptions, make_plan, run

    opts = LaunchOptions(workspace=workspace, command=f"{sys.executable} -m distgraph.kge.worker",
                         part_config=part_config, ip_config=ip_config, num_trainers=trainers,
                         num_omp_threads=cfg.num_thread, ssh=ssh,
                         extra_envs=[f"{JOB_ENV}={job_env(cfg, None if save_dir is None else str(save_dir))}"])
    code = run(make_plan(opts), opts.ssh, _relay(reporter))
    if code:
        raise DistGraphError(f"KGE training stopped (exit code {code}); the messages above say why")


def train_kge(cfg: TrainConfig, out: TextIO | None = None) -> RunResult:
    """Train with `cfg.num_proc` processes on this machine, save, and evaluate as the flags ask."""
    cfg.check()
    create_model(cfg.model_name, cfg.hidden_dim, cfg.gamma, cfg.double_ent, cfg.double_rel)  # flags checked early
    t0 = time.perf_counter()
    data = load_dataset(cfg.data_path, cfg.dataset, cfg.format, cfg.data_files, cfg.delimiter,
                        with_importance=cfg.has_edge_importance)
    for flag, split in (("valid", data.valid), ("test", data.test)):
        if getattr(cfg, flag) and split is None:
            raise InputError(f"--{flag} needs {flag} triples: give --data_files TRAIN VALID TEST")
    if cfg.num_proc > len(data.train):
        raise InputError(f"--num_proc {cfg.num_proc} exceeds the {len(data.train)} training triples; use fewer "
                         f"processes")
    reporter = Reporter(cfg.num_proc, cfg.max_step, out=out)
    reporter.write(_describe(data, time.perf_counter() - t0))
    save_dir = None if cfg.no_save_emb else next_model_dir(cfg.save_path, cfg.model_name, cfg.dataset).absolute()
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


def _standalone(cfg: TrainConfig, save_dir: Path | None, reporter: Reporter, part_config: str) -> None:
    """The one trainer in this process, on the standalone runtime (restoring torch's thread count)."""
    from .. import distributed as dist

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

    cfg = replace(cfg, num_proc=opts.num_client_proc)
    cfg.check()
    create_model(cfg.model_name, cfg.hidden_dim, cfg.gamma, cfg.double_ent, cfg.double_rel)
    part_config = opts.part_config or str(partition_folder(cfg.data_path, cfg.dataset) / f"{cfg.dataset}.json")
    machines = parse_ip_config(opts.ip_config)
    reporter = Reporter(len(machines) * opts.num_client_proc, cfg.max_step, out=out)
    reporter.write(f"{cfg.dataset}: training on {len(machines)} machines x {opts.num_client_proc} trainers "
                   f"({part_config})")
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
    cfg.check()
    saved = load_model(cfg.model_path)
    t = saved.cfg
    differ = [f"--{k} {getattr(cfg, k)!r} (saved: {getattr(t, k)!r})" for k in
              ("model_name", "hidden_dim", "gamma") if getattr(cfg, k) is not None and getattr(cfg, k) != getattr(t, k)]
    differ += [f"-{k[0:1]}{k.split('_')[1][0]} (saved without it)" for k in ("double_ent", "double_rel")
               if getattr(cfg, k) and not getattr(t, k)]
    if differ:
        raise InputError(f"{cfg.model_path} was trained with other settings than {', '.join(differ)}; drop those "
                         f"flags (kge eval reads them from the saved config.json)")
    t0 = time.perf_counter()
    data = load_dataset(cfg.data_path or t.data_path, cfg.dataset or t.dataset, cfg.format or t.format,
                        cfg.data_files or t.data_files, cfg.delimiter or t.delimiter,
                        entities=saved.entities, relations=saved.relations)
    if data.test is None:
        raise InputError("no test triples to evaluate: give --data_files TRAIN VALID TEST")
    reporter = Reporter(1, 0, out=out)
    reporter.write(_describe(data, time.perf_counter() - t0))
    known = torch.from_numpy(np.concatenate([a for a in (data.train, data.valid, data.test) if a is not None]))
    filt = None if cfg.no_eval_filter else TripleFilter.build(data.n_relations, known)
    table = saved.tables["entity"]
    gen = torch.Generator().manual_seed(cfg.seed)
    train = torch.from_numpy(data.train)

    def draw(size: int) -> torch.Tensor:
        if cfg.neg_deg_sample_eval:
            pick = torch.randint(0, len(train), (size,), generator=gen)
            return train[pick, torch.randint(0, 2, (size,), generator=gen) * 2]
        return torch.randint(0, data.n_entities, (size,), generator=gen)

    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.num_proc * cfg.num_thread)
    try:
        reporter.t_trained = time.perf_counter()
        sums = evaluate(saved.model, lambda name, ids: saved.tables[name][ids],
                        lambda q, cand: shard_counts(saved.model, q, table, 0, filt, cand),
                        [n for n in saved.tables if n != "entity"],
                        eval_share(torch.from_numpy(data.test), cfg.eval_percent, 0, 1, cfg.seed), data.n_entities,
                        cfg.batch_size_eval, cfg.neg_sample_size_eval, draw)
        reporter(("metrics", 0, "Test", sums))
    finally:
        torch.set_num_threads(threads)
        reporter.close()
    return RunResult(Path(cfg.model_path), None, reporter.test_time, None, reporter.results)
