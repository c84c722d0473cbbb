"""A server process: `python -m distgraph.server` (or `initialize()` in the server role),
configured by the launcher's environment (docs/launch.md). This is the one place a server
is put together: the job's layout, the machine's store in shared memory (its first server
fills it from the partition), the listening socket that admits only the job's peers, the
request loop with the graph operations, and the lifeline that ends it with its launcher.
"""

from __future__ import annotations

import gc
import os
import sys

if __name__ == "__main__":  # a server process: no collection while torch and the rest load (a third of
    gc.disable()            # their import time); see the end of this module

from .cluster.env import ROLE, ProcessEnv
from .cluster.hosts import bind_endpoint
from .cluster.lifeline import watch
from .distributed.partition_data import publish_partition_data
from .distributed.policy import PolicyTable
from .errors import DistGraphError, InputError
from .files import make_private
from .kge.evaluate.ranking import rank_ops
from .kvstore.server import KVServer
from .kvstore.shm import SegmentNamer
from .kvstore.store import KVStore
from .malloc import keep_freed_memory
from .partition import load_partition, load_partition_book
from .rpc.transport import ServerSocket
from .sampling.remote import graph_ops


def serve(env: ProcessEnv) -> None:
    """Serve partition `env.machine_id` until every trainer said goodbye or a shutdown."""
    machines, peers, cfg = env.job()
    num_servers = machines[env.machine_id].server_count(env.num_servers)
    if not 0 <= env.server_id < num_servers:
        raise InputError(f"server id {env.server_id} is out of range: machine {env.machine_id} "
                         f"has {num_servers} servers")
    peer = next(p for p in peers if (p.machine_id, p.server_id) == (env.machine_id, env.server_id))
    credentials = env.credentials()
    keep_freed_memory()
    label = f"distgraph {peer}"
    book = load_partition_book(env.part_config, env.machine_id)
    store = KVStore(env.machine_id, env.server_id, num_servers, PolicyTable(book),
                    SegmentNamer(env.session, cfg.graph_name, env.machine_id), creator=env.server_id == 0)
    if env.lifeline_fd is not None:
        watch(env.lifeline_fd, None, label, env.starter, store.remove_files)
    try:
        sock = ServerSocket(bind_endpoint(peer.host, peer.port), env.timeouts.request, credentials, label,
                            peer.audience, watch_clients=env.watch_trainers)
    except Exception as exc:
        raise InputError(f"{label}: cannot listen on port {peer.port} ({exc}); is another job using it?") from None
    try:
        if store.creator:
            publish_partition_data(store, env.part_config, env.machine_id, env.features_on_disk)
        server = KVServer(store, sock, env.num_trainers * len(machines), label)
        ops = {**graph_ops(load_partition(env.part_config, env.machine_id), store),
               **rank_ops(cfg, env.machine_id, store)}
        for op, fn in ops.items():
            server.handler.add_op(op, fn)
        print(f"{label}: serving", file=sys.stderr, flush=True)
        server.serve()
        if server.lost is not None:
            raise DistGraphError(f"{label}: {server.lost}")
    finally:
        sock.close()
        store.close()


def main() -> int:
    """Serve until the session ends; exit code 2 with one message on a configuration error."""
    make_private()  # checkpoint pieces it writes are the user's alone
    try:
        env = ProcessEnv.from_environ()
        if env is None or env.role != "server":
            raise DistGraphError(f"set {ROLE}=server and the other DISTGRAPH_* variables "
                                 f"(or start servers with `distgraph launch`)")
        serve(env.with_defaults(None, 1, 0, None))
    except DistGraphError as exc:
        print(f"distgraph.server: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    gc.freeze()  # the modules' objects live as long as the process: later collections skip them
    gc.enable()
    code = main()
    # the socket and shared memory are released: skip the interpreter's teardown of torch and
    # friends (about a second), so a stopped server is gone well inside the launcher's grace
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
