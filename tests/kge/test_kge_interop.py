"""Model folders move between distgraph and DGL-KE 0.1.2 both ways.

DGL-KE -> distgraph: a folder laid out as `dglke_train` 0.1.2 writes it (its config.json keys,
`<dataset>_<model>_entity.npy` named after `--model_name` as given, `entities.tsv` /
`relations.tsv` beside the raw_udd data, numbered by first appearance) is read by `kge predict`,
`kge emb-sim` and `kge eval` without extra flags, with the scores and metrics of the same tables
in a distgraph folder. distgraph -> DGL-KE: a trained folder is parsed as DGL-KE's loaders parse
one (`dglke_predict`'s ScoreInfer, `dglke_emb_sim`'s mapping file, `dglke_eval`'s file names and
numbering of the data), and scored as DGL-KE scores it. Where the DGL-KE 0.1.2 peer is installed
(shared/peers/kge/run_dglke.sh's venv), the real `dglke_train` and `dglke_predict` run too.
`kge emb-sim` refuses tables with non-finite rows in every execution mode.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from distgraph.cli import main as cli_main
from distgraph.kge import TrainConfig, train_kge
from distgraph.kge.saved_model import save_model

FILES = ["train.txt", "valid.txt", "test.txt"]
DGLKE_CONFIG_KEYS = ["dataset", "model", "emb_size", "max_train_step", "batch_size", "neg_sample_size", "lr", "gamma",
                     "double_ent", "double_rel", "neg_adversarial_sampling", "adversarial_temperature",
                     "regularization_coef", "regularization_norm", "emap_file", "rmap_file"]  # utils.save_model, 0.1.2
PEERS = Path(__file__).resolve().parents[2].parent / "shared" / "peers" / "kge"
PEER_VENV = Path(os.environ.get("ROOT", Path.home() / ".cache" / "distgraph-peers" / "kge")) / "venv_dglke38"


def _run(*argv) -> int:
    return cli_main.main([str(a) for a in argv])


def _rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines()]


def _write(path: Path, items) -> Path:
    path.write_text("".join(f"{x}\n" for x in items))
    return path


def _tiny_kg(data: Path, seed: int = 0) -> None:
    """A raw_udd_hrt dataset of 14 entities and 3 relations, names in no sorted order."""
    g = np.random.default_rng(seed)
    ents = [f"ent{x}" for x in g.permutation(100)[:14]]
    rels = ["likes", "has_part", "near"]
    triples = []
    while len(triples) < 48:
        h, t = g.choice(14, 2, replace=False)
        row = (ents[h], rels[g.integers(3)], ents[t])
        if row not in triples:
            triples.append(row)
    data.mkdir(parents=True, exist_ok=True)
    for name, part in zip(FILES, (triples[:36], triples[36:42], triples[42:])):
        (data / name).write_text("".join("\t".join(r) + "\n" for r in part))


def dglke_numbering(data: Path, files: list[str], delimiter: str = "\t") -> tuple[list[str], list[str]]:
    """Entity and relation names by id as DGL-KE 0.1.2's KGDatasetUDDRaw numbers raw_udd_hrt files:
    line by line over the files in order, the head, then the tail, then the relation, each on first sight."""
    ents, rels = {}, {}
    for name in files:
        for line in (data / name).read_text().splitlines():
            h, r, t = line.strip().split(delimiter)
            for table, key in ((ents, h), (ents, t), (rels, r)):
                table.setdefault(key, len(table))
    return list(ents), list(rels)


def write_dglke_model(work: Path, dataset: str, model: str, hidden: int, double_ent: bool, gamma: float,
                      seed: int = 1) -> tuple[Path, dict]:
    """`work/ckpts/<model>_<dataset>_0` and `work/data/entities.tsv` / `relations.tsv` as `dglke_train
    --data_path data --format raw_udd_hrt --save_path ckpts` 0.1.2 writes them: its tables and config."""
    data = work / "data"
    ents, rels = dglke_numbering(data, FILES)
    for fname, names in (("entities.tsv", ents), ("relations.tsv", rels)):
        (data / fname).write_text("".join(f"{i}\t{n}\n" for i, n in enumerate(names)))
    g = np.random.default_rng(seed)
    tables = {"entity": g.standard_normal((len(ents), hidden * (1 + double_ent))).astype(np.float32),
              "relation": g.standard_normal((len(rels), hidden)).astype(np.float32)}
    folder = work / "ckpts" / f"{model}_{dataset}_0"
    folder.mkdir(parents=True)
    for table, rows in tables.items():
        np.save(folder / f"{dataset}_{model}_{table}.npy", rows)
    conf = dict(dataset=dataset, model=model, emb_size=hidden, max_train_step=100, batch_size=16, neg_sample_size=4,
                lr=0.1, gamma=gamma, double_ent=double_ent, double_rel=False, neg_adversarial_sampling=False,
                adversarial_temperature=1.0, regularization_coef=0.0, regularization_norm=3, emap_file="entities.tsv",
                rmap_file="relations.tsv")
    assert list(conf) == DGLKE_CONFIG_KEYS
    (folder / "config.json").write_text(json.dumps(conf, indent=4))
    return folder, {"tables": tables, "entities": ents, "relations": rels}


@pytest.fixture(params=[("TransE", 4, False), ("RotatE", 4, True)], ids=["TransE", "RotatE"])
def both(request, tmp_path):
    """A DGL-KE folder (`--model_name TransE` names its files `tiny_TransE_*.npy`) and a distgraph
    folder holding the same tables and names."""
    model, hidden, de = request.param
    work = tmp_path / "work"
    _tiny_kg(work / "data")
    theirs, made = write_dglke_model(work, "tiny", model, hidden, de, gamma=6.0)
    cfg = TrainConfig(model_name=model, dataset="tiny", data_path=str(work / "data"), format="raw_udd_hrt",
                      data_files=FILES, hidden_dim=hidden, gamma=6.0, double_ent=de)
    ours = tmp_path / "ours"
    save_model(ours, cfg, made["tables"], made["entities"], made["relations"])
    return work, theirs, ours, made


def _predict(model_path: Path, out: Path, *extra) -> list[list[str]]:
    assert _run("kge", "predict", "--model_path", model_path, "--output", out, *extra) == 0
    return _rows(out)


def test_predict_reads_a_dglke_folder_as_its_own(both, tmp_path, monkeypatch):
    work, theirs, ours, made = both
    heads = _write(tmp_path / "h.list", [0, 5, 13])
    for fmt, files, mode in (("h_*_*", [heads], "batch_head"), ("h_r_*", [heads, _write(tmp_path / "r.list", [2, 0])],
                                                                 "all")):
        args = ["--format", fmt, "--data_files", *files, "--exec_mode", mode, "--topK", 4]
        assert _predict(theirs, tmp_path / "a.tsv", *args) == _predict(ours, tmp_path / "b.tsv", *args)
    # names in and out, found where DGL-KE keeps them: data/entities.tsv (its default --data_path) in the run's folder
    monkeypatch.chdir(work)
    names = _write(tmp_path / "hn.list", made["entities"][:3])
    args = ["--format", "h_*_*", "--data_files", names, "--raw_data", "--topK", 5, "--score_func", "logsigmoid"]
    got = _predict(theirs, tmp_path / "a.tsv", *args)
    assert got == _predict(ours, tmp_path / "b.tsv", *args) and len(got) == 6
    assert {r[0] for r in got[1:]} <= set(made["entities"][:3]) and {r[1] for r in got[1:]} <= set(made["relations"])


def test_a_dglke_folder_whose_names_are_elsewhere_names_the_paths_and_the_flags(both, tmp_path, monkeypatch, capsys):
    work, theirs, ours, made = both
    monkeypatch.chdir(tmp_path)  # not the run's folder: data/entities.tsv is not where the config says
    names = _write(tmp_path / "hn.list", made["entities"][:2])
    args = ["--format", "h_*_*", "--data_files", names, "--raw_data"]
    assert _run("kge", "predict", "--model_path", theirs, *args, "--output", tmp_path / "a.tsv") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"no entity names for the model in {theirs}: emap_file entities.tsv is not at " \
        f"{theirs}/entities.tsv, data/entities.tsv, data/tiny/entities.tsv; pass --entity_mfile" in err
    mfiles = ["--entity_mfile", work / "data" / "entities.tsv", "--rel_mfile", work / "data" / "relations.tsv"]
    assert _predict(theirs, tmp_path / "a.tsv", *args, *mfiles) == _predict(ours, tmp_path / "b.tsv", *args)
    assert _run("kge", "emb-sim", "--emb_file", next(theirs.glob("*_entity.npy")), "--format", "*", "--raw_data",
                "--output", tmp_path / "c.tsv") == 2
    assert "; pass --mfile" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["all", "batch_left", "pairwise"])
def test_emb_sim_names_a_dglke_tables_rows_without_mfile(both, tmp_path, monkeypatch, mode):
    work, theirs, ours, made = both
    monkeypatch.chdir(work)
    for table, names in (("entity", made["entities"]), ("relation", made["relations"])):
        left = _write(tmp_path / "l.list", names[:2])
        right = _write(tmp_path / "r.list", names[-2:])
        files = [left, right] if mode == "pairwise" else [left]
        args = ["--format", "l_r" if mode == "pairwise" else "l_*", "--data_files", *files, "--raw_data",
                "--exec_mode", mode, "--topK", 2, "--sim_func", "l2"]
        out = {}
        for name, folder in (("theirs", theirs), ("ours", ours)):
            emb = next(folder.glob(f"*_{table}.npy"))
            assert _run("kge", "emb-sim", "--emb_file", emb, *args, "--output", tmp_path / f"{name}.tsv") == 0
            out[name] = _rows(tmp_path / f"{name}.tsv")
        assert out["theirs"] == out["ours"] and out["theirs"][1][0] in names[:2], (table, out)


def test_eval_of_a_dglke_folder_reads_the_data_as_dglke_eval_does(both, tmp_path, monkeypatch, capsys):
    work, theirs, ours, made = both
    model = json.loads((theirs / "config.json").read_text())["model"]
    flags = ["--dataset", "tiny", "--format", "raw_udd_hrt", "--data_files", *FILES, "--model_name", model,
             "--hidden_dim", 4, "--gamma", 6.0, *(["-de"] if model == "RotatE" else [])]  # dglke_eval's command line
    monkeypatch.chdir(work)
    assert _run("kge", "eval", "--model_path", theirs, "--data_path", "data", *flags) == 0
    got = capsys.readouterr().out
    assert _run("kge", "eval", "--model_path", tmp_path / "ours") == 0  # the data settings from our config.json
    want = capsys.readouterr().out
    metrics = [line for line in want.splitlines() if line.startswith("Test average")]
    assert len(metrics) == 5 and metrics == [line for line in got.splitlines() if line.startswith("Test average")]
    monkeypatch.chdir(tmp_path)  # elsewhere, --data_path names the folder that holds entities.tsv
    assert _run("kge", "eval", "--model_path", theirs, "--data_path", work / "data", *flags) == 0
    assert metrics == [line for line in capsys.readouterr().out.splitlines() if line.startswith("Test average")]


def dglke_score_infer(model_path: Path) -> dict:
    """What DGL-KE 0.1.2's `dglke_predict` reads from --model_path (infer_score.main, ScoreInfer.load_model,
    InferModel.load_emb): config.json's keys and the two tables named from them."""
    config = json.loads((model_path / "config.json").read_text())
    model, dataset = config["model"], config["dataset"]
    hidden, de, dr = config["emb_size"], config["double_ent"], config["double_rel"]
    entity = np.load(os.path.join(model_path, dataset + "_" + model + "_entity.npy"))
    relation = np.load(os.path.join(model_path, dataset + "_" + model + "_relation.npy"))
    assert entity.shape[1] == hidden * (2 if de else 1) and relation.shape[1] == hidden * (2 if dr else 1)
    return dict(config=config, gamma=config["gamma"], entity=entity, relation=relation)


def dglke_mapping(path: Path) -> dict[int, str]:
    """A mapping file as `dglke_predict --entity_mfile` and `dglke_emb_sim --mfile` read it (utils.py)."""
    with open(path) as f:
        return {int(row[0]): row[1] for row in csv.reader(f, delimiter="\t")}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A folder `distgraph kge train` wrote, and its raw_udd data."""
    root = tmp_path_factory.mktemp("trained")
    _tiny_kg(root / "data")
    res = train_kge(TrainConfig(model_name="TransE_l2", dataset="tiny", data_path=str(root / "data"),
                                format="raw_udd_hrt", data_files=FILES, hidden_dim=8, gamma=5.0, lr=0.1, batch_size=16,
                                neg_sample_size=4, max_step=40, log_interval=1000, save_path=str(root / "ckpts")))
    return res.save_dir, root / "data"


def test_a_distgraph_folder_holds_what_dglke_loads(trained, tmp_path):
    folder, data = trained
    conf = json.loads((folder / "config.json").read_text())
    assert set(DGLKE_CONFIG_KEYS) <= set(conf)
    assert (conf["model"], conf["emb_size"], conf["max_train_step"]) == ("TransE_l2", 8, 40)
    assert (conf["model_name"], conf["hidden_dim"], conf["max_step"]) == ("TransE_l2", 8, 40)  # ours stay
    loaded = dglke_score_infer(folder)
    id2e, id2r = dglke_mapping(folder / conf["emap_file"]), dglke_mapping(folder / conf["rmap_file"])
    # dglke_eval --dataset tiny --model_name TransE_l2 numbers the data itself: its ids are our rows
    ents, rels = dglke_numbering(data, FILES)
    assert [id2e[i] for i in range(len(id2e))] == ents and [id2r[i] for i in range(len(id2r))] == rels
    assert loaded["entity"].shape == (len(ents), 8) and loaded["relation"].shape == (len(rels), 8)
    # dglke_emb_sim --emb_file <dataset>_<model>_entity.npy: a 2-D float table
    assert np.load(folder / "tiny_TransE_l2_entity.npy").dtype == np.float32
    # dglke_predict's scores (TransE_l2, --score_func none: gamma 0, -||h + r - t||) are ours
    heads = _write(tmp_path / "h.list", ents[:2])
    rows = _predict(folder, tmp_path / "p.tsv", "--format", "h_r_*", "--data_files", heads,
                    _write(tmp_path / "r.list", rels[:1]), "--raw_data", "--topK", 30)
    e2id, r2id = {v: k for k, v in id2e.items()}, {v: k for k, v in id2r.items()}
    want = {(h, rels[0], t): -float(np.linalg.norm(loaded["entity"][e2id[h]] + loaded["relation"][r2id[rels[0]]]
                                                   - loaded["entity"][e2id[t]])) for h in ents[:2] for t in ents}
    best = sorted(want, key=lambda k: -want[k])[:30]
    assert [tuple(r[:3]) for r in rows[1:]] == best
    assert [float(r[3]) for r in rows[1:]] == pytest.approx([want[k] for k in best], abs=1e-5)


def _peer(tool: str) -> Path:
    exe = PEER_VENV / "bin" / tool
    if not PEERS.is_dir() or not exe.is_file():
        pytest.skip(f"DGL-KE 0.1.2 is not installed ({exe}; shared/peers/kge/run_dglke.sh installs it)")
    return exe


def _peer_predict(model_path: Path, out: Path, *args) -> dict[tuple, float]:
    done = subprocess.run([str(_peer("dglke_predict")), "--model_path", str(model_path), "--output", str(out),
                           *map(str, args)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return {tuple(r[:3]): float(r[3]) for r in _rows(out)[1:]}


def _ours(model_path: Path, out: Path, *args) -> dict[tuple, float]:
    return {tuple(r[:3]): float(r[3]) for r in _predict(model_path, out, *args)[1:]}


def _triplets(folder: Path, ents: list, rels: list) -> list:
    """`predict` arguments scoring 6 given triples of names (`triplet_wise`: DGL-KE 0.1.2's other
    modes divide integer tensors with `/`, which its torch 1.6 refuses)."""
    n = 6
    heads, tails = [ents[i % len(ents)] for i in range(n)], [ents[(3 * i + 1) % len(ents)] for i in range(n)]
    return ["--format", "h_r_t", "--data_files", _write(folder / "h.list", heads),
            _write(folder / "r.list", [rels[i % len(rels)] for i in range(n)]), _write(folder / "t.list", tails),
            "--raw_data", "--topK", n, "--exec_mode", "triplet_wise"]


def test_real_dglke_predict_loads_a_distgraph_folder(trained, tmp_path):
    folder, data = trained
    ents, rels = dglke_numbering(data, FILES)
    args = [*_triplets(tmp_path, ents, rels), "--entity_mfile", folder / "entities.dict", "--rel_mfile",
            folder / "relations.dict"]
    theirs = _peer_predict(folder, tmp_path / "theirs.tsv", *args)
    ours = _ours(folder, tmp_path / "ours.tsv", *args)
    assert theirs.keys() == ours.keys() and all(theirs[k] == pytest.approx(ours[k], abs=1e-4) for k in ours)


def test_real_dglke_train_folder_runs_in_distgraph(tmp_path, monkeypatch):
    exe = _peer("dglke_train")
    _tiny_kg(tmp_path / "data")
    done = subprocess.run([str(exe), "--model_name", "TransE_l2", "--dataset", "tiny", "--data_path", "data",
                           "--format", "raw_udd_hrt", "--data_files", *FILES, "--hidden_dim", "8", "--gamma", "5",
                           "--lr", "0.1", "--batch_size", "16", "--neg_sample_size", "4", "--max_step", "20",
                           "--num_proc", "1", "--num_thread", "1", "--save_path", "ckpts"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    folder = tmp_path / "ckpts" / "TransE_l2_tiny_0"
    ents, rels = dglke_numbering(tmp_path / "data", FILES)
    args = _triplets(tmp_path, ents, rels)
    mfiles = ["--entity_mfile", tmp_path / "data" / "entities.tsv", "--rel_mfile", tmp_path / "data" / "relations.tsv"]
    theirs = _peer_predict(folder, tmp_path / "theirs.tsv", *args, *mfiles)
    monkeypatch.chdir(tmp_path)  # ours finds data/entities.tsv, as the config and DGL-KE's default --data_path say
    ours = _ours(folder, tmp_path / "ours.tsv", *args)
    assert theirs.keys() == ours.keys() and all(theirs[k] == pytest.approx(ours[k], abs=1e-4) for k in ours)


@pytest.mark.parametrize("mode", ["all", "batch_left", "pairwise"])
def test_emb_sim_refuses_non_finite_rows_in_every_mode(tmp_path, capsys, mode):
    emb = np.random.default_rng(0).standard_normal((12, 4)).astype(np.float32)
    emb[[2, 7, 9]] = [np.nan, np.inf, -np.inf, 0]
    np.save(tmp_path / "t.npy", emb)
    files = [_write(tmp_path / "l.list", [0, 2]), _write(tmp_path / "r.list", [1, 3])]
    fmt, files = ("l_r", files) if mode == "pairwise" else ("l_*", files[:1])
    assert _run("kge", "emb-sim", "--emb_file", tmp_path / "t.npy", "--format", fmt, "--data_files", *files,
                "--exec_mode", mode, "--output", tmp_path / "out.tsv") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--emb_file {tmp_path}/t.npy: 3 of the 12 rows of the t.npy table are not " \
                                   f"finite (NaN or infinite)" in err
    assert not (tmp_path / "out.tsv").exists()
