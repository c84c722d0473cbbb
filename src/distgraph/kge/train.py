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
from .loss import kge_loss, regularization
from .models import KGEModel
from .optim import sparse_adagrad_
from .params import KGEParams
from .sampler import Batch, ChunkSampler

STATS = ("loss", "pos_loss", "neg_loss", "regularization", "pos_score", "neg_score")
_PROGRESS_SECONDS = 0.5

Emit = Callable[[tuple], None]


def train_step(model: KGEModel, params: KGEParams, batch: Batch, cfg: TrainConfig) -> Tensor:
    """Update the tables from one batch; returns the values of STATS as a tensor."""
    n = len(batch.h)
    chunks = batch.num_chunks
    ent_rows, ent_inv = torch.unique(torch.cat([batch.h, batch.t, batch.neg.reshape(-1)]), return_inverse=True)
    rel_rows, rel_inv = torch.unique(batch.r, return_inverse=True)
    names = params.relation_names()
    ent = params.tables["entity"].index_select(0, ent_rows).requires_grad_()
    rels = [params.tables[name].index_select(0, rel_rows).requires_grad_() for name in names]

    emb = ent.index_select(0, ent_inv)
    h, t, neg = emb[:n], emb[n:2 * n], emb[2 * n:].view(chunks, -1, ent.shape[1])
    rel = tuple(x.index_select(0, rel_inv) for x in rels)
    pos = model.pair(h, rel, t)
    by_chunk = tuple(x.view(chunks, n // chunks, -1) for x in rel)
    if batch.corrupt_head:
        neg_scores = model.heads(neg, by_chunk, t.view(chunks, n // chunks, -1))
    else:
        neg_scores = model.tails(h.view(chunks, n // chunks, -1), by_chunk, neg)
    loss, pos_loss, neg_loss = kge_loss(pos, neg_scores, cfg.neg_adversarial_sampling,
                                        cfg.adversarial_temperature, batch.neg_mask)
    reg = torch.zeros(())
    if cfg.regularization_coef > 0 and cfg.regularization_norm > 0:
        reg = regularization([ent, rels[0]], cfg.regularization_coef, cfg.regularization_norm)
        loss = loss + reg
    loss.backward()

    sparse_adagrad_(params.tables["entity"], params.states["entity"], ent_rows, ent.grad, cfg.lr)
    for name, x in zip(names, rels):
        sparse_adagrad_(params.tables[name], params.states[name], rel_rows, x.grad, cfg.lr)
    return torch.stack([loss, pos_loss, neg_loss, reg, pos.mean(), neg_scores.mean()]).detach()


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
