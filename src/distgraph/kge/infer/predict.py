"""`distgraph kge predict`: DGL-KE's `dglke_predict`. Scores (head, relation, tail) triples of a
saved model, chosen from lists of heads, relations and tails (`*`: all of them), and keeps the
K best, overall or per head, relation or tail (`--exec_mode`). Scores are computed a block of
heads (and one relation) at a time against every tail, and the K best kept as blocks come
(ties by position in the lists), so all combinations never sit in memory at once.

As in DGL-KE, `--score_func none` scores without the margin gamma (TransE's score is then
-||h + r - t||) and `logsigmoid` is log(sigmoid(score)) with it. TransR and SimplE, which
`dglke_predict` refuses, are scored too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ...errors import InputError
from ..models import create_model
from ..saved_model import SavedModel, load_model
from .config import PredictConfig
from .query import Mapping, RunningTopK, read_ids, row_topk

BLOCK = 1 << 22  # scores computed at once


class Scorer:
    """Scores of a saved model: blocks of heads x one relation x tails, or triples."""

    def __init__(self, model_path: str | Path, score_func: str):
        saved = load_model(model_path)  # numpy tables, checked finite
        t = saved.cfg
        self.saved = saved
        self.model = create_model(t.model_name, t.hidden_dim, t.gamma, t.double_ent, t.double_rel)
        tables = {name: torch.from_numpy(rows) for name, rows in saved.tables.items()}
        self.entity = tables["entity"]
        self.rel_tables = [tables[name] for name in self.model.relation_tables()]
        if score_func == "none":
            self.model.gamma = 0.0  # the distance itself (RotatE keeps its trained phase scale, emb_init)
        self.logsigmoid = score_func == "logsigmoid"

    def _finish(self, s: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.logsigmoid(s) if self.logsigmoid else s

    def block(self, heads, rel: int, tails):
        """Scores (len(heads), len(tails)) of every head with relation `rel` and every tail."""
        h = self.entity[heads].unsqueeze(0)
        r = tuple(t[rel].expand(len(heads), -1).unsqueeze(0) for t in self.rel_tables)
        return self._finish(self.model.tails(h, r, self.entity[tails].unsqueeze(0))[0])

    def triples(self, heads, rels, tails):
        """The score of each (heads[i], rels[i], tails[i])."""
        return self._finish(self.model.pair(self.entity[heads], tuple(t[rels] for t in self.rel_tables),
                                            self.entity[tails]))


def _mapping(saved: SavedModel, table: str, given: str | None, flag: str) -> Mapping:
    """The names of --raw_data: the file `flag` gives, else the model's own (`SavedModel.names`)."""
    return Mapping.read(given, flag) if given else Mapping(*saved.names(table, flag))


def _lists(cfg: PredictConfig, scorer: Scorer):
    """The head, relation and tail id lists (all ids for `*`)."""
    tables = scorer.saved.tables
    counts = {"h": len(tables["entity"]), "r": len(tables["relation"]), "t": len(tables["entity"])}
    names = {"h": _mapping(scorer.saved, "entity", cfg.entity_mfile, "--entity_mfile"),
             "r": _mapping(scorer.saved, "relation", cfg.rel_mfile, "--rel_mfile")} if cfg.raw_data else {}
    names["t"] = names.get("h")
    what = {"h": "head entity", "r": "relation", "t": "tail entity"}
    files = iter(cfg.data_files or [])
    out = {}
    for part, letter in zip(cfg.format.split("_"), "hrt"):
        ids = np.arange(counts[letter]) if part == "*" else read_ids(next(files), counts[letter], what[letter],
                                                                      names.get(letter))
        out[letter] = torch.from_numpy(ids)
    return out["h"], out["r"], out["t"], names


@torch.no_grad()
def predict(cfg: PredictConfig) -> dict[str, np.ndarray]:
    """The result columns (head, rel, tail, score) of `cfg`, names with --raw_data."""
    cfg.check()
    scorer = Scorer(cfg.model_path, cfg.score_func)
    H, R, T, names = _lists(cfg, scorer)
    nh, nr, nt, k = len(H), len(R), len(T), cfg.topk
    ar = torch.arange
    if cfg.exec_mode == "triplet_wise":
        if not nh == nr == nt:
            raise InputError(f"--exec_mode triplet_wise needs lists of one length; got {nh} heads, {nr} relations "
                             f"and {nt} tails")
        top = RunningTopK(k)
        for i in range(0, nh, BLOCK):
            top.add(scorer.triples(H[i:i + BLOCK], R[i:i + BLOCK], T[i:i + BLOCK]), ar(i, min(i + BLOCK, nh)))
        h, r, t, s = H[top.index], R[top.index], T[top.index], top.scores
    elif cfg.exec_mode in ("all", "batch_rel"):  # heads x tails per relation, K best overall or per relation
        step = max(1, BLOCK // max(nt, 1))
        tops = [RunningTopK(k) for _ in range(nr if cfg.exec_mode == "batch_rel" else 1)]
        for ri in range(nr):
            top = tops[ri if cfg.exec_mode == "batch_rel" else 0]
            for h0 in range(0, nh, step):
                hs = ar(h0, min(h0 + step, nh))
                flat = (hs.unsqueeze(1) * nr + ri) * nt + ar(nt) if cfg.exec_mode == "all" else \
                    hs.unsqueeze(1) * nt + ar(nt)
                top.add(scorer.block(H[hs], int(R[ri]), T), flat)
        index = torch.cat([x.index for x in tops])
        s = torch.cat([x.scores for x in tops])
        if cfg.exec_mode == "all":
            t_pos, r_pos, h_pos = index % nt, index // nt % nr, index // (nt * nr)
        else:
            r_pos = torch.cat([torch.full((len(x.index),), i) for i, x in enumerate(tops)])
            t_pos, h_pos = index % nt, index // nt
        h, r, t = H[h_pos], R[r_pos], T[t_pos]
    elif cfg.exec_mode == "batch_head":  # each head: its K best (relation, tail)
        step = max(1, BLOCK // max(nr * nt, 1))
        pieces = []
        for h0 in range(0, nh, step):
            hs = ar(h0, min(h0 + step, nh))
            scores = torch.stack([scorer.block(H[hs], int(R[ri]), T) for ri in range(nr)], 1).reshape(len(hs), -1)
            val, col = row_topk(scores, k)
            pieces.append((H[hs].unsqueeze(1).expand_as(col), R[col // nt], T[col % nt], val))
        h, r, t, s = (torch.cat([p[i].reshape(-1) for p in pieces]) for i in range(4))
    else:  # batch_tail: each tail, its K best (head, relation)
        step = max(1, BLOCK // max(nh * nr, 1))
        pieces = []
        for t0 in range(0, nt, step):
            ts = ar(t0, min(t0 + step, nt))
            scores = torch.stack([scorer.block(H, int(R[ri]), T[ts]) for ri in range(nr)], 2)  # (nh, tails, nr)
            val, col = row_topk(scores.permute(1, 0, 2).reshape(len(ts), -1), k)
            pieces.append((H[col // nr], R[col % nr], T[ts].unsqueeze(1).expand_as(col), val))
        h, r, t, s = (torch.cat([p[i].reshape(-1) for p in pieces]) for i in range(4))
    h, r, t = h.numpy(), r.numpy(), t.numpy()
    if cfg.raw_data:
        h, r, t = names["h"].strings(h), names["r"].strings(r), names["t"].strings(t)
    return {"head": h, "rel": r, "tail": t, "score": s.float().numpy()}
