"""METIS k-way partitioning with several balance constraints, through pymetis's extension.

pymetis's Python wrapper accepts one vertex weight per node; its compiled module exports
`METIS_PartGraphKway` itself (64-bit `idx_t`), which we call with ctypes so each node can
carry `ncon` weights (nodes per type, train/val/test nodes, in-degree), as DGL does.
"""

from __future__ import annotations

import ctypes
import glob
import os
from functools import lru_cache

import numpy as np

from ..arrays import offsets, unique_sorted
from ..errors import PartitionError

_METIS_OK = 1
_METIS_ERRORS = {-2: "METIS_ERROR_INPUT (bad adjacency or weights)", -3: "METIS_ERROR_MEMORY (out of memory)",
                 -4: "METIS_ERROR"}
_NOPTIONS = 40
_OPTION_SEED = 8
_OPTION_UFACTOR = 16
_OPTION_NUMBERING = 17


@lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    import pymetis

    paths = glob.glob(os.path.join(os.path.dirname(pymetis.__file__), "_internal*.so"))
    if not paths:
        raise PartitionError("pymetis is installed without its compiled module; reinstall it with "
                             "`pip install --force-reinstall pymetis`")
    from pymetis import _internal

    if _internal._idx_type_width() != 64:
        raise PartitionError("pymetis was built with 32-bit METIS ids; distgraph needs a 64-bit build")
    lib = ctypes.CDLL(paths[0])
    lib.METIS_PartGraphKway.restype = ctypes.c_int
    lib.METIS_SetDefaultOptions.restype = ctypes.c_int
    return lib


def symmetric_adjacency(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Undirected simple-graph CSR (xadj, adjncy) that METIS needs: both directions, no self-loops, no duplicates."""
    loops = src == dst
    u = np.concatenate([src[~loops], dst[~loops]])
    v = np.concatenate([dst[~loops], src[~loops]])
    key = u * num_nodes + v  # fits in int64 for any graph that fits in memory
    key = unique_sorted(key)
    rows = key // num_nodes
    return offsets(np.bincount(rows, minlength=num_nodes)), key - rows * num_nodes


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(ctypes.c_void_p)


def part_graph_kway(
    xadj: np.ndarray,
    adjncy: np.ndarray,
    num_parts: int,
    vwgt: np.ndarray | None = None,
    seed: int = 0,
    ufactor: int = 30,
) -> tuple[np.ndarray, int]:
    """Call METIS_PartGraphKway; `vwgt` is (num_nodes, ncon) int64 or None. Returns (part ids, edge cut)."""
    n = xadj.size - 1
    xadj = np.ascontiguousarray(xadj, dtype=np.int64)
    adjncy = np.ascontiguousarray(adjncy, dtype=np.int64)
    ncon = 1
    if vwgt is not None:
        vwgt = np.ascontiguousarray(vwgt, dtype=np.int64).reshape(n, -1)
        ncon = vwgt.shape[1]
        if (vwgt < 0).any() or (vwgt.sum(0) <= 0).any():
            raise PartitionError("METIS vertex weights must be >= 0 with a positive total for every constraint")
    part = np.zeros(n, dtype=np.int64)
    if num_parts == 1:
        return part, 0
    lib = _library()
    options = np.full(_NOPTIONS, -1, dtype=np.int64)
    lib.METIS_SetDefaultOptions(_ptr(options))
    options[_OPTION_SEED] = seed
    options[_OPTION_UFACTOR] = ufactor
    options[_OPTION_NUMBERING] = 0
    nvtxs, ncon_, nparts, objval = (np.array([x], dtype=np.int64) for x in (n, ncon, num_parts, 0))
    rc = lib.METIS_PartGraphKway(
        _ptr(nvtxs), _ptr(ncon_), _ptr(xadj), _ptr(adjncy),
        _ptr(vwgt) if vwgt is not None else None, None, None,
        _ptr(nparts), None, None, _ptr(options), _ptr(objval), _ptr(part),
    )
    if rc != _METIS_OK:
        raise PartitionError(f"METIS failed with {_METIS_ERRORS.get(rc, rc)} on a graph of {n} nodes, "
                             f"{adjncy.size // 2} undirected edges, {ncon} constraints, {num_parts} parts")
    return part, int(objval[0])
