"""Run one worker per process and pass their messages to a handler in the parent.

Workers are started with `spawn` (a fork after torch has used OpenMP threads can deadlock);
their shared-memory tensors are passed as handles, not copied. Workers report through one
queue; the parent waits on it with a timeout so a worker that dies without a word (killed,
out of memory) becomes an error naming it instead of a hang. On any error or Ctrl-C every
worker is terminated before returning. A single worker runs in the calling process.
"""

from __future__ import annotations

import queue as queue_mod
import traceback
from collections.abc import Callable

import torch.multiprocessing as mp

from ..errors import DistGraphError, InputError
from .train import Worker

_POLL_SECONDS = 1.0


def _process_main(rank: int, task: Worker, queue, barrier) -> None:
    """Entry point of a worker process: run the task, report success or the exception."""
    try:
        task.run(rank, queue.put, barrier)
        queue.put(("finished", rank))
    except BaseException as exc:  # reported to the parent, which raises it
        queue.put(("error", rank, isinstance(exc, InputError), f"{type(exc).__name__}: {exc}",
                   traceback.format_exc()))


def _raise_worker_error(msg: tuple) -> None:
    _, rank, is_input_error, text, tb = msg
    if is_input_error:
        raise InputError(text.split(": ", 1)[1])
    raise DistGraphError(f"kge worker process {rank} failed: {text}\n{tb}")


def run_tasks(tasks: list[Worker], handle: Callable[[tuple], None]) -> None:
    """Run task i as rank i (in separate processes when there are several); `handle` gets every message."""
    if len(tasks) == 1:
        tasks[0].run(0, handle, None)
        return
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    barrier = ctx.Barrier(len(tasks))
    procs = [ctx.Process(target=_process_main, args=(rank, task, queue, barrier), daemon=True,
                         name=f"distgraph-kge-{rank}") for rank, task in enumerate(tasks)]
    try:
        for p in procs:
            p.start()
        finished = 0
        while finished < len(procs):
            try:
                msg = queue.get(timeout=_POLL_SECONDS)
            except queue_mod.Empty:
                dead = [(i, p.exitcode) for i, p in enumerate(procs) if p.exitcode not in (None, 0)]
                if dead:
                    raise DistGraphError(f"kge worker process {dead[0][0]} exited with code {dead[0][1]} "
                                         f"without reporting an error (killed, or out of memory?)") from None
                continue
            if msg[0] == "error":
                _raise_worker_error(msg)
            elif msg[0] == "finished":
                finished += 1
            else:
                handle(msg)
        for p in procs:
            p.join()
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            if p.pid is not None:
                p.join()
        queue.close()
