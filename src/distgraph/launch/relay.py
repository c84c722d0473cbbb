"""Relay a process's output one line at a time (the launcher prints each as
`[machine/role/rank] text`).

Progress bars (tqdm) redraw their line with carriage returns and end it with a newline
only when they finish; relayed as they come they would arrive as one garbled run after
the job's last line. Each redraw is relayed as a line of its own instead, at most one per
`PROGRESS_SECONDS` per stream, and the last one before the bar is cleared or finished.
"""

from __future__ import annotations

import codecs
import os
import re
import time
from typing import IO, Callable

PROGRESS_SECONDS = 2.0
_BREAK = re.compile(r"\r\n|\r|\n")


class LineRelay:
    """Turns a byte stream into lines, each handed to `emit`."""

    def __init__(self, emit: Callable[[str], None], clock: Callable[[], float] = time.monotonic):
        self._emit, self.clock = emit, clock
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._pending: str | None = None  # a redraw not relayed yet (too soon after the last one)
        self._last_redraw = -float("inf")

    def feed(self, data: bytes) -> None:
        self._buffer += self._decoder.decode(data)
        while (m := _BREAK.search(self._buffer)) is not None:
            text, sep = self._buffer[:m.start()], m.group()
            self._buffer = self._buffer[m.end():]
            if sep != "\r":  # a finished line
                self._emit(text)
                self._pending = None
            elif not text.strip():  # a bar clearing its line: show where it had got to
                self._flush_pending()
            elif self.clock() - self._last_redraw >= PROGRESS_SECONDS:
                self._emit(text)
                self._last_redraw, self._pending = self.clock(), None
            else:
                self._pending = text

    def _flush_pending(self) -> None:
        if self._pending is not None:
            self._emit(self._pending)
            self._last_redraw, self._pending = self.clock(), None

    def close(self) -> None:
        """End of stream: relay what is left of an unfinished line."""
        tail = self._buffer + self._decoder.decode(b"", final=True)
        self._buffer = ""
        if tail.strip():
            self._emit(tail)
        else:
            self._flush_pending()


def relay_stream(stream: IO[bytes], emit: Callable[[str], None]) -> None:
    """Hand `stream`'s lines to `emit` until it ends (run in a thread per stream)."""
    relay = LineRelay(emit)
    fd = stream.fileno()
    try:
        while data := os.read(fd, 65536):
            relay.feed(data)
    except OSError:
        pass
    finally:
        relay.close()
        stream.close()
