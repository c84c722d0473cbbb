"""One line per job for the project's own errors in a job's processes.

A launched process's uncaught `DistGraphError` (an `InputError`, a `PartitionError`, ...) is a
message meant for the user, the same in every trainer that hits it. Such a process writes its
traceback as marked lines, then the message as one marked line; the launcher keeps the
traceback in the job's log and shows each message once, with the processes that gave it
(`launch.failures`). Other exceptions keep Python's (and torch's) own printing.
"""

from __future__ import annotations

import re
import sys
import traceback

from ..errors import DistGraphError

TRACEBACK = "distgraph-traceback| "
ERROR = "distgraph-error| "
# torch.distributed's excepthook prefixes every line the hook before it wrote with "[rank<N>]: "
_TORCH_PREFIX = re.compile(r"^\[rank\d+\]: ")


def install() -> None:
    """Make this process's uncaught project errors marked lines (call in a launched process)."""
    previous = sys.excepthook

    def hook(kind, exc, tb) -> None:
        if not isinstance(exc, DistGraphError):
            previous(kind, exc, tb)
            return
        for line in "".join(traceback.format_exception(kind, exc, tb)).splitlines():
            sys.stderr.write(f"{TRACEBACK}{line}\n")
        sys.stderr.write(f"{ERROR}{exc}\n")
        sys.stderr.flush()

    sys.excepthook = hook


def parse(text: str) -> tuple[str, str] | None:
    """("traceback" | "error", the text after the mark) of a marked line, else None."""
    text = _TORCH_PREFIX.sub("", text, count=1)
    if text.startswith(TRACEBACK):
        return "traceback", text[len(TRACEBACK):]
    if text.startswith(ERROR):
        return "error", text[len(ERROR):]
    return None
