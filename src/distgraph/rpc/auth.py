"""Peers of a job prove that they know its secret before any operation is served.

The launcher makes a secret per job and hands it to every process in its environment
(never on a command line, never in a file). A client connects with ZeroMQ's PLAIN
mechanism: its user name is a fresh random nonce, its password HMAC-SHA256 over the
protocol version, the *audience* (the identity of the one server it is meant for, e.g.
"server 0 of machine 1") and the nonce. The secret never crosses the wire, and a recorded
handshake is worth nothing anywhere else or later: another server computes the MAC over its
own audience and refuses it, and the server it was made for accepts each nonce once, so a
replay on a later connection is refused too. A server carries its audience in the socket's
ZAP domain, which the handler checks the MAC against; another job has another secret.

A handshake proves the secret, but a recording of it would prove it again to a server that
has not seen its nonce: a server of a later run of a job with the same secret (a torchrun
recipe's secret file is reused run after run). So before its first operation every
connection also answers a fresh challenge of the server it reached: the server sends random
bytes, the client returns HMAC-SHA256 over them and the audience, and the server serves no
operation on that connection until the answer is right (`challenge`, `answer`, `answers`).
A recording answers a challenge that is gone: replayed into any later run, or any server,
it gets no reply but the refusal.

The listening side checks in a ZAP handler thread and refuses anything else, before the
connection carries a single message; the refused peer's ZeroMQ reports the refusal
(`EVENT_HANDSHAKE_FAILED_AUTH`), which the transport turns into an error naming the server.
The check happens once per connection, so messages cost nothing more. PLAIN authenticates
clients, not servers, and does not hide or protect traffic after the handshake; with
`encrypt`, ZeroMQ's CURVE replaces it (the server's and the clients' key pairs derive from
the secret, the handler checks the client's key), which also authenticates the server and
encrypts and authenticates every message. docs/architecture.md states the threat model.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sys
import threading
from dataclasses import dataclass
from typing import Callable

import zmq
from zmq.utils import z85
from zmq.utils.monitor import recv_monitor_message

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
DOMAIN_PREFIX = b"distgraph:"  # + the server's audience: the ZAP domain of a job's listening socket
PLAIN_VERSION = b"distgraph-plain-2"
NONCE_BYTES = 16
CHALLENGE_VERSION = b"distgraph-challenge-1"
REFUSAL = "distgraph: this peer did not prove it belongs to the job (a wrong or missing job secret)"


def _curve_pair(secret: bytes, role: bytes) -> tuple[bytes, bytes]:
    private = z85.encode(hashlib.sha256(secret + b"/curve/" + role).digest())
    return zmq.curve_public(private), private


def _proof(secret: bytes, audience: bytes, nonce: bytes) -> bytes:
    message = b"\0".join((PLAIN_VERSION, audience, nonce))
    return hmac.new(secret, message, hashlib.sha256).hexdigest().encode()


@dataclass(frozen=True)
class Credentials:
    """A job's secret, and whether its traffic is encrypted."""

    secret: bytes
    encrypt: bool = False

    @classmethod
    def new(cls, encrypt: bool = False) -> "Credentials":
        return cls(secrets.token_hex(32).encode(), encrypt)

    def client(self, sock: zmq.Socket, audience: str) -> None:
        """Make `sock` prove the secret to the one server called `audience` when it connects
        (with a proof that server accepts once)."""
        if self.encrypt:
            server_public, _ = _curve_pair(self.secret, b"server")
            public, private = _curve_pair(self.secret, b"client")
            sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = server_public, public, private
        else:
            nonce = secrets.token_hex(NONCE_BYTES).encode()
            sock.plain_username = nonce
            sock.plain_password = _proof(self.secret, audience.encode(), nonce)

    def server(self, sock: zmq.Socket, audience: str) -> None:
        """Make `sock` (before it binds) accept only peers that prove the secret to `audience`;
        an `Authenticator` must run in its context."""
        sock.zap_domain = DOMAIN_PREFIX + audience.encode()
        if self.encrypt:
            public, private = _curve_pair(self.secret, b"server")
            sock.curve_server, sock.curve_publickey, sock.curve_secretkey = True, public, private
        else:
            sock.plain_server = True

    @staticmethod
    def challenge() -> bytes:
        """A server's fresh challenge for one connection."""
        return secrets.token_hex(NONCE_BYTES).encode()

    def answer(self, audience: str, challenge: bytes) -> bytes:
        """A client's answer to `challenge` from the server called `audience`."""
        message = b"\0".join((CHALLENGE_VERSION, audience.encode(), challenge))
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest().encode()

    def answers(self, audience: str, challenge: bytes, answer: bytes) -> bool:
        """Whether `answer` is the answer to this server's `challenge`."""
        return hmac.compare_digest(answer, self.answer(audience, challenge))

    def accepts(self, domain: bytes, mechanism: bytes, credentials: list[bytes], seen: set[bytes]) -> bool:
        """Whether a handshake to the socket of ZAP `domain` proves the secret; a PLAIN nonce
        is accepted once (added to `seen`)."""
        if not domain.startswith(DOMAIN_PREFIX):
            return False
        if self.encrypt:
            return mechanism == b"CURVE" and len(credentials) == 1 and hmac.compare_digest(
                z85.encode(credentials[0]), _curve_pair(self.secret, b"client")[0])
        if mechanism != b"PLAIN" or len(credentials) != 2:
            return False
        nonce, proof = credentials
        expected = _proof(self.secret, domain[len(DOMAIN_PREFIX):], nonce)
        if len(nonce) != 2 * NONCE_BYTES or nonce in seen or not hmac.compare_digest(proof, expected):
            return False
        seen.add(nonce)
        return True


# a listening socket's handshakes that failed before or in its ZAP check (a CURVE handshake
# with the wrong keys, or a PLAIN client at a CURVE server, never reaches the handler)
_FAILED_HANDSHAKES = zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | \
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL


class Authenticator:
    """The ZAP handler of one ZeroMQ context: a thread answering its handshakes, which also
    prints each address refused, once, whether its ZAP check or its handshake failed."""

    def __init__(self, context: zmq.Context, credentials: Credentials, label: str):
        self.credentials, self.label = credentials, label
        self._sock = context.socket(zmq.REP)
        self._sock.linger = 0
        self._sock.bind(ZAP_ENDPOINT)
        self._monitors: list[tuple[zmq.Socket, Callable[[int], None] | None]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._seen: set[bytes] = set()  # PLAIN nonces accepted: a handshake proves the secret once
        self._told: set[str] = set()  # addresses whose refusal was printed (their ZeroMQ retries)
        self._thread = threading.Thread(target=self._serve, name="distgraph-auth", daemon=True)
        self._thread.start()

    def watch(self, sock: zmq.Socket, on_disconnect: Callable[[int], None] | None = None) -> None:
        """Print the refused handshakes of listening socket `sock` too (before it binds), and
        hand `on_disconnect` the file descriptor of each of its connections that ends."""
        events = _FAILED_HANDSHAKES | (zmq.EVENT_DISCONNECTED if on_disconnect is not None else 0)
        with self._lock:
            self._monitors.append((sock.get_monitor_socket(events), on_disconnect))

    def _refused(self, address: str) -> None:
        if address not in self._told:
            self._told.add(address)
            print(f"{self.label}: refused a connection from {address} that did not prove it belongs to the job",
                  file=sys.stderr, flush=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            poller = zmq.Poller()
            poller.register(self._sock, zmq.POLLIN)
            with self._lock:
                monitors = list(self._monitors)
            for m, _ in monitors:
                poller.register(m, zmq.POLLIN)
            ready = dict(poller.poll(200))
            for m, on_disconnect in monitors:
                if not ready.get(m):
                    continue
                event = recv_monitor_message(m)
                if event["event"] & _FAILED_HANDSHAKES:
                    endpoint = event.get("endpoint", b"")
                    endpoint = endpoint.decode(errors="replace") if isinstance(endpoint, bytes) else str(endpoint)
                    self._refused(endpoint.removeprefix("tcp://").rsplit(":", 1)[0])
                elif event["event"] == zmq.EVENT_DISCONNECTED and on_disconnect is not None:
                    on_disconnect(int(event["value"]))
            if not ready.get(self._sock):
                continue
            frames = self._sock.recv_multipart()
            version, request_id, domain, address, _identity, mechanism, *credentials = frames + [b""] * (6 - len(frames))
            ok = self.credentials.accepts(domain, mechanism, credentials, self._seen)
            if not ok:
                self._refused(address.decode(errors="replace"))
            self._sock.send_multipart([version or b"1.0", request_id, b"200" if ok else b"400",
                                       b"OK" if ok else REFUSAL.encode(), b"job" if ok else b"", b""])

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for m, _ in self._monitors:
            m.close(linger=0)
        self._sock.close()
