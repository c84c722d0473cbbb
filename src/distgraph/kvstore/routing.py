"""Which server handles which row: every machine's rows are cut into one contiguous slice
per server of that machine. Clients route by these slices and servers check them, so each
row's optimiser state lives in exactly one server even when several share a machine."""

from __future__ import annotations

from typing import Sequence

import torch


def server_slices(rows: int, num_servers: int) -> list[int]:
    """Bounds of the servers' slices of a machine's `rows` rows: [0, ..., rows]."""
    return [rows * s // num_servers for s in range(num_servers + 1)]


def slot_bounds(machine_bounds: Sequence[int], servers_per_machine: Sequence[int]) -> torch.Tensor:
    """Global row bounds of every (machine, server) slot, machine-major, ending at the total."""
    out = []
    for m, count in enumerate(servers_per_machine):
        lo, hi = int(machine_bounds[m]), int(machine_bounds[m + 1])
        out.extend(lo + b for b in server_slices(hi - lo, count)[:-1])
    out.append(int(machine_bounds[-1]))
    return torch.tensor(out, dtype=torch.int64)


def slot_of(bounds: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Slot of each id (empty slots are skipped because equal bounds resolve rightwards)."""
    return torch.searchsorted(bounds, ids, right=True) - 1
