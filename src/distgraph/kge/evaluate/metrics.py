"""The link-prediction metrics DGL-KE reports: their sums over a process's ranks, and their
average over processes' sums. No torch import (ranks come as a tensor, read through its own
methods): the process that prints the averages need not load it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor

HITS = (1, 3, 10)
METRICS = ("MRR", "MR", *(f"HITS@{k}" for k in HITS))


def metric_sums(r: Tensor) -> dict[str, float]:
    """Sums of MRR, MR and HITS@k over ranks, plus their count, so processes can be combined."""
    r = r.double()
    out = {"MRR": float((1.0 / r).sum()), "MR": float(r.sum())}
    out.update({f"HITS@{k}": float((r <= k).sum()) for k in HITS})
    out["count"] = float(len(r))
    return out


def combine(sums: list[dict[str, float]]) -> dict[str, float]:
    """Averages of metrics from several processes' sums (`metric_sums`)."""
    count = sum(s["count"] for s in sums)
    return {m: sum(s[m] for s in sums) / max(count, 1.0) for m in METRICS}
