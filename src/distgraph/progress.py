"""Progress of long work as a person reads it: on a terminal a tqdm bar redrawn in place, its
stage and elapsed time moving even while one long call runs; elsewhere (output to a file or a
pipe) no carriage returns, but one plain line when the work starts, one per stage, and one with
the elapsed time when it ends. And long C calls run where Ctrl-C can stop them: `wait_for` (a
call that releases the GIL, as METIS through ctypes: a daemon thread the process's exit ends)
and `in_child` (a call that holds it, as KaMinPar's binding: a forked process, killed)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import InputError, PartitionError

TICK_SECONDS = 0.2  # how often a wait looks for Ctrl-C and moves the elapsed time


class _NoBar:
    """What `Progress` calls on a bar, doing nothing: off a terminal tqdm is not even imported
    (a hundredth of a second of every command's start-up)."""

    def __init__(self, total: int):
        self.n, self.total = 0, total

    def update(self, n: int = 1) -> None:
        self.n += n

    def refresh(self) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


class Progress:
    """A bar over `total` units (`enabled=False`: silent)."""

    def __init__(self, total: int, desc: str, unit: str = "step", enabled: bool = True, unit_scale: bool = False,
                 leave: bool = False):
        self.tty = enabled and sys.stderr.isatty()
        self.plain = enabled and not self.tty
        self.desc, self.t0 = desc, time.perf_counter()
        if self.tty:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, leave=leave)
        else:
            self.bar = _NoBar(total)
        self._say(f"{desc}: started")

    def _say(self, text: str) -> None:
        if self.plain:
            print(text, file=sys.stderr, flush=True)

    def update(self, n: int = 1) -> None:
        self.bar.update(n)

    def set(self, n: int) -> None:
        """Set how far the work is (work done elsewhere, polled), and redraw."""
        self.bar.n = n
        self.bar.refresh()

    def stage(self, text: str) -> None:
        """Name the stage now running."""
        self.bar.set_postfix_str(text)
        self._say(f"{self.desc}: {text} ({time.perf_counter() - self.t0:.1f} s)")

    @contextmanager
    def ticking(self) -> Iterator[None]:
        """Redraw every TICK_SECONDS while the block runs (on a terminal), so the elapsed time
        moves while one long call works."""
        if not self.tty:
            yield
            return
        stop = threading.Event()

        def redraw() -> None:
            while not stop.wait(TICK_SECONDS):
                self.bar.refresh()

        ticker = threading.Thread(target=redraw, name="distgraph-progress", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()

    def close(self) -> None:
        self.bar.close()
        self._say(f"{self.desc}: done in {time.perf_counter() - self.t0:.1f} s")

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, kind, *_) -> None:
        if kind is None:
            self.close()
        else:
            self.bar.close()


class Background:
    """`call(*args, **kwargs)` running in a daemon thread: the process's exit ends it, so an
    interrupted wait never has to wait for it."""

    def __init__(self, call: Callable[..., Any], *args, **kwargs):
        self._box: dict[str, Any] = {}

        def run() -> None:
            try:
                self._box["value"] = call(*args, **kwargs)
            except BaseException as exc:  # handed to the waiting thread
                self._box["error"] = exc

        self._thread = threading.Thread(target=run, name="distgraph-background", daemon=True)
        self._thread.start()

    def result(self) -> Any:
        """Its value (or its exception), waited for in TICK_SECONDS steps that Ctrl-C stops at once."""
        while self._thread.is_alive():
            self._thread.join(TICK_SECONDS)
        if "error" in self._box:
            raise self._box["error"]
        return self._box["value"]


def wait_for(call: Callable[..., Any], *args, **kwargs) -> Any:
    """`call(*args, **kwargs)` run in the background while this thread waits for it (`Background`):
    a C call that holds no GIL would otherwise keep Ctrl-C from this thread until it returns.
    On an interrupt the call runs on until it returns or the process exits."""
    return Background(call, *args, **kwargs).result()


def in_child(call: Callable[..., Any], out: Path, *args) -> Any:
    """`call(*args)` in a forked child process that saves its result (a numpy array) to `out`,
    read back here: a C call that holds the GIL keeps Ctrl-C from every thread of its process,
    but not from this one, which kills the child and goes on with the interrupt."""
    import multiprocessing

    import numpy as np

    def run() -> None:
        try:
            np.save(out, call(*args), allow_pickle=False)
        except BaseException as exc:  # the message travels as a file too: one line, no traceback
            out.with_suffix(".error").write_text(f"{type(exc).__name__}\n{exc}")
            raise SystemExit(1) from None

    child = multiprocessing.get_context("fork").Process(target=run, name="distgraph-child", daemon=True)
    child.start()
    try:
        while child.is_alive():
            child.join(TICK_SECONDS)
    except BaseException:
        child.kill()
        child.join()
        raise
    finally:
        error = out.with_suffix(".error")
        if error.is_file():
            kind, _, message = error.read_text().partition("\n")
            error.unlink()
            out.unlink(missing_ok=True)
            raise (PartitionError if kind == "PartitionError" else InputError)(message)
    if child.exitcode != 0 or not out.is_file():
        raise RuntimeError(f"the child process of {getattr(call, '__name__', call)} ended with code {child.exitcode}")
    try:
        return np.load(out, allow_pickle=False)
    finally:
        out.unlink(missing_ok=True)
