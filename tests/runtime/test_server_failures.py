"""A dead or hung server becomes an error naming it (machine, server, address) within the
timeout, never a hang."""

import signal
import threading
import time

import pytest
import torch

from distgraph.cluster.shm_files import SegmentNamer
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


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "pulling"])
def test_a_stopped_server_exits_within_the_launchers_grace(parts, tmp_path, trainer_env, runtime, monkeypatch, busy):
    """SIGTERM wakes the request loop at once and the server skips the interpreter's teardown,
    so it exits cleanly (code 0, shared memory removed) well before the launcher would SIGKILL
    it, idle and while a trainer streams pulls of its rows."""
    from distgraph.launch.supervisor import TERM_GRACE_SECONDS

    cluster = Cluster(parts[2], tmp_path / "ip_config.txt", [1, 1], timeout=TIMEOUT)
    try:
        trainer_env(cluster, 0)
        monkeypatch.setenv("DISTGRAPH_HOST_SHM", "0")
        runtime.initialize()
        feat = runtime.DistTensor((2000, 16), torch.float32, "node~_N~feat")
        remote = torch.arange(*runtime.get_context().book.node_range(1, "_N"))
        pulls, stop = [], threading.Event()

        def pull():
            while not stop.is_set():
                try:
                    pulls.append(feat[remote].shape[0])
                except Exception:
                    return

        puller = threading.Thread(target=pull, daemon=True)
        if busy:
            puller.start()
            while len(pulls) < 20:
                time.sleep(0.01)
        server = cluster.procs[(1, 0)]
        start = time.monotonic()
        server.terminate()
        server.wait(60)
        took = time.monotonic() - start
        stop.set()
        if busy:
            puller.join(30)
        assert server.returncode == 0
        assert took < TERM_GRACE_SECONDS, f"{took:.1f} s after SIGTERM"  # generous: typically 0.2 s
        assert not SegmentNamer(cluster.session, "g", 1).all_files(), "the stopped server left shared memory"
    finally:
        cluster.stop()


def test_a_test_cluster_that_does_not_start_in_time_leaves_no_server(parts, tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "STARTUP_TIMEOUT", 0.0)  # every server is still importing
    with pytest.raises(RuntimeError, match="servers did not start within 0 s"):
        Cluster(parts[2], tmp_path / "ip_config.txt", [1, 1])
    assert not [c.pid for c in child_processes() if "distgraph.server" in c.cmdline()]
