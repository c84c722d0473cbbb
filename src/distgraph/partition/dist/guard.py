"""`python -m distgraph.partition.dist.guard`: one host's process of a distributed partitioning,
as `distgraph partition --ip_config` starts it (`processes`). It forks the worker (`host`),
which does the work, and waits for it. The worker removes what its run wrote whenever the run
ends without its config; killed (-9, or by the kernel out of memory) it cannot, and this guard
does (`hostfolders.remove_after`), then ends as the worker ended: its exit code, or its signal.

The worker tells the guard the run's folders once it holds them, and that its config is
written, one JSON line each on a pipe; the guard's end is the worker's (a lifeline). Forked
before anything heavy is imported, the guard holds about 5 MB of its own (the interpreter).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path


def main() -> int:
    """Fork the worker and wait for it; remove what its run left if it could not; its exit code."""
    report_r, report_w = os.pipe()
    life_r, life_w = os.pipe()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stopped with the worker (its process group): clean up after it
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.close(report_r)
        os.close(life_w)
        from .host import main as work

        sys.exit(work(report_w, life_r))
    os.close(report_w)
    os.close(life_r)
    told = {}
    with os.fdopen(report_r) as reports:
        for line in reports:  # until the worker ends
            told.update(json.loads(line))
    status = os.waitpid(pid, 0)[1]
    if "out" in told and not told.get("done"):
        from .hostfolders import remove_after

        try:
            remove_after(Path(told["out"]), Path(told["scratch"]), told["machine"], told["made"])
        except OSError as exc:
            print(f"machine {told['machine']}: cannot remove what its run left ({exc.strerror or exc}: "
                  f"{exc.filename})", file=sys.stderr, flush=True)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig != signal.SIGKILL:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
