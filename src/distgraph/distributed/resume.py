"""Epoch checkpoints of a training run and resuming from them: the dense model and optimiser,
the random state, the run's own plain values, and DistEmbeddings with their server-side
optimiser state (`--checkpoint_dir`, `--checkpoint_interval`, `--resume` of the examples)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import torch

from .checkpoint import CheckpointDir
from .dist_embedding import DistEmbedding


class EpochCheckpoints:
    """Save a run every `interval` epochs (and after the last) into `checkpoint_dir`, and with
    `resume` start from the newest complete one. `extra` holds the run's own plain values (its
    best epoch so far, ...), saved and restored with the rest."""

    def __init__(self, checkpoint_dir: str | Path | None, model: torch.nn.Module, opt: torch.optim.Optimizer,
                 embeddings: Sequence[DistEmbedding] = (), interval: int = 1, resume: bool = False):
        self.dir = CheckpointDir(checkpoint_dir) if checkpoint_dir else None
        self.interval, self.resume = interval, resume
        self.model, self.opt, self.embeddings = model, opt, list(embeddings)
        self.extra: dict = {}

    def start_epoch(self) -> int:
        """0, or when resuming the epoch after the newest checkpoint (whose state is restored)."""
        found = self.dir.load_latest(self.embeddings) if self.resume and self.dir is not None else None
        if found is None:
            return 0
        epoch, state = found
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        torch.set_rng_state(state["rng"])
        self.extra = dict(state.get("extra", {}))
        print(f"resumed from {self.dir.path(epoch)}", flush=True)
        return epoch + 1

    def end_epoch(self, epoch: int, last: bool) -> None:
        """Checkpoint after `epoch` when it is due (or `last`)."""
        if self.dir is not None and ((epoch + 1) % self.interval == 0 or last):
            self.dir.save(epoch, self.embeddings, {"model": self.model.state_dict(), "opt": self.opt.state_dict(),
                                                   "rng": torch.get_rng_state(), "extra": self.extra})


def model_digest(model: torch.nn.Module) -> str:
    """A short hash of every parameter's bytes: equal digests mean bitwise-equal models (how a
    resumed run is checked against an uninterrupted one)."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]
