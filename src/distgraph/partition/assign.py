"""Node-to-partition assignment of an in-memory graph, by the partitioner it names: METIS with
balance constraints (here), balanced random, or KaMinPar on the streaming path's undirected
graph file (`stream.kaminpar_assign`). It sits above that path; what both share is in `parts`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..array_graph import ArrayGraph
from ..arrays import unique_sorted
from ..errors import PartitionError
from ..progress import Background, wait_for
from .layout import PART_METHODS
from .metis import part_graph
from .parts import SPLIT_MASKS, fill_empty_parts, node_mask, part_count, random_parts
from .symmetric import symmetric_adjacency

if TYPE_CHECKING:
    from ..array_graph import Array


def _categories(values, n: int, what: str) -> np.ndarray:
    """`values` as n non-negative int64 categories: integers as they are, bool and float masks
    (integral values: 1.0 is category 1) as DGL casts them."""
    cat = np.asarray(values).reshape(-1)
    if cat.size != n or cat.dtype.kind not in "biuf":
        raise PartitionError(f"{what} must hold one category (an integer, or a mask) per node ({n}), got "
                             f"{cat.size} values of dtype {cat.dtype}")
    if cat.dtype.kind == "f" and (not np.isfinite(cat).all() or (cat % 1).any()):
        raise PartitionError(f"{what} holds non-integral values; give integer categories or a 0/1 mask")
    cat = cat.astype(np.int64)
    if cat.size and int(cat.min()) < 0:
        raise PartitionError(f"{what} categories must be >= 0, found {int(cat.min())}")
    return cat


def balance_categories(g: ArrayGraph, balance_ntypes) -> np.ndarray | None:
    """`partition_graph`'s `balance_ntypes` as one int64 category per node: an array over every
    node, or DGL's {node type: categories or mask} (types left out are category 0), or None.
    `balance_weights` then spreads each (node type, category) evenly."""
    if balance_ntypes is None:
        return None
    if not isinstance(balance_ntypes, dict):
        return _categories(balance_ntypes, g.num_nodes(), "balance_ntypes")
    cat = np.zeros(g.num_nodes(), dtype=np.int64)
    for ntype, values in balance_ntypes.items():
        if ntype not in g.ntypes:
            raise PartitionError(f"balance_ntypes names node type {ntype!r}, which the graph lacks ({g.ntypes})")
        i = g.ntypes.index(ntype)
        lo, hi = int(g.ntype_offsets[i]), int(g.ntype_offsets[i + 1])
        cat[lo:hi] = _categories(values, hi - lo, f"balance_ntypes[{ntype!r}]")
    return cat


def split_categories(g: ArrayGraph) -> Array:
    """Per-node category for `balance_ntypes`: 1 train, 2 val, 3 test, 0 other (over all node types),
    as the graph's kind of array (a tensor for a `Graph`)."""
    cat = np.zeros(g.num_nodes(), dtype=np.int64)
    node_data = {t: g.nodes[t].data for t in g.ntypes}
    for code, name in enumerate(SPLIT_MASKS, start=1):
        cat[node_mask(g.ntypes, g.ntype_offsets, node_data, name)] = code
    return g.as_array(cat)


def balance_weights(g: ArrayGraph, balance_ntypes: Array | None, balance_edges: bool) -> np.ndarray:
    """(num_nodes, ncon) METIS vertex weights: an indicator per (node type, category) that
    occurs, so each is spread evenly, plus the in-degree when `balance_edges`. `balance_ntypes`:
    categories as `balance_categories` reads them, or None."""
    n = g.num_nodes()
    key = np.asarray(g.node_type_ids())
    cat = balance_categories(g, balance_ntypes)
    if cat is not None:
        key = key * (int(cat.max(initial=0)) + 1) + cat
    present = unique_sorted(key)
    columns = np.searchsorted(present, key)
    w = np.zeros((n, present.size + int(balance_edges)), dtype=np.int64)
    w[np.arange(n), columns] = 1
    if balance_edges:
        w[:, -1] = np.asarray(g.in_degrees())
        if w[:, -1].sum() == 0:
            w = w[:, :-1]
    return w


def assign_parts(
    g: ArrayGraph,
    num_parts: int,
    part_method: str = "metis",
    balance_ntypes: Array | None = None,
    balance_edges: bool = False,
    seed: int = 0,
    alongside: Callable[[], object] | None = None,
    node_weights: np.ndarray | None = None,
    objtype: str = "cut",
) -> np.ndarray:
    """Partition id (int64) of every node, in the graph's own (homogeneous) ids.

    `alongside` is work that does not need the assignment: it runs on a second thread while
    the METIS call (which takes one core) runs, else before returning; its errors propagate.
    METIS and KaMinPar run where Ctrl-C can stop waiting for them (`progress.wait_for`)."""
    if part_method not in PART_METHODS:
        raise PartitionError(f"unknown part_method {part_method!r}; choose one of {', '.join(PART_METHODS)}")
    n = g.num_nodes()
    num_parts = part_count(num_parts, n)
    if num_parts == 1 or part_method == "random":
        parts = random_parts(n, num_parts, seed)
        if alongside is not None:
            alongside()
        return parts
    if part_method == "kaminpar":
        from .stream import kaminpar_assign

        parts = wait_for(kaminpar_assign, g, num_parts, seed, balance_categories(g, balance_ntypes),
                         balance_edges)  # no part left empty
        if alongside is not None:
            alongside()
        return parts
    xadj, adjncy = symmetric_adjacency(np.asarray(g.src), np.asarray(g.dst), n)
    if node_weights is not None:
        weights = np.asarray(node_weights, dtype=np.int64).reshape(n, -1)
        if (weights < 0).any():
            raise PartitionError("node_weights must not be negative")
    else:
        weights = balance_weights(g, balance_ntypes, balance_edges)
    beside = Background(alongside) if alongside is not None else None
    given = node_weights is not None  # a single column is a constraint only when asked for
    parts, _ = wait_for(part_graph, xadj, adjncy, num_parts, weights if given or weights.shape[1] > 1 else None,
                        seed=seed, objtype=objtype)
    del xadj, adjncy, weights
    if beside is not None:
        beside.result()
    return fill_empty_parts(parts, num_parts)
