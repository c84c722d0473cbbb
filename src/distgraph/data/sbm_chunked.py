"""`generate_sbm_chunked`: the degree-corrected SBM of `generate_sbm` at any size, written chunk by
chunk in DGL's chunked format. With many communities and a heavy degree tail it is shaped like a
citation graph (ogbn-papers100M: 172 subject classes, a power-law degree tail), with the locality a
partitioner can find: a fraction `p_in` of each node's edges stay in its community."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from ..progress import Progress
from .chunked import ChunkWriter
from .rmat import write_node_data
from .sbm import CommunitySampler, power_law_weights

PAPERS_SPLITS = {"train_mask": 0.011, "val_mask": 0.0011, "test_mask": 0.0019}  # ogbn-papers100M's shares


def generate_sbm_chunked(out: str | Path, num_nodes: int, num_edges: int, num_classes: int = 172,
                         feat_dim: int = 16, p_in: float = 0.8, degree_exponent: float = 2.1,
                         max_weight: float = 1000.0, feat_dtype: str = "float16", feat_signal: float = 1.0,
                         splits: dict[str, float] | None = None, chunk_edges: int = 1 << 24, seed: int = 0,
                         progress: bool = True) -> Path:
    """Write the SBM under the new folder `out` (self-loops redrawn away); returns its metadata.json."""
    if num_nodes < 2 or num_edges < 1 or num_classes < 1 or not 0 <= p_in <= 1 or num_nodes >= 2**31:
        raise InputError("generate sbm needs 2 <= num_nodes < 2**31, num_edges >= 1, num_classes >= 1, 0 <= p_in <= 1")
    root = Path(out)
    writer = ChunkWriter(root, root.name, num_edges * 16 + num_nodes * (feat_dim * np.dtype(feat_dtype).itemsize + 11))
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, num_nodes)
    pool = CommunitySampler(rng, labels, power_law_weights(rng, num_nodes, degree_exponent, max_weight), num_classes)
    bar = Progress(num_edges + num_nodes, "generate sbm", "row", enabled=progress, unit_scale=True, leave=True)
    for start in range(0, num_edges, chunk_edges):
        want = min(chunk_edges, num_edges - start)
        src_parts, dst_parts, have = [], [], 0
        while have < want:
            src = pool.draw(np.zeros(want - have, dtype=np.int64), 0.0)
            dst = pool.draw(labels[src], p_in)
            keep = src != dst
            src_parts.append(src[keep])
            dst_parts.append(dst[keep])
            have += int(keep.sum())
        writer.add_edges("_N:_E:_N", np.concatenate(src_parts)[:want], np.concatenate(dst_parts)[:want])
        bar.update(want)
    write_node_data(writer, "_N", num_nodes, rng, labels, num_classes, feat_dim, feat_dtype, feat_signal,
                    PAPERS_SPLITS if splits is None else splits, chunk_edges, bar)
    bar.close()
    return writer.finish()
