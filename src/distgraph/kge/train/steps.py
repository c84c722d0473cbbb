"""One KGE training step and the running account of steps, shared by the trainer on the
runtime (`worker`) and the trainer of buckets on disk (`bucket_trainer`): the same batch, the
same arithmetic and the same events, whichever holds the rows."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Protocol

import torch
from torch import Tensor

from ...errors import DistGraphError
from ...optim.row_adagrad import run_each
from ..config import TrainConfig
from ..models import KGEModel
from .device import to_host
from .loss import add_regularization_grad, kge_loss
from .sampler import Batch

STATS = ("loss", "pos_loss", "neg_loss", "regularization", "pos_score", "neg_score")
_PROGRESS_SECONDS = 0.5

Emit = Callable[[tuple], None]

# settings a resumed run shares with the run it continues (others, e.g. --max_step or logging, may change)
MUST_MATCH = ("model_name", "dataset", "format", "data_files", "batch_size", "neg_sample_size", "neg_deg_sample",
              "neg_adversarial_sampling", "adversarial_temperature", "loss_genre", "pairwise", "margin", "hidden_dim",
              "lr", "gamma", "double_ent", "double_rel", "regularization_coef", "regularization_norm", "num_proc",
              "seed", "rel_part", "global_neg_share")


class Tables(Protocol):
    """What a step needs of a model's tables: the relation tables' names and row updates."""

    def relation_names(self) -> list[str]: ...

    def start_update(self, name: str, ids: Tensor, grads: Tensor) -> Callable[[], None]: ...


def batch_rows(tables: Tables, batch: Batch) -> list[tuple[str, Tensor]]:
    """The rows a batch trains: entities of its positives and negatives, its relations."""
    ent_ids = torch.cat([batch.h, batch.t, batch.neg.reshape(-1)])
    return [("entity", ent_ids), *((name, batch.r) for name in tables.relation_names())]


def train_step(model: KGEModel, tables: Tables, batch: Batch, wanted: list[tuple[str, Tensor]],
               rows: list[Tensor], cfg: TrainConfig) -> tuple[Tensor, Callable[[], None]]:
    """Forward and backward of one batch on the `rows` it `wanted` (`batch_rows`), on the device
    of the rows (and of the batch's mask and weights); sends the updates of other machines'
    rows. Returns the values of STATS as a CPU tensor, and the update of the rows in this
    process's memory (run it before they are read again)."""
    n = len(batch.h)
    chunks = batch.num_chunks
    k = n // chunks
    ent_ids = wanted[0][1]
    ent, *rels = (x.requires_grad_() for x in rows)
    h, t, neg = ent.split([n, n, len(ent_ids) - 2 * n])
    pos = model.pair(h, tuple(rels), t)
    by_chunk = tuple(x.view(chunks, k, -1) for x in rels)
    neg = neg.view(chunks, -1, ent.shape[1])
    if batch.corrupt_head:
        neg_scores = model.heads(neg, by_chunk, t.view(chunks, k, -1))
    else:
        neg_scores = model.tails(h.view(chunks, k, -1), by_chunk, neg)
    loss, pos_loss, neg_loss = kge_loss(pos, neg_scores, cfg.neg_adversarial_sampling, cfg.adversarial_temperature,
                                        batch.neg_mask, batch.importance, cfg.loss_genre, cfg.margin, cfg.pairwise)
    loss.backward()
    reg = ent.new_zeros(())
    if cfg.regularization_coef > 0 and cfg.regularization_norm > 0:
        with torch.no_grad():
            reg = (add_regularization_grad(ent, ent.grad, cfg.regularization_coef, cfg.regularization_norm)
                   + add_regularization_grad(rels[0], rels[0].grad, cfg.regularization_coef, cfg.regularization_norm))
    local = [tables.start_update(name, ids, x.grad) for (name, ids), x in zip(wanted, (ent, *rels))]
    stats = to_host(torch.stack([loss + reg, pos_loss, neg_loss, reg, pos.mean(), neg_scores.mean()]).detach())
    return stats, partial(run_each, local)


class StepLog:
    """The running account of steps: sums of STATS between log lines, a refused non-finite
    loss, `progress` events twice a second and a `log` event every --log_interval steps."""

    def __init__(self, cfg: TrainConfig, rank: int, emit: Emit):
        self.cfg, self.rank, self.emit = cfg, rank, emit
        self.acc = torch.zeros(len(STATS))
        self.unlogged = ("pos_loss", "neg_loss") if cfg.pairwise else ()  # a pairwise loss has one term
        self.t_log = self.t_progress = time.perf_counter()

    def add(self, step: int, stats: Tensor) -> None:
        """Account for `step`'s STATS values."""
        if not bool(torch.isfinite(stats[0])):
            raise DistGraphError(f"trainer {self.rank}: the loss became {float(stats[0])} at step {step}; lower "
                                 f"--lr (or check the data and --regularization_coef)")
        self.acc += stats
        now = time.perf_counter()
        if now - self.t_progress >= _PROGRESS_SECONDS:
            self.emit(("progress", self.rank, step))
            self.t_progress = now
        if step % self.cfg.log_interval == 0 or step == self.cfg.max_step:
            done = step % self.cfg.log_interval or self.cfg.log_interval
            log = {k: v for k, v in zip(STATS, (self.acc / done).tolist()) if k not in self.unlogged}
            log["steps/s"] = done / max(now - self.t_log, 1e-9)
            self.emit(("log", self.rank, step, log))
            self.acc.zero_()
            self.t_log = time.perf_counter()
