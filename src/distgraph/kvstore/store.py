"""`KVStore`: one machine's rows of every named tensor, as seen by one process.

The *creator* (the first server of a machine, or the only process in standalone mode)
allocates tensors, fills them and publishes them; every other process of the machine
attaches on first use. Pull and push validate names, dtypes, shapes and row ranges, so a
bad request becomes an `InputError` and never corrupts or crashes the store.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import torch

from ..errors import InputError
from . import initializers, kernels, optimizers, snapshot
from .disk import attach_file, npy_offset, read_only_error
from .routing import server_slices
from .shm import SHM_DIR, SegmentNamer, TensorMeta, attach_segment, create_segment, publish, read_manifest, unlink

# policy string -> row bounds of every machine ([0, ..., total])
PolicyResolver = Callable[[str], Sequence[int]]


class UnknownTensor(InputError):
    """The named tensor does not exist (or was deleted and re-created since it was looked up)."""


@dataclass
class Shard:
    """This machine's rows of one tensor and the optimiser state of this server's slice."""

    meta: TensorMeta
    data: torch.Tensor
    first_row: int  # global row of data[0]
    own: tuple[int, int]  # local rows whose optimiser state this process keeps
    states: dict = field(default_factory=dict)


class KVStore:
    """Named tensors of machine `machine_id`, in shared memory (`namer`) or private memory."""

    def __init__(self, machine_id: int, server_id: int, num_servers: int, resolve_policy: PolicyResolver,
                 namer: SegmentNamer | None, creator: bool):
        self.machine_id, self.server_id, self.num_servers = machine_id, server_id, num_servers
        self.resolve_policy, self.namer, self.creator = resolve_policy, namer, creator
        self._shards: dict[str, Shard] = {}

    # ----------------------------------------------------------------- creation
    def _machine_rows(self, policy: str, shape: tuple[int, ...]) -> tuple[int, int]:
        bounds = self.resolve_policy(policy)
        if not shape or shape[0] != bounds[-1]:
            raise InputError(f"a tensor with policy {policy!r} must have {bounds[-1]} rows, got shape {list(shape)}")
        return int(bounds[self.machine_id]), int(bounds[self.machine_id + 1])

    def _register(self, meta: TensorMeta, data: torch.Tensor, first_row: int) -> Shard:
        own = server_slices(meta.rows, self.num_servers)[self.server_id:self.server_id + 2]
        shard = Shard(meta, data, first_row, (own[0], own[1]))
        self._shards[meta.name] = shard
        return shard

    def create(self, name: str, shape: tuple[int, ...], dtype: torch.dtype, policy: str,
               init: dict | None = None, data: torch.Tensor | None = None,
               file: Path | None = None) -> tuple[TensorMeta, bool]:
        """Create `name` (filled from `init` or this machine's rows `data`, or served read-only
        from the .npy `file` of this machine's rows), or return the existing one after checking
        it matches; the flag says whether this call created it."""
        existing = self.meta(name)
        if existing is not None:
            if (existing.shape, existing.dtype, existing.policy) != (tuple(shape), dtype, policy):
                raise InputError(f"tensor {name!r} already exists with shape {list(existing.shape)}, dtype "
                                 f"{existing.dtype}, policy {existing.policy!r}; requested {list(shape)}, {dtype}, "
                                 f"{policy!r}: use another name or the same definition")
            return existing, False
        if not self.creator:
            raise UnknownTensor(f"tensor {name!r} does not exist on machine {self.machine_id}")
        lo, hi = self._machine_rows(policy, tuple(shape))
        local_shape = (hi - lo, *shape[1:])
        if data is not None and (tuple(data.shape) != local_shape or data.dtype != dtype):
            raise InputError(f"initial rows of {name!r} on machine {self.machine_id} must be {dtype} of shape "
                             f"{list(local_shape)}, got {data.dtype} {list(data.shape)}")
        uid = secrets.token_hex(4)
        if file is not None:
            file = Path(file).absolute()
            meta = TensorMeta(name, tuple(shape), dtype, policy, hi - lo, uid, "", str(file),
                              npy_offset(file, dtype, local_shape))
            values = attach_file(meta)
        else:
            segment = self.namer.segment(name, uid) if self.namer else ""
            meta = TensorMeta(name, tuple(shape), dtype, policy, hi - lo, uid, segment)
            values = create_segment(segment, dtype, local_shape) if self.namer else torch.empty(local_shape, dtype=dtype)
            if data is not None:
                values.copy_(data)
            else:
                initializers.fill(values, lo, initializers.check_spec(init or {"kind": "zeros"}))
        if self.namer:
            publish(self.namer.manifest(name), meta)
        self._register(meta, values, lo)
        return meta, True

    # ------------------------------------------------------------------- lookup
    def meta(self, name: str) -> TensorMeta | None:
        """The tensor's description, or None if it does not exist on this machine."""
        if self.creator or self.namer is None:
            shard = self._shards.get(name)
            return shard.meta if shard else None
        return read_manifest(self.namer.manifest(name))

    def shard(self, name: str, uid: str | None = None) -> Shard:
        """The tensor's local rows; non-creators attach (or re-attach after re-creation) here."""
        shard = self._shards.get(name)
        if shard is None or (uid is not None and shard.meta.uid != uid and not self.creator):
            meta = None if self.creator or self.namer is None else read_manifest(self.namer.manifest(name))
            if meta is None:
                raise UnknownTensor(f"tensor {name!r} does not exist on machine {self.machine_id}; "
                                    f"create it first (DistTensor with this name)")
            bounds = self.resolve_policy(meta.policy)
            rows = attach_file(meta) if meta.on_disk else attach_segment(meta)
            shard = self._register(meta, rows, int(bounds[self.machine_id]))
        if uid is not None and shard.meta.uid != uid:
            raise UnknownTensor(f"tensor {name!r} was deleted and re-created since it was looked up; look it up again")
        return shard

    def metas(self) -> list[TensorMeta]:
        return [s.meta for s in self._shards.values()]

    def witness(self, shard: Shard) -> Path | None:
        """The file whose presence shows that `shard` is still its machine's tensor: its segment,
        or for rows served from disk its manifest (gone when the tensor is deleted or the servers
        exit; a re-creation under the same name goes unseen); None in private memory."""
        if shard.meta.segment:
            return SHM_DIR / shard.meta.segment
        return self.namer.manifest(shard.meta.name) if shard.meta.on_disk and self.namer else None

    def delete(self, name: str) -> bool:
        """Forget `name` and free its memory; True if it existed."""
        shard = self._shards.pop(name, None)
        if shard is not None and self.creator and self.namer:
            unlink(self.namer.manifest(name))
            if shard.meta.segment:
                unlink(self.namer.manifest(name).with_name(shard.meta.segment))
        return shard is not None

    def close(self) -> None:
        """Forget every tensor; the creator removes every shared-memory file of its machine."""
        self._shards.clear()
        self.remove_files()

    def remove_files(self) -> None:
        """The creator's clean-up of its machine's shared memory (safe from any thread: mapped
        rows stay valid until unmapped)."""
        if self.creator and self.namer:
            for f in self.namer.all_files():
                unlink(f)

    # ------------------------------------------------------------- pull / push
    def _local_rows(self, shard: Shard, ids: torch.Tensor) -> torch.Tensor:
        if ids.dtype != torch.int64 or ids.dim() != 1:
            raise InputError(f"ids must be a 1-D int64 array, got {ids.dtype} of shape {list(ids.shape)}")
        local = ids - shard.first_row
        if local.numel():
            mn, mx = torch.aminmax(local)
            if int(mn) < 0 or int(mx) >= shard.meta.rows:
                bad = int(mn) if int(mn) < 0 else int(mx)
                raise InputError(f"id {bad + shard.first_row} of tensor {shard.meta.name!r} is not on machine "
                                 f"{self.machine_id}, which holds rows [{shard.first_row}, "
                                 f"{shard.first_row + shard.meta.rows})")
        return local

    def pull(self, name: str, uid: str | None, ids: torch.Tensor) -> torch.Tensor:
        """Rows `ids` (global row ids owned by this machine), in order, duplicates kept."""
        shard = self.shard(name, uid)
        return kernels.gather_rows(shard.data, self._local_rows(shard, ids))

    def push(self, name: str, uid: str | None, ids: torch.Tensor, values: torch.Tensor,
             optimizer: dict | None = None) -> None:
        """Assign rows, or apply a sparse optimiser step with `values` as their gradients."""
        shard = self.shard(name, uid)
        if shard.meta.on_disk:
            raise read_only_error(name)
        local = self._local_rows(shard, ids)
        expected = (ids.numel(), *shard.meta.shape[1:])
        if tuple(values.shape) != expected or values.dtype != shard.meta.dtype:
            raise InputError(f"values for {ids.numel()} rows of {name!r} must be {shard.meta.dtype} of shape "
                             f"{list(expected)}, got {values.dtype} {list(values.shape)}")
        if optimizer is None:
            shard.data.index_copy_(0, local, values)
            return
        spec = optimizers.check_spec(optimizer)
        if shard.meta.dtype not in optimizers.DTYPES:
            raise InputError(f"tensor {name!r} has dtype {shard.meta.dtype}; sparse optimizers need floating point "
                             f"rows of {' or '.join(map(str, optimizers.DTYPES))}")
        if spec["kind"] in optimizers.SHARED_STATE:
            local, values = _coalesce(local, values)
            kernels.row_adagrad(shard.data, self.row_state(shard, spec["state"]), local, values, spec["lr"])
            return
        lo, hi = shard.own
        if local.numel() and (int(local.min()) < lo or int(local.max()) >= hi):
            raise InputError(f"optimizer updates of {name!r} rows outside [{lo + shard.first_row}, "
                             f"{hi + shard.first_row}) belong to another server of machine {self.machine_id}")
        local, values = _coalesce(local, values)
        state = shard.states.get(spec["kind"])
        if state is None:
            state = shard.states[spec["kind"]] = optimizers.OPTIMIZERS[spec["kind"]](
                hi - lo, tuple(shard.meta.shape[1:]), shard.meta.dtype)
        state.step(shard.data, local, local - lo, values, spec)


    def row_state(self, shard: Shard, state: str) -> torch.Tensor:
        """The rows of tensor `state` that hold one optimiser value per row of `shard`, checked."""
        s = self.shard(state)
        if (s.meta.shape, s.meta.dtype, s.meta.policy) != ((shard.meta.shape[0],), torch.float32, shard.meta.policy):
            raise InputError(f"optimizer state {state!r} must be a float32 vector with the rows and policy of "
                             f"{shard.meta.name!r}, got {s.meta.dtype} {list(s.meta.shape)} {s.meta.policy!r}")
        return s.data

    # ------------------------------------------------------------ checkpoints
    def save_piece(self, name: str, uid: str | None, directory: Path) -> snapshot.Piece:
        """Write this server's slice of `name` (rows and optimiser state) into checkpoint `directory`."""
        shard = self.shard(name, uid)
        return snapshot.save_piece(name, shard.data, shard.states, shard.first_row, shard.own, self.machine_id,
                                   directory)

    def load_pieces(self, name: str, uid: str | None, directory: Path, pieces: list[snapshot.Piece],
                    apply: bool) -> None:
        """Check (and with `apply`, restore) this server's slice of `name` from checkpoint pieces."""
        shard = self.shard(name, uid)
        if shard.meta.on_disk:
            raise read_only_error(name)
        snapshot.load_pieces(shard.data, shard.states, shard.first_row, shard.own, directory, pieces, apply)

    def drop_pieces(self, name: str, directory: Path) -> None:
        """Remove this machine's pieces of `name` from an old checkpoint."""
        snapshot.drop_pieces(name, self.machine_id, directory)


def _coalesce(rows: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum the values of repeated rows (clients send unique rows; this keeps others correct)."""
    if rows.numel() < 2 or bool((rows[1:] > rows[:-1]).all()):
        return rows, values
    uniq, inverse = torch.unique(rows, sorted=True, return_inverse=True)
    summed = torch.zeros((uniq.numel(), *values.shape[1:]), dtype=values.dtype)
    return uniq, summed.index_add_(0, inverse, values)
