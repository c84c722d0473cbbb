"""Run the suite as two pytest processes side by side (`make test`, `make test-fast`).

Most tests spend their time waiting on the processes they start (a server's start-up, a
deadline that must fire), so one pytest process keeps about one of the CI machine's 2 cores
busy. The first process runs the paths given with `--first`, the second everything else;
each checks only what it leaves behind (its own run prefix, its own children), so neither can
fail the other. Lines are printed as they come, each with its process's tag; the exit status
is the first failing process's.

    python tests/shards.py --first tests/runtime/test_faults.py ... -- -q tests --ignore=tests/cluster
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
from pathlib import Path


def _forward(proc: subprocess.Popen, tag: str, lock: threading.Lock) -> None:
    for line in proc.stdout:
        with lock:
            sys.stdout.write(f"{tag} {line}")
            sys.stdout.flush()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--first", nargs="+", required=True, help="test files or folders of the first process")
    ap.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- then pytest's arguments, for both")
    args = ap.parse_args(argv)
    rest = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    missing = [p for p in args.first if not Path(p).exists()]
    if missing:
        raise SystemExit(f"tests/shards.py: {', '.join(missing)} does not exist; update --first in the Makefile")
    options = [a for a in rest if a.startswith("-") or not Path(a).exists()]  # the paths are the second's
    first = [sys.executable, "-m", "pytest", *options, *args.first]
    second = [sys.executable, "-m", "pytest", *rest, *(f"--ignore={p}" for p in args.first)]
    lock = threading.Lock()
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
             for cmd in (first, second)]
    readers = [threading.Thread(target=_forward, args=(p, tag, lock)) for p, tag in zip(procs, ("[1]", "[2]"))]
    for r in readers:
        r.start()
    codes = [p.wait() for p in procs]
    for r in readers:
        r.join()
    return next((c for c in codes if c), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
