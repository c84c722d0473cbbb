"""Checkpoints of distributed tensors and embeddings, with their server-side optimiser state,
and of each trainer's own state (model, optimiser, random generators, progress).

Every trainer calls `save_checkpoint` / `load_checkpoint` at the same point of the script
(standalone: the one process). A checkpoint is a folder:

    checkpoint.json                     written last by trainer 0; only its presence makes the
                                        checkpoint complete, so a partial one is never loaded
    <tensor>/m<M>.r<A>-<B>.<field>.npy  one piece per server: its slice of rows [A, B) and the
                                        optimiser state it keeps for them (written by the server)
    trainer-<R>.pt                      trainer R's own state (written by trainer R)

On a cluster without a shared file system each host holds its own processes' files; the
same hosts load them. A checkpoint records the partitioning it was taken on and loads only
onto the same (any number of servers per machine). `CheckpointDir` keeps numbered
checkpoints in one folder (`--checkpoint_dir`), the newest few, for `--resume`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from ..files import private_files, write_atomically
from ..errors import DistGraphError, InputError
from ..kvstore.snapshot import Piece
from ..partition.layout import PartitionConfig
from ..rpc.wire import dtype_name
from .dist_embedding import DistEmbedding
from .dist_tensor import DistTensor
from .runtime import Context, all_gather, get_context

FORMAT_VERSION = 1
MANIFEST = "checkpoint.json"


class CheckpointError(InputError):
    """A checkpoint cannot be written, is incomplete, or does not fit this job."""


def _tensor(t: DistTensor | DistEmbedding) -> DistTensor:
    if isinstance(t, DistEmbedding):
        return t.weight
    if not isinstance(t, DistTensor):
        raise InputError(f"checkpoints hold DistTensors and DistEmbeddings, got {type(t).__name__}")
    return t


def _partition(ctx: Context) -> dict:
    if ctx.part_config is None:
        raise InputError("a checkpoint belongs to a partition: load one first (initialize(part_config=...))")
    cfg = PartitionConfig.load(ctx.part_config)
    return {"graph_name": cfg.graph_name, "num_parts": cfg.num_parts, "fingerprint": cfg.fingerprint()}


def _write(path: Path, write: Callable[[Any], None], mode: str = "wb") -> None:
    try:
        write_atomically(path, write, mode)
    except OSError as exc:
        raise CheckpointError(f"cannot write {path}: {exc.strerror or exc}") from None


def _collective(ctx: Context, work: Callable[[], Any]) -> list:
    """Run `work` on this trainer, then wait for every trainer; raise on all of them if any failed.
    Returns what each trainer's `work` returned (plain data), by rank."""
    try:
        result = {"ok": work()}
    except Exception as exc:  # noqa: BLE001  every trainer must reach the barrier, whatever went wrong
        result = {"error": str(exc) if isinstance(exc, DistGraphError) else f"{type(exc).__name__}: {exc}"}
    outcomes = all_gather(result)
    failed = [(r, o["error"]) for r, o in enumerate(outcomes) if "error" in o]
    if failed:
        rank, error = failed[0]
        raise CheckpointError(f"trainer {rank}: {error}" if not ctx.standalone else error)
    return [o["ok"] for o in outcomes]


def _trainer_file(path: Path, rank: int) -> Path:
    return path / f"trainer-{rank}.pt"


@private_files()  # the model and its optimiser state are the user's alone, whatever the caller's umask
def save_checkpoint(path: str | Path, tensors: Sequence[DistTensor | DistEmbedding],
                    state: dict | None = None) -> Path:
    """Save `tensors` (rows and server-side optimiser state) and this trainer's `state` (a dict
    of tensors and plain values, e.g. state_dicts) into the new folder `path`; every trainer
    calls it at the same point. Returns the absolute path."""
    ctx = get_context()
    path = Path(path).expanduser().absolute()
    handles = [_tensor(t)._handle for t in tensors]
    if len({h.name for h in handles}) != len(handles):
        raise InputError("save_checkpoint got the same tensor twice")

    def check() -> None:
        if ctx.rank == 0 and (path / MANIFEST).exists():
            raise CheckpointError(f"{path} already holds a complete checkpoint; save to a new folder")

    _collective(ctx, check)

    def write() -> dict | None:
        path.mkdir(parents=True, exist_ok=True)
        _write(_trainer_file(path, ctx.rank), lambda f: torch.save(state or {}, f))
        if ctx.rank != 0:
            return None
        return {h.name: [Piece.from_json(reply["piece"]).to_json()
                         for _, reply in ctx.client.each_server(h, lambda m: {"op": "save", "dir": str(path)})]
                for h in handles}

    pieces = _collective(ctx, write)[0]

    def publish() -> None:
        if ctx.rank != 0:
            return
        manifest = {"format_version": FORMAT_VERSION, "partition": _partition(ctx), "num_trainers": ctx.num_trainers,
                    "tensors": {h.name: {"shape": list(h.shape), "dtype": dtype_name(h.dtype), "policy": h.policy,
                                         "pieces": pieces[h.name]} for h in handles}}
        _write(path / MANIFEST, lambda f: json.dump(manifest, f, indent=1), "w")

    _collective(ctx, publish)
    return path


def read_manifest(path: Path) -> dict:
    """The manifest of a complete checkpoint (an error names what is wrong otherwise)."""
    f = path / MANIFEST
    if not f.is_file():
        why = "is incomplete (the run stopped while saving it)" if path.is_dir() else "does not exist"
        raise CheckpointError(f"checkpoint {path} {why}; nothing was loaded")
    try:
        manifest = json.loads(f.read_text())
        if manifest["format_version"] != FORMAT_VERSION:
            raise CheckpointError(f"checkpoint {path} has format {manifest['format_version']}; this distgraph "
                                  f"reads {FORMAT_VERSION}")
        manifest["partition"], manifest["tensors"], manifest["num_trainers"]  # noqa: B018  (present)
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{f} is not a distgraph checkpoint manifest ({exc})") from None
    return manifest


def _check_fits(ctx: Context, path: Path, manifest: dict, handles) -> None:
    ours, theirs = _partition(ctx), manifest["partition"]
    if ours != theirs:
        raise CheckpointError(f"checkpoint {path} was taken on partition {theirs['graph_name']!r} with "
                              f"{theirs['num_parts']} parts (fingerprint {theirs['fingerprint']}), but this job "
                              f"runs on {ours['graph_name']!r} with {ours['num_parts']} parts (fingerprint "
                              f"{ours['fingerprint']}); load it onto the partitioning it was taken on")
    if manifest["num_trainers"] != ctx.num_trainers:
        raise CheckpointError(f"checkpoint {path} holds the state of {manifest['num_trainers']} trainers but this "
                              f"job has {ctx.num_trainers}; resume with the same number of trainers")
    for h in handles:
        saved = manifest["tensors"].get(h.name)
        if saved is None:
            raise CheckpointError(f"checkpoint {path} has no tensor {h.name!r}; it holds "
                                  f"{sorted(manifest['tensors'])}")
        mine = {"shape": list(h.shape), "dtype": dtype_name(h.dtype), "policy": h.policy}
        if {k: saved[k] for k in mine} != mine:
            raise CheckpointError(f"tensor {h.name!r} is {mine} here but {({k: saved[k] for k in mine})} in "
                                  f"checkpoint {path}")


def load_checkpoint(path: str | Path, tensors: Sequence[DistTensor | DistEmbedding]) -> dict:
    """Restore `tensors` (rows and server-side optimiser state) from checkpoint `path` and
    return this trainer's saved state; every trainer calls it at the same point. Everything
    is checked before anything changes: an incomplete or foreign checkpoint loads nothing."""
    ctx = get_context()
    path = Path(path).expanduser().absolute()
    handles = [_tensor(t)._handle for t in tensors]
    loaded: dict = {}

    def pieces_of(h, manifest: dict) -> Callable[[int], list]:
        """Machine m -> the saved pieces of its rows (each piece is one server's slice of one machine)."""
        saved = [Piece.from_json(p) for p in manifest["tensors"][h.name]["pieces"]]
        return lambda m: [p.to_json() for p in saved if h.bounds[m] <= p.rows[0] and p.rows[1] <= h.bounds[m + 1]]

    def server_load(apply: bool) -> None:
        manifest = read_manifest(path)
        _check_fits(ctx, path, manifest, handles)
        for h in handles:
            mine = pieces_of(h, manifest)
            ctx.client.each_server(h, lambda m: {"op": "load", "dir": str(path), "pieces": mine(m), "apply": apply})

    def check() -> None:
        f = _trainer_file(path, ctx.rank)
        try:
            loaded.update(torch.load(f, weights_only=True))
        except FileNotFoundError:
            raise CheckpointError(f"{f} is missing: this host's part of checkpoint {path} is not here") from None
        except Exception as exc:  # noqa: BLE001  (torch raises many kinds for a damaged file)
            raise CheckpointError(f"{f} is unreadable ({type(exc).__name__}: {exc})") from None
        if ctx.rank == 0:
            server_load(apply=False)

    _collective(ctx, check)
    _collective(ctx, lambda: server_load(apply=True) if ctx.rank == 0 else None)
    return loaded


def remove_checkpoint(path: str | Path, tensors: Sequence[DistTensor | DistEmbedding]) -> None:
    """Delete a checkpoint on every host (its manifest first, so it is never seen half-removed);
    every trainer calls it at the same point."""
    ctx = get_context()
    path = Path(path).expanduser().absolute()
    handles = [_tensor(t)._handle for t in tensors]

    def unpublish() -> None:
        if ctx.rank == 0:
            (path / MANIFEST).unlink(missing_ok=True)

    _collective(ctx, unpublish)

    def remove() -> None:
        _trainer_file(path, ctx.rank).unlink(missing_ok=True)
        if ctx.rank == 0:
            for h in handles:
                ctx.client.each_server(h, lambda m: {"op": "drop", "dir": str(path)})

    _collective(ctx, remove)
    # the folder on each host (with what a trainer kept there of its machine's own), by the
    # machine's first trainer
    if ctx.local_rank == 0 and path.is_dir() and not any(path.glob("trainer-*.pt")):
        shutil.rmtree(path, ignore_errors=True)


def step_path(root: Path, step: int) -> Path:
    """Where checkpoint `step` of a run lives in its checkpoint folder."""
    return root / f"step-{step:010d}"


def complete_steps(root: Path) -> list[int]:
    """Steps of the complete checkpoints in a checkpoint folder, oldest first."""
    return sorted(int(p.name[5:]) for p in root.glob("step-*") if p.name[5:].isdigit() and (p / MANIFEST).is_file())


class CheckpointDir:
    """Numbered checkpoints `step-<N>` in one folder, of which the newest `keep` are kept."""

    def __init__(self, root: str | Path, keep: int = 2):
        if keep < 1:
            raise InputError(f"keep must be at least 1, got {keep}")
        self.root = Path(root).expanduser().absolute()
        self.keep = keep

    def path(self, step: int) -> Path:
        return step_path(self.root, step)

    def _complete_steps(self) -> list[int]:
        return complete_steps(self.root)

    def save(self, step: int, tensors: Sequence[DistTensor | DistEmbedding], state: dict | None = None) -> Path:
        """Save checkpoint `step`, then remove the complete ones beyond the newest `keep`."""
        ctx = get_context()
        saved = save_checkpoint(self.path(step), tensors, state)
        old = all_gather(self._complete_steps()[:-self.keep] if ctx.rank == 0 else None)[0]
        for s in old:
            remove_checkpoint(self.path(s), tensors)
        return saved

    def latest(self) -> int | None:
        """The newest complete checkpoint's step (trainer 0's view, shared with every trainer)."""
        ctx = get_context()
        steps = self._complete_steps() if ctx.rank == 0 else None
        steps = all_gather(steps)[0]
        return steps[-1] if steps else None

    def load_latest(self, tensors: Sequence[DistTensor | DistEmbedding]) -> tuple[int, dict] | None:
        """(step, this trainer's state) of the newest complete checkpoint, restored; None if there is none."""
        step = self.latest()
        if step is None:
            return None
        return step, load_checkpoint(self.path(step), tensors)
