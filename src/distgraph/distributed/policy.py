"""Partition policies: which machine owns a row of node or edge data of one type, or of a
table that is not graph data.

As in DGL, a policy is named by a string, `node~<ntype>` or `edge~<src>:<rel>:<dst>`, and
answers `to_partid`, `to_local` and `get_part_size` from the partition book. Rows are
per-type ids; partition p owns one contiguous range per type, so the owner of an id is a
`searchsorted` over the range bounds. `table~<rows>` is a table of `rows` rows (a KG's
relation embeddings, say) cut into equal contiguous ranges, one per machine.
"""

from __future__ import annotations

import torch

from ..errors import InputError
from ..ids import DEFAULT_ETYPE, DEFAULT_NTYPE, as_id_tensor
from ..partition import RangePartitionBook
from ..partition.layout import etype_key

NODE, EDGE, TABLE = "node", "edge", "table"


def node_policy_str(ntype: str = DEFAULT_NTYPE) -> str:
    return f"{NODE}~{ntype}"


def edge_policy_str(etype=DEFAULT_ETYPE) -> str:
    return f"{EDGE}~{etype_key(tuple(etype)) if not isinstance(etype, str) else etype}"


def table_policy_str(rows: int) -> str:
    """The policy of a plain table of `rows` rows, spread evenly over the machines."""
    return f"{TABLE}~{int(rows)}"


def graph_data_name(policy_str: str, data_name: str) -> str:
    """Name under which servers publish a partition's node/edge data, e.g. `node~paper~feat`."""
    return f"{policy_str}~{data_name}"


class PartitionPolicy:
    """Maps row ids of one node or edge type to partitions and to local rows."""

    def __init__(self, policy_str: str, partition_book: RangePartitionBook):
        kind, _, type_name = policy_str.partition("~")
        if kind not in (NODE, EDGE, TABLE):
            raise InputError(f"policy {policy_str!r} must start with 'node~', 'edge~' or 'table~'")
        self._kind, self._type, self._book = kind, type_name, partition_book
        parts = partition_book.num_partitions()
        if kind == TABLE:
            if not type_name.isdigit():
                raise InputError(f"policy {policy_str!r}: a table policy is 'table~<number of rows>'")
            rows = int(type_name)
            self._bounds = torch.tensor([rows * p // parts for p in range(parts + 1)], dtype=torch.int64)
            return
        if kind == NODE:
            type_name = type_name or DEFAULT_NTYPE
            if type_name not in partition_book.ntypes:
                raise InputError(f"policy {policy_str!r}: unknown node type; the graph has {partition_book.ntypes}")
        else:
            keys = [etype_key(c) for c in partition_book.canonical_etypes]
            type_name = type_name or etype_key(DEFAULT_ETYPE)
            if type_name not in keys:
                raise InputError(f"policy {policy_str!r}: unknown edge type; canonical edge types are {keys}")
        self._type = type_name
        span = partition_book.node_range if kind == NODE else partition_book.edge_range
        ranges = [span(p, type_name) for p in range(parts)]
        self._bounds = torch.tensor([r[0] for r in ranges] + [ranges[-1][1]], dtype=torch.int64)

    @property
    def policy_str(self) -> str:
        return f"{self._kind}~{self._type}"

    @property
    def type_name(self) -> str:
        return self._type

    @property
    def is_node(self) -> bool:
        return self._kind == NODE

    @property
    def partition_book(self) -> RangePartitionBook:
        return self._book

    @property
    def part_id(self) -> int:
        return self._book.partid

    @property
    def bounds(self) -> list[int]:
        """Row bounds of every partition: partition p owns rows [bounds[p], bounds[p+1])."""
        return self._bounds.tolist()

    def get_size(self) -> int:
        return int(self._bounds[-1])

    def get_part_size(self) -> int:
        return int(self._bounds[self.part_id + 1] - self._bounds[self.part_id])

    def _checked(self, ids) -> torch.Tensor:
        ids = as_id_tensor(ids, f"{self.policy_str} ids")
        if ids.numel():
            mn, mx = (int(v) for v in torch.aminmax(ids))
            if mn < 0 or mx >= self.get_size():
                raise InputError(f"id {mn if mn < 0 else mx} is out of range for {self.policy_str} "
                                 f"with {self.get_size()} rows")
        return ids

    def to_partid(self, ids) -> torch.Tensor:
        return torch.searchsorted(self._bounds, self._checked(ids), right=True) - 1

    def to_local(self, ids) -> torch.Tensor:
        """Row index within this partition's rows (ids must be owned by `part_id`)."""
        ids = self._checked(ids)
        lo, hi = int(self._bounds[self.part_id]), int(self._bounds[self.part_id + 1])
        if ids.numel() and (int(ids.min()) < lo or int(ids.max()) >= hi):
            raise InputError(f"some {self.policy_str} ids are not owned by partition {self.part_id} "
                             f"(it owns [{lo}, {hi}))")
        return ids - lo

    def __repr__(self) -> str:
        return f"PartitionPolicy({self.policy_str!r}, part_id={self.part_id})"


class NodePartitionPolicy(PartitionPolicy):
    def __init__(self, partition_book: RangePartitionBook, ntype: str = DEFAULT_NTYPE):
        super().__init__(node_policy_str(ntype), partition_book)


class EdgePartitionPolicy(PartitionPolicy):
    def __init__(self, partition_book: RangePartitionBook, etype=DEFAULT_ETYPE):
        super().__init__(edge_policy_str(etype), partition_book)


class PolicyTable:
    """policy string -> row bounds of every partition (what a store needs), from a partition
    book given now or, in standalone mode, later."""

    def __init__(self, book: RangePartitionBook | None = None):
        self.book = book
        self._bounds: dict[str, tuple[int, ...]] = {}

    def __call__(self, policy_str: str) -> tuple[int, ...]:
        bounds = self._bounds.get(policy_str)
        if bounds is None:
            if self.book is None:
                raise InputError(f"partition policy {policy_str!r} needs a partition: pass part_config to "
                                 f"distgraph.initialize() (standalone) or --part_config to `distgraph launch`")
            bounds = self._bounds[policy_str] = tuple(PartitionPolicy(policy_str, self.book).bounds)
        return bounds
