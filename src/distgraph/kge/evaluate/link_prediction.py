"""Link-prediction evaluation: each triple ranked against every entity (or, with
--neg_sample_size_eval N, against N sampled ones), head side and tail side, with the known
triples filtered out unless --no_eval_filter; MRR, MR and HITS@1/3/10 (`metrics`).

Where the counting happens is the caller's: a trainer asks its own machine's shard and the
other machines' servers (`ranking`); `kge eval` (`rank_saved`) counts on the whole table of a
saved model as one shard, in its process; both come here for the queries, the candidates and
the metrics. The queries are scored on the device their rows come on (`rows`), and so is this
process's shard (`ranking.shard_counts`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch
from torch import Tensor

from ..config import EvalConfig
from ..data.formats import KGData
from ..models import KGEModel, create_model
from ..saved_model import SavedModel
from .metrics import metric_sums
from ...distributed.transfer import to_device
from ..train.device import check_gpus, device_of, resident, to_host, use_device
from .ranking import Queries, TripleFilter, ranks, shard_counts

Rows = Callable[[str, Tensor], Tensor]  # (table, ids) -> rows
Count = Callable[[Queries, Tensor | None], Tensor]  # (queries, candidates or None: all) -> counts per query


def eval_share(triples: Tensor, percent: float, rank: int, world: int, seed: int) -> Tensor:
    """This trainer's share of a random `percent` of the triples (the same sample on every trainer)."""
    if percent < 1.0:
        n = max(1, int(len(triples) * percent))
        keep = torch.randperm(len(triples), generator=torch.Generator().manual_seed(seed))[:n]
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
            out.append(ranks(count(q, candidates), to_host(q.target), total))
    return metric_sums(torch.cat(out) if out else torch.empty(0))


def rank_saved(cfg: EvalConfig, saved: SavedModel, data: KGData) -> dict[str, float]:
    """`kge eval`'s metric sums of a saved model on its dataset's test triples, both checked
    (`prepare.prepare_eval`), as `cfg` asks, on --num_proc x --num_thread torch threads (restored after),
    scored on the first GPU of --gpu if any (the entity table copied there when it fits, unless
    --mix_cpu_gpu keeps it in CPU memory: then its blocks travel)."""
    t = saved.cfg
    model = create_model(t.model_name, t.hidden_dim, t.gamma, t.double_ent, t.double_rel)
    check_gpus(cfg.gpu)
    device = device_of(cfg.gpu, 0)
    use_device(device)
    tables = {name: torch.from_numpy(rows) for name, rows in saved.tables.items()}
    entity = tables["entity"] if cfg.mix_cpu_gpu else resident(tables["entity"], device)
    known = torch.from_numpy(np.concatenate([a for a in (data.train, data.valid, data.test) if a is not None]))
    filt = None if cfg.no_eval_filter else TripleFilter.build(data.n_relations, known)
    gen = torch.Generator().manual_seed(cfg.seed)
    train = torch.from_numpy(data.train)

    def draw(size: int) -> torch.Tensor:
        if cfg.neg_deg_sample_eval:
            pick = torch.randint(0, len(train), (size,), generator=gen)
            return train[pick, torch.randint(0, 2, (size,), generator=gen) * 2]
        return torch.randint(0, data.n_entities, (size,), generator=gen)

    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.num_proc * cfg.num_thread)
    try:
        return evaluate(model, lambda name, ids: to_device(tables[name][ids], device),
                        lambda q, cand: shard_counts(model, q, entity, 0, filt, cand),
                        [n for n in tables if n != "entity"],
                        eval_share(torch.from_numpy(data.test), cfg.eval_percent, 0, 1, cfg.seed), data.n_entities,
                        cfg.batch_size_eval, cfg.neg_sample_size_eval, draw)
    finally:
        torch.set_num_threads(threads)
