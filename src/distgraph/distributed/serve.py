"""Running a server process: load the partition into shared memory and serve it."""

from __future__ import annotations

import socket
import sys

from ..cluster.env import ProcessEnv
from ..cluster.ip_config import parse_ip_config, server_addresses
from ..cluster.lifeline import watch
from ..errors import InputError
from ..kvstore.server import KVServer
from ..kvstore.shm import SegmentNamer
from ..kvstore.store import KVStore
from ..malloc import keep_freed_memory
from ..partition import load_partition, load_partition_book
from ..partition.layout import PartitionConfig
from ..rpc.transport import ServerSocket
from ..sampling.remote import graph_ops
from .partition_data import publish_partition_data
from .policy import PolicyTable


def _bind_endpoint(host: str, port: int) -> str:
    """Listen on the machine's address from ip_config (host names resolved)."""
    ip = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0]
    return f"tcp://[{ip}]:{port}" if ":" in ip else f"tcp://{ip}:{port}"


def serve(env: ProcessEnv) -> None:
    """Serve partition `env.machine_id` until every trainer said goodbye or a shutdown."""
    if not env.part_config:
        raise InputError("a server needs the partition config (DISTGRAPH_PART_CONFIG / --part_config)")
    machines = parse_ip_config(env.ip_config)
    peers = server_addresses(machines, env.num_servers, env.ip_config)
    cfg = PartitionConfig.load(env.part_config)
    if cfg.num_parts != len(machines):
        raise InputError(f"{env.ip_config} lists {len(machines)} machines but {env.part_config} has "
                         f"{cfg.num_parts} partitions; they must be equal")
    if not 0 <= env.machine_id < len(machines):
        raise InputError(f"machine id {env.machine_id} is out of range: {env.ip_config} lists {len(machines)} machines")
    num_servers = machines[env.machine_id].server_count(env.num_servers)
    if not 0 <= env.server_id < num_servers:
        raise InputError(f"server id {env.server_id} is out of range: machine {env.machine_id} "
                         f"has {num_servers} servers")
    peer = next(p for p in peers if (p.machine_id, p.server_id) == (env.machine_id, env.server_id))
    keep_freed_memory()
    label = f"distgraph {peer}"
    book = load_partition_book(env.part_config, env.machine_id)
    store = KVStore(env.machine_id, env.server_id, num_servers, PolicyTable(book),
                    SegmentNamer(env.session, cfg.graph_name, env.machine_id), creator=env.server_id == 0)
    if env.lifeline_fd is not None:
        watch(env.lifeline_fd, env.lifeline_timeout, label, env.starter, store.remove_files)
    credentials = env.credentials()
    try:
        sock = ServerSocket(_bind_endpoint(peer.host, peer.port), env.timeouts.request, credentials, label)
    except Exception as exc:
        raise InputError(f"{label}: cannot listen on port {peer.port} ({exc}); is another job using it?") from None
    try:
        if store.creator:
            publish_partition_data(store, env.part_config, env.machine_id)
        server = KVServer(store, sock, env.num_trainers * len(machines), label)
        for op, fn in graph_ops(load_partition(env.part_config, env.machine_id), store).items():
            server.handler.add_op(op, fn)
        print(f"{label}: serving", file=sys.stderr, flush=True)
        server.serve()
    finally:
        sock.close()
        store.close()
