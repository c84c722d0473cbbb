"""`KVServer`: the request loop of one server process.

Data operations go to the `RequestHandler`; the loop itself keeps the session: who said
hello, the barrier (held by server 0 of machine 0), goodbyes and shutdown. It exits when
every expected trainer has said goodbye and no client is left, on a `shutdown` request,
or on SIGTERM/SIGINT; the store's shared memory is removed on the way out in every case.
(When the launcher dies, the process's lifeline removes it and ends the process.)
"""

from __future__ import annotations

import signal
from socket import socketpair
from dataclasses import dataclass, field

import zmq

from ..rpc.transport import ServerSocket
from ..rpc.wire import WireError, unpack_arrays, unpack_header
from .handler import RequestHandler
from .store import KVStore

POLL_SECONDS = 0.5
ROLES = ("trainer", "sampler", "client")


@dataclass
class _Barrier:
    parties: int = 0
    waiting: list[tuple[bytes, int]] = field(default_factory=list)
    values: list = field(default_factory=list)  # what each party brought, handed to all (never read here)


class KVServer:
    """Serve `store` on `socket` until the session ends."""

    def __init__(self, store: KVStore, socket: ServerSocket, expected_trainers: int, label: str):
        self.store, self.socket, self.label = store, socket, label
        self.lost: str | None = None  # why the session ended without every goodbye (a trainer went away)
        self.handler = RequestHandler(store)
        self.expected_trainers = expected_trainers
        self.clients: dict[bytes, str] = {}
        self.trainers_done = 0
        self.barrier = _Barrier()
        self.stopping = False
        self.signalled = False

    def serve(self) -> None:
        """Run until the session ends; always release the socket and shared memory. A signal
        wakes the loop at once (through `signal.set_wakeup_fd`), so SIGTERM ends a server in
        well under a second, idle or busy."""
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        wake_read, wake_write = socketpair()
        wake_read.setblocking(False)
        wake_write.setblocking(False)
        previous_fd = signal.set_wakeup_fd(wake_write.fileno(), warn_on_full_buffer=False)
        poller = zmq.Poller()
        poller.register(self.socket.socket, zmq.POLLIN)
        poller.register(wake_read, zmq.POLLIN)
        try:
            while not self.stopping:
                if dict(poller.poll(POLL_SECONDS * 1000)).get(self.socket.socket):
                    self._serve_one()
                for identity in self.socket.take_gone():
                    self._gone(identity)
        finally:
            signal.set_wakeup_fd(previous_fd)
            for s, h in previous.items():
                signal.signal(s, h)
            wake_read.close()
            wake_write.close()
            # stopped by a signal: replies still queued are not waited for
            self.socket.close(linger=0 if self.signalled else None)
            self.store.close()

    def _on_signal(self, signum: int, frame) -> None:
        self.stopping = self.signalled = True

    def _serve_one(self) -> None:
        received = self.socket.recv()
        if received is None:  # a connection's challenge exchange, handled by the socket
            return
        identity, frames = received
        try:
            header, specs = unpack_header(frames[0]) if frames else ({}, [])
        except WireError as exc:
            self.socket.send(identity, {"ok": False, "error": f"malformed request: {exc}"})
            return
        rid = header.get("rid") if isinstance(header.get("rid"), int) else None
        try:
            arrays = unpack_arrays(frames[1:], specs)
        except WireError as exc:
            self.socket.send(identity, {"rid": rid, "ok": False, "error": f"malformed request: {exc}"})
            return
        op = header.get("op")
        session = {"hello": self._hello, "goodbye": self._goodbye, "barrier": self._barrier,
                   "shutdown": self._shutdown}.get(op) if isinstance(op, str) else None
        if session is not None:
            reply = session(identity, header, rid)
            if reply is not None:
                self.socket.send(identity, {"rid": rid, **reply})
            return
        reply, out = self.handler(header, arrays)
        self.socket.send(identity, {"rid": rid, **reply}, out)

    def _hello(self, identity: bytes, header: dict, rid) -> dict:
        role = header.get("role")
        if role not in ROLES:
            return {"ok": False, "error": f"hello needs a role in {ROLES}, got {role!r}"}
        self.clients[identity] = role
        return {"ok": True, "machine_id": self.store.machine_id, "server_id": self.store.server_id}

    def _goodbye(self, identity: bytes, header: dict, rid) -> dict:
        role = self.clients.pop(identity, None)
        if role is None:
            return {"ok": False, "error": "goodbye from a client that did not say hello"}
        self.trainers_done += role == "trainer"
        if self.trainers_done >= self.expected_trainers and not self.clients:
            self.stopping = True
        return {"ok": True}

    def _gone(self, identity: bytes) -> None:
        """A connection ended (the socket watches them under `distgraph serve`): a trainer that
        leaves without its goodbye was killed or lost its host, so the job cannot finish."""
        if self.clients.pop(identity, None) == "trainer":
            self.lost = ("a trainer's connection ended without its goodbye (the trainer or its machine is gone): "
                         "the job cannot finish; stopping")
            self.stopping = True

    def _barrier(self, identity: bytes, header: dict, rid) -> dict | None:
        parties = header.get("parties")
        if not isinstance(parties, int) or isinstance(parties, bool) or parties < 1:
            return {"ok": False, "error": f"barrier needs a positive int 'parties', got {parties!r}"}
        if self.barrier.waiting and parties != self.barrier.parties:
            return {"ok": False, "error": f"barrier with {parties} parties while {self.barrier.parties} are expected"}
        self.barrier.parties = parties
        self.barrier.waiting.append((identity, rid))
        self.barrier.values.append(header.get("value"))
        if len(self.barrier.waiting) < parties:
            return None  # answered when the last party arrives
        for ident, r in self.barrier.waiting:
            self.socket.send(ident, {"rid": r, "ok": True, "values": self.barrier.values})
        self.barrier = _Barrier()
        return None

    def _shutdown(self, identity: bytes, header: dict, rid) -> dict:
        self.stopping = True
        return {"ok": True}

