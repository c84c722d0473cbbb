"""What both partition paths (in memory: `assign`, `writer`; streaming: `stream/`) share about
nodes and their parts: the split masks and reading one over all nodes, the checked number of
parts, balanced random parts, and no part left empty. It imports neither path."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import PartitionError

SPLIT_MASKS = ("train_mask", "val_mask", "test_mask")
MASK_ROWS = 1 << 24  # rows of a mask converted at a time: a memory-mapped one is never read whole


def positive_int(value, what: str) -> int:
    """`value` as a positive int: numpy integers are accepted; bools, strings and floats are not."""
    try:
        k = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        k = None
    if k is None or k < 1:
        raise PartitionError(f"{what} must be a positive integer, got {value!r}")
    return k


def part_count(num_parts, num_nodes: int) -> int:
    """`num_parts` checked: a positive integer, and no more parts than nodes."""
    num_parts = positive_int(num_parts, "num_parts")
    if num_parts > num_nodes:
        raise PartitionError(f"cannot split {num_nodes} nodes into {num_parts} parts; use at most {num_nodes} parts")
    return num_parts


def node_mask(ntypes: Sequence[str], ntype_offsets, node_data: Mapping[str, Mapping[str, Any]],
              name: str) -> np.ndarray:
    """Boolean node data `name` (e.g. 'train_mask') over all nodes, False for types without it.
    `node_data` holds each type's data by name (arrays, tensors, memory-mapped or file-backed rows);
    a mask has one value per node of its type."""
    mask = np.zeros(int(ntype_offsets[-1]), dtype=bool)
    for i, t in enumerate(ntypes):
        data = node_data.get(t, {})
        if name not in data:
            continue
        lo, hi = int(ntype_offsets[i]), int(ntype_offsets[i + 1])
        values = data[name]
        if tuple(values.shape) not in ((hi - lo,), (hi - lo, 1)):
            raise PartitionError(f"node data {name!r} of type {t!r} has shape {tuple(values.shape)}; "
                                 f"a mask needs one value per {t!r} node ({hi - lo})")
        for start in range(0, hi - lo, MASK_ROWS):
            end = min(start + MASK_ROWS, hi - lo)
            mask[lo + start:lo + end] = np.asarray(values[start:end], dtype=bool).reshape(-1)
    return mask


def random_parts(num_nodes: int, num_parts: int, seed: int) -> np.ndarray:
    """Balanced random parts (int64): a seeded permutation of the nodes dealt round the parts
    (every node in part 0 when there is one part)."""
    if num_parts == 1:
        return np.zeros(num_nodes, dtype=np.int64)
    return (np.random.default_rng(seed).permutation(num_nodes) % num_parts).astype(np.int64)


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
