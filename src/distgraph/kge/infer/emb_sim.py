"""`distgraph kge emb-sim`: DGL-KE's `dglke_emb_sim`. The K most similar pairs of embeddings
(rows of an `.npy`, e.g. a saved model's entity or relation table) from a left and a right
list (`*`: all rows), overall, pair by pair, or per left object (`--exec_mode`), under cosine,
negative l2 / l1 distance, dot product or extended Jaccard similarity. Similarities are
computed a block of left rows at a time and the K best kept as blocks come."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ...errors import InputError
from ..saved_model import check_finite, check_names, model_table_names
from .config import EmbSimConfig
from .query import Mapping, RunningTopK, read_ids, row_topk

BLOCK = 1 << 22  # similarities computed at once


def similarity(x: torch.Tensor, y: torch.Tensor, func: str, pairwise: bool = False) -> torch.Tensor:
    """Similarities (len(x), len(y)) of every row of x with every row of y, or of x[i] with y[i]."""
    if func in ("l1", "l2"):
        p = 1 if func == "l1" else 2
        return -(torch.linalg.vector_norm(x - y, ord=p, dim=-1) if pairwise
                 else torch.cdist(x, y, p=p, compute_mode="donot_use_mm_for_euclid_dist"))  # exact: 0 to itself
    dot = (x * y).sum(-1) if pairwise else x @ y.T
    if func == "dot":
        return dot
    nx, ny = x.norm(dim=-1), y.norm(dim=-1)
    if not pairwise:
        nx, ny = nx.unsqueeze(1), ny.unsqueeze(0)
    return dot / (nx * ny) if func == "cosine" else dot / (nx ** 2 + ny ** 2 - dot)


def _names(cfg: EmbSimConfig, path: Path) -> Mapping:
    """The names of --raw_data: --mfile, else those of the saved model whose table --emb_file is."""
    found = None if cfg.mfile else model_table_names(path, "--mfile")
    return Mapping(*found) if found else Mapping.read(cfg.mfile, "--mfile")


@torch.no_grad()
def emb_sim(cfg: EmbSimConfig) -> dict[str, np.ndarray]:
    """The result columns (left, right, score) of `cfg`, names with --raw_data."""
    cfg.check()
    path = Path(cfg.emb_file)
    if not path.is_file():
        raise InputError(f"--emb_file {path} does not exist; pass an embedding table (.npy) such as a saved "
                         f"model's <dataset>_<model>_entity.npy")
    names = _names(cfg, path) if cfg.raw_data else None
    try:
        rows = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise InputError(f"--emb_file {path} is not a .npy array ({exc})") from None
    if rows.ndim != 2 or rows.dtype.kind not in "biuf":
        raise InputError(f"--emb_file {path} holds a {rows.dtype} array of shape {list(rows.shape)}; it needs one row "
                         f"of numbers per object")
    check_finite({path.name: rows}, f"--emb_file {path}")
    if names is not None:
        check_names(names.path, len(names.names), path, len(rows))
    emb = torch.from_numpy(rows).float()
    files = iter(cfg.data_files or [])
    left, right = (torch.from_numpy(np.arange(len(emb)) if part == "*" else read_ids(next(files), len(emb), "object",
                                                                                       names))
                   for part in (cfg.format.split("_") + ["*"])[:2])
    nl, nr, k = len(left), len(right), cfg.topk
    if cfg.exec_mode == "pairwise":
        if nl != nr:
            raise InputError(f"--exec_mode pairwise needs lists of one length; got {nl} left and {nr} right")
        top = RunningTopK(k)
        top.add(similarity(emb[left], emb[right], cfg.sim_func, pairwise=True), torch.arange(nl))
        l, r, s = left[top.index], right[top.index], top.scores
    else:
        step = max(1, BLOCK // max(nr, 1))
        top, pieces = RunningTopK(k), []
        for i in range(0, nl, step):
            ls = torch.arange(i, min(i + step, nl))
            scores = similarity(emb[left[ls]], emb[right], cfg.sim_func)
            if cfg.exec_mode == "all":
                top.add(scores, ls.unsqueeze(1) * nr + torch.arange(nr))
            else:
                val, col = row_topk(scores, k)
                pieces.append((left[ls].unsqueeze(1).expand_as(col), right[col], val))
        if cfg.exec_mode == "all":
            l, r, s = left[top.index // nr], right[top.index % nr], top.scores
        else:
            l, r, s = (torch.cat([p[j].reshape(-1) for p in pieces]) for j in range(3))
    l, r = l.numpy(), r.numpy()
    if names is not None:
        l, r = names.strings(l), names.strings(r)
    return {"left": l, "right": r, "score": s.float().numpy()}
