"""Knowledge-graph triples in DGL-KE's formats, with entity and relation dictionaries.

Formats (as `dglke_train --format`):
- `built_in`: `--data_path/NAME` holds train.txt, valid.txt, test.txt of `head<TAB>rel<TAB>tail`
  names (with entities.dict / relations.dict when present; Freebase: integer ids in
  `head tail rel` order with entity2id.txt / relation2id.txt).
- `raw_udd_{hrt}`: `--data_files train [valid test]` of names, columns in the order the
  three letters give; ids are numbered in order of first appearance (train, valid, test).
- `udd_{hrt}`: `--data_files entities relations train [valid test]`, triples of integer ids,
  dictionaries of `id<delim>name` lines.

Loading holds bounded memory whatever the input's size: files are read a chunk of lines at a
time (`text`) into int32 id arrays (`triples`), written to a cache folder and memory-mapped when
the input is big (`store`), and names are one buffer with offsets (`names`), never a Python
object per name; a dictionary of integer-id input is only read for its names when they are used.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from itertools import permutations
from pathlib import Path

import numpy as np

from ...errors import InputError
from .names import Names, gather
from .text import check_file, chunks, integers, split
from .triples import TripleFiles, id_triples, named_triples

BUILTIN = ("FB15k", "FB15k-237", "wn18", "wn18rr", "Freebase")
ORDERS = tuple("".join(p) for p in permutations("hrt"))


@dataclass
class KGData:
    """Triples as (N, 3) arrays of rows (head, relation, tail), int32 unless the counts need int64
    (memory-mapped from the cache for a big input), plus the names by id."""

    name: str
    entities: Names
    relations: Names
    train: np.ndarray
    valid: np.ndarray | None = None
    test: np.ndarray | None = None
    importance: np.ndarray | None = None  # one weight per training triple (--has_edge_importance)

    def __post_init__(self):
        self.entities, self.relations = Names.of(self.entities), Names.of(self.relations)

    @property
    def n_entities(self) -> int:
        """Number of entities (rows of the entity embedding)."""
        return len(self.entities)

    @property
    def n_relations(self) -> int:
        """Number of relations (rows of the relation embedding)."""
        return len(self.relations)


def parse_format(fmt: str) -> tuple[str, str]:
    """Split `raw_udd_hrt` into ('raw_udd', 'hrt'); `built_in` gives ('built_in', 'hrt')."""
    if fmt == "built_in":
        return fmt, "hrt"
    for kind in ("raw_udd", "udd"):
        if fmt.startswith(kind + "_") and fmt[len(kind) + 1:] in ORDERS:
            return kind, fmt[len(kind) + 1:]
    raise InputError(f"unknown --format {fmt!r}: use built_in, raw_udd_ORDER or udd_ORDER where ORDER is "
                     f"one of {', '.join(ORDERS)} (the column order of head, relation, tail)")


def read_dict(path: str | Path, delimiter: str = "\t") -> Names:
    """An `id<delim>name` dictionary as names by id (ids 0..n-1, each once, in any order): its lines are
    counted and checked now, its names read when first used (integer-id triples need only the count)."""
    path = Path(path)
    check_file(path, "dictionary")
    count, _ = _scan_dict(path, delimiter, keep=False)
    return Names.deferred(count, partial(_dict_names, path, delimiter))


def _dict_names(path: Path, delimiter: str) -> Names:
    return _scan_dict(path, delimiter, keep=True)[1]


def _scan_dict(path: Path, delimiter: str, keep: bool) -> tuple[int, Names | None]:
    """The number of ids of a dictionary, checked, and (with `keep`) its names by id."""
    count, ids, parts = 0, [], []
    for chunk in chunks(path, "dictionary"):
        fields = split(chunk, delimiter, 2, "dictionary")
        got = integers(fields, 0, "the id")
        if ids or not np.array_equal(got, np.arange(count, count + len(got))):  # kept only when out of order
            ids.append(got if ids else np.concatenate([np.arange(count), got]))
        if keep:
            offsets = np.zeros(len(got) + 1, dtype=np.int64)
            np.cumsum(fields.ends[:, 1] - fields.starts[:, 1], out=offsets[1:])
            parts.append(Names(gather(fields.buf, fields.starts[:, 1], fields.ends[:, 1]), offsets))
        count += len(got)
    if not count:
        raise InputError(f"dictionary file {path} is empty")
    order = None
    if ids:
        ids = np.concatenate(ids)
        seen = np.zeros(count, dtype=bool)
        inside = ids[(ids >= 0) & (ids < count)]
        seen[inside] = True
        if len(inside) < count or not seen.all():
            raise InputError(f"{path}: ids must be 0..{count - 1}, each once")
        order = np.argsort(ids)
    if not keep:
        return count, None
    names = Names.join(parts)
    return count, names if order is None else names.take(order)


def write_dict(path: str | Path, names: Names | list[str], delimiter: str = "\t") -> None:
    """Write `id<delim>name` lines, DGL-KE's entities.dict / relations.dict layout."""
    Names.of(names).write(path, delimiter)


def _count_header(path: Path) -> int:
    """Freebase's entity2id.txt / relation2id.txt: the number of ids on line 1, then a line per id."""
    first, lines = None, 0
    for chunk in chunks(path, "dictionary"):
        first = chunk.text[:chunk.text.find(b"\n")].strip() if first is None else first
        ends = np.flatnonzero(np.frombuffer(chunk.text, dtype=np.uint8) == 10)
        lines += int(np.count_nonzero(np.diff(ends, prepend=-1) > 1))  # blank lines do not count
    if first is None or not first.isdigit():
        shown = (first or b"").decode(errors="replace")
        raise InputError(f"{path} line 1: expected the number of ids, found {shown!r}")
    if lines - 1 != int(first):
        raise InputError(f"{path} line 1 gives {int(first):,} ids but {lines - 1:,} lines follow it; the count and the "
                         f"lines must agree")
    return int(first)


def _builtin(data_path: Path, name: str, delimiter: str, entities: Names | None, relations: Names | None) -> KGData:
    """A built-in dataset under data_path/name, as DGL-KE lays it out."""
    if name not in BUILTIN:
        raise InputError(f"unknown built-in dataset {name!r}: use one of {', '.join(BUILTIN)}, or give your "
                         f"own files with --format raw_udd_hrt --data_files train.txt valid.txt test.txt")
    root = data_path / name
    files = [root / f for f in ("train.txt", "valid.txt", "test.txt")]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise InputError(f"dataset {name} is missing {', '.join(missing)} in {root}: downloading needs a network, "
                         f"so put train.txt, valid.txt and test.txt there (one 'head<TAB>relation<TAB>tail' "
                         f"per line; DGL-KE's copy is https://data.dgl.ai/dataset/{name}.zip) or pass "
                         f"--data_path pointing at the folder that contains {name}/")
    if name == "Freebase":
        n_ent, n_rel = _count_header(root / "entity2id.txt"), _count_header(root / "relation2id.txt")
        t = id_triples(TripleFiles(files, "htr", delimiter), n_ent, n_rel, root, ("entity2id.txt", "relation2id.txt"))
        return KGData(name, Names.numbers(n_ent) if entities is None else entities,
                      Names.numbers(n_rel) if relations is None else relations, *t.splits)
    if entities is None and (root / "entities.dict").is_file():
        entities, relations = read_dict(root / "entities.dict"), read_dict(root / "relations.dict")
    t = named_triples(TripleFiles(files, "hrt", delimiter), entities, relations, root)
    return KGData(name, t.entities or entities, t.relations or relations, *t.splits)


def load_dataset(data_path: str | Path, dataset: str, fmt: str = "built_in", data_files: list[str] | None = None,
                 delimiter: str = "\t", entities: Names | list[str] | None = None,
                 relations: Names | list[str] | None = None, with_importance: bool = False) -> KGData:
    """Load a knowledge graph as `dglke_train` does; pass `entities`/`relations` to reuse saved maps.
    `with_importance`: the training file has a fourth column, each triple's importance."""
    kind, order = parse_format(fmt)
    root = Path(data_path)
    entities = None if entities is None else Names.of(entities)
    relations = None if relations is None else Names.of(relations)
    if kind == "built_in":
        if with_importance:
            raise InputError("--has_edge_importance needs your own files (--format raw_udd_* or udd_*) whose "
                             "training file has a fourth column")
        return _builtin(root, dataset, delimiter, entities, relations)
    files = [root / f for f in (data_files or [])]
    if kind == "raw_udd":
        if len(files) not in (1, 3):
            raise InputError(f"--format {fmt} needs --data_files TRAIN or TRAIN VALID TEST (got {len(files)} "
                             f"files), paths relative to --data_path {root}")
        t = named_triples(TripleFiles(files, order, delimiter, with_importance), entities, relations, root)
        return KGData(dataset, t.entities or entities, t.relations or relations, *t.splits, importance=t.importance)
    if len(files) not in (3, 5):
        raise InputError(f"--format {fmt} needs --data_files ENTITIES RELATIONS TRAIN [VALID TEST] (got "
                         f"{len(files)} files), paths relative to --data_path {root}")
    ents = read_dict(files[0], delimiter) if entities is None else entities
    rels = read_dict(files[1], delimiter) if relations is None else relations
    t = id_triples(TripleFiles(files[2:], order, delimiter, with_importance), len(ents), len(rels), root)
    return KGData(dataset, ents, rels, *t.splits, importance=t.importance)
