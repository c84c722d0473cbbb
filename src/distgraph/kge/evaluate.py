"""Link-prediction evaluation: each triple ranked against every entity (or, with
--neg_sample_size_eval N, against N sampled ones), head side and tail side, with the known
triples filtered out unless --no_eval_filter; MRR, MR and HITS@1/3/10.

Where the counting happens is the caller's: a trainer asks its own machine's shard and the
other machines' servers (`ranking`), `kge eval` counts on the whole table in its process;
both come here for the queries, the candidates and the metrics.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from .metrics import HITS
from .models import KGEModel
from .ranking import Queries, ranks

Rows = Callable[[str, Tensor], Tensor]  # (table, ids) -> rows
Count = Callable[[Queries, Tensor | None], Tensor]  # (queries, candidates or None: all) -> counts per query


def metric_sums(r: Tensor) -> dict[str, float]:
    """Sums of MRR, MR and HITS@k over ranks, plus their count, so processes can be combined."""
    r = r.double()
    out = {"MRR": float((1.0 / r).sum()), "MR": float(r.sum())}
    out.update({f"HITS@{k}": float((r <= k).sum()) for k in HITS})
    out["count"] = float(len(r))
    return out


def eval_share(triples: Tensor, percent: float, rank: int, world: int, seed: int) -> Tensor:
    """This trainer's share of a random `percent` of the triples (the same sample on every trainer)."""
    if percent < 1.0:
        keep = torch.randperm(len(triples), generator=torch.Generator().manual_seed(seed))[:max(1, int(len(triples) * percent))]
        triples = triples[keep.sort().values]
    return triples.tensor_split(world)[rank]


@torch.no_grad()
def queries(model: KGEModel, rows: Rows, relation_tables: list[str], triples: Tensor,
            corrupt_head: bool) -> Queries:
    """The queries of a batch of triples, with the true entity's score as the target."""
    h, r, t = triples.unbind(1)
    hr, tr = rows("entity", h), rows("entity", t)
    rel = tuple(rows(name, r) for name in relation_tables)
    target = model.pair(hr, rel, tr)
    return Queries(t if corrupt_head else h, r, h if corrupt_head else t, target, tr if corrupt_head else hr, rel,
                   corrupt_head)


@torch.no_grad()
def evaluate(model: KGEModel, rows: Rows, count: Count, relation_tables: list[str], triples: Tensor,
             n_entities: int, batch_size: int, neg_sample_size: int = -1,
             draw: Callable[[int], Tensor] | None = None) -> dict[str, float]:
    """Metric sums over head and tail ranking of `triples`, `batch_size` triples per batch;
    with `neg_sample_size` > 0 each batch is ranked against that many candidates from `draw`."""
    out = []
    for corrupt_head in (True, False):
        for i in range(0, len(triples), batch_size):
            q = queries(model, rows, relation_tables, triples[i:i + batch_size], corrupt_head)
            candidates = None if neg_sample_size < 0 else torch.unique(draw(neg_sample_size))
            total = n_entities if candidates is None else len(candidates)
            out.append(ranks(count(q, candidates), q.target, total))
    return metric_sums(torch.cat(out) if out else torch.empty(0))
