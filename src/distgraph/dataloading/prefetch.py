"""Mini-batches made ahead, in threads, while the caller works on the current one.

Sampling and gathering spend their time in C kernels and torch operations, which run
without Python's global lock, so a background thread makes the next batches while the
training step computes (a pipeline of batches in flight), and with several threads several
batches are made at once. Batches come out in order and each draws from its own generator,
so the result is the one the calling thread alone would make. With several threads, each
runs its torch operations on one core (the batches are the parallelism): at torch's own
count, two batch threads each forked an OpenMP team onto the same two cores.
"""

from __future__ import annotations

import ctypes
import os
import weakref
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Callable, Iterable, Iterator, TypeVar

import torch

T = TypeVar("T")
R = TypeVar("R")


def made_ahead(fn: Callable[[T], R], items: Iterable[T], threads: int, depth: int,
               kept: "BatchThreads | None" = None) -> Iterator[R]:
    """`map(fn, items)` in order, with up to `depth` results made ahead by `threads` threads
    (none: in the calling thread, as they are asked for); an exception comes out at its
    item's turn. Leaving the loop early drops the batches not started yet (those being made
    finish in their threads). The threads are `kept`'s, which outlive the loop, else a pool of
    this loop's own."""
    if threads < 1:
        yield from map(fn, items)
        return
    pool = kept.pool(threads) if kept is not None else new_pool(threads)
    ahead: deque = deque()
    items = iter(items)
    try:
        for item in items:
            ahead.append(pool.submit(fn, item))
            if len(ahead) > depth:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()
    finally:
        for future in ahead:
            future.cancel()
        if kept is None:
            pool.shutdown(wait=False)


def new_pool(threads: int) -> ThreadPoolExecutor:
    """`threads` batch threads (each on one core when there are several: `one_core_per_thread`)."""
    return ThreadPoolExecutor(threads, thread_name_prefix="distgraph-batches",
                              initializer=one_core_per_thread if threads > 1 else None)


class BatchThreads:
    """A loader's batch threads, kept from one epoch to the next: a pool started each epoch paid,
    in its first batches, for its threads' new malloc arenas and relabel tables. They end when
    their owner is collected, or at `close`."""

    def __init__(self):
        self._pool: ThreadPoolExecutor | None = None
        self._threads = 0
        self._end: weakref.finalize | None = None

    def pool(self, threads: int) -> ThreadPoolExecutor:
        """The pool of `threads` threads (started again when the count changed)."""
        if threads != self._threads:
            self.close()
            self._pool, self._threads = new_pool(threads), threads
            self._end = weakref.finalize(self, self._pool.shutdown, wait=False)
        return self._pool

    def close(self) -> None:
        if self._end is not None:
            self._end()
        self._pool, self._threads, self._end = None, 0, None


def one_core_per_thread() -> None:
    """Run the calling thread's torch operations on one core, leaving other threads' count as it
    is: OpenMP's thread count is kept per thread (`omp_set_num_threads`), where
    `torch.set_num_threads` changes every thread's. No-op where torch's OpenMP is not found."""
    torch.get_num_threads()  # torch sets a thread's count on its first use: before ours, not after
    lib = _openmp()
    if lib is not None:
        lib.omp_set_num_threads(1)


@lru_cache(maxsize=1)
def _openmp():
    """The OpenMP runtime torch's operations run on (its own copy in torch/lib, else the process's)."""
    folder = os.path.join(os.path.dirname(torch.__file__), "lib")
    names = sorted(n for n in os.listdir(folder) if n.startswith(("libgomp", "libiomp5"))) if os.path.isdir(folder) else []
    for lib in [*(os.path.join(folder, n) for n in names), None]:
        try:
            found = ctypes.CDLL(lib)
            found.omp_set_num_threads.argtypes = [ctypes.c_int]
            return found
        except (OSError, AttributeError):
            continue
    return None


def batch_threads(runs_user_code: bool, waits_on_other_hosts: bool = False) -> int:
    """Threads that make batches in this process: as many as torch's (the threads a trainer
    is given). With one, a thread of its own pays only while batches wait for other hosts'
    replies: on one core it otherwise competes with the step (loopback, 1 thread a trainer:
    0.069-0.075 s a step made ahead, 0.056-0.067 s inline; between hosts ahead saved 7-10 %).
    Batches that run the user's own functions (a negative sampler, an exclusion rule) are
    made by one thread, so what those draw from torch's global generator follows the
    batches' order."""
    threads = max(1, torch.get_num_threads())
    if threads == 1 and not waits_on_other_hosts:
        return 0
    return 1 if runs_user_code else threads
