"""`ip_config.txt`: one machine per line, `IP`, `IP PORT` or `IP PORT NUM_SERVERS`.

Both DGL's form (`IP PORT`) and DGL-KE's (`IP PORT NUM_SERVERS`) parse. Blank lines and
`#` comments are ignored; anything else is an error naming the file and line. Machine m
is the m-th machine line and serves partition m; its servers listen on PORT, PORT+1, ...
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

DEFAULT_PORT = 30050
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*$")


@dataclass(frozen=True)
class PeerAddress:
    """Where server `server_id` of machine `machine_id` listens."""

    machine_id: int
    server_id: int
    host: str
    port: int

    @property
    def endpoint(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp://{host}:{self.port}"

    @property
    def audience(self) -> str:
        """The name a connection's proof of the job secret is made for (`rpc.auth`): this
        server's place in the job, not its address (which a proxy or NAT may change)."""
        return f"server {self.server_id} of machine {self.machine_id}"

    def __str__(self) -> str:
        return f"server {self.server_id} of machine {self.machine_id} at {self.host}:{self.port}"


@dataclass(frozen=True)
class MachineSpec:
    """One line of ip_config."""

    ip: str
    port: int
    num_servers: int | None  # None: use --num_servers
    line: int

    def server_count(self, default: int) -> int:
        return self.num_servers if self.num_servers is not None else default


def _int(token: str, what: str, where: str, lo: int, hi: int) -> int:
    if not token.isdigit() or not lo <= int(token) <= hi:
        raise InputError(f"{where}: {what} must be an integer in [{lo}, {hi}], got {token!r}")
    return int(token)


def _host(token: str, where: str) -> str:
    try:
        return str(ipaddress.ip_address(token))
    except ValueError:
        if _HOSTNAME.match(token):
            return token
    host, colon, port = token.rpartition(":")
    if colon and port.isdigit() and host and ":" not in host:
        raise InputError(f"{where}: {token!r}: separate the port from the address with a space "
                         f"({host} {port}), as ip_config's lines are IP [PORT [NUM_SERVERS]]")
    raise InputError(f"{where}: {token!r} is neither an IP address nor a host name")


def parse_ip_config_text(text: str, source: str) -> list[MachineSpec]:
    """Machines listed in ip_config text; `source` names the file in errors."""
    machines = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        tokens = raw.split("#", 1)[0].split()
        if not tokens:
            continue
        where = f"{source}, line {lineno}"
        if len(tokens) > 3:
            raise InputError(f"{where}: expected `IP [PORT [NUM_SERVERS]]`, got {raw.strip()!r}")
        ip = _host(tokens[0], where)
        port = _int(tokens[1], "PORT", where, 1, 65535) if len(tokens) > 1 else DEFAULT_PORT
        count = _int(tokens[2], "NUM_SERVERS", where, 1, 1024) if len(tokens) > 2 else None
        machines.append(MachineSpec(ip, port, count, lineno))
    if not machines:
        raise InputError(f"{source} lists no machines; write one `IP [PORT [NUM_SERVERS]]` line per machine")
    return machines


def parse_ip_config(path: str | Path) -> list[MachineSpec]:
    """Read and check an ip_config file."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise InputError(f"ip_config file {p} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read ip_config file {p}: {exc}") from None
    return parse_ip_config_text(text, str(p))


def num_servers_disagreement(machines: list[MachineSpec], num_servers: int, source: str = "ip_config") -> str | None:
    """A warning when a NUM_SERVERS column overrides a different `--num_servers` (None when all agree)."""
    lines = [m.line for m in machines if m.num_servers is not None and m.num_servers != num_servers]
    if not lines:
        return None
    counts = sorted({m.num_servers for m in machines if m.line in lines})
    return (f"{source} gives {' or '.join(map(str, counts))} servers per machine on line{'s' * (len(lines) > 1)} "
            f"{', '.join(map(str, lines))}, but --num_servers is {num_servers}: the ip_config column wins there")


def server_addresses(machines: list[MachineSpec], default_num_servers: int,
                     source: str = "ip_config") -> list[PeerAddress]:
    """Every server's address, machine-major; overlapping port ranges on one host are an error."""
    peers, used = [], {}
    for m, spec in enumerate(machines):
        count = spec.server_count(default_num_servers)
        if spec.port + count - 1 > 65535:
            raise InputError(f"{source}, line {spec.line}: {count} servers from port {spec.port} run past 65535")
        for s in range(count):
            key = (spec.ip, spec.port + s)
            if key in used:
                raise InputError(f"{source}, line {spec.line}: machine {m} needs port {key[1]} on {spec.ip}, "
                                 f"already used by machine {used[key]}; space the ports at least NUM_SERVERS apart")
            used[key] = m
            peers.append(PeerAddress(m, s, spec.ip, spec.port + s))
    return peers
