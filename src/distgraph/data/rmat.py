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
import shutil
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ..errors import InputError
from .chunked import write_chunked

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
    if root.exists() and any(root.iterdir()):
        raise InputError(f"{root} is not empty; give a new folder for the chunked graph")
    need = num_edges * 16 + num_nodes * (feat_dim * np.dtype(feat_dtype).itemsize + 11)
    free = shutil.disk_usage(root.parent if root.parent.exists() else Path.cwd()).free
    if need > free:
        raise InputError(f"the graph needs about {need / 2**30:.1f} GiB on disk and {free / 2**30:.1f} GiB are free "
                         f"where {root} goes")
    (root / "edges").mkdir(parents=True, exist_ok=True)
    (root / "node_data").mkdir(exist_ok=True)
    rng = np.random.default_rng(seed)
    scale = max(1, int(num_nodes - 1).bit_length())
    k, o = _bijection(num_nodes, rng)
    edge_files, edge_counts = [], []
    bar = tqdm(total=num_edges + num_nodes, desc="generate rmat", unit="row", unit_scale=True, disable=not progress)
    for i, start in enumerate(range(0, num_edges, chunk_edges)):
        count = min(chunk_edges, num_edges - start)
        src, dst = rmat_edges(rng, count, scale, probs)
        pair = np.stack([_permute(src, num_nodes, k, o), _permute(dst, num_nodes, k, o)], axis=1)
        name = f"edges/edges-{i}.npy"
        np.save(root / name, pair)
        edge_files.append(name)
        edge_counts.append(count)
        bar.update(count)
    centres = rng.standard_normal((num_classes, feat_dim)).astype(np.float32)
    data = {name: [] for name in ("feat", "label", *SPLITS)}
    node_counts = []
    node_chunk = max(1, (chunk_edges * 16) // max(1, feat_dim * 4 + 16))
    for i, start in enumerate(range(0, num_nodes, node_chunk)):
        count = min(node_chunk, num_nodes - start)
        label = rng.integers(0, num_classes, count)
        feat = (centres[label] + rng.standard_normal((count, feat_dim), dtype=np.float32)).astype(feat_dtype)
        split = rng.random(count)
        arrays = {"feat": feat, "label": label}
        low = 0.0
        for name, share in SPLITS.items():
            arrays[name] = (split >= low) & (split < low + share)
            low += share
        for name, a in arrays.items():
            rel = f"node_data/{name}-{i}.npy"
            np.save(root / rel, a)
            data[name].append(rel)
        node_counts.append(count)
        bar.update(count)
    bar.close()
    return write_chunked(root, root.name, {"_N": node_counts}, {"_N:_E:_N": edge_files}, {"_N:_E:_N": edge_counts},
                         node_data={"_N": data})
