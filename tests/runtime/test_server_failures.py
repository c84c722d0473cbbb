"""A dead or hung server becomes an error naming it (machine, server, address) within the
timeout, never a hang."""

import signal
import time

import pytest
import torch

from distgraph.rpc import PeerError
from leaks import child_processes

from . import conftest
from .conftest import Cluster

TIMEOUT = 10.0  # the hung-server test waits it out; every other request of these tests meets it


@pytest.fixture
def cluster(parts, tmp_path):
    c = Cluster(parts[2], tmp_path / "ip_config.txt", [1, 1], timeout=TIMEOUT)
    yield c
    c.stop()


def _address(cluster, machine):
    from distgraph.cluster.ip_config import parse_ip_config

    return f"127.0.0.1:{parse_ip_config(cluster.ip_config)[machine].port}"


def test_killed_server_becomes_an_error_naming_it(cluster, trainer_env, runtime, monkeypatch):
    trainer_env(cluster, 0)
    monkeypatch.setenv("DISTGRAPH_HOST_SHM", "0")  # both machines share this host: make machine 1's rows travel
    runtime.initialize()
    feat = runtime.DistTensor((2000, 16), torch.float32, "node~_N~feat")
    remote = torch.arange(*runtime.get_context().book.node_range(1, "_N"))
    assert feat[remote].shape == (remote.numel(), 16)
    cluster.procs[(1, 0)].kill()
    cluster.procs[(1, 0)].wait()
    # the dropped connection is noticed at once: the error is the drop, not the request deadline
    with pytest.raises(PeerError, match=f"lost the connection to server 0 of machine 1 at {_address(cluster, 1)}"):
        feat[remote]
    assert feat[torch.tensor([0])].shape == (1, 16)  # rows of the local machine still read fine


def test_hung_server_times_out_with_its_name(cluster, trainer_env, runtime):
    trainer_env(cluster, 0)
    runtime.initialize()
    emb = runtime.DistEmbedding(2000, 4, "emb")
    cluster.procs[(0, 0)].send_signal(signal.SIGSTOP)
    start = time.monotonic()
    with pytest.raises(PeerError, match=f"no reply from server 0 of machine 0 at {_address(cluster, 0)} within 10 s"):
        emb.weight.push_rows(torch.tensor([0]), torch.ones(1, 4), {"kind": "adagrad", "lr": 0.1, "eps": 1e-10})
    assert TIMEOUT - 0.5 < time.monotonic() - start < TIMEOUT + 60  # the deadline fired (a generous bound)
    cluster.procs[(0, 0)].send_signal(signal.SIGCONT)


def test_a_test_cluster_that_does_not_start_in_time_leaves_no_server(parts, tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "STARTUP_TIMEOUT", 0.0)  # every server is still importing
    with pytest.raises(RuntimeError, match="servers did not start within 0 s"):
        Cluster(parts[2], tmp_path / "ip_config.txt", [1, 1])
    assert not [c.pid for c in child_processes() if "distgraph.server" in c.cmdline()]
