"""Triple files parsed a chunk at a time into (N, 3) arrays of (head, relation, tail) ids.

Integer ids are checked against the dictionaries' sizes; names are numbered by first appearance
over the files (train, valid, test; heads and tails row by row, as DGL-KE numbers them), or looked
up in given dictionaries. Ids are int32 unless the counts need int64. Each bad line is an error
naming it as soon as its chunk is read; big inputs are written to the cache as they are parsed
(`store`), so a load holds a chunk's temporaries, not the text or all of its tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...data.file_array import unmapped
from ...errors import InputError
from .names import SEEDS, HashCollision, Names, Numbering
from .store import Store, open_store
from .text import Fields, check_file, chunks, first_not_number, numbers, span_numbers, split

BLOCK_ROWS = 1 << 22  # rows a whole-array pass over triples takes at once
_KINDS = ("entity", "relation", "entity")


@dataclass
class TripleFiles:
    """The triple files of one load (the training file first) and how to read them."""

    paths: list[Path]
    order: str  # the columns' order of head, relation and tail, e.g. "hrt"
    delimiter: str
    importance: bool = False  # the training file has a 4th column: each triple's importance

    def ncols(self, i: int) -> int:
        """Fields a line of file i has."""
        return 4 if self.importance and i == 0 else 3

    @property
    def columns(self) -> list[int]:
        """The columns of head, relation and tail."""
        return [self.order.index(k) for k in "hrt"]

    def options(self) -> dict:
        """What, besides the files, the parsed arrays depend on (every file checked first)."""
        for path in self.paths:
            check_file(path, "triple")
        return {"order": self.order, "delimiter": self.delimiter, "importance": self.importance}


@dataclass
class Triples:
    """A load's arrays: the triples of each file, the importance of the training triples, and the
    names numbered here (None when the ids are given or come from dictionaries)."""

    splits: list[np.ndarray]
    importance: np.ndarray | None = None
    entities: Names | None = None
    relations: Names | None = None


def id_dtype(bound: int) -> np.dtype:
    """int32 for ids below `bound` when they fit, else int64."""
    return np.dtype(np.int32 if bound <= 2 ** 31 else np.int64)


def row_blocks(triples: np.ndarray, rows: int = BLOCK_ROWS) -> Iterator[np.ndarray]:
    """The rows a block at a time: bounded temporaries. A memory-mapped array (the loader's cache)
    is read from its file (`unmapped`): read through the mapping, every page would stay resident
    while the mapping lives (4 GB at Freebase's size, the whole of a command)."""
    triples = unmapped(triples)
    for i in range(0, len(triples), rows):
        yield np.asarray(triples[i:i + rows])


def _triples(arrays: dict[str, np.ndarray], files: TripleFiles) -> Triples:
    def names(kind: str) -> Names | None:
        return Names(arrays[f"{kind}.data"], arrays[f"{kind}.offsets"]) if f"{kind}.data" in arrays else None

    return Triples([arrays[f"split{i}"] for i in range(len(files.paths))], arrays.get("importance"),
                   names("entities"), names("relations"))


def _empty(path: Path, rows: int) -> None:
    if not rows:
        raise InputError(f"triple file {path} is empty")


def _weights(fields: Fields, values: np.ndarray | None) -> np.ndarray:
    """`values`, parsed from `fields`; None is an error naming the first line whose 4th field is not a number."""
    if values is None:
        row = first_not_number(fields, 3, np.float64)
        raise InputError(f"{fields.chunk.path} line {fields.line(row)}: with --has_edge_importance the 4th column "
                         f"must be a number (the triple's importance), found {fields.text(row, 3)!r}")
    return values


def id_triples(files: TripleFiles, n_entities: int, n_relations: int, data_path: Path,
               sources: tuple[str, str] = ("the entity dictionary", "the relation dictionary")) -> Triples:
    """Triples of integer ids, checked against the entity and relation counts (given by `sources`)."""
    cached, store = open_store(data_path, files.paths, {**files.options(), "ids": [n_entities, n_relations]})
    if cached is not None:
        return _triples(cached, files)
    with store:
        return _triples(_read_ids(files, n_entities, n_relations, sources, store), files)


def _read_ids(files: TripleFiles, n_entities: int, n_relations: int, sources: tuple[str, str],
              store: Store) -> dict[str, np.ndarray]:
    dtype, cols = id_dtype(max(n_entities, n_relations)), files.columns
    bounds = np.array([n_entities, n_relations, n_entities])
    for i, path in enumerate(files.paths):
        rows = store.rows(f"split{i}", dtype, (3,))
        weights = store.rows("importance", np.float32) if files.ncols(i) == 4 else None
        for chunk in chunks(path, "triple"):
            fields = split(chunk, files.delimiter, files.ncols(i), "triple")
            wide = dtype == np.int64 or (fields.ends - fields.starts).max() > 9  # 10 digits may not fit int32
            parse = np.float64 if weights is not None else np.int64 if wide else np.int32
            values = numbers(fields, parse, cols, _KINDS)
            ids = _weights(fields, values)[:, cols]
            bad = (ids < 0) | (ids >= bounds)
            if bad.any():
                row, c = np.argwhere(bad)[0]
                raise InputError(f"{path} line {fields.line(row)}: {_KINDS[c]} id {fields.text(row, cols[c])} is "
                                 f"outside [0, {bounds[c]}) given by {sources[c % 2]}")
            rows.add(ids)
            if weights is not None:
                weights.add(values[:, 3])
        _empty(path, rows.count)
    return store.close()


def named_triples(files: TripleFiles, entities: Names | None, relations: Names | None, data_path: Path) -> Triples:
    """Triples of names: ids from the given dictionaries, or (None) numbered by first appearance."""
    given = {k: None if v is None else v.digest() for k, v in (("entities", entities), ("relations", relations))}
    cached, store = open_store(data_path, files.paths, {**files.options(), "names": given})
    if cached is not None:
        return _triples(cached, files)
    with store:
        for seed in SEEDS:
            try:
                return _triples(_read_named(files, entities, relations, store, seed), files)
            except HashCollision:  # two names share a 64-bit hash under this seed: number again under the next
                continue
        raise InputError(f"{files.paths[0]}: distinct names share hashes under every seed")


def _read_named(files: TripleFiles, entities: Names | None, relations: Names | None, store: Store,
                seed: int) -> dict[str, np.ndarray]:
    bound = sum(p.stat().st_size for p in files.paths) // 2 + 1  # no more names than fields
    dtype = id_dtype(max(bound if d is None else len(d) for d in (entities, relations)))
    numbered = {kind: Numbering(seed) for kind, d in (("entities", entities), ("relations", relations)) if d is None}
    h, r, t = files.columns
    for i, path in enumerate(files.paths):
        rows = store.rows(f"split{i}", dtype, (3,))
        weights = store.rows("importance", np.float32) if files.ncols(i) == 4 else None
        for chunk in chunks(path, "triple"):
            fields = split(chunk, files.delimiter, files.ncols(i), "triple")
            ends = _ids(fields, [h, t], entities, numbered.get("entities"), "entity").reshape(-1, 2)
            rows.add(np.stack([ends[:, 0], _ids(fields, [r], relations, numbered.get("relations"), "relation"),
                               ends[:, 1]], 1))
            if weights is not None:
                weights.add(_weights(fields, span_numbers(fields, 3, np.float32)))
        _empty(path, rows.count)
    for kind, numbering in numbered.items():
        names = numbering.names()
        store.put(f"{kind}.data", names.data)
        store.put(f"{kind}.offsets", names.offsets)
    return store.close()


def _ids(fields: Fields, cols: list[int], names: Names | None, numbering: Numbering | None, kind: str) -> np.ndarray:
    """The ids of the names in `cols`, row by row: looked up in `names`, or numbered."""
    starts, ends = fields.starts[:, cols], fields.ends[:, cols]
    if numbering is not None:
        return numbering.add(fields.buf, starts, ends)
    ids = names.lookup(fields.buf, starts, ends)
    unknown = np.flatnonzero(ids < 0)
    if unknown.size:
        row, c = divmod(int(unknown[0]), len(cols))
        raise InputError(f"{fields.chunk.path} line {fields.line(row)}: {kind} {fields.text(row, cols[c])!r} is not "
                         f"in the {kind} dictionary")
    return ids
