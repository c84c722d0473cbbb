"""Wire format: one msgpack header frame, then one raw frame per array.

The header is a map of plain values (op, request id, names, numbers) plus an `arrays`
list of `[dtype, shape]` describing the frames that follow. Nothing on the wire is ever
unpickled or evaluated: a peer can send only values and bytes, and every array is checked
against its declared dtype and shape before it is used.
"""

from __future__ import annotations

from typing import Any, Sequence

import msgpack
import torch

from ..errors import DistGraphError

MAX_HEADER_BYTES = 1 << 20
# A message of op MANY carries several requests: header {"op": MANY, "parts": [request
# headers], "counts": [arrays of each]} and their arrays in order; the reply is {"parts":
# [reply headers], "counts": [...]} with the replies' arrays in order.
MANY = "many"
MERGE_PARTS = 64  # at most this many requests share a message
MAX_NDIM = 8
DTYPES: dict[str, torch.dtype] = {
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16,
    "int32": torch.int32, "int64": torch.int64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
}
_NAMES = {v: k for k, v in DTYPES.items()}


class WireError(DistGraphError):
    """A message does not follow the wire format (bad header, dtype, shape or length)."""


def dtype_name(dtype: torch.dtype) -> str:
    """The wire name of a torch dtype; only plain numeric dtypes travel."""
    try:
        return _NAMES[dtype]
    except KeyError:
        raise WireError(f"dtype {dtype} cannot be sent; use one of {sorted(DTYPES)}") from None


def parse_dtype(name: Any) -> torch.dtype:
    """The torch dtype for a wire name, rejecting anything else."""
    if not isinstance(name, str) or name not in DTYPES:
        raise WireError(f"unknown dtype {name!r}; expected one of {sorted(DTYPES)}")
    return DTYPES[name]


def parse_shape(shape: Any, what: str = "shape") -> tuple[int, ...]:
    """A shape: a short list of non-negative ints."""
    if not isinstance(shape, (list, tuple)) or len(shape) > MAX_NDIM or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 48 for d in shape):
        raise WireError(f"{what} must be a list of at most {MAX_NDIM} non-negative ints, got {shape!r}")
    return tuple(shape)


def nbytes(dtype: torch.dtype, shape: Sequence[int]) -> int:
    n = torch.empty((), dtype=dtype).element_size()
    for d in shape:
        n *= d
    return n


def array_buffer(t: torch.Tensor) -> memoryview:
    """The bytes of a tensor, without a copy when it is already contiguous."""
    flat = t.detach().contiguous().reshape(-1)
    return memoryview(flat.view(torch.uint8).numpy())


def pack(header: dict, arrays: Sequence[torch.Tensor] = ()) -> list:
    """Frames for a message: the header (with array descriptors) and one buffer per array."""
    specs = [[dtype_name(a.dtype), list(a.shape)] for a in arrays]
    return [msgpack.packb({**header, "arrays": specs}, use_bin_type=True), *(array_buffer(a) for a in arrays)]


def unpack_header(frame) -> tuple[dict, list[tuple[torch.dtype, tuple[int, ...]]]]:
    """Decode and check a header frame; returns the header and the declared arrays."""
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
        parsed.append((parse_dtype(spec[0]), parse_shape(spec[1], f"shape of array {i}")))
    return header, parsed


def array_from_buffer(buf, dtype: torch.dtype, shape: tuple[int, ...], index: int = 0) -> torch.Tensor:
    """A tensor viewing a received buffer after checking its length (and bool values)."""
    view = memoryview(buf)
    expected = nbytes(dtype, shape)
    if view.nbytes != expected:
        raise WireError(f"array {index} has {view.nbytes} bytes but its header declares "
                        f"{dtype_name(dtype)}{list(shape)} = {expected} bytes")
    if expected == 0:
        return torch.empty(shape, dtype=dtype)
    if view.readonly:  # e.g. `bytes`; zmq frames are writable and never copied here
        view = memoryview(bytearray(view))
    raw = torch.frombuffer(view, dtype=torch.uint8)
    if dtype == torch.bool and bool((raw > 1).any()):
        raise WireError(f"array {index} is declared bool but holds bytes other than 0 and 1")
    return raw.view(dtype).reshape(shape)


def unpack_arrays(frames: Sequence, specs: Sequence[tuple[torch.dtype, tuple[int, ...]]]) -> list[torch.Tensor]:
    """The arrays of a message, checked against the descriptors of its header."""
    if len(frames) != len(specs):
        raise WireError(f"header declares {len(specs)} arrays but {len(frames)} frames follow")
    return [array_from_buffer(f, d, s, i) for i, (f, (d, s)) in enumerate(zip(frames, specs))]


def unpack(frames: Sequence) -> tuple[dict, list[torch.Tensor]]:
    """Decode a whole message (header frame then array frames)."""
    if not frames:
        raise WireError("empty message")
    header, specs = unpack_header(frames[0])
    return header, unpack_arrays(frames[1:], specs)
