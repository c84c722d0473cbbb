"""Mini-batches moved to the device that trains on them, as DGL's loaders move them.

Batches are made on the CPU (sampling runs in C kernels and on the servers). Each array then
goes to the device from a pinned host buffer with a `non_blocking` copy: the host returns at
once and makes the next batch while the copy and the step run on the GPU. With an alternate
stream the copies run on a CUDA stream of their own, which the consuming stream waits for
(an event) before it reads them. On the CPU the same code runs: every array is already where
it goes, so nothing is copied; pinning is skipped where torch has no pinned memory (a build
or a machine without CUDA).
"""

from __future__ import annotations

from typing import Callable

import torch

from ..block import once_each
from ..errors import InputError


def check_device(device, what: str = "device") -> torch.device:
    """`device` as the torch.device tensors put on it get (`cuda` names the current GPU:
    `cuda:0`, ...); one clear error when this process cannot put tensors there."""
    try:
        return torch.empty(0, device=torch.device(device)).device
    except (RuntimeError, AssertionError, TypeError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{what} {device!r} is not available here ({reason}; this machine has "
                         f"{torch.cuda.device_count()} CUDA devices): pass 'cpu' or a device it has") from None


def pinned_memory() -> bool:
    """Whether torch here can pin host memory (it needs a CUDA device)."""
    return torch.cuda.is_available()


def to_device(t: torch.Tensor, device: torch.device, pin: bool = True) -> torch.Tensor:
    """`t` on `device`: itself when it is there; from the CPU to a CUDA device through pinned
    host memory (`pin`) with a `non_blocking` copy."""
    if t.device == device:
        return t
    if pin and t.device.type == "cpu" and device.type == "cuda" and not t.is_pinned():
        t = t.pin_memory()
    return t.to(device, non_blocking=True)


def map_batch(batch, fn: Callable[[torch.Tensor], torch.Tensor]):
    """`batch` (tensors, dicts and sequences of them, blocks, pair graphs) with `fn` applied to
    every array; anything else is kept as it is."""
    if isinstance(batch, torch.Tensor):
        return fn(batch)
    if hasattr(batch, "map_arrays"):
        return batch.map_arrays(fn)
    if isinstance(batch, dict):
        return {k: map_batch(v, fn) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(map_batch(v, fn) for v in batch)
    return batch


class BatchMover:
    """Moves a loader's batches to `device` (None: leaves them as they are made). `send` runs
    in the thread that made a batch and starts its copies; `receive`, in the thread that
    trains on it, makes that thread's stream wait for them. `pin`: copy from pinned host
    buffers (DGL's `pin_prefetcher`); `alternate_stream`: copy on a stream of one's own
    (DGL's `use_alternate_streams`; a CUDA device only)."""

    def __init__(self, device: torch.device | None, pin: bool = False, alternate_stream: bool = False):
        self.device = device
        self.pin = pin and pinned_memory()
        self.stream = None
        if alternate_stream and device is not None and device.type == "cuda":
            self.stream = torch.cuda.Stream(device)

    def _copy(self, t: torch.Tensor) -> torch.Tensor:
        return to_device(t, self.device, self.pin)

    def send(self, batch) -> tuple:
        """(the batch on its way to the device, the event its copies end with or None)."""
        if self.device is None or self.device.type == "cpu":
            return batch, None  # batches are made on the CPU: a walk over one to find that out cost Python time
        if self.stream is None:
            return map_batch(batch, once_each(self._copy)), None
        with torch.cuda.stream(self.stream):
            moved = map_batch(batch, once_each(self._copy))
            done = torch.cuda.Event()
            done.record(self.stream)
        return moved, done

    def receive(self, sent: tuple):
        """The batch of `send`, readable on this thread's stream."""
        batch, done = sent
        if done is not None:
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(done)
            # memory the side stream allocated is not reused until this stream is done with it
            map_batch(batch, once_each(lambda t: (t.record_stream(stream), t)[1]))
        return batch

    def move(self, batch):
        """`batch` on the device, in this thread."""
        return self.receive(self.send(batch))
