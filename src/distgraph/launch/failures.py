"""The launcher's account of a job's failures: each project error (`cluster.error_lines`) shown
once however many processes raise it, their tracebacks kept in a log file instead of printed
once per trainer, and at the end one line naming the processes that failed."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import IO

from ..cluster.error_lines import parse


class Failures:
    """Routes a job's output lines: marked tracebacks to the log, each marked error once."""

    def __init__(self, session: str):
        self.log_path = Path(tempfile.gettempdir()) / f"distgraph-{session}.log"
        self._log: IO[str] | None = None
        self.errors: dict[str, list[str]] = {}  # message -> the processes that raised it, in order

    def route(self, label: str, text: str) -> str | None:
        """The line to show for `text` from process `label`, or None when it is kept out of sight."""
        marked = parse(text)
        if marked is None:
            return text
        kind, rest = marked
        if kind == "traceback":
            self._write(f"[{label}] {rest}")
            return None
        seen = rest in self.errors
        self.errors.setdefault(rest, []).append(label)
        return None if seen else f"error: {rest}"

    def _write(self, line: str) -> None:
        if self._log is None:
            self._log = open(self.log_path, "a", encoding="utf-8")  # owner-only: the launcher's umask is 077
        self._log.write(line + "\n")
        self._log.flush()

    def summary(self, exited: dict[str, int]) -> list[str]:
        """Lines naming the processes that failed (`exited`: those that ended on their own with a
        non-zero code, before the job was stopped) and where their tracebacks are."""
        named = [label for labels in self.errors.values() for label in labels]
        others = [f"{label} (exit code {code})" for label, code in exited.items() if label not in named]
        lines = [f"failed with the error{'s' if len(self.errors) > 1 else ''} above: {', '.join(named)}"] if named else []
        lines += [f"failed: {', '.join(others)}"] if others else []
        if self._log is not None:
            self._log.close()
            self._log = None
            lines.append(f"their tracebacks: {self.log_path}")
        return lines
