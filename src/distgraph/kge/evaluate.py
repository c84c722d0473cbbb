"""Filtered link-prediction ranking: each test triple against every entity, head and tail side.

The filter is built once: the known triples (train, valid and test) grouped by
(head, relation) with their tails, and by (tail, relation) with their heads, as sorted group
keys with CSR offsets. For a batch of queries one `searchsorted` finds every group, and the
known entities are masked out of the (batch x entities) score matrix in one indexed write.
The rank of the true entity is 1 + the number of unfiltered candidates scoring at least as
high (ties count against the model, as in DGL-KE).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .models import KGEModel
from .params import KGEParams

HITS = (1, 3, 10)
METRICS = ("MRR", "MR", *(f"HITS@{k}" for k in HITS))
# Candidate entities scored at once: at most _MAX_BLOCK (a block of 4096 x 200 floats stays in
# cache for its matmul, measured as fast as larger ones), fewer when a model's (batch x block
# x dim) temporaries would pass 64 MB.
_BLOCK_ELEMENTS = 1 << 24
_MAX_BLOCK = 4096


@dataclass
class _Groups:
    """Values of each group key: keys sorted, values[offsets[i]:offsets[i+1]] belong to keys[i]."""

    keys: Tensor
    offsets: Tensor
    values: Tensor

    @classmethod
    def build(cls, group: Tensor, value: Tensor) -> _Groups:
        """Group `value` by `group` with one sort."""
        order = torch.argsort(group)
        keys, counts = torch.unique_consecutive(group[order], return_counts=True)
        offsets = torch.zeros(len(keys) + 1, dtype=torch.int64)
        torch.cumsum(counts, 0, out=offsets[1:])
        return cls(keys, offsets, value[order])

    def lookup(self, query: Tensor) -> tuple[Tensor, Tensor]:
        """(rows, values): every value of the group of each query, row = position of the query."""
        pos = torch.searchsorted(self.keys, query).clamp_max_(len(self.keys) - 1)
        found = self.keys[pos] == query
        lo = self.offsets[pos]
        counts = torch.where(found, self.offsets[pos + 1] - lo, 0)
        rows = torch.repeat_interleave(torch.arange(len(query)), counts)
        ends = torch.cumsum(counts, 0)
        idx = torch.arange(int(ends[-1]) if len(ends) else 0) + torch.repeat_interleave(lo - ends + counts, counts)
        return rows, self.values[idx]

    def share_memory_(self) -> _Groups:
        """Move the arrays to shared memory for worker processes."""
        for t in (self.keys, self.offsets, self.values):
            t.share_memory_()
        return self


@dataclass
class TripleFilter:
    """Known tails of each (head, relation) and known heads of each (tail, relation)."""

    n_relations: int
    tails: _Groups
    heads: _Groups

    @classmethod
    def build(cls, triples: Tensor, n_relations: int) -> TripleFilter:
        """Index (n, 3) triples of (head, relation, tail) ids."""
        h, r, t = triples.unbind(1)
        return cls(n_relations, _Groups.build(h * n_relations + r, t), _Groups.build(t * n_relations + r, h))

    def known(self, anchor: Tensor, rel: Tensor, corrupt_head: bool) -> tuple[Tensor, Tensor]:
        """(rows, entities) of known triples for queries (anchor, rel): anchor is the tail when
        heads are corrupted, the head otherwise."""
        groups = self.heads if corrupt_head else self.tails
        return groups.lookup(anchor * self.n_relations + rel)

    def share_memory_(self) -> TripleFilter:
        """Move the arrays to shared memory for worker processes."""
        self.tails.share_memory_()
        self.heads.share_memory_()
        return self


@torch.no_grad()
def score_all(model: KGEModel, params: KGEParams, triples: Tensor, corrupt_head: bool) -> Tensor:
    """Scores (b, n_entities) of each triple with its head (or tail) replaced by every entity."""
    ent = params.tables["entity"]
    h, r, t = triples.unbind(1)
    rel = tuple(params.tables[name][r].unsqueeze(0) for name in params.relation_names())
    known = ent[t if corrupt_head else h].unsqueeze(0)
    width = max(model.entity_dim, model.relation_dim) if model.pairwise_temporaries else 1
    block = max(1, min(_MAX_BLOCK, _BLOCK_ELEMENTS // (len(triples) * width)))
    parts = []
    for start in range(0, len(ent), block):
        cand = ent[start:start + block].unsqueeze(0)
        parts.append((model.heads(cand, rel, known) if corrupt_head else model.tails(known, rel, cand))[0])
    return parts[0] if len(parts) == 1 else torch.cat(parts, 1)


@torch.no_grad()
def filtered_ranks(model: KGEModel, params: KGEParams, triples: Tensor, filt: TripleFilter | None,
                   corrupt_head: bool) -> Tensor:
    """Rank of the true head (or tail) of each triple among all entities, known triples filtered."""
    scores = score_all(model, params, triples, corrupt_head)
    h, r, t = triples.unbind(1)
    true = h if corrupt_head else t
    target = scores.gather(1, true.unsqueeze(1))
    if filt is None:
        scores[torch.arange(len(true)), true] = float("-inf")
    else:
        rows, cols = filt.known(t if corrupt_head else h, r, corrupt_head)
        scores[rows, cols] = float("-inf")
    return (scores >= target).sum(1) + 1


def metric_sums(ranks: Tensor) -> dict[str, float]:
    """Sums of MRR, MR and HITS@k over ranks, plus their count, so processes can be combined."""
    r = ranks.double()
    out = {"MRR": float((1.0 / r).sum()), "MR": float(r.sum())}
    out.update({f"HITS@{k}": float((r <= k).sum()) for k in HITS})
    out["count"] = float(len(r))
    return out


def combine(sums: list[dict[str, float]]) -> dict[str, float]:
    """Averages of metrics from several processes' sums."""
    count = sum(s["count"] for s in sums)
    return {m: sum(s[m] for s in sums) / max(count, 1.0) for m in METRICS}


def evaluate(model: KGEModel, params: KGEParams, triples: Tensor, filt: TripleFilter | None,
             batch_size: int) -> dict[str, float]:
    """Metric sums over head and tail ranking of `triples`, `batch_size` triples per score matrix."""
    ranks = [filtered_ranks(model, params, triples[i:i + batch_size], filt, side)
             for side in (True, False) for i in range(0, len(triples), batch_size)]
    return metric_sums(torch.cat(ranks) if ranks else torch.empty(0))
