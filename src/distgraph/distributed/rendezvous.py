"""torch.distributed on the addresses of ip_config: trainer 0 hosts the rendezvous store,
listening on MASTER_ADDR only, and every trainer's gloo traffic uses the interface of its
machine's address (`GLOO_SOCKET_IFNAME`), not whatever the host name resolves to (often a
loopback address other hosts cannot reach).

Left to itself, `init_process_group("gloo")` on rank 0 starts a store that listens on
every interface of the host. `initialize()` starts it first, on a socket bound to the
address the launcher gave (machine 0's from ip_config), as a multi-tenant store: torch
then finds and uses this one instead of starting its own. A script that set up
torch.distributed before `initialize()` keeps torch's, and so does a trainer of torchrun, whose
agent hosts the store already.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta

from ..cluster.env import ProcessEnv
from ..cluster.hosts import interface_of
from ..errors import InputError


def pin_interface(address: str) -> None:
    """Make gloo (and tensorpipe) use the interface holding `address`, unless the user chose one."""
    name = interface_of(address)
    if name is not None:
        for var in ("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
            os.environ.setdefault(var, name)


def host_rendezvous(env: ProcessEnv):
    """The store (a `torch.distributed.TCPStore`) when this process is trainer 0, else None."""
    import torch.distributed as tdist

    if env.role != "trainer" or env.rank != 0 or env.master is None or env.agent_store or \
            not tdist.is_available() or tdist.is_initialized():
        return None
    host, port = env.master
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        raise InputError(f"trainer 0 cannot listen on MASTER_ADDR {host} port {port} for torch.distributed ({exc}); "
                         f"is another job using the port? pass another --master_port to distgraph launch") from None
    return tdist.TCPStore(host, port, None, True, timedelta(seconds=env.timeouts.startup), wait_for_workers=False,
                          multi_tenant=True, master_listen_fd=sock.detach())
