"""METIS partitioning with several balance constraints, through pymetis's extension.

pymetis's Python wrapper accepts one vertex weight per node; its compiled module exports
`METIS_PartGraphKway`/`METIS_PartGraphRecursive` themselves (64-bit `idx_t`), which we call
with ctypes so each node can carry `ncon` weights (nodes per type, train/val/test nodes,
in-degree), as DGL does.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np

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
    try:
        from pymetis import _internal
    except ImportError:
        raise PartitionError("pymetis is installed without its compiled module; reinstall it with "
                             "`pip install --force-reinstall pymetis`") from None
    if _internal._idx_type_width() != 64:
        raise PartitionError("pymetis was built with 32-bit METIS ids; distgraph needs a 64-bit build")
    lib = ctypes.CDLL(_internal.__file__)
    lib.METIS_PartGraphKway.restype = ctypes.c_int
    lib.METIS_PartGraphRecursive.restype = ctypes.c_int
    lib.METIS_SetDefaultOptions.restype = ctypes.c_int
    return lib


def symmetric_adjacency(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Undirected simple-graph CSR (xadj, adjncy) that METIS needs: both directions, no self-loops, no duplicates.

    Works on one int64 key per directed entry (u * n + v), sorted in place, so the peak is
    about two key arrays; row offsets come from a searchsorted, not a per-entry row array.
    """
    loops = src == dst
    if loops.any():
        src, dst = src[~loops], dst[~loops]
    m = src.size
    key = np.empty(2 * m, dtype=np.int64)
    np.multiply(src, num_nodes, out=key[:m])
    key[:m] += dst
    np.multiply(dst, num_nodes, out=key[m:])
    key[m:] += src
    key.sort()
    keep = np.empty(key.size, dtype=bool)
    keep[:1] = True
    np.not_equal(key[1:], key[:-1], out=keep[1:])
    key = key[keep]
    del keep
    xadj = np.searchsorted(key, np.arange(num_nodes + 1, dtype=np.int64) * num_nodes)
    np.remainder(key, num_nodes, out=key)
    return xadj, key


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(ctypes.c_void_p)


def part_graph(
    xadj: np.ndarray,
    adjncy: np.ndarray,
    num_parts: int,
    vwgt: np.ndarray | None = None,
    seed: int = 0,
    ufactor: int = 30,
    recursive: bool | None = None,
) -> tuple[np.ndarray, int]:
    """Call METIS; `vwgt` is (num_nodes, ncon) int64 or None. Returns (part ids, edge cut).

    Like pymetis, below 8 parts it uses recursive bisection (twice as fast as k-way for 2
    parts here, same cut) and k-way otherwise.
    """
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
    call = lib.METIS_PartGraphRecursive if (num_parts < 8 if recursive is None else recursive) else lib.METIS_PartGraphKway
    rc = call(
        _ptr(nvtxs), _ptr(ncon_), _ptr(xadj), _ptr(adjncy),
        _ptr(vwgt) if vwgt is not None else None, None, None,
        _ptr(nparts), None, None, _ptr(options), _ptr(objval), _ptr(part),
    )
    if rc != _METIS_OK:
        raise PartitionError(f"METIS failed with {_METIS_ERRORS.get(rc, rc)} on a graph of {n} nodes, "
                             f"{adjncy.size // 2} undirected edges, {ncon} constraints, {num_parts} parts")
    return part, int(objval[0])
