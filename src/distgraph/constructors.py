"""DGL's graph constructors under their names: `dgl.graph((src, dst))` and
`dgl.heterograph({(src_type, rel, dst_type): (src, dst)})`, giving the project's `Graph`
(DGL's `DGLGraph` here). `idtype` and `device` are accepted as DGL takes them: ids are int64
and graphs live on the CPU, so int32 ids are widened and a GPU is refused (mini-batches go to
a GPU: the loaders' `device`)."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from .errors import InputError
from .ids import as_id_tensor
from .tensor_graph import Graph

FORMATS = ("coo", "csr", "csc")


def _check(idtype, device) -> None:
    if idtype not in (None, torch.int32, torch.int64):
        raise InputError(f"idtype must be torch.int32 or torch.int64 (ids are stored as int64), got {idtype!r}")
    if device is not None and torch.device(device).type != "cpu":
        raise InputError(f"graphs are built and sampled on the CPU; device {device!r} is not available for one: "
                         f"leave device unset and give the loader device={device!r} to train there")


def _edges(data, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(src, dst) of DGL's graph data: a pair of id arrays, or ('coo', (U, V)), ('csr', (indptr,
    indices, edge ids)), ('csc', (indptr, indices, edge ids))."""
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], str):
        fmt, arrays = data
        if fmt not in FORMATS:
            raise InputError(f"{what}: unknown sparse format {fmt!r}; use one of {', '.join(FORMATS)}")
        if fmt == "coo":
            return _edges(tuple(arrays), what)
        indptr, indices = (as_id_tensor(a, f"{what} {fmt}") for a in arrays[:2])
        rows = torch.repeat_interleave(torch.arange(len(indptr) - 1), indptr[1:] - indptr[:-1])
        if len(arrays) > 2 and arrays[2] is not None and len(arrays[2]):  # edge ids: the edges in their order
            order = torch.argsort(as_id_tensor(arrays[2], f"{what} edge ids"))
            rows, indices = rows[order], indices[order]
        return (rows, indices) if fmt == "csr" else (indices, rows)
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise InputError(f"{what} must be (src, dst) id arrays, or ('coo'|'csr'|'csc', arrays), got {type(data)}")
    src, dst = as_id_tensor(data[0], f"{what} src"), as_id_tensor(data[1], f"{what} dst")
    if len(src) != len(dst):
        raise InputError(f"{what}: src has {len(src)} ids and dst {len(dst)}; they must pair up")
    return src, dst


def graph(data, *, ntype: str | None = None, etype: str | None = None, num_nodes: int | None = None,
          idtype=None, device=None, row_sorted: bool = False, col_sorted: bool = False) -> Graph:
    """DGL's `dgl.graph`: a graph of one node type and one edge type from (src, dst) (or a
    sparse format); `num_nodes` defaults to the largest id + 1."""
    _check(idtype, device)
    src, dst = _edges(data, "graph data")
    if ntype is None and etype is None:
        return Graph(src, dst, num_nodes)
    key = (ntype or "_N", etype or "_E", ntype or "_N")
    n = num_nodes if num_nodes is not None else int(max(src.max(), dst.max())) + 1 if len(src) else 0
    return Graph.from_hetero({key: (src, dst)}, {key[0]: n})


def heterograph(data_dict: Mapping, num_nodes_dict: Mapping[str, int] | None = None, *, idtype=None,
                device=None) -> Graph:
    """DGL's `dgl.heterograph`: {(src_type, relation, dst_type): (src, dst)} (or a sparse
    format) with per-type ids; a node type's count defaults to its largest id + 1."""
    _check(idtype, device)
    edges, counts = {}, {}
    for key, data in data_dict.items():
        if not (isinstance(key, tuple) and len(key) == 3 and all(isinstance(k, str) for k in key)):
            raise InputError(f"heterograph keys are canonical edge types (src_type, relation, dst_type), got {key!r}")
        src, dst = _edges(data, f"edges of {key}")
        edges[key] = (src, dst)
        for t, ids in ((key[0], src), (key[2], dst)):
            counts[t] = max(counts.get(t, 0), int(ids.max()) + 1 if len(ids) else 0)
    if num_nodes_dict is not None:
        for t, n in num_nodes_dict.items():
            if n < counts.get(t, 0):
                raise InputError(f"num_nodes_dict[{t!r}] = {n}, but the edges name node {counts[t] - 1} of that type")
            counts[t] = int(n)
    return Graph.from_hetero(edges, counts)
