"""What to start where: one process spec per server and trainer, with its environment.

The machines are ip_config's lines, or, with the Slurm scheduler, the allocation's nodes
(`cluster.slurm`): an ip_config of them is written into the workspace (and sent to every
other node's agent, which writes it there too), and other nodes are reached by `srun`.

Servers run `python -m distgraph.server` with the interpreter of the user's command when
that command starts with a Python executable (so remote hosts use the same environment),
otherwise with the launcher's interpreter. Trainers run the user's command. Each process
gets its machine id (its line in ip_config) and role from the launcher; trainers also get
the torch.distributed variables (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import secrets
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..cluster import env as E
from ..errors import InputError
from ..partition.layout import PartitionConfig
from .srun import SrunOptions
from .ssh import SshOptions
from ..cluster.hosts import free_port, is_local
from ..cluster.ip_config import MachineSpec, num_servers_disagreement, parse_ip_config, server_addresses

DEFAULT_MASTER_PORT = 29500
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Variables of the launcher's environment that remote processes receive too.
FORWARDED = (E.TIMEOUT, E.STARTUP_TIMEOUT, E.BARRIER_TIMEOUT, E.HOST_SHM, "PYTHONPATH")


@dataclass
class LaunchOptions:
    """The flags of `distgraph launch` (DGL launch.py's names)."""

    workspace: str
    command: str
    part_config: str
    ip_config: str | None  # with the Slurm scheduler: the file to write (default ip_config.slurm-<job id>.txt)
    num_trainers: int
    num_servers: int = 1
    num_samplers: int = 0
    num_server_threads: int = 1
    num_omp_threads: int | None = None
    ssh: SshOptions = field(default_factory=SshOptions)
    encrypt: bool = False
    features_on_disk: bool = False  # servers map partition node/edge data from its files, read-only
    extra_envs: list[str] = field(default_factory=list)
    master_port: int | None = None
    scheduler: str = "ssh"  # ssh: ip_config's hosts over ssh; slurm: the allocation's nodes through srun
    fork_trainers: bool = False  # one process a machine, forking its other trainers once imported (`family`)


@dataclass
class ProcessSpec:
    """One process to start: where, what, and the variables that place it in the job."""

    machine_id: int
    role: str
    rank: int  # servers: server id on the machine; trainers: global trainer rank
    host: str
    local: bool
    command: str  # shell command line, run in the workspace
    env: dict[str, str]

    @property
    def label(self) -> str:
        return f"{self.machine_id}/{self.role}/{self.rank}"


@dataclass
class Plan:
    processes: list[ProcessSpec]
    machines: list[MachineSpec]
    local: list[bool]  # per machine: started here rather than over ssh
    session: str
    workspace: str
    check: dict  # what every host checks before it starts anything (see `launch.agent`)
    via: SshOptions | SrunOptions = field(default_factory=SshOptions)  # how other hosts are reached
    files: dict[str, str] = field(default_factory=dict)  # written into the workspace of every host first


def _in_workspace(workspace: Path, path: str) -> Path:
    """Config paths are relative to the workspace (as in DGL's launch.py); a launcher that has
    no such workspace (every machine is another host) reads them relative to its own folder."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (workspace if workspace.is_dir() else Path.cwd()) / p


def server_python(command: str) -> str:
    """The interpreter of the user's command if it names one, else the launcher's."""
    try:
        first = shlex.split(command)[0]
    except (ValueError, IndexError):
        return sys.executable
    return first if os.path.basename(first).startswith("python") else sys.executable


def _extra_envs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _ENV_KEY.match(key):
            raise InputError(f"--extra_envs entries must look like NAME=VALUE, got {item!r}")
        out[key] = value
    return out


def _check(opts: LaunchOptions) -> Path:
    for flag, value, minimum in (("--num_trainers", opts.num_trainers, 1), ("--num_servers", opts.num_servers, 1),
                                 ("--num_samplers", opts.num_samplers, 0),
                                 ("--num_server_threads", opts.num_server_threads, 1)):
        if value is None or value < minimum:
            raise InputError(f"{flag} must be at least {minimum}, got {value}")
    if opts.num_omp_threads is not None and opts.num_omp_threads < 1:
        raise InputError(f"--num_omp_threads must be at least 1, got {opts.num_omp_threads}")
    if not opts.command.strip():
        raise InputError("give the training command to run, e.g. \"python3 train.py --epochs 3\"")
    if opts.scheduler not in ("ssh", "slurm"):
        raise InputError(f"--scheduler must be ssh or slurm, got {opts.scheduler!r}")
    if opts.scheduler == "ssh" and not opts.ip_config:
        raise InputError("give --ip_config (one `IP [PORT [NUM_SERVERS]]` line per machine), or run inside a Slurm "
                         "allocation with --scheduler slurm")
    return Path(opts.workspace).expanduser().absolute()


def _slurm(opts: LaunchOptions, workspace: Path) -> tuple[str, SrunOptions, dict[str, str]]:
    """The allocation's ip_config (written into the workspace), how to reach its nodes, and the
    file every other node's agent writes."""
    from ..cluster.slurm import Allocation

    found = E.slurm_allocation()
    if found is None:
        raise InputError(f"--scheduler slurm needs a Slurm allocation ({E.SLURM_NODELIST} is not set): run "
                         f"`distgraph launch` in an sbatch script or an salloc shell")
    allocation = Allocation.of(*found)
    rel = opts.ip_config or f"ip_config.slurm-{allocation.job_id or 'job'}.txt"
    text = allocation.ip_config(opts.num_servers)
    path = _in_workspace(workspace, rel)  # (beside the launcher when it has no such workspace: a login node)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return rel, SrunOptions(dict(zip(allocation.addresses, allocation.nodes))), {rel: text}


def make_plan(opts: LaunchOptions, serve: int | None = None) -> Plan:
    """Check the options against ip_config and the partition, and list every process; with
    `serve`, only the servers of that machine, started here (`distgraph serve`: trainers come
    from elsewhere, e.g. torchrun, and bring the job's secret from the environment)."""
    workspace = _check(opts)
    via, files = opts.ssh, {}
    if opts.scheduler == "slurm":
        ip_config, via, files = _slurm(opts, workspace)
        opts = replace(opts, ip_config=ip_config)
    machines = parse_ip_config(_in_workspace(workspace, opts.ip_config))
    server_addresses(machines, opts.num_servers, opts.ip_config)  # checks ports do not overlap
    disagreement = num_servers_disagreement(machines, opts.num_servers, opts.ip_config)
    if disagreement:
        print(f"[launch] warning: {disagreement}", file=sys.stderr, flush=True)
    local = [is_local(m.ip) for m in machines]
    if serve is not None:
        if not 0 <= serve < len(machines):
            raise InputError(f"--machine_id {serve} is not a machine of {opts.ip_config} (0..{len(machines) - 1})")
        local = [m == serve for m in range(len(machines))]
    if any(local) and not workspace.is_dir():
        raise InputError(f"--workspace {opts.workspace} is not a directory of this host, which runs machine "
                         f"{local.index(True)}")
    found = _in_workspace(workspace, opts.part_config)
    part_config = PartitionConfig.load(found) if any(local) or found.is_file() else None
    if part_config is not None:
        part_config.check_machines(len(machines), opts.ip_config)
    for m in range(len(machines)):
        if local[m]:  # other hosts check their own copy (their agent) before anything starts
            part_config.check_files(m)
    check = {"part_config": opts.part_config, "num_parts": len(machines),
             "fingerprint": part_config.fingerprint() if part_config is not None else None}
    secret = os.environ.get(E.SECRET)
    if serve is not None and not secret:
        raise InputError(f"set {E.SECRET} to the job's secret (the same for `distgraph serve` and every trainer), "
                         f"e.g. export {E.SECRET}=$(cat secret) after `python3 -c 'import secrets; "
                         f"print(secrets.token_hex(32))' > secret`")
    secret = secret or secrets.token_hex(32)
    session = os.environ.get(E.SESSION) or (E.session_of(secret) if serve is not None else secrets.token_hex(6))
    master = machines[0].ip
    master_port = opts.master_port or (free_port(master) if local[0] else DEFAULT_MASTER_PORT)
    omp = opts.num_omp_threads or max(multiprocessing.cpu_count() // 2 // opts.num_trainers, 1)
    common = {
        E.IP_CONFIG: opts.ip_config, E.PART_CONFIG: opts.part_config, E.SESSION: session,
        E.SECRET: secret, E.ENCRYPT: str(int(opts.encrypt)), E.FEATURES_ON_DISK: str(int(opts.features_on_disk)),
        E.NUM_SERVERS: str(opts.num_servers), E.NUM_TRAINERS: str(opts.num_trainers),
        E.NUM_SAMPLERS: str(opts.num_samplers), E.ERROR_LINES: "1", "PYTHONUNBUFFERED": "1",
        **{k: os.environ[k] for k in FORWARDED if k in os.environ},
        **_extra_envs(opts.extra_envs),
    }
    server_cmd = f"{shlex.quote(server_python(opts.command))} -m distgraph.server"
    procs: list[ProcessSpec] = []
    for m, spec in enumerate(machines):
        if serve is not None and m != serve:
            continue
        base = {**common, E.MACHINE_ID: str(m)}
        for s in range(spec.server_count(opts.num_servers)):
            env = {**base, E.ROLE: "server", E.SERVER_ID: str(s), "OMP_NUM_THREADS": str(opts.num_server_threads),
                   E.WATCH_TRAINERS: str(int(serve is not None))}  # `serve`: no launcher holds the trainers
            procs.append(ProcessSpec(m, "server", s, spec.ip, local[m], server_cmd, env))
    for m, spec in enumerate(machines if serve is None else []):
        base = {**common, E.MACHINE_ID: str(m), E.ROLE: "trainer", "OMP_NUM_THREADS": str(omp),
                "MASTER_ADDR": master, "MASTER_PORT": str(master_port),
                "WORLD_SIZE": str(len(machines) * opts.num_trainers), "LOCAL_WORLD_SIZE": str(opts.num_trainers)}
        for i in range(1 if opts.fork_trainers else opts.num_trainers):
            rank = m * opts.num_trainers + i
            env = {**base, "RANK": str(rank), "LOCAL_RANK": str(i)}
            if opts.fork_trainers:  # it becomes the machine's every trainer
                env[E.FORK_TRAINERS] = str(opts.num_trainers)
            procs.append(ProcessSpec(m, "trainer", rank, spec.ip, local[m], opts.command, env))
    return Plan(procs, machines, local, session, str(workspace) if workspace.is_dir() else opts.workspace, check,
                via, files)
