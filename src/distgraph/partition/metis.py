"""METIS partitioning with several balance constraints, called through ctypes.

Two METIS builds, the same C API (`METIS_PartGraphRecursive`/`METIS_PartGraphKway`) with
`ncon` vertex weights per node (nodes per type, train/val/test nodes, in-degree), as DGL does:

- 32-bit (`idx_t` and `real_t` 32 bits): `libmetis.so` of the `cmeel-metis` wheel (METIS
  5.2.1). Used whenever the graph fits: its working set is about half the 64-bit one
  (this is what keeps the 8M-entry benchmark graph under 800 MB) and it is faster.
- 64-bit: the METIS 5.1.0 compiled into pymetis's extension module. The fallback for graphs
  whose adjacency entries or weight totals reach 2**31, or when the 32-bit library is missing.
"""

from __future__ import annotations

import ctypes
import re
import site
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import PartitionError

_METIS_OK = 1
_METIS_ERRORS = {-2: "METIS_ERROR_INPUT (bad adjacency or weights)", -3: "METIS_ERROR_MEMORY (out of memory)",
                 -4: "METIS_ERROR"}
_NOPTIONS = 40
_OBJTYPE = 1  # METIS_OPTION_OBJTYPE, the same slot in 5.1 and 5.2
_OBJTYPES = {"cut": 0, "vol": 1}  # METIS_OBJTYPE_CUT, METIS_OBJTYPE_VOL
INT32_LIMIT = 2**31 - 1  # largest id, entry count or weight total the 32-bit build takes (tests lower it)


@dataclass(frozen=True)
class MetisLibrary:
    """One loaded METIS build: its integer type and where its options sit (5.2 inserted two)."""

    name: str
    lib: ctypes.CDLL
    idx: type  # np.int32 or np.int64
    seed: int
    ufactor: int
    numbering: int


def _bind(name: str, lib: ctypes.CDLL, idx: type, seed: int, ufactor: int, numbering: int) -> MetisLibrary:
    for f in (lib.METIS_PartGraphKway, lib.METIS_PartGraphRecursive, lib.METIS_SetDefaultOptions):
        f.restype = ctypes.c_int
    return MetisLibrary(name, lib, idx, seed, ufactor, numbering)


def _dist_file(dist: str, name: str) -> Path | None:
    """File `name` of distribution `dist`: where cmeel installs (`cmeel.prefix/lib` or `include`
    in this environment's packages), else from the distribution's file list (importing
    importlib.metadata takes 15-30 ms of the partition command, so only when needed)."""
    for root in (*site.getsitepackages(), site.getusersitepackages()):
        for sub in ("lib", "include"):
            if (Path(root) / "cmeel.prefix" / sub / name).is_file():
                return Path(root) / "cmeel.prefix" / sub / name
    import importlib.metadata

    try:
        files = importlib.metadata.files(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    found = [f for f in files if f.name == name]
    return Path(found[0].locate()) if found else None


@lru_cache(maxsize=1)
def library32() -> MetisLibrary | None:
    """cmeel-metis's 32-bit METIS 5.2.1, or None when it is not installed or not a 32-bit build.

    Its RUNPATH does not resolve, so its libGKlib.so (from cmeel-gklib) is loaded first by full
    path; the dynamic loader then reuses it by soname. Both stay RTLD_LOCAL, so their symbols
    never mix with the METIS/GKlib copies inside pymetis's module.
    """
    so, header, gklib = (_dist_file("cmeel-metis", "libmetis.so"), _dist_file("cmeel-metis", "metis.h"),
                         _dist_file("cmeel-gklib", "libGKlib.so"))
    if not (so and header and gklib and so.exists() and header.exists() and gklib.exists()):
        return None
    text = header.read_text(errors="replace")
    widths = {k: re.search(rf"^#define {k} (\d+)", text, re.M) for k in ("IDXTYPEWIDTH", "REALTYPEWIDTH")}
    if any(m is None or m.group(1) != "32" for m in widths.values()):
        return None
    ctypes.CDLL(str(gklib))
    return _bind("cmeel-metis 5.2.1 (32-bit)", ctypes.CDLL(str(so)), np.int32, seed=9, ufactor=18, numbering=19)


@lru_cache(maxsize=1)
def library64() -> MetisLibrary:
    """The 64-bit METIS 5.1.0 inside pymetis's extension module (its Python API takes one constraint)."""
    try:
        from pymetis import _internal
    except ImportError:
        raise PartitionError("pymetis is installed without its compiled module; reinstall it with "
                             "`pip install --force-reinstall pymetis`") from None
    if _internal._idx_type_width() != 64:
        raise PartitionError("pymetis was built with 32-bit METIS ids; distgraph needs a 64-bit build")
    return _bind("pymetis METIS 5.1.0 (64-bit)", ctypes.CDLL(_internal.__file__), np.int64,
                 seed=8, ufactor=16, numbering=17)


def fits_int32(num_nodes: int, num_entries: int, weight_totals: np.ndarray | None = None) -> bool:
    """Whether node ids, adjacency entries and every weight total fit the 32-bit METIS `idx_t`."""
    biggest = max(num_nodes, num_entries, int(weight_totals.max()) if weight_totals is not None and
                  weight_totals.size else 0)
    return biggest <= INT32_LIMIT


def choose_library(num_nodes: int, num_entries: int, weight_totals: np.ndarray | None = None) -> MetisLibrary:
    """The 32-bit build when it is installed and the graph fits it, else pymetis's 64-bit build."""
    lib = library32() if fits_int32(num_nodes, num_entries, weight_totals) else None
    return lib or library64()


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
    library: MetisLibrary | None = None,
    objtype: str = "cut",
) -> tuple[np.ndarray, int]:
    """Call METIS; `vwgt` is (num_nodes, ncon) integers or None. Returns (part ids as int64,
    the objective: edge cut, or communication volume with objtype="vol").

    `library` defaults to `choose_library` (32-bit when the graph fits). Like pymetis, below
    8 parts it uses recursive bisection (twice as fast as k-way for 2 parts here, same cut)
    and k-way otherwise; minimising the volume needs k-way.
    """
    if objtype not in _OBJTYPES:
        raise PartitionError(f"objtype must be one of {', '.join(_OBJTYPES)}, got {objtype!r}")
    n = xadj.size - 1
    ncon = 1
    totals = None
    if vwgt is not None:
        vwgt = np.asarray(vwgt).reshape(n, -1)
        ncon = vwgt.shape[1]
        totals = vwgt.sum(0, dtype=np.int64)
        if (vwgt < 0).any() or (totals <= 0).any():
            raise PartitionError("METIS vertex weights must be >= 0 with a positive total for every constraint")
    if num_parts == 1:
        return np.zeros(n, dtype=np.int64), 0
    if ncon == 1:
        deg = np.diff(xadj)
        isolated = deg == 0
        kept = n - int(np.count_nonzero(isolated))
        if kept < n and kept >= 4 * num_parts:
            return _with_isolated(xadj, adjncy, num_parts, vwgt, seed, ufactor, recursive, library, objtype,
                                  isolated, deg)
    lib = library or choose_library(n, adjncy.size, totals)
    idx = lib.idx
    xadj = np.ascontiguousarray(xadj, dtype=idx)
    adjncy = np.ascontiguousarray(adjncy, dtype=idx)
    if vwgt is not None:
        vwgt = np.ascontiguousarray(vwgt, dtype=idx)
    part = np.zeros(n, dtype=idx)
    options = np.full(_NOPTIONS, -1, dtype=idx)
    lib.lib.METIS_SetDefaultOptions(_ptr(options))
    options[lib.seed] = seed
    options[lib.ufactor] = ufactor
    options[lib.numbering] = 0
    options[_OBJTYPE] = _OBJTYPES[objtype]
    nvtxs, ncon_, nparts, objval = (np.array([x], dtype=idx) for x in (n, ncon, num_parts, 0))
    use_recursive = (num_parts < 8 and objtype == "cut") if recursive is None else recursive
    call = lib.lib.METIS_PartGraphRecursive if use_recursive else lib.lib.METIS_PartGraphKway
    rc = call(
        _ptr(nvtxs), _ptr(ncon_), _ptr(xadj), _ptr(adjncy),
        _ptr(vwgt) if vwgt is not None else None, None, None,
        _ptr(nparts), None, None, _ptr(options), _ptr(objval), _ptr(part),
    )
    if rc != _METIS_OK:
        raise PartitionError(f"METIS ({lib.name}) failed with {_METIS_ERRORS.get(rc, rc)} on a graph of {n} nodes, "
                             f"{adjncy.size // 2} undirected edges, {ncon} constraints, {num_parts} parts")
    return part.astype(np.int64, copy=False), int(objval[0])


def _with_isolated(xadj: np.ndarray, adjncy: np.ndarray, num_parts: int, vwgt: np.ndarray | None, seed: int,
                   ufactor: int, recursive: bool | None, library: MetisLibrary | None, objtype: str,
                   isolated: np.ndarray, deg: np.ndarray) -> tuple[np.ndarray, int]:
    """`part_graph` of a graph with isolated vertices: METIS on the others (its coarsening matches
    neighbours, so isolated vertices never coarsen and make it crawl: 15 s for 300,000 vertices
    of which 6,000 have edges), then the isolated ones, which cut nothing, filling each part up to
    an equal share of the weight, in id order."""
    keep = np.flatnonzero(~isolated)
    new_id = np.cumsum(~isolated, dtype=np.int64) - 1
    sub_xadj = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(deg[keep], out=sub_xadj[1:])
    weights = np.ones(xadj.size - 1, dtype=np.int64) if vwgt is None else vwgt[:, 0].astype(np.int64)
    sub_parts, objval = part_graph(sub_xadj, new_id[adjncy], num_parts, None if vwgt is None else vwgt[keep],
                                   seed, ufactor, recursive, library, objtype)
    load = np.bincount(sub_parts, weights=weights[keep], minlength=num_parts)
    spare = weights[isolated]
    deficit = np.maximum((load.sum() + spare.sum()) / num_parts - load, 0.0)
    ends = np.cumsum(deficit)
    ends *= spare.sum() / ends[-1] if ends[-1] > 0 else 0.0  # the parts' shares of the isolated weight, in turn
    middles = np.cumsum(spare) - spare / 2
    parts = np.empty(xadj.size - 1, dtype=np.int64)
    parts[keep] = sub_parts
    parts[isolated] = np.minimum(np.searchsorted(ends, middles, side="right"), num_parts - 1)
    return parts, objval
