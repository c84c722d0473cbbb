"""`kge train` and `kge eval` end to end: load, build the workers, run them, save, report."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

import numpy as np
import torch

from ..errors import InputError
from .config import EvalConfig, TrainConfig
from .data import KGData, load_dataset
from .evaluate import TripleFilter
from .models import KGEModel, create_model
from .params import KGEParams
from .report import Reporter
from .runner import run_tasks
from .checkpoint import KGECheckpoints
from .save import load_model, make_model_dir, save_model
from .train import Worker


@dataclass
class RunResult:
    """Figures of a run: timings, metrics per label ("Test", "Valid (step N)"), where it was saved."""

    save_dir: Path | None
    train_time: float | None
    test_time: float | None
    triples_per_s: float | None
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)


def _split(t: torch.Tensor | None, n: int, share: bool) -> list[torch.Tensor | None]:
    """n contiguous slices (one per process), in shared memory when processes are used."""
    if t is None:
        return [None] * n
    return [s.clone().share_memory_() if share else s for s in t.tensor_split(n)]


def _triples(a: np.ndarray | None) -> torch.Tensor | None:
    return None if a is None else torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))


def _known(data: KGData) -> torch.Tensor:
    """All triples of the dataset: the filter of filtered ranking."""
    return torch.from_numpy(np.concatenate([a for a in (data.train, data.valid, data.test) if a is not None]))


def _run(workers: list[Worker], reporter: Reporter) -> None:
    """Run the workers, restoring the caller's torch thread count afterwards."""
    threads = torch.get_num_threads()
    try:
        run_tasks(workers, reporter)
    finally:
        torch.set_num_threads(threads)
        reporter.close()


def _describe(data: KGData, seconds: float) -> str:
    sizes = ", ".join(f"{len(a):,} {name}" for name, a in (("train", data.train), ("valid", data.valid),
                                                          ("test", data.test)) if a is not None)
    return (f"{data.name}: {data.n_entities:,} entities, {data.n_relations:,} relations, {sizes} triples "
            f"(loaded in {seconds:.1f} s)")


def train_kge(cfg: TrainConfig, out: TextIO | None = None) -> RunResult:
    """Train with `cfg.num_proc` Hogwild processes, save, and evaluate as the flags ask."""
    cfg.check()
    model: KGEModel = create_model(cfg.model_name, cfg.hidden_dim, cfg.gamma, cfg.double_ent, cfg.double_rel)
    t0 = time.perf_counter()
    data = load_dataset(cfg.data_path, cfg.dataset, cfg.format, cfg.data_files, cfg.delimiter)
    for flag, split in (("valid", data.valid), ("test", data.test)):
        if getattr(cfg, flag) and split is None:
            raise InputError(f"--{flag} needs {flag} triples: give --data_files TRAIN VALID TEST")
    reporter = Reporter(cfg.num_proc, cfg.max_step, out=out)
    reporter.write(_describe(data, time.perf_counter() - t0))

    share = cfg.num_proc > 1
    params = KGEParams.create(model, data.n_entities, data.n_relations, cfg.seed)
    if share:
        params.share_memory_()
    train = _triples(data.train)
    train = train[torch.randperm(len(train), generator=torch.Generator().manual_seed(cfg.seed))]
    filt = TripleFilter.build(_known(data), data.n_relations) if cfg.valid or cfg.test else None
    if filt is not None and share:
        filt.share_memory_()
    checkpoints = KGECheckpoints(Path(cfg.checkpoint_dir), cfg.checkpoint_interval) if cfg.checkpoint_dir else None
    resume = [None] * cfg.num_proc
    if cfg.resume and checkpoints.latest() is not None:
        step = checkpoints.latest()
        resume = checkpoints.load(step, cfg, params)
        reporter.write(f"Resume from {checkpoints.root} at step {step}")
    workers = [Worker(model, params, cfg, tr, va, te, filt, checkpoints, rs) for tr, va, te, rs in
               zip(_split(train, cfg.num_proc, share), _split(_triples(data.valid) if cfg.valid else None,
                                                              cfg.num_proc, share),
                   _split(_triples(data.test) if cfg.test else None, cfg.num_proc, share), resume)]

    save_dir = None if cfg.no_save_emb else make_model_dir(cfg.save_path, cfg.model_name, cfg.dataset)

    def save() -> None:
        if save_dir is not None:
            save_model(save_dir, cfg, params, data)
            reporter.write(f"Save model to {save_dir}")

    reporter.on_trained = save
    reporter.t_start = time.perf_counter()
    _run(workers, reporter)
    return RunResult(save_dir, reporter.train_time, reporter.test_time,
                     reporter.triples / reporter.train_time if reporter.train_time else None, reporter.results)


def eval_kge(cfg: EvalConfig, out: TextIO | None = None) -> RunResult:
    """Filtered ranking of a saved model on its dataset's test triples, with `cfg.num_proc` processes."""
    cfg.check()
    saved = load_model(cfg.model_path)
    t = saved.cfg
    t0 = time.perf_counter()
    data = load_dataset(cfg.data_path or t.data_path, cfg.dataset or t.dataset, cfg.format or t.format,
                        cfg.data_files or t.data_files, cfg.delimiter or t.delimiter,
                        entities=saved.entities, relations=saved.relations)
    if data.test is None:
        raise InputError("no test triples to evaluate: give --data_files TRAIN VALID TEST")
    reporter = Reporter(cfg.num_proc, 0, out=out)
    reporter.write(_describe(data, time.perf_counter() - t0))
    share = cfg.num_proc > 1
    if share:
        saved.params.share_memory_()
    filt = TripleFilter.build(_known(data), data.n_relations)
    if share:
        filt.share_memory_()
    run_cfg = replace(t, num_thread=cfg.num_thread, batch_size_eval=cfg.batch_size_eval)
    workers = [Worker(saved.model, saved.params, run_cfg, None, None, te, filt)
               for te in _split(_triples(data.test), cfg.num_proc, share)]
    _run(workers, reporter)
    return RunResult(Path(cfg.model_path), None, reporter.test_time, None, reporter.results)
