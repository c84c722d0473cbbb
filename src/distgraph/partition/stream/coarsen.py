"""One level of coarsening in front of KaMinPar, streamed over the partitioner's ParHIP file.

KaMinPar's first contraction allocates two buffers of 8 bytes an adjacency entry of its input,
so on the whole graph it peaks near 10 bytes an entry. Here label propagation clusters the
nodes reading the file a range of rows at a time (holding per-node arrays and one range), the
clusters are contracted into a weighted ParHIP file through disk buckets (an edge's repeats
become its weight), KaMinPar partitions that smaller graph, and label propagation over the
fine rows refines the projected partition: a node moves to the part holding most of its
neighbours when that cuts fewer edges and the part stays within the balance bound.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ...arrays import unique_counts, unique_inverse
from ...native import kernels
from ...progress import Progress
from .adjacency import ParhipGraph, RowRanges, row_buckets, write_rows
from .buckets import Buckets

# Adjacency entries label propagation reads and rates at a time: its moves take effect range by
# range, and ranges this small keep it close to moving node by node (one range for a 1M-entry graph
# cut 30 % more than KaMinPar alone, as nodes moved all together; 2**14: as KaMinPar alone).
RATE_ENTRIES = 1 << 14
CONTRACT_ENTRIES = 1 << 21  # entries read and spread to the coarse graph's buckets at a time
CLUSTER_ROUNDS = 3
REFINE_ROUNDS = 3
# A cluster weighs at most this share of KaMinPar's own bound (imbalance x total / parts): clusters
# that large mix communities, and refinement cannot undo a partition of them (a 2M-node SBM: cut
# 15.0-15.9 % against 15.0 % for KaMinPar alone; an eighth: 15.01-15.02 %, a third of the entries).
CLUSTER_SHARE = 0.125
# KaMinPar balances the clusters within this share of the imbalance, leaving the refinement room.
COARSE_IMBALANCE_SHARE = 1 / 3
TIE_BITS = 8  # a hash of (label, round) below the count breaks ties between labels


def propagate(ranges: RowRanges, label: np.ndarray, label_weight: np.ndarray, node_weight: np.ndarray,
              max_weight: int, rounds: int, seed: int, desc: str, progress: bool = False) -> None:
    """Label propagation in place: range by range (`ranges`), each node takes the label most of its
    neighbours have (ties broken by a seeded hash) when more of them have it than its own and the
    label's weight stays within `max_weight` with the node in it. `label_weight[l]` is the summed
    `node_weight` of label l's nodes. A round that moves fewer than a thousandth of the nodes is the last."""
    if label.dtype != np.int32 or not label.flags.c_contiguous:
        raise TypeError(f"labels must be a contiguous int32 array, got {label.dtype}")
    rate = _rate_native if kernels() is not None else _rate_numpy
    scratch = [np.zeros(label_weight.size, dtype=np.int32), np.empty(0, dtype=np.int32)]
    graph = ranges.graph
    bar = Progress(rounds * graph.m, desc, "entry", enabled=progress, unit_scale=True)
    for r in range(rounds):
        salt = np.uint64((seed * 1_000_003 + r) * 0x9E3779B97F4A7C15 % 2**64)
        moved = 0
        for lo, hi, indptr, cols in ranges:
            best, best_count, own_count = rate(indptr, cols, label, lo, label_weight, node_weight[lo:hi], max_weight,
                                               salt, scratch)
            moved += _admit(lo, best, best_count, own_count, label, label_weight, node_weight, max_weight)
            bar.update(cols.size)
        if moved < max(1, graph.n // 1000):
            break
    bar.close()


def _rate_native(indptr, cols, label, lo, label_weight, node_weight, max_weight, salt, scratch):
    """Each row's best label it may join (-1: none), that label's count and its own label's count
    (rows lo.. with neighbours `cols` at `indptr`)."""
    rows = indptr.size - 1
    best, best_count, own_count = np.empty(rows, np.int32), np.empty(rows, np.int64), np.empty(rows, np.int64)
    longest = int(np.diff(indptr).max(initial=0))
    if longest > scratch[1].size:  # the labels one row touches
        scratch[1] = np.empty(longest, dtype=np.int32)
    own = label[lo:lo + rows]
    kernels().best_labels(rows, indptr.ctypes.data, cols.ctypes.data, label.ctypes.data, own.ctypes.data,
                          label_weight.ctypes.data, node_weight.ctypes.data, max_weight, int(salt),
                          scratch[0].ctypes.data, scratch[1].ctypes.data, best.ctypes.data, best_count.ctypes.data,
                          own_count.ctypes.data)
    return best, best_count, own_count


def _rate_numpy(indptr, cols, label, lo, label_weight, node_weight, max_weight, salt, scratch):
    """`_rate_native` by sorting every (row, label) pair of the range."""
    rows = indptr.size - 1
    nbr_label, own = label[cols], label[lo:lo + rows]
    best = np.full(rows, -1, dtype=np.int32)
    best_count, own_count = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
    row = np.repeat(np.arange(rows, dtype=np.int64), np.diff(indptr))
    run_key, count = unique_counts(row << 32 | nbr_label.astype(np.int64))  # (row, label) runs, by row
    run_row, run_label = run_key >> 32, run_key & 0xFFFFFFFF
    is_own = own[run_row] == run_label
    own_count[run_row[is_own]] = count[is_own]
    fits = is_own | (label_weight[run_label] + node_weight[run_row] <= max_weight)
    tie = ((run_label.astype(np.uint64) * salt) >> np.uint64(64 - TIE_BITS)).astype(np.int64)
    run_row, run_label, count = run_row[fits], run_label[fits], count[fits]
    # A row's best run is its last after sorting by (row, score, label): row < 2**21, score < 2**40.
    order = np.lexsort((run_label, count << TIE_BITS | tie[fits], run_row))
    last = order[np.flatnonzero(np.diff(run_row[order], append=rows))]
    best[run_row[last]], best_count[run_row[last]] = run_label[last], count[last]
    return best, best_count, own_count


def _admit(lo: int, best: np.ndarray, best_count: np.ndarray, own_count: np.ndarray, label: np.ndarray,
           label_weight: np.ndarray, node_weight: np.ndarray, max_weight: int) -> int:
    """Move the range's rows whose best label beats their own; several movers into one label are
    admitted in order while it fits. Returns the number moved."""
    own = label[lo:lo + best.size]
    rows = np.flatnonzero((best >= 0) & (best != own) & (best_count > own_count))
    if rows.size == 0:
        return 0
    by_target = np.argsort(best[rows], kind="stable")
    movers, target = rows[by_target] + lo, best[rows][by_target].astype(np.int64)
    w = node_weight[movers]
    cum = np.cumsum(w)
    group_start = np.flatnonzero(np.r_[True, target[1:] != target[:-1]])
    before = np.repeat(cum[group_start] - w[group_start], np.diff(group_start, append=target.size))
    admitted = label_weight[target] + (cum - before) <= max_weight
    movers, target, w = movers[admitted], target[admitted], w[admitted]
    np.subtract.at(label_weight, label[movers], w)
    np.add.at(label_weight, target, w)
    label[movers] = target
    return int(movers.size)


def cluster(ranges: RowRanges, node_weight: np.ndarray, num_parts: int, imbalance: float, seed: int,
            progress: bool = False) -> np.ndarray:
    """Each node's cluster (int32 ids 0..c-1, numbered in the order of their labels): label
    propagation with clusters of at most CLUSTER_SHARE x imbalance x total / num_parts weight."""
    n = ranges.graph.n
    label = np.arange(n, dtype=np.int32)
    label_weight = node_weight.copy()
    max_weight = max(int(node_weight.max()), int(CLUSTER_SHARE * imbalance * int(node_weight.sum()) / num_parts))
    propagate(ranges, label, label_weight, node_weight, max_weight, CLUSTER_ROUNDS, seed, "clusters", progress)
    del label_weight
    return unique_inverse(label, n)[1].astype(np.int32)


def contract(ranges: RowRanges, coarse_of: np.ndarray, node_weight: np.ndarray, path: Path, max_entries: int,
             progress: bool = False) -> int:
    """Write the graph of the clusters to `path` (ParHIP: cluster weights, and as edge weight the
    number of fine edges between two clusters); its number of entries."""
    c = int(coarse_of.max()) + 1
    coarse_weight = np.bincount(coarse_of, weights=node_weight, minlength=c).astype(np.int64)
    coarse_bounds = row_buckets(np.bincount(coarse_of, weights=ranges.deg, minlength=c).astype(np.int64), max_entries)
    bar = Progress(ranges.graph.m, "contract", "entry", enabled=progress, unit_scale=True)
    with Buckets(path.parent, coarse_bounds.size - 1, {"row": np.int32, "col": np.int32}, "coarse") as buckets:
        for lo, hi, indptr, cols in ranges:
            cu, cv = np.repeat(coarse_of[lo:hi], np.diff(indptr)), coarse_of[cols]
            keep = cu != cv
            cu, cv = cu[keep], cv[keep]
            buckets.append(np.searchsorted(coarse_bounds, cu, side="right") - 1, {"row": cu, "col": cv})
            bar.update(cols.size)
        buckets.finish()
        m = write_rows(path, c, coarse_bounds, buckets.take, coarse_weight, edge_weights=True)
    bar.close()
    return m


def coarsened_parts(path: Path, num_parts: int, seed: int, imbalance: float,
                    partition: Callable[[Path, float], np.ndarray], progress: bool = False) -> np.ndarray:
    """Parts of the ParHIP graph at `path` (int32): clustered and contracted into a file beside
    it, `partition(coarse file, imbalance)` on that, projected back and refined on the fine rows.
    While the partitioner runs, the per-node arrays wait on disk."""
    graph = ParhipGraph.open(path)
    deg = graph.degrees()
    node_weight = graph.vertex_weights()
    coarse_of = cluster(graph.ranges(deg, RATE_ENTRIES), node_weight, num_parts, imbalance, seed, progress)
    coarse, stash = path.with_name(path.name + ".coarse"), path.with_name(path.name + ".clusters.npy")
    try:
        contract(graph.ranges(deg, CONTRACT_ENTRIES), coarse_of, node_weight, coarse, 2 * CONTRACT_ENTRIES, progress)
        np.save(stash, coarse_of)
        del deg, coarse_of, node_weight
        coarse_parts = partition(coarse, imbalance * COARSE_IMBALANCE_SHARE)
        parts = coarse_parts[np.load(stash)]
    finally:
        coarse.unlink(missing_ok=True)
        stash.unlink(missing_ok=True)
    del coarse_parts
    refine(graph.ranges(graph.degrees(), RATE_ENTRIES), parts, graph.vertex_weights(), num_parts, imbalance, seed,
           progress)
    return parts


def refine(ranges: RowRanges, parts: np.ndarray, node_weight: np.ndarray, num_parts: int, imbalance: float, seed: int,
           progress: bool = False) -> None:
    """Label-propagation refinement of `parts` in place, each part kept within
    (1 + imbalance) x ceil(total / num_parts) (KaMinPar's bound; a part above it only loses nodes)."""
    part_weight = np.bincount(parts, weights=node_weight, minlength=num_parts).astype(np.int64)
    bound = int((1 + imbalance) * -(-int(node_weight.sum()) // num_parts))
    propagate(ranges, parts, part_weight, node_weight, bound, REFINE_ROUNDS, seed + 1, "refine", progress)
