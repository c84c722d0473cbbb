"""A part's halo (the sources of its in-edges outside it) as a bit per node id of the graph and
a count per 64 ids: a quarter of a byte a node, where an array of local ids takes 4 or 8. A halo
node's local id follows the part's inner nodes, in id order: its rank among the halo."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

WORDS_PER_PIECE = 1 << 16  # words expanded at once when the halo's ids are listed (4M ids)
IDS_PER_PIECE = 1 << 18  # ids given local ids at once (their temporaries about 40 bytes an id)
_BIT = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))  # an id's bit in its word, by id % 64
_BELOW = _BIT - np.uint64(1)  # the bits below it


class Halo:
    """The halo of one part at a time: `add` its nodes, `count` them, then `rank` and `ids`;
    `clear` for the next part."""

    def __init__(self, num_nodes: int):
        self.words = np.zeros(-(-num_nodes // 64), dtype=np.uint64)
        self.before = np.zeros(0, dtype=np.int64)  # halo nodes in the words before each (after `count`)

    def add(self, ids: np.ndarray) -> None:
        """Mark node ids `ids` (repeats allowed) as halo nodes."""
        np.bitwise_or.at(self.words, ids >> 6, _BIT[ids & 63])

    def count(self) -> int:
        """The number of halo nodes (`rank` and `ids` hold from here until `clear`)."""
        counts = np.bitwise_count(self.words)
        self.before = np.cumsum(counts, dtype=np.int64) - counts
        return int(self.before[-1] + counts[-1]) if counts.size else 0

    def rank(self, ids: np.ndarray) -> np.ndarray:
        """The halo nodes below each of halo nodes `ids`: their index in the halo (int64)."""
        word = ids >> 6
        bits = self.words[word]
        bits &= _BELOW[ids & 63]
        return self.before[word] + np.bitwise_count(bits)

    def local_ids(self, ids: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """The local ids of nodes `ids` in the part of inner nodes [lo, hi) whose halo this is:
        an inner node's offset in [lo, hi), a halo node's rank after them (int64, a piece at a time)."""
        out = np.empty(ids.size, dtype=np.int64)
        for at in range(0, ids.size, IDS_PER_PIECE):
            piece = ids[at:at + IDS_PER_PIECE]
            local = piece.astype(np.int64) - lo
            outside = (piece < lo) | (piece >= hi)
            local[outside] = (hi - lo) + self.rank(piece[outside])
            out[at:at + piece.size] = local
        return out

    def ids(self) -> Iterator[np.ndarray]:
        """The halo's node ids in ascending order (int64), a piece at a time."""
        for lo in range(0, self.words.size, WORDS_PER_PIECE):
            raw = self.words[lo:lo + WORDS_PER_PIECE].astype("<u8", copy=False).view(np.uint8)
            yield np.flatnonzero(np.unpackbits(raw, bitorder="little")) + lo * 64

    def clear(self) -> None:
        self.words[:] = 0
        self.before = np.zeros(0, dtype=np.int64)
