"""The wire format: round trips for every dtype, and rejection of malformed messages."""

import msgpack
import pytest
import torch

from distgraph.rpc import wire


@pytest.mark.parametrize("dtype", list(wire.DTYPES.values()))
def test_round_trip_every_dtype(dtype):
    t = (torch.arange(24) % 2).to(dtype).reshape(2, 3, 4)
    header, arrays = wire.unpack([bytes(f) for f in wire.pack({"op": "x", "n": 1}, [t, t[:0]])])
    assert header["op"] == "x" and header["n"] == 1
    assert arrays[0].dtype == dtype and torch.equal(arrays[0], t)
    assert arrays[1].shape == (0, 3, 4)


def test_non_contiguous_arrays_are_sent_in_logical_order():
    t = torch.arange(12).reshape(3, 4).t()
    _, (back,) = wire.unpack([bytes(f) for f in wire.pack({}, [t])])
    assert torch.equal(back, t)


def _frames(header: dict, *payloads: bytes) -> list[bytes]:
    return [msgpack.packb(header), *payloads]


@pytest.mark.parametrize("frames, message", [
    ([b"\xc1garbage"], "not valid msgpack"),
    ([msgpack.packb([1, 2])], "must be a msgpack map"),
    (_frames({"arrays": [["float128", [2]]]}, b"x" * 32), "unknown dtype"),
    (_frames({"arrays": [["float32", [3]]]}, b"x" * 8), "has 8 bytes"),
    (_frames({"arrays": [["int64", [-1]]]}, b""), "non-negative"),
    (_frames({"arrays": [["int64", [1] * 9]]}, b"x" * 8), "at most 8"),
    (_frames({"arrays": [["bool", [2]]]}, b"\x00\x07"), "other than 0 and 1"),
    (_frames({"arrays": [["int64", [1]]]}), "declares 1 arrays but 0"),
    (_frames({"arrays": "nope"}), "must be a list"),
    ([], "empty message"),
])
def test_malformed_messages_are_rejected(frames, message):
    with pytest.raises(wire.WireError, match=message):
        wire.unpack(frames)


def test_unsendable_dtype_is_named():
    with pytest.raises(wire.WireError, match="complex64"):
        wire.pack({}, [torch.zeros(2, dtype=torch.complex64)])
