"""One training step, and the loop each process runs: train, validate, test.

A step gathers the entity rows of its heads, tails and negatives (and the relation rows of
its triples) into leaf tensors, scores positives and chunked negatives, back-propagates into
those leaves only, sums the gradients of repeated rows and applies row-sparse Adagrad to the
shared tables. No dense gradient of a table exists.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from ..malloc import keep_freed_memory
from .checkpoint import KGECheckpoints
from .config import TrainConfig
from .evaluate import TripleFilter, evaluate
from .loss import add_regularization_grad, kge_loss
from .models import KGEModel
from .optim import sparse_adagrad_
from .params import KGEParams
from .sampler import Batch, ChunkSampler

STATS = ("loss", "pos_loss", "neg_loss", "regularization", "pos_score", "neg_score")
_PROGRESS_SECONDS = 0.5

Emit = Callable[[tuple], None]


def _coalesce(ids: Tensor, grad: Tensor) -> tuple[Tensor, Tensor]:
    """(distinct ids, summed gradient of each) from the gradients of gathered rows."""
    rows, inv = torch.unique(ids, return_inverse=True)
    return rows, torch.zeros(len(rows), grad.shape[1]).index_add_(0, inv, grad)


def train_step(model: KGEModel, params: KGEParams, batch: Batch, cfg: TrainConfig) -> Tensor:
    """Update the tables from one batch; returns the values of STATS as a tensor."""
    n = len(batch.h)
    chunks = batch.num_chunks
    k = n // chunks
    names = params.relation_names()
    ent_ids = torch.cat([batch.h, batch.t, batch.neg.reshape(-1)])
    ent = params.tables["entity"].index_select(0, ent_ids).requires_grad_()
    rels = [params.tables[name].index_select(0, batch.r).requires_grad_() for name in names]

    h, t, neg = ent.split([n, n, len(ent_ids) - 2 * n])
    pos = model.pair(h, tuple(rels), t)
    by_chunk = tuple(x.view(chunks, k, -1) for x in rels)
    neg = neg.view(chunks, -1, ent.shape[1])
    if batch.corrupt_head:
        neg_scores = model.heads(neg, by_chunk, t.view(chunks, k, -1))
    else:
        neg_scores = model.tails(h.view(chunks, k, -1), by_chunk, neg)
    loss, pos_loss, neg_loss = kge_loss(pos, neg_scores, cfg.neg_adversarial_sampling,
                                        cfg.adversarial_temperature, batch.neg_mask)
    loss.backward()

    reg = torch.zeros(())
    if cfg.regularization_coef > 0 and cfg.regularization_norm > 0:
        with torch.no_grad():
            reg = (add_regularization_grad(ent, ent.grad, cfg.regularization_coef, cfg.regularization_norm)
                   + add_regularization_grad(rels[0], rels[0].grad, cfg.regularization_coef, cfg.regularization_norm))
    sparse_adagrad_(params.tables["entity"], params.states["entity"], *_coalesce(ent_ids, ent.grad), cfg.lr)
    for name, x in zip(names, rels):
        sparse_adagrad_(params.tables[name], params.states[name], *_coalesce(batch.r, x.grad), cfg.lr)
    return torch.stack([loss + reg, pos_loss, neg_loss, reg, pos.mean(), neg_scores.mean()]).detach()


def _wait(barrier) -> None:
    """Synchronise the processes (no-op when training in-process)."""
    if barrier is not None:
        barrier.wait()


@dataclass
class Worker:
    """What one process trains and evaluates; tensors travel to spawned processes as shared memory."""

    model: KGEModel
    params: KGEParams
    cfg: TrainConfig
    train: Tensor | None
    valid: Tensor | None
    test: Tensor | None
    filt: TripleFilter | None
    checkpoints: KGECheckpoints | None = None
    resume: dict | None = None  # this process's state in the checkpoint the run continues from

    def run(self, rank: int, emit: Emit, barrier=None) -> None:
        """Train (if given triples), then test this process's slice once every process has trained."""
        torch.set_num_threads(self.cfg.num_thread)
        keep_freed_memory()
        steps = triples = 0
        if self.train is not None:
            steps, triples = self._train(rank, emit, barrier)
        emit(("trained", rank, steps, triples))
        _wait(barrier)
        if self.test is not None:
            emit(("metrics", rank, "Test", evaluate(self.model, self.params, self.test, self.filt,
                                                    self.cfg.batch_size_eval)))

    def _train(self, rank: int, emit: Emit, barrier) -> tuple[int, int]:
        cfg = self.cfg
        sampler = ChunkSampler(self.train, len(self.params.tables["entity"]), cfg.batch_size, cfg.neg_sample_size,
                               cfg.neg_deg_sample, seed=(cfg.seed + 1) * 1_000_003 + rank)
        acc = torch.zeros(len(STATS))
        first = 1
        if self.resume is not None:
            sampler.restore(self.resume["sampler"])
            acc.copy_(self.resume["log_sums"])
            first = self.resume["step"] + 1
        t_log = t_progress = time.perf_counter()
        for step in range(first, cfg.max_step + 1):
            acc += train_step(self.model, self.params, next(sampler), cfg)
            now = time.perf_counter()
            if now - t_progress >= _PROGRESS_SECONDS:
                emit(("progress", rank, step))
                t_progress = now
            if step % cfg.log_interval == 0 or step == cfg.max_step:
                done = step % cfg.log_interval or cfg.log_interval
                stats = dict(zip(STATS, (acc / done).tolist()))
                stats["steps/s"] = done / max(now - t_log, 1e-9)
                emit(("log", rank, step, stats))
                acc.zero_()
                t_log = time.perf_counter()
            if self.valid is not None and step % cfg.eval_interval == 0:
                _wait(barrier)
                emit(("metrics", rank, f"Valid (step {step})",
                      evaluate(self.model, self.params, self.valid, self.filt, cfg.batch_size_eval)))
                _wait(barrier)
            if self.checkpoints is not None and self.checkpoints.due(step, cfg.max_step):
                self._checkpoint(rank, step, sampler, acc, barrier)
        emit(("progress", rank, cfg.max_step))
        return cfg.max_step - first + 1, (cfg.max_step - first + 1) * sampler.batch_size

    def _checkpoint(self, rank: int, step: int, sampler: ChunkSampler, acc: Tensor, barrier) -> None:
        """Every process writes its state while all are paused; process 0 the tables, then publishes."""
        _wait(barrier)
        self.checkpoints.save_worker(step, rank, {"step": step, "sampler": sampler.state(), "log_sums": acc.clone()})
        if rank == 0:
            self.checkpoints.save_tables(step, self.params)
        _wait(barrier)
        if rank == 0:
            self.checkpoints.publish(step, self.cfg)
