"""One host's worker of a distributed partitioning: the process its guard (`guard`, which
`distgraph partition --ip_config` starts through the launcher, so it ends with it) forks.

It listens on its machine's ip_config address, admitting only peers that prove the job's
secret, and answers the coordinator's operations (`protocol`, carried out by `hostwork`) and
other hosts' node data rows, edges, ends of edges to count and lookups of new ids. Long
operations run in a thread of their own while this loop goes on receiving; their reply is
sent when they end. A failed operation is answered with one line naming the machine (an
error of the disk too: no traceback); on any end (told to, stopped, its guard or the launcher
gone) the host removes its scratch files, and its partition files unless the config listing
them was written.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import sys
import threading
import traceback

from ...cluster.env import PartitionWorkerEnv
from ...cluster.hosts import bind_endpoint
from ...cluster.lifeline import watch
from ...errors import DistGraphError
from ...files import make_private
from ...rpc.auth import Credentials
from ...rpc.transport import ServerSocket
from ...rpc.wire import WireError, read_header, unpack_arrays
from . import protocol as P
from .hostfolders import SCRATCH_OPTION
from .hostwork import HostWork

POLL_SECONDS = 0.05
TASK_END_SECONDS = 2.0  # for a running operation to stop before the clean-up (well within the launcher's grace)


class _Task:
    """A long operation running aside; its reply waits for it."""

    def __init__(self, target, identity: bytes, rid, header: dict, arrays):
        self.identity, self.rid, self.reply = identity, rid, None
        self.thread = threading.Thread(target=self._run, args=(target, header, arrays), daemon=True)
        self.thread.start()

    def _run(self, target, header, arrays) -> None:
        self.reply = _answer(target, header, arrays)


def _answer(target, header: dict, arrays) -> tuple[dict, list]:
    """The reply to one operation: its values, or one line saying why it failed (an operation out
    of order, whose state is not there yet, fails too rather than ending the process)."""
    try:
        values, out = target(header, arrays)
        return {"ok": True, **values}, out
    except OSError as exc:
        return {"ok": False, "kind": "input", "error": disk_error(exc)}, []
    except (DistGraphError, KeyError, ValueError, IndexError, TypeError, AttributeError) as exc:
        kind = "input" if isinstance(exc, DistGraphError) else "error"
        text = str(exc) if isinstance(exc, DistGraphError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, DistGraphError):
            traceback.print_exc()
        return {"ok": False, "kind": kind, "error": text}, []


def disk_error(exc: OSError) -> str:
    """One line for an error of the disk: what failed on which file, and for a full disk the fix."""
    what = f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{what}; free disk space there or point {SCRATCH_OPTION} at a disk with room"
    return what


def peak_rss() -> int:
    """This process's peak resident memory so far, in bytes: its address space's high-water mark
    (getrusage's would count the image of the process it was forked from, before its exec)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) * 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def serve(env: PartitionWorkerEnv, work: HostWork) -> None:
    """Answer operations until the coordinator says exit (or abort)."""
    credentials = work.credentials
    me = P.HostAddress(env.machine_id, 0, env.host, env.port)
    label = f"partition host {env.machine_id}"
    try:
        sock = ServerSocket(bind_endpoint(env.host, env.port), env.timeouts.request, credentials, label, me.audience)
    except Exception as exc:
        raise DistGraphError(f"machine {env.machine_id}: cannot listen on {env.host}:{env.port} ({exc}); is another "
                             f"job using the port?") from None
    ops = {P.OPEN: work.open, P.LAYOUT: work.layout, P.DATA_ROWS: work.data_rows, P.DEGREES: work.degrees,
           P.DEGREE_ROWS: work.degree_rows, P.ADJACENCY: work.adjacency_rows, P.ADJACENCY_BUCKET: work.adjacency_bucket,
           P.OLD2NEW: work.old2new, P.CLEAR: work.clear, P.PLAN: work.plan, P.NODE_DATA: work.node_data,
           P.NODE_ROWS: work.node_rows, P.SHUFFLE: work.shuffle, P.EDGES: work.edges, P.WRITE: work.write,
           P.EDGE_MAP_ROWS: work.edge_map_rows, P.MAP_ROWS: work.map_rows, P.COMMIT: work.commit,
           P.NEW_IDS: work.lookup, P.DEGREE_IDS: work.degree_ids}
    task: _Task | None = None
    try:
        while True:
            if task is not None and not task.thread.is_alive():
                sock.send(task.identity, {**task.reply[0], "rid": task.rid}, task.reply[1])
                task = None
            if not sock.poll(POLL_SECONDS):
                continue
            received = sock.recv()
            if received is None:  # a connection's challenge exchange, handled by the socket
                continue
            identity, frames = received
            try:
                header, specs = read_header(frames[0])
                arrays = unpack_arrays(frames[1:], specs)
            except (WireError, IndexError) as exc:
                sock.send(identity, {"ok": False, "kind": "input", "error": f"machine {env.machine_id}: {exc}"})
                continue
            op, rid = header.get("op"), header.get("rid")
            if op == P.PROGRESS:
                sock.send(identity, {"ok": True, "rid": rid, "done": work.progress})
            elif op in (P.EXIT, P.ABORT):
                sock.send(identity, {"ok": True, "rid": rid, "peak_rss": peak_rss()})
                return
            elif op not in ops:
                sock.send(identity, {"ok": False, "rid": rid, "kind": "input", "error": f"unknown op {op!r}"})
            elif op in P.BACKGROUND:
                if task is not None:
                    sock.send(identity, {"ok": False, "rid": rid, "error": f"{op!r} while another operation runs"})
                    continue
                work.progress = 0
                task = _Task(ops[op], identity, rid, header, arrays)
            else:
                values, out = _answer(ops[op], header, arrays)
                sock.send(identity, {**values, "rid": rid}, out)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the launcher's stop does not cut the clean-up short
        sock.close()
        work.stopping.set()
        if task is not None:  # an operation still running stops at its next piece or wait
            task.thread.join(TASK_END_SECONDS)
        work.cleanup()


def main(report_fd: int, guard_fd: int) -> int:
    """Serve one run: `report_fd` the pipe that tells the guard the run's folders, `guard_fd`
    the lifeline from it (this process ends, cleaning up, when the guard is gone)."""
    make_private()
    env = PartitionWorkerEnv.from_environ()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the launcher stops it: clean up on the way out
    work = HostWork(env.machine_id, Credentials(env.secret.encode(), env.encrypt), env.timeouts.request,
                    lambda told: _tell(report_fd, told))
    label = f"partition host {env.machine_id}"
    watch(guard_fd, None, label, "its guard", work.cleanup)
    if env.lifeline_fd is not None:
        watch(env.lifeline_fd, None, label, "distgraph partition", work.cleanup)
    try:
        serve(env, work)
    except DistGraphError as exc:
        print(f"machine {env.machine_id}: {exc}", file=sys.stderr, flush=True)
        return 2
    except OSError as exc:
        print(f"machine {env.machine_id}: {disk_error(exc)}", file=sys.stderr, flush=True)
        return 2
    return 0


def _tell(fd: int, told: dict) -> None:
    """One line to the guard (gone: its lifeline ends this process anyway)."""
    try:
        os.write(fd, (json.dumps(told) + "\n").encode())
    except OSError:
        pass
