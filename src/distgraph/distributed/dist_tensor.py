"""`DistTensor`: a tensor partitioned over the machines, indexed like a local one."""

from __future__ import annotations

import itertools
from typing import Callable

import numpy as np
import torch

from ..errors import DistGraphError, InputError
from ..ids import as_id_tensor
from ..kvstore.client import KVClient, PendingPull, TensorHandle
from ..partition import RangePartitionBook
from ..rpc.wire import dtype_name, parse_dtype
from .initializers import Initializer
from .policy import PartitionPolicy, edge_policy_str, node_policy_str
from .runtime import Context, get_context, is_initialized

_ANONYMOUS = itertools.count()


def _book(ctx: Context, name: str) -> RangePartitionBook:
    if ctx.book is None:
        raise InputError(f"DistTensor {name!r} needs a partition: pass part_config to distgraph.initialize()")
    return ctx.book


def _default_policy(ctx: Context, shape: tuple[int, ...], name: str) -> PartitionPolicy:
    """DGL's rule: the node or edge type whose count equals the number of rows, if unique."""
    book = _book(ctx, name)
    candidates = [node_policy_str(t) for t in book.ntypes if book.num_nodes(t) == shape[0]]
    candidates += [edge_policy_str(c) for c in book.canonical_etypes if book.num_edges(c) == shape[0]]
    if len(candidates) != 1:
        reason = f"matches {candidates}" if candidates else "matches no node or edge type"
        raise InputError(f"DistTensor {name!r} with {shape[0]} rows {reason}; pass part_policy explicitly")
    return PartitionPolicy(candidates[0], book)


def _ids(idx, num_rows: int) -> torch.Tensor:
    if isinstance(idx, slice):
        return torch.arange(*idx.indices(num_rows))
    return as_id_tensor(idx, "DistTensor ids")


class DistTensor:
    """Rows live on the machines that own them (by `part_policy`); `t[ids]` and `t[ids] = v`
    read and write them wherever they are, rows of this machine straight from shared memory.

    Creating a DistTensor with an existing name attaches to it (shape and dtype must match).
    A non-persistent tensor is deleted when the handle that created it is garbage collected.
    DGL's `is_gdata` and `attach` are accepted and change nothing: a tensor of one's own never
    joins `g.ndata`, and names are those given (creation is not a collective operation, so
    trainers need not create tensors in lockstep).

    As DGL's, a DistTensor pickles as its name, shape, dtype and partition policy, never its
    rows (`th.save(t, f)` writes a reference): unpickled in a job, it is the same tensor,
    looked up by name on first use; outside one, using it is a clear error."""

    def __init__(self, shape, dtype: torch.dtype, name: str | None = None,
                 init_func: Initializer | Callable | None = None, part_policy: PartitionPolicy | str | None = None,
                 persistent: bool = False, is_gdata: bool = True, attach: bool = True):
        ctx = get_context()
        shape = tuple(int(s) for s in shape)
        if not shape or min(shape) < 0:
            raise InputError(f"DistTensor shape must be non-empty and non-negative, got {list(shape)}")
        if name is None:
            name = f"anonymous-{next(_ANONYMOUS)}"
        if part_policy is None:
            part_policy = _default_policy(ctx, shape, name)
        elif isinstance(part_policy, str):
            part_policy = PartitionPolicy(part_policy, _book(ctx, name))
        init = init_func.spec() if isinstance(init_func, Initializer) else init_func
        self._kv = ctx.client
        self._policy = part_policy
        self._h, self._owner = ctx.client.create(name, shape, dtype, part_policy.policy_str, init)
        self._spec = {"name": name, "shape": shape, "dtype": dtype, "part_policy": part_policy.policy_str}
        self._persistent = persistent

    def __getstate__(self) -> dict:
        return dict(self._spec)

    def describe(self) -> dict:
        """What names this tensor, as plain data (JSON): another process of the job gets a
        handle to it with `DistTensor.described(...)`."""
        return {**self._spec, "shape": list(self.shape), "dtype": dtype_name(self.dtype)}

    @classmethod
    def described(cls, description: dict) -> "DistTensor":
        """A handle to the job's tensor that `describe()` gave, looked up by name on first use
        (as an unpickled one: it never deletes the tensor)."""
        out = cls.__new__(cls)
        out.__setstate__({**description, "dtype": parse_dtype(description["dtype"])})
        return out

    def __setstate__(self, state: dict) -> None:
        self._spec = {"name": str(state["name"]), "shape": tuple(int(s) for s in state["shape"]),
                      "dtype": state["dtype"], "part_policy": str(state["part_policy"])}
        self._kv = self._policy = self._h = None
        self._owner, self._persistent = False, True  # a reference: it never deletes the tensor

    def _attach(self) -> None:
        """Look an unpickled tensor up by name in this process's job (once)."""
        name, shape, dtype, policy = (self._spec[k] for k in ("name", "shape", "dtype", "part_policy"))
        if not is_initialized():
            raise DistGraphError(f"DistTensor {name!r} was unpickled outside a distgraph job: a pickled DistTensor "
                                 f"names a tensor of a running job, not its rows; use it after "
                                 f"distgraph.initialize() in that job, or save its rows (t[0:len(t)]) instead")
        ctx = get_context()
        handle = ctx.client.lookup(name)
        if handle is None:
            raise DistGraphError(f"DistTensor {name!r} was unpickled in a job that has no tensor of that name; it "
                                 f"exists only in the job that created it (and only while a handle or "
                                 f"persistent=True keeps it)")
        if (tuple(handle.shape), handle.dtype, handle.policy) != (shape, dtype, policy):
            raise InputError(f"DistTensor {name!r} was pickled as {list(shape)} {dtype} ({policy}) but this job's "
                             f"tensor of that name is {list(handle.shape)} {handle.dtype} ({handle.policy})")
        self._kv, self._policy, self._h = ctx.client, PartitionPolicy(policy, _book(ctx, name)), handle

    @property
    def _handle(self) -> TensorHandle:
        if self._h is None:
            self._attach()
        return self._h

    @property
    def _client(self) -> KVClient:
        if self._kv is None:
            self._attach()
        return self._kv

    @property
    def shape(self) -> tuple[int, ...]:
        return self._spec["shape"]

    @property
    def dtype(self) -> torch.dtype:
        return self._spec["dtype"]

    @property
    def name(self) -> str:
        return self._spec["name"]

    tensor_name = name  # DGL's name for the name given at creation

    @property
    def part_policy(self) -> PartitionPolicy:
        if self._policy is None:
            self._attach()
        return self._policy

    @property
    def local_partition(self) -> torch.Tensor:
        """This machine's rows (in shared memory: writes are visible to every process). Rows
        served from the partition files (`--features_on_disk`) are a read-only mapping:
        writing to them in place kills the process (`t[ids] = v` raises `InputError`)."""
        return self._handle.local

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx) -> torch.Tensor:
        return self._client.pull(self._handle, _ids(idx, len(self)))

    def __setitem__(self, idx, values) -> None:
        ids = _ids(idx, len(self))
        values = torch.as_tensor(np.asarray(values) if not isinstance(values, torch.Tensor) else values)
        if values.dtype != self.dtype and not torch.can_cast(values.dtype, self.dtype):
            raise InputError(f"cannot store {values.dtype} values in DistTensor {self.name!r} of dtype {self.dtype}")
        if tuple(values.shape) == self.shape[1:]:
            values = values.expand(ids.numel(), *self.shape[1:])
        self._client.push(self._handle, ids, values)

    def push_rows(self, ids: torch.Tensor, values: torch.Tensor, optimizer: dict | None = None) -> None:
        """Assign rows, or (with an optimiser spec) send them as gradients to the owners' optimiser."""
        self._client.push(self._handle, as_id_tensor(ids, "DistTensor ids"), values, optimizer)

    def __repr__(self) -> str:
        return (f"DistTensor(shape={list(self.shape)}, dtype={self.dtype}, name={self.name!r}, "
                f"policy={self._spec['part_policy']!r})")

    def __del__(self):
        if getattr(self, "_owner", False) and not self._persistent:
            self._kv.schedule_delete(self.name)


def start_pull(wanted: list[tuple[DistTensor, torch.Tensor]]) -> PendingPull:
    """Ask for `t[ids]` of each (t, ids), tensors of one runtime, in one round trip to the
    servers; `.result()` gives the rows (those in shared memory read at that moment)."""
    if not wanted:
        raise InputError("start_pull needs at least one (DistTensor, ids) pair")
    return wanted[0][0]._client.start_pull([(t._handle, _ids(ids, len(t))) for t, ids in wanted])
