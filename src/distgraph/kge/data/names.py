"""Names by id held compactly: one UTF-8 buffer and int64 offsets, never a Python object per name.

Names are looked up through sorted 64-bit hashes of their bytes, with a second, independent hash
checking every match (so two names sharing the first hash are never taken for one), and numbered
by first appearance a chunk of tokens at a time (`Numbering`), as DGL-KE numbers raw names.
Hashes are computed eight bytes at a time over byte spans of any buffer, with numpy only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from ...errors import InputError

SEEDS = (0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0)  # tried in turn if two names collide
_M1, _M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F)
_F1, _F2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_LOW = np.array([(1 << (8 * i)) - 1 for i in range(9)], dtype=np.uint64)  # the low i bytes of a word
_POW10 = 10 ** np.arange(19, dtype=np.int64)
_BLOCK = 1 << 16  # names turned into text at once


class HashCollision(Exception):
    """Two distinct names share a 64-bit hash under the seed in use (the caller tries the next seed)."""


def _mix(h: np.ndarray, w: np.ndarray, m: np.uint64) -> None:
    """Fold a word into hashes, in place."""
    h ^= w
    h *= m
    h ^= h >> np.uint64(29)


def _finish(h: np.ndarray, m: np.uint64) -> np.ndarray:
    h = (h ^ (h >> np.uint64(33))) * m
    return h ^ (h >> np.uint64(33))


def span_hashes(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                seed: int = SEEDS[0]) -> tuple[np.ndarray, np.ndarray]:
    """Two independent 64-bit hashes of each byte span buf[starts[i]:ends[i]], read a word of eight
    bytes at a time. Spans are taken longest first, so the spans still hashing are a prefix; a span's
    last word is read ending at the span's end (shifted down), so no padding is needed."""
    buf = np.ascontiguousarray(buf, dtype=np.uint8)
    if len(buf) < 8:
        buf = np.concatenate([buf, np.zeros(8, dtype=np.uint8)])
    words = np.ndarray((len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
    starts, ends = np.asarray(starts, dtype=np.int64).ravel(), np.asarray(ends, dtype=np.int64).ravel()
    nwords = (ends - starts + 7) >> 3
    most = int(nwords.max()) if len(nwords) else 0
    order = np.argsort((most - nwords).astype(np.uint16 if most < 2 ** 16 else np.int64), kind="stable")
    starts, ends = starts[order], ends[order]
    lengths = (ends - starts).astype(np.uint64)
    h1 = (np.uint64(seed) ^ lengths) * _M1
    h2 = (np.uint64(seed) + lengths) * _M2
    longer = np.cumsum(np.bincount(nwords, minlength=most + 1)[::-1])[::-1]  # spans of more than k words: [k + 1]
    for k in range(most):
        full, last = (int(longer[k + 2]) if k + 2 <= most else 0), int(longer[k + 1])
        if full:
            w = words[starts[:full] + 8 * k]
            _mix(h1[:full], w, _M1)
            _mix(h2[:full], w, _M2)
        s, e = starts[full:last] + 8 * k, ends[full:last]
        pos = np.maximum(e - 8, 0)
        w = (words[pos] >> ((s - pos) * 8).astype(np.uint64)) & _LOW[e - s]
        _mix(h1[full:last], w, _M1)
        _mix(h2[full:last], w, _M2)
    out1, out2 = np.empty_like(h1), np.empty_like(h2)
    out1[order], out2[order] = _finish(h1, _F1), _finish(h2, _F2)
    return out1, out2


def gather(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The bytes of the spans buf[starts[i]:ends[i]], one after another: the source of each byte is a
    running sum of steps of one, jumping at each span's start (one index array, no per-span loop)."""
    starts, ends = np.asarray(starts, dtype=np.int64).ravel(), np.asarray(ends, dtype=np.int64).ravel()
    some = ends > starts
    starts, ends = starts[some], ends[some]
    if not len(starts):
        return np.empty(0, dtype=np.uint8)
    lengths = ends - starts
    at = np.cumsum(lengths) - lengths
    source = np.ones(int(at[-1] + lengths[-1]), dtype=np.int64)
    source[0] = starts[0]
    source[at[1:]] = starts[1:] - ends[:-1] + 1
    return np.asarray(buf)[np.cumsum(source, out=source)]


def decimal(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative integers as decimal text: (bytes, offsets)."""
    values = np.asarray(values, dtype=np.int64)
    digits = np.maximum(np.searchsorted(_POW10, values, side="right"), 1)
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(digits, out=offsets[1:])
    power = np.repeat(offsets[1:] - 1, digits) - np.arange(int(offsets[-1]))
    return (np.repeat(values, digits) // _POW10[power] % 10 + 48).astype(np.uint8), offsets


class Names(Sequence[str]):
    """Names by id: one UTF-8 buffer and int64 offsets (name i is data[offsets[i]:offsets[i+1]]),
    built on first use when made `deferred` (a big dictionary's names are only needed to save)."""

    def __init__(self, data: np.ndarray, offsets: np.ndarray):
        self._data, self._offsets = data, offsets
        self._count = len(offsets) - 1
        self._make: Callable[[], Names] | None = None
        self._index: tuple | None = None

    @classmethod
    def deferred(cls, count: int, make: Callable[[], Names]) -> Names:
        """`count` names that `make` (picklable, as a Names may travel to another process) reads when first used."""
        out = cls(np.empty(0, dtype=np.uint8), np.zeros(1, dtype=np.int64))
        out._count, out._make = count, make
        return out

    @classmethod
    def numbers(cls, count: int) -> Names:
        """The names "0", "1", ... of datasets whose dictionaries hold only ids (Freebase), made when used."""
        return cls.deferred(count, partial(_numbers, count))

    @classmethod
    def of(cls, names: Sequence[str] | Names) -> Names:
        """`names` as Names (a list is encoded once)."""
        if isinstance(names, Names):
            return names
        encoded = list(map(str.encode, names))
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets)

    @classmethod
    def join(cls, parts: Sequence[Names]) -> Names:
        """The names of `parts`, one after another."""
        if len(parts) == 1:
            return parts[0]
        sizes = np.cumsum([0] + [int(p.offsets[-1]) for p in parts[:-1]])
        offsets = np.concatenate([np.zeros(1, dtype=np.int64)] + [p.offsets[1:] + s for p, s in zip(parts, sizes)])
        return cls(np.concatenate([np.empty(0, dtype=np.uint8)] + [p.data[:p.offsets[-1]] for p in parts]), offsets)

    def _load(self) -> None:
        if self._make is not None:
            made, self._make = self._make(), None
            if len(made) != self._count:
                raise InputError(f"the dictionary now lists {len(made):,} names where it listed {self._count:,} when "
                                 f"loaded; it changed meanwhile: load the dataset again")
            self._data, self._offsets = made.data, made.offsets

    @property
    def data(self) -> np.ndarray:
        """The UTF-8 bytes of all names, one after another."""
        self._load()
        return self._data

    @property
    def offsets(self) -> np.ndarray:
        """Where each name starts in `data` (and, last, where the final one ends)."""
        self._load()
        return self._offsets

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.take(np.arange(self._count)[i])
        if not -self._count <= i < self._count:
            raise IndexError(f"name {i} of {self._count}")
        i %= self._count
        return bytes(self.data[self.offsets[i]:self.offsets[i + 1]]).decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        data, offsets = bytes(self.data[:self.offsets[-1]]), self.offsets.tolist()
        return (data[a:b].decode("utf-8") for a, b in zip(offsets[:-1], offsets[1:]))

    def __eq__(self, other) -> bool:
        if isinstance(other, Names):
            return len(self) == len(other) and np.array_equal(self.offsets, other.offsets) and \
                np.array_equal(self.data[:self.offsets[-1]], other.data[:other.offsets[-1]])
        if isinstance(other, (list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        shown = ", ".join(repr(self[i]) for i in range(min(3, len(self))))
        return f"Names({len(self):,}: {shown}{', ...' if len(self) > 3 else ''})"

    def digest(self) -> str:
        """A digest of all the names, in order (part of a cache key)."""
        out = hashlib.sha1(np.ascontiguousarray(self.offsets).tobytes())
        out.update(np.ascontiguousarray(self.data[:self.offsets[-1]]))
        return out.hexdigest()

    def take(self, ids: np.ndarray) -> Names:
        """The names of `ids`, in their order."""
        ids = np.asarray(ids, dtype=np.int64)
        starts, ends = self.offsets[ids], self.offsets[ids + 1]
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(ends - starts, out=offsets[1:])
        return Names(gather(self.data, starts, ends), offsets)

    def _lookup_index(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        """(seed, sorted first hashes, the id of each, second hash by id): built once, under the first
        seed for which no two distinct names share a first hash."""
        if self._index is None:
            for seed in SEEDS:
                h1, h2 = span_hashes(self.data, self.offsets[:-1], self.offsets[1:], seed)
                order = np.argsort(h1, kind="stable")
                keys = h1[order]
                same = np.flatnonzero(keys[1:] == keys[:-1])
                if np.array_equal(h2[order[same]], h2[order[same + 1]]):  # equal hashes only for equal names
                    self._index = (seed, keys, order, h2)
                    break
            else:
                raise InputError(f"{len(self):,} names: distinct names share hashes under every seed")
        return self._index

    def lookup(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The id of each name buf[starts[i]:ends[i]] (the first, if listed twice); -1 for one not listed."""
        seed, keys, order, h2 = self._lookup_index()
        q1, q2 = span_hashes(buf, starts, ends, seed)
        if not len(keys):
            return np.full(len(q1), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(keys, q1), len(keys) - 1)
        ids = order[pos]
        return np.where((keys[pos] == q1) & (h2[ids] == q2), ids, -1)

    def ids(self, names: Sequence[str] | Names) -> np.ndarray:
        """The id of each of `names`; -1 for one not listed."""
        other = Names.of(names)
        return self.lookup(other.data, other.offsets[:-1], other.offsets[1:])

    def to_arrow(self):
        """The names as an Arrow string array (no copy of the bytes)."""
        import pyarrow as pa

        out = pa.LargeStringArray.from_buffers(len(self), pa.py_buffer(np.ascontiguousarray(self.offsets)),
                                               pa.py_buffer(np.ascontiguousarray(self.data)))
        return out.cast(pa.string()) if self.offsets[-1] < 2 ** 31 else out

    def write(self, path: str | Path, delimiter: str = "\t") -> None:
        """`id<delimiter>name` lines (DGL-KE's entities.dict / relations.dict), a block of names at a time."""
        ends = np.frombuffer(delimiter.encode() + b"\n", dtype=np.uint8)
        k = len(ends) - 1
        with open(path, "wb") as f:
            for i in range(0, len(self), _BLOCK):
                j = min(i + _BLOCK, len(self))
                ids, at = decimal(np.arange(i, j))
                first, names = self.offsets[i], self.offsets[i:j + 1]
                f.write(_lines([(ids, at[:-1], at[1:]), (ends, 0, k), (self.data[first:names[-1]], names[:-1] - first,
                                                                      names[1:] - first), (ends, k, k + 1)], j - i))


def _numbers(count: int) -> Names:
    return Names.join([Names(*decimal(np.arange(i, min(i + _BLOCK, count)))) for i in range(0, count, _BLOCK)])


def _lines(pieces: list[tuple[np.ndarray, np.ndarray | int, np.ndarray | int]], rows: int) -> bytes:
    """`rows` lines, line i made of each piece's bytes[starts[i]:ends[i]] (a number: the same in every line)."""
    base = np.cumsum([0] + [len(data) for data, _, _ in pieces[:-1]])
    source = np.concatenate([data for data, _, _ in pieces])
    starts = np.stack([np.broadcast_to(s + b, rows) for (_, s, _), b in zip(pieces, base)], 1)
    ends = np.stack([np.broadcast_to(e + b, rows) for (_, _, e), b in zip(pieces, base)], 1)
    return gather(source, starts, ends).tobytes()


class Numbering:
    """Ids by first appearance over tokens given a chunk at a time; the distinct names kept as one
    buffer (no Python object per name). A sorted table of first hashes finds known names; a second
    hash per id checks every match, raising `HashCollision` if two names share a first hash."""

    def __init__(self, seed: int = SEEDS[0]):
        self.seed, self.count = seed, 0
        self.keys = np.empty(0, dtype=np.uint64)  # sorted first hashes
        self.key_ids = np.empty(0, dtype=np.int64)
        self.check = np.empty(0, dtype=np.uint64)  # second hash by id
        self.parts: list[Names] = []

    def add(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The ids of the tokens buf[starts[i]:ends[i]], new names numbered in the order they come."""
        h1, h2 = span_hashes(buf, starts, ends, self.seed)
        uniq, first, inverse = np.unique(h1, return_index=True, return_inverse=True)
        pos = np.searchsorted(self.keys, uniq)
        known = pos < len(self.keys)
        known[known] = self.keys[pos[known]] == uniq[known]
        fresh = np.flatnonzero(~known)
        new = fresh[np.argsort(first[fresh], kind="stable")]
        uids = np.empty(len(uniq), dtype=np.int64)
        uids[known] = self.key_ids[pos[known]]
        uids[new] = self.count + np.arange(len(new))
        self.check = np.concatenate([self.check, h2[first[new]]])
        ids = uids[inverse.ravel()]
        if not np.array_equal(self.check[ids], h2):
            raise HashCollision
        self.keys = np.insert(self.keys, pos[fresh], uniq[fresh])
        self.key_ids = np.insert(self.key_ids, pos[fresh], uids[fresh])
        s, e = np.asarray(starts).ravel()[first[new]], np.asarray(ends).ravel()[first[new]]
        offsets = np.zeros(len(new) + 1, dtype=np.int64)
        np.cumsum(e - s, out=offsets[1:])
        self.parts.append(Names(gather(buf, s, e), offsets))
        self.count += len(new)
        return ids

    def names(self) -> Names:
        """The distinct names, by id."""
        return Names.join(self.parts)
