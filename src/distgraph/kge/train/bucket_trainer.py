"""`kge train` with the entity table on disk: one process trains bucket after bucket
(PyTorch-BigGraph's scheme: `buckets`, `partitions`), with the in-memory trainer's step,
sampler, losses and row-wise Adagrad kernel (`steps`), so at P = 1 it trains exactly as the
in-memory trainer does.

A bucket (i, j) holds the triples whose head is in partition i and tail in partition j; it
trains with partitions i and j in memory, negatives replacing tails drawn from j and those
replacing heads from i, for as many steps as one pass over its triples takes. Its sampler's
state (a few kB) waits for the bucket's next visit. Relation tables stay in memory. A
checkpoint is taken at a bucket boundary: the partitions written back and hard-linked into
it (written back later to new files, so the links keep these rows), the relation tables and
every bucket's sampler state, and where the schedule stands.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from ...data.chunked import npy_file_array
from ...distributed.initializers import Uniform
from ...errors import InputError
from ...files import link_or_copy, write_atomically
from ...kvstore import initializers, kernels
from ...malloc import keep_freed_memory
from ...optim.sparse import coalesce
from ..config import TrainConfig
from ..evaluate.link_prediction import eval_share
from ..evaluate.partitioned import evaluate_partitioned, query_filter
from ..models import KGEModel, create_model
from ..saved_model import RowBlocks, nonfinite_rows, refuse_nonfinite
from .buckets import BucketLayout, bucket_order
from .partitions import EntityPartitions
from .sampler import Batch, ChunkSampler
from .steps import MUST_MATCH, Emit, StepLog, batch_rows, train_step

STATE = "state.pt"


class BucketTables:
    """A model's tables for bucket training: entity rows in `EntityPartitions`, relation tables
    and their Adagrad state in memory, initialised as the runtime's tables are (the same
    values whatever P)."""

    def __init__(self, model: KGEModel, layout: BucketLayout, n_relations: int, folder: Path, seed: int, lr: float):
        self.lr = lr
        widths = {"entity": model.entity_dim, **model.relation_tables()}
        self.relations: dict[str, tuple[Tensor, Tensor]] = {}
        for i, (name, width) in enumerate(widths.items()):
            bound = model.init_range(name)
            spec = Uniform(-bound, bound, seed + i).spec()
            if name == "entity":
                self.entities = EntityPartitions(folder, layout.bounds, width, spec, lr)
                continue
            rows = torch.empty(n_relations, width)
            initializers.fill(rows, 0, spec)
            self.relations[name] = (rows, torch.zeros(n_relations))

    def relation_names(self) -> list[str]:
        return list(self.relations)

    def start_rows(self, wanted: list[tuple[str, Tensor]]) -> "_Rows":
        return _Rows(self, wanted)

    def rows(self, name: str, ids: Tensor) -> Tensor:
        return self.entities.gather(ids) if name == "entity" else self.relations[name][0][ids]

    def start_update(self, name: str, ids: Tensor, grads: Tensor) -> Callable[[], None]:
        """The row-wise Adagrad step of the rows `ids` (repeats summed), to run before they are read again."""
        ids, grads = coalesce(ids, grads)
        if name == "entity":
            return partial(self.entities.update, ids, grads)
        rows, state = self.relations[name]
        return partial(kernels.row_adagrad, rows, state, ids, grads.to(torch.float32).contiguous(), self.lr)


@dataclass
class _Rows:
    """Rows asked for by a batch, gathered when `result` is called (after the updates made in between)."""

    tables: BucketTables
    wanted: list[tuple[str, Tensor]]

    def result(self) -> list[Tensor]:
        return [self.tables.rows(name, ids) for name, ids in self.wanted]


@dataclass
class Position:
    """Where the schedule stands: the epoch, the index of the next bucket in its order, the step done."""

    epoch: int = 0
    index: int = 0
    step: int = 0


@dataclass
class EvalData:
    """What a bucket run evaluates with: the valid and test triples, and every known triple's
    source for the filter (the buckets' triples, then valid and test)."""

    valid: np.ndarray | None
    test: np.ndarray | None


class BucketTrainer:
    """One process training `layout`'s buckets for `cfg.max_step` steps, its files under `work`."""

    def __init__(self, cfg: TrainConfig, layout: BucketLayout, n_relations: int, work: Path, emit: Emit,
                 evals: EvalData = EvalData(None, None)):
        self.cfg, self.layout, self.n_relations, self.work, self.emit = cfg, layout, n_relations, work, emit
        self.evals = evals
        self.model = create_model(cfg.model_name, cfg.hidden_dim, cfg.gamma, cfg.double_ent, cfg.double_rel)
        self.samplers: dict[tuple[int, int], dict] = {}  # a bucket's sampler state between its visits
        self.eval_gen = torch.Generator().manual_seed(cfg.seed * 7919)
        self.seed = (cfg.seed + 1) * 1_000_003  # the in-memory trainer 0's sampler seed (bucket 0 keeps it)
        self.tables: BucketTables | None = None

    # ------------------------------------------------------------- schedule
    def _visits(self, start: Position):
        """(position, bucket, the next non-empty bucket) of every non-empty bucket from `start` on, epoch after epoch."""
        pos = Position(start.epoch, start.index, start.step)
        pending = None
        while True:
            order = bucket_order(self.layout.num_parts, pos.epoch, self.cfg.seed)
            for k in range(pos.index, len(order)):
                if self.layout.size(order[k]):
                    if pending is not None:
                        yield pending[0], pending[1], order[k]
                    pending = (Position(pos.epoch, k, 0), order[k])
            pos = Position(pos.epoch + 1, 0, 0)

    def _sampler(self, bucket: tuple[int, int]) -> ChunkSampler:
        cfg, lay = self.cfg, self.layout
        i, j = bucket
        importance = lay.importance(bucket)
        sampler = ChunkSampler(torch.from_numpy(lay.triples(bucket).astype(np.int64)),
                               (int(lay.bounds[j]), int(lay.bounds[j + 1])), cfg.batch_size, cfg.neg_sample_size,
                               cfg.neg_deg_sample, seed=self.seed + 7919 * (i * lay.num_parts + j),
                               importance=None if importance is None else torch.from_numpy(importance),
                               head_range=(int(lay.bounds[i]), int(lay.bounds[i + 1])))
        if bucket in self.samplers:
            sampler.restore(self.samplers[bucket])
        return sampler

    # --------------------------------------------------------------- training
    def run(self) -> None:
        cfg = self.cfg
        torch.set_num_threads(cfg.num_thread)
        keep_freed_memory()
        position = self._resume()
        if self.tables is None:  # a new run: partitions an earlier run left in this folder are not its start
            shutil.rmtree(self.work / "entities", ignore_errors=True)
        self.tables = tables = self.tables or BucketTables(self.model, self.layout, self.n_relations,
                                                          self.work / "entities", cfg.seed, cfg.lr)
        log = StepLog(cfg, 0, self.emit)
        if position.step:
            log.acc.copy_(self._log_sums)
        self.emit(("started", 0))
        step = position.step
        last_checkpoint = last_eval = step
        trained = 0
        for at, bucket, following in self._visits(position):
            if step >= cfg.max_step:
                break
            tables.entities.use(set(bucket), set(following))
            sampler = self._sampler(bucket)
            visit = min(-(-self.layout.size(bucket) // sampler.batch_size), cfg.max_step - step)
            ahead = self._ask(tables, sampler)
            for k in range(visit):
                step += 1
                batch, wanted, pending = ahead
                stats, update = train_step(self.model, tables, batch, wanted, pending.result(), cfg)
                if k + 1 < visit:
                    ahead = self._ask(tables, sampler)
                update()
                log.add(step, stats)
                trained += len(batch.h)
            self.samplers[bucket] = sampler.state()
            if self.evals.valid is not None and cfg.valid and step - last_eval >= cfg.eval_interval:
                self.emit(("metrics", 0, f"Valid (step {step})", self.evaluate(self.evals.valid)))
                last_eval = step
            if cfg.checkpoint_dir and step - last_checkpoint >= cfg.checkpoint_interval and step < cfg.max_step:
                self._checkpoint(Position(at.epoch, at.index + 1, step), log.acc)
                last_checkpoint = step
        tables.entities.close()
        self.emit(("note", 0, tables.entities.traffic.line()))
        self.emit(("progress", 0, cfg.max_step))
        self.emit(("trained", 0, cfg.max_step - position.step, trained))
        self._refuse_nonfinite()

    def finish(self, save: Callable[[dict[str, object]], None] | None) -> None:
        """After `run`: hand the tables to `save` (the entity table as a memory map of the
        partitions' rows in id order), then rank the test triples if asked."""
        if save is not None:
            save(self._tables_for_saving())
        if self.cfg.test and self.evals.test is not None:
            self.emit(("metrics", 0, "Test", self.evaluate(self.evals.test)))

    # ------------------------------------------------------------- evaluation
    def evaluate(self, triples: np.ndarray) -> dict[str, float]:
        """Metric sums of `triples` (--eval_percent of them), the entity rows read a partition at a time."""
        cfg, lay, tables = self.cfg, self.layout, self.tables
        share = eval_share(torch.from_numpy(np.asarray(triples, dtype=np.int64)), cfg.eval_percent, 0, 1, cfg.seed)
        filt = None
        if not cfg.no_eval_filter:
            known = [npy_file_array(lay.folder / "triples.npy"),  # read, not mapped: the pass leaves nothing resident
                     *(a for a in (self.evals.valid, self.evals.test) if a is not None)]
            filt = query_filter(self.n_relations, share, known)
        tables.entities.flush()

        def draw(size: int) -> Tensor:
            if cfg.neg_deg_sample_eval:  # an entity of a random training triple: by degree
                rows = np.load(lay.folder / "triples.npy", mmap_mode="r")
                pick = torch.randint(0, len(rows), (size,), generator=self.eval_gen).numpy()
                side = torch.randint(0, 2, (size,), generator=self.eval_gen).numpy() * 2
                return torch.from_numpy(np.asarray(rows[np.sort(pick)])[np.argsort(np.argsort(pick)), side]
                                        .astype(np.int64))
            return torch.randint(0, lay.n_entities, (size,), generator=self.eval_gen)

        return evaluate_partitioned(self.model, tables.rows, tables.relation_names(), tables.entities.read,
                                    lay.bounds, share, cfg.batch_size_eval, filt, cfg.neg_sample_size_eval, draw,
                                    tables.entities.reading_order)

    def _refuse_nonfinite(self) -> None:
        """Refuse a table with non-finite rows (one error naming how many), as the in-memory trainer does."""
        ent = self.tables.entities
        counts = {"entity": sum(nonfinite_rows(ent.read(p).numpy()) for p in ent.reading_order())}
        counts.update({name: nonfinite_rows(rows.numpy()) for name, (rows, _) in self.tables.relations.items()})
        sizes = {"entity": self.layout.n_entities, **{n: len(r) for n, (r, _) in self.tables.relations.items()}}
        refuse_nonfinite(counts, sizes, "the trained model")

    def _tables_for_saving(self) -> dict[str, object]:
        """Every table in id order, the entity table read a partition at a time as it is written."""
        ent = self.tables.entities
        blocks = RowBlocks((self.layout.n_entities, ent.dim), np.dtype(np.float32),
                           lambda: (ent.read(p).numpy() for p in range(ent.num_parts)))
        return {"entity": blocks, **{name: rows.numpy() for name, (rows, _) in self.tables.relations.items()}}

    @staticmethod
    def _ask(tables: BucketTables, sampler: ChunkSampler) -> tuple[Batch, list[tuple[str, Tensor]], _Rows]:
        batch = next(sampler)
        wanted = batch_rows(tables, batch)
        return batch, wanted, tables.start_rows(wanted)

    # ------------------------------------------------------------ checkpoints
    def _checkpoint(self, position: Position, log_sums: Tensor) -> None:
        """Checkpoint `position` (a bucket boundary) into --checkpoint_dir/step-<N>: the partition
        files hard-linked, the relation tables, the samplers' states and the position."""
        tables = self.tables
        tables.entities.flush()
        root = Path(self.cfg.checkpoint_dir)
        final = root / f"step-{position.step:010d}"
        tmp = root / f".{final.name}.tmp{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "entities").mkdir(parents=True)
        for f in sorted((self.work / "entities").iterdir()):
            if not f.name.endswith(".tmp"):
                link_or_copy(f, tmp / "entities" / f.name)
        state = {"position": [position.epoch, position.index, position.step], "log_sums": log_sums.clone(),
                 "samplers": {f"{i},{j}": s for (i, j), s in self.samplers.items()},
                 "relations": {name: (rows.clone(), st.clone()) for name, (rows, st) in tables.relations.items()},
                 "config": json.dumps(_resume_key(self.cfg, self.layout))}
        write_atomically(tmp / STATE, lambda f: torch.save(state, f))
        os.replace(tmp, final)
        for old in sorted(root.glob("step-*"))[:-2]:  # the newest two stay
            shutil.rmtree(old, ignore_errors=True)

    def _resume(self) -> Position:
        """The position to start from: the start, or with --resume the newest checkpoint's (restored)."""
        cfg = self.cfg
        if not cfg.resume:
            return Position()
        found = sorted(p for p in Path(cfg.checkpoint_dir).glob("step-*") if (p / STATE).is_file())
        if not found:
            return Position()
        state = torch.load(found[-1] / STATE, weights_only=True)
        if json.loads(state["config"]) != _resume_key(cfg, self.layout):
            raise InputError(f"checkpoint {found[-1]} was taken with other settings or another bucket layout; "
                             f"resume with the same ones, or start a new --checkpoint_dir")
        entities = self.work / "entities"
        shutil.rmtree(entities, ignore_errors=True)
        entities.mkdir(parents=True)
        for f in (found[-1] / "entities").iterdir():
            link_or_copy(f, entities / f.name)
        self.tables = BucketTables(self.model, self.layout, self.n_relations, entities, cfg.seed, cfg.lr)
        for name, (rows, st) in state["relations"].items():
            self.tables.relations[name][0].copy_(rows)
            self.tables.relations[name][1].copy_(st)
        self.samplers = {tuple(int(x) for x in k.split(",")): s for k, s in state["samplers"].items()}
        self._log_sums = state["log_sums"]
        epoch, index, step = state["position"]
        self.emit(("resumed", 0, str(found[-1]), step))
        return Position(epoch, index, step)


def _resume_key(cfg: TrainConfig, layout: BucketLayout) -> dict:
    """What a resumed run shares with the run it continues."""
    return {**{k: getattr(cfg, k) for k in MUST_MATCH}, "num_parts": layout.num_parts,
            "offsets": [int(x) for x in layout.offsets]}
