"""A mini-batch (seeds, pair graphs, blocks and the data on them) as a header and a flat list of
arrays: the form in which a sampler process (`sampler_worker`) sends it to its trainer's loader
over the wire format (`rpc.wire`; msgpack header + raw array buffers, no pickle)."""

from __future__ import annotations

import torch

from ..block import EID, NID, Block, BlockTypes
from .pair_graph import PairGraph, PairTypes


def encode(batch: tuple) -> tuple[dict, list[torch.Tensor]]:
    """A node or edge mini-batch (typed or not, with any data attached to its blocks and pair
    graphs) as a header and a flat list of arrays."""
    *head, blocks = batch
    arrays, pairs, data, names = [head[0]], [], [], None
    if isinstance(head[1], PairGraph):
        for p in head[1:]:
            pairs.append({"eids": p._eids is not None, "typed": p.types is not None,
                          "edge_tid": p.types is not None and p.types.edge_tid is not None})
            arrays += [p.node_ids, p.edge_index] + ([p._eids] if p._eids is not None else [])
            if p.types is not None:
                arrays += p.types.arrays()
                names = [p.types.ntypes, p.types.canonical_etypes]
    else:
        arrays.append(head[1])
    for b in blocks:
        arrays += [b.src_nodes, b.dst_nodes, b.edge_index, b.eids] + ([] if b.types is None else b.types.arrays())
        if b.types is not None:
            names = [b.types.ntypes, b.types.canonical_etypes]
    owners = [("block", i, b) for i, b in enumerate(blocks)] + \
        [("pair", i, p) for i, p in enumerate(head[1:] if pairs else ())]
    for where, i, owner in owners:
        for side, frames in (owner.data_frames(made_only=True) if where == "block" else owner.data_frames()).items():
            for t, frame in frames.items():
                for k, v in frame.items():
                    if k not in (NID, EID):
                        data.append([where, i, side, t, k])
                        arrays.append(v)
    header = {"kind": "edge" if pairs else "node", "pairs": pairs, "blocks": len(blocks),
              "typed_blocks": bool(blocks) and blocks[0].types is not None, "names": names, "data": data}
    return header, [a.contiguous() for a in arrays]


def decode(header: dict, arrays: list[torch.Tensor], id_map=None) -> tuple:
    """Inverse of `encode`; `id_map` (the graph's) gives typed blocks their per-type edge ids."""
    arrays = iter(arrays)
    names = header["names"]
    if names is not None:
        names = [list(names[0]), [tuple(c) for c in names[1]]]
    head = [next(arrays)]
    pair_graphs = []
    for p in header["pairs"]:
        nodes, edge_index = next(arrays), next(arrays)
        eids = next(arrays) if p["eids"] else None
        types = None
        if p["typed"]:
            node_type, node_tid, edge_type = next(arrays), next(arrays), next(arrays)
            types = PairTypes(*names, node_type, node_tid, edge_type, next(arrays) if p["edge_tid"] else None)
        pair_graphs.append(PairGraph(nodes, edge_index[0], edge_index[1], eids, types))
    head += pair_graphs or [next(arrays)]
    blocks = []
    for _ in range(int(header["blocks"])):
        core = [next(arrays) for _ in range(4)]
        types = BlockTypes(*names, *(next(arrays) for _ in range(3)), id_map=id_map) if header["typed_blocks"] else None
        blocks.append(Block(*core, types))
    for where, i, side, t, key in header["data"]:
        owner = blocks[i] if where == "block" else pair_graphs[i]
        frames = owner.side_data(side) if where == "block" else owner.data_frames()[side]
        frames[tuple(t) if isinstance(t, list) else t][key] = next(arrays)
    return (*head, blocks)
