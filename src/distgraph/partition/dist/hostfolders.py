"""The folders one host of a distributed partitioning writes in, held for one run, and the
removal of what a run that failed or died left in them.

The output folder is held with a lock, as the single-host path holds its own (`out_folder`):
an `flock` the kernel releases however the process ends, one per machine
(`.distgraph-machine<m>.lock`), so hosts sharing a folder do not refuse each other. Scratch
files go to a folder of the run's own under the scratch folder (`--scratch_dir`, by default
the output folder), `.distgraph-scratch-*`, locked too. What a run left is removed by the run
itself when it fails or is stopped, by its guard (`guard`) when it was killed, and otherwise
(both killed) by the next run that takes the folders, before it writes: scratch folders whose
lock nobody holds, and the part and id map files no config names (`out_folder.discard`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path

from ...errors import PartitionError
from ..out_folder import discard

LOCK = ".distgraph-machine{}.lock"
SCRATCH_PREFIX = ".distgraph-scratch-"
SCRATCH_LOCK = "lock"
SCRATCH_OPTION = "--scratch_dir"  # the option that moves the scratch folder, named when its disk is full
DISCARD_TRIES = 10  # (hosts sharing an output folder clean it at once: a file one removed is gone for the others)


def _hold(path: Path, create: bool = True) -> int | None:
    """A descriptor of `path` locked by this process; None when another process holds it (or,
    without `create`, when it does not exist)."""
    try:
        fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o600)
    except FileNotFoundError:
        if create:
            raise
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class HostFolders:
    """This machine's output folder `out` (held from here on) and its scratch folder
    `scratch_root`, for one run; `made`: the run made `out` (so a failure removes it whole)."""

    def __init__(self, out: Path, scratch_root: Path, machine: int, made: bool, where: str):
        self.out, self.scratch_root, self.made = out, scratch_root, made
        self.lock_path = out / LOCK.format(machine)
        self._lock = _hold(self.lock_path)
        if self._lock is None:
            raise PartitionError(f"machine {machine}: another partitioning is writing into {out} on {where} (it "
                                 f"holds {self.lock_path}); wait for it to end, or choose another output folder")
        self.scratch: Path | None = None
        self._scratch_lock: int | None = None

    def remove_left(self) -> None:
        """Remove what earlier runs that died left: their scratch folders and the part and id
        map files no config names."""
        for root in {self.out, self.scratch_root}:
            _remove_dead_scratch(root)
        _discard(self.out, made=False)

    def make_scratch(self) -> Path:
        """This run's scratch folder, locked while it runs."""
        self.scratch_root.mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=self.scratch_root))
        self._scratch_lock = _hold(self.scratch / SCRATCH_LOCK)
        return self.scratch

    def release(self, failed: bool) -> None:
        """End the run: its scratch folder goes and, when it `failed`, its files no config names
        (all of `out` when it made it); then the lock is let go."""
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            os.close(self._scratch_lock)
            self.scratch = None
        if failed:
            _discard(self.out, self.made)
        self.lock_path.unlink(missing_ok=True)
        os.close(self._lock)


def _discard(out: Path, made: bool) -> None:
    """`out_folder.discard`, which hosts that share `out` run at once: what another one removed
    first is no error (it is run again, as long as something vanished under it)."""
    for _ in range(DISCARD_TRIES):
        try:
            if out.is_dir():
                discard(out, made)
            return
        except FileNotFoundError:
            continue


def _remove_dead_scratch(root: Path) -> None:
    """Remove the scratch folders under `root` whose lock nobody holds (one without a lock file
    is being made)."""
    for d in root.glob(f"{SCRATCH_PREFIX}*"):
        fd = _hold(d / SCRATCH_LOCK, create=False) if d.is_dir() else None
        if fd is not None:
            shutil.rmtree(d, ignore_errors=True)
            os.close(fd)


def remove_after(out: Path, scratch_root: Path, machine: int, made: bool) -> None:
    """Remove what this machine's run left in its folders after its process died without
    doing it (unless another run holds them by now)."""
    if not out.is_dir():  # removed already (the run made it)
        _remove_dead_scratch(scratch_root)
        return
    try:
        folders = HostFolders(out, scratch_root, machine, made, "this host")
    except PartitionError:
        return
    folders.remove_left()
    folders.release(failed=True)
