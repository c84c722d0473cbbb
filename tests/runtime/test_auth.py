"""Every connection proves the job's secret: a peer without it, with another job's, or
replaying a recorded handshake is refused before it can issue any operation; with
encryption the job's traffic is CURVE-encrypted and a plain client is refused too. The
launcher hands the secret to processes in their environment only, never on a command line."""

import os
import re
import secrets
import select
import socket
import sys
import threading
import time

import pytest
import torch
import zmq
from zmq.utils.monitor import recv_monitor_message

from distgraph.cluster.ip_config import PeerAddress, parse_ip_config, server_addresses
from distgraph.rpc import PeerError, wire
from distgraph.rpc.auth import Credentials
from distgraph.rpc.transport import ANSWER_OP, Connections, Request

from zmtp import ZAP_REFUSAL, replay as _replay

from .conftest import SCRIPTS, Cluster, answer_challenge, as_trainer


@pytest.fixture
def cluster(parts, tmp_path):
    c = Cluster(parts[2], tmp_path / "ip_config.txt", [1, 1])
    yield c
    c.stop()


def _peers(cluster):
    return server_addresses(parse_ip_config(cluster.ip_config), 1)


REFUSED = {zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
           zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL}  # (a loaded peer may close before it says why)


def _ping(endpoint: str, setup, served: bool = True, answer=None) -> tuple[dict | None, list[int]]:
    """Send one `ping` with a raw socket prepared by `setup`, after answering the server's
    challenge as `answer` = (credentials, audience) when given: (reply or None, monitor events).
    A reply is waited for up to 60 s when the ping should be `served` (a loaded machine may
    take seconds), 3 s when it should not (what would come later goes unseen); the events
    of a ping not served, until the handshake's refusal (up to 60 s)."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    setup(sock)
    sock.linger = 0
    monitor = sock.get_monitor_socket()
    sock.connect(endpoint)
    try:
        if answer is not None:
            assert answer_challenge(sock, *answer)["ok"]
        try:  # (not blocking: a server that refused the handshake first leaves no pipe to queue on)
            sock.send_multipart(wire.pack({"op": "ping", "rid": 1}), copy=True, flags=zmq.NOBLOCK)
        except zmq.Again:
            reply = None
        else:
            reply = wire.unpack(sock.recv_multipart())[0] if sock.poll(60_000 if served else 3000) else None
        events = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if monitor.poll(100):
                events.append(recv_monitor_message(monitor)["event"])
            elif served or set(events) & REFUSED:
                break
        return reply, events
    finally:
        sock.disable_monitor()
        monitor.close(linger=0)
        sock.close()


def test_only_peers_that_prove_the_secret_are_served(cluster):
    peer = _peers(cluster)[0]
    reply, _ = _ping(peer.endpoint, lambda s: cluster.credentials.client(s, peer.audience),
                     answer=(cluster.credentials, peer.audience))
    assert reply["ok"] and reply["machine_id"] == 0
    reply, _ = _ping(peer.endpoint, lambda s: cluster.credentials.client(s, peer.audience))  # no answer given
    assert not reply["ok"] and "did not answer this server's challenge" in reply["error"]
    for setup in (lambda s: None,  # no credentials at all
                  lambda s: Credentials(secrets.token_hex(32).encode()).client(s, peer.audience)):  # another job's
        reply, events = _ping(peer.endpoint, setup, served=False)
        assert reply is None  # not a single operation
        assert set(events) & REFUSED, events


def test_a_proof_is_good_for_its_own_server_once(cluster):
    """The PLAIN proof names the server it was made for and is accepted once: the same
    credentials fail at another server, and at their own server on a second connection."""
    a, b = _peers(cluster)
    made = zmq.Context.instance().socket(zmq.DEALER)
    cluster.credentials.client(made, a.audience)
    username, password = made.plain_username, made.plain_password
    made.close()

    def reuse(sock):
        sock.plain_username, sock.plain_password = username, password

    assert _ping(b.endpoint, reuse, served=False)[0] is None  # made for server a: server b refuses it
    assert _ping(a.endpoint, reuse, answer=(cluster.credentials, a.audience))[0]["ok"]  # its own server, once
    assert _ping(a.endpoint, reuse, served=False)[0] is None


class _Recorder:
    """A TCP relay on loopback that records every byte a client sends through it to `upstream`:
    what someone watching the wire sees of one connection."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream, self.sent = upstream, bytearray()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._relay, daemon=True)
        self._thread.start()

    def _relay(self) -> None:
        client, _ = self.listener.accept()
        server = socket.create_connection(self.upstream)
        pairs = {client: server, server: client}
        with client, server:
            while not self._stop.is_set():
                for sock in select.select(list(pairs), [], [], 0.05)[0]:
                    data = sock.recv(1 << 16)
                    if not data:
                        return
                    if sock is client:
                        self.sent += data
                    pairs[sock].sendall(data)

    def close(self) -> bytes:
        self._stop.set()
        self._thread.join(10)
        self.listener.close()
        return bytes(self.sent)


def _record_ping(peer, upstream: tuple[str, int], credentials) -> bytes:
    """The bytes a client sends for a handshake with `peer`, the answer to its challenge and one
    `ping`, relayed to `upstream`."""
    recorder = _Recorder(upstream)
    via = PeerAddress(peer.machine_id, peer.server_id, "127.0.0.1", recorder.port)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    credentials.client(sock, via.audience)
    sock.linger = 0
    sock.connect(via.endpoint)
    try:
        assert answer_challenge(sock, credentials, via.audience)["ok"]
        sock.send_multipart(wire.pack({"op": "ping", "rid": 1}), copy=True)
        assert sock.poll(60_000) and wire.unpack(sock.recv_multipart())[0]["ok"]  # answered when live
    finally:
        sock.close()
    time.sleep(0.2)  # the relay forwards what is still in flight
    return recorder.close()


def _host_port(peer) -> tuple[str, int]:
    return peer.host, peer.port


def test_a_recorded_connection_replayed_on_the_wire_is_refused(cluster, parts, tmp_path):
    """A trainer's real connection to server a (handshake, challenge answered, a request),
    recorded byte for byte and replayed on new TCP connections: to server b of the job, to
    server a later, to a server of another job, and to the same server of a later run of the
    job with the same secret (its handshake passes there: that server has not seen the nonce;
    the challenge is new). None answers a single request."""
    a, b = _peers(cluster)
    recorded = _record_ping(a, _host_port(a), cluster.credentials)
    assert b"PLAIN" in recorded and b"ping" in recorded and ANSWER_OP.encode() in recorded
    until = (ZAP_REFUSAL, b"machine_id", b"did not answer")

    other = Cluster(parts[1], tmp_path / "other_job.txt", [1], timeout=5.0)
    try:
        for target in (b, a, _peers(other)[0]):
            got = _replay(recorded, _host_port(target), until)
            assert got.endswith(ZAP_REFUSAL) and b"machine_id" not in got, (target, got[-40:])
    finally:
        other.stop()
    assert "refused a connection from 127.0.0.1" in "".join(cluster.stderr[(1, 0)])
    cluster.stop()

    later = Cluster(parts[2], tmp_path / "later_run.txt", [1, 1], timeout=5.0, secret=cluster.secret)
    try:
        got = _replay(recorded, _host_port(_peers(later)[0]), until)
        assert ZAP_REFUSAL not in got and b"did not answer this server's challenge" in got, got[-80:]
        assert b"machine_id" not in got
    finally:
        later.stop()


def test_a_client_with_another_secret_gets_an_error_naming_the_server(cluster):
    peer = _peers(cluster)[1]
    conns = Connections([peer], 60.0, Credentials(secrets.token_hex(32).encode()))  # the refusal comes first
    try:
        with pytest.raises(PeerError, match=rf"{re.escape(str(peer))} refused this process's connection"):
            conns.call([Request(0, {"op": "ping"})])
    finally:
        conns.close()
    deadline = time.monotonic() + 60  # the server printed it before refusing; the test reads it as it comes
    while "refused a connection from 127.0.0.1 that did not prove it belongs to the job" not in "".join(
            cluster.stderr[(1, 0)]):
        assert time.monotonic() < deadline, "".join(cluster.stderr[(1, 0)])
        time.sleep(0.05)


def test_encrypted_job(parts, tmp_path):
    cluster = Cluster(parts[2], tmp_path / "ip_config.txt", [1, 1], encrypt=True)
    try:
        with as_trainer(cluster, host_shm=False) as dist:  # rows of machine 1 travel, encrypted
            feat = dist.DistTensor((2000, 16), torch.float32, "node~_N~feat")
            assert feat[torch.arange(2000)].abs().sum() > 0
        plain = Credentials(cluster.secret.encode())  # the right secret, but unencrypted
        peer = _peers(cluster)[0]
        assert _ping(peer.endpoint, lambda s: plain.client(s, peer.audience), served=False)[0] is None
        other = Credentials(secrets.token_hex(32).encode(), True)  # encrypted, another job's keys
        assert _ping(peer.endpoint, lambda s: other.client(s, peer.audience), served=False)[0] is None
        encrypted = Credentials(cluster.secret.encode(), True)
        assert _ping(peer.endpoint, lambda s: encrypted.client(s, peer.audience),
                     answer=(encrypted, peer.audience))[0]["ok"]
    finally:
        cluster.stop()
    said = "".join(cluster.stderr[(0, 0)])  # the CURVE server printed the refused address, once
    assert said.count("refused a connection from 127.0.0.1 that did not prove it belongs to the job") == 1, said


def test_the_secret_is_never_on_a_command_line(parts, tmp_path, launches):
    job = launches(tmp_path, parts[2], [1, 1], f"{sys.executable} {SCRIPTS / 'wait_or_fail.py'} wait",
                   num_samplers=0)
    job.wait_for("ready", count=2)
    from .conftest import job_pids

    pids = job_pids(job.session)
    found = set()
    for pid in pids:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"DISTGRAPH_SECRET="):
                    found.add(item.split(b"=", 1)[1])
        assert os.stat(f"/proc/{pid}/environ").st_mode & 0o077 == 0  # readable by its owner only
    assert len(found) == 1 and len(next(iter(found))) == 64  # one secret for the job, in every process
    secret = next(iter(found))
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                assert secret not in open(f"/proc/{entry.name}/cmdline", "rb").read()
            except OSError:
                continue
