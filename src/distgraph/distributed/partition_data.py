"""Publishing a partition as named tensors of a store: its node and edge data, and the
degrees of its owned nodes.

Degree tensors make `DistGraph.in_degrees` and `out_degrees` pulls like any feature: rows
of this machine from shared memory, others from their owners. Their data names start with
'#', which partition data names cannot. Edge endpoints are not published (16 bytes an edge):
`find_edges` reads them off the owner's CSC.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..kvstore.store import KVStore
from ..partition import Partition, load_partition
from ..partition.layout import PartitionConfig
from .policy import edge_policy_str, graph_data_name, node_policy_str

IN_DEGREE, OUT_DEGREE = "#in_degree", "#out_degree"


def degree_dtype(num_edges: int) -> torch.dtype:
    """The dtype degrees are published in: int32 while no degree can reach 2**31 (half the
    shared memory of int64; 0.8 GB at 100M nodes), read back as int64."""
    return torch.int32 if num_edges < 2**31 else torch.int64


def structure_tensors(part: Partition) -> list[tuple[str, str, int, torch.Tensor]]:
    """(tensor name, policy, rows of that type in the whole graph, this partition's rows)."""
    book, p = part.book, part.part_id
    lo, _ = book.node_range(p, None)
    dtype = degree_dtype(book.num_edges())
    out = []
    for t in book.ntypes:
        rows = book.map_to_homo_nid(book.partid2nids(p, t), t) - lo
        policy = node_policy_str(t)
        for name, values in ((IN_DEGREE, part.in_degree()), (OUT_DEGREE, part.out_degree)):
            out.append((graph_data_name(policy, name), policy, book.num_nodes(t), values[rows].to(dtype)))
    return out


def publish_partition_data(store: KVStore, part_config: str | Path, part_id: int,
                           on_disk: bool = False) -> list[str]:
    """Copy partition `part_id`'s node/edge data and structure into `store` (shared memory on
    a server), or with `on_disk` serve the node/edge data read-only from the partition's files
    (`kvstore.disk`; degrees are computed, so they are copied still); returns the tensor names,
    e.g. `node~_N~feat`."""
    part = load_partition(part_config, part_id, mmap=True)
    book = part.book
    cfg = PartitionConfig.load(part_config)
    files = cfg.part(part_id)
    names = []
    for kind, data, policy_of, count in (
            ("node", part.node_data, node_policy_str, book.num_nodes),
            ("edge", part.edge_data, edge_policy_str, book.num_edges)):
        for type_name, arrays in data.items():
            policy = policy_of(type_name)
            for data_name, rows in arrays.items():
                name = graph_data_name(policy, data_name)
                shape = (count(type_name), *rows.shape[1:])
                if on_disk:
                    store.create(name, shape, rows.dtype, policy,
                                 file=cfg.dir / files.file(f"{kind}_data")[type_name][data_name])
                else:
                    store.create(name, shape, rows.dtype, policy, data=rows)
                names.append(name)
    for name, policy, count, rows in structure_tensors(part):
        store.create(name, (count, *rows.shape[1:]), rows.dtype, policy, data=rows)
        names.append(name)
    return names
