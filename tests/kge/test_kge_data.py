"""Triple formats, dictionaries, built-in dataset lookup and the errors bad input gives."""

import numpy as np
import pytest

from distgraph.errors import InputError
from distgraph.kge.data.formats import load_dataset, read_dict, write_dict

TRIPLES = [("a", "likes", "b"), ("b", "likes", "c"), ("c", "hates", "a"), ("d", "likes", "a")]


def _write(path, rows, order="hrt", delimiter="\t"):
    cols = {"h": 0, "r": 1, "t": 2}
    path.write_text("".join(delimiter.join(row[cols[k]] for k in order) + "\n" for row in rows))
    return path.name


@pytest.mark.parametrize("order", ["hrt", "htr", "rht", "rth", "thr", "trh"])
def test_raw_udd_column_orders_give_the_same_graph(tmp_path, order):
    files = [_write(tmp_path / f"{s}.{order}", rows, order)
             for s, rows in (("train", TRIPLES[:2]), ("valid", TRIPLES[2:3]), ("test", TRIPLES[3:]))]
    data = load_dataset(tmp_path, "toy", f"raw_udd_{order}", files)
    # ids in order of first appearance, heads and tails read row by row as DGL-KE numbers them
    assert data.entities == ["a", "b", "c", "d"]
    assert data.relations == ["likes", "hates"]
    np.testing.assert_array_equal(data.train, [[0, 0, 1], [1, 0, 2]])
    np.testing.assert_array_equal(data.valid, [[2, 1, 0]])
    np.testing.assert_array_equal(data.test, [[3, 0, 0]])


def test_raw_udd_train_only_and_other_delimiter(tmp_path):
    _write(tmp_path / "train.csv", TRIPLES, delimiter=",")
    data = load_dataset(tmp_path, "toy", "raw_udd_hrt", ["train.csv"], delimiter=",")
    assert (data.n_entities, data.n_relations, len(data.train)) == (4, 2, 4)
    assert data.valid is None and data.test is None


def test_blank_lines_crlf_and_trailing_tabs_are_ignored(tmp_path):
    (tmp_path / "train.txt").write_text("a\tr\tb\t\r\n\r\n  \nb\tr\tc\r\n")
    data = load_dataset(tmp_path, "toy", "raw_udd_hrt", ["train.txt"])
    np.testing.assert_array_equal(data.train, [[0, 0, 1], [1, 0, 2]])


def test_udd_ids_with_dictionaries(tmp_path):
    write_dict(tmp_path / "ents.tsv", ["a", "b", "c"])
    write_dict(tmp_path / "rels.tsv", ["r0", "r1"])
    (tmp_path / "train.tsv").write_text("0\t2\t1\n2\t0\t1\n")  # head tail rel
    data = load_dataset(tmp_path, "toy", "udd_htr", ["ents.tsv", "rels.tsv", "train.tsv"])
    assert data.entities == ["a", "b", "c"] and data.relations == ["r0", "r1"]
    np.testing.assert_array_equal(data.train, [[0, 1, 2], [2, 1, 0]])


def test_udd_out_of_range_and_non_integer_ids(tmp_path):
    write_dict(tmp_path / "e", ["a", "b"])
    write_dict(tmp_path / "r", ["r"])
    (tmp_path / "t1").write_text("0\t0\t1\n1\t0\t2\n")
    with pytest.raises(InputError, match=r"t1 line 2: entity id 2 is outside \[0, 2\)"):
        load_dataset(tmp_path, "toy", "udd_hrt", ["e", "r", "t1"])
    (tmp_path / "t2").write_text("0\tx\t1\n")
    with pytest.raises(InputError, match="t2 line 1: relation id 'x' is not an integer.*raw_udd"):
        load_dataset(tmp_path, "toy", "udd_hrt", ["e", "r", "t2"])


def test_builtin_uses_dictionaries_when_present(tmp_path):
    root = tmp_path / "FB15k"
    root.mkdir()
    write_dict(root / "entities.dict", ["c", "b", "a", "d"])
    write_dict(root / "relations.dict", ["hates", "likes"])
    for name, rows in (("train", TRIPLES[:2]), ("valid", TRIPLES[2:3]), ("test", TRIPLES[3:])):
        _write(root / f"{name}.txt", rows)
    data = load_dataset(tmp_path, "FB15k")
    np.testing.assert_array_equal(data.train, [[2, 1, 1], [1, 1, 0]])
    assert data.entities[0] == "c"


def test_builtin_without_dictionaries_numbers_names(tmp_path):
    root = tmp_path / "wn18"
    root.mkdir()
    for name in ("train", "valid", "test"):
        _write(root / f"{name}.txt", TRIPLES)
    data = load_dataset(tmp_path, "wn18")
    assert data.entities == ["a", "b", "c", "d"] and len(data.test) == 4


def test_builtin_missing_files_say_where_to_put_them(tmp_path):
    with pytest.raises(InputError) as err:
        load_dataset(tmp_path, "FB15k-237")
    msg = str(err.value)
    assert str(tmp_path / "FB15k-237") in msg and "train.txt" in msg and "network" in msg
    with pytest.raises(InputError, match="unknown built-in dataset 'FB16k'.*raw_udd_hrt"):
        load_dataset(tmp_path, "FB16k")


def test_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match=r"triple file .*nope\.txt does not exist"):
        load_dataset(tmp_path, "toy", "raw_udd_hrt", ["nope.txt"])


def test_line_with_two_fields_names_file_and_line(tmp_path):
    (tmp_path / "train.txt").write_text("a\tr\tb\n\nb\tc\nc\tr\td\n")
    with pytest.raises(InputError, match=r"train\.txt line 3: expected 3 TAB-separated fields.*found 2: 'b\\tc'"):
        load_dataset(tmp_path, "toy", "raw_udd_hrt", ["train.txt"])


def test_unknown_entity_in_later_file_with_fixed_dictionary(tmp_path):
    _write(tmp_path / "train.txt", TRIPLES)
    with pytest.raises(InputError, match="entity 'd' is not in the entity dictionary"):
        load_dataset(tmp_path, "toy", "raw_udd_hrt", ["train.txt"], entities=["a", "b", "c"],
                     relations=["likes", "hates"])


@pytest.mark.parametrize("fmt, files, match", [
    ("raw_udd_hrx", ["x"], "unknown --format 'raw_udd_hrx'"),
    ("csv", ["x"], "unknown --format 'csv'"),
    ("raw_udd_hrt", ["a", "b"], "needs --data_files TRAIN or TRAIN VALID TEST"),
    ("udd_hrt", ["a"], "needs --data_files ENTITIES RELATIONS TRAIN"),
])
def test_bad_format_or_file_count(tmp_path, fmt, files, match):
    with pytest.raises(InputError, match=match):
        load_dataset(tmp_path, "toy", fmt, files)


def test_dict_round_trip_and_bad_dict(tmp_path):
    write_dict(tmp_path / "d", ["x y", "z"])
    assert (tmp_path / "d").read_text() == "0\tx y\n1\tz\n"
    assert read_dict(tmp_path / "d") == ["x y", "z"]
    (tmp_path / "bad").write_text("0\tx\n0\ty\n")
    with pytest.raises(InputError, match="ids must be 0..1, each once"):
        read_dict(tmp_path / "bad")


def test_bad_line_is_found_past_lines_with_trailing_tabs(tmp_path):
    (tmp_path / "train.txt").write_text("a\tr\tb\t\nb\tr\tc\t\nc\td\n")
    with pytest.raises(InputError, match=r"train\.txt line 3: expected 3 .*found 2"):
        load_dataset(tmp_path, "toy", "raw_udd_hrt", ["train.txt"])


def test_encodings_directories_and_byte_order_marks(tmp_path):
    from distgraph.kge.data.formats import load_dataset

    (tmp_path / "bom.txt").write_bytes("\ufeffa\tr\tb\nb\tr\tc\n".encode("utf-8"))
    data = load_dataset(tmp_path, "x", "raw_udd_hrt", ["bom.txt"])
    assert data.entities == ["a", "b", "c"]  # the mark is not part of the first name
    (tmp_path / "latin.txt").write_bytes("a\tr\tb\ncaf\xe9\tr\tb\n".encode("latin1"))
    with pytest.raises(InputError, match=r"latin.txt line 2: the bytes .* are not UTF-8; convert the file"):
        load_dataset(tmp_path, "x", "raw_udd_hrt", ["latin.txt"])
    (tmp_path / "folder").mkdir()
    with pytest.raises(InputError, match="folder is a directory; give the file inside it"):
        load_dataset(tmp_path, "x", "raw_udd_hrt", ["folder"])


def test_edge_importance_is_the_fourth_column_of_the_training_file(tmp_path):
    from distgraph.kge.data.formats import load_dataset

    (tmp_path / "tr.txt").write_text("a\tr\tb\t0.5\nb\tr\tc\t2\n")
    (tmp_path / "va.txt").write_text("a\tr\tc\n")
    data = load_dataset(tmp_path, "x", "raw_udd_hrt", ["tr.txt", "va.txt", "va.txt"], with_importance=True)
    assert data.importance.tolist() == [0.5, 2.0] and data.train.shape == (2, 3)
    (tmp_path / "bad.txt").write_text("a\tr\tb\thigh\n")
    with pytest.raises(InputError, match="4th column must be a number"):
        load_dataset(tmp_path, "x", "raw_udd_hrt", ["bad.txt"], with_importance=True)
