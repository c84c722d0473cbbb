"""`generate_kg`: a seeded synthetic knowledge graph of any size, Freebase-shaped by default, written a
chunk of triples at a time in DGL-KE's Freebase or udd_hrt layout, so KGE training can be tested and
timed at scale without downloading Freebase.

The planted structure, learnable by TransE, RotatE and DistMult alike:
- Entities have one of `TYPES` types and, within it, one of S communities of about `COMMUNITY`
  entities (S grows with the graph, so a query has as many plausible answers at every size):
  clusters (type, community) are contiguous ranges of positions that a fixed random bijection
  x -> (k x + o) mod N maps to entity ids, spreading clusters and hubs over the id space.
- Each relation links a source type to a target type (as a real relation has a type of subject and
  of object). A community relation keeps the community: (h, r, t) has h of the source type and t of
  the target type in h's community (TransE: t = h + the types' offset; RotatE: a rotation; DistMult:
  type compatibility times community similarity). An attribute relation (`ATTRIBUTE_SHARE` of them,
  like gender or nationality) points at the target type's few hubs, whatever the head. A share
  `NOISE` of tails are from a random cluster.
- Popularity: within a cluster an entity's rank follows the quantiles of a Pareto law of exponent
  `DEGREE_EXPONENT`, and attribute tails a Zipf law over the whole type, whose hubs' degrees grow
  with the graph as Freebase's do; relation frequencies are Zipf-skewed (frequency rank i ~ 1 / i).
Memory is O(relations + clusters) plus one chunk: nothing is held per entity. No triple is a self-loop;
validation and test triples are distinct and drawn first, and training triples are redrawn away from
them, and from repeats within their chunk while redrawing removes repeats (those left, and repeats
across chunks, are few: `kge train` counts them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...files import check_space
from ...progress import Progress
from .kg_shape import EVAL_MAX, EVAL_SHARE, FORMATS, FREEBASE

TYPES = 8  # entity types (fewer in graphs of under TYPES * COMMUNITY entities)
COMMUNITY = 50  # entities per cluster (type, community)
ATTRIBUTE_SHARE = 0.2  # relations whose tails are the target type's hubs
NOISE = 0.05  # tails from a random cluster
DEGREE_EXPONENT = 1.5  # Pareto exponent of the popularity within a cluster
ATTRIBUTE_EXPONENT = 1.2  # Zipf exponent of the attribute tails' popularity within their type
RELATION_EXPONENT = 1.0  # Zipf exponent of the relation frequencies
MAX_REDRAWS = 100
_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)


@dataclass(frozen=True)
class KGModel:
    """The planted generator: typed clusters, each relation's types, kind and frequency, the id bijection."""

    num_entities: int
    communities: int  # per type
    starts: np.ndarray  # first position of each cluster type * communities + community, then num_entities
    source: np.ndarray  # source type of each relation
    target: np.ndarray  # target type of each relation
    attribute: np.ndarray  # whether each relation is an attribute relation
    rel_p: np.ndarray  # frequency of each relation
    mult: int
    offset: int

    @classmethod
    def plan(cls, num_entities: int, num_relations: int, rng: np.random.Generator) -> KGModel:
        """Draw the structure of a graph of this size."""
        clusters = max(1, num_entities // COMMUNITY)
        types = min(TYPES, clusters)
        communities = clusters // types
        starts = np.arange(types * communities + 1, dtype=np.int64) * num_entities // (types * communities)
        source = rng.permutation(num_relations) % types  # every type is a source once there are enough relations
        target = rng.integers(0, types, num_relations)
        attribute = rng.random(num_relations) < ATTRIBUTE_SHARE
        zipf = 1.0 / np.arange(1, num_relations + 1) ** RELATION_EXPONENT
        rel_p = rng.permutation(zipf / zipf.sum())
        while True:
            mult = int(rng.integers(max(1, num_entities // 3), num_entities)) if num_entities > 2 else 1
            if math.gcd(mult, num_entities) == 1:
                break
        return cls(num_entities, communities, starts, source, target, attribute, rel_p, mult,
                   int(rng.integers(0, num_entities)))

    def triples(self, rel: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Heads and tails of triples of the relations `rel` (entity ids, int64)."""
        community = rng.integers(0, self.communities, len(rel))
        heads = self._member(self.source[rel] * self.communities + community, rng)
        tail_cluster = self.target[rel] * self.communities + community
        noise = rng.random(len(rel)) < NOISE
        tail_cluster[noise] = rng.integers(0, len(self.starts) - 1, int(noise.sum()))
        tails = self._member(tail_cluster, rng)
        hub = self.attribute[rel] & ~noise
        tails[hub] = self._hub(self.target[rel[hub]], rng)
        return self._ids(heads), self._ids(tails)

    def _member(self, cluster: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A position in each cluster by popularity: rank n u**(1/beta) has the Pareto quantiles' weights."""
        start = self.starts[cluster]
        size = self.starts[cluster + 1] - start
        beta = 1 - 1 / DEGREE_EXPONENT
        return start + np.minimum((size * rng.random(len(cluster)) ** (1 / beta)).astype(np.int64), size - 1)

    def _hub(self, types: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A position of each type by a Zipf law of its ranks (inverse of the continuous law's CDF); rank j is
        member j // communities of community j % communities, so hubs are spread over the communities."""
        first = types * self.communities
        n = (self.starts[first + self.communities] - self.starts[first]).astype(np.float64)
        s = ATTRIBUTE_EXPONENT
        rank = ((1 - rng.random(len(types)) * (1 - (n + 1) ** (1 - s))) ** (1 / (1 - s))).astype(np.int64) - 1
        cluster = first + rank % self.communities
        start = self.starts[cluster]
        return start + np.minimum(rank // self.communities, self.starts[cluster + 1] - start - 1)

    def _ids(self, positions: np.ndarray) -> np.ndarray:
        """Entity ids of positions (in place): the bijection x -> (k x + o) mod N, k prime to N."""
        positions *= self.mult
        positions += self.offset
        positions %= self.num_entities
        return positions


def _eval_size(num_triples: int) -> int:
    """Validation (and test) triples unless given: min(1 % of the training triples, 50,000), at least 1."""
    return max(1, min(int(num_triples * EVAL_SHARE), EVAL_MAX))


def _output_folder(out: str | Path, fmt: str) -> Path:
    """Where the files go: `out` for udd_hrt; for freebase `out/Freebase`, or `out` itself when it is
    named Freebase, the folder DGL-KE's built-in reader opens (`--data_path` its parent)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is an existing file; pass a folder for the knowledge graph")
    root = out if fmt == "udd_hrt" or out.name == "Freebase" else out / "Freebase"
    if root.exists() and not root.is_dir():
        raise InputError(f"{root} is an existing file; pass a folder for the knowledge graph")
    if root.is_dir() and any(root.iterdir()):
        raise InputError(f"{root} is not empty; give a new folder for the knowledge graph")
    return root


def generate_kg(out: str | Path, num_entities: int = FREEBASE["num_entities"],
                num_relations: int = FREEBASE["num_relations"], num_triples: int = FREEBASE["num_triples"],
                fmt: str = "freebase", num_valid: int | None = None, num_test: int | None = None, seed: int = 0,
                chunk_triples: int = 1 << 22, progress: bool = True) -> Path:
    """Write the knowledge graph (train/valid/test triples and both dictionaries) into a new folder, `out`
    or for freebase `out/Freebase` unless `out` is named Freebase, and return that folder. The same
    arguments give byte-identical files."""
    num_valid = _eval_size(num_triples) if num_valid is None else num_valid
    num_test = _eval_size(num_triples) if num_test is None else num_test
    _check(num_entities, num_relations, num_triples, fmt, num_valid, num_test, chunk_triples)
    root = _output_folder(out, fmt)
    check_space(root, _size(num_entities, num_relations, num_triples + num_valid + num_test),
                "the knowledge graph")
    plan_rng, train_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    model = KGModel.plan(num_entities, num_relations, plan_rng)
    held_out, held_keys = _held_out(model, num_valid + num_test, plan_rng)
    total = num_entities + num_relations + num_triples + num_valid + num_test
    created = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with Progress(total, "generate kg", "row", enabled=progress, unit_scale=True, leave=True) as bar:
        try:
            bar.stage("dictionaries")
            for name, kind, n in _dictionaries(fmt, num_entities, num_relations):
                written.append(root / name)
                _write_dictionary(root / name, fmt, kind, n, chunk_triples, bar)
            bar.stage("training triples")
            written.append(root / "train.txt")
            with open(root / "train.txt", "wb") as f:
                for start in range(0, num_triples, chunk_triples):
                    rel = train_rng.choice(num_relations, min(chunk_triples, num_triples - start), p=model.rel_p)
                    first = np.arange(start, min(start + len(rel), num_relations))  # each relation once in train
                    rel[first - start] = first
                    train_rng.shuffle(rel)
                    f.write(_triple_text(fmt, *_train_chunk(model, rel, held_keys, train_rng)))
                    bar.update(len(rel))
            bar.stage("validation and test triples")
            for name, part in (("valid.txt", held_out[:, :num_valid]), ("test.txt", held_out[:, num_valid:])):
                written.append(root / name)
                (root / name).write_bytes(_triple_text(fmt, *part))
                bar.update(part.shape[1])
        except BaseException:  # an interrupted or failed run leaves no partial files
            for path in written:
                path.unlink(missing_ok=True)
            if created:
                root.rmdir()
            raise
    return root


def _check(num_entities: int, num_relations: int, num_triples: int, fmt: str, num_valid: int, num_test: int,
           chunk_triples: int) -> None:
    """One error for arguments the generator cannot honour."""
    if fmt not in FORMATS:
        raise InputError(f"generate kg writes --format {' or '.join(FORMATS)}, not {fmt!r}")
    if not 2 <= num_entities < 2 ** 31 or num_relations < 1:
        raise InputError(f"generate kg needs 2 <= num_entities < 2**31 and num_relations >= 1, got "
                         f"{num_entities:,} entities and {num_relations:,} relations")
    if num_triples < num_relations:
        raise InputError(f"generate kg needs num_triples >= num_relations (each relation has a training triple), "
                         f"got {num_triples:,} triples for {num_relations:,} relations")
    if num_valid < 1 or num_test < 1 or chunk_triples < 1:
        raise InputError(f"generate kg needs num_valid, num_test >= 1 (DGL-KE's layouts read valid.txt and test.txt) "
                         f"and chunk_triples >= 1, got {num_valid:,}, {num_test:,} and {chunk_triples:,}")


def _digits(n: int) -> int:
    """Decimal digits of a non-negative integer."""
    return len(str(max(0, n)))


def _size(num_entities: int, num_relations: int, num_triples: int) -> int:
    """Bytes of the text files at most: each triple's and dictionary line's ids at full width."""
    de, dr = _digits(num_entities - 1), _digits(num_relations - 1)
    return num_triples * (2 * de + dr + 3) + num_entities * (2 * de + 4) + num_relations * (2 * dr + 4) + 64


def _keys(h: np.ndarray, r: np.ndarray, t: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each triple (splitmix64's finaliser over the packed ids)."""
    with np.errstate(over="ignore"):
        x = (h.astype(np.uint64) << np.uint64(32)) | t.astype(np.uint64)
        x ^= r.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def _held_out(model: KGModel, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """`count` distinct triples (no self-loops) for validation and test, as the rows head, relation,
    tail of a (3, count) array, and their sorted keys."""
    rows = np.empty((3, 0), dtype=np.int64)
    for _ in range(MAX_REDRAWS):
        rel = rng.choice(len(model.rel_p), size=2 * (count - rows.shape[1]) + 16, p=model.rel_p)
        h, t = model.triples(rel, rng)
        rows = np.concatenate([rows, np.stack([h, rel, t])[:, h != t]], axis=1)
        _, first = np.unique(_keys(*rows), return_index=True)
        rows = rows[:, np.sort(first)[:count]]
        if rows.shape[1] == count:
            return rows, np.sort(_keys(*rows))
    raise InputError(f"generate kg could not draw {count:,} distinct validation and test triples from "
                     f"{model.num_entities:,} entities: ask for fewer with --num_valid and --num_test")


def _train_chunk(model: KGModel, rel: np.ndarray, held_keys: np.ndarray,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training triples of the relations `rel`, redrawn where they are self-loops or repeat a held-out
    triple, and where they repeat another triple of the chunk for as long as redrawing removes such
    repeats (a graph too dense for distinct triples keeps some)."""
    h, t = model.triples(rel, rng)
    redo = np.arange(len(rel))
    kept = np.empty(0, dtype=np.uint64)  # sorted keys of the rows kept so far, while repeats are redrawn
    fixing, last = True, len(rel) + 1
    for _ in range(MAX_REDRAWS):
        keys = _keys(h[redo], rel[redo], t[redo])
        order = np.argsort(keys)
        bad = _in_sorted(keys, held_keys, order) | (h[redo] == t[redo])
        if fixing:
            repeat = _in_sorted(keys, kept, order)
            repeat[order[1:][keys[order[1:]] == keys[order[:-1]]]] = True  # all but one of equal keys
            fixing, last = bool(repeat.sum() < 0.9 * last), int(repeat.sum())
            if fixing:
                bad |= repeat
                kept = np.sort(np.concatenate([kept, keys[~bad]]), kind="stable")  # a merge of two sorted runs
        redo = redo[bad]
        if not redo.size:
            return h, rel, t
        h[redo], t[redo] = model.triples(rel[redo], rng)
    raise InputError(f"generate kg could not draw training triples apart from the validation and test ones "
                     f"with {model.num_entities:,} entities: ask for fewer with --num_valid and --num_test")


def _in_sorted(keys: np.ndarray, sorted_keys: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Whether each key is in the sorted array; `order` sorts `keys` (looked up in order, a search
    starts where the last one ended)."""
    out = np.zeros(len(keys), dtype=bool)
    if sorted_keys.size:
        order = np.argsort(keys) if order is None else order
        at = np.minimum(np.searchsorted(sorted_keys, keys[order]), len(sorted_keys) - 1)
        out[order] = sorted_keys[at] == keys[order]
    return out


def _lines(parts: list[np.ndarray | bytes]) -> bytes:
    """One text line per row of the integer columns and literal bytes in `parts`, in bulk: a matrix of
    the digits (each column as wide as its largest number) whose leading zeros are masked out."""
    n = next(len(p) for p in parts if isinstance(p, np.ndarray))
    widths = [len(p) if isinstance(p, bytes) else _digits(int(p.max()) if n else 0) for p in parts]
    buf = np.empty((n, sum(widths) + 1), dtype=np.uint8)
    keep = np.ones(buf.shape, dtype=bool)
    col = 0
    for part, width in zip(parts, widths):
        if isinstance(part, bytes):
            buf[:, col:col + width] = np.frombuffer(part, dtype=np.uint8)
        else:
            rest = part.astype(np.int64)
            for k in range(width - 1, -1, -1):
                rest, buf[:, col + k] = np.divmod(rest, 10)
            buf[:, col:col + width] += ord("0")
            lead = width - 1 - np.searchsorted(_POW10[:width - 1], part, side="right")
            keep[:, col:col + width] = np.arange(width) >= lead[:, None]
        col += width
    buf[:, col] = ord("\n")
    return buf[keep].tobytes()


def _triple_text(fmt: str, h: np.ndarray, r: np.ndarray, t: np.ndarray) -> bytes:
    """Freebase: `head<TAB>tail<TAB>rel`; udd_hrt: `head<TAB>rel<TAB>tail`."""
    return _lines([h, b"\t", t, b"\t", r] if fmt == "freebase" else [h, b"\t", r, b"\t", t])


def _dictionaries(fmt: str, num_entities: int, num_relations: int) -> list[tuple[str, str, int]]:
    """(file name, name prefix, count) of the entity and relation dictionaries."""
    if fmt == "freebase":
        return [("entity2id.txt", "e", num_entities), ("relation2id.txt", "r", num_relations)]
    return [("entities.dict", "e", num_entities), ("relations.dict", "r", num_relations)]


def _write_dictionary(path: Path, fmt: str, prefix: str, count: int, chunk: int, bar: Progress) -> None:
    """Names are the ids behind a letter (e17, r3). Freebase: the count, then `name<TAB>id` lines;
    udd: `id<TAB>name` lines."""
    with open(path, "wb") as f:
        if fmt == "freebase":
            f.write(f"{count}\n".encode())
        for start in range(0, count, chunk):
            ids = np.arange(start, min(count, start + chunk), dtype=np.int64)
            name = prefix.encode()
            f.write(_lines([name, ids, b"\t", ids] if fmt == "freebase" else [ids, b"\t" + name, ids]))
            bar.update(len(ids))
