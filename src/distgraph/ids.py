"""Ids, counts and type names as every kind of graph takes them: checked in one place, each
mistake one error naming the culprit. `ArrayGraph`, `Graph`, `Block`, the transforms, the
samplers and the loaders all import them from here, the lowest floor but `errors`.

Only the tensor helpers import torch (on their first call), so an `ArrayGraph` and the
command line that partitions one never load it.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError

if TYPE_CHECKING:
    import torch

DEFAULT_NTYPE = "_N"
DEFAULT_ETYPE = ("_N", "_E", "_N")

CanonicalEtype = tuple[str, str, str]


def resolve_etype(etype, canonical_etypes: list[CanonicalEtype]) -> CanonicalEtype:
    """The canonical edge type named by a (src, rel, dst) tuple, a relation name or a
    'src:rel:dst' string; one clear error when it is unknown or ambiguous."""
    if isinstance(etype, (tuple, list)) and tuple(etype) in canonical_etypes:
        return tuple(etype)
    matches = [c for c in canonical_etypes if etype == c[1] or etype == ":".join(c)]
    if len(matches) != 1:
        raise InputError(f"edge type {etype!r} is {'ambiguous' if matches else 'unknown'}; "
                         f"canonical edge types are {canonical_etypes}")
    return matches[0]


def as_count(value, what: str) -> int:
    """A non-negative integer count (Python or numpy integer, or a 0-d integer tensor)."""
    try:
        n = operator.index(value)
    except TypeError:
        raise InputError(f"{what} must be one non-negative integer, got {value!r}") from None
    if n < 0:
        raise InputError(f"{what} must be >= 0, got {n}")
    return n


def as_id_array(values, what: str) -> np.ndarray:
    """Ids (1-D, or a scalar for one id) as a contiguous 1-D int64 array; other shapes and dtypes are clear errors."""
    a = np.asarray(values)
    if a.dtype.kind not in "biuf":
        raise InputError(f"{what} must be integer ids, got {a.dtype} values; cast them to int64")
    if a.ndim > 1:
        raise InputError(f"{what} must be a 1-D array of ids, got shape {a.shape}; flatten it or pass one column")
    if a.size and a.dtype.kind in "bf":
        raise InputError(f"{what} must be integer ids, got dtype {a.dtype}; cast them to int64")
    return np.ascontiguousarray(a.reshape(-1), dtype=np.int64)


def int64_contiguous(t: "torch.Tensor") -> "torch.Tensor":
    """`t` as a contiguous int64 tensor, itself when it is one already (no torch call: each lets
    other threads take Python's lock)."""
    import torch

    return t if t.dtype == torch.int64 and t.is_contiguous() else t.to(torch.int64).contiguous()


def as_id_tensor(values, what: str) -> torch.Tensor:
    """Convert ids (1-D, or a scalar for one id) to a 1-D int64 tensor; other shapes and dtypes are clear errors."""
    import torch

    if not isinstance(values, torch.Tensor):
        return torch.from_numpy(as_id_array(values, what))
    t = values
    if t.dtype == torch.int64 and t.dim() == 1:
        return t  # as it is: a torch call, even one that changes nothing, lets other threads take Python's lock
    if t.dim() > 1:
        raise InputError(f"{what} must be a 1-D array of ids, got shape {tuple(t.shape)}; "
                         f"flatten it or pass one column")
    if t.numel() and (t.dtype.is_floating_point or t.dtype == torch.bool or t.dtype.is_complex):
        raise InputError(f"{what} must be integer ids, got dtype {t.dtype}; cast them to int64")
    return t.reshape(-1).to(torch.int64)


def is_mask(t: torch.Tensor, count: int) -> bool:
    """Whether the 1-D `t` over an id space of `count` reads as a mask (nonzero = selected), as
    DGL reads one: bool and float values as long as the space always; integers as long as the
    space when they hold only 0 and 1 and repeat a value (distinct ids covering every id, as
    `torch.arange(count)`, stay ids)."""
    import torch

    if t.dim() != 1 or t.numel() != count or t.dtype.is_complex:
        return False
    if t.dtype == torch.bool or t.dtype.is_floating_point:
        return True
    if not t.numel() or int(t.min()) < 0 or int(t.max()) > 1:
        return False
    return count > 2 or torch.unique(t).numel() < count


def as_selection(values, count: int, what: str) -> torch.Tensor:
    """The int64 ids that `values` selects out of `count`: the nonzero positions of a mask of
    any dtype (bool, integer or float, see `is_mask`), else `values` as ids (order kept). A
    bool or float array of another length is an error naming both lengths."""
    import torch

    t = values if isinstance(values, torch.Tensor) else torch.as_tensor(np.asarray(values))
    if is_mask(t, count):
        return torch.nonzero(t).flatten()
    if t.numel() and (t.dtype == torch.bool or t.dtype.is_floating_point) and t.dim() == 1:
        raise InputError(f"{what} is a {t.dtype} mask of {t.numel()} values but there are {count}; give one "
                         f"value per node (or edge), or integer ids")
    return as_id_tensor(t, what)
