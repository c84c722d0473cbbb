"""A launched trainer's sampler processes (`--num_samplers`), which sample its mini-batches.

The pool is started once per trainer, by `initialize` (as DGL does), and every loader of the
trainer uses it: a loader's collator is described by a small JSON spec, which a worker builds
the first time a job names it and keeps (loaders with the same settings share it), so a new
loader costs no new process. A worker is `python -m distgraph.dataloading.sampler_worker`,
started by the trainer with its environment and the sampler role (`sampler_env`), so no user
code runs in it. It connects to the servers, and answers seed batches over a ZeroMQ pair on
loopback, in the wire format (msgpack header + raw array buffers; no pickle); the loader
decodes the replies (`dataloading.batch_wire`). Each iteration of a loader is a run that keeps
`PREFETCH` batches per worker in flight and yields them in order; runs may interleave (a
worker's replies for another run are kept for it); workers skip the queued jobs of an
abandoned run, and its replies are dropped. Every send and receive is bounded and watches the
worker's process, so a worker that fails or dies becomes an error naming it, never a hang;
workers hold a lifeline to the trainer (`cluster.lifeline`) and end with it, whatever they are
doing.

The runtime starts the pool and closes it at exit; this module imports no loader code, so the
runtime sits below the loaders that use the pool.
"""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Iterator

import zmq

from ..cluster.env import Timeouts, sampler_env
from ..cluster.lifeline import Lifeline
from ..errors import DistGraphError
from ..rpc.auth import Authenticator, Credentials
from ..rpc.wire import pack, unpack

if TYPE_CHECKING:
    import torch

PREFETCH = 2
POLL_MS = 500
STOP_SECONDS = 10.0  # for the workers to say goodbye to the servers and exit
ENDPOINT = "DISTGRAPH_SAMPLER_ENDPOINT"


def worker_audience(rank: int, index: int) -> str:
    """Whom a sampler process proves the job secret to: its trainer's socket for it (`rpc.auth`)."""
    return f"sampler {index} of trainer {rank}"


class _Worker:
    def __init__(self, ctx: zmq.Context, rank: int, index: int, credentials: Credentials):
        self.index = index
        self.sock = ctx.socket(zmq.PAIR)
        # only a process that proves the job's secret to this worker's socket can be this worker
        credentials.server(self.sock, worker_audience(rank, index))
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.lifeline = Lifeline()
        env = {**sampler_env(index, self.lifeline.read_fd), ENDPOINT: f"tcp://127.0.0.1:{port}", "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "distgraph.dataloading.sampler_worker"], env=env,
                                     pass_fds=(self.lifeline.read_fd,))
        self.lifeline.started()
        self.specs: set[int] = set()  # the collator specs this worker has been sent

    def describe(self) -> str:
        return f"sampler process {self.index} (pid {self.proc.pid})"


class SamplerPool:
    """A trainer's `num` sampler processes, shared by all its loaders. They start at once and
    are waited for on first use, so their start-up overlaps the trainer's own."""

    def __init__(self, num: int, rank: int, credentials: Credentials, timeouts: Timeouts):
        self.startup_timeout, self.batch_timeout = timeouts.startup, timeouts.request
        self.zmq = zmq.Context()
        self.authenticator = Authenticator(self.zmq, credentials, f"distgraph trainer (rank {rank})")
        self.workers = [_Worker(self.zmq, rank, i, credentials) for i in range(num)]
        self.ready = False
        self.specs: dict[str, tuple[int, list]] = {}  # a collator spec (as JSON, array ids) -> its id, arrays
        self.runs = 0
        self.live: dict[int, dict[int, tuple[dict, list]]] = {}  # run -> replies received ahead of their turn
        self.stopped_by: str | None = None
        atexit.register(self.close)

    def _start(self) -> None:
        """Wait until every worker has said it is ready (once)."""
        if not self.workers:
            raise DistGraphError(f"this trainer's sampler processes were stopped after an error "
                                 f"({self.stopped_by or 'at exit'})")
        if not self.ready:
            for w in self.workers:
                header, _ = self._recv(w, self.startup_timeout)
                if header.get("error"):
                    self._fail(f"{w.describe()} failed to start: {header['error']}")
            self.ready = True

    def _fail(self, message: str):
        """Stop every worker and raise `message` (later uses of the pool repeat it)."""
        self.stopped_by = message
        self.close()
        raise DistGraphError(message)

    def _wait(self, w: _Worker, event: int, timeout: float, doing: str) -> None:
        """Wait until `w`'s socket is ready for `event` (bounded), watching that `w` stays alive."""
        waited = 0
        while not w.sock.poll(POLL_MS, event):
            waited += POLL_MS
            if w.proc.poll() is not None:
                self._fail(f"{w.describe()} died with exit code {w.proc.returncode} while the trainer was "
                           f"{doing}; see its output above")
            if waited >= timeout * 1000:
                self._fail(f"{w.describe()} did not respond for {timeout:g} s while the trainer was {doing}; "
                           f"see its output above")

    def _recv(self, w: _Worker, timeout: float) -> tuple[dict, list[torch.Tensor]]:
        """The next message of worker `w`."""
        self._wait(w, zmq.POLLIN, timeout, "waiting for a batch")
        return unpack(w.sock.recv_multipart(copy=False))

    def _send(self, w: _Worker, header: dict, arrays: list[torch.Tensor] = ()) -> None:
        """Send a message to worker `w` (a dead worker accepts nothing: `send` alone could block forever)."""
        self._wait(w, zmq.POLLOUT, self.batch_timeout, "sending it a job")
        w.sock.send_multipart(pack(header, list(arrays)), flags=zmq.NOBLOCK)

    def _job(self, w: _Worker, spec_id: int, spec: tuple[dict, list], header: dict, seeds: torch.Tensor) -> None:
        """Send `w` a batch to collate with spec `spec_id`, and the spec first if `w` lacks it."""
        if spec_id not in w.specs:
            self._send(w, {"spec_id": spec_id, "spec": spec[0]}, spec[1])
            w.specs.add(spec_id)
        self._send(w, {**header, "spec_id": spec_id}, [seeds])

    def _reply(self, run: int, i: int, w: _Worker) -> tuple[dict, list]:
        """Batch `i` of `run`, which worker `w` makes; replies of other runs that come first are
        kept for them (or dropped, for runs no longer iterated)."""
        kept = self.live[run]
        while i not in kept:
            header, arrays = self._recv(w, self.batch_timeout)
            other = self.live.get(header.get("run"))
            if other is not None and isinstance(header.get("batch"), int):
                other[header["batch"]] = (header, arrays)
        return kept.pop(i)

    def run(self, spec: dict, spec_arrays: list[torch.Tensor], batches: list[torch.Tensor],
            rng_seeds: list[int]) -> Iterator[tuple[dict, list[torch.Tensor]]]:
        """The mini-batches of `batches` (seed tensors, each with the seed of its random draws),
        collated as `spec` (with its arrays) describes, in order, each as its header and arrays
        (`batch_wire.decode` makes it whole); batch i is sampled by worker i mod n."""
        self._start()
        key = json.dumps([spec, [id(a) for a in spec_arrays]], sort_keys=True)
        if key not in self.specs:
            self.specs[key] = (len(self.specs), spec_arrays)  # holding the arrays keeps their ids unique
        spec_id = self.specs[key][0]
        self.runs += 1
        run, n = self.runs, len(self.workers)
        self.live[run] = {}
        sent = received = 0
        try:
            for i in range(len(batches)):
                while sent < len(batches) and sent < i + PREFETCH * n:
                    self._job(self.workers[sent % n], spec_id, (spec, spec_arrays),
                              {"run": run, "batch": sent, "seed": rng_seeds[sent]}, batches[sent])
                    sent += 1
                w = self.workers[i % n]
                header, arrays = self._reply(run, i, w)
                received += 1
                if header.get("error"):
                    raise DistGraphError(f"{w.describe()} could not sample batch {i}: {header['error']}")
                yield header, arrays
        finally:
            self.live.pop(run, None)
            for j in range(received, min(sent, received + n)) if self.workers else ():  # abandoned
                try:  # best effort, also when the pool is being garbage-collected: workers skip its queued jobs
                    self.workers[j % n].sock.send_multipart(pack({"cancel": run}), flags=zmq.NOBLOCK)
                except zmq.ZMQError:
                    pass

    def close(self) -> None:
        """Stop the workers (they say goodbye to the servers) and wait for them, a bounded time;
        then cut their lifelines, which ends any that are still there."""
        if not self.workers:
            return
        for w in self.workers:
            if w.proc.poll() is None:
                try:
                    w.sock.send_multipart(pack({"stop": True}), flags=zmq.NOBLOCK)
                except zmq.ZMQError:  # not connected, or dead: the lifeline ends it below
                    pass
        deadline = time.monotonic() + STOP_SECONDS
        for w in self.workers:
            try:
                w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            w.lifeline.close()
        for w in self.workers:
            try:
                w.proc.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
            w.sock.close()
        self.workers = []
        self.live.clear()
        self.authenticator.close()
        self.zmq.term()
        atexit.unregister(self.close)
