"""KaMinPar on the partitioner's ParHIP file, with one streamed level of coarsening in front
when the graph is large (stream/coarsen.py): KaMinPar alone peaks near 10 bytes an adjacency
entry, most of it the buffers of its first contraction."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import PartitionError
from ...progress import in_child
from .adjacency import ParhipGraph
from .coarsen import coarsened_parts

# Above this many adjacency entries (8M edges) the graph is coarsened once before KaMinPar runs:
# below it KaMinPar needs under ~170 MB and partitions the whole graph itself.
COARSEN_ABOVE_ENTRIES = 1 << 24


def kaminpar_parts(path: Path, num_parts: int, seed: int, imbalance: float = 0.03, threads: int = 1,
                   memory_efficient: bool = True, progress: bool = False) -> np.ndarray:
    """Parts (int32) of the ParHIP graph at `path`: KaMinPar's, on the graph itself or, above
    COARSEN_ABOVE_ENTRIES entries, on its clusters (then refined on the graph). `memory_efficient`
    takes KaMinPar's TeraPart configuration (the least memory per edge)."""

    def run(file: Path, eps: float) -> np.ndarray:  # KaMinPar holds the GIL: in a child Ctrl-C can stop
        return in_child(_kaminpar_file, file.with_name(file.name + ".parts.npy"), file, num_parts, seed, eps,
                        threads, memory_efficient)

    if ParhipGraph.open(path).m > COARSEN_ABOVE_ENTRIES:
        return coarsened_parts(path, num_parts, seed, imbalance, run, progress)
    return run(path, imbalance)


def _kaminpar_file(path: Path, num_parts: int, seed: int, imbalance: float, threads: int,
                   memory_efficient: bool) -> np.ndarray:
    """KaMinPar's partition of the ParHIP graph at `path`, loaded compressed."""
    try:
        import kaminpar
    except ImportError:
        raise PartitionError("the kaminpar partitioner is not installed: pip install kaminpar "
                             "(or choose --part_method metis or random)") from None
    graph = kaminpar.load_graph(str(path), kaminpar.GraphFileFormat.PARHIP, compress=True)
    context = kaminpar.terapart_context() if memory_efficient else kaminpar.default_context()
    partitioner = kaminpar.KaMinPar(threads, context)
    kaminpar.reseed(seed)  # after loading and set-up, which draw from its generator the first time only
    parts = partitioner.compute_partition(graph, num_parts, imbalance)
    del graph
    return np.fromiter(parts, dtype=np.int32, count=len(parts))
