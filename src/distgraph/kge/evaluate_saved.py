"""`kge eval`'s ranking: a saved model's test triples against the whole entity table as one
shard, in this process, with the same ranking code as training's evaluation."""

from __future__ import annotations

import numpy as np
import torch

from .config import EvalConfig
from .evaluate import eval_share, evaluate
from .models import create_model
from .prepare import EvalInputs
from .ranking import TripleFilter, shard_counts


def rank_saved(cfg: EvalConfig, inputs: EvalInputs) -> dict[str, float]:
    """Metric sums of the checked `inputs` (`prepare.prepare_eval`) as `cfg` asks, on
    --num_proc x --num_thread torch threads (restored after)."""
    saved, data, t = inputs.saved, inputs.data, inputs.saved.cfg
    model = create_model(t.model_name, t.hidden_dim, t.gamma, t.double_ent, t.double_rel)
    tables = {name: torch.from_numpy(rows) for name, rows in saved.tables.items()}
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
        return evaluate(model, lambda name, ids: tables[name][ids],
                        lambda q, cand: shard_counts(model, q, tables["entity"], 0, filt, cand),
                        [n for n in tables if n != "entity"],
                        eval_share(torch.from_numpy(data.test), cfg.eval_percent, 0, 1, cfg.seed), data.n_entities,
                        cfg.batch_size_eval, cfg.neg_sample_size_eval, draw)
    finally:
        torch.set_num_threads(threads)
