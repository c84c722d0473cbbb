"""`kge dist-train` with the entity table on the machines' disks (--num_entity_partitions,
--memory_budget): PyTorch-BigGraph's buckets across the machines of a job, each machine
holding a few partitions of its own entities in memory and the rest on its disk.

Each machine's entities (its contiguous range of ids in the KG partition) are Q partitions on
its disk (`EntityPartitions`; Q is the same on every machine). Memory holds up to SLOTS of
them in the machine's share of one runtime table (`KGETables(entity_slots=...)`: M x SLOTS x R
rows, R the largest partition), which its trainers read and update in place and its server
serves to the other machines, as the in-memory table is. A batch's entity ids become slot rows
(`SlotMap`) before its rows are asked for or updated.

Training goes in stages: for each pair (a, b) of `bucket_order(Q)` that some trainer has
triples for (consecutive pairs share a partition, so a new stage reads one partition a
machine; pairs without triples are skipped), every machine holds its partitions a
and b; then, for k = 0..M-1, machine m trains the bucket of its triples whose tail is in its
partition b and whose head is in partition a of machine m + k, negatives drawn from those two
partitions, one pass over the bucket. A stage starts after a barrier (every update of the last
one applied), where each machine's first trainer writes back and reads its partitions; a
second barrier tells every trainer where every machine keeps them. Ranking and saving go over
the partitions the same way, one index of Q at a time; each server ranks the rows of its own
slot (a window of its share), with its machine's known triples as the filter. A checkpoint is
taken at a stage boundary: each machine's partition files hard-linked into it, the relation
tables by their servers, every trainer's samplers and steps.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import Tensor

from ...arrays import group_keys
from ...direct_io import aligned_rows
from ...distributed.checkpoint import CheckpointDir
from ...distributed.initializers import Uniform
from ...distributed.runtime import all_gather
from ...errors import InputError
from ...files import check_space, link_or_copy
from ...kvstore.client import PendingPull
from ...malloc import keep_freed_memory
from ...partition.layout import PartitionConfig
from ..config import TrainConfig
from ..evaluate.partitioned import rank_in_parts
from ..evaluate.ranking import Queries
from ..saved_model import nonfinite_rows
from .buckets import bucket_order, choose_partitions, partition_bounds
from .partitions import SLOTS, EntityPartitions
from .placement import DeviceTables
from .sampler import ChunkSampler
from .steps import MUST_MATCH, Emit, StepLog, train_step
from .tables import KGETables, block_rows


@dataclass(frozen=True)
class StagePlan:
    """The machines' entity partitions: `bounds` the first id of each machine's Q partitions,
    machine after machine, then the entity count; `slots` of `slot_rows` rows in memory a machine."""

    bounds: np.ndarray
    num_parts: int
    why: str

    @property
    def machines(self) -> int:
        return (len(self.bounds) - 1) // self.num_parts

    @property
    def slots(self) -> int:
        return min(SLOTS, self.num_parts)

    @property
    def slot_rows(self) -> int:
        """Rows of a slot: the largest partition's, rounded up to whole pages (for direct I/O)."""
        return aligned_rows(int(np.diff(self.bounds).max()))

    @property
    def table_rows(self) -> int:
        """Rows of the runtime's slot table: every machine's slots."""
        return self.machines * self.slots * self.slot_rows

    def machine_bounds(self, m: int) -> np.ndarray:
        return self.bounds[m * self.num_parts:(m + 1) * self.num_parts + 1]

    def part_range(self, m: int, q: int) -> tuple[int, int]:
        p = m * self.num_parts + q
        return int(self.bounds[p]), int(self.bounds[p + 1])


def job_plan(cfg: TrainConfig, pcfg: PartitionConfig) -> StagePlan | None:
    """`stage_plan` of a job on the KG partition `pcfg`: what its trainers follow, and what the
    command checks the flags against before it launches them."""
    ranges = pcfg.node_map["_N"]
    triples = max(sum(hi - lo for lo, hi in (per_part[m] for per_part in pcfg.edge_map.values()))
                  for m in range(len(ranges)))
    return stage_plan(cfg, ranges, triples, cfg.table_widths()["entity"],
                      cfg.relation_bytes(int(pcfg.attachment("kge")[0]["n_relations"])))


def stage_plan(cfg: TrainConfig, ranges: list[tuple[int, int]], triples_per_machine: int, entity_floats: int,
               relation_bytes: int) -> StagePlan | None:
    """The plan of a job whose machines own the entity id `ranges`, or None when each machine's
    share stays in memory (no --num_entity_partitions above 1, or a --memory_budget that holds it)."""
    if cfg.num_entity_partitions == 1 and cfg.memory_budget is None:
        return None
    largest = max(hi - lo for lo, hi in ranges)
    choice = choose_partitions(cfg.num_entity_partitions, cfg.memory_budget, largest, triples_per_machine,
                               entity_floats, relation_bytes, f"each machine's share of the entity table (up to "
                                                              f"{largest:,} entities)", triples_held=True)
    if choice.num_parts == 1:
        return None
    q, smallest = choice.num_parts, min(hi - lo for lo, hi in ranges)
    if q > smallest:
        raise InputError(f"{q} entity partitions a machine are more than a machine's {smallest:,} entities: give "
                         f"--num_entity_partitions {smallest} or fewer (or a larger --memory_budget)")
    bounds = np.concatenate([partition_bounds(hi - lo, q)[:-1] + lo for lo, hi in ranges] + [[ranges[-1][1]]])
    return StagePlan(bounds.astype(np.int64), q, f"{choice.why}; negatives from each bucket's two partitions")


class SlotMap:
    """Entity id -> its row in the slot table, for the partitions the machines hold now."""

    NOT_HELD = np.iinfo(np.int64).min

    def __init__(self, plan: StagePlan):
        self.plan = plan
        self.bounds = torch.from_numpy(plan.bounds)
        self.base = torch.full((len(plan.bounds) - 1,), self.NOT_HELD, dtype=torch.int64)

    def set(self, held: dict[int, dict[int, int]]) -> None:
        """Machine m holds its partition q in slot held[m][q] (and no other)."""
        plan = self.plan
        self.base.fill_(self.NOT_HELD)
        for m, slots in held.items():
            for q, s in slots.items():
                p = m * plan.num_parts + q
                self.base[p] = (m * plan.slots + s) * plan.slot_rows - int(plan.bounds[p])

    def window(self, m: int, q: int) -> list[int]:
        """[first row in machine m's share, rows, first entity id] of its partition q (held)."""
        p = m * self.plan.num_parts + q
        if int(self.base[p]) == self.NOT_HELD:
            raise InputError(f"machine {m}'s entity partition {q} is not in memory in this stage")
        lo, hi = self.plan.part_range(m, q)
        start = int(self.base[p]) + lo - m * self.plan.slots * self.plan.slot_rows
        return [start, hi - lo, lo]

    def __call__(self, ids: Tensor) -> Tensor:
        base = self.base.index_select(0, torch.searchsorted(self.bounds, ids, right=True) - 1)
        if bool((base == self.NOT_HELD).any()):
            raise InputError("an entity row was asked for outside the partitions the machines hold in this stage")
        return ids + base


class SlotTables:
    """`KGETables` seen through a `SlotMap`: entity ids in, slot rows to the runtime."""

    def __init__(self, store: KGETables, slots: SlotMap):
        self.store, self.slots = store, slots

    def relation_names(self) -> list[str]:
        return self.store.relation_names()

    def _ids(self, name: str, ids: Tensor) -> Tensor:
        return self.slots(ids) if name == "entity" else ids

    def rows(self, name: str, ids: Tensor) -> Tensor:
        return self.store.rows(name, self._ids(name, ids))

    def start_rows(self, wanted: list[tuple[str, Tensor]]) -> PendingPull:
        return self.store.start_rows([(name, self._ids(name, ids)) for name, ids in wanted])

    def start_update(self, name: str, ids: Tensor, grads: Tensor) -> Callable[[], None]:
        return self.store.start_update(name, self._ids(name, ids), grads)


class Buckets:
    """A trainer's triples grouped by (head partition of any machine, tail partition of its own)."""

    def __init__(self, plan: StagePlan, machine: int, triples: Tensor, importance: Tensor | None):
        q, mine = plan.num_parts, plan.machine_bounds(machine)
        tails = triples[:, 2].numpy()
        if len(tails) and (int(tails.min()) < mine[0] or int(tails.max()) >= mine[-1]):
            raise InputError(f"machine {machine}'s training triples name tails it does not own: its KG partition is "
                             f"not kge partition's; partition the KG again")
        head = np.searchsorted(plan.bounds, triples[:, 0].numpy(), side="right") - 1
        tail = np.searchsorted(mine, tails, side="right") - 1
        order, self.starts = group_keys(head * q + tail, (len(plan.bounds) - 1) * q)
        order = torch.from_numpy(order)
        self.triples = triples.index_select(0, order)
        self.importance = None if importance is None else importance.index_select(0, order)
        self.num_parts = q

    def pairs(self) -> list[tuple[int, int]]:
        """The (head partition index, tail partition index) pairs of this trainer's non-empty buckets."""
        q = self.num_parts
        full = np.flatnonzero(np.diff(self.starts) > 0)
        return sorted({(int(b // q % q), int(b % q)) for b in full})

    def get(self, head_part: int, tail_q: int) -> tuple[Tensor, Tensor | None]:
        b = head_part * self.num_parts + tail_q
        lo, hi = int(self.starts[b]), int(self.starts[b + 1])
        return self.triples[lo:hi], None if self.importance is None else self.importance[lo:hi]


class StageTrainer:
    """One trainer of a job with the entity table on the machines' disks (see the module)."""

    def __init__(self, trainer, plan: StagePlan):
        """`trainer`: the job's `worker.Trainer`, whose data, model, tables and reporting this uses."""
        self.t, self.plan = trainer, plan
        ctx = trainer.ctx
        self.machine, self.rank = ctx.machine_id, ctx.rank
        self.slots = SlotMap(plan)
        self.tables = SlotTables(trainer.tables, self.slots)
        self.parts: EntityPartitions | None = None  # this machine's files: kept by its first trainer
        self.current: set[int] = set()
        self.trained = False  # the current partitions changed since they were read
        self.samplers: dict[tuple[int, int], dict] = {}

    @property
    def emit(self) -> Emit:
        return self.t.emit

    # ------------------------------------------------------------- stages
    def _hold(self, parts: set[int], then: set[int] = frozenset(), settled: bool = False) -> None:
        """Every trainer at once: each machine holds its partitions `parts` (and starts reading
        `then`), and every trainer learns where each machine keeps them. First a barrier (unless
        `settled`: one was just passed), so no trainer still reads or updates a partition that
        leaves memory."""
        if not settled:
            all_gather(None)
        if self.parts is not None:
            if self.trained:
                self.parts.changed(self.current)
            self.parts.use(parts, then)
        self.trained, self.current = False, set(parts)
        held = None if self.parts is None else {str(q): s for q, s in self.parts.held.items()}
        got = all_gather({"machine": self.machine, "held": held})
        self.slots.set({v["machine"]: {int(q): s for q, s in v["held"].items()} for v in got if v["held"] is not None})

    def _pairs(self, used: set[tuple[int, int]], start: tuple[int, int] = (0, 0)):
        """((epoch, index in its order), pair, the next pair) of every stage from `start` on,
        epoch after epoch: the pairs of `used` (those some trainer has triples for; the others
        would only move partitions)."""
        (epoch, first), pending = start, None
        while True:
            for k, pair in enumerate(bucket_order(self.plan.num_parts, epoch, self.t.cfg.seed)):
                if k < first or pair not in used:
                    continue
                if pending is not None:
                    yield (*pending, pair)
                pending = ((epoch, k), pair)
            epoch, first = epoch + 1, 0

    def _sampler(self, buckets: Buckets, head_part: int, tail_q: int) -> ChunkSampler | None:
        cfg, plan = self.t.cfg, self.plan
        triples, importance = buckets.get(head_part, tail_q)
        if not len(triples):
            return None
        head_m, head_q = divmod(head_part, plan.num_parts)
        key = (head_part, tail_q)
        sampler = ChunkSampler(triples, plan.part_range(self.machine, tail_q), cfg.batch_size, cfg.neg_sample_size,
                               cfg.neg_deg_sample, seed=(cfg.seed + 1) * 1_000_003 + self.rank + 7919 * (
                                   head_part * plan.num_parts + tail_q), importance=importance,
                               head_range=plan.part_range(head_m, head_q))
        if key in self.samplers:
            sampler.restore(self.samplers[key])
        return sampler

    # ------------------------------------------------------------- training
    def run(self) -> None:
        t, cfg, plan = self.t, self.t.cfg, self.plan
        torch.set_num_threads(cfg.num_thread)
        keep_freed_memory()
        t.triples, importance = t.local_triples()
        t.eval_gen = torch.Generator().manual_seed(cfg.seed * 7919 + self.rank)
        buckets = Buckets(plan, self.machine, t.triples, importance)
        t.triples = buckets.triples  # (the same triples, grouped: one copy)
        work = None
        stopped = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the launcher's stop: clean up first
        try:
            resumed = self._resume()
            if t.ctx.local_rank == 0:
                base = Path(cfg.bucket_dir or cfg.save_path)
                base.mkdir(parents=True, exist_ok=True)
                work = Path(tempfile.mkdtemp(prefix=".kge-partitions-", dir=base))
                if resumed is not None:  # the checkpoint's partitions, linked (each is replaced, never changed)
                    for f in sorted(resumed[0].iterdir()):
                        link_or_copy(f, work / f.name)
                self._start_files(work)
            valid = t.eval_triples("valid") if cfg.valid else None
            step, trained = self._train(buckets, valid, None if resumed is None else resumed[1])
            all_gather(None)  # (after a last validation, no trainer ranks any more)
            if self.parts is not None:
                self.parts.flush()
            self.emit(("pulled", self.rank, t.ctx.client.remote_rows.get(t.tables.tables["entity"].name, 0) /
                       max(step, 1)))
            self.emit(("progress", self.rank, cfg.max_step))
            self.emit(("trained", self.rank, step, trained))
            if not t._finite(self._nonfinite_entities()):
                return
            self._save()
            if cfg.test:
                self.emit(("metrics", self.rank, "Test", self.evaluate(t.eval_triples("test"))))
            all_gather(None)
        finally:
            signal.signal(signal.SIGTERM, stopped)
            if self.parts is not None:
                self.parts.stop()
            if work is not None:
                shutil.rmtree(work, ignore_errors=True)

    def _start_files(self, work: Path) -> None:
        """This machine's partition files (its first trainer's), in `work` (a new folder under
        --bucket_dir, default --save_path, removed at the end or when the job is stopped)."""
        t, cfg, plan = self.t, self.t.cfg, self.plan
        lo, hi = plan.part_range(self.machine, 0)[0], plan.part_range(self.machine, plan.num_parts - 1)[1]
        dim = t.model.entity_dim
        check_space(work, 2 * (hi - lo) * (dim + 1) * 4, f"machine {self.machine}'s entity partitions")
        table, state = t.tables.tables["entity"], t.tables.optimizers["entity"].state
        spec = Uniform(-t.model.init_range("entity"), t.model.init_range("entity"), cfg.seed).spec()
        self.parts = EntityPartitions(work, plan.machine_bounds(self.machine), dim, spec, cfg.lr,
                                      memory=(table.local_partition, state.local_partition))

    def _train(self, buckets: Buckets, valid: Tensor | None, resumed: dict | None) -> tuple[int, int]:
        """Stages until every trainer has made --max_step steps (from a checkpoint's stage and
        state when `resumed`), with validation and checkpoints at stage boundaries; (steps,
        triples) this trainer made."""
        t, cfg, plan = self.t, self.t.cfg, self.plan
        log = StepLog(cfg, self.rank, self.emit)
        placed = t.placed = DeviceTables(self.tables, t.device, {})
        self.emit(("started", self.rank))
        start, step, last = (0, 0), 0, 0
        if resumed is not None:
            start, step, last = tuple(resumed["position"]), int(resumed["step"]), int(resumed["least"])
            log.acc.copy_(resumed["log_sums"])
        first, trained, last_eval, last_checkpoint = step, 0, last, last
        used = {tuple(pair) for pairs in all_gather(buckets.pairs()) for pair in pairs}
        for at, (a, b), following in self._pairs(used, start):
            got = all_gather({"step": step})  # every update of the last stage applied
            least = min(v["step"] for v in got)
            validating = valid is not None and least - last_eval >= cfg.eval_interval
            if validating:
                self.emit(("metrics", self.rank, f"Valid (step {least})", self.evaluate(valid)))
                last_eval = least
            if least >= cfg.max_step:
                break
            checkpointing = bool(cfg.checkpoint_dir) and least - last_checkpoint >= cfg.checkpoint_interval
            if checkpointing:
                self._checkpoint(at, step, least, log.acc)
                last_checkpoint = least
            self._hold({a, b}, set(following), settled=not (validating or checkpointing))
            for k in range(plan.machines):
                head_part = (self.machine + k) % plan.machines * plan.num_parts + a
                sampler = self._sampler(buckets, head_part, b) if step < cfg.max_step else None
                if sampler is None:
                    continue
                visit = min(-(-len(sampler.triples) // sampler.batch_size), cfg.max_step - step)
                ahead = t._ask_next(sampler)
                for i in range(visit):
                    step += 1
                    batch, wanted, pending = ahead
                    stats, update = train_step(t.model, placed, batch, wanted, pending.result(), cfg)
                    if i + 1 < visit:  # the next rows travel while this step's local updates run
                        ahead = t._ask_next(sampler)
                    update()
                    log.add(step, stats)
                    trained += len(batch.h)
                self.samplers[(head_part, b)] = sampler.state()
            self.trained = True
        if self.parts is not None and self.trained:
            self.parts.changed(self.current)
        self.trained = False
        return step - first, trained

    # ------------------------------------------------------------- checkpoints
    def _resume_key(self) -> dict:
        """What a resumed run shares with the run it continues."""
        cfg = self.t.cfg
        return {**{k: getattr(cfg, k) for k in MUST_MATCH}, "bounds": [int(x) for x in self.plan.bounds]}

    def _relation_tensors(self) -> list:
        store = self.t.tables
        return [*(store.tables[n] for n in store.relation_names()),
                *(store.optimizers[n].state for n in store.relation_names())]

    def _checkpoint(self, at: tuple[int, int], step: int, least: int, log_sums: Tensor) -> None:
        """Every trainer at once, at a stage boundary (after its barrier): checkpoint `least`
        (the fewest steps a trainer has made) in --checkpoint_dir. Each machine's partition
        files are written back and hard-linked into it (`entities-<machine>`), the relation
        tables saved by their servers, and each trainer's samplers and steps with them."""
        cfg = self.t.cfg
        ck = CheckpointDir(cfg.checkpoint_dir)
        if self.parts is not None:
            if self.trained:
                self.parts.changed(self.current)
                self.trained = False
            self.parts.flush()
            mine = ck.path(least) / f"entities-{self.machine}"
            shutil.rmtree(mine, ignore_errors=True)  # (what a failed save of this step left)
            mine.mkdir(parents=True)
            for f in sorted(self.parts.folder.iterdir()):
                if ".tmp" not in f.name:
                    link_or_copy(f, mine / f.name)
        ck.save(least, self._relation_tensors(), {
            "position": list(at), "step": step, "least": least, "log_sums": log_sums.clone(),
            "samplers": {f"{h},{b}": s for (h, b), s in self.samplers.items()},
            "config": json.dumps(self._resume_key())})

    def _resume(self) -> tuple[Path, dict] | None:
        """Every trainer at once: with --resume, the newest checkpoint's relation tables restored,
        and (this machine's partitions in it, this trainer's state); None to start afresh."""
        cfg = self.t.cfg
        if not cfg.resume:
            return None
        ck = CheckpointDir(cfg.checkpoint_dir)
        found = ck.load_latest(self._relation_tensors())
        if found is None:
            return None
        least, state = found
        if json.loads(state["config"]) != self._resume_key():
            raise InputError(f"checkpoint {ck.path(least)} was taken with other settings or other entity "
                             f"partitions; resume with the same ones, or start a new --checkpoint_dir")
        mine = ck.path(least) / f"entities-{self.machine}"
        if self.t.ctx.local_rank == 0 and not mine.is_dir():
            raise InputError(f"{mine} is missing: machine {self.machine}'s entity partitions of the checkpoint are "
                             f"not on this host; resume on the machines that took it")
        self.samplers = {tuple(int(x) for x in k.split(",")): s for k, s in state["samplers"].items()}
        if self.rank == 0:
            self.emit(("resumed", 0, str(ck.path(least)), least))
        return mine, state

    def _nonfinite_entities(self) -> int:
        """Non-finite entity rows of this machine's partitions (counted by its first trainer)."""
        if self.parts is None:
            return 0
        return sum(nonfinite_rows(self.parts.read(p).numpy()) for p in self.parts.reading_order())

    # ------------------------------------------------------------- ranking
    def evaluate(self, triples: Tensor) -> dict[str, float]:
        """Metric sums of ranking `triples` (every trainer at once: one index of Q at a time,
        each machine's servers ranking the rows of their slot)."""
        t, cfg, plan = self.t, self.t.cfg, self.plan
        needed = torch.unique(torch.cat([triples[:, 0], triples[:, 2]]))
        own = torch.empty(len(needed), t.model.entity_dim)
        for q in range(plan.num_parts):  # the queries' own rows
            self._hold({q})
            for m in range(plan.machines):
                lo, hi = plan.part_range(m, q)
                mine = (needed >= lo) & (needed < hi)
                if bool(mine.any()):
                    own[mine] = self.tables.rows("entity", needed[mine])

        def rows(name: str, ids: Tensor) -> Tensor:
            return own[torch.searchsorted(needed, ids.contiguous())] if name == "entity" else \
                self.tables.rows(name, ids)

        def held_in_turn():
            for q in range(plan.num_parts):
                self._hold({q})
                yield q

        return rank_in_parts(t.model, rows, self.tables.relation_names(), triples, cfg.batch_size_eval, t.n_entities,
                             cfg.neg_sample_size_eval, t._draw, held_in_turn(), self._count)

    def _count(self, q: int, batch: Queries, candidates: Tensor | None) -> Tensor:
        """Candidates of partition q of every machine scoring at least each query's target."""
        asks = {}
        for m in range(self.plan.machines):
            lo, hi = self.plan.part_range(m, q)
            cand = None if candidates is None else candidates[(candidates >= lo) & (candidates < hi)]
            if cand is None or len(cand):
                asks[m] = (cand, self.slots.window(m, q))
        return self.t.ranked(batch, asks)

    # ------------------------------------------------------------- saving
    def _save(self) -> None:
        """Trainer 0 writes the model (every trainer takes part: the partitions are held one
        index of Q at a time): the entity rows pulled in id order into a file, then saved in
        the entities' original ids."""
        t, plan = self.t, self.plan
        if t.save_dir is None:
            return
        writing, folder = self.rank == 0, None
        if writing:
            Path(t.save_dir).parent.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=".entity-rows-", dir=Path(t.save_dir).parent))
        try:
            rows = None
            if writing:
                check_space(folder, t.n_entities * t.model.entity_dim * 4, "the entity rows being saved")
                rows = np.lib.format.open_memmap(folder / "entity.npy", mode="w+", dtype=np.float32,
                                                 shape=(t.n_entities, t.model.entity_dim))
            step = block_rows((t.model.entity_dim,))
            for q in range(plan.num_parts):
                self._hold({q})
                for m in range(plan.machines) if writing else ():
                    lo, hi = plan.part_range(m, q)
                    for s in range(lo, hi, step):
                        e = min(s + step, hi)
                        rows[s:e] = self.tables.rows("entity", torch.arange(s, e)).numpy()
            if writing:
                rows.flush()
                t._save(torch.from_numpy(rows))
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
