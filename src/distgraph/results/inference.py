"""Layer-wise full-graph inference across the trainers, as DGL's distributed examples do it:
each layer's output for every node goes into a `DistTensor` (rows live with their owners),
each trainer computing its `node_split` share of the nodes from the previous layer's rows
of their full in-neighbourhoods, one batch at a time. A trainer holds one batch's blocks
and rows, never the graph: its memory follows the batch size, not the number of nodes."""

from __future__ import annotations

import itertools
from typing import Callable, Sequence

import torch

from ..dataloading.loader import DistNodeDataLoader
from ..dataloading.neighbor_sampler import MultiLayerFullNeighborSampler
from ..dataloading.split import even_split
from ..distributed.dist_tensor import DistTensor, start_pull

_RUNS = itertools.count()  # every trainer runs its inferences in the same order: the same names


def _rows(tensors: dict[str, DistTensor], ids: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """tensors[t][ids[t]] for every type, in one round trip."""
    types = [t for t in ids if t in tensors]
    if not types:
        return {}
    return dict(zip(types, start_pull([(tensors[t], ids[t]) for t in types]).result()))


def layerwise_inference(g, layers: Sequence[Callable], inputs: Callable, widths: Sequence[int], batch_size: int,
                        last_ntypes: Sequence[str] | None = None, name: str = "inference") -> list:
    """Every layer's output for every node: a list with one entry per layer, a `DistTensor`
    of (nodes, width) on a homogeneous graph, a dict {node type: DistTensor} otherwise.

    `layers[i](block, h_src)` maps a one-layer block's source rows to its destinations' (dicts
    per node type on a heterogeneous graph; include activations); `inputs(input_nodes)` gives
    the first layer's source rows; `widths[i]` is layer i's output width. The last layer is
    computed for `last_ntypes` only (default: every type). Call it on every trainer, in eval
    mode; it returns when every trainer has finished every layer."""
    hetero = not g.is_homogeneous
    run = next(_RUNS)
    sampler = MultiLayerFullNeighborSampler(1)
    outputs, rows_of = [], inputs
    for i, (layer, width) in enumerate(zip(layers, widths)):
        types = list(last_ntypes) if last_ntypes and i == len(layers) - 1 else g.ntypes
        out = {t: DistTensor((g.num_nodes(t), width), torch.float32, f"{name}-{run}-layer{i}-{t}",
                             part_policy=g.get_node_partition_policy(t)) for t in types}
        share = {t: even_split(g.num_nodes(t)) for t in types}
        loader = DistNodeDataLoader(g, share if hetero else share[types[0]], sampler, batch_size=batch_size)
        with torch.no_grad():
            for input_nodes, output_nodes, blocks in loader:
                h = layer(blocks[0], rows_of(input_nodes))
                if hetero:
                    for t, ids in output_nodes.items():
                        if ids.numel():
                            out[t][ids] = h[t]
                else:
                    out[types[0]][output_nodes] = h
        g.barrier()  # layer i is complete everywhere before anyone reads it
        outputs.append(out if hetero else out[types[0]])
        rows_of = (lambda ids, prev=out: _rows(prev, ids)) if hetero else (lambda ids, prev=out[types[0]]: prev[ids])
    return outputs
