"""Graphs users already hold, as a `Graph`: a PyTorch Geometric `Data` / `HeteroData`
(`from_pyg`) or a DGL graph (`from_dgl`). Neither library is a dependency: the objects are
read through their public attributes, so each converter works wherever its library does.

PyG's names become the ones distgraph's examples (and DGL's) use: `x` -> `feat`, `y` ->
`label`, `edge_attr` -> `feat` on edges; other node- or edge-level tensors (as PyG tells
them apart) keep their names (`train_mask`, ...). DGL's data keep their names; its id data (`dgl.NID`, `_ID`) is
dropped, since partitioning numbers the graph anew and keeps the original ids itself."""

from __future__ import annotations

import torch

from ..errors import InputError
from ..tensor_graph import Graph

_PYG_NAMES = {"x": "feat", "y": "label"}
_PYG_STRUCTURE = {"edge_index", "adj_t", "num_nodes", "node_type", "edge_type", "ptr", "batch"}


def _pyg_tensors(store, edge: bool) -> dict[str, torch.Tensor]:
    """The per-node (or per-edge) tensors of a PyG `Data` or storage, renamed."""
    out = {}
    for key in list(store.keys()):
        value = store[key]
        if key in _PYG_STRUCTURE or not isinstance(value, torch.Tensor) or value.dim() == 0:
            continue
        if edge and store.is_edge_attr(key):
            out["feat" if key == "edge_attr" else key] = value
        elif not edge and store.is_node_attr(key) and not store.is_edge_attr(key):
            out[_PYG_NAMES.get(key, key)] = value
    return out


def from_pyg(data) -> Graph:
    """A PyG `Data` (homogeneous) or `HeteroData` as a `Graph`; see the module's doc for names."""
    if hasattr(data, "node_types") and hasattr(data, "edge_types"):
        num_nodes = {t: int(data[t].num_nodes) for t in data.node_types}
        edges = {tuple(c): (data[c].edge_index[0], data[c].edge_index[1]) for c in data.edge_types}
        ndata = {t: _pyg_tensors(data[t], False) for t in data.node_types}
        edata = {tuple(c): _pyg_tensors(data[c], True) for c in data.edge_types}
        return Graph.from_hetero(edges, num_nodes, ndata, edata)
    edge_index = getattr(data, "edge_index", None)
    if edge_index is None:
        raise InputError("this PyG graph has no edge_index (only a sparse adj_t?); give it an edge_index first")
    return Graph(edge_index[0], edge_index[1], int(data.num_nodes), _pyg_tensors(data, False),
                 _pyg_tensors(data, True))


def from_dgl(g) -> Graph:
    """A DGL graph (homogeneous or heterogeneous) as a `Graph`, with its node and edge data."""
    drop = "_ID"

    def data(frame) -> dict[str, torch.Tensor]:
        return {k: v for k, v in frame.items() if k != drop}

    if len(g.ntypes) == 1 and len(g.canonical_etypes) == 1:
        src, dst = g.edges()
        return Graph(src, dst, g.num_nodes(), data(g.ndata), data(g.edata))
    num_nodes = {t: g.num_nodes(t) for t in g.ntypes}
    edges = {c: g.edges(etype=c) for c in g.canonical_etypes}
    ndata = {t: data(g.nodes[t].data) for t in g.ntypes}
    edata = {c: data(g.edges[c].data) for c in g.canonical_etypes}
    return Graph.from_hetero(edges, num_nodes, ndata, edata)
