"""A saved model's original-id tables (entities.parquet, relations.parquet), and `kge predict` /
`kge emb-sim` (DGL-KE's dglke_predict / dglke_emb_sim): every format and execution mode against
scores computed here from the saved tables, names with --raw_data, the planted answers found,
and clear errors."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow.parquet as pq
import pytest

from distgraph.cli import main as cli_main
from distgraph.kge import TrainConfig, train_kge

from test_kge_train import planted_pairs


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A TransE_l2 model trained on the planted pairs: its folder."""
    root = tmp_path_factory.mktemp("kg")
    files = planted_pairs(root)
    train_kge(TrainConfig(model_name="TransE_l2", dataset="planted", data_path=str(root), format="raw_udd_hrt",
                          data_files=files, hidden_dim=32, gamma=4.0, lr=0.3, batch_size=256, neg_sample_size=32,
                          max_step=300, log_interval=1000, neg_adversarial_sampling=True,
                          save_path=str(root / "ckpts")))
    return root / "ckpts" / "TransE_l2_planted_0"


def _tables(model):
    ent = np.load(model / "planted_TransE_l2_entity.npy")
    rel = np.load(model / "planted_TransE_l2_relation.npy")
    names = [line.split("\t")[1] for line in (model / "entities.dict").read_text().splitlines()]
    rels = [line.split("\t")[1] for line in (model / "relations.dict").read_text().splitlines()]
    return ent, rel, names, rels


def _run(*argv) -> int:
    return cli_main.main([str(a) for a in argv])


def _read(path) -> tuple[list[str], list[list[str]]]:
    lines = path.read_text().splitlines()
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


def _write(path, items) -> str:
    path.write_text("".join(f"{x}\n" for x in items))
    return str(path)


def _best(scores: dict, k: int) -> list:
    """The k best of {key: score}, ties by key (the flat index order)."""
    return sorted(scores, key=lambda key: (-scores[key], key))[:k]


def test_entity_and_relation_tables_hold_names_and_embeddings(model):
    ent, rel, names, rels = _tables(model)
    e = pq.read_table(model / "entities.parquet")
    assert e.column_names == ["id", "name", "emb"] and e.num_rows == len(names) == 300
    assert e.column("id").to_pylist() == list(range(300)) and e.column("name").to_pylist() == names
    np.testing.assert_array_equal(np.stack(e.column("emb").to_numpy(zero_copy_only=False)), ent)
    r = pq.read_table(model / "relations.parquet")
    assert r.column("name").to_pylist() == rels and sorted(rels) == ["back", "to"]
    np.testing.assert_array_equal(np.stack(r.column("emb").to_numpy(zero_copy_only=False)), rel)


@pytest.mark.parametrize("mode", ["all", "batch_head", "batch_rel", "batch_tail", "triplet_wise"])
def test_predict_modes_against_scores_computed_here(model, tmp_path, mode):
    ent, rel, _, _ = _tables(model)
    heads, rels, tails = [5, 17, 42, 5], [1, 0, 1, 1], [7, 99, 123, 250]
    files = [_write(tmp_path / f"{x}.list", ids) for x, ids in (("h", heads), ("r", rels), ("t", tails))]
    k = 3
    assert _run("kge", "predict", "--model_path", model, "--format", "h_r_t", "--data_files", *files,
                "--exec_mode", mode, "--topK", k, "--output", tmp_path / "out.tsv") == 0
    header, rows = _read(tmp_path / "out.tsv")
    assert header == ["head", "rel", "tail", "score"]

    def score(h, r, t):  # --score_func none: -||h + r - t|| (no margin)
        return -float(np.linalg.norm(ent[h] + rel[r] - ent[t]))

    if mode == "triplet_wise":
        want = [(heads[i], rels[i], tails[i]) for i in _best({i: score(heads[i], rels[i], tails[i])
                                                              for i in range(4)}, k)]
    else:
        combos = {(a, b, c): score(heads[a], rels[b], tails[c]) for a, b, c in itertools.product(range(4), repeat=3)}
        groups = {"all": lambda key: 0, "batch_head": lambda key: key[0], "batch_rel": lambda key: key[1],
                  "batch_tail": lambda key: key[2]}[mode]
        want = []
        for g in sorted({groups(key) for key in combos}):
            mine = {key: s for key, s in combos.items() if groups(key) == g}
            want += [(heads[a], rels[b], tails[c]) for a, b, c in _best(mine, k)]  # ties: list positions
    got = [tuple(int(x) for x in row[:3]) for row in rows]
    assert got == want
    for row in rows:
        assert float(row[3]) == pytest.approx(score(*(int(x) for x in row[:3])), abs=1e-4)


def test_predict_finds_the_planted_tails_by_name(model, tmp_path):
    """The test triples (t, back, h) invert training triples: asked for the best tail of each
    test head with 'back', the model names the planted partner."""
    test = [line.split("\t") for line in (model.parents[1] / "test.txt").read_text().splitlines()]
    heads = _write(tmp_path / "heads.list", [h for h, _, _ in test])
    rels = _write(tmp_path / "rels.list", ["back"])
    assert _run("kge", "predict", "--model_path", model, "--format", "h_r_*", "--data_files", heads, rels,
                "--raw_data", "--exec_mode", "batch_head", "--topK", 1, "--score_func", "logsigmoid",
                "--output", tmp_path / "out.tsv") == 0
    _, rows = _read(tmp_path / "out.tsv")
    assert [r[0] for r in rows] == [h for h, _, _ in test] and {r[1] for r in rows} == {"back"}
    hits = sum(row[2] == t for row, (_, _, t) in zip(rows, test))
    assert hits >= 0.8 * len(test), hits
    assert all(float(r[3]) < 0 for r in rows)  # log(sigmoid(.)) of a score with its margin


def test_emb_sim_modes_and_functions(model, tmp_path):
    ent, _, names, _ = _tables(model)
    emb = str(model / "planted_TransE_l2_entity.npy")
    left = _write(tmp_path / "l.list", [3, 77, 150])
    assert _run("kge", "emb-sim", "--emb_file", emb, "--format", "l_*", "--data_files", left, "--exec_mode",
                "batch_left", "--sim_func", "l2", "--topK", 4, "--output", tmp_path / "out.tsv") == 0
    header, rows = _read(tmp_path / "out.tsv")
    assert header == ["left", "right", "score"] and len(rows) == 12
    for i, x in enumerate((3, 77, 150)):
        dist = -np.linalg.norm(ent - ent[x], axis=1)
        want = sorted(range(len(ent)), key=lambda j: (-dist[j], j))[:4]
        assert [int(r[1]) for r in rows[4 * i:4 * i + 4]] == want and int(rows[4 * i][0]) == x
        assert float(rows[4 * i][2]) == 0.0  # itself first, exactly
    right = _write(tmp_path / "r.list", [10, 11, 12])
    for func, sim in {"cosine": lambda a, b: a @ b / np.linalg.norm(a) / np.linalg.norm(b),
                      "dot": lambda a, b: a @ b, "l1": lambda a, b: -np.abs(a - b).sum(),
                      "ext_jaccard": lambda a, b: a @ b / (a @ a + b @ b - a @ b)}.items():
        assert _run("kge", "emb-sim", "--emb_file", emb, "--format", "l_r", "--data_files", left, right,
                    "--sim_func", func, "--topK", 5, "--output", tmp_path / "all.tsv") == 0
        _, rows = _read(tmp_path / "all.tsv")
        pairs = {(a, b): sim(ent[a], ent[b]) for a in (3, 77, 150) for b in (10, 11, 12)}
        assert [(int(r[0]), int(r[1])) for r in rows] == sorted(pairs, key=lambda p: -pairs[p])[:5], func
        assert [float(r[2]) for r in rows] == pytest.approx(sorted(pairs.values(), reverse=True)[:5], rel=1e-4)
    assert _run("kge", "emb-sim", "--emb_file", emb, "--format", "l_r", "--data_files", left, right,
                "--exec_mode", "pairwise", "--topK", 2, "--output", tmp_path / "pw.tsv") == 0
    _, rows = _read(tmp_path / "pw.tsv")
    assert {(int(r[0]), int(r[1])) for r in rows} <= {(3, 10), (77, 11), (150, 12)} and len(rows) == 2
    raw = _write(tmp_path / "raw.list", [names[3]])
    assert _run("kge", "emb-sim", "--emb_file", emb, "--format", "l_*", "--data_files", raw, "--raw_data",
                "--mfile", model / "entities.dict", "--exec_mode", "batch_left", "--topK", 1,
                "--output", tmp_path / "raw.tsv") == 0
    assert _read(tmp_path / "raw.tsv")[1][0][:2] == [names[3], names[3]]


def test_errors_name_the_flag(model, tmp_path, capsys):
    heads = _write(tmp_path / "h.list", [1, 2])
    cases = [
        (["predict", "--model_path", model, "--format", "h_x_t", "--data_files", heads], "--format 'h_x_t' is not"),
        (["predict", "--model_path", model, "--format", "h_r_t", "--data_files", heads],
         "reads 3 list(s) (h, r, t) but --data_files names 1"),
        (["predict", "--model_path", model, "--format", "h_*_*", "--data_files", heads, "--exec_mode", "bogus"],
         "--exec_mode 'bogus'"),
        (["predict", "--model_path", model, "--format", "h_*_*", "--data_files", _write(tmp_path / "x", [300])],
         "head entity id 300 is outside [0, 300)"),
        (["predict", "--model_path", model, "--format", "h_*_*", "--data_files", _write(tmp_path / "y", ["nope"]),
          "--raw_data"], "'nope' is not a head entity"),
        (["predict", "--model_path", tmp_path, "--format", "h_*_*", "--data_files", heads], "config.json does not"),
        (["emb-sim", "--emb_file", tmp_path / "none.npy", "--format", "*"], "does not exist"),
        (["emb-sim", "--emb_file", model / "entities.dict", "--format", "*", "--raw_data"], "needs the id mapping"),
        (["emb-sim", "--emb_file", "e.npy", "--format", "l_*", "--data_files", heads, "--exec_mode", "pairwise"],
         "use --format l_r"),
        (["emb-sim", "--emb_file", "e.npy", "--format", "*", "--gpu", "0"], "runs on the CPU"),
    ]
    for argv, message in cases:
        assert _run("kge", *argv) == 2, argv
        assert message in capsys.readouterr().err, argv
