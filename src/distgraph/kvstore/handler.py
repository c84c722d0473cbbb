"""Turns a decoded request (header + arrays) into a store call and a reply.

Every field is checked before use; anything wrong becomes an error reply naming the field,
and the server goes on serving. Used by the network server and, unchanged, by the
in-process channel of standalone mode.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

import torch

from ..errors import DistGraphError, InputError
from ..rpc.wire import MANY, MERGE_PARTS, WireError, dtype_name, parse_dtype, parse_shape
from . import snapshot
from .shm import TensorMeta
from .store import KVStore

MAX_NAME = 256


def field(header: dict, key: str, kind: type | tuple, optional: bool = False) -> Any:
    """Header field `key`, checked to be of `kind` (bools are not ints); WireError otherwise."""
    if key not in header:
        if optional:
            return None
        raise WireError(f"request lacks field {key!r}")
    value = header[key]
    if value is None and optional:
        return None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise WireError(f"field {key!r} has the wrong type ({type(value).__name__})")
    return value


def int_list(header: dict, key: str, optional: bool = False) -> list[int] | None:
    """Header field `key`: a list of non-negative ints (not bools); WireError otherwise."""
    values = field(header, key, list, optional)
    if values is not None and not all(type(x) is int and x >= 0 for x in values):
        raise WireError(f"field {key!r} must list non-negative integers, got {values!r}")
    return values


def _name(header: dict) -> str:
    name = field(header, "name", str)
    if not name or len(name) > MAX_NAME:
        raise WireError(f"tensor names must have 1 to {MAX_NAME} characters")
    return name


def _directory(header: dict) -> Path:
    """A checkpoint directory: an absolute path (servers and clients may run in other folders)."""
    d = field(header, "dir", str)
    if not os.path.isabs(d) or "\0" in d or len(d) > 4096:
        raise WireError(f"checkpoint directory must be an absolute path, got {d!r}")
    return Path(d)


def expect_arrays(arrays: list[torch.Tensor], count: int, op: str) -> list[torch.Tensor]:
    """The request's arrays, checked to be exactly `count` of them."""
    if len(arrays) != count:
        raise WireError(f"{op!r} takes {count} array(s), got {len(arrays)}")
    return arrays


def meta_fields(meta: TensorMeta) -> dict:
    return {"name": meta.name, "shape": list(meta.shape), "dtype": dtype_name(meta.dtype), "policy": meta.policy,
            "uid": meta.uid, "on_disk": meta.on_disk}


class RequestHandler:
    """Data operations on a `KVStore`: create, lookup, pull, push, delete, list, ping, and the
    checkpoint operations save and load (of this server's slice)."""

    def __init__(self, store: KVStore):
        self.store = store
        self._ops: dict[str, Callable[[dict, list], tuple[dict, list]]] = {
            "create": self._create, "lookup": self._lookup, "pull": self._pull, "push": self._push,
            "delete": self._delete, "list": self._list, "ping": self._ping,
            "save": self._save, "load": self._load, "drop": self._drop, MANY: self._many,
        }

    def add_op(self, op: str, fn: Callable[[dict, list], tuple[dict, list]]) -> None:
        """Serve another operation (e.g. graph sampling); `fn` validates its own fields."""
        if op in self._ops:
            raise ValueError(f"operation {op!r} is already served")
        self._ops[op] = fn

    def handles(self, op: Any) -> bool:
        return isinstance(op, str) and op in self._ops

    def __call__(self, header: dict, arrays: list[torch.Tensor]) -> tuple[dict, list[torch.Tensor]]:
        """The reply to one request: {"ok": True, ...} with arrays, or {"ok": False, "error": ...}."""
        op = header.get("op")
        try:
            if not self.handles(op):
                raise WireError(f"unknown op {op!r}")
            reply, out = self._ops[op](header, arrays)
            return {"ok": True, **reply}, out
        except InputError as exc:
            return {"ok": False, "kind": "input", "error": str(exc)}, []
        except DistGraphError as exc:
            return {"ok": False, "kind": "wire" if isinstance(exc, WireError) else "other", "error": str(exc)}, []
        except Exception as exc:  # a bug must not take the server down; report it to both sides
            traceback.print_exc(file=sys.stderr)
            error = f"internal error handling {op!r}: {type(exc).__name__}: {exc}"
            return {"ok": False, "kind": "internal", "error": error}, []

    def _create(self, header: dict, arrays: list) -> tuple[dict, list]:
        shape = parse_shape(field(header, "shape", list))
        dtype = parse_dtype(field(header, "dtype", str))
        policy = field(header, "policy", str)
        init = field(header, "init", dict, optional=True)
        if len(arrays) > 1:
            raise WireError(f"'create' takes at most one array (this machine's initial rows), got {len(arrays)}")
        data = arrays[0] if arrays else None
        meta, created = self.store.create(_name(header), shape, dtype, policy, init, data)
        return {**meta_fields(meta), "created": created}, []

    def _lookup(self, header: dict, arrays: list) -> tuple[dict, list]:
        expect_arrays(arrays, 0, "lookup")
        meta = self.store.meta(_name(header))
        return ({**meta_fields(meta), "found": True} if meta else {"found": False}), []

    def _many(self, header: dict, arrays: list) -> tuple[dict, list]:
        """Several requests in one message, handled in order, each answered on its own."""
        parts, counts = field(header, "parts", list), int_list(header, "counts")
        if not 0 < len(parts) <= MERGE_PARTS or len(counts) != len(parts):
            raise WireError(f"'{MANY}' needs 1 to {MERGE_PARTS} parts and a count of arrays for each")
        if sum(counts) != len(arrays):
            raise WireError(f"'{MANY}' counts {counts!r} do not add up to its {len(arrays)} arrays")
        if not all(isinstance(p, dict) and p.get("op") != MANY for p in parts):
            raise WireError(f"'{MANY}' parts must be requests (maps), not '{MANY}' again")
        replies, sizes, out, start = [], [], [], 0
        for part, n in zip(parts, counts):
            reply, got = self(part, arrays[start:start + n])
            start += n
            replies.append(reply)
            sizes.append(len(got))
            out.extend(got)
        return {"parts": replies, "counts": sizes}, out

    def _pull(self, header: dict, arrays: list) -> tuple[dict, list]:
        (ids,) = expect_arrays(arrays, 1, "pull")
        return {}, [self.store.pull(_name(header), field(header, "uid", str, optional=True), ids)]

    def _push(self, header: dict, arrays: list) -> tuple[dict, list]:
        ids, values = expect_arrays(arrays, 2, "push")
        optimizer = field(header, "optimizer", dict, optional=True)
        self.store.push(_name(header), field(header, "uid", str, optional=True), ids, values, optimizer)
        return {}, []

    def _delete(self, header: dict, arrays: list) -> tuple[dict, list]:
        expect_arrays(arrays, 0, "delete")
        return {"deleted": self.store.delete(_name(header))}, []

    def _list(self, header: dict, arrays: list) -> tuple[dict, list]:
        expect_arrays(arrays, 0, "list")
        return {"tensors": [meta_fields(m) for m in self.store.metas()]}, []

    def _save(self, header: dict, arrays: list) -> tuple[dict, list]:
        expect_arrays(arrays, 0, "save")
        piece = self.store.save_piece(_name(header), field(header, "uid", str, optional=True), _directory(header))
        return {"piece": piece.to_json()}, []

    def _load(self, header: dict, arrays: list) -> tuple[dict, list]:
        expect_arrays(arrays, 0, "load")
        pieces = [snapshot.Piece.from_json(p) for p in field(header, "pieces", list)]
        self.store.load_pieces(_name(header), field(header, "uid", str, optional=True), _directory(header), pieces,
                               field(header, "apply", bool))
        return {}, []

    def _drop(self, header: dict, arrays: list) -> tuple[dict, list]:
        expect_arrays(arrays, 0, "drop")
        self.store.drop_pieces(_name(header), _directory(header))
        return {}, []

    def _ping(self, header: dict, arrays: list) -> tuple[dict, list]:
        return {"machine_id": self.store.machine_id, "server_id": self.store.server_id}, []
