"""Publishing a partition's node and edge data as named tensors of a store."""

from __future__ import annotations

from pathlib import Path

from ..kvstore.store import KVStore
from ..partition import load_partition
from .policy import edge_policy_str, graph_data_name, node_policy_str


def publish_partition_data(store: KVStore, part_config: str | Path, part_id: int) -> list[str]:
    """Copy partition `part_id`'s node/edge data into `store` (shared memory on a server);
    returns the tensor names, e.g. `node~_N~feat`."""
    part = load_partition(part_config, part_id, mmap=True)
    book = part.book
    names = []
    for kind, data, policy_of, count in (
            ("node", part.node_data, node_policy_str, book.num_nodes),
            ("edge", part.edge_data, edge_policy_str, book.num_edges)):
        for type_name, arrays in data.items():
            policy = policy_of(type_name)
            for data_name, rows in arrays.items():
                name = graph_data_name(policy, data_name)
                store.create(name, (count(type_name), *rows.shape[1:]), rows.dtype, policy, data=rows)
                names.append(name)
    return names
