"""Link prediction against an entity table kept on disk in partitions (bucket training): each
partition is read once and ranks every query's candidates in it (`ranking.shard_counts`), so
memory holds one partition, the queries' own rows and the known triples that name a query's
(head, relation) or (tail, relation), never the table or every known triple.

The queries, their targets, the sampled candidates and the metrics are those of the in-memory
evaluation (`link_prediction`): the same test triples rank the same against the same table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np
import torch
from torch import Tensor

from ..models import KGEModel
from .link_prediction import Rows, queries
from .metrics import metric_sums
from .ranking import Queries, TripleFilter, ranks, shard_counts

KNOWN_CHUNK = 1 << 20  # known triples scanned at a time for the filter (about 70 MB of temporaries)
Part = TypeVar("Part")


def query_filter(n_relations: int, triples: Tensor, known: Iterable[np.ndarray]) -> TripleFilter:
    """The filter of `triples`' queries: the known triples (chunks of (n, 3) arrays) whose
    (head, relation) or (tail, relation) is that of a query, gathered one chunk at a time."""
    h, r, t = (triples[:, i].numpy().astype(np.int64) for i in range(3))
    heads, tails = np.unique(h * n_relations + r), np.unique(t * n_relations + r)
    kept = []
    for chunk in known:  # widened a slice at a time: a memory map is never copied whole
        for s in range(0, len(chunk), KNOWN_CHUNK):
            part = np.asarray(chunk[s:s + KNOWN_CHUNK]).astype(np.int64)
            hit = np.isin(part[:, 0] * n_relations + part[:, 1], heads) | \
                np.isin(part[:, 2] * n_relations + part[:, 1], tails)
            kept.append(part[hit])
    rows = np.concatenate(kept) if kept else np.zeros((0, 3), dtype=np.int64)
    return TripleFilter.build(n_relations, torch.from_numpy(rows))


@torch.no_grad()
def evaluate_partitioned(model: KGEModel, relation_rows: Rows, relation_tables: list[str],
                         read_partition: Callable[[int], Tensor], bounds: np.ndarray, triples: Tensor,
                         batch_size: int, filt: TripleFilter | None, neg_sample_size: int = -1,
                         draw: Callable[[int], Tensor] | None = None,
                         order: Callable[[], list[int]] | None = None) -> dict[str, float]:
    """Metric sums over head and tail ranking of `triples` (as `link_prediction.evaluate`),
    with entity rows read a partition at a time (`read_partition(p)`: rows of ids
    bounds[p]:bounds[p + 1]), each pass in the order `order()` gives (default: by id; partitions
    already in memory first read the fewest from disk)."""
    passes = order or (lambda: list(range(len(bounds) - 1)))
    needed = torch.unique(torch.cat([triples[:, 0], triples[:, 2]]))
    own = torch.empty(len(needed), 0)
    for p in passes():  # the queries' own rows
        lo, hi = int(bounds[p]), int(bounds[p + 1])
        mine = (needed >= lo) & (needed < hi)
        if bool(mine.any()):
            rows = read_partition(p)
            if own.shape[1] != rows.shape[1]:
                own = torch.empty(len(needed), rows.shape[1])
            own[mine] = rows[needed[mine] - lo]

    def rows(name: str, ids: Tensor) -> Tensor:
        return own[torch.searchsorted(needed, ids.contiguous())] if name == "entity" else relation_rows(name, ids)

    def count(p: int, q: Queries, cand: Tensor | None) -> Tensor | None:
        lo, hi = int(bounds[p]), int(bounds[p + 1])
        if cand is not None:
            cand = cand[(cand >= lo) & (cand < hi)]
            if not len(cand):
                return None
        return shard_counts(model, q, read_partition(p), lo, filt, cand)

    return rank_in_parts(model, rows, relation_tables, triples, batch_size, int(bounds[-1]), neg_sample_size, draw,
                         passes(), count)


@torch.no_grad()
def rank_in_parts(model: KGEModel, rows: Rows, relation_tables: list[str], triples: Tensor, batch_size: int,
                  n_entities: int, neg_sample_size: int, draw: Callable[[int], Tensor] | None,
                  parts: Iterable[Part], count: Callable[[Part, Queries, Tensor | None], Tensor | None]
                  ) -> dict[str, float]:
    """Metric sums over head and tail ranking of `triples` (`rows` gives the queries' own rows),
    each batch's candidates counted a part of the table at a time: for each of `parts` in turn
    (a generator may change what is in memory between them), `count(part, queries, candidates
    or None for all)` gives the counts of that part's candidates (None: it has none)."""
    batches = [queries(model, rows, relation_tables, triples[i:i + batch_size], corrupt_head)
               for corrupt_head in (True, False) for i in range(0, len(triples), batch_size)]
    candidates = [None if neg_sample_size < 0 else torch.unique(draw(neg_sample_size)) for _ in batches]
    counts = [torch.zeros(len(q.anchor), dtype=torch.int64) for q in batches]
    for part in parts:
        for k, q in enumerate(batches):
            got = count(part, q, candidates[k])
            if got is not None:
                counts[k] += got
    out = [ranks(c, q.target, n_entities if cand is None else len(cand))
           for c, q, cand in zip(counts, batches, candidates)]
    return metric_sums(torch.cat(out) if out else torch.empty(0))
