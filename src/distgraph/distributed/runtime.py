"""`initialize`, `barrier`, `exit_client`: the process-wide runtime of a script.

Launched by `distgraph launch`, a process learns its role from the environment: a server
serves until the session ends and exits; a trainer or sampler connects to every server.
Run directly, a script is *standalone*: one process holds the whole (1-part) partition
in memory and the same API works on it, with the same results, through the same client
code and the same request handler, minus the network.
"""

from __future__ import annotations

import atexit
import sys
from dataclasses import dataclass
from pathlib import Path

from ..cluster import error_lines
from ..cluster.env import ProcessEnv, Timeouts, features_on_disk as features_on_disk_env
from ..cluster.hosts import is_local
from ..cluster.lifeline import watch
from ..errors import DistGraphError, InputError
from ..graphbolt import note_graphbolt
from ..kvstore.client import KVClient
from ..kvstore.handler import RequestHandler
from ..kvstore.local import LocalChannel
from ..kvstore.shm import SegmentNamer
from ..kvstore.store import KVStore
from ..malloc import keep_freed_memory
from ..partition import RangePartitionBook, load_partition_book
from ..rpc.auth import Credentials
from ..rpc.transport import Connections
from .partition_data import publish_partition_data
from .policy import PolicyTable
from .rendezvous import host_rendezvous, pin_interface
from .sampler_pool import SamplerPool
from ..server import serve


@dataclass
class Context:
    """What `initialize` set up for this process."""

    role: str  # "standalone", "trainer" or "sampler"
    machine_id: int
    num_machines: int
    rank: int  # global trainer rank (a sampler: its trainer's)
    num_trainers: int  # trainers in the whole job
    num_samplers: int  # sampler processes per trainer
    part_config: str | None
    book: RangePartitionBook | None
    client: KVClient
    policies: PolicyTable
    timeouts: Timeouts
    servers_stopped: bool = False  # after shutdown_servers(): no goodbye to send
    rendezvous: object | None = None  # trainer 0: torch.distributed's store (`rendezvous`)
    credentials: Credentials | None = None  # launched processes: the job's secret (`rpc.auth`)
    sampler_pool: SamplerPool | None = None  # a launched trainer's sampler processes
    sampler_id: int = 0  # a sampler: its index among its trainer's samplers
    features_on_disk: bool = False  # standalone: serve the partition's node/edge data from its files

    @property
    def standalone(self) -> bool:
        return self.role == "standalone"

    @property
    def local_rank(self) -> int:
        """This trainer's index among the trainers of its machine (0 standalone)."""
        return self.rank % max(self.num_trainers // max(self.num_machines, 1), 1)

    def use_partition(self, part_config: str | Path) -> RangePartitionBook:
        """The partition book; standalone mode loads the (1-part) partition on first use."""
        if self.book is not None:
            if Path(part_config).resolve() != Path(self.part_config).resolve():
                raise InputError(f"this process already uses partition {self.part_config}, not {part_config}")
            return self.book
        if not self.standalone:
            raise InputError("launched processes get their partition from `distgraph launch --part_config`")
        self.book = self.policies.book = _standalone_book(part_config)
        self.part_config = str(part_config)
        publish_partition_data(self.client.local_store, part_config, 0, self.features_on_disk)
        return self.book


_CONTEXT: Context | None = None


def _standalone_book(part_config: str | Path) -> RangePartitionBook:
    book = load_partition_book(part_config, 0)
    if book.num_partitions() != 1:
        raise InputError(f"standalone mode needs a 1-part partition but {part_config} has {book.num_partitions()} "
                         f"parts: run the script with `distgraph launch`, or partition with --num_parts 1")
    return book


def _standalone(part_config: str | None, num_workers: int, features_on_disk: bool) -> Context:
    policies = PolicyTable()
    store = KVStore(0, 0, 1, policies, None, creator=True)
    client = KVClient(LocalChannel(RequestHandler(store)), [1], 0, store, policies, Timeouts().startup)
    ctx = Context("standalone", 0, 1, 0, 1, num_workers, None, None, client, policies, Timeouts(),
                  features_on_disk=features_on_disk)
    if part_config is not None:
        ctx.use_partition(part_config)
    return ctx


def _connect(env: ProcessEnv) -> Context:
    if env.lifeline_fd is not None:
        watch(env.lifeline_fd, None, f"distgraph {env.role} (rank {env.rank})", env.starter)
    machines, peers, cfg = env.job()
    book = load_partition_book(env.part_config, env.machine_id)
    spm = [m.server_count(env.num_servers) for m in machines]
    if env.role == "trainer":
        pin_interface(machines[env.machine_id].ip)
    rendezvous = host_rendezvous(env)
    policies = PolicyTable(book)
    graph_name = cfg.graph_name

    def attach_only(m: int) -> KVStore:
        return KVStore(m, 0, spm[m], policies, SegmentNamer(env.session, graph_name, m), creator=False)

    same_host = [attach_only(m) for m, machine in enumerate(machines)
                 if env.host_shm and m != env.machine_id and is_local(machine.ip)]
    credentials = env.credentials()
    client = KVClient(Connections(peers, env.timeouts.request, credentials), spm, env.machine_id, attach_only(env.machine_id),
                      policies, env.timeouts.startup, same_host)
    try:
        client.hello(env.role)
    except Exception:
        client.close()
        raise
    return Context(env.role, env.machine_id, len(machines), env.rank, env.num_trainers * len(machines),
                   env.num_samplers, env.part_config, book, client, policies, env.timeouts, rendezvous=rendezvous,
                   credentials=credentials, sampler_id=env.sampler_id)


def initialize(ip_config: str | None = None, max_queue_size: int | None = None, net_type: str | None = None,
               num_worker_threads: int = 1, use_graphbolt: bool = False, *, num_servers: int = 1,
               num_workers: int = 0, part_config: str | None = None, features_on_disk: bool | None = None) -> None:
    """Set up this process: serve (server role), connect to the servers (trainer, sampler),
    or run standalone when not started by `distgraph launch`.

    The launcher's environment decides the role, machine id, ranks, ip_config, partition
    and number of servers; the arguments are used only where it says nothing (standalone:
    `part_config` is the 1-part partition to load; `num_workers` is the number of sampler
    processes per trainer; `features_on_disk` serves the partition's node and edge data
    read-only from its files instead of copying it into memory, by default when
    DISTGRAPH_FEATURES_ON_DISK=1). DGL's `max_queue_size`, `net_type`, `num_worker_threads` and
    `use_graphbolt` are accepted and change nothing: messages are not queued in a fixed
    buffer, the transport is ZeroMQ, servers take their threads from `distgraph launch`, and
    partitions serve sampling from their CSC either way (`use_graphbolt=True` says so in one
    line, from trainer 0)."""
    global _CONTEXT
    if _CONTEXT is not None:
        raise DistGraphError("distgraph.initialize() was already called in this process")
    env = ProcessEnv.from_environ()
    if env is not None:
        if env.error_lines:
            error_lines.install()
        env = env.with_defaults(ip_config, num_servers, num_workers, part_config)
        if env.role == "server":
            serve(env)
            sys.exit(0)
    keep_freed_memory()  # a client's pulled rows and received messages (`serve` does it for servers)
    if env is None:
        on_disk = features_on_disk_env() if features_on_disk is None else features_on_disk
        _CONTEXT = _standalone(part_config, num_workers, on_disk)
    else:
        _CONTEXT = _connect(env)
    atexit.register(exit_client)
    ctx = _CONTEXT
    note_graphbolt(use_graphbolt and ctx.role != "sampler" and ctx.rank == 0)
    if ctx.role == "trainer" and ctx.num_samplers > 0:  # shared by every loader of this trainer
        ctx.sampler_pool = SamplerPool(ctx.num_samplers, ctx.rank, ctx.credentials, ctx.timeouts)


def get_context() -> Context:
    """The runtime of this process; raises if `initialize` was not called."""
    if _CONTEXT is None:
        raise DistGraphError("call distgraph.initialize() before using distributed tensors")
    return _CONTEXT


def is_initialized() -> bool:
    return _CONTEXT is not None


def barrier() -> None:
    """Wait until every trainer of the job reaches this point."""
    all_gather(None)


def all_gather(value=None) -> list:
    """A barrier of every trainer that also hands each one the `value` (plain data: numbers,
    strings, lists, maps) every trainer brought, indexed by trainer rank."""
    ctx = get_context()
    if ctx.role == "sampler":
        raise DistGraphError("samplers do not take part in barriers; call barrier() from trainers only")
    if ctx.standalone:
        return [value]
    got = ctx.client.barrier(ctx.num_trainers, ctx.timeouts.barrier, {"rank": ctx.rank, "value": value})
    by_rank = {v["rank"]: v["value"] for v in got if isinstance(v, dict) and "rank" in v}
    if sorted(by_rank) != list(range(ctx.num_trainers)):
        raise DistGraphError(f"a barrier of {ctx.num_trainers} trainers saw ranks {sorted(by_rank)}: another "
                             f"client is calling barriers in this job")
    return [by_rank[r] for r in range(ctx.num_trainers)]


class JobClient:
    """What DGL scripts reach as `g._client` (DGL's key-value client of the process):
    `barrier()` waits for every trainer of the job (the runtime's `barrier`), and the counts
    DGL's client reports."""

    def __init__(self, ctx: Context):
        self._ctx = ctx

    def barrier(self) -> None:
        barrier()

    @property
    def num_servers(self) -> int:
        """Servers in the whole job (1 standalone: the process serves itself)."""
        return sum(self._ctx.client.servers_per_machine)

    @property
    def machine_id(self) -> int:
        return self._ctx.machine_id

    def data_name_list(self) -> list[str]:
        """Names of the tensors this machine's servers hold."""
        return [t["name"] for t in self._ctx.client.list()]


def shutdown_servers() -> None:
    """Ask every server to stop now (normally they stop after the last trainer's goodbye)."""
    ctx = get_context()
    if not ctx.standalone:
        ctx.client.shutdown_servers()
        ctx.servers_stopped = True


def exit_client() -> None:
    """Say goodbye to the servers and release this process's resources (also run at exit)."""
    global _CONTEXT
    ctx, _CONTEXT = _CONTEXT, None
    if ctx is None:
        return
    try:
        if ctx.sampler_pool is not None:
            ctx.sampler_pool.close()  # its processes say their own goodbyes first
        if not ctx.standalone and not ctx.servers_stopped:
            ctx.client.goodbye()
    except DistGraphError as exc:
        print(f"distgraph: could not say goodbye to the servers: {exc}", file=sys.stderr)
    finally:
        ctx.client.close()
