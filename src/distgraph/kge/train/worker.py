"""What every KGE trainer runs, on the runtime: for `kge train` (standalone in the calling
process, or one machine's job of --num_proc trainers) and `kge dist-train` (a job on the
machines of ip_config) alike.

A trainer trains on its share of its machine's triples (the in-edges of the machine's
entities in the KG partition: `kge.data.partition`), draws negatives from its machine's own
entities (and a share from all entities), reads and updates rows through `KGETables` (rows of
its machine in place, the others through their servers), computes on its device (`device`:
the CPU, or its GPU of --gpu, with the rows it alone trains kept there: `placement`), applies
its updates at once or, with --async_update, in a thread while it computes the next step
(`updates`), ranks its share of the valid and test triples where the entity rows live
(`kge.evaluate.ranking`, scored on its device), and reports what the parent prints as events:
one JSON list per line on standard output (`report`), or straight to a callable in-process.
Trainer 0 saves the embeddings in `kge train`'s layout, in the entities' original ids. With
each machine's entities on its disk (`kge dist-train --num_entity_partitions`, --memory_budget),
the trainers go through buckets in stages instead (`dist_buckets`), with the same steps.
"""

from __future__ import annotations

import gc
import sys

if __name__ == "__main__":  # a launched trainer: no collection while torch and the rest load (a third of
    gc.disable()            # their import time); see the end of this module

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ...distributed import exit_client, get_context, initialize
from ...distributed.checkpoint import CheckpointDir
from ...distributed.runtime import all_gather, barrier
from ...distributed.transfer import to_device
from ...errors import DistGraphError, InputError
from ...launch.family import start_family
from ...malloc import keep_freed_memory, release_freed_memory
from ...partition import load_partition
from ...partition.layout import PartitionConfig
from ..config import TrainConfig, field_defaults, gpu_ids
from ..data.formats import read_dict
from ..evaluate.link_prediction import eval_share, evaluate
from ..evaluate.ranking import Queries, ShardRanker, model_spec
from ..models import create_model
from ..saved_model import RowBlocks, nonfinite_rows, refuse_nonfinite, save_model
from .device import check_gpus, device_of, resident, use_device
from .dist_buckets import StagePlan, StageTrainer, job_plan
from .placement import DeviceTables, PendingRows
from .report import emit_line, read_job
from .sampler import Batch, ChunkSampler
from .steps import MUST_MATCH, Emit, StepLog, batch_rows, train_step
from .tables import KGETables, block_rows
from .updates import Updates

def table_blocks(table, ids: np.ndarray | None = None) -> RowBlocks:
    """The float32 rows `ids` of `table` (a DistTensor, or anything indexed by an id tensor; every
    row in order when None) as RowBlocks read `block_rows` at a time, so a table is saved
    without ever being held whole."""
    count, row_shape = len(table) if ids is None else len(ids), tuple(table.shape[1:])
    step = block_rows(row_shape)

    def blocks() -> Iterator[np.ndarray]:
        for start in range(0, count, step):
            end = min(start + step, count)
            yield table[torch.arange(start, end) if ids is None else torch.from_numpy(ids[start:end])].numpy()

    return RowBlocks((count, *row_shape), np.dtype(np.float32), blocks)


class Trainer:
    """One trainer's part of a KGE job (the runtime is initialised)."""

    def __init__(self, cfg: TrainConfig, save_dir: str | None, emit: Emit):
        self.cfg, self.save_dir, self.emit = cfg, save_dir, emit
        self.ctx = ctx = get_context()
        if ctx.part_config is None:
            raise InputError("a KGE trainer needs the KG partition (kge partition's config)")
        self.pcfg = PartitionConfig.load(ctx.part_config)
        self.kg, self.kg_files = self.pcfg.attachment("kge")
        self.n_entities, self.n_relations = int(self.kg["n_entities"]), int(self.kg["n_relations"])
        self.model = create_model(cfg.model_name, cfg.hidden_dim, cfg.gamma, cfg.double_ent, cfg.double_rel)
        self.plan = self._stage_plan()
        self.tables = KGETables(self.model, self.n_entities, self.n_relations, cfg.seed, cfg.lr,
                                None if self.plan is None else self.plan.table_rows)
        self.lo, self.hi = ctx.book.node_range(ctx.machine_id, "_N")
        self.per_machine = ctx.num_trainers // ctx.num_machines
        check_gpus(cfg.gpu)
        self.device = device_of(cfg.gpu, ctx.local_rank)
        use_device(self.device)
        self._ranker: ShardRanker | None = None

    def _stage_plan(self) -> StagePlan | None:
        """The machines' entity partitions on disk (`dist_buckets`), or None: each machine's share in memory."""
        plan = job_plan(self.cfg, self.pcfg)
        if plan is not None and self.ctx.rank == 0:
            self.emit(("note", 0, plan.why))
        return plan

    # ----------------------------------------------------------------- data
    def _array(self, rel: str) -> np.ndarray:
        return np.load(self.pcfg.dir / rel, allow_pickle=False)

    def local_triples(self) -> tuple[Tensor, Tensor | None]:
        """This trainer's share of its machine's triples (h, r, t rows), and their importance."""
        part = load_partition(self.ctx.part_config, self.ctx.machine_id)
        t = torch.repeat_interleave(part.global_nid, part.indptr[1:] - part.indptr[:-1])
        h = part.global_nid[part.indices]
        rows = part.eids - part.book.edge_range(part.part_id, None)[0]  # edge data follows the edge ids
        data = next(iter(part.edge_data.values()))
        triples = torch.stack([h, data["rel"].to(torch.int64)[rows], t], 1)
        importance = data["importance"][rows].to(torch.float32) if "importance" in data else None
        local = self.ctx.local_rank
        if self.cfg.rel_part:  # each trainer takes whole relations, balanced by triples (DGL-KE's --rel_part)
            counts = torch.bincount(triples[:, 1], minlength=self.n_relations)
            order = torch.argsort(counts, descending=True, stable=True)
            load = torch.zeros(self.per_machine, dtype=torch.int64)
            owner = torch.empty(self.n_relations, dtype=torch.int64)
            for rel in order.tolist():  # greedy: one pass over the relations, not over triples
                owner[rel] = int(torch.argmin(load))
                load[owner[rel]] += counts[rel]
            mine = owner[triples[:, 1]] == local
        else:
            perm = torch.randperm(len(triples), generator=torch.Generator().manual_seed(self.cfg.seed))
            mine = torch.zeros(len(triples), dtype=torch.bool)
            mine[perm.tensor_split(self.per_machine)[local]] = True
        if not bool(mine.any()):
            raise InputError(f"trainer {self.ctx.rank} got no training triples: machine {self.ctx.machine_id} has "
                             f"{len(triples)} for {self.per_machine} trainers; use fewer processes")
        return triples[mine], None if importance is None else importance[mine]

    def eval_triples(self, split: str) -> Tensor:
        triples = torch.from_numpy(self._array(self.kg_files[split])).to(torch.int64)  # (stored as int32 when ids fit)
        return eval_share(triples, self.cfg.eval_percent, self.ctx.rank, self.ctx.num_trainers, self.cfg.seed)

    # -------------------------------------------------------------- ranking
    def _count(self, shard: Tensor, q: Queries, candidates: Tensor | None) -> Tensor:
        """Candidates scoring at least the target, over every machine's shard (this machine's:
        `shard`, its rows, scored on this trainer's device)."""
        bounds = self.tables.tables["entity"]._handle.bounds
        asks = {m: (None if candidates is None else candidates[(candidates >= bounds[m]) &
                                                                 (candidates < bounds[m + 1])], None)
                for m in range(self.ctx.num_machines)}
        return self.ranked(q, {m: a for m, a in asks.items() if a[0] is None or len(a[0])}, shard)

    def ranked(self, q: Queries, asks: dict[int, tuple[Tensor | None, list[int] | None]],
               shard: Tensor | None = None) -> Tensor:
        """For each query, the candidates scoring at least its target, summed over the machines
        of `asks` (machine: (its candidates, or None for every row; a window [start, rows, first
        id] of its share of the entity table, or None for all of it)); this machine's counted
        here (on `shard`, its rows on this trainer's device, when given), the others' by their servers."""
        ctx, h = self.ctx, self.tables.tables["entity"]._handle
        if self._ranker is None:
            part = self.pcfg.part(ctx.machine_id)
            self._ranker = ShardRanker(self.n_relations, self._array(part.file("kge_known_tail")),
                                       self._array(part.file("kge_known_head")))
        use_filter = not self.cfg.no_eval_filter
        header = {"op": "kge_rank", "model": model_spec(self.model), "corrupt_head": q.corrupt_head,
                  "filter": use_filter, "table": h.name}
        sent = q.to(torch.device("cpu"))
        base = [sent.anchor, sent.rel, sent.true, sent.target.contiguous(), sent.anchor_rows.contiguous(),
                *(x.contiguous() for x in sent.rel_rows)]
        requests = [(m, {**header, "uid": h.uids[m], **({} if window is None else {"window": window})},
                     base + ([] if cand is None else [cand]))
                    for m, (cand, window) in asks.items() if m != ctx.machine_id]

        def local() -> Tensor:
            if ctx.machine_id not in asks:
                return torch.zeros(len(q.anchor), dtype=torch.int64)
            cand, window = asks[ctx.machine_id]
            rows, first = self.tables.tables["entity"].local_partition if shard is None else shard, self.lo
            if window is not None:
                rows, first = rows[window[0]:window[0] + window[1]], window[2]
            return self._ranker.counts(self.model, q, rows, first, use_filter, cand)

        counts, replies = ctx.client.overlap(requests, local)
        return counts + sum((r.arrays[0] for r in replies), torch.zeros_like(counts))

    def _draw(self, size: int) -> Tensor:
        """Candidates of sampled evaluation: uniform over the entities, or by degree (an entity
        of a random local triple) with --neg_deg_sample_eval."""
        if self.cfg.neg_deg_sample_eval:
            pick = torch.randint(0, len(self.triples), (size,), generator=self.eval_gen)
            return self.triples[pick, torch.randint(0, 2, (size,), generator=self.eval_gen) * 2]
        return torch.randint(0, self.n_entities, (size,), generator=self.eval_gen)

    def evaluate(self, triples: Tensor) -> dict[str, float]:
        """Metric sums of ranking `triples` (every update applied and written back), on this
        trainer's device: this machine's entity rows are copied there once when they fit."""
        shard = resident(self.tables.tables["entity"].local_partition, self.device)
        return evaluate(self.model, lambda name, ids: to_device(self.tables.rows(name, ids), self.device),
                        partial(self._count, shard), self.tables.relation_names(), triples, self.n_entities,
                        self.cfg.batch_size_eval, self.cfg.neg_sample_size_eval, self._draw)

    # --------------------------------------------------------------- training
    def run(self) -> None:
        if self.plan is not None:
            StageTrainer(self, self.plan).run()
            return
        cfg, ctx = self.cfg, self.ctx
        torch.set_num_threads(cfg.num_thread)
        keep_freed_memory()
        self.triples, importance = self.local_triples()
        self.eval_gen = torch.Generator().manual_seed(cfg.seed * 7919 + ctx.rank)
        valid = self.eval_triples("valid") if cfg.valid else None
        sampler = ChunkSampler(self.triples, (self.lo, self.hi), cfg.batch_size, cfg.neg_sample_size,
                               cfg.neg_deg_sample, seed=(cfg.seed + 1) * 1_000_003 + ctx.rank, importance=importance,
                               num_entities=self.n_entities, global_share=cfg.global_neg_share)
        steps = StepLog(cfg, ctx.rank, self.emit)
        first = self._resume(sampler, steps.acc)
        self.placed = DeviceTables(self.tables, self.device, self._held(), deferred=cfg.async_update)
        self.updates = Updates(cfg.async_update)
        try:
            self._train(sampler, steps, first, valid)
        finally:
            self.updates.close()
        trained = cfg.max_step - first + 1
        entity = self.tables.tables["entity"].name
        self.emit(("pulled", ctx.rank, ctx.client.remote_rows.get(entity, 0) / max(trained, 1)))
        self.emit(("progress", ctx.rank, cfg.max_step))
        self.emit(("trained", ctx.rank, trained, trained * sampler.batch_size))
        if not self._finite():
            return
        self._save()
        if cfg.test:
            self.emit(("metrics", ctx.rank, "Test", self.evaluate(self.eval_triples("test"))))
        barrier()

    def _train(self, sampler: ChunkSampler, steps: StepLog, first: int, valid: Tensor | None) -> None:
        """Steps `first` to --max_step, with validation and checkpoints; every update applied and
        written back at the end."""
        cfg, ctx = self.cfg, self.ctx
        self.emit(("started", ctx.rank))
        ahead = self._ask_next(sampler) if first <= cfg.max_step else None
        for step in range(first, cfg.max_step + 1):
            batch, wanted, pending = ahead
            stats, update = train_step(self.model, self.placed, batch.to(self.device), wanted, pending.result(), cfg)
            checkpoint = cfg.checkpoint_dir and step % cfg.checkpoint_interval == 0 and step < cfg.max_step
            if step < cfg.max_step and not checkpoint:  # the next rows travel while this step's local updates run
                ahead = self._ask_next(sampler)
            self.updates.submit(update)
            steps.add(step, stats)
            if cfg.force_sync_interval > 0 and step % cfg.force_sync_interval == 0:
                self.updates.drain()
                barrier()
            if valid is not None and step % cfg.eval_interval == 0:
                self._settle()
                barrier()
                self.emit(("metrics", ctx.rank, f"Valid (step {step})", self.evaluate(valid)))
                barrier()
            if checkpoint:  # the sampler stands after this step's batch
                self._settle()
                CheckpointDir(cfg.checkpoint_dir).save(step, self.tables.checkpointed(), {
                    "step": step, "sampler": sampler.state(), "log_sums": steps.acc.clone(),
                    "config": json.dumps({k: getattr(cfg, k) for k in MUST_MATCH})})
                ahead = self._ask_next(sampler)
        self._settle()

    def _settle(self) -> None:
        """Apply every update given and write the rows kept on the device back to the runtime's
        tables: what ranking, checkpoints, saving and the other trainers read."""
        self.updates.drain()
        self.placed.write_back()

    def _held(self) -> dict[str, Tensor | None]:
        """The tables this trainer keeps on its GPU (`placement`), as DGL-KE keeps them: every
        table when it is the job's one trainer (the relations alone with --mix_cpu_gpu), or with
        --rel_part on one machine the relations, of which it trains its own (its triples')."""
        cfg, ctx = self.cfg, self.ctx
        if not gpu_ids(cfg.gpu):
            return {}
        relations = self.tables.relation_names()
        if ctx.num_trainers == 1:
            return dict.fromkeys(relations if cfg.mix_cpu_gpu else self.tables.tables)
        if cfg.rel_part and ctx.num_machines == 1:
            return dict.fromkeys(relations, torch.unique(self.triples[:, 1]))
        return {}

    def _finite(self, entities: int | None = None) -> bool:
        """Whether every table is finite, after training (a barrier of every trainer): each trainer
        counts the non-finite rows of its share of its machine's rows (of the entity table: or
        `entities`, counted elsewhere), the counts are summed, and trainer 0 refuses a table with
        any (one error), the others stop quietly."""
        mine = self.ctx.local_rank
        counts = {name: nonfinite_rows(t.local_partition.tensor_split(self.per_machine)[mine].numpy())
                  for name, t in self.tables.tables.items() if name != "entity" or entities is None}
        if entities is not None:  # (it checks a block of rows at a time)
            counts["entity"] = entities
        totals = {name: sum(c[name] for c in all_gather(counts)) for name in counts}
        if self.ctx.rank == 0:
            sizes = {name: len(t) for name, t in self.tables.tables.items()}
            refuse_nonfinite(totals, {**sizes, "entity": self.n_entities}, "the trained model")
        return not any(totals.values())

    def _ask_next(self, sampler: ChunkSampler) -> tuple[Batch, list[tuple[str, Tensor]], PendingRows]:
        """Draw the next batch and ask for its rows: (batch, the rows it wants, their pull)."""
        batch = next(sampler)
        wanted = batch_rows(self.placed, batch)
        return batch, wanted, self.placed.start_rows(wanted)

    def _resume(self, sampler: ChunkSampler, acc: Tensor) -> int:
        """The first step to train: 1, or after the newest checkpoint with --resume (restored)."""
        cfg = self.cfg
        if not cfg.resume:
            return 1
        found = CheckpointDir(cfg.checkpoint_dir).load_latest(self.tables.checkpointed())
        if found is None:
            return 1
        step, state = found
        saved, mine = json.loads(state["config"]), {k: getattr(cfg, k) for k in MUST_MATCH}
        saved = {**{k: v for k, v in field_defaults(TrainConfig).items() if k in MUST_MATCH}, **saved}  # older runs
        differ = [f"--{k} {saved[k]!r} -> {mine[k]!r}" for k in MUST_MATCH if saved.get(k) != mine[k]]
        if differ:
            raise InputError(f"checkpoint {cfg.checkpoint_dir} was taken with other settings ({', '.join(differ)}); "
                             f"resume with the same ones, or start a new --checkpoint_dir")
        sampler.restore(state["sampler"])
        acc.copy_(state["log_sums"])
        if self.ctx.rank == 0:
            self.emit(("resumed", 0, str(CheckpointDir(cfg.checkpoint_dir).path(step)), step))
        return step + 1

    def _save(self, entity: Tensor | None = None) -> None:
        """Trainer 0 writes the tables in the entities' original ids (DGL-KE saves on machine 0), read
        a block of rows at a time from where they live (the entity table's from `entity`, its rows
        in id order, when given): no process holds a whole table."""
        if self.ctx.rank != 0 or self.save_dir is None:
            return
        release_freed_memory()  # the heap that training kept (keep_freed_memory): the save's blocks need the room
        orig = np.load(self.pcfg.dir / self.pcfg.mapping_file("node", "_N"))
        new = np.empty(len(orig), dtype=np.int64)
        new[orig] = np.arange(len(orig))  # new id i is original entity orig[i]
        tables = {name: table_blocks(entity if name == "entity" and entity is not None else t,
                                     new if name == "entity" else None) for name, t in self.tables.tables.items()}
        save_model(Path(self.save_dir), self.cfg, tables, read_dict(self.pcfg.dir / self.kg_files["entities"]),
                   read_dict(self.pcfg.dir / self.kg_files["relations"]))
        self.emit(("saved", 0, self.save_dir))


def run_trainer(cfg: TrainConfig, save_dir: str | None, emit: Emit) -> None:
    """Train, evaluate and save as `cfg` says, in this (initialised) process."""
    Trainer(cfg, save_dir, emit).run()


def main(label: str = "") -> int:
    """`python -m distgraph.kge.train.worker`: a trainer of a launched KGE job (`label` starts
    its error message: which trainer, where forked trainers share their output)."""
    try:
        cfg, save_dir = read_job()
        initialize()
        run_trainer(cfg, save_dir, emit_line)
    except DistGraphError as exc:
        sys.stderr.write(f"distgraph kge: error: {label}{exc}\n")  # one write: a shared pipe keeps it whole
        sys.stderr.flush()
        return 2
    finally:
        exit_client()
    return 0


if __name__ == "__main__":
    gc.freeze()  # the modules' objects live as long as the process: later collections, and exit's, skip them
    gc.enable()
    family = start_family()  # the machine's other trainers, forked now that torch is imported
    code = family.finish(main(family.label))
    gc.freeze()  # and what the run made: exit need not walk it (with torch's, that took 1-3 s)
    sys.exit(code)
