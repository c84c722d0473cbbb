"""`distgraph generate kg`: exact sizes, ids in range, both DGL-KE layouts readable by `load_dataset`,
seeded output, a Freebase-like shape, and one clear error for bad arguments."""

import re

import numpy as np
import pytest

from distgraph.cli.main import main
from distgraph.errors import InputError
from distgraph.kge.data.formats import load_dataset
from distgraph.kge.data.generate import generate_kg

UDD_FILES = ["entities.dict", "relations.dict", "train.txt", "valid.txt", "test.txt"]


def _udd(path):
    return load_dataset(path, "kg", "udd_hrt", UDD_FILES)


@pytest.mark.parametrize("sizes", [(3, 1, 3, 1, 1), (60, 7, 500, 11, 13), (700, 30, 5000, 50, 40)])
def test_counts_ids_and_both_layouts_agree(tmp_path, sizes):
    n, r, t, v, s = sizes
    udd = generate_kg(tmp_path / "udd", n, r, t, "udd_hrt", v, s, seed=3, chunk_triples=1000, progress=False)
    fb = generate_kg(tmp_path / "fb", n, r, t, "freebase", v, s, seed=3, chunk_triples=1000, progress=False)
    assert udd == tmp_path / "udd" and fb == tmp_path / "fb" / "Freebase"
    a, b = _udd(udd), load_dataset(tmp_path / "fb", "Freebase", "built_in")
    assert (a.n_entities, a.n_relations, len(a.train), len(a.valid), len(a.test)) == (n, r, t, v, s)
    assert (b.n_entities, b.n_relations) == (n, r)
    for x, y in ((a.train, b.train), (a.valid, b.valid), (a.test, b.test)):
        np.testing.assert_array_equal(x, y)
        assert x[:, [0, 2]].min() >= 0 and x[:, [0, 2]].max() < n and x[:, 1].min() >= 0 and x[:, 1].max() < r
        assert (x[:, 0] != x[:, 2]).all()  # no self-loops
    assert np.bincount(a.train[:, 1], minlength=r).min() >= 1  # every relation is trained
    held = {tuple(x) for x in np.concatenate([a.valid, a.test]).tolist()}
    assert len(held) == v + s and not held & {tuple(x) for x in a.train.tolist()}
    assert a.entities[:2] == ["e0", "e1"] and a.relations[0] == "r0"
    lines = (fb / "entity2id.txt").read_text().splitlines()
    assert lines[0] == str(n) and lines[1:3] == ["e0\t0", "e1\t1"][:n]
    assert (fb / "train.txt").read_text().splitlines()[0] == "\t".join(map(str, a.train[0, [0, 2, 1]]))


def test_the_same_seed_gives_the_same_files_and_another_seed_others(tmp_path):
    paths = [generate_kg(tmp_path / name, 300, 9, 3000, "udd_hrt", seed=seed, chunk_triples=700, progress=False)
             for name, seed in (("a", 5), ("b", 5), ("c", 6))]
    for name in UDD_FILES:
        assert (paths[0] / name).read_bytes() == (paths[1] / name).read_bytes()
    assert (paths[0] / "train.txt").read_bytes() != (paths[2] / "train.txt").read_bytes()


def test_skewed_relations_and_heavy_tailed_degrees(tmp_path):
    data = _udd(generate_kg(tmp_path / "kg", 5000, 100, 100_000, "udd_hrt", progress=False))
    per_relation = np.bincount(data.train[:, 1], minlength=100)
    assert per_relation.max() > 20 * np.median(per_relation)
    degree = np.bincount(data.train[:, [0, 2]].ravel(), minlength=5000)
    assert degree.max() > 10 * degree.mean() and (degree == 0).mean() < 0.01
    assert len(np.unique(data.train, axis=0)) > 0.99 * len(data.train)


def test_the_command_line_writes_where_it_says(tmp_path, capsys):
    assert main(["generate", "kg", "--num_entities", "40", "--num_relations", "3", "--num_triples", "200",
                 "--out", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    assert f"--dataset Freebase --data_path {tmp_path / 'data'}" in out
    assert load_dataset(tmp_path / "data", "Freebase").valid.shape == (2, 3)  # default: 1 % of the triples
    assert main(["generate", "kg", "--num_entities", "40", "--num_relations", "3", "--num_triples", "200",
                 "--out", str(tmp_path / "x" / "Freebase")]) == 0  # a folder named Freebase is used as is
    assert (tmp_path / "x" / "Freebase" / "entity2id.txt").is_file()
    assert main(["generate", "kg", "--num_entities", "40", "--num_relations", "3", "--num_triples", "200",
                 "--format", "udd_hrt", "--num_valid", "5", "--out", str(tmp_path / "u")]) == 0
    assert "--data_files entities.dict relations.dict train.txt valid.txt test.txt" in capsys.readouterr().out
    assert len(_udd(tmp_path / "u").valid) == 5


@pytest.mark.parametrize("args, message", [
    (["--num_entities", "0"], "needs 2 <= num_entities < 2\\*\\*31 and num_relations >= 1, got 0 entities"),
    (["--num_relations", "30", "--num_triples", "20"], "needs num_triples >= num_relations .* got 20 triples for 30"),
    (["--num_test", "0"], "needs num_valid, num_test >= 1"),
    (["--out", "{tmp}/file"], "--out .*file is an existing file; pass a folder"),
    (["--out", "{tmp}/full", "--format", "udd_hrt"], "full is not empty; give a new folder"),
])
def test_bad_arguments_give_one_clear_error(tmp_path, capsys, args, message):
    (tmp_path / "file").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "train.txt").write_text("0\t0\t1\n")
    base = {"--num_entities": "50", "--num_relations": "3", "--num_triples": "100", "--out": str(tmp_path / "o")}
    base.update(dict(zip(args[::2], (a.format(tmp=tmp_path) for a in args[1::2]))))
    assert main(["generate", "kg", *[x for kv in base.items() for x in kv]]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("distgraph generate: error: ")
    assert re.search(message, err), err
    assert not (tmp_path / "o").exists()


def test_not_enough_disk_is_said_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr("distgraph.files.free_bytes", lambda path: 1000)
    with pytest.raises(InputError, match=r"the knowledge graph needs about 0.0 GiB of disk .* 0.0 GiB are free"):
        generate_kg(tmp_path / "kg", 500, 5, 2000, "udd_hrt", progress=False)
    assert not (tmp_path / "kg").exists()


def test_an_interrupted_run_leaves_no_files(tmp_path, monkeypatch):
    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("distgraph.kge.data.generate._train_chunk", interrupt)
    with pytest.raises(KeyboardInterrupt):
        generate_kg(tmp_path / "kg", 500, 5, 2000, "udd_hrt", progress=False)
    assert not (tmp_path / "kg").exists()
