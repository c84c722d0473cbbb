"""`distgraph kge train|eval|partition|dist-train` check their flags and input files before
torch is imported or any process starts: every bad input below is one clear error line and
exit code 2 from a process that never loaded torch, started no child and wrote nothing."""

import json
import subprocess
import sys

import numpy as np
import pytest

from distgraph.kge import TrainConfig
from distgraph.kge.data.formats import load_dataset
from distgraph.kge.saved_model import save_model

E, R = 60, 3

SCRIPT = """
import contextlib, io, json, sys
import psutil
from distgraph.cli.main import main
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    results.append([code, err.getvalue()])
print(json.dumps({"results": results, "torch": "torch" in sys.modules,
                  "children": len(psutil.Process().children(recursive=True))}))
"""


def _triples(rows) -> str:
    return "".join(f"e{h}\tr{r}\te{t}\n" for h, r, t in rows)


@pytest.fixture
def kg(tmp_path):
    """A raw_udd dataset of E entities, its id files, broken variants of them, and saved models."""
    rows = [(i % E, i % R, (i * 7 + 1) % E) for i in range(3 * E)]
    (tmp_path / "train.txt").write_text(_triples(rows))
    (tmp_path / "valid.txt").write_text(_triples(rows[:10]))
    (tmp_path / "test.txt").write_text(_triples(rows[10:20]))
    (tmp_path / "ragged.txt").write_text("e1\tr1\te2\ne3\tr1\ne4\tr1\te5\n")
    (tmp_path / "latin1.txt").write_bytes("e1\tr1\te2\ncaf\xe9\tr1\te3\n".encode("latin-1"))
    (tmp_path / "empty.txt").write_text("\n")
    (tmp_path / "adir").mkdir()
    (tmp_path / "ents.dict").write_text("".join(f"{i}\te{i}\n" for i in range(4)))
    (tmp_path / "rels.dict").write_text("0\tr0\n")
    (tmp_path / "ids_out.txt").write_text("0\t0\t1\n2\t0\t4\n")
    (tmp_path / "ids_text.txt").write_text("0\t0\t1\n2\t0\tx\n")
    (tmp_path / "a_file").write_text("not a folder\n")
    (tmp_path / "ip_config.txt").write_text("127.0.0.1 5000\n127.0.0.1 5010\n")
    data = load_dataset(tmp_path, "kg", "raw_udd_hrt", ["train.txt", "valid.txt", "test.txt"])
    cfg = TrainConfig(model_name="TransE_l2", dataset="kg", data_path=str(tmp_path), format="raw_udd_hrt",
                      data_files=["train.txt", "valid.txt", "test.txt"], hidden_dim=4)
    gen = np.random.default_rng(0)
    tables = {"entity": gen.random((E, 4), dtype=np.float32), "relation": gen.random((R, 4), dtype=np.float32)}
    save_model(tmp_path / "model", cfg, tables, data.entities, data.relations)
    tables["entity"][26:] = np.nan  # 34 of 60 rows: a diverged model, whose MRR the NaN rows once raised
    save_model(tmp_path / "nan_model", cfg, tables, data.entities, data.relations)
    save_model(tmp_path / "no_relation", cfg, {"entity": tables["entity"]}, data.entities, data.relations)
    return tmp_path


def _cases(d):
    raw = ["--data_path", str(d), "--dataset", "kg", "--format", "raw_udd_hrt"]
    files = ["--data_files", "train.txt", "valid.txt", "test.txt"]
    train = ["kge", "train", *raw, "--save_path", str(d / "ckpts"), "--max_step", "5"]
    ok = [*train, *files]
    udd = ["kge", "train", "--data_path", str(d), "--dataset", "kg", "--format", "udd_hrt", "--save_path",
           str(d / "ckpts"), "--data_files", "ents.dict", "rels.dict"]
    model, nan_model = ["kge", "eval", "--model_path", str(d / "model")], ["--model_path", str(d / "nan_model")]
    dist = ["kge", "dist-train", *raw, *files, "--path", str(d)]
    return [
        ([*train, "--data_files", "missing.txt"], "triple file {d}/missing.txt does not exist"),
        ([*train, "--data_files", "adir"], "triple file {d}/adir is a directory"),
        ([*train, "--data_files", "ragged.txt"], "ragged.txt line 2: expected 3 TAB-separated fields in a triple file, "
                                                 "found 2"),
        ([*train, "--data_files", "latin1.txt"], "latin1.txt line 2: the bytes b'\\xe9\\tr1' are not UTF-8"),
        ([*train, "--data_files", "empty.txt"], "triple file {d}/empty.txt is empty"),
        ([*train, "--data_files", "train.txt", "valid.txt"], "needs --data_files TRAIN or TRAIN VALID TEST (got 2"),
        ([*ok, "--format", "raw_udd_hrx"], "unknown --format 'raw_udd_hrx'"),
        ([*udd, "ids_out.txt"], "ids_out.txt line 2: entity id 4 is outside [0, 4)"),
        ([*udd, "ids_text.txt"], "ids_text.txt line 2: entity id 'x' is not an integer"),
        ([*ok, "--format", "built_in", "--dataset", "FB15k"], "dataset FB15k is missing train.txt, valid.txt, test.txt"),
        ([*ok, "--format", "built_in", "--dataset", "mine"], "unknown built-in dataset 'mine'"),
        ([*train, "--data_files", "train.txt", "--test"], "--test needs test triples"),
        ([*ok, "--model_name", "RotatE"], "RotatE needs entity dim = 2 x relation dim"),
        ([*ok, "--hidden_dim", "0"], "--hidden_dim must be a positive integer, got 0"),
        ([*ok, "--num_proc", "0"], "--num_proc must be a positive integer, got 0"),
        ([*ok, "--gpu", "-1", "0"], "--gpu -1 0 mixes -1 (the CPU) with GPU ids"),
        ([*ok, "--gpu", "0", "1", "--num_proc", "3"], "--num_proc 3 does not share out evenly over the 2 GPUs"),
        ([*ok, "--pairwise"], "--pairwise compares positive and negative scores with the Hinge or Logistic loss"),
        ([*ok, "--loss_genre", "Hinge", "-pw", "-adv"], "--pairwise and -adv (--neg_adversarial_sampling) exclude"),
        ([*ok, "--loss_genre", "Squared"], "argument --loss_genre: invalid choice: 'Squared'"),
        ([*ok, "--has_edge_importance"], "train.txt line 1: expected 4 TAB-separated fields"),
        ([*ok, "--delimiter", "comma"], "train.txt line 1: expected 3 ','-separated fields"),
        ([*ok, "--lr", "0"], "--lr must be positive, got 0.0"),
        ([*ok, "--eval_percent", "2"], "--eval_percent must be a fraction in (0, 1], got 2.0"),
        ([*ok, "--resume"], "--resume needs --checkpoint_dir"),
        ([*ok, "--save_path", str(d / "a_file")], "--save_path {d}/a_file is an existing file"),
        ([*ok, "--checkpoint_dir", str(d / "a_file")], "--checkpoint_dir {d}/a_file is an existing file"),
        (["kge", "eval", "--model_path", str(d / "adir")], "{d}/adir/config.json does not exist"),
        (["kge", "eval", *nan_model], "the model in {d}/nan_model: 34 of the 60 rows of the entity table are not "
                                      "finite (NaN or infinite)"),
        (["kge", "eval", "--model_path", str(d / "no_relation")], "kg_TransE_l2_relation.npy does not exist"),
        ([*model, "--hidden_dim", "8"], "was trained with other settings than --hidden_dim 8 (saved: 4)"),
        ([*model, "--gpu", "-2"], "--gpu -2: a GPU id is 0 or more"),
        ([*model, "--data_files", "ragged.txt"], "ragged.txt line 2: expected 3 TAB-separated fields"),
        (["kge", "partition", *raw, *files, "--num-parts", "0"], "--num_parts must be a positive integer, got 0"),
        (["kge", "partition", *raw, "--data_files", "nope.txt", "-k", "2"], "triple file {d}/nope.txt does not exist"),
        (["kge", "partition", *raw, *files, "-k", "61"], "--num_parts 61 exceeds the 60 entities of kg"),
        ([*dist, "--ip_config", str(d / "ip.txt")], "--ip_config {d}/ip.txt does not exist"),
        ([*dist, "--ip_config", str(d / "train.txt")], "train.txt, line 1: PORT must be an integer in [1, 65535]"),
        ([*dist, "--ip_config", str(d / "ip_config.txt")], "partition config {d}/kg/partitions/kg.json does not exist"),
        ([*dist, "--ip_config", str(d / "ip_config.txt"), "--model_name", "ComplEx", "--hidden_dim", "5"],
         "ComplEx splits embeddings in halves"),
    ]


def test_every_bad_input_is_one_error_before_torch_or_any_process(kg):
    cases = _cases(kg)
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps([argv for argv, _ in cases])],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    wrong = []
    for (argv, want), (code, err) in zip(cases, got["results"]):
        one_line = err.startswith("distgraph kge: error: ") and err.count("\n") == 1
        if code != 2 or want.format(d=kg) not in err or not (one_line or "invalid choice" in want):
            wrong.append((argv[1:], want, code, err))  # (argparse's own errors follow its usage line)
    assert not wrong, "\n".join(map(str, wrong))
    assert not got["torch"], "torch was imported"
    assert got["children"] == 0
    assert not (kg / "ckpts").exists() and not (kg / "kg").exists()  # no model folder, no partition


def test_dglke_flags_for_the_cpu_are_accepted(kg, capsys):
    """`kge eval --gpu -1 --mix_cpu_gpu` (dglke_eval's default device; embeddings in CPU memory,
    as they are here) and `kge partition --num-parts` (dglke_partition's spelling) run."""
    from distgraph.cli.main import main

    assert main(["kge", "eval", "--model_path", str(kg / "model"), "--gpu", "-1", "--mix_cpu_gpu"]) == 0
    assert "Test average MRR : " in capsys.readouterr().out
    assert main(["kge", "partition", "--data_path", str(kg), "--dataset", "kg", "--format", "raw_udd_hrt",
                 "--data_files", "train.txt", "valid.txt", "test.txt", "--num-parts", "2"]) == 0
    assert "into 2 parts" in capsys.readouterr().out and (kg / "kg" / "partitions" / "kg.json").is_file()
