"""How a KGE trainer reports to the command that started it, and what the command prints.

A launched trainer gets the job's settings in one environment variable and sends events
(progress, logs, metrics) as JSON lines on its standard output behind `EVENT`; a trainer in
the command's own process calls the `Reporter` straight. The `Reporter` prints them in
DGL-KE's wording and keeps the figures of the run. No torch: the command need not import it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import TextIO

from tqdm import tqdm

from ..config import TrainConfig
from ..evaluate.metrics import METRICS, combine

JOB_ENV = "DISTGRAPH_KGE_JOB"  # the trainer's settings (JSON), from the parent
EVENT = "@kge "


def job_env(cfg: TrainConfig, save_dir: str | None) -> str:
    """The value of JOB_ENV for `cfg`."""
    return json.dumps({"cfg": asdict(cfg), "save_dir": save_dir})


def read_job() -> tuple[TrainConfig, str | None]:
    """The settings and save folder a launched trainer was given in JOB_ENV."""
    job = json.loads(os.environ[JOB_ENV])
    return TrainConfig(**job["cfg"]), job["save_dir"]


def emit_line(msg: tuple) -> None:
    """Send one event to the starting process: one line in one write, whole even when the
    machine's forked trainers share the pipe (`launch.family`; a pipe takes up to 4 kB at once)."""
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (EVENT + json.dumps(list(msg)) + "\n").encode())


class Reporter:
    """Handler of the trainers' events: training logs, a progress bar, evaluation results, timings."""

    def __init__(self, num_proc: int, max_step: int, on_trained: Callable[[], None] | None = None,
                 out: TextIO | None = None, began: float | None = None):
        self.num_proc = num_proc
        self.out = out or sys.stdout
        self.on_trained = on_trained
        self.steps = [0] * num_proc
        self.bar = tqdm(total=num_proc * max_step, unit="step", desc="kge train", dynamic_ncols=True,
                        disable=None if max_step else True, mininterval=1.0)
        self.pending: dict[str, list[dict[str, float]]] = {}
        self.results: dict[str, dict[str, float]] = {}
        self.trained: list[tuple[int, int]] = []
        self.t_start = self.t_trained = time.perf_counter()
        self.began = began  # when the command started (perf_counter), to say how long starting took
        self.started = 0
        self.remote_rows: list[float] = []
        self.train_time: float | None = None
        self.test_time: float | None = None

    def write(self, text: str, err: bool = False) -> None:
        """Print a line without breaking the progress bar (to stderr with `err`)."""
        out = sys.stderr if err else self.out
        tqdm.write(text, file=out)
        out.flush()

    @property
    def triples(self) -> int:
        """Positive triples trained on by all processes."""
        return sum(t for _, t in self.trained)

    def __call__(self, msg: tuple) -> None:
        """Handle one worker message: progress, log, trained, or metrics."""
        kind, rank = msg[0], msg[1]
        if kind == "progress":
            self.bar.update(msg[2] - self.steps[rank])
            self.steps[rank] = msg[2]
        elif kind == "log":
            _, _, step, stats = msg
            rate = stats.pop("steps/s")
            text = ", ".join(f"{k}: {v:.4g}" for k, v in stats.items())
            self.write(f"[{rank}][Train]({step}/{self.bar.total // self.num_proc}) average {text}; {rate:.3g} steps/s")
        elif kind == "trained":
            self.trained.append((msg[2], msg[3]))
            if len(self.trained) == self.num_proc:
                self._all_trained()
        elif kind == "metrics":
            self._metrics(msg[2], msg[3])
        elif kind == "pulled":  # entity rows a trainer pulled from other machines, per step
            self.remote_rows.append(msg[2])
        elif kind == "started":  # throughput counts from when every trainer trains, not from process start-up
            self.started += 1
            if self.started == self.num_proc:
                self.t_start = time.perf_counter()
                if self.began is not None:
                    self.write(f"{self.num_proc} training process{'es' * (self.num_proc > 1)} started "
                               f"{self.t_start - self.began:.1f} s after the start")
        elif kind == "resumed":
            self.write(f"Resume from {msg[2]} at step {msg[3]}")
        elif kind == "saved":
            self.write(f"Save model to {msg[2]}")
        elif kind == "note":  # a line for the user from a trainer (how the job holds its tables)
            self.write(msg[2])

    def _all_trained(self) -> None:
        now = time.perf_counter()
        self.train_time = now - self.t_start
        # evaluation alone is timed from the start, process start-up included
        self.t_trained = now if self.triples else self.t_start
        self.bar.close()
        if self.triples:
            self.write(f"training takes {self.train_time:.3f} seconds "
                       f"({self.triples / self.train_time:,.0f} positive triples/s)")
        if any(self.remote_rows):
            self.write(f"entity rows pulled from other machines: "
                       f"{sum(self.remote_rows) / len(self.remote_rows):,.1f} per step and trainer")
        if self.on_trained is not None:
            self.on_trained()

    def _metrics(self, label: str, sums: dict[str, float]) -> None:
        self.pending.setdefault(label, []).append(sums)
        if len(self.pending[label]) < self.num_proc:
            return
        parts = self.pending.pop(label)
        avg = self.results[label] = combine(parts)
        kind = label.split()[0]
        lines = [f"-------------- {label} result --------------"]
        lines += [f"{kind} average {m} : {avg[m]:.4f}" for m in METRICS]
        lines.append("-" * len(lines[0]))
        if label == "Test":
            self.test_time = time.perf_counter() - self.t_trained
            ranked = sum(s["count"] for s in parts)  # each a query: one side of one triple, ranked
            lines.append(f"testing takes {self.test_time:.3f} seconds ({1000 * self.test_time / max(ranked, 1):.3f} s "
                         f"per 1,000 queries)")
        self.write("\n".join(lines))

    def close(self) -> None:
        """Close the progress bar if the run stopped early."""
        self.bar.close()
