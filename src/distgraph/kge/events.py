"""How a launched KGE trainer and the process that started it talk: the job's settings in one
environment variable, and events (progress, logs, metrics) as JSON lines on the trainer's
standard output behind `EVENT`. No torch: the starting process need not import it."""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from .config import TrainConfig

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
    """Send one event to the starting process."""
    print(EVENT + json.dumps(list(msg)), flush=True)
