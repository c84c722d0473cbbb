"""Fixtures of the runtime tests: small partitions and in-test server clusters on loopback
with ports from the OS (the session-wide leak check is in the top-level conftest)."""

from __future__ import annotations

import os
from contextlib import contextmanager
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from distgraph.data import generate_sbm
from distgraph.cluster.shm_files import PREFIX, SHM_DIR
from distgraph.partition import partition_graph

torch.set_num_threads(1)

SESSION_PREFIX = f"rt{os.getpid()}"
_sessions = iter(range(1_000_000))
NUM_NODES, FEAT_DIM = 2000, 16


def new_session() -> str:
    """A session name unique to this test run, so the leak check sees only our segments."""
    return f"{SESSION_PREFIX}s{next(_sessions)}"


def our_shm_files() -> list[str]:
    return sorted(p.name for p in SHM_DIR.glob(f"{PREFIX}.{SESSION_PREFIX}*"))


def child_env(**extra: str) -> dict[str, str]:
    """Environment for spawned processes: one thread each, no inherited launcher variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTGRAPH_")}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1", **extra)
    return env


def free_base_port(count: int) -> int:
    """A port p from the OS such that p .. p+count-1 are free on 127.0.0.1 right now."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count > 65535:
            continue
        held = []
        try:
            for p in range(base, base + count):
                t = socket.socket()
                held.append(t)
                t.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for t in held:
                t.close()
    raise RuntimeError("no block of free ports found")


def write_ip_config(path: Path, servers_per_machine: list[int]) -> Path:
    lines = ["# test cluster on loopback", ""]
    for n in servers_per_machine:
        lines.append(f"127.0.0.1 {free_base_port(n)} {n}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="session")
def graph():
    return generate_sbm(NUM_NODES, 20000, feat_dim=FEAT_DIM, seed=0)


@pytest.fixture(scope="session")
def parts(graph, tmp_path_factory):
    """1-part and 2-part partitions of the same graph: {1: json path, 2: json path}."""
    root = tmp_path_factory.mktemp("parts")
    out = {}
    for k in (1, 2):
        partition_graph(graph, "g", k, root / f"p{k}", part_method="random")
        out[k] = root / f"p{k}" / "g.json"
    return out


class Cluster:
    """Server processes (`python -m distgraph.server`) for every machine of an ip_config."""

    def __init__(self, part_config: Path, ip_config: Path, servers_per_machine: list[int], num_trainers: int = 1,
                 timeout: float = 10.0):
        self.part_config, self.ip_config = part_config, ip_config
        self.session = new_session()
        self.timeout = timeout
        self.num_trainers = num_trainers
        self.procs: dict[tuple[int, int], subprocess.Popen] = {}
        for m, n in enumerate(servers_per_machine):
            for s in range(n):
                env = child_env(**self.env("server", m), DISTGRAPH_SERVER_ID=str(s))
                self.procs[(m, s)] = subprocess.Popen([sys.executable, "-m", "distgraph.server"], env=env,
                                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def env(self, role: str, machine_id: int) -> dict[str, str]:
        return {"DISTGRAPH_ROLE": role, "DISTGRAPH_MACHINE_ID": str(machine_id),
                "DISTGRAPH_IP_CONFIG": str(self.ip_config), "DISTGRAPH_PART_CONFIG": str(self.part_config),
                "DISTGRAPH_SESSION": self.session, "DISTGRAPH_NUM_TRAINERS": str(self.num_trainers),
                "DISTGRAPH_TIMEOUT": str(self.timeout), "DISTGRAPH_STARTUP_TIMEOUT": "120"}

    def stop(self) -> dict[tuple[int, int], int]:
        """SIGTERM every server still running; returns exit codes. Sweeps what a killed one left."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.terminate()
        codes = {}
        for key, p in self.procs.items():
            try:
                codes[key] = p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                codes[key] = p.wait()
            p.stderr.close()
        for f in SHM_DIR.glob(f"{PREFIX}.{self.session}.*"):
            f.unlink()
        return codes


@contextmanager
def as_trainer(cluster: "Cluster", machine_id: int = 0, host_shm: bool = True):
    """Run the enclosed code as a launched trainer of `cluster`'s machine `machine_id`;
    without `host_shm`, rows of the other machines (on this host too) travel over the wire."""
    import distgraph.distributed as dist

    with pytest.MonkeyPatch.context() as mp:
        for k, v in cluster.env("trainer", machine_id).items():
            mp.setenv(k, v)
        mp.setenv("RANK", str(machine_id))
        mp.setenv("DISTGRAPH_HOST_SHM", str(int(host_shm)))
        dist.initialize()
        try:
            yield dist
        finally:
            dist.exit_client()


@pytest.fixture
def trainer_env(monkeypatch):
    """Turn this test process into a launched trainer of `cluster`'s machine `m`."""

    def apply(cluster: Cluster, machine_id: int, role: str = "trainer"):
        for k, v in cluster.env(role, machine_id).items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("RANK", str(machine_id))

    return apply


@pytest.fixture
def runtime():
    """Guarantee `exit_client` after a test that initialises the runtime in this process."""
    import distgraph.distributed as dist

    yield dist
    dist.exit_client()
