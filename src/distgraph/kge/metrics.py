"""The link-prediction metrics DGL-KE reports, and their average over processes' sums
(no torch: the process that prints them need not import it)."""

from __future__ import annotations

HITS = (1, 3, 10)
METRICS = ("MRR", "MR", *(f"HITS@{k}" for k in HITS))


def combine(sums: list[dict[str, float]]) -> dict[str, float]:
    """Averages of metrics from several processes' sums (`evaluate.metric_sums`)."""
    count = sum(s["count"] for s in sums)
    return {m: sum(s[m] for s in sums) / max(count, 1.0) for m in METRICS}
