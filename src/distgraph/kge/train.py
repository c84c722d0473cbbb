"""One training step, and the loop each process runs: train, validate, test.

A step gathers the distinct entity and relation rows the batch touches into small leaf
tensors, scores positives and chunked negatives, back-propagates into those leaves only,
and applies row-sparse Adagrad to the shared tables. No dense gradient of a table exists.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from .config import TrainConfig
from .evaluate import TripleFilter, evaluate
from .loss import kge_loss
from .models import KGEModel
from .optim import sparse_adagrad_
from .params import KGEParams
from .sampler import Batch, ChunkSampler

STATS = ("loss", "pos_loss", "neg_loss", "regularization", "pos_score", "neg_score")
_PROGRESS_SECONDS = 0.5

Emit = Callable[[tuple], None]


def _coalesce(ids: list[Tensor], grads: list[Tensor]) -> tuple[Tensor, Tensor]:
    """(distinct rows, summed gradient of each) from gradients of gathered rows."""
    rows, inv = torch.unique(torch.cat(ids), return_inverse=True)
    out = torch.zeros(len(rows), grads[0].shape[-1])
    start = 0
    for g in grads:
        g = g.reshape(-1, out.shape[1])
        out.index_add_(0, inv[start:start + len(g)], g)
        start += len(g)
    return rows, out


def _add_regularization(table: Tensor, rows: Tensor, grad: Tensor, coef: float, norm: int) -> Tensor:
    """Add the gradient of coef * sum |x|^norm over `rows` to `grad` (norm * |x|^(norm-2) x, without
    the slow `sign`/`pow` kernels for DGL-KE's default norm 3); returns the penalty."""
    x = table.index_select(0, rows)
    a = x.abs()
    if norm == 1:
        grad.add_(x.sign(), alpha=coef)
        return coef * a.sum()
    scaled = x if norm == 2 else x * (a if norm == 3 else a.pow(norm - 2))
    grad.add_(scaled, alpha=coef * norm)
    return coef * (scaled * x).sum()


def train_step(model: KGEModel, params: KGEParams, batch: Batch, cfg: TrainConfig) -> Tensor:
    """Update the tables from one batch; returns the values of STATS as a tensor."""
    n = len(batch.h)
    chunks = batch.num_chunks
    k = n // chunks
    ent_table = params.tables["entity"]
    names = params.relation_names()
    h = ent_table.index_select(0, batch.h).requires_grad_()
    t = ent_table.index_select(0, batch.t).requires_grad_()
    neg = ent_table.index_select(0, batch.neg.reshape(-1)).view(chunks, -1, ent_table.shape[1]).requires_grad_()
    rel = tuple(params.tables[name].index_select(0, batch.r).requires_grad_() for name in names)

    pos = model.pair(h, rel, t)
    by_chunk = tuple(x.view(chunks, k, -1) for x in rel)
    if batch.corrupt_head:
        neg_scores = model.heads(neg, by_chunk, t.view(chunks, k, -1))
    else:
        neg_scores = model.tails(h.view(chunks, k, -1), by_chunk, neg)
    loss, pos_loss, neg_loss = kge_loss(pos, neg_scores, cfg.neg_adversarial_sampling,
                                        cfg.adversarial_temperature, batch.neg_mask)
    loss.backward()

    reg = torch.zeros(())
    ent_rows, ent_grad = _coalesce([batch.h, batch.t, batch.neg.reshape(-1)], [h.grad, t.grad, neg.grad])
    rel_rows, rel_inv = torch.unique(batch.r, return_inverse=True)
    rel_grads = [torch.zeros(len(rel_rows), x.shape[1]).index_add_(0, rel_inv, x.grad) for x in rel]
    if cfg.regularization_coef > 0 and cfg.regularization_norm > 0:
        reg = (_add_regularization(ent_table, ent_rows, ent_grad, cfg.regularization_coef, cfg.regularization_norm)
               + _add_regularization(params.tables["relation"], rel_rows, rel_grads[0], cfg.regularization_coef,
                                     cfg.regularization_norm))
    sparse_adagrad_(ent_table, params.states["entity"], ent_rows, ent_grad, cfg.lr)
    for name, g in zip(names, rel_grads):
        sparse_adagrad_(params.tables[name], params.states[name], rel_rows, g, cfg.lr)
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

    def run(self, rank: int, emit: Emit, barrier=None) -> None:
        """Train (if given triples), then test this process's slice once every process has trained."""
        torch.set_num_threads(self.cfg.num_thread)
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
        t_log = t_progress = time.perf_counter()
        for step in range(1, cfg.max_step + 1):
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
        emit(("progress", rank, cfg.max_step))
        return cfg.max_step, cfg.max_step * sampler.batch_size
