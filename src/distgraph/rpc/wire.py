"""Wire format: one msgpack header frame, then one raw frame per array.

The header is a map of plain values (op, request id, names, numbers) plus an `arrays`
list of `[dtype, shape]` describing the frames that follow. Nothing on the wire is ever
unpickled or evaluated: a peer can send only values and bytes, and every array is checked
against its declared dtype and shape before it is used.

Arrays are torch tensors or numpy arrays (the same bytes and descriptors either way); torch
is imported only where a torch dtype is asked for, so numpy-only processes (the distributed
partitioner's) speak the format without it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

import msgpack
import numpy as np

from ..errors import DistGraphError

MAX_HEADER_BYTES = 1 << 20
# A message of op MANY carries several requests: header {"op": MANY, "parts": [request
# headers], "counts": [arrays of each]} and their arrays in order; the reply is {"parts":
# [reply headers], "counts": [...]} with the replies' arrays in order.
MANY = "many"
MERGE_PARTS = 64  # at most this many requests share a message
MAX_NDIM = 8
ITEMSIZE = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2, "bfloat16": 2,
            "float32": 4, "float64": 8}  # the dtypes that travel, by wire name


class WireError(DistGraphError):
    """A message does not follow the wire format (bad header, dtype, shape or length)."""


@lru_cache(maxsize=None)
def _torch_dtypes() -> dict:
    import torch

    return {name: getattr(torch, name) for name in ITEMSIZE}


@lru_cache(maxsize=None)
def _torch_names() -> dict:
    return {d: name for name, d in _torch_dtypes().items()}


@lru_cache(maxsize=None)
def _numpy_viewable() -> frozenset:
    """The wire's torch dtypes that `Tensor.numpy()` can view (all but bfloat16)."""
    return frozenset(d for name, d in _torch_dtypes().items() if name != "bfloat16")


def __getattr__(name: str):
    if name == "DTYPES":  # wire name -> torch dtype (torch imported on first use)
        return _torch_dtypes()
    raise AttributeError(name)


def dtype_name(dtype) -> str:
    """The wire name of a torch or numpy dtype; only plain numeric dtypes travel."""
    if isinstance(dtype, np.dtype):
        if dtype.name in ITEMSIZE and dtype.isnative:
            return dtype.name
    elif dtype in _torch_names():
        return _torch_names()[dtype]
    raise WireError(f"dtype {dtype} cannot be sent; use one of {sorted(ITEMSIZE)}")


def parse_dtype_name(name: Any) -> str:
    """A wire dtype name, rejecting anything else."""
    if not isinstance(name, str) or name not in ITEMSIZE:
        raise WireError(f"unknown dtype {name!r}; expected one of {sorted(ITEMSIZE)}")
    return name


def parse_dtype(name: Any):
    """The torch dtype for a wire name, rejecting anything else."""
    return _torch_dtypes()[parse_dtype_name(name)]


def parse_shape(shape: Any, what: str = "shape") -> tuple[int, ...]:
    """A shape: a short list of non-negative ints."""
    if not isinstance(shape, (list, tuple)) or len(shape) > MAX_NDIM or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 48 for d in shape):
        raise WireError(f"{what} must be a list of at most {MAX_NDIM} non-negative ints, got {shape!r}")
    return tuple(shape)


def nbytes(dtype, shape: Sequence[int]) -> int:
    """Bytes of an array of `dtype` (a wire name or a torch dtype) and `shape`."""
    n = ITEMSIZE[dtype if isinstance(dtype, str) else dtype_name(dtype)]
    for d in shape:
        n *= d
    return n


def array_buffer(a) -> memoryview:
    """The bytes of a tensor or numpy array, without a copy when it is already contiguous."""
    if isinstance(a, np.ndarray):
        return memoryview(np.ascontiguousarray(a).reshape(-1).view(np.uint8))
    if a.is_contiguous() and a.numel() and not a.requires_grad and a.dtype in _numpy_viewable():  # the common case
        return memoryview(a.numpy()).cast("B")
    flat = a.detach().contiguous().reshape(-1)
    return memoryview(flat.view(_torch_dtypes()["uint8"]).numpy())


def pack(header: dict, arrays: Sequence = ()) -> list:
    """Frames for a message: the header (with array descriptors) and one buffer per array."""
    specs = [[dtype_name(a.dtype), list(a.shape)] for a in arrays]
    return [msgpack.packb({**header, "arrays": specs}, use_bin_type=True), *(array_buffer(a) for a in arrays)]


def read_header(frame) -> tuple[dict, list[tuple[str, tuple[int, ...]]]]:
    """Decode and check a header frame; returns the header and the declared arrays (wire dtype
    name, shape)."""
    raw = memoryview(frame)
    if raw.nbytes > MAX_HEADER_BYTES:
        raise WireError(f"header of {raw.nbytes} bytes exceeds the {MAX_HEADER_BYTES}-byte limit")
    try:
        header = msgpack.unpackb(raw, raw=False, strict_map_key=True, max_bin_len=MAX_HEADER_BYTES,
                                 max_str_len=MAX_HEADER_BYTES, max_array_len=1 << 16, max_map_len=1 << 10)
    except Exception as exc:  # msgpack raises many types on garbage; all mean "not a header"
        raise WireError(f"header is not valid msgpack ({type(exc).__name__})") from None
    if not isinstance(header, dict):
        raise WireError("header must be a msgpack map")
    specs = header.get("arrays", [])
    if not isinstance(specs, list):
        raise WireError("header field 'arrays' must be a list of [dtype, shape]")
    parsed = []
    for i, spec in enumerate(specs):
        if not isinstance(spec, list) or len(spec) != 2:
            raise WireError(f"array descriptor {i} must be [dtype, shape], got {spec!r}")
        parsed.append((parse_dtype_name(spec[0]), parse_shape(spec[1], f"shape of array {i}")))
    return header, parsed


def unpack_header(frame) -> tuple[dict, list]:
    """`read_header` with the arrays' torch dtypes."""
    header, specs = read_header(frame)
    return header, [(parse_dtype(name), shape) for name, shape in specs]


def _checked_bytes(buf, name: str, shape: tuple[int, ...], index: int) -> np.ndarray:
    """A received buffer as uint8, after checking its length (and bool values)."""
    view = memoryview(buf)
    expected = nbytes(name, shape)
    if view.nbytes != expected:
        raise WireError(f"array {index} has {view.nbytes} bytes but its header declares "
                        f"{name}{list(shape)} = {expected} bytes")
    raw = np.frombuffer(view, dtype=np.uint8) if expected else np.empty(0, dtype=np.uint8)
    if name == "bool" and bool((raw > 1).any()):
        raise WireError(f"array {index} is declared bool but holds bytes other than 0 and 1")
    return raw


def array_from_buffer(buf, dtype, shape: tuple[int, ...], index: int = 0):
    """A tensor viewing a received buffer after checking its length (and bool values)."""
    import torch

    name = dtype_name(dtype)
    view = memoryview(buf)
    if name == "bool" or view.nbytes != nbytes(name, shape) or not view.nbytes:
        _checked_bytes(buf, name, shape, index)  # the error, or the bool check
        if not view.nbytes:
            return torch.empty(shape, dtype=dtype)
    if view.readonly:  # e.g. `bytes`; zmq frames are writable and never copied here
        view = memoryview(bytearray(view))
    flat = torch.frombuffer(view, dtype=dtype)
    return flat if len(shape) == 1 else flat.reshape(shape)


def numpy_from_buffer(buf, name: str, shape: tuple[int, ...], index: int = 0) -> np.ndarray:
    """A numpy array viewing a received buffer (read-only when the buffer is) after the same checks."""
    if name == "bfloat16":
        raise WireError(f"array {index} is bfloat16, which numpy does not hold; send float32 or float16")
    raw = _checked_bytes(buf, name, shape, index)
    return raw.view(name).reshape(shape) if raw.size else np.empty(shape, dtype=name)


def unpack_arrays(frames: Sequence, specs: Sequence[tuple]) -> list:
    """The arrays of a message, checked against the descriptors of its header: tensors for torch
    dtypes, numpy arrays for wire names (`read_header`'s)."""
    if len(frames) != len(specs):
        raise WireError(f"header declares {len(specs)} arrays but {len(frames)} frames follow")
    return [(numpy_from_buffer if isinstance(d, str) else array_from_buffer)(f, d, s, i)
            for i, (f, (d, s)) in enumerate(zip(frames, specs))]


def unpack(frames: Sequence) -> tuple[dict, list]:
    """Decode a whole message (header frame then array frames) into tensors."""
    if not frames:
        raise WireError("empty message")
    header, specs = unpack_header(frames[0])
    return header, unpack_arrays(frames[1:], specs)
