"""DGL-KE's row-wise Adagrad for `DistTensor` tables: one accumulator per row (the running
sum of the mean squared gradient), kept in a `DistTensor` beside the table.

Because the state lives in the store like the rows, a process that maps a machine's shared
memory updates that machine's rows in place, as DGL-KE's processes update their shared
tables (Hogwild: concurrent updates of one row are rare and a lost one only slows
convergence); rows of other machines go to their servers, which apply the very same kernel
(`kvstore.kernels.row_adagrad`). In standalone mode every row is in the process.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from ..distributed.dist_tensor import DistTensor
from ..distributed.initializers import Zeros
from ..errors import InputError
from ..kvstore import kernels
from ..kvstore.disk import read_only_error


class RowAdagrad:
    """Row-wise Adagrad on one table; `step(ids, grads)` with distinct ids (coalesce first)."""

    def __init__(self, table: DistTensor, lr: float):
        if table.dtype != torch.float32 or len(table.shape) != 2:
            raise InputError(f"RowAdagrad updates float32 tables of rows, got {table!r}")
        if table._handle.on_disk:  # its steps write rows this process maps in place
            raise read_only_error(table.name)
        self.table, self.lr = table, float(lr)
        self.state = DistTensor((table.shape[0],), torch.float32, f"{table.name}~rowadagrad", init_func=Zeros(),
                                part_policy=table.part_policy, persistent=True)

    def spec(self) -> dict:
        return {"kind": "rowadagrad", "lr": self.lr, "state": self.state.name}

    def step(self, ids: torch.Tensor, grads: torch.Tensor) -> None:
        self.start_step(ids, grads)()

    def start_step(self, ids: torch.Tensor, grads: torch.Tensor) -> Callable[[], None]:
        """Send the gradients of rows other machines hold now; returns the update of the rows
        in this process's memory, to run before they are read again (meanwhile the servers
        work, and requests sent after this one see their update). `ids` are sorted and
        distinct, as `coalesce` returns them: each machine's rows are then one slice. The
        gradients may be on any device (a trainer's GPU): they are brought to the host."""
        h, hs = self.table._handle, self.state._handle
        here = [m for m in h.shm if m in hs.shm]
        h.check_mapped(here)
        hs.check_mapped(here)
        ids, grads = ids.cpu(), grads.to("cpu", torch.float32).contiguous()
        if ids.numel() > 1 and not bool((ids[1:] > ids[:-1]).all()):
            raise InputError("RowAdagrad.step takes sorted distinct ids: coalesce(ids, grads) first")
        cuts = torch.searchsorted(ids, torch.tensor(h.bounds)).tolist()  # where each machine's rows start
        local, remote = [], []
        for m, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
            if a == b:
                continue
            if m in here:
                local.append(partial(kernels.row_adagrad, h.shm[m], hs.shm[m], ids[a:b] - h.bounds[m], grads[a:b],
                                     self.lr))
            else:
                remote.append(slice(a, b))
        if remote:
            self.table.push_rows(torch.cat([ids[r] for r in remote]), torch.cat([grads[r] for r in remote]),
                                 self.spec())
        return partial(run_each, local)


def run_each(updates: list[Callable[[], None]]) -> None:
    """Run deferred updates in order."""
    for update in updates:
        update()
