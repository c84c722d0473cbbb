"""In- and out-degrees across the hosts of a distributed partitioning: host h holds only those of
the old ids of its share [lo_h, hi_h) (`share_of`; 16 bytes a node of its share). Counting its
share of the edges a piece at a time, a host adds the ends of its own share into its slice and
sends the others, grouped by owner, to their owners in one batch a piece; the owners' main
loops add them into theirs (so a count waits only on other hosts' main loops, which never wait
on the network). The coordinator then asks each owner for its own rows."""

from __future__ import annotations

import threading

import numpy as np

from ...arrays import add_counts, group_keys
from ...rpc.transport import Request
from ...rpc.wire import WireError
from ..stream.buckets import id_dtype
from . import protocol as P
from .shares import NodeShare


class OwnedDegrees(NodeShare):
    """The in- and out-degrees of this host's share of the old ids, added to by its own count and
    (under a lock: both run at once) by the ids other hosts send its main loop."""

    def __init__(self, machine: int, num_nodes: int, num_hosts: int):
        super().__init__(machine, num_nodes, num_hosts)
        self.in_deg = np.zeros(self.hi - self.lo, dtype=np.int64)
        self.out_deg = np.zeros(self.hi - self.lo, dtype=np.int64)
        self.lock = threading.Lock()

    def _add(self, src: np.ndarray, dst: np.ndarray) -> None:
        """Count sources (out) and destinations (in) of this host's share (unchecked)."""
        with self.lock:
            add_counts(self.out_deg, src.astype(np.int64) - self.lo)
            add_counts(self.in_deg, dst.astype(np.int64) - self.lo)

    def spread(self, src: np.ndarray, dst: np.ndarray) -> list[Request]:
        """Count a piece of edges: the ends of this host's share here; for each other owner of
        some of its ends, the request that sends them (sources, destinations; in the ids' type)."""
        grouped = []
        for ids in (src, dst):
            order, at = group_keys(self.owners(ids), self.num_hosts)
            grouped.append((ids[order].astype(id_dtype(self.num_nodes), copy=False), at))
        me = self.machine
        self._add(*(ids[at[me]:at[me + 1]] for ids, at in grouped))
        return [Request(h, {"op": P.DEGREE_IDS}, [ids[at[h]:at[h + 1]] for ids, at in grouped])
                for h in range(self.num_hosts) if h != me and any(at[h + 1] > at[h] for _, at in grouped)]

    def receive(self, h: dict, arrays) -> tuple[dict, list]:
        """Sources and destinations of edges another host read whose ends are in this host's share."""
        if len(arrays) != 2:
            raise WireError(f"machine {self.machine}: degree ids are two arrays (sources, destinations)")
        self._add(*(self.check_ids(ids, "degree ids") for ids in arrays))
        return {}, []

    def rows(self, h: dict, arrays) -> tuple[dict, list]:
        """The in- and out-degrees of old ids [lo, hi) of this host's share (for the coordinator)."""
        lo, hi = P.field(h, "lo"), P.field(h, "hi")
        self.check(lo, hi, "degrees asked for old ids")
        return {}, [self.in_deg[lo - self.lo:hi - self.lo], self.out_deg[lo - self.lo:hi - self.lo]]
