"""Node-to-partition assignment: METIS with balance constraints, or balanced random."""

from __future__ import annotations

import operator
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from ..array_graph import ArrayGraph
from ..arrays import unique_sorted
from ..errors import PartitionError
from .metis import part_graph
from .layout import PART_METHODS
from .symmetric import symmetric_adjacency

if TYPE_CHECKING:
    from ..array_graph import Array

SPLIT_MASKS = ("train_mask", "val_mask", "test_mask")


def positive_int(value, what: str) -> int:
    """`value` as a positive int: numpy integers are accepted; bools, strings and floats are not."""
    try:
        k = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        k = None
    if k is None or k < 1:
        raise PartitionError(f"{what} must be a positive integer, got {value!r}")
    return k


def node_mask(g: ArrayGraph, name: str) -> np.ndarray:
    """Boolean node data `name` (e.g. 'train_mask') over all nodes; False for types without it."""
    mask = np.zeros(g.num_nodes(), dtype=bool)
    for i, t in enumerate(g.ntypes):
        data = g.nodes[t].data
        if name in data:
            lo, hi = int(g.ntype_offsets[i]), int(g.ntype_offsets[i + 1])
            if tuple(data[name].shape) != (hi - lo,):
                raise PartitionError(f"node data {name!r} of type {t!r} has shape {tuple(data[name].shape)}; "
                                     f"a mask needs one value per {t!r} node ({hi - lo})")
            mask[lo:hi] = np.asarray(data[name]).astype(bool)
    return mask


def split_categories(g: ArrayGraph) -> Array:
    """Per-node category for `balance_ntypes`: 1 train, 2 val, 3 test, 0 other (over all node types),
    as the graph's kind of array (a tensor for a `Graph`)."""
    cat = np.zeros(g.num_nodes(), dtype=np.int64)
    for code, name in enumerate(SPLIT_MASKS, start=1):
        cat[node_mask(g, name)] = code
    return g.as_array(cat)


def balance_weights(g: ArrayGraph, balance_ntypes: Array | None, balance_edges: bool) -> np.ndarray:
    """(num_nodes, ncon) METIS vertex weights: an indicator per (node type, category) that
    occurs, so each is spread evenly, plus the in-degree when `balance_edges`. `balance_ntypes`:
    one integer category per node (an array or a tensor), or None."""
    n = g.num_nodes()
    key = np.asarray(g.node_type_ids())
    if balance_ntypes is not None:
        cat = np.asarray(balance_ntypes).reshape(-1)
        if cat.size != n or cat.dtype.kind not in "biu":
            raise PartitionError(f"balance_ntypes must hold one integer category per node ({n}), "
                                 f"got {cat.size} values of dtype {cat.dtype}")
        cat = cat.astype(np.int64)
        if cat.size and int(cat.min()) < 0:
            raise PartitionError(f"balance_ntypes categories must be >= 0, found {int(cat.min())}")
        key = key * (int(cat.max()) + 1) + cat
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
    the METIS call (which takes one core) runs, else before returning; its errors propagate."""
    if part_method not in PART_METHODS:
        raise PartitionError(f"unknown part_method {part_method!r}; choose one of {', '.join(PART_METHODS)}")
    num_parts = positive_int(num_parts, "num_parts")
    n = g.num_nodes()
    if num_parts > n:
        raise PartitionError(f"cannot split {n} nodes into {num_parts} parts; use at most {n} parts")
    if num_parts == 1 or part_method == "random":
        parts = np.zeros(n, dtype=np.int64) if num_parts == 1 else \
            (np.random.default_rng(seed).permutation(n) % num_parts).astype(np.int64)
        if alongside is not None:
            alongside()
        return parts
    if part_method == "kaminpar":
        from .stream import kaminpar_assign

        parts = kaminpar_assign(g, num_parts, seed, balance_ntypes, balance_edges)
        if alongside is not None:
            alongside()
        return fill_empty_parts(parts, num_parts)
    xadj, adjncy = symmetric_adjacency(np.asarray(g.src), np.asarray(g.dst), n)
    if node_weights is not None:
        weights = np.asarray(node_weights, dtype=np.int64).reshape(n, -1)
        if (weights < 0).any():
            raise PartitionError("node_weights must not be negative")
    else:
        weights = balance_weights(g, balance_ntypes, balance_edges)
    with ThreadPoolExecutor(max_workers=1) as side:
        beside = side.submit(alongside) if alongside is not None else None
        given = node_weights is not None  # a single column is a constraint only when asked for
        parts, _ = part_graph(xadj, adjncy, num_parts, weights if given or weights.shape[1] > 1 else None,
                              seed=seed, objtype=objtype)
        del xadj, adjncy, weights
        if beside is not None:
            beside.result()
    return fill_empty_parts(parts, num_parts)


def fill_empty_parts(parts: np.ndarray, num_parts: int) -> np.ndarray:
    """METIS can leave parts empty when num_parts is close to the number of nodes: move one
    node of the largest part into each empty one (in place; a loop over parts, not nodes)."""
    counts = np.bincount(parts, minlength=num_parts)
    for p in np.flatnonzero(counts == 0):
        big = int(counts.argmax())
        parts[np.flatnonzero(parts == big)[-1]] = p
        counts[big] -= 1
        counts[p] += 1
    return parts
