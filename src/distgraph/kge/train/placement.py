"""The tables as a trainer's steps see them on its device: the rows a batch trains gathered
there, and each gradient applied where its rows live.

- Rows of the runtime's tables (`KGETables`, CPU shared memory and other machines' servers)
  are pulled, then moved to the device; their gradients come back to the CPU, where the
  row-wise Adagrad applies them: DGL-KE's `--mix_cpu_gpu`, and the only place of rows that
  several processes train.
- A held table is a copy on the device, with its Adagrad state, that this process alone
  trains: its rows are gathered and updated there, and written back to the runtime's table
  (`write_back`) before anything else reads it. Held are every table when one process
  trains on a GPU without --mix_cpu_gpu (DGL-KE keeps its tables on the GPU then), and a
  process's relations under --rel_part on one machine (DGL-KE's relation partitioning: each
  process keeps the relation rows it alone trains on its GPU).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from torch import Tensor

from ...distributed.transfer import to_device
from ...kvstore.client import PendingPull
from ...kvstore.kernels import row_adagrad
from ...optim.sparse import coalesce
from .device import to_host
from .tables import KGETables

COPY_ELEMENTS = 1 << 22  # floats copied between the runtime's tables and the device at once


@dataclass
class HeldTable:
    """A table's copy on the device: rows, Adagrad state, and the rows this process trains
    (written back; None: all of them)."""

    weight: Tensor
    state: Tensor
    own: Tensor | None


class PendingRows:
    """The rows a batch wants, on the device, once `result()` is called (after the updates
    of this process made in between)."""

    def __init__(self, tables: DeviceTables, wanted: list[tuple[str, Tensor]], pull: PendingPull | None):
        self.tables, self.wanted, self.pull = tables, wanted, pull

    def result(self) -> list[Tensor]:
        pulled = iter(self.pull.result() if self.pull is not None else ())
        device, held = self.tables.device, self.tables.held
        return [held[name].weight.index_select(0, to_device(ids, device)) if name in held else
                to_device(next(pulled), device) for name, ids in self.wanted]


class DeviceTables:
    """`store`'s tables for steps on `device`: those named in `held` (with the ids this
    process trains, or None: all) copied there; with `deferred`, each update is returned
    whole, to run later (--async_update), instead of sending its remote part now."""

    def __init__(self, store: KGETables, device: torch.device, held: dict[str, Tensor | None],
                 deferred: bool = False):
        self.store, self.device, self.deferred = store, device, deferred
        self.held: dict[str, HeldTable] = {}
        for name, own in held.items():
            t = store.tables[name]
            self.held[name] = HeldTable(torch.empty(tuple(t.shape), dtype=t.dtype, device=device),
                                        torch.empty(len(t), dtype=torch.float32, device=device),
                                        None if own is None else own.to(torch.int64))
        self.load()

    def relation_names(self) -> list[str]:
        return self.store.relation_names()

    def load(self) -> None:
        """Copy the held tables from the runtime's (every row: the others' too, as they are now)."""
        for name, h in self.held.items():
            for shared, copy in self._shared(name, h):
                for start, end in _blocks(shared):
                    copy[start:end] = to_device(shared[start:end], self.device)

    def write_back(self) -> None:
        """Copy the rows this process trains of each held table (and their Adagrad state) to the
        runtime's tables, where the other processes, ranking and saving read them."""
        for name, h in self.held.items():
            for shared, copy in self._shared(name, h):
                if h.own is None:
                    for start, end in _blocks(shared):
                        shared[start:end] = to_host(copy[start:end])
                else:
                    shared[h.own] = to_host(copy[to_device(h.own, self.device)])

    def _shared(self, name: str, h: HeldTable) -> list[tuple[Tensor, Tensor]]:
        """(rows in this machine's shared memory, their copy on the device) of a held table and its state."""
        state = self.store.optimizers[name].state
        return [(self.store.tables[name].local_partition, h.weight), (state.local_partition, h.state)]

    def start_rows(self, wanted: list[tuple[str, Tensor]]) -> PendingRows:
        """Ask for the rows of `wanted` (name, ids) pairs: those of the runtime's tables now,
        in one round trip; `.result()` gives them all on the device."""
        pulled = [(name, ids) for name, ids in wanted if name not in self.held]
        return PendingRows(self, wanted, self.store.start_rows(pulled) if pulled else None)

    def start_update(self, name: str, ids: Tensor, grads: Tensor) -> Callable[[], None]:
        """One row-wise Adagrad step on the rows `ids` with `grads` (on the device): sends the
        updates of other machines' rows now and returns the update of the rows in this
        process's memory, or with `deferred` returns the whole of it."""
        if self.deferred:
            return partial(self._apply, name, ids, grads)
        return self._start(name, ids, grads)

    def _apply(self, name: str, ids: Tensor, grads: Tensor) -> None:
        self._start(name, ids, grads)()

    def _start(self, name: str, ids: Tensor, grads: Tensor) -> Callable[[], None]:
        h = self.held.get(name)
        if h is None:
            return self.store.start_update(name, ids, to_host(grads))
        rows, summed = coalesce(to_device(ids, self.device), grads)
        return partial(row_adagrad, h.weight, h.state, rows, summed, self.store.optimizers[name].lr)


def _blocks(t: Tensor) -> list[tuple[int, int]]:
    """Row ranges of `t` of about COPY_ELEMENTS each."""
    step = max(1, COPY_ELEMENTS // max(1, t[0].numel() if len(t) else 1))
    return [(s, min(s + step, len(t))) for s in range(0, len(t), step)]
