"""`kge train --checkpoint_dir D --checkpoint_interval N [--resume]`.

Every N steps the training processes pause together; process 0 writes the shared tables
and their Adagrad state, every process its sampler's position, random state and running
log sums, then process 0 publishes the checkpoint (`checkpoint.json`, written last, so a
partial one is never used) and keeps the newest `KEEP`. `--resume` continues from the
newest complete checkpoint; with one process the result equals an uninterrupted run's bit
for bit (several processes update the tables Hogwild-style, which is not deterministic).
The folder layout and its completion rule are those of `distributed.checkpoint`.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..distributed.checkpoint import MANIFEST, CheckpointError, complete_steps, step_path, write_atomically
from .config import TrainConfig
from .params import KGEParams

KEEP = 2
FORMAT_VERSION = 1
# settings a resumed run shares with the run it continues (others, e.g. --max_step or logging, may change)
MUST_MATCH = ("model_name", "dataset", "format", "data_files", "batch_size", "neg_sample_size", "neg_deg_sample",
              "neg_adversarial_sampling", "adversarial_temperature", "hidden_dim", "lr", "gamma", "double_ent",
              "double_rel", "regularization_coef", "regularization_norm", "num_proc", "seed")


def _arrays(params: KGEParams) -> dict[str, torch.Tensor]:
    return {**{f"{n}.table": t for n, t in params.tables.items()}, **{f"{n}.adagrad": t for n, t in params.states.items()}}


@dataclass
class KGECheckpoints:
    """The checkpoint folder of one `kge train` run."""

    root: Path
    interval: int

    def due(self, step: int, max_step: int) -> bool:
        return step % self.interval == 0 and step < max_step

    def save_worker(self, step: int, rank: int, state: dict) -> None:
        path = step_path(self.root, step)
        path.mkdir(parents=True, exist_ok=True)
        write_atomically(path / f"worker-{rank}.pt", lambda f: torch.save(state, f))

    def save_tables(self, step: int, params: KGEParams) -> None:
        path = step_path(self.root, step)
        path.mkdir(parents=True, exist_ok=True)
        for name, t in _arrays(params).items():
            write_atomically(path / f"{name}.npy", lambda f, t=t: np.save(f, t.numpy(), allow_pickle=False))

    def publish(self, step: int, cfg: TrainConfig) -> None:
        """Mark checkpoint `step` complete, then remove the complete ones beyond the newest `KEEP`."""
        manifest = {"format_version": FORMAT_VERSION, "step": step,
                    "config": {k: getattr(cfg, k) for k in MUST_MATCH}}
        write_atomically(step_path(self.root, step) / MANIFEST, lambda f: json.dump(manifest, f, indent=1), "w")
        for old in complete_steps(self.root)[:-KEEP]:
            (step_path(self.root, old) / MANIFEST).unlink(missing_ok=True)
            shutil.rmtree(step_path(self.root, old), ignore_errors=True)

    def latest(self) -> int | None:
        steps = complete_steps(self.root)
        return steps[-1] if steps else None

    def load(self, step: int, cfg: TrainConfig, params: KGEParams) -> list[dict]:
        """Restore the tables of checkpoint `step` into `params`; the state of each process."""
        path = step_path(self.root, step)
        try:
            manifest = json.loads((path / MANIFEST).read_text())
            saved = manifest["config"]
        except (OSError, ValueError, KeyError) as exc:
            raise CheckpointError(f"{path / MANIFEST} is not a kge checkpoint manifest ({exc})") from None
        differ = [f"--{k} {saved.get(k)!r} -> {getattr(cfg, k)!r}" for k in MUST_MATCH if saved.get(k) != getattr(cfg, k)]
        if differ:
            raise CheckpointError(f"checkpoint {path} was taken with other settings ({', '.join(differ)}); resume "
                                  f"with the same ones, or start a new --checkpoint_dir")
        loaded = {}
        for name, t in _arrays(params).items():
            try:
                a = np.load(path / f"{name}.npy", allow_pickle=False)
            except (OSError, ValueError) as exc:
                raise CheckpointError(f"checkpoint file {path / name}.npy is unreadable ({exc})") from None
            if a.shape != tuple(t.shape) or a.dtype != t.numpy().dtype:
                raise CheckpointError(f"checkpoint file {path / name}.npy holds {a.dtype} {list(a.shape)}, expected "
                                      f"{t.numpy().dtype} {list(t.shape)}: the dataset or model differs")
            loaded[name] = a
        states = []
        for rank in range(cfg.num_proc):
            try:
                states.append(torch.load(path / f"worker-{rank}.pt", weights_only=True))
            except (OSError, RuntimeError) as exc:
                raise CheckpointError(f"{path}/worker-{rank}.pt is missing or unreadable ({exc})") from None
        for name, t in _arrays(params).items():  # only once everything was read and checked
            t.copy_(torch.from_numpy(loaded[name]))
        return states
