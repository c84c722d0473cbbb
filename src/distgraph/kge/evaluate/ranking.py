"""Ranking where the entity rows live: a shard of the entity table counts, for each query,
its candidates that score at least as high as the query's true entity.

A query is a test triple with one side to predict: its known entity's row, its relation
rows, the true entity and that entity's score (`model.pair`). A shard (a machine's entity
rows) scores its candidates (all of them, or the sampled ones the query names) in blocks,
drops the known triples of the filter (the true triple among them) or, unfiltered, the
true entity alone, and counts those scoring >= the target. The rank is 1 + the sum of the
shards' counts, so no process ever holds more than its own shard: the single-machine
`kge eval` is the same code with the whole table as one shard. A shard with non-finite rows
is refused (a NaN candidate never scores >= the target, which would flatter the model); a
non-finite target ranks last (a model whose scores became NaN does not get MRR 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ...errors import InputError
from ...kvstore.handler import field, int_list
from ...kvstore.store import KVStore
from ...partition.layout import PartitionConfig
from ...rpc.wire import WireError
from ..models import KGEModel, create_model
from ..saved_model import check_finite
from ...distributed.transfer import to_device
from ..train.device import to_host

# Candidates scored at once: at most _MAX_BLOCK (a block of 4096 x 200 floats stays in cache
# for its matmul), fewer when a model's (batch x block x dim) temporaries would pass 64 MB.
_BLOCK_ELEMENTS = 1 << 24
_MAX_BLOCK = 4096


@dataclass
class _Groups:
    """Values of each group key: keys sorted, values[offsets[i]:offsets[i+1]] belong to keys[i]."""

    keys: Tensor
    offsets: Tensor
    values: Tensor

    @classmethod
    def build(cls, group: Tensor, value: Tensor) -> "_Groups":
        """Group `value` by `group` with one sort."""
        order = torch.argsort(group)
        keys, counts = torch.unique_consecutive(group[order], return_counts=True)
        offsets = torch.zeros(len(keys) + 1, dtype=torch.int64)
        torch.cumsum(counts, 0, out=offsets[1:])
        return cls(keys, offsets, value[order])

    def lookup(self, query: Tensor) -> tuple[Tensor, Tensor]:
        """(rows, values): every value of the group of each query, row = position of the query."""
        if not len(self.keys):
            return torch.empty(0, dtype=torch.int64), torch.empty(0, dtype=torch.int64)
        pos = torch.searchsorted(self.keys, query).clamp_max_(len(self.keys) - 1)
        found = self.keys[pos] == query
        lo = self.offsets[pos]
        counts = torch.where(found, self.offsets[pos + 1] - lo, 0)
        rows = torch.repeat_interleave(torch.arange(len(query)), counts)
        ends = torch.cumsum(counts, 0)
        idx = torch.arange(int(ends[-1]) if len(ends) else 0) + torch.repeat_interleave(lo - ends + counts, counts)
        return rows, self.values[idx]


@dataclass
class TripleFilter:
    """Known tails of each (head, relation) and known heads of each (tail, relation); on a
    shard, only those that are its own candidates."""

    n_relations: int
    tails: _Groups
    heads: _Groups

    @classmethod
    def build(cls, n_relations: int, with_tails: Tensor, with_heads: Tensor | None = None) -> "TripleFilter":
        """From (n, 3) triples of (head, relation, tail): the tails of `with_tails`, the heads of
        `with_heads` (the same triples unless given)."""
        with_heads = with_tails if with_heads is None else with_heads
        h, r, t = with_tails.to(torch.int64).unbind(1)  # (keys of entity x relation pass 32 bits)
        hh, hr, ht = with_heads.to(torch.int64).unbind(1)
        return cls(n_relations, _Groups.build(h * n_relations + r, t), _Groups.build(ht * n_relations + hr, hh))

    def known(self, anchor: Tensor, rel: Tensor, corrupt_head: bool) -> tuple[Tensor, Tensor]:
        """(rows, entities) of known triples for queries (anchor, rel): anchor is the tail when
        heads are corrupted, the head otherwise."""
        groups = self.heads if corrupt_head else self.tails
        return groups.lookup(anchor * self.n_relations + rel)


@dataclass
class Queries:
    """A batch of ranking queries, all predicting the same side."""

    anchor: Tensor  # (b,) the known entity's id
    rel: Tensor  # (b,) relation ids
    true: Tensor  # (b,) the entity to rank
    target: Tensor  # (b,) its score
    anchor_rows: Tensor  # (b, entity_dim)
    rel_rows: tuple[Tensor, ...]  # per relation table, (b, width)
    corrupt_head: bool

    def to(self, device: torch.device) -> "Queries":
        """These queries with their scores and rows on `device` (ids stay on the CPU)."""
        return Queries(self.anchor, self.rel, self.true, self.target.to(device), self.anchor_rows.to(device),
                       tuple(x.to(device) for x in self.rel_rows), self.corrupt_head)


def model_spec(model: KGEModel) -> dict:
    """What a server needs to score like `model` (it has no trained state of its own)."""
    return {"name": model.name, "hidden_dim": model.hidden_dim, "gamma": model.gamma,
            "double_ent": model.entity_dim != model.hidden_dim, "double_rel": model.relation_dim != model.hidden_dim}


def model_from_spec(spec: dict) -> KGEModel:
    try:
        return create_model(spec["name"], int(spec["hidden_dim"]), float(spec["gamma"]), bool(spec["double_ent"]),
                            bool(spec["double_rel"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"malformed model spec {spec!r}: {exc}") from None


@torch.no_grad()
def shard_counts(model: KGEModel, q: Queries, shard: Tensor, first: int, filt: TripleFilter | None,
                 candidates: Tensor | None = None) -> Tensor:
    """For each query, how many of this shard's candidates (rows `shard`, global ids from
    `first`; or only the global ids `candidates`) other than the filtered ones score >= its target.
    Scored on the device of the queries' rows, a block of `shard` moved there at a time (ids and
    the filter stay on the CPU); the counts are returned on the CPU."""
    total = len(shard) if candidates is None else len(candidates)
    if candidates is not None and len(candidates) and (int(candidates.min()) < first or
                                                       int(candidates.max()) >= first + len(shard)):
        raise InputError(f"candidate ids must lie in this shard's rows [{first}, {first + len(shard)})")
    b, device = len(q.anchor), q.target.device
    counts = torch.zeros(b, dtype=torch.int64, device=device)
    if not total or not b:
        return to_host(counts)
    if filt is not None:
        rows, cols = filt.known(q.anchor, q.rel, q.corrupt_head)
    else:
        rows, cols = torch.arange(b), q.true
    known = q.anchor_rows.unsqueeze(0)
    rel = tuple(x.unsqueeze(0) for x in q.rel_rows)
    target = q.target.unsqueeze(1)
    width = max(model.entity_dim, model.relation_dim) if model.pairwise_temporaries else 1
    block = max(1, min(_MAX_BLOCK, _BLOCK_ELEMENTS // (b * width)))
    finite = torch.ones((), dtype=torch.bool, device=device)
    for start in range(0, total, block):  # (the ids of a block at a time: memory bounded whatever the shard's size)
        block_ids = torch.arange(first + start, first + min(start + block, total)) if candidates is None else \
            candidates[start:start + block]
        cand = shard[start:start + block] if candidates is None else \
            shard.index_select(0, (block_ids - first).to(shard.device))
        cand = to_device(cand, device).unsqueeze(0)
        scores = (model.heads(cand, rel, known) if q.corrupt_head else model.tails(known, rel, cand))[0]
        finite &= torch.isfinite(scores).all()  # (a pass over the scores, not over the rows; read once at the end)
        lo, hi = int(block_ids[0]), int(block_ids[-1]) + 1
        inside = (cols >= lo) & (cols < hi)
        if candidates is None:
            scores[to_device(rows[inside], device), to_device(cols[inside] - lo, device)] = float("-inf")
        elif bool(inside.any()):  # sampled candidates: drop those that form a known triple
            pos = torch.searchsorted(block_ids.sort().values, cols[inside])
            order = torch.argsort(block_ids)
            pos = pos.clamp_max_(len(block_ids) - 1)
            hit = block_ids[order[pos]] == cols[inside]
            scores[to_device(rows[inside][hit], device), to_device(order[pos][hit], device)] = float("-inf")
        counts += (scores >= target).sum(1)
    if not bool(finite):
        check_finite({"entity": to_host(shard).numpy()},
                     f"ranking against entities {first:,} to {first + len(shard) - 1:,}")
    return to_host(counts)


def ranks(counts: Tensor, target: Tensor, num_candidates: int) -> Tensor:
    """1 + the candidates scoring at least as high; last (num_candidates + 1) for a non-finite target."""
    return torch.where(torch.isfinite(target), counts + 1, num_candidates + 1)


class ShardRanker:
    """A machine's part of ranking: its entity rows and the known triples that are its candidates."""

    def __init__(self, n_relations: int, known_tail: np.ndarray, known_head: np.ndarray):
        self.filter = TripleFilter.build(n_relations, torch.from_numpy(np.asarray(known_tail)),
                                         torch.from_numpy(np.asarray(known_head)))

    def counts(self, model: KGEModel, q: Queries, shard: Tensor, first: int, use_filter: bool,
               candidates: Tensor | None = None) -> Tensor:
        return shard_counts(model, q, shard, first, self.filter if use_filter else None, candidates)


def rank_ops(part_config: PartitionConfig, machine_id: int, store: KVStore) -> dict:
    """The `kge_rank` operation of a server whose partition is a KG's (none otherwise): the
    counts of its machine's shard for a batch of queries (see `shard_counts`), or with a
    `window` of a run of its rows (an entity partition in a slot of the table: `dist_buckets`)."""
    kg = part_config.raw.get("kge")
    if kg is None:
        return {}
    rankers: list[ShardRanker] = []  # built on first use: a job that never evaluates never pays

    def rank(header: dict, arrays: list) -> tuple[dict, list]:
        model = model_from_spec(field(header, "model", dict))
        corrupt_head, use_filter = field(header, "corrupt_head", bool), field(header, "filter", bool)
        shard = store.shard(field(header, "table", str), field(header, "uid", str, optional=True))
        n_rel = len(model.relation_tables())
        if len(arrays) not in (5 + n_rel, 6 + n_rel):
            raise WireError(f"'kge_rank' takes {5 + n_rel} arrays, plus candidates, got {len(arrays)}")
        anchor, rel, true, target, anchor_rows, *rest = arrays
        rel_rows, candidates = tuple(rest[:n_rel]), (rest[n_rel] if len(rest) > n_rel else None)
        b = len(anchor)
        for what, a, dtype in (("anchor", anchor, torch.int64), ("rel", rel, torch.int64), ("true", true, torch.int64),
                               ("target", target, torch.float32)):
            if a.dtype != dtype or tuple(a.shape) != (b,):
                raise WireError(f"'kge_rank' {what} must be {dtype} of shape [{b}]")
        widths = [model.entity_dim, *model.relation_tables().values()]
        for a, w in zip((anchor_rows, *rel_rows), widths):
            if a.dtype != torch.float32 or tuple(a.shape) != (b, w):
                raise WireError(f"'kge_rank' rows must be float32 of shape [{b}, {w}]")
        if candidates is not None and (candidates.dtype != torch.int64 or candidates.dim() != 1):
            raise WireError("'kge_rank' candidates must be a 1-D int64 array")
        if b and (int(rel.min()) < 0 or int(rel.max()) >= int(kg["n_relations"])):
            raise InputError(f"relation ids must lie in [0, {kg['n_relations']})")
        if not rankers:
            part = part_config.part(machine_id)
            rankers.append(ShardRanker(int(kg["n_relations"]), np.load(part_config.dir / part.file("kge_known_tail")),
                                       np.load(part_config.dir / part.file("kge_known_head"))))
        q = Queries(anchor, rel, true, target, anchor_rows, rel_rows, corrupt_head)
        rows, first = shard.data, shard.first_row
        window = int_list(header, "window", optional=True)
        if window is not None:  # rows [start, start + count) of the shard hold the entities from `first` on
            if len(window) != 3 or window[0] + window[1] > len(rows):
                raise WireError(f"'kge_rank' window must be [start, count, first id] within the shard's "
                                f"{len(rows)} rows, got {window!r}")
            rows, first = rows[window[0]:window[0] + window[1]], window[2]
        return {}, [rankers[0].counts(model, q, rows, first, use_filter, candidates)]

    return {"kge_rank": rank}
