"""A Slurm allocation as the launcher's machines: the nodes of `SLURM_JOB_NODELIST` in order,
each node's address (its `NodeAddr`, from `scontrol`), and an ip_config of them.

The node list is Slurm's compressed form (`n[01-03,7],gpu5`), expanded here as `scontrol show
hostnames` does, so nothing but `scontrol show node` (for the addresses) is needed."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from ..errors import InputError

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
BASE_PORT, PORT_STRIDE, PORT_SLOTS = 30050, 8, 2000  # a job's servers listen on ports chosen by its job id


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if depth < 0:
            raise InputError(f"node list {text!r} has a ']' without its '['")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise InputError(f"node list {text!r} has a '[' without its ']'")
    parts.append(text[start:])
    return [p for p in parts if p]


def _expand(name: str, text: str) -> list[str]:
    """One name with bracketed ranges (several brackets multiply), zero padding kept."""
    m = re.search(r"\[([^\]]*)\]", name)
    if m is None:
        return [name]
    head, tail = name[:m.start()], name[m.end():]
    out = []
    for item in m.group(1).split(","):
        r = _RANGE.match(item.strip())
        if r is None:
            raise InputError(f"node list {text!r}: {item!r} is not a number or a range a-b")
        lo, hi = r.group(1), r.group(2) or r.group(1)
        if int(hi) < int(lo):
            raise InputError(f"node list {text!r}: the range {item!r} runs backwards")
        out += [f"{head}{n:0{len(lo)}d}{t}" for n in range(int(lo), int(hi) + 1) for t in _expand(tail, text)]
    return out


def expand_nodelist(text: str) -> list[str]:
    """`n[1-3],gpu[01-02]` -> `['n1', 'n2', 'n3', 'gpu01', 'gpu02']` (Slurm's order)."""
    names = [n for part in _split_top(text.strip()) for n in _expand(part, text)]
    if not names:
        raise InputError(f"node list {text!r} names no node")
    return names


def node_addresses(names: list[str]) -> dict[str, str]:
    """Each node's address as Slurm knows it (`NodeAddr`); a node `scontrol` does not know (or
    no `scontrol`) keeps its name, which the network then resolves."""
    try:
        out = subprocess.run(["scontrol", "show", "node", "-o", ",".join(names)], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    found = {}
    for line in out.splitlines():
        fields = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if "NodeName" in fields and fields.get("NodeAddr"):
            found[fields["NodeName"]] = fields["NodeAddr"]
    return {n: found.get(n, n) for n in names}


def job_port(job_id: str) -> int:
    """The first server port of a job: spread by job id so jobs sharing a node do not collide."""
    return BASE_PORT + PORT_STRIDE * (int(job_id) % PORT_SLOTS) if job_id.isdigit() else BASE_PORT


@dataclass(frozen=True)
class Allocation:
    """The nodes of a Slurm job and their addresses, in the node list's order."""

    job_id: str
    nodes: list[str]
    addresses: list[str]

    @classmethod
    def of(cls, job_id: str, nodelist: str) -> "Allocation":
        nodes = expand_nodelist(nodelist)
        addr = node_addresses(nodes)
        return cls(job_id, nodes, [addr[n] for n in nodes])

    def ip_config(self, num_servers: int) -> str:
        """One `ADDRESS PORT NUM_SERVERS` line per node."""
        port = job_port(self.job_id)
        return "".join(f"{a} {port} {num_servers}\n" for a in self.addresses)
