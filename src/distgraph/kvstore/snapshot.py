"""Checkpoint pieces: what one server writes of a tensor, and reads back.

A server keeps the optimiser state of a slice of its machine's rows. Saving writes that
slice's rows and state as `.npy` files under `<checkpoint>/<tensor key>/`, one piece per
server. Loading reads whichever pieces overlap the loading server's slice, so a checkpoint
loads onto a different number of servers per machine; rows of a piece without some
optimiser's state get that optimiser's initial (zero) state, which is what they had. Every
file is checked (present, size, shape, dtype) before any row or state is changed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..cluster.shm_files import file_key
from ..errors import InputError
from ..rpc.wire import WireError
from .optimizers import OPTIMIZERS

DATA = "data"
_FIELD = re.compile(r"^(data|[a-z]+\.[a-z]+)$")
_FILE = re.compile(r"^[A-Za-z0-9_.-]+/m\d+\.r\d+-\d+\.[a-z.]+\.npy$")


class CheckpointError(InputError):
    """A checkpoint piece is missing, damaged, cannot be written, or does not fit the tensor."""


@dataclass(frozen=True)
class Piece:
    """One server's part of a saved tensor: global rows [start, end) and a file per field
    (`data`, and `<optimizer>.<state>` such as `adagrad.sum`), as (path in the checkpoint, bytes)."""

    rows: tuple[int, int]
    files: dict[str, tuple[str, int]]

    def to_json(self) -> dict:
        return {"rows": list(self.rows), "files": {k: list(v) for k, v in self.files.items()}}

    @classmethod
    def from_json(cls, d) -> "Piece":
        """A piece as a peer or a checkpoint file describes it, every field checked."""
        try:
            (a, b), files = d["rows"], d["files"]
            ok = all(type(x) is int for x in (a, b)) and 0 <= a <= b and isinstance(files, dict) and DATA in files
            parsed = {}
            for f, (path, size) in files.items():
                ok &= bool(isinstance(f, str) and _FIELD.match(f) and isinstance(path, str) and _FILE.match(path)
                           and type(size) is int and size >= 0)
                parsed[f] = (path, size)
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok:
            raise WireError(f"malformed checkpoint piece {d!r}")
        return cls((a, b), parsed)


def _numpy(t: torch.Tensor) -> np.ndarray:
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()


def _write(path: Path, t: torch.Tensor) -> int:
    """Write one array (through a temporary file and a rename); returns its size in bytes."""
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            np.save(f, _numpy(t.contiguous()), allow_pickle=False)
        os.replace(tmp, path)
        return path.stat().st_size
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CheckpointError(f"cannot write checkpoint file {path}: {exc.strerror or exc}") from None


def save_piece(name: str, data: torch.Tensor, states: dict, first_row: int, own: tuple[int, int],
               machine_id: int, directory: Path) -> Piece:
    """Write rows `own` (local) of `data` and the optimiser `states` of that slice."""
    lo, hi = own
    rows = (first_row + lo, first_row + hi)
    key = file_key(name)
    fields = {DATA: data[lo:hi]}
    for kind, state in states.items():
        fields.update({f"{kind}.{f}": getattr(state, f) for f in state.FIELDS})
    files = {}
    for field, t in fields.items():
        rel = f"{key}/m{machine_id}.r{rows[0]}-{rows[1]}.{field}.npy"
        files[field] = (rel, _write(directory / rel, t))
    return Piece(rows, files)


def _open(directory: Path, piece: Piece, field: str, like: torch.Tensor) -> np.ndarray:
    """A piece's file, memory-mapped, after checking it against the piece and the tensor."""
    rel, size = piece.files[field]
    path = directory / rel
    try:
        if path.stat().st_size != size:
            raise CheckpointError(f"checkpoint file {path} has {path.stat().st_size} bytes, the checkpoint "
                                  f"recorded {size}: it is damaged or from another checkpoint")
        a = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint file {path} is missing; this host's part of the checkpoint was "
                              f"not copied or was removed") from None
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"checkpoint file {path} is unreadable ({exc})") from None
    want = (piece.rows[1] - piece.rows[0], *like.shape[1:])
    if a.shape != want or a.dtype != _numpy(like[:0]).dtype:
        raise CheckpointError(f"checkpoint file {path} holds {a.dtype} {list(a.shape)}, expected "
                              f"{_numpy(like[:0]).dtype} {list(want)}")
    return a


def load_pieces(data: torch.Tensor, states: dict, first_row: int, own: tuple[int, int],
                directory: Path, pieces: list[Piece], apply: bool) -> None:
    """Check the pieces covering rows `own` (local) of `data`; with `apply`, read them into
    `data` and replace `states` (a dict of optimiser objects) with the saved state."""
    lo, hi = first_row + own[0], first_row + own[1]
    cover = sorted((p for p in pieces if p.rows[0] < hi and p.rows[1] > lo or p.rows == (lo, hi)),
                   key=lambda p: p.rows)
    at = lo
    for p in cover:
        if p.rows[0] > at:
            break
        at = max(at, p.rows[1])
    if at < hi:
        raise CheckpointError(f"the checkpoint's pieces do not cover rows [{lo}, {hi}) (only up to {at})")
    kinds = sorted({f.split(".")[0] for p in cover for f in p.files if f != DATA})
    unknown = [k for k in kinds if k not in OPTIMIZERS]
    if unknown:
        raise CheckpointError(f"the checkpoint holds state of unknown optimizers {unknown}")
    new_states = {k: OPTIMIZERS[k](hi - lo, tuple(data.shape[1:]), data.dtype) for k in kinds}
    new_data = torch.empty((hi - lo, *data.shape[1:]), dtype=data.dtype)
    targets = {DATA: new_data, **{f"{k}.{f}": getattr(s, f) for k, s in new_states.items() for f in s.FIELDS}}
    copies = []
    for p in cover:
        a, b = max(p.rows[0], lo), min(p.rows[1], hi)
        for field, target in targets.items():
            if field in p.files:
                array = _open(directory, p, field, target)
                copies.append((target, a - lo, b - lo, array, a - p.rows[0]))
            elif field == DATA:
                raise CheckpointError(f"a checkpoint piece of rows {list(p.rows)} has no data file")
    if not apply:
        return
    for target, t0, t1, array, s0 in copies:
        chunk = torch.from_numpy(np.array(array[s0:s0 + t1 - t0]))
        target[t0:t1] = chunk.view(target.dtype) if target.dtype == torch.bfloat16 else chunk
    data[own[0]:own[1]] = new_data
    states.clear()
    states.update(new_states)


def drop_pieces(name: str, machine_id: int, directory: Path) -> None:
    """Remove machine `machine_id`'s pieces of `name` from checkpoint `directory` (an old
    checkpoint being pruned), and the tensor's folder once it is empty."""
    folder = directory / file_key(name)
    for f in folder.glob(f"m{machine_id}.r*.npy"):
        f.unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:  # other machines' pieces are still there, or it is gone already
        pass
