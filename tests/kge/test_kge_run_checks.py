"""What `kge train` decides and says before and after training: processes capped at the work
(saying how many, warning above the cores), one warning each for valid/test triples naming
untrained entities or relations and for repeated training triples, and a trained model with
non-finite rows refused instead of saved."""

import io
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from distgraph.errors import InputError
from distgraph.kge import TrainConfig, train_kge
from distgraph.kge import prepare
from distgraph.kge.data.formats import KGData
from distgraph.kge.train import worker
from leaks import new_session
from test_kge_train import _config


def _kg(train, valid=None, test=None, n_entities=6, n_relations=3) -> KGData:
    arr = (lambda rows: None if rows is None else np.array(rows, dtype=np.int64).reshape(-1, 3))
    return KGData("kg", [f"e{i}" for i in range(n_entities)], [f"r{i}" for i in range(n_relations)], arr(train),
                  arr(valid), arr(test))


@pytest.mark.multiprocess
def test_num_proc_is_capped_at_the_training_triples_and_says_so(tmp_path):
    """`--num_proc 300` on 3 triples once started 300 processes. (The command's own process
    never imports torch: only its trainers and server do.)"""
    (tmp_path / "train.txt").write_text("a\tr\tb\nb\tr\tc\nc\tr\ta\n")
    env = {"OMP_NUM_THREADS": "1", "DISTGRAPH_SESSION": new_session(), "PATH": "/usr/bin:/bin"}
    code = ("import sys; from distgraph.cli.main import main; code = main(sys.argv[1:]); "
            "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, "kge", "train", "--data_path", str(tmp_path),
                           "--dataset", "tiny", "--format", "raw_udd_hrt", "--data_files", "train.txt",
                           "--num_proc", "300", "--max_step", "3", "--hidden_dim", "4", "--no_save_emb"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--num_proc 300: using 3 processes, as tiny has 3 training triples to share out" in done.stderr
    assert sorted(set(line.split("]")[0] for line in done.stdout.splitlines() if "][Train](3/3)" in line)) == \
        ["[0", "[1", "[2"]
    cores = prepare._cores()
    assert ("warning: 3 training processes on" in done.stderr) == (cores < 3), done.stderr


def test_processes_are_capped_at_the_relations_with_rel_part_and_warned_above_the_cores(monkeypatch, capsys):
    data = _kg([[0, 0, 1], [1, 1, 2], [2, 0, 3], [3, 0, 4]])  # two relations used of three
    cfg = TrainConfig(num_proc=8)
    assert prepare.process_count(cfg, data) == 4
    assert prepare.process_count(replace(cfg, rel_part=True), data) == 2
    assert "using 2 processes, as kg has 2 relations to share out" in capsys.readouterr().err
    monkeypatch.setattr(prepare, "_cores", lambda: 1)
    assert prepare.process_count(replace(cfg, num_proc=3), data) == 3
    err = capsys.readouterr().err
    assert "warning: 3 training processes on 1 cores" in err and "using" not in err
    assert prepare.process_count(replace(cfg, num_proc=1), data) == 1 and capsys.readouterr().err == ""


def test_data_warnings_count_untrained_entities_and_relations_and_repeated_triples():
    train = [[0, 0, 1], [1, 1, 2], [0, 0, 1], [2, 0, 0], [0, 0, 1], [1, 1, 2]]  # 3 repeats
    valid = [[0, 0, 1], [4, 0, 1], [1, 2, 2]]  # entity 4 untrained; relation 2 untrained
    test = [[5, 0, 4], [2, 1, 0]]  # entities 5 and 4 untrained
    got = prepare.data_warnings(_kg(train, valid, test))
    assert got == [
        "warning: 2 of the 3 valid and 1 of the 2 test triples name entities or relations that no training triple "
        "names (2 entities, 1 relations): their embeddings stay as initialised, so those triples rank about as a "
        "random guess would",
        "warning: 3 of the 6 training triples repeat an earlier one: each copy is trained on, weighing it more; "
        "remove the repeats to weigh every triple once"]
    assert prepare.data_warnings(_kg(train[:2], valid[:1], None)) == []
    assert prepare._repeated_rows(np.array([[1, 0, 2], [2, 0, 1]]), 3 * 10**9, 10**4) == 0  # keys past int64
    assert prepare._repeated_rows(np.array([[1, 0, 2], [1, 0, 2], [2, 0, 1]]), 3 * 10**9, 10**4) == 1


def test_kge_train_warns_once_about_each_surprise(tmp_path, capsys):
    cfg = _config(tmp_path, max_step=2, test=False, no_save_emb=True)
    rows = (tmp_path / "train.txt").read_text()
    (tmp_path / "train.txt").write_text(rows + rows.splitlines()[0] + "\n")  # one repeated triple
    (tmp_path / "valid.txt").write_text((tmp_path / "valid.txt").read_text() + "e0\tnew_rel\tnew_entity\n")
    train_kge(cfg, out=io.StringIO())
    err = capsys.readouterr().err
    assert err.count("warning: 1 of the 31 valid triples name entities or relations that no training triple names "
                     "(1 entities, 1 relations)") == 1, err
    assert err.count("warning: 1 of the 241 training triples repeat an earlier one") == 1, err


def test_a_trained_model_with_non_finite_rows_is_refused_and_not_saved(tmp_path, monkeypatch):
    finite = worker.Trainer._finite

    def poisoned(self):
        self.tables.tables["entity"].local_partition[:3] = float("nan")  # rows no step could have used
        self.tables.tables["relation"].local_partition[1, 0] = float("inf")
        return finite(self)

    monkeypatch.setattr(worker.Trainer, "_finite", poisoned)
    cfg = _config(tmp_path, max_step=2)
    with pytest.raises(InputError, match=r"the trained model: 3 of the 300 rows of the entity table and 1 of the 2 "
                                         r"rows of the relation table are not finite \(NaN or infinite\)"):
        train_kge(cfg, out=io.StringIO())
    assert not (tmp_path / "ckpts").exists()  # nothing saved, nothing ranked


def test_non_finite_rows_are_counted_block_by_block(monkeypatch):
    from distgraph.kge import saved_model

    monkeypatch.setattr(saved_model, "_BLOCK_ROWS", 4)
    table = np.zeros((10, 3), dtype=np.float32)
    table[[0, 3, 4, 9], [0, 2, 1, 1]] = [np.nan, np.inf, -np.inf, np.nan]
    table[9, 0] = np.nan  # two bad entries, one row
    assert saved_model.nonfinite_rows(table) == 4
    assert saved_model.nonfinite_rows(table[:0]) == 0 and saved_model.nonfinite_rows(table[5:9]) == 0
    saved_model.check_finite({"entity": table[5:9]}, "here")
    with pytest.raises(InputError, match="^here: 4 of the 10 rows of the entity table are not finite"):
        saved_model.check_finite({"entity": table, "relation": table[5:9]}, "here")
