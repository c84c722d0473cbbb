"""When a trainer applies its steps' sparse updates: at once, or with `--async_update` in a
thread that applies step k's while the trainer computes step k + 1 (DGL-KE's asynchronous
update process): the rows of step k + 1 may then miss step k's update, as in DGL-KE.

The updates run in the order they were given; an error in one is raised in the trainer at
its next `submit` or `drain`."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

_STOP = None


class Updates:
    """Applies updates now, or (`asynchronous`) in a thread, one waiting at most."""

    def __init__(self, asynchronous: bool):
        self._queue: queue.Queue | None = queue.Queue(maxsize=1) if asynchronous else None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if self._queue is not None:
            self._thread = threading.Thread(target=self._work, name="kge-async-update", daemon=True)
            self._thread.start()

    def _work(self) -> None:
        while True:
            update = self._queue.get()
            try:
                if update is _STOP:
                    return
                if self._error is None:  # after an error the rest are dropped: the trainer stops at its next call
                    update()
            except BaseException as exc:  # noqa: BLE001 (handed to the trainer's thread)
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def submit(self, update: Callable[[], None]) -> None:
        """Apply `update`: now, or after those before it, in the thread."""
        if self._queue is None:
            update()
            return
        self._raise()
        self._queue.put(update)

    def drain(self) -> None:
        """Wait until every update given is applied (before anything that reads every row)."""
        if self._queue is not None:
            self._queue.join()
            self._raise()

    def close(self) -> None:
        """Stop the thread once the updates given are applied (without raising their errors)."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None
