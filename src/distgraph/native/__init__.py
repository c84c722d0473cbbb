"""C kernels for hot loops numpy cannot vectorise well, called through ctypes.

They are compiled with the package (an optional extension: `pip install` still succeeds
without a C compiler) and every caller keeps a numpy path for when they are absent.
"""

from __future__ import annotations

import ctypes
import importlib.util
from functools import lru_cache

_MODULE = "distgraph.native._kernels"
_i64, _int, _ptr, _dbl = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.c_double
_SIGNATURES = {  # name: (restype, argtypes), as in the .c files
    "sym_count": (_i64, [_i64, _ptr, _ptr, _i64, _int, _ptr]),
    "sym_scatter": (None, [_i64, _ptr, _ptr, _int, _int, _ptr, _ptr]),
    "sym_rows": (_i64, [_i64, _i64, _ptr, _int, _int, _i64, _ptr, _ptr]),
    "gather_segments": (_i64, [_i64, _ptr, _ptr, _ptr, _int, _ptr]),  # segments.c
    "gather_rows": (_i64, [_i64, _ptr, _ptr, _i64, _ptr]),  # rows.c
    "gather_rows_at": (_i64, [_i64, _ptr, _ptr, _ptr, _i64, _ptr]),  # rows.c
    "adagrad_rows": (_i64, [_i64, _ptr, _ptr, _ptr, _ptr, _ptr, _i64, _int, _dbl, _dbl, _int]),  # rows.c
    "adam_rows": (_i64, [_i64, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _i64, _int, _dbl, _dbl, _dbl, _dbl, _int]),
    "row_adagrad_rows": (_i64, [_i64, _ptr, _ptr, _ptr, _ptr, _i64, _int, _dbl]),  # rows.c
    "add_counts": (None, [_i64, _ptr, _ptr]),  # segments.c
    "merge_runs": (_i64, [_i64, _i64, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr]),  # segments.c
    "sample_count": (_i64, [_i64, _ptr, _i64, _ptr, _ptr, _i64, _ptr, _i64]),  # sampling.c
    "sample_uniform": (_i64, [_i64, _ptr, _i64, _ptr, _ptr, _i64, _ptr, _i64, _ptr, _ptr, _ptr, _ptr, _ptr]),
    "map_types": (_i64, [_i64, _ptr, _i64, _ptr, _ptr, _ptr, _ptr, _ptr]),  # types.c
    "group_by_kind": (_i64, [_i64, _ptr, _ptr, _i64, _ptr, _ptr]),  # types.c
    "relabel": (_i64, [_i64, _ptr, _i64, _ptr, _i64, ctypes.c_uint64, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr,
                       _ptr, _ptr, _ptr]),  # sampling.c
    "best_labels": (_i64, [_i64, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _i64, ctypes.c_uint64, _ptr, _ptr, _ptr,
                           _ptr, _ptr]),  # labels.c
}


class CscStruct(ctypes.Structure):
    """`csc_t` of sampling.c: a CSC to sample and how its slots become ids (`sampling.kernel.Csc`)."""

    _fields_ = [("indptr", _ptr), ("nrows", _i64), ("nslots", _i64), ("indices", _ptr), ("nid_map", _ptr),
                ("nlocal", _i64), ("nid_add", _i64), ("map_from", _i64), ("eid_map", _ptr), ("eid_add", _i64),
                ("row_add", _i64), ("key", ctypes.c_uint64), ("typed_indptr", _ptr), ("netypes", _i64)]


@lru_cache(maxsize=1)
def kernels() -> ctypes.CDLL | None:
    """The compiled kernels, or None when the package was installed without them."""
    spec = importlib.util.find_spec(_MODULE)
    if spec is None or not spec.origin:
        return None
    lib = ctypes.CDLL(spec.origin)
    for name, (restype, argtypes) in _SIGNATURES.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = restype, argtypes
    return lib
