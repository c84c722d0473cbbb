"""The entity table and its row-wise Adagrad state as P partitions on disk, with the partitions
of the current bucket in memory (PyTorch-BigGraph's scheme, with DGL-KE's Adagrad).

A partition is two raw float32 files (`entity.<p>` rows, `entity_state.<p>` one accumulator a
row). A partition without files has never been trained: its rows are the table's initialiser's
(by global row, so any P starts from the same values), made where they are needed until the
partition first changes, and written when it is written back after that: no start-up pass
writes the whole table, and ranking reads no file of a partition never trained. Memory holds
`SLOTS` partitions: the current bucket's two and the next bucket's incoming one, which an I/O
thread reads while the current bucket trains, after writing back the partition it replaces.
The I/O bypasses the page cache (`direct_io`: slots page-aligned, of whole pages), so the
cores train while the disk moves the rows; the slots are in 2 MB pages (`malloc.huge_pages`),
as the step's gathers and updates go to random rows of gigabytes. A partition is written to a
new file renamed over the old one, never in place, so a checkpoint's hard links keep the rows
they were taken with.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ...errors import InputError
from ...direct_io import aligned_empty, aligned_rows, read_into, write_atomically_from
from ...kvstore import initializers, kernels
from ...malloc import huge_pages

SLOTS = 3
INIT_ROWS = 1 << 16  # rows initialised at a time when a partition file is made


@dataclass
class DiskTraffic:
    """What the partitions' files cost a run: bytes read and written, seconds the I/O thread
    worked (making never-trained partitions too), and seconds training waited for it."""

    read: int = 0
    written: int = 0
    io_seconds: float = 0.0
    waited_seconds: float = 0.0

    def line(self) -> str:
        """The traffic in a line for the user."""
        return (f"entity partitions on disk: {self.read / 1e9:,.2f} GB read, {self.written / 1e9:,.2f} GB written "
                f"by an I/O thread busy {self.io_seconds:,.1f} s beside training (making new partitions too), which "
                f"waited {self.waited_seconds:,.1f} s for it")


class EntityPartitions:
    """Rows of entities `bounds[p]:bounds[p + 1]` of each partition p, `dim` floats each."""

    def __init__(self, folder: str | Path, bounds: np.ndarray, dim: int, init_spec: dict, lr: float,
                 memory: tuple[Tensor, Tensor] | None = None):
        """`memory`: the slots' rows and accumulators when they live elsewhere (a machine's share
        of the runtime's table, which its trainers and server read and update), SLOTS equal
        runs of rows (fewer with fewer partitions); by default they are allocated here, each
        slot's rows a whole number of pages (`direct_io.aligned_rows`)."""
        self.folder, self.bounds, self.dim, self.lr = Path(folder), np.asarray(bounds, dtype=np.int64), dim, lr
        self.num_parts = len(self.bounds) - 1
        self._bounds_t = torch.from_numpy(self.bounds)
        count, largest = min(SLOTS, self.num_parts), int(np.diff(self.bounds).max())
        self.slot_rows = rows = aligned_rows(largest) if memory is None else len(memory[0]) // count
        if rows < largest:
            raise ValueError(f"slots of {rows} rows cannot hold partitions of up to {largest}")
        # one tensor of every slot's rows, so a gather from several partitions is one index_select
        if memory is None:
            self._emb, self._state = aligned_empty(count, rows, dim), aligned_empty(count, rows)
            for t in (self._emb, self._state):  # the step reads and updates random rows: 2 MB pages
                huge_pages(t.numpy())
        else:
            self._emb = memory[0][:count * rows].view(count, rows, dim)
            self._state = memory[1][:count * rows].view(count, rows)
        self.slots = [(self._emb[s], self._state[s]) for s in range(count)]
        self.held: dict[int, int] = {}  # partition -> slot (changed only by `_hold` and `_drop`)
        self._slot_of = torch.full((self.num_parts,), -1, dtype=torch.int64)  # the same, for gathers
        self.dirty: set[int] = set()
        self._pending: dict[int, tuple[int, Future]] = {}  # partition -> (slot, its read in the I/O thread)
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="distgraph-kge-io")
        self.traffic = DiskTraffic()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.init_spec = init_spec
        self.fresh = {p for p in range(self.num_parts)  # never written: the initialiser's rows
                      if not self._path("entity", p).is_file() or not self._path("entity_state", p).is_file()}

    # ------------------------------------------------------------------ files
    def _path(self, kind: str, p: int) -> Path:
        return self.folder / f"{kind}.{p}"

    def rows_of(self, p: int) -> int:
        return int(self.bounds[p + 1] - self.bounds[p])

    def _initial(self, p: int, emb: Tensor, state: Tensor | None) -> None:
        """Fill `emb` (and `state`) with partition p's initial rows: the initialiser's values of rows
        bounds[p].. of the whole table, and zero accumulators."""
        lo = int(self.bounds[p])
        for s in range(0, len(emb), INIT_ROWS):
            initializers.fill(emb[s:s + INIT_ROWS], lo + s, self.init_spec)
        if state is not None:
            state.zero_()

    def _files(self, p: int, slot: int) -> list[tuple[Path, np.ndarray, int]]:
        """Partition p's two files with the bytes of `slot` they fill (the whole slot, as room for
        direct I/O) and their sizes."""
        width = {"entity": self.dim, "entity_state": 1}
        return [(self._path(kind, p), rows.numpy().reshape(-1).view(np.uint8), self.rows_of(p) * width[kind] * 4)
                for kind, rows in zip(width, self.slots[slot])]

    def _read_into(self, p: int, slot: int, fresh: bool) -> None:
        if fresh:
            emb, state = self.slots[slot]
            n = self.rows_of(p)
            self._initial(p, emb[:n], state[:n])
            return
        for path, room, size in self._files(p, slot):
            got = read_into(path, room, size)
            if got != size:
                raise InputError(f"entity partition file {path} holds {got:,} bytes, not {size:,}: it is truncated; "
                                 f"train from a checkpoint or from the start")
            self.traffic.read += size

    def _write_back(self, p: int, slot: int) -> None:
        """Partition p's files written whole to new files renamed over the old ones (never in place)."""
        for path, room, size in self._files(p, slot):
            try:
                write_atomically_from(path, room, size)
                self.traffic.written += size
            except OSError as exc:
                raise InputError(f"cannot write entity partition {path} ({exc.strerror or exc}); free disk space "
                                 f"in {path.parent}") from None

    # --------------------------------------------------------------- residence
    def _free_slot(self, keep: set[int]) -> tuple[int, int | None]:
        """A slot to read into, and the partition it holds now (to write back first), if any."""
        used = set(self.held.values()) | {slot for slot, _ in self._pending.values()}
        for s in range(len(self.slots)):
            if s not in used:
                return s, None
        for p, s in self.held.items():
            if p not in keep:
                return s, p
        raise InputError(f"no room for another entity partition: the {len(self.slots)} in memory are all in use")

    def _claim_slot(self, keep: set[int]) -> tuple[int, int | None]:
        """A slot for another partition, holding no partition of `keep`: the partition it held
        leaves memory; (the slot, that partition if it changed and must be written back first)."""
        slot, old = self._free_slot(keep)
        if old is None:
            return slot, None
        self._drop(old)
        if old not in self.dirty:
            return slot, None
        self.dirty.discard(old)
        return slot, old

    def _start_read(self, p: int, keep: set[int]) -> None:
        """Read partition p in the I/O thread into a slot holding no partition of `keep` (the one
        it held written back first, if it changed)."""
        slot, old = self._claim_slot(keep)
        fresh = p in self.fresh

        def load() -> None:
            began = time.perf_counter()
            if old is not None:
                self._write_back(old, slot)
            self._read_into(p, slot, fresh)
            self.traffic.io_seconds += time.perf_counter() - began

        self._pending[p] = (slot, self._io.submit(load))

    def _hold(self, p: int, slot: int) -> None:
        self.held[p] = slot
        self._slot_of[p] = slot

    def _drop(self, p: int) -> None:
        del self.held[p]
        self._slot_of[p] = -1

    def _settle(self) -> None:
        """Wait for the I/O thread's work (reads stay pending until `use` takes them)."""
        for _, done in self._pending.values():
            done.result()

    def use(self, parts: set[int], then: set[int] = frozenset()) -> None:
        """Make `parts` resident (waiting for their reads), then start reading those of `then`
        that are not, into the slots `parts` leave free."""
        for p in sorted(parts):
            if p not in self.held and p not in self._pending:
                self._start_read(p, set(parts))
        for p in sorted(parts):
            if p in self._pending:
                slot, done = self._pending.pop(p)
                began = time.perf_counter()
                done.result()
                self.traffic.waited_seconds += time.perf_counter() - began
                self._hold(p, slot)  # (made in memory if fresh: its files are written once it changes)
        for p in sorted(set(then) - set(parts)):
            if p not in self.held and p not in self._pending and len(self.slots) > len(parts):
                self._start_read(p, set(parts))

    def changed(self, parts: set[int]) -> None:
        """Resident partitions `parts` were updated by others (trainers and servers sharing the
        slots): they are written back before leaving memory."""
        for p in parts:
            if p not in self.held:
                raise InputError(f"entity partition {p} is not in memory, so it cannot have changed")
        self.dirty |= set(parts)
        self.fresh -= set(parts)

    def flush(self) -> None:
        """Write every changed resident partition back (the files then hold every row's value)."""
        for p in sorted(self.dirty):
            self._write_back(p, self.held[p])
        self.dirty.clear()

    def close(self) -> None:
        """Finish the I/O in flight and write back what changed."""
        self._settle()
        self.flush()
        self.stop()

    def stop(self) -> None:
        """Finish the I/O in flight and start no more (what changed since is not written)."""
        self._io.shutdown()

    # --------------------------------------------------------------- rows
    def _view(self, p: int) -> tuple[Tensor, Tensor]:
        emb, state = self.slots[self.held[p]]
        n = self.rows_of(p)
        return emb[:n], state[:n]

    def gather(self, ids: Tensor) -> Tensor:
        """The rows of entity `ids`, all in resident partitions (a copy): one index_select over
        every slot's rows, at slot * rows + the id's offset in its partition."""
        if len(self.held) == 1:
            (p,) = self.held
            return self._view(p)[0][ids - int(self.bounds[p])]
        part = torch.searchsorted(self._bounds_t, ids, right=True) - 1
        slot = self._slot_of.index_select(0, part)
        if bool((slot < 0).any()):
            raise InputError("an entity row was asked for outside the bucket's partitions")
        at = slot * self.slot_rows + ids - self._bounds_t.index_select(0, part)
        return self._emb.view(-1, self.dim).index_select(0, at)

    def update(self, ids: Tensor, grads: Tensor) -> None:
        """DGL-KE's row-wise Adagrad step on rows `ids` (sorted, distinct: `coalesce`d)."""
        cuts = torch.searchsorted(ids, self._bounds_t).tolist()
        for p in range(self.num_parts):
            a, b = cuts[p], cuts[p + 1]
            if a == b:
                continue
            if p not in self.held:
                raise InputError(f"entity partition {p} is not in memory for an update")
            emb, state = self._view(p)
            kernels.row_adagrad(emb, state, ids[a:b] - int(self.bounds[p]), grads[a:b].to(torch.float32), self.lr)
            self.dirty.add(p)
            self.fresh.discard(p)  # (resident by `read`, it was still the initialiser's)

    def reading_order(self) -> list[int]:
        """Every partition, those in memory first: a pass over all of them in this order reads the
        fewest from disk (and leaves the last ones it read in memory for the next pass)."""
        return [*self.held, *(p for p in range(self.num_parts) if p not in self.held)]

    def read(self, p: int) -> Tensor:
        """Partition p's rows as they are now, for ranking and saving: made resident in a slot (the
        longest resident other partition written back first if it changed), so reading every
        partition in turn takes no memory beyond the slots. The rows stay valid until two more
        partitions have been read. A partition never trained stays without files."""
        if p not in self.held:
            self._settle()  # a write-back may be in flight
            if p in self._pending:
                slot, _ = self._pending.pop(p)
            else:  # here, not in the I/O thread: `close` may have ended it
                slot, old = self._claim_slot({p})
                if old is not None:
                    self._write_back(old, slot)
                self._read_into(p, slot, p in self.fresh)
            self._hold(p, slot)
        return self._view(p)[0]
