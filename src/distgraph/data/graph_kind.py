"""Which class a loader builds: `Graph` over torch tensors, or `ArrayGraph` over numpy arrays,
which never imports torch (`distgraph partition` loads its input so)."""

from __future__ import annotations

from ..array_graph import ArrayGraph


def graph_class(tensors: bool) -> type[ArrayGraph]:
    """`graph.Graph` (torch tensors) when `tensors`, else `ArrayGraph` (numpy; torch is not imported)."""
    if not tensors:
        return ArrayGraph
    from ..tensor_graph import Graph

    return Graph
