"""`MetricsLog`: a trainer's training metrics as TensorBoard scalars and as JSON lines.

`<log_dir>/trainer-<rank>/` gets an event file (TensorBoard shows each trainer as a run:
`tensorboard --logdir <log_dir>`) and `metrics.jsonl` (one object per record: `step`,
`time`, the values), for plots and scripts without TensorBoard."""

from __future__ import annotations

import json
import time
from pathlib import Path

from .events import SummaryWriter


class MetricsLog:
    """Records of named scalars at a step, for one trainer."""

    def __init__(self, log_dir: str | Path, rank: int = 0):
        self.dir = Path(log_dir) / f"trainer-{rank:03d}"
        self.rank = rank
        self.events = SummaryWriter(self.dir)
        self._jsonl = open(self.dir / "metrics.jsonl", "a", encoding="utf-8")

    def log(self, step: int, **values: float) -> None:
        """Record `values` (name -> number; '/' groups names in TensorBoard) at `step`."""
        now = time.time()
        values = {k: float(v) for k, v in values.items()}
        self.events.add_scalars_at(step, values, now)
        self._jsonl.write(json.dumps({"step": step, "time": round(now, 3), "rank": self.rank, **values}) + "\n")

    def flush(self) -> None:
        self.events.flush()
        self._jsonl.flush()

    def close(self) -> None:
        self.events.close()
        self._jsonl.close()


def remote_rows() -> int:
    """Rows this process, and its sampler processes for its batches, have pulled from other
    machines' servers so far (all tensors): the traffic a partitioning saves; 0 outside a job."""
    from ..distributed.runtime import get_context, is_initialized

    return sum(get_context().client.remote_rows.values()) if is_initialized() else 0
