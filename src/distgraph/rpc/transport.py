"""ZeroMQ transport: a ROUTER socket per server; in each client one DEALER connection per
server, requests scattered to several servers at once and their replies gathered. Every
connection proves the job's secret first (`auth`), then answers the server's challenge
before its first request (a recorded connection cannot: `auth`); a refused one is an error
naming the server.

Every wait is bounded. A connection that drops while a request is in flight (the server
process died) fails at once; a peer that stays silent fails after the timeout. Either way
the error names the server (machine id, server id, address).
"""

from __future__ import annotations

import collections
import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import zmq
from zmq.utils.monitor import recv_monitor_message

from ..cluster.ip_config import PeerAddress
from .auth import Authenticator, Credentials
from ..errors import DistGraphError, InputError
from . import wire

HEARTBEAT_MS = 1000  # zmq pings idle connections so a vanished host is noticed too
CLOSE_LINGER_MS = 2000  # how long a closing server keeps trying to deliver its last replies
# zmq gives a received frame this big a buffer of its own; smaller ones share one receive
# buffer (and may sit misaligned in it), so replies below this size are copied out
OWN_BUFFER_BYTES = 64 << 10
# a frame this big is sent from its own buffer; a smaller one is copied, which costs less than
# pyzmq's release of a borrowed buffer (a message to its collector thread, which takes Python's lock)
ZERO_COPY_BYTES = 1 << 20
CHECK_SECONDS = 0.2  # how often a waiting call runs its caller's check
LOST_PEER_SECONDS = 20.0  # a server that watches its clients' connections notices a silent host this soon
# TCP buffers of every connection, each way (the kernel caps them at net.core.[rw]mem_max and
# doubles them): a 5 MB reply fits at once, so the sender hands it over in one go instead
# of waiting for the receiver to drain an autotuned buffer.
SOCKET_BUFFER_BYTES = 8 << 20
# a connection's challenge and its answer, before any operation (`auth`); rid 0 is theirs alone
CHALLENGE_OP, ANSWER_OP, CHALLENGE_RID = "auth-challenge", "auth-answer", 0
UNANSWERED = ("this connection did not answer this server's challenge: no operation is served on it (a recorded "
              "connection replayed, or a client of another job)")


class PeerError(DistGraphError):
    """A server did not answer in time, dropped its connection, or sent a malformed reply."""


class RemoteError(DistGraphError):
    """A server answered a request with an error reply."""


class RemoteInputError(RemoteError, InputError):
    """A server refused a request because of its content (unknown tensor, bad ids, ...)."""


def send_frames(socket: zmq.Socket, frames: Sequence) -> None:
    """A multipart message, each frame copied into zmq or lent to it by its size (ZERO_COPY_BYTES)."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        socket.send(frame, zmq.SNDMORE if i < last else 0, copy=memoryview(frame).nbytes < ZERO_COPY_BYTES)


def remote_error(peer: PeerAddress, op, reply: dict) -> RemoteError:
    """The exception for an error reply; input errors stay `InputError`s across the wire."""
    cls = RemoteInputError if reply.get("kind") == "input" else RemoteError
    return cls(f"{peer} refused {op!r}: {reply.get('error', 'no reason given')}")


@dataclass
class Request:
    """One request: a header and arrays for `peer` (an index into the connection list);
    `out` optionally gives tensors that receive the reply's arrays in place. Small data
    requests are marked `merge`: those of one batch to one peer travel as one `many`
    message, answered by one reply (fewer messages, fewer wake-ups on both sides)."""

    peer: int
    header: dict
    arrays: Sequence[torch.Tensor] = ()
    out: Sequence[torch.Tensor | None] = ()
    merge: bool = False  # may share one message with the batch's other mergeable requests to `peer`


@dataclass
class Reply:
    header: dict
    arrays: list[torch.Tensor] = field(default_factory=list)


@dataclass
class Batch:
    """Requests in flight: request indices by message id, and the replies gathered so far."""

    requests: list[Request]
    timeout: float
    deadline: float
    pending: dict[int, list[int]] = field(default_factory=dict)
    replies: list = field(default_factory=list)

    def __post_init__(self):
        self.replies = [None] * len(self.requests)


class ServerSocket:
    """The listening side: receives requests with the sender's identity, replies to it; only
    peers that prove `credentials` to `audience` (this server's `PeerAddress.audience`) get through."""

    def __init__(self, endpoint: str, send_timeout: float, credentials: Credentials, label: str, audience: str,
                 watch_clients: bool = False):
        """`watch_clients`: note every answered connection that ends (`take_gone`), a silent
        peer's within LOST_PEER_SECONDS."""
        self.credentials, self.audience = credentials, audience
        self.watch_clients = watch_clients
        self._fds: dict[bytes, int] = {}  # answered connection -> its file descriptor (watch_clients)
        self._ended: collections.deque[int] = collections.deque()  # descriptors of ended connections
        self._answered: set[bytes] = set()  # identities of connections that answered their challenge
        self._challenges: dict[bytes, bytes] = {}  # identity -> the challenge it was sent
        self.authenticator = Authenticator(zmq.Context.instance(), credentials, label)
        self.socket = zmq.Context.instance().socket(zmq.ROUTER)
        credentials.server(self.socket, audience)
        self.authenticator.watch(self.socket, self._ended.append if watch_clients else None)
        self.socket.setsockopt(zmq.LINGER, 0)
        buffers(self.socket)
        self.socket.setsockopt(zmq.SNDTIMEO, int(send_timeout * 1000))
        self.socket.setsockopt(zmq.HEARTBEAT_IVL, HEARTBEAT_MS)
        self.socket.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(min(send_timeout, LOST_PEER_SECONDS) * 1000
                                                          if watch_clients else send_timeout * 1000))
        try:
            self.socket.bind(endpoint)
        except zmq.ZMQError:
            self.socket.close(linger=0)
            self.authenticator.close()
            raise

    def poll(self, timeout: float) -> bool:
        return bool(self.socket.poll(int(timeout * 1000), zmq.POLLIN))

    def recv(self) -> tuple[bytes, list] | None:
        """(sender identity, message frames) of a request; frames are zero-copy for large buffers.
        None when the message was a connection's challenge exchange (answered here) or came on a
        connection that has not answered its challenge (refused here)."""
        frames = self.socket.recv_multipart(copy=False)
        identity = frames[0].bytes
        if identity in self._answered:
            return identity, frames[1:]
        self._challenge_step(identity, frames[1:])
        if self.watch_clients and identity in self._answered:  # the connection's descriptor, to know its end
            self._fds[identity] = frames[0].get(zmq.SRCFD)
        return None

    def take_gone(self) -> list[bytes]:
        """The identities of answered connections that ended since the last call (`watch_clients`:
        the socket's monitor reports each ended connection's descriptor)."""
        gone = []
        while self._ended:
            fd = self._ended.popleft()
            for identity in [i for i, f in self._fds.items() if f == fd]:
                del self._fds[identity]
                self._answered.discard(identity)
                gone.append(identity)
        return gone

    def _challenge_step(self, identity: bytes, frames: list) -> None:
        try:
            header = wire.read_header(frames[0])[0] if frames else {}
        except wire.WireError:
            header = {}
        op, rid, answer = header.get("op"), header.get("rid"), header.get("answer")
        rid = rid if isinstance(rid, int) and not isinstance(rid, bool) else None
        if op == CHALLENGE_OP:
            self._challenges[identity] = self.credentials.challenge()
            self.send(identity, {"rid": rid, "ok": True, "challenge": self._challenges[identity].decode()})
            return
        sent = self._challenges.pop(identity, None)
        if op == ANSWER_OP and sent is not None and isinstance(answer, str) and \
                self.credentials.answers(self.audience, sent, answer.encode()):
            self._answered.add(identity)
            self.send(identity, {"rid": rid, "ok": True})
            return
        self.send(identity, {"rid": rid, "ok": False, "error": UNANSWERED})

    def send(self, identity: bytes, header: dict, arrays: Sequence[torch.Tensor] = ()) -> None:
        try:
            send_frames(self.socket, [identity, *wire.pack(header, arrays)])
        except zmq.Again:
            pass  # the client is gone or not reading; it will time out on its side

    def close(self, linger: float | None = None) -> None:
        """Close after flushing the last replies (a goodbye's answer must reach the client) for
        up to `linger` seconds (default CLOSE_LINGER_MS)."""
        if self.socket.closed:  # closed already (the request loop closes it; its owner again)
            return
        self.socket.disable_monitor()
        self.socket.close(linger=CLOSE_LINGER_MS if linger is None else int(linger * 1000))
        self.authenticator.close()


def buffers(socket: zmq.Socket) -> None:
    """Give `socket`'s TCP connections SOCKET_BUFFER_BYTES each way."""
    socket.setsockopt(zmq.SNDBUF, SOCKET_BUFFER_BYTES)
    socket.setsockopt(zmq.RCVBUF, SOCKET_BUFFER_BYTES)


_REFUSED = (zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
            zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)


class _Conn:
    """One DEALER connection with a monitor that reports drops and refusals."""

    def __init__(self, peer: PeerAddress, timeout: float, credentials: Credentials):
        self.peer = peer
        self.socket = zmq.Context.instance().socket(zmq.DEALER)
        credentials.client(self.socket, peer.audience)
        for opt, value in ((zmq.LINGER, 0), (zmq.SNDTIMEO, int(timeout * 1000)),
                           (zmq.HEARTBEAT_IVL, HEARTBEAT_MS), (zmq.HEARTBEAT_TIMEOUT, int(timeout * 1000))):
            self.socket.setsockopt(opt, value)
        buffers(self.socket)
        events = zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED
        for e in _REFUSED:
            events |= e
        self.monitor = self.socket.get_monitor_socket(events)
        self.socket.connect(peer.endpoint)
        self.credentials = credentials
        self.lost = False
        self.refused = False
        self.answered = False  # the server's challenge, before the first request

    def answer_challenge(self, timeout: float) -> None:
        """Ask the server for its challenge and answer it (before this connection's first request)."""
        deadline = time.monotonic() + timeout
        got = self._exchange({"op": CHALLENGE_OP, "rid": CHALLENGE_RID}, deadline)
        challenge = got.get("challenge")
        if isinstance(challenge, str):
            got = self._exchange({"op": ANSWER_OP, "rid": CHALLENGE_RID,
                                  "answer": self.credentials.answer(self.peer.audience, challenge.encode()).decode()},
                                 deadline)
        if not got.get("ok") or not isinstance(challenge, str):
            raise PeerError(f"{self.peer} refused this process's answer to its challenge: "
                            f"{got.get('error', 'no challenge sent')}")
        self.answered = True

    def _exchange(self, header: dict, deadline: float) -> dict:
        """Send one header-only message and wait (until `deadline`) for the server's reply header."""
        try:
            self.socket.send_multipart(wire.pack(header), copy=True)
        except zmq.Again:  # no connection to send on: refused (its handshake failed), or none made
            self.drain_monitor()
            raise (self.refusal() if self.refused else
                   PeerError(f"cannot send to {self.peer}; it is not accepting connections")) from None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PeerError(f"no reply from {self.peer} to its challenge within the timeout; the server "
                                f"died, hangs or is overloaded: check its output")
            if self.socket.poll(int(min(remaining, CHECK_SECONDS) * 1000), zmq.POLLIN):
                try:
                    return wire.read_header(self.socket.recv_multipart()[0])[0]
                except wire.WireError as exc:
                    raise PeerError(f"{self.peer} sent a malformed reply: {exc}") from None
            self.drain_monitor()
            if self.refused:
                raise self.refusal()

    def refusal(self) -> PeerError:
        """The error of a connection the server refused (its handshake failed on the job secret)."""
        return PeerError(f"{self.peer} refused this process's connection: it did not accept its proof of the job "
                         f"secret (a server of another job, or this process lacks the job's DISTGRAPH_SECRET)")

    def drain_monitor(self) -> None:
        while self.monitor.poll(0):
            event = recv_monitor_message(self.monitor)["event"]
            self.refused = self.refused or event in _REFUSED
            self.lost = event in (zmq.EVENT_DISCONNECTED, *_REFUSED)

    def close(self) -> None:
        self.socket.disable_monitor()
        self.monitor.close(linger=0)
        self.socket.close(linger=0)


class Connections:
    """One connection per server; `call` sends a batch of requests, then gathers replies."""

    def __init__(self, peers: Sequence[PeerAddress], timeout: float, credentials: Credentials,
                 numpy_replies: bool = False):
        """`numpy_replies`: replies' arrays come as numpy arrays (torch is never imported) rather
        than tensors."""
        self.peers = list(peers)
        self.timeout = timeout
        self.numpy_replies = numpy_replies
        self._conns = [_Conn(p, timeout, credentials) for p in self.peers]
        self._rids = itertools.count(1)
        self._poller = zmq.Poller()
        for c in self._conns:
            self._poller.register(c.socket, zmq.POLLIN)
            self._poller.register(c.monitor, zmq.POLLIN)
        self._by_socket = {c.socket: c for c in self._conns}
        self._by_monitor = {c.monitor: c for c in self._conns}
        self._inflight: dict[int, tuple[Batch, list[int]]] = {}  # message id -> (its batch, request indices)

    def call(self, requests: Sequence[Request], timeout: float | None = None,
             check: Callable[[], None] | None = None) -> list[Reply]:
        """Send every request, then wait (bounded) for all replies; raise the first error reply."""
        return self.wait(self.start(requests, timeout), check)

    def start(self, requests: Sequence[Request], timeout: float | None = None) -> "Batch":
        """Send every request at once and return without waiting. Several batches may be in
        flight: a reply is filed into its own batch whichever batch is being waited for."""
        timeout = self.timeout if timeout is None else timeout
        for conn in {self._conns[r.peer] for r in requests}:
            if not conn.answered:
                conn.answer_challenge(timeout)
        batch = Batch(list(requests), timeout, time.monotonic() + timeout)
        for indices in _messages(batch.requests):
            rid = next(self._rids)
            first = batch.requests[indices[0]]
            conn = self._conns[first.peer]
            if len(indices) == 1:
                frames = wire.pack({**first.header, "rid": rid}, first.arrays)
            else:
                parts = [batch.requests[i] for i in indices]
                frames = wire.pack({"op": wire.MANY, "rid": rid, "parts": [r.header for r in parts],
                                    "counts": [len(r.arrays) for r in parts]}, [a for r in parts for a in r.arrays])
            try:
                send_frames(conn.socket, frames)
            except zmq.Again:
                for sent in batch.pending:
                    self._inflight.pop(sent, None)
                raise PeerError(f"cannot send to {conn.peer} within {timeout:g} s; "
                                f"it is not accepting requests") from None
            batch.pending[rid] = indices
            self._inflight[rid] = (batch, indices)
        return batch

    def wait(self, batch: "Batch", check: Callable[[], None] | None = None) -> list[Reply]:
        """Gather the replies of a batch before its deadline; raise the first error reply.
        `check` runs at least every CHECK_SECONDS while waiting and may raise (e.g. when a
        process the replies depend on has ended)."""
        requests, pending = batch.requests, batch.pending
        try:
            for conn in {self._conns[requests[ix[0]].peer] for ix in pending.values()}:
                if conn.lost:  # dropped earlier and not reconnected since: fail now, not at the deadline
                    self._check_lost(conn, requests, pending)
            while pending:
                remaining = batch.deadline - time.monotonic()
                if check is not None:
                    check()
                    remaining = min(remaining, CHECK_SECONDS)
                ready = dict(self._poller.poll(max(0, int(remaining * 1000)))) if remaining > 0 else {}
                for sock in ready:
                    if sock in self._by_socket:
                        self._receive(self._by_socket[sock])
                for sock in ready:
                    if sock in self._by_monitor:
                        self._check_lost(self._by_monitor[sock], requests, pending)
                if pending and time.monotonic() >= batch.deadline:
                    waiting = sorted({str(self.peers[requests[ix[0]].peer]) for ix in pending.values()})
                    ops = sorted({str(requests[i].header.get("op")) for ix in pending.values() for i in ix})
                    raise PeerError(f"no reply from {', '.join(waiting)} within {batch.timeout:g} s (op "
                                    f"{', '.join(ops)}); the server died, hangs or is overloaded: check its output")
        finally:
            for rid in pending:  # abandoned after an error: their replies are dropped when they come
                self._inflight.pop(rid, None)
        for req, rep in zip(requests, batch.replies):
            if not rep.header.get("ok", False):
                raise remote_error(self.peers[req.peer], req.header.get("op"), rep.header)
        return batch.replies

    def _check_lost(self, conn: _Conn, requests: Sequence[Request], pending: dict[int, list[int]]) -> None:
        conn.drain_monitor()
        waited_on = any(self._conns[requests[ix[0]].peer] is conn for ix in pending.values())
        if conn.refused and waited_on:
            raise conn.refusal()
        if conn.lost and waited_on:
            raise PeerError(f"lost the connection to {conn.peer} while waiting for its reply; "
                            f"the server process died or the network failed: check its output")

    def _receive(self, conn: _Conn) -> None:
        """Read every complete reply waiting on `conn` into its batch, straight into the
        request's `out` tensors when given."""
        sock = conn.socket
        while sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            try:
                header, specs = wire.read_header(sock.recv(copy=True))
            except wire.WireError as exc:
                self._discard_rest(sock)
                raise PeerError(f"{conn.peer} sent a malformed reply: {exc}") from None
            rid = header.get("rid")
            batch, indices = self._inflight.pop(rid, (None, None)) if isinstance(rid, int) else (None, None)
            counts = _part_counts(header, indices, len(specs)) if batch is not None else None
            if batch is not None and counts is None:
                self._discard_rest(sock)
                raise PeerError(f"{conn.peer} sent a reply whose parts do not match the {len(indices)} requests "
                                f"of its message")
            out = [] if batch is None else [
                target for i, n in zip(indices, counts) for target in _padded(batch.requests[i].out, n)]
            arrays = []
            for i, (name, shape) in enumerate(specs):
                if not sock.getsockopt(zmq.RCVMORE):
                    raise PeerError(f"{conn.peer} sent a reply with fewer frames than its header declares")
                if self.numpy_replies:
                    arrays.append(wire.numpy_from_buffer(sock.recv(copy=True), name, shape, i))
                    continue
                dtype = wire.parse_dtype(name)
                target = out[i] if i < len(out) else None
                fits = target is not None and target.dtype == dtype and target.is_contiguous()
                if fits and target.numel() == _numel(shape):
                    expected = wire.nbytes(dtype, shape)
                    size = sock.recv_into(wire.array_buffer(target)) if expected else _skip(sock)
                    if size != expected:
                        raise PeerError(f"{conn.peer} sent {size} bytes for an array declared as {expected}")
                    arrays.append(target.view(shape))
                else:
                    array = wire.array_from_buffer(sock.recv(copy=False).buffer, dtype, shape, i)
                    size = array.element_size()
                    if array.numel() * size < OWN_BUFFER_BYTES or array.data_ptr() % size:
                        array = array.clone()  # never hand out a view that pins zmq's shared buffer
                    arrays.append(array)
            if sock.getsockopt(zmq.RCVMORE):
                self._discard_rest(sock)
                raise PeerError(f"{conn.peer} sent a reply with more frames than its header declares")
            if batch is not None:  # replies to requests abandoned after an earlier error are dropped
                del batch.pending[rid]
                # a message refused as a whole gives each of its requests that error
                parts = header["parts"] if "parts" in header else [header] * len(indices)
                start = 0
                for i, part, n in zip(indices, parts, counts):
                    batch.replies[i] = Reply(part, arrays[start:start + n])
                    start += n

    @staticmethod
    def _discard_rest(sock: zmq.Socket) -> None:
        while sock.getsockopt(zmq.RCVMORE):
            sock.recv(copy=False)

    def close(self) -> None:
        for c in self._conns:
            c.close()


def _messages(requests: Sequence[Request]) -> list[list[int]]:
    """Request indices per message: mergeable requests to one peer share one (up to wire.MERGE_PARTS),
    every other request is a message of its own."""
    messages, open_by_peer = [], {}
    for i, req in enumerate(requests):
        group = open_by_peer.get(req.peer) if req.merge else None
        if group is not None and len(group) < wire.MERGE_PARTS:
            group.append(i)
            continue
        messages.append([i])
        if req.merge:
            open_by_peer[req.peer] = messages[-1]
    return messages


def _part_counts(header: dict, indices: list[int], num_arrays: int) -> list[int] | None:
    """Arrays per request of a reply to a message of `indices`, or None if the reply does not fit."""
    if "parts" not in header:  # one request's reply, or a merged message refused as a whole
        return [num_arrays] if len(indices) == 1 else [0] * len(indices) if num_arrays == 0 else None
    parts, counts = header.get("parts"), header.get("counts")
    ok = (isinstance(parts, list) and isinstance(counts, list) and len(parts) == len(counts) == len(indices)
          and all(isinstance(p, dict) for p in parts)
          and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)
          and sum(counts) == num_arrays)
    return counts if ok else None


def _padded(out: Sequence[torch.Tensor | None], n: int) -> list[torch.Tensor | None]:
    return [out[i] if i < len(out) else None for i in range(n)]


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _skip(sock: zmq.Socket) -> int:
    return len(sock.recv(copy=True))
