"""The messages of a distributed partitioning. The coordinator (`distgraph partition
--ip_config`) sends each host's process operations; hosts send each other node data rows and
edges with their edge data rows (data rows as bytes, read by the dtype of the data layout
every host has). All of them travel as the project's wire format (`rpc.wire`: a msgpack
header, raw array frames with checked dtypes and shapes) over its authenticated transport
(`rpc.transport`, `rpc.auth`): no pickle, and only peers that prove the job's secret are heard.

Requests carry `op` and its fields; replies `ok` (and the op's values), or `ok: False`
with `error`, one line naming the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...cluster.ip_config import PeerAddress
from ...rpc.wire import WireError
from ..layout import COUNTS, PartMeta

# coordinator -> host
OPEN, LAYOUT, DATA_ROWS, DEGREES, DEGREE_ROWS, ADJACENCY, ADJACENCY_BUCKET, OLD2NEW, CLEAR, PLAN = (
    "open", "layout", "data_rows", "degrees", "degree_rows", "adjacency", "adjacency_bucket", "old2new", "clear",
    "plan")
NODE_DATA, SHUFFLE, WRITE, EDGE_MAP_ROWS, MAP_ROWS, COMMIT, ABORT, PROGRESS, EXIT = (
    "node_data", "shuffle", "write", "edge_map_rows", "map_rows", "commit", "abort", "progress", "exit")
# host -> host
NODE_ROWS, EDGES, NEW_IDS, DEGREE_IDS = "node_rows", "edges", "new_ids", "degree_ids"
BACKGROUND = (DEGREES, ADJACENCY, NODE_DATA, SHUFFLE, WRITE)  # long: run aside while the host keeps receiving


@dataclass(frozen=True)
class HostAddress(PeerAddress):
    """Where the partitioning process of machine `machine_id` listens (the machine's ip_config line)."""

    def __str__(self) -> str:
        return f"the partitioning process of machine {self.machine_id} at {self.host}:{self.port}"


def addresses(hosts: list) -> list[HostAddress]:
    """The hosts' addresses from `[[host, port], ...]` (the `open` message's list)."""
    return [HostAddress(m, 0, str(h), int(p)) for m, (h, p) in enumerate(hosts)]


def field(header: dict, name: str, kind=int):
    """A request field of type `kind`, or a `WireError` naming it."""
    value = header.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise WireError(f"field {name!r} of {header.get('op')!r} must be {kind.__name__}, got {value!r}")
    return value


def ids(array: np.ndarray, bound: int, what: str) -> np.ndarray:
    """A received id array, checked 1-d and in [0, bound)."""
    if array.ndim != 1 or (array.size and (int(array.min()) < 0 or int(array.max()) >= bound)):
        raise WireError(f"{what} must be ids in [0, {bound})")
    return array


def meta_of(raw: dict) -> PartMeta:
    """A partition's config entry as a host sent it."""
    files = {k: v for k, v in raw.items() if k not in COUNTS and k != "part_id"}
    return PartMeta(int(raw["part_id"]), *(int(raw[k]) for k in COUNTS), files)
