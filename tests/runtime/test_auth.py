"""Every connection proves the job's secret: a peer without it, with another job's, or
replaying a recorded handshake is refused before it can issue any operation; with
encryption the job's traffic is CURVE-encrypted and a plain client is refused too. The
launcher hands the secret to processes in their environment only, never on a command line."""

import os
import re
import secrets
import sys
import time

import pytest
import torch
import zmq
from zmq.utils.monitor import recv_monitor_message

from distgraph.cluster.ip_config import parse_ip_config, server_addresses
from distgraph.rpc import PeerError, wire
from distgraph.rpc.auth import Credentials
from distgraph.rpc.transport import Connections, Request

from .conftest import SCRIPTS, Cluster, as_trainer


@pytest.fixture
def cluster(parts, tmp_path):
    c = Cluster(parts[2], tmp_path / "ip_config.txt", [1, 1])
    yield c
    c.stop()


def _peers(cluster):
    return server_addresses(parse_ip_config(cluster.ip_config), 1)


REFUSED = {zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL}


def _ping(endpoint: str, setup, served: bool = True) -> tuple[dict | None, list[int]]:
    """Send one `ping` with a raw socket prepared by `setup`: (reply or None, monitor events).
    A reply is waited for up to 60 s when the ping should be `served` (a loaded machine may
    take seconds), 3 s when it should not (what would come later goes unseen); the events
    of a ping not served, until the handshake's refusal (up to 60 s)."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    setup(sock)
    sock.linger = 0
    monitor = sock.get_monitor_socket()
    sock.connect(endpoint)
    try:
        sock.send_multipart(wire.pack({"op": "ping", "rid": 1}), copy=True)
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
    endpoint = _peers(cluster)[0].endpoint
    reply, _ = _ping(endpoint, cluster.credentials.client)
    assert reply["ok"] and reply["machine_id"] == 0
    for setup in (lambda s: None,  # no credentials at all
                  Credentials(secrets.token_hex(32).encode()).client):  # another job's secret
        reply, events = _ping(endpoint, setup, served=False)
        assert reply is None  # not a single operation
        assert set(events) & REFUSED, events

    recorded = zmq.Context.instance().socket(zmq.DEALER)
    cluster.credentials.client(recorded)  # a handshake seen on the wire, replayed
    username, password = recorded.plain_username, recorded.plain_password
    recorded.close()

    def replay(sock):
        sock.plain_username, sock.plain_password = username, password

    assert _ping(endpoint, replay)[0]["ok"]
    assert _ping(endpoint, replay, served=False)[0] is None  # the second use of the nonce is refused


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
        assert _ping(_peers(cluster)[0].endpoint, plain.client, served=False)[0] is None
        assert _ping(_peers(cluster)[0].endpoint, Credentials(cluster.secret.encode(), True).client)[0]["ok"]
    finally:
        cluster.stop()


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
