"""Loading knowledge graphs a chunk at a time: the chunked, cached path equals the in-memory one,
FB15k-237 gets the ids a plain first-appearance numbering gives, names live in one buffer, and bad
input (a bad line far into a file, an id past the count, a damaged cache, a Freebase count that
disagrees with its lines) is one clear error naming where."""

from pathlib import Path

import numpy as np
import pytest

from distgraph.errors import InputError
from distgraph.kge.data import names as names_mod
from distgraph.kge.data import store, text, triples
from distgraph.kge.data.formats import load_dataset, read_dict, write_dict
from distgraph.kge.data.names import Names, Numbering
from distgraph.kge import prepare
from distgraph.kge.prepare import _repeated_rows, data_warnings

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _udd(root: Path, n_ent: int = 50, n_rel: int = 7, n: int = 3000, seed: int = 0) -> list[str]:
    """A udd_hrt graph with a blank line and a trailing TAB in the training file."""
    gen = np.random.default_rng(seed)
    write_dict(root / "e.tsv", [f"ent {i}" for i in range(n_ent)])
    write_dict(root / "r.tsv", [f"/rel/{i}" for i in range(n_rel)])
    for name, rows in (("train.tsv", n), ("valid.tsv", n // 10), ("test.tsv", n // 10)):
        t = np.stack([gen.integers(0, n_ent, rows), gen.integers(0, n_rel, rows), gen.integers(0, n_ent, rows)], 1)
        lines = ["\t".join(map(str, row)) for row in t.tolist()]
        if name == "train.tsv":
            lines[5] += "\t"
            lines.insert(100, "")
        (root / name).write_text("\n".join(lines) + "\n")
    return ["e.tsv", "r.tsv", "train.tsv", "valid.tsv", "test.tsv"]


def _chunked(monkeypatch, chunk: int = 97) -> None:
    """Tiny chunks, and every input big enough to go to the cache."""
    monkeypatch.setattr(text, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(store, "MEMORY_BYTES", 0)


def _same(a, b) -> None:
    assert list(a.entities) == list(b.entities) and list(a.relations) == list(b.relations)
    for x, y in ((a.train, b.train), (a.valid, b.valid), (a.test, b.test), (a.importance, b.importance)):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)
            assert x.dtype == y.dtype


def test_chunked_cached_udd_load_equals_the_in_memory_one(tmp_path, monkeypatch):
    files = _udd(tmp_path)
    whole = load_dataset(tmp_path, "kg", "udd_hrt", files)
    assert whole.train.dtype == np.int32 and len(whole.train) == 3000 and whole.n_entities == 50
    _chunked(monkeypatch)
    parsed = load_dataset(tmp_path, "kg", "udd_hrt", files)
    assert isinstance(parsed.train, np.memmap) and len(list((tmp_path / ".distgraph-cache").iterdir())) == 1
    _same(parsed, whole)
    monkeypatch.setattr(triples, "_read_ids", lambda *a: pytest.fail("the cache was not reused"))
    _same(load_dataset(tmp_path, "kg", "udd_hrt", files), whole)


def test_chunked_named_load_with_importance_equals_the_in_memory_one(tmp_path, monkeypatch):
    gen = np.random.default_rng(1)
    rows = [(f"e{h}", f"r{r}", f"e{t}", f"{w:.3f}") for h, r, t, w in
            zip(gen.integers(0, 40, 2000), gen.integers(0, 5, 2000), gen.integers(0, 40, 2000), gen.random(2000))]
    (tmp_path / "tr.txt").write_text("".join("\t".join(r) + "\n" for r in rows))
    (tmp_path / "va.txt").write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t, _ in rows[:50]))
    args = (tmp_path, "kg", "raw_udd_hrt", ["tr.txt", "va.txt", "va.txt"])
    whole = load_dataset(*args, with_importance=True)
    np.testing.assert_allclose(whole.importance, [float(r[3]) for r in rows], rtol=1e-6)
    _chunked(monkeypatch, 61)
    _same(load_dataset(*args, with_importance=True), whole)
    _same(load_dataset(*args, with_importance=True), whole)  # from the cache


def _reference(root: Path) -> tuple[list, list, list]:
    """DGL-KE's numbering in plain Python: entities by first appearance over (head, tail) row by row,
    train then valid then test; relations likewise."""
    splits = [[line.split("\t") for line in (root / f"{s}.txt").read_text().splitlines() if line.strip()]
              for s in ("train", "valid", "test")]
    ents, rels = {}, {}
    for rows in splits:
        for h, r, t in rows:
            ents.setdefault(h, len(ents))
            ents.setdefault(t, len(ents))
            rels.setdefault(r, len(rels))
    arrays = [np.array([[ents[h], rels[r], ents[t]] for h, r, t in rows]) for rows in splits]
    return list(ents), list(rels), arrays


def test_fb15k237_gets_the_ids_of_first_appearance(monkeypatch):
    if not (SHARED / "FB15k-237" / "train.txt").is_file():
        pytest.skip(f"{SHARED / 'FB15k-237'} is not available")
    ents, rels, arrays = _reference(SHARED / "FB15k-237")
    for chunk in (text.CHUNK_BYTES, 1 << 20):  # one chunk per file, and several
        monkeypatch.setattr(text, "CHUNK_BYTES", chunk)
        data = load_dataset(SHARED, "FB15k-237")
        assert list(data.entities) == ents and list(data.relations) == rels
        for got, want in zip((data.train, data.valid, data.test), arrays):
            np.testing.assert_array_equal(got, want)


def test_a_bad_line_far_into_a_file_is_named_from_its_own_chunk(tmp_path, monkeypatch):
    write_dict(tmp_path / "e", [str(i) for i in range(100)])
    write_dict(tmp_path / "r", ["r"])
    lines = [f"{i % 100}\t0\t{(i * 7) % 100}" for i in range(200_000)]
    lines[1499] = "3\t0\tx"
    (tmp_path / "t").write_text("\n".join(lines) + "\n")
    _chunked(monkeypatch, 4096)
    read = []
    real = triples.chunks

    def counted(path, what):
        for chunk in real(path, what):
            read.append(chunk)
            yield chunk

    monkeypatch.setattr(triples, "chunks", counted)
    with pytest.raises(InputError, match=r"t line 1500: entity id 'x' is not an integer"):
        load_dataset(tmp_path, "kg", "udd_hrt", ["e", "r", "t"])
    assert len(read) <= 1500 * 9 // 4096 + 2  # the chunks up to the bad line, not the 200,000 lines
    assert not list((tmp_path / ".distgraph-cache").iterdir())  # nor the files it was writing


@pytest.mark.parametrize("line, match", [
    ("1\t0\t7", r"t line 3: entity id 7 is outside \[0, 5\) given by the entity dictionary"),
    ("1\t2\t3", r"t line 3: relation id 2 is outside \[0, 2\) given by the relation dictionary"),
    ("-1\t0\t3", r"t line 3: entity id -1 is outside \[0, 5\)"),
    ("99999999999999999999\t0\t3", r"t line 3: entity id 99999999999999999999 is outside \[0, 5\)"),
    ("1\t0\t3\t4", r"t line 3: expected 3 TAB-separated fields in a triple file, found 4"),
    ("1\t0", r"t line 3: expected 3 TAB-separated fields in a triple file, found 2"),
])
def test_bad_ids_are_one_line_naming_the_line(tmp_path, line, match):
    write_dict(tmp_path / "e", list("abcde"))
    write_dict(tmp_path / "r", ["x", "y"])
    (tmp_path / "t").write_text(f"0\t0\t1\n\n{line}\n2\t1\t4\n")
    with pytest.raises(InputError, match=match):
        load_dataset(tmp_path, "kg", "udd_hrt", ["e", "r", "t"])


def test_a_damaged_cache_is_refused_clearly(tmp_path, monkeypatch):
    files = _udd(tmp_path)
    _chunked(monkeypatch)
    load_dataset(tmp_path, "kg", "udd_hrt", files)
    (folder,) = (tmp_path / ".distgraph-cache").iterdir()
    npy = folder / "split0.npy"
    npy.write_bytes(npy.read_bytes()[:-100])
    with pytest.raises(InputError, match=r"split0\.npy holds [\d,]+ bytes where the cache recorded [\d,]+: the cache "
                                         r"folder is damaged \(truncated\?\); delete .* and load again"):
        load_dataset(tmp_path, "kg", "udd_hrt", files)
    (folder / "meta.json").write_text("{")
    with pytest.raises(InputError, match="meta.json is not readable: the cache folder is damaged"):
        load_dataset(tmp_path, "kg", "udd_hrt", files)


def test_an_edited_input_is_parsed_again_and_an_unwritable_data_path_uses_a_temporary_folder(tmp_path, monkeypatch):
    files = _udd(tmp_path)
    _chunked(monkeypatch)
    first = load_dataset(tmp_path, "kg", "udd_hrt", files)
    (tmp_path / "test.tsv").write_text("1\t2\t3\n")
    assert load_dataset(tmp_path, "kg", "udd_hrt", files).test.tolist() == [[1, 2, 3]]
    assert len(list((tmp_path / ".distgraph-cache").iterdir())) == 2
    (tmp_path / "a_file").write_text("")
    monkeypatch.setattr(store, "CACHE_DIR", "a_file/cache")  # mkdir fails there, as in a read-only folder
    again = load_dataset(tmp_path, "kg", "udd_hrt", files)
    np.testing.assert_array_equal(again.train, first.train)
    assert not Path(again.train.filename).exists()  # the temporary folder is gone; the mapping stays


def _freebase(root: Path, n_ent: int, n_rel: int, rel_lines: int) -> None:
    fb = root / "Freebase"
    fb.mkdir(parents=True)
    (fb / "entity2id.txt").write_text(f"{n_ent}\n" + "".join(f"m.{i}\t{i}\n" for i in range(n_ent)))
    (fb / "relation2id.txt").write_text(f"{n_rel}\n" + "".join(f"/r/{i}\t{i}\n" for i in range(rel_lines)))
    for name in ("train", "valid", "test"):
        (fb / f"{name}.txt").write_text("0\t1\t0\n2\t3\t1\n")  # head tail relation


def test_freebase_counts_come_from_its_dictionaries_and_must_agree_with_their_lines(tmp_path):
    _freebase(tmp_path / "ok", 4, 2, 2)
    data = load_dataset(tmp_path / "ok", "Freebase")
    assert (data.n_entities, data.n_relations) == (4, 2) and data.train.tolist() == [[0, 0, 1], [2, 1, 3]]
    assert data.entities[3] == "3" and list(data.relations) == ["0", "1"]
    _freebase(tmp_path / "more", 4, 2, 3)
    with pytest.raises(InputError, match=r"relation2id.txt line 1 gives 2 ids but 3 lines follow it"):
        load_dataset(tmp_path / "more", "Freebase")
    _freebase(tmp_path / "fewer", 4, 1, 1)
    with pytest.raises(InputError, match=r"train.txt line 2: relation id 1 is outside \[0, 1\) given by "
                                         r"relation2id.txt"):
        load_dataset(tmp_path / "fewer", "Freebase")


def test_names_are_one_buffer_with_offsets_and_looked_up_by_hash(tmp_path):
    words = ["a", "", "é", "long name with spaces, " * 3 + "end", "a b", "b"]
    n = Names.of(words)
    assert n == words and list(n[1:4]) == words[1:4] and n[-1] == "b" and len(n) == 6
    assert n.data.dtype == np.uint8 and n.offsets.tolist()[-1] == len("".join(words).encode())
    assert n.ids(["b", "é", "c", "", words[3]]).tolist() == [5, 2, -1, 1, 3]
    write_dict(tmp_path / "d", n[2:])  # (an empty name is a line "1<TAB>", which DGL-KE reads as one field)
    assert read_dict(tmp_path / "d") == words[2:] and (tmp_path / "d").read_text().startswith("0\té\n1\tlong")
    (tmp_path / "shuffled").write_text("2\tc\n0\ta\n1\tb\n")
    assert read_dict(tmp_path / "shuffled") == ["a", "b", "c"]


def test_a_dictionary_is_counted_at_load_and_its_names_read_when_used(tmp_path):
    write_dict(tmp_path / "e", [f"name{i}" for i in range(1000)])
    names = read_dict(tmp_path / "e")
    assert len(names) == 1000 and names._make is not None  # counted and checked, not read
    assert names[999] == "name999" and names._make is None
    later = read_dict(tmp_path / "e")
    (tmp_path / "e").write_text("0\ta\n")
    with pytest.raises(InputError, match="the dictionary now lists 1 names where it listed 1,000 when loaded"):
        later[0]


def test_names_sharing_a_hash_are_numbered_apart(tmp_path, monkeypatch):
    """With a first hash of two bits under the first seed, names collide: the numbering and the
    lookup notice (the second hash differs) and use the next seed."""
    real = names_mod.span_hashes

    def weak(buf, starts, ends, seed=names_mod.SEEDS[0]):
        h1, h2 = real(buf, starts, ends, seed)
        return (h1 & np.uint64(3) if seed == names_mod.SEEDS[0] else h1), h2

    monkeypatch.setattr(names_mod, "span_hashes", weak)
    (tmp_path / "t").write_text("".join(f"e{i}\tr{i % 3}\te{i + 1}\n" for i in range(30)))
    data = load_dataset(tmp_path, "kg", "raw_udd_hrt", ["t"])
    assert list(data.entities) == [f"e{i}" for i in range(31)] and list(data.relations) == ["r0", "r1", "r2"]
    assert data.entities.ids(["e5", "e30", "x"]).tolist() == [5, 30, -1]
    with pytest.raises(names_mod.HashCollision):
        Numbering().add(*_spans(["a", "b", "c", "d", "e"]))


def _spans(words: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = Names.of(words)
    return n.data, n.offsets[:-1], n.offsets[1:]


def test_repeated_triples_are_counted_a_share_of_heads_at_a_time(monkeypatch):
    gen = np.random.default_rng(2)
    t = np.stack([gen.integers(0, 30, 5000), gen.integers(0, 4, 5000), gen.integers(0, 30, 5000)], 1).astype(np.int32)
    want = len(t) - len({tuple(row) for row in t.tolist()})
    assert _repeated_rows(t, 30, 4) == want
    monkeypatch.setattr("distgraph.kge.prepare.KEY_ROWS", 700)
    monkeypatch.setattr(triples, "BLOCK_ROWS", 300)
    assert _repeated_rows(t, 30, 4) == want
    assert _repeated_rows(t, 3 * 10 ** 17, 4) == want  # a sort by (h, r) then t: h * r * t needs more than 63 bits


def test_passes_over_cached_triples_read_the_file_not_its_mapping(tmp_path, monkeypatch):
    """The loader's cached triples are mapped; a whole-array pass (the data's warnings) reads them
    by positioned reads instead, so no page of the mapping is left resident (4 GB at Freebase's
    size): the blocks are arrays of their own with the mapped rows' values."""
    files = _udd(tmp_path)
    _chunked(monkeypatch)
    data = load_dataset(tmp_path, "kg", "udd_hrt", files)
    assert isinstance(data.train, np.memmap)
    monkeypatch.setattr(triples, "BLOCK_ROWS", 700)
    blocks = list(triples.row_blocks(data.train, 700))
    assert len(blocks) == -(-len(data.train) // 700)
    assert not any(isinstance(b, np.memmap) or np.shares_memory(b, data.train) for b in blocks)
    np.testing.assert_array_equal(np.concatenate(blocks), np.asarray(data.train))


def test_the_data_warnings_of_cached_files_are_kept_with_them(tmp_path, monkeypatch):
    """The checks behind the data's warnings (a pass and a sort over every triple) run once per
    cached input: a later load reads their lines from the cache folder; an edited input is checked again."""
    files = _udd(tmp_path)
    once = (tmp_path / "train.tsv").read_text()
    (tmp_path / "train.tsv").write_text(once * 2)  # every triple at least twice
    _chunked(monkeypatch)
    first = data_warnings(load_dataset(tmp_path, "kg", "udd_hrt", files))
    assert [line for line in first if "of the 6,000 training triples repeat" in line], first
    with monkeypatch.context() as m:
        m.setattr(prepare, "_data_warnings", lambda data: pytest.fail("the kept warnings were not used"))
        assert data_warnings(load_dataset(tmp_path, "kg", "udd_hrt", files)) == first
    (tmp_path / "train.tsv").write_text(once)
    edited = load_dataset(tmp_path, "kg", "udd_hrt", files)
    assert data_warnings(edited) == prepare._data_warnings(edited) != first


@pytest.mark.parametrize("fmt, files", [("udd_hrt", ["e", "r", "t"]), ("raw_udd_hrt", ["t"])])
def test_an_importance_that_is_not_a_number_names_its_line(tmp_path, fmt, files):
    write_dict(tmp_path / "e", ["0", "1"])
    write_dict(tmp_path / "r", ["0"])
    (tmp_path / "t").write_text("0\t0\t1\t0.5\n\n1\t0\t0\t1e-3\n1\t0\t1\thigh\n0\t0\t0\t2\n")
    with pytest.raises(InputError, match=r"t line 4: with --has_edge_importance the 4th column must be a number "
                                         r"\(the triple's importance\), found 'high'"):
        load_dataset(tmp_path, "kg", fmt, files, with_importance=True)
    (tmp_path / "t").write_text("0\t0\t1\t0.5\n\n1\t0\t0\t1e-3\n")
    assert load_dataset(tmp_path, "kg", fmt, files, with_importance=True).importance.tolist() == \
        pytest.approx([0.5, 1e-3])
