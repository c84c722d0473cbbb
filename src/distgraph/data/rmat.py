"""`generate_rmat`: a power-law graph of any size (R-MAT, Graph500's quadrant probabilities),
written chunk by chunk in DGL's chunked format, so a billion edges never sit in memory.

Each edge picks one of four quadrants of the adjacency matrix per bit of its endpoints' ids
(probabilities a, b, c, d), which gives a few very high-degree nodes and a long tail, like
citation graphs (ogbn-papers100M: 111M nodes, 1.6B edges). Ids beyond `num_nodes` fold back
into range, and every id then goes through a fixed random bijection of [0, num_nodes)
(x -> (k x + o) mod n), so high-degree nodes are spread over the id space instead of sitting
at its start. Node data: `feat` (float16 by default, a class centre plus noise, so labels
are learnable), `label`, and train/val/test masks with papers100M's proportions.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..progress import Progress
from .chunked import ChunkWriter

GRAPH500 = (0.57, 0.19, 0.19, 0.05)
SPLITS = {"train_mask": 0.011, "val_mask": 0.0011, "test_mask": 0.0019}  # ogbn-papers100M's shares


def _bijection(n: int, rng: np.random.Generator) -> tuple[int, int]:
    """(k, o) with gcd(k, n) = 1: x -> (k x + o) mod n permutes [0, n)."""
    while True:
        k = int(rng.integers(max(2, n // 3), max(3, n)))
        if math.gcd(k, n) == 1:
            return k, int(rng.integers(0, n))


def _permute(ids: np.ndarray, n: int, k: int, o: int) -> np.ndarray:
    """(k ids + o) mod n without overflow (k, ids < 2**31 keep the product in int64)."""
    ids %= n
    ids *= k
    ids += o
    ids %= n
    return ids


def rmat_edges(rng: np.random.Generator, count: int, scale: int, probs=GRAPH500) -> tuple[np.ndarray, np.ndarray]:
    """`count` R-MAT edges over [0, 2**scale): one quadrant draw per bit."""
    a, b, c, _ = probs
    src = np.zeros(count, dtype=np.int64)
    dst = np.zeros(count, dtype=np.int64)
    for bit in range(scale):
        r = rng.random(count, dtype=np.float32)
        down = r >= a + b  # quadrants c, d: the source's bit is 1
        right = (r >= a) & ~down | (r >= a + b + c)  # quadrants b, d: the destination's bit is 1
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    return src, dst


def generate_rmat(out: str | Path, num_nodes: int, num_edges: int, feat_dim: int = 16, num_classes: int = 16,
                  feat_dtype: str = "float16", chunk_edges: int = 1 << 24, seed: int = 0,
                  probs=GRAPH500, progress: bool = True) -> Path:
    """Write an R-MAT graph of `num_nodes` nodes and `num_edges` directed edges (duplicates and
    self-loops kept, as R-MAT makes them) under the new folder `out`; returns its metadata.json."""
    if num_nodes < 2 or num_edges < 1 or num_nodes >= 2 ** 31:
        raise InputError(f"generate rmat needs 2 <= num_nodes < 2**31 and num_edges >= 1, got {num_nodes:,} nodes "
                         f"and {num_edges:,} edges")
    if abs(sum(probs) - 1) > 1e-6 or min(probs) < 0:
        raise InputError(f"R-MAT probabilities {probs} must be non-negative and sum to 1")
    root = Path(out)
    out = ChunkWriter(root, root.name, num_edges * 16 + num_nodes * (feat_dim * np.dtype(feat_dtype).itemsize + 11))
    rng = np.random.default_rng(seed)
    scale = max(1, int(num_nodes - 1).bit_length())
    k, o = _bijection(num_nodes, rng)
    bar = Progress(num_edges + num_nodes, "generate rmat", "row", enabled=progress, unit_scale=True, leave=True)
    for start in range(0, num_edges, chunk_edges):
        count = min(chunk_edges, num_edges - start)
        src, dst = rmat_edges(rng, count, scale, probs)
        out.add_edges("_N:_E:_N", _permute(src, num_nodes, k, o), _permute(dst, num_nodes, k, o))
        bar.update(count)
    write_node_data(out, "_N", num_nodes, rng, rng.integers(0, num_classes, num_nodes), num_classes, feat_dim,
                    feat_dtype, 1.0, SPLITS, chunk_edges, bar)
    bar.close()
    return out.finish()


def write_node_data(out: ChunkWriter, ntype: str, num_nodes: int, rng: np.random.Generator, labels: np.ndarray,
                    num_classes: int, feat_dim: int, feat_dtype: str, signal: float, splits: dict[str, float],
                    chunk_rows: int, bar) -> None:
    """Node chunks of `feat` (a class centre times `signal` plus unit noise), `label` and the
    split masks (disjoint, with the given shares)."""
    centres = (rng.standard_normal((num_classes, feat_dim)) * signal).astype(np.float32)
    step = max(1, chunk_rows // max(1, feat_dim))
    for start in range(0, num_nodes, step):
        count = min(step, num_nodes - start)
        label = labels[start:start + count]
        feat = (centres[label] + rng.standard_normal((count, feat_dim), dtype=np.float32)).astype(feat_dtype)
        split = rng.random(count)
        arrays = {"feat": feat, "label": label}
        low = 0.0
        for name, share in splits.items():
            arrays[name] = (split >= low) & (split < low + share)
            low += share
        out.add_nodes(ntype, count, arrays)
        bar.update(count)
