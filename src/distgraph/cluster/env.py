"""The environment variables through which the launcher gives each process its place.

Every process learns its role and machine id from the launcher (its line in ip_config),
never by matching local IP addresses, so several machines can share one host. Without
`DISTGRAPH_ROLE` a script runs standalone.

Samplers (issue 4) are started by their trainer, not by the launcher: a trainer gets
`DISTGRAPH_NUM_SAMPLERS` and passes `sampler_env(i)` to its i-th sampler process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from ..errors import InputError

if TYPE_CHECKING:
    from ..partition.layout import PartitionConfig

ROLE = "DISTGRAPH_ROLE"  # server | trainer | sampler
MACHINE_ID = "DISTGRAPH_MACHINE_ID"  # line of ip_config (0-based) = partition id
SERVER_ID = "DISTGRAPH_SERVER_ID"  # servers: index among the machine's servers
NUM_SERVERS = "DISTGRAPH_NUM_SERVERS"  # default servers per machine (an ip_config column overrides it)
NUM_TRAINERS = "DISTGRAPH_NUM_TRAINERS"  # trainers per machine
NUM_SAMPLERS = "DISTGRAPH_NUM_SAMPLERS"  # sampler processes per trainer
SAMPLER_ID = "DISTGRAPH_SAMPLER_ID"  # samplers: index among their trainer's samplers
IP_CONFIG = "DISTGRAPH_IP_CONFIG"
PART_CONFIG = "DISTGRAPH_PART_CONFIG"
SESSION = "DISTGRAPH_SESSION"  # names this launch's shared memory
LIFELINE_FD = "DISTGRAPH_LIFELINE_FD"  # read end of a pipe whose writer (launcher, trainer) must stay alive
TIMEOUT = "DISTGRAPH_TIMEOUT"  # seconds to wait for any reply
STARTUP_TIMEOUT = "DISTGRAPH_STARTUP_TIMEOUT"  # seconds to wait for servers to load and for creations
BARRIER_TIMEOUT = "DISTGRAPH_BARRIER_TIMEOUT"  # seconds to wait for the other trainers at a barrier
SECRET = "DISTGRAPH_SECRET"  # the job's secret, which every connection proves (`rpc.auth`); made by the launcher
ENCRYPT = "DISTGRAPH_ENCRYPT"  # 1: encrypt the job's traffic (ZeroMQ CURVE)
LISTEN = "DISTGRAPH_LISTEN"  # a distributed partitioning's process: "HOST PORT" it listens on
HOST_SHM = "DISTGRAPH_HOST_SHM"  # 0: map only this machine's shared memory; other machines' rows travel
FEATURES_ON_DISK = "DISTGRAPH_FEATURES_ON_DISK"  # 1: serve partition node/edge data read-only from its files
WATCH_TRAINERS = "DISTGRAPH_WATCH_TRAINERS"  # 1: servers (of `distgraph serve`) end when a trainer goes away
ERROR_LINES = "DISTGRAPH_ERROR_LINES"  # 1: the launcher reads project errors as marked lines (`error_lines`)
KGE_GPU_TYPE = "DISTGRAPH_KGE_GPU_TYPE"  # the device type KGE's --gpu ids name: cuda (unset), or cpu
FORK_TRAINERS = "DISTGRAPH_FORK_TRAINERS"  # trainers: this process forks its machine's N - 1 others (`launch.family`)
# torchrun's: a trainer it starts takes its machine id (node rank) and trainers per machine from them
TORCHRUN_NODE_RANK, TORCHRUN_LOCAL_WORLD_SIZE = "GROUP_RANK", "LOCAL_WORLD_SIZE"
TORCHRUN_AGENT_STORE = "TORCHELASTIC_USE_AGENT_STORE"  # True: torchrun's agent already hosts the rendezvous store
SLURM_JOB_ID, SLURM_NODELIST = "SLURM_JOB_ID", "SLURM_JOB_NODELIST"  # set inside a Slurm allocation

ROLES = ("server", "trainer", "sampler")
DEFAULT_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, DEFAULT_BARRIER_TIMEOUT = 60.0, 600.0, 1800.0


def _int(env: Mapping[str, str], key: str, default: int | None = None, minimum: int = 0) -> int:
    raw = env.get(key)
    if raw is None:
        if default is None:
            raise InputError(f"environment variable {key} is not set; start this process with `distgraph launch`")
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"environment variable {key}={raw!r} must be an integer") from None
    if value < minimum:
        raise InputError(f"environment variable {key}={value} must be >= {minimum}")
    return value


def _seconds(env: Mapping[str, str], key: str, default: float) -> float:
    raw = env.get(key)
    try:
        value = float(raw) if raw is not None else default
    except ValueError:
        raise InputError(f"environment variable {key}={raw!r} must be a number of seconds") from None
    if not value > 0:
        raise InputError(f"environment variable {key}={raw!r} must be positive")
    return value


def kge_gpu_type(env: Mapping[str, str] = os.environ) -> str:
    """The device type KGE's `--gpu` ids name: `cuda`, or `cpu` (DISTGRAPH_KGE_GPU_TYPE=cpu), which
    runs the GPU path on CPUs, as the tests on machines without a GPU do."""
    kind = env.get(KGE_GPU_TYPE, "cuda")
    if kind not in ("cuda", "cpu"):
        raise InputError(f"{KGE_GPU_TYPE}={kind!r}: --gpu ids name cuda devices, or cpu ones to run the GPU path on "
                         f"CPUs; set it to cuda or cpu, or unset it")
    return kind


@dataclass(frozen=True)
class Timeouts:
    request: float = DEFAULT_TIMEOUT
    startup: float = DEFAULT_STARTUP_TIMEOUT
    barrier: float = DEFAULT_BARRIER_TIMEOUT

    @classmethod
    def from_environ(cls, env: Mapping[str, str] = os.environ) -> "Timeouts":
        return cls(_seconds(env, TIMEOUT, DEFAULT_TIMEOUT), _seconds(env, STARTUP_TIMEOUT, DEFAULT_STARTUP_TIMEOUT),
                   _seconds(env, BARRIER_TIMEOUT, DEFAULT_BARRIER_TIMEOUT))


@dataclass(frozen=True)
class ProcessEnv:
    """Everything the launcher told this process."""

    role: str
    machine_id: int
    ip_config: str | None  # None: not set by the launcher (see `with_defaults`)
    part_config: str | None
    session: str
    num_servers: int | None
    num_trainers: int
    num_samplers: int | None
    server_id: int
    sampler_id: int
    rank: int  # trainers and samplers: global trainer rank (samplers: their trainer's)
    lifeline_fd: int | None  # see `cluster.lifeline`: only the pipe's end counts, never a silence
    timeouts: Timeouts
    master: tuple[str, int] | None = None  # trainers: torch.distributed's MASTER_ADDR and MASTER_PORT
    secret: str | None = None
    encrypt: bool = False
    host_shm: bool = True  # read rows of other machines on this host from their shared memory
    features_on_disk: bool = False  # servers: map the partition's node/edge data from its files, read-only
    agent_store: bool = False  # started by torchrun, whose agent hosts torch.distributed's store
    error_lines: bool = False  # started by `distgraph launch`, which shows each project error once
    watch_trainers: bool = False  # servers: the trainers are not the launcher's; a lost one ends the job

    @classmethod
    def from_environ(cls, env: Mapping[str, str] = os.environ) -> "ProcessEnv | None":
        """The launcher's settings, or None when this process was not launched (standalone)."""
        role = env.get(ROLE)
        if role is None:
            return None
        if role not in ROLES:
            raise InputError(f"environment variable {ROLE}={role!r} must be one of {ROLES}")
        return cls(
            role=role,
            machine_id=_int(env, MACHINE_ID if env.get(MACHINE_ID) or not env.get(TORCHRUN_NODE_RANK)
                            else TORCHRUN_NODE_RANK),
            ip_config=env.get(IP_CONFIG) or None,
            part_config=env.get(PART_CONFIG) or None,
            session=env.get(SESSION) or session_of(env.get(SECRET)),
            num_servers=_int(env, NUM_SERVERS, minimum=1) if env.get(NUM_SERVERS) else None,
            num_trainers=_int(env, NUM_TRAINERS, _int(env, TORCHRUN_LOCAL_WORLD_SIZE, 1, minimum=1), minimum=1),
            num_samplers=_int(env, NUM_SAMPLERS) if env.get(NUM_SAMPLERS) else None,
            server_id=_int(env, SERVER_ID, 0),
            sampler_id=_int(env, SAMPLER_ID, 0),
            rank=_int(env, "RANK", 0),
            lifeline_fd=_int(env, LIFELINE_FD) if env.get(LIFELINE_FD) else None,
            timeouts=Timeouts.from_environ(env),
            master=(env["MASTER_ADDR"], _int(env, "MASTER_PORT")) if env.get("MASTER_ADDR") and env.get(
                "MASTER_PORT") else None,
            host_shm=bool(_int(env, HOST_SHM, 1)),
            features_on_disk=features_on_disk(env),
            secret=env.get(SECRET) or None,
            encrypt=bool(_int(env, ENCRYPT, 0)),
            agent_store=env.get(TORCHRUN_AGENT_STORE, "").lower() == "true",
            error_lines=bool(_int(env, ERROR_LINES, 0)),
            watch_trainers=bool(_int(env, WATCH_TRAINERS, 0)),
        )

    def job(self) -> tuple[list, list, "PartitionConfig"]:
        """(machines, every server's address, the partition config) of a launched process's job,
        checked: a config is given, ip_config lists one machine per partition, and this
        process's machine is one of them."""
        from ..partition.layout import PartitionConfig
        from .ip_config import parse_ip_config, server_addresses

        if not self.part_config:
            raise InputError(f"a launched {self.role} needs the partition config ({PART_CONFIG}, which "
                             f"`distgraph launch --part_config` sets)")
        machines = parse_ip_config(self.ip_config)
        peers = server_addresses(machines, self.num_servers, self.ip_config)
        if not 0 <= self.machine_id < len(machines):
            raise InputError(f"machine id {self.machine_id} is out of range: {self.ip_config} lists "
                             f"{len(machines)} machines")
        cfg = PartitionConfig.load(self.part_config)
        cfg.check_machines(len(machines), self.ip_config)
        return machines, peers, cfg

    def credentials(self):
        """The job's `rpc.auth.Credentials`; a launched process without a secret is refused."""
        from ..rpc.auth import Credentials

        if not self.secret:
            raise InputError(f"environment variable {SECRET} is not set: every connection of a job proves the "
                             f"job's secret; start the processes with `distgraph launch`, which makes one")
        return Credentials(self.secret.encode(), self.encrypt)

    @property
    def starter(self) -> str:
        """Who started this process (and holds its lifeline)."""
        return "its trainer" if self.role == "sampler" else "the launcher"

    def with_defaults(self, ip_config: str | None, num_servers: int, num_samplers: int,
                      part_config: str | None) -> "ProcessEnv":
        """Fill what the launcher did not set from `initialize`'s arguments (the launcher wins)."""
        filled = replace(self, ip_config=self.ip_config or ip_config, part_config=self.part_config or part_config,
                         num_servers=self.num_servers or num_servers,
                         num_samplers=num_samplers if self.num_samplers is None else self.num_samplers)
        if not filled.ip_config:
            raise InputError(f"no ip_config: set {IP_CONFIG} or pass ip_config (`distgraph launch` does both)")
        return filled


def fork_trainers(env: Mapping[str, str] = os.environ) -> int:
    """How many of its machine's trainers this process becomes by forking (1: itself alone)."""
    return _int(env, FORK_TRAINERS, 1, minimum=1)


def features_on_disk(env: Mapping[str, str] = os.environ) -> bool:
    """Whether partition node/edge data is served read-only from its files (`--features_on_disk`;
    standalone processes read it too)."""
    return bool(_int(env, FEATURES_ON_DISK, 0))


def session_of(secret: str | None) -> str:
    """The session (shared-memory names) of processes started without a launcher (`distgraph serve`
    and trainers of torchrun): derived from the job's secret, so they agree without being told."""
    if not secret:
        return "default"
    import hashlib

    return hashlib.sha256(b"distgraph session:" + secret.encode()).hexdigest()[:12]


def slurm_allocation(env: Mapping[str, str] = os.environ) -> tuple[str, str] | None:
    """(job id, node list) of the Slurm allocation this process runs in, or None outside one."""
    nodelist = env.get(SLURM_NODELIST) or env.get("SLURM_NODELIST")
    return (env.get(SLURM_JOB_ID, ""), nodelist) if nodelist else None


def sampler_env(sampler_id: int, lifeline_fd: int, env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment for sampler `sampler_id` of this trainer: a copy with the role changed and
    the trainer's own lifeline pipe (`lifeline_fd`) instead of the launcher's."""
    if env.get(ROLE) != "trainer":
        raise InputError("only a launched trainer starts samplers; run the script with `distgraph launch`")
    return {**env, ROLE: "sampler", SAMPLER_ID: str(sampler_id), LIFELINE_FD: str(lifeline_fd)}


def ssh_connection(env: Mapping[str, str] = os.environ) -> tuple[tuple[str, int], tuple[str, int]] | None:
    """((this host's address, port), (the client's address, port)) of the ssh session this
    process runs in (sshd's `SSH_CONNECTION`), or None outside one."""
    fields = env.get("SSH_CONNECTION", "").split()
    if len(fields) != 4 or not fields[1].isdigit() or not fields[3].isdigit():
        return None
    return (fields[2], int(fields[3])), (fields[0], int(fields[1]))


DGL_DOWNLOAD_DIR = "DGL_DOWNLOAD_DIR"  # DGL's: the folder its datasets were downloaded to


def dgl_download_dir() -> Path:
    """Where DGL keeps downloaded datasets (`DGL_DOWNLOAD_DIR`, else ~/.dgl): `distgraph.data`'s
    DGL-named datasets look there when given no folder."""
    return Path(os.environ.get(DGL_DOWNLOAD_DIR) or Path.home() / ".dgl")


@dataclass(frozen=True)
class PartitionWorkerEnv:
    """What `distgraph partition --ip_config` tells each host's partitioning process."""

    machine_id: int
    host: str
    port: int
    secret: str
    encrypt: bool
    timeouts: Timeouts
    lifeline_fd: int | None

    @classmethod
    def from_environ(cls, env: Mapping[str, str] = os.environ) -> "PartitionWorkerEnv":
        listen = env.get(LISTEN, "").split()
        if len(listen) != 2 or not listen[1].isdigit() or not env.get(SECRET):
            raise InputError(f"{LISTEN} (HOST PORT) and {SECRET} are not set: this process is started by "
                             f"`distgraph partition --ip_config`")
        return cls(_int(env, MACHINE_ID), listen[0], int(listen[1]), env[SECRET], bool(_int(env, ENCRYPT, 0)),
                   Timeouts.from_environ(env), _int(env, LIFELINE_FD) if env.get(LIFELINE_FD) else None)
