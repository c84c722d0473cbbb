"""Fixtures of the runtime tests: small partitions and in-test server clusters on loopback
with ports from the OS (the session-wide leak check is in the top-level conftest)."""

from __future__ import annotations

import os
import secrets
from contextlib import contextmanager
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from distgraph.data import generate_sbm
from leaks import new_session

from distgraph.cluster.hosts import free_ports
from distgraph.cluster.shm_files import session_files
from distgraph.rpc import wire
from distgraph.rpc.transport import ANSWER_OP, CHALLENGE_OP
from distgraph.launch.failures import Failures
from distgraph.partition import partition_graph

torch.set_num_threads(1)

NUM_NODES, FEAT_DIM = 2000, 16
SCRIPTS = Path(__file__).parent / "scripts"


def child_env(**extra: str) -> dict[str, str]:
    """Environment for spawned processes: one thread each, no inherited launcher variables,
    a launch session of this test run unless `extra` names one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTGRAPH_")}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.update({"DISTGRAPH_SESSION": new_session(), **extra})
    return env


def write_ip_config(path: Path, servers_per_machine: list[int]) -> Path:
    bases = free_ports("127.0.0.1", len(servers_per_machine), max(servers_per_machine))
    lines = ["# test cluster on loopback", ""] + [f"127.0.0.1 {p} {n}" for p, n in zip(bases, servers_per_machine)]
    path.write_text("\n".join(lines) + "\n")
    return path


def answer_challenge(sock, credentials, audience: str) -> dict:
    """Ask for the server's challenge on `sock` and answer it as a client of `credentials`: the
    server's last reply."""
    sock.send_multipart(wire.pack({"op": CHALLENGE_OP, "rid": 0}), copy=True)
    assert sock.poll(60_000)
    challenge = wire.unpack(sock.recv_multipart())[0]["challenge"].encode()
    sock.send_multipart(wire.pack({"op": ANSWER_OP, "rid": 0,
                                   "answer": credentials.answer(audience, challenge).decode()}), copy=True)
    assert sock.poll(60_000)
    return wire.unpack(sock.recv_multipart())[0]


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


@pytest.fixture(scope="session")
def mag_graph():
    """An ogbn-mag-shaped heterograph with every relation reversed (as DGL's RGCN example has it)."""
    from distgraph.data import add_reverse_edges, generate_mag

    return add_reverse_edges(generate_mag(1500, 1000, 40, 80, num_classes=6, feat_dim=16, seed=5))


@pytest.fixture(scope="session")
def mag_parts(mag_graph, tmp_path_factory):
    """1-part and 2-part (METIS, balancing training nodes and edges) partitions of `mag_graph`."""
    from distgraph.partition import split_categories

    root = tmp_path_factory.mktemp("mag_parts")
    out = {}
    for k in (1, 2):
        partition_graph(mag_graph, "mag", k, root / f"p{k}", balance_ntypes=split_categories(mag_graph),
                        balance_edges=True)
        out[k] = root / f"p{k}" / "mag.json"
    return out


BIND_RACE = ("cannot listen on port", "cannot listen on MASTER_ADDR")  # a port from the OS was taken meanwhile
ATTEMPTS = 3
# Deadlines a loaded 2-core machine (load average 20 and more) meets: a test that needs a
# deadline to fire passes its own, shorter one.
REQUEST_TIMEOUT = 60.0
STARTUP_TIMEOUT = 300.0


def _collect(stream, lines: list[str]) -> None:
    for line in iter(stream.readline, ""):
        lines.append(line)
    stream.close()


class Cluster:
    """Server processes (`python -m distgraph.server`) for every machine of an ip_config that
    this writes to `ip_config` with ports from the OS (again, if one was taken meanwhile);
    `features_on_disk` as `distgraph launch --features_on_disk`; `secret` the job's secret (a new
    one by default)."""

    def __init__(self, part_config: Path, ip_config: Path, servers_per_machine: list[int], num_trainers: int = 1,
                 timeout: float = REQUEST_TIMEOUT, encrypt: bool = False, features_on_disk: bool = False,
                 secret: str | None = None):
        self.part_config, self.ip_config = part_config, ip_config
        self.secret, self.encrypt = secret or secrets.token_hex(32), encrypt
        self.features_on_disk = features_on_disk
        self.timeout = timeout
        self.num_trainers = num_trainers
        for _ in range(ATTEMPTS):
            self.session = new_session()
            write_ip_config(ip_config, servers_per_machine)
            self.procs: dict[tuple[int, int], subprocess.Popen] = {}
            self.stderr: dict[tuple[int, int], list[str]] = {}
            for m, n in enumerate(servers_per_machine):
                for s in range(n):
                    env = child_env(**self.env("server", m), DISTGRAPH_SERVER_ID=str(s))
                    p = subprocess.Popen([sys.executable, "-m", "distgraph.server"], env=env, text=True,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                    self.procs[(m, s)], self.stderr[(m, s)] = p, []
                    threading.Thread(target=_collect, args=(p.stderr, self.stderr[(m, s)]), daemon=True).start()
            try:
                serving = self._serving()
            except BaseException:  # no server outlives a start-up that failed
                self.stop()
                raise
            if serving:
                return
            self.stop()
        raise RuntimeError(f"servers could not bind their ports in {ATTEMPTS} attempts")

    def _serving(self) -> bool:
        """Wait until every server serves (True), or one could not bind its port (False)."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            errors = ["".join(self.stderr[k]) for k, p in self.procs.items() if p.poll() is not None]
            if any(any(race in e for race in BIND_RACE) for e in errors):
                return False
            if errors:
                raise RuntimeError(f"a server exited while starting: {errors}")
            if all(any("serving" in line for line in lines) for lines in self.stderr.values()):
                return True
            time.sleep(0.05)
        raise RuntimeError(f"servers did not start within {STARTUP_TIMEOUT:.0f} s")

    def env(self, role: str, machine_id: int) -> dict[str, str]:
        return {"DISTGRAPH_ROLE": role, "DISTGRAPH_MACHINE_ID": str(machine_id),
                "DISTGRAPH_IP_CONFIG": str(self.ip_config), "DISTGRAPH_PART_CONFIG": str(self.part_config),
                "DISTGRAPH_SESSION": self.session, "DISTGRAPH_NUM_TRAINERS": str(self.num_trainers),
                "DISTGRAPH_TIMEOUT": str(self.timeout), "DISTGRAPH_STARTUP_TIMEOUT": str(STARTUP_TIMEOUT),
                "DISTGRAPH_SECRET": self.secret, "DISTGRAPH_ENCRYPT": str(int(self.encrypt)),
                "DISTGRAPH_FEATURES_ON_DISK": str(int(self.features_on_disk))}

    @property
    def credentials(self):
        from distgraph.rpc.auth import Credentials

        return Credentials(self.secret.encode(), self.encrypt)

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
        for f in session_files(self.session):
            f.unlink()
        return codes


def launch_argv(workspace: Path, part_config: Path, ip_config: Path, command: str | list[str], num_trainers: int = 1,
                num_samplers: int = 0, servers: int = 1) -> list[str]:
    """The launcher's argv for `command`: one command line (DGL's form), or an argv after `--`."""
    return [sys.executable, "-m", "distgraph.cli.main", "launch", "--workspace", str(workspace),
            "--num_trainers", str(num_trainers), "--num_servers", str(servers), "--num_samplers", str(num_samplers),
            "--part_config", str(part_config), "--ip_config", str(ip_config), "--num_omp_threads", "1",
            *([command] if isinstance(command, str) else ["--", *command])]


def job_pids(session: str) -> list[int]:
    """Every process of this host whose environment names launch session `session`."""
    marker = f"DISTGRAPH_SESSION={session}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as f:
                    env = f.read().split(b"\0")
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in env and state != b"Z":
                found.append(int(entry.name))
    return found


class Launch:
    """`distgraph launch` of `command` in the background on machines of `servers_per_machine`
    (ip_config written here, ports from the OS; started again if a port was taken meanwhile).
    Output lines are collected as they come; `close()` kills whatever is left of the job."""

    def __init__(self, tmp_path: Path, part_config: Path, servers_per_machine: list[int], command: str | list[str],
                 num_trainers: int = 1, num_samplers: int = 0, **env: str):
        self.ip_config = tmp_path / "ip_config.txt"
        for _ in range(ATTEMPTS):
            self.session = new_session()
            write_ip_config(self.ip_config, servers_per_machine)
            argv = launch_argv(tmp_path, part_config, self.ip_config, command, num_trainers, num_samplers)
            self.proc = subprocess.Popen(argv, env=child_env(DISTGRAPH_SESSION=self.session, **env), text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            self.out: list[str] = []
            self.err: list[str] = []
            self.readers = [threading.Thread(target=_collect, args=(s, lines), daemon=True)
                            for s, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
            for t in self.readers:
                t.start()
            try:
                self._wait_serving(sum(servers_per_machine))
            except BaseException:  # nothing of the job outlives a start-up that failed
                self.close()
                raise
            if not any(race in line for line in self.err for race in BIND_RACE):
                return
            self.wait(60)
        raise RuntimeError(f"the job's ports were taken in {ATTEMPTS} attempts")

    def _wait_serving(self, servers: int) -> None:
        """Until the launcher ends or its `servers` servers serve."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while self.proc.poll() is None and sum("serving" in line for line in self.err) < servers:
            if time.monotonic() > deadline:
                raise AssertionError(f"the job's servers did not start within {STARTUP_TIMEOUT:.0f} s:\n"
                                     f"{self.output[-3000:]}")
            time.sleep(0.05)

    @property
    def output(self) -> str:
        return "".join(self.out) + "".join(self.err)

    def wait_for(self, text: str, count: int = 1, timeout: float = 120) -> None:
        """Wait until `count` output lines contain `text` (fails the test after `timeout`)."""
        deadline = time.monotonic() + timeout
        while sum(text in line for line in self.out + self.err) < count:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"never saw {count} x {text!r}:\n{self.output[-3000:]}")
            time.sleep(0.05)

    def wait(self, timeout: float) -> int:
        """The launcher's exit code; fails the test if it is still running after `timeout` s."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the launcher did not exit within {timeout} s:\n{self.output[-3000:]}") from None
        for t in self.readers:
            t.join(10)
        return code

    def left_behind(self, timeout: float = 30) -> tuple[list[int], list[str]]:
        """(processes, shared-memory files) of the job still there after up to `timeout` s."""
        deadline = time.monotonic() + timeout
        while (job_pids(self.session) or session_files(self.session)) and time.monotonic() < deadline:
            time.sleep(0.1)
        return job_pids(self.session), [f.name for f in session_files(self.session)]

    def close(self) -> None:
        for pid in job_pids(self.session):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in session_files(self.session):
            f.unlink(missing_ok=True)
        Failures(self.session).log_path.unlink(missing_ok=True)  # the tracebacks of a failed job's processes


@pytest.fixture
def launches():
    """Start jobs with `launches(...)` (see `Launch`); whatever is left of them is killed after the test."""
    started: list[Launch] = []

    def start(*args, **kwargs) -> Launch:
        started.append(Launch(*args, **kwargs))
        return started[-1]

    yield start
    for job in started:
        job.close()


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
