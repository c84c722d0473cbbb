"""PyTorch-BigGraph's buckets on one machine, for entity tables larger than memory.

The entities are P partitions of contiguous ids; the training triples are grouped once into
P x P buckets by (head partition, tail partition), in one file (`build_buckets`), each bucket's
triples by tail as the in-memory path orders them; `bucket_order` visits the buckets of an
epoch so that consecutive ones share a partition (a switch reads one partition, about P^2 / 2
reads an epoch). The rows and their Adagrad state live in `partitions.EntityPartitions`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib.format import open_memmap

from ...arrays import group_keys
from ...errors import InputError

FORMAT = "distgraph-kge-buckets"
VERSION = 1
CHUNK_TRIPLES = 1 << 22  # triples grouped at a time while building: ~100 MB of temporaries


@dataclass(frozen=True)
class BucketLayout:
    """Buckets on disk: `triples.npy` (N, 3) rows (head, relation, tail) grouped by bucket
    (head partition x P + tail partition), `offsets[b]:offsets[b + 1]` the rows of bucket b."""

    folder: Path
    num_parts: int
    bounds: np.ndarray  # (P + 1,) the first entity id of each partition, then the entity count
    offsets: np.ndarray  # (P * P + 1,)
    has_importance: bool

    @property
    def n_entities(self) -> int:
        return int(self.bounds[-1])

    def part_of(self, ids: np.ndarray) -> np.ndarray:
        """The partition of each entity id."""
        return np.searchsorted(self.bounds, ids, side="right") - 1

    def size(self, bucket: tuple[int, int]) -> int:
        b = bucket[0] * self.num_parts + bucket[1]
        return int(self.offsets[b + 1] - self.offsets[b])

    def triples(self, bucket: tuple[int, int]) -> np.ndarray:
        """A bucket's (n, 3) triples, read from disk."""
        b = bucket[0] * self.num_parts + bucket[1]
        rows = np.load(self.folder / "triples.npy", mmap_mode="r")
        return np.array(rows[self.offsets[b]:self.offsets[b + 1]])

    def importance(self, bucket: tuple[int, int]) -> np.ndarray | None:
        if not self.has_importance:
            return None
        b = bucket[0] * self.num_parts + bucket[1]
        return np.array(np.load(self.folder / "importance.npy", mmap_mode="r")[self.offsets[b]:self.offsets[b + 1]])

    @classmethod
    def load(cls, folder: str | Path) -> "BucketLayout":
        folder = Path(folder)
        try:
            meta = json.loads((folder / "buckets.json").read_text())
        except (OSError, ValueError) as exc:
            raise InputError(f"{folder} holds no readable buckets.json ({exc}); build the buckets again") from None
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise InputError(f"{folder}/buckets.json is not a version-{VERSION} {FORMAT} file; build the buckets again")
        layout = cls(folder, int(meta["num_parts"]), np.array(meta["bounds"], dtype=np.int64),
                     np.array(meta["offsets"], dtype=np.int64), bool(meta["importance"]))
        rows = np.load(folder / "triples.npy", mmap_mode="r")
        if rows.shape != (int(layout.offsets[-1]), 3):
            raise InputError(f"{folder}/triples.npy holds {rows.shape[0]:,} triples but buckets.json says "
                             f"{int(layout.offsets[-1]):,}: the folder is incomplete; build the buckets again")
        return layout


def partition_bounds(n_entities: int, num_parts: int) -> np.ndarray:
    """First id of each of `num_parts` near-equal ranges of entity ids, then `n_entities`."""
    if num_parts < 1 or num_parts > max(n_entities, 1):
        raise InputError(f"--num_entity_partitions must be in [1, {max(n_entities, 1)}] (the entities), got "
                         f"{num_parts}")
    return np.arange(num_parts + 1, dtype=np.int64) * n_entities // num_parts


def build_buckets(train: np.ndarray, n_entities: int, num_parts: int, folder: str | Path,
                  importance: np.ndarray | None = None, chunk: int = CHUNK_TRIPLES) -> BucketLayout:
    """Group the (N, 3) training triples (head, relation, tail; any integer dtype, memory-mapped
    is fine) into `num_parts`^2 buckets under `folder`, a chunk at a time: one pass counts, one
    writes each chunk's rows at their buckets' cursors, then each bucket is ordered by tail."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    bounds = partition_bounds(n_entities, num_parts)
    nb = num_parts * num_parts
    dtype = np.int32 if n_entities <= np.iinfo(np.int32).max else np.int64

    def bucket_of(rows: np.ndarray) -> np.ndarray:
        parts = np.searchsorted(bounds, rows[:, [0, 2]], side="right") - 1
        return parts[:, 0] * num_parts + parts[:, 1]

    counts = np.zeros(nb, dtype=np.int64)
    for s in range(0, len(train), chunk):
        counts += np.bincount(bucket_of(np.asarray(train[s:s + chunk])), minlength=nb)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    out = open_memmap(folder / "triples.npy.tmp", mode="w+", dtype=dtype, shape=(len(train), 3))
    weights = None if importance is None else open_memmap(folder / "importance.npy.tmp", mode="w+",
                                                          dtype=np.float32, shape=(len(train),))
    cursor = offsets[:-1].copy()
    for s in range(0, len(train), chunk):
        rows = np.asarray(train[s:s + chunk])
        order, starts = group_keys(bucket_of(rows), nb)
        grouped = rows[order].astype(dtype, copy=False)
        w = None if weights is None else np.asarray(importance[s:s + chunk], dtype=np.float32)[order]
        for b in np.flatnonzero(np.diff(starts)):
            n = starts[b + 1] - starts[b]
            out[cursor[b]:cursor[b] + n] = grouped[starts[b]:starts[b + 1]]
            if weights is not None:
                weights[cursor[b]:cursor[b] + n] = w[starts[b]:starts[b + 1]]
            cursor[b] += n
    for b in range(nb):  # each bucket by tail, stable: the order the in-memory path gives the triples
        lo, hi = offsets[b], offsets[b + 1]
        if hi - lo > 1:
            by_tail = np.argsort(out[lo:hi, 2], kind="stable")
            out[lo:hi] = out[lo:hi][by_tail]
            if weights is not None:
                weights[lo:hi] = weights[lo:hi][by_tail]
    for a in (out, weights):
        if a is not None:
            a.flush()
    del out, weights
    os.replace(folder / "triples.npy.tmp", folder / "triples.npy")
    if importance is not None:
        os.replace(folder / "importance.npy.tmp", folder / "importance.npy")
    meta = {"format": FORMAT, "version": VERSION, "num_parts": num_parts, "bounds": bounds.tolist(),
            "offsets": offsets.tolist(), "importance": importance is not None}
    (folder / "buckets.json").write_text(json.dumps(meta))
    return BucketLayout(folder, num_parts, bounds, offsets, importance is not None)


def bucket_order(num_parts: int, epoch: int, seed: int) -> list[tuple[int, int]]:
    """Every bucket once, in an order drawn from (P, epoch, seed) alone: the partitions in a
    random order; for each partition i, bucket (i, i), then for each later partition j (the
    next one last) buckets (i, j) and (j, i) in a random order. Consecutive buckets share a
    partition, and the sweep of i ends with the partition whose sweep comes next."""
    rng = np.random.default_rng([seed, epoch, num_parts])
    perm = rng.permutation(num_parts).tolist()
    out = []
    for a, i in enumerate(perm):
        out.append((i, i))
        for j in reversed(perm[a + 1:]):
            pair = [(i, j), (j, i)]
            out += pair[::-1] if rng.random() < 0.5 else pair
    return out


MAX_PARTS = 256  # 65,536 buckets: past this a bucket holds too few triples to fill batches
SLOT_COUNT = 3  # partitions in memory at once (`partitions.SLOTS`)
BUCKET_BYTES_PER_TRIPLE = 48  # a bucket in training: its triples as int64, the sampler's order, the rows' ids


@dataclass(frozen=True)
class PartitionChoice:
    """P, and why, in a line for the user."""

    num_parts: int
    why: str


def choose_partitions(num_parts: int, budget_gib: float | None, n_entities: int, n_triples: int,
                      entity_floats: int, relation_bytes: int, table: str = "the entity table",
                      triples_held: bool = False) -> PartitionChoice:
    """P from `--num_entity_partitions` or, with `--memory_budget`, the smallest P whose tables
    fit the budget: SLOT_COUNT partitions of rows and Adagrad state (`entity_floats` + 1
    floats a row), the relation tables, and a bucket's triples (P^2 buckets of the triples),
    or with `triples_held` all of them (a machine's trainers hold theirs, across machines).
    `table` names the rows partitioned in the line for the user (a machine's share, across machines)."""
    nbytes = n_entities * (entity_floats + 1) * 4
    triples = "the triples" if triples_held else "a bucket"
    if budget_gib is None:
        return PartitionChoice(num_parts, f"--num_entity_partitions {num_parts}: {table} ({_gb(nbytes)} with "
                                          f"its Adagrad state) on disk in {num_parts} partitions")
    budget = budget_gib * 2**30

    def need(p: int) -> float:
        rows = -(-n_entities // p) * (entity_floats + 1) * 4
        return min(SLOT_COUNT, p) * rows + relation_bytes + BUCKET_BYTES_PER_TRIPLE * n_triples / (
            1 if triples_held else p ** 2)

    if need(1) <= budget:
        return PartitionChoice(1, f"--memory_budget {budget_gib:g} GiB holds the whole of {table} ({_gb(nbytes)} "
                                  f"with its Adagrad state): in memory")
    for p in range(2, min(MAX_PARTS, n_entities) + 1):
        if need(p) <= budget:
            return PartitionChoice(p, f"--memory_budget {budget_gib:g} GiB: {table} ({_gb(nbytes)} with its "
                                      f"Adagrad state) does not fit, {min(SLOT_COUNT, p)} of {p} partitions "
                                      f"({_gb(need(p))} with the relation tables and {triples}) do: "
                                      f"P = {p}, trained bucket by bucket on disk")
    smallest = min(need(p) for p in range(2, min(MAX_PARTS, n_entities) + 1)) if n_entities > 1 else need(1)
    raise InputError(f"--memory_budget {budget_gib:g} GiB is too small: even {min(MAX_PARTS, n_entities)} entity "
                     f"partitions need {_gb(smallest)} (two partitions in training and the next one read, the "
                     f"relation tables and {triples}); give at least {smallest / 2**30:.2f} GiB")


def _gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:,.2f} GB"
