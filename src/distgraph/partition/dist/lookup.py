"""New node ids across the hosts of a distributed partitioning: host h holds only those of the
old ids of its share [lo_h, hi_h) (`share_of`, the numbering's rows the coordinator sends it);
a host that needs others' asks their owners, one request to each per lookup (answered by the
owner's main loop, so a lookup never waits on the owner's own running operation)."""

from __future__ import annotations

import numpy as np

from ...arrays import group_keys
from ...errors import PartitionError
from ...rpc.transport import Connections, Request
from ..stream.buckets import id_dtype
from . import protocol as P
from .shares import NodeShare


class OwnedNewIds(NodeShare):
    """This host's rows of the numbering (old2new of its share of the old ids), filled from the
    coordinator's pieces; it answers other hosts' lookups."""

    def __init__(self, machine: int, num_nodes: int, num_hosts: int):
        super().__init__(machine, num_nodes, num_hosts)
        self.new = np.empty(self.hi - self.lo, dtype=id_dtype(num_nodes))  # (pages taken as they are filled)

    def put(self, h: dict, arrays) -> tuple[dict, list]:
        """A piece of this host's rows of the numbering, from old id `lo` on (the coordinator's)."""
        (piece,) = arrays
        lo = P.field(h, "lo")
        self.check(lo, lo + piece.size, "new ids sent for old ids")
        self.new[lo - self.lo:lo - self.lo + piece.size] = P.ids(piece, self.num_nodes, "new ids")
        return {}, []

    def own(self, old: np.ndarray) -> np.ndarray:
        """The new ids of old ids of this host's share (unchecked)."""
        return self.new[old - self.lo]

    def answer(self, h: dict, arrays) -> tuple[dict, list]:
        """Another host's lookup: the new ids of old ids (one array), or of the old ids [lo, hi)."""
        if arrays:
            (old,) = arrays
            return {}, [self.own(self.check_ids(old, "old ids"))]
        lo, hi = P.field(h, "lo"), P.field(h, "hi")
        self.check(lo, hi, "old ids")
        return {}, [self.new[lo - self.lo:hi - self.lo]]


class NewIdLookup:
    """Old ids to new ids for one operation of a host: its own from its rows, the others asked
    of their owners through `conns` (the operation's connections to every host)."""

    def __init__(self, owned: OwnedNewIds, conns: Connections):
        self.owned, self.conns = owned, conns

    def pair(self, dst: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The new ids of both ends of edges in one lookup, each owner asked for its ids, repeats
        and all (a counting sort by owner: np.unique's sort took most of the lookup's time)."""
        old = np.concatenate((dst, src), dtype=self.owned.new.dtype)  # int32 below 2**31 nodes: half the bytes
        order, at = group_keys(self.owned.owners(old), self.owned.num_hosts)
        grouped = old[order]  # owner h's ids are grouped[at[h]:at[h + 1]]
        new = np.empty_like(old)
        new[order] = self._gather(at, lambda h: ({}, [grouped[at[h]:at[h + 1]]]))
        return new[:dst.size], new[dst.size:]

    def range(self, lo: int, hi: int) -> np.ndarray:
        """The new ids of old ids [lo, hi): each owner asked for its part of the range."""
        at = np.clip(self.owned.starts, lo, hi) - lo  # owner h's ids are lo + at[h] .. lo + at[h + 1]
        return self._gather(at, lambda h: ({"lo": lo + int(at[h]), "hi": lo + int(at[h + 1])}, []))

    def _gather(self, at: np.ndarray, request) -> np.ndarray:
        """The new ids of pieces `at` (one per owner, in owner order), each asked of its owner as
        `request(h)` (fields, arrays) gives, this host's from its own rows."""
        me, owned = self.owned.machine, self.owned
        new = np.empty(int(at[-1]), dtype=owned.new.dtype)
        asked = [h for h in range(at.size - 1) if at[h + 1] > at[h] and h != me]
        replies = self.conns.call([Request(h, {"op": P.NEW_IDS, **fields}, arrays)
                                   for h in asked for fields, arrays in [request(h)]])
        for h, r in zip(asked, replies):
            if len(r.arrays) != 1 or r.arrays[0].shape != (at[h + 1] - at[h],):
                raise PartitionError(f"machine {h} answered a lookup of {at[h + 1] - at[h]} new ids with another "
                                     f"shape")
            new[at[h]:at[h + 1]] = r.arrays[0]
        if at[me + 1] > at[me]:
            fields, arrays = request(me)
            new[at[me]:at[me + 1]] = owned.answer(fields, arrays)[1][0]
        return new
